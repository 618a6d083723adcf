package relay_test

import (
	"strconv"
	"testing"

	"tradebridge/protocol"
)

// BenchmarkHubCalls measures calls through the hub, the tunnel and the
// agent without HTTP: the part of BenchmarkTradingRoutes that is not the
// relay's HTTP handling. A write with a request id also pays the agent's
// exactly-once bookkeeping.
func BenchmarkHubCalls(b *testing.B) {
	r := newRPCRig(b, nil)
	r.waitConnected()
	place := map[string]any{"account": "Sim101", "action": "Buy", "instrument": "ES", "orderType": "Market", "quantity": 1, "timeInForce": "Day"}
	b.Run("ListPositions", func(b *testing.B) {
		for b.Loop() {
			if _, err := r.call(protocol.FnListPositions, "", map[string]any{"account": "Sim101"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PlaceOrder", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			if _, err := r.call(protocol.FnPlaceOrder, "bench-"+strconv.Itoa(i), place); err != nil {
				b.Fatal(err)
			}
		}
	})
}
