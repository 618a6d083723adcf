//go:build !windows

package sysproxy

// DefaultSystem is the operating system's proxy configuration: none
// outside Windows (the environment is read on every system).
func DefaultSystem() System { return nil }
