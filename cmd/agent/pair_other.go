//go:build !windows

package main

import (
	"errors"
	"os/exec"
	"runtime"
)

// openBrowser opens u in the desktop's browser (xdg-open; open on macOS),
// without waiting for it.
func openBrowser(u string) error {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	cmd := exec.Command(name, u)
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}

// runElevated is Windows' relaunch: elsewhere, run the command as root.
func runElevated([]string) (int, error) {
	return 0, errors.New("run agent pair as root (sudo) to write the machine's configuration")
}
