package budget_test

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"tradebridge/internal/testkit"
	"tradebridge/relay/budget"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newLimiter(t testing.TB, p budget.Policy) (*budget.Limiter, *testkit.Clock) {
	c := newClock() // any start; the limiter never looks at the epoch
	l, err := budget.New(budget.Options{Policy: p, Now: c.UnixNano})
	require.NoError(t, err)
	return l, c
}

func TestBurstThenRate(t *testing.T) {
	l, c := newLimiter(t, budget.Trading)
	for i := range 20 {
		d := l.Allow("u")
		require.True(t, d.Allowed, "request %d of the burst", i)
		require.Equal(t, 19-i, d.Remaining)
	}
	d := l.Allow("u")
	require.False(t, d.Allowed)
	require.Equal(t, 0, d.Remaining)
	// 180/min is one request every 333.33 ms.
	require.Equal(t, time.Minute/180, d.RetryAfter)
	require.Equal(t, 1, d.RetryAfterSeconds(), "never 0")
	c.Advance(d.RetryAfter - 1)
	require.False(t, l.Allow("u").Allowed)
	c.Advance(1)
	require.True(t, l.Allow("u").Allowed)
	require.False(t, l.Allow("u").Allowed, "refused attempts are not charged, admitted ones are")

	// Other keys have their own budget.
	require.True(t, l.Allow("v").Allowed)

	// After a minute idle the budget is full again.
	c.Advance(time.Minute)
	require.Equal(t, 20, l.Peek("u").Remaining)
}

func TestCost(t *testing.T) {
	l, c := newLimiter(t, budget.Policy{Name: "write", Rate: 20, Period: time.Minute, Burst: 10})
	for range 5 {
		require.True(t, l.AllowN("u", 2).Allowed)
	}
	require.False(t, l.AllowN("u", 2).Allowed)
	require.Equal(t, 0, l.Peek("u").Remaining)
	c.Advance(3 * time.Second)
	require.True(t, l.AllowN("u", 1).Allowed, "a cost-1 request fits where cost 2 does not")
	require.False(t, l.AllowN("u", 2).Allowed, "nothing is half-charged")
}

func TestRetryAfterRoundsUp(t *testing.T) {
	l, c := newLimiter(t, budget.Policy{Name: "kill", Rate: 10, Period: time.Minute, Burst: 5})
	for range 5 {
		l.Allow("u")
	}
	d := l.Allow("u")
	require.False(t, d.Allowed)
	require.Equal(t, 6*time.Second, d.RetryAfter)
	require.Equal(t, 6, d.RetryAfterSeconds())
	c.Advance(5500 * time.Millisecond)
	d = l.Allow("u")
	require.Equal(t, 500*time.Millisecond, d.RetryAfter)
	require.Equal(t, 1, d.RetryAfterSeconds())
}

func TestHeaders(t *testing.T) {
	l, _ := newLimiter(t, budget.Trading)
	d := l.Allow("u")
	require.Equal(t, `"trading";q=180;w=60`, budget.Trading.PolicyHeader())
	require.Equal(t, `"trading";r=19;t=1`, budget.Trading.Header(d))
}

func TestPolicyValidation(t *testing.T) {
	for _, p := range []budget.Policy{
		{Name: "x", Rate: 0, Period: time.Minute, Burst: 1},
		{Name: "x", Rate: 1, Period: 0, Burst: 1},
		{Name: "x", Rate: 1, Period: time.Minute, Burst: 0},
		{Name: "x", Rate: 10, Period: 5, Burst: 1},
	} {
		_, err := budget.New(budget.Options{Policy: p})
		require.Error(t, err)
	}
}

func TestKeysAreBounded(t *testing.T) {
	c := newClock()
	l, err := budget.New(budget.Options{Policy: budget.Trading, Now: c.UnixNano, MaxKeys: 64})
	require.NoError(t, err)
	for i := range 10_000 {
		l.Allow(strconv.Itoa(i))
		c.Advance(time.Second) // each key's single request has refilled by the next
	}
	require.LessOrEqual(t, l.Len(), 64*2)
}

// Under 64 concurrent clients of one user for a simulated minute, the
// admitted requests never exceed the GCRA bound (burst + rate × time) and
// never fall short of it by more than one.
func TestConcurrentClientsStayWithinTheBound(t *testing.T) {
	p := budget.Trading
	l, c := newLimiter(t, p)
	const clients = 64
	const step = 10 * time.Millisecond
	var admitted atomic.Int64
	var wg sync.WaitGroup
	rounds := make([]chan struct{}, clients)
	var done sync.WaitGroup
	for i := range rounds {
		rounds[i] = make(chan struct{})
		done.Add(1)
		go func() {
			defer done.Done()
			for range rounds[i] {
				if l.Allow("user").Allowed {
					admitted.Add(1)
				}
				wg.Done()
			}
		}()
	}
	start := c.UnixNano()
	for elapsed := time.Duration(0); elapsed <= time.Minute; elapsed += step {
		wg.Add(clients)
		for _, r := range rounds {
			r <- struct{}{}
		}
		wg.Wait()
		bound := int64(p.Burst) + (c.UnixNano()-start)*int64(p.Rate)/int64(p.Period)
		got := admitted.Load()
		require.LessOrEqual(t, got, bound, "at %v", elapsed)
		require.GreaterOrEqual(t, got, bound-1, "at %v", elapsed)
		c.Advance(step)
	}
	for _, r := range rounds {
		close(r)
	}
	done.Wait()
}

// BenchmarkAllow measures one admission in memory (target ≤ 1 µs median).
func BenchmarkAllow(b *testing.B) {
	l, err := budget.New(budget.Options{Policy: budget.Policy{Name: "x", Rate: 1 << 20, Period: time.Second, Burst: 1 << 20}})
	require.NoError(b, err)
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "usr_" + strconv.Itoa(i)
	}
	i := 0
	for b.Loop() {
		l.Allow(keys[i&1023])
		i++
	}
}

func BenchmarkAllowParallel(b *testing.B) {
	l, err := budget.New(budget.Options{Policy: budget.Policy{Name: "x", Rate: 1 << 20, Period: time.Second, Burst: 1 << 20}})
	require.NoError(b, err)
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			l.Allow("usr_" + strconv.Itoa(i&1023))
			i++
		}
	})
}
