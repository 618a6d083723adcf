package ops

import (
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge/bridgetest"
	"tradebridge/trading/bridge/sim"
)

func replaceArgs(cancel string, limit float64) protocol.CancelReplaceArgs {
	return protocol.CancelReplaceArgs{CancelOrderID: cancel, PlaceOrderArgs: protocol.PlaceOrderArgs{Account: "Sim101",
		Action: "Buy", Instrument: "ES", OrderType: "Limit", LimitPrice: &limit, Quantity: 1, TimeInForce: "Gtc"}}
}

// CancelReplace cancels the working order, waits for the cancel, and
// places the new order; the result names the cancelled order.
func TestCancelReplace(t *testing.T) {
	onEachPlatform(t, func(t *testing.T, newFixture fixtureMaker) {
		f := newFixture(t)
		old := f.resting("Sim101", protocol.ActionBuy, protocol.OrderTypeLimit, 5990, 1)
		res, err := f.ops.CancelReplace(bg, replaceArgs(old.OrderID, 5985))
		require.NoError(t, err)
		require.Equal(t, []string{old.OrderID}, res.CancelledOrderIDs)
		require.Equal(t, 5985.0, res.Order.LimitPrice)
		working := f.working("Sim101")
		require.Len(t, working, 1)
		require.Equal(t, res.OrderID, working[0].OrderID)
		m := shape(t, res)
		require.Contains(t, m, "orderId")
		require.Contains(t, m, "cancelledOrderIds")
	})
}

// Bad input, an unknown order and an order that ended are refused before
// anything is cancelled.
func TestCancelReplaceRefusals(t *testing.T) {
	f := newFixture(t)
	old := f.resting("Sim101", protocol.ActionBuy, protocol.OrderTypeLimit, 5990, 1)
	done := f.market("Sim101", protocol.ActionBuy, 1)
	for _, tc := range []struct {
		name   string
		args   protocol.CancelReplaceArgs
		code   string
		detail string
	}{
		{"nothing", protocol.CancelReplaceArgs{}, protocol.CodeMissingFields, "account, cancelOrderId"},
		{"no cancelOrderId", replaceArgs("", 5985), protocol.CodeMissingFields, "cancelOrderId"},
		{"bad new order", func() protocol.CancelReplaceArgs {
			a := replaceArgs(old.OrderID, 5985)
			a.LimitPrice = ptr(5985.1)
			return a
		}(), protocol.CodeInvalidArgument, "tick"},
		{"unknown order", replaceArgs("nope-1", 5985), protocol.CodeOrderNotFound, ""},
		{"ended order", replaceArgs(done.OrderID, 5985), protocol.CodeInvalidArgument, "not working"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.rec.Writes()
			_, err := f.ops.CancelReplace(bg, tc.args)
			requireCode(t, err, tc.code, "nope-1")
			require.Contains(t, err.Error(), tc.detail)
			require.Equal(t, before, f.rec.Writes(), "nothing was cancelled or placed")
		})
	}
	// The gate is asked before the cancel.
	f.ops.SetGate(staticGate{Entries: &Block{Rule: RuleKillSwitch, Reason: "the kill switch is on"}})
	before := f.rec.Writes()
	_, err := f.ops.CancelReplace(bg, replaceArgs(old.OrderID, 5985))
	requireCode(t, err, protocol.CodeTradingBlocked)
	require.Equal(t, before, f.rec.Writes())
}

// An order that filled in part before its cancel took effect places
// nothing.
func TestCancelReplaceAfterAPartialFill(t *testing.T) {
	f := newFixtureOn(t, func(t testing.TB, o sim.Options) bridgetest.Harness {
		o.BookDepth = 1
		return bridgetest.Sim(t, o)
	})
	old := f.resting("Sim101", protocol.ActionBuy, protocol.OrderTypeLimit, 5990, 2)
	f.setPrice(es, 5989.75)
	_, err := f.ops.CancelReplace(bg, replaceArgs(old.OrderID, 5985))
	requireCode(t, err, protocol.CodeMarketPositionMismatch)
	require.Contains(t, err.Error(), "nothing was placed")
	require.Empty(t, f.working("Sim101"))
	require.Equal(t, 1, f.position("Sim101"))
}
