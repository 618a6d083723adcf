package tradeapi_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/tradeapi"
	"tradebridge/relay/tradecall"
)

// The broker family's table has the functions of its routes (and
// FlattenEverything), with the trailing order types.
func TestBrokerTable(t *testing.T) {
	t.Parallel()
	tab := tradeapi.BrokerTable()
	require.Same(t, tab, tradeapi.BrokerTable(), "built once")
	var want []string
	for _, r := range tradeapi.BrokerRoutes() {
		for _, ep := range tradecall.Endpoints() {
			if ep.Method == r[0] && tradeapi.BrokerPrefix+ep.Path[len("/v1/api/"):] == r[1] && !slices.Contains(want, ep.Fn) {
				want = append(want, ep.Fn)
			}
		}
	}
	fns := tab.Functions()
	require.ElementsMatch(t, append(want, protocol.FnFlattenEverything), fns)
	require.NotContains(t, fns, protocol.FnStartStrategy, "the broker has no strategies")

	props := tab.ArgsSchema(protocol.FnPlaceOrder)["properties"].(map[string]any)
	require.Contains(t, props["orderType"].(map[string]any)["enum"], protocol.OrderTypeTrailingStop)
	require.Contains(t, props, "trailDistance")
	require.NotContains(t, tradecall.Desktop().ArgsSchema(protocol.FnPlaceOrder)["properties"], "trailDistance")

	trailing := json.RawMessage(`{"account":"A","action":"Sell","instrument":"ES","orderType":"TrailingStop","quantity":1,"timeInForce":"Day","trailDistance":4}`)
	c, e := tab.Prepare(protocol.FnPlaceOrder, trailing)
	require.Nil(t, e)
	require.Equal(t, protocol.FnPlaceOrder, c.Fn)
	_, e = tradecall.Desktop().Prepare(protocol.FnPlaceOrder, trailing)
	require.NotNil(t, e, "the desktop family has no trailing orders")
	_, e = tab.Prepare(protocol.FnStartStrategy, nil)
	require.Equal(t, errcode.UnknownFunction, e.Code)
}

// Every desktop operation has a recorded request, whose arguments are
// typed as the parameters are.
func TestRequestExamples(t *testing.T) {
	t.Parallel()
	fns := tradeapi.OperationFunctions()
	ids := tradeapi.OperationIDs()
	require.Len(t, fns, len(ids))
	for route, op := range ids {
		require.Contains(t, fns, op, route)
		ex, ok := tradeapi.RequestExample(op)
		require.True(t, ok, "%s: go test ./relay -run TestContractEndToEnd -update", op)
		args, ok := tradeapi.RequestExampleArgs(op)
		require.True(t, ok, op)
		for k, v := range ex.Path {
			require.Equal(t, v, args[k], op)
		}
		for k, v := range ex.Body {
			require.Equal(t, v, args[k], op)
		}
	}
	require.Equal(t, protocol.FnPlaceOrder, fns["PlaceOrder_accounts_by_account_orders_place"])
	args, ok := tradeapi.RequestExampleArgs("ListOrders_accounts_by_account_orders")
	require.True(t, ok)
	require.Equal(t, map[string]any{"account": "Sim101", "activeOnly": false}, args, "query text typed")
	_, ok = tradeapi.RequestExample("Nope")
	require.False(t, ok)
	_, ok = tradeapi.RequestExampleArgs("Nope")
	require.False(t, ok)
}

// The OpenAPI document shows the request examples and a route's
// alternatives.
func TestOpenAPIRequestExamples(t *testing.T) {
	t.Parallel()
	paths := tradeapi.OpenAPI()["paths"].(map[string]any)
	place := paths["/v1/api/accounts/{account}/orders/place"].(map[string]any)["post"].(map[string]any)
	ex, _ := tradeapi.RequestExample("PlaceOrder_accounts_by_account_orders_place")
	content := place["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)
	require.Equal(t, ex.Body, content["examples"].(map[string]any)["simulator"].(map[string]any)["value"])
	params := place["parameters"].([]any)
	require.Equal(t, "Sim101", params[0].(map[string]any)["example"])

	orders := paths["/v1/api/accounts/{account}/orders"].(map[string]any)["get"].(map[string]any)
	for _, p := range orders["parameters"].([]any) {
		p := p.(map[string]any)
		switch p["name"] {
		case "activeOnly":
			require.Equal(t, false, p["example"], "typed as its schema")
		case "lookbackTime":
			require.NotContains(t, p, "example", "not sent")
		}
	}

	flatten := paths["/v1/api/positions/flatten"].(map[string]any)["post"].(map[string]any)
	require.Equal(t, []string{protocol.FnFlattenEverything}, flatten["x-rpc-alternatives"])
	require.Contains(t, flatten["description"], "(FlattenEverything)")
	require.NotContains(t, paths["/v1/api/accounts/{account}/positions/flatten"].(map[string]any)["post"], "x-rpc-alternatives")
}
