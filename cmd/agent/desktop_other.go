//go:build !windows

package main

// desktopDir is empty outside Windows: the zip goes to the current
// folder.
func desktopDir() string { return "" }
