package store_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"tradebridge/relay/store"
)

func open(t *testing.T, dir string) *store.SQLite {
	t.Helper()
	s, err := store.Open(context.Background(), store.Options{Dir: dir})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

var t0 = time.Date(2026, 11, 2, 14, 30, 0, 0, time.UTC)

func TestUsersAndTokens(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.open(t)

		u := store.User{ID: "usr_1", Name: "alice", Plan: "pro", CreatedAt: t0}
		require.NoError(t, s.CreateUser(ctx, u,
			store.Token{Hash: "h-api", UserID: "usr_1", Kind: "api", CreatedAt: t0},
			store.Token{Hash: "h-agent", UserID: "usr_1", Kind: "agent", CreatedAt: t0}))

		got, err := s.User(ctx, "usr_1")
		require.NoError(t, err)
		require.Equal(t, u, got)

		tok, owner, err := s.LookupToken(ctx, "h-agent")
		require.NoError(t, err)
		require.Equal(t, store.Token{Hash: "h-agent", UserID: "usr_1", Kind: "agent", Profile: "standard", Scope: "trade", CreatedAt: t0}, tok,
			"the default profile and scope are stored")
		require.False(t, tok.Revoked())
		require.Equal(t, u, owner)

		require.NoError(t, s.RevokeToken(ctx, "h-agent", t0.Add(time.Hour)))
		require.NoError(t, s.RevokeToken(ctx, "h-agent", t0.Add(2*time.Hour)), "revoking twice changes nothing")
		tok, _, err = s.LookupToken(ctx, "h-agent")
		require.NoError(t, err)
		require.Equal(t, t0.Add(time.Hour), tok.RevokedAt, "the first revocation time stays")

		require.NoError(t, s.SetUserDisabled(ctx, "usr_1", true))
		got, err = s.User(ctx, "usr_1")
		require.NoError(t, err)
		require.True(t, got.Disabled)

		// Durable across reopen.
		require.NoError(t, s.Close())
		require.NoError(t, s.Close(), "Close is idempotent")
		s2 := b.open(t)
		tok, owner, err = s2.LookupToken(ctx, "h-api")
		require.NoError(t, err)
		require.False(t, tok.Revoked())
		require.True(t, owner.Disabled)
	})
}

// A token's response profile is stored with it, changed in place, and
// listed with the user's other tokens, revoked ones included.
func TestTokenProfilesAndListing(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.open(t)
		require.NoError(t, s.CreateUser(ctx, store.User{ID: "usr_1", Name: "alice", Plan: "pro", CreatedAt: t0},
			store.Token{Hash: "h-api", UserID: "usr_1", Kind: "api", CreatedAt: t0},
			store.Token{Hash: "h-agent", UserID: "usr_1", Kind: "agent", CreatedAt: t0}))
		require.NoError(t, s.AddToken(ctx, store.Token{Hash: "h-compat", UserID: "usr_1", Kind: "api", Profile: "compatible", CreatedAt: t0.Add(time.Minute)}))
		tok, _, err := s.LookupToken(ctx, "h-compat")
		require.NoError(t, err)
		require.Equal(t, "compatible", tok.Profile)

		require.NoError(t, s.SetTokenProfile(ctx, "h-api", "compatible"))
		require.ErrorIs(t, s.SetTokenProfile(ctx, "h-nope", "compatible"), store.ErrNotFound)
		require.NoError(t, s.RevokeToken(ctx, "h-compat", t0.Add(time.Hour)))

		require.NoError(t, s.Close())
		s = b.open(t)
		ts, err := s.ListTokens(ctx, "usr_1")
		require.NoError(t, err)
		require.Len(t, ts, 3)
		byHash := map[string]store.Token{}
		for _, tk := range ts {
			byHash[tk.Hash] = tk
		}
		require.Equal(t, "compatible", byHash["h-api"].Profile, "the change is durable")
		require.Equal(t, "standard", byHash["h-agent"].Profile)
		require.True(t, byHash["h-compat"].Revoked())
		require.Equal(t, "h-compat", ts[2].Hash, "oldest first")
		_, err = s.ListTokens(ctx, "usr_nobody")
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

// A token's scope is stored with it, trade when none is given, and
// listed with the user's other tokens.
func TestTokenScopes(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.open(t)
		require.NoError(t, s.CreateUser(ctx, store.User{ID: "usr_1", Name: "alice", Plan: "pro", CreatedAt: t0},
			store.Token{Hash: "h-api", UserID: "usr_1", Kind: "api", CreatedAt: t0}))
		require.NoError(t, s.AddToken(ctx, store.Token{Hash: "h-read", UserID: "usr_1", Kind: "api", Scope: "read", CreatedAt: t0.Add(time.Minute)}))
		require.NoError(t, s.AddToken(ctx, store.Token{Hash: "h-trade", UserID: "usr_1", Kind: "api", Scope: "trade", CreatedAt: t0.Add(2 * time.Minute)}))

		require.NoError(t, s.Close())
		s = b.open(t)
		for hash, want := range map[string]string{"h-api": "trade", "h-read": "read", "h-trade": "trade"} {
			tok, _, err := s.LookupToken(ctx, hash)
			require.NoError(t, err)
			require.Equal(t, want, tok.Scope, hash)
		}
		ts, err := s.ListTokens(ctx, "usr_1")
		require.NoError(t, err)
		got := make([]string, 0, len(ts))
		for _, tk := range ts {
			got = append(got, tk.Hash+":"+tk.Scope)
		}
		require.Equal(t, []string{"h-api:trade", "h-read:read", "h-trade:trade"}, got)
	})
}

func TestErrors(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.open(t)
		require.NoError(t, s.CreateUser(ctx, store.User{ID: "usr_1", Name: "a", Plan: "pro", CreatedAt: t0},
			store.Token{Hash: "h1", UserID: "usr_1", Kind: "api", CreatedAt: t0}))

		_, err := s.User(ctx, "nobody")
		require.ErrorIs(t, err, store.ErrNotFound)
		_, _, err = s.LookupToken(ctx, "nope")
		require.ErrorIs(t, err, store.ErrNotFound)
		require.ErrorIs(t, s.RevokeToken(ctx, "nope", t0), store.ErrNotFound)
		require.ErrorIs(t, s.SetUserDisabled(ctx, "nobody", true), store.ErrNotFound)
		require.ErrorIs(t, s.AddToken(ctx, store.Token{Hash: "h2", UserID: "nobody", Kind: "api"}), store.ErrNotFound)
		_, err = s.RevokeUserTokens(ctx, "nobody", "", t0)
		require.ErrorIs(t, err, store.ErrNotFound)

		require.ErrorIs(t, s.CreateUser(ctx, store.User{ID: "usr_1", Name: "b", Plan: "pro"}), store.ErrConflict)
		require.ErrorIs(t, s.AddToken(ctx, store.Token{Hash: "h1", UserID: "usr_1", Kind: "agent"}), store.ErrConflict)

		// All or nothing: a user whose second token conflicts is not created.
		err = s.CreateUser(ctx, store.User{ID: "usr_2", Name: "c", Plan: "pro", CreatedAt: t0},
			store.Token{Hash: "h-new", UserID: "usr_2", Kind: "api"},
			store.Token{Hash: "h1", UserID: "usr_2", Kind: "agent"})
		require.ErrorIs(t, err, store.ErrConflict)
		_, err = s.User(ctx, "usr_2")
		require.ErrorIs(t, err, store.ErrNotFound)
		_, _, err = s.LookupToken(ctx, "h-new")
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

func TestRevokeUserTokens(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.open(t)
		require.NoError(t, s.CreateUser(ctx, store.User{ID: "u", Name: "a", Plan: "pro", CreatedAt: t0},
			store.Token{Hash: "a1", UserID: "u", Kind: "api"},
			store.Token{Hash: "a2", UserID: "u", Kind: "api"},
			store.Token{Hash: "g1", UserID: "u", Kind: "agent"}))
		require.NoError(t, s.RevokeToken(ctx, "a2", t0))

		n, err := s.RevokeUserTokens(ctx, "u", "api", t0)
		require.NoError(t, err)
		require.Equal(t, 1, n, "a2 was already revoked")
		tok, _, err := s.LookupToken(ctx, "g1")
		require.NoError(t, err)
		require.False(t, tok.Revoked(), "agent tokens are untouched")

		n, err = s.RevokeUserTokens(ctx, "u", "", t0)
		require.NoError(t, err)
		require.Equal(t, 1, n)
	})
}

func TestSchemaTooNew(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	v, err := s.SchemaVersion(context.Background())
	require.NoError(t, err)
	require.Positive(t, v)
	require.NoError(t, s.Close())

	db, err := sql.Open("sqlite", filepath.Join(dir, store.FileName))
	require.NoError(t, err)
	_, err = db.Exec("PRAGMA user_version = 999")
	require.NoError(t, err)
	require.NoError(t, db.Close())

	_, err = store.Open(context.Background(), store.Options{Dir: dir})
	require.ErrorIs(t, err, store.ErrSchemaTooNew)
}

func TestConcurrentWrites(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.open(t)
		require.NoError(t, s.CreateUser(ctx, store.User{ID: "u", Name: "a", Plan: "pro", CreatedAt: t0}))
		var wg sync.WaitGroup
		errs := make(chan error, 50)
		for i := range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- s.AddToken(ctx, store.Token{Hash: "h" + string(rune('A'+i)), UserID: "u", Kind: "api", CreatedAt: t0})
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		n, err := s.RevokeUserTokens(ctx, "u", "api", t0)
		require.NoError(t, err)
		require.Equal(t, 50, n)
	})
}
