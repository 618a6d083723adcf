package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"tradebridge/relay/admit"
	"tradebridge/relay/auth"
	"tradebridge/relay/auth/authtest"
	"tradebridge/relay/budget"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/store/storetest"
	"tradebridge/relay/tradecall"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// noAgent is a Caller with no agent connected.
type noAgent struct{}

func (noAgent) Call(context.Context, string, string, string, json.RawMessage) (json.RawMessage, error) {
	return nil, context.DeadlineExceeded
}

// newTestServer is a Server over desktop, with fakes of what it calls.
func newTestServer(t *testing.T, desktop *tradecall.Table) *Server {
	t.Helper()
	adm, err := admit.New(admit.Options{Auth: authtest.New(nil)})
	require.NoError(t, err)
	trading, err := budget.New(budget.Options{Policy: budget.Trading})
	require.NoError(t, err)
	s, err := newServer(Options{Admit: adm, Trading: trading, Desktop: noAgent{}, Idempotency: storetest.Open(t, "sqlite")}, desktop)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// listTools lists the tools of an SDK server over the SDK's in-memory
// transport.
func listTools(t *testing.T, srv *sdk.Server) map[string]*sdk.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ct, st := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	defer cs.Close()
	out := map[string]*sdk.Tool{}
	for tool, err := range cs.Tools(ctx, nil) {
		require.NoError(t, err)
		out[tool.Name] = tool
	}
	return out
}

// A route added to the route table is a tool, with no other change: its
// name, description and arguments come from the table.
func TestNewRouteIsATool(t *testing.T) {
	t.Parallel()
	eps := append([]tradecall.Endpoint(nil), tradecall.Endpoints()...)
	eps = append(eps, tradecall.Endpoint{Method: http.MethodGet, Path: "/v1/api/accounts/{account}/things", Fn: "ListThings",
		Summary: "The account's things",
		Params: []tradecall.Param{
			{Name: "account", In: tradecall.InPath, Type: tradecall.TString, Required: true, Format: tradecall.FormatName, Max: 64, Doc: "account name"},
			{Name: "limit", In: tradecall.InQuery, Type: tradecall.TInteger, Min: 1, Max: 50, Doc: "the most things"},
		}})
	got := listTools(t, newTestServer(t, tradecall.NewTable(eps)).build(0))
	tool, ok := got["ListThings"]
	require.True(t, ok, "the new route is a tool")
	require.Equal(t, "The account's things.", tool.Description)
	schema := tool.InputSchema.(map[string]any)
	require.Equal(t, []any{"account"}, schema["required"])
	props := schema["properties"].(map[string]any)
	require.Equal(t, "integer", props["limit"].(map[string]any)["type"])
	require.EqualValues(t, 50, props["limit"].(map[string]any)["maximum"])
	require.Len(t, got, len(tradecall.Desktop().Functions())+1, "the desktop tools, and the new one")
}

// The optional tools are listed by tool set.
func TestToolSets(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, tradecall.Desktop())
	base := listTools(t, s.build(0))
	require.NotContains(t, base, ToolGetActivity, "no activity reader, no GetActivity")
	require.NotContains(t, base, ToolGetMonitors)
	require.Zero(t, s.toolSet(context.Background(), auth.Principal{UserID: "usr_1", Plan: auth.PlanElite}),
		"no Management API nor broker family: no optional tools, whatever the plan")
}

// A summary names the operation and counts its lists, or names the order.
func TestSummarize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ fn, data, want string }{
		{"ListPositions", `{"positions":[{},{}],"count":2}`, "ListPositions: 2 positions"},
		{"PlaceOrder", `{"orderId":"o-1","order":{}}`, "PlaceOrder: order o-1"},
		{"GetAccount", `{"name":"Sim101","cash":1}`, "GetAccount: fields cash, name"},
		{"GetAccountSummary", `{"accounts":[],"orders":[{}]}`, "GetAccountSummary: 0 accounts; 1 orders"},
	} {
		require.Equal(t, tc.want, summarize(tc.fn, json.RawMessage(tc.data)), tc.fn)
	}
}

// A refusal is a tool error carrying the HTTP API's error object and its
// code, status and detail as text.
func TestFailure(t *testing.T) {
	t.Parallel()
	r := failure(&httpapi.Error{Status: http.StatusForbidden, Code: errcode.InsufficientScope, Detail: "needs trade"})
	require.True(t, r.IsError)
	var body map[string]any
	require.NoError(t, json.Unmarshal(r.StructuredContent.(json.RawMessage), &body))
	require.Equal(t, false, body["success"])
	require.Equal(t, errcode.InsufficientScope, body["error"])
	require.Equal(t, "insufficient_scope (403): needs trade", r.Content[0].(*sdk.TextContent).Text)
}

// A refusal's detail keeps "&" as written in the error object the tool
// result carries (the SDK's envelope does not HTML-escape either).
func TestFailureKeepsAmpersands(t *testing.T) {
	t.Parallel()
	r := failure(&httpapi.Error{Status: http.StatusBadRequest, Code: errcode.InvalidArgument, Detail: "S&P <ES>"})
	raw := string(r.StructuredContent.(json.RawMessage))
	require.Contains(t, raw, `"S&P <ES>"`)
	require.NotContains(t, raw, `\u0026`)
}

// A handler run without an admitted caller is a protocol error, never a
// call.
func TestNoCaller(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, tradecall.Desktop())
	_, err := s.trade(s.desktop, "ListAccounts")(context.Background(), &sdk.CallToolRequest{Params: &sdk.CallToolParamsRaw{Name: "ListAccounts"}})
	require.ErrorIs(t, err, errNoCaller)
}
