package tradovate_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate/tradovatetest"
)

func trailing(action string, distance, stop float64) bridge.OrderRequest {
	return bridge.OrderRequest{Account: acct, Instrument: es, Action: action, OrderType: protocol.OrderTypeTrailingStop,
		Quantity: 1, StopPrice: stop, TrailDistance: distance, TimeInForce: protocol.TimeInForceGtc}
}

// Only a trailing order's quantity changes: the platform refuses a price
// before asking the broker, and a quantity change keeps the trail (the
// broker refuses another pegDifference, so the one sent is the order's).
func TestTrailingOrderChange(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	o, err := pr.Platform.SubmitOrder(t.Context(), trailing(protocol.ActionSell, 4, 0))
	require.NoError(t, err)
	assert.Equal(t, 5996.0, o.StopPrice, "the stop starts 4 below the bid of the platform's quote")
	assert.Equal(t, 4.0, o.TrailDistance)
	before := pr.Fake.Requests("/order/modifyorder")
	for _, req := range []bridge.ChangeRequest{
		{Account: acct, OrderID: o.OrderID, StopPrice: 5993.25},
		{Account: acct, OrderID: o.OrderID, LimitPrice: 5993.25, Quantity: 2},
	} {
		_, err := pr.Platform.ChangeOrder(t.Context(), req)
		var re *bridge.RejectError
		require.ErrorAs(t, err, &re)
		assert.Contains(t, re.Reason, "only its quantity")
		assert.NotContains(t, err.Error(), "5993.25")
	}
	assert.Equal(t, before, pr.Fake.Requests("/order/modifyorder"), "nothing was sent")

	changed, err := pr.Platform.ChangeOrder(t.Context(), bridge.ChangeRequest{Account: acct, OrderID: o.OrderID, Quantity: 3})
	require.NoError(t, err)
	assert.Equal(t, 3, changed.Quantity)
	assert.Equal(t, protocol.OrderTypeTrailingStop, changed.OrderType)
	assert.Equal(t, 4.0, changed.TrailDistance)
	assert.Equal(t, 5996.0, changed.StopPrice)
}

// A trailing stop may be a leg of an OCO pair: the stop loss of a bracket
// that trails.
func TestTrailingStopInAnOCOPair(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	_, err := pr.Platform.SubmitOrder(t.Context(), bridge.OrderRequest{Account: acct, Instrument: es,
		Action: protocol.ActionBuy, OrderType: protocol.OrderTypeMarket, Quantity: 1})
	require.NoError(t, err)
	tp, sl := limit(protocol.ActionSell, 6020), trailing(protocol.ActionSell, 5, 5997)
	tp.Oco, sl.Oco = "grp-t", "grp-t"
	a, b, err := pr.Platform.SubmitOCO(t.Context(), tp, sl)
	require.NoError(t, err)
	assert.Equal(t, protocol.OrderTypeLimit, a.OrderType)
	assert.Equal(t, protocol.OrderTypeTrailingStop, b.OrderType)
	assert.Equal(t, 5997.0, b.StopPrice)
	assert.Equal(t, 5.0, b.TrailDistance)

	require.NoError(t, pr.Market.SetPrice(es, 6010))
	pr.Settle(t)
	require.NoError(t, pr.Market.SetPrice(es, 6005))
	pr.Settle(t)
	os, err := pr.Platform.Orders(t.Context(), acct)
	require.NoError(t, err)
	byID := map[string]protocol.Order{}
	for _, o := range os {
		byID[o.OrderID] = o
	}
	assert.Equal(t, protocol.OrderStateFilled, byID[b.OrderID].OrderState)
	assert.Equal(t, 6005.0, byID[b.OrderID].AverageFillPrice, "the stop trailed to 6005 and filled there")
	assert.Equal(t, protocol.OrderStateCancelled, byID[a.OrderID].OrderState)
}
