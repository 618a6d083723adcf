//go:build !windows

package diag

import (
	"bufio"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPrettyName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"NAME=\"Ubuntu\"\nPRETTY_NAME=\"Ubuntu 24.04.1 LTS\"\nID=ubuntu\n", "Ubuntu 24.04.1 LTS"},
		{"PRETTY_NAME=Alpine\n", "Alpine"},
		{"PRETTY_NAME='Debian'\n", "Debian"},
		{"NAME=x\n", ""},
	} {
		require.Equal(t, tc.want, prettyName(bufio.NewScanner(strings.NewReader(tc.in))), tc.in)
	}
}
