package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/systemtest"
	"tradebridge/internal/testkit"
	"tradebridge/relay"
	"tradebridge/relay/auth"
	"tradebridge/relay/pairing"
)

// A PC paired without copying a token, end to end on a real relay: the
// operator mints a code (relay agents pair-code), the agent exchanges it
// (agent pair CODE --relay URL --data DIR), agent run --relay URL --data
// DIR connects without --token, agent unpair revokes the token, which then
// opens nothing and whose tunnel the relay closes.
func TestPairRunUnpairOnTheRelay(t *testing.T) {
	t.Parallel()
	s := systemtest.NewWith(t, func(o *relay.Options) { o.Hub.ReverifyInterval = 100 * time.Millisecond })
	alice := s.Users["alice"]
	code, err := pairing.Mint(context.Background(), s.Store, alice.UserID, time.Now())
	require.NoError(t, err)

	dir := t.TempDir()
	out, err := agentCmd(t, "", "pair", strings.ToLower(code.Code), "--relay", s.Base, "--data", dir)
	require.NoError(t, err)
	var paired struct {
		Paired bool   `json:"paired"`
		UserID string `json:"userId"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &paired), out)
	require.Equal(t, alice.UserID, paired.UserID)
	cfg, err := readConfigFile(dir + "/config.json")
	require.NoError(t, err)
	token := cfg.Token
	require.NotEqual(t, alice.AgentToken, token, "a new agent token")
	require.NotContains(t, out, token)

	_, err = agentCmd(t, "", "pair", code.Code, "--relay", s.Base, "--data", t.TempDir())
	require.ErrorContains(t, err, "wrong, expired or already used", "a code pairs once")

	// agent run without --token.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		var out, errOut bytes.Buffer
		root := newRootCmd(&out)
		root.SetErr(&errOut)
		root.SetArgs([]string{"run", "--relay", s.Base, "--data", dir, "--log-level", "warn"})
		done <- root.ExecuteContext(ctx)
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			select {
			case err := <-done:
				require.NoError(t, err, "agent run")
			case <-time.After(testkit.Long):
				t.Fatal("agent run did not stop")
			}
		}
	}
	t.Cleanup(stop)
	require.Eventually(t, func() bool { return s.Relay().Hub().Connected(alice.UserID) }, testkit.Long, testkit.Tick,
		"agent run --data DIR connects with the paired token")
	r := s.Do("GET", "/v1/api/accounts", alice.APIToken, "")
	require.Equal(t, 200, r.Status, string(r.Raw))

	out, err = agentCmd(t, "", "unpair", "--data", dir)
	require.NoError(t, err)
	require.JSONEq(t, `{"unpaired":true,"revoked":true}`, out)
	a, err := auth.New(auth.Options{Store: s.Store, CacheTTL: -1})
	require.NoError(t, err)
	_, err = a.Authenticate(context.Background(), token, auth.KindAgent)
	require.ErrorIs(t, err, auth.ErrUnauthorized, "the token no longer authenticates")
	_, err = a.Authenticate(context.Background(), alice.AgentToken, auth.KindAgent)
	require.NoError(t, err, "the user's other agent tokens stay")
	require.Eventually(t, func() bool { return !s.Relay().Hub().Connected(alice.UserID) }, testkit.Long, testkit.Tick,
		"the relay closes the tunnel of the revoked token")
	cfg, err = readConfigFile(dir + "/config.json")
	require.NoError(t, err)
	require.Empty(t, cfg.Token)
	require.Equal(t, s.Base, cfg.RelayURL)
	stop()
}
