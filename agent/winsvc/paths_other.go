//go:build !windows && !darwin

package winsvc

// MachinePaths are the service's places on Linux (and the other Unix
// systems): /etc/tradebridge/agent.json, /var/log/tradebridge and
// /var/lib/tradebridge/agent.
func MachinePaths() Paths {
	return Paths{
		Root:       "/etc/tradebridge",
		Dir:        "/etc/tradebridge",
		ConfigFile: "/etc/tradebridge/agent.json",
		LogDir:     "/var/log/tradebridge",
		DataDir:    "/var/lib/tradebridge/agent",
	}
}
