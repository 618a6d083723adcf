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
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
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
	s = open(t, dir)
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
}

// Concurrent claims of one key: exactly one wins.
func TestIdempotencyClaimRace(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	require.NoError(t, s.CreateUser(ctx, store.User{ID: "usr_1", Name: "a", Plan: "pro", CreatedAt: t0}))
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, claimed, err := s.ClaimIdempotent(ctx, store.Idempotent{UserID: "usr_1", Key: "k", Fingerprint: "fp", CreatedAt: t0}, t0.Add(-time.Minute), t0.Add(-24*time.Hour))
			require.NoError(t, err)
			if claimed {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 1, wins)
}
