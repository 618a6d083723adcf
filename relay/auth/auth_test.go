package auth_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/auth"
	"tradebridge/relay/profile"
	"tradebridge/relay/store"
)

func TestTokenFormat(t *testing.T) {
	for _, k := range []auth.Kind{auth.KindAPI, auth.KindAgent, auth.KindSupport, auth.KindSession} {
		tok, err := auth.NewToken(k)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(tok, "tb_"+string(k)+"_"))
		require.Len(t, tok, len("tb_"+string(k)+"_")+43)
		got, ok := auth.ParseKind(tok)
		require.True(t, ok)
		require.Equal(t, k, got)
		other, err := auth.NewToken(k)
		require.NoError(t, err)
		require.NotEqual(t, tok, other)
		require.Len(t, auth.Hash(tok), 64)
		require.NotContains(t, auth.Display(tok), tok[len(tok)-40:], "Display hides the secret")
	}
	_, err := auth.NewToken("root")
	require.Error(t, err)

	for _, bad := range []string{"", "tb_api_", "tb_api_short", "tb_other_" + strings.Repeat("A", 43),
		"tb_api_" + strings.Repeat("A", 42) + "*", "Bearer tb_api_" + strings.Repeat("A", 43)} {
		_, ok := auth.ParseKind(bad)
		require.False(t, ok, bad)
	}
}

func TestBearerToken(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   string
		ok     bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer abc", "abc", true},
		{"BEARER abc", "abc", true},
		// One space, and nothing around the token: anything else is
		// malformed.
		{"Bearer  abc", "", false},
		{"Bearer abc ", "", false},
		{"Bearer \tabc", "", false},
		{"Bearer\tabc", "", false},
		{"Bearer a bc", "", false},
		{"Basic abc", "", false},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"", "", false},
	} {
		h := http.Header{}
		if tc.header != "" {
			h.Set("Authorization", tc.header)
		}
		got, ok := auth.BearerToken(h)
		require.Equal(t, tc.ok, ok, tc.header)
		require.Equal(t, tc.want, got, tc.header)
	}
}

func TestPlans(t *testing.T) {
	for _, tc := range []struct {
		plan, min auth.Plan
		want      bool
	}{
		{auth.PlanFree, auth.PlanPro, false},
		{auth.PlanPro, auth.PlanPro, true},
		{auth.PlanElite, auth.PlanPro, true},
		{auth.PlanPro, auth.PlanElite, false},
		{"", auth.PlanPro, false},
	} {
		require.Equal(t, tc.want, tc.plan.AtLeast(tc.min), "%s >= %s", tc.plan, tc.min)
	}
	p, err := auth.ParsePlan(" Elite ")
	require.NoError(t, err)
	require.Equal(t, auth.PlanElite, p)
	_, err = auth.ParsePlan("gold")
	require.Error(t, err)
}

// countingStore counts token lookups and can fail them.
type countingStore struct {
	store.Store
	lookups atomic.Int32
	fail    atomic.Bool
}

func (s *countingStore) LookupToken(ctx context.Context, hash string) (store.Token, store.User, error) {
	s.lookups.Add(1)
	if s.fail.Load() {
		return store.Token{}, store.User{}, errors.New("disk on fire")
	}
	return s.Store.LookupToken(ctx, hash)
}

func newStore(t *testing.T) *countingStore {
	st, err := store.Open(context.Background(), store.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return &countingStore{Store: st}
}

func TestAuthenticate(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	now := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	a, err := auth.New(auth.Options{Store: st, CacheTTL: 2 * time.Second, Now: clock})
	require.NoError(t, err)

	creds, err := auth.CreateUser(ctx, st, "alice", auth.PlanPro, now)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(creds.UserID, "usr_"))

	p, err := a.Authenticate(ctx, creds.APIToken, auth.KindAPI)
	require.NoError(t, err)
	require.Equal(t, auth.Principal{UserID: creds.UserID, UserName: "alice", Plan: auth.PlanPro,
		Kind: auth.KindAPI, Profile: profile.Standard, Scope: auth.ScopeTrade, TokenHash: auth.Hash(creds.APIToken)}, p)

	t.Run("wrong kind", func(t *testing.T) {
		_, err := a.Authenticate(ctx, creds.APIToken, auth.KindAgent)
		require.ErrorIs(t, err, auth.ErrUnauthorized)
		_, err = a.Authenticate(ctx, creds.AgentToken, auth.KindAPI)
		require.ErrorIs(t, err, auth.ErrUnauthorized)
	})
	t.Run("malformed never reaches the store", func(t *testing.T) {
		before := st.lookups.Load()
		_, err := a.Authenticate(ctx, "nonsense", auth.KindAPI)
		require.ErrorIs(t, err, auth.ErrUnauthorized)
		require.Equal(t, before, st.lookups.Load())
	})
	t.Run("unknown", func(t *testing.T) {
		tok, err := auth.NewToken(auth.KindAPI)
		require.NoError(t, err)
		_, err = a.Authenticate(ctx, tok, auth.KindAPI)
		require.ErrorIs(t, err, auth.ErrUnauthorized)
	})
	t.Run("cache then revocation", func(t *testing.T) {
		before := st.lookups.Load()
		for range 10 {
			_, err := a.Authenticate(ctx, creds.APIToken, auth.KindAPI)
			require.NoError(t, err)
		}
		require.Equal(t, before, st.lookups.Load(), "served from the cache")

		require.NoError(t, auth.RevokeToken(ctx, st, creds.APIToken, now))
		_, err := a.Authenticate(ctx, creds.APIToken, auth.KindAPI)
		require.NoError(t, err, "still cached within the TTL")
		now = now.Add(2 * time.Second)
		_, err = a.Authenticate(ctx, creds.APIToken, auth.KindAPI)
		require.ErrorIs(t, err, auth.ErrUnauthorized, "revoked once the TTL passed")
	})
	t.Run("disabled user", func(t *testing.T) {
		require.NoError(t, st.SetUserDisabled(ctx, creds.UserID, true))
		now = now.Add(2 * time.Second)
		_, err := a.Authenticate(ctx, creds.AgentToken, auth.KindAgent)
		require.ErrorIs(t, err, auth.ErrUnauthorized)
		require.NoError(t, st.SetUserDisabled(ctx, creds.UserID, false))
		now = now.Add(2 * time.Second)
		_, err = a.Authenticate(ctx, creds.AgentToken, auth.KindAgent)
		require.NoError(t, err)
	})
	t.Run("store failure is not unauthorized and is not cached", func(t *testing.T) {
		tok, err := auth.IssueToken(ctx, st, creds.UserID, auth.KindAPI, "", now)
		require.NoError(t, err)
		st.fail.Store(true)
		_, err = a.Authenticate(ctx, tok, auth.KindAPI)
		require.ErrorIs(t, err, auth.ErrStoreUnavailable)
		require.NotErrorIs(t, err, auth.ErrUnauthorized)
		st.fail.Store(false)
		_, err = a.Authenticate(ctx, tok, auth.KindAPI)
		require.NoError(t, err)
	})
}

// An API token's response profile reaches the principal; changing it
// takes effect once the cached verdict expires.
func TestTokenProfile(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	now := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	a, err := auth.New(auth.Options{Store: st, CacheTTL: 2 * time.Second, Now: func() time.Time { return now }})
	require.NoError(t, err)
	creds, err := auth.CreateUser(ctx, st, "alice", auth.PlanPro, now)
	require.NoError(t, err)

	compat, err := auth.IssueToken(ctx, st, creds.UserID, auth.KindAPI, profile.Compatible, now)
	require.NoError(t, err)
	p, err := a.Authenticate(ctx, compat, auth.KindAPI)
	require.NoError(t, err)
	require.Equal(t, profile.Compatible, p.Profile)

	p, err = a.Authenticate(ctx, creds.APIToken, auth.KindAPI)
	require.NoError(t, err)
	require.Equal(t, profile.Standard, p.Profile)
	require.NoError(t, auth.SetTokenProfile(ctx, st, creds.APIToken, profile.Compatible))
	p, _ = a.Authenticate(ctx, creds.APIToken, auth.KindAPI)
	require.Equal(t, profile.Standard, p.Profile, "the cached verdict holds until it expires")
	now = now.Add(2 * time.Second)
	p, _ = a.Authenticate(ctx, creds.APIToken, auth.KindAPI)
	require.Equal(t, profile.Compatible, p.Profile)

	_, err = auth.IssueToken(ctx, st, creds.UserID, auth.KindAgent, profile.Compatible, now)
	require.ErrorIs(t, err, auth.ErrProfileAPIOnly)
	require.ErrorIs(t, auth.SetTokenProfile(ctx, st, creds.AgentToken, profile.Compatible), auth.ErrProfileAPIOnly)
	require.ErrorIs(t, auth.SetTokenProfile(ctx, st, creds.APIToken, "fancy"), profile.ErrUnknown)
	_, err = auth.IssueToken(ctx, st, creds.UserID, auth.KindAPI, "fancy", now)
	require.ErrorIs(t, err, profile.ErrUnknown)

	infos, err := auth.ListTokens(ctx, st, creds.UserID)
	require.NoError(t, err)
	require.Len(t, infos, 3)
	for _, ti := range infos {
		require.Len(t, ti.ID, 12)
		if ti.Kind == auth.KindAgent {
			require.Empty(t, ti.Profile, "agent tokens have no profile")
		} else {
			require.Equal(t, "compatible", ti.Profile)
		}
	}
}

func TestIssueAndRevoke(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	now := time.Now()
	a, err := auth.New(auth.Options{Store: st, CacheTTL: -1})
	require.NoError(t, err)

	_, err = auth.IssueToken(ctx, st, "usr_nobody", auth.KindAPI, "", now)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.ErrorIs(t, auth.RevokeToken(ctx, st, "not-a-token", now), store.ErrNotFound)

	creds, err := auth.CreateUser(ctx, st, "bob", auth.PlanElite, now)
	require.NoError(t, err)
	second, err := auth.IssueToken(ctx, st, creds.UserID, auth.KindAgent, "", now)
	require.NoError(t, err)

	n, err := auth.RevokeUserTokens(ctx, st, creds.UserID, auth.KindAgent, now)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	for _, tok := range []string{creds.AgentToken, second} {
		_, err := a.Authenticate(ctx, tok, auth.KindAgent)
		require.ErrorIs(t, err, auth.ErrUnauthorized)
	}
	_, err = a.Authenticate(ctx, creds.APIToken, auth.KindAPI)
	require.NoError(t, err, "API tokens are untouched")

	_, err = auth.CreateUser(ctx, st, "", auth.PlanPro, now)
	require.Error(t, err)
	_, err = auth.CreateUser(ctx, st, "x", "gold", now)
	require.Error(t, err)
	_, err = auth.New(auth.Options{})
	require.Error(t, err)
}

// tokenTable is a store that knows one API token and counts look-ups; it
// answers every other hash with store.ErrNotFound, quickly.
type tokenTable struct {
	store.Store
	hash    string
	lookups atomic.Int32
}

func (s *tokenTable) LookupToken(_ context.Context, hash string) (store.Token, store.User, error) {
	s.lookups.Add(1)
	if hash != s.hash {
		return store.Token{}, store.User{}, store.ErrNotFound
	}
	return store.Token{Hash: hash, UserID: "usr_honest", Kind: string(auth.KindAPI), Profile: string(profile.Standard)},
		store.User{ID: "usr_honest", Name: "honest", Plan: string(auth.PlanPro)}, nil
}

// A flood of made-up tokens evicts refusals one at a time and never an
// honest caller's verdict: after 20,000 random tokens (twice the cache)
// the honest token is still answered without a look-up. The TTL still
// applies to it.
func TestCacheSurvivesAFloodOfRandomTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	honest, err := auth.NewToken(auth.KindAPI)
	require.NoError(t, err)
	st := &tokenTable{hash: auth.Hash(honest)}
	now := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	a, err := auth.New(auth.Options{Store: st, CacheTTL: time.Minute, CacheSize: 10_000, Now: func() time.Time { return now }})
	require.NoError(t, err)

	p, err := a.Authenticate(ctx, honest, auth.KindAPI)
	require.NoError(t, err)
	require.Equal(t, "usr_honest", p.UserID)
	require.EqualValues(t, 1, st.lookups.Load())

	const flood = 20_000
	var last string
	for range flood {
		last, err = auth.NewToken(auth.KindAPI)
		require.NoError(t, err)
		_, err = a.Authenticate(ctx, last, auth.KindAPI)
		require.ErrorIs(t, err, auth.ErrUnauthorized)
	}
	require.EqualValues(t, 1+flood, st.lookups.Load())

	p, err = a.Authenticate(ctx, honest, auth.KindAPI)
	require.NoError(t, err)
	require.Equal(t, "usr_honest", p.UserID)
	require.EqualValues(t, 1+flood, st.lookups.Load(), "the honest verdict is still cached")
	_, err = a.Authenticate(ctx, last, auth.KindAPI)
	require.ErrorIs(t, err, auth.ErrUnauthorized)
	require.EqualValues(t, 1+flood, st.lookups.Load(), "recent refusals stay cached too")

	now = now.Add(time.Minute)
	_, err = a.Authenticate(ctx, honest, auth.KindAPI)
	require.NoError(t, err)
	require.EqualValues(t, 2+flood, st.lookups.Load(), "a verdict older than CacheTTL is looked up again")
}

// Two Authorization headers carry no token, whichever is valid: a proxy
// that reads the last one would disagree with a relay that read the first.
func TestBearerTokenRefusesTwoHeaders(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	h.Add("Authorization", "Bearer first")
	h.Add("Authorization", "Bearer second")
	got, ok := auth.BearerToken(h)
	require.False(t, ok)
	require.Empty(t, got)
	require.True(t, auth.AmbiguousAuthorization(h))

	h.Del("Authorization")
	require.False(t, auth.AmbiguousAuthorization(h))
	h.Set("Authorization", "Bearer only")
	require.False(t, auth.AmbiguousAuthorization(h))
	got, ok = auth.BearerToken(h)
	require.True(t, ok)
	require.Equal(t, "only", got)
}
