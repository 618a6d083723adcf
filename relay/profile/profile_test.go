package profile_test

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/profile"
)

// Every public RPC function has a shape; internal ones have none.
func TestEveryPublicFunctionHasAShape(t *testing.T) {
	t.Parallel()
	for _, f := range protocol.Functions {
		typ, ok := profile.DataType(f.Name)
		require.True(t, ok, f.Name)
		require.NotNil(t, typ, f.Name)
	}
	for _, f := range protocol.InternalFunctions {
		_, ok := profile.DataType(f.Name)
		require.False(t, ok, f.Name)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]profile.Profile{"": profile.Standard, "standard": profile.Standard, "Compatible": profile.Compatible, "COMPATIBLE": profile.Compatible} {
		got, err := profile.Parse(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := profile.Parse("crosstrade")
	require.ErrorIs(t, err, profile.ErrUnknown)
}

// render returns the whole success body as a client of the profile reads
// it.
func render(t *testing.T, p profile.Profile, fn string, result any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(result)
	require.NoError(t, err)
	r, err := profile.Render(p, fn, raw)
	require.NoError(t, err)
	body := r.AppendTo([]byte(`{"success":true`))
	body = append(body, '}')
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m), string(body))
	return m
}

func keys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

var (
	pos   = protocol.Position{Account: "Sim101", Instrument: "ES 12-26", MarketPosition: "Long", Quantity: 2, AveragePrice: 5000}
	order = protocol.Order{OrderID: "sim-1", Account: "Sim101", Instrument: "ES 12-26", OrderState: "Filled"}
)

// The shapes of the API specification's table: in the compatible profile the members
// of data stand at the top level; in the standard profile data holds the
// same members, and writes lift their ids.
func TestShapes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		fn         string
		result     any
		compatKeys []string
		stdData    []string
		stdTop     []string // besides success and data
	}{
		{protocol.FnListAccounts, []protocol.Account{{Name: "Sim101"}}, []string{"accounts", "success"}, []string{"accounts"}, nil},
		{protocol.FnListAccounts, []protocol.Account{}, []string{"accounts", "success"}, []string{"accounts"}, nil},
		{protocol.FnGetAccount, protocol.Account{Name: "Sim101"}, []string{"connection", "connectionStatus", "denomination", "displayName", "item", "name", "provider", "status", "success"}, nil, nil},
		{protocol.FnListPositions, []protocol.Position{pos}, []string{"count", "positions", "success"}, []string{"count", "positions"}, nil},
		{protocol.FnGetAllPositions, []protocol.Position{}, []string{"count", "positions", "success"}, []string{"count", "positions"}, nil},
		{protocol.FnListOrders, []protocol.Order{order}, []string{"orders", "success"}, []string{"orders"}, nil},
		{protocol.FnGetAllOrders, []protocol.Order{order}, []string{"orders", "success"}, []string{"orders"}, nil},
		{protocol.FnListExecutions, []protocol.Execution{{ID: "e"}}, []string{"executions", "success"}, []string{"executions"}, nil},
		{protocol.FnGetExecutionsByOrderID, []protocol.Execution{}, []string{"executions", "success"}, []string{"executions"}, nil},
		{protocol.FnListStrategies, []protocol.Strategy{}, []string{"strategies", "success"}, []string{"strategies"}, nil},
		{protocol.FnGetAtmTemplates, []protocol.AtmTemplate{{Name: "ATM 1 Target"}}, []string{"atmTemplates", "success"}, []string{"atmTemplates"}, nil},
		{protocol.FnGetQuote, protocol.QuoteResult{Quote: protocol.Quote{Instrument: "ES 12-26"}}, []string{"quotes", "success"}, []string{"quotes"}, nil},
		{protocol.FnGetAccountSummary, protocol.AccountSummary{Accounts: []protocol.AccountSnapshot{{Account: protocol.Account{Name: "Sim101"}}}, Time: "2026-11-25T12:00:00Z", Epoch: 1}, []string{"accounts", "epoch", "success", "timestamp", "type"}, []string{"accounts", "epoch", "timestamp", "type"}, nil},
		{protocol.FnGetWatermarks, protocol.Watermarks{Account: "Sim101"}, []string{"data", "success"}, []string{"account", "sessionStart", "stats", "watermarks"}, nil},
		{protocol.FnPlaceOrder, protocol.PlaceResult{OrderID: "sim-1", Order: &order}, []string{"order", "orderId", "success"}, []string{"order", "orderId"}, []string{"orderId"}},
		{protocol.FnReversePosition, protocol.PlaceResult{OrderID: "sim-2", CloseOrderIDs: []string{"sim-1"}}, []string{"closeOrderIds", "orderId", "success"}, []string{"closeOrderIds", "orderId"}, []string{"orderId"}},
		{protocol.FnClosePosition, protocol.PlaceResult{OrderID: "sim-3", OrderIDs: []string{"sim-3"}, ClosedPositions: []protocol.Position{pos}}, []string{"closedPositions", "orderId", "orderIds", "success"}, []string{"closedPositions", "orderId", "orderIds"}, []string{"orderId", "orderIds"}},
		{protocol.FnChangeOrder, protocol.OrderResult{OrderID: "sim-1", Order: order}, []string{"order", "orderId", "success"}, []string{"order", "orderId"}, []string{"orderId"}},
		{protocol.FnCancelOrders, protocol.CancelResult{CancelledOrderIDs: []string{"sim-1"}}, []string{"orderIds", "success"}, []string{"orderIds"}, []string{"orderIds"}},
		{protocol.FnCancelAllOrders, protocol.CancelResult{CancelledOrderIDs: []string{}}, []string{"orderIds", "success"}, []string{"orderIds"}, []string{"orderIds"}},
		{protocol.FnCancelAndBracket, protocol.BracketResult{OrderIDs: []string{"a", "b"}, Placed: true}, []string{"cancelledOrderIds", "orderIds", "orders", "placed", "quantity", "success"}, []string{"cancelledOrderIds", "orderIds", "orders", "placed", "quantity"}, []string{"orderIds"}},
		{protocol.FnFlatten, protocol.FlattenResult{Positions: []protocol.Position{pos}, OrderIDs: []string{"sim-9"}, CancelledOrderIDs: []string{}}, []string{"cancelledOrderIds", "closedPositions", "orderIds", "success"}, []string{"cancelledOrderIds", "closedPositions", "orderIds"}, []string{"orderIds"}},
		{protocol.FnFlattenEverything, protocol.FlattenResult{}, []string{"cancelledOrderIds", "closedPositions", "orderIds", "success"}, []string{"cancelledOrderIds", "closedPositions", "orderIds"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.fn, func(t *testing.T) {
			t.Parallel()
			compat := render(t, profile.Compatible, tc.fn, tc.result)
			require.Equal(t, tc.compatKeys, keys(compat))
			require.Equal(t, true, compat["success"])

			std := render(t, profile.Standard, tc.fn, tc.result)
			require.Equal(t, true, std["success"])
			data, ok := std["data"].(map[string]any)
			require.True(t, ok, "data is always an object")
			if tc.stdData != nil {
				require.Equal(t, tc.stdData, keys(data))
			}
			wantTop := append([]string{"data", "success"}, tc.stdTop...)
			slices.Sort(wantTop)
			require.Equal(t, wantTop, keys(std))
			// Both profiles carry the same members (but for the wrapper).
			if !profile.Wrapped(tc.fn) {
				for k, v := range data {
					require.Equal(t, v, compat[k], k)
				}
			}
		})
	}
}

func TestListCountsAndNeverNull(t *testing.T) {
	t.Parallel()
	m := render(t, profile.Compatible, protocol.FnListPositions, []protocol.Position{pos, pos})
	require.EqualValues(t, 2, m["count"])
	m = render(t, profile.Compatible, protocol.FnListPositions, nil)
	require.Equal(t, []any{}, m["positions"])
	require.EqualValues(t, 0, m["count"])
}

func TestRolloverIsTheSecondQuote(t *testing.T) {
	t.Parallel()
	m := render(t, profile.Standard, protocol.FnGetQuote, protocol.QuoteResult{
		Quote:    protocol.Quote{Instrument: "ES 12-26", Bid: 1},
		Rollover: &protocol.Quote{Instrument: "ES 03-27", Bid: 2},
	})
	qs := m["data"].(map[string]any)["quotes"].([]any)
	require.Len(t, qs, 2)
	require.Equal(t, "ES 12-26", qs[0].(map[string]any)["instrument"])
	require.Equal(t, "ES 03-27", qs[1].(map[string]any)["instrument"])
}

func TestSnapshotNestsTheAccount(t *testing.T) {
	t.Parallel()
	m := render(t, profile.Compatible, protocol.FnGetAccountSummary, protocol.AccountSummary{
		Accounts: []protocol.AccountSnapshot{{Account: protocol.Account{Name: "Sim101"}, Positions: []protocol.Position{pos}}},
		Time:     "2026-11-25T12:00:00Z", Epoch: 1764072000000,
	})
	require.Equal(t, "snapshot", m["type"])
	require.Equal(t, "2026-11-25T12:00:00Z", m["timestamp"])
	a := m["accounts"].([]any)[0].(map[string]any)
	require.Equal(t, "Sim101", a["account"].(map[string]any)["name"])
	require.Len(t, a["positions"], 1)
	require.Equal(t, []any{}, a["orders"])
}

// A record of the wrong shape is the agent's fault and is reported, not
// passed through.
func TestWrongShapeIsAnError(t *testing.T) {
	t.Parallel()
	for fn, raw := range map[string]string{
		protocol.FnListPositions: `{"positions":[]}`,
		protocol.FnGetAccount:    `[]`,
		protocol.FnFlatten:       `"x"`,
		"NoSuchFunction":         `{}`,
	} {
		_, err := profile.Render(profile.Standard, fn, json.RawMessage(raw))
		require.Error(t, err, fn)
	}
	// A record must not contradict the reply's own success member.
	_, err := profile.Render(profile.Compatible, protocol.FnGetAccount, json.RawMessage(`{"name":"Sim101","success":false}`))
	require.Error(t, err)
	_, err = profile.Render(profile.Compatible, protocol.FnGetAccount, json.RawMessage(`{"name":"Sim101","displayName":"\"success\""}`))
	require.NoError(t, err, "a string holding the word is fine")
}

// BenchmarkRender measures the relay's cost of shaping a result: a list of
// 20 positions and a placed order, in each profile.
func BenchmarkRender(b *testing.B) {
	positions, _ := json.Marshal(slices.Repeat([]protocol.Position{pos}, 20))
	placed, _ := json.Marshal(protocol.PlaceResult{OrderID: "sim-1", Order: &order})
	for _, tc := range []struct {
		name, fn string
		raw      json.RawMessage
	}{{"ListPositions", protocol.FnListPositions, positions}, {"PlaceOrder", protocol.FnPlaceOrder, placed}} {
		for _, p := range profile.All {
			b.Run(tc.name+"/"+string(p), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := profile.Render(p, tc.fn, tc.raw); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// The count of a list is taken by scanning; strings holding commas,
// brackets, quotes and escapes do not confuse it.
func TestCountIgnoresStrings(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`[]`, ` [ ] `, `null`, `[{}]`, `[{},{}]`, `[[1,2],[3]]`,
		`[{"tag":"a,b"},{"tag":"]}[{,"}]`,
		`[{"tag":"say \"hi\", then \\"},{"tag":"\\\","}]`,
		`[{"a":[1,{"b":[2,3]}],"c":"x"} , {"d":null}]`,
	} {
		var items []json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(raw), &items), raw)
		r, err := profile.Render(profile.Compatible, protocol.FnListPositions, json.RawMessage(raw))
		require.NoError(t, err, raw)
		var got struct {
			Positions []json.RawMessage `json:"positions"`
			Count     int               `json:"count"`
		}
		body := append(r.AppendTo([]byte(`{"success":true`)), '}')
		require.NoError(t, json.Unmarshal(body, &got), string(body))
		require.Equal(t, len(items), got.Count, raw)
		require.Len(t, got.Positions, len(items), raw)
	}
}

// FuzzListCount checks the scanned count against encoding/json on every
// valid JSON array.
func FuzzListCount(f *testing.F) {
	for _, s := range []string{`[]`, `[1,"a,b",{"x":[1,2]}]`, `["\"]",[]]`, `null`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var items []json.RawMessage
		if json.Unmarshal([]byte(raw), &items) != nil {
			return
		}
		r, err := profile.Render(profile.Compatible, protocol.FnListOrders, json.RawMessage(raw))
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		var got struct {
			Orders []json.RawMessage `json:"orders"`
		}
		body := append(r.AppendTo([]byte(`{"success":true`)), '}')
		if err := json.Unmarshal(body, &got); err != nil || len(got.Orders) != len(items) {
			t.Fatalf("%q: %s (%v)", raw, body, err)
		}
	})
}
