package dispatch_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/dispatch"
	"tradebridge/trading/ops"
)

// BenchmarkPlaceOrder is one full PlaceOrder RPC inside the agent: the
// dispatcher (exactly-once bookkeeping by request id, argument decoding,
// result encoding), the operation (validation, account and instrument
// checks, the per-instrument lock) and the simulator filling a Market
// order, on a manual clock. Buys and sells alternate so the position stays
// small.
func BenchmarkPlaceOrder(b *testing.B) {
	clock := sim.NewManualClock(time.Date(2026, time.October, 5, 14, 30, 0, 0, time.UTC))
	p, err := sim.New(sim.Options{Clock: clock})
	require.NoError(b, err)
	defer p.Close()
	o, err := ops.New(ops.Options{Platform: p, Now: clock.Now})
	require.NoError(b, err)
	d, err := dispatch.New(dispatch.Options{Explain: o.Explain})
	require.NoError(b, err)
	for name, h := range o.Functions() {
		require.NoError(b, d.Register(name, h))
	}
	args := [2]json.RawMessage{
		json.RawMessage(`{"account":"Sim101","action":"Buy","instrument":"ES 12-26","orderType":"Market","quantity":1,"timeInForce":"Day"}`),
		json.RawMessage(`{"account":"Sim101","action":"Sell","instrument":"ES 12-26","orderType":"Market","quantity":1,"timeInForce":"Day"}`),
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		req := protocol.Request{Fn: protocol.FnPlaceOrder, RequestID: "bench-" + strconv.Itoa(i), Args: args[i&1]}
		if _, perr := d.Handle(ctx, &req); perr != nil {
			b.Fatal(perr)
		}
	}
}
