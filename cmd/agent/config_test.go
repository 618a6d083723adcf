package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/ninjatrader"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// Flags win over the environment, which wins over the file; the
// simulator's start time is checked before anything starts.
func TestLoadConfigSimStart(t *testing.T) {
	t.Parallel()
	base := map[string]string{"AGENT_RELAY_URL": "http://127.0.0.1:1", "AGENT_TOKEN": "tb_agent_x"}
	cfg, err := loadConfig("", Config{}, env(base))
	require.NoError(t, err)
	require.Equal(t, "sim", cfg.Platform)
	require.Empty(t, cfg.SimStart)

	withEnv := map[string]string{"AGENT_SIM_START": "2026-11-25T10:00:00-05:00"}
	for k, v := range base {
		withEnv[k] = v
	}
	cfg, err = loadConfig("", Config{}, env(withEnv))
	require.NoError(t, err)
	require.Equal(t, "2026-11-25T10:00:00-05:00", cfg.SimStart)
	cfg, err = loadConfig("", Config{SimStart: "2026-11-24T15:00:00Z"}, env(withEnv))
	require.NoError(t, err)
	require.Equal(t, "2026-11-24T15:00:00Z", cfg.SimStart, "the flag wins")

	_, err = loadConfig("", Config{SimStart: "tomorrow"}, env(base))
	require.ErrorContains(t, err, "RFC 3339")
	_, err = loadConfig("", Config{SimStart: "2026-11-24T15:00:00Z", Platform: "ninjatrader"}, env(base))
	require.ErrorContains(t, err, "simulator only")
}

// A simulator started inside market hours trades even while the real
// market is closed: a Saturday start refuses a market order, a Wednesday
// start fills it.
func TestSimStartOpensTheMarket(t *testing.T) {
	t.Parallel()
	place := func(start string) error {
		p, now, closeAll, err := openPlatform(Config{Platform: "sim", SimStart: start}, zap.NewNop())
		require.NoError(t, err)
		want, _ := time.Parse(time.RFC3339, start)
		require.WithinDuration(t, want, now(), time.Minute, "the operations read the simulator's clock")
		defer closeAll()
		accts, err := p.Accounts(context.Background())
		require.NoError(t, err)
		_, err = p.SubmitOrder(context.Background(), bridge.OrderRequest{Account: accts[0].Name, Instrument: "ES 03-27",
			Action: protocol.ActionBuy, OrderType: protocol.OrderTypeMarket, Quantity: 1, TimeInForce: protocol.TimeInForceDay})
		return err
	}
	require.NoError(t, place("2026-11-25T10:00:00-05:00"))
	err := place("2026-11-28T10:00:00-05:00")
	require.Error(t, err)
	require.Contains(t, err.Error(), "market is closed")
}

// --platform ninjatrader reads its settings from the config file's
// "ninjatrader" object; the bridge reports why it cannot reach the add-on.
func TestNinjaTraderConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "agent.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"relayUrl":"http://127.0.0.1:1","token":"tb_agent_x","platform":"ninjatrader",
		"ninjatrader":{"discoveryFile":"`+filepath.ToSlash(filepath.Join(dir, "none.json"))+`","dir":"`+filepath.ToSlash(dir)+`"}}`), 0o600))
	cfg, err := loadConfig(file, Config{}, env(nil))
	require.NoError(t, err)
	require.Equal(t, ninjatrader.Kind, cfg.Platform)
	require.Equal(t, filepath.ToSlash(dir), cfg.NinjaTrader.Dir)
	p, _, closeAll, err := openPlatform(cfg, zap.NewNop())
	require.NoError(t, err)
	defer closeAll()
	require.Equal(t, ninjatrader.Kind, p.Kind())
	_, err = p.Accounts(context.Background())
	var ue *bridge.UnavailableError
	require.ErrorAs(t, err, &ue, "not connected before the agent runs its loop")

	_, err = loadConfig("", Config{Platform: "mt5"}, env(map[string]string{"AGENT_RELAY_URL": "http://x", "AGENT_TOKEN": "t"}))
	require.ErrorContains(t, err, "sim or ninjatrader")
}

// The relay URL is http or https with a host; the log folder comes from
// the flag, the environment or the file; an unknown key in the file is an
// error.
func TestLoadConfigChecks(t *testing.T) {
	t.Parallel()
	base := map[string]string{"AGENT_TOKEN": "tb_agent_x"}
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:8080", true},
		{"https://relay.example", true},
		{"https://relay.example/base/", true},
		{"ws://relay.example", false},
		{"relay.example", false},
		{"https://", false},
		{"https://user:pw@relay.example", false},
		{"https://relay.example/?a=b", false},
		{"https://relay.example/#x", false},
	} {
		_, err := loadConfig("", Config{RelayURL: tc.url}, env(base))
		if tc.ok {
			require.NoError(t, err, tc.url)
		} else {
			require.ErrorContains(t, err, "http:// or https://", tc.url)
		}
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "agent.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"relayUrl":"http://127.0.0.1:1","token":"tb_agent_x","logDir":"/from/file"}`), 0o600))
	cfg, err := loadConfig(file, Config{}, env(nil))
	require.NoError(t, err)
	require.Equal(t, "/from/file", cfg.LogDir)
	cfg, err = loadConfig(file, Config{}, env(map[string]string{"AGENT_LOG_DIR": "/from/env"}))
	require.NoError(t, err)
	require.Equal(t, "/from/env", cfg.LogDir)
	cfg, err = loadConfig(file, Config{LogDir: "/from/flag"}, env(map[string]string{"AGENT_LOG_DIR": "/from/env"}))
	require.NoError(t, err)
	require.Equal(t, "/from/flag", cfg.LogDir)

	require.NoError(t, os.WriteFile(file, []byte(`{"relayUrl":"http://127.0.0.1:1","tokn":"tb_agent_x"}`), 0o600))
	_, err = loadConfig(file, Config{}, env(nil))
	require.ErrorContains(t, err, "not valid")
	_, err = loadConfig(filepath.Join(dir, "none.json"), Config{}, env(nil))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// The state file is the relay's and the user's: a new token of the user
// the PC was paired with keeps it, another user or relay does not, and a
// token set by hand names its own.
func TestStateFileFollowsTheUser(t *testing.T) {
	t.Parallel()
	const dir = "/data"
	paired := Config{RelayURL: "https://relay.example", Token: "tb_agent_one", UserID: "usr_alice"}
	again := paired
	again.Token = "tb_agent_two"
	other := paired
	other.UserID = "usr_bob"
	otherRelay := paired
	otherRelay.RelayURL = "https://other.example"
	byHand := paired
	byHand.UserID = ""
	byHand2 := byHand
	byHand2.Token = "tb_agent_two"

	assert.Equal(t, stateFile(dir, paired), stateFile(dir, again), "paired again with the same account")
	assert.NotEqual(t, stateFile(dir, paired), stateFile(dir, other))
	assert.NotEqual(t, stateFile(dir, paired), stateFile(dir, otherRelay))
	assert.NotEqual(t, stateFile(dir, byHand), stateFile(dir, byHand2), "tokens set by hand name their own")
	assert.NotContains(t, stateFile(dir, byHand), "tb_agent", "a fingerprint, never the token")
}

// Setting a token by hand forgets the user the PC was paired with (the
// token may be another user's); setting both keeps both.
func TestSetTokenForgetsThePairedUser(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "agent.json")
	cfg, _, err := setConfig(file, false, []string{"relay-url", "https://relay.example", "token", "tb_agent_one", "user-id", "usr_alice"}, strings.NewReader(""))
	require.NoError(t, err)
	require.Equal(t, "usr_alice", cfg.UserID)
	cfg, _, err = setConfig(file, false, []string{"platform", "sim"}, strings.NewReader(""))
	require.NoError(t, err)
	require.Equal(t, "usr_alice", cfg.UserID, "another key leaves it")
	cfg, _, err = setConfig(file, false, []string{"token", "tb_agent_two"}, strings.NewReader(""))
	require.NoError(t, err)
	require.Empty(t, cfg.UserID)
	_, _, err = setConfig(file, false, []string{"user-id", "alice"}, strings.NewReader(""))
	require.Error(t, err)
}
