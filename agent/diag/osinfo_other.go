//go:build !windows

package diag

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// osVersion reads PRETTY_NAME of /etc/os-release, where there is one
// (Linux); elsewhere it is empty.
func osVersion() string {
	f, err := os.Open("/etc/os-release")
	if err != nil {
		return ""
	}
	defer f.Close()
	return prettyName(bufio.NewScanner(f))
}

// prettyName finds PRETTY_NAME in os-release lines.
func prettyName(sc *bufio.Scanner) string {
	for sc.Scan() {
		v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "PRETTY_NAME=")
		if !ok {
			continue
		}
		if u, err := strconv.Unquote(v); err == nil {
			return u
		}
		return strings.Trim(v, `"'`)
	}
	return ""
}
