package winsvc

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// MachinePaths are the service's places on Windows, under ProgramData:
// %ProgramData%\TradeBridge (Root), …\TradeBridge\Agent (Dir),
// …\Agent\config.json, …\Agent\logs and …\Agent\data.
func MachinePaths() Paths {
	base, err := windows.KnownFolderPath(windows.FOLDERID_ProgramData, 0)
	if err != nil || base == "" {
		if base = os.Getenv("ProgramData"); base == "" {
			base = `C:\ProgramData`
		}
	}
	root := filepath.Join(base, "TradeBridge")
	dir := filepath.Join(root, "Agent")
	return Paths{
		Root:       root,
		Dir:        dir,
		ConfigFile: filepath.Join(dir, "config.json"),
		LogDir:     filepath.Join(dir, "logs"),
		DataDir:    filepath.Join(dir, "data"),
	}
}
