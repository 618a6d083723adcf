package tradovatefake_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// setPrice moves the market and lets the fake act on it.
func (f *fixture) setPrice(last float64) {
	f.t.Helper()
	require.NoError(f.t, f.market.SetPrice(es, last))
	f.fake.Flush()
}

// A trailing stop is the simulator's stop, moved by the fake on each quote:
// the versions report the broker's type, the trail and where the stop
// stands; it never moves back, and fills as a stop when the market comes
// back by the trail.
func TestTrailingStopFollowsTheMarket(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	f.place(f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeMarket, 1, 0, 0))
	req := f.order(tradovatewire.ActionSell, tradovatewire.OrderTypeTrailingStop, 1, 0, 0)
	req.PegDifference = -4
	id := f.place(req)
	v := f.version(id)
	require.Equal(t, tradovatewire.OrderTypeTrailingStop, v.OrderType)
	require.Equal(t, -4.0, v.PegDifference)
	require.Equal(t, 5996.0, v.StopPrice, "without a stop price the trail starts 4 below the bid")
	require.Zero(t, v.Price)
	require.Equal(t, tradovatewire.StatusWorking, f.orders()[id].OrdStatus)

	for _, tc := range []struct {
		last, stop float64
	}{
		{6010, 6006},       // the bid rises: the stop follows
		{6007, 6006},       // the bid falls back less than the trail: the stop stays
		{6008.5, 6006},     // a smaller high: still
		{6012.25, 6008.25}, // a new high
	} {
		f.setPrice(tc.last)
		v := f.version(id)
		require.Equal(t, tc.stop, v.StopPrice, "at %v", tc.last)
		require.Equal(t, tradovatewire.OrderTypeTrailingStop, v.OrderType)
		require.Equal(t, -4.0, v.PegDifference)
		require.Equal(t, tradovatewire.StatusWorking, f.orders()[id].OrdStatus)
	}
	f.setPrice(6008.25)
	require.Equal(t, tradovatewire.StatusFilled, f.orders()[id].OrdStatus)
	fills := f.fills()
	require.Equal(t, 6008.25, fills[len(fills)-1].Price)
	f.setPrice(6020) // the trail is over
	require.Equal(t, 6008.25, f.version(id).StopPrice)
}

// A buy trailing stop limit starts at its stop and limit; both follow the
// ask down, keeping their difference.
func TestTrailingStopLimitKeepsItsOffset(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	req := f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeTrailingStopLimit, 1, 6004.5, 6003.25)
	req.PegDifference = 3
	id := f.place(req)
	v := f.version(id)
	require.Equal(t, tradovatewire.OrderTypeTrailingStopLimit, v.OrderType)
	require.Equal(t, 6003.25, v.StopPrice, "the ask 6000.25 plus the trail: where it started")
	require.Equal(t, 6004.5, v.Price)
	f.setPrice(5990) // the ask at 5990.25
	v = f.version(id)
	require.Equal(t, 5993.25, v.StopPrice)
	require.Equal(t, 5994.5, v.Price)
	require.Equal(t, 3.0, v.PegDifference)

	// A stop sent farther from the ask than the trail starts at the trail;
	// the limit keeps its difference.
	req = f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeTrailingStopLimit, 1, 6001, 6000)
	req.PegDifference = 3
	id = f.place(req)
	v = f.version(id)
	require.Equal(t, 5993.25, v.StopPrice)
	require.Equal(t, 5994.25, v.Price)
}

// Only a trailing order's quantity changes: another trail is
// TrailingStopNonOrderQtyModify, another type Unsupported; prices sent
// are ignored.
func TestTrailingStopModify(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	req := f.order(tradovatewire.ActionSell, tradovatewire.OrderTypeTrailingStop, 1, 0, 5997)
	req.PegDifference = -4
	id := f.place(req)
	require.Equal(t, 5997.0, f.version(id).StopPrice, "a stop nearer the bid than the trail starts where sent")
	for _, tc := range []struct {
		name   string
		mod    tradovatewire.ModifyOrderRequest
		reason string
	}{
		{"another trail", tradovatewire.ModifyOrderRequest{IsAutomated: true, OrderID: id, OrderQty: 1, OrderType: tradovatewire.OrderTypeTrailingStop, PegDifference: -2}, "TrailingStopNonOrderQtyModify"},
		{"another type", tradovatewire.ModifyOrderRequest{IsAutomated: true, OrderID: id, OrderQty: 1, OrderType: tradovatewire.OrderTypeStop, StopPrice: 5990}, "Unsupported"},
		{"the quantity", tradovatewire.ModifyOrderRequest{IsAutomated: true, OrderID: id, OrderQty: 3, OrderType: tradovatewire.OrderTypeTrailingStop,
			StopPrice: 5000, PegDifference: -4}, ""},
	} {
		var resp tradovatewire.CommandResponse
		require.Equal(t, http.StatusOK, f.post("/order/modifyorder", tc.mod, &resp), tc.name)
		require.Equal(t, tc.reason, resp.FailureReason, tc.name)
	}
	v := f.version(id)
	require.Equal(t, 3, v.OrderQty)
	require.Equal(t, 5997.0, v.StopPrice, "the price sent is ignored")
	require.Equal(t, -4.0, v.PegDifference)
}

// A trailing stop may be an OCO pair's other order, trailing as any.
func TestTrailingStopInAnOCOPair(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	f.place(f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeMarket, 1, 0, 0))
	oco := tradovatewire.PlaceOCORequest{
		PlaceOrderRequest: f.order(tradovatewire.ActionSell, tradovatewire.OrderTypeLimit, 1, 6020, 0),
		Other:             tradovatewire.OtherOrder{Action: tradovatewire.ActionSell, OrderType: tradovatewire.OrderTypeTrailingStop, PegDifference: -5},
	}
	var resp tradovatewire.PlaceOCOResponse
	require.Equal(t, http.StatusOK, f.post("/order/placeoco", oco, &resp))
	require.Empty(t, resp.FailureReason, resp.FailureText)
	require.Equal(t, 5995.0, f.version(resp.OcoID).StopPrice)
	f.setPrice(6010)
	require.Equal(t, 6005.0, f.version(resp.OcoID).StopPrice)
	f.setPrice(6005)
	os := f.orders()
	require.Equal(t, tradovatewire.StatusFilled, os[resp.OcoID].OrdStatus)
	require.Equal(t, tradovatewire.StatusCanceled, os[resp.OrderID].OrdStatus, "the pair's other order is cancelled")
}
