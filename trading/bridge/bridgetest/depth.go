package bridgetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
)

// thinBook is a market whose price levels offer one contract each time an
// order is matched, so that orders fill in parts.
var thinBook = sim.Options{BookDepth: 1}

// depthChecks cover partly filled orders.
func depthChecks() []check {
	return []check{
		{name: "SubmitOrder/a market order walks a thin book", opts: thinBook, run: func(t *testing.T, h Harness) {
			o := submit(t, h, marketOrder(acct, protocol.ActionBuy, 3))
			require.Equal(t, protocol.OrderStateFilled, o.OrderState)
			require.Equal(t, 3, o.Filled)
			require.Equal(t, esAsk+0.25, o.AverageFillPrice, "one contract at each of three levels")
			exs, err := h.Platform.Executions(t.Context(), acct)
			require.NoError(t, err)
			require.Len(t, exs, 3)
			for i, e := range exs {
				require.Equal(t, o.OrderID, e.OrderID)
				require.Equal(t, 1, e.Quantity)
				require.Equal(t, esAsk+0.25*float64(i), e.Price)
			}
		}},
		{name: "SubmitOrder/a resting limit fills in parts", opts: thinBook, run: func(t *testing.T, h Harness) {
			o := submit(t, h, limitOrder(acct, protocol.ActionBuy, 3, 5990))
			setPrice(t, h, es, 5989.75)
			o = orderOf(t, h, acct, o.OrderID)
			require.Equal(t, protocol.OrderStatePartFilled, o.OrderState)
			require.Equal(t, 1, o.Filled)
			require.Equal(t, 5990.0, o.AverageFillPrice)
			require.Equal(t, 1, signed(t, h, acct, es))
			setPrice(t, h, es, 5989.5)
			o = orderOf(t, h, acct, o.OrderID)
			require.Equal(t, 2, o.Filled)
			require.Equal(t, (5990+5989.75)/2, o.AverageFillPrice, "quantity-weighted")
		}},
		{name: "CancelOrder/a partly filled order keeps its fills", opts: thinBook, run: func(t *testing.T, h Harness) {
			o := submit(t, h, limitOrder(acct, protocol.ActionBuy, 3, 5990))
			setPrice(t, h, es, 5989.75)
			_, err := h.Platform.ChangeOrder(t.Context(), bridge.ChangeRequest{Account: acct, OrderID: o.OrderID, Quantity: 1})
			requireReject(t, err) // not more than the filled quantity
			c, err := h.Platform.CancelOrder(t.Context(), acct, o.OrderID)
			require.NoError(t, err)
			require.Equal(t, protocol.OrderStateCancelled, c.OrderState)
			require.Equal(t, 1, c.Filled)
			require.Equal(t, 1, signed(t, h, acct, es))
		}},
		{name: "SubmitOrder/OCO: a partial fill cancels the others", needs: CapOCOGroups, opts: thinBook, run: func(t *testing.T, h Harness) {
			tp, sl := limitOrder(acct, protocol.ActionSell, 2, 6010), stopOrder(acct, protocol.ActionSell, 2, 5990)
			tp.Oco, sl.Oco = "grp-3", "grp-3"
			tpo, slo := submit(t, h, tp), submit(t, h, sl)
			setPrice(t, h, es, 6010)
			require.Equal(t, protocol.OrderStatePartFilled, orderOf(t, h, acct, tpo.OrderID).OrderState)
			require.Equal(t, protocol.OrderStateCancelled, orderOf(t, h, acct, slo.OrderID).OrderState)
		}},
	}
}
