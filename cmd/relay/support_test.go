package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/relay/auth"
)

type issuedSupport struct {
	Kind   string   `json:"kind"`
	Name   string   `json:"name"`
	Grants []string `json:"grants"`
	Token  string   `json:"token"`
}

// addUser creates a user with relay users add.
func addUser(t *testing.T, dir, name string) auth.Credentials {
	t.Helper()
	out, err := run(t, "", "users", "add", "--data", dir, "--name", name, "--plan", "pro")
	require.NoError(t, err)
	return decode[auth.Credentials](t, out)
}

// relay tokens issue --kind support issues a support token for existing
// users only, with a name; relay support tokens lists it without its
// text; relay tokens revoke revokes it.
func TestSupportTokenCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	alice, bob := addUser(t, dir, "alice"), addUser(t, dir, "bob")

	out, err := run(t, "", "tokens", "issue", "--data", dir, "--kind", "support", "--name", "Sam Support",
		"--grant", bob.UserID, "--grant", alice.UserID, "--grant", bob.UserID)
	require.NoError(t, err)
	issued := decode[issuedSupport](t, out)
	require.Equal(t, "support", issued.Kind)
	require.Equal(t, "Sam Support", issued.Name)
	require.ElementsMatch(t, []string{alice.UserID, bob.UserID}, issued.Grants)
	require.Len(t, issued.Grants, 2)
	require.True(t, strings.HasPrefix(issued.Token, "tb_support_"))

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kind", "support", "--name", "x", "--grant", "usr_nobody"}, "no such user"},
		{[]string{"--kind", "support", "--name", "x", "--grant", alice.UserID, "--grant", "usr_nobody"}, "no such user"},
		{[]string{"--kind", "support", "--name", "x"}, "--grant"},
		{[]string{"--kind", "support", "--name", "x", "--grant", alice.UserID, "--user", alice.UserID}, "--user and --profile"},
		{[]string{"--kind", "support", "--name", "x", "--grant", alice.UserID, "--profile", "standard"}, "--user and --profile"},
		{[]string{"--kind", "api", "--user", alice.UserID, "--grant", alice.UserID}, "support tokens only"},
		{[]string{"--kind", "api"}, "--user is required"},
		{[]string{"--kind", "root", "--user", alice.UserID}, "api, agent or support"},
	} {
		_, err := run(t, "", append([]string{"tokens", "issue", "--data", dir}, tc.args...)...)
		require.ErrorContains(t, err, tc.want, tc.args)
	}
	_, err = run(t, "", "tokens", "revoke", "--data", dir, "--user", alice.UserID, "--kind", "support")
	require.ErrorContains(t, err, "--token")

	out, err = run(t, "", "support", "tokens", "--data", dir)
	require.NoError(t, err)
	require.NotContains(t, out, issued.Token)
	require.NotContains(t, out, issued.Token[len("tb_support_"):])
	listed := decode[struct {
		Tokens []auth.SupportTokenInfo `json:"tokens"`
	}](t, out)
	require.Len(t, listed.Tokens, 1, "refused issues left nothing")
	got := listed.Tokens[0]
	require.Equal(t, auth.Hash(issued.Token)[:12], got.ID)
	require.Equal(t, "Sam Support", got.Name)
	require.Equal(t, issued.Grants, got.Grants)
	require.NotEmpty(t, got.CreatedAt)
	require.Empty(t, got.RevokedAt)

	out, err = run(t, issued.Token+"\n", "tokens", "revoke", "--data", dir, "--token", "-")
	require.NoError(t, err)
	require.JSONEq(t, `{"revoked":1}`, out)
	out, err = run(t, "", "support", "tokens", "--data", dir)
	require.NoError(t, err)
	require.NotEmpty(t, decode[struct {
		Tokens []auth.SupportTokenInfo `json:"tokens"`
	}](t, out).Tokens[0].RevokedAt)

	// The command as operators script it, without --name: the token is
	// "unnamed" and the audit log tells it apart by its id.
	out, err = run(t, "", "tokens", "issue", "--data", dir, "--kind", "support", "--grant", alice.UserID)
	require.NoError(t, err)
	unnamed := decode[issuedSupport](t, out)
	require.Equal(t, "unnamed", unnamed.Name)
	require.Equal(t, []string{alice.UserID}, unnamed.Grants)
}

// serveRelay runs relay serve on a free address until the test ends and
// returns its base URL.
func serveRelay(t *testing.T, dir string) string {
	t.Helper()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cmd := newRootCmd(io.Discard)
	cmd.SetArgs([]string{"serve", "--listen", addr, "--operator-listen", "off", "--data", dir, "--log-level", "error"})
	cmd.SetErr(io.Discard)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	base := "http://" + addr
	require.Eventually(t, func() bool { return httpStatus(base+"/healthz") == http.StatusOK },
		10*time.Second, 20*time.Millisecond, "the relay starts")
	return base
}

// relay support agent reads a granted user's agent from a running relay
// with the token from the environment; a user it is not granted, or none,
// is refused with the relay's code; a revoked token stops working.
func TestSupportAgentCommand(t *testing.T) {
	dir := t.TempDir()
	alice, bob := addUser(t, dir, "alice"), addUser(t, dir, "bob")
	out, err := run(t, "", "tokens", "issue", "--data", dir, "--kind", "support", "--name", "sam", "--grant", alice.UserID)
	require.NoError(t, err)
	tok := decode[issuedSupport](t, out).Token
	base := serveRelay(t, dir)

	t.Setenv(supportTokenEnv, tok)
	out, err = run(t, "", "support", "agent", alice.UserID, "--relay", base)
	require.NoError(t, err)
	var ans struct {
		UserID            string          `json:"userId"`
		Connected         bool            `json:"connected"`
		Agent             json.RawMessage `json:"agent"`
		Diagnostics       json.RawMessage `json:"diagnostics"`
		DiagnosticsSource string          `json:"diagnosticsSource"`
		History           []any           `json:"history"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &ans), out)
	require.Equal(t, alice.UserID, ans.UserID)
	require.False(t, ans.Connected)
	require.JSONEq(t, "null", string(ans.Agent))
	require.JSONEq(t, "null", string(ans.Diagnostics))
	require.Equal(t, "none", ans.DiagnosticsSource)
	require.NotNil(t, ans.History)
	require.Empty(t, ans.History)

	// RELAY_URL is the default relay.
	t.Setenv("RELAY_URL", base)
	_, err = run(t, "", "support", "agent", alice.UserID)
	require.NoError(t, err)

	for _, user := range []string{bob.UserID, "usr_nobody"} {
		_, err = run(t, "", "support", "agent", user, "--relay", base)
		require.ErrorContains(t, err, "not_found", user)
		require.NotContains(t, err.Error(), tok)
	}

	// The token on standard input; a token on the command line is refused.
	t.Setenv(supportTokenEnv, "")
	_, err = run(t, tok+"\n", "support", "agent", alice.UserID, "--relay", base, "--token", "-")
	require.NoError(t, err)
	_, err = run(t, "", "support", "agent", alice.UserID, "--relay", base, "--token", tok)
	require.ErrorContains(t, err, "standard input")
	require.NotContains(t, err.Error(), tok)
	_, err = run(t, "", "support", "agent", alice.UserID, "--relay", base)
	require.ErrorContains(t, err, supportTokenEnv)

	// The user's own API token is no support token.
	_, err = run(t, alice.APIToken, "support", "agent", alice.UserID, "--relay", base, "--token", "-")
	require.ErrorContains(t, err, "unauthorized")

	_, err = run(t, tok, "tokens", "revoke", "--data", dir, "--token", "-")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := run(t, tok, "support", "agent", alice.UserID, "--relay", base, "--token", "-")
		return err != nil && strings.Contains(err.Error(), "unauthorized")
	}, testkit.Long, 100*time.Millisecond, "revoked within the relay's cache TTL")
}
