package admit_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/relay/admit"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/budget/budgettest"
	"tradebridge/relay/errcode"
)

// keyPrefix is budgettest.Prefix without its client.
func keyPrefix(t testing.TB, url string) string {
	t.Helper()
	pfx, _ := budgettest.Prefix(t, url)
	return pfx
}

func newTestClock() *testkit.Clock { return testkit.NewClock(time.Time{}) }

// node is one relay node's admission: its Admitter and its limiters, on
// a backend of its own (nil: memory).
type node struct {
	a       *admit.Admitter
	backend budget.Backend
	clock   *testkit.Clock
}

// newNode returns a node on Redis under pfx (or in memory when pfx is
// ""), on clock c.
func newNode(t *testing.T, url, pfx string, c *testkit.Clock) *node {
	t.Helper()
	n := &node{clock: c}
	opts := admit.Options{Auth: newFakeAuth()}
	if pfx != "" {
		r, err := budget.NewRedis(budget.RedisOptions{URL: url, Prefix: pfx, Now: c.UnixNano, Timeout: 2 * time.Second})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, r.Close()) })
		n.backend, opts.Leases = r, r
	}
	a, err := admit.New(opts)
	require.NoError(t, err)
	n.a = a
	return n
}

func (n *node) limiter(t *testing.T, p budget.Policy) *budget.Limiter {
	t.Helper()
	l, err := budget.New(budget.Options{Policy: p, Now: n.clock.UnixNano, Backend: n.backend})
	require.NoError(t, err)
	return l
}

// manageDoor is a door with an in-flight limit of 2 and two budgets.
func (n *node) manageDoor(t *testing.T) *admit.Door {
	return &admit.Door{Name: "manage", Kind: auth.KindAPI, InFlight: 2, RateLimitHeaders: true,
		Budgets: []*budget.Limiter{
			n.limiter(t, budget.Policy{Name: "token", Rate: 6, Period: time.Minute, Burst: 6}),
			n.limiter(t, budget.Policy{Name: "read", Rate: 4, Period: time.Minute, Burst: 4}),
		}}
}

// A user's in-flight limit and budgets hold across two nodes sharing one
// Redis; Done frees a place on every node; the lease of a node that
// stopped lapses after the TTL.
func TestLeasesAcrossNodes(t *testing.T) {
	t.Parallel()
	url := budgettest.RedisURL(t)
	pfx := keyPrefix(t, url)
	c := newTestClock()
	n1, n2 := newNode(t, url, pfx, c), newNode(t, url, pfx, c)
	d1, d2 := n1.manageDoor(t), n2.manageDoor(t)

	one, ok := n1.a.Admit(httptest.NewRecorder(), request("pro"), d1)
	require.True(t, ok)
	w := httptest.NewRecorder()
	two, ok := n2.a.Admit(w, request("pro"), d2)
	require.True(t, ok)
	require.Equal(t, `"token";r=4;t=20`, w.Header().Get("RateLimit"), "the token budget is shared: two charged")
	require.Equal(t, 2, n1.a.InFlight("manage", "usr_pro"))
	require.Equal(t, 2, n2.a.InFlight("manage", "usr_pro"))

	for _, n := range []*node{n1, n2} {
		d := d1
		if n == n2 {
			d = d2
		}
		w := httptest.NewRecorder()
		_, ok := n.a.Admit(w, request("pro"), d)
		require.False(t, ok)
		require.Equal(t, http.StatusTooManyRequests, w.Code)
		require.Equal(t, errcode.TooManyConcurrentRequests, decode(t, w).Error)
	}
	require.Equal(t, 4, d1.Budgets[0].Peek("usr_pro").Remaining, "a refused lease charges no budget")

	// Done on node 1 frees a place for node 2.
	one.Done()
	one.Done()
	require.Equal(t, 1, n2.a.InFlight("manage", "usr_pro"))
	three, ok := n2.a.Admit(httptest.NewRecorder(), request("pro"), d2)
	require.True(t, ok)
	three.Done()

	// Another user and another door count apart.
	e, ok := n1.a.Admit(httptest.NewRecorder(), request("elite"), d1)
	require.True(t, ok)
	defer e.Done()

	// Node 2 stops with two held: its lease lapses after the TTL.
	_ = two
	held, ok := n1.a.Admit(httptest.NewRecorder(), request("pro"), d1)
	require.True(t, ok)
	_, ok = n1.a.Admit(httptest.NewRecorder(), request("pro"), d1)
	require.False(t, ok)
	c.Advance(admit.DefaultLeaseTTL)
	require.Equal(t, 0, n1.a.InFlight("manage", "usr_pro"), "both leases lapsed")
	held.Done() // lapsed already: harmless
	for range 2 {
		ad, ok := n1.a.Admit(httptest.NewRecorder(), request("pro"), d1)
		require.True(t, ok)
		defer ad.Done()
	}
}

// A budget refused in the one call gives the lease back and charges no
// budget after it; every budget before it stays charged.
func TestSharedBudgetRefusalReleases(t *testing.T) {
	t.Parallel()
	url := budgettest.RedisURL(t)
	n := newNode(t, url, keyPrefix(t, url), newTestClock())
	d := n.manageDoor(t)
	for range 4 {
		ad, ok := n.a.Admit(httptest.NewRecorder(), request("pro"), d)
		require.True(t, ok)
		ad.Done()
	}
	w := httptest.NewRecorder()
	_, ok := n.a.Admit(w, request("pro"), d)
	require.False(t, ok)
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	require.Equal(t, "read", decode(t, w).Policy)
	require.Equal(t, `"read";q=4;w=60`, w.Header().Get("RateLimit-Policy"))
	require.Zero(t, n.a.InFlight("manage", "usr_pro"))
	require.Equal(t, 1, d.Budgets[0].Peek("usr_pro").Remaining, "every attempt counts")
}

// One sequence of admissions and charges, on memory and on Redis fed the
// same clock, gets the same answers: statuses, bodies and headers.
func TestSharedAnswersLikeMemory(t *testing.T) {
	t.Parallel()
	url := budgettest.RedisURL(t)
	run := func(n *node) []string {
		d := n.manageDoor(t)
		write := n.limiter(t, budget.Policy{Name: "write", Rate: 5, Period: time.Minute, Burst: 5})
		resource := n.limiter(t, budget.Policy{Name: "resource", Rate: 3, Period: time.Minute, Burst: 3})
		var out []string
		record := func(w *httptest.ResponseRecorder) {
			out = append(out, http.StatusText(w.Code), w.Body.String(), w.Header().Get("RateLimit"),
				w.Header().Get("RateLimit-Policy"), w.Header().Get("Retry-After"))
		}
		var held []*admit.Admission
		for i := range 24 {
			w := httptest.NewRecorder()
			switch i % 4 {
			case 0, 1:
				ad, ok := n.a.Admit(w, request("pro"), d)
				if ok {
					held = append(held, ad)
				}
			case 2:
				n.a.Charge(w, principals["pro"], admit.Charge{Budget: write, Cost: 2}, admit.Charge{Budget: resource, Key: "copier:1"})
			case 3:
				for _, ad := range held {
					ad.Done()
				}
				held = nil
				n.clock.Advance(time.Duration(i) * 700 * time.Millisecond)
			}
			record(w)
		}
		return out
	}
	c1, c2 := newTestClock(), newTestClock()
	require.Equal(t, run(newNode(t, url, "", c1)), run(newNode(t, url, keyPrefix(t, url), c2)))
}

// closedURL is a Redis URL nothing listens on.
func closedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return "redis://" + addr + "/0"
}

// When Redis does not answer, the node keeps the in-flight limit and the
// budgets in its own memory: never without a limit, never a 5xx.
func TestRedisDownAdmitsAlone(t *testing.T) {
	t.Parallel()
	r, err := budget.NewRedis(budget.RedisOptions{URL: closedURL(t), Timeout: 100 * time.Millisecond, RetryInterval: time.Hour})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	a, err := admit.New(admit.Options{Auth: newFakeAuth(), Leases: r})
	require.NoError(t, err)
	l, err := budget.New(budget.Options{Policy: budget.Policy{Name: "token", Rate: 2, Period: time.Minute, Burst: 2}, Now: func() int64 { return 0 }, Backend: r})
	require.NoError(t, err)
	d := &admit.Door{Name: "manage", Kind: auth.KindAPI, InFlight: 1, Budgets: []*budget.Limiter{l}}

	one, ok := a.Admit(httptest.NewRecorder(), request("pro"), d)
	require.True(t, ok)
	w := httptest.NewRecorder()
	_, ok = a.Admit(w, request("pro"), d)
	require.False(t, ok)
	require.Equal(t, errcode.TooManyConcurrentRequests, decode(t, w).Error)
	require.Equal(t, 1, a.InFlight("manage", "usr_pro"))
	one.Done()
	require.Zero(t, a.InFlight("manage", "usr_pro"))

	two, ok := a.Admit(httptest.NewRecorder(), request("pro"), d)
	require.True(t, ok)
	two.Done()
	w = httptest.NewRecorder()
	_, ok = a.Admit(w, request("pro"), d)
	require.False(t, ok)
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	require.Equal(t, "token", decode(t, w).Policy)

	w = httptest.NewRecorder()
	require.False(t, a.Charge(w, principals["pro"], admit.Charge{Budget: l}))
	require.Equal(t, http.StatusTooManyRequests, w.Code)
}

// counting counts the calls to a backend.
type counting struct {
	budget.Backend
	admits, releases atomic.Int32
}

func (c *counting) Admit(ctx context.Context, l *budget.Lease, cs []budget.Charge, ds []budget.Decision) (budget.Result, error) {
	c.admits.Add(1)
	return c.Backend.Admit(ctx, l, cs, ds)
}

func (c *counting) Release(ctx context.Context, l *budget.Lease) error {
	c.releases.Add(1)
	return c.Backend.Release(ctx, l)
}

// An admission with a lease and budgets is one call, Done one more, and
// Charge's several budgets one call.
func TestOneCallPerAdmission(t *testing.T) {
	t.Parallel()
	url := budgettest.RedisURL(t)
	c := newTestClock()
	r, err := budget.NewRedis(budget.RedisOptions{URL: url, Prefix: keyPrefix(t, url), Now: c.UnixNano})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	be := &counting{Backend: r}
	a, err := admit.New(admit.Options{Auth: newFakeAuth(), Leases: be})
	require.NoError(t, err)
	n := &node{a: a, backend: be, clock: c}
	d := n.manageDoor(t)

	ad, ok := a.Admit(httptest.NewRecorder(), request("pro"), d)
	require.True(t, ok)
	require.Equal(t, int32(1), be.admits.Load())
	ad.Done()
	require.Equal(t, int32(1), be.releases.Load())

	write := n.limiter(t, budget.Policy{Name: "write", Rate: 5, Period: time.Minute, Burst: 5})
	resource := n.limiter(t, budget.Policy{Name: "resource", Rate: 3, Period: time.Minute, Burst: 3})
	require.True(t, a.Charge(httptest.NewRecorder(), principals["pro"], admit.Charge{Budget: write, Cost: 2}, admit.Charge{Budget: resource, Key: "copier:1"}))
	require.Equal(t, int32(2), be.admits.Load())
	require.Equal(t, 3, write.Peek("usr_pro").Remaining)
	require.Equal(t, 2, resource.Peek("copier:1").Remaining)
}
