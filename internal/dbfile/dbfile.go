// Package dbfile creates the SQLite files of the relay's store
// (relay/store) and of the agent's state (agent/agentstore) for the
// process's user alone: they hold token hashes, orders and trading state.
// It sits beside protocol/ and transport/ because both commands use it.
package dbfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"

	"go.uber.org/zap"
)

// Mode is the mode of a database file. SQLite gives its -wal and -shm
// files the database file's mode.
const Mode os.FileMode = 0o600

// Restrict creates the database file at path with Mode, or takes an
// existing one (and its -wal and -shm files) down to Mode when others may
// read it, logging that it did. On Windows file modes restrict nothing
// (the folder's access list does), and an existing file is left as it is.
func Restrict(path string, log *zap.Logger) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, Mode)
	if err == nil {
		return f.Close()
	}
	if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("dbfile: create %s: %w", path, err)
	}
	if runtime.GOOS == "windows" {
		return nil
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("dbfile: %w", err)
		}
		if fi.Mode().Perm()&^Mode == 0 {
			continue
		}
		if err := os.Chmod(p, Mode); err != nil {
			return fmt.Errorf("dbfile: restrict the mode of %s: %w", p, err)
		}
		log.Warn("database file was open to others; its mode is now 0600",
			zap.String("file", p), zap.String("was", fi.Mode().Perm().String()))
	}
	return nil
}
