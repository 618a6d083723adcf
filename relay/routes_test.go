package relay_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/budget"
)

// Every route of the trading API, called through the real relay, tunnel,
// agent and simulator: a happy path each, then the documented failures.
func TestEveryRouteEndToEnd(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	ra := s.StartAgent("alice")
	tok := s.Users["alice"].APIToken
	covered := map[string]bool{}
	call := func(method, path, route, body string, want int) response {
		t.Helper()
		r := s.Do(method, path, tok, body)
		require.Equal(t, want, r.Status, "%s %s: %s", method, path, r.Raw)
		covered[method+" "+route] = true
		return r
	}
	const acct = "/v1/api/accounts/Sim101"
	data := func(r response) map[string]any {
		var m map[string]any
		require.NoError(t, json.Unmarshal(r.Data, &m), string(r.Data))
		return m
	}

	// Orders and positions.
	r := call("POST", acct+"/orders/place", "/v1/api/accounts/{account}/orders/place",
		`{"action":"Buy","instrument":"ES 12-26","orderType":"Market","quantity":2,"timeInForce":"Day","strategyTag":"bot-a"}`, 200)
	require.NotEmpty(t, r.OrderID)
	r = call("POST", acct+"/orders/place", "/v1/api/accounts/{account}/orders/place",
		`{"action":"Sell","instrument":"ES","orderType":"Limit","limitPrice":7000,"quantity":1,"timeInForce":"Gtc"}`, 200)
	working := r.OrderID
	call("GET", acct+"/orders/"+working, "/v1/api/accounts/{account}/orders/{orderId}", "", 200)
	call("POST", acct+"/orders/"+working+"/change", "/v1/api/accounts/{account}/orders/{orderId}/change", `{"limitPrice":7001}`, 200)
	call("GET", "/v1/api/executions/order/"+working, "/v1/api/executions/order/{orderId}", "", 200)
	call("POST", acct+"/orders/"+working+"/cancel", "/v1/api/accounts/{account}/orders/{orderId}/cancel", "", 200)
	call("GET", "/v1/api/accounts", "/v1/api/accounts", "", 200)
	call("GET", "/v1/api/accounts/snapshot", "/v1/api/accounts/snapshot", "", 200)
	call("GET", acct, "/v1/api/accounts/{account}", "", 200)
	call("GET", acct+"/watermarks", "/v1/api/accounts/{account}/watermarks", "", 200)
	r = call("GET", acct+"/position?instrument=ES%2012-26", "/v1/api/accounts/{account}/position", "", 200)
	require.Equal(t, "Long", data(r)["marketPosition"])
	call("GET", acct+"/positions", "/v1/api/accounts/{account}/positions", "", 200)
	call("GET", acct+"/orders?activeOnly=false", "/v1/api/accounts/{account}/orders", "", 200)
	call("GET", acct+"/executions", "/v1/api/accounts/{account}/executions", "", 200)
	call("GET", acct+"/quote?instrument=ES%2012-26", "/v1/api/accounts/{account}/quote", "", 200)
	call("GET", "/v1/api/atm-templates", "/v1/api/atm-templates", "", 200)
	call("GET", "/v1/api/positions?includeFlat=true", "/v1/api/positions", "", 200)
	call("GET", "/v1/api/orders?lookbackTime=320", "/v1/api/orders", "", 200)
	call("GET", "/v1/api/market/info?root=ES", "/v1/api/market/info", "", 200)
	call("GET", "/v1/api/market/quote?instrument=ES%2012-26&showRollover=true", "/v1/api/market/quote", "", 200)
	r = call("POST", "/v1/api/market/bars", "/v1/api/market/bars", `{"instrument":"ES 12-26","periodType":"minute","period":5,"limit":10}`, 200)
	require.Len(t, data(r)["bars"], 10)

	// Operations over the position.
	call("POST", acct+"/positions/close", "/v1/api/accounts/{account}/positions/close", `{"instrument":"ES 12-26","quantity":1,"strategyTag":"bot-a"}`, 200)
	r = call("POST", acct+"/positions/reverse", "/v1/api/accounts/{account}/positions/reverse", `{"instrument":"ES 12-26","strategyTag":"bot-a"}`, 200)
	require.NotEmpty(t, r.OrderID)
	r = call("POST", acct+"/positions/reverseposition", "/v1/api/accounts/{account}/positions/reverseposition",
		`{"instrument":"ES 12-26","action":"Buy","quantity":1,"orderType":"Market","timeInForce":"Day"}`, 200)
	require.NotEmpty(t, r.OrderID)
	r = call("POST", acct+"/orders/cancel_and_bracket", "/v1/api/accounts/{account}/orders/cancel_and_bracket",
		`{"instrument":"ES 12-26","action":"Buy","quantity":1,"takeProfit":6100,"stopLoss":5900}`, 200)
	var top struct {
		OrderIDs []string `json:"orderIds"`
	}
	require.NoError(t, json.Unmarshal(r.Raw, &top))
	require.Len(t, top.OrderIDs, 2)
	call("POST", acct+"/orders/cancel", "/v1/api/accounts/{account}/orders/cancel", `{"instrument":"ES 12-26"}`, 200)
	call("POST", acct+"/orders/flatplace", "/v1/api/accounts/{account}/orders/flatplace",
		`{"action":"Sell","instrument":"ES 12-26","orderType":"Market","quantity":1,"timeInForce":"Day"}`, 200)
	call("POST", acct+"/positions/flatten", "/v1/api/accounts/{account}/positions/flatten", `{"instrument":"ES 12-26"}`, 200)
	call("POST", "/v1/api/positions/flatten", "/v1/api/positions/flatten", `{"account":"Sim101"}`, 200)
	call("POST", "/v1/api/positions/flatten", "/v1/api/positions/flatten", "", 200) // FlattenEverything
	call("POST", "/v1/api/orders/cancelall", "/v1/api/orders/cancelall", "", 200)
	ps, err := ra.Sim.Positions(t.Context(), "Sim101")
	require.NoError(t, err)
	require.Empty(t, ps, "everything was flattened")

	// Strategies.
	r = call("POST", acct+"/strategies/start", "/v1/api/accounts/{account}/strategies/start",
		`{"strategy_class":"SampleMACrossOver","instrument":"ES 12-26","period_type":"minute","period":"1","parameters":{"Fast":5,"Slow":20}}`, 200)
	id, _ := data(r)["id"].(string)
	require.NotEmpty(t, id)
	base := acct + "/strategies/" + id
	call("GET", acct+"/strategies", "/v1/api/accounts/{account}/strategies", "", 200)
	call("GET", base, "/v1/api/accounts/{account}/strategies/{id}", "", 200)
	call("POST", base+"/disable", "/v1/api/accounts/{account}/strategies/{id}/disable", "", 200)
	call("POST", base+"/enable", "/v1/api/accounts/{account}/strategies/{id}/enable", "", 200)
	call("POST", base+"/close", "/v1/api/accounts/{account}/strategies/{id}/close", "", 200)
	call("GET", "/v1/api/strategies?includeTerminal=true", "/v1/api/strategies", "", 200)
	// A terminal strategy cannot come back.
	r = call("POST", base+"/enable", "/v1/api/accounts/{account}/strategies/{id}/enable", "", 400)
	require.Equal(t, "strategy_terminal", r.Error)

	// Documented operation failures: 400 with the agent's code, nothing placed.
	before, err := ra.Sim.Orders(t.Context(), "Sim101")
	require.NoError(t, err)
	for _, tc := range []struct{ method, path, body, code string }{
		{"POST", acct + "/positions/reverseposition", `{"instrument":"ES","action":"Buy","quantity":1,"orderType":"Market","timeInForce":"Day"}`, "no_position"},
		{"POST", acct + "/positions/close", `{"instrument":"ES"}`, "no_position"},
		{"POST", acct + "/orders/place", `{"action":"Buy","instrument":"ZZ","orderType":"Market","quantity":1,"timeInForce":"Day"}`, "invalid_instrument"},
		{"POST", acct + "/orders/place", `{"action":"Buy","instrument":"ES","orderType":"Limit","quantity":1,"timeInForce":"Day"}`, "missing_required_fields"},
		{"POST", "/v1/api/accounts/Nope/orders/place", `{"action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day"}`, "account_not_found"},
		{"POST", acct + "/orders/place", `{"action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day","strategy":"No Such ATM"}`, "atm_template_not_found"},
		{"POST", acct + "/orders/place", `{"action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day","requireMarketPosition":"long"}`, "market_position_mismatch"},
		{"GET", acct + "/strategies/sim-strat-999", "", "strategy_not_found"},
		{"POST", acct + "/orders/nope-1/cancel", "", "order_not_found"},
	} {
		r := s.Do(tc.method, tc.path, tok, tc.body)
		require.Equal(t, http.StatusBadRequest, r.Status, "%s %s: %s", tc.method, tc.path, r.Raw)
		require.Equal(t, tc.code, r.Error, "%s %s", tc.method, tc.path)
		require.NotContains(t, r.Detail, "Nope")
		require.NotContains(t, r.Detail, "No Such ATM")
	}
	after, err := ra.Sim.Orders(t.Context(), "Sim101")
	require.NoError(t, err)
	require.Equal(t, len(before), len(after), "no failure placed anything")

	// The activity log (its entries are the subject of
	// TestActivityEndToEnd).
	r = call("GET", "/v1/api/activity?limit=5", "/v1/api/activity", "", 200)
	require.Contains(t, data(r), "events")

	// The TradingView webhook (its alerts are the subject of
	// webhook_e2e_test.go).
	r = call("GET", "/v1/api/webhook", "/v1/api/webhook", "", 200)
	url, _ := data(r)["url"].(string)
	key, _ := data(r)["key"].(string)
	call("POST", url, "/v1/send/{webhookId}", `{"key":"`+key+`","command":"FLATTENEVERYTHING"}`, 200)
	r = call("GET", "/v1/api/webhook/alerts?limit=5", "/v1/api/webhook/alerts", "", 200)
	require.Len(t, data(r)["alerts"], 1)

	// Every documented route was called.
	doc := s.Do("GET", "/v1/api/openapi.json", "", "")
	var spec struct {
		Paths map[string]map[string]map[string]any `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(doc.Raw, &spec))
	for path, ops := range spec.Paths {
		for method, op := range ops {
			if op["x-route"] == "manage" {
				continue // the Management API's alerts: alerts_e2e_test.go
			}
			require.True(t, covered[strings.ToUpper(method)+" "+path], "%s %s has an end-to-end test", method, path)
		}
	}
}

func TestAgentAbsentAndBudget(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.Budget = budget.Trading // the spec's 180 per minute, burst 20
	s.Restart()
	tok := s.Users["alice"].APIToken
	r := s.Do("POST", "/v1/api/accounts/Sim101/orders/place", tok, marketBuy)
	require.Equal(t, http.StatusRequestTimeout, r.Status)
	require.Equal(t, "addon_disconnected", r.Error)
	s.StartAgent("alice")
	// The burst of 20 (less the first call, unless the budget refilled
	// while the agent started), then 429: no more than the burst and
	// what refilled meanwhile, at 3 a second.
	start := time.Now()
	served := 0
	for served < 100 {
		r = s.Do("GET", "/v1/api/accounts/Sim101/positions", tok, "")
		if r.Status != http.StatusOK {
			break
		}
		served++
	}
	require.Equal(t, http.StatusTooManyRequests, r.Status)
	require.GreaterOrEqual(t, served, 19)
	require.LessOrEqual(t, served, 20+int(time.Since(start).Seconds()*3)+1)
	require.Equal(t, "rate_limited", r.Error)
	require.Regexp(t, regexp.MustCompile(`^[1-9][0-9]*$`), r.Header.Get("Retry-After"))
	// Another user has a budget of their own.
	require.Equal(t, http.StatusRequestTimeout, s.Do("GET", "/v1/api/accounts", s.Users["bob"].APIToken, "").Status)
}
