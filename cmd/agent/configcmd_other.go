//go:build !windows

package main

import "os"

const (
	machineReaders = "root"
	elevatedPrompt = "root (sudo)"
)

// checkWriter lets anyone try: the system refuses the machine's file to
// another user than root.
func checkWriter(bool) error { return nil }

// secureDir makes dir accessible to its owner only.
func secureDir(dir string, _ bool) error { return os.Chmod(dir, 0o700) }

// secureFile makes file readable by its owner only.
func secureFile(file string, _ bool) error { return os.Chmod(file, 0o600) }
