package ops

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// The market stands at 6000 bid / 6000.25 ask in every fixture.
func bracketArgs(action string, qty int, tp, sl *float64) protocol.CancelAndBracketArgs {
	return protocol.CancelAndBracketArgs{Account: "Sim101", Instrument: "ES", Action: action, Quantity: qty,
		TakeProfit: tp, StopLoss: sl}
}

// Rule 1: the exit orders are on the side opposite to action.
func TestBracketRule1OppositeSide(t *testing.T) {
	onEachPlatform(t, testBracketRule1OppositeSide)
}

func testBracketRule1OppositeSide(t *testing.T, newFixture fixtureMaker) {
	for _, tc := range []struct {
		action string
		held   int
		tp, sl float64
		exit   string
	}{
		{"Buy", 2, 6010, 5990, protocol.ActionSell},
		{"SELL", -2, 5990, 6010, protocol.ActionBuy},
	} {
		t.Run(tc.action, func(t *testing.T) {
			f := newFixture(t)
			if tc.held > 0 {
				f.market("Sim101", protocol.ActionBuy, tc.held)
			} else {
				f.market("Sim101", protocol.ActionSell, -tc.held)
			}
			res, err := f.ops.CancelAndBracket(bg, bracketArgs(tc.action, 2, ptr(tc.tp), ptr(tc.sl)))
			require.NoError(t, err)
			require.Len(t, res.Orders, 2)
			sl, tp := res.Orders[0], res.Orders[1]
			require.Equal(t, tc.exit, sl.OrderAction)
			require.Equal(t, tc.exit, tp.OrderAction)
			require.Equal(t, protocol.OrderTypeStopMarket, sl.OrderType)
			require.Equal(t, tc.sl, sl.StopPrice)
			require.Equal(t, protocol.OrderTypeLimit, tp.OrderType)
			require.Equal(t, tc.tp, tp.LimitPrice)
			require.Equal(t, protocol.TimeInForceGtc, tp.TimeInForce)
			require.Equal(t, tc.held, f.position("Sim101"), "the bracket rests; the position is unchanged")
		})
	}
}

// Rule 2: at least one of takeProfit and stopLoss; otherwise nothing is
// cancelled and nothing placed. Either one alone is a one-legged bracket.
func TestBracketRule2NeedsTakeProfitOrStopLoss(t *testing.T) {
	onEachPlatform(t, testBracketRule2NeedsTakeProfitOrStopLoss)
}

func testBracketRule2NeedsTakeProfitOrStopLoss(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	f.market("Sim101", protocol.ActionBuy, 1)
	old := f.resting("Sim101", protocol.ActionSell, protocol.OrderTypeLimit, 6050, 1)
	_, err := f.ops.CancelAndBracket(bg, bracketArgs("Buy", 1, nil, nil))
	requireCode(t, err, protocol.CodeMissingFields)
	require.Contains(t, err.Error(), "takeProfit or stopLoss")
	require.Empty(t, f.rec.Writes())
	require.Equal(t, protocol.OrderStateWorking, f.order("Sim101", old.OrderID).OrderState)

	res, err := f.ops.CancelAndBracket(bg, bracketArgs("Buy", 1, nil, ptr(5990.0)))
	require.NoError(t, err)
	require.Len(t, res.OrderIDs, 1)
	require.Equal(t, protocol.OrderTypeStopMarket, res.Orders[0].OrderType)
	res, err = f.ops.CancelAndBracket(bg, bracketArgs("Buy", 1, ptr(6010.0), nil))
	require.NoError(t, err)
	require.Len(t, res.OrderIDs, 1)
	require.Equal(t, protocol.OrderTypeLimit, res.Orders[0].OrderType)
}

// Rule 3: every non-terminal order of the instrument is cancelled first,
// then the delay (default 300 ms, through the injected Sleep), then the
// bracket.
func TestBracketRule3CancelThenDelayThenBracket(t *testing.T) {
	onEachPlatform(t, testBracketRule3CancelThenDelayThenBracket)
}

func testBracketRule3CancelThenDelayThenBracket(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	f.market("Sim101", protocol.ActionBuy, 2)
	a := f.resting("Sim101", protocol.ActionSell, protocol.OrderTypeLimit, 6050, 1)
	b := f.resting("Sim101", protocol.ActionSell, protocol.OrderTypeStopMarket, 5950, 2)
	c := f.resting("Sim101", protocol.ActionBuy, protocol.OrderTypeLimit, 5900, 1)
	// Another instrument and another account keep their orders.
	nq := f.trade(bridge.OrderRequest{Account: "Sim101", Instrument: "NQ", Action: protocol.ActionBuy,
		OrderType: protocol.OrderTypeLimit, LimitPrice: 100, Quantity: 1, TimeInForce: protocol.TimeInForceGtc})
	other := f.resting("Sim102", protocol.ActionBuy, protocol.OrderTypeLimit, 5900, 1)

	f.onSleep = func(int) {
		for _, id := range []string{a.OrderID, b.OrderID, c.OrderID} {
			require.Equal(t, protocol.OrderStateCancelled, f.order("Sim101", id).OrderState, "cancelled before the delay")
		}
		for _, w := range f.rec.Writes() {
			require.NotContains(t, w, "submit", "no bracket before the delay")
		}
	}
	res, err := f.ops.CancelAndBracket(bg, bracketArgs("Buy", 2, ptr(6010.0), ptr(5990.0)))
	require.NoError(t, err)
	require.Equal(t, []time.Duration{DefaultBracketDelay}, f.Sleeps())
	require.ElementsMatch(t, []string{a.OrderID, b.OrderID, c.OrderID}, res.CancelledOrderIDs)
	require.Equal(t, protocol.OrderStateWorking, f.order("Sim101", nq.OrderID).OrderState)
	require.Equal(t, protocol.OrderStateWorking, f.order("Sim102", other.OrderID).OrderState)

	f2 := newFixture(t, func(o *Options) { o.BracketDelay = 2 * time.Second })
	f2.market("Sim101", protocol.ActionBuy, 1)
	_, err = f2.ops.CancelAndBracket(bg, bracketArgs("Buy", 1, ptr(6010.0), nil))
	require.NoError(t, err)
	require.Equal(t, []time.Duration{2 * time.Second}, f2.Sleeps(), "the delay is configurable")
}

// The delay respects ctx: a call cancelled during it places no bracket.
func TestBracketDelayRespectsContext(t *testing.T) {
	onEachPlatform(t, testBracketDelayRespectsContext)
}

func testBracketDelayRespectsContext(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	f.market("Sim101", protocol.ActionBuy, 1)
	ctx, cancel := context.WithCancel(bg)
	f.onSleep = func(int) { cancel() }
	_, err := f.ops.CancelAndBracket(ctx, bracketArgs("Buy", 1, ptr(6010.0), ptr(5990.0)))
	requireCode(t, err, protocol.CodeCancelled)
	require.Empty(t, f.working("Sim101"))
}

// Rule 4: a position smaller than quantity reduces the bracket to it.
func TestBracketRule4ReducedToPosition(t *testing.T) {
	onEachPlatform(t, testBracketRule4ReducedToPosition)
}

func testBracketRule4ReducedToPosition(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	f.market("Sim101", protocol.ActionBuy, 2)
	res, err := f.ops.CancelAndBracket(bg, bracketArgs("Buy", 5, ptr(6010.0), ptr(5990.0)))
	require.NoError(t, err)
	require.Equal(t, 2, res.Quantity)
	for _, o := range res.Orders {
		require.Equal(t, 2, o.Quantity)
	}
	// A position larger than quantity keeps quantity.
	f2 := newFixture(t)
	f2.market("Sim101", protocol.ActionBuy, 4)
	res, err = f2.ops.CancelAndBracket(bg, bracketArgs("Buy", 3, ptr(6010.0), ptr(5990.0)))
	require.NoError(t, err)
	require.Equal(t, 3, res.Orders[0].Quantity)
	// The size is read after the delay: a position that shrank meanwhile
	// gives the smaller bracket.
	f3 := newFixture(t)
	f3.market("Sim101", protocol.ActionBuy, 4)
	f3.onSleep = func(int) { f3.market("Sim101", protocol.ActionSell, 3) }
	res, err = f3.ops.CancelAndBracket(bg, bracketArgs("Buy", 4, ptr(6010.0), ptr(5990.0)))
	require.NoError(t, err)
	require.Equal(t, 1, res.Orders[0].Quantity)
}

// Rule 5: a position that went flat during the cancel window gets no
// bracket.
func TestBracketRule5FlatDuringWindow(t *testing.T) {
	onEachPlatform(t, testBracketRule5FlatDuringWindow)
}

func testBracketRule5FlatDuringWindow(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	f.market("Sim101", protocol.ActionBuy, 2)
	stop := f.resting("Sim101", protocol.ActionSell, protocol.OrderTypeStopMarket, 5950, 2)
	f.onSleep = func(int) { f.market("Sim101", protocol.ActionSell, 2) } // e.g. a target filled
	res, err := f.ops.CancelAndBracket(bg, bracketArgs("Buy", 2, ptr(6010.0), ptr(5990.0)))
	require.NoError(t, err)
	require.False(t, res.Placed)
	require.Empty(t, res.OrderIDs)
	require.NotNil(t, res.OrderIDs)
	require.Equal(t, []string{stop.OrderID}, res.CancelledOrderIDs)
	require.Empty(t, f.working("Sim101"))
	require.Zero(t, f.position("Sim101"))
	require.JSONEq(t, `[]`, mustJSON(t, shape(t, res)["orderIds"]))
}

// Rule 6: with no position at all, the bracket is entered at quantity as a
// straddle entry: both legs rest on either side of the market.
func TestBracketRule6StraddleEntry(t *testing.T) {
	onEachPlatform(t, testBracketRule6StraddleEntry)
}

func testBracketRule6StraddleEntry(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	res, err := f.ops.CancelAndBracket(bg, bracketArgs("Buy", 3, ptr(6010.0), ptr(5990.0)))
	require.NoError(t, err)
	require.True(t, res.Placed)
	require.Equal(t, 3, res.Quantity)
	require.Len(t, res.Orders, 2)
	for _, o := range res.Orders {
		require.Equal(t, 3, o.Quantity)
		require.Equal(t, protocol.ActionSell, o.OrderAction)
		require.False(t, protocol.TerminalOrderState(o.OrderState))
	}
	require.Zero(t, f.position("Sim101"))
	// The market reaching the stop leg enters short 3; the OCO cancels the
	// other leg.
	f.setPrice(es, 5989)
	require.Equal(t, -3, f.position("Sim101"))
	require.Equal(t, protocol.OrderStateCancelled, f.order("Sim101", res.OrderIDs[1]).OrderState)

	// A straddle leg that would enter at once is refused before anything
	// is cancelled.
	f2 := newFixture(t)
	keep := f2.resting("Sim101", protocol.ActionBuy, protocol.OrderTypeLimit, 5900, 1)
	_, err = f2.ops.CancelAndBracket(bg, bracketArgs("Buy", 1, ptr(5995.0), ptr(5990.0)))
	requireCode(t, err, protocol.CodeInvalidArgument)
	require.Empty(t, f2.rec.Writes())
	require.Equal(t, protocol.OrderStateWorking, f2.order("Sim101", keep.OrderID).OrderState)
}

// Rule 7: both legs share one OCO id, generated when omitted; when one
// fills, the platform cancels the other.
func TestBracketRule7SharedOCO(t *testing.T) {
	onEachPlatform(t, testBracketRule7SharedOCO)
}

func testBracketRule7SharedOCO(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	f.market("Sim101", protocol.ActionBuy, 2)
	res, err := f.ops.CancelAndBracket(bg, bracketArgs("Buy", 2, ptr(6010.0), ptr(5990.0)))
	require.NoError(t, err)
	require.Equal(t, "oco-generated", res.OcoID)
	for _, o := range res.Orders {
		require.Equal(t, "oco-generated", o.Oco)
	}
	f.setPrice(es, 6011) // the take profit fills
	require.Zero(t, f.position("Sim101"))
	require.Equal(t, protocol.OrderStateFilled, f.order("Sim101", res.OrderIDs[1]).OrderState)
	require.Equal(t, protocol.OrderStateCancelled, f.order("Sim101", res.OrderIDs[0]).OrderState)

	f2 := newFixture(t)
	f2.market("Sim101", protocol.ActionSell, 1)
	a := bracketArgs("Sell", 1, ptr(5990.0), ptr(6010.0))
	a.OcoID = "my-oco"
	res, err = f2.ops.CancelAndBracket(bg, a)
	require.NoError(t, err)
	require.Equal(t, "my-oco", res.OcoID)
	require.Equal(t, "my-oco", res.Orders[0].Oco)
	require.Equal(t, "my-oco", res.Orders[1].Oco)

	// The default generator gives each call its own id.
	require.NotEqual(t, newOcoID(), newOcoID())
}

// Rule 8: the result lists the order ids; missing required fields are
// refused naming them.
func TestBracketRule8ResultAndMissingFields(t *testing.T) {
	onEachPlatform(t, testBracketRule8ResultAndMissingFields)
}

func testBracketRule8ResultAndMissingFields(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	f.market("Sim101", protocol.ActionBuy, 1)
	res, err := f.ops.CancelAndBracket(bg, bracketArgs("Buy", 1, ptr(6010.0), ptr(5990.0)))
	require.NoError(t, err)
	m := shape(t, res)
	ids := m["orderIds"].([]any)
	require.Len(t, ids, 2)
	require.Equal(t, res.Orders[0].OrderID, ids[0])
	require.Equal(t, res.Orders[1].OrderID, ids[1])

	writes := len(f.rec.Writes())
	for _, tc := range []struct {
		args  protocol.CancelAndBracketArgs
		names string
	}{
		{protocol.CancelAndBracketArgs{Account: "Sim101"}, "instrument, action, quantity, takeProfit or stopLoss"},
		{protocol.CancelAndBracketArgs{Account: "Sim101", Instrument: "ES", Action: "Buy", TakeProfit: ptr(6010.0)}, "quantity"},
		{protocol.CancelAndBracketArgs{Account: "Sim101", Action: "Buy", Quantity: 1, StopLoss: ptr(5990.0)}, "instrument"},
		{protocol.CancelAndBracketArgs{Instrument: "ES", Action: "Buy", Quantity: 1, StopLoss: ptr(5990.0)}, "account"},
	} {
		_, err := f.ops.CancelAndBracket(bg, tc.args)
		requireCode(t, err, protocol.CodeMissingFields)
		require.Contains(t, err.Error(), tc.names)
	}
	require.Len(t, f.rec.Writes(), writes, "nothing cancelled or placed")
}

// Bad input is refused before anything is cancelled.
func TestBracketRefusesBadInput(t *testing.T) {
	onEachPlatform(t, testBracketRefusesBadInput)
}

func testBracketRefusesBadInput(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	f.market("Sim101", protocol.ActionBuy, 1)
	keep := f.resting("Sim101", protocol.ActionSell, protocol.OrderTypeLimit, 6050, 1)
	for _, tc := range []struct {
		name string
		args protocol.CancelAndBracketArgs
		code string
	}{
		{"bad action", bracketArgs("Long", 1, ptr(6010.0), nil), protocol.CodeInvalidArgument},
		{"bad quantity", bracketArgs("Buy", -1, ptr(6010.0), nil), protocol.CodeInvalidArgument},
		{"negative price", bracketArgs("Buy", 1, ptr(-1.0), nil), protocol.CodeInvalidArgument},
		{"off-tick", bracketArgs("Buy", 1, ptr(6010.1), nil), protocol.CodeInvalidArgument},
		{"stop through the market", bracketArgs("Buy", 1, ptr(6010.0), ptr(6005.0)), protocol.CodeInvalidArgument},
		{"legs inverted", bracketArgs("Buy", 1, ptr(5990.0), ptr(6010.0)), protocol.CodeInvalidArgument},
		{"position on the other side", bracketArgs("Sell", 1, ptr(5990.0), ptr(6010.0)), protocol.CodeMarketPositionMismatch},
		{"unknown instrument", protocol.CancelAndBracketArgs{Account: "Sim101", Instrument: "ZZ", Action: "Buy", Quantity: 1, StopLoss: ptr(1.0)}, protocol.CodeInvalidInstrument},
		{"unknown account", protocol.CancelAndBracketArgs{Account: "Nope", Instrument: "ES", Action: "Buy", Quantity: 1, StopLoss: ptr(5990.0)}, protocol.CodeAccountNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.ops.CancelAndBracket(bg, tc.args)
			requireCode(t, err, tc.code, "Long", "Nope")
			require.Empty(t, f.rec.Writes())
			require.Equal(t, protocol.OrderStateWorking, f.order("Sim101", keep.OrderID).OrderState)
		})
	}
}

// A leg the platform refuses after the other was placed is taken back:
// never half a bracket.
func TestBracketNeverHalfPlaced(t *testing.T) {
	onEachPlatform(t, testBracketNeverHalfPlaced)
}

func testBracketNeverHalfPlaced(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	f.market("Sim101", protocol.ActionBuy, 1)
	f.rec.submit = func(req bridge.OrderRequest) error {
		if req.OrderType == protocol.OrderTypeLimit {
			return &bridge.RejectError{Reason: "market is closed"}
		}
		return nil
	}
	res, err := f.ops.CancelAndBracket(bg, bracketArgs("Buy", 1, ptr(6010.0), ptr(5990.0)))
	requireCode(t, err, protocol.CodeOrderRejected)
	require.Empty(t, res.OrderIDs)
	require.Empty(t, f.working("Sim101"), "the stop leg was cancelled again")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
