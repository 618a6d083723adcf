// Package winsvc runs the agent as a system service: a Windows service
// registered with the service control manager (delayed automatic start,
// restarts on failure), or a systemd unit or launchd job on Linux and
// macOS, all through kardianos/service. It also knows the machine-wide
// folders the service keeps its configuration, logs and data in.
package winsvc

// Name is the service's name in the service manager (and its Event Log
// source on Windows).
const Name = "TradeBridgeAgent"

// ServiceArguments are the arguments the service manager starts the
// agent's executable with. The installer's ServiceInstall row carries the
// same; neither ever carries the token.
var ServiceArguments = []string{"run", "--service"}

// Paths are the machine-wide places of the service's files.
type Paths struct {
	// Root is the product's machine folder (%ProgramData%\TradeBridge on
	// Windows), which holds Dir.
	Root string
	// Dir is the agent's machine folder, which holds ConfigFile.
	Dir string
	// ConfigFile is the machine configuration file (relay URL, agent
	// token, platform and its settings), readable by SYSTEM (root) and
	// administrators only.
	ConfigFile string
	// LogDir holds the rotating log files.
	LogDir string
	// DataDir holds the agent's state file and its diagnostics snapshot.
	DataDir string
}
