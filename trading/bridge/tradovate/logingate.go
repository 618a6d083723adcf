package tradovate

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// Defaults of LoginGateOptions.
const (
	// DefaultLoginsPerMinute and DefaultLoginBurst are a login gate's
	// budget: 6 logins a minute, 3 at once, so that at most 9 reach the
	// broker in any minute, under its documented 10 authentication
	// requests a minute per client address, with room for the user's own
	// logins from the same address.
	DefaultLoginsPerMinute = 6
	DefaultLoginBurst      = 3
)

// LoginGateOptions configures a LoginGate.
type LoginGateOptions struct {
	// PerMinute and Burst bound the logins let through:
	// DefaultLoginsPerMinute and DefaultLoginBurst when not positive.
	PerMinute, Burst int
	// Now and After are the gate's clock; time.Now and time.After when
	// nil.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
	// Jitter returns the random extra wait of a login that must wait, at
	// most its argument; a uniform draw when nil.
	Jitter func(time.Duration) time.Duration
}

// LoginGate paces the logins (POST /auth/accesstokenrequest) of every
// session that shares it: the broker counts them per client address, so
// the relay gives one gate to all the sessions of a node. Logins wait
// their turn, spread by a little jitter, so that a node whose tokens all
// expired (after an outage longer than a token's life) logs its links in
// a few at a time instead of all at once. A penalty ticket answered to
// one login holds every login of the gate for its p-time. It is safe for
// concurrent use.
type LoginGate struct {
	mu     sync.Mutex
	every  time.Duration
	burst  int
	next   time.Time // when the next login would be due at the steady rate
	hold   time.Time // no login before (a ticket's p-time)
	now    func() time.Time
	after  func(time.Duration) <-chan time.Time
	jitter func(time.Duration) time.Duration
}

// NewLoginGate returns a LoginGate.
func NewLoginGate(o LoginGateOptions) *LoginGate {
	if o.PerMinute <= 0 {
		o.PerMinute = DefaultLoginsPerMinute
	}
	if o.Burst <= 0 {
		o.Burst = DefaultLoginBurst
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.After == nil {
		o.After = time.After
	}
	if o.Jitter == nil {
		o.Jitter = func(d time.Duration) time.Duration {
			if d <= 0 {
				return 0
			}
			return rand.N(d)
		}
	}
	return &LoginGate{every: time.Minute / time.Duration(o.PerMinute), burst: o.Burst,
		now: o.Now, after: o.After, jitter: o.Jitter}
}

// reserve takes the next login slot and returns how long to wait for it.
func (g *LoginGate) reserve() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	base := latest(g.next, now, g.hold)
	at := latest(now, g.hold, base.Add(-time.Duration(g.burst-1)*g.every))
	g.next = base.Add(g.every)
	d := at.Sub(now)
	if d > 0 {
		d += g.jitter(g.every / 2)
	}
	return d
}

// Wait waits for a login's turn, or until ctx ends or stop is closed.
func (g *LoginGate) Wait(ctx context.Context, stop <-chan struct{}) error {
	d := g.reserve()
	if d <= 0 {
		return nil
	}
	select {
	case <-g.after(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-stop:
		return unavailable(CodeBrokerUnreachable)
	}
}

// Hold lets no login through before until (a penalty ticket's p-time:
// the broker's tickets are per client address).
func (g *LoginGate) Hold(until time.Time) {
	g.mu.Lock()
	g.hold = latest(g.hold, until)
	g.mu.Unlock()
}

// latest returns the latest of ts.
func latest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}
