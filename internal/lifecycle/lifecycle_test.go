package lifecycle_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"tradebridge/internal/lifecycle"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCloseEndsTheGoroutinesAndWaitsForThem(t *testing.T) {
	t.Parallel()
	var g lifecycle.Group
	var ended atomic.Int32
	for range 3 {
		require.True(t, g.Go(func(ctx context.Context) {
			<-ctx.Done()
			time.Sleep(time.Millisecond)
			ended.Add(1)
		}))
	}
	g.Close()
	assert.Equal(t, int32(3), ended.Load(), "Close returned after every goroutine")
	assert.True(t, g.Stopped())
	assert.False(t, g.Go(func(context.Context) { t.Error("ran after Close") }), "Go refuses once stopped")
	g.Close() // idempotent
}

func TestEnterCountsARunOfTheCaller(t *testing.T) {
	t.Parallel()
	var g lifecycle.Group
	parent, cancel := context.WithCancel(t.Context())
	ctx, leave, ok := g.Enter(parent)
	require.True(t, ok)
	cancel()
	<-ctx.Done()
	assert.False(t, g.Stopped(), "the caller's context does not stop the group")

	ctx, leave2, ok := g.Enter(t.Context())
	require.True(t, ok)
	closed := make(chan struct{})
	go func() { defer close(closed); g.Close() }()
	<-ctx.Done() // Stop ends every run's context
	<-g.Done()
	leave()
	leave() // a second call does nothing
	select {
	case <-closed:
		t.Fatal("Close returned while a run had not left")
	case <-time.After(10 * time.Millisecond):
	}
	leave2()
	<-closed

	ctx, leave, ok = g.Enter(t.Context())
	assert.False(t, ok, "Enter refuses once stopped")
	assert.NoError(t, ctx.Err(), "with the caller's context as it is")
	leave()
}

func TestStopReportsTheFirstCall(t *testing.T) {
	t.Parallel()
	var g lifecycle.Group
	ctx := g.Context()
	assert.True(t, g.Stop())
	assert.False(t, g.Stop())
	assert.Error(t, ctx.Err())
	g.Wait() // nothing to wait for
}
