package relay_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/relay/auth"
	"tradebridge/relay/mcp"
	"tradebridge/relay/tradeapi"
	"tradebridge/relay/tradecall"
)

// bearer adds an API token to every request of an MCP client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession connects the SDK's own client to the relay's /mcp with
// token, speaking protocol revision version ("" for the SDK's latest).
func (s *system) mcpSession(t testing.TB, token, version string) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Long)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "relay-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint:             s.Base + mcp.Path,
		HTTPClient:           &http.Client{Transport: bearer{token}, Timeout: testkit.Long},
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// tools lists a session's tools by name.
func tools(t *testing.T, cs *sdk.ClientSession) map[string]*sdk.Tool {
	t.Helper()
	out := map[string]*sdk.Tool{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		require.NoError(t, err)
		out[tool.Name] = tool
	}
	return out
}

// callTool calls a tool and returns its result, with the structured
// content decoded.
func callTool(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (*sdk.CallToolResult, map[string]any) {
	t.Helper()
	res, m, err := tryTool(cs, name, args)
	require.NoError(t, err)
	return res, m
}

// tryTool is callTool without failing the test, for conditions of
// require.Eventually.
func tryTool(cs *sdk.ClientSession, name string, args map[string]any) (*sdk.CallToolResult, map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Long)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, nil, err
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil, nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, nil, err
	}
	return res, m, nil
}

// An assistant connects with a token, in the current protocol revision
// (server/discover) or an older one (initialize), and sees one tool per
// operation of the route table, with its description and schema; the
// optional tools follow the plan and the broker link.
func TestMCPListsTheOperations(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	for _, version := range []string{"", "2025-11-25", "2025-06-18"} {
		t.Run("protocol "+version, func(t *testing.T) {
			cs := s.mcpSession(t, s.Users["alice"].APIToken, version)
			init := cs.InitializeResult()
			require.NotNil(t, init)
			require.Equal(t, "tradebridge-relay", init.ServerInfo.Name)
			require.Contains(t, init.Instructions, "idempotencyKey")
			got := tools(t, cs)
			table := tradecall.Desktop()
			for _, fn := range table.Functions() {
				tool, ok := got[fn]
				require.True(t, ok, "%s is a tool", fn)
				require.Equal(t, table.Describe(fn), tool.Description)
				require.NotNil(t, tool.Annotations, fn)
				if table.Write(fn) {
					require.NotNil(t, tool.Annotations.DestructiveHint, fn)
					assert.True(t, *tool.Annotations.DestructiveHint, fn)
					assert.False(t, tool.Annotations.IdempotentHint, fn)
					assert.False(t, tool.Annotations.ReadOnlyHint, fn)
					assert.Contains(t, schemaProperties(t, tool), tradecall.IdempotencyKeyField, fn)
				} else {
					assert.True(t, tool.Annotations.ReadOnlyHint, fn)
					assert.NotContains(t, schemaProperties(t, tool), tradecall.IdempotencyKeyField, fn)
				}
			}
			require.Contains(t, got, "FlattenEverything")
			require.Contains(t, got, mcp.ToolGetActivity)
			require.NotContains(t, got, mcp.ToolGetMonitors, "the Management API's reads are the elite plan's")
			for name := range got {
				require.False(t, strings.HasPrefix(name, mcp.BrokerPrefix), "%s: no broker link, no broker tools", name)
			}
		})
	}
	t.Run("elite", func(t *testing.T) {
		got := tools(t, s.mcpSession(t, s.Users["bob"].APIToken, ""))
		require.Contains(t, got, mcp.ToolGetMonitors)
		require.Contains(t, got, mcp.ToolGetCopiers)
	})
	t.Run("resources", func(t *testing.T) {
		cs := s.mcpSession(t, s.Users["alice"].APIToken, "")
		for uri, want := range map[string]string{mcp.ResourceErrors: `"insufficient_scope"`, mcp.ResourceInstruments: "ES 12-26"} {
			res, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: uri})
			require.NoError(t, err)
			require.Len(t, res.Contents, 1)
			require.Contains(t, res.Contents[0].Text, want, uri)
		}
	})
}

// schemaProperties returns the names of a tool's input schema's
// properties.
func schemaProperties(t *testing.T, tool *sdk.Tool) map[string]any {
	t.Helper()
	m, ok := tool.InputSchema.(map[string]any)
	require.True(t, ok, "%s's schema is an object", tool.Name)
	props, _ := m["properties"].(map[string]any)
	return props
}

// compileSchema compiles a tool's input schema as JSON Schema draft
// 2020-12.
func compileSchema(t *testing.T, tool *sdk.Tool) *jsonschema.Schema {
	t.Helper()
	raw, err := json.Marshal(tool.InputSchema)
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "https://relay.test/tools/" + tool.Name + ".json"
	require.NoError(t, c.AddResource(url, doc))
	sch, err := c.Compile(url)
	require.NoError(t, err, "%s's input schema compiles", tool.Name)
	return sch
}

// instance turns a Go value into what the schema validator reads.
func instance(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	out, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	require.NoError(t, err)
	return out
}

// Every tool's schema is valid JSON Schema; it accepts the OpenAPI
// document's example of its operation, and refuses a value out of range,
// a value outside an enumeration and a field the operation does not take.
func TestMCPSchemasAcceptTheExamples(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	got := tools(t, s.mcpSession(t, s.Users["bob"].APIToken, ""))
	examples := 0
	for opID, fn := range tradeapi.OperationFunctions() {
		tool, ok := got[fn]
		require.True(t, ok, "%s (%s) is a tool", fn, opID)
		sch := compileSchema(t, tool)
		args, ok := tradeapi.RequestExampleArgs(opID)
		if !ok {
			continue
		}
		examples++
		require.NoError(t, sch.Validate(instance(t, args)), "%s accepts the example of %s", fn, opID)
	}
	require.Equal(t, len(tradeapi.OperationFunctions()), examples, "every operation has a request example")

	for name, tool := range got {
		sch := compileSchema(t, tool)
		props := schemaProperties(t, tool)
		require.Error(t, sch.Validate(instance(t, map[string]any{"noSuchField": 1})), "%s refuses an unknown field", name)
		for prop, raw := range props {
			ps, _ := raw.(map[string]any)
			base := requiredArgs(t, tool)
			switch {
			case ps["maximum"] != nil:
				base[prop] = ps["maximum"].(float64) + 1
				require.Error(t, sch.Validate(instance(t, base)), "%s refuses %s above its maximum", name, prop)
			case ps["enum"] != nil:
				base[prop] = "NotAValue"
				require.Error(t, sch.Validate(instance(t, base)), "%s refuses %s outside its enumeration", name, prop)
			case ps["maxLength"] != nil:
				base[prop] = strings.Repeat("x", int(ps["maxLength"].(float64))+1)
				require.Error(t, sch.Validate(instance(t, base)), "%s refuses %s longer than its maxLength", name, prop)
			}
		}
	}
}

// requiredArgs is a placeholder value for each required property of a
// tool, so that a test changes one property of an otherwise complete
// call.
func requiredArgs(t *testing.T, tool *sdk.Tool) map[string]any {
	t.Helper()
	m := tool.InputSchema.(map[string]any)
	out := map[string]any{}
	req, _ := m["required"].([]any)
	props, _ := m["properties"].(map[string]any)
	for _, r := range req {
		name := r.(string)
		ps, _ := props[name].(map[string]any)
		switch ps["type"] {
		case "integer", "number":
			out[name] = 1
		case "boolean":
			out[name] = true
		default:
			out[name] = "ES"
		}
	}
	return out
}

// An assistant reads and trades through the real relay, tunnel, agent
// and simulator: the order it places is the HTTP API's to see, a repeat
// of its idempotencyKey places nothing, and a refusal carries the HTTP
// API's code.
func TestMCPTradesThroughTheAgent(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.StartAgent("alice")
	tok := s.Users["alice"].APIToken
	cs := s.mcpSession(t, tok, "")

	res, data := callTool(t, cs, "ListAccounts", nil)
	require.False(t, res.IsError, "%v", data)
	require.NotEmpty(t, data["accounts"])
	require.Contains(t, res.Content[0].(*sdk.TextContent).Text, "ListAccounts: ")

	place := map[string]any{"account": "Sim101", "action": "Buy", "instrument": "ES", "orderType": "Market",
		"quantity": 2, "timeInForce": "Day", tradecall.IdempotencyKeyField: "assistant-1"}
	res, data = callTool(t, cs, "PlaceOrder", place)
	require.False(t, res.IsError, "%v", data)
	orderID, _ := data["orderId"].(string)
	require.NotEmpty(t, orderID)
	require.Contains(t, res.Content[0].(*sdk.TextContent).Text, orderID)

	r := s.Do("GET", "/v1/api/accounts/Sim101/orders/"+orderID, tok, "")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Eventually(t, func() bool { return s.holds(tok, "Sim101", 2) }, testkit.Medium, testkit.Tick)

	// The same key answers the recorded outcome and places nothing more;
	// so does the HTTP route with the key as its Idempotency-Key.
	res, again := callTool(t, cs, "PlaceOrder", place)
	require.False(t, res.IsError)
	require.Equal(t, orderID, again["orderId"])
	require.Equal(t, true, res.Meta["tradebridge/replayed"])
	h := s.Do("POST", "/v1/api/accounts/Sim101/orders/place", tok,
		`{"action":"Buy","instrument":"ES","orderType":"Market","quantity":2,"timeInForce":"Day"}`, "Idempotency-Key", "assistant-1")
	require.Equal(t, http.StatusOK, h.Status, string(h.Raw))
	require.Equal(t, "true", h.Header.Get("Idempotent-Replayed"))
	require.Never(t, func() bool { return !s.holds(tok, "Sim101", 2) }, testkit.Short, testkit.Tick)

	// Refusals are tool errors with the HTTP API's codes.
	res, e := callTool(t, cs, "ClosePosition", map[string]any{"account": "Sim101", "instrument": "NQ"})
	require.True(t, res.IsError)
	require.Equal(t, "no_position", e["error"])
	res, e = callTool(t, cs, "PlaceOrder", map[string]any{"account": "Sim101", "action": "Buy", "instrument": "ES",
		"orderType": "Market", "quantity": 0, "timeInForce": "Day"})
	require.True(t, res.IsError)
	require.Equal(t, "invalid_argument", e["error"])
	require.NotEmpty(t, e["fields"])

	// Flatten with no filters is FlattenEverything, as on HTTP.
	res, data = callTool(t, cs, "FlattenEverything", nil)
	require.False(t, res.IsError, "%v", data)
	require.Eventually(t, func() bool { return s.holds(tok, "Sim101", 0) }, testkit.Medium, testkit.Tick)

	// The writes are the activity log's, from source mcp (recorded
	// behind the answers).
	var events []any
	require.Eventually(t, func() bool {
		res, data, err := tryTool(cs, mcp.ToolGetActivity, map[string]any{"kind": "order.placed", "limit": 5})
		if err != nil || res.IsError {
			return false
		}
		events, _ = data["events"].([]any)
		return len(events) > 0
	}, testkit.Medium, testkit.Tick)
	src := events[0].(map[string]any)["source"].(map[string]any)
	require.Equal(t, "mcp", src["kind"])
}

// One user's tools reach that user's agent alone: the token names the
// user, whatever the arguments say.
func TestMCPReachesTheCallersAgentOnly(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.StartAgent("bob")
	alice := s.mcpSession(t, s.Users["alice"].APIToken, "")
	res, e := callTool(t, alice, "ListAccounts", nil)
	require.True(t, res.IsError, "alice's agent is not connected; bob's is")
	require.Equal(t, "addon_disconnected", e["error"])
	res, e = callTool(t, alice, "PlaceOrder", map[string]any{"account": "Sim101", "action": "Buy", "instrument": "ES",
		"orderType": "Market", "quantity": 1, "timeInForce": "Day"})
	require.True(t, res.IsError)
	require.Equal(t, "addon_disconnected", e["error"])
	require.True(t, s.holds(s.Users["bob"].APIToken, "Sim101", 0), "nothing reached bob's agent")

	bob := s.mcpSession(t, s.Users["bob"].APIToken, "")
	res, _ = callTool(t, bob, "ListAccounts", nil)
	require.False(t, res.IsError)
	res, _ = callTool(t, bob, mcp.ToolGetMonitors, nil)
	require.False(t, res.IsError)
}

// A tool call costs what its call costs: the trading budget is one per
// user across MCP and HTTP; the protocol's own requests cost nothing.
func TestMCPSharesTheTradingBudget(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.Budget.Name, s.Budget.Rate, s.Budget.Period, s.Budget.Burst = "trading", 1, time.Hour, 6
	s.Restart()
	s.StartAgent("alice")
	tok := s.Users["alice"].APIToken
	cs := s.mcpSession(t, tok, "")
	for range 3 {
		tools(t, cs) // free
	}
	for range 4 {
		res, data := callTool(t, cs, "ListAccounts", nil)
		require.False(t, res.IsError, "%v", data)
	}
	require.Equal(t, http.StatusOK, s.Do("GET", "/v1/api/accounts", tok, "").Status)
	require.Equal(t, http.StatusOK, s.Do("GET", "/v1/api/accounts", tok, "").Status)
	require.Equal(t, http.StatusTooManyRequests, s.Do("GET", "/v1/api/accounts", tok, "").Status)
	res, e := callTool(t, cs, "ListAccounts", nil)
	require.True(t, res.IsError)
	require.Equal(t, "rate_limited", e["error"])
	require.Equal(t, "trading", e["policy"])
	require.NotZero(t, e["retryAfter"])
}

// The endpoint admits as the trading API does.
func TestMCPAdmission(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	for _, tc := range []struct {
		name, token string
		status      int
		code        string
	}{
		{"no token", "", http.StatusUnauthorized, "unauthorized"},
		{"agent token", s.Users["alice"].AgentToken, http.StatusUnauthorized, "unauthorized"},
		{"free plan", s.Users["carol"].APIToken, http.StatusForbidden, "plan_required"},
	} {
		r := s.Do("POST", mcp.Path, tc.token, body, "Accept", "application/json, text/event-stream")
		require.Equal(t, tc.status, r.Status, "%s: %s", tc.name, r.Raw)
		require.Equal(t, tc.code, r.Error, tc.name)
	}
	r := s.Do("GET", mcp.Path, s.Users["alice"].APIToken, "")
	require.Equal(t, http.StatusMethodNotAllowed, r.Status)
	require.Equal(t, "POST", r.Header.Get("Allow"))

	// A client of its own (curl) needs no session: one POST lists the
	// tools.
	r = s.Do("POST", mcp.Path, s.Users["alice"].APIToken, body, "Accept", "application/json, text/event-stream",
		"Content-Type", "application/json", "MCP-Protocol-Version", "2025-06-18")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	var rpc struct {
		Result struct {
			Tools []struct{ Name string } `json:"tools"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(r.Raw, &rpc))
	require.Len(t, rpc.Result.Tools, len(tradecall.Desktop().Functions())+1, "the trading tools and GetActivity")
}

// The broker family's tools are listed once a login is linked, named
// tv_…, and trade at the broker: the same key over MCP and HTTP is one
// broker order.
func TestMCPBrokerFamily(t *testing.T) {
	t.Parallel()
	s := newBrokerSystem(t)
	tok := s.Users["alice"].APIToken
	got := tools(t, s.mcpSession(t, tok, ""))
	require.NotContains(t, got, mcp.BrokerPrefix+"ListAccounts", "no link, no broker tools")

	r := s.link(tok)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	cs := s.mcpSession(t, tok, "")
	got = tools(t, cs)
	table := tradeapi.BrokerTable()
	for _, fn := range table.Functions() {
		tool, ok := got[mcp.BrokerPrefix+fn]
		require.True(t, ok, "%s%s is a tool", mcp.BrokerPrefix, fn)
		require.Contains(t, tool.Description, table.Describe(fn))
	}
	require.NotContains(t, got, mcp.BrokerPrefix+"GetBars", "the desktop family's own operations are not the broker's")
	require.Contains(t, schemaProperties(t, got[mcp.BrokerPrefix+"PlaceOrder"]), "trailDistance", "the broker's trailing stops")

	res, data := callTool(t, cs, mcp.BrokerPrefix+"ListAccounts", nil)
	require.False(t, res.IsError, "%v", data)
	before := s.fake.OrdersPlaced()
	place := map[string]any{"account": "Sim101", "action": "Buy", "instrument": "ES 12-26", "orderType": "Market",
		"quantity": 1, "timeInForce": "Day", tradecall.IdempotencyKeyField: "tv-assistant-1"}
	res, data = callTool(t, cs, mcp.BrokerPrefix+"PlaceOrder", place)
	require.False(t, res.IsError, "%v", data)
	r = s.broker(http.MethodPost, "accounts/Sim101/orders/place", tok, placeBody("Buy", 1), "Idempotency-Key", "tv-assistant-1")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, before+1, s.fake.OrdersPlaced())
}

// A read token connects, lists every tool and reads; its writes are
// refused with insufficient_scope, run nothing and cost nothing.
func TestMCPReadTokenCannotTrade(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.Budget.Name, s.Budget.Rate, s.Budget.Period, s.Budget.Burst = "trading", 1, time.Hour, 3
	s.Restart()
	s.StartAgent("alice")
	trade := s.Users["alice"].APIToken
	read := s.ScopedToken("alice", auth.ScopeRead)
	cs := s.mcpSession(t, read, "")
	require.Contains(t, tools(t, cs), "PlaceOrder", "a read token sees the writes too: calling one tells why it is refused")

	res, data := callTool(t, cs, "ListAccounts", nil)
	require.False(t, res.IsError, "%v", data)
	for _, name := range []string{"PlaceOrder", "FlattenEverything", "CancelAllOrders", "Flatten"} {
		res, e := callTool(t, cs, name, map[string]any{"account": "Sim101", "action": "Buy", "instrument": "ES",
			"orderType": "Market", "quantity": 1, "timeInForce": "Day"})
		require.True(t, res.IsError, name)
		require.Equal(t, "insufficient_scope", e["error"], name)
		require.Contains(t, e["detail"], "trade scope", name)
	}
	// Nothing was placed, and the refusals cost nothing: of the budget's
	// three, ListAccounts took one, this read a second, and one is left.
	r := s.Do("GET", "/v1/api/accounts/Sim101/orders?activeOnly=false", trade, "")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.JSONEq(t, `{"orders":[]}`, string(r.Data))
	require.Equal(t, http.StatusOK, s.Do("GET", "/v1/api/accounts", trade, "").Status)
	require.Equal(t, http.StatusTooManyRequests, s.Do("GET", "/v1/api/accounts", trade, "").Status)
}

// BenchmarkMCPToolCall compares a tool call over /mcp with the same call
// over HTTP, interleaved, through the real relay, tunnel and agent; it
// reports the medians and mcp-p50-ratio (MCP / HTTP): what the protocol's
// envelope, the SDK's per-request session and the second rendering cost.
func BenchmarkMCPToolCall(b *testing.B) {
	s := newSystem(b)
	s.StartAgent("alice")
	tok := s.Users["alice"].APIToken
	cs := s.mcpSession(b, tok, "")
	args := map[string]any{"account": "Sim101"}
	viaMCP := func() time.Duration {
		start := time.Now()
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "ListPositions", Arguments: args})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
		return time.Since(start)
	}
	viaHTTP := func() time.Duration {
		start := time.Now()
		r, err := s.Request("GET", "/v1/api/accounts/Sim101/positions", tok, "")
		if err != nil || r.Status != http.StatusOK {
			b.Fatal(err, r.Status)
		}
		return time.Since(start)
	}
	for range 200 {
		viaMCP()
		viaHTTP()
	}
	mc := make([]time.Duration, 0, b.N)
	hp := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		mc = append(mc, viaMCP())
		hp = append(hp, viaHTTP())
	}
	b.StopTimer()
	reportLatency(b, "mcp", mc)
	reportLatency(b, "http", hp)
	b.ReportMetric(float64(pct(mc, 50))/float64(pct(hp, 50)), "mcp-p50-ratio")
}
