package tradovatefake_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

func TestRejectNextCommand(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	w, _ := f.userSocket()
	id := f.place(f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeLimit, 1, 5990, 0))
	f.fake.Flush()

	f.fake.RejectNextCommand(tradovatewire.CommandRiskRejected, "TradingLocked", false)
	var res tradovatewire.CommandResponse
	require.Equal(t, http.StatusOK, f.post("/order/cancelorder", tradovatewire.CancelOrderRequest{OrderID: id, IsAutomated: true}, &res))
	require.NotZero(t, res.CommandID, "the request is accepted")
	require.False(t, res.Failed())
	ps := w.propsUntil(func(p propsEvent) bool { return p.EntityType == tradovatewire.EntityCommandReport })
	rep := entity[tradovatewire.CommandReport](t, ps[len(ps)-1])
	require.Equal(t, res.CommandID, rep.CommandID)
	require.True(t, rep.Rejected())
	require.Equal(t, "TradingLocked", rep.RejectReason)
	require.Equal(t, tradovatewire.StatusWorking, f.orders()[id].OrdStatus, "the order is left as it was")

	// After the answer, for a modification.
	f.fake.RejectNextCommand(tradovatewire.CommandExecutionRejected, "TooLate", true)
	mod := tradovatewire.ModifyOrderRequest{OrderID: id, OrderQty: 1, OrderType: tradovatewire.OrderTypeLimit, Price: 5985,
		TimeInForce: tradovatewire.TIFDay, IsAutomated: true}
	require.Equal(t, http.StatusOK, f.post("/order/modifyorder", mod, &res))
	ps = w.propsUntil(func(p propsEvent) bool { return p.EntityType == tradovatewire.EntityCommandReport })
	require.Equal(t, tradovatewire.CommandExecutionRejected, entity[tradovatewire.CommandReport](t, ps[len(ps)-1]).CommandStatus)
	require.Equal(t, 5990.0, f.version(id).Price, "the price is unchanged")
}

func TestSuccessReason(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	f.fake.SuccessReason(true)
	id := f.place(f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeLimit, 1, 5990, 0))
	var res tradovatewire.CommandResponse
	require.Equal(t, http.StatusOK, f.post("/order/cancelorder", tradovatewire.CancelOrderRequest{OrderID: id, IsAutomated: true}, &res))
	require.Equal(t, tradovatewire.ReasonSuccess, res.FailureReason)
	require.NotZero(t, res.CommandID)
	require.False(t, res.Failed())
	require.Equal(t, tradovatewire.StatusCanceled, f.orders()[id].OrdStatus)
}

func TestBustFillAndFees(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	f.place(f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeMarket, 1, 0, 0))
	fs := f.fills()
	require.Len(t, fs, 1)
	var fees []tradovatewire.FillFee
	require.Equal(t, http.StatusOK, f.get("/fillFee/list", &fees))
	require.Len(t, fees, 1)
	require.Equal(t, fs[0].ID, fees[0].ID)
	require.InDelta(t, 0.62, fees[0].Total(), 1e-9)

	w, snap := f.userSocket()
	require.True(t, snap.Fills[0].Active)
	var raw map[string]json.RawMessage
	m := w.request("user/syncrequest", "", []byte(`{"users":[1]}`))
	require.NoError(t, json.Unmarshal(m.D, &raw))
	require.NotContains(t, raw, "fillFees", "not a documented field of the answer")

	require.True(t, f.fake.BustFill(fs[0].ID))
	require.False(t, f.fake.BustFill(424242))
	ps := w.propsUntil(func(p propsEvent) bool { return p.EntityType == tradovatewire.EntityFill })
	require.Equal(t, tradovatewire.EventUpdated, ps[len(ps)-1].EventType)
	require.False(t, entity[tradovatewire.Fill](t, ps[len(ps)-1]).Active)
	require.False(t, f.fills()[0].Active, "the list says it too")
}

func TestAddPositionRow(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	require.True(t, f.fake.AddPositionRow("Sim101", es, 1, 2, 5950))
	require.False(t, f.fake.AddPositionRow("nobody", es, 1, 2, 5950))
	ps := f.positions()
	require.Len(t, ps, 1)
	require.Equal(t, 2, ps[0].NetPos)
	require.Equal(t, tradovatewire.TradeDate{Year: 2026, Month: 10, Day: 4}, ps[0].TradeDate, "the day before the session's")
}

func TestRefuseUserSocketsAndMute(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	w, _ := f.userSocket()
	sent := f.fake.EventsSent()
	f.fake.MuteUserEvents(true)
	f.place(f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeMarket, 1, 0, 0))
	f.fake.Flush()
	require.Equal(t, sent, f.fake.EventsSent(), "no event was sent")
	f.fake.MuteUserEvents(false)

	f.fake.RefuseUserSockets(true)
	w.readFails()
	status, _ := f.raw(http.MethodGet, "/websocket", "", nil)
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Len(t, f.positions(), 1, "REST works")
	f.fake.RefuseUserSockets(false)
	f.userSocket()
}
