package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// deps lists the packages pkg links, for GOOS goos.
func deps(t *testing.T, goos, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}", pkg)
	if goos != "" {
		cmd.Env = append(cmd.Environ(), "GOOS="+goos, "GOARCH=amd64")
	}
	out, err := cmd.Output()
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// The arrows of the design: protocol imports only the standard library, and
// the agent links nothing of the relay, on Linux and on Windows.
func TestImportGraph(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, line := range deps(t, "", "tradebridge/protocol") {
		path, std, _ := strings.Cut(line, " ")
		if path == "tradebridge/protocol" {
			continue
		}
		require.Equal(t, "true", std, "protocol must import only the standard library, but links %s", path)
	}
	for _, goos := range []string{"linux", "windows"} {
		for _, line := range deps(t, goos, "tradebridge/cmd/agent") {
			path, _, _ := strings.Cut(line, " ")
			require.False(t, strings.HasPrefix(path, "tradebridge/relay"), "cmd/agent (%s) links %s", goos, path)
		}
	}
}
