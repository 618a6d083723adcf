package winsvc

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// MachinePaths are the service's places on Windows, under ProgramData:
// %ProgramData%\TradeBridge\Agent\config.json, …\Agent\logs and
// …\Agent\data.
func MachinePaths() Paths {
	base, err := windows.KnownFolderPath(windows.FOLDERID_ProgramData, 0)
	if err != nil || base == "" {
		if base = os.Getenv("ProgramData"); base == "" {
			base = `C:\ProgramData`
		}
	}
	dir := filepath.Join(base, "TradeBridge", "Agent")
	return Paths{
		ConfigFile: filepath.Join(dir, "config.json"),
		LogDir:     filepath.Join(dir, "logs"),
		DataDir:    filepath.Join(dir, "data"),
	}
}
