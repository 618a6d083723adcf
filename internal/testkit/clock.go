package testkit

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Epoch is where a Clock made with a zero start stands: Monday
// 2 November 2026, 15:00 UTC (10:00 in New York, the market open).
var Epoch = time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC)

// Clock is a manual clock: its time moves only when a test calls Advance
// or Set. It hands out timers (After) and tickers (NewTicker) that fire
// as the clock passes them, as time's would. It is safe for concurrent
// use. Code under test takes it as its Now (func() time.Time), its
// nanosecond clock (UnixNano, for budget.Options.Now), its After, or a
// Clock interface of its own with Now and NewTicker.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []clockTimer
	tickers []*Ticker
}

type clockTimer struct {
	at time.Time
	ch chan time.Time
}

// NewClock returns a Clock standing at start, or at Epoch when start is
// zero.
func NewClock(start time.Time) *Clock {
	if start.IsZero() {
		start = Epoch
	}
	return &Clock{now: start}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// UnixNano returns the clock's time in nanoseconds since the Unix epoch:
// a clock for code that counts nanoseconds (budget.Options.Now).
func (c *Clock) UnixNano() int64 { return c.Now().UnixNano() }

// Advance moves the clock forward by d and fires the timers and tickers
// it reached.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.moveLocked(c.now.Add(d))
}

// Set moves the clock to t, forward or back, and fires the timers and
// tickers it reached.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.moveLocked(t)
}

func (c *Clock) moveLocked(t time.Time) {
	c.now = t
	kept := c.timers[:0]
	for _, tm := range c.timers {
		if tm.at.After(c.now) {
			kept = append(kept, tm)
			continue
		}
		tm.ch <- c.now // buffered, and sent once
	}
	clear(c.timers[len(kept):])
	c.timers = kept
	for _, tk := range c.tickers {
		// As time.Ticker: a tick that finds the channel full is dropped.
		for !tk.stopped && !tk.next.After(c.now) {
			select {
			case tk.c <- tk.next:
			default:
			}
			tk.next = tk.next.Add(tk.period)
		}
	}
}

// After returns a channel that receives the clock's time once the clock
// has moved d past now (at once when d <= 0), as time.After.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.timers = append(c.timers, clockTimer{at: c.now.Add(d), ch: ch})
	return ch
}

// Waiters counts the channels of After that have not fired yet.
func (c *Clock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// AwaitWaiters waits, up to Medium, until at least n channels of After
// are pending: until the code under test waits on the clock, so that a
// test's Advance reaches it. It fails the test otherwise.
func (c *Clock) AwaitWaiters(t testing.TB, n int) {
	t.Helper()
	if !assert.Eventually(t, func() bool { return c.Waiters() >= n }, Medium, time.Millisecond,
		"nobody waits on the clock") {
		t.FailNow()
	}
}

// Ticker is a ticker of a Clock: it ticks each time the clock passes
// another period, and drops a tick that finds its channel full, as
// time.Ticker.
type Ticker struct {
	clock   *Clock
	c       chan time.Time
	period  time.Duration
	next    time.Time
	stopped bool
}

// NewTicker returns a ticker of period d, whose first tick is d after now.
func (c *Clock) NewTicker(d time.Duration) *Ticker {
	if d <= 0 {
		panic("testkit: non-positive interval for NewTicker")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &Ticker{clock: c, c: make(chan time.Time, 1), period: d, next: c.now.Add(d)}
	c.tickers = append(c.tickers, t)
	return t
}

// C returns the channel of the ticks.
func (t *Ticker) C() <-chan time.Time { return t.c }

// Reset restarts the ticker with period d from the clock's time.
func (t *Ticker) Reset(d time.Duration) {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	t.period, t.next, t.stopped = d, t.clock.now.Add(d), false
}

// Stop stops the ticks; a tick already sent stays in the channel.
func (t *Ticker) Stop() {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	t.stopped = true
}
