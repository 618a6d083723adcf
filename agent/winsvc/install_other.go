//go:build !windows

package winsvc

import (
	"errors"
	"io/fs"
	"os"
)

// ApplyRecovery does nothing outside Windows: the systemd unit (Restart,
// RestartSec) and launchd (KeepAlive) restart the agent.
func ApplyRecovery() error { return nil }

// ConfigureInstalled is an installer's step of Windows only.
func ConfigureInstalled() error { return ErrWindowsOnly }

// InstallEventSource is an installer's step of Windows only.
func InstallEventSource() error { return ErrWindowsOnly }

// RemoveEventSource is an installer's step of Windows only.
func RemoveEventSource() error { return ErrWindowsOnly }

// NeedsPrivilege reports that err is the system refusing an operation to
// a user who is not root: a permission error, or any failure of a service
// manager command run by another user than root (systemctl and launchctl
// say why only on their standard error).
func NeedsPrivilege(err error) bool {
	return err != nil && (errors.Is(err, fs.ErrPermission) || os.Geteuid() != 0)
}

// PrivilegeHint is how a refused command is told to run as root.
const PrivilegeHint = "needs root (run it with sudo)"
