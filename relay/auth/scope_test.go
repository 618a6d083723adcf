package auth_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/auth"
	"tradebridge/relay/store"
)

func TestScopeCoversAndAllows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    auth.Principal
		need auth.Scope
		want bool
	}{
		{"read token reads", auth.Principal{Kind: auth.KindAPI, Scope: auth.ScopeRead}, auth.ScopeRead, true},
		{"read token writes", auth.Principal{Kind: auth.KindAPI, Scope: auth.ScopeRead}, auth.ScopeTrade, false},
		{"trade token reads", auth.Principal{Kind: auth.KindAPI, Scope: auth.ScopeTrade}, auth.ScopeRead, true},
		{"trade token writes", auth.Principal{Kind: auth.KindAPI, Scope: auth.ScopeTrade}, auth.ScopeTrade, true},
		{"token without a scope writes", auth.Principal{Kind: auth.KindAPI}, auth.ScopeTrade, true},
		{"session writes", auth.Principal{Kind: auth.KindSession}, auth.ScopeTrade, true},
		{"agent writes", auth.Principal{Kind: auth.KindAgent}, auth.ScopeTrade, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.p.Allows(tt.need))
		})
	}
	for _, s := range []string{"", "trade", "read"} {
		sc, err := auth.ParseScope(s)
		require.NoError(t, err, s)
		require.Contains(t, auth.Scopes, sc)
	}
	for _, s := range []string{"write", "READ", "admin", " read"} {
		_, err := auth.ParseScope(s)
		require.Error(t, err, s)
	}
}

// An API token's scope reaches its principal, from the store and from
// the cache alike, and is listed; other kinds refuse a read scope.
func TestTokenScope(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t)
	now := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	a, err := auth.New(auth.Options{Store: st, CacheTTL: 2 * time.Second, Now: func() time.Time { return now }})
	require.NoError(t, err)
	creds, err := auth.CreateUser(ctx, st, "alice", auth.PlanPro, now)
	require.NoError(t, err)

	read, err := auth.IssueTokenWith(ctx, st, creds.UserID, auth.KindAPI, auth.TokenOptions{Scope: auth.ScopeRead, Name: "assistant"}, now)
	require.NoError(t, err)
	trade, err := auth.IssueTokenWith(ctx, st, creds.UserID, auth.KindAPI, auth.TokenOptions{Scope: auth.ScopeTrade}, now.Add(time.Second))
	require.NoError(t, err)

	for _, tc := range []struct {
		tok  string
		want auth.Scope
	}{{read, auth.ScopeRead}, {trade, auth.ScopeTrade}, {creds.APIToken, auth.ScopeTrade}} {
		before := st.lookups.Load()
		p, err := a.Authenticate(ctx, tc.tok, auth.KindAPI)
		require.NoError(t, err)
		require.Equal(t, tc.want, p.Scope)
		p, err = a.Authenticate(ctx, tc.tok, auth.KindAPI)
		require.NoError(t, err)
		require.Equal(t, tc.want, p.Scope, "the cached verdict keeps the scope")
		require.Equal(t, before+1, st.lookups.Load(), "the second verdict came from the cache")
	}
	p, err := a.Authenticate(ctx, creds.AgentToken, auth.KindAgent)
	require.NoError(t, err)
	require.Empty(t, p.Scope, "agent tokens have no scope")
	require.False(t, auth.Principal{Kind: auth.KindAPI, Scope: auth.ScopeRead}.Allows(auth.ScopeTrade))

	_, err = auth.IssueTokenWith(ctx, st, creds.UserID, auth.KindAgent, auth.TokenOptions{Scope: auth.ScopeRead}, now)
	require.ErrorIs(t, err, auth.ErrScopeAPIOnly)
	_, err = auth.IssueTokenWith(ctx, st, creds.UserID, auth.KindAgent, auth.TokenOptions{Scope: auth.ScopeTrade}, now)
	require.NoError(t, err, "an agent token's scope is trade, as every agent token's")
	_, err = auth.IssueTokenWith(ctx, st, creds.UserID, auth.KindAPI, auth.TokenOptions{Scope: "admin"}, now)
	require.Error(t, err)

	infos, err := auth.ListTokens(ctx, st, creds.UserID)
	require.NoError(t, err)
	got := map[string]auth.Scope{}
	for _, ti := range infos {
		if ti.Kind != auth.KindAPI {
			require.Empty(t, ti.Scope, "only API tokens list a scope")
			continue
		}
		got[ti.Name+":"+ti.ID] = ti.Scope
	}
	require.Equal(t, map[string]auth.Scope{
		":" + auth.TokenID(auth.Hash(creds.APIToken)): auth.ScopeTrade,
		"assistant:" + auth.TokenID(auth.Hash(read)):  auth.ScopeRead,
		":" + auth.TokenID(auth.Hash(trade)):          auth.ScopeTrade,
	}, got)
}

// scopeStore answers every token with a scope this relay does not know.
type scopeStore struct{ *countingStore }

func (s scopeStore) LookupToken(ctx context.Context, hash string) (store.Token, store.User, error) {
	t, u, err := s.countingStore.LookupToken(ctx, hash)
	t.Scope = "superuser"
	return t, u, err
}

// A stored scope this relay does not know fails closed: read.
func TestUnknownScopeIsRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t)
	now := time.Now()
	creds, err := auth.CreateUser(ctx, st, "alice", auth.PlanPro, now)
	require.NoError(t, err)
	a, err := auth.New(auth.Options{Store: scopeStore{st}, CacheTTL: -1})
	require.NoError(t, err)
	p, err := a.Authenticate(ctx, creds.APIToken, auth.KindAPI)
	require.NoError(t, err)
	require.Equal(t, auth.ScopeRead, p.Scope)
}
