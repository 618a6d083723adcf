package tradeapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/budget"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/store"
	"tradebridge/relay/tradeapi"
)

// families is the desktop API and the broker family's API on one mux,
// sharing the idempotency store and the trading budget, each with its own
// Caller, as the relay wires them.
type families struct {
	desktop, broker *fakeAgent
	env             *env // do() reaches both families
	brokerRoutes    []string
}

func newFamilies(t *testing.T, burst int) *families {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	require.NoError(t, st.CreateUser(context.Background(), store.User{ID: "usr_pro", Name: "usr_pro", Plan: "pro", CreatedAt: time.Now()}))
	trading, err := budget.New(budget.Options{Policy: budget.Policy{Name: "trading", Rate: 1, Period: time.Hour, Burst: burst}})
	require.NoError(t, err)
	ip, err := budget.New(budget.Options{Policy: budget.Policy{Name: "ip", Rate: 1 << 20, Period: time.Minute, Burst: 1 << 20}})
	require.NoError(t, err)
	f := &families{desktop: &fakeAgent{}, broker: &fakeAgent{}}
	mux := &recordingMux{ServeMux: http.NewServeMux()}
	desk, err := tradeapi.New(tradeapi.Options{Caller: f.desktop, Auth: newFakeAuth(), Idempotency: st, Budget: trading, IPBudget: ip})
	require.NoError(t, err)
	desk.Register(mux)
	broker, err := tradeapi.New(tradeapi.Options{Caller: f.broker, Auth: newFakeAuth(), Idempotency: st, Budget: trading, IPBudget: ip, Family: tradeapi.FamilyBroker})
	require.NoError(t, err)
	brokerMux := &recordingMux{ServeMux: mux.ServeMux}
	broker.Register(brokerMux)
	f.brokerRoutes = brokerMux.patterns
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.Close()
		st.Close()
	})
	f.env = &env{t: t, agent: f.desktop, srv: srv, api: desk}
	return f
}

// The broker family serves its routes under /v1/api/tv: the desktop
// routes of its set, at the same paths below the prefix, and its OpenAPI
// documents.
func TestBrokerRoutes(t *testing.T) {
	t.Parallel()
	f := newFamilies(t, 1000)
	want := []string{
		"GET /v1/api/tv/accounts", "GET /v1/api/tv/accounts/{account}",
		"GET /v1/api/tv/accounts/{account}/positions", "GET /v1/api/tv/accounts/{account}/position",
		"GET /v1/api/tv/accounts/{account}/orders", "GET /v1/api/tv/accounts/{account}/orders/{orderId}",
		"GET /v1/api/tv/accounts/{account}/executions", "GET /v1/api/tv/executions/order/{orderId}",
		"GET /v1/api/tv/positions",
		"POST /v1/api/tv/accounts/{account}/orders/place", "POST /v1/api/tv/accounts/{account}/orders/flatplace",
		"POST /v1/api/tv/accounts/{account}/orders/cancel", "POST /v1/api/tv/accounts/{account}/orders/{orderId}/cancel",
		"POST /v1/api/tv/accounts/{account}/orders/{orderId}/change", "POST /v1/api/tv/accounts/{account}/positions/flatten",
		"POST /v1/api/tv/positions/flatten", "POST /v1/api/tv/accounts/{account}/positions/close",
		"POST /v1/api/tv/accounts/{account}/positions/reverse", "POST /v1/api/tv/accounts/{account}/positions/reverseposition",
		"POST /v1/api/tv/accounts/{account}/orders/cancel_and_bracket", "POST /v1/api/tv/orders/cancelall",
		"GET /v1/api/tv/openapi.json", "GET /v1/api/tv/openapi.compatible.json",
	}
	require.ElementsMatch(t, want, f.brokerRoutes)
	var listed []string
	desktop := map[string]bool{}
	for _, r := range tradeapi.Routes() {
		desktop[r[0]+" "+r[1]] = true
	}
	for _, r := range tradeapi.BrokerRoutes() {
		listed = append(listed, r[0]+" "+r[1])
		require.True(t, strings.HasPrefix(r[1], tradeapi.BrokerPrefix), r[1])
		require.True(t, desktop[r[0]+" /v1/api/"+strings.TrimPrefix(r[1], tradeapi.BrokerPrefix)], "%s has its desktop route", r[1])
	}
	require.Equal(t, listed, f.brokerRoutes[:len(listed)], "BrokerRoutes lists the trading routes Register registers, in order")
	for i, path := range tradeapi.BrokerDocumentPaths {
		require.Equal(t, "GET "+path, f.brokerRoutes[len(listed)+i], "then the documents")
	}

	// Every route reaches the broker family's Caller, never the agent,
	// with the arguments the desktop route forwards.
	for _, tc := range []struct {
		method, path, body, fn string
	}{
		{"GET", "/accounts", "", protocol.FnListAccounts},
		{"GET", "/accounts/Demo1/orders?activeOnly=false", "", protocol.FnListOrders},
		{"GET", "/positions", "", protocol.FnGetAllPositions},
		{"POST", "/accounts/Demo1/orders/place", `{"action":"buy","instrument":"ES 12-26","orderType":"market","quantity":1,"timeInForce":"day"}`, protocol.FnPlaceOrder},
		{"POST", "/positions/flatten", "", protocol.FnFlattenEverything},
		{"POST", "/accounts/Demo1/orders/cancel_and_bracket", `{"instrument":"ES","action":"Buy","quantity":1,"stopLoss":5990}`, protocol.FnCancelAndBracket},
	} {
		brokerBefore, deskBefore := len(f.broker.all()), len(f.desktop.all())
		r := f.env.do(tc.method, "/v1/api/tv"+tc.path, "tb_api_pro", tc.body)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		require.Len(t, f.broker.all(), brokerBefore+1, tc.path)
		require.Len(t, f.desktop.all(), deskBefore, "the agent is not called")
		got := f.broker.all()[brokerBefore]
		require.Equal(t, tc.fn, got.Fn)
		require.Equal(t, "usr_pro", got.User)

		r = f.env.do(tc.method, "/v1/api"+tc.path, "tb_api_pro", tc.body)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		require.Equal(t, f.desktop.all()[deskBefore].Args, got.Args, "the same arguments as the desktop route")
	}
}

// The desktop family's own routes and its AsyncAPI document are not
// served under /v1/api/tv.
func TestBrokerDesktopOnlyRoutesNotFound(t *testing.T) {
	t.Parallel()
	f := newFamilies(t, 1000)
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/v1/api/tv/accounts/Demo1/strategies", ""},
		{"GET", "/v1/api/tv/accounts/Demo1/strategies/s1", ""},
		{"POST", "/v1/api/tv/accounts/Demo1/strategies/start", `{"strategyClass":"X","instrument":"ES"}`},
		{"GET", "/v1/api/tv/strategies", ""},
		{"POST", "/v1/api/tv/market/bars", `{"instrument":"ES"}`},
		{"GET", "/v1/api/tv/atm-templates", ""},
		{"GET", "/v1/api/tv/accounts/Demo1/watermarks", ""},
		{"GET", "/v1/api/tv/market/quote?root=ES", ""},
		{"GET", "/v1/api/tv/asyncapi.json", ""},
	} {
		r := f.env.do(tc.method, tc.path, "tb_api_pro", tc.body)
		require.Equal(t, http.StatusNotFound, r.Status, "%s %s", tc.method, tc.path)
	}
	require.Empty(t, f.broker.all())
	require.Empty(t, f.desktop.all())
}

// A plan that withholds "tv" is refused at the broker family's door with
// 403 plan_required, and keeps the desktop family; a plan below pro is
// refused at both.
func TestBrokerPlanWithheld(t *testing.T) {
	t.Parallel()
	f := newFamilies(t, 1000)
	for _, tc := range []struct {
		token, path string
		status      int
		detail      string
	}{
		{"tb_api_notv", "/v1/api/tv/accounts", http.StatusForbidden, "the broker family is not in the plan"},
		{"tb_api_notv", "/v1/api/accounts", http.StatusOK, ""},
		{"tb_api_nodesk", "/v1/api/tv/accounts", http.StatusOK, ""},
		{"tb_api_nodesk", "/v1/api/accounts", http.StatusOK, ""}, // the desktop routes are as before
		{"tb_api_free", "/v1/api/tv/accounts", http.StatusForbidden, "the trading API needs the pro plan or higher"},
		{"", "/v1/api/tv/accounts", http.StatusUnauthorized, ""},
	} {
		brokerBefore := len(f.broker.all())
		r := f.env.do("GET", tc.path, tc.token, "")
		require.Equal(t, tc.status, r.Status, "%s %s: %s", tc.token, tc.path, r.Raw)
		if tc.status == http.StatusForbidden {
			require.Equal(t, errcode.PlanRequired, r.Body["error"])
			require.Equal(t, tc.detail, r.Body["detail"])
			require.Len(t, f.broker.all(), brokerBefore, "nothing is called")
		}
	}
	// A refused write runs nothing either.
	r := f.env.do("POST", "/v1/api/tv/orders/cancelall", "tb_api_notv", "", tradeapi.IdempotencyKeyHeader, "k")
	require.Equal(t, http.StatusForbidden, r.Status)
	for _, c := range f.broker.all() {
		require.NotEqual(t, protocol.FnCancelAllOrders, c.Fn)
	}
}

// The same Idempotency-Key (or orderId) on the desktop and the broker
// family runs two different writes; a repeat within a family is replayed
// there.
func TestBrokerIdempotencyKeysApart(t *testing.T) {
	t.Parallel()
	f := newFamilies(t, 1000)
	const place = `{"action":"Buy","instrument":"ES 12-26","orderType":"Market","quantity":1,"timeInForce":"Day"}`
	for _, tc := range []struct {
		name    string
		body    string
		headers []string
		desk    string // the request ids each family's Caller hears
		broker  string
	}{
		{"header", place, []string{tradeapi.IdempotencyKeyHeader, "same-key"}, "idem:key:same-key", "idem:tv:key:same-key"},
		{"orderId", strings.TrimSuffix(place, "}") + `,"orderId":"ord-9"}`, nil, "idem:order:ord-9", "idem:tv:order:ord-9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deskBefore, brokerBefore := len(f.desktop.all()), len(f.broker.all())
			r := f.env.do("POST", "/v1/api/accounts/Sim101/orders/place", "tb_api_pro", tc.body, tc.headers...)
			require.Equal(t, http.StatusOK, r.Status, r.Raw)
			r = f.env.do("POST", "/v1/api/tv/accounts/Sim101/orders/place", "tb_api_pro", tc.body, tc.headers...)
			require.Equal(t, http.StatusOK, r.Status, r.Raw)
			require.Empty(t, r.Header.Get(tradeapi.ReplayedHeader), "the tv write is not the desktop one replayed")
			require.Len(t, f.desktop.all(), deskBefore+1)
			require.Len(t, f.broker.all(), brokerBefore+1)
			require.Equal(t, tc.desk, f.desktop.all()[deskBefore].RequestID)
			require.Equal(t, tc.broker, f.broker.all()[brokerBefore].RequestID)

			// A repeat in the broker family is answered from its record.
			r = f.env.do("POST", "/v1/api/tv/accounts/Sim101/orders/place", "tb_api_pro", tc.body, tc.headers...)
			require.Equal(t, http.StatusOK, r.Status, r.Raw)
			require.Equal(t, "true", r.Header.Get(tradeapi.ReplayedHeader))
			require.Len(t, f.broker.all(), brokerBefore+1)
			require.Len(t, f.desktop.all(), deskBefore+1)
		})
	}
}

// An *httpapi.Error from the broker family's Caller is answered as it is:
// status, code, detail and Retry-After.
func TestBrokerCallerHTTPErrorAnsweredAsIs(t *testing.T) {
	t.Parallel()
	f := newFamilies(t, 1000)
	for _, tc := range []struct {
		name    string
		err     *httpapi.Error
		method  string
		path    string
		body    string
		headers []string
	}{
		{"read", &httpapi.Error{Status: http.StatusServiceUnavailable, Code: "broker_unavailable", Detail: "the broker asks for a captcha: log in on its site", RetryAfter: 60},
			"GET", "/v1/api/tv/accounts", "", nil},
		{"write without a key", &httpapi.Error{Status: http.StatusBadRequest, Code: "tradovate_max_pos_limit_reached", Detail: "the position limit is reached"},
			"POST", "/v1/api/tv/orders/cancelall", "", nil},
		{"keyed write", &httpapi.Error{Status: http.StatusServiceUnavailable, Code: "broker_unavailable", Detail: "the broker cannot be reached", RetryAfter: 5},
			"POST", "/v1/api/tv/accounts/Demo1/orders/place", `{"action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day"}`,
			[]string{tradeapi.IdempotencyKeyHeader, "k-503"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.broker.mu.Lock()
			f.broker.reply = func(call) (json.RawMessage, error) { return nil, fmt.Errorf("broker: %w", tc.err) }
			f.broker.mu.Unlock()
			r := f.env.do(tc.method, tc.path, "tb_api_pro", tc.body, tc.headers...)
			require.Equal(t, tc.err.Status, r.Status, r.Raw)
			require.Equal(t, tc.err.Code, r.Body["error"])
			require.Equal(t, tc.err.Detail, r.Body["detail"])
			if tc.err.RetryAfter > 0 {
				require.Equal(t, fmt.Sprint(tc.err.RetryAfter), r.Header.Get("Retry-After"))
			}
		})
	}
}

// Both families draw on the one trading budget of the user.
func TestBrokerSharesTheTradingBudget(t *testing.T) {
	t.Parallel()
	f := newFamilies(t, 2)
	require.Equal(t, http.StatusOK, f.env.do("GET", "/v1/api/accounts", "tb_api_pro", "").Status)
	require.Equal(t, http.StatusOK, f.env.do("GET", "/v1/api/tv/accounts", "tb_api_pro", "").Status)
	for _, path := range []string{"/v1/api/tv/accounts", "/v1/api/accounts"} {
		r := f.env.do("GET", path, "tb_api_pro", "")
		require.Equal(t, http.StatusTooManyRequests, r.Status, path)
		require.Equal(t, errcode.RateLimited, r.Body["error"])
	}
}

func TestNewRefusesUnknownFamily(t *testing.T) {
	t.Parallel()
	for _, fam := range []string{"TV", "desktop", "ninjatrader"} {
		_, err := tradeapi.New(tradeapi.Options{Caller: &fakeAgent{}, Auth: newFakeAuth(), Idempotency: nopStore{}, Family: fam})
		require.Error(t, err, fam)
		require.False(t, slices.Contains(strings.Fields(err.Error()), fam), "the error does not repeat the family")
	}
	_, err := tradeapi.New(tradeapi.Options{Caller: &fakeAgent{}, Auth: newFakeAuth(), Idempotency: nopStore{}, Family: tradeapi.FamilyBroker})
	require.NoError(t, err)
}

// nopStore is an idempotency store that is never reached.
type nopStore struct{}

func (nopStore) ClaimIdempotent(context.Context, store.Idempotent, time.Time, time.Time) (store.Idempotent, bool, error) {
	panic("not reached")
}

func (nopStore) FinishIdempotent(context.Context, store.Idempotent) error { panic("not reached") }

// Door is the family's admission policy with its budgets: the broker
// family's refuses a plan that withholds "tv", and both charge the one
// trading budget.
func TestDoorOfEachFamily(t *testing.T) {
	t.Parallel()
	trading, err := budget.New(budget.Options{Policy: budget.Trading})
	require.NoError(t, err)
	for _, tc := range []struct {
		family, name string
		gated        bool
	}{
		{tradeapi.FamilyDesktop, "trading", false},
		{tradeapi.FamilyBroker, "tv", true},
	} {
		a, err := tradeapi.New(tradeapi.Options{Caller: &fakeAgent{}, Auth: newFakeAuth(), Idempotency: nopStore{}, Budget: trading, Family: tc.family})
		require.NoError(t, err)
		d := a.Door()
		require.Equal(t, tc.name, d.Name)
		require.Equal(t, []*budget.Limiter{trading}, d.Budgets)
		require.NotNil(t, d.IP)
		require.True(t, d.RateLimitHeaders)
		require.Equal(t, tc.gated, d.Gate != nil)
		d.Name = "changed"
		require.Equal(t, tc.name, a.Door().Name, "a copy")
	}
}
