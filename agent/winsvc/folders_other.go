//go:build !windows

package winsvc

import (
	"io/fs"
	"os"
	"syscall"
)

// EnsureMachineFolders does nothing outside Windows: systemd creates the
// service's log and state folders (LogsDirectory, StateDirectory, mode
// 0700), and `agent config set` creates the configuration's folder.
func EnsureMachineFolders() error { return nil }

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
