package scale_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"tradebridge/internal/testkit"
	"tradebridge/relay"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/events"
	"tradebridge/relay/store"
	"tradebridge/relay/store/storetest"
)

func TestMain(m *testing.M) {
	if os.Getenv(fleetEnv) != "" {
		os.Exit(fleetMain())
	}
	if os.Getenv("TB_SCALE_PROFILES") != "" {
		runtime.MemProfileRate = 1024 // the heap profile's small objects too
	}
	goleak.VerifyTestMain(m)
}

// Defaults of the benchmarks' fleet: 10,000 agents over 100 source
// addresses, 100 each, under the relay's cap of 128 connections per
// address and its per-address budget's burst of 300 connects.
const (
	defaultAgents = 10_000
	agentsPerAddr = 100
)

// fleetSize is $TB_SCALE_AGENTS, or defaultAgents.
func fleetSize(tb testing.TB) int {
	s := os.Getenv("TB_SCALE_AGENTS")
	if s == "" {
		return defaultAgents
	}
	n, err := strconv.Atoi(s)
	require.NoError(tb, err, "TB_SCALE_AGENTS")
	require.Positive(tb, n, "TB_SCALE_AGENTS")
	return n
}

// node is one relay on a loopback address, with the relay's defaults but
// a silent logger, counting its tunnels.
type node struct {
	tb     testing.TB
	relay  *relay.Relay
	addr   string
	cancel context.CancelFunc
	done   chan error

	started atomic.Int64 // sessions started (Welcome written)
	ended   atomic.Int64
	refused atomic.Int64 // handshakes refused after the upgrade
	// onStart, when set, learns each session's start time.
	onStart func(time.Time)
}

// startNode serves a relay on st at addr ("127.0.0.1:0" for any port).
func startNode(tb testing.TB, st store.Store, addr string, onStart func(time.Time)) *node {
	tb.Helper()
	return startNodeWith(tb, st, addr, onStart, nil)
}

// startNodeWith is startNode with a relay whose options tweak may change.
func startNodeWith(tb testing.TB, st store.Store, addr string, onStart func(time.Time), tweak func(*relay.Options)) *node {
	tb.Helper()
	var ln net.Listener
	require.Eventually(tb, func() bool {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err == nil
	}, testkit.Long, testkit.Tick, "listening on %s", addr)
	n := &node{tb: tb, addr: ln.Addr().String(), done: make(chan error, 1), onStart: onStart}
	opts := relay.Options{Store: st, Logger: relayLogger()}
	if tweak != nil {
		tweak(&opts)
	}
	r, err := relay.New(opts)
	require.NoError(tb, err)
	require.NoError(tb, r.Events().Subscribe(events.Subscription{Name: "scale", Types: []events.Type{events.TypeSession},
		Handle: func(e events.Event) { n.session(e.Session) }}))
	n.relay = r
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	go func() { n.done <- r.Serve(ctx, ln) }()
	tb.Cleanup(func() { _ = n.stop() })
	return n
}

// relayLogger is silent, as a production relay is per tunnel, unless
// $TB_SCALE_DEBUG is set: then warnings and errors go to stderr.
func relayLogger() *zap.Logger {
	if os.Getenv("TB_SCALE_DEBUG") == "" {
		return zap.NewNop()
	}
	cfg := zap.NewProductionConfig()
	cfg.Level = zap.NewAtomicLevelAt(zap.WarnLevel)
	cfg.Sampling = nil
	log, err := cfg.Build()
	if err != nil {
		return zap.NewNop()
	}
	return log
}

func (n *node) session(ev agentcall.SessionEvent) {
	switch ev.Kind {
	case agentcall.SessionStarted:
		n.started.Add(1)
		if n.onStart != nil {
			n.onStart(ev.At)
		}
	case agentcall.SessionEnded:
		n.ended.Add(1)
	case agentcall.SessionRefused:
		n.refused.Add(1)
	}
}

// stop shuts the relay down gracefully and returns how long it took.
func (n *node) stop() time.Duration {
	if n.cancel == nil {
		return 0
	}
	start := time.Now()
	n.cancel()
	n.cancel = nil
	require.NoError(n.tb, <-n.done)
	return time.Since(start)
}

// live is the number of tunnels up.
func (n *node) live() int64 { return n.started.Load() - n.ended.Load() }

// waitLive waits until want tunnels are up, and returns false if they are
// not within timeout.
func (n *node) waitLive(want int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for n.live() < int64(want) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// openStore opens a fresh SQLite store with n users and returns their
// agent tokens and how long creating them took.
func openStore(tb testing.TB, n int) (store.Store, []string, time.Duration) {
	tb.Helper()
	st, err := store.Open(context.Background(), store.Options{Dir: tb.TempDir()})
	require.NoError(tb, err)
	tb.Cleanup(func() { st.Close() })
	tokens, took := createUsers(tb, st, n)
	return st, tokens, took
}

// createUsers creates n users in st and returns their agent tokens and
// how long creating them took.
func createUsers(tb testing.TB, st store.Store, n int) ([]string, time.Duration) {
	tb.Helper()
	tokens := make([]string, n)
	start := time.Now()
	for i := range tokens {
		creds, err := auth.CreateUser(context.Background(), st, fmt.Sprintf("scale-%05d", i), auth.PlanPro, start)
		require.NoError(tb, err)
		tokens[i] = creds.AgentToken
	}
	return tokens, time.Since(start)
}

// relayMemory is the relay process's heap in use and goroutine stacks,
// after full collections (a stack shrinks by half at most per collection).
func relayMemory() (heap, stacks uint64, goroutines int) {
	for range 8 {
		runtime.GC()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse, ms.StackInuse, runtime.NumGoroutine()
}

// settle waits until the relay's goroutines stop changing in number (the
// work each connect starts in the background is done), at most timeout.
func settle(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	last := runtime.NumGoroutine()
	for time.Now().Before(deadline) {
		time.Sleep(time.Second)
		n := runtime.NumGoroutine()
		if n == last {
			return
		}
		last = n
	}
}

// once keeps a benchmark's figures, so that a second invocation of the
// benchmark function (b.N > 1, as -benchtime=Nx asks) reports them again
// instead of connecting the whole fleet once more.
type once struct {
	mu      sync.Mutex
	metrics map[string]float64
}

func (o *once) run(b *testing.B, measure func(report func(value float64, unit string))) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.metrics == nil {
		o.metrics = map[string]float64{}
		measure(func(v float64, unit string) {
			o.metrics[unit] = v
			if os.Getenv("TB_SCALE_DEBUG") != "" {
				fmt.Fprintln(os.Stderr, "metric", unit, v)
			}
		})
	}
	units := make([]string, 0, len(o.metrics))
	for u := range o.metrics {
		units = append(units, u)
	}
	slices.Sort(units)
	for _, u := range units {
		b.ReportMetric(o.metrics[u], u)
	}
	b.ReportMetric(0, "ns/op")
}

var idleOnce, restartOnce, clusteredOnce once

// connectFleet starts a relay with n users and a fleet of their agents,
// and waits until every agent is welcomed. It reports the time creating
// the users took and the time the agents took to connect.
func connectFleet(tb testing.TB, n, perAddr int, startEvery time.Duration, report func(float64, string), beforeAgents func()) (store.Store, *node, *fleet) {
	st, tokens, took := openStore(tb, n)
	report(took.Seconds(), "s-create-users")
	nd := startNode(tb, st, "127.0.0.1:0", nil)
	if beforeAgents != nil {
		beforeAgents()
	}
	start := time.Now()
	fl := startFleet(tb, "http://"+nd.addr, tokens, (n+perAddr-1)/perAddr, startEvery)
	require.True(tb, nd.waitLive(n, 3*time.Minute), "%d of %d agents connected", nd.live(), n)
	report(time.Since(start).Seconds(), "s-connect")
	return st, nd, fl
}

// BenchmarkIdleAgents connects a fleet of idle agents (10,000 by default)
// to one relay and reports the relay's memory per agent: heap in use and
// goroutine stacks, after a full collection, once every agent is welcomed
// and has measured its first round trip, minus the same before the first
// agent connected. Target: ≤ 40 KiB per agent.
func BenchmarkIdleAgents(b *testing.B) {
	idleOnce.run(b, func(report func(float64, string)) {
		n := fleetSize(b)
		var heap0, stack0 uint64
		var go0 int
		// The agents connect at 500 a second: the figure is the steady
		// state's, not a connect storm's (BenchmarkRestart has that).
		_, nd, fl := connectFleet(b, n, agentsPerAddr, 2*time.Millisecond, report, func() { heap0, stack0, go0 = relayMemory() })
		// Let every agent's first ping and the work each connect starts
		// in the background (history, the Management API's push) settle.
		settle(time.Minute)
		heap1, stack1, go1 := relayMemory()
		writeProfiles(b)
		cpuProfile(b, 10*time.Second)
		require.EqualValues(b, n, nd.live(), "an agent dropped while idle")
		st := fl.stats()
		require.Equal(b, n, st.Connected)
		perAgent := func(before, after uint64) float64 { return (float64(after) - float64(before)) / float64(n) / 1024 }
		report(perAgent(heap0+stack0, heap1+stack1), "KiB/agent")
		report(perAgent(heap0, heap1), "heap-KiB/agent")
		report(perAgent(stack0, stack1), "stack-KiB/agent")
		report(float64(go1-go0)/float64(n), "goroutines/agent")
		reportRefused(report, st, fleetStats{})
	})
}

// BenchmarkIdleAgentsClustered is BenchmarkIdleAgents on one node of many
// relay nodes: its store in PostgreSQL, its budgets in Redis, its agents
// reached over NATS (each held user's subject subscribed). The memory per
// agent should be BenchmarkIdleAgents' plus the bus's small share. It
// needs TB_TEST_POSTGRES, TB_TEST_REDIS and TB_TEST_NATS, and skips
// without them.
func BenchmarkIdleAgentsClustered(b *testing.B) {
	for _, v := range []string{"TB_TEST_POSTGRES", "TB_TEST_REDIS", "TB_TEST_NATS"} {
		if os.Getenv(v) == "" {
			b.Skipf("a clustered node needs %s set", v)
		}
	}
	clusteredOnce.run(b, func(report func(float64, string)) {
		n := fleetSize(b)
		st, err := store.Dial(context.Background(), store.DialOptions{URL: storetest.PostgresURL(b)})
		require.NoError(b, err)
		b.Cleanup(func() { st.Close() })
		tokens, took := createUsers(b, st, n)
		report(took.Seconds(), "s-create-users")
		prefix := fmt.Sprintf("scale%d", time.Now().UnixNano())
		redis, err := budget.NewRedis(budget.RedisOptions{URL: os.Getenv("TB_TEST_REDIS"), Prefix: prefix + ":"})
		require.NoError(b, err)
		b.Cleanup(func() { redis.Close() })
		nd := startNodeWith(b, st, "127.0.0.1:0", nil, func(o *relay.Options) {
			o.Node, o.Bus, o.BusPrefix, o.Budgets = "a", os.Getenv("TB_TEST_NATS"), prefix, redis
		})
		heap0, stack0, go0 := relayMemory()
		start := time.Now()
		fl := startFleet(b, "http://"+nd.addr, tokens, (n+agentsPerAddr-1)/agentsPerAddr, 2*time.Millisecond)
		require.True(b, nd.waitLive(n, 3*time.Minute), "%d of %d agents connected", nd.live(), n)
		report(time.Since(start).Seconds(), "s-connect")
		settle(time.Minute)
		heap1, stack1, go1 := relayMemory()
		require.EqualValues(b, n, nd.live(), "an agent dropped while idle")
		perAgent := func(before, after uint64) float64 { return (float64(after) - float64(before)) / float64(n) / 1024 }
		report(perAgent(heap0+stack0, heap1+stack1), "KiB/agent")
		report(perAgent(heap0, heap1), "heap-KiB/agent")
		report(perAgent(stack0, stack1), "stack-KiB/agent")
		report(float64(go1-go0)/float64(n), "goroutines/agent")
		reportRefused(report, fl.stats(), fleetStats{})
	})
}

// BenchmarkRestart connects a fleet of agents (10,000 by default), shuts
// the relay down gracefully and starts a new one on the same address and
// store, and reports how long after the shutdown began 99 % and 100 % of
// the agents were welcomed again, how long the shutdown took, and the
// connects the relay refused (429, 503) meanwhile. Target: every agent
// back within 60 s.
func BenchmarkRestart(b *testing.B) {
	restartOnce.run(b, func(report func(float64, string)) {
		n := fleetSize(b)
		st, old, fl := connectFleet(b, n, agentsPerAddr, 2*time.Millisecond, report, nil)
		restart(b, st, old, fl, n, report)
	})
}

// A relay's graceful restart brings every agent of a small fleet back,
// without refusing any: BenchmarkRestart's path, on a fleet small enough
// for make test.
func TestRestartBringsEveryAgentBack(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a fleet of agents in a process of its own")
	}
	const n = 200
	figures := map[string]float64{}
	report := func(v float64, unit string) { figures[unit] = v }
	// 50 agents per address: four addresses, as the benchmark spreads its
	// agents.
	st, old, fl := connectFleet(t, n, 50, time.Millisecond, report, nil)
	restart(t, st, old, fl, n, report)
	require.Zero(t, figures["refused"], "connects refused: %v", figures)
	require.Zero(t, figures["handshakes-refused"])
}

// restart shuts old down gracefully, starts a relay on its address and
// store, and waits until the fleet's n agents are back. It reports the
// shutdown's time, the times to 99 % and 100 % of the agents back (from
// the shutdown's start), and what the relay refused meanwhile.
// $TB_SCALE_PROFILES gets the CPU profiles of the shutdown and of the
// reconnection; $TB_SCALE_DEBUG prints the agents back per second.
func restart(tb testing.TB, st store.Store, old *node, fl *fleet, n int, report func(float64, string)) {
	before := fl.stats()
	var mu sync.Mutex
	var starts []time.Time
	begin := time.Now()
	stopProfile := startCPUProfile(tb, "shutdown-cpu.pprof")
	report(old.stop().Seconds(), "s-shutdown")
	stopProfile()
	nd := startNode(tb, st, old.addr, func(at time.Time) {
		mu.Lock()
		starts = append(starts, at)
		mu.Unlock()
	})
	stopProfile = startCPUProfile(tb, "reconnect-cpu.pprof")
	ok := nd.waitLive(n, 3*time.Minute)
	stopProfile()
	after := fl.stats()
	reportRefused(report, after, before)
	report(float64(after.DialFails-before.DialFails), "dial-fails")
	report(float64(nd.refused.Load()), "handshakes-refused")
	require.True(tb, ok, "%d of %d agents back after %s; fleet: %+v", nd.live(), n, time.Since(begin), after)

	mu.Lock()
	defer mu.Unlock()
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	p99 := starts[(n*99+99)/100-1].Sub(begin)
	p100 := starts[n-1].Sub(begin)
	report(p99.Seconds(), "s-99%-back")
	report(p100.Seconds(), "s-100%-back")
	if os.Getenv("TB_SCALE_DEBUG") != "" {
		perSecond := map[int]int{}
		for _, at := range starts {
			perSecond[int(at.Sub(begin).Seconds())]++
		}
		for sec := range int(p100.Seconds()) + 1 {
			fmt.Fprintf(os.Stderr, "back in second %d: %d\n", sec, perSecond[sec])
		}
	}
}

// startCPUProfile profiles the process's CPU into $TB_SCALE_PROFILES/name
// when it is set, until the function it returns is called.
func startCPUProfile(tb testing.TB, name string) (stop func()) {
	dir := os.Getenv("TB_SCALE_PROFILES")
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, name))
	require.NoError(tb, err)
	require.NoError(tb, pprof.StartCPUProfile(f))
	return func() {
		pprof.StopCPUProfile()
		require.NoError(tb, f.Close())
	}
}

// writeProfiles writes the relay's heap and goroutine profiles to
// $TB_SCALE_PROFILES/{heap,goroutine}.pprof when it is set, for go tool
// pprof.
func writeProfiles(tb testing.TB) {
	dir := os.Getenv("TB_SCALE_PROFILES")
	if dir == "" {
		return
	}
	for _, name := range []string{"heap", "goroutine"} {
		f, err := os.Create(filepath.Join(dir, name+".pprof"))
		require.NoError(tb, err)
		require.NoError(tb, pprof.Lookup(name).WriteTo(f, 0))
		require.NoError(tb, f.Close())
	}
}

// cpuProfile writes the relay's CPU profile over d to
// $TB_SCALE_PROFILES/cpu.pprof when it is set.
func cpuProfile(tb testing.TB, d time.Duration) {
	if os.Getenv("TB_SCALE_PROFILES") == "" {
		return
	}
	stop := startCPUProfile(tb, "cpu.pprof")
	time.Sleep(d)
	stop()
}

// reportRefused reports the connects the relay refused between two
// fleet counts, by HTTP status ("refused-429"), and in all ("refused").
func reportRefused(report func(float64, string), now, before fleetStats) {
	var all int64
	for code, n := range now.Refused {
		n -= before.Refused[code]
		all += n
		report(float64(n), fmt.Sprintf("refused-%d", code))
	}
	report(float64(all), "refused")
}
