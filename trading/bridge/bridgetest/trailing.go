package bridgetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// trailingChecks cover the trailing order types (CapTrailingStops): the
// stop follows the market at its distance, never moves back, and triggers
// as a stop does; a TrailingStopLimit's limit moves with its stop.
func trailingChecks() []check {
	return []check{
		{name: "SubmitOrder/trailing stop follows the price up and fills on a pullback of its distance", needs: CapTrailingStops,
			run: func(t *testing.T, h Harness) {
				submit(t, h, marketOrder(acct, protocol.ActionBuy, 1))
				o := submit(t, h, trailingStop(acct, protocol.ActionSell, 1, 4, 0))
				require.Equal(t, protocol.OrderTypeTrailingStop, o.OrderType)
				require.Equal(t, protocol.OrderStateAccepted, o.OrderState, "a trailing stop rests as a stop does")
				require.Equal(t, 4.0, o.TrailDistance)
				require.Equal(t, esBid-4, o.StopPrice, "without a stop price, the stop starts the distance below the bid")
				require.Zero(t, o.LimitPrice)

				w := watch(t, h)
				setPrice(t, h, es, 6010)
				w.until(func(ev bridge.Event) bool {
					return ev.Kind == bridge.EventOrder && ev.Order.OrderID == o.OrderID && ev.Order.StopPrice == 6006
				})
				o = orderOf(t, h, acct, o.OrderID)
				require.Equal(t, 6006.0, o.StopPrice, "the stop follows the bid up, the distance below it")
				require.Equal(t, protocol.OrderStateAccepted, o.OrderState)
				require.Equal(t, protocol.OrderTypeTrailingStop, o.OrderType)
				require.Equal(t, 4.0, o.TrailDistance)

				setPrice(t, h, es, 6007) // back 3 from the high: less than the distance
				o = orderOf(t, h, acct, o.OrderID)
				require.Equal(t, 6006.0, o.StopPrice, "the stop never moves back")
				require.Equal(t, protocol.OrderStateAccepted, o.OrderState)

				setPrice(t, h, es, 6006) // back 4: the distance
				o = orderOf(t, h, acct, o.OrderID)
				require.Equal(t, protocol.OrderStateFilled, o.OrderState)
				require.Equal(t, 6006.0, o.AverageFillPrice)
				require.Zero(t, signed(t, h, acct, es))
			}},
		{name: "SubmitOrder/buy trailing stop starts at its stop price and follows the price down", needs: CapTrailingStops,
			run: func(t *testing.T, h Harness) {
				// The ask is 6000.25: the stop starts nearer than the
				// distance, and follows once the ask is 3 below it.
				o := submit(t, h, trailingStop(acct, protocol.ActionBuy, 2, 3, 6002))
				require.Equal(t, protocol.OrderTypeTrailingStop, o.OrderType)
				require.Equal(t, 6002.0, o.StopPrice)
				require.Equal(t, 3.0, o.TrailDistance)
				setPrice(t, h, es, 5998.75) // the ask at 5999, 3 below the stop: it stays
				require.Equal(t, 6002.0, orderOf(t, h, acct, o.OrderID).StopPrice)
				setPrice(t, h, es, 5995) // the ask at 5995.25
				o = orderOf(t, h, acct, o.OrderID)
				require.Equal(t, 5998.25, o.StopPrice, "the stop follows the ask down, the distance above it")
				setPrice(t, h, es, 5997) // the ask at 5997.25: under the stop
				o = orderOf(t, h, acct, o.OrderID)
				require.Equal(t, protocol.OrderStateAccepted, o.OrderState)
				require.Equal(t, 5998.25, o.StopPrice, "the stop never moves back")
				setPrice(t, h, es, 5998) // the ask reaches the stop
				o = orderOf(t, h, acct, o.OrderID)
				require.Equal(t, protocol.OrderStateFilled, o.OrderState)
				require.Equal(t, 5998.25, o.AverageFillPrice, "a buy stop fills at the ask")
				require.Equal(t, 2, signed(t, h, acct, es))
			}},
		{name: "SubmitOrder/trailing stop limit moves its limit with its stop", needs: CapTrailingStops,
			run: func(t *testing.T, h Harness) {
				submit(t, h, marketOrder(acct, protocol.ActionSell, 1))
				o := submit(t, h, trailingStopLimit(acct, protocol.ActionBuy, 1, 2, 6002.25, 6003.25))
				require.Equal(t, protocol.OrderTypeTrailingStopLimit, o.OrderType)
				require.Equal(t, protocol.OrderStateAccepted, o.OrderState)
				require.Equal(t, 6002.25, o.StopPrice)
				require.Equal(t, 6003.25, o.LimitPrice)
				require.Equal(t, 2.0, o.TrailDistance)
				setPrice(t, h, es, 5990) // the ask at 5990.25
				o = orderOf(t, h, acct, o.OrderID)
				require.Equal(t, 5992.25, o.StopPrice)
				require.Equal(t, 5993.25, o.LimitPrice, "the limit keeps its difference to the stop")
				setPrice(t, h, es, 5996) // through the stop, past the limit
				o = orderOf(t, h, acct, o.OrderID)
				require.Contains(t, []string{protocol.OrderStateAccepted, protocol.OrderStateWorking}, o.OrderState,
					"triggered, the limit not marketable: still working, whichever state names it")
				setPrice(t, h, es, 5993) // the ask back at the limit
				o = orderOf(t, h, acct, o.OrderID)
				require.Equal(t, protocol.OrderStateFilled, o.OrderState)
				require.Equal(t, 5993.25, o.AverageFillPrice)
				require.Zero(t, signed(t, h, acct, es))
			}},
		{name: "SubmitOrder/bad trailing orders are rejected and leave no trace", needs: CapTrailingStops,
			run: func(t *testing.T, h Harness) {
				for _, tc := range []struct {
					name   string
					req    bridge.OrderRequest
					inputs []string
				}{
					{"no distance", trailingStop(acct, protocol.ActionSell, 1, 0, 0), nil},
					{"negative distance", trailingStop(acct, protocol.ActionSell, 1, -4.75, 0), []string{"4.75"}},
					{"off-tick distance", trailingStop(acct, protocol.ActionSell, 1, 4.1, 0), []string{"4.1"}},
					{"off-tick stop", trailingStop(acct, protocol.ActionSell, 1, 4, 5990.13), []string{"5990.13"}},
					{"sell stop above the bid", trailingStop(acct, protocol.ActionSell, 1, 4, 6001), nil},
					{"stop limit without a limit", trailingStopLimit(acct, protocol.ActionBuy, 1, 2, 6002.25, 0), nil},
					{"stop limit without a stop", trailingStopLimit(acct, protocol.ActionBuy, 1, 2, 0, 6003.25), nil},
				} {
					_, err := h.Platform.SubmitOrder(t.Context(), tc.req)
					var re *bridge.RejectError
					require.ErrorAs(t, err, &re, tc.name)
					requireNoEcho(t, err, tc.inputs...)
				}
				requireNotRecorded(t, h, acct)
				require.Empty(t, positionsOf(t, h, acct))
			}},
	}
}

// trailingStop is a TrailingStop order; a zero stop starts the stop the
// distance from the market.
func trailingStop(account, action string, qty int, distance, stop float64) bridge.OrderRequest {
	return bridge.OrderRequest{Account: account, Instrument: es, Action: action, OrderType: protocol.OrderTypeTrailingStop,
		Quantity: qty, StopPrice: stop, TrailDistance: distance, TimeInForce: protocol.TimeInForceGtc}
}

// trailingStopLimit is a TrailingStopLimit order.
func trailingStopLimit(account, action string, qty int, distance, stop, limit float64) bridge.OrderRequest {
	return bridge.OrderRequest{Account: account, Instrument: es, Action: action, OrderType: protocol.OrderTypeTrailingStopLimit,
		Quantity: qty, StopPrice: stop, LimitPrice: limit, TrailDistance: distance, TimeInForce: protocol.TimeInForceGtc}
}
