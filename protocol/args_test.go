package protocol

import (
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// jsonNames returns the JSON field names of a struct type, embedded
// structs flattened.
func jsonNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			out = append(out, jsonNames(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func sorted(s ...string) []string {
	sort.Strings(s)
	return s
}

// The argument structs carry the spec's parameter and body field names.
func TestArgsFieldNames(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want []string
	}{
		{PositionArgs{}, sorted("account", "instrument")},
		{ListOrdersArgs{}, sorted("account", "activeOnly", "lookbackTime")},
		{AllOrdersArgs{}, sorted("activeOnly", "lookbackTime")},
		{OrderArgs{}, sorted("account", "orderId")},
		{ListExecutionsArgs{}, sorted("account", "lookbackTime")},
		{ListStrategiesArgs{}, sorted("account", "includeTerminal")},
		{AllStrategiesArgs{}, sorted("includeTerminal")},
		{StrategyArgs{}, sorted("account", "id", "strategyId")},
		{CloseStrategyArgs{}, sorted("account", "id", "strategyId", "signalName", "strategyTag", "force")},
		{QuoteArgs{}, sorted("account", "instrument", "root", "showRollover")},
		{InstrumentArgs{}, sorted("instrument", "root")},
		{AllPositionsArgs{}, sorted("includeFlat")},
		{BarsArgs{}, sorted("instrument", "periodType", "period", "daysBack", "from", "to", "limit", "timeoutMs", "splitAdjust", "dividendAdjust", "mergePolicy")},
		{FlattenArgs{}, sorted("account", "instrument", "cancelOrders", "force", "strategyTag", "strategyTagMode")},
		{ClosePositionArgs{}, sorted("account", "instrument", "quantity", "percent", "strategyTag", "force")},
		{ReverseArgs{}, sorted("account", "instrument", "strategyTag", "force")},
		{ReversePositionArgs{}, sorted("account", "instrument", "action", "quantity", "orderType", "timeInForce", "limitPrice", "stopPrice", "trailDistance", "ocoId", "strategy", "strategyTag", "force")},
		{CancelOrdersArgs{}, sorted("account", "instrument", "strategyTag", "force")},
		{ChangeOrderArgs{}, sorted("account", "orderId", "quantity", "limitPrice", "stopPrice")},
		{PlaceOrderArgs{}, sorted("account", "action", "instrument", "orderType", "quantity", "limitPrice", "stopPrice", "trailDistance", "timeInForce", "ocoId", "orderId", "strategy", "strategyTag", "targetQuantity", "maxPositions", "maxResyncCorrection", "force", "requireMarketPosition", "smartOptions",
			"exits", "limitOffset", "stopOffset", "cancelAfterSeconds")},
		{CancelReplaceArgs{}, sorted("cancelOrderId", "account", "action", "instrument", "orderType", "quantity", "limitPrice", "stopPrice", "trailDistance", "timeInForce", "ocoId", "orderId", "strategy", "strategyTag", "targetQuantity", "maxPositions", "maxResyncCorrection", "force", "requireMarketPosition", "smartOptions",
			"exits", "limitOffset", "stopOffset", "cancelAfterSeconds")},
		{Exits{}, sorted("takeProfit", "stopLoss", "stopLossLimit", "stopLossStop")},
		{ExitPrice{}, sorted("price", "offset")},
		{PriceOffset{}, sorted("unit", "value")},
		{CancelAndBracketArgs{}, sorted("account", "instrument", "action", "quantity", "takeProfit", "stopLoss", "ocoId")},
		{StartStrategyArgs{}, sorted("account", "strategyClass", "instrument", "mode", "periodType", "period", "parameters")},
		{BracketResult{}, sorted("orderIds", "placed", "ocoId", "quantity", "cancelledOrderIds", "orders")},
		{PlaceResult{}, sorted("orderId", "order", "unchanged", "closeOrderIds", "cancelledOrderIds", "orderIds", "closedPositions")},
		{FlattenResult{}, sorted("positions", "orderIds", "cancelledOrderIds")},
		{CancelResult{}, sorted("cancelledOrderIds")},
	} {
		require.Equal(t, tc.want, jsonNames(reflect.TypeOf(tc.v)), reflect.TypeOf(tc.v).Name())
	}
}

func TestStartStrategyArgsAliases(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want StartStrategyArgs
		err  bool
	}{
		{`{"account":"A","strategyClass":"X","periodType":"minute","period":5}`, StartStrategyArgs{Account: "A", StrategyClass: "X", PeriodType: "minute", Period: 5}, false},
		{`{"account":"A","strategy_class":"X","period_type":"day","period":"15"}`, StartStrategyArgs{Account: "A", StrategyClass: "X", PeriodType: "day", Period: 15}, false},
		{`{"strategyClass":"X","strategy_class":"X"}`, StartStrategyArgs{StrategyClass: "X"}, false},
		{`{"period":" 3 "}`, StartStrategyArgs{Period: 3}, false},
		{`{"period":""}`, StartStrategyArgs{}, false},
		{`{"period":null}`, StartStrategyArgs{}, false},
		{`{"instrument":"ES","mode":"Realtime","parameters":{"Fast":5}}`, StartStrategyArgs{Instrument: "ES", Mode: "Realtime", Parameters: map[string]any{"Fast": 5.0}}, false},
		{`{"strategyClass":"X","strategy_class":"Y"}`, StartStrategyArgs{}, true},
		{`{"periodType":"minute","period_type":"day"}`, StartStrategyArgs{}, true},
		{`{"period":"five"}`, StartStrategyArgs{}, true},
		{`{"period":1.5}`, StartStrategyArgs{}, true},
		{`{"period":true}`, StartStrategyArgs{}, true},
		{`{"account":7}`, StartStrategyArgs{}, true},
		{`[]`, StartStrategyArgs{}, true},
	} {
		var got StartStrategyArgs
		err := json.Unmarshal([]byte(tc.in), &got)
		if tc.err {
			require.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
	// A conflict is a wire error that names the fields, never the values.
	var a StartStrategyArgs
	err := json.Unmarshal([]byte(`{"strategyClass":"Xyzzy","strategy_class":"Plugh"}`), &a)
	var pe *Error
	require.True(t, errors.As(err, &pe))
	require.Equal(t, CodeInvalidArgument, pe.Code)
	require.Contains(t, pe.Detail, "strategy_class")
	require.NotContains(t, pe.Detail, "Xyzzy")
	// Marshalled, the canonical names come out.
	raw, err := json.Marshal(StartStrategyArgs{StrategyClass: "X", PeriodType: "minute", Period: 2})
	require.NoError(t, err)
	require.JSONEq(t, `{"account":"","strategyClass":"X","instrument":"","periodType":"minute","period":2}`, string(raw))
}

func TestBarsArgsAlias(t *testing.T) {
	var b BarsArgs
	require.NoError(t, json.Unmarshal([]byte(`{"instrument":"ES","period_type":"tick","period":100,"limit":5,"splitAdjust":true}`), &b))
	require.Equal(t, BarsArgs{Instrument: "ES", PeriodType: "tick", Period: ptr(100), Limit: ptr(5), SplitAdjust: true}, b)
	b = BarsArgs{}
	require.NoError(t, json.Unmarshal([]byte(`{"instrument":"ES","periodType":"day"}`), &b))
	require.Equal(t, "day", b.PeriodType)
	require.Error(t, json.Unmarshal([]byte(`{"periodType":"day","period_type":"minute"}`), &b))
	require.Error(t, json.Unmarshal([]byte(`{"period":"5"}`), &b), "GetBars' period is an integer")
}

func TestParseSmartOptions(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want SmartOptions
		err  bool
	}{
		{``, SmartOptions{}, false},
		{`null`, SmartOptions{}, false},
		{`{}`, SmartOptions{}, false},
		{`{"flattenFirst":true}`, SmartOptions{FlattenFirst: true}, false},
		{`{"reduceOnly":true,"flattenFirst":false}`, SmartOptions{ReduceOnly: true}, false},
		{`{"unknown":1}`, SmartOptions{}, true},
		{`{"reduceOnly":"yes"}`, SmartOptions{}, true},
		{`[1]`, SmartOptions{}, true},
		{`"x"`, SmartOptions{}, true},
	} {
		got, err := ParseSmartOptions(json.RawMessage(tc.in))
		if tc.err {
			require.Error(t, err, tc.in)
			require.NotContains(t, err.Error(), "unknown\"", "the detail does not quote the input")
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
}

// PlaceResult reads as an OrderResult, so callers of OrderResult keep
// working; QuoteResult reads as a Quote.
func TestResultsCompatible(t *testing.T) {
	raw, err := json.Marshal(PlaceResult{OrderID: "o1", Order: &Order{OrderID: "o1", OrderState: OrderStateFilled}, CloseOrderIDs: []string{"c1"}})
	require.NoError(t, err)
	var or OrderResult
	require.NoError(t, json.Unmarshal(raw, &or))
	require.Equal(t, "o1", or.OrderID)
	require.Equal(t, OrderStateFilled, or.Order.OrderState)

	raw, err = json.Marshal(PlaceResult{Unchanged: true})
	require.NoError(t, err)
	require.JSONEq(t, `{"orderId":"","unchanged":true}`, string(raw))

	raw, err = json.Marshal(QuoteResult{Quote: Quote{Instrument: "ES 12-26", Bid: 1}, Rollover: &Quote{Instrument: "ES 03-27"}})
	require.NoError(t, err)
	var q Quote
	require.NoError(t, json.Unmarshal(raw, &q))
	require.Equal(t, "ES 12-26", q.Instrument)
	require.Contains(t, string(raw), `"rollover":{"instrument":"ES 03-27"`)

	raw, err = json.Marshal(AccountSnapshot{Account: Account{Name: "A"}, Positions: []Position{}, Orders: []Order{}})
	require.NoError(t, err)
	var a Account
	require.NoError(t, json.Unmarshal(raw, &a))
	require.Equal(t, "A", a.Name)
	require.Contains(t, string(raw), `"positions":[]`)
}

// Every wire code is listed once in Codes.
func TestCodesUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Codes {
		require.False(t, seen[c], c)
		seen[c] = true
	}
	require.True(t, seen[CodePositionNotFlat])
	require.True(t, seen[CodeResyncLimit])
}
