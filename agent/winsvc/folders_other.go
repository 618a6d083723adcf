//go:build !windows

package winsvc

import (
	"io/fs"
	"os"
	"syscall"
)

// EnsureMachineFolders creates the service's data and log folders, mode
// 0700, when they are missing and the process is root's (systemd creates
// them itself: LogsDirectory, StateDirectory; launchd does not); `agent
// config set` creates the configuration's folder. For another user it
// does nothing: the service runs as root.
func EnsureMachineFolders() error {
	if os.Geteuid() != 0 {
		return nil
	}
	return ensureFolders(MachinePaths())
}

// ensureFolders creates p's data and log folders, mode 0700, when they
// are missing.
func ensureFolders(p Paths) error {
	for _, dir := range []string{p.DataDir, p.LogDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	return nil
}

// CheckTrusted reports (an *UntrustedError) when the file or folder at
// path is not owned by root or may be written by its group or others.
func CheckTrusted(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	uid := uint32(0)
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		uid = st.Uid
	}
	return checkOwnerMode(path, uid, fi.Mode())
}

// checkOwnerMode is CheckTrusted on a file's owner and mode.
func checkOwnerMode(path string, uid uint32, mode fs.FileMode) error {
	switch {
	case uid != 0:
		return &UntrustedError{Path: path, Reason: "its owner is not root"}
	case mode.Perm()&0o022 != 0:
		return &UntrustedError{Path: path, Reason: "its group or other users may write it"}
	}
	return nil
}
