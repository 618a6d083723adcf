package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
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

// The two programs share the trading core (trading/) and never each
// other: nothing under relay/ or cmd/relay links a package of agent/,
// nothing under agent/ or cmd/agent links one of relay/, and trading/
// links neither. The relay runs the trading core's operations for the
// broker family over Tradovate, never a platform of the desktop (the
// simulator, NinjaTrader), and cmd/relay links nothing made for tests.
// The rules hold over whatever packages exist.
func TestProgramsShareOnlyTheTradingCore(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	testOnly := []string{
		"tradebridge/trading/bridge/bridgetest", "tradebridge/trading/engine/enginetest",
		"tradebridge/trading/bridge/ninjatrader/ntfake",
		"tradebridge/trading/bridge/tradovate/tradovatefake", "tradebridge/trading/bridge/tradovate/tradovatetest",
	}
	under := func(path, root string) bool { return path == root || strings.HasPrefix(path, root+"/") }
	desktop := func(path string) bool {
		return under(path, "tradebridge/trading/bridge/sim") || under(path, "tradebridge/trading/bridge/ninjatrader")
	}
	pkgs := list(t, "tradebridge/relay/...", "tradebridge/cmd/relay/...", "tradebridge/agent/...", "tradebridge/cmd/agent/...", "tradebridge/trading/...")
	require.Contains(t, pkgs, "tradebridge/cmd/relay")
	require.Contains(t, pkgs, "tradebridge/cmd/agent")
	for path, p := range pkgs {
		relaySide := under(path, "tradebridge/relay") || under(path, "tradebridge/cmd/relay")
		agentSide := under(path, "tradebridge/agent") || under(path, "tradebridge/cmd/agent")
		core := under(path, "tradebridge/trading")
		for _, dep := range p.Deps {
			if relaySide || core {
				require.False(t, under(dep, "tradebridge/agent"), "%s links %s", path, dep)
			}
			if agentSide || core {
				require.False(t, under(dep, "tradebridge/relay"), "%s links %s", path, dep)
			}
		}
		if relaySide && !slices.Contains(testOnly, path) {
			for _, imp := range p.Imports {
				require.False(t, desktop(imp), "%s imports %s: the relay runs no desktop platform", path, imp)
			}
		}
	}
	for _, line := range deps(t, "", "tradebridge/cmd/relay") {
		dep, _, _ := strings.Cut(line, " ")
		require.NotContains(t, testOnly, dep, "cmd/relay links a package made for tests")
		require.False(t, under(dep, "tradebridge/agent"), "cmd/relay links %s", dep)
		require.False(t, desktop(dep), "cmd/relay links %s", dep)
	}
}
