package tradovatefake_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/bridge/tradovate/tradovatefake"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

func TestAccountsAndCash(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	var as []tradovatewire.Account
	require.Equal(t, http.StatusOK, f.get("/account/list", &as))
	require.Len(t, as, 2)
	for i, name := range []string{"Sim101", "Sim102"} {
		require.Equal(t, name, as[i].Name)
		require.Equal(t, f.accountID(name), as[i].ID)
		require.Equal(t, tradovatefake.UserID, as[i].UserID)
		require.True(t, as[i].Active)
	}
	require.NotEqual(t, as[0].ID, as[1].ID)

	f.place(f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeMarket, 2, 0, 0)) // at 6000.25
	require.NoError(t, f.market.SetPrice(es, 6010))
	var snap tradovatewire.CashBalanceSnapshot
	require.Equal(t, http.StatusOK, f.post("/cashBalance/getCashBalanceSnapshot",
		tradovatewire.CashBalanceSnapshotRequest{AccountID: as[0].ID}, &snap))
	require.InDelta(t, 100_000-2*0.62, snap.TotalCashValue, 1e-6, "cash net of commission")
	require.InDelta(t, (6010-6000.25)*2*50, snap.OpenPnL, 1e-6)
	require.InDelta(t, snap.TotalCashValue+snap.OpenPnL, snap.NetLiq, 1e-6)
	require.InDelta(t, -1.24, snap.RealizedPnL, 1e-6)
	require.Positive(t, snap.MaintenanceMargin)

	require.Equal(t, http.StatusNotFound, f.post("/cashBalance/getcashbalancesnapshot",
		tradovatewire.CashBalanceSnapshotRequest{AccountID: 1}, nil))
}

func TestMarketOrderFills(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	req := f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeMarket, 2, 0, 0)
	req.Text = "entry"
	id := f.place(req)
	require.Equal(t, 1, f.fake.OrdersPlaced())

	o := f.orders()[id]
	require.Equal(t, tradovatewire.StatusFilled, o.OrdStatus)
	require.Equal(t, f.accountID("Sim101"), o.AccountID)
	require.Equal(t, f.contractID(), o.ContractID)
	require.Equal(t, tradovatewire.ActionBuy, o.Action)
	require.True(t, start.Equal(mustTime(t, o.Timestamp)), "the simulator's time, not %s", o.Timestamp)

	v := f.version(id)
	require.Equal(t, tradovatewire.OrderVersion{ID: v.ID, OrderID: id, OrderQty: 2, OrderType: tradovatewire.OrderTypeMarket,
		TimeInForce: tradovatewire.TIFDay, Text: "entry"}, v)

	fs := f.fills()
	require.Len(t, fs, 1)
	require.Equal(t, id, fs[0].OrderID)
	require.Equal(t, 2, fs[0].Qty)
	require.Equal(t, 6000.25, fs[0].Price)
	require.Equal(t, tradovatewire.ActionBuy, fs[0].Action)
	require.True(t, fs[0].Active)
	require.Equal(t, tradovatewire.TradeDate{Year: 2026, Month: 10, Day: 5}, fs[0].TradeDate)

	ps := f.positions()
	require.Len(t, ps, 1)
	require.Equal(t, 2, ps[0].NetPos)
	require.Equal(t, 6000.25, ps[0].NetPrice)
	require.Equal(t, 2, ps[0].Bought)
	require.Equal(t, 12000.5, ps[0].BoughtValue)

	// The broker's id is the simulator's.
	sims, err := f.market.Orders(t.Context(), "Sim101")
	require.NoError(t, err)
	require.Len(t, sims, 1)
	require.Equal(t, "5000001", sims[0].OrderID)
	require.Equal(t, int64(5000001), id)
	require.Equal(t, "entry", sims[0].Name)
}

func TestFlatPositionsStay(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	f.place(f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeMarket, 2, 0, 0))  // at 6000.25
	f.place(f.order(tradovatewire.ActionSell, tradovatewire.OrderTypeMarket, 2, 0, 0)) // at 6000
	ps := f.positions()
	require.Len(t, ps, 1, "the row of a contract traded today stays")
	p := ps[0]
	require.Zero(t, p.NetPos)
	require.Zero(t, p.NetPrice)
	require.Equal(t, 2, p.Bought)
	require.Equal(t, 2, p.Sold)
	require.Equal(t, 12000.5, p.BoughtValue)
	require.Equal(t, 12000.0, p.SoldValue)
	sims, err := f.market.Positions(t.Context(), "Sim101")
	require.NoError(t, err)
	require.Empty(t, sims)
}

func TestWorkingOrderCancelAndModify(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	id := f.place(f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeLimit, 1, 5990, 0))
	require.Equal(t, tradovatewire.StatusWorking, f.orders()[id].OrdStatus)
	v1 := f.version(id)
	require.Equal(t, 5990.0, v1.Price)

	var cmd tradovatewire.CommandResponse
	require.Equal(t, http.StatusOK, f.post("/order/modifyorder", tradovatewire.ModifyOrderRequest{OrderID: id, OrderQty: 3,
		OrderType: tradovatewire.OrderTypeLimit, Price: 5995, IsAutomated: true}, &cmd))
	require.NotZero(t, cmd.CommandID)
	require.Empty(t, cmd.FailureReason)
	v2 := f.version(id)
	require.Greater(t, v2.ID, v1.ID, "a modification is a new version")
	require.Equal(t, 3, v2.OrderQty)
	require.Equal(t, 5995.0, v2.Price)

	for _, tc := range []struct {
		name   string
		req    tradovatewire.ModifyOrderRequest
		status int
		reason string
	}{
		{"another type", tradovatewire.ModifyOrderRequest{IsAutomated: true, OrderID: id, OrderQty: 3, OrderType: tradovatewire.OrderTypeStop, StopPrice: 6010},
			http.StatusOK, "Unsupported"},
		{"a price off the tick grid", tradovatewire.ModifyOrderRequest{IsAutomated: true, OrderID: id, OrderQty: 3, OrderType: tradovatewire.OrderTypeLimit, Price: 5995.1},
			http.StatusOK, "InvalidPrice"},
		{"no quantity", tradovatewire.ModifyOrderRequest{IsAutomated: true, OrderID: id, OrderType: tradovatewire.OrderTypeLimit, Price: 5995},
			http.StatusBadRequest, ""},
		{"an unknown order", tradovatewire.ModifyOrderRequest{IsAutomated: true, OrderID: 42, OrderQty: 1, OrderType: tradovatewire.OrderTypeLimit, Price: 5995},
			http.StatusNotFound, ""},
	} {
		var resp tradovatewire.CommandResponse
		require.Equal(t, tc.status, f.post("/order/modifyorder", tc.req, &resp), tc.name)
		require.Equal(t, tc.reason, resp.FailureReason, tc.name)
	}

	require.Equal(t, http.StatusOK, f.post("/order/cancelorder", tradovatewire.CancelOrderRequest{OrderID: id, IsAutomated: true}, &cmd))
	require.Empty(t, cmd.FailureReason)
	require.Equal(t, tradovatewire.StatusCanceled, f.orders()[id].OrdStatus)

	var again tradovatewire.CommandResponse
	require.Equal(t, http.StatusOK, f.post("/order/cancelorder", tradovatewire.CancelOrderRequest{IsAutomated: true, OrderID: id}, &again))
	require.Equal(t, "TooLate", again.FailureReason)
	require.NotEmpty(t, again.FailureText)
	require.Equal(t, http.StatusNotFound, f.post("/order/cancelorder", tradovatewire.CancelOrderRequest{IsAutomated: true, OrderID: 42}, nil))
}

func TestStopOrders(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	stop := f.place(f.order(tradovatewire.ActionSell, tradovatewire.OrderTypeStop, 1, 0, 5990))
	// The documentation's examples write a stop in price.
	stopInPrice := f.place(f.order(tradovatewire.ActionSell, tradovatewire.OrderTypeStop, 1, 5980, 0))
	stopLimit := f.place(f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeStopLimit, 1, 6012, 6010))
	os := f.orders()
	for _, id := range []int64{stop, stopInPrice, stopLimit} {
		require.Equal(t, tradovatewire.StatusWorking, os[id].OrdStatus)
	}
	require.Equal(t, tradovatewire.OrderVersion{ID: f.version(stop).ID, OrderID: stop, OrderQty: 1, OrderType: tradovatewire.OrderTypeStop,
		StopPrice: 5990, TimeInForce: tradovatewire.TIFDay}, f.version(stop))
	require.Equal(t, 5980.0, f.version(stopInPrice).StopPrice)
	require.Equal(t, 6012.0, f.version(stopLimit).Price)
	require.Equal(t, 6010.0, f.version(stopLimit).StopPrice)

	require.NoError(t, f.market.SetPrice(es, 5989))
	os = f.orders()
	require.Equal(t, tradovatewire.StatusFilled, os[stop].OrdStatus)
	require.Equal(t, tradovatewire.StatusWorking, os[stopInPrice].OrdStatus)
}

func TestPlacementRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	closed := newFixture(t)
	closed.login()
	closed.clock.Set(time.Date(2026, time.October, 10, 12, 0, 0, 0, time.UTC)) // a Saturday
	for _, tc := range []struct {
		name   string
		f      *fixture
		edit   func(*tradovatewire.PlaceOrderRequest)
		status int
		reason string
	}{
		{"an unknown symbol", f, func(r *tradovatewire.PlaceOrderRequest) { r.Symbol = "ZZZZ6" }, http.StatusOK, "InvalidContract"},
		{"a two-digit year", f, func(r *tradovatewire.PlaceOrderRequest) { r.Symbol = "ESZ26" }, http.StatusOK, "InvalidContract"},
		{"our contract name", f, func(r *tradovatewire.PlaceOrderRequest) { r.Symbol = es }, http.StatusOK, "InvalidContract"},
		{"an unknown account", f, func(r *tradovatewire.PlaceOrderRequest) { r.AccountID = 7 }, http.StatusNotFound, ""},
		{"an unknown action", f, func(r *tradovatewire.PlaceOrderRequest) { r.Action = "Short" }, http.StatusBadRequest, ""},
		{"no quantity", f, func(r *tradovatewire.PlaceOrderRequest) { r.OrderQty = 0 }, http.StatusBadRequest, ""},
		{"an unknown order type", f, func(r *tradovatewire.PlaceOrderRequest) { r.OrderType = "Best" }, http.StatusBadRequest, ""},
		{"market if touched", f, func(r *tradovatewire.PlaceOrderRequest) { r.OrderType, r.Price = tradovatewire.OrderTypeMIT, 5990 }, http.StatusOK, "Unsupported"},
		{"a trailing stop without its trail", f, func(r *tradovatewire.PlaceOrderRequest) { r.OrderType = tradovatewire.OrderTypeTrailingStop }, http.StatusOK, "InvalidPrice"},
		{"a buy trail below the market", f, func(r *tradovatewire.PlaceOrderRequest) {
			r.OrderType, r.PegDifference = tradovatewire.OrderTypeTrailingStop, -4
		}, http.StatusOK, "InvalidPrice"},
		{"a sell trail above the market", f, func(r *tradovatewire.PlaceOrderRequest) {
			r.OrderType, r.Action, r.PegDifference = tradovatewire.OrderTypeTrailingStopLimit, tradovatewire.ActionSell, 4
			r.Price, r.StopPrice = 5995, 5996
		}, http.StatusOK, "InvalidPrice"},
		{"a trailing stop limit without its limit", f, func(r *tradovatewire.PlaceOrderRequest) {
			r.OrderType, r.PegDifference, r.StopPrice = tradovatewire.OrderTypeTrailingStopLimit, 4, 6004
		}, http.StatusOK, "InvalidPrice"},
		{"a trailing stop starting through the market", f, func(r *tradovatewire.PlaceOrderRequest) {
			r.OrderType, r.PegDifference, r.StopPrice = tradovatewire.OrderTypeTrailingStop, 4, 5990
		}, http.StatusOK, "InvalidPrice"},
		{"immediate or cancel", f, func(r *tradovatewire.PlaceOrderRequest) { r.TimeInForce = tradovatewire.TIFIOC }, http.StatusOK, "Unsupported"},
		{"a stop through the market", f, func(r *tradovatewire.PlaceOrderRequest) {
			r.OrderType, r.Action, r.StopPrice = tradovatewire.OrderTypeStop, tradovatewire.ActionSell, 6005
		}, http.StatusOK, "InvalidPrice"},
		{"a closed market", closed, func(*tradovatewire.PlaceOrderRequest) {}, http.StatusOK, "SessionClosed"},
	} {
		req := tc.f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeMarket, 1, 0, 0)
		tc.edit(&req)
		var resp tradovatewire.PlaceOrderResponse
		require.Equal(t, tc.status, tc.f.post("/order/placeorder", req, &resp), tc.name)
		require.Equal(t, tc.reason, resp.FailureReason, tc.name)
		require.Zero(t, resp.OrderID, tc.name)
		if tc.status != http.StatusOK {
			require.NotEmpty(t, resp.ErrorText, tc.name)
		}
	}
	require.Zero(t, f.fake.OrdersPlaced())
	require.Empty(t, f.orders())
}

func TestRejectNext(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	f.fake.RejectNext("MaxPosLimitReached")
	var resp tradovatewire.PlaceOrderResponse
	require.Equal(t, http.StatusOK, f.post("/order/placeorder", f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeMarket, 1, 0, 0), &resp))
	require.Equal(t, "MaxPosLimitReached", resp.FailureReason)
	require.Zero(t, resp.OrderID)
	require.Zero(t, f.fake.OrdersPlaced(), "nothing reached the market")
	f.place(f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeMarket, 1, 0, 0))
	require.Equal(t, 1, f.fake.OrdersPlaced(), "only the next placement fails")
}

func TestPlaceOCO(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	f.place(f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeMarket, 1, 0, 0))
	req := tradovatewire.PlaceOCORequest{
		PlaceOrderRequest: f.order(tradovatewire.ActionSell, tradovatewire.OrderTypeLimit, 1, 6010, 0),
		Other:             tradovatewire.OtherOrder{Action: tradovatewire.ActionSell, OrderType: tradovatewire.OrderTypeStop, StopPrice: 5990, Text: "stop"},
	}
	req.Text = "target"
	var resp tradovatewire.PlaceOCOResponse
	require.Equal(t, http.StatusOK, f.post("/order/placeoco", req, &resp))
	require.Empty(t, resp.FailureReason)
	target, stop := resp.OrderID, resp.OcoID
	require.NotZero(t, target)
	require.NotZero(t, stop)
	require.Equal(t, 3, f.fake.OrdersPlaced())
	os := f.orders()
	require.Equal(t, stop, os[target].OcoID)
	require.Equal(t, target, os[stop].OcoID)
	require.Equal(t, "target", f.version(target).Text)
	require.Equal(t, "stop", f.version(stop).Text)

	require.NoError(t, f.market.SetPrice(es, 6010))
	os = f.orders()
	require.Equal(t, tradovatewire.StatusFilled, os[target].OrdStatus)
	require.Equal(t, tradovatewire.StatusCanceled, os[stop].OrdStatus, "one fills, the other is cancelled")
	require.Zero(t, f.positions()[0].NetPos)
}

func TestPlaceOCORefusedOther(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	req := tradovatewire.PlaceOCORequest{
		PlaceOrderRequest: f.order(tradovatewire.ActionSell, tradovatewire.OrderTypeLimit, 1, 6010, 0),
		// A sell stop above the market is refused.
		Other: tradovatewire.OtherOrder{Action: tradovatewire.ActionSell, OrderType: tradovatewire.OrderTypeStop, StopPrice: 6020},
	}
	var resp tradovatewire.PlaceOCOResponse
	require.Equal(t, http.StatusOK, f.post("/order/placeoco", req, &resp))
	require.Equal(t, "InvalidPrice", resp.FailureReason)
	require.Zero(t, resp.OrderID)
	os := f.orders()
	require.Len(t, os, 1)
	for _, o := range os {
		require.Equal(t, tradovatewire.StatusCanceled, o.OrdStatus, "the first order is cancelled")
	}
}

func TestLiquidatePosition(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	f.place(f.order(tradovatewire.ActionSell, tradovatewire.OrderTypeMarket, 3, 0, 0))
	working := f.place(f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeLimit, 1, 5990, 0))
	contract := f.contractID()
	acct := f.accountID("Sim101")

	var resp tradovatewire.PlaceOrderResponse
	require.Equal(t, http.StatusOK, f.post("/order/liquidateposition",
		tradovatewire.LiquidatePositionRequest{IsAutomated: true, AccountID: acct, ContractID: contract}, &resp))
	require.Empty(t, resp.FailureReason)
	require.NotZero(t, resp.OrderID)
	os := f.orders()
	require.Equal(t, tradovatewire.StatusCanceled, os[working].OrdStatus)
	require.Equal(t, tradovatewire.StatusFilled, os[resp.OrderID].OrdStatus)
	require.Equal(t, tradovatewire.ActionBuy, os[resp.OrderID].Action)
	require.Equal(t, 3, f.version(resp.OrderID).OrderQty)
	require.Zero(t, f.positions()[0].NetPos)

	status, body := f.raw(http.MethodPost, "/order/liquidateposition", f.token,
		tradovatewire.LiquidatePositionRequest{IsAutomated: true, AccountID: acct, ContractID: contract})
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{}`, string(body), "nothing to close")

	require.Equal(t, http.StatusNotFound, f.post("/order/liquidateposition",
		tradovatewire.LiquidatePositionRequest{IsAutomated: true, AccountID: acct, ContractID: 1}, nil))
	f.fake.RejectNext("TradingLocked")
	require.Equal(t, http.StatusOK, f.post("/order/liquidateposition",
		tradovatewire.LiquidatePositionRequest{IsAutomated: true, AccountID: acct, ContractID: contract}, &resp))
	require.Equal(t, "TradingLocked", resp.FailureReason)
}

func TestContracts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	var c tradovatewire.Contract
	require.Equal(t, http.StatusOK, f.get("/contract/find?name=esz6", &c))
	require.Equal(t, esTradovate, c.Name)
	var byID tradovatewire.Contract
	require.Equal(t, http.StatusOK, f.get("/contract/item?id="+itoa(c.ID), &byID))
	require.Equal(t, c, byID)
	var nq tradovatewire.Contract
	require.Equal(t, http.StatusOK, f.get("/contract/find?name=NQH7", &nq))
	require.NotEqual(t, c.ID, nq.ID)
	for _, name := range []string{"ES", "ESZ26", "ES%2012-26", "ZZZZ6", "ESX6", "ESH6"} {
		require.Equal(t, http.StatusNotFound, f.get("/contract/find?name="+name, nil), name)
	}
	require.Equal(t, http.StatusNotFound, f.get("/contract/item?id=1", nil))
	require.Equal(t, http.StatusBadRequest, f.get("/contract/item?id=x", nil))
}

func TestOrdersPlacedInTheSimulatorDirectly(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	// A Flatten in the simulator places an order the fake did not choose.
	f.place(f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeMarket, 1, 0, 0))
	require.NoError(t, f.market.Flatten(t.Context(), "Sim101", es))
	os := f.orders()
	require.Len(t, os, 2)
	var closeID int64
	for id, o := range os {
		if o.Action == tradovatewire.ActionSell {
			closeID = id
		}
	}
	require.NotZero(t, closeID, "the simulator's order has a broker id")
	require.Equal(t, "Close", f.version(closeID).Text)
	require.Len(t, f.fills(), 2)
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	ts, ok := tradovatewire.ParseTime(s)
	require.True(t, ok, s)
	return ts
}

func TestPositionsHeldBeforeTheFakeStarted(t *testing.T) {
	t.Parallel()
	clock := sim.NewManualClock(start)
	market, err := sim.New(sim.Options{Clock: clock})
	require.NoError(t, err)
	t.Cleanup(func() { _ = market.Close() })
	require.NoError(t, market.SetPrice(es, 6000))
	_, err = market.SubmitOrder(t.Context(), bridge.OrderRequest{Account: "Sim102", Instrument: es,
		Action: "Sell", OrderType: "Market", Quantity: 2})
	require.NoError(t, err)
	fake, err := tradovatefake.Start(tradovatefake.Options{Market: market})
	require.NoError(t, err)
	t.Cleanup(func() { _ = fake.Close() })
	f := &fixture{t: t, fake: fake, market: market, clock: clock, client: newClient(t)}
	f.login()
	ps := f.positions()
	require.Len(t, ps, 1)
	require.Equal(t, f.accountID("Sim102"), ps[0].AccountID)
	require.Equal(t, -2, ps[0].NetPos)
	require.Equal(t, 6000.0, ps[0].NetPrice)
	require.Equal(t, 2, ps[0].Sold)
	require.Equal(t, 12000.0, ps[0].SoldValue)
}
