package relay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/stretchr/testify/require"

	"tradebridge/relay/auth"
	"tradebridge/relay/profile"
	"tradebridge/relay/tradeapi"
)

var updateExamples = flag.Bool("update", false, "record the OpenAPI documents' request and success examples (relay/tradeapi/testdata/examples)")

// useProfile switches user's API token to response profile p.
func (s *system) useProfile(user string, p profile.Profile) {
	s.T.Helper()
	require.NoError(s.T, auth.SetTokenProfile(context.Background(), s.Store, s.Users[user].APIToken, p))
}

// contract is an OpenAPI document served by the relay, loaded with
// kin-openapi, and a router over it.
type contract struct {
	doc    *openapi3.T
	router routers.Router
}

func loadContract(t *testing.T, s *system, path string) contract {
	t.Helper()
	resp, err := s.Client.Get(s.Base + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(context.Background()))
	// The relay is reached at s.Base: the document's relative server "/"
	// stands for it.
	doc.Servers = openapi3.Servers{{URL: s.Base + "/"}}
	router, err := legacy.NewRouter(doc)
	require.NoError(t, err)
	return contract{doc: doc, router: router}
}

// exchange is one request and its response, checked against the contract.
type exchange struct {
	route  string // "POST /v1/api/accounts/{account}/orders/place"
	status int
	body   map[string]any
	raw    []byte
	// request is what was sent, as the request examples record it.
	request tradeapi.RequestExampleValue
}

// check sends one request with token and validates the request and the
// response (status, headers, body) against c.
func (c contract) check(t *testing.T, s *system, token, method, path, body string, header ...string) exchange {
	t.Helper()
	req, err := s.NewRequest(method, path, token, body, header...)
	require.NoError(t, err)
	sent := req.URL.Query() // before the validation fills in defaults
	route, params, err := c.router.FindRoute(req)
	require.NoError(t, err, "%s %s is a documented route", method, path)
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	if body != "" {
		// ValidateRequest reads the body; send a copy.
		in.Request = req.Clone(context.Background())
		in.Request.Body = io.NopCloser(strings.NewReader(body))
	}
	reqErr := openapi3filter.ValidateRequest(context.Background(), in)

	resp, err := s.Client.Do(req)
	require.NoError(t, err)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	if resp.StatusCode == http.StatusOK {
		// What the relay accepts, the document accepts.
		require.NoError(t, reqErr, "%s %s: the request matches the document", method, path)
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: false}}
	out.SetBodyBytes(raw)
	require.NoError(t, openapi3filter.ValidateResponse(context.Background(), out), "%s %s answered %d %s", method, path, resp.StatusCode, raw)
	ex := exchange{route: method + " " + route.Path, status: resp.StatusCode, raw: raw}
	require.NoError(t, json.Unmarshal(raw, &ex.body), string(raw))
	if len(params) > 0 {
		ex.request.Path = params
	}
	for name, v := range sent {
		if ex.request.Query == nil {
			ex.request.Query = map[string]string{}
		}
		ex.request.Query[name] = v[0]
	}
	if body != "" {
		require.NoError(t, json.Unmarshal([]byte(body), &ex.request.Body))
	}
	return ex
}

// Every route, called through the real relay, tunnel, agent and simulator
// in both response profiles, answers what its OpenAPI document declares:
// status, headers and body are validated with kin-openapi, so the
// documents cannot drift from the code. The first success of each route
// is the document's example: -update records it, otherwise its shape
// (member names and JSON types) must still be the recorded one's.
func TestContractEndToEnd(t *testing.T) {
	s := newSystem(t)
	s.useProfile("bob", profile.Compatible)
	s.StartAgent("alice")
	s.StartAgent("bob")
	ops := tradeapi.OperationIDs()
	for _, tc := range []struct {
		p    profile.Profile
		user string
		path string
	}{
		{profile.Standard, "alice", tradeapi.OpenAPIPath},
		{profile.Compatible, "bob", tradeapi.OpenAPICompatiblePath},
	} {
		t.Run(string(tc.p), func(t *testing.T) {
			t.Parallel()
			c := loadContract(t, s, tc.path)
			tok := s.Users[tc.user].APIToken
			examples := map[string][]byte{}
			requests := map[string]tradeapi.RequestExampleValue{}
			call := func(method, path, body string, want int, header ...string) exchange {
				t.Helper()
				ex := c.check(t, s, tok, method, path, body, header...)
				require.Equal(t, want, ex.status, "%s %s: %s", method, path, ex.raw)
				if ex.status == http.StatusOK {
					fn := c.rpc(ex.route)
					if tc.p == profile.Standard || profile.Wrapped(fn) {
						require.Contains(t, ex.body, "data", ex.route)
					} else {
						require.NotContains(t, ex.body, "data", "%s: the compatible profile has no data member", ex.route)
					}
					if _, ok := examples[ex.route]; !ok {
						examples[ex.route] = ex.raw
						requests[ex.route] = ex.request
					}
				}
				return ex
			}
			// member reads a member of the data, wherever the profile puts it.
			member := func(ex exchange, key string) any {
				if d, ok := ex.body["data"].(map[string]any); ok {
					return d[key]
				}
				return ex.body[key]
			}
			contractScenario(t, call, member)

			// Documented failures, validated as the successes are.
			const acct = "/v1/api/accounts/Sim101"
			for _, f := range []struct {
				token, method, path, body string
				status                    int
				code                      string
			}{
				{tok, "GET", "/v1/api/accounts/Nope", "", 400, "account_not_found"},
				{tok, "POST", acct + "/positions/close", `{"instrument":"ES"}`, 400, "no_position"},
				{tok, "POST", acct + "/orders/place", `{"action":"Buy","instrument":"ES","orderType":"Limit","quantity":1,"timeInForce":"Day"}`, 400, "missing_required_fields"},
				{tok, "GET", acct + "/orders?bogus=1", "", 400, "unknown_parameter"},
				{tok, "POST", acct + "/orders/place", `{"action":"Hold","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day"}`, 400, "invalid_argument"},
				{tok, "GET", acct + "/strategies/sim-strat-999", "", 400, "strategy_not_found"},
				{"", "GET", "/v1/api/accounts", "", 401, "unauthorized"},
				{s.Users["carol"].APIToken, "GET", "/v1/api/accounts", "", 403, "plan_required"},
			} {
				ex := c.check(t, s, f.token, f.method, f.path, f.body)
				require.Equal(t, f.status, ex.status, "%s %s: %s", f.method, f.path, ex.raw)
				require.Equal(t, f.code, ex.body["error"], "%s %s", f.method, f.path)
			}
			// A repeated write answers the stored response, as documented.
			body := `{"action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day","orderId":"contract-1"}`
			first := c.check(t, s, tok, "POST", acct+"/orders/place", body)
			again := c.check(t, s, tok, "POST", acct+"/orders/place", body)
			require.Equal(t, first.raw, again.raw)

			// Every operation of the document was called.
			for route := range ops {
				require.Contains(t, examples, route, "%s was called", route)
			}
			for route, raw := range examples {
				file := filepath.Join("tradeapi", filepath.FromSlash(tradeapi.ExampleFile(tc.p, ops[route])))
				var pretty bytes.Buffer
				require.NoError(t, json.Indent(&pretty, raw, "", "  "))
				if *updateExamples {
					require.NoError(t, os.WriteFile(file, append(bytes.TrimSpace(pretty.Bytes()), '\n'), 0o644))
					continue
				}
				recorded, err := os.ReadFile(file)
				require.NoError(t, err, "%s: record the examples with go test ./relay -run TestContractEndToEnd -update", route)
				require.Equal(t, shapeOf(t, recorded), shapeOf(t, raw),
					"%s answers in another shape than its recorded example: check the change, then go test ./relay -run TestContractEndToEnd -update", route)
			}
			if tc.p == profile.Standard {
				recordRequests(t, ops, requests)
			}
		})
	}
}

// recordRequests records, with -update, the request of each operation's
// first success as its request example (the OpenAPI documents show it);
// otherwise it checks that every operation has one recorded.
func recordRequests(t *testing.T, ops map[string]string, requests map[string]tradeapi.RequestExampleValue) {
	t.Helper()
	for route, op := range ops {
		file := filepath.Join("tradeapi", filepath.FromSlash(tradeapi.RequestExampleFile(op)))
		if !*updateExamples {
			_, err := os.Stat(file)
			require.NoError(t, err, "%s: record the request examples with go test ./relay -run TestContractEndToEnd -update", route)
			continue
		}
		raw, err := json.MarshalIndent(requests[route], "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
		require.NoError(t, os.WriteFile(file, append(raw, '\n'), 0o644))
	}
}

// rpc returns the x-rpc of the operation of route.
func (c contract) rpc(route string) string {
	method, path, _ := strings.Cut(route, " ")
	op := c.doc.Paths.Find(path).GetOperation(method)
	fn, _ := op.Extensions["x-rpc"].(string)
	return fn
}

// contractScenario calls every route once or more, in an order that gives
// each a meaningful answer on the simulator.
func contractScenario(t *testing.T, call func(method, path, body string, want int, header ...string) exchange, member func(exchange, string) any) {
	const acct = "/v1/api/accounts/Sim101"
	call("POST", acct+"/orders/place", `{"action":"Buy","instrument":"ES 12-26","orderType":"Market","quantity":2,"timeInForce":"Day","strategyTag":"bot-a"}`, 200)
	r := call("POST", acct+"/orders/place", `{"action":"Sell","instrument":"ES","orderType":"Limit","limitPrice":7000,"quantity":1,"timeInForce":"Gtc"}`, 200)
	working, _ := member(r, "orderId").(string)
	require.NotEmpty(t, working)
	call("GET", acct+"/orders/"+working, "", 200)
	call("POST", acct+"/orders/"+working+"/change", `{"limitPrice":7001}`, 200)
	call("GET", "/v1/api/executions/order/"+working, "", 200)
	call("POST", acct+"/orders/"+working+"/cancel", "", 200)
	call("GET", "/v1/api/accounts", "", 200)
	call("GET", "/v1/api/accounts/snapshot", "", 200)
	call("GET", acct, "", 200)
	call("GET", acct+"/watermarks", "", 200)
	call("GET", acct+"/position?instrument=ES%2012-26", "", 200)
	call("GET", acct+"/positions", "", 200)
	call("GET", acct+"/orders?activeOnly=false", "", 200)
	call("GET", acct+"/executions", "", 200)
	call("GET", acct+"/quote?instrument=ES%2012-26", "", 200)
	call("GET", "/v1/api/atm-templates", "", 200)
	call("GET", "/v1/api/positions?includeFlat=true", "", 200)
	call("GET", "/v1/api/orders?lookbackTime=320", "", 200)
	call("GET", "/v1/api/market/info?root=ES", "", 200)
	call("GET", "/v1/api/market/quote?instrument=ES%2012-26&showRollover=true", "", 200)
	call("POST", "/v1/api/market/bars", `{"instrument":"ES 12-26","periodType":"minute","period":5,"limit":3}`, 200)

	call("POST", acct+"/positions/close", `{"instrument":"ES 12-26","quantity":1,"strategyTag":"bot-a"}`, 200)
	call("POST", acct+"/positions/reverse", `{"instrument":"ES 12-26","strategyTag":"bot-a"}`, 200)
	call("POST", acct+"/positions/reverseposition", `{"instrument":"ES 12-26","action":"Buy","quantity":1,"orderType":"Market","timeInForce":"Day"}`, 200)
	call("POST", acct+"/orders/cancel_and_bracket", `{"instrument":"ES 12-26","action":"Buy","quantity":1,"takeProfit":6100,"stopLoss":5900,"ocoId":"bracket-1"}`, 200)
	call("POST", acct+"/orders/cancel", `{"instrument":"ES 12-26"}`, 200)
	call("POST", acct+"/orders/flatplace", `{"action":"Sell","instrument":"ES 12-26","orderType":"Market","quantity":1,"timeInForce":"Day"}`, 200)
	call("POST", acct+"/positions/flatten", `{"instrument":"ES 12-26"}`, 200)
	call("POST", "/v1/api/positions/flatten", `{"account":"Sim101"}`, 200)
	call("POST", "/v1/api/positions/flatten", "", 200) // FlattenEverything
	call("POST", "/v1/api/orders/cancelall", "", 200)

	r = call("POST", acct+"/strategies/start", `{"strategy_class":"SampleMACrossOver","instrument":"ES 12-26","period_type":"minute","period":"1","parameters":{"Fast":5,"Slow":20}}`, 200)
	id, _ := member(r, "id").(string)
	require.NotEmpty(t, id)
	base := acct + "/strategies/" + id
	call("GET", acct+"/strategies", "", 200)
	call("GET", base, "", 200)
	call("POST", base+"/disable", "", 200)
	call("POST", base+"/enable", "", 200)
	call("POST", base+"/close", "", 200)
	call("GET", "/v1/api/strategies?includeTerminal=true", "", 200)
	call("POST", base+"/enable", "", 400) // strategy_terminal
}

// shapeOf describes a JSON document by its member names and JSON types
// (an array by its first element), which stay the same from run to run
// while ids, prices and times may not.
func shapeOf(t *testing.T, raw []byte) string {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(raw, &v))
	var b strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			b.WriteByte('{')
			for _, k := range keys {
				fmt.Fprintf(&b, "%s:", k)
				walk(v[k])
				b.WriteByte(',')
			}
			b.WriteByte('}')
		case []any:
			b.WriteByte('[')
			if len(v) > 0 {
				walk(v[0])
			}
			b.WriteByte(']')
		case string:
			b.WriteString("string")
		case float64:
			b.WriteString("number")
		case bool:
			b.WriteString("bool")
		case nil:
			b.WriteString("null")
		}
	}
	walk(v)
	return b.String()
}
