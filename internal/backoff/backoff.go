// Package backoff spaces the attempts of the loops that try again after a
// failure: exponential backoff with full jitter, so that many clients that
// lost the same peer do not come back in lockstep. The agent's tunnel to
// the relay, the platform bridges' connection loops (NinjaTrader's add-on,
// Tradovate's user-data and market-data sockets) and Tradovate's login
// session use it, in the agent and in the relay alike; it sits under
// internal/ beside dbfile for that reason.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff computes the delays of one loop's attempts. The n-th delay
// (from 0) is Floor plus a time drawn uniformly from
// [0, min(Min·2ⁿ, Max)): the ceiling starts at Min and doubles after
// every delay up to Max (a Max below Min counts as Min). Reset starts the
// ceiling again at Min, after a success or a connection that stayed up a
// while. Set the fields before the first delay. A Backoff belongs to one
// loop; it is not safe for concurrent use.
type Backoff struct {
	// Min is the first delay's ceiling; Max the largest ceiling.
	Min, Max time.Duration
	// Floor is added to every delay; zero lets a delay be zero.
	Floor time.Duration
	// Rand returns a number in [0, 1); nil draws from math/rand/v2. Tests
	// make it deterministic.
	Rand func() float64

	ceiling time.Duration // of the next delay; 0 before the first
}

// Next returns the delay before the next attempt and doubles the ceiling.
func (b *Backoff) Next() time.Duration {
	top := max(b.Max, b.Min)
	c := b.ceiling
	if c <= 0 {
		c = b.Min
	}
	d := b.Floor + b.draw(c)
	if c > top/2 {
		b.ceiling = top
	} else {
		b.ceiling = 2 * c
	}
	return d
}

// Patient returns Floor plus a time drawn from [Max/2, Max), without
// moving the ceiling: the delay after a failure that trying again soon
// cannot fix (a refused credential, a version the peer does not speak).
func (b *Backoff) Patient() time.Duration {
	half := max(b.Max, b.Min) / 2
	return b.Floor + half + b.draw(half)
}

// Reset starts the ceiling again at Min.
func (b *Backoff) Reset() { b.ceiling = 0 }

// Wait waits the Next delay. It reports false, at once, when ctx ends
// first.
func (b *Backoff) Wait(ctx context.Context) bool {
	t := time.NewTimer(b.Next())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// draw returns a time drawn uniformly from [0, c).
func (b *Backoff) draw(c time.Duration) time.Duration {
	if c <= 0 {
		return 0
	}
	r := rand.Float64
	if b.Rand != nil {
		r = b.Rand
	}
	return time.Duration(r() * float64(c))
}
