package ops

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// watcher is an EntryWatcher that records the entries it is given.
type watcher struct {
	mu      sync.Mutex
	entries []Entry
	fail    error
}

func (w *watcher) WatchEntry(e Entry) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail != nil {
		return w.fail
	}
	w.entries = append(w.entries, e)
	return nil
}

func (w *watcher) Entries() []Entry {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Entry(nil), w.entries...)
}

func exitAt(v float64) *protocol.ExitPrice { return &protocol.ExitPrice{Price: &v} }

func exitOff(unit string, v float64) *protocol.ExitPrice {
	return &protocol.ExitPrice{Offset: &protocol.PriceOffset{Unit: unit, Value: v}}
}

// Exits, relative prices and cancel-after are checked before anything
// reaches the platform, with fixed sentences.
func TestPlaceOrderRefusesBadExits(t *testing.T) {
	f := newFixture(t)
	f.ops.SetEntryWatcher(&watcher{})
	limit := func(a *protocol.PlaceOrderArgs) { a.OrderType, a.LimitPrice = "Limit", ptr(5990.0) }
	for _, tc := range []struct {
		name   string
		edit   func(a *protocol.PlaceOrderArgs)
		code   string
		detail string // a part of the detail
	}{
		{"no leg", func(a *protocol.PlaceOrderArgs) { a.Exits = &protocol.Exits{} }, protocol.CodeMissingFields, "exits.takeProfit or exits.stopLoss or exits.stopLossLimit"},
		{"stop loss and stop limit", func(a *protocol.PlaceOrderArgs) {
			a.Exits = &protocol.Exits{StopLoss: exitAt(5980), StopLossLimit: exitAt(5979)}
		}, protocol.CodeInvalidArgument, "not both"},
		{"stop trigger alone", func(a *protocol.PlaceOrderArgs) {
			a.Exits = &protocol.Exits{TakeProfit: exitAt(6010), StopLossStop: exitAt(5980)}
		}, protocol.CodeInvalidArgument, "stopLossStop is the trigger of stopLossLimit"},
		{"neither price nor offset", func(a *protocol.PlaceOrderArgs) { a.Exits = &protocol.Exits{TakeProfit: &protocol.ExitPrice{}} }, protocol.CodeMissingFields, "exits.takeProfit.price or exits.takeProfit.offset"},
		{"price and offset", func(a *protocol.PlaceOrderArgs) {
			a.Exits = &protocol.Exits{TakeProfit: &protocol.ExitPrice{Price: ptr(6010.0), Offset: &protocol.PriceOffset{Unit: "ticks", Value: 4}}}
		}, protocol.CodeInvalidArgument, "not both"},
		{"zero offset", func(a *protocol.PlaceOrderArgs) { a.Exits = &protocol.Exits{StopLoss: exitOff("ticks", 0)} }, protocol.CodeInvalidArgument, "above 0"},
		{"negative offset", func(a *protocol.PlaceOrderArgs) { a.Exits = &protocol.Exits{StopLoss: exitOff("ticks", -4)} }, protocol.CodeInvalidArgument, "above 0"},
		{"infinite offset", func(a *protocol.PlaceOrderArgs) { a.Exits = &protocol.Exits{StopLoss: exitOff("ticks", math.Inf(1))} }, protocol.CodeInvalidArgument, "finite"},
		{"unknown unit", func(a *protocol.PlaceOrderArgs) { a.Exits = &protocol.Exits{StopLoss: exitOff("furlongs", 4)} }, protocol.CodeInvalidArgument, "ticks, points, percent, dollars"},
		{"off-tick exit", func(a *protocol.PlaceOrderArgs) { a.Exits = &protocol.Exits{StopLoss: exitAt(5980.1)} }, protocol.CodeInvalidArgument, "tick size"},
		{"negative exit price", func(a *protocol.PlaceOrderArgs) { a.Exits = &protocol.Exits{StopLoss: exitAt(-1)} }, protocol.CodeInvalidArgument, "positive price"},
		{"target below stop", func(a *protocol.PlaceOrderArgs) {
			a.Exits = &protocol.Exits{TakeProfit: exitAt(5970), StopLoss: exitAt(5980)}
		}, protocol.CodeInvalidArgument, "profit side"},
		{"with an ATM template", func(a *protocol.PlaceOrderArgs) {
			a.Strategy, a.Exits = "ATM 1 Target", &protocol.Exits{StopLoss: exitAt(5980)}
		}, protocol.CodeInvalidArgument, "ATM template"},
		{"with targetQuantity", func(a *protocol.PlaceOrderArgs) {
			a.TargetQuantity, a.Exits = ptr(2), &protocol.Exits{StopLoss: exitAt(5980)}
		}, protocol.CodeInvalidArgument, "targetQuantity"},
		{"limit price and offset", func(a *protocol.PlaceOrderArgs) {
			limit(a)
			a.LimitOffset = &protocol.PriceOffset{Unit: "ticks", Value: -4}
		}, protocol.CodeInvalidArgument, "not both"},
		{"limit offset on a market order", func(a *protocol.PlaceOrderArgs) { a.LimitOffset = &protocol.PriceOffset{Unit: "ticks", Value: -4} }, protocol.CodeInvalidArgument, "limitOffset applies only"},
		{"stop offset on a limit order", func(a *protocol.PlaceOrderArgs) {
			limit(a)
			a.StopOffset = &protocol.PriceOffset{Unit: "ticks", Value: 4}
		}, protocol.CodeInvalidArgument, "stopOffset applies only"},
		{"stop price and offset", func(a *protocol.PlaceOrderArgs) {
			a.OrderType, a.StopPrice, a.StopOffset = "StopMarket", ptr(6010.0), &protocol.PriceOffset{Unit: "ticks", Value: 4}
		}, protocol.CodeInvalidArgument, "not both"},
		{"bad offset unit", func(a *protocol.PlaceOrderArgs) {
			a.OrderType, a.LimitOffset = "Limit", &protocol.PriceOffset{Unit: "pips", Value: -4}
		}, protocol.CodeInvalidArgument, "limitOffset.unit"},
		{"offset below zero", func(a *protocol.PlaceOrderArgs) {
			a.OrderType, a.LimitOffset = "Limit", &protocol.PriceOffset{Unit: "percent", Value: -150}
		}, protocol.CodeInvalidArgument, "limitOffset"},
		{"cancel-after too short", func(a *protocol.PlaceOrderArgs) { limit(a); a.CancelAfterSeconds = ptr(59) }, protocol.CodeInvalidArgument, "between 60 and 3600"},
		{"cancel-after too long", func(a *protocol.PlaceOrderArgs) { limit(a); a.CancelAfterSeconds = ptr(3601) }, protocol.CodeInvalidArgument, "between 60 and 3600"},
		{"cancel-after on a market order", func(a *protocol.PlaceOrderArgs) { a.CancelAfterSeconds = ptr(60) }, protocol.CodeInvalidArgument, "only to Limit, StopLimit and StopMarket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.rec.Writes()
			a := marketArgs("Buy", 1)
			tc.edit(&a)
			_, err := f.ops.PlaceOrder(bg, a)
			requireCode(t, err, tc.code, "furlongs", "pips")
			require.Contains(t, err.Error(), tc.detail)
			require.Equal(t, before, f.rec.Writes(), "nothing was placed")
		})
	}
}

// Without an EntryWatcher, exits and cancel-after are not_supported and
// nothing is placed.
func TestExitsNeedAWatcher(t *testing.T) {
	f := newFixture(t)
	a := marketArgs("Buy", 1)
	a.Exits = &protocol.Exits{StopLoss: exitAt(5980)}
	_, err := f.ops.PlaceOrder(bg, a)
	requireCode(t, err, protocol.CodeNotSupported)
	require.Empty(t, f.rec.Writes())
}

// Relative prices resolve against the last price, rounded to the nearest
// tick; the entry with exits or a cancel-after is handed to the watcher.
func TestRelativePricesAndTheWatcher(t *testing.T) {
	for _, tc := range []struct {
		name       string
		orderType  string
		limit      *protocol.PriceOffset
		stop       *protocol.PriceOffset
		wantLimit  float64
		wantStop   float64
		cancelSecs *int
	}{
		{"ticks below", "Limit", &protocol.PriceOffset{Unit: "ticks", Value: -4}, nil, 5999, 0, nil},
		{"points above", "StopMarket", nil, &protocol.PriceOffset{Unit: "Points", Value: 3}, 0, 6003, ptr(120)},
		{"percent rounds to the tick", "Limit", &protocol.PriceOffset{Unit: "percent", Value: -0.1}, nil, 5994, 0, nil},
		{"dollars", "StopLimit", &protocol.PriceOffset{Unit: "dollars", Value: -110}, &protocol.PriceOffset{Unit: "dollars", Value: -100}, 5997.75, 5998, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			w := &watcher{}
			f.ops.SetEntryWatcher(w)
			a := protocol.PlaceOrderArgs{Account: "Sim101", Action: "Sell", Instrument: "ES", OrderType: tc.orderType,
				Quantity: 2, TimeInForce: "Gtc", LimitOffset: tc.limit, StopOffset: tc.stop, CancelAfterSeconds: tc.cancelSecs,
				Exits: &protocol.Exits{TakeProfit: exitOff("ticks", 8)}, StrategyTag: "bot"}
			if tc.orderType != "StopLimit" {
				a.Action = "Buy" // below the market for a limit, above for a stop
			}
			res, err := f.ops.PlaceOrder(bg, a)
			require.NoError(t, err)
			require.Equal(t, tc.wantLimit, res.Order.LimitPrice)
			require.Equal(t, tc.wantStop, res.Order.StopPrice)
			es := w.Entries()
			require.Len(t, es, 1)
			want := Entry{Account: "Sim101", Instrument: "ES 12-26", OrderID: res.OrderID, Action: res.Order.OrderAction,
				Quantity: 2, Exits: a.Exits, TickSize: 0.25, PointValue: 50, StrategyTag: "bot"}
			if tc.cancelSecs != nil {
				want.CancelAt = start.Add(time.Duration(*tc.cancelSecs) * time.Second)
			}
			require.Equal(t, want, es[0])
		})
	}
}

// An entry the watcher cannot record is cancelled and the call fails.
func TestEntryNotRecordedIsCancelled(t *testing.T) {
	f := newFixture(t)
	f.ops.SetEntryWatcher(&watcher{fail: errors.New("disk full")})
	a := protocol.PlaceOrderArgs{Account: "Sim101", Action: "Buy", Instrument: "ES", OrderType: "Limit",
		LimitPrice: ptr(5990.0), Quantity: 1, TimeInForce: "Day", CancelAfterSeconds: ptr(60)}
	_, err := f.ops.PlaceOrder(bg, a)
	requireCode(t, err, protocol.CodeInternal, "disk full")
	require.Empty(t, f.working("Sim101"))
}

// ExitOrders prices the exits from the fill in each one's direction.
func TestExitOrders(t *testing.T) {
	t.Parallel()
	e := Entry{Account: "A", Instrument: es, Action: protocol.ActionSell, TickSize: 0.25, PointValue: 50,
		Exits: &protocol.Exits{TakeProfit: exitOff("ticks", 10), StopLossLimit: exitOff("points", 3), StopLossStop: exitOff("dollars", 125)}}
	legs, prices, err := ExitOrders(e, 6000.25, 3, "g")
	require.NoError(t, err)
	require.Equal(t, []bridge.OrderRequest{
		{Account: "A", Instrument: es, Action: protocol.ActionBuy, OrderType: protocol.OrderTypeStopLimit, Quantity: 3,
			LimitPrice: 6003.25, StopPrice: 6002.75, TimeInForce: protocol.TimeInForceGtc, Oco: "g", Name: "Stop loss"},
		{Account: "A", Instrument: es, Action: protocol.ActionBuy, OrderType: protocol.OrderTypeLimit, Quantity: 3,
			LimitPrice: 5997.75, TimeInForce: protocol.TimeInForceGtc, Oco: "g", Name: "Profit target"},
	}, legs)
	require.Equal(t, 5997.75, *prices.TakeProfit)
	require.Nil(t, prices.StopLoss)

	e.Exits = &protocol.Exits{StopLoss: exitOff("percent", 150)}
	e.Action = protocol.ActionBuy
	_, _, err = ExitOrders(e, 6000, 1, "g")
	requireCode(t, err, protocol.CodeInvalidArgument)
}

// PlaceExits passes the gate as closing orders: a rule refusing entries
// lets them through, one refusing every order does not.
func TestPlaceExitsPassesAsClosing(t *testing.T) {
	f := newFixture(t)
	f.market("Sim101", protocol.ActionBuy, 1)
	legs := []bridge.OrderRequest{
		{Account: "Sim101", Instrument: es, Action: protocol.ActionSell, OrderType: protocol.OrderTypeStopMarket, Quantity: 1,
			StopPrice: 5980, TimeInForce: protocol.TimeInForceGtc, Oco: "x"},
		{Account: "Sim101", Instrument: es, Action: protocol.ActionSell, OrderType: protocol.OrderTypeLimit, Quantity: 1,
			LimitPrice: 6020, TimeInForce: protocol.TimeInForceGtc, Oco: "x"},
	}
	f.ops.SetGate(staticGate{Entries: &Block{Rule: RuleKillSwitch, Reason: "off"}})
	placed, err := f.ops.PlaceExits(bg, legs)
	require.NoError(t, err)
	require.Len(t, placed, 2)
	f.ops.SetGate(staticGate{Any: &Block{Rule: RuleMonitorStopped, Reason: "no"}})
	_, err = f.ops.PlaceExits(bg, legs)
	requireCode(t, err, protocol.CodeTradingBlocked)
}

// staticGate answers one verdict for every order.
type staticGate Verdict

func (g staticGate) Check(string, string, Source) Verdict { return Verdict(g) }
