package tradecall_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/errcode"
	"tradebridge/relay/tradecall"
)

func TestPrepareSocketCall(t *testing.T) {
	args := func(c tradecall.SocketCall) map[string]any {
		var m map[string]any
		require.NoError(t, json.Unmarshal(c.Args, &m))
		return m
	}
	// Path and body fields together, typed and normalized as on HTTP.
	c, e := tradecall.PrepareSocketCall("PlaceOrder", json.RawMessage(`{"account":"Sim101","action":"BUY","instrument":"ES","orderType":"limit","limitPrice":5000,"quantity":1,"timeInForce":"gtc","orderId":"o-7"}`))
	require.Nil(t, e)
	require.Equal(t, protocol.FnPlaceOrder, c.Fn)
	require.True(t, c.Write)
	require.Equal(t, "order:o-7", c.Key)
	m := args(c)
	require.Equal(t, "Buy", m["action"])
	require.Equal(t, "Limit", m["orderType"])
	require.Equal(t, "Gtc", m["timeInForce"])

	// idempotencyKey wins over orderId and is not forwarded.
	c, e = tradecall.PrepareSocketCall("PlaceOrder", json.RawMessage(`{"account":"Sim101","action":"Sell","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day","orderId":"o-7","idempotencyKey":"k"}`))
	require.Nil(t, e)
	require.Equal(t, "key:k", c.Key)
	require.NotContains(t, args(c), "idempotencyKey")

	// Query parameters: typed or as text; defaults filled in.
	c, e = tradecall.PrepareSocketCall("ListOrders", json.RawMessage(`{"account":"Sim101","activeOnly":"false","lookbackTime":60}`))
	require.Nil(t, e)
	require.False(t, c.Write)
	require.Equal(t, "", c.Key)
	require.Equal(t, map[string]any{"account": "Sim101", "activeOnly": false, "lookbackTime": 60.0}, args(c))
	c, e = tradecall.PrepareSocketCall("GetAllOrders", nil)
	require.Nil(t, e)
	require.Equal(t, map[string]any{"activeOnly": true, "lookbackTime": 320.0}, args(c))

	// Either route of a function: GetQuote with or without an account.
	for _, a := range []string{`{"instrument":"ES"}`, `{"account":"Sim101","root":"ES"}`} {
		c, e = tradecall.PrepareSocketCall("GetQuote", json.RawMessage(a))
		require.Nil(t, e, a)
		require.Equal(t, protocol.FnGetQuote, c.Fn)
	}
	// Flatten with no filters is FlattenEverything, as on HTTP.
	c, e = tradecall.PrepareSocketCall("Flatten", json.RawMessage(`{}`))
	require.Nil(t, e)
	require.Equal(t, protocol.FnFlattenEverything, c.Fn)
	require.True(t, c.Write)
	c, e = tradecall.PrepareSocketCall("FlattenEverything", json.RawMessage(`null`))
	require.Nil(t, e)
	require.Equal(t, protocol.FnFlattenEverything, c.Fn)

	for _, tc := range []struct {
		api, args, code string
		status          int
	}{
		{"Nope", `{}`, errcode.UnknownFunction, 404},
		{protocol.FnGetPnl, `{}`, errcode.UnknownFunction, 404},
		{protocol.FnSetSubscriptions, `{"instruments":[]}`, errcode.UnknownFunction, 404},
		{"GetAccount", `[]`, errcode.InvalidArgument, 400},
		{"GetAccount", `"x"`, errcode.InvalidArgument, 400},
		{"GetAccount", `{}`, errcode.MissingRequiredFields, 400},
		{"GetAccount", `{"account":"Sim101","secret":"tb_api_xyz"}`, errcode.InvalidArgument, 400},
		{"GetAccount", `{"account":"Sim101","account":"X"}`, "invalid_json", 400},
		{"GetAccount", `{"account":" bad "}`, errcode.InvalidArgument, 400},
		{"ListOrders", `{"account":"A","lookbackTime":"lots"}`, errcode.InvalidArgument, 400},
		{"ListOrders", `{"account":"A","lookbackTime":901}`, errcode.InvalidArgument, 400},
		{"PlaceOrder", `{"account":"A","idempotencyKey":""}`, errcode.InvalidArgument, 400},
		{"FlattenEverything", `{"account":"A"}`, errcode.InvalidArgument, 400},
		{"CancelAndBracket", `{"account":"A","instrument":"ES","action":"Buy","quantity":1}`, errcode.MissingRequiredFields, 400},
	} {
		_, e := tradecall.PrepareSocketCall(tc.api, json.RawMessage(tc.args))
		require.NotNil(t, e, tc.api+" "+tc.args)
		require.Equal(t, tc.code, e.Code, tc.api+" "+tc.args)
		require.Equal(t, tc.status, e.Status)
		require.NotContains(t, e.Detail, "tb_api_xyz")
		require.NotContains(t, fmt.Sprint(e.Fields), "tb_api_xyz")
	}
	// The refusal of GetQuote without instrument or root names them.
	_, e = tradecall.PrepareSocketCall("GetQuote", json.RawMessage(`{}`))
	require.Equal(t, errcode.MissingRequiredFields, e.Code)
	require.Contains(t, e.Detail, "instrument")
	require.NotContains(t, e.Detail, "account")
}

func TestCallError(t *testing.T) {
	for _, tc := range []struct {
		err    error
		write  bool
		status int
		code   string
	}{
		{protocol.NewError(protocol.CodeNoPosition, "none"), false, http.StatusBadRequest, protocol.CodeNoPosition},
		{fmt.Errorf("wrapped: %w", protocol.NewError(protocol.CodeInternal, "x")), true, http.StatusInternalServerError, protocol.CodeInternal},
		{agentcall.ErrNotConnected, true, http.StatusRequestTimeout, errcode.AddonDisconnected},
		{agentcall.ErrConnectionLost, false, http.StatusRequestTimeout, errcode.AddonDisconnected},
		{agentcall.ErrConnectionLost, true, http.StatusServiceUnavailable, errcode.OutcomeUnknown},
		{agentcall.ErrTimeout, true, http.StatusServiceUnavailable, errcode.OutcomeUnknown},
		{agentcall.ErrTimeout, false, http.StatusGatewayTimeout, errcode.DeadlineExceeded},
	} {
		e, ok := tradecall.CallError(tc.err, tc.write)
		require.True(t, ok, tc.err)
		require.Equal(t, tc.status, e.Status, tc.err)
		require.Equal(t, tc.code, e.Code, tc.err)
		require.NotEmpty(t, e.Detail)
	}
	_, ok := tradecall.CallError(errors.New("something else"), false)
	require.False(t, ok)
	_, ok = tradecall.CallError(agentcall.ErrClosed, false)
	require.False(t, ok)
}
