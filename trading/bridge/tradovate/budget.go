package tradovate

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"
)

// Defaults of BudgetOptions, from Tradovate's partner documentation on
// rate limits (docs/tradovate.md, "Many links on one relay node: the
// address budget").
const (
	// DefaultAddressRate and DefaultAddressBurst pace every request of a
	// relay node: 500 a second, bursts of 1,000. The broker's general
	// per-second limit is 1,000 per address; the node stays at half of it,
	// and each login's own pacer (10 a second) keeps one busy link from
	// spending the others' share. An order costs a node two or three
	// requests (the placement, its barrier, a read), so the node places
	// some 150 orders a second before any waits.
	DefaultAddressRate  = 500.0
	DefaultAddressBurst = 1000
)

// EndpointLimit is a per-address limit of one endpoint: at most N
// requests in any Per (a rolling window at the broker). The budget keeps
// it with a token bucket: Burst at once, then the rest of N spread over
// Per, so that no window of Per holds more than N.
type EndpointLimit struct {
	N     int
	Per   time.Duration
	Burst int
}

// DefaultEndpointLimits are the endpoint-level limits the documentation
// lists for the endpoints the relay calls, counted per client address:
// user/syncrequest 300 an hour (successes count; 50 at once) and
// auth/accesstokenrequest 10 a minute (the documented authentication
// rate, 5 at once; the hourly limit of 5 counts only failed logins, which
// the relay cannot know in advance). auth/renewaccesstoken (15 an hour, successes
// count) is left out on purpose: a node with more than 15 links must
// renew more often than that, and a penalty ticket (15 s) costs less
// than letting tokens expire (docs/decisions.md).
func DefaultEndpointLimits() map[string]EndpointLimit {
	return map[string]EndpointLimit{
		"user/syncrequest":        {N: 300, Per: time.Hour, Burst: 50},
		"auth/accesstokenrequest": {N: 10, Per: time.Minute, Burst: 5},
	}
}

// BudgetOptions configures an AddressBudget.
type BudgetOptions struct {
	// Rate (requests a second) and Burst pace every request of the
	// address, REST and socket alike; DefaultAddressRate and
	// DefaultAddressBurst when zero.
	Rate  float64
	Burst int
	// Endpoints are per-endpoint limits of the address, by endpoint
	// ("user/syncrequest", "auth/accesstokenrequest"; case and a leading
	// slash do not matter); DefaultEndpointLimits when nil.
	Endpoints map[string]EndpointLimit
	// Now and After are the budget's clock; time.Now and time.After when
	// nil.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
}

// AddressBudget is the request budget of one outbound address: Tradovate
// counts its endpoint limits and issues its penalty tickets per client
// address (a /24), whatever the login, so every session of a relay node
// goes through one AddressBudget (SessionOptions.Budget). Requests wait
// for a token of the address's bucket in order, writes (order requests)
// ahead of reads; an endpoint with a documented limit of its own also
// waits for its endpoint's bucket first, and every request of an endpoint
// waits while a penalty ticket of it is pending. Its methods are safe for
// concurrent use.
type AddressBudget struct {
	now   func() time.Time
	after func(time.Duration) <-chan time.Time

	mu     sync.Mutex
	bucket bucket
	queue  [2][]*budgetWaiter // writes, then reads
	wake   chan struct{}      // closed when the queue changes
	ends   map[string]*bucket // endpoint buckets
	held   map[string]time.Time
	served [2]int
}

// budgetWaiter is a request waiting in the queue. It is not empty: the
// queue tells waiters apart by address, and empty values may share one.
type budgetWaiter struct{ _ byte }

// NewAddressBudget returns an AddressBudget.
func NewAddressBudget(opts BudgetOptions) *AddressBudget {
	if opts.Rate <= 0 {
		opts.Rate = DefaultAddressRate
	}
	if opts.Burst <= 0 {
		opts.Burst = DefaultAddressBurst
	}
	if opts.Endpoints == nil {
		opts.Endpoints = DefaultEndpointLimits()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.After == nil {
		opts.After = time.After
	}
	t := opts.Now()
	b := &AddressBudget{now: opts.Now, after: opts.After, wake: make(chan struct{}),
		bucket: bucket{rate: opts.Rate, burst: float64(opts.Burst), tokens: float64(opts.Burst), last: t},
		ends:   make(map[string]*bucket), held: make(map[string]time.Time)}
	for name, l := range opts.Endpoints {
		if l.N <= 0 || l.Per <= 0 {
			continue
		}
		burst := float64(min(max(l.Burst, 1), l.N))
		rate := max(float64(l.N)-burst, 1) / l.Per.Seconds()
		b.ends[endpointKey(name)] = &bucket{rate: rate, burst: burst, tokens: burst, last: t}
	}
	return b
}

// endpointKey is an endpoint's key: lower case, no leading slash.
func endpointKey(path string) string {
	return strings.ToLower(strings.TrimPrefix(path, "/"))
}

// BudgetStats counts the requests the budget let through, writes and reads,
// and the requests waiting now.
type BudgetStats struct {
	Writes, Reads int
	Waiting       int
}

// Stats returns the budget's counts.
func (b *AddressBudget) Stats() BudgetStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return BudgetStats{Writes: b.served[0], Reads: b.served[1], Waiting: len(b.queue[0]) + len(b.queue[1])}
}

// hold makes requests of endpoint wait until until: the broker gave a
// penalty ticket for it, and tickets are per address.
func (b *AddressBudget) hold(endpoint string, until time.Time) {
	k := endpointKey(endpoint)
	b.mu.Lock()
	if until.After(b.held[k]) {
		b.held[k] = until
	}
	b.mu.Unlock()
}

// errBudgetStopped reports a wait given up because its owner stopped.
var errBudgetStopped = errors.New("tradovate: stopped while waiting for the request budget")

// errEndpointHeld reports a request of an endpoint held by a penalty
// ticket longer than the request's deadline allows.
var errEndpointHeld = errors.New("tradovate: the endpoint is held by a penalty ticket past the request's deadline")

// Wait waits until a request to endpoint may be sent: after a pending
// penalty ticket of the endpoint (unless ticketed: the request carries
// that ticket), the endpoint's own bucket, and the address's bucket, in
// which writes go ahead of reads. It returns ctx's error, or
// errBudgetStopped when stop is closed first, or errEndpointHeld at once
// when a pending ticket outlasts ctx's deadline.
func (b *AddressBudget) Wait(ctx context.Context, stop <-chan struct{}, endpoint string, write, ticketed bool) error {
	k := endpointKey(endpoint)
	if !ticketed {
		b.mu.Lock()
		d := b.held[k].Sub(b.now())
		b.mu.Unlock()
		if dl, ok := ctx.Deadline(); ok && d > 0 && time.Until(dl) < d {
			return errEndpointHeld
		}
		if d > 0 {
			if err := b.sleep(ctx, stop, d); err != nil {
				return err
			}
		}
	}
	b.mu.Lock()
	eb := b.ends[k]
	var d time.Duration
	if eb != nil {
		d = eb.take(b.now())
	}
	b.mu.Unlock()
	if d > 0 {
		if err := b.sleep(ctx, stop, d); err != nil {
			b.mu.Lock()
			eb.tokens++ // give the reservation back
			b.mu.Unlock()
			return err
		}
	}
	return b.queued(ctx, stop, write)
}

func (b *AddressBudget) sleep(ctx context.Context, stop <-chan struct{}, d time.Duration) error {
	select {
	case <-b.after(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-stop:
		return errBudgetStopped
	}
}

// queued waits in the address's queue: the first write, or the first
// read when no write waits, takes the next token; a token it had to wait
// for is its own once its wait ends.
func (b *AddressBudget) queued(ctx context.Context, stop <-chan struct{}, write bool) error {
	class := 1
	if write {
		class = 0
	}
	w := &budgetWaiter{}
	b.mu.Lock()
	b.queue[class] = append(b.queue[class], w)
	b.changedLocked()
	b.mu.Unlock()
	var timer <-chan time.Time // the head's wait for its token
	for {
		b.mu.Lock()
		switch {
		case b.headLocked() != w:
			timer = nil
		case timer == nil:
			d := b.untilTokenLocked()
			if d <= 0 {
				b.grantLocked(class)
				b.mu.Unlock()
				return nil
			}
			timer = b.after(d)
		}
		wake := b.wake
		b.mu.Unlock()
		select {
		case <-timer:
			b.mu.Lock()
			if b.headLocked() == w {
				b.grantLocked(class) // its token came: the bucket may go below zero on a driven clock
				b.mu.Unlock()
				return nil
			}
			b.mu.Unlock()
		case <-wake:
		case <-ctx.Done():
			b.leave(w, class)
			return ctx.Err()
		case <-stop:
			b.leave(w, class)
			return errBudgetStopped
		}
	}
}

// headLocked is the waiter served next.
func (b *AddressBudget) headLocked() *budgetWaiter {
	for _, q := range b.queue {
		if len(q) > 0 {
			return q[0]
		}
	}
	return nil
}

// untilTokenLocked refills the bucket and says how long until it has a
// token.
func (b *AddressBudget) untilTokenLocked() time.Duration {
	bk := &b.bucket
	now := b.now()
	if now.After(bk.last) {
		bk.tokens = min(bk.burst, bk.tokens+now.Sub(bk.last).Seconds()*bk.rate)
		bk.last = now
	}
	if bk.tokens >= 1 {
		return 0
	}
	return max(time.Duration((1-bk.tokens)/bk.rate*float64(time.Second)), time.Nanosecond)
}

// grantLocked gives the head of class its token.
func (b *AddressBudget) grantLocked(class int) {
	b.bucket.tokens--
	b.queue[class] = b.queue[class][1:]
	b.served[class]++
	b.changedLocked()
}

// leave takes a waiter that gave up out of the queue.
func (b *AddressBudget) leave(w *budgetWaiter, class int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queue[class]
	for i, x := range q {
		if x == w {
			b.queue[class] = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	b.changedLocked()
}

// changedLocked wakes the waiters: the queue's head may have changed.
func (b *AddressBudget) changedLocked() {
	close(b.wake)
	b.wake = make(chan struct{})
}
