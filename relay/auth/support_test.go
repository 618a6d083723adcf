package auth_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/auth"
	"tradebridge/relay/store"
)

// supportStore counts support token look-ups and can fail them.
type supportStore struct {
	*countingStore
	lookups atomic.Int32
	fail    atomic.Bool
}

func (s *supportStore) SupportToken(ctx context.Context, hash string) (store.SupportToken, error) {
	s.lookups.Add(1)
	if s.fail.Load() {
		return store.SupportToken{}, errors.New("disk on fire")
	}
	return s.countingStore.SupportToken(ctx, hash)
}

// A support token authenticates as KindSupport only, names the staff
// member and its grants, belongs to no user, and stops working within the
// cache TTL of its revocation.
func TestSupportTokenAuthenticates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := &supportStore{countingStore: newStore(t)}
	now := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	a, err := auth.New(auth.Options{Store: st, CacheTTL: 2 * time.Second, Now: func() time.Time { return now }})
	require.NoError(t, err)
	alice, err := auth.CreateUser(ctx, st, "alice", auth.PlanPro, now)
	require.NoError(t, err)
	bob, err := auth.CreateUser(ctx, st, "bob", auth.PlanPro, now)
	require.NoError(t, err)

	tok, err := auth.IssueSupportToken(ctx, st, "Sam Support", []string{bob.UserID, alice.UserID, bob.UserID}, now)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(tok, "tb_support_"))
	k, ok := auth.ParseKind(tok)
	require.True(t, ok)
	require.Equal(t, auth.KindSupport, k)

	p, err := a.Authenticate(ctx, tok, auth.KindSupport)
	require.NoError(t, err)
	want := slices.Sorted(slices.Values([]string{alice.UserID, bob.UserID}))
	require.Equal(t, auth.Principal{UserID: "support:" + auth.Hash(tok)[:12], UserName: "Sam Support", Kind: auth.KindSupport,
		TokenHash: auth.Hash(tok), Grants: want}, p)
	require.True(t, p.Granted(alice.UserID))
	require.True(t, p.Granted(bob.UserID))
	require.False(t, p.Granted("usr_other"))
	require.False(t, p.Granted(""))
	require.NotEqual(t, alice.UserID, p.UserID, "a support token is no user")

	// Every other kind is refused, without a look-up; and the other
	// kinds' tokens are refused as support tokens.
	before := st.lookups.Load()
	for _, k := range []auth.Kind{auth.KindAPI, auth.KindAgent} {
		_, err := a.Authenticate(ctx, tok, k)
		require.ErrorIs(t, err, auth.ErrUnauthorized, k)
	}
	for _, other := range []string{alice.APIToken, alice.AgentToken} {
		_, err := a.Authenticate(ctx, other, auth.KindSupport)
		require.ErrorIs(t, err, auth.ErrUnauthorized)
	}
	require.Equal(t, before, st.lookups.Load())
	_, err = a.Authenticate(ctx, "tb_support_"+strings.Repeat("A", 43), auth.KindSupport)
	require.ErrorIs(t, err, auth.ErrUnauthorized, "unknown")

	// A granted user is not the principal of a trading token.
	ap, err := a.Authenticate(ctx, alice.APIToken, auth.KindAPI)
	require.NoError(t, err)
	require.False(t, ap.Granted(alice.UserID), "only support tokens are granted anything")

	// Revoked: refused once the cached verdict expires.
	require.NoError(t, auth.RevokeToken(ctx, st, tok, now))
	_, err = a.Authenticate(ctx, tok, auth.KindSupport)
	require.NoError(t, err, "the cached verdict holds within the TTL")
	now = now.Add(2 * time.Second)
	_, err = a.Authenticate(ctx, tok, auth.KindSupport)
	require.ErrorIs(t, err, auth.ErrUnauthorized)

	// A store failure is no verdict.
	tok2, err := auth.IssueSupportToken(ctx, st, "Sue", []string{alice.UserID}, now)
	require.NoError(t, err)
	st.fail.Store(true)
	_, err = a.Authenticate(ctx, tok2, auth.KindSupport)
	require.ErrorIs(t, err, auth.ErrStoreUnavailable)
	st.fail.Store(false)
	_, err = a.Authenticate(ctx, tok2, auth.KindSupport)
	require.NoError(t, err)
}

func TestIssueSupportTokenRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t)
	now := time.Now()
	alice, err := auth.CreateUser(ctx, st, "alice", auth.PlanPro, now)
	require.NoError(t, err)
	many := make([]string, auth.MaxGrants+1)
	for i := range many {
		many[i] = "usr_" + strings.Repeat("x", i+1)
	}
	for _, tc := range []struct {
		name   string
		staff  string
		grants []string
		want   error
	}{
		{"no name", "", []string{alice.UserID}, auth.ErrSupportName},
		{"long name", strings.Repeat("n", 101), []string{alice.UserID}, auth.ErrSupportName},
		{"no grants", "sam", nil, auth.ErrNoGrants},
		{"too many grants", "sam", many, auth.ErrTooManyGrants},
		{"no such user", "sam", []string{alice.UserID, "usr_nobody"}, store.ErrNotFound},
	} {
		_, err := auth.IssueSupportToken(ctx, st, tc.staff, tc.grants, now)
		require.ErrorIs(t, err, tc.want, tc.name)
	}
	infos, err := auth.ListSupportTokens(ctx, st)
	require.NoError(t, err)
	require.Empty(t, infos, "nothing was issued")

	// A support token is not a user's token.
	_, err = auth.IssueToken(ctx, st, alice.UserID, auth.KindSupport, "", now)
	require.ErrorIs(t, err, auth.ErrSupportTokenNoUser)
	_, err = auth.RevokeUserTokens(ctx, st, alice.UserID, auth.KindSupport, now)
	require.ErrorIs(t, err, auth.ErrSupportTokenNoUser)
}

// The listing shows ids, names, grants and times; never the token.
func TestListSupportTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t)
	now := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	alice, err := auth.CreateUser(ctx, st, "alice", auth.PlanPro, now)
	require.NoError(t, err)
	tok, err := auth.IssueSupportToken(ctx, st, "sam", []string{alice.UserID}, now)
	require.NoError(t, err)
	require.NoError(t, auth.RevokeToken(ctx, st, tok, now.Add(time.Hour)))
	infos, err := auth.ListSupportTokens(ctx, st)
	require.NoError(t, err)
	require.Equal(t, []auth.SupportTokenInfo{{ID: auth.Hash(tok)[:12], Name: "sam", Grants: []string{alice.UserID},
		CreatedAt: "2026-11-02T09:00:00Z", RevokedAt: "2026-11-02T10:00:00Z"}}, infos)
	require.ErrorIs(t, auth.RevokeToken(ctx, st, "tb_support_"+strings.Repeat("B", 43), now), store.ErrNotFound)
}
