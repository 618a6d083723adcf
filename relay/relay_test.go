package relay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"tradebridge/internal/systemtest"
	"tradebridge/internal/testkit"
	"tradebridge/relay"
	"tradebridge/relay/auth"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// system is a real relay on a loopback port with real agents on simulators,
// as the two binaries run them: systemtest's, with the relay tests' own
// helpers as its methods.
type system struct{ *systemtest.System }

type (
	runningAgent = systemtest.RunningAgent
	response     = systemtest.Response
)

func newSystem(t testing.TB) *system {
	t.Helper()
	return &system{systemtest.New(t)}
}

// newSystemWith is newSystem with a relay whose options tweak may change
// (before every start, restarts included).
func newSystemWith(t testing.TB, tweak func(*relay.Options)) *system {
	t.Helper()
	return &system{systemtest.NewWith(t, tweak)}
}

var (
	// roomy is a budget tests that do not test budgets never exhaust.
	roomy = systemtest.Roomy
	// simStart is when the simulators of these tests stand.
	simStart = systemtest.SimStart
)

const marketBuy = `{"action":"BUY","instrument":"ES","orderType":"Market","quantity":2,"timeInForce":"Day"}`

func TestTradingRoundTrip(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.StartAgent("alice")
	tok := s.Users["alice"].APIToken

	r := s.Do("GET", "/v1/api/accounts", tok, "")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
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

	r = s.Do("GET", "/v1/api/accounts/Sim102", tok, "")
	require.Equal(t, http.StatusOK, r.Status)
	require.Contains(t, string(r.Data), `"name":"Sim102"`)

	r = s.Do("GET", "/v1/api/accounts/Nope", tok, "")
	require.Equal(t, http.StatusBadRequest, r.Status)
	require.Equal(t, "account_not_found", r.Error)

	r = s.Do("POST", "/v1/api/accounts/Sim101/orders/place", tok, marketBuy)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
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

	r = s.Do("GET", "/v1/api/accounts/Sim101/positions", tok, "")
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
	r = s.Do("POST", "/v1/api/accounts/Sim102/orders/place", tok, `{"action":"Buy","instrument":"ES","orderType":"Limit","quantity":1,"timeInForce":"Day"}`)
	require.Equal(t, http.StatusBadRequest, r.Status)
	require.Equal(t, "missing_required_fields", r.Error)
	require.Contains(t, r.Detail, "limitPrice")
	r = s.Do("POST", "/v1/api/accounts/Sim102/orders/place", tok, `{"action":"Buy","instrument":"ZZTOP","orderType":"Market","quantity":1,"timeInForce":"Day"}`)
	require.Equal(t, http.StatusBadRequest, r.Status)
	require.Equal(t, "invalid_instrument", r.Error)
	require.NotContains(t, string(r.Raw), "ZZTOP", "errors never echo the caller's input")
	r = s.Do("POST", "/v1/api/accounts/Sim102/orders/place", tok, `{"action":"Buy","action":"Sell"}`)
	require.Equal(t, http.StatusBadRequest, r.Status)
	require.Equal(t, "invalid_json", r.Error)
	r = s.Do("GET", "/v1/api/accounts/Sim102/positions", tok, "")
	require.JSONEq(t, `{"positions":[],"count":0}`, string(r.Data))
}

func TestIdempotentOrderID(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.StartAgent("alice")
	tok := s.Users["alice"].APIToken
	body := `{"action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day","orderId":"my-order-1"}`
	first := s.Do("POST", "/v1/api/accounts/Sim101/orders/place", tok, body)
	require.Equal(t, http.StatusOK, first.Status, string(first.Raw))
	again := s.Do("POST", "/v1/api/accounts/Sim101/orders/place", tok, body)
	require.Equal(t, http.StatusOK, again.Status)
	require.Equal(t, first.OrderID, again.OrderID)
	r := s.Do("GET", "/v1/api/accounts/Sim101/positions", tok, "")
	require.Contains(t, string(r.Data), `"quantity":1`, "the repeat placed nothing")
}

func TestAuthAndPlan(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.StartAgent("alice")
	for _, tc := range []struct {
		name, token string
		status      int
		code        string
	}{
		{"missing", "", http.StatusUnauthorized, "unauthorized"},
		{"malformed", "not-a-token", http.StatusUnauthorized, "unauthorized"},
		{"agent token as API token", s.Users["alice"].AgentToken, http.StatusUnauthorized, "unauthorized"},
		{"unknown", "tb_api_" + strings.Repeat("A", 43), http.StatusUnauthorized, "unauthorized"},
		{"free plan", s.Users["carol"].APIToken, http.StatusForbidden, "plan_required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.Do("GET", "/v1/api/accounts", tc.token, "")
			require.Equal(t, tc.status, r.Status)
			require.False(t, r.Success)
			require.Equal(t, tc.code, r.Error)
		})
	}
	// Revocation applies within the cache TTL.
	tok := s.Users["alice"].APIToken
	require.Equal(t, http.StatusOK, s.Do("GET", "/v1/api/accounts", tok, "").Status)
	require.NoError(t, auth.RevokeToken(context.Background(), s.Store, tok, time.Now()))
	require.Eventually(t, func() bool {
		return s.DoAsync("GET", "/v1/api/accounts", tok, "").Status == http.StatusUnauthorized
	}, testkit.Medium, 20*time.Millisecond)
}

// A call for a user whose agent is not connected fails at once with 408
// addon_disconnected: it does not wait for an agent for the call's 30 s
// (the bound is far below that and far above a loaded machine's
// scheduling, so the test never depends on the machine's speed).
func TestNoAgent(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	start := time.Now()
	r := s.Do("GET", "/v1/api/accounts", s.Users["alice"].APIToken, "")
	require.Less(t, time.Since(start), testkit.Medium, "the call did not wait for an agent")
	require.Equal(t, http.StatusRequestTimeout, r.Status)
	require.Equal(t, "addon_disconnected", r.Error)
	require.NotEmpty(t, r.Detail)
}

func TestUsersNeverReachEachOther(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	alice := s.StartAgent("alice")
	bob := s.StartAgent("bob")
	r := s.Do("POST", "/v1/api/accounts/Sim101/orders/place", s.Users["alice"].APIToken, marketBuy)
	require.Equal(t, http.StatusOK, r.Status)
	// Both simulators have an account Sim101; only alice's traded.
	ps, err := alice.Sim.Positions(context.Background(), "Sim101")
	require.NoError(t, err)
	require.Len(t, ps, 1)
	ps, err = bob.Sim.Positions(context.Background(), "Sim101")
	require.NoError(t, err)
	require.Empty(t, ps)
	r = s.Do("GET", "/v1/api/accounts/Sim101/positions", s.Users["bob"].APIToken, "")
	require.JSONEq(t, `{"positions":[],"count":0}`, string(r.Data))
}

func TestRelayRestart(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	ra := s.StartAgent("alice")
	tok := s.Users["alice"].APIToken
	require.Equal(t, http.StatusOK, s.Do("GET", "/v1/api/accounts", tok, "").Status)
	s.Restart()
	s.Client.CloseIdleConnections()
	require.Eventually(t, func() bool {
		return s.DoAsync("GET", "/v1/api/accounts", tok, "").Status == http.StatusOK
	}, testkit.Long, 20*time.Millisecond, "the agent reconnects by itself")
	require.True(t, ra.Agent.Connected())
}

func TestHTTPSurface(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.StartAgent("alice")
	tok := s.Users["alice"].APIToken

	r := s.Do("GET", "/v1/api/nothing-here", tok, "")
	require.Equal(t, http.StatusNotFound, r.Status)
	require.Equal(t, "not_found", r.Error)
	r = s.Do("DELETE", "/v1/api/accounts", tok, "")
	require.Equal(t, http.StatusMethodNotAllowed, r.Status)
	require.Equal(t, "method_not_allowed", r.Error)
	require.Contains(t, r.Header.Get("Allow"), "GET")
	r = s.Do("GET", "/v1/api/accounts", tok, `{"a":1}`)
	require.Equal(t, http.StatusBadRequest, r.Status)
	require.Equal(t, "unexpected_body", r.Error)
	require.Equal(t, http.StatusOK, s.Do("GET", "/v1/api/accounts", tok, "").Status)

	require.Equal(t, http.StatusOK, s.Do("GET", "/healthz", "", "").Status)
	require.Equal(t, http.StatusOK, s.Do("GET", "/readyz", "", "").Status)
	// Metrics are on the operator's listener only (TestOperatorListener).
	require.Equal(t, "not_found", s.Do("GET", "/metrics", "", "").Error)
}

// Tokens never reach the logs, whatever happens.
func TestLogsHoldNoTokens(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	ra := s.StartAgent("alice")
	tok := s.Users["alice"].APIToken
	s.Do("GET", "/v1/api/accounts", tok, "")
	s.Do("GET", "/v1/api/accounts", "tb_api_"+strings.Repeat("B", 43), "")
	s.Do("POST", "/v1/api/accounts/Sim101/orders/place", tok, marketBuy)
	// TradingView alerts: a good key, a wrong one, a body that does not
	// parse.
	hook := s.webhookOf("alice")
	hook.send(placeES)
	hook.send("command=NOPE")
	wrong := hook
	wrong.Key = "whk_" + strings.Repeat("c", 32)
	wrong.send(placeES)
	s.Restart()
	require.Eventually(t, ra.Agent.Connected, testkit.Long, testkit.Tick)
	var all bytes.Buffer
	for _, e := range s.Logs.All() {
		all.WriteString(e.Message)
		for k, v := range e.ContextMap() {
			all.WriteString(k)
			b, _ := json.Marshal(v)
			all.Write(b)
		}
	}
	for _, u := range s.Users {
		require.NotContains(t, all.String(), u.APIToken)
		require.NotContains(t, all.String(), u.AgentToken)
		require.NotContains(t, all.String(), u.AgentToken[len("tb_agent_"):])
	}
	require.NotContains(t, all.String(), strings.Repeat("B", 43))
	require.NotContains(t, all.String(), hook.Key)
	require.NotContains(t, all.String(), wrong.Key)
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
	s.StartAgent("alice")
	tok := s.Users["alice"].APIToken
	url := s.Base + "/v1/api/accounts/Sim101/positions"
	s.Client.Transport.(*http.Transport).MaxIdleConnsPerHost = 256
	b.SetParallelism((64 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("GET", url, nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := s.Client.Do(req)
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
	s.StartAgent("alice")
	tok := s.Users["alice"].APIToken
	s.Do("POST", "/v1/api/accounts/Sim101/orders/place", tok, marketBuy)
	want := s.Do(method, path, tok, body).Raw

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
		resp, err := s.Client.Do(req)
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
	directURL, relayURL := "http://"+ln.Addr().String()+path, s.Base+path
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
