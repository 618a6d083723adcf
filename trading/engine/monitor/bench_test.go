package monitor

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
	"tradebridge/trading/engine/enginetest"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/engine"
	"tradebridge/trading/mgmtconfig"
	"tradebridge/trading/ops"
)

// flattenClock is a platform that notes when the first Flatten reached
// it.
type flattenClock struct {
	bridge.Platform
	mu sync.Mutex
	at time.Time
}

func (p *flattenClock) Flatten(ctx context.Context, account, instrument string) error {
	p.mu.Lock()
	if p.at.IsZero() {
		p.at = time.Now()
	}
	p.mu.Unlock()
	return p.Platform.Flatten(ctx, account, instrument)
}

// traderClock is a Trader that notes when Flatten was called.
type traderClock struct {
	engine.Trader
	at time.Time
}

func (t *traderClock) Flatten(ctx context.Context, a protocol.FlattenArgs) (protocol.FlattenResult, error) {
	t.at = time.Now()
	return t.Trader.Flatten(ctx, a)
}

type nopReporter struct{}

func (nopReporter) ReportMonitor(protocol.MonitorState)   {}
func (nopReporter) ReportCopier(protocol.CopierState)     {}
func (nopReporter) ReportActivity(protocol.ActivityEntry) {}

// BenchmarkBreachToFlatten measures an account event that breaches the
// loss limit until the engine calls Trader.Flatten (call-p50-µs,
// call-p99-µs) and until the flatten of the open position reaches the
// platform through the real operations on the simulator (p50-µs, p99-µs).
// The clock moves to the next trading day every 50 trips, as the
// simulator's list of the session's orders (which the flatten reads)
// would otherwise grow without end.
//
//	go test -run '^$' -bench BreachToFlatten -benchtime 2000x ./trading/engine/monitor/
func BenchmarkBreachToFlatten(b *testing.B) {
	clock := sim.NewManualClock(wednesday10)
	p, err := sim.New(sim.Options{Clock: clock})
	require.NoError(b, err)
	defer p.Close()
	fc := &flattenClock{Platform: p}
	o, err := ops.New(ops.Options{Platform: fc, Now: clock.Now})
	require.NoError(b, err)
	holder := &mgmtconfig.Holder{}
	m := monitor(acct)
	m.LossLimit = limit(100)
	holder.Apply(&protocol.Config{Version: 1, Monitors: []protocol.Monitor{m}})
	tc := &traderClock{Trader: o}
	e, err := New(Options{Platform: p, Trader: tc, Config: holder, Store: engine.NewMemStore(), Reporter: nopReporter{},
		Now: clock.Now})
	require.NoError(b, err)
	o.SetGate(e)
	e.Tick(bg)

	lat := make([]time.Duration, 0, b.N)
	calls := make([]time.Duration, 0, b.N)
	day := wednesday10
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		if i > 0 && i%50 == 0 {
			day = day.AddDate(0, 0, 1)
			for day.Weekday() == time.Saturday || day.Weekday() == time.Sunday {
				day = day.AddDate(0, 0, 1)
			}
			clock.Set(day)
		}
		_, err := p.SubmitOrder(bg, enginetest.MarketOrder(acct, "ES", protocol.ActionBuy, 1))
		require.NoError(b, err)
		e.mu.Lock()
		e.accts[acct].state = protocol.MonitorActive
		e.mu.Unlock()
		fc.mu.Lock()
		fc.at = time.Time{}
		fc.mu.Unlock()
		ev := bridge.Event{Kind: bridge.EventAccount, Account: &protocol.Account{Name: acct,
			Item: protocol.AccountItem{GrossRealizedProfitLoss: -500 - float64(i%7), Commission: float64(i)}}}
		b.StartTimer()
		start := time.Now()
		e.handle(bg, ev)
		fc.mu.Lock()
		lat = append(lat, fc.at.Sub(start))
		fc.mu.Unlock()
		calls = append(calls, tc.at.Sub(start))
	}
	b.StopTimer()
	require.Equal(b, protocol.MonitorStopped, e.MonitorState(acct))
	slices.Sort(lat)
	slices.Sort(calls)
	b.ReportMetric(float64(calls[len(calls)/2].Nanoseconds())/1e3, "call-p50-µs")
	b.ReportMetric(float64(calls[len(calls)*99/100].Nanoseconds())/1e3, "call-p99-µs")
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
}
