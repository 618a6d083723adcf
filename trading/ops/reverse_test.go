package ops

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

func reverseArgs(action string, qty int) protocol.ReversePositionArgs {
	return protocol.ReversePositionArgs{Account: "Sim101", Instrument: "ES", Action: action, Quantity: qty,
		OrderType: "MARKET", TimeInForce: "GTC"}
}

// Spec rule 1: with a position open, the position is closed and the new
// order placed; the result carries the new order's id.
func TestReversePositionRule1PlacesNewOrder(t *testing.T) {
	onEachPlatform(t, testReversePositionRule1PlacesNewOrder)
}

func testReversePositionRule1PlacesNewOrder(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	f.market("Sim101", protocol.ActionBuy, 2)
	stop := f.resting("Sim101", protocol.ActionSell, protocol.OrderTypeStopMarket, 5950, 2)
	res, err := f.ops.ReversePosition(bg, reverseArgs("SELL", 3))
	require.NoError(t, err)
	require.NotEmpty(t, res.OrderID)
	require.Equal(t, res.OrderID, res.Order.OrderID)
	require.Equal(t, protocol.ActionSell, res.Order.OrderAction)
	require.Equal(t, 3, res.Order.Quantity)
	require.Equal(t, -3, f.position("Sim101"))
	require.Len(t, res.CloseOrderIDs, 1, "the close order")
	require.NotEqual(t, res.OrderID, res.CloseOrderIDs[0])
	require.Equal(t, []string{stop.OrderID}, res.CancelledOrderIDs)
	require.Equal(t, protocol.OrderStateCancelled, f.order("Sim101", stop.OrderID).OrderState, "the old position's orders are cancelled")
	require.Equal(t, "orderId", firstKey(shape(t, res), "orderId"))
	require.Empty(t, f.Sleeps(), "the simulator closes at once: no wait")

	// A resting new order (limit) with an OCO id and an ATM template.
	f2 := newFixture(t)
	f2.market("Sim101", protocol.ActionSell, 1)
	a := reverseArgs("Buy", 1)
	a.OrderType, a.LimitPrice, a.OcoID, a.Strategy = "Limit", ptr(5990.0), "r1", "ATM 1 Target"
	res, err = f2.ops.ReversePosition(bg, a)
	require.NoError(t, err)
	require.Equal(t, protocol.OrderStateWorking, res.Order.OrderState)
	require.Equal(t, "r1", res.Order.Oco)
	require.Zero(t, f2.position("Sim101"))
}

func firstKey(m map[string]any, k string) string {
	if _, ok := m[k]; ok {
		return k
	}
	return ""
}

// Spec rule 2: with no position open in the instrument and account, the
// call is refused with no_position and nothing else runs.
func TestReversePositionRule2NoPositionDoesNothing(t *testing.T) {
	onEachPlatform(t, testReversePositionRule2NoPositionDoesNothing)
}

func testReversePositionRule2NoPositionDoesNothing(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	lim := f.resting("Sim101", protocol.ActionBuy, protocol.OrderTypeLimit, 5900, 1)
	f.market("Sim102", protocol.ActionBuy, 1)      // another account
	f.trade(bridge.OrderRequest{Account: "Sim101", // another instrument
		Instrument: "NQ", Action: protocol.ActionBuy, OrderType: protocol.OrderTypeMarket,
		Quantity: 1, TimeInForce: protocol.TimeInForceDay})

	_, err := f.ops.ReversePosition(bg, reverseArgs("Sell", 1))
	requireCode(t, err, protocol.CodeNoPosition)
	require.Empty(t, f.rec.Writes(), "nothing was cancelled, closed or placed")
	require.Equal(t, protocol.OrderStateWorking, f.order("Sim101", lim.OrderID).OrderState)
	require.Zero(t, f.position("Sim101"))
	require.Empty(t, f.Sleeps())
}

// Spec rule 3: enumerated values match in any casing.
func TestReversePositionRule3AnyCasing(t *testing.T) {
	onEachPlatform(t, testReversePositionRule3AnyCasing)
}

func testReversePositionRule3AnyCasing(t *testing.T, newFixture fixtureMaker) {
	for _, c := range [][3]string{
		{"Buy", "Market", "Gtc"}, {"BUY", "MARKET", "GTC"}, {"buy", "market", "gtc"}, {"bUy", "mArKeT", "dAy"},
	} {
		t.Run(strings.Join(c[:], "/"), func(t *testing.T) {
			f := newFixture(t)
			f.market("Sim101", protocol.ActionSell, 1)
			a := reverseArgs(c[0], 2)
			a.OrderType, a.TimeInForce = c[1], c[2]
			res, err := f.ops.ReversePosition(bg, a)
			require.NoError(t, err)
			require.Equal(t, protocol.ActionBuy, res.Order.OrderAction, "written back in the platform's casing")
			require.Equal(t, protocol.OrderTypeMarket, res.Order.OrderType)
			require.Equal(t, 2, f.position("Sim101"))
		})
	}
}

// Missing or bad fields are refused before anything runs, also with a
// position open.
func TestReversePositionRefusesBadInput(t *testing.T) {
	onEachPlatform(t, testReversePositionRefusesBadInput)
}

func testReversePositionRefusesBadInput(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	f.market("Sim101", protocol.ActionBuy, 1)
	for _, tc := range []struct {
		name  string
		edit  func(a *protocol.ReversePositionArgs)
		code  string
		names string
	}{
		{"all missing", func(a *protocol.ReversePositionArgs) { *a = protocol.ReversePositionArgs{Account: "Sim101"} }, protocol.CodeMissingFields, "action, instrument, orderType, quantity, timeInForce"},
		{"no quantity", func(a *protocol.ReversePositionArgs) { a.Quantity = 0 }, protocol.CodeMissingFields, "quantity"},
		{"limit without price", func(a *protocol.ReversePositionArgs) { a.OrderType = "LIMIT" }, protocol.CodeMissingFields, "limitPrice"},
		{"stop without price", func(a *protocol.ReversePositionArgs) { a.OrderType = "STOPMARKET" }, protocol.CodeMissingFields, "stopPrice"},
		{"bad action", func(a *protocol.ReversePositionArgs) { a.Action = "SHORT" }, protocol.CodeInvalidArgument, ""},
		{"bad order type", func(a *protocol.ReversePositionArgs) { a.OrderType = "TRAIL" }, protocol.CodeInvalidArgument, ""},
		{"off-tick price", func(a *protocol.ReversePositionArgs) { a.OrderType, a.LimitPrice = "LIMIT", ptr(5900.3) }, protocol.CodeInvalidArgument, ""},
		{"unknown instrument", func(a *protocol.ReversePositionArgs) { a.Instrument = "XX 12-26" }, protocol.CodeInvalidInstrument, ""},
		{"unknown template", func(a *protocol.ReversePositionArgs) { a.Strategy = "Nope" }, protocol.CodeTemplateNotFound, ""},
		{"another tag owns it", func(a *protocol.ReversePositionArgs) { a.StrategyTag = "botB" }, protocol.CodePositionOwned, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := reverseArgs("Sell", 1)
			tc.edit(&a)
			_, err := f.ops.ReversePosition(bg, a)
			requireCode(t, err, tc.code, "SHORT", "TRAIL", "XX", "Nope")
			if tc.names != "" {
				require.Contains(t, err.Error(), tc.names)
			}
			require.Empty(t, f.rec.Writes())
			require.Equal(t, 1, f.position("Sim101"))
		})
	}
}

// The wait: a platform slow to close is polled every PollInterval until
// the old position and its orders have cleared, then the order goes out.
func TestReversePositionWaitsForClear(t *testing.T) {
	onEachPlatform(t, testReversePositionWaitsForClear)
}

func testReversePositionWaitsForClear(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	f.market("Sim101", protocol.ActionBuy, 2)
	stop := f.resting("Sim101", protocol.ActionSell, protocol.OrderTypeStopMarket, 5950, 2)
	// The platform acknowledges the flatten but closes the position only
	// at the third poll, and cancels the stop only at the fifth.
	f.rec.flatten = func(context.Context, string, string) error { return nil }
	f.onSleep = func(n int) {
		switch n {
		case 3:
			f.market("Sim101", protocol.ActionSell, 2)
		case 5:
			_, err := f.platform.CancelOrder(bg, "Sim101", stop.OrderID)
			require.NoError(t, err)
			f.settle()
		}
		w := f.rec.Writes()
		require.Equal(t, "flatten "+es, w[len(w)-1], "nothing new is placed while waiting")
	}
	res, err := f.ops.ReversePosition(bg, reverseArgs("Sell", 1))
	require.NoError(t, err)
	require.Equal(t, []time.Duration{DefaultPollInterval, DefaultPollInterval, DefaultPollInterval, DefaultPollInterval, DefaultPollInterval}, f.Sleeps())
	require.Equal(t, -1, f.position("Sim101"))
	require.Equal(t, protocol.ActionSell, res.Order.OrderAction)
}

// The wait ends after ClearTimeout (5 s): position_not_flat, and the new
// order is not placed.
func TestReversePositionGivesUpAfterFiveSeconds(t *testing.T) {
	onEachPlatform(t, testReversePositionGivesUpAfterFiveSeconds)
}

func testReversePositionGivesUpAfterFiveSeconds(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	f.market("Sim101", protocol.ActionBuy, 2)
	f.rec.flatten = func(context.Context, string, string) error { return nil } // never closes
	_, err := f.ops.ReversePosition(bg, reverseArgs("Sell", 1))
	requireCode(t, err, protocol.CodePositionNotFlat)
	var total time.Duration
	for _, d := range f.Sleeps() {
		total += d
	}
	require.Equal(t, 5*time.Second, total)
	require.Equal(t, []string{"flatten " + es}, f.rec.Writes(), "no new order")
	require.Equal(t, 2, f.position("Sim101"))

	// The timeout and the step are options.
	f2 := newFixture(t, func(o *Options) { o.ClearTimeout, o.PollInterval = time.Second, 250*time.Millisecond })
	f2.market("Sim101", protocol.ActionBuy, 1)
	f2.rec.flatten = func(context.Context, string, string) error { return nil }
	_, err = f2.ops.ReversePosition(bg, reverseArgs("Sell", 1))
	requireCode(t, err, protocol.CodePositionNotFlat)
	require.Len(t, f2.Sleeps(), 4)
}

// The wait respects ctx: a cancelled call stops waiting and places nothing.
func TestReversePositionWaitRespectsContext(t *testing.T) {
	onEachPlatform(t, testReversePositionWaitRespectsContext)
}

func testReversePositionWaitRespectsContext(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	f.market("Sim101", protocol.ActionBuy, 2)
	f.rec.flatten = func(context.Context, string, string) error { return nil }
	ctx, cancel := context.WithCancel(bg)
	f.onSleep = func(n int) {
		if n == 2 {
			cancel()
		}
	}
	_, err := f.ops.ReversePosition(ctx, reverseArgs("Sell", 1))
	requireCode(t, err, protocol.CodeCancelled)
	require.Len(t, f.Sleeps(), 2)
	require.Equal(t, []string{"flatten " + es}, f.rec.Writes())
}

// When the new order fails after the close, the error says the position
// was closed.
func TestReversePositionNewOrderRejected(t *testing.T) {
	onEachPlatform(t, testReversePositionNewOrderRejected)
}

func testReversePositionNewOrderRejected(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	f.market("Sim101", protocol.ActionBuy, 2)
	f.rec.submit = func(req bridge.OrderRequest) error {
		if req.Name != "Close" {
			return &bridge.RejectError{Reason: "market is closed"}
		}
		return nil
	}
	_, err := f.ops.ReversePosition(bg, reverseArgs("Sell", 1))
	requireCode(t, err, protocol.CodeOrderRejected)
	require.Contains(t, err.Error(), "the old position was closed")
	require.Zero(t, f.position("Sim101"))
}

func TestReverse(t *testing.T) {
	onEachPlatform(t, testReverse)
}

func testReverse(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	_, err := f.ops.Reverse(bg, protocol.ReverseArgs{Account: "Sim101", Instrument: "ES"})
	requireCode(t, err, protocol.CodeNoPosition)
	require.Empty(t, f.rec.Writes())
	_, err = f.ops.Reverse(bg, protocol.ReverseArgs{Account: "Sim101"})
	requireCode(t, err, protocol.CodeMissingFields)

	f.market("Sim101", protocol.ActionBuy, 2)
	stop := f.resting("Sim101", protocol.ActionSell, protocol.OrderTypeStopMarket, 5950, 2)
	res, err := f.ops.Reverse(bg, protocol.ReverseArgs{Account: "Sim101", Instrument: "ES"})
	require.NoError(t, err)
	require.Equal(t, -2, f.position("Sim101"), "the opposite side at the same size")
	require.Equal(t, protocol.ActionSell, res.Order.OrderAction)
	require.Equal(t, 2, res.Order.Quantity)
	require.Equal(t, []string{stop.OrderID}, res.CancelledOrderIDs, "the old stop would add to the new position")
	require.Empty(t, f.working("Sim101"))

	res, err = f.ops.Reverse(bg, protocol.ReverseArgs{Account: "Sim101", Instrument: "ES 12-26"})
	require.NoError(t, err)
	require.Equal(t, 2, f.position("Sim101"))
	require.Equal(t, protocol.ActionBuy, res.Order.OrderAction)
}
