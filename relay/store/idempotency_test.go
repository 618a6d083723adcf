package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/store"
)

func TestIdempotency(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.open(t)
		require.NoError(t, s.CreateUser(ctx, store.User{ID: "usr_1", Name: "a", Plan: "pro", CreatedAt: t0}))
		require.NoError(t, s.CreateUser(ctx, store.User{ID: "usr_2", Name: "b", Plan: "pro", CreatedAt: t0}))
		stale, expired := t0.Add(-time.Minute), t0.Add(-24*time.Hour)
		rec := store.Idempotent{UserID: "usr_1", Key: "k1", Fingerprint: "fp", CreatedAt: t0}

		got, claimed, err := s.ClaimIdempotent(ctx, rec, stale, expired)
		require.NoError(t, err)
		require.True(t, claimed)
		require.Equal(t, store.IdemRunning, got.State)

		// A second claim while running is refused (the caller answers 409).
		got, claimed, err = s.ClaimIdempotent(ctx, rec, stale, expired)
		require.NoError(t, err)
		require.False(t, claimed)
		require.Equal(t, store.IdemRunning, got.State)

		// Another user's same key is independent.
		_, claimed, err = s.ClaimIdempotent(ctx, store.Idempotent{UserID: "usr_2", Key: "k1", Fingerprint: "other", CreatedAt: t0}, stale, expired)
		require.NoError(t, err)
		require.True(t, claimed)

		done := rec
		done.State, done.Status, done.Body, done.UpdatedAt = store.IdemDone, 200, []byte(`{"success":true}`), t0.Add(time.Second)
		require.NoError(t, s.FinishIdempotent(ctx, done))

		// Survives a restart of the store.
		require.NoError(t, s.Close())
		s = b.open(t)
		got, claimed, err = s.ClaimIdempotent(ctx, rec, stale, expired)
		require.NoError(t, err)
		require.False(t, claimed)
		require.Equal(t, store.IdemDone, got.State)
		require.Equal(t, 200, got.Status)
		require.JSONEq(t, `{"success":true}`, string(got.Body))

		// A different request under the same key is returned, not claimed.
		got, claimed, err = s.ClaimIdempotent(ctx, store.Idempotent{UserID: "usr_1", Key: "k1", Fingerprint: "fp2", CreatedAt: t0}, stale, expired)
		require.NoError(t, err)
		require.False(t, claimed)
		require.Equal(t, "fp", got.Fingerprint)

		// Unknown outcomes are claimed again by a retry.
		unk := store.Idempotent{UserID: "usr_1", Key: "k2", Fingerprint: "fp", CreatedAt: t0}
		_, claimed, err = s.ClaimIdempotent(ctx, unk, stale, expired)
		require.NoError(t, err)
		require.True(t, claimed)
		unk.State, unk.UpdatedAt = store.IdemUnknown, t0
		require.NoError(t, s.FinishIdempotent(ctx, unk))
		got, claimed, err = s.ClaimIdempotent(ctx, unk, stale, expired)
		require.NoError(t, err)
		require.True(t, claimed)
		require.Equal(t, store.IdemRunning, got.State)

		// A running record whose relay went away is claimed once it is stale.
		later := t0.Add(2 * time.Minute)
		_, claimed, err = s.ClaimIdempotent(ctx, store.Idempotent{UserID: "usr_1", Key: "k2", Fingerprint: "fp", CreatedAt: later}, later.Add(-time.Minute), expired)
		require.NoError(t, err)
		require.True(t, claimed)

		// After 24 hours a key is new again; Purge removes old records.
		day := t0.Add(25 * time.Hour)
		got, claimed, err = s.ClaimIdempotent(ctx, store.Idempotent{UserID: "usr_1", Key: "k1", Fingerprint: "fp3", CreatedAt: day}, day.Add(-time.Minute), day.Add(-24*time.Hour))
		require.NoError(t, err)
		require.True(t, claimed)
		require.Equal(t, "fp3", got.Fingerprint)
		n, err := s.PurgeIdempotent(ctx, day.Add(-24*time.Hour))
		require.NoError(t, err)
		require.Equal(t, 2, n) // usr_1/k2 and usr_2/k1

		require.ErrorIs(t, s.FinishIdempotent(ctx, store.Idempotent{UserID: "usr_1", Key: "nope", State: store.IdemDone}), store.ErrNotFound)
	})
}

// Concurrent claims of one key, by two relay nodes sharing the database:
// exactly one wins.
func TestIdempotencyClaimRace(t *testing.T) {
	t.Parallel()
	eachShared(t, []string{"usr_1"}, func(t *testing.T, nodes []store.Store) {
		ctx := context.Background()
		const claims = 16
		claimed := make([]bool, claims)
		errs := make([]error, claims)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range claims {
			wg.Go(func() {
				<-start
				_, claimed[i], errs[i] = nodes[i%len(nodes)].ClaimIdempotent(ctx,
					store.Idempotent{UserID: "usr_1", Key: "k", Fingerprint: "fp", CreatedAt: t0}, t0.Add(-time.Minute), t0.Add(-24*time.Hour))
			})
		}
		close(start)
		wg.Wait()
		wins := 0
		for i := range claims {
			require.NoError(t, errs[i])
			if claimed[i] {
				wins++
			}
		}
		require.Equal(t, 1, wins)
	})
}

// Concurrent claims of a key whose record is stale or unknown: exactly
// one claims it again.
func TestIdempotencyReclaimRace(t *testing.T) {
	t.Parallel()
	for _, state := range []string{store.IdemRunning, store.IdemUnknown} {
		t.Run(state, func(t *testing.T) {
			t.Parallel()
			eachShared(t, []string{"usr_1"}, func(t *testing.T, nodes []store.Store) {
				ctx := context.Background()
				rec := store.Idempotent{UserID: "usr_1", Key: "k", Fingerprint: "fp", CreatedAt: t0}
				_, ok, err := nodes[0].ClaimIdempotent(ctx, rec, t0.Add(-time.Minute), t0.Add(-24*time.Hour))
				require.NoError(t, err)
				require.True(t, ok)
				rec.State, rec.UpdatedAt = state, t0
				require.NoError(t, nodes[0].FinishIdempotent(ctx, rec))

				later := t0.Add(10 * time.Minute)
				const claims = 16
				claimed := make([]bool, claims)
				errs := make([]error, claims)
				var wg sync.WaitGroup
				start := make(chan struct{})
				for i := range claims {
					wg.Go(func() {
						<-start
						_, claimed[i], errs[i] = nodes[i%len(nodes)].ClaimIdempotent(ctx,
							store.Idempotent{UserID: "usr_1", Key: "k", Fingerprint: "fp", CreatedAt: later}, later.Add(-time.Minute), later.Add(-24*time.Hour))
					})
				}
				close(start)
				wg.Wait()
				wins := 0
				for i := range claims {
					require.NoError(t, errs[i])
					if claimed[i] {
						wins++
					}
				}
				require.Equal(t, 1, wins)
			})
		})
	}
}
