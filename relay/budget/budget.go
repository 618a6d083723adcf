// Package budget holds the relay's request budgets: per-user trading
// budgets shared by HTTP and WebSocket RPC, the per-client-address budget
// checked before any token, and the Management API's budgets; and the
// leases that bound a user's requests in flight across relay nodes.
//
// Every budget is a GCRA (generic cell rate algorithm) limiter: one
// theoretical arrival time per key, in integer nanoseconds, so admission is
// exact and refills continuously. A budget of Rate requests per Period with
// burst Burst admits at most Burst + Rate×t/Period requests in any interval
// t, and every attempt counts against it (refused attempts are not
// charged).
//
// A Limiter keeps its budgets in memory, where admission costs one map
// look-up under a sharded lock, unless Options.Backend names a Backend
// shared by every relay node (Redis): then each admission is one call to
// it, and the memory is where the node falls back to, enforcing the budget
// alone, while the backend does not answer.
package budget

import (
	"context"
	"errors"
	"hash/maphash"
	"strconv"
	"sync"
	"time"
)

// Policy describes a budget.
type Policy struct {
	// Name names the budget in responses ("trading", "ip", "read", …).
	Name string
	// Rate requests per Period are admitted sustained.
	Rate   int
	Period time.Duration
	// Burst requests may be admitted at once from a full budget.
	Burst int
}

// Trading is the per-user budget of the trading API, shared by HTTP and
// WebSocket RPC: 180 requests per minute, burst 20 (the spec's limits).
var Trading = Policy{Name: "trading", Rate: 180, Period: time.Minute, Burst: 20}

// Decision is the outcome of one admission.
type Decision struct {
	Allowed bool
	// Remaining is how many more requests of cost 1 would be admitted
	// right now.
	Remaining int
	// RetryAfter is how long a refused request must wait before the same
	// request can be admitted; zero when allowed.
	RetryAfter time.Duration
	// Reset is how long until the budget is full again.
	Reset time.Duration
}

// RetryAfterSeconds is RetryAfter in whole seconds, rounded up and never 0,
// for the Retry-After header.
func (d Decision) RetryAfterSeconds() int {
	s := int((d.RetryAfter + time.Second - 1) / time.Second)
	return max(s, 1)
}

// Options configure a Limiter.
type Options struct {
	Policy Policy
	// Now is the clock, in nanoseconds; nil means the monotonic clock.
	Now func() int64
	// MaxKeys bounds the keys held; when reached, keys whose budget is
	// full again are dropped (they are indistinguishable from new keys).
	// Default 1,000,000.
	MaxKeys int
	// Backend, when set, keeps the budget where every relay node sees it
	// (a *Redis); the Limiter's memory is then used only while the
	// backend does not answer. Nil means memory alone. The policy's Name
	// names the budget in the backend: limiters of one name on several
	// nodes share their keys.
	Backend Backend
}

// Limiter enforces one policy per key. It is safe for concurrent use.
type Limiter struct {
	policy   Policy
	interval int64 // ns per request at the sustained rate
	window   int64 // interval × burst: how far ahead of now the TAT may run
	now      func() int64
	maxShard int
	seed     maphash.Seed
	backend  Backend
	shards   [shardCount]shard
}

const shardCount = 64

type shard struct {
	mu  sync.Mutex
	tat map[string]int64 // theoretical arrival time by key
	_   [40]byte         // keep shards on separate cache lines
}

var start = time.Now()

func monotonic() int64 { return int64(time.Since(start)) }

// New returns a Limiter for opts.Policy.
func New(opts Options) (*Limiter, error) {
	p := opts.Policy
	if p.Rate <= 0 || p.Period <= 0 || p.Burst <= 0 {
		return nil, errors.New("budget: a policy needs a positive rate, period and burst")
	}
	interval := int64(p.Period) / int64(p.Rate)
	if interval <= 0 {
		return nil, errors.New("budget: the rate is too high for the period")
	}
	if opts.Now == nil {
		opts.Now = monotonic
	}
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = 1_000_000
	}
	if opts.Backend != nil && interval*int64(p.Burst) > MaxSharedWindow {
		return nil, errors.New("budget: a budget kept by a backend needs Period/Rate × Burst of at most 13 days")
	}
	l := &Limiter{
		policy:   p,
		interval: interval,
		window:   interval * int64(p.Burst),
		now:      opts.Now,
		maxShard: max(1, opts.MaxKeys/shardCount),
		seed:     maphash.MakeSeed(),
		backend:  opts.Backend,
	}
	for i := range l.shards {
		l.shards[i].tat = make(map[string]int64)
	}
	return l, nil
}

// Policy returns the limiter's policy.
func (l *Limiter) Policy() Policy { return l.policy }

// Backend returns the backend keeping the budget, nil for memory.
func (l *Limiter) Backend() Backend { return l.backend }

// Allow charges one request to key.
func (l *Limiter) Allow(key string) Decision { return l.AllowN(key, 1) }

// AllowN charges cost requests to key if all of them fit, and nothing
// otherwise. With a backend, that is one call to it; when the backend
// does not answer, the Limiter's memory decides.
func (l *Limiter) AllowN(key string, cost int) Decision {
	if l.backend != nil {
		if d, ok := l.allowShared(key, cost); ok {
			return d
		}
	}
	now := l.now()
	inc := l.interval * int64(cost)
	s := &l.shards[maphash.String(l.seed, key)%shardCount]
	s.mu.Lock()
	tat, ok := s.tat[key]
	if !ok || tat < now {
		tat = now
	}
	next := tat + inc
	if next-now > l.window {
		s.mu.Unlock()
		return Decision{
			Remaining:  l.remaining(tat - now),
			RetryAfter: time.Duration(next - l.window - now),
			Reset:      time.Duration(tat - now),
		}
	}
	if !ok && len(s.tat) >= l.maxShard {
		l.sweep(s, now)
	}
	s.tat[key] = next
	s.mu.Unlock()
	return Decision{Allowed: true, Remaining: l.remaining(next - now), Reset: time.Duration(next - now)}
}

// allowShared is AllowN with a backend; ok is false when the backend did
// not answer.
func (l *Limiter) allowShared(key string, cost int) (d Decision, ok bool) {
	if cost <= 0 {
		d = l.Peek(key)
		d.Allowed = true
		return d, true
	}
	c := []Charge{{Limiter: l, Key: key, Cost: cost}}
	ds := make([]Decision, 1)
	if _, err := l.backend.Admit(context.Background(), nil, c, ds); err != nil {
		return Decision{}, false
	}
	return ds[0], true
}

// Peek reports key's budget without charging it (with a backend, one call
// to it; when it does not answer, the Limiter's memory).
func (l *Limiter) Peek(key string) Decision {
	if l.backend != nil {
		if d, err := l.backend.Peek(context.Background(), l, key); err == nil {
			return d
		}
	}
	now := l.now()
	s := &l.shards[maphash.String(l.seed, key)%shardCount]
	s.mu.Lock()
	tat, ok := s.tat[key]
	s.mu.Unlock()
	if !ok || tat < now {
		tat = now
	}
	return Decision{Allowed: tat+l.interval-now <= l.window, Remaining: l.remaining(tat - now), Reset: time.Duration(tat - now)}
}

// remaining converts how far the TAT runs ahead of now into requests left.
func (l *Limiter) remaining(ahead int64) int {
	return int((l.window - ahead) / l.interval)
}

// sweep drops the keys whose budget is full again, with s.mu held.
func (l *Limiter) sweep(s *shard, now int64) {
	for k, tat := range s.tat {
		if tat <= now {
			delete(s.tat, k)
		}
	}
}

// Len returns the number of keys held in memory, for tests and metrics
// (with a backend, the keys charged while it did not answer).
func (l *Limiter) Len() int {
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += len(s.tat)
		s.mu.Unlock()
	}
	return n
}

// PolicyHeader is the RateLimit-Policy field value of the IETF draft
// "RateLimit header fields for HTTP": `"trading";q=180;w=60`.
func (p Policy) PolicyHeader() string {
	return strconv.Quote(p.Name) + ";q=" + strconv.Itoa(p.Rate) + ";w=" + strconv.Itoa(int(p.Period/time.Second))
}

// Header is the RateLimit field value of the IETF draft for decision d:
// `"trading";r=17;t=3`, the requests remaining and the seconds until the
// budget is full again.
func (p Policy) Header(d Decision) string {
	t := int((d.Reset + time.Second - 1) / time.Second)
	return strconv.Quote(p.Name) + ";r=" + strconv.Itoa(d.Remaining) + ";t=" + strconv.Itoa(t)
}
