package tradeapi_test

import (
	"context"
	"encoding/json"

	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/auth"
	"tradebridge/relay/auth/authtest"
	"tradebridge/relay/budget"
	"tradebridge/relay/errcode"
	"tradebridge/relay/store"
	"tradebridge/relay/tradeapi"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeAgent is a Caller standing in for the hub and the user's agent. It
// records every call; reply decides the answer.
type fakeAgent struct {
	mu    sync.Mutex
	calls []call
	reply func(c call) (json.RawMessage, error)
}

type call struct {
	User, Fn, RequestID string
	Args                map[string]any
}

func (f *fakeAgent) Call(ctx context.Context, userID, fn, requestID string, args json.RawMessage) (json.RawMessage, error) {
	c := call{User: userID, Fn: fn, RequestID: requestID}
	if len(args) > 0 {
		if err := json.Unmarshal(args, &c.Args); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	reply := f.reply
	f.mu.Unlock()
	if reply != nil {
		return reply(c)
	}
	if listFunctions[fn] {
		return json.RawMessage(`[]`), nil
	}
	if fn == protocol.FnCancelAndBracket {
		return json.RawMessage(`{"orderIds":["o-1","o-2"],"placed":true}`), nil
	}
	return json.RawMessage(`{"orderId":"o-1"}`), nil
}

// listFunctions answer with an array, as the agent does.
var listFunctions = map[string]bool{
	protocol.FnListAccounts: true, protocol.FnListPositions: true, protocol.FnGetAllPositions: true,
	protocol.FnListOrders: true, protocol.FnGetAllOrders: true, protocol.FnListExecutions: true,
	protocol.FnGetExecutionsByOrderID: true, protocol.FnListStrategies: true,
	protocol.FnListAllStrategies: true, protocol.FnGetAtmTemplates: true,
}

func (f *fakeAgent) all() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

// newFakeAuth is an authenticator over the test users' API tokens.
func newFakeAuth() *authtest.Auth {
	return authtest.New(map[string]auth.Principal{
		"tb_api_pro":    {UserID: "usr_pro", Plan: auth.PlanPro, Kind: auth.KindAPI},
		"tb_api_pro2":   {UserID: "usr_pro2", Plan: auth.PlanPro, Kind: auth.KindAPI},
		"tb_api_free":   {UserID: "usr_free", Plan: auth.PlanFree, Kind: auth.KindAPI},
		"tb_api_notv":   {UserID: "usr_notv", Plan: auth.PlanPro, Kind: auth.KindAPI, Withheld: []string{"tv"}},
		"tb_api_nodesk": {UserID: "usr_nodesk", Plan: auth.PlanElite, Kind: auth.KindAPI, Withheld: []string{"desktop"}},
	})
}

type env struct {
	t      testing.TB
	agent  *fakeAgent
	srv    *httptest.Server
	api    *tradeapi.API
	routes []string
}

type recordingMux struct {
	*http.ServeMux
	patterns []string
}

func (m *recordingMux) Handle(pattern string, h http.Handler) {
	m.patterns = append(m.patterns, pattern)
	m.ServeMux.Handle(pattern, h)
}

func newEnv(t testing.TB, tweak ...func(*tradeapi.Options)) *env {
	st, err := store.Open(context.Background(), store.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	for _, id := range []string{"usr_pro", "usr_pro2"} {
		require.NoError(t, st.CreateUser(context.Background(), store.User{ID: id, Name: id, Plan: "pro", CreatedAt: time.Now()}))
	}
	fa := &fakeAgent{}
	roomy, err := budget.New(budget.Options{Policy: budget.Policy{Name: "trading", Rate: 1 << 20, Period: time.Minute, Burst: 1 << 20}})
	require.NoError(t, err)
	roomyIP, err := budget.New(budget.Options{Policy: budget.Policy{Name: "ip", Rate: 1 << 20, Period: time.Minute, Burst: 1 << 20}})
	require.NoError(t, err)
	opts := tradeapi.Options{Caller: fa, Auth: newFakeAuth(), Idempotency: st, Budget: roomy, IPBudget: roomyIP}
	for _, f := range tweak {
		f(&opts)
	}
	a, err := tradeapi.New(opts)
	require.NoError(t, err)
	mux := &recordingMux{ServeMux: http.NewServeMux()}
	a.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.Close()
		st.Close()
	})
	return &env{t: t, agent: fa, srv: srv, api: a, routes: mux.patterns}
}

type resp struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    string
}

func (e *env) do(method, path, token, body string, headers ...string) resp {
	e.t.Helper()
	r, err := e.request(method, path, token, body, headers...)
	require.NoError(e.t, err)
	return r
}

// request is do for any goroutine: it returns the error.
func (e *env) request(method, path, token, body string, headers ...string) (resp, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		return resp{}, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		return resp{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return resp{}, err
	}
	r := resp{Status: res.StatusCode, Header: res.Header, Raw: string(raw)}
	_ = json.Unmarshal(raw, &r.Body)
	return r, nil
}

func TestOpenAPIMatchesRoutes(t *testing.T) {
	e := newEnv(t)
	r := e.do("GET", tradeapi.OpenAPIPath, "", "")
	require.Equal(t, http.StatusOK, r.Status)
	var doc struct {
		OpenAPI string                               `json:"openapi"`
		Paths   map[string]map[string]map[string]any `json:"paths"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Raw), &doc))
	require.Equal(t, "3.1.0", doc.OpenAPI)
	var documented, others []string
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if pkg, ok := op["x-route"]; ok {
				// A route another package registers: the activity log's,
				// the TradingView webhook's, and the Management API's
				// alerts (openapi_alerts_test.go).
				if pkg != "manage" {
					others = append(others, strings.ToUpper(method)+" "+path)
				}
				continue
			}
			documented = append(documented, strings.ToUpper(method)+" "+path)
			_, known := protocol.LookupFunction(op["x-rpc"].(string))
			require.True(t, known, "%s %s names a known RPC function", method, path)
		}
	}
	var registered []string
	for _, p := range e.routes {
		if !slices.Contains(tradeapi.DocumentPaths, strings.TrimPrefix(p, "GET ")) {
			registered = append(registered, p)
		}
	}
	sort.Strings(documented)
	sort.Strings(registered)
	require.Equal(t, registered, documented)
	sort.Strings(others)
	require.Equal(t, []string{"GET /v1/api/activity", "GET /v1/api/webhook", "GET /v1/api/webhook/alerts", "POST /v1/send/{webhookId}"}, others)

	// Every RPC function of the protocol is reachable over HTTP, but those
	// a door calls for itself: CancelReplace is the TradingView webhook's
	// (CANCELREPLACE) and has no route.
	reach := map[string]bool{
		protocol.FnFlattenEverything: true, // POST /positions/flatten with no filters
		protocol.FnCancelReplace:     true, // door-internal
	}
	for _, ops := range doc.Paths {
		for _, op := range ops {
			fn, _ := op["x-rpc"].(string)
			reach[fn] = true
		}
	}
	for _, f := range protocol.Functions {
		require.True(t, reach[f.Name], "function %s has a route", f.Name)
	}
}

func TestArgumentsForwarded(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name, method, path, body string
		fn                       string
		args                     map[string]any
	}{
		{"defaults filled", "GET", "/v1/api/accounts/Sim101/orders", "", protocol.FnListOrders,
			map[string]any{"account": "Sim101", "activeOnly": true, "lookbackTime": 320.0}},
		{"query typed from text", "GET", "/v1/api/accounts/Sim101/orders?activeOnly=false&lookbackTime=60", "", protocol.FnListOrders,
			map[string]any{"account": "Sim101", "activeOnly": false, "lookbackTime": 60.0}},
		{"url-encoded instrument", "GET", "/v1/api/accounts/Sim%20101/position?instrument=ES%2012-26", "", protocol.FnGetPosition,
			map[string]any{"account": "Sim 101", "instrument": "ES 12-26"}},
		{"root alone", "GET", "/v1/api/market/quote?root=NQ", "", protocol.FnGetQuote,
			map[string]any{"root": "NQ", "showRollover": false}},
		{"enums normalised", "POST", "/v1/api/accounts/Sim101/orders/place",
			`{"action":"BUY","instrument":"ES 12-26","orderType":"limit","quantity":2,"timeInForce":"gtc","limitPrice":5000.25}`,
			protocol.FnPlaceOrder,
			map[string]any{"account": "Sim101", "action": "Buy", "instrument": "ES 12-26", "orderType": "Limit", "quantity": 2.0, "timeInForce": "Gtc", "limitPrice": 5000.25}},
		{"aliases", "POST", "/v1/api/accounts/Sim101/strategies/start",
			`{"strategy_class":"SampleMACrossOver","instrument":"ES","period_type":"Minute","period":"5"}`,
			protocol.FnStartStrategy,
			map[string]any{"account": "Sim101", "strategyClass": "SampleMACrossOver", "instrument": "ES", "periodType": "minute", "period": 5.0}},
		{"flatten with no filters is everything", "POST", "/v1/api/positions/flatten", "", protocol.FnFlattenEverything, map[string]any{}},
		{"flatten with a filter", "POST", "/v1/api/positions/flatten", `{"account":"Sim101"}`, protocol.FnFlatten, map[string]any{"account": "Sim101"}},
		{"no body at all", "POST", "/v1/api/orders/cancelall", "", protocol.FnCancelAllOrders, map[string]any{}},
		{"empty object body", "POST", "/v1/api/accounts/Sim101/strategies/s1/enable", `{}`, protocol.FnEnableStrategy, map[string]any{"account": "Sim101", "id": "s1"}},
		{"bars", "POST", "/v1/api/market/bars", `{"instrument":"ES 12-26","periodType":"minute","period":5,"limit":10}`, protocol.FnGetBars,
			map[string]any{"instrument": "ES 12-26", "periodType": "minute", "period": 5.0, "limit": 10.0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(e.agent.all())
			r := e.do(tc.method, tc.path, "tb_api_pro", tc.body)
			require.Equal(t, http.StatusOK, r.Status, r.Raw)
			calls := e.agent.all()
			require.Len(t, calls, before+1)
			c := calls[len(calls)-1]
			require.Equal(t, tc.fn, c.Fn)
			require.Equal(t, "usr_pro", c.User)
			if c.Args == nil {
				c.Args = map[string]any{}
			}
			require.Equal(t, tc.args, c.Args)
		})
	}
}

func TestBadInputPlacesNothing(t *testing.T) {
	e := newEnv(t)
	const place = "/v1/api/accounts/Sim101/orders/place"
	good := func(mut string) string {
		m := map[string]any{"action": "Buy", "instrument": "ES 12-26", "orderType": "Market", "quantity": 1, "timeInForce": "Day"}
		var patch map[string]any
		require.NoError(t, json.Unmarshal([]byte(mut), &patch))
		for k, v := range patch {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"missing field", "POST", place, good(`{"quantity":null}`), 400, protocol.CodeMissingFields},
		{"several missing", "POST", place, `{"action":"Buy"}`, 400, protocol.CodeMissingFields},
		{"empty body where one is required", "POST", place, "", 400, protocol.CodeMissingFields},
		{"wrong type", "POST", place, good(`{"quantity":"1"}`), 400, protocol.CodeInvalidArgument},
		{"fractional quantity", "POST", place, good(`{"quantity":1.5}`), 400, protocol.CodeInvalidArgument},
		{"huge quantity", "POST", place, good(`{"quantity":1e12}`), 400, protocol.CodeInvalidArgument},
		{"negative quantity", "POST", place, good(`{"quantity":-1}`), 400, protocol.CodeInvalidArgument},
		{"NaN-like string price", "POST", place, good(`{"orderType":"Limit","limitPrice":"NaN"}`), 400, protocol.CodeInvalidArgument},
		{"NaN literal", "POST", place, `{"action":"Buy","instrument":"ES","orderType":"Limit","quantity":1,"timeInForce":"Day","limitPrice":NaN}`, 400, "invalid_json"},
		{"unknown enum", "POST", place, good(`{"action":"Hold"}`), 400, protocol.CodeInvalidArgument},
		{"bad instrument", "POST", place, good(`{"instrument":"ES 13-26"}`), 400, protocol.CodeInvalidInstrument},
		{"instrument with junk", "POST", place, good(`{"instrument":"ES; DROP"}`), 400, protocol.CodeInvalidInstrument},
		{"unknown field", "POST", place, good(`{"colour":"red"}`), 400, protocol.CodeInvalidArgument},
		{"field and alias", "POST", "/v1/api/accounts/Sim101/strategies/start", `{"strategyClass":"A","strategy_class":"B","instrument":"ES"}`, 400, protocol.CodeInvalidArgument},
		{"duplicate keys", "POST", place, `{"quantity":1,"quantity":2}`, 400, "invalid_json"},
		{"not an object", "POST", place, `[1]`, 400, "invalid_json"},
		{"bracket needs a leg", "POST", "/v1/api/accounts/Sim101/orders/cancel_and_bracket", `{"instrument":"ES","action":"Buy","quantity":1}`, 400, protocol.CodeMissingFields},
		{"quote needs instrument or root", "GET", "/v1/api/market/quote", "", 400, protocol.CodeMissingFields},
		{"unknown query parameter", "GET", "/v1/api/accounts/Sim101/orders?actveOnly=true", "", 400, errcode.UnknownParameter},
		{"repeated query parameter", "GET", "/v1/api/accounts/Sim101/orders?activeOnly=true&activeOnly=false", "", 400, errcode.UnknownParameter},
		{"boolean as text only", "GET", "/v1/api/accounts/Sim101/orders?activeOnly=yes", "", 400, protocol.CodeInvalidArgument},
		{"lookback out of range", "GET", "/v1/api/accounts/Sim101/executions?lookbackTime=901", "", 400, protocol.CodeInvalidArgument},
		{"body on GET", "GET", "/v1/api/accounts", `{}`, 400, "unexpected_body"},
		{"bad bars time", "POST", "/v1/api/market/bars", `{"instrument":"ES","from":"yesterday"}`, 400, protocol.CodeInvalidArgument},
		{"bad requireMarketPosition", "POST", place, good(`{"requireMarketPosition":"flat,sideways"}`), 400, protocol.CodeInvalidArgument},
		{"bad percent", "POST", "/v1/api/accounts/Sim101/positions/close", `{"instrument":"ES","percent":150}`, 400, protocol.CodeInvalidArgument},
		{"unknown path", "GET", "/v1/api/accounts/Sim101/nothing", "", 404, "not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(e.agent.all())
			r := e.do(tc.method, tc.path, "tb_api_pro", tc.body)
			if tc.status == 404 {
				// The bare API mux has no JSON fallback; the relay adds it.
				require.Equal(t, tc.status, r.Status)
				return
			}
			require.Equal(t, tc.status, r.Status, r.Raw)
			require.Equal(t, false, r.Body["success"])
			require.Equal(t, tc.code, r.Body["error"], r.Raw)
			require.NotEmpty(t, r.Body["detail"])
			require.Len(t, e.agent.all(), before, "nothing reached the agent")
			for _, secret := range []string{"Hold", "13-26", "DROP", "colour", "sideways", "yesterday", "NaN\""} {
				require.NotContains(t, r.Body["detail"], secret, "errors never echo the caller's values")
			}
		})
	}
}

func TestMissingFieldsAreNamed(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/v1/api/accounts/Sim101/orders/place", "tb_api_pro", `{"action":"Buy","instrument":"ES"}`)
	require.Equal(t, 400, r.Status)
	require.Equal(t, "missing required fields: orderType, quantity, timeInForce", r.Body["detail"])
	require.Len(t, r.Body["fields"], 3)
}

func TestAuthPlanAndBudget(t *testing.T) {
	e := newEnv(t, func(o *tradeapi.Options) { o.Budget = nil }) // the spec's 180/min, burst 20
	require.Equal(t, 401, e.do("GET", "/v1/api/accounts", "", "").Status)
	require.Equal(t, 401, e.do("GET", "/v1/api/accounts", "tb_api_nope", "").Status)
	r := e.do("GET", "/v1/api/accounts", "tb_api_free", "")
	require.Equal(t, 403, r.Status)
	require.Equal(t, "plan_required", r.Body["error"])

	for i := range 20 {
		r = e.do("GET", "/v1/api/accounts", "tb_api_pro", "")
		require.Equal(t, 200, r.Status, "request %d of the burst", i)
		require.Equal(t, `"trading";q=180;w=60`, r.Header.Get("RateLimit-Policy"))
	}
	require.Contains(t, r.Header.Get("RateLimit"), `"trading";r=0;`)
	// The budget is shared by every route (and by the WebSocket API).
	r = e.do("POST", "/v1/api/orders/cancelall", "tb_api_pro", "")
	require.Equal(t, 429, r.Status)
	require.Equal(t, "rate_limited", r.Body["error"])
	require.Equal(t, "trading", r.Body["policy"])
	require.Equal(t, "1", r.Header.Get("Retry-After"))
	require.EqualValues(t, 1, r.Body["retryAfter"])
	require.False(t, e.api.Budget().Allow("usr_pro").Allowed, "the API's budget is the one it charges")
	// Another user is unaffected.
	require.Equal(t, 200, e.do("GET", "/v1/api/accounts", "tb_api_pro2", "").Status)
}

func TestIPBudgetBeforeToken(t *testing.T) {
	ip, err := budget.New(budget.Options{Policy: budget.Policy{Name: "ip", Rate: 60, Period: time.Minute, Burst: 5}})
	require.NoError(t, err)
	e := newEnv(t, func(o *tradeapi.Options) { o.IPBudget = ip })
	for range 5 {
		require.Equal(t, 401, e.do("GET", "/v1/api/accounts", "tb_api_bad", "").Status)
	}
	r := e.do("GET", "/v1/api/accounts", "tb_api_pro", "")
	require.Equal(t, 429, r.Status)
	require.Equal(t, "ip", r.Body["policy"])
}

func TestIdempotentWrites(t *testing.T) {
	e := newEnv(t)
	const place = "/v1/api/accounts/Sim101/orders/place"
	body := `{"action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day"}`

	first := e.do("POST", place, "tb_api_pro", body, "Idempotency-Key", "k-1")
	require.Equal(t, 200, first.Status)
	require.Equal(t, "o-1", first.Body["orderId"])
	again := e.do("POST", place, "tb_api_pro", body, "Idempotency-Key", "k-1")
	require.Equal(t, 200, again.Status)
	require.Equal(t, first.Raw, again.Raw)
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.Len(t, e.agent.all(), 1, "the repeat placed nothing")
	require.Equal(t, "idem:key:k-1", e.agent.all()[0].RequestID)

	// Another body under the same key.
	r := e.do("POST", place, "tb_api_pro", strings.Replace(body, `"quantity":1`, `"quantity":2`, 1), "Idempotency-Key", "k-1")
	require.Equal(t, 422, r.Status)
	require.Equal(t, errcode.IdempotencyKeyReused, r.Body["error"])
	// The same key of another user is another key.
	require.Equal(t, 200, e.do("POST", place, "tb_api_pro2", body, "Idempotency-Key", "k-1").Status)
	require.Len(t, e.agent.all(), 2)

	// orderId is a key too.
	withID := strings.Replace(body, `{`, `{"orderId":"mine-1",`, 1)
	require.Equal(t, 200, e.do("POST", place, "tb_api_pro", withID).Status)
	require.Equal(t, 200, e.do("POST", place, "tb_api_pro", withID).Status)
	require.Len(t, e.agent.all(), 3)

	// Failed operations are answered again the same way.
	e.agent.reply = func(call) (json.RawMessage, error) {
		return nil, protocol.NewError(protocol.CodeNoPosition, "no position")
	}
	for range 2 {
		r = e.do("POST", "/v1/api/accounts/Sim101/positions/reverse", "tb_api_pro", `{"instrument":"ES"}`, "Idempotency-Key", "k-2")
		require.Equal(t, 400, r.Status)
		require.Equal(t, "no_position", r.Body["error"])
	}
	require.Len(t, e.agent.all(), 4)
}

func TestOutcomeUnknownThenRetry(t *testing.T) {
	e := newEnv(t)
	const place = "/v1/api/accounts/Sim101/orders/place"
	body := `{"action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day"}`
	e.agent.reply = func(call) (json.RawMessage, error) { return nil, agentcall.ErrConnectionLost }
	r := e.do("POST", place, "tb_api_pro", body, "Idempotency-Key", "k-9")
	require.Equal(t, 503, r.Status)
	require.Equal(t, errcode.OutcomeUnknown, r.Body["error"])

	e.agent.reply = func(call) (json.RawMessage, error) { return nil, agentcall.ErrNotConnected }
	r = e.do("POST", place, "tb_api_pro", body, "Idempotency-Key", "k-9")
	require.Equal(t, 408, r.Status)

	e.agent.reply = nil
	r = e.do("POST", place, "tb_api_pro", body, "Idempotency-Key", "k-9")
	require.Equal(t, 200, r.Status)
	calls := e.agent.all()
	require.Len(t, calls, 3)
	for _, c := range calls {
		require.Equal(t, "idem:key:k-9", c.RequestID, "every try carries the same request id, so the agent runs it once")
	}
	r = e.do("POST", place, "tb_api_pro", body, "Idempotency-Key", "k-9")
	require.Equal(t, "true", r.Header.Get("Idempotent-Replayed"))
	require.Len(t, e.agent.all(), 3)
}

func TestConcurrentRepeatIsConflict(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	var started atomic.Int32
	e.agent.reply = func(call) (json.RawMessage, error) {
		started.Add(1)
		<-release
		return json.RawMessage(`{"orderId":"o-1"}`), nil
	}
	body := `{"instrument":"ES"}`
	done := make(chan resp)
	go func() {
		r, err := e.request("POST", "/v1/api/accounts/Sim101/positions/reverse", "tb_api_pro", body, "Idempotency-Key", "k-c")
		assert.NoError(t, err)
		done <- r
	}()
	require.Eventually(t, func() bool { return started.Load() == 1 }, testkit.Medium, time.Millisecond)
	r := e.do("POST", "/v1/api/accounts/Sim101/positions/reverse", "tb_api_pro", body, "Idempotency-Key", "k-c")
	require.Equal(t, 409, r.Status)
	require.Equal(t, protocol.CodeRequestInProgress, r.Body["error"])
	close(release)
	require.Equal(t, 200, (<-done).Status)
}

func TestWritesWithoutKeyGetFreshRequestIDs(t *testing.T) {
	e := newEnv(t)
	for range 2 {
		require.Equal(t, 200, e.do("POST", "/v1/api/orders/cancelall", "tb_api_pro", "").Status)
	}
	calls := e.agent.all()
	require.Len(t, calls, 2)
	require.NotEqual(t, calls[0].RequestID, calls[1].RequestID)
	require.True(t, strings.HasPrefix(calls[0].RequestID, "rly:"))
	// Reads carry none.
	e.do("GET", "/v1/api/accounts", "tb_api_pro", "")
	require.Empty(t, e.agent.all()[2].RequestID)
}

func TestBadIdempotencyKey(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/v1/api/orders/cancelall", "tb_api_pro", "", "Idempotency-Key", strings.Repeat("k", 256))
	require.Equal(t, 400, r.Status)
	require.Empty(t, e.agent.all())
}

// StartStrategy takes strategyClass or its alias strategy_class; one of
// them is required, and its absence is named like any missing field.
func TestStartStrategyNeedsAClass(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do("POST", "/v1/api/accounts/Sim101/strategies/start", "tb_api_pro", `{"instrument":"ES"}`)
	require.Equal(t, http.StatusBadRequest, r.Status, r.Raw)
	require.Equal(t, "missing_required_fields", r.Body["error"])
	require.Contains(t, r.Body["detail"], "strategyClass")
	require.Empty(t, e.agent.all(), "nothing reached the agent")
	for _, body := range []string{`{"strategyClass":"SampleRsi","instrument":"ES"}`, `{"strategy_class":"SampleRsi","instrument":"ES"}`} {
		r = e.do("POST", "/v1/api/accounts/Sim101/strategies/start", "tb_api_pro", body)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
	}
}

// A path segment that cannot be an account name or id is invalid_path,
// with the rule and the parameter named, never the segment.
func TestInvalidPath(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, path := range []string{
		"/v1/api/accounts/" + strings.Repeat("A", 65) + "/positions",
		"/v1/api/accounts/%01Sim/positions",
		"/v1/api/accounts/%20Sim101/positions",
		"/v1/api/accounts/Sim101/orders/%7F1",
	} {
		r := e.do("GET", path, "tb_api_pro", "")
		require.Equal(t, http.StatusBadRequest, r.Status, path)
		require.Equal(t, "invalid_path", r.Body["error"], path)
		require.Contains(t, r.Body["detail"], "64 printable characters")
		require.NotContains(t, r.Raw, "AAAA")
		fields := r.Body["fields"].([]any)
		require.Len(t, fields, 1)
		require.Contains(t, []string{"account", "orderId"}, fields[0].(map[string]any)["path"])
	}
	require.Empty(t, e.agent.all())
}
