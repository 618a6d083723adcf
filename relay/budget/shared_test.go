package budget_test

import (
	"context"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"tradebridge/internal/testkit"
	"tradebridge/relay/budget"
	"tradebridge/relay/budget/budgettest"
)

// newRedis returns a Redis backend under a prefix of t's own, on clock
// now (nil: Redis TIME), and a plain client on the same keys.
func newRedis(t testing.TB, now func() int64) (*budget.Redis, *redis.Client, string) {
	t.Helper()
	url := budgettest.RedisURL(t)
	pfx, raw := budgettest.Prefix(t, url)
	r, err := budget.NewRedis(budget.RedisOptions{URL: url, Prefix: pfx, Now: now, Timeout: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	return r, raw, pfx
}

// backend is where a test's limiters keep their budgets.
type backend struct {
	name string
	// make returns limiters on clock c, all of one backend.
	make func(t *testing.T, c *testkit.Clock) func(p budget.Policy) *budget.Limiter
}

var backends = []backend{
	{"memory", func(t *testing.T, c *testkit.Clock) func(p budget.Policy) *budget.Limiter {
		return func(p budget.Policy) *budget.Limiter {
			l, err := budget.New(budget.Options{Policy: p, Now: c.UnixNano})
			require.NoError(t, err)
			return l
		}
	}},
	{"redis", func(t *testing.T, c *testkit.Clock) func(p budget.Policy) *budget.Limiter {
		r, _, _ := newRedis(t, c.UnixNano)
		return func(p budget.Policy) *budget.Limiter {
			l, err := budget.New(budget.Options{Policy: p, Now: c.UnixNano, Backend: r})
			require.NoError(t, err)
			return l
		}
	}},
}

func newClock() *testkit.Clock { return testkit.NewClock(time.Time{}) }

// The semantics every backend keeps: a burst from full, then the rate;
// refused attempts uncharged; cost 2 whole or not at all; the fields of
// every decision.
func TestBackendsBurstRateAndCost(t *testing.T) {
	t.Parallel()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			c := newClock()
			mk := be.make(t, c)
			l := mk(budget.Trading)
			for i := range 20 {
				d := l.Allow("u")
				require.True(t, d.Allowed, "request %d of the burst", i)
				require.Equal(t, 19-i, d.Remaining)
				require.Equal(t, time.Duration(i+1)*(time.Minute/180), d.Reset)
			}
			d := l.Allow("u")
			require.Equal(t, budget.Decision{Remaining: 0, RetryAfter: time.Minute / 180, Reset: 20 * (time.Minute / 180)}, d)
			c.Advance(d.RetryAfter - 1)
			require.False(t, l.Allow("u").Allowed)
			c.Advance(1)
			require.True(t, l.Allow("u").Allowed)
			require.False(t, l.Allow("u").Allowed, "refused attempts are not charged, admitted ones are")
			require.True(t, l.Allow("v").Allowed, "other keys have their own budget")
			c.Advance(time.Minute)
			require.Equal(t, budget.Decision{Allowed: true, Remaining: 20}, l.Peek("u"))

			w := mk(budget.Policy{Name: "write", Rate: 20, Period: time.Minute, Burst: 10})
			for range 5 {
				require.True(t, w.AllowN("u", 2).Allowed)
			}
			require.False(t, w.AllowN("u", 2).Allowed)
			require.Equal(t, 0, w.Peek("u").Remaining)
			c.Advance(3 * time.Second)
			require.True(t, w.AllowN("u", 1).Allowed, "a cost-1 request fits where cost 2 does not")
			d = w.AllowN("u", 2)
			require.False(t, d.Allowed, "nothing is half-charged")
			require.Equal(t, 6*time.Second, d.RetryAfter, "30 s ahead after 3 s and one more: 2 × 3 s are 6 s over")
		})
	}
}

// Over a simulated minute of steady attempts, the admitted requests never
// exceed burst + rate × time, and never fall short of it by more than one.
func TestBackendsSustainedRate(t *testing.T) {
	t.Parallel()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			c := newClock()
			p := budget.Policy{Name: "sustained", Rate: 60, Period: time.Minute, Burst: 5}
			l := be.make(t, c)(p)
			start := c.UnixNano()
			admitted := 0
			const step = 250 * time.Millisecond
			for elapsed := time.Duration(0); elapsed <= time.Minute; elapsed += step {
				for range 8 {
					if l.Allow("u").Allowed {
						admitted++
					}
				}
				bound := p.Burst + int((c.UnixNano()-start)*int64(p.Rate)/int64(p.Period))
				require.LessOrEqual(t, admitted, bound, "at %v", elapsed)
				require.GreaterOrEqual(t, admitted, bound-1, "at %v", elapsed)
				c.Advance(step)
			}
		})
	}
}

// AllowAll charges in order and stops at the first refusal, which is not
// charged; the charges before it stay charged.
func TestBackendsAllowAll(t *testing.T) {
	t.Parallel()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			c := newClock()
			mk := be.make(t, c)
			write := mk(budget.Policy{Name: "write", Rate: 5, Period: time.Minute, Burst: 5})
			resource := mk(budget.Policy{Name: "resource", Rate: 3, Period: time.Minute, Burst: 3})
			dec := make([]budget.Decision, 2)
			for range 2 {
				require.Equal(t, -1, budget.AllowAll(context.Background(),
					[]budget.Charge{{Limiter: write, Key: "u", Cost: 2}, {Limiter: resource, Key: "copier:1"}}, dec))
				require.True(t, dec[0].Allowed)
				require.True(t, dec[1].Allowed)
			}
			require.Equal(t, 1, write.Peek("u").Remaining)
			require.Equal(t, 1, resource.Peek("copier:1").Remaining)

			// Cost 2 does not fit in 1: refused, nothing charged to it or
			// after it.
			dec = make([]budget.Decision, 2)
			require.Equal(t, 0, budget.AllowAll(context.Background(),
				[]budget.Charge{{Limiter: write, Key: "u", Cost: 2}, {Limiter: resource, Key: "copier:1"}}, dec))
			require.False(t, dec[0].Allowed)
			require.Equal(t, 12*time.Second, dec[0].RetryAfter)
			require.Equal(t, budget.Decision{}, dec[1], "not tried")
			require.Equal(t, 1, write.Peek("u").Remaining)
			require.Equal(t, 1, resource.Peek("copier:1").Remaining)

			// Every attempt counts: the charge before the refusal stays.
			require.Equal(t, 1, budget.AllowAll(context.Background(),
				[]budget.Charge{{Limiter: resource, Key: "copier:1"}, {Limiter: write, Key: "u", Cost: 2}}, dec))
			require.True(t, dec[0].Allowed)
			require.Zero(t, resource.Peek("copier:1").Remaining)
			require.Equal(t, 1, write.Peek("u").Remaining)

			require.Equal(t, -1, budget.AllowAll(context.Background(), nil, nil))
		})
	}
}

// Random sequences of (budget, key, cost 1 or 2, clock step), single
// charges and batches, fed to memory and to Redis on one clock, get the
// same decisions.
func TestRedisAgreesWithMemory(t *testing.T) {
	t.Parallel()
	budgettest.RedisURL(t)
	policies := []budget.Policy{
		budget.Trading,
		{Name: "write", Rate: 20, Period: time.Minute, Burst: 10},
		{Name: "kill", Rate: 10, Period: time.Minute, Burst: 5},
		{Name: "odd", Rate: 7, Period: time.Second, Burst: 3},
		{Name: "one", Rate: 1, Period: time.Second, Burst: 1},
	}
	for seed := range uint64(4) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			t.Parallel()
			c := newClock()
			rb, _, _ := newRedis(t, c.UnixNano)
			var mem, red []*budget.Limiter
			for _, p := range policies {
				m, err := budget.New(budget.Options{Policy: p, Now: c.UnixNano})
				require.NoError(t, err)
				x, err := budget.New(budget.Options{Policy: p, Now: c.UnixNano, Backend: rb})
				require.NoError(t, err)
				mem, red = append(mem, m), append(red, x)
			}
			rng := rand.New(rand.NewPCG(seed, 17))
			keys := []string{"u1", "u2", "192.0.2.7"}
			for step := range 600 {
				switch x := rng.IntN(10); {
				case x < 4:
					c.Advance(time.Duration(rng.Int64N(int64(400 * time.Millisecond))))
				case x < 5:
					c.Advance(time.Duration(rng.IntN(3)))
				case x < 6:
					c.Advance(time.Duration(rng.Int64N(int64(30 * time.Second))))
				}
				if rng.IntN(3) == 0 {
					n := 1 + rng.IntN(3)
					var mc, rc []budget.Charge
					for range n {
						i, k, cost := rng.IntN(len(policies)), keys[rng.IntN(len(keys))], 1+rng.IntN(2)
						mc = append(mc, budget.Charge{Limiter: mem[i], Key: k, Cost: cost})
						rc = append(rc, budget.Charge{Limiter: red[i], Key: k, Cost: cost})
					}
					md, rd := make([]budget.Decision, n), make([]budget.Decision, n)
					require.Equal(t, budget.AllowAll(context.Background(), mc, md), budget.AllowAll(context.Background(), rc, rd), "step %d", step)
					require.Equal(t, md, rd, "step %d", step)
					continue
				}
				i, k := rng.IntN(len(policies)), keys[rng.IntN(len(keys))]
				if rng.IntN(5) == 0 {
					require.Equal(t, mem[i].Peek(k), red[i].Peek(k), "step %d: peek %s %s", step, policies[i].Name, k)
					continue
				}
				cost := 1 + rng.IntN(2)
				require.Equal(t, mem[i].AllowN(k, cost), red[i].AllowN(k, cost), "step %d: %s %s cost %d", step, policies[i].Name, k, cost)
			}
			for i := range red {
				require.Zero(t, red[i].Len(), "Redis answered every call: nothing was decided in memory")
			}
		})
	}
}

// On Redis TIME, a key expires when its budget is full again.
func TestRedisKeysExpireWhenFull(t *testing.T) {
	t.Parallel()
	r, raw, pfx := newRedis(t, nil)
	l, err := budget.New(budget.Options{Policy: budget.Policy{Name: "hourly", Rate: 1, Period: time.Hour, Burst: 3}, Backend: r})
	require.NoError(t, err)
	for range 3 {
		require.True(t, l.Allow("u").Allowed)
	}
	d := l.Allow("u")
	require.False(t, d.Allowed)
	require.InDelta(t, float64(time.Hour), float64(d.RetryAfter), float64(time.Minute))
	ttl, err := raw.PTTL(context.Background(), pfx+"b:hourly:u").Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 2*time.Hour+59*time.Minute)
	require.LessOrEqual(t, ttl, d.Reset+time.Millisecond)

	fast, err := budget.New(budget.Options{Policy: budget.Policy{Name: "fast", Rate: 100, Period: time.Second, Burst: 2}, Backend: r})
	require.NoError(t, err)
	require.True(t, fast.Allow("u").Allowed)
	require.Eventually(t, func() bool {
		return raw.Exists(context.Background(), pfx+"b:fast:u").Val() == 0
	}, testkit.Medium, 5*time.Millisecond, "the key lives no longer than its budget takes to refill")
}

// Leases: the limit holds, a refused lease charges nothing, a refused
// budget gives the lease back, Release frees, and a lease never released
// lapses after its TTL.
func TestRedisLeases(t *testing.T) {
	t.Parallel()
	c := newClock()
	r, _, _ := newRedis(t, c.UnixNano)
	l, err := budget.New(budget.Options{Policy: budget.Policy{Name: "token", Rate: 3, Period: time.Minute, Burst: 3}, Now: c.UnixNano, Backend: r})
	require.NoError(t, err)
	ctx := context.Background()
	lease := func() *budget.Lease { return &budget.Lease{Key: "manage:u", Limit: 2, TTL: 90 * time.Second} }
	held := func() int {
		n, err := r.Leases(ctx, "manage:u")
		require.NoError(t, err)
		return n
	}
	one, two := lease(), lease()
	dec := make([]budget.Decision, 1)
	for _, ls := range []*budget.Lease{one, two} {
		res, err := r.Admit(ctx, ls, []budget.Charge{{Limiter: l, Key: "u"}}, dec)
		require.NoError(t, err)
		require.True(t, res.OK())
		require.NotEmpty(t, ls.ID)
	}
	require.NotEqual(t, one.ID, two.ID)
	require.Equal(t, 2, held())

	res, err := r.Admit(ctx, lease(), []budget.Charge{{Limiter: l, Key: "u"}}, dec)
	require.NoError(t, err)
	require.Equal(t, budget.Result{LeaseRefused: true, Refused: -1}, res)
	require.Equal(t, 1, l.Peek("u").Remaining, "a refused lease charges nothing")

	require.NoError(t, r.Release(ctx, one))
	require.NoError(t, r.Release(ctx, one), "releasing twice is harmless")
	require.Equal(t, 1, held())

	// The budget's last request, then a refusal that gives the lease back.
	three := lease()
	res, err = r.Admit(ctx, three, []budget.Charge{{Limiter: l, Key: "u"}}, dec)
	require.NoError(t, err)
	require.True(t, res.OK())
	require.NoError(t, r.Release(ctx, three))
	res, err = r.Admit(ctx, lease(), []budget.Charge{{Limiter: l, Key: "u"}}, dec)
	require.NoError(t, err)
	require.Equal(t, budget.Result{Refused: 0}, res)
	require.False(t, dec[0].Allowed)
	require.Equal(t, 1, held(), "a refused budget holds no lease")

	// A node that stopped never releases two: it lapses after the TTL.
	c.Advance(90*time.Second - time.Millisecond)
	require.Equal(t, 1, held())
	c.Advance(time.Millisecond)
	require.Zero(t, held())
	for range 2 {
		res, err = r.Admit(ctx, lease(), nil, nil)
		require.NoError(t, err)
		require.True(t, res.OK())
	}
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// silentAddr is a loopback address that accepts connections and never
// answers.
func silentAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}

// A Redis that does not answer (a closed port, or one that never replies
// within Timeout) leaves each node enforcing the same policy alone, never
// admitting without a limit, with one warning however many calls fail.
func TestRedisDownFallsBackToMemory(t *testing.T) {
	t.Parallel()
	for name, addr := range map[string]func(*testing.T) string{"refused": closedAddr, "timeout": silentAddr} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			core, logs := observer.New(zap.InfoLevel)
			r, err := budget.NewRedis(budget.RedisOptions{URL: "redis://" + addr(t) + "/0", Timeout: 50 * time.Millisecond,
				RetryInterval: time.Hour, Logger: zap.New(core)})
			require.NoError(t, err)
			defer func() { require.NoError(t, r.Close()) }()
			c := newClock()
			l, err := budget.New(budget.Options{Policy: budget.Trading, Now: c.UnixNano, Backend: r})
			require.NoError(t, err)
			for i := range 20 {
				d := l.Allow("u")
				require.True(t, d.Allowed)
				require.Equal(t, 19-i, d.Remaining)
			}
			d := l.Allow("u")
			require.False(t, d.Allowed)
			require.Equal(t, time.Minute/180, d.RetryAfter)
			require.Equal(t, 0, l.Peek("u").Remaining)
			dec := make([]budget.Decision, 1)
			require.Equal(t, 0, budget.AllowAll(context.Background(), []budget.Charge{{Limiter: l, Key: "u"}}, dec))
			_, err = r.Admit(context.Background(), &budget.Lease{Key: "k", Limit: 1, TTL: time.Second}, nil, nil)
			require.ErrorIs(t, err, budget.ErrUnavailable)
			require.ErrorIs(t, r.Release(context.Background(), &budget.Lease{Key: "k", ID: "x"}), budget.ErrUnavailable)
			require.Equal(t, 1, logs.FilterLevelExact(zap.WarnLevel).Len(), "one warning however many calls fail")
		})
	}
}

// proxy forwards connections to a Redis while on, and cuts them while off.
type proxy struct {
	ln     net.Listener
	target string
	on     atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{ln: ln, target: target}
	p.on.Store(true)
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.on.Load() {
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		p.wg.Go(func() { copyAndClose(up, c) })
		p.wg.Go(func() { copyAndClose(c, up) })
	}
}

func copyAndClose(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
}

// cut closes every connection through the proxy.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// When Redis stops answering, the node decides in memory; when it answers
// again, the node shares the budget again.
func TestRedisComesBack(t *testing.T) {
	t.Parallel()
	url := budgettest.RedisURL(t)
	o, err := redis.ParseURL(url)
	require.NoError(t, err)
	px := newProxy(t, o.Addr)
	pfx, _ := budgettest.Prefix(t, url)
	core, logs := observer.New(zap.InfoLevel)
	r, err := budget.NewRedis(budget.RedisOptions{URL: "redis://" + px.ln.Addr().String() + "/" + strconv.Itoa(o.DB), Prefix: pfx,
		Timeout: time.Second, RetryInterval: 20 * time.Millisecond, Logger: zap.New(core)})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	p := budget.Policy{Name: "daily", Rate: 1, Period: 24 * time.Hour, Burst: 2}
	// Two nodes' limiters on one Redis.
	a, err := budget.New(budget.Options{Policy: p, Backend: r})
	require.NoError(t, err)
	b, err := budget.New(budget.Options{Policy: p, Backend: r})
	require.NoError(t, err)
	require.True(t, a.Allow("u").Allowed)
	require.True(t, b.Allow("u").Allowed)
	require.False(t, a.Allow("u").Allowed, "the burst is shared")

	px.on.Store(false)
	px.cut()
	require.True(t, a.Allow("u").Allowed, "alone, node a has its own burst")
	require.Equal(t, 1, logs.FilterLevelExact(zap.WarnLevel).Len())
	require.Equal(t, 1, a.Len())

	px.on.Store(true)
	require.Eventually(t, func() bool { return r.Ping(context.Background()) == nil }, testkit.Medium, testkit.Tick)
	d := b.Allow("u")
	require.False(t, d.Allowed, "back on Redis, the shared budget is spent")
	require.Zero(t, b.Len())
	require.Equal(t, 1, logs.FilterMessageSnippet("answers again").Len())
}

func TestNewRedisOptions(t *testing.T) {
	t.Parallel()
	client := redis.NewClient(&redis.Options{Addr: closedAddr(t)})
	defer func() { require.NoError(t, client.Close(), "a Client passed in is the caller's to close") }()
	for _, tc := range []struct {
		name string
		opts budget.RedisOptions
		ok   bool
	}{
		{"url", budget.RedisOptions{URL: "redis://127.0.0.1:1/0"}, true},
		{"client", budget.RedisOptions{Client: client}, true},
		{"neither", budget.RedisOptions{}, false},
		{"both", budget.RedisOptions{URL: "redis://127.0.0.1:1/0", Client: client}, false},
		{"not a redis url", budget.RedisOptions{URL: "http://user:s3cret@127.0.0.1:1/0"}, false},
		{"negative timeout", budget.RedisOptions{URL: "redis://127.0.0.1:1/0", Timeout: -1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := budget.NewRedis(tc.opts)
			if !tc.ok {
				require.Error(t, err)
				require.NotContains(t, err.Error(), "s3cret")
				return
			}
			require.NoError(t, err)
			require.NoError(t, r.Close())
			require.NoError(t, r.Close(), "Close is idempotent")
		})
	}

	// A budget kept by a backend counts in float64: its window is bounded.
	r, err := budget.NewRedis(budget.RedisOptions{Client: client})
	require.NoError(t, err)
	_, err = budget.New(budget.Options{Policy: budget.Policy{Name: "x", Rate: 1, Period: 24 * time.Hour, Burst: 14}, Backend: r})
	require.Error(t, err)
	_, err = budget.New(budget.Options{Policy: budget.Policy{Name: "x", Rate: 1, Period: 24 * time.Hour, Burst: 13}, Backend: r})
	require.NoError(t, err)
}
