package tradovate_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate/tradovatetest"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// marketOrders returns the market's orders of the account that are not
// done, by our id (the broker order's text, the simulator's name).
func marketOrders(t *testing.T, pr *tradovatetest.Pair) map[string]protocol.Order {
	t.Helper()
	recs, err := pr.Market.Orders(t.Context(), acct)
	require.NoError(t, err)
	out := map[string]protocol.Order{}
	for _, r := range recs {
		if !protocol.TerminalOrderState(r.OrderState) {
			out[r.Name] = r
		}
	}
	return out
}

// clOrdIDOf returns the clOrdId the fake saw on the placement of the
// market order named ours.
func clOrdIDOf(t *testing.T, pr *tradovatetest.Pair, ours string) string {
	t.Helper()
	recs, err := pr.Market.Orders(t.Context(), acct)
	require.NoError(t, err)
	for _, r := range recs {
		if r.Name == ours {
			n, err := strconv.ParseInt(r.OrderID, 10, 64)
			require.NoError(t, err)
			id, _ := pr.Fake.ClOrdID(n)
			return id
		}
	}
	t.Fatalf("no market order named %s", ours)
	return ""
}

// An entry with its stop loss and take profit is one order/placeoso
// request: the broker holds the exits and sends them, as an OCO pair
// sized to the fill, when the entry fills. Nothing of the relay is needed
// between the entry and its exits.
func TestBracketIsOnePlaceOSO(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	entry := limit(protocol.ActionBuy, 5990)
	entry.OrderID, entry.Quantity = "oso-entry", 2
	stop := bridge.OrderRequest{Account: acct, Instrument: es, Action: protocol.ActionSell, OrderType: protocol.OrderTypeStopMarket,
		Quantity: 2, StopPrice: 5980, TimeInForce: protocol.TimeInForceGtc, Oco: "oso-pair", OrderID: "oso-stop", Name: "Stop loss"}
	target := bridge.OrderRequest{Account: acct, Instrument: es, Action: protocol.ActionSell, OrderType: protocol.OrderTypeLimit,
		Quantity: 2, LimitPrice: 6010, TimeInForce: protocol.TimeInForceGtc, Oco: "oso-pair", OrderID: "oso-target", Name: "Profit target"}
	got, err := pr.Platform.SubmitBracket(t.Context(), entry, stop, target)
	require.NoError(t, err)
	require.Len(t, got, 3)
	assert.Equal(t, []string{"oso-entry", "oso-stop", "oso-target"}, []string{got[0].OrderID, got[1].OrderID, got[2].OrderID})
	assert.Equal(t, protocol.OrderStateAccepted, got[1].OrderState, "the exits are held by the broker")
	assert.Equal(t, "oso-pair", got[2].Oco)
	assert.Equal(t, 1, pr.Fake.Requests("/order/placeoso"))
	assert.Zero(t, pr.Fake.Requests("/order/placeorder")+pr.Fake.Requests("/order/placeoco"))

	// The relay goes away; the broker still protects the fill.
	pr.Platform.Close()
	require.Len(t, marketOrders(t, pr), 1, "only the entry works before it fills")
	require.NoError(t, pr.Market.SetPrice(es, 5985))
	pr.Fake.Flush()
	working := marketOrders(t, pr)
	require.Contains(t, working, "oso-stop")
	require.Contains(t, working, "oso-target")
	assert.Equal(t, 2, working["oso-stop"].Quantity)
	assert.Equal(t, 5980.0, working["oso-stop"].StopPrice)
	assert.Equal(t, 6010.0, working["oso-target"].LimitPrice)
	// One exit filling cancels the other.
	require.NoError(t, pr.Market.SetPrice(es, 6010))
	pr.Fake.Flush()
	assert.Empty(t, marketOrders(t, pr))
	ps, err := pr.Market.Positions(t.Context(), acct)
	require.NoError(t, err)
	for _, p := range ps {
		assert.Zero(t, p.Quantity, "flat after the target")
	}
}

// The exits show on the platform under our ids once the broker sends
// them; an entry cancelled before it fills sends none.
func TestBracketExitsFollowTheEntry(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	entry := limit(protocol.ActionBuy, 5990)
	entry.OrderID = "follow-entry"
	stop := bridge.OrderRequest{Account: acct, Instrument: es, Action: protocol.ActionSell, OrderType: protocol.OrderTypeStopMarket,
		Quantity: 1, StopPrice: 5980, TimeInForce: protocol.TimeInForceGtc, OrderID: "follow-stop"}
	_, err := pr.Platform.SubmitBracket(t.Context(), entry, stop)
	require.NoError(t, err)
	require.NoError(t, pr.Market.SetPrice(es, 5985))
	pr.Settle(t)
	os, err := pr.Platform.Orders(t.Context(), acct)
	require.NoError(t, err)
	byID := map[string]protocol.Order{}
	for _, o := range os {
		byID[o.OrderID] = o
	}
	require.Contains(t, byID, "follow-stop")
	assert.Equal(t, protocol.OrderStateFilled, byID["follow-entry"].OrderState)
	assert.False(t, protocol.TerminalOrderState(byID["follow-stop"].OrderState))

	entry.OrderID, stop.OrderID = "unfilled-entry", "unfilled-stop"
	entry.LimitPrice = 5970
	_, err = pr.Platform.SubmitBracket(t.Context(), entry, stop)
	require.NoError(t, err)
	_, err = pr.Platform.CancelOrder(t.Context(), acct, "unfilled-entry")
	require.NoError(t, err)
	pr.Settle(t)
	assert.NotContains(t, marketOrders(t, pr), "unfilled-stop")
}

// A bracket whose orders do not fit together is refused before anything
// is sent.
func TestBracketRefusesMismatchedLegs(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	entry := limit(protocol.ActionBuy, 5990)
	sameSide := bridge.OrderRequest{Account: acct, Instrument: es, Action: protocol.ActionBuy, OrderType: protocol.OrderTypeLimit,
		Quantity: 1, LimitPrice: 5980, TimeInForce: protocol.TimeInForceGtc}
	_, err := pr.Platform.SubmitBracket(t.Context(), entry, sameSide)
	var re *bridge.RequestError
	require.ErrorAs(t, err, &re)
	other := sameSide
	other.Action, other.Quantity = protocol.ActionSell, 2
	_, err = pr.Platform.SubmitBracket(t.Context(), entry, other)
	require.ErrorAs(t, err, &re)
	_, err = pr.Platform.SubmitBracket(t.Context(), entry)
	require.ErrorAs(t, err, &re)
	assert.Zero(t, pr.Fake.Requests("/order/placeoso"))
}

// Every placement carries our id as its clOrdId too, which the broker
// echoes on the placement's command.
func TestPlacementsCarryClOrdID(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	req := limit(protocol.ActionBuy, 5990)
	req.OrderID = "cl-single"
	_, err := pr.Platform.SubmitOrder(t.Context(), req)
	require.NoError(t, err)
	a := limit(protocol.ActionSell, 6020)
	a.OrderID, a.Oco = "cl-oco-a", "cl-oco"
	b := bridge.OrderRequest{Account: acct, Instrument: es, Action: protocol.ActionSell, OrderType: protocol.OrderTypeStopMarket,
		Quantity: 1, StopPrice: 5970, TimeInForce: protocol.TimeInForceGtc, Oco: "cl-oco", OrderID: "cl-oco-b"}
	_, _, err = pr.Platform.SubmitOCO(t.Context(), a, b)
	require.NoError(t, err)
	for _, id := range []string{"cl-single", "cl-oco-a", "cl-oco-b"} {
		assert.Equal(t, id, clOrdIDOf(t, pr, id), id)
	}
}

// Flatten's liquidateposition says it is automated, as every write must.
func TestLiquidatePositionIsAutomated(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	buy := bridge.OrderRequest{Account: acct, Instrument: es, Action: protocol.ActionBuy, OrderType: protocol.OrderTypeMarket,
		Quantity: 1, TimeInForce: protocol.TimeInForceDay}
	_, err := pr.Platform.SubmitOrder(t.Context(), buy)
	require.NoError(t, err)
	pr.Settle(t)
	require.NoError(t, pr.Platform.Flatten(t.Context(), acct, es))
	assert.Equal(t, 1, pr.Fake.Requests("/order/liquidateposition"))
	ps, err := pr.Market.Positions(t.Context(), acct)
	require.NoError(t, err)
	for _, p := range ps {
		assert.Zero(t, p.Quantity)
	}
}

// user/syncrequest is sent as the partner documentation writes it:
// splitResponses, entityTypes, no users.
func TestSyncRequestAsDocumented(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	body, ok := pr.Fake.LastSyncRequest()
	require.True(t, ok)
	assert.True(t, body.SplitResponses)
	assert.Empty(t, body.Users)
	assert.Contains(t, body.EntityTypes, tradovatewire.EntityOrder)
	assert.Contains(t, body.EntityTypes, tradovatewire.EntityPosition)
}

// An entry the broker places without naming its exits is never left
// standing unprotected: it is cancelled and the bracket is refused.
func TestBracketWithoutExitsIsTakenBack(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	entry := limit(protocol.ActionBuy, 5990)
	entry.OrderID = "naked-entry"
	stop := bridge.OrderRequest{Account: acct, Instrument: es, Action: protocol.ActionSell, OrderType: protocol.OrderTypeStopMarket,
		Quantity: 1, StopPrice: 5980, TimeInForce: protocol.TimeInForceGtc, OrderID: "naked-stop"}
	pr.Fake.DropNextBrackets()
	_, err := pr.Platform.SubmitBracket(t.Context(), entry, stop)
	var re *bridge.RejectError
	require.ErrorAs(t, err, &re)
	assert.Contains(t, re.Reason, "without its exits")
	pr.Settle(t)
	assert.Empty(t, marketOrders(t, pr), "the entry was cancelled")
	assert.Equal(t, 1, pr.Fake.Requests("/order/cancelorder"))
}
