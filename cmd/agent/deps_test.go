package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os/exec"
	"slices"
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

// The arrows of the design: protocol and ntwire (the add-on protocol)
// import only the standard library (and protocol), the agent links nothing
// of the relay, and nothing made for tests (the fake add-on, the contract
// suite), on Linux and on Windows.
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
	for _, line := range deps(t, "", "tradebridge/trading/bridge/ninjatrader/ntwire") {
		path, std, _ := strings.Cut(line, " ")
		if path == "tradebridge/trading/bridge/ninjatrader/ntwire" || path == "tradebridge/protocol" {
			continue
		}
		require.Equal(t, "true", std, "ntwire must import only the standard library and protocol, but links %s", path)
	}
	testOnly := []string{"tradebridge/trading/bridge/ninjatrader/ntfake", "tradebridge/trading/bridge/bridgetest",
		"tradebridge/trading/engine/enginetest"}
	for _, goos := range []string{"linux", "windows"} {
		for _, line := range deps(t, goos, "tradebridge/cmd/agent") {
			path, _, _ := strings.Cut(line, " ")
			require.False(t, strings.HasPrefix(path, "tradebridge/relay"), "cmd/agent (%s) links %s", goos, path)
			require.NotContains(t, testOnly, path, "cmd/agent (%s) links a package made for tests", goos)
		}
	}
}

// listed is what `go list -json` says of a package.
type listed struct {
	ImportPath string
	Imports    []string // direct
	Deps       []string // transitive
}

// list describes pkgs with `go list -json`.
func list(t *testing.T, pkgs ...string) map[string]listed {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-json"}, pkgs...)...).Output()
	require.NoError(t, err)
	got := map[string]listed{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		got[p.ImportPath] = p
	}
	return got
}

// The relay's doors: the stream socket shares the trading call with the
// HTTP routes through relay/tradecall, never by linking relay/tradeapi, and
// every door admits its requests through relay/admit.
func TestRelayDoors(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	const (
		api       = "tradebridge/relay/tradeapi"
		stream    = "tradebridge/relay/stream"
		hub       = "tradebridge/relay/hub"
		admit     = "tradebridge/relay/admit"
		tradecall = "tradebridge/relay/tradecall"
		errcode   = "tradebridge/relay/errcode"
	)
	pkgs := list(t, api, stream, hub)
	require.NotContains(t, pkgs[stream].Deps, api, "relay/stream must not link relay/tradeapi")
	for _, door := range []string{api, stream, hub} {
		require.Contains(t, pkgs[door].Imports, admit, "%s must admit through relay/admit", door)
	}
	for _, door := range []string{api, stream} {
		require.Contains(t, pkgs[door].Imports, tradecall, "%s must call through relay/tradecall", door)
	}
	for _, line := range deps(t, "", errcode) {
		path, std, _ := strings.Cut(line, " ")
		if path != errcode {
			require.Equal(t, "true", std, "relay/errcode must import only the standard library, but links %s", path)
		}
	}
	require.False(t, slices.Contains(pkgs[hub].Deps, api) || slices.Contains(pkgs[hub].Deps, stream), "relay/hub must link no other door")
}

// The relay runs the agent's operations server-side (the broker family):
// its packages may import from agent/ only the platform primitives, the
// dispatcher, the operations, the engines, the management configuration
// and the stack that assembles them, never the agent itself, its tunnel or its store, nor a
// platform of the desktop (the simulator, NinjaTrader); the packages it
// may import link no agent, tunnel or store either; and cmd/relay links
// nothing made for tests. Test-only packages of the relay (the fake
// Tradovate server) are exempt from the first rule, and checked by the
// last. The rules hold over whatever packages exist.
func TestRelayImportsOfTheAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	testOnly := []string{
		"tradebridge/trading/bridge/bridgetest", "tradebridge/trading/engine/enginetest",
		"tradebridge/trading/bridge/ninjatrader/ntfake",
		"tradebridge/trading/bridge/tradovate/tradovatefake", "tradebridge/trading/bridge/tradovate/tradovatetest",
	}
	allowed := func(path string) bool {
		switch path {
		case "tradebridge/trading/bridge", "tradebridge/trading/dispatch", "tradebridge/trading/ops",
			"tradebridge/trading/mgmtconfig", "tradebridge/trading/engine", "tradebridge/trading/stack":
			return true
		}
		return strings.HasPrefix(path, "tradebridge/trading/engine/") && !slices.Contains(testOnly, path)
	}
	under := func(path, root string) bool { return path == root || strings.HasPrefix(path, root+"/") }
	forbidden := func(path string) bool {
		return path == "tradebridge/agent" || under(path, "tradebridge/agent/tunnel") || under(path, "tradebridge/agent/agentstore")
	}

	pkgs := list(t, "tradebridge/relay/...", "tradebridge/cmd/relay/...")
	require.Contains(t, pkgs, "tradebridge/cmd/relay")
	used := map[string]bool{}
	for path, p := range pkgs {
		if slices.Contains(testOnly, path) {
			continue
		}
		for _, imp := range p.Imports {
			if !under(imp, "tradebridge/agent") {
				continue
			}
			require.True(t, allowed(imp), "%s imports %s: the relay may import from agent/ only bridge, dispatch, ops, engine and its engines, mgmtconfig, stack", path, imp)
			used[imp] = true
		}
	}
	for _, path := range slices.Sorted(maps.Keys(used)) {
		for _, line := range deps(t, "", path) {
			dep, _, _ := strings.Cut(line, " ")
			require.False(t, forbidden(dep), "%s, which the relay imports, links %s", path, dep)
		}
	}
	for _, line := range deps(t, "", "tradebridge/cmd/relay") {
		dep, _, _ := strings.Cut(line, " ")
		require.NotContains(t, testOnly, dep, "cmd/relay links a package made for tests")
		require.False(t, forbidden(dep), "cmd/relay links %s", dep)
	}
}
