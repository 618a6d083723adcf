package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/auth"
	"tradebridge/relay/store"
)

// relay tokens issue --scope issues an API token of the scope (trade by
// default) that the relay authenticates with it; relay tokens list shows
// each API token's scope; a scope that is not read or trade, or one given
// for another kind, is refused and issues nothing.
func TestTokenScopeFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, err := run(t, "", "users", "add", "--data", dir, "--name", "ivy")
	require.NoError(t, err)
	creds := decode[auth.Credentials](t, out)

	issued := map[string]string{}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"default", nil, "trade"},
		{"read", []string{"--scope", "read"}, "read"},
		{"trade", []string{"--scope", "trade"}, "trade"},
	} {
		out, err := run(t, "", append([]string{"tokens", "issue", "--data", dir, "--user", creds.UserID, "--kind", "api"}, tc.args...)...)
		require.NoError(t, err, tc.name)
		got := decode[map[string]string](t, out)
		require.Equal(t, tc.want, got["scope"], tc.name)
		issued[auth.TokenID(auth.Hash(got["token"]))] = tc.want
		require.Equal(t, auth.Scope(tc.want), principalScope(t, dir, got["token"]), tc.name)
	}

	for _, tc := range []struct {
		name string
		args []string
		err  string
	}{
		{"unknown scope", []string{"--kind", "api", "--scope", "write"}, "--scope must be read or trade"},
		{"empty scope", []string{"--kind", "api", "--scope", ""}, "--scope must be read or trade"},
		{"agent token", []string{"--kind", "agent", "--scope", "read"}, "--scope applies to API tokens only"},
		{"agent token, trade", []string{"--kind", "agent", "--scope", "trade"}, "--scope applies to API tokens only"},
	} {
		_, err := run(t, "", append([]string{"tokens", "issue", "--data", dir, "--user", creds.UserID}, tc.args...)...)
		require.ErrorContains(t, err, tc.err, tc.name)
	}
	_, err = run(t, "", "tokens", "issue", "--data", dir, "--kind", "support", "--scope", "read")
	require.ErrorContains(t, err, "--scope applies to API tokens only")

	out, err = run(t, "", "tokens", "list", "--data", dir, "--user", creds.UserID)
	require.NoError(t, err)
	type listed struct {
		UserID string
		Tokens []struct {
			ID      string `json:"id"`
			Kind    string `json:"kind"`
			Profile string `json:"profile"`
			Scope   string `json:"scope"`
		}
	}
	l := decode[listed](t, out)
	require.Len(t, l.Tokens, 5, "the first two and the three issued; the refused issued nothing")
	issued[auth.TokenID(auth.Hash(creds.APIToken))] = "trade"
	for _, tk := range l.Tokens {
		if tk.Kind != "api" {
			require.Empty(t, tk.Scope, "agent tokens list no scope")
			continue
		}
		require.Equal(t, issued[tk.ID], tk.Scope, tk.ID)
		require.Equal(t, "standard", tk.Profile, "the other members stay")
	}

	// The operator's activity entries name each new API token's scope.
	st, err := store.Open(context.Background(), store.Options{Dir: dir})
	require.NoError(t, err)
	defer st.Close()
	entries, err := st.ListActivity(context.Background(), creds.UserID, store.ActivityQuery{Limit: 20})
	require.NoError(t, err)
	logged := map[string]string{}
	for _, e := range entries {
		var d struct{ Resource, Op, ID, Scope string }
		require.NoError(t, json.Unmarshal(e.Detail, &d))
		if d.Resource == "token" && d.Op == "create" {
			logged[d.ID] = d.Scope
		}
	}
	delete(issued, auth.TokenID(auth.Hash(creds.APIToken))) // made with the user, not by tokens issue
	require.Equal(t, issued, logged)
}

// principalScope is the scope the relay in dir authenticates token with.
func principalScope(t *testing.T, dir, token string) auth.Scope {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Dir: dir})
	require.NoError(t, err)
	defer st.Close()
	a, err := auth.New(auth.Options{Store: st})
	require.NoError(t, err)
	p, err := a.Authenticate(context.Background(), token, auth.KindAPI)
	require.NoError(t, err)
	return p.Scope
}
