package bridge

import (
	"context"

	"tradebridge/internal/backoff"
)

// Reconnect is a bridge's connection loop: it calls connect, which
// serves one connection to the platform until it breaks or ctx ends, and
// calls it again after b's Wait until ctx ends. A connection that
// reports healthy (it was up for a while) starts the backoff again at
// b.Min. It returns when ctx ends.
func Reconnect(ctx context.Context, b backoff.Backoff, connect func(ctx context.Context) (healthy bool)) {
	for {
		healthy := connect(ctx)
		if ctx.Err() != nil {
			return
		}
		if healthy {
			b.Reset()
		}
		if !b.Wait(ctx) {
			return
		}
	}
}
