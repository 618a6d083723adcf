package copier

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/engine"
	"tradebridge/trading/mgmtconfig"
	"tradebridge/trading/ops"
)

// passGate passes every order, so the operations read the position of
// each copy as they do under the agent's real gate.
type passGate struct{}

func (passGate) Check(string, string, ops.Source) ops.Verdict { return ops.Verdict{} }

// BenchmarkCopyLatency measures, on the simulator, the time from the
// leader's market order (which fills at once and publishes the fill) to
// the return of the last follower's copy submitted through the gate, in
// execution mode, with the engine idle when the leader's order goes in. It
// reports the median and the 99th percentile.
func BenchmarkCopyLatency(b *testing.B) {
	for _, n := range []int{1, 5, 20} {
		b.Run(fmt.Sprintf("followers=%d", n), func(b *testing.B) {
			accounts := []string{"L"}
			var followers []protocol.Follower
			for i := range n {
				a := fmt.Sprintf("F%d", i+1)
				accounts = append(accounts, a)
				followers = append(followers, protocol.Follower{Account: a})
			}
			clock := sim.NewManualClock(start)
			p, err := sim.New(sim.Options{Clock: clock, Accounts: accounts, CommissionPerContract: -1})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			o, err := ops.New(ops.Options{Platform: p, Now: clock.Now})
			if err != nil {
				b.Fatal(err)
			}
			o.SetGate(passGate{})
			cfg := &mgmtconfig.Holder{}
			cfg.Apply(&protocol.Config{Version: 1, Copiers: []protocol.Copier{
				copierOf("c1", protocol.CopyModeExecution, followers...)}})
			e, err := New(Options{Platform: p, Trader: o, Config: cfg, Store: engine.NewMemStore(), Now: clock.Now,
				Logger: zap.NewNop(), TickInterval: time.Hour})
			if err != nil {
				b.Fatal(err)
			}
			copied := make(chan time.Time, 1)
			e.afterCopy = func() { copied <- time.Now() }
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- e.Run(ctx) }()
			defer func() { cancel(); <-done }()
			for {
				e.loopMu.Lock()
				up := e.loop != nil
				e.loopMu.Unlock()
				if up {
					break
				}
				time.Sleep(time.Millisecond)
			}
			e.Tick(ctx)

			lat := make([]time.Duration, 0, b.N)
			actions := [2]string{protocol.ActionBuy, protocol.ActionSell}
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				if _, err := p.SubmitOrder(ctx, bridge.OrderRequest{Account: "L", Instrument: es, Action: actions[i%2],
					OrderType: protocol.OrderTypeMarket, Quantity: 1, TimeInForce: protocol.TimeInForceDay}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, (<-copied).Sub(t0))
				b.StopTimer()
				e.Tick(ctx) // the engine handles the copies' own events before the next fill
				b.StartTimer()
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Nanoseconds())/1e3, "p99-µs")
		})
	}
}
