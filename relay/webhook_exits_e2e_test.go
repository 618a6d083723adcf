package relay_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/store"
	"tradebridge/trading/ops"
)

// exitsWait bounds the wait for the agent's exits engine, which looks at
// its entries on the platform's events and every second.
const exitsWait = 10 * time.Second

// simOrder finds an order of the account at the simulator.
func simOrder(t *testing.T, sim interface {
	Orders(ctx context.Context, account string) ([]protocol.Order, error)
}, account, id string) (protocol.Order, bool) {
	t.Helper()
	orders, err := sim.Orders(t.Context(), account)
	require.NoError(t, err)
	for _, o := range orders {
		if o.OrderID == id {
			return o, true
		}
	}
	return protocol.Order{}, false
}

// A TradingView alert's brackets, relative prices, cancel_after and
// CANCELREPLACE run end to end through the real relay and agent: a market
// entry gets its take profit and stop loss as an OCO pair once it fills,
// at their offsets from the fill; a limit entry priced relative to the
// last price is cancelled when its cancel_after passes; CANCELREPLACE
// cancels a working order and places its replacement.
func TestWebhookBracketsAndCancelReplace(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	ra := s.StartAgent("bob")
	h := s.webhookOf("bob")
	ctx := t.Context()

	r := h.send("command=PLACE;account=Sim101;instrument=ES 12-26;action=BUY;qty=2;order_type=MARKET;tif=DAY;" +
		"take_profit=8 ticks;stop_loss=$250")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	a := h.answer(r)
	require.Equal(t, store.WebhookExecuted, a.Status)
	require.Len(t, a.Results[0].OrderIDs, 1)
	entryID := a.Results[0].OrderIDs[0]

	var exits []protocol.Order
	require.Eventually(t, func() bool {
		orders, err := ra.Sim.Orders(ctx, "Sim101")
		require.NoError(t, err)
		exits = exits[:0]
		for _, o := range orders {
			if o.OrderID != entryID && !protocol.TerminalOrderState(o.OrderState) {
				exits = append(exits, o)
			}
		}
		return len(exits) == 2
	}, exitsWait, 20*time.Millisecond, "the entry's exits are placed once it filled")
	entry, ok := simOrder(t, ra.Sim, "Sim101", entryID)
	require.True(t, ok)
	fill := entry.AverageFillPrice
	byType := map[string]protocol.Order{}
	for _, o := range exits {
		byType[o.OrderType] = o
		require.Equal(t, protocol.ActionSell, o.OrderAction)
		require.Equal(t, 2, o.Quantity)
		require.Equal(t, protocol.TimeInForceGtc, o.TimeInForce)
		require.NotEmpty(t, o.Oco)
	}
	require.Equal(t, byType[protocol.OrderTypeLimit].Oco, byType[protocol.OrderTypeStopMarket].Oco, "one OCO pair")
	require.InDelta(t, fill+2, byType[protocol.OrderTypeLimit].LimitPrice, 1e-9, "8 ticks above the fill")
	require.InDelta(t, fill-5, byType[protocol.OrderTypeStopMarket].StopPrice, 1e-9, "$250 of ES is 5 points below the fill")

	// A limit entry 4 ticks under the last price, cancelled when its
	// cancel_after passes on the agent's clock.
	q, err := ra.Sim.Quote(ctx, "ES 12-26")
	require.NoError(t, err)
	r = h.send("command=PLACE;account=Sim102;instrument=ES 12-26;action=BUY;qty=1;order_type=LIMIT;limit_price=-4 ticks;tif=DAY;" +
		"cancel_after=1;order_id=dip-1")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	dip, ok := simOrder(t, ra.Sim, "Sim102", "dip-1")
	require.True(t, ok)
	require.Equal(t, ops.RoundToTick(q.Last-1, 0.25), dip.LimitPrice)
	require.False(t, protocol.TerminalOrderState(dip.OrderState))
	ra.Clock.Advance(61 * time.Second)
	require.Eventually(t, func() bool {
		dip, ok = simOrder(t, ra.Sim, "Sim102", "dip-1")
		return ok && dip.OrderState == protocol.OrderStateCancelled
	}, exitsWait, 20*time.Millisecond, "cancel_after cancelled the unfilled entry")

	// CANCELREPLACE: the working order is cancelled, its replacement placed.
	r = h.send("command=PLACE;account=Sim102;instrument=ES 12-26;action=BUY;qty=1;order_type=LIMIT;limit_price=-40 ticks;tif=DAY;order_id=rest-1")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = h.send("command=CANCELREPLACE;order_id=rest-1;account=Sim102;instrument=ES 12-26;action=BUY;qty=1;order_type=LIMIT;limit_price=-20 ticks;tif=DAY")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	a = h.answer(r)
	require.Equal(t, store.WebhookExecuted, a.Status)
	require.Len(t, a.Results[0].OrderIDs, 1)
	old, ok := simOrder(t, ra.Sim, "Sim102", "rest-1")
	require.True(t, ok)
	require.Equal(t, protocol.OrderStateCancelled, old.OrderState)
	repl, ok := simOrder(t, ra.Sim, "Sim102", a.Results[0].OrderIDs[0])
	require.True(t, ok)
	require.False(t, protocol.TerminalOrderState(repl.OrderState))
	require.Equal(t, 1, repl.Quantity)
}

// bypass_trade_windows lets an alert's order through the account
// monitor's trading windows, and only those: without it the monitor,
// stopped for being outside its master window, refuses the entry.
func TestWebhookBypassTradeWindows(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.StartAgent("bob")
	tok := s.Users["bob"].APIToken
	h := s.webhookOf("bob")

	// The agent's clock stands on a Wednesday at 10:00 New York time: a
	// master window from 11:00 stops the monitor at once.
	r := s.manage(http.MethodPost, "desktop/monitors", tok,
		`{"account":"Sim101","masterWindow":{"days":["wed"],"start":"11:00","end":"12:00"}}`)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	probe := 0
	require.Eventually(t, func() bool {
		probe++ // another text each time: the same one would be a duplicate
		r := h.send(placeES + ";strategy_tag=probe" + strconv.Itoa(probe))
		return r.Error == protocol.CodeTradingBlocked
	}, engineWait, 50*time.Millisecond, "the monitor refuses entries outside its window")

	r = h.send(placeES + ";bypass_trade_windows=true")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, store.WebhookExecuted, h.answer(r).Status)
}
