package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/auth"
	"tradebridge/relay/profile"
	"tradebridge/relay/store"
)

// run executes the relay command with args and stdin, and returns what it
// printed.
func run(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := newRootCmd(&out)
	cmd.SetArgs(args)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetErr(&bytes.Buffer{})
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func decode[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal([]byte(s), &v), s)
	return v
}

// profileOf reads a token's response profile as the relay will.
func profileOf(t *testing.T, dir, token string) profile.Profile {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Dir: dir})
	require.NoError(t, err)
	defer st.Close()
	a, err := auth.New(auth.Options{Store: st, CacheTTL: -1})
	require.NoError(t, err)
	p, err := a.Authenticate(context.Background(), token, auth.KindAPI)
	require.NoError(t, err)
	return p.Profile
}

// The token commands that operators script against: issue with a
// profile, change it with the token on stdin, list without revealing.
func TestTokenProfileCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, err := run(t, "", "users", "add", "--data", dir, "--name", "dana", "--plan", "pro")
	require.NoError(t, err)
	creds := decode[auth.Credentials](t, out)
	require.Equal(t, profile.Standard, profileOf(t, dir, creds.APIToken), "the default profile")

	out, err = run(t, "", "tokens", "issue", "--data", dir, "--user", creds.UserID, "--kind", "api", "--profile", "compatible")
	require.NoError(t, err)
	issued := decode[map[string]string](t, out)
	require.Equal(t, "compatible", issued["profile"])
	require.Equal(t, profile.Compatible, profileOf(t, dir, issued["token"]))

	out, err = run(t, creds.APIToken+"\n", "tokens", "profile", "--data", dir, "--token", "-", "--profile", "compatible")
	require.NoError(t, err)
	require.JSONEq(t, `{"profile":"compatible"}`, out)
	require.Equal(t, profile.Compatible, profileOf(t, dir, creds.APIToken))
	_, err = run(t, creds.APIToken, "tokens", "profile", "--data", dir, "--token", "-", "--profile", "standard")
	require.NoError(t, err)
	require.Equal(t, profile.Standard, profileOf(t, dir, creds.APIToken))

	out, err = run(t, "", "tokens", "list", "--data", dir, "--user", creds.UserID)
	require.NoError(t, err)
	require.NotContains(t, out, creds.APIToken)
	require.NotContains(t, out, issued["token"])
	listed := decode[struct {
		UserID string           `json:"userId"`
		Tokens []auth.TokenInfo `json:"tokens"`
	}](t, out)
	require.Equal(t, creds.UserID, listed.UserID)
	require.Len(t, listed.Tokens, 3)
	profiles := map[string]int{}
	for _, ti := range listed.Tokens {
		profiles[string(ti.Kind)+"/"+ti.Profile]++
	}
	require.Equal(t, map[string]int{"api/standard": 1, "api/compatible": 1, "agent/": 1}, profiles)

	// Refusals: unknown profile, agent tokens, unknown tokens; nothing
	// changes.
	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"tokens", "issue", "--data", dir, "--user", creds.UserID, "--kind", "api", "--profile", "crosstrade"}, "--profile must be"},
		{"", []string{"tokens", "issue", "--data", dir, "--user", creds.UserID, "--kind", "agent", "--profile", "compatible"}, "API tokens only"},
		{creds.AgentToken, []string{"tokens", "profile", "--data", dir, "--token", "-", "--profile", "compatible"}, "API tokens only"},
		{"tb_api_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", []string{"tokens", "profile", "--data", dir, "--token", "-", "--profile", "compatible"}, "no such token"},
		{creds.APIToken, []string{"tokens", "profile", "--data", dir, "--token", "-", "--profile", ""}, "--profile must be"},
	} {
		_, err := run(t, tc.stdin, tc.args...)
		require.ErrorContains(t, err, tc.want, tc.args)
		require.NotContains(t, err.Error(), "tb_", "errors never repeat a token")
	}
	require.Equal(t, profile.Standard, profileOf(t, dir, creds.APIToken))
}
