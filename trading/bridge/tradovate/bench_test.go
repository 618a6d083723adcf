package tradovate_test

import (
	"testing"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate"
	"tradebridge/trading/bridge/tradovate/tradovatetest"
)

// BenchmarkSubmitOrder measures a market order through the platform and
// the fake Tradovate: validation, the REST placement, the events over the
// user socket and the barrier that waits for them. The pacer is opened
// wide so that the benchmark measures the path, not the budget.
func BenchmarkSubmitOrder(b *testing.B) {
	pr := pair(b, tradovatetest.PairOptions{Session: func(o *tradovate.SessionOptions) { o.Rate, o.Burst, o.PerHour = 1e9, 1<<30, 1<<40 }})
	actions := [2]string{protocol.ActionBuy, protocol.ActionSell}
	i := 0
	for b.Loop() {
		_, err := pr.Platform.SubmitOrder(b.Context(), bridge.OrderRequest{Account: acct, Instrument: es,
			Action: actions[i%2], OrderType: protocol.OrderTypeMarket, Quantity: 1})
		if err != nil {
			b.Fatal(err)
		}
		i++
	}
}
