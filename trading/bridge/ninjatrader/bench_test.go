package ninjatrader_test

import (
	"context"
	"testing"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/bridgetest"
	"tradebridge/trading/bridge/ninjatrader/ntfake"
	"tradebridge/trading/bridge/sim"
)

// BenchmarkSubmitOrder places a market order and reads the positions back,
// on the simulator and through the bridge and the fake add-on over
// loopback TCP: the ratio is the cost of the add-on protocol (a request,
// its events and its reply, read from the mirror).
func BenchmarkSubmitOrder(b *testing.B) {
	for _, tc := range []struct {
		name string
		new  bridgetest.Factory
	}{{"sim", bridgetest.Sim}, {"ninjatrader", ntfake.Factory}} {
		b.Run(tc.name, func(b *testing.B) {
			h := tc.new(b, sim.Options{})
			ctx := context.Background()
			req := bridge.OrderRequest{Account: "Sim101", Instrument: "ES", Action: protocol.ActionBuy,
				OrderType: protocol.OrderTypeMarket, Quantity: 1, TimeInForce: protocol.TimeInForceDay}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				req.Action = protocol.ActionBuy
				if i%2 == 1 {
					req.Action = protocol.ActionSell // stay near flat
				}
				if _, err := h.Platform.SubmitOrder(ctx, req); err != nil {
					b.Fatal(err)
				}
				if _, err := h.Platform.Positions(ctx, "Sim101"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
