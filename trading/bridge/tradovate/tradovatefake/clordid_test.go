package tradovatefake_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// Every placement has its New command entity, echoing the placement's
// clOrdId and naming the order: as a props event after the order's first
// events, and in the syncrequest answer.
func TestPlacementCommandEchoesClOrdID(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	w, _ := f.userSocket()
	req := f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeLimit, 1, 5990, 0)
	req.Text, req.ClOrdID = "ours-1", "ours-1"
	id := f.place(req)
	ps := w.propsUntil(func(p propsEvent) bool { return p.EntityType == tradovatewire.EntityCommand })
	require.Contains(t, kinds(ps), "orderVersion Created", "the order's events come first")
	c := entity[tradovatewire.Command](t, ps[len(ps)-1])
	require.Equal(t, tradovatewire.EventCreated, ps[len(ps)-1].EventType)
	require.Equal(t, id, c.OrderID)
	require.Equal(t, "ours-1", c.ClOrdID)
	require.Equal(t, tradovatewire.CommandNew, c.CommandType)
	require.Equal(t, tradovatewire.CommandAtExecution, c.CommandStatus)
	require.True(t, c.IsAutomated)
	require.NotZero(t, c.ID)

	// An OCO pair: one command per order, each with its own clOrdId.
	oco := tradovatewire.PlaceOCORequest{PlaceOrderRequest: f.order(tradovatewire.ActionSell, tradovatewire.OrderTypeLimit, 1, 6010, 0),
		Other: tradovatewire.OtherOrder{Action: tradovatewire.ActionSell, OrderType: tradovatewire.OrderTypeStop, StopPrice: 5980, ClOrdID: "ours-3"}}
	oco.ClOrdID = "ours-2"
	var res tradovatewire.PlaceOCOResponse
	require.Equal(t, http.StatusOK, f.post("/order/placeoco", oco, &res))
	f.fake.Flush()

	_, snap := f.userSocket()
	byOrder := make(map[int64]tradovatewire.Command)
	for _, c := range snap.Commands {
		byOrder[c.OrderID] = c
	}
	require.Len(t, byOrder, 3)
	for order, want := range map[int64]string{id: "ours-1", res.OrderID: "ours-2", res.OcoID: "ours-3"} {
		require.Equal(t, want, byOrder[order].ClOrdID)
		require.Equal(t, tradovatewire.CommandNew, byOrder[order].CommandType)
	}
}

// ReplaceNextText changes the text of the next placement's versions
// only; its command still echoes the clOrdId.
func TestReplaceNextText(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	req := f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeLimit, 1, 5990, 0)
	req.Text, req.ClOrdID = "ours-1", "ours-1"
	f.fake.ReplaceNextText("")
	dropped := f.place(req)
	req.Text, req.ClOrdID = "ours-2", "ours-2"
	kept := f.place(req)
	require.Empty(t, f.version(dropped).Text)
	require.Equal(t, "ours-2", f.version(kept).Text, "only the next placement")
	_, snap := f.userSocket()
	var echoed bool
	for _, c := range snap.Commands {
		echoed = echoed || (c.OrderID == dropped && c.ClOrdID == "ours-1")
	}
	require.True(t, echoed)
}
