package bridge_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"tradebridge/internal/backoff"
	"tradebridge/trading/bridge"
)

func TestReconnectCallsAgainUntilItsContextEnds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	calls := 0
	bridge.Reconnect(ctx, backoff.Backoff{Min: time.Microsecond, Max: time.Microsecond}, func(context.Context) bool {
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
	bridge.Reconnect(ctx, backoff.Backoff{Min: time.Hour, Max: time.Hour}, func(context.Context) bool {
		calls++
		close(called)
		return false
	})
	assert.Equal(t, 1, calls, "Reconnect returned from its hour's wait when ctx ended")
}
