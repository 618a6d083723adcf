package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/relay/store"
)

// A node takes a free lease, renews its own, and cannot take another
// node's until it is released or expires; the holder is the node with an
// unexpired lease.
func TestBrokerLease(t *testing.T) {
	t.Parallel()
	each(t, []string{"u1", "u2"}, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		_, err := s.BrokerLeaseHolder(ctx, "u1")
		require.ErrorIs(t, err, store.ErrNotFound)

		for _, step := range []struct {
			name, user, node string
			want             bool
		}{
			{"a free lease is taken", "u1", "node-a", true},
			{"the holder renews", "u1", "node-a", true},
			{"another node is refused", "u1", "node-b", false},
			{"another user's lease is its own", "u2", "node-b", true},
		} {
			got, err := s.AcquireBrokerLease(ctx, step.user, step.node, time.Hour)
			require.NoError(t, err, step.name)
			require.Equal(t, step.want, got, step.name)
		}
		holder, err := s.BrokerLeaseHolder(ctx, "u1")
		require.NoError(t, err)
		require.Equal(t, "node-a", holder)

		require.NoError(t, s.ReleaseBrokerLease(ctx, "u1", "node-b"), "not the holder: nothing changes")
		holder, err = s.BrokerLeaseHolder(ctx, "u1")
		require.NoError(t, err)
		require.Equal(t, "node-a", holder)
		require.NoError(t, s.ReleaseBrokerLease(ctx, "u1", "node-a"))
		_, err = s.BrokerLeaseHolder(ctx, "u1")
		require.ErrorIs(t, err, store.ErrNotFound)
		require.NoError(t, s.ReleaseBrokerLease(ctx, "u1", "node-a"), "releasing twice is no error")

		ok, err := s.AcquireBrokerLease(ctx, "u1", "node-b", time.Hour)
		require.NoError(t, err)
		require.True(t, ok, "a released lease is free")
		holder, err = s.BrokerLeaseHolder(ctx, "u1")
		require.NoError(t, err)
		require.Equal(t, "node-b", holder)

		_, err = s.AcquireBrokerLease(ctx, "u1", "node-b", 0)
		require.Error(t, err, "a lease needs a ttl")
	})
}

// An expired lease has no holder and is taken over by another node.
func TestBrokerLeaseExpires(t *testing.T) {
	t.Parallel()
	each(t, []string{"u1"}, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		ok, err := s.AcquireBrokerLease(ctx, "u1", "node-a", 20*time.Millisecond)
		require.NoError(t, err)
		require.True(t, ok)
		require.Eventually(t, func() bool {
			_, err := s.BrokerLeaseHolder(ctx, "u1")
			return err != nil
		}, testkit.Long, 5*time.Millisecond, "the lease expires")
		_, err = s.BrokerLeaseHolder(ctx, "u1")
		require.ErrorIs(t, err, store.ErrNotFound)
		ok, err = s.AcquireBrokerLease(ctx, "u1", "node-b", time.Hour)
		require.NoError(t, err)
		require.True(t, ok, "another node takes an expired lease over")
		ok, err = s.AcquireBrokerLease(ctx, "u1", "node-a", time.Hour)
		require.NoError(t, err)
		require.False(t, ok, "the former holder lost it")
	})
}

// Nodes racing for one free lease: exactly one gets it.
func TestBrokerLeaseRace(t *testing.T) {
	t.Parallel()
	eachShared(t, []string{"u1"}, func(t *testing.T, stores []store.Store) {
		ctx := context.Background()
		const nodes = 8
		var wg sync.WaitGroup
		type result struct {
			node string
			ok   bool
			err  error
		}
		results := make(chan result, nodes)
		start := make(chan struct{})
		for i := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				node := fmt.Sprintf("node-%d", i)
				ok, err := stores[i%len(stores)].AcquireBrokerLease(ctx, "u1", node, time.Hour)
				results <- result{node, ok, err}
			}()
		}
		close(start)
		wg.Wait()
		close(results)
		var winners []string
		for r := range results {
			require.NoError(t, r.err)
			if r.ok {
				winners = append(winners, r.node)
			}
		}
		require.Len(t, winners, 1)
		holder, err := stores[0].BrokerLeaseHolder(ctx, "u1")
		require.NoError(t, err)
		require.Equal(t, winners[0], holder)
	})
}

// An OAuth state is taken once; an expired one is refused; a user keeps
// at most keepPerUser, the newest; the expired ones are forgotten.
func TestOAuthStates(t *testing.T) {
	t.Parallel()
	each(t, []string{"u1", "u2"}, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		// Expiries are in the future of the store's clock, which forgets
		// the expired ones.
		base := time.Now().Add(time.Hour).Truncate(time.Millisecond).UTC()
		st := func(hash, user string, d time.Duration) store.OAuthState {
			return store.OAuthState{Hash: hash, UserID: user, Env: "demo", Expires: base.Add(d)}
		}
		require.NoError(t, s.PutOAuthState(ctx, st("h1", "u1", 0), 3))
		require.ErrorIs(t, s.PutOAuthState(ctx, st("h1", "u2", 0), 3), store.ErrConflict)
		require.ErrorIs(t, s.PutOAuthState(ctx, st("h-nobody", "nobody", 0), 3), store.ErrNotFound)
		require.Error(t, s.PutOAuthState(ctx, store.OAuthState{Hash: "h-x", UserID: "u1"}, 3), "an env and an expiry are required")

		got, err := s.TakeOAuthState(ctx, "h1", base.Add(-time.Minute))
		require.NoError(t, err)
		require.Equal(t, st("h1", "u1", 0), got)
		// Who started it comes back with it.
		started := st("h-src", "u1", 0)
		started.SourceKind, started.SourceID = "dashboard", "0123456789ab"
		require.NoError(t, s.PutOAuthState(ctx, started, 3))
		got, err = s.TakeOAuthState(ctx, "h-src", base.Add(-time.Minute))
		require.NoError(t, err)
		require.Equal(t, started, got)
		_, err = s.TakeOAuthState(ctx, "h1", base.Add(-time.Minute))
		require.ErrorIs(t, err, store.ErrNotFound, "a state is taken once")
		_, err = s.TakeOAuthState(ctx, "h-never", base)
		require.ErrorIs(t, err, store.ErrNotFound)

		require.NoError(t, s.PutOAuthState(ctx, st("h2", "u1", 0), 3))
		_, err = s.TakeOAuthState(ctx, "h2", base.Add(time.Millisecond))
		require.ErrorIs(t, err, store.ErrNotFound, "expired before now")
		_, err = s.TakeOAuthState(ctx, "h2", base.Add(-time.Minute))
		require.ErrorIs(t, err, store.ErrNotFound, "and forgotten by the take that refused it")

		// u1 keeps its newest 3; u2's are its own.
		require.NoError(t, s.PutOAuthState(ctx, st("h-u2", "u2", -time.Minute), 3))
		for i := range 5 {
			require.NoError(t, s.PutOAuthState(ctx, st(fmt.Sprintf("h-u1-%d", i), "u1", time.Duration(i)*time.Second), 3))
		}
		for _, tc := range []struct {
			hash string
			kept bool
		}{{"h-u1-0", false}, {"h-u1-1", false}, {"h-u1-2", true}, {"h-u1-3", true}, {"h-u1-4", true}, {"h-u2", true}} {
			_, err := s.TakeOAuthState(ctx, tc.hash, base.Add(-time.Hour))
			if tc.kept {
				require.NoError(t, err, tc.hash)
			} else {
				require.ErrorIs(t, err, store.ErrNotFound, tc.hash)
			}
		}

		// A state expired by the store's clock is forgotten by the next put.
		past := store.OAuthState{Hash: "h-past", UserID: "u2", Env: "live", Expires: time.Now().Add(-time.Minute)}
		require.NoError(t, s.PutOAuthState(ctx, past, 0))
		require.NoError(t, s.PutOAuthState(ctx, st("h-next", "u1", 0), 0))
		_, err = s.TakeOAuthState(ctx, "h-past", time.Time{})
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.TakeOAuthState(ctx, "h-next", base)
		require.NoError(t, err, "keepPerUser 0 keeps every state")
	})
}

// Of concurrent takes of one state, exactly one gets it.
func TestOAuthStateTakenOnce(t *testing.T) {
	t.Parallel()
	eachShared(t, []string{"u1"}, func(t *testing.T, stores []store.Store) {
		ctx := context.Background()
		exp := time.Now().Add(time.Hour)
		require.NoError(t, stores[0].PutOAuthState(ctx, store.OAuthState{Hash: "h1", UserID: "u1", Env: "demo", Expires: exp}, 4))
		const takers = 8
		errs := make(chan error, takers)
		var wg sync.WaitGroup
		for i := range takers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := stores[i%len(stores)].TakeOAuthState(ctx, "h1", time.Now())
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		taken := 0
		for err := range errs {
			if err == nil {
				taken++
				continue
			}
			require.ErrorIs(t, err, store.ErrNotFound)
		}
		require.Equal(t, 1, taken)
	})
}
