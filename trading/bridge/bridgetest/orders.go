package bridgetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// orderChecks cover SubmitOrder, CancelOrder and Flatten.
func orderChecks() []check {
	return []check{
		{name: "SubmitOrder/market fills", run: func(t *testing.T, h Harness) {
			req := marketOrder(acct, protocol.ActionBuy, 2)
			req.Instrument = "ES" // a root: the front month
			req.Name, req.StrategyTag = "Entry long", "bot-1"
			o := submit(t, h, req)
			require.NotEmpty(t, o.OrderID)
			require.Equal(t, acct, o.Account)
			require.Equal(t, es, o.Instrument, "records carry the full contract name")
			require.Equal(t, protocol.ActionBuy, o.OrderAction)
			require.Equal(t, protocol.OrderTypeMarket, o.OrderType)
			require.Equal(t, protocol.OrderStateFilled, o.OrderState)
			require.Equal(t, 2, o.Quantity)
			require.Equal(t, 2, o.Filled)
			require.Equal(t, esAsk, o.AverageFillPrice, "a buy fills at the ask")
			require.Equal(t, protocol.TimeInForceDay, o.TimeInForce, "an empty time in force is Day")
			require.Equal(t, "Entry long", o.Name)
			require.Equal(t, "bot-1", o.StrategyTag)
			require.Equal(t, Start.UnixMilli(), o.Epoch)
			require.Equal(t, 2, signed(t, h, acct, es))
			require.Equal(t, o, orderOf(t, h, acct, o.OrderID), "listed as it was returned")
			exs, err := h.Platform.Executions(t.Context(), acct)
			require.NoError(t, err)
			require.Len(t, exs, 1)
			require.Equal(t, o.OrderID, exs[0].OrderID)
			require.Equal(t, "Entry long", exs[0].Name)
			require.Equal(t, 2, exs[0].Quantity)
			require.Equal(t, esAsk, exs[0].Price)
		}},
		{name: "SubmitOrder/market sell fills at the bid", run: func(t *testing.T, h Harness) {
			o := submit(t, h, marketOrder(acct, protocol.ActionSell, 1))
			require.Equal(t, protocol.OrderStateFilled, o.OrderState)
			require.Equal(t, esBid, o.AverageFillPrice)
			require.Equal(t, -1, signed(t, h, acct, es))
		}},
		{name: "SubmitOrder/enumerations in any casing", run: func(t *testing.T, h Harness) {
			o := submit(t, h, bridge.OrderRequest{Account: acct, Instrument: "esz26", Action: "bUY",
				OrderType: "LIMIT", Quantity: 1, LimitPrice: 5990, TimeInForce: "gtc"})
			require.Equal(t, es, o.Instrument)
			require.Equal(t, protocol.ActionBuy, o.OrderAction)
			require.Equal(t, protocol.OrderTypeLimit, o.OrderType)
			require.Equal(t, protocol.TimeInForceGtc, o.TimeInForce)
		}},
		{name: "SubmitOrder/limit rests, then fills when the market reaches it", run: func(t *testing.T, h Harness) {
			o := submit(t, h, limitOrder(acct, protocol.ActionBuy, 1, 5990))
			require.Equal(t, protocol.OrderStateWorking, o.OrderState)
			require.Zero(t, o.Filled)
			require.Equal(t, 5990.0, o.LimitPrice)
			require.Zero(t, signed(t, h, acct, es))
			setPrice(t, h, es, 5995) // not there yet
			require.Equal(t, protocol.OrderStateWorking, orderOf(t, h, acct, o.OrderID).OrderState)
			setPrice(t, h, es, 5989.75) // the ask reaches 5990
			o = orderOf(t, h, acct, o.OrderID)
			require.Equal(t, protocol.OrderStateFilled, o.OrderState)
			require.Equal(t, 1, o.Filled)
			require.Equal(t, 5990.0, o.AverageFillPrice)
			require.Equal(t, 1, signed(t, h, acct, es))
		}},
		{name: "SubmitOrder/marketable limit fills at once, never worse than its limit", run: func(t *testing.T, h Harness) {
			o := submit(t, h, limitOrder(acct, protocol.ActionBuy, 1, 6001))
			require.Equal(t, protocol.OrderStateFilled, o.OrderState)
			require.Equal(t, esAsk, o.AverageFillPrice, "at the ask, better than the limit")
			o = submit(t, h, limitOrder(acct, protocol.ActionSell, 2, 5999))
			require.Equal(t, protocol.OrderStateFilled, o.OrderState)
			require.Equal(t, esBid, o.AverageFillPrice)
			require.Equal(t, -1, signed(t, h, acct, es))
		}},
		{name: "SubmitOrder/stop rests accepted, then triggers", run: func(t *testing.T, h Harness) {
			o := submit(t, h, stopOrder(acct, protocol.ActionSell, 1, 5990))
			require.Equal(t, protocol.OrderStateAccepted, o.OrderState)
			require.Equal(t, 5990.0, o.StopPrice)
			setPrice(t, h, es, 5991)
			require.Equal(t, protocol.OrderStateAccepted, orderOf(t, h, acct, o.OrderID).OrderState)
			setPrice(t, h, es, 5990) // the bid reaches the stop
			o = orderOf(t, h, acct, o.OrderID)
			require.Equal(t, protocol.OrderStateFilled, o.OrderState)
			require.Equal(t, 5990.0, o.AverageFillPrice)
			require.Equal(t, -1, signed(t, h, acct, es))
		}},
		{name: "SubmitOrder/stop market gapped through fills past the stop", run: func(t *testing.T, h Harness) {
			o := submit(t, h, stopOrder(acct, protocol.ActionBuy, 1, 6010))
			setPrice(t, h, es, 6020)
			o = orderOf(t, h, acct, o.OrderID)
			require.Equal(t, protocol.OrderStateFilled, o.OrderState)
			require.Equal(t, 6020.25, o.AverageFillPrice, "a buy stop fills at the ask")
		}},
		{name: "SubmitOrder/stop limit triggers into a working limit", needs: CapTriggerState, run: func(t *testing.T, h Harness) {
			o := submit(t, h, bridge.OrderRequest{Account: acct, Instrument: es, Action: protocol.ActionBuy,
				OrderType: protocol.OrderTypeStopLimit, Quantity: 1, StopPrice: 6010, LimitPrice: 6011,
				TimeInForce: protocol.TimeInForceGtc})
			require.Equal(t, protocol.OrderStateAccepted, o.OrderState)
			setPrice(t, h, es, 6015) // through the stop and past the limit
			o = orderOf(t, h, acct, o.OrderID)
			require.Equal(t, protocol.OrderStateWorking, o.OrderState, "triggered; the limit is not marketable")
			setPrice(t, h, es, 6010.5) // the ask comes back to 6010.75
			o = orderOf(t, h, acct, o.OrderID)
			require.Equal(t, protocol.OrderStateFilled, o.OrderState)
			require.Equal(t, 6010.75, o.AverageFillPrice)
		}},
		{name: "SubmitOrder/stop at or through the market is rejected", run: func(t *testing.T, h Harness) {
			_, err := h.Platform.SubmitOrder(t.Context(), stopOrder(acct, protocol.ActionBuy, 1, esAsk))
			requireReject(t, err)
			_, err = h.Platform.SubmitOrder(t.Context(), stopOrder(acct, protocol.ActionSell, 1, 6005))
			requireReject(t, err)
			requireNotRecorded(t, h, acct)
		}},
		{name: "SubmitOrder/OCO: a fill cancels the rest of the group", needs: CapOCOGroups, run: func(t *testing.T, h Harness) {
			tp := limitOrder(acct, protocol.ActionSell, 1, 6010)
			sl := stopOrder(acct, protocol.ActionSell, 1, 5990)
			far := limitOrder(acct, protocol.ActionSell, 1, 6020)
			mine := limitOrder(acct2, protocol.ActionSell, 1, 6020)
			tp.Oco, sl.Oco, far.Oco, mine.Oco = "grp-1", "grp-1", "grp-1", "grp-1"
			tpo, slo, faro := submit(t, h, tp), submit(t, h, sl), submit(t, h, far)
			mineo := submit(t, h, mine)
			require.Equal(t, "grp-1", tpo.Oco)
			setPrice(t, h, es, 6010) // the take profit fills
			require.Equal(t, protocol.OrderStateFilled, orderOf(t, h, acct, tpo.OrderID).OrderState)
			require.Equal(t, protocol.OrderStateCancelled, orderOf(t, h, acct, slo.OrderID).OrderState)
			require.Equal(t, protocol.OrderStateCancelled, orderOf(t, h, acct, faro.OrderID).OrderState)
			require.Equal(t, protocol.OrderStateWorking, orderOf(t, h, acct2, mineo.OrderID).OrderState,
				"another account's order of the same OCO id stays")
		}},
		{name: "SubmitOrder/OCO: cancelling one keeps the others", needs: CapOCOGroups, run: func(t *testing.T, h Harness) {
			a, b := limitOrder(acct, protocol.ActionSell, 1, 6010), stopOrder(acct, protocol.ActionSell, 1, 5990)
			a.Oco, b.Oco = "grp-2", "grp-2"
			ao, bo := submit(t, h, a), submit(t, h, b)
			_, err := h.Platform.CancelOrder(t.Context(), acct, ao.OrderID)
			require.NoError(t, err)
			require.Equal(t, protocol.OrderStateAccepted, orderOf(t, h, acct, bo.OrderID).OrderState)
		}},
		{name: "SubmitOrder/our own order id", run: func(t *testing.T, h Harness) {
			req := limitOrder(acct, protocol.ActionBuy, 1, 5990)
			req.OrderID = "client-id.1"
			o := submit(t, h, req)
			require.Equal(t, "client-id.1", o.OrderID)
			require.Equal(t, "client-id.1", orderOf(t, h, acct, "client-id.1").OrderID)
		}},
		{name: "SubmitOrder/duplicate order id is rejected", run: func(t *testing.T, h Harness) {
			req := marketOrder(acct, protocol.ActionBuy, 1)
			req.OrderID = "dup-1"
			submit(t, h, req)
			_, err := h.Platform.SubmitOrder(t.Context(), req)
			requireReject(t, err, "dup-1")
			req.Account = acct2 // ids are unique on the platform, across accounts
			_, err = h.Platform.SubmitOrder(t.Context(), req)
			requireReject(t, err, "dup-1")
			require.Len(t, ordersOf(t, h, acct), 1)
			require.Empty(t, ordersOf(t, h, acct2))
			require.Equal(t, 1, signed(t, h, acct, es))
		}},
		{name: "SubmitOrder/bad requests are rejected and leave no trace", run: func(t *testing.T, h Harness) {
			for _, tc := range []struct {
				name   string
				edit   func(r *bridge.OrderRequest)
				inputs []string
			}{
				{"zero quantity", func(r *bridge.OrderRequest) { r.Quantity = 0 }, nil},
				{"negative quantity", func(r *bridge.OrderRequest) { r.Quantity = -3 }, nil},
				{"bad action", func(r *bridge.OrderRequest) { r.Action = "Hodl" }, []string{"Hodl"}},
				{"bad order type", func(r *bridge.OrderRequest) { r.OrderType = "Trailz" }, []string{"Trailz"}},
				{"bad time in force", func(r *bridge.OrderRequest) { r.TimeInForce = "Fortnight" }, []string{"Fortnight"}},
				{"limit without a price", func(r *bridge.OrderRequest) { r.OrderType = protocol.OrderTypeLimit }, nil},
				{"negative limit", func(r *bridge.OrderRequest) {
					r.OrderType, r.LimitPrice = protocol.OrderTypeLimit, -5990
				}, []string{"5990"}},
				{"off-tick limit", func(r *bridge.OrderRequest) {
					r.OrderType, r.LimitPrice = protocol.OrderTypeLimit, 5990.1
				}, []string{"5990.1"}},
				{"stop without a price", func(r *bridge.OrderRequest) { r.OrderType = protocol.OrderTypeStopMarket }, nil},
				{"off-tick stop", func(r *bridge.OrderRequest) {
					r.OrderType, r.StopPrice = protocol.OrderTypeStopMarket, 5980.13
				}, []string{"5980.13"}},
				{"stop limit without a limit", func(r *bridge.OrderRequest) {
					r.OrderType, r.StopPrice = protocol.OrderTypeStopLimit, 6010
				}, nil},
			} {
				req := marketOrder(acct, protocol.ActionBuy, 1)
				tc.edit(&req)
				_, err := h.Platform.SubmitOrder(t.Context(), req)
				requireReject(t, err, tc.inputs...)
			}
			requireNotRecorded(t, h, acct)
			require.Empty(t, positionsOf(t, h, acct))
		}},
		{name: "SubmitOrder/unknown account or instrument", run: func(t *testing.T, h Harness) {
			req := marketOrder("NoSuchAcct", protocol.ActionBuy, 1)
			_, err := h.Platform.SubmitOrder(t.Context(), req)
			requireIs(t, err, bridge.ErrAccountNotFound, "NoSuchAcct")
			req = marketOrder(acct, protocol.ActionBuy, 1)
			req.Instrument = "QQ 12-26"
			_, err = h.Platform.SubmitOrder(t.Context(), req)
			requireIs(t, err, bridge.ErrInstrumentUnknown, "QQ")
			requireNotRecorded(t, h, acct)
		}},
		{name: "SubmitOrder/unknown template", needs: CapATM, run: func(t *testing.T, h Harness) {
			req := marketOrder(acct, protocol.ActionBuy, 1)
			req.AtmTemplate = "No Such Template"
			_, err := h.Platform.SubmitOrder(t.Context(), req)
			requireIs(t, err, bridge.ErrTemplateNotFound, "No Such Template")
			requireNotRecorded(t, h, acct)
		}},
		{name: "CancelOrder/working order is cancelled", run: func(t *testing.T, h Harness) {
			o := submit(t, h, limitOrder(acct, protocol.ActionBuy, 2, 5990))
			c, err := h.Platform.CancelOrder(t.Context(), acct, o.OrderID)
			require.NoError(t, err)
			require.Equal(t, o.OrderID, c.OrderID)
			require.Equal(t, protocol.OrderStateCancelled, c.OrderState)
			require.Zero(t, c.Filled)
			require.Equal(t, protocol.OrderStateCancelled, orderOf(t, h, acct, o.OrderID).OrderState)
			setPrice(t, h, es, 5980)
			require.Zero(t, signed(t, h, acct, es), "a cancelled order never fills")
		}},
		{name: "CancelOrder/accepted stop is cancelled", run: func(t *testing.T, h Harness) {
			o := submit(t, h, stopOrder(acct, protocol.ActionSell, 1, 5990))
			c, err := h.Platform.CancelOrder(t.Context(), acct, o.OrderID)
			require.NoError(t, err)
			require.Equal(t, protocol.OrderStateCancelled, c.OrderState)
		}},
		{name: "CancelOrder/terminal order is a RejectError", run: func(t *testing.T, h Harness) {
			filled := submit(t, h, marketOrder(acct, protocol.ActionBuy, 1))
			_, err := h.Platform.CancelOrder(t.Context(), acct, filled.OrderID)
			requireReject(t, err, filled.OrderID)
			o := submit(t, h, limitOrder(acct, protocol.ActionBuy, 1, 5990))
			_, err = h.Platform.CancelOrder(t.Context(), acct, o.OrderID)
			require.NoError(t, err)
			_, err = h.Platform.CancelOrder(t.Context(), acct, o.OrderID)
			requireReject(t, err, o.OrderID)
			require.Equal(t, protocol.OrderStateFilled, orderOf(t, h, acct, filled.OrderID).OrderState)
		}},
		{name: "CancelOrder/unknown id is ErrOrderNotFound", run: func(t *testing.T, h Harness) {
			_, err := h.Platform.CancelOrder(t.Context(), acct, "no-such-order")
			requireIs(t, err, bridge.ErrOrderNotFound, "no-such-order")
			o := submit(t, h, limitOrder(acct, protocol.ActionBuy, 1, 5990))
			_, err = h.Platform.CancelOrder(t.Context(), acct2, o.OrderID)
			requireIs(t, err, bridge.ErrOrderNotFound)
			require.Equal(t, protocol.OrderStateWorking, orderOf(t, h, acct, o.OrderID).OrderState,
				"another account cannot cancel it")
			_, err = h.Platform.CancelOrder(t.Context(), "NoSuchAcct", o.OrderID)
			requireIs(t, err, bridge.ErrAccountNotFound, "NoSuchAcct")
		}},
		{name: "Flatten/cancels the instrument's orders and closes its position", run: func(t *testing.T, h Harness) {
			submit(t, h, marketOrder(acct, protocol.ActionBuy, 2))
			lim := submit(t, h, limitOrder(acct, protocol.ActionBuy, 1, 5990))
			stp := submit(t, h, stopOrder(acct, protocol.ActionSell, 2, 5980))
			nqReq := marketOrder(acct, protocol.ActionSell, 1)
			nqReq.Instrument = nq
			submit(t, h, nqReq)
			nqLim := nqReq
			nqLim.OrderType, nqLim.LimitPrice, nqLim.TimeInForce = protocol.OrderTypeLimit, 21100, protocol.TimeInForceGtc
			nqo := submit(t, h, nqLim)
			submit(t, h, marketOrder(acct2, protocol.ActionSell, 3))
			other := submit(t, h, limitOrder(acct2, protocol.ActionBuy, 1, 5990))

			require.NoError(t, h.Platform.Flatten(t.Context(), acct, "ES"))
			h.settle(t)
			require.Zero(t, signed(t, h, acct, es))
			require.Equal(t, -1, signed(t, h, acct, nq), "another instrument keeps its position")
			require.Equal(t, protocol.OrderStateCancelled, orderOf(t, h, acct, lim.OrderID).OrderState)
			require.Equal(t, protocol.OrderStateCancelled, orderOf(t, h, acct, stp.OrderID).OrderState)
			require.Equal(t, protocol.OrderStateWorking, orderOf(t, h, acct, nqo.OrderID).OrderState,
				"another instrument keeps its orders")
			require.Equal(t, -3, signed(t, h, acct2, es), "another account keeps its position")
			require.Equal(t, protocol.OrderStateWorking, orderOf(t, h, acct2, other.OrderID).OrderState)
			closer := namedOrder(t, h, acct, "Close")
			require.Equal(t, protocol.ActionSell, closer.OrderAction)
			require.Equal(t, protocol.OrderTypeMarket, closer.OrderType)
			require.Equal(t, 2, closer.Quantity)
			require.Equal(t, protocol.OrderStateFilled, closer.OrderState)
		}},
		{name: "Flatten/a short position is bought back", run: func(t *testing.T, h Harness) {
			submit(t, h, marketOrder(acct, protocol.ActionSell, 3))
			require.NoError(t, h.Platform.Flatten(t.Context(), acct, es))
			require.Empty(t, positionsOf(t, h, acct))
			closer := namedOrder(t, h, acct, "Close")
			require.Equal(t, protocol.ActionBuy, closer.OrderAction)
			require.Equal(t, 3, closer.Quantity)
		}},
		{name: "Flatten/orders without a position are cancelled", run: func(t *testing.T, h Harness) {
			o := submit(t, h, limitOrder(acct, protocol.ActionBuy, 1, 5990))
			require.NoError(t, h.Platform.Flatten(t.Context(), acct, es))
			require.Equal(t, protocol.OrderStateCancelled, orderOf(t, h, acct, o.OrderID).OrderState)
			require.Len(t, ordersOf(t, h, acct), 1, "nothing to close: no order placed")
		}},
		{name: "Flatten/nothing to do is not an error", run: func(t *testing.T, h Harness) {
			require.NoError(t, h.Platform.Flatten(t.Context(), acct, es))
			requireNotRecorded(t, h, acct)
		}},
		{name: "Flatten/unknown account or instrument", run: func(t *testing.T, h Harness) {
			requireIs(t, h.Platform.Flatten(t.Context(), "NoSuchAcct", es), bridge.ErrAccountNotFound, "NoSuchAcct")
			requireIs(t, h.Platform.Flatten(t.Context(), acct, "QQ 12-26"), bridge.ErrInstrumentUnknown, "QQ")
		}},
	}
}
