package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/store"
)

// A pairing code is redeemed once, for its user, and stores the token it
// is redeemed for; an expired code, an unknown one and one of a disabled
// user store nothing; a user keeps at most keepPerUser codes, the newest.
func TestPairingCodes(t *testing.T) {
	t.Parallel()
	each(t, []string{"u1", "u2"}, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		base := time.Now().Truncate(time.Millisecond).UTC()
		code := func(hash, user string, d time.Duration) store.PairingCode {
			return store.PairingCode{Hash: hash, UserID: user, CreatedAt: base, Expires: base.Add(10*time.Minute + d)}
		}
		token := func(hash string) store.Token {
			return store.Token{Hash: hash, UserID: "ignored", Kind: "agent", CreatedAt: base}
		}
		require.NoError(t, s.PutPairingCode(ctx, code("c1", "u1", 0), 5))
		require.ErrorIs(t, s.PutPairingCode(ctx, code("c1", "u2", 0), 5), store.ErrConflict)
		require.ErrorIs(t, s.PutPairingCode(ctx, code("c-nobody", "nobody", 0), 5), store.ErrNotFound)
		require.Error(t, s.PutPairingCode(ctx, store.PairingCode{Hash: "c-x", UserID: "u1"}, 5), "times are required")

		got, err := s.RedeemPairingCode(ctx, "c1", base.Add(time.Minute), token("t1"))
		require.NoError(t, err)
		require.Equal(t, code("c1", "u1", 0), got)
		tok, u, err := s.LookupToken(ctx, "t1")
		require.NoError(t, err)
		require.Equal(t, "u1", u.ID, "the token is the code's user's")
		require.Equal(t, "agent", tok.Kind)
		_, err = s.RedeemPairingCode(ctx, "c1", base.Add(time.Minute), token("t1b"))
		require.ErrorIs(t, err, store.ErrNotFound, "a code is redeemed once")
		_, _, err = s.LookupToken(ctx, "t1b")
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.RedeemPairingCode(ctx, "c-never", base, token("t-never"))
		require.ErrorIs(t, err, store.ErrNotFound)

		require.NoError(t, s.PutPairingCode(ctx, code("c2", "u1", 0), 5))
		_, err = s.RedeemPairingCode(ctx, "c2", base.Add(10*time.Minute+time.Millisecond), token("t2"))
		require.ErrorIs(t, err, store.ErrNotFound, "expired before now")
		_, err = s.RedeemPairingCode(ctx, "c2", base, token("t2"))
		require.ErrorIs(t, err, store.ErrNotFound, "and forgotten by the redeem that refused it")
		_, _, err = s.LookupToken(ctx, "t2")
		require.ErrorIs(t, err, store.ErrNotFound, "no token for an expired code")

		require.NoError(t, s.PutPairingCode(ctx, code("c3", "u2", 0), 5))
		require.NoError(t, s.SetUserDisabled(ctx, "u2", true))
		_, err = s.RedeemPairingCode(ctx, "c3", base, token("t3"))
		require.ErrorIs(t, err, store.ErrNotFound, "a disabled user's code pairs nothing")
		require.NoError(t, s.SetUserDisabled(ctx, "u2", false))
		_, err = s.RedeemPairingCode(ctx, "c3", base, token("t3"))
		require.ErrorIs(t, err, store.ErrNotFound, "and is used up")

		// A token hash that exists already fails the redeem, which keeps
		// the code.
		require.NoError(t, s.PutPairingCode(ctx, code("c4", "u1", 0), 5))
		_, err = s.RedeemPairingCode(ctx, "c4", base, token("t1"))
		require.ErrorIs(t, err, store.ErrConflict)
		_, err = s.RedeemPairingCode(ctx, "c4", base, token("t4"))
		require.NoError(t, err, "the failed redeem left the code")

		// u1 keeps its newest 3; u2's are its own; the expired are
		// forgotten by the next put.
		require.NoError(t, s.PutPairingCode(ctx, code("c-u2", "u2", 0), 3))
		for i := range 5 {
			require.NoError(t, s.PutPairingCode(ctx, code(fmt.Sprintf("c-u1-%d", i), "u1", time.Duration(i)*time.Second), 3))
		}
		for _, tc := range []struct {
			hash string
			kept bool
		}{{"c-u1-0", false}, {"c-u1-1", false}, {"c-u1-2", true}, {"c-u1-3", true}, {"c-u1-4", true}, {"c-u2", true}} {
			_, err := s.RedeemPairingCode(ctx, tc.hash, base, token("t-"+tc.hash))
			if tc.kept {
				require.NoError(t, err, tc.hash)
			} else {
				require.ErrorIs(t, err, store.ErrNotFound, tc.hash)
			}
		}
	})
}

// Two stores (two relay nodes) redeeming one code at once: one token.
func TestPairingCodeRedeemedOnceConcurrently(t *testing.T) {
	t.Parallel()
	eachShared(t, []string{"u1"}, func(t *testing.T, stores []store.Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond).UTC()
		for round := range 5 {
			hash := fmt.Sprintf("c-%d", round)
			require.NoError(t, stores[0].PutPairingCode(ctx,
				store.PairingCode{Hash: hash, UserID: "u1", CreatedAt: now, Expires: now.Add(time.Minute)}, 0))
			const n = 8
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, errs[i] = stores[i%2].RedeemPairingCode(ctx, hash, now,
						store.Token{Hash: fmt.Sprintf("t-%d-%d", round, i), Kind: "agent", CreatedAt: now})
				}()
			}
			wg.Wait()
			ok := 0
			for _, err := range errs {
				if err == nil {
					ok++
				} else {
					require.ErrorIs(t, err, store.ErrNotFound)
				}
			}
			require.Equal(t, 1, ok, "round %d: one redeem wins", round)
		}
	})
}
