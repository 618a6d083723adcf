package bridgetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
)

// changeChecks cover ChangeOrder.
func changeChecks() []check {
	return []check{
		{name: "ChangeOrder/quantity and limit price", run: func(t *testing.T, h Harness) {
			o := submit(t, h, limitOrder(acct, protocol.ActionBuy, 1, 5990))
			c, err := h.Platform.ChangeOrder(t.Context(), bridge.ChangeRequest{Account: acct, OrderID: o.OrderID,
				Quantity: 3, LimitPrice: 5995})
			require.NoError(t, err)
			require.Equal(t, o.OrderID, c.OrderID)
			require.Equal(t, 3, c.Quantity)
			require.Equal(t, 5995.0, c.LimitPrice)
			require.Equal(t, protocol.OrderStateWorking, c.OrderState)
			require.Equal(t, c, orderOf(t, h, acct, o.OrderID))
			setPrice(t, h, es, 5994.75) // the ask reaches the new limit
			require.Equal(t, 3, signed(t, h, acct, es))
		}},
		{name: "ChangeOrder/zero fields keep their value", run: func(t *testing.T, h Harness) {
			o := submit(t, h, limitOrder(acct, protocol.ActionBuy, 2, 5990))
			c, err := h.Platform.ChangeOrder(t.Context(), bridge.ChangeRequest{Account: acct, OrderID: o.OrderID, Quantity: 4})
			require.NoError(t, err)
			require.Equal(t, 4, c.Quantity)
			require.Equal(t, 5990.0, c.LimitPrice)
			c, err = h.Platform.ChangeOrder(t.Context(), bridge.ChangeRequest{Account: acct, OrderID: o.OrderID, LimitPrice: 5985})
			require.NoError(t, err)
			require.Equal(t, 4, c.Quantity)
			require.Equal(t, 5985.0, c.LimitPrice)
		}},
		{name: "ChangeOrder/stop price", run: func(t *testing.T, h Harness) {
			o := submit(t, h, stopOrder(acct, protocol.ActionSell, 1, 5990))
			c, err := h.Platform.ChangeOrder(t.Context(), bridge.ChangeRequest{Account: acct, OrderID: o.OrderID, StopPrice: 5980})
			require.NoError(t, err)
			require.Equal(t, 5980.0, c.StopPrice)
			require.Equal(t, protocol.OrderStateAccepted, c.OrderState)
			setPrice(t, h, es, 5985)
			require.Equal(t, protocol.OrderStateAccepted, orderOf(t, h, acct, o.OrderID).OrderState, "the old stop is gone")
			setPrice(t, h, es, 5980)
			require.Equal(t, protocol.OrderStateFilled, orderOf(t, h, acct, o.OrderID).OrderState)
		}},
		{name: "ChangeOrder/a limit made marketable fills at once", run: func(t *testing.T, h Harness) {
			o := submit(t, h, limitOrder(acct, protocol.ActionBuy, 1, 5990))
			c, err := h.Platform.ChangeOrder(t.Context(), bridge.ChangeRequest{Account: acct, OrderID: o.OrderID, LimitPrice: 6001})
			require.NoError(t, err)
			h.settle(t)
			c = orderOf(t, h, acct, c.OrderID)
			require.Equal(t, protocol.OrderStateFilled, c.OrderState)
			require.Equal(t, esAsk, c.AverageFillPrice)
			require.Equal(t, 1, signed(t, h, acct, es))
		}},
		{name: "ChangeOrder/refusals are RejectErrors and change nothing", run: func(t *testing.T, h Harness) {
			lim := submit(t, h, limitOrder(acct, protocol.ActionBuy, 2, 5990))
			stp := submit(t, h, stopOrder(acct, protocol.ActionSell, 1, 5980))
			filled := submit(t, h, marketOrder(acct, protocol.ActionBuy, 1))
			for _, tc := range []struct {
				name   string
				req    bridge.ChangeRequest
				inputs []string
			}{
				{"negative quantity", bridge.ChangeRequest{OrderID: lim.OrderID, Quantity: -1}, nil},
				{"off-tick limit", bridge.ChangeRequest{OrderID: lim.OrderID, LimitPrice: 5990.1}, []string{"5990.1"}},
				{"negative limit", bridge.ChangeRequest{OrderID: lim.OrderID, LimitPrice: -5990}, nil},
				{"stop price on a limit", bridge.ChangeRequest{OrderID: lim.OrderID, StopPrice: 5980}, nil},
				{"limit price on a stop market", bridge.ChangeRequest{OrderID: stp.OrderID, LimitPrice: 5980}, nil},
				{"stop through the market", bridge.ChangeRequest{OrderID: stp.OrderID, StopPrice: 6005}, nil},
				{"a filled order", bridge.ChangeRequest{OrderID: filled.OrderID, Quantity: 5}, nil},
			} {
				tc.req.Account = acct
				_, err := h.Platform.ChangeOrder(t.Context(), tc.req)
				requireReject(t, err, tc.inputs...)
			}
			l := orderOf(t, h, acct, lim.OrderID)
			require.Equal(t, 2, l.Quantity)
			require.Equal(t, 5990.0, l.LimitPrice)
			require.Equal(t, 5980.0, orderOf(t, h, acct, stp.OrderID).StopPrice)
		}},
		{name: "ChangeOrder/unknown id is ErrOrderNotFound", run: func(t *testing.T, h Harness) {
			_, err := h.Platform.ChangeOrder(t.Context(), bridge.ChangeRequest{Account: acct, OrderID: "no-such-order", Quantity: 2})
			requireIs(t, err, bridge.ErrOrderNotFound, "no-such-order")
			o := submit(t, h, limitOrder(acct, protocol.ActionBuy, 1, 5990))
			_, err = h.Platform.ChangeOrder(t.Context(), bridge.ChangeRequest{Account: acct2, OrderID: o.OrderID, Quantity: 2})
			requireIs(t, err, bridge.ErrOrderNotFound)
			require.Equal(t, 1, orderOf(t, h, acct, o.OrderID).Quantity)
		}},
	}
}

// atmChecks cover ATM templates and ATM entries.
func atmChecks() []check {
	return []check{
		{name: "AtmTemplates/the platform's templates", needs: CapATM, run: func(t *testing.T, h Harness) {
			ts, err := h.Platform.AtmTemplates(t.Context())
			require.NoError(t, err)
			require.Equal(t, sim.DefaultAtmTemplates(), ts, "the market's templates (its defaults)")
			names := make([]string, len(ts))
			for i, tm := range ts {
				names[i] = tm.Name
			}
			require.Equal(t, []string{"ATM 1 Target", "ATM 2 Targets", "ATM Trail"}, names)
		}},
		{name: "AtmTemplates/an entry's fill places the brackets", needs: CapATM, run: func(t *testing.T, h Harness) {
			req := limitOrder(acct, protocol.ActionBuy, 1, 5990)
			req.AtmTemplate, req.StrategyTag = " atm 1 target ", "bot-atm"
			entry := submit(t, h, req)
			require.Equal(t, protocol.OrderStateWorking, entry.OrderState)
			require.Equal(t, "Entry", entry.Name, "an unnamed entry is named Entry")
			require.Len(t, ordersOf(t, h, acct), 1, "no bracket before the entry fills")

			setPrice(t, h, es, 5989.75) // the entry fills at 5990
			require.Equal(t, protocol.OrderStateFilled, orderOf(t, h, acct, entry.OrderID).OrderState)
			stop, target := namedOrder(t, h, acct, "Stop1"), namedOrder(t, h, acct, "Target1")
			require.Equal(t, protocol.ActionSell, stop.OrderAction)
			require.Equal(t, protocol.OrderTypeStopMarket, stop.OrderType)
			require.Equal(t, 5990-8*0.25, stop.StopPrice, "8 ticks below the fill")
			require.Equal(t, 1, stop.Quantity)
			require.Equal(t, protocol.OrderStateAccepted, stop.OrderState)
			require.Equal(t, protocol.ActionSell, target.OrderAction)
			require.Equal(t, protocol.OrderTypeLimit, target.OrderType)
			require.Equal(t, 5990+16*0.25, target.LimitPrice, "16 ticks above the fill")
			require.Equal(t, 1, target.Quantity)
			require.Equal(t, protocol.OrderStateWorking, target.OrderState)
			require.NotEmpty(t, stop.Oco)
			require.Equal(t, stop.Oco, target.Oco, "stop and target share an OCO id")
			require.Equal(t, "bot-atm", stop.StrategyTag)
			require.Equal(t, "bot-atm", target.StrategyTag)
			require.Equal(t, protocol.TimeInForceGtc, stop.TimeInForce)

			setPrice(t, h, es, 5994) // the target fills
			require.Equal(t, protocol.OrderStateFilled, orderOf(t, h, acct, target.OrderID).OrderState)
			require.Equal(t, protocol.OrderStateCancelled, orderOf(t, h, acct, stop.OrderID).OrderState)
			require.Empty(t, positionsOf(t, h, acct))
		}},
		{name: "AtmTemplates/a market entry is protected at once", needs: CapATM, run: func(t *testing.T, h Harness) {
			req := marketOrder(acct, protocol.ActionSell, 2)
			req.AtmTemplate = "ATM 2 Targets"
			entry := submit(t, h, req)
			require.Equal(t, protocol.OrderStateFilled, entry.OrderState)
			for i, ticks := range []float64{8, 16} {
				n := string(rune('1' + i))
				stop, target := namedOrder(t, h, acct, "Stop"+n), namedOrder(t, h, acct, "Target"+n)
				require.Equal(t, protocol.ActionBuy, stop.OrderAction)
				require.Equal(t, 1, stop.Quantity)
				require.Equal(t, esBid+8*0.25, stop.StopPrice)
				require.Equal(t, esBid-ticks*0.25, target.LimitPrice)
				require.Equal(t, stop.Oco, target.Oco)
			}
			require.NotEqual(t, namedOrder(t, h, acct, "Stop1").Oco, namedOrder(t, h, acct, "Stop2").Oco,
				"each bracket has its own OCO id")
			require.Equal(t, -2, signed(t, h, acct, es))
		}},
	}
}
