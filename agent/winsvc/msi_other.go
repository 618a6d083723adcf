//go:build !windows

package winsvc

// MSIInstalled is false outside Windows: there is no installer (MSI).
func MSIInstalled() (bool, error) { return false, nil }

// CheckExecutable does nothing outside Windows: the executable's place is
// the administrator's choice (a package manager's, usually).
func CheckExecutable(string) error { return nil }
