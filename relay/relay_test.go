package relay_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"tradebridge/agent"
	"tradebridge/relay"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/profile"
	"tradebridge/relay/store"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/ninjatrader"
	"tradebridge/trading/bridge/ninjatrader/ntfake"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/ops"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// system is a real relay on a loopback port with real agents on simulators,
// as the two binaries run them.
type system struct {
	t      testing.TB
	st     store.Store
	logs   *observer.ObservedLogs
	log    *zap.Logger
	addr   string
	base   string
	stop   func()
	users  map[string]auth.Credentials
	client *http.Client
	// budget is the trading budget of the relay; tests that do not test
	// budgets use a roomy one.
	budget budget.Policy
	// tweak, when set, changes the relay's options before each start.
	tweak func(*relay.Options)
}

func newSystem(t testing.TB) *system {
	t.Helper()
	return newSystemWith(t, nil)
}

// newSystemWith is newSystem with a relay whose options tweak may change
// (before every start, restarts included).
func newSystemWith(t testing.TB, tweak func(*relay.Options)) *system {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core)
	if _, ok := t.(*testing.B); ok {
		// Benchmarks keep the production level: nothing per call.
		log = zap.New(zapcore.NewNopCore())
	}
	st, err := store.Open(context.Background(), store.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	s := &system{t: t, st: st, logs: logs, log: log, users: map[string]auth.Credentials{},
		budget: roomy, tweak: tweak,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}}
	for name, plan := range map[string]auth.Plan{"alice": auth.PlanPro, "bob": auth.PlanElite, "carol": auth.PlanFree} {
		creds, err := auth.CreateUser(context.Background(), st, name, plan, time.Now())
		require.NoError(t, err)
		s.users[name] = creds
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.addr = ln.Addr().String()
	s.base = "http://" + s.addr
	s.serve(ln)
	t.Cleanup(func() {
		s.stop()
		s.client.CloseIdleConnections()
		st.Close()
	})
	return s
}

// compatibleToken issues user another API token, of the compatible
// response profile.
func (s *system) compatibleToken(user string) string {
	s.t.Helper()
	tok, err := auth.IssueToken(context.Background(), s.st, s.users[user].UserID, auth.KindAPI, profile.Compatible, time.Now())
	require.NoError(s.t, err)
	return tok
}

// serve runs a relay on ln until s.stop.
func (s *system) serve(ln net.Listener) {
	opts := relay.Options{Store: s.st, Logger: s.log, AuthCacheTTL: 50 * time.Millisecond,
		TradingBudget: s.budget, IPBudget: roomy}
	if s.tweak != nil {
		s.tweak(&opts)
	}
	r, err := relay.New(opts)
	require.NoError(s.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, ln) }()
	var once sync.Once
	s.stop = func() {
		once.Do(func() {
			cancel()
			require.NoError(s.t, <-done)
		})
	}
}

// restart stops the relay and starts a new one on the same address.
func (s *system) restart() {
	s.stop()
	var ln net.Listener
	require.Eventually(s.t, func() bool {
		var err error
		ln, err = net.Listen("tcp", s.addr)
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)
	s.serve(ln)
}

// roomy is a budget tests that do not test budgets never exhaust.
var roomy = budget.Policy{Name: "roomy", Rate: 1 << 20, Period: time.Minute, Burst: 1 << 20}

// simStart is when the simulators of these tests stand: Wednesday
// 18 November 2026, 10:00 in New York.
var simStart = time.Date(2026, 11, 18, 15, 0, 0, 0, time.UTC)

type runningAgent struct {
	a     *agent.Agent
	sim   *sim.Platform
	clock *sim.ManualClock // the simulator's, which the agent's engines and operations read too
	// pair, when the agent trades through the NinjaTrader bridge, is the
	// bridge and the fake add-on in front of sim.
	pair *ntfake.Pair
	// platform is the agent's platform: sim, or the bridge of pair.
	platform bridge.Platform
	done     chan struct{}
}

// platformUnderTest names the platform the harness's agents trade on:
// "sim" (the default), or "ninjatrader", where the agent drives the
// NinjaTrader bridge and the bridge a fake add-on that trades on the
// simulator (TRADEBRIDGE_TEST_PLATFORM=ninjatrader; make test runs the
// trading API's tests once so).
var platformUnderTest = cmp.Or(os.Getenv("TRADEBRIDGE_TEST_PLATFORM"), "sim")

func (s *system) startAgent(user string) *runningAgent {
	s.t.Helper()
	return s.startAgentWith(user, nil)
}

// startAgentWith starts an agent whose options tweak may change, on the
// platform under test.
func (s *system) startAgentWith(user string, tweak func(*agent.Options)) *runningAgent {
	s.t.Helper()
	return s.startAgentOn(user, platformUnderTest, tweak)
}

// startAgentOn starts an agent on a platform kind: "sim", or
// "ninjatrader" (the bridge in front of a fake add-on over the simulator).
func (s *system) startAgentOn(user, kind string, tweak func(*agent.Options)) *runningAgent {
	s.t.Helper()
	// A clock standing on a Wednesday morning in New York: the market is
	// open whenever the tests run, and prices stay put.
	clock := sim.NewManualClock(simStart)
	p, err := sim.New(sim.Options{Seed: 1, Clock: clock})
	require.NoError(s.t, err)
	opts := agent.Options{RelayURL: s.base, Token: s.users[user].AgentToken, Platform: p, Logger: s.log.Named(user),
		Ops: ops.Options{Now: clock.Now}}
	ra := &runningAgent{sim: p, clock: clock, done: make(chan struct{})}
	switch kind {
	case "sim":
	case ninjatrader.Kind:
		ra.pair = ntfake.NewPair(s.t, p, clock.Now)
		opts.Platform = ra.pair.Bridge // the agent runs its connection loop
	default:
		s.t.Fatalf("TRADEBRIDGE_TEST_PLATFORM names no platform the tests know")
	}
	if tweak != nil {
		tweak(&opts)
	}
	a, err := agent.New(opts)
	require.NoError(s.t, err)
	ra.a, ra.platform = a, opts.Platform
	if _, runs := opts.Platform.(agent.Runner); ra.pair != nil && !runs {
		ra.pair.Run(s.t) // wrapped by the test: the agent cannot run its loop
	}
	go func() {
		defer close(ra.done)
		_ = a.Run(context.Background())
	}()
	s.t.Cleanup(ra.stop)
	require.Eventually(s.t, a.Connected, 5*time.Second, 5*time.Millisecond)
	if nt, ok := opts.Platform.(*ninjatrader.Platform); ok {
		require.Eventually(s.t, func() bool { return nt.Status().Connected }, 5*time.Second, time.Millisecond)
	}
	return ra
}

func (ra *runningAgent) stop() {
	ra.a.Close()
	<-ra.done
	ra.sim.Close()
}

type response struct {
	Status  int             `json:"-"`
	Header  http.Header     `json:"-"`
	Success bool            `json:"success"`
	Data    json.RawMessage `json:"data"`
	Error   string          `json:"error"`
	Detail  string          `json:"detail"`
	OrderID string          `json:"orderId"`
	raw     []byte
}

func (s *system) do(method, path, token, body string, header ...string) response {
	s.t.Helper()
	r, err := s.request(method, path, token, body, header...)
	require.NoError(s.t, err)
	return r
}

// doAsync is do for other goroutines: a failure is a response with status
// -1 and the error as its raw body.
func (s *system) doAsync(method, path, token, body string, header ...string) response {
	r, err := s.request(method, path, token, body, header...)
	if err != nil {
		return response{Status: -1, raw: []byte(err.Error())}
	}
	return r
}

// newRequest builds a request to the relay with token, a JSON body and
// more headers as name, value pairs.
func (s *system) newRequest(method, path, token, body string, header ...string) (*http.Request, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return req, nil
}

func (s *system) request(method, path, token, body string, header ...string) (response, error) {
	req, err := s.newRequest(method, path, token, body, header...)
	if err != nil {
		return response{}, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, err
	}
	r := response{Status: resp.StatusCode, Header: resp.Header, raw: raw}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &r); err != nil {
			return response{}, fmt.Errorf("decoding %q: %w", raw, err)
		}
	}
	return r, nil
}

const marketBuy = `{"action":"BUY","instrument":"ES","orderType":"Market","quantity":2,"timeInForce":"Day"}`

func TestTradingRoundTrip(t *testing.T) {
	s := newSystem(t)
	s.startAgent("alice")
	tok := s.users["alice"].APIToken

	r := s.do("GET", "/v1/api/accounts", tok, "")
	require.Equal(t, http.StatusOK, r.Status, string(r.raw))
	require.True(t, r.Success)
	var listed struct {
		Accounts []struct {
			Name string `json:"name"`
			Item struct {
				CashValue float64 `json:"cashValue"`
			} `json:"item"`
		} `json:"accounts"`
	}
	require.NoError(t, json.Unmarshal(r.Data, &listed))
	accounts := listed.Accounts
	require.Len(t, accounts, 2)
	require.Equal(t, "Sim101", accounts[0].Name)
	require.Equal(t, "Sim102", accounts[1].Name)
	require.Equal(t, 100_000.0, accounts[0].Item.CashValue)

	r = s.do("GET", "/v1/api/accounts/Sim102", tok, "")
	require.Equal(t, http.StatusOK, r.Status)
	require.Contains(t, string(r.Data), `"name":"Sim102"`)

	r = s.do("GET", "/v1/api/accounts/Nope", tok, "")
	require.Equal(t, http.StatusBadRequest, r.Status)
	require.Equal(t, "account_not_found", r.Error)

	r = s.do("POST", "/v1/api/accounts/Sim101/orders/place", tok, marketBuy)
	require.Equal(t, http.StatusOK, r.Status, string(r.raw))
	require.NotEmpty(t, r.OrderID, "the order id is also at the top level")
	var placed struct {
		OrderID string `json:"orderId"`
		Order   struct {
			OrderState string `json:"orderState"`
			Filled     int    `json:"filled"`
			Instrument string `json:"instrument"`
		} `json:"order"`
	}
	require.NoError(t, json.Unmarshal(r.Data, &placed))
	require.Equal(t, r.OrderID, placed.OrderID)
	require.Equal(t, "Filled", placed.Order.OrderState)
	require.Equal(t, 2, placed.Order.Filled)

	r = s.do("GET", "/v1/api/accounts/Sim101/positions", tok, "")
	require.Equal(t, http.StatusOK, r.Status)
	var held struct {
		Positions []struct {
			Instrument     string `json:"instrument"`
			MarketPosition string `json:"marketPosition"`
			Quantity       int    `json:"quantity"`
		} `json:"positions"`
		Count int `json:"count"`
	}
	require.NoError(t, json.Unmarshal(r.Data, &held))
	positions := held.Positions
	require.Equal(t, 1, held.Count)
	require.Len(t, positions, 1)
	require.Equal(t, "Long", positions[0].MarketPosition)
	require.Equal(t, 2, positions[0].Quantity)
	require.Equal(t, placed.Order.Instrument, positions[0].Instrument)

	// Bad orders are refused and place nothing.
	r = s.do("POST", "/v1/api/accounts/Sim102/orders/place", tok, `{"action":"Buy","instrument":"ES","orderType":"Limit","quantity":1,"timeInForce":"Day"}`)
	require.Equal(t, http.StatusBadRequest, r.Status)
	require.Equal(t, "missing_required_fields", r.Error)
	require.Contains(t, r.Detail, "limitPrice")
	r = s.do("POST", "/v1/api/accounts/Sim102/orders/place", tok, `{"action":"Buy","instrument":"ZZTOP","orderType":"Market","quantity":1,"timeInForce":"Day"}`)
	require.Equal(t, http.StatusBadRequest, r.Status)
	require.Equal(t, "invalid_instrument", r.Error)
	require.NotContains(t, string(r.raw), "ZZTOP", "errors never echo the caller's input")
	r = s.do("POST", "/v1/api/accounts/Sim102/orders/place", tok, `{"action":"Buy","action":"Sell"}`)
	require.Equal(t, http.StatusBadRequest, r.Status)
	require.Equal(t, "invalid_json", r.Error)
	r = s.do("GET", "/v1/api/accounts/Sim102/positions", tok, "")
	require.JSONEq(t, `{"positions":[],"count":0}`, string(r.Data))
}

func TestIdempotentOrderID(t *testing.T) {
	s := newSystem(t)
	s.startAgent("alice")
	tok := s.users["alice"].APIToken
	body := `{"action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day","orderId":"my-order-1"}`
	first := s.do("POST", "/v1/api/accounts/Sim101/orders/place", tok, body)
	require.Equal(t, http.StatusOK, first.Status, string(first.raw))
	again := s.do("POST", "/v1/api/accounts/Sim101/orders/place", tok, body)
	require.Equal(t, http.StatusOK, again.Status)
	require.Equal(t, first.OrderID, again.OrderID)
	r := s.do("GET", "/v1/api/accounts/Sim101/positions", tok, "")
	require.Contains(t, string(r.Data), `"quantity":1`, "the repeat placed nothing")
}

func TestAuthAndPlan(t *testing.T) {
	s := newSystem(t)
	s.startAgent("alice")
	for _, tc := range []struct {
		name, token string
		status      int
		code        string
	}{
		{"missing", "", http.StatusUnauthorized, "unauthorized"},
		{"malformed", "not-a-token", http.StatusUnauthorized, "unauthorized"},
		{"agent token as API token", s.users["alice"].AgentToken, http.StatusUnauthorized, "unauthorized"},
		{"unknown", "tb_api_" + strings.Repeat("A", 43), http.StatusUnauthorized, "unauthorized"},
		{"free plan", s.users["carol"].APIToken, http.StatusForbidden, "plan_required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.do("GET", "/v1/api/accounts", tc.token, "")
			require.Equal(t, tc.status, r.Status)
			require.False(t, r.Success)
			require.Equal(t, tc.code, r.Error)
		})
	}
	// Revocation applies within the cache TTL.
	tok := s.users["alice"].APIToken
	require.Equal(t, http.StatusOK, s.do("GET", "/v1/api/accounts", tok, "").Status)
	require.NoError(t, auth.RevokeToken(context.Background(), s.st, tok, time.Now()))
	require.Eventually(t, func() bool {
		return s.do("GET", "/v1/api/accounts", tok, "").Status == http.StatusUnauthorized
	}, 2*time.Second, 20*time.Millisecond)
}

func TestNoAgent(t *testing.T) {
	s := newSystem(t)
	start := time.Now()
	r := s.do("GET", "/v1/api/accounts", s.users["alice"].APIToken, "")
	require.Less(t, time.Since(start), 100*time.Millisecond)
	require.Equal(t, http.StatusRequestTimeout, r.Status)
	require.Equal(t, "addon_disconnected", r.Error)
	require.NotEmpty(t, r.Detail)
}

func TestUsersNeverReachEachOther(t *testing.T) {
	s := newSystem(t)
	alice := s.startAgent("alice")
	bob := s.startAgent("bob")
	r := s.do("POST", "/v1/api/accounts/Sim101/orders/place", s.users["alice"].APIToken, marketBuy)
	require.Equal(t, http.StatusOK, r.Status)
	// Both simulators have an account Sim101; only alice's traded.
	ps, err := alice.sim.Positions(context.Background(), "Sim101")
	require.NoError(t, err)
	require.Len(t, ps, 1)
	ps, err = bob.sim.Positions(context.Background(), "Sim101")
	require.NoError(t, err)
	require.Empty(t, ps)
	r = s.do("GET", "/v1/api/accounts/Sim101/positions", s.users["bob"].APIToken, "")
	require.JSONEq(t, `{"positions":[],"count":0}`, string(r.Data))
}

func TestRelayRestart(t *testing.T) {
	s := newSystem(t)
	ra := s.startAgent("alice")
	tok := s.users["alice"].APIToken
	require.Equal(t, http.StatusOK, s.do("GET", "/v1/api/accounts", tok, "").Status)
	s.restart()
	s.client.CloseIdleConnections()
	require.Eventually(t, func() bool {
		return s.do("GET", "/v1/api/accounts", tok, "").Status == http.StatusOK
	}, 10*time.Second, 20*time.Millisecond, "the agent reconnects by itself")
	require.True(t, ra.a.Connected())
}

func TestHTTPSurface(t *testing.T) {
	s := newSystem(t)
	s.startAgent("alice")
	tok := s.users["alice"].APIToken

	r := s.do("GET", "/v1/api/nothing-here", tok, "")
	require.Equal(t, http.StatusNotFound, r.Status)
	require.Equal(t, "not_found", r.Error)
	r = s.do("DELETE", "/v1/api/accounts", tok, "")
	require.Equal(t, http.StatusMethodNotAllowed, r.Status)
	require.Equal(t, "method_not_allowed", r.Error)
	require.Contains(t, r.Header.Get("Allow"), "GET")
	r = s.do("GET", "/v1/api/accounts", tok, `{"a":1}`)
	require.Equal(t, http.StatusBadRequest, r.Status)
	require.Equal(t, "unexpected_body", r.Error)
	require.Equal(t, http.StatusOK, s.do("GET", "/v1/api/accounts", tok, "").Status)

	require.Equal(t, http.StatusOK, s.do("GET", "/healthz", "", "").Status)
	require.Equal(t, http.StatusOK, s.do("GET", "/readyz", "", "").Status)
	// Metrics are on the operator's listener only (TestOperatorListener).
	require.Equal(t, "not_found", s.do("GET", "/metrics", "", "").Error)
}

// Tokens never reach the logs, whatever happens.
func TestLogsHoldNoTokens(t *testing.T) {
	s := newSystem(t)
	ra := s.startAgent("alice")
	tok := s.users["alice"].APIToken
	s.do("GET", "/v1/api/accounts", tok, "")
	s.do("GET", "/v1/api/accounts", "tb_api_"+strings.Repeat("B", 43), "")
	s.do("POST", "/v1/api/accounts/Sim101/orders/place", tok, marketBuy)
	s.restart()
	require.Eventually(t, ra.a.Connected, 10*time.Second, 10*time.Millisecond)
	var all bytes.Buffer
	for _, e := range s.logs.All() {
		all.WriteString(e.Message)
		for k, v := range e.ContextMap() {
			all.WriteString(k)
			b, _ := json.Marshal(v)
			all.Write(b)
		}
	}
	for _, u := range s.users {
		require.NotContains(t, all.String(), u.APIToken)
		require.NotContains(t, all.String(), u.AgentToken)
		require.NotContains(t, all.String(), u.AgentToken[len("tb_agent_"):])
	}
	require.NotContains(t, all.String(), strings.Repeat("B", 43))
}

// BenchmarkRoundTrip compares a trading call through the whole system (HTTP →
// relay → tunnel → agent → simulator → back) with a plain net/http handler
// returning the same bytes, interleaving the two so both see the same
// machine. It reports the medians and their ratio (target p50-ratio ≤ 1.5).
func BenchmarkRoundTrip(b *testing.B) {
	compareWithDirect(b, "GET", "/v1/api/accounts/Sim101/positions", "")
}

// BenchmarkTradingRoutes is BenchmarkRoundTrip for a write and a read
// (targets: p50 ratio ≤ 1.5, p99 ratio ≤ 2).
func BenchmarkTradingRoutes(b *testing.B) {
	b.Run("PlaceOrder", func(b *testing.B) {
		compareWithDirect(b, "POST", "/v1/api/accounts/Sim101/orders/place", `{"action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day"}`)
	})
	b.Run("ListPositions", func(b *testing.B) {
		compareWithDirect(b, "GET", "/v1/api/accounts/Sim101/positions", "")
	})
}

// BenchmarkThroughput measures RPCs per second through one relay and one
// agent with 64 concurrent clients (target ≥ 20,000 on 2 cores).
func BenchmarkThroughput(b *testing.B) {
	s := newSystem(b)
	s.startAgent("alice")
	tok := s.users["alice"].APIToken
	url := s.base + "/v1/api/accounts/Sim101/positions"
	s.client.Transport.(*http.Transport).MaxIdleConnsPerHost = 256
	b.SetParallelism((64 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("GET", url, nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := s.client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "rpc/s")
}

func compareWithDirect(b *testing.B, method, path, body string) {
	s := newSystem(b)
	s.startAgent("alice")
	tok := s.users["alice"].APIToken
	s.do("POST", "/v1/api/accounts/Sim101/orders/place", tok, marketBuy)
	want := s.do(method, path, tok, body).raw

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	direct := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.Header.Get("Authorization")
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(want)
	})}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); direct.Serve(ln) }()
	defer func() { direct.Close(); wg.Wait() }()

	get := func(url string) time.Duration {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequest(method, url, rd)
		req.Header.Set("Authorization", "Bearer "+tok)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		start := time.Now()
		resp, err := s.client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		return time.Since(start)
	}
	directURL, relayURL := "http://"+ln.Addr().String()+path, s.base+path
	for range 200 { // warm up connections and code paths
		get(directURL)
		get(relayURL)
	}
	dd := make([]time.Duration, 0, b.N)
	rd := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		dd = append(dd, get(directURL))
		rd = append(rd, get(relayURL))
	}
	b.StopTimer()
	reportLatency(b, "direct", dd)
	reportLatency(b, "relay", rd)
	b.ReportMetric(float64(pct(rd, 50))/float64(pct(dd, 50)), "p50-ratio")
	b.ReportMetric(float64(pct(rd, 99))/float64(pct(dd, 99)), "p99-ratio")
}

func pct(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func reportLatency(b *testing.B, name string, d []time.Duration) {
	b.ReportMetric(float64(pct(d, 50).Nanoseconds())/1e3, name+"-p50-µs")
	b.ReportMetric(float64(pct(d, 99).Nanoseconds())/1e3, name+"-p99-µs")
}
