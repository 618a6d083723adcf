package keylock

import (
	"context"
	"testing"
	"time"

	"tradebridge/internal/testkit"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// One holder per key at a time; other keys are free; a waiter gives up
// when its context ends; a key nobody holds or waits for is forgotten.
func TestLocks(t *testing.T) {
	t.Parallel()
	var l Locks
	unlock, err := l.Lock(t.Context(), "u1")
	require.NoError(t, err)
	other, err := l.Lock(t.Context(), "u2")
	require.NoError(t, err, "another key is free")
	other()

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	_, err = l.Lock(ctx, "u1")
	require.ErrorIs(t, err, context.DeadlineExceeded, "the key is held")

	got := make(chan func(), 1)
	go func() {
		u, err := l.Lock(context.Background(), "u1")
		if err == nil {
			got <- u
		}
	}()
	select {
	case <-got:
		t.Fatal("a second holder got the lock")
	case <-time.After(20 * time.Millisecond):
	}
	unlock()
	select {
	case u := <-got:
		u()
	case <-time.After(testkit.Medium):
		t.Fatal("the waiter never got the lock")
	}
	require.Zero(t, l.held(), "keys nobody holds are forgotten")
}
