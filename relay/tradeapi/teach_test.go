package tradeapi_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
)

// fieldsOf decodes a refusal's fields.
func fieldsOf(t *testing.T, raw string) []map[string]any {
	t.Helper()
	var body struct {
		Fields []map[string]any `json:"fields"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &body))
	return body.Fields
}

// Refusals teach: enumerations name their values, bounds the bound crossed,
// unknown query parameters are named (when they look like names), and
// prices an order type needs are missing fields like any other.
func TestErrorsTeach(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const place = "/v1/api/accounts/Sim101/orders/place"
	for _, tc := range []struct {
		name, method, path, body string
		code, detail             string
		field                    map[string]any
	}{
		{"enum names its values", "POST", place, `{"action":"Buy","instrument":"ES","orderType":"Hold","quantity":1,"timeInForce":"Day"}`,
			protocol.CodeInvalidArgument, "orderType must be one of Market, Limit, StopMarket, StopLimit (any casing)",
			map[string]any{"path": "orderType", "code": "not_allowed", "allowed": []any{"Market", "Limit", "StopMarket", "StopLimit"}}},
		{"quantity 0 reports the minimum", "POST", place, `{"action":"Buy","instrument":"ES","orderType":"Market","quantity":0,"timeInForce":"Day"}`,
			protocol.CodeInvalidArgument, "quantity must be at least 1",
			map[string]any{"path": "quantity", "code": "greater_than_equal", "limit": 1.0}},
		{"quantity too large reports the maximum", "POST", place, `{"action":"Buy","instrument":"ES","orderType":"Market","quantity":10001,"timeInForce":"Day"}`,
			protocol.CodeInvalidArgument, "quantity must be at most 10000",
			map[string]any{"path": "quantity", "code": "less_than_equal", "limit": 10000.0}},
		{"lookback below its minimum", "GET", "/v1/api/accounts/Sim101/executions?lookbackTime=0", "",
			protocol.CodeInvalidArgument, "lookbackTime must be at least 1",
			map[string]any{"path": "lookbackTime", "code": "greater_than_equal", "limit": 1.0}},
		{"percent is a fraction", "POST", "/v1/api/accounts/Sim101/positions/close", `{"instrument":"ES","percent":50}`,
			protocol.CodeInvalidArgument, "percent is a fraction of the position: 0.5 closes half",
			map[string]any{"path": "percent", "code": "less_than_equal", "limit": 1.0}},
		{"percent zero", "POST", "/v1/api/accounts/Sim101/positions/close", `{"instrument":"ES","percent":0}`,
			protocol.CodeInvalidArgument, "percent must be above 0",
			map[string]any{"path": "percent", "code": "greater_than", "limit": 0.0}},
		{"unknown query parameter is named", "GET", "/v1/api/accounts/Sim101/orders?actveOnly=true", "",
			"unknown_parameter", "it takes activeOnly, lookbackTime",
			map[string]any{"path": "actveOnly", "code": "unknown_field"}},
		{"odd query parameter is not repeated", "GET", "/v1/api/accounts/Sim101/orders?%3Cscript%3E=1", "",
			"unknown_parameter", "does not take",
			map[string]any{"path": "(unnamed)", "code": "unknown_field"}},
		{"instrument form", "POST", place, `{"action":"Buy","instrument":"ES 13-26","orderType":"Market","quantity":1,"timeInForce":"Day"}`,
			protocol.CodeInvalidInstrument, `instrument must be written as "ES 12-26" (root and contract month), "ES" (the front month) or "ESZ26" (month code)`,
			map[string]any{"path": "instrument", "code": "string_pattern_mismatch", "pattern": protocol.InstrumentPattern}},
		{"Limit without limitPrice", "POST", place, `{"action":"Buy","instrument":"ES","orderType":"Limit","quantity":1,"timeInForce":"Day"}`,
			protocol.CodeMissingFields, "missing required fields: limitPrice",
			map[string]any{"path": "limitPrice", "code": "required"}},
		{"StopMarket without stopPrice", "POST", place, `{"action":"Buy","instrument":"ES","orderType":"stopmarket","quantity":1,"timeInForce":"Day"}`,
			protocol.CodeMissingFields, "missing required fields: stopPrice",
			map[string]any{"path": "stopPrice", "code": "required"}},
		{"reverse position StopLimit without either price", "POST", "/v1/api/accounts/Sim101/positions/reverseposition", `{"action":"Buy","instrument":"ES","orderType":"StopLimit","quantity":1,"timeInForce":"Day"}`,
			protocol.CodeMissingFields, "missing required fields: limitPrice, stopPrice",
			map[string]any{"path": "limitPrice", "code": "required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(e.agent.all())
			r := e.do(tc.method, tc.path, "tb_api_pro", tc.body)
			require.Equal(t, 400, r.Status, r.Raw)
			require.Equal(t, tc.code, r.Body["error"], r.Raw)
			require.Contains(t, r.Body["detail"], tc.detail)
			fields := fieldsOf(t, r.Raw)
			require.NotEmpty(t, fields, r.Raw)
			require.Equal(t, tc.field, fields[0])
			require.Len(t, e.agent.all(), before, "nothing reached the agent")
			for _, secret := range []string{"Hold", "13-26", "script", "actveOnly"} {
				require.NotContains(t, r.Body["detail"], secret, "details never echo the caller's values")
			}
		})
	}
}

// FlatPlace as the spec's table lists it (quantity, prices, strategyTag,
// force) also needs instrument and action; orderType defaults from the
// prices and timeInForce to Day.
func TestFlatPlaceFields(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const flat = "/v1/api/accounts/Sim101/orders/flatplace"
	// The spec-literal body: refused, naming exactly what is missing.
	r := e.do("POST", flat, "tb_api_pro", `{"quantity":1,"limitPrice":6000.25,"strategyTag":"bot","force":false}`)
	require.Equal(t, 400, r.Status, r.Raw)
	require.Equal(t, protocol.CodeMissingFields, r.Body["error"])
	require.Equal(t, "missing required fields: action, instrument; flat place needs them to know what to place", r.Body["detail"])
	require.Equal(t, []map[string]any{{"path": "action", "code": "required"}, {"path": "instrument", "code": "required"}}, fieldsOf(t, r.Raw))
	r = e.do("POST", flat, "tb_api_pro", `{}`)
	require.Equal(t, "missing required fields: action, instrument, quantity; flat place needs them to know what to place", r.Body["detail"])
	require.Empty(t, e.agent.all())

	for _, tc := range []struct {
		name, body, orderType string
	}{
		{"spec body with instrument and action, limitPrice", `{"instrument":"ES","action":"Buy","quantity":1,"limitPrice":6000.25,"strategyTag":"bot","force":false}`, "Limit"},
		{"stopPrice", `{"instrument":"ES","action":"Sell","quantity":1,"stopPrice":5990}`, "StopMarket"},
		{"both prices", `{"instrument":"ES","action":"Buy","quantity":1,"stopPrice":6010,"limitPrice":6011}`, "StopLimit"},
		{"neither", `{"instrument":"ES","action":"Buy","quantity":2}`, "Market"},
		{"explicit orderType and timeInForce kept", `{"instrument":"ES","action":"Buy","quantity":2,"orderType":"limit","limitPrice":5990,"timeInForce":"GTC"}`, "Limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(e.agent.all())
			r := e.do("POST", flat, "tb_api_pro", tc.body)
			calls := e.agent.all()
			require.Len(t, calls, before+1, r.Raw)
			c := calls[len(calls)-1]
			require.Equal(t, protocol.FnFlatPlace, c.Fn)
			require.Equal(t, tc.orderType, c.Args["orderType"])
			tif := "Day"
			if tc.name == "explicit orderType and timeInForce kept" {
				tif = "Gtc"
			}
			require.Equal(t, tif, c.Args["timeInForce"])
		})
	}
	// A Limit flat place still needs its price.
	r = e.do("POST", flat, "tb_api_pro", `{"instrument":"ES","action":"Buy","quantity":1,"orderType":"Limit"}`)
	require.Equal(t, 400, r.Status)
	require.Equal(t, "missing required fields: limitPrice; flat place needs them to know what to place", r.Body["detail"])
}
