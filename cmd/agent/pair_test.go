package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
)

const pairedToken = "tb_agent_UGFpcmVkVG9rZW5Gcm9tVGhlRmFrZVJlbGF5WFhYWFhYWA"

// fakeRelay answers the pairing routes: the code GOOD-CODE pairs (once
// unless reusable), DELETE revokes pairedToken; down answers 503 to
// everything.
type fakeRelay struct {
	mu       sync.Mutex
	url      string
	pairs    int
	revokes  int
	down     bool
	limited  bool
	lastBody string
}

func newFakeRelay(t *testing.T) *fakeRelay {
	t.Helper()
	f := &fakeRelay{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+protocol.PairPath, func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.pairs++
		b, _ := io.ReadAll(r.Body)
		f.lastBody = string(b)
		switch {
		case f.down:
			w.WriteHeader(http.StatusServiceUnavailable)
		case f.limited:
			w.Header().Set("Retry-After", "42")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"success":false,"error":"rate_limited","policy":"pair"}`)
		case strings.Contains(f.lastBody, `"GOOD-CODE"`):
			io.WriteString(w, `{"success":true,"data":{"token":"`+pairedToken+`","userId":"usr_alice"}}`)
		default:
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"success":false,"error":"pairing_code_invalid","detail":"…"}`)
		}
	})
	mux.HandleFunc("DELETE "+protocol.AgentTokenPath, func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.revokes++
		switch {
		case f.down:
			w.WriteHeader(http.StatusServiceUnavailable)
		case r.Header.Get("Authorization") == "Bearer "+pairedToken:
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"success":false,"error":"unauthorized"}`)
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

func (f *fakeRelay) counts() (pairs, revokes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pairs, f.revokes
}

func (f *fakeRelay) set(down, limited bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down, f.limited = down, limited
}

// testPairEnv is a pairEnv that never touches the machine: no terminal
// unless told, no browser, no elevation unless told.
func testPairEnv(interactive, elevation bool) (pairEnv, *[]string, *[][]string) {
	var opened []string
	var elevated [][]string
	return pairEnv{
		getenv:         func(string) string { return "" },
		interactive:    func(io.Reader) bool { return interactive },
		openURL:        func(u string) error { opened = append(opened, u); return nil },
		needsElevation: func(bool) bool { return elevation },
		elevate:        func(args []string) (int, error) { elevated = append(elevated, args); return 0, nil },
		client:         func(Config) (*http.Client, error) { return &http.Client{Timeout: pairTimeout}, nil },
	}, &opened, &elevated
}

// runPair runs `agent pair`/`agent unpair` with env.
func runPair(t *testing.T, env pairEnv, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRootCmd(&out)
	for _, c := range root.Commands() {
		if c.Name() == "pair" || c.Name() == "unpair" {
			root.RemoveCommand(c)
		}
	}
	root.AddCommand(newPairCmd(env), newUnpairCmd(env))
	root.SetIn(strings.NewReader(stdin))
	root.SetErr(&errOut)
	root.SetArgs(args)
	err = root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// agent pair CODE --data DIR: the code is exchanged, the relay URL and
// token (and platform) stored in DIR/config.json (owner-only), which
// agent run --data DIR then reads; the token is never printed.
func TestPairIntoDataDir(t *testing.T) {
	t.Parallel()
	relay := newFakeRelay(t)
	env, _, _ := testPairEnv(false, false)
	dir := filepath.Join(t.TempDir(), "agent-data")
	out, errOut, err := runPair(t, env, "", "pair", "good-code", "--relay", relay.url, "--data", dir, "--platform", "sim")
	require.Error(t, err, "the fake relay takes GOOD-CODE as sent: the agent sends the code as typed")
	require.NotContains(t, out+errOut, pairedToken)
	_, statErr := os.Stat(filepath.Join(dir, "config.json"))
	require.ErrorIs(t, statErr, os.ErrNotExist, "nothing is written when the exchange fails")

	out, errOut, err = runPair(t, env, "", "pair", "GOOD-CODE", "--relay", relay.url, "--data", dir, "--platform", "sim")
	require.NoError(t, err, errOut)
	require.NotContains(t, out+errOut, pairedToken, "the token is never printed")
	var res struct {
		Paired     bool   `json:"paired"`
		UserID     string `json:"userId"`
		ConfigFile string `json:"configFile"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.True(t, res.Paired)
	require.Equal(t, "usr_alice", res.UserID)
	file := filepath.Join(dir, "config.json")
	require.Equal(t, file, res.ConfigFile)
	cfg, err := readConfigFile(file)
	require.NoError(t, err)
	require.Equal(t, Config{RelayURL: relay.url, Token: pairedToken, Platform: "sim", UserID: "usr_alice", DataDir: dir}, cfg)
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(file)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		di, err := os.Stat(dir)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), di.Mode().Perm())
	}

	// agent run --data DIR finds it when nothing else gives a token.
	getenv := env.getenv
	require.Equal(t, file, runConfigFile("", Config{DataDir: dir}, getenv))
	loaded, err := loadConfig(runConfigFile("", Config{DataDir: dir}, getenv), Config{RelayURL: relay.url, DataDir: dir}, getenv)
	require.NoError(t, err)
	require.Equal(t, pairedToken, loaded.Token)
	require.Equal(t, file, runConfigFile("", Config{}, func(k string) string { return map[string]string{"AGENT_DATA": dir}[k] }))
	for _, tc := range []struct {
		name  string
		path  string
		flags Config
		env   map[string]string
		want  string
	}{
		{"--config wins", "/elsewhere.json", Config{DataDir: dir}, nil, "/elsewhere.json"},
		{"AGENT_CONFIG wins", "", Config{DataDir: dir}, map[string]string{"AGENT_CONFIG": "/e.json"}, ""},
		{"a token by flag", "", Config{DataDir: dir, Token: "tb_agent_x"}, nil, ""},
		{"a token by env", "", Config{DataDir: dir}, map[string]string{"AGENT_TOKEN": "tb_agent_x"}, ""},
		{"no data folder", "", Config{}, nil, ""},
		{"no file there", "", Config{DataDir: t.TempDir()}, nil, ""},
	} {
		require.Equal(t, tc.want, runConfigFile(tc.path, tc.flags, func(k string) string { return tc.env[k] }), tc.name)
	}

	// Pairing again keeps the rest of the file, replaces the token.
	out, _, err = runPair(t, env, "", "pair", "GOOD-CODE", "--data", dir)
	require.NoError(t, err, "the relay comes from the file")
	require.Contains(t, out, `"paired": true`)
}

// Refusals: nothing is written, the errors say what to do and never
// carry the code or a token.
func TestPairRefusals(t *testing.T) {
	t.Parallel()
	relay := newFakeRelay(t)
	env, _, _ := testPairEnv(false, false)
	dir := t.TempDir()
	file := filepath.Join(dir, "agent.json")
	for _, tc := range []struct {
		name          string
		args          []string
		down, limited bool
		want          string
		asked         bool
	}{
		{"wrong code", []string{"pair", "WRNG-CODE", "--relay", relay.url, "--config", file}, false, false, "wrong, expired or already used", true},
		{"rate limited", []string{"pair", "GOOD-CODE", "--relay", relay.url, "--config", file}, false, true, "try again in 42 s", true},
		{"relay down", []string{"pair", "GOOD-CODE", "--relay", relay.url, "--config", file}, true, false, "the relay answered 503", true},
		{"no relay", []string{"pair", "GOOD-CODE", "--config", file}, false, false, "--relay URL", false},
		{"bad relay", []string{"pair", "GOOD-CODE", "--relay", "ftp://x", "--config", file}, false, false, "--relay must be", false},
		{"bad platform", []string{"pair", "GOOD-CODE", "--relay", relay.url, "--config", file, "--platform", "mt5"}, false, false, "--platform", false},
		{"no code, no terminal", []string{"pair", "--relay", relay.url, "--config", file}, false, false, "a pairing code is required", false},
		{"unreachable", []string{"pair", "GOOD-CODE", "--relay", "http://127.0.0.1:1", "--config", file}, false, false, "reaching the relay", false},
	} {
		relay.set(tc.down, tc.limited)
		before, _ := relay.counts()
		out, errOut, err := runPair(t, env, "", tc.args...)
		require.ErrorContains(t, err, tc.want, tc.name)
		require.NotContains(t, err.Error()+out+errOut, "WRNG", tc.name)
		require.NotContains(t, err.Error()+out+errOut, "GOOD", tc.name)
		require.NotContains(t, err.Error()+out+errOut, pairedToken, tc.name)
		after, _ := relay.counts()
		require.Equal(t, tc.asked, after > before, "%s: the relay was asked", tc.name)
		_, statErr := os.Stat(file)
		require.ErrorIs(t, statErr, os.ErrNotExist, "%s: nothing written", tc.name)
	}
	relay.set(false, false)

	// A config file that does not load is refused before the code is
	// spent.
	require.NoError(t, os.WriteFile(file, []byte(`{"relayUrl":"https://x","tokn":"oops"}`), 0o600))
	before, _ := relay.counts()
	_, _, err := runPair(t, env, "", "pair", "GOOD-CODE", "--relay", relay.url, "--config", file)
	require.ErrorContains(t, err, "not valid")
	after, _ := relay.counts()
	require.Equal(t, before, after, "the code was not sent")
}

// agent unpair: revoked on the relay, then removed here (the relay URL
// stays); a relay that cannot revoke leaves everything unless --force.
func TestUnpair(t *testing.T) {
	t.Parallel()
	relay := newFakeRelay(t)
	env, _, _ := testPairEnv(false, false)
	dir := t.TempDir()
	_, _, err := runPair(t, env, "", "pair", "GOOD-CODE", "--relay", relay.url, "--data", dir)
	require.NoError(t, err)
	file := filepath.Join(dir, "config.json")
	type result struct {
		Unpaired bool `json:"unpaired"`
		Revoked  bool `json:"revoked"`
	}
	decode := func(out string) result {
		var r result
		require.NoError(t, json.Unmarshal([]byte(out), &r), out)
		return r
	}

	relay.set(true, false)
	_, _, err = runPair(t, env, "", "unpair", "--data", dir)
	require.ErrorContains(t, err, "nothing was changed")
	cfg, err := readConfigFile(file)
	require.NoError(t, err)
	require.Equal(t, pairedToken, cfg.Token, "the token stays when the relay cannot revoke it")

	relay.set(false, false)
	out, _, err := runPair(t, env, "", "unpair", "--data", dir)
	require.NoError(t, err)
	require.Equal(t, result{Unpaired: true, Revoked: true}, decode(out))
	cfg, err = readConfigFile(file)
	require.NoError(t, err)
	require.Empty(t, cfg.Token)
	require.Equal(t, relay.url, cfg.RelayURL, "the relay URL stays")
	_, revokes := relay.counts()
	require.Equal(t, 2, revokes)

	out, errOut, err := runPair(t, env, "", "unpair", "--data", dir)
	require.NoError(t, err, "nothing to unpair is no failure (uninstall runs it)")
	require.Equal(t, result{Unpaired: true}, decode(out))
	require.Contains(t, errOut, "no agent token")

	// --force clears the token when the relay does not answer.
	_, _, err = runPair(t, env, "", "pair", "GOOD-CODE", "--data", dir)
	require.NoError(t, err)
	relay.set(true, false)
	out, errOut, err = runPair(t, env, "", "unpair", "--data", dir, "--force")
	require.NoError(t, err)
	require.Equal(t, result{Unpaired: true, Revoked: false}, decode(out))
	require.Contains(t, errOut, "stays valid on the relay")
	cfg, err = readConfigFile(file)
	require.NoError(t, err)
	require.Empty(t, cfg.Token)

	// A token the relay refuses is removed: it works nowhere.
	relay.set(false, false)
	other := Config{RelayURL: relay.url, Token: "tb_agent_" + strings.Repeat("Z", 43)}
	require.NoError(t, writeConfigFile(file, false, other))
	out, errOut, err = runPair(t, env, "", "unpair", "--data", dir)
	require.NoError(t, err)
	require.Equal(t, result{Unpaired: true, Revoked: false}, decode(out))
	require.Contains(t, errOut, "no longer accepts")
	require.NotContains(t, out+errOut, other.Token)
}

// Without a code, on a terminal: where to get one (the page opened), the
// relay asked for when none is configured, the code asked for, then
// paired here, or in an elevated relaunch when the target needs it.
func TestPairInteractive(t *testing.T) {
	t.Parallel()
	relay := newFakeRelay(t)
	dir := t.TempDir()

	env, opened, elevated := testPairEnv(true, false)
	out, errOut, err := runPair(t, env, relay.url+"\n  good-code \n\n", "pair", "--data", dir)
	require.ErrorContains(t, err, "wrong, expired", "the code is sent as typed, trimmed")
	require.Contains(t, errOut, "Pairing failed")
	require.Contains(t, errOut, "Press Enter to close")
	require.Equal(t, []string{relay.url + "/app/pair"}, *opened)
	require.Empty(t, out)

	out, errOut, err = runPair(t, env, relay.url+"\nGOOD-CODE\n\n", "pair", "--data", dir)
	require.NoError(t, err, errOut)
	require.Contains(t, errOut, relay.url+"/app/pair")
	require.Contains(t, errOut, "operator")
	require.Contains(t, errOut, "This PC is paired")
	require.Contains(t, errOut, "Press Enter to close")
	require.Contains(t, out, `"paired": true`)
	require.Empty(t, *elevated)

	// The relay is configured now: only the code is asked for.
	out, errOut, err = runPair(t, env, "GOOD-CODE\n\n", "pair", "--data", dir)
	require.NoError(t, err, errOut)
	require.NotContains(t, errOut, "relay's address")
	require.Contains(t, out, `"paired": true`)

	// A target that needs elevation: the relaunch pairs, with the code
	// and the relay; this process writes nothing.
	env, _, elevated = testPairEnv(true, true)
	other := filepath.Join(t.TempDir(), "machine.json")
	before, _ := relay.counts()
	out, errOut, err = runPair(t, env, "GOOD-CODE\n\n", "pair", "--relay", relay.url, "--config", other, "--platform", "ninjatrader")
	require.NoError(t, err, errOut)
	require.Equal(t, [][]string{{"pair", "GOOD-CODE", "--pause", "--relay", relay.url, "--config", other, "--platform", "ninjatrader"}}, *elevated)
	require.Contains(t, errOut, "This PC is paired")
	require.Empty(t, out)
	after, _ := relay.counts()
	require.Equal(t, before, after, "the relaunch pairs, not this process")
	_, statErr := os.Stat(other)
	require.ErrorIs(t, statErr, os.ErrNotExist)

	// No code typed.
	env, _, _ = testPairEnv(true, false)
	_, errOut, err = runPair(t, env, "\n", "pair", "--relay", relay.url, "--data", dir)
	require.ErrorContains(t, err, "no code")
	require.Contains(t, errOut, "Press Enter to close")
}

// Which file pair and unpair write: --config, AGENT_CONFIG, --data's
// config.json (with the folder to record), else the machine's.
func TestPairTarget(t *testing.T) {
	t.Parallel()
	machineFile, _ := configFileOf("", func(string) string { return "" })
	dataDir := t.TempDir()
	for _, tc := range []struct {
		name, config, data string
		env                map[string]string
		file               string
		machine            bool
		dataDir            string
	}{
		{"--config", "/x/agent.json", dataDir, nil, "/x/agent.json", false, ""},
		{"AGENT_CONFIG", "", dataDir, map[string]string{"AGENT_CONFIG": "/y/agent.json"}, "/y/agent.json", false, ""},
		{"--data", "", dataDir, nil, filepath.Join(dataDir, "config.json"), false, dataDir},
		{"the machine's", "", "", nil, machineFile, true, ""},
	} {
		file, machine, dir, err := pairTarget(tc.config, tc.data, func(k string) string { return tc.env[k] })
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.file, file, tc.name)
		require.Equal(t, tc.machine, machine, tc.name)
		require.Equal(t, tc.dataDir, dir, tc.name)
	}
	// A relative --data is recorded absolute: the service does not run
	// in this folder.
	_, _, dir, err := pairTarget("", "rel", func(string) string { return "" })
	require.NoError(t, err)
	require.True(t, filepath.IsAbs(dir))
}

// noPairEnv is a pairEnv for commands that must not find a configuration
// to revoke: AGENT_CONFIG names a file that does not exist.
func noPairEnv() pairEnv {
	env, _, _ := testPairEnv(false, false)
	env.getenv = func(k string) string {
		if k == "AGENT_CONFIG" {
			return filepath.Join(os.TempDir(), "tradebridge-no-such-folder", "agent.json")
		}
		return ""
	}
	return env
}

// After `agent uninstall` removed the service, it says what stays and
// offers to revoke the PC's token: --revoke revokes at once, a terminal is
// asked (and "n" keeps the token), anything else is told of agent unpair.
func TestUninstallOffersToRevoke(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		revoke      bool
		interactive bool
		answer      string
		revoked     bool
		says        string
	}{
		{name: "--revoke", revoke: true, revoked: true, says: "was revoked on the relay"},
		{name: "asked, yes", interactive: true, answer: "y\n", revoked: true, says: "Revoke it on the relay now"},
		{name: "asked, no", interactive: true, answer: "\n", says: "The token stays valid"},
		{name: "no terminal", says: "`agent unpair` revokes it on the relay"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			relay := newFakeRelay(t)
			file := filepath.Join(t.TempDir(), "agent.json")
			_, _, err := setConfig(file, false, []string{"relay-url", relay.url, "token", pairedToken}, strings.NewReader(""))
			require.NoError(t, err)
			env, _, _ := testPairEnv(tc.interactive, false)
			env.getenv = func(k string) string {
				if k == "AGENT_CONFIG" {
					return file
				}
				return ""
			}
			var stderr bytes.Buffer
			require.NoError(t, offerRevoke(context.Background(), env, tc.revoke, strings.NewReader(tc.answer), &stderr))
			assert.Contains(t, stderr.String(), "Left on this PC")
			assert.Contains(t, stderr.String(), tc.says)
			assert.NotContains(t, stderr.String(), pairedToken)
			_, revokes := relay.counts()
			cfg, err := readConfigFile(file)
			require.NoError(t, err)
			if tc.revoked {
				assert.Equal(t, 1, revokes)
				assert.Empty(t, cfg.Token, "removed from the configuration")
			} else {
				assert.Zero(t, revokes)
				assert.Equal(t, pairedToken, cfg.Token)
			}
		})
	}
}
