package sim_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
)

// BenchmarkSubmitToFillEvent measures the time from submitting a Market
// order to reading its fill (the EventExecution) from an Events stream, on a
// simulator whose clock stands still. Orders alternate Buy and Sell so the
// position stays small. It reports the median as p50-ns.
func BenchmarkSubmitToFillEvent(b *testing.B) {
	p, err := sim.New(sim.Options{Clock: sim.NewManualClock(start)})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	c, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := p.Events(c)
	reqs := [2]bridge.OrderRequest{market("Sim101", "ES", "Buy", 1), market("Sim101", "ES", "Sell", 1)}
	var latencies []time.Duration
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		if _, err := p.SubmitOrder(ctx, reqs[i%2]); err != nil {
			b.Fatal(err)
		}
		for ev := range events {
			if ev.Kind == bridge.EventExecution {
				break
			}
		}
		latencies = append(latencies, time.Since(t0))
		for len(events) > 0 { // the position and account events
			<-events
		}
	}
	slices.Sort(latencies)
	b.ReportMetric(float64(latencies[len(latencies)/2].Nanoseconds()), "p50-ns")
}
