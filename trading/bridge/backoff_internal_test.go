package bridge

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestBackoffDoublesUpToMaxAndResets(t *testing.T) {
	t.Parallel()
	b := Backoff{Min: time.Microsecond, Max: 4 * time.Microsecond}
	var seen []time.Duration
	for range 4 {
		assert.True(t, b.Wait(t.Context()))
		seen = append(seen, b.cur)
	}
	assert.Equal(t, []time.Duration{2 * time.Microsecond, 4 * time.Microsecond, 4 * time.Microsecond, 4 * time.Microsecond}, seen)
	b.Reset()
	assert.Equal(t, time.Microsecond, b.cur)
}

func TestBackoffWaitEndsWithItsContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	b := Backoff{Min: time.Hour, Max: time.Hour}
	assert.False(t, b.Wait(ctx), "a wait whose context has ended reports false at once")
	var zero Backoff
	assert.True(t, zero.Wait(t.Context()), "a zero Backoff waits a millisecond")
}

func TestReconnectCallsAgainUntilItsContextEnds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	calls := 0
	Reconnect(ctx, Backoff{Min: time.Microsecond, Max: time.Microsecond}, func(context.Context) bool {
		calls++
		if calls == 3 {
			cancel()
		}
		return calls == 2
	})
	assert.Equal(t, 3, calls, "connect runs again after each connection, and not once ctx ended")
}

func TestReconnectStopsWaitingWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	called := make(chan struct{})
	go func() { <-called; cancel() }()
	calls := 0
	Reconnect(ctx, Backoff{Min: time.Hour, Max: time.Hour}, func(context.Context) bool {
		calls++
		close(called)
		return false
	})
	assert.Equal(t, 1, calls, "Reconnect returned from its hour's wait when ctx ended")
}
