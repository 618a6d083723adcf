package sim

import (
	"sync"
	"time"
)

// Clock tells the simulator the time. Prices, roll dates and order times all
// come from it.
type Clock interface {
	Now() time.Time
}

// realClock is the system clock.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// ManualClock is a Clock that moves only when told to, for tests. It is safe
// for concurrent use.
type ManualClock struct {
	mu sync.Mutex
	t  time.Time
}

// NewManualClock returns a ManualClock that reads t.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{t: t} }

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock by d (backwards when d is negative).
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Set moves the clock to t.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// StartedClock returns a Clock that reads start now and then advances with
// the system clock: a simulator started at a chosen moment, for trying a
// bot outside market hours or replaying a known session. The offset from
// the system clock is fixed when it is made.
func StartedClock(start time.Time) Clock { return shiftedClock{offset: time.Until(start)} }

type shiftedClock struct{ offset time.Duration }

func (c shiftedClock) Now() time.Time { return time.Now().Add(c.offset) }
