package relay_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"tradebridge/agent"
	"tradebridge/internal/systemtest"
	"tradebridge/internal/testkit"
	"tradebridge/relay"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/budget/budgettest"
	"tradebridge/relay/store"
	"tradebridge/relay/store/storetest"
)

// Environment variables naming the services the multi-node tests use;
// unset, the tests skip.
const (
	envPostgres = storetest.EnvPostgres
	envRedis    = budgettest.EnvRedis
	envNATS     = "TB_TEST_NATS"
)

// requireServices skips t unless every named service is configured.
func requireServices(t testing.TB, names ...string) {
	t.Helper()
	var missing []string
	for _, n := range names {
		if os.Getenv(n) == "" {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		t.Skipf("multi-node test: set %s (see README, \"Many relay nodes\") to run it", strings.Join(missing, ", "))
	}
}

// nodes is a cluster of relay nodes sharing one PostgreSQL store, one
// Redis for budgets and one NATS bus, as relay serve --store, --budgets
// and --bus run them. Agents reach the nodes through a balancer
// (failover) that sends each new connection to the first live node.
type nodes struct {
	t       testing.TB
	pgURL   string
	prefix  string // the test's own Redis keys and NATS subjects
	trading budget.Policy
	setup   store.Store
	users   map[string]auth.Credentials
	log     *zap.Logger
	byName  map[string]*system
	lb      *failover
}

// newNodes starts the named nodes, whose trading budget is trading.
func newNodes(t testing.TB, trading budget.Policy, names ...string) *nodes {
	t.Helper()
	requireServices(t, envPostgres, envRedis, envNATS)
	pgURL := storetest.PostgresURL(t)
	setup, err := store.Dial(context.Background(), store.DialOptions{URL: pgURL})
	require.NoError(t, err)
	t.Cleanup(func() { setup.Close() })
	c := &nodes{t: t, pgURL: pgURL, prefix: fmt.Sprintf("t%d", rand.Uint64()), setup: setup, trading: trading,
		users: map[string]auth.Credentials{}, log: zap.NewNop(), byName: map[string]*system{}}
	for name, plan := range map[string]auth.Plan{"alice": auth.PlanPro, "bob": auth.PlanElite, "dave": auth.PlanPro} {
		creds, err := auth.CreateUser(context.Background(), setup, name, plan, time.Now())
		require.NoError(t, err)
		c.users[name] = creds
	}
	for _, n := range names {
		c.start(n)
	}
	var addrs []string
	for _, n := range names {
		addrs = append(addrs, c.byName[n].Addr)
	}
	c.lb = newFailover(addrs)
	return c
}

// start runs node name on a port of its own, with its own connections to
// the shared services.
func (c *nodes) start(name string) *system {
	t := c.t
	st, err := store.Dial(context.Background(), store.DialOptions{URL: c.pgURL})
	require.NoError(t, err)
	redis, err := budget.NewRedis(budget.RedisOptions{URL: os.Getenv(envRedis), Prefix: c.prefix + ":"})
	require.NoError(t, err)
	t.Cleanup(func() {
		redis.Close()
		st.Close()
	})
	s := &system{&systemtest.System{T: t, Store: st, Log: c.log, Users: c.users, Budget: c.trading,
		Client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}},
		Tweak: func(o *relay.Options) {
			o.Node = name
			o.Bus = os.Getenv(envNATS)
			o.BusPrefix = c.prefix
			o.Budgets = redis
		}}}
	s.Start() // stopped at the cleanup, before the store and Redis close
	c.byName[name] = s
	return s
}

// agentFor starts an agent of user that reaches the nodes through the
// balancer, reconnecting fast.
func (c *nodes) agentFor(user string) *runningAgent {
	c.t.Helper()
	var first *system
	for _, s := range c.byName {
		if s.Addr == c.lb.live() {
			first = s
		}
	}
	return first.StartAgentWith(user, func(o *agent.Options) {
		o.RelayURL = "http://relay.invalid"
		o.Tunnel.HTTPClient = &http.Client{Transport: &http.Transport{DialContext: c.lb.DialContext}}
		o.Tunnel.BackoffBase = 2 * time.Millisecond
		o.Tunnel.BackoffCap = 50 * time.Millisecond
	})
}

// failover is the balancer in front of the nodes: each new connection
// goes to the first node not marked dead. Its killableDialer keeps the
// connections so a test can cut them.
type failover struct {
	killableDialer
	mu      sync.Mutex
	targets []string
	dead    []bool
}

func newFailover(targets []string) *failover {
	f := &failover{targets: targets, dead: make([]bool, len(targets))}
	f.target = func() (string, error) {
		if a := f.live(); a != "" {
			return a, nil
		}
		return "", errors.New("no live node")
	}
	return f
}

func (f *failover) live() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, a := range f.targets {
		if !f.dead[i] {
			return a
		}
	}
	return ""
}

// markDead sends no new connection to the node at addr.
func (f *failover) markDead(addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, a := range f.targets {
		if a == addr {
			f.dead[i] = true
		}
	}
}

// Three relay nodes share one store, one budget and one bus; one agent is
// connected to node A. Calls through B and C reach it; a management write on C is read on A and
// reaches the agent; keyed orders sent through B while the tunnel is cut
// are placed exactly once; and when node A dies the agent reconnects to B
// and calls resume.
func TestThreeNodes(t *testing.T) {
	t.Parallel()
	c := newNodes(t, roomy, "a", "b", "c")
	a, b, cn := c.byName["a"], c.byName["b"], c.byName["c"]
	ra := c.agentFor("bob")
	tok := c.users["bob"].APIToken

	t.Run("calls through every node", func(t *testing.T) {
		for _, s := range []*system{a, b, cn} {
			r := s.Do("GET", "/v1/api/accounts", tok, "")
			require.Equal(t, http.StatusOK, r.Status, "%s: %s", s.Addr, r.Raw)
			require.Contains(t, string(r.Data), "Sim101")
		}
		r := b.Do("POST", "/v1/api/accounts/Sim101/orders/place", tok, marketBuy)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		require.True(t, c.byName["c"].holdsEventually(tok, "Sim101", 2))
	})

	t.Run("no agent is 408 at once on every node", func(t *testing.T) {
		dave := c.users["dave"].APIToken
		for _, s := range []*system{a, b, cn} {
			start := time.Now()
			r := s.Do("GET", "/v1/api/accounts", dave, "")
			require.Equal(t, http.StatusRequestTimeout, r.Status, string(r.Raw))
			require.Equal(t, "addon_disconnected", r.Error)
			require.Less(t, time.Since(start), 2*time.Second, "no responders is an answer, not a timeout")
		}
	})

	t.Run("a management write on C is read on A and reaches the agent", func(t *testing.T) {
		r := cn.manage(http.MethodPut, "controls/kill-switch", tok, `{"enabled":true}`)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		r = a.manage(http.MethodGet, "controls", tok, "")
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		require.Contains(t, string(r.Data), `"killSwitch":true`)
		r = b.placeMarket(tok, "Sim102", "Buy", 1)
		require.Equal(t, http.StatusBadRequest, r.Status, string(r.Raw))
		require.Equal(t, "trading_blocked", r.Error)
		r = b.manage(http.MethodPut, "controls/kill-switch", tok, `{"enabled":false}`)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	})

	t.Run("tunnel cuts during keyed writes through B", func(t *testing.T) {
		ctx := context.Background()
		before, err := ra.Sim.Orders(ctx, "Sim102")
		require.NoError(t, err)
		const body = `{"action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day"}`
		rng := rand.New(rand.NewPCG(17, 17))
		const writes = 60
		uncertain := 0
		for i := range writes {
			key := fmt.Sprintf("cut-%d", i)
			require.Eventually(t, func() bool { return ra.Agent.Connected() && b.reaches(tok) }, testkit.Long, time.Millisecond)
			done := make(chan response, 1)
			go func() {
				done <- b.DoAsync("POST", "/v1/api/accounts/Sim102/orders/place", tok, body, "Idempotency-Key", key)
			}()
			time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
			c.lb.kill()
			r := <-done
			for r.Status == http.StatusServiceUnavailable || r.Status == http.StatusRequestTimeout {
				uncertain++
				require.Contains(t, []string{"outcome_unknown", "addon_disconnected"}, r.Error)
				require.Eventually(t, ra.Agent.Connected, testkit.Long, time.Millisecond)
				r = b.Do("POST", "/v1/api/accounts/Sim102/orders/place", tok, body, "Idempotency-Key", key)
			}
			require.Equal(t, http.StatusOK, r.Status, "%s: %s", key, r.Raw)
		}
		after, err := ra.Sim.Orders(ctx, "Sim102")
		require.NoError(t, err)
		require.Len(t, after, len(before)+writes, "one order per key: never a duplicate, never a lost one")
		t.Logf("%d writes through B, %d answered outcome_unknown or addon_disconnected and were retried", writes, uncertain)
	})

	t.Run("node A dies: the agent moves to B and calls resume", func(t *testing.T) {
		c.lb.markDead(a.Addr)
		a.Stop()
		c.lb.kill()
		require.Eventually(t, func() bool {
			r, err := cn.Request("GET", "/v1/api/accounts", tok, "")
			return err == nil && r.Status == http.StatusOK
		}, testkit.Long, 20*time.Millisecond)
		r := cn.Do("GET", "/v1/api/accounts/Sim101/positions", tok, "")
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	})
}

// The trading budget is one across the nodes: a burst of 20 in all, not
// 20 per node.
func TestThreeNodesShareOneBudget(t *testing.T) {
	t.Parallel()
	c := newNodes(t, budget.Trading, "a", "b", "c")
	a, b, cn := c.byName["a"], c.byName["b"], c.byName["c"]
	// alice has no agent: every admitted call answers 408, every
	// refused one 429. Burst 20 in all, not 20 per node.
	alice := c.users["alice"].APIToken
	admitted, refused := 0, 0
	for i := range 45 {
		s := []*system{a, b, cn}[i%3]
		r := s.Do("GET", "/v1/api/accounts", alice, "")
		switch r.Status {
		case http.StatusRequestTimeout:
			admitted++
		case http.StatusTooManyRequests:
			refused++
			require.Equal(t, "rate_limited", r.Error)
		default:
			t.Fatalf("status %d: %s", r.Status, r.Raw)
		}
	}
	// The budget refills 3 a second while the loop runs.
	require.GreaterOrEqual(t, admitted, budget.Trading.Burst)
	require.LessOrEqual(t, admitted, budget.Trading.Burst+3, "the burst is shared, not one per node")
	require.Equal(t, 45, admitted+refused)
}

// reaches reports whether a read through s reaches user's agent.
func (s *system) reaches(tok string) bool {
	r, err := s.Request("GET", "/v1/api/accounts", tok, "")
	return err == nil && r.Status == http.StatusOK
}

// holdsEventually waits until account holds qty.
func (s *system) holdsEventually(tok, account string, qty int) bool {
	deadline := time.Now().Add(testkit.Medium)
	for time.Now().Before(deadline) {
		if s.holds(tok, account, qty) {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// BenchmarkCallThroughNodes is a read (GET positions) through the node
// holding the agent and through another node, which forwards it over the
// bus, one after the other, and reports each median and p99 and the ratio
// of the medians, measured in one run.
func BenchmarkCallThroughNodes(b *testing.B) {
	c := newNodes(b, roomy, "a", "b")
	c.agentFor("alice")
	tok := c.users["alice"].APIToken
	const path = "/v1/api/accounts/Sim101/positions"
	holding, forwarding := c.byName["a"], c.byName["b"]
	for _, s := range []*system{holding, forwarding} {
		require.Equal(b, http.StatusOK, s.Do("GET", path, tok, "").Status)
	}
	timed := func(s *system) time.Duration {
		start := time.Now()
		r, err := s.Request("GET", path, tok, "")
		if err != nil || r.Status != http.StatusOK {
			b.Fatalf("GET through %s: %v %d", s.Addr, err, r.Status)
		}
		return time.Since(start)
	}
	held := make([]time.Duration, 0, b.N)
	forwarded := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		held = append(held, timed(holding))
		forwarded = append(forwarded, timed(forwarding))
	}
	b.StopTimer()
	reportLatency(b, "holding", held)
	reportLatency(b, "forwarded", forwarded)
	b.ReportMetric(float64(pct(forwarded, 50))/float64(pct(held, 50)), "p50-ratio")
}
