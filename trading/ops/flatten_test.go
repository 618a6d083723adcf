package ops

import (
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// nq submits an NQ market order straight to the platform.
func (f *fixture) nq(account, action string, qty int) {
	f.t.Helper()
	f.trade(bridge.OrderRequest{Account: account, Instrument: "NQ", Action: action,
		OrderType: protocol.OrderTypeMarket, Quantity: qty, TimeInForce: protocol.TimeInForceDay})
}

func (f *fixture) positions(account string) int {
	f.t.Helper()
	f.settle()
	ps, err := f.platform.Positions(bg, account)
	require.NoError(f.t, err)
	return len(ps)
}

func TestFlatten(t *testing.T) {
	onEachPlatform(t, testFlatten)
}

func testFlatten(t *testing.T, newFixture fixtureMaker) {
	setup := func(t *testing.T) *fixture {
		f := newFixture(t)
		f.market("Sim101", protocol.ActionBuy, 2)
		f.nq("Sim101", protocol.ActionSell, 1)
		f.market("Sim102", protocol.ActionSell, 3)
		f.resting("Sim101", protocol.ActionSell, protocol.OrderTypeStopMarket, 5950, 2)
		f.resting("Sim102", protocol.ActionBuy, protocol.OrderTypeLimit, 5900, 1) // an order without a position
		return f
	}
	t.Run("one account, one instrument", func(t *testing.T) {
		f := setup(t)
		res, err := f.ops.Flatten(bg, protocol.FlattenArgs{Account: "Sim101", Instrument: "ES"})
		require.NoError(t, err)
		require.Zero(t, f.position("Sim101"))
		require.Equal(t, 1, f.positions("Sim101"), "NQ stays")
		require.Len(t, res.Positions, 1)
		require.Equal(t, es, res.Positions[0].Instrument)
		require.Equal(t, 2, res.Positions[0].Quantity)
		require.Len(t, res.OrderIDs, 1)
		require.Len(t, res.CancelledOrderIDs, 1)
		require.Equal(t, -3, f.position("Sim102"))
	})
	t.Run("one account, every instrument", func(t *testing.T) {
		f := setup(t)
		res, err := f.ops.Flatten(bg, protocol.FlattenArgs{Account: "Sim101"})
		require.NoError(t, err)
		require.Zero(t, f.positions("Sim101"))
		require.Empty(t, f.working("Sim101"))
		require.Len(t, res.Positions, 2)
		require.Equal(t, -3, f.position("Sim102"))
	})
	t.Run("every account", func(t *testing.T) {
		f := setup(t)
		res, err := f.ops.Flatten(bg, protocol.FlattenArgs{})
		require.NoError(t, err)
		require.Zero(t, f.positions("Sim101"))
		require.Zero(t, f.positions("Sim102"))
		require.Empty(t, f.working("Sim102"), "orders without a position are cancelled too")
		require.Len(t, res.Positions, 3)
		require.Len(t, res.CancelledOrderIDs, 2)
	})
	t.Run("without cancelling orders", func(t *testing.T) {
		f := setup(t)
		res, err := f.ops.Flatten(bg, protocol.FlattenArgs{Account: "Sim101", Instrument: "ES", CancelOrders: ptr(false)})
		require.NoError(t, err)
		require.Zero(t, f.position("Sim101"))
		require.Len(t, f.working("Sim101"), 1, "the stop stays")
		require.Empty(t, res.CancelledOrderIDs)
	})
	t.Run("everything", func(t *testing.T) {
		f := setup(t)
		res, err := f.ops.FlattenEverything(bg, protocol.NoArgs{})
		require.NoError(t, err)
		require.Zero(t, f.positions("Sim101"))
		require.Zero(t, f.positions("Sim102"))
		require.Empty(t, f.working("Sim101"))
		require.Empty(t, f.working("Sim102"))
		require.Len(t, res.Positions, 3)
		m := shape(t, res)
		for _, k := range []string{"positions", "orderIds", "cancelledOrderIds"} {
			require.Contains(t, m, k)
		}
	})
	t.Run("nothing to do", func(t *testing.T) {
		f := newFixture(t)
		res, err := f.ops.Flatten(bg, protocol.FlattenArgs{Account: "Sim101"})
		require.NoError(t, err)
		require.Empty(t, res.Positions)
		require.NotNil(t, res.Positions)
		require.Empty(t, f.rec.Writes())
	})
	t.Run("bad input", func(t *testing.T) {
		f := setup(t)
		_, err := f.ops.Flatten(bg, protocol.FlattenArgs{Account: "Nope"})
		requireCode(t, err, protocol.CodeAccountNotFound, "Nope")
		_, err = f.ops.Flatten(bg, protocol.FlattenArgs{Instrument: "ZZ"})
		requireCode(t, err, protocol.CodeInvalidInstrument)
		require.Empty(t, f.rec.Writes())
	})
}

func TestClosePosition(t *testing.T) {
	onEachPlatform(t, testClosePosition)
}

func testClosePosition(t *testing.T, newFixture fixtureMaker) {
	for _, tc := range []struct {
		name     string
		held     int
		quantity *int
		percent  *float64
		closed   int
		code     string
	}{
		{"everything", 3, nil, nil, 3, ""},
		{"a quantity", 3, ptr(2), nil, 2, ""},
		{"more than the position closes it", 3, ptr(5), nil, 3, ""},
		{"0.5 of 3 rounds up to 2", 3, nil, ptr(0.5), 2, ""},
		{"0.33 of 3 is 1", 3, nil, ptr(0.33), 1, ""},
		{"0.1 of 3 rounds up to 1, never zero", 3, nil, ptr(0.1), 1, ""},
		{"0.01 of 1 closes it", 1, nil, ptr(0.01), 1, ""},
		{"1 closes everything", -4, nil, ptr(1.0), 4, ""},
		{"0.25 of 2 rounds up to 1", -2, nil, ptr(0.25), 1, ""},
		{"0.75 of 2 rounds up to 2", 2, nil, ptr(0.75), 2, ""},
		{"both", 3, ptr(1), ptr(0.5), 0, protocol.CodeInvalidArgument},
		{"percent above 1 (a percentage) is refused", 3, nil, ptr(50.0), 0, protocol.CodeInvalidArgument},
		{"percent just above 1", 3, nil, ptr(1.0001), 0, protocol.CodeInvalidArgument},
		{"percent zero", 3, nil, ptr(0.0), 0, protocol.CodeInvalidArgument},
		{"percent negative", 3, nil, ptr(-0.5), 0, protocol.CodeInvalidArgument},
		{"quantity zero", 3, ptr(0), nil, 0, protocol.CodeInvalidArgument},
		{"no position", 0, nil, nil, 0, protocol.CodeNoPosition},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.held > 0 {
				f.market("Sim101", protocol.ActionBuy, tc.held)
			} else if tc.held < 0 {
				f.market("Sim101", protocol.ActionSell, -tc.held)
			}
			res, err := f.ops.ClosePosition(bg, protocol.ClosePositionArgs{Account: "Sim101", Instrument: "ES",
				Quantity: tc.quantity, Percent: tc.percent})
			if tc.code != "" {
				requireCode(t, err, tc.code)
				require.Empty(t, f.rec.Writes())
				require.Equal(t, tc.held, f.position("Sim101"))
				if tc.percent != nil && tc.quantity == nil {
					require.Contains(t, err.(*protocol.Error).Detail, "fraction", "the detail says percent is a fraction")
				}
				return
			}
			require.NoError(t, err)
			require.NotEmpty(t, res.OrderID)
			require.Equal(t, tc.closed, res.Order.Quantity)
			// The result says what it closed: the closing order and the
			// position as it stood before.
			require.Equal(t, []string{res.OrderID}, res.OrderIDs)
			require.Len(t, res.ClosedPositions, 1)
			require.Equal(t, abs(tc.held), res.ClosedPositions[0].Quantity)
			require.Equal(t, marketPosition(tc.held), res.ClosedPositions[0].MarketPosition)
			require.Equal(t, "Sim101", res.ClosedPositions[0].Account)
			left := tc.held - sign(tc.held)*tc.closed
			require.Equal(t, left, f.position("Sim101"))
		})
	}
	// A full close cancels the position's orders; a partial close keeps
	// them.
	f := newFixture(t)
	f.market("Sim101", protocol.ActionBuy, 2)
	stop := f.resting("Sim101", protocol.ActionSell, protocol.OrderTypeStopMarket, 5950, 2)
	_, err := f.ops.ClosePosition(bg, protocol.ClosePositionArgs{Account: "Sim101", Instrument: "ES", Quantity: ptr(1)})
	require.NoError(t, err)
	require.Equal(t, protocol.OrderStateAccepted, f.order("Sim101", stop.OrderID).OrderState)
	res, err := f.ops.ClosePosition(bg, protocol.ClosePositionArgs{Account: "Sim101", Instrument: "ES"})
	require.NoError(t, err)
	require.Equal(t, []string{stop.OrderID}, res.CancelledOrderIDs)
	require.Empty(t, f.working("Sim101"))
	_, err = f.ops.ClosePosition(bg, protocol.ClosePositionArgs{Account: "Sim101"})
	requireCode(t, err, protocol.CodeMissingFields)
}

func TestFractionOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n    int
		f    float64
		want int
	}{
		{3, 0.5, 2}, {1, 0.5, 1}, {1, 0.01, 1}, {10, 0.3, 3}, {10, 0.31, 4}, {3, 1.0 / 3, 1},
		{5, 0.3, 2}, {7, 1, 7}, {4, 0.125, 1}, {100, 0.005, 1}, {100, 0.999, 100}, {2, 0.5, 1},
	} {
		require.Equal(t, tc.want, fractionOf(tc.n, tc.f), "%d × %v", tc.n, tc.f)
	}
}

func TestCancelOrders(t *testing.T) {
	onEachPlatform(t, testCancelOrders)
}

func testCancelOrders(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	a := f.resting("Sim101", protocol.ActionBuy, protocol.OrderTypeLimit, 5900, 1)
	tag := marketArgs("Buy", 1)
	tag.OrderType, tag.LimitPrice, tag.StrategyTag = "Limit", ptr(5800.0), "botA"
	tagged, err := f.ops.PlaceOrder(bg, tag)
	require.NoError(t, err)
	nq := f.trade(bridge.OrderRequest{Account: "Sim101", Instrument: "NQ", Action: protocol.ActionBuy,
		OrderType: protocol.OrderTypeLimit, LimitPrice: 100, Quantity: 1, TimeInForce: protocol.TimeInForceGtc})
	other := f.resting("Sim102", protocol.ActionBuy, protocol.OrderTypeLimit, 5900, 1)

	res, err := f.ops.CancelOrders(bg, protocol.CancelOrdersArgs{Account: "Sim101", Instrument: "ES", StrategyTag: "botA"})
	require.NoError(t, err)
	require.Equal(t, []string{tagged.OrderID}, res.CancelledOrderIDs)
	res, err = f.ops.CancelOrders(bg, protocol.CancelOrdersArgs{Account: "Sim101", Instrument: "ES"})
	require.NoError(t, err)
	require.Equal(t, []string{a.OrderID}, res.CancelledOrderIDs)
	require.Equal(t, protocol.OrderStateWorking, f.order("Sim101", nq.OrderID).OrderState)
	res, err = f.ops.CancelOrders(bg, protocol.CancelOrdersArgs{Account: "Sim101"})
	require.NoError(t, err)
	require.Equal(t, []string{nq.OrderID}, res.CancelledOrderIDs)
	require.Equal(t, protocol.OrderStateWorking, f.order("Sim102", other.OrderID).OrderState)
	res, err = f.ops.CancelOrders(bg, protocol.CancelOrdersArgs{Account: "Sim101"})
	require.NoError(t, err)
	require.Empty(t, res.CancelledOrderIDs)
	require.NotNil(t, res.CancelledOrderIDs)

	_, err = f.ops.CancelOrders(bg, protocol.CancelOrdersArgs{})
	requireCode(t, err, protocol.CodeMissingFields)
	_, err = f.ops.CancelOrders(bg, protocol.CancelOrdersArgs{Account: "Nope"})
	requireCode(t, err, protocol.CodeAccountNotFound)

	res, err = f.ops.CancelAllOrders(bg, protocol.NoArgs{})
	require.NoError(t, err)
	require.Equal(t, []string{other.OrderID}, res.CancelledOrderIDs)
	require.Empty(t, f.working("Sim102"))
}

func TestCancelAndChangeOrder(t *testing.T) {
	onEachPlatform(t, testCancelAndChangeOrder)
}

func testCancelAndChangeOrder(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	lim := f.resting("Sim101", protocol.ActionBuy, protocol.OrderTypeLimit, 5900, 1)
	res, err := f.ops.ChangeOrder(bg, protocol.ChangeOrderArgs{Account: "Sim101", OrderID: lim.OrderID, Quantity: ptr(3), LimitPrice: ptr(5910.0)})
	require.NoError(t, err)
	require.Equal(t, 3, res.Order.Quantity)
	require.Equal(t, 5910.0, res.Order.LimitPrice)

	for _, tc := range []struct {
		name string
		args protocol.ChangeOrderArgs
		code string
	}{
		{"nothing to change", protocol.ChangeOrderArgs{Account: "Sim101", OrderID: lim.OrderID}, protocol.CodeMissingFields},
		{"no id", protocol.ChangeOrderArgs{Account: "Sim101", Quantity: ptr(1)}, protocol.CodeMissingFields},
		{"stop on a limit", protocol.ChangeOrderArgs{Account: "Sim101", OrderID: lim.OrderID, StopPrice: ptr(5900.0)}, protocol.CodeInvalidArgument},
		{"off tick", protocol.ChangeOrderArgs{Account: "Sim101", OrderID: lim.OrderID, LimitPrice: ptr(5900.1)}, protocol.CodeInvalidArgument},
		{"bad quantity", protocol.ChangeOrderArgs{Account: "Sim101", OrderID: lim.OrderID, Quantity: ptr(0)}, protocol.CodeInvalidArgument},
		{"unknown order", protocol.ChangeOrderArgs{Account: "Sim101", OrderID: "nope", Quantity: ptr(1)}, protocol.CodeOrderNotFound},
		{"other account", protocol.ChangeOrderArgs{Account: "Sim102", OrderID: lim.OrderID, Quantity: ptr(1)}, protocol.CodeOrderNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.rec.Writes())
			_, err := f.ops.ChangeOrder(bg, tc.args)
			requireCode(t, err, tc.code, "nope")
			require.Len(t, f.rec.Writes(), before)
		})
	}

	c, err := f.ops.CancelOrder(bg, protocol.OrderArgs{Account: "Sim101", OrderID: lim.OrderID})
	require.NoError(t, err)
	require.Equal(t, protocol.OrderStateCancelled, c.Order.OrderState)
	_, err = f.ops.CancelOrder(bg, protocol.OrderArgs{Account: "Sim101", OrderID: lim.OrderID})
	requireCode(t, err, protocol.CodeOrderRejected, "the order already ended")
	_, err = f.ops.CancelOrder(bg, protocol.OrderArgs{Account: "Sim101", OrderID: "nope"})
	requireCode(t, err, protocol.CodeOrderNotFound, "nope")
	_, err = f.ops.CancelOrder(bg, protocol.OrderArgs{OrderID: lim.OrderID})
	requireCode(t, err, protocol.CodeMissingFields)
}
