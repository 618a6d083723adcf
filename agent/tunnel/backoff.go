package tunnel

import (
	"math/rand/v2"
	"time"
)

// backoff computes reconnect delays: exponential with full jitter, so a
// fleet of agents that lost the same relay does not come back in lockstep.
// The n-th delay is uniform in [0, min(cap, base·2ⁿ)).
type backoff struct {
	base, cap time.Duration
	attempt   int
	rand      func() float64 // in [0,1); tests make it deterministic
}

func newBackoff(base, cap time.Duration) *backoff {
	return &backoff{base: base, cap: cap, rand: rand.Float64}
}

// next returns the delay before the next attempt and advances.
func (b *backoff) next() time.Duration {
	ceiling := b.cap
	if b.attempt < 32 {
		if d := b.base << b.attempt; d > 0 && d < b.cap {
			ceiling = d
		}
	}
	b.attempt++
	return time.Duration(b.rand() * float64(ceiling))
}

// patient returns a delay in [cap/2, cap): for refusals that retrying
// soon cannot fix (token revoked, replaced by another agent, version).
func (b *backoff) patient() time.Duration {
	return b.cap/2 + time.Duration(b.rand()*float64(b.cap/2))
}

// reset starts over after a stable connection.
func (b *backoff) reset() { b.attempt = 0 }
