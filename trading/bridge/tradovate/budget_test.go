package tradovate_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/bridge/tradovate"
	"tradebridge/trading/bridge/tradovate/tradovatefake"
)

// A write that comes while reads wait for the address's budget is served
// before them.
func TestAddressBudgetWritesFirst(t *testing.T) {
	t.Parallel()
	c := newClock()
	b := tradovate.NewAddressBudget(tradovate.BudgetOptions{Rate: 1, Burst: 1, Now: c.Now, After: c.After,
		Endpoints: map[string]tradovate.EndpointLimit{}})
	require.NoError(t, b.Wait(t.Context(), nil, "/account/list", false, false), "the burst")

	order := make(chan string, 4)
	var wg sync.WaitGroup
	start := func(name, path string, write bool) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if b.Wait(context.Background(), nil, path, write, false) == nil {
				order <- name
			}
		}()
	}
	for i, name := range []string{"read-1", "read-2", "read-3"} {
		start(name, "/order/list", false)
		require.Eventually(t, func() bool { return b.Stats().Waiting == i+1 }, testkit.Medium, time.Millisecond)
	}
	c.AwaitWaiters(t, 1) // the first read waits for the next token
	start("write", "/order/cancelorder", true)
	require.Eventually(t, func() bool { return b.Stats().Waiting == 4 }, testkit.Medium, time.Millisecond)
	c.AwaitWaiters(t, 2) // and now the write, the queue's new head

	var got []string
	for len(got) < 4 {
		c.AwaitWaiters(t, 1)
		c.Advance(time.Second)
		select {
		case name := <-order:
			got = append(got, name)
		case <-time.After(testkit.Medium):
			t.Fatalf("nothing served after a second of budget; served %v", got)
		}
	}
	wg.Wait()
	assert.Equal(t, "write", got[0], "the write goes ahead of the reads queued before it")
	assert.ElementsMatch(t, []string{"read-1", "read-2", "read-3"}, got[1:])
	st := b.Stats()
	assert.Equal(t, 1, st.Writes)
	assert.Equal(t, 4, st.Reads)
}

// An endpoint with a limit of its own waits for it, without holding up
// the other endpoints.
func TestAddressBudgetEndpointLimit(t *testing.T) {
	t.Parallel()
	c := newClock()
	b := tradovate.NewAddressBudget(tradovate.BudgetOptions{Rate: 1000, Burst: 1000, Now: c.Now, After: c.After,
		Endpoints: map[string]tradovate.EndpointLimit{"user/syncrequest": {N: 3, Per: time.Hour, Burst: 1}}})
	require.NoError(t, b.Wait(t.Context(), nil, "user/syncrequest", false, false))
	done := make(chan error, 1)
	go func() { done <- b.Wait(context.Background(), nil, "user/syncrequest", false, false) }()
	c.AwaitWaiters(t, 1)
	require.NoError(t, b.Wait(t.Context(), nil, "/account/list", false, false), "another endpoint passes")
	c.Advance(29 * time.Minute)
	select {
	case <-done:
		t.Fatal("the second syncrequest came before its share of the hour")
	default:
	}
	c.Advance(time.Minute) // two more in the hour: one every 30 minutes
	require.NoError(t, <-done)
}

// Sessions of different logins on one node share the node's budget: the
// fake, counting requests per client address across logins, gives
// penalty tickets when the node goes over its limit, and none when the
// sessions share one budget within it.
func TestSessionsShareTheAddressBudget(t *testing.T) {
	t.Parallel()
	for _, shared := range []bool{false, true} {
		tickets := sessionsOnOneAddress(t, shared)
		if shared {
			assert.Zero(t, tickets, "within the address's limit")
		} else {
			assert.Positive(t, tickets, "the fake counts per address: separate budgets exceed it")
		}
	}
}

// sessionsOnOneAddress runs three logins' requests against a fake that
// allows 6 requests a second per address, and returns the tickets it
// gave.
func sessionsOnOneAddress(t *testing.T, shared bool) int {
	t.Helper()
	c := newClock()
	market, err := sim.New(sim.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = market.Close() })
	fake, err := tradovatefake.Start(tradovatefake.Options{Market: market, Now: c.Now,
		AddressLimit: 6, AddressWindow: time.Second, AddressPenalty: time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = fake.Close() })
	budget := func() *tradovate.AddressBudget {
		return tradovate.NewAddressBudget(tradovate.BudgetOptions{Rate: 5, Burst: 5, Now: c.Now, After: c.After,
			Endpoints: map[string]tradovate.EndpointLimit{}})
	}
	node := budget()
	budgets := []*tradovate.AddressBudget{node}
	var sessions []*tradovate.Session
	for i := range 3 {
		b := node
		if !shared && i > 0 {
			b = budget()
			budgets = append(budgets, b)
		}
		s, err := tradovate.NewSession(tradovate.SessionOptions{Env: tradovate.EnvDemo, Endpoints: fake.Endpoints(),
			Credentials: &tradovate.Credentials{Name: tradovatefake.DefaultName, Password: tradovatefake.DefaultPassword,
				AppID: tradovatefake.DefaultAppID, CID: tradovatefake.DefaultCID, Sec: tradovatefake.DefaultSec},
			Now: c.Now, After: c.After, Rate: 1000, Burst: 1000, Budget: b})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		_, err = s.Token(t.Context())
		require.NoError(t, err)
		sessions = append(sessions, s)
	}
	const each = 4
	var done atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, len(sessions)*each)
	for _, s := range sessions {
		for range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer done.Add(1)
				errs <- s.Do(context.Background(), http.MethodGet, "/account/list", "", nil, nil)
			}()
		}
	}
	total := int32(len(sessions) * each)
	granted := func() int {
		n := 0
		for _, b := range budgets {
			n += b.Stats().Reads
		}
		return n - len(sessions) // the logins
	}
	for done.Load() < total {
		// Every request the budgets let through reaches the fake before
		// the clock moves on, and someone waits on the clock.
		require.Eventually(t, func() bool {
			return done.Load() == total || (fake.Requests("/account/list") == granted() && c.Waiters() > 0)
		}, testkit.Medium, time.Millisecond)
		if done.Load() == total {
			break
		}
		c.Advance(time.Second)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	return fake.Tickets("/account/list")
}
