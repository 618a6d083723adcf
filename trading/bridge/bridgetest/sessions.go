package bridgetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
)

// Instants around the close of the session Start is in (Monday 5 October
// 2026, 17:00 New York time) and the opening of the next (18:00).
var (
	sessionClose = time.Date(2026, time.October, 5, 21, 0, 0, 0, time.UTC)
	nextOpen     = time.Date(2026, time.October, 5, 22, 0, 0, 0, time.UTC)
)

// moveClock sets the market's clock, lets the market catch up, and waits
// for the platform to see it.
func moveClock(t *testing.T, h Harness, to time.Time) {
	t.Helper()
	h.Clock.Set(to)
	require.NoError(t, h.Market.Step(t.Context()))
	h.settle(t)
}

// sessionChecks cover trading sessions: closed markets, Day orders and what
// a new session forgets.
func sessionChecks() []check {
	return []check{
		{name: "SubmitOrder/a closed market refuses what would fill, accepts what rests", run: func(t *testing.T, h Harness) {
			moveClock(t, h, sessionClose.Add(30*time.Minute))
			info, err := h.Platform.Instrument(t.Context(), es)
			require.NoError(t, err)
			require.False(t, info.MarketOpen)
			_, err = h.Platform.SubmitOrder(t.Context(), marketOrder(acct, protocol.ActionBuy, 1))
			requireReject(t, err)
			q, err := h.Platform.Quote(t.Context(), es)
			require.NoError(t, err)
			_, err = h.Platform.SubmitOrder(t.Context(), limitOrder(acct, protocol.ActionBuy, 1, q.Ask+1))
			requireReject(t, err)
			o := submit(t, h, limitOrder(acct, protocol.ActionBuy, 1, 5000))
			require.Equal(t, protocol.OrderStateWorking, o.OrderState)
			require.Len(t, ordersOf(t, h, acct), 1)
		}},
		{name: "SubmitOrder/Day orders expire at the session close", run: func(t *testing.T, h Harness) {
			day := limitOrder(acct, protocol.ActionBuy, 1, 5000)
			day.TimeInForce = protocol.TimeInForceDay
			dayo := submit(t, h, day)
			gtco := submit(t, h, limitOrder(acct, protocol.ActionBuy, 1, 5000))
			moveClock(t, h, sessionClose.Add(-time.Second))
			require.Equal(t, protocol.OrderStateWorking, orderOf(t, h, acct, dayo.OrderID).OrderState)
			moveClock(t, h, sessionClose.Add(time.Second))
			require.Equal(t, protocol.OrderStateCancelled, orderOf(t, h, acct, dayo.OrderID).OrderState)
			require.Equal(t, protocol.OrderStateWorking, orderOf(t, h, acct, gtco.OrderID).OrderState)
		}},
		{name: "Orders/a new session forgets terminal orders and fills, keeps working orders and positions", run: func(t *testing.T, h Harness) {
			submit(t, h, marketOrder(acct, protocol.ActionBuy, 2))
			submit(t, h, marketOrder(acct, protocol.ActionSell, 1))
			gtc := submit(t, h, limitOrder(acct, protocol.ActionBuy, 1, 5000))
			before := accountOf(t, h, acct)
			require.NotZero(t, before.Item.RealizedProfitLoss)

			moveClock(t, h, nextOpen.Add(time.Minute))
			os := ordersOf(t, h, acct)
			require.Len(t, os, 1)
			require.Equal(t, gtc.OrderID, os[0].OrderID)
			require.Equal(t, protocol.OrderStateWorking, os[0].OrderState)
			exs, err := h.Platform.Executions(t.Context(), acct)
			require.NoError(t, err)
			require.Empty(t, exs)
			require.Equal(t, 1, signed(t, h, acct, es), "positions carry over")
			after := accountOf(t, h, acct)
			require.Zero(t, after.Item.RealizedProfitLoss, "session P&L restarts")
			require.Zero(t, after.Item.Commission)
			require.Equal(t, before.Item.CashValue, after.Item.CashValue, "cash keeps every session's P&L")
			w, err := h.Platform.Watermarks(t.Context(), acct)
			require.NoError(t, err)
			require.Equal(t, "2026-10-05T22:00:00.000Z", w.SessionStart)
		}},
	}
}
