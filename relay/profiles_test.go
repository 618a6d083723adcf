package relay_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/profile"
)

// profileStep is one call of a session that touches every route.
type profileStep struct {
	method, path, route, body string
	// exact, when set, are the compatible profile's top-level keys, as the
	// API specification's table promises them to ported bots.
	exact []string
}

// profileSession calls every route of the trading API once, in an order
// in which each succeeds on a fresh simulator. {id} in a path is the last
// order or strategy id seen.
var profileSession = []profileStep{
	{"GET", "/v1/api/accounts", "/v1/api/accounts", "", []string{"accounts", "success"}},
	{"GET", "/v1/api/accounts/snapshot", "/v1/api/accounts/snapshot", "", []string{"accounts", "epoch", "success", "timestamp", "type"}},
	{"GET", acct, "/v1/api/accounts/{account}", "", nil},
	{"GET", acct + "/watermarks", "/v1/api/accounts/{account}/watermarks", "", []string{"data", "success"}},
	{"POST", acct + "/orders/place", "/v1/api/accounts/{account}/orders/place", `{"action":"Buy","instrument":"ES 12-26","orderType":"Market","quantity":2,"timeInForce":"Day","strategyTag":"bot-a"}`, []string{"order", "orderId", "success"}},
	{"POST", acct + "/orders/place", "/v1/api/accounts/{account}/orders/place", `{"action":"Sell","instrument":"ES","orderType":"Limit","limitPrice":7000,"quantity":1,"timeInForce":"Gtc"}`, []string{"order", "orderId", "success"}},
	{"GET", acct + "/orders/{id}", "/v1/api/accounts/{account}/orders/{orderId}", "", nil},
	{"POST", acct + "/orders/{id}/change", "/v1/api/accounts/{account}/orders/{orderId}/change", `{"limitPrice":7001}`, []string{"order", "orderId", "success"}},
	{"GET", "/v1/api/executions/order/{id}", "/v1/api/executions/order/{orderId}", "", []string{"executions", "success"}},
	{"POST", acct + "/orders/{id}/cancel", "/v1/api/accounts/{account}/orders/{orderId}/cancel", "", []string{"order", "orderId", "success"}},
	{"GET", acct + "/position?instrument=ES%2012-26", "/v1/api/accounts/{account}/position", "", nil},
	{"GET", acct + "/positions", "/v1/api/accounts/{account}/positions", "", []string{"count", "positions", "success"}},
	{"GET", acct + "/orders?activeOnly=false", "/v1/api/accounts/{account}/orders", "", []string{"orders", "success"}},
	{"GET", acct + "/executions", "/v1/api/accounts/{account}/executions", "", []string{"executions", "success"}},
	{"GET", acct + "/quote?instrument=ES%2012-26", "/v1/api/accounts/{account}/quote", "", []string{"quotes", "success"}},
	{"GET", "/v1/api/atm-templates", "/v1/api/atm-templates", "", []string{"atmTemplates", "success"}},
	{"GET", "/v1/api/positions?includeFlat=true", "/v1/api/positions", "", []string{"count", "positions", "success"}},
	{"GET", "/v1/api/orders?lookbackTime=320", "/v1/api/orders", "", []string{"orders", "success"}},
	{"GET", "/v1/api/market/info?root=ES", "/v1/api/market/info", "", nil},
	{"GET", "/v1/api/market/quote?instrument=ES%2012-26&showRollover=true", "/v1/api/market/quote", "", []string{"quotes", "success"}},
	{"POST", "/v1/api/market/bars", "/v1/api/market/bars", `{"instrument":"ES 12-26","periodType":"minute","period":5,"limit":10}`, nil},
	{"POST", acct + "/positions/close", "/v1/api/accounts/{account}/positions/close", `{"instrument":"ES 12-26","percent":0.5,"strategyTag":"bot-a"}`, []string{"closedPositions", "order", "orderId", "orderIds", "success"}},
	{"POST", acct + "/positions/reverse", "/v1/api/accounts/{account}/positions/reverse", `{"instrument":"ES 12-26","strategyTag":"bot-a"}`, nil},
	{"POST", acct + "/positions/reverseposition", "/v1/api/accounts/{account}/positions/reverseposition", `{"instrument":"ES 12-26","action":"Buy","quantity":1,"orderType":"Market","timeInForce":"Day"}`, nil},
	{"POST", acct + "/orders/cancel_and_bracket", "/v1/api/accounts/{account}/orders/cancel_and_bracket", `{"instrument":"ES 12-26","action":"Buy","quantity":1,"takeProfit":6100,"stopLoss":5900}`, nil},
	{"POST", acct + "/orders/cancel", "/v1/api/accounts/{account}/orders/cancel", `{"instrument":"ES 12-26"}`, []string{"orderIds", "success"}},
	{"POST", acct + "/orders/flatplace", "/v1/api/accounts/{account}/orders/flatplace", `{"action":"Sell","instrument":"ES 12-26","orderType":"Market","quantity":1,"timeInForce":"Day"}`, nil},
	{"POST", acct + "/positions/flatten", "/v1/api/accounts/{account}/positions/flatten", `{"instrument":"ES 12-26"}`, []string{"cancelledOrderIds", "closedPositions", "orderIds", "success"}},
	{"POST", "/v1/api/positions/flatten", "/v1/api/positions/flatten", `{"account":"Sim101"}`, []string{"cancelledOrderIds", "closedPositions", "orderIds", "success"}},
	{"POST", "/v1/api/positions/flatten", "/v1/api/positions/flatten", "", []string{"cancelledOrderIds", "closedPositions", "orderIds", "success"}},
	{"POST", "/v1/api/orders/cancelall", "/v1/api/orders/cancelall", "", []string{"orderIds", "success"}},
	{"POST", acct + "/strategies/start", "/v1/api/accounts/{account}/strategies/start", `{"strategy_class":"SampleMACrossOver","instrument":"ES 12-26","period_type":"minute","period":"1"}`, nil},
	{"GET", acct + "/strategies", "/v1/api/accounts/{account}/strategies", "", []string{"strategies", "success"}},
	{"GET", acct + "/strategies/{id}", "/v1/api/accounts/{account}/strategies/{id}", "", nil},
	{"POST", acct + "/strategies/{id}/disable", "/v1/api/accounts/{account}/strategies/{id}/disable", "", nil},
	{"POST", acct + "/strategies/{id}/enable", "/v1/api/accounts/{account}/strategies/{id}/enable", "", nil},
	{"POST", acct + "/strategies/{id}/close", "/v1/api/accounts/{account}/strategies/{id}/close", "", nil},
	{"GET", "/v1/api/strategies?includeTerminal=true", "/v1/api/strategies", "", []string{"strategies", "success"}},
}

const acct = "/v1/api/accounts/Sim101"

// Every route in both response profiles, against the simulator: the
// compatible profile's top-level keys are the ones the API
// specification's table promises, or else exactly the fields of the function's data type; the
// standard profile's data holds the same members, and writes carry their
// ids at the top level too.
func TestEveryRouteInBothProfiles(t *testing.T) {
	t.Parallel()
	bodies := map[profile.Profile][]map[string]any{}
	for _, p := range profile.All {
		s := newSystem(t)
		s.StartAgent("alice")
		tok := s.Users["alice"].APIToken
		if p == profile.Compatible {
			tok = s.CompatibleToken("alice")
		}
		fns := rpcOfRoutes(t, s)
		covered := map[string]bool{}
		lastID := ""
		for _, st := range profileSession {
			path := strings.ReplaceAll(st.path, "{id}", lastID)
			r := s.Do(st.method, path, tok, st.body)
			require.Equal(t, http.StatusOK, r.Status, "%s %s %s: %s", p, st.method, path, r.Raw)
			var body map[string]any
			require.NoError(t, json.Unmarshal(r.Raw, &body))
			require.Equal(t, true, body["success"])
			bodies[p] = append(bodies[p], body)
			covered[st.method+" "+st.route] = true
			fn := fns[st.method+" "+st.route]
			if st.method == "POST" && st.route == "/v1/api/positions/flatten" && st.body == "" {
				fn = "FlattenEverything"
			}
			members := body
			if p == profile.Standard {
				want := []string{"data", "success"}
				for _, k := range []string{"orderId", "orderIds"} {
					if _, ok := body["data"].(map[string]any)[k]; ok && isWrite(st.method) {
						want = append(want, k)
					}
				}
				slices.Sort(want)
				require.Equal(t, want, keysOf(body), "%s %s", st.method, path)
				members = body["data"].(map[string]any)
			} else if profile.Wrapped(fn) {
				members = body["data"].(map[string]any)
			}
			if st.exact != nil && p == profile.Compatible {
				require.Equal(t, st.exact, keysOf(body), "%s %s %s", p, st.method, path)
			}
			typ, ok := profile.DataType(fn)
			require.True(t, ok, fn)
			required, all := jsonFields(typ)
			for _, k := range required {
				require.Contains(t, members, k, "%s %s %s: %s", p, st.method, path, fn)
			}
			for k := range members {
				require.True(t, all[k] || (k == "success" && members["success"] == true), "%s %s %s: unexpected member %s", p, st.method, path, k)
			}
			if id, ok := members["orderId"].(string); ok && id != "" {
				lastID = id
			}
			if id, ok := members["id"].(string); ok && strings.HasPrefix(id, "sim-strat-") {
				lastID = id
			}
		}
		for route := range fns {
			require.True(t, covered[route], "%s is called in both profiles", route)
		}
	}
	// The two profiles differ only by the wrapper.
	for i, std := range bodies[profile.Standard] {
		st := profileSession[i]
		if st.exact != nil && slices.Contains(st.exact, "data") {
			continue
		}
		compat := bodies[profile.Compatible][i]
		require.Equal(t, keysOf(std["data"].(map[string]any)), keysOf(without(compat, "success")), "%s %s", st.method, st.path)
	}
}

func isWrite(method string) bool { return method == "POST" }

func keysOf(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

func without(m map[string]any, k string) map[string]any {
	c := maps.Clone(m)
	delete(c, k)
	return c
}

// rpcOfRoutes maps "METHOD path" to the RPC function the OpenAPI document
// says the route calls.
func rpcOfRoutes(t *testing.T, s *system) map[string]string {
	t.Helper()
	doc := s.Do("GET", "/v1/api/openapi.json", "", "")
	var spec struct {
		Paths map[string]map[string]struct {
			RPC string `json:"x-rpc"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(doc.Raw, &spec))
	out := map[string]string{}
	for path, ops := range spec.Paths {
		for method, op := range ops {
			if op.RPC != "" {
				out[strings.ToUpper(method)+" "+path] = op.RPC
			}
		}
	}
	require.NotEmpty(t, out)
	return out
}

// jsonFields returns the JSON member names of a struct type: those always
// present, and all of them.
func jsonFields(t reflect.Type) (required []string, all map[string]bool) {
	all = map[string]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			name, opts, _ := strings.Cut(tag, ",")
			if f.Anonymous && tag == "" {
				walk(f.Type)
				continue
			}
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			all[name] = true
			if !strings.Contains(opts, "omitempty") {
				required = append(required, name)
			}
		}
	}
	walk(t)
	return required, all
}
