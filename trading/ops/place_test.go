package ops

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
)

func marketArgs(action string, qty int) protocol.PlaceOrderArgs {
	return protocol.PlaceOrderArgs{Account: "Sim101", Action: action, Instrument: "ES", OrderType: "MARKET",
		Quantity: qty, TimeInForce: "day"}
}

func TestPlaceOrder(t *testing.T) {
	f := newFixture(t)
	res, err := f.ops.PlaceOrder(bg, marketArgs("buy", 2))
	require.NoError(t, err)
	require.NotEmpty(t, res.OrderID)
	require.Equal(t, res.OrderID, res.Order.OrderID)
	require.Equal(t, protocol.OrderStateFilled, res.Order.OrderState)
	require.Equal(t, es, res.Order.Instrument)
	require.Equal(t, protocol.ActionBuy, res.Order.OrderAction)
	require.Equal(t, 2, f.position("Sim101"))
	m := shape(t, res)
	require.Contains(t, m, "orderId")
	require.Contains(t, m, "order")
	require.NotContains(t, m, "unchanged")

	// Resting orders with prices, an OCO id, our own order id, a tag.
	lim := protocol.PlaceOrderArgs{Account: "Sim101", Action: "Buy", Instrument: es, OrderType: "limit",
		Quantity: 1, TimeInForce: "GTC", LimitPrice: ptr(5990.0), OcoID: "g1", OrderID: "mine-1"}
	res, err = f.ops.PlaceOrder(bg, lim)
	require.NoError(t, err)
	require.Equal(t, "mine-1", res.OrderID)
	require.Equal(t, protocol.OrderStateWorking, res.Order.OrderState)
	require.Equal(t, "g1", res.Order.Oco)
	require.Equal(t, protocol.TimeInForceGtc, res.Order.TimeInForce)

	// An ATM template by name: the entry fills and the template's brackets
	// follow.
	atm := marketArgs("Sell", 1)
	atm.Account, atm.Strategy = "Sim102", "ATM 1 Target"
	res, err = f.ops.PlaceOrder(bg, atm)
	require.NoError(t, err)
	require.Len(t, f.working("Sim102"), 2, "the template's stop and target")
}

// Bad input is refused before anything reaches the platform.
func TestPlaceOrderRefusesBadInput(t *testing.T) {
	f := newFixture(t)
	f.market("Sim101", protocol.ActionBuy, 1)
	for _, tc := range []struct {
		name  string
		edit  func(a *protocol.PlaceOrderArgs)
		code  string
		names string // fields the detail must name
	}{
		{"nothing", func(a *protocol.PlaceOrderArgs) { *a = protocol.PlaceOrderArgs{} }, protocol.CodeMissingFields, "account, action, instrument, orderType, quantity, timeInForce"},
		{"no time in force", func(a *protocol.PlaceOrderArgs) { a.TimeInForce = "" }, protocol.CodeMissingFields, "timeInForce"},
		{"limit without price", func(a *protocol.PlaceOrderArgs) { a.OrderType = "Limit" }, protocol.CodeMissingFields, "limitPrice"},
		{"stop limit without prices", func(a *protocol.PlaceOrderArgs) { a.OrderType = "StopLimit" }, protocol.CodeMissingFields, "limitPrice, stopPrice"},
		{"bad action", func(a *protocol.PlaceOrderArgs) { a.Action = "Hodl" }, protocol.CodeInvalidArgument, ""},
		{"bad type", func(a *protocol.PlaceOrderArgs) { a.OrderType = "Iceberg" }, protocol.CodeInvalidArgument, ""},
		{"bad tif", func(a *protocol.PlaceOrderArgs) { a.TimeInForce = "IOC" }, protocol.CodeInvalidArgument, ""},
		{"zero quantity", func(a *protocol.PlaceOrderArgs) { a.Quantity = 0 }, protocol.CodeMissingFields, "quantity"},
		{"huge quantity", func(a *protocol.PlaceOrderArgs) { a.Quantity = 10_001 }, protocol.CodeInvalidArgument, ""},
		{"negative price", func(a *protocol.PlaceOrderArgs) { a.OrderType, a.LimitPrice = "Limit", ptr(-5.0) }, protocol.CodeInvalidArgument, ""},
		{"off-tick price", func(a *protocol.PlaceOrderArgs) { a.OrderType, a.LimitPrice = "Limit", ptr(5990.1) }, protocol.CodeInvalidArgument,
			"limitPrice must be a multiple of the instrument's tick size, 0.25; the nearest valid values are 5990 and 5990.25"},
		{"off-tick stop near zero", func(a *protocol.PlaceOrderArgs) { a.OrderType, a.StopPrice = "StopMarket", ptr(0.1) }, protocol.CodeInvalidArgument,
			"stopPrice must be a multiple of the instrument's tick size, 0.25; the nearest valid value is 0.25"},
		{"unknown instrument", func(a *protocol.PlaceOrderArgs) { a.Instrument = "ZZTOP" }, protocol.CodeInvalidInstrument, ""},
		{"not a contract month", func(a *protocol.PlaceOrderArgs) { a.Instrument = "ES 11-26" }, protocol.CodeInvalidInstrument, ""},
		{"unknown account", func(a *protocol.PlaceOrderArgs) { a.Account = "Nope" }, protocol.CodeAccountNotFound, ""},
		{"unknown template", func(a *protocol.PlaceOrderArgs) { a.Strategy = "Moonshot" }, protocol.CodeTemplateNotFound,
			"no ATM template of that name; the platform's templates (names match exactly): ATM 1 Target, ATM 2 Targets, ATM Trail"},
		{"bad requireMarketPosition", func(a *protocol.PlaceOrderArgs) { a.RequireMarketPosition = "flat,sideways" }, protocol.CodeInvalidArgument, ""},
		{"negative maxPositions", func(a *protocol.PlaceOrderArgs) { a.MaxPositions = ptr(-1) }, protocol.CodeInvalidArgument, ""},
		{"negative targetQuantity", func(a *protocol.PlaceOrderArgs) { a.TargetQuantity = ptr(-1) }, protocol.CodeInvalidArgument, ""},
		{"resync without target", func(a *protocol.PlaceOrderArgs) { a.MaxResyncCorrection = ptr(1) }, protocol.CodeInvalidArgument, ""},
		{"unknown smart option", func(a *protocol.PlaceOrderArgs) { a.SmartOptions = json.RawMessage(`{"teleport":true}`) }, protocol.CodeInvalidArgument, ""},
		{"smart options not an object", func(a *protocol.PlaceOrderArgs) { a.SmartOptions = json.RawMessage(`[1]`) }, protocol.CodeInvalidArgument, ""},
		{"reduceOnly and flattenFirst", func(a *protocol.PlaceOrderArgs) {
			a.SmartOptions = json.RawMessage(`{"reduceOnly":true,"flattenFirst":true}`)
		}, protocol.CodeInvalidArgument, ""},
		{"overlong tag", func(a *protocol.PlaceOrderArgs) { a.StrategyTag = strings.Repeat("t", 200) }, protocol.CodeInvalidArgument, ""},
		{"control characters", func(a *protocol.PlaceOrderArgs) { a.OcoID = "a\x00b" }, protocol.CodeInvalidArgument, ""},
		// Conditions on the position: refused, nothing placed.
		{"requireMarketPosition", func(a *protocol.PlaceOrderArgs) { a.RequireMarketPosition = "flat, short" }, protocol.CodeMarketPositionMismatch, ""},
		{"maxPositions", func(a *protocol.PlaceOrderArgs) { a.Instrument, a.MaxPositions = "NQ", ptr(1) }, protocol.CodeMaxPositions, ""},
		{"reduceOnly adding", func(a *protocol.PlaceOrderArgs) { a.SmartOptions = json.RawMessage(`{"reduceOnly":true}`) }, protocol.CodeMarketPositionMismatch, ""},
		{"reduceOnly flipping", func(a *protocol.PlaceOrderArgs) {
			a.Action, a.Quantity, a.SmartOptions = "Sell", 2, json.RawMessage(`{"reduceOnly":true}`)
		}, protocol.CodeMarketPositionMismatch, ""},
		{"resync limit", func(a *protocol.PlaceOrderArgs) { a.TargetQuantity, a.MaxResyncCorrection = ptr(5), ptr(2) }, protocol.CodeResyncLimit, ""},
		{"target needs a priced flip", func(a *protocol.PlaceOrderArgs) {
			a.OrderType, a.LimitPrice, a.TargetQuantity = "Limit", ptr(5990.0), ptr(0)
		}, protocol.CodeResyncLimit, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.rec.Writes()
			a := marketArgs("Buy", 1)
			tc.edit(&a)
			_, err := f.ops.PlaceOrder(bg, a)
			requireCode(t, err, tc.code, "Hodl", "Iceberg", "IOC", "ZZTOP", "Nope", "Moonshot", "sideways", "teleport", "ttttt")
			if tc.names != "" {
				require.Contains(t, err.Error(), tc.names)
			}
			require.Equal(t, before, f.rec.Writes(), "nothing was placed")
			require.Equal(t, 1, f.position("Sim101"))
		})
	}
}

func TestRequireMarketPosition(t *testing.T) {
	for _, tc := range []struct {
		name    string
		held    int
		require string
		ok      bool
	}{
		{"flat when flat", 0, "flat", true},
		{"flat when long", 2, "flat", false},
		{"long or short when long", 2, "long,short", true},
		{"any casing", -1, "SHORT", true},
		{"short when flat", 0, "short", false},
		{"flat/long when short", -1, "flat,long", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.held > 0 {
				f.market("Sim101", protocol.ActionBuy, tc.held)
			} else if tc.held < 0 {
				f.market("Sim101", protocol.ActionSell, -tc.held)
			}
			a := marketArgs("Buy", 1)
			a.RequireMarketPosition = tc.require
			_, err := f.ops.PlaceOrder(bg, a)
			if tc.ok {
				require.NoError(t, err)
				require.Equal(t, tc.held+1, f.position("Sim101"))
				return
			}
			requireCode(t, err, protocol.CodeMarketPositionMismatch)
			require.Equal(t, tc.held, f.position("Sim101"))
		})
	}
}

func TestMaxPositions(t *testing.T) {
	f := newFixture(t)
	a := marketArgs("Buy", 1)
	a.MaxPositions = ptr(1)
	_, err := f.ops.PlaceOrder(bg, a)
	require.NoError(t, err, "the first position")
	_, err = f.ops.PlaceOrder(bg, a)
	require.NoError(t, err, "adding to a held instrument is not a new position")
	nq := a
	nq.Instrument = "NQ"
	_, err = f.ops.PlaceOrder(bg, nq)
	requireCode(t, err, protocol.CodeMaxPositions)
	nq.MaxPositions = ptr(2)
	_, err = f.ops.PlaceOrder(bg, nq)
	require.NoError(t, err)
	require.Equal(t, 2, f.position("Sim101"))
}

func TestTargetQuantity(t *testing.T) {
	for _, tc := range []struct {
		name     string
		held     int
		action   string
		qty      int
		target   int
		resync   *int
		wantPos  int
		wantSide string
		code     string
	}{
		{"from flat", 0, "Buy", 0, 3, nil, 3, protocol.ActionBuy, ""},
		{"adds the difference", 1, "Buy", 0, 3, nil, 3, protocol.ActionBuy, ""},
		{"from short to long", -2, "Buy", 0, 3, nil, 3, protocol.ActionBuy, ""},
		{"reduces with a market order", 5, "Buy", 0, 2, nil, 2, protocol.ActionSell, ""},
		{"target zero flattens", 4, "Sell", 0, 0, nil, 0, protocol.ActionSell, ""},
		{"short target", 1, "Sell", 0, 2, nil, -2, protocol.ActionSell, ""},
		{"signal in sync", 2, "Buy", 1, 3, ptr(0), 3, protocol.ActionBuy, ""},
		{"drift within the limit", 0, "Buy", 1, 3, ptr(2), 3, protocol.ActionBuy, ""},
		{"drift beyond the limit", 0, "Buy", 1, 3, ptr(1), 0, "", protocol.CodeResyncLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.held > 0 {
				f.market("Sim101", protocol.ActionBuy, tc.held)
			} else if tc.held < 0 {
				f.market("Sim101", protocol.ActionSell, -tc.held)
			}
			a := marketArgs(tc.action, tc.qty)
			a.TargetQuantity, a.MaxResyncCorrection = ptr(tc.target), tc.resync
			res, err := f.ops.PlaceOrder(bg, a)
			if tc.code != "" {
				requireCode(t, err, tc.code)
				require.Equal(t, tc.held, f.position("Sim101"))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantSide, res.Order.OrderAction)
			require.Equal(t, tc.wantPos, f.position("Sim101"))
		})
	}
	// Already there: nothing is placed and the result says so.
	f := newFixture(t)
	f.market("Sim101", protocol.ActionBuy, 2)
	a := marketArgs("Buy", 0)
	a.TargetQuantity = ptr(2)
	res, err := f.ops.PlaceOrder(bg, a)
	require.NoError(t, err)
	require.True(t, res.Unchanged)
	require.Empty(t, res.OrderID)
	require.Nil(t, res.Order)
	require.Empty(t, f.rec.Writes())
	m := shape(t, res)
	require.Equal(t, true, m["unchanged"])
	require.NotContains(t, m, "order")
}

func TestSmartOptions(t *testing.T) {
	f := newFixture(t)
	f.market("Sim101", protocol.ActionBuy, 3)
	a := marketArgs("Sell", 2)
	a.SmartOptions = json.RawMessage(`{"reduceOnly":true}`)
	_, err := f.ops.PlaceOrder(bg, a)
	require.NoError(t, err)
	require.Equal(t, 1, f.position("Sim101"))

	f.resting("Sim101", protocol.ActionSell, protocol.OrderTypeStopMarket, 5950, 1)
	a = marketArgs("Sell", 2)
	a.SmartOptions = json.RawMessage(`{"flattenFirst":true}`)
	res, err := f.ops.PlaceOrder(bg, a)
	require.NoError(t, err)
	require.Equal(t, -2, f.position("Sim101"), "flattened, then sold 2")
	require.Len(t, res.CancelledOrderIDs, 1)
	require.Len(t, res.CloseOrderIDs, 1)
	require.Empty(t, f.working("Sim101"))

	a.SmartOptions = json.RawMessage(`null`)
	_, err = f.ops.PlaceOrder(bg, a)
	require.NoError(t, err)
	require.Equal(t, -4, f.position("Sim101"))
}

func TestFlatPlace(t *testing.T) {
	f := newFixture(t)
	f.market("Sim101", protocol.ActionBuy, 2)
	stop := f.resting("Sim101", protocol.ActionSell, protocol.OrderTypeStopMarket, 5950, 2)
	res, err := f.ops.FlatPlace(bg, marketArgs("Sell", 1))
	require.NoError(t, err)
	require.Equal(t, -1, f.position("Sim101"))
	require.Equal(t, []string{stop.OrderID}, res.CancelledOrderIDs)
	require.Len(t, res.CloseOrderIDs, 1)
	require.Equal(t, protocol.OrderStateCancelled, f.order("Sim101", stop.OrderID).OrderState)

	// Flat already: it just places.
	f2 := newFixture(t)
	res, err = f2.ops.FlatPlace(bg, marketArgs("Buy", 1))
	require.NoError(t, err)
	require.Empty(t, res.CloseOrderIDs)
	require.Equal(t, 1, f2.position("Sim101"))

	// Bad input: nothing flattened.
	a := marketArgs("Buy", 1)
	a.OrderType = "Limit"
	_, err = f.ops.FlatPlace(bg, a)
	requireCode(t, err, protocol.CodeMissingFields)
	require.Equal(t, -1, f.position("Sim101"))
}

// FlatPlace needs only instrument, action and quantity: the order type
// follows from the prices sent and timeInForce defaults to Day.
func TestFlatPlaceDefaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		limit, stop *float64
		wantType    string
		wantResting bool
	}{
		{"neither price is Market", nil, nil, protocol.OrderTypeMarket, false},
		{"limitPrice is Limit", ptr(5900.0), nil, protocol.OrderTypeLimit, true},
		{"stopPrice is StopMarket", nil, ptr(6100.0), protocol.OrderTypeStopMarket, true},
		{"both are StopLimit", ptr(6101.0), ptr(6100.0), protocol.OrderTypeStopLimit, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			res, err := f.ops.FlatPlace(bg, protocol.FlatPlaceArgs{Account: "Sim101", Instrument: "ES", Action: "Buy",
				Quantity: 1, LimitPrice: tc.limit, StopPrice: tc.stop})
			require.NoError(t, err)
			ord := f.order("Sim101", res.OrderID)
			require.Equal(t, tc.wantType, ord.OrderType)
			require.Equal(t, protocol.TimeInForceDay, ord.TimeInForce)
			require.Equal(t, tc.wantResting, !protocol.TerminalOrderState(ord.OrderState))
		})
	}
	// Without instrument or action, nothing is placed and the detail names
	// exactly what is missing.
	f := newFixture(t)
	_, err := f.ops.FlatPlace(bg, protocol.FlatPlaceArgs{Account: "Sim101", Quantity: 1})
	requireCode(t, err, protocol.CodeMissingFields)
	detail := err.(*protocol.Error).Detail
	require.Equal(t, "missing required fields: action, instrument; flat place needs them to know what to place", detail)
	require.Empty(t, f.rec.Writes())
}

// Writes to one account and instrument never interleave: many concurrent
// calls that each bring the position to a target leave exactly the target.
func TestConcurrentWritesSerialized(t *testing.T) {
	f := newFixture(t)
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := marketArgs("Buy", 0)
			a.TargetQuantity = ptr(3)
			_, err := f.ops.PlaceOrder(bg, a)
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	require.Equal(t, 3, f.position("Sim101"))
	n := 0
	for _, w := range f.rec.Writes() {
		if strings.HasPrefix(w, "submit") {
			n++
		}
	}
	require.Equal(t, 1, n, "one order reached the target; the others found it reached")
}
