package auth_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/auth"
	"tradebridge/relay/profile"
	"tradebridge/relay/store"
)

// touchingStore counts session look-ups and last-seen writes.
type touchingStore struct {
	store.Store
	lookups, touches atomic.Int32
}

func (s *touchingStore) LookupSession(ctx context.Context, hash string) (store.Session, store.User, error) {
	s.lookups.Add(1)
	return s.Store.LookupSession(ctx, hash)
}

func (s *touchingStore) TouchSession(ctx context.Context, hash string, at time.Time) error {
	s.touches.Add(1)
	return s.Store.TouchSession(ctx, hash, at)
}

// A session is checked in the store on every request (a cache TTL
// notwithstanding), refused past its absolute expiry, after an idle
// spell longer than SessionIdle, for a disabled user or once deleted, and
// its last use is written at most once a minute.
func TestAuthenticateSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := &touchingStore{Store: newStore(t)}
	start := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	var now atomic.Pointer[time.Time]
	set := func(t time.Time) { now.Store(&t) }
	set(start)
	a, err := auth.New(auth.Options{Store: st, CacheTTL: time.Hour, SessionIdle: 2 * time.Hour, Now: func() time.Time { return *now.Load() }})
	require.NoError(t, err)
	creds, err := auth.CreateUser(ctx, st, "alice", auth.PlanElite, start)
	require.NoError(t, err)
	require.NoError(t, auth.SetUserAccess(ctx, st, creds.UserID, true, []string{"tv"}))

	tok, err := auth.NewToken(auth.KindSession)
	require.NoError(t, err)
	require.False(t, auth.KindSession.Valid(), "the CLI issues no session")
	k, ok := auth.ParseKind(tok)
	require.True(t, ok)
	require.Equal(t, auth.KindSession, k)
	require.NoError(t, st.CreateSession(ctx, store.Session{Hash: auth.Hash(tok), UserID: creds.UserID, CreatedAt: start,
		LastSeenAt: start, Expires: start.Add(5 * time.Hour)}))

	p, err := a.Authenticate(ctx, tok, auth.KindSession)
	require.NoError(t, err)
	require.Equal(t, auth.Principal{UserID: creds.UserID, UserName: "alice", Plan: auth.PlanElite, Kind: auth.KindSession,
		Profile: profile.Standard, TokenHash: auth.Hash(tok), ManagementClosed: true, Withheld: []string{"tv"}}, p)
	_, err = a.Authenticate(ctx, tok, auth.KindAPI)
	require.ErrorIs(t, err, auth.ErrUnauthorized, "a session is no API token")
	_, err = a.Authenticate(ctx, creds.APIToken, auth.KindSession)
	require.ErrorIs(t, err, auth.ErrUnauthorized, "an API token is no session")
	require.Equal(t, int32(0), st.touches.Load(), "seen at its creation: nothing to write")

	// Touches: at most once a minute.
	for _, tc := range []struct {
		at      time.Duration
		touches int32
	}{
		{30 * time.Second, 0},
		{59 * time.Second, 0},
		{time.Minute, 1},
		{90 * time.Second, 1},
		{2 * time.Minute, 2},
	} {
		set(start.Add(tc.at))
		_, err := a.Authenticate(ctx, tok, auth.KindSession)
		require.NoError(t, err, tc.at)
		require.Equal(t, tc.touches, st.touches.Load(), tc.at)
	}
	lookups := st.lookups.Load()
	require.GreaterOrEqual(t, lookups, int32(6), "every request reads the store")

	// Idle: last seen at +2m; refused after 2h of idleness, not before.
	set(start.Add(2*time.Minute + 2*time.Hour))
	_, err = a.Authenticate(ctx, tok, auth.KindSession)
	require.NoError(t, err, "exactly the idle limit")
	set(start.Add(4*time.Hour + 2*time.Minute + time.Millisecond))
	_, err = a.Authenticate(ctx, tok, auth.KindSession)
	require.ErrorIs(t, err, auth.ErrUnauthorized, "idle too long")

	// Absolute: refused at its expiry however busy.
	tok2, err := auth.NewToken(auth.KindSession)
	require.NoError(t, err)
	require.NoError(t, st.CreateSession(ctx, store.Session{Hash: auth.Hash(tok2), UserID: creds.UserID, CreatedAt: start,
		LastSeenAt: start, Expires: start.Add(time.Hour)}))
	for at := time.Duration(0); at < time.Hour; at += 20 * time.Minute {
		set(start.Add(at))
		_, err = a.Authenticate(ctx, tok2, auth.KindSession)
		require.NoError(t, err, at)
	}
	set(start.Add(time.Hour))
	_, err = a.Authenticate(ctx, tok2, auth.KindSession)
	require.ErrorIs(t, err, auth.ErrUnauthorized, "past its absolute lifetime")

	// Disabled user, and deletion: at once, whatever the cache TTL.
	tok3, err := auth.NewToken(auth.KindSession)
	require.NoError(t, err)
	set(start)
	require.NoError(t, st.CreateSession(ctx, store.Session{Hash: auth.Hash(tok3), UserID: creds.UserID, CreatedAt: start,
		LastSeenAt: start, Expires: start.Add(time.Hour)}))
	_, err = a.Authenticate(ctx, tok3, auth.KindSession)
	require.NoError(t, err)
	require.NoError(t, st.SetUserDisabled(ctx, creds.UserID, true))
	_, err = a.Authenticate(ctx, tok3, auth.KindSession)
	require.ErrorIs(t, err, auth.ErrUnauthorized, "disabled user")
	require.NoError(t, st.SetUserDisabled(ctx, creds.UserID, false))
	_, err = a.Authenticate(ctx, tok3, auth.KindSession)
	require.NoError(t, err)
	require.NoError(t, auth.RevokeToken(ctx, st, tok3, start))
	_, err = a.Authenticate(ctx, tok3, auth.KindSession)
	require.ErrorIs(t, err, auth.ErrUnauthorized, "signed out: refused at once")
	require.ErrorIs(t, auth.RevokeToken(ctx, st, tok3, start), store.ErrNotFound)

	never, err := auth.NewToken(auth.KindSession)
	require.NoError(t, err)
	_, err = a.Authenticate(ctx, never, auth.KindSession)
	require.ErrorIs(t, err, auth.ErrUnauthorized)
}

// A store failure on a session is ErrStoreUnavailable, not a refusal.
func TestAuthenticateSessionStoreDown(t *testing.T) {
	t.Parallel()
	st := &failingSessions{Store: newStore(t)}
	a, err := auth.New(auth.Options{Store: st})
	require.NoError(t, err)
	tok, err := auth.NewToken(auth.KindSession)
	require.NoError(t, err)
	_, err = a.Authenticate(context.Background(), tok, auth.KindSession)
	require.ErrorIs(t, err, auth.ErrStoreUnavailable)
	require.NotErrorIs(t, err, auth.ErrUnauthorized)
}

type failingSessions struct{ store.Store }

func (failingSessions) LookupSession(context.Context, string) (store.Session, store.User, error) {
	return store.Session{}, store.User{}, errors.New("disk on fire")
}

// A token may be named; the name is listed, and a user revokes a token by
// its id, never another user's.
func TestNamedTokensAndRevokeByID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t)
	now := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	alice, err := auth.CreateUser(ctx, st, "alice", auth.PlanPro, now)
	require.NoError(t, err)
	bob, err := auth.CreateUser(ctx, st, "bob", auth.PlanPro, now)
	require.NoError(t, err)

	for _, tc := range []struct {
		name, want string
		err        error
	}{
		{"  my bot  ", "my bot", nil},
		{"<b>x</b>", "<b>x</b>", nil},
		{"", "", nil},
		{"bad\nname", "", auth.ErrTokenName},
		{strings.Repeat("é", 101), "", auth.ErrTokenName},
		{strings.Repeat("é", 100), strings.Repeat("é", 100), nil},
	} {
		tok, err := auth.IssueNamedToken(ctx, st, alice.UserID, auth.KindAPI, profile.Compatible, tc.name, now)
		if tc.err != nil {
			require.ErrorIs(t, err, tc.err, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		infos, err := auth.ListTokens(ctx, st, alice.UserID)
		require.NoError(t, err)
		var found bool
		for _, ti := range infos {
			if ti.ID == auth.TokenID(auth.Hash(tok)) {
				found = true
				require.Equal(t, tc.want, ti.Name)
			}
		}
		require.True(t, found)
	}
	_, err = auth.IssueNamedToken(ctx, st, alice.UserID, auth.KindSession, "", "x", now)
	require.Error(t, err, "no session is issued as a token")

	bobsID := auth.TokenID(auth.Hash(bob.APIToken))
	for _, tc := range []struct {
		user, id string
	}{
		{alice.UserID, bobsID},
		{alice.UserID, "nothex"},
		{alice.UserID, "000000000000"},
		{"usr_nobody", bobsID},
	} {
		require.ErrorIs(t, auth.RevokeUserToken(ctx, st, tc.user, tc.id, now), auth.ErrNoSuchToken, tc)
		require.ErrorIs(t, auth.RevokeUserToken(ctx, st, tc.user, tc.id, now), store.ErrNotFound, tc)
	}
	tok, _, err := st.LookupToken(ctx, auth.Hash(bob.APIToken))
	require.NoError(t, err)
	require.False(t, tok.Revoked(), "bob's token stays")

	require.NoError(t, auth.RevokeUserToken(ctx, st, alice.UserID, auth.TokenID(auth.Hash(alice.APIToken)), now))
	tok, _, err = st.LookupToken(ctx, auth.Hash(alice.APIToken))
	require.NoError(t, err)
	require.True(t, tok.Revoked())
	require.NoError(t, auth.RevokeUserToken(ctx, st, alice.UserID, auth.TokenID(auth.Hash(alice.APIToken)), now), "again: nothing changes")
}
