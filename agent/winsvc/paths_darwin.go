package winsvc

// MachinePaths are the service's places on macOS:
// /Library/Application Support/TradeBridge/Agent/{config.json,data} and
// /Library/Logs/TradeBridge.
func MachinePaths() Paths {
	const dir = "/Library/Application Support/TradeBridge/Agent"
	return Paths{
		Root:       "/Library/Application Support/TradeBridge",
		Dir:        dir,
		ConfigFile: dir + "/config.json",
		LogDir:     "/Library/Logs/TradeBridge",
		DataDir:    dir + "/data",
	}
}
