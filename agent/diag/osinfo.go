package diag

import (
	"runtime"
	"strings"
	"sync"
)

// OSDescription describes the operating system for Diagnostics.OS:
// "windows/amd64" followed, where it is cheap to read, by the system's
// name and version ("windows/amd64 Windows 11 (10.0.22631)", "linux/amd64
// Ubuntu 24.04.1 LTS").
func OSDescription() string { return osDescription() }

var osDescription = sync.OnceValue(func() string {
	s := runtime.GOOS + "/" + runtime.GOARCH
	if v := cleanOSVersion(osVersion()); v != "" {
		s += " " + v
	}
	return s
})

// cleanOSVersion keeps a system's version printable and short.
func cleanOSVersion(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return -1
		}
		return r
	}, strings.TrimSpace(s))
	if len(s) > 100 {
		s = s[:100]
	}
	return s
}
