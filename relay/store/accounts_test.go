package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/store"
)

// A user's email is stored lowercased and unique, found by any case,
// changed and removed; the password hash is stored, changed and removed.
func TestUserEmailAndPassword(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.open(t)
		u := store.User{ID: "usr_1", Name: "alice", Plan: "free", CreatedAt: t0, Email: " Alice@Example.COM ", PasswordHash: "$argon2id$x"}
		require.NoError(t, s.CreateUser(ctx, u))
		require.ErrorIs(t, s.CreateUser(ctx, store.User{ID: "usr_2", Name: "a2", Plan: "free", CreatedAt: t0, Email: "alice@example.com"}),
			store.ErrConflict, "a taken email")
		require.NoError(t, s.CreateUser(ctx, store.User{ID: "usr_3", Name: "bob", Plan: "free", CreatedAt: t0}))
		require.NoError(t, s.CreateUser(ctx, store.User{ID: "usr_4", Name: "carol", Plan: "free", CreatedAt: t0}), "many users without an email")

		got, err := s.UserByEmail(ctx, "ALICE@example.com")
		require.NoError(t, err)
		require.Equal(t, "usr_1", got.ID)
		require.Equal(t, "alice@example.com", got.Email, "stored lowercased and trimmed")
		require.Equal(t, "$argon2id$x", got.PasswordHash)
		_, err = s.UserByEmail(ctx, "nobody@example.com")
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.UserByEmail(ctx, "")
		require.ErrorIs(t, err, store.ErrNotFound, "the empty email is nobody's")

		bob, err := s.User(ctx, "usr_3")
		require.NoError(t, err)
		require.Empty(t, bob.Email)
		require.Empty(t, bob.PasswordHash)

		require.ErrorIs(t, s.SetUserEmail(ctx, "usr_3", "alice@EXAMPLE.com"), store.ErrConflict)
		require.ErrorIs(t, s.SetUserEmail(ctx, "nobody", "x@example.com"), store.ErrNotFound)
		require.NoError(t, s.SetUserEmail(ctx, "usr_3", "Bob@Example.com"))
		got, err = s.UserByEmail(ctx, "bob@example.com")
		require.NoError(t, err)
		require.Equal(t, "usr_3", got.ID)
		require.NoError(t, s.SetUserEmail(ctx, "usr_3", ""))
		_, err = s.UserByEmail(ctx, "bob@example.com")
		require.ErrorIs(t, err, store.ErrNotFound, "removed")

		require.ErrorIs(t, s.SetUserPassword(ctx, "nobody", "h"), store.ErrNotFound)
		require.NoError(t, s.SetUserPassword(ctx, "usr_3", "$argon2id$y"))
		bob, err = s.User(ctx, "usr_3")
		require.NoError(t, err)
		require.Equal(t, "$argon2id$y", bob.PasswordHash)
		require.NoError(t, s.SetUserPassword(ctx, "usr_3", ""))
		bob, err = s.User(ctx, "usr_3")
		require.NoError(t, err)
		require.Empty(t, bob.PasswordHash)
	})
}

// A token's name is stored and listed.
func TestTokenName(t *testing.T) {
	t.Parallel()
	each(t, []string{"u1"}, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		require.NoError(t, s.AddToken(ctx, store.Token{Hash: "h1", UserID: "u1", Kind: "api", Name: "my <bot>", CreatedAt: t0}))
		require.NoError(t, s.AddToken(ctx, store.Token{Hash: "h2", UserID: "u1", Kind: "api", CreatedAt: t0.Add(time.Second)}))
		ts, err := s.ListTokens(ctx, "u1")
		require.NoError(t, err)
		require.Len(t, ts, 2)
		require.Equal(t, "my <bot>", ts[0].Name)
		require.Empty(t, ts[1].Name)
		tok, _, err := s.LookupToken(ctx, "h1")
		require.NoError(t, err)
		require.Equal(t, "my <bot>", tok.Name)
	})
}

// Sessions are created, looked up with their user, touched, deleted one
// by one or by user, and pruned by absolute expiry or idleness.
func TestSessions(t *testing.T) {
	t.Parallel()
	each(t, []string{"u1", "u2"}, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		sess := func(hash, user string, created, lastSeen time.Time, life time.Duration) store.Session {
			return store.Session{Hash: hash, UserID: user, CreatedAt: created, LastSeenAt: lastSeen, Expires: created.Add(life)}
		}
		s1 := sess("s1", "u1", t0, t0, 30*24*time.Hour)
		require.NoError(t, s.CreateSession(ctx, s1))
		require.ErrorIs(t, s.CreateSession(ctx, sess("s1", "u2", t0, t0, time.Hour)), store.ErrConflict)
		require.ErrorIs(t, s.CreateSession(ctx, sess("s-x", "nobody", t0, t0, time.Hour)), store.ErrNotFound)
		require.Error(t, s.CreateSession(ctx, store.Session{Hash: "s-y", UserID: "u1"}), "times are required")
		require.NoError(t, s.CreateSession(ctx, store.Session{Hash: "s-z", UserID: "u1", CreatedAt: t0, Expires: t0.Add(time.Hour)}))
		got, _, err := s.LookupSession(ctx, "s-z")
		require.NoError(t, err)
		require.Equal(t, t0, got.LastSeenAt, "last seen defaults to the creation")

		got, u, err := s.LookupSession(ctx, "s1")
		require.NoError(t, err)
		require.Equal(t, s1, got)
		require.Equal(t, "u1", u.ID)
		_, _, err = s.LookupSession(ctx, "s-never")
		require.ErrorIs(t, err, store.ErrNotFound)

		require.NoError(t, s.TouchSession(ctx, "s1", t0.Add(time.Hour)))
		require.ErrorIs(t, s.TouchSession(ctx, "s-never", t0), store.ErrNotFound)
		got, _, err = s.LookupSession(ctx, "s1")
		require.NoError(t, err)
		require.Equal(t, t0.Add(time.Hour), got.LastSeenAt)

		require.NoError(t, s.DeleteSession(ctx, "s1"))
		require.NoError(t, s.DeleteSession(ctx, "s1"), "a missing session is no error")
		_, _, err = s.LookupSession(ctx, "s1")
		require.ErrorIs(t, err, store.ErrNotFound)

		for _, h := range []string{"a", "b", "c"} {
			require.NoError(t, s.CreateSession(ctx, sess("u1-"+h, "u1", t0, t0, time.Hour)))
		}
		require.NoError(t, s.CreateSession(ctx, sess("u2-a", "u2", t0, t0, time.Hour)))
		n, err := s.DeleteUserSessions(ctx, "u1")
		require.NoError(t, err)
		require.Equal(t, 4, n, "u1's three and s-z")
		_, _, err = s.LookupSession(ctx, "u2-a")
		require.NoError(t, err, "another user's session stays")

		// Pruning at t0+2h with idle before t0+1h: expired (absolute),
		// idle, and a live one.
		require.NoError(t, s.CreateSession(ctx, sess("expired", "u1", t0, t0.Add(90*time.Minute), 90*time.Minute)))
		require.NoError(t, s.CreateSession(ctx, sess("idle", "u1", t0, t0.Add(30*time.Minute), 30*24*time.Hour)))
		require.NoError(t, s.CreateSession(ctx, sess("live", "u1", t0, t0.Add(100*time.Minute), 30*24*time.Hour)))
		n, err = s.PruneSessions(ctx, t0.Add(2*time.Hour), t0.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, 3, n, "expired, idle and u2-a (expired at t0+1h)")
		_, _, err = s.LookupSession(ctx, "live")
		require.NoError(t, err)
		for _, h := range []string{"expired", "idle", "u2-a"} {
			_, _, err = s.LookupSession(ctx, h)
			require.ErrorIs(t, err, store.ErrNotFound, h)
		}
	})
}

// A password-reset link is taken once, before it expires; a new link of
// the user replaces the older ones.
func TestPasswordResets(t *testing.T) {
	t.Parallel()
	each(t, []string{"u1", "u2"}, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		link := func(hash, user string, created time.Time) store.PasswordReset {
			return store.PasswordReset{Hash: hash, UserID: user, CreatedAt: created, Expires: created.Add(time.Hour)}
		}
		require.NoError(t, s.PutPasswordReset(ctx, link("r1", "u1", t0)))
		require.ErrorIs(t, s.PutPasswordReset(ctx, link("r1", "u2", t0)), store.ErrConflict)
		require.ErrorIs(t, s.PutPasswordReset(ctx, link("r-x", "nobody", t0)), store.ErrNotFound)
		require.Error(t, s.PutPasswordReset(ctx, store.PasswordReset{Hash: "r-y", UserID: "u1"}), "times are required")

		user, err := s.TakePasswordReset(ctx, "r1", t0.Add(time.Minute))
		require.NoError(t, err)
		require.Equal(t, "u1", user)
		_, err = s.TakePasswordReset(ctx, "r1", t0.Add(time.Minute))
		require.ErrorIs(t, err, store.ErrNotFound, "used once")
		_, err = s.TakePasswordReset(ctx, "r-never", t0)
		require.ErrorIs(t, err, store.ErrNotFound)

		require.NoError(t, s.PutPasswordReset(ctx, link("r2", "u1", t0)))
		_, err = s.TakePasswordReset(ctx, "r2", t0.Add(time.Hour+time.Millisecond))
		require.ErrorIs(t, err, store.ErrNotFound, "expired")
		_, err = s.TakePasswordReset(ctx, "r2", t0)
		require.ErrorIs(t, err, store.ErrNotFound, "and forgotten")

		// A new link forgets the user's older one and every expired one,
		// not another user's live one.
		require.NoError(t, s.PutPasswordReset(ctx, link("r-old-u2", "u2", t0.Add(-2*time.Hour))))
		require.NoError(t, s.PutPasswordReset(ctx, link("r3", "u1", t0)))
		require.NoError(t, s.PutPasswordReset(ctx, link("r4", "u1", t0.Add(40*time.Minute))))
		_, err = s.TakePasswordReset(ctx, "r3", t0.Add(41*time.Minute))
		require.ErrorIs(t, err, store.ErrNotFound, "replaced by r4")
		_, err = s.TakePasswordReset(ctx, "r-old-u2", t0.Add(-90*time.Minute))
		require.ErrorIs(t, err, store.ErrNotFound, "expired at r4's creation, forgotten by its put")
		user, err = s.TakePasswordReset(ctx, "r4", t0.Add(41*time.Minute))
		require.NoError(t, err)
		require.Equal(t, "u1", user)

		require.NoError(t, s.PutPasswordReset(ctx, link("r-u2", "u2", t0)))
		require.NoError(t, s.PutPasswordReset(ctx, link("r5", "u1", t0.Add(10*time.Minute))))
		user, err = s.TakePasswordReset(ctx, "r-u2", t0.Add(20*time.Minute))
		require.NoError(t, err, "another user's live link stays")
		require.Equal(t, "u2", user)
	})
}

// Of two nodes taking one reset link at once, one gets it.
func TestPasswordResetTakenOnce(t *testing.T) {
	t.Parallel()
	eachShared(t, []string{"u1"}, func(t *testing.T, stores []store.Store) {
		ctx := context.Background()
		for round := range 5 {
			hash := "r" + string(rune('0'+round))
			require.NoError(t, stores[0].PutPasswordReset(ctx, store.PasswordReset{Hash: hash, UserID: "u1", CreatedAt: t0, Expires: t0.Add(time.Hour)}))
			errs := make([]error, len(stores))
			var wg sync.WaitGroup
			for i, s := range stores {
				wg.Go(func() { _, errs[i] = s.TakePasswordReset(ctx, hash, t0) })
			}
			wg.Wait()
			var won int
			for _, err := range errs {
				if err == nil {
					won++
				} else {
					require.ErrorIs(t, err, store.ErrNotFound)
				}
			}
			require.Equal(t, 1, won, "round %d", round)
		}
	})
}

// Users are listed oldest first with their plans; a plan is changed, and
// changing a missing user's is ErrNotFound.
func TestUserPlanAndList(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.open(t)
		list, err := s.ListUsers(ctx)
		require.NoError(t, err)
		require.Empty(t, list, "an empty store lists no user")
		require.NoError(t, s.CreateUser(ctx, store.User{ID: "usr_b", Name: "bob", Plan: "pro", CreatedAt: t0.Add(time.Second)}))
		require.NoError(t, s.CreateUser(ctx, store.User{ID: "usr_a", Name: "alice", Plan: "free", CreatedAt: t0, Email: "alice@example.com",
			PasswordHash: "$argon2id$x"}))

		require.NoError(t, s.SetUserPlan(ctx, "usr_a", "elite"))
		require.ErrorIs(t, s.SetUserPlan(ctx, "nobody", "elite"), store.ErrNotFound)
		list, err = s.ListUsers(ctx)
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Equal(t, []string{"usr_a", "usr_b"}, []string{list[0].ID, list[1].ID}, "oldest first")
		require.Equal(t, "elite", list[0].Plan)
		require.Equal(t, "alice@example.com", list[0].Email)
		require.True(t, list[0].CreatedAt.Equal(t0))
		require.Equal(t, "pro", list[1].Plan, "another user's plan is untouched")
	})
}
