package bridge

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff spaces the attempts of a bridge's connection loop to reach its
// platform: exponential backoff with full jitter. Each Wait waits a random
// time below the current backoff, which starts at Min and doubles after
// every Wait up to Max; Reset starts it again at Min (after a connection
// that was healthy for a while). Min and Max are set before the first
// Wait; with Min zero a Wait waits a millisecond. A Backoff belongs to one
// loop; it is not safe for concurrent use.
type Backoff struct {
	Min, Max time.Duration
	cur      time.Duration
}

// Wait waits the next delay: a random time below the current backoff,
// plus a millisecond. It reports false, at once, when ctx ends first.
func (b *Backoff) Wait(ctx context.Context) bool {
	if b.cur <= 0 {
		b.cur = b.Min
	}
	d := time.Millisecond
	if b.cur > 0 {
		d += rand.N(b.cur)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	b.cur = min(2*b.cur, b.Max)
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Reset starts the backoff again at Min.
func (b *Backoff) Reset() { b.cur = b.Min }

// Reconnect is a bridge's connection loop: it calls connect, which
// serves one connection to the platform until it breaks or ctx ends, and
// calls it again after b's Wait until ctx ends. A connection that
// reports healthy (it was up for a while) starts the backoff again at
// b.Min. It returns when ctx ends.
func Reconnect(ctx context.Context, b Backoff, connect func(ctx context.Context) (healthy bool)) {
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
