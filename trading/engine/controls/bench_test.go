package controls

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/mgmtconfig"
	"tradebridge/trading/ops"
)

// signalTrader is the real operations, telling when each Flatten returned.
type signalTrader struct {
	*ops.Ops
	done chan time.Time
}

func (s *signalTrader) Flatten(ctx context.Context, a protocol.FlattenArgs) (protocol.FlattenResult, error) {
	res, err := s.Ops.Flatten(ctx, a)
	s.done <- time.Now()
	return res, err
}

// BenchmarkKillSwitch measures the time from Holder.Apply of a
// configuration that turns the kill switch on with flattenOnKill to the
// flatten submitted (the closing orders placed on the simulator), with Run
// watching the configuration. It reports the 50th and 99th percentiles.
//
//	go test -run '^$' -bench BenchmarkKillSwitch -benchtime 2000x ./trading/engine/controls/
func BenchmarkKillSwitch(b *testing.B) {
	// The simulator lists every order of the session, so each flatten
	// would read a longer history: a fresh simulator every 100 rounds
	// keeps the rounds alike.
	const rounds = 100
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for done := 0; done < b.N; done += rounds {
		b.StopTimer()
		lat = killSwitchRounds(b, min(rounds, b.N-done), lat)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		return float64(lat[min(int(p*float64(len(lat))), len(lat)-1)]) / float64(time.Microsecond)
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}

// killSwitchRounds runs n rounds on a fresh simulator, appending their
// latencies to lat. It is called with the timer stopped.
func killSwitchRounds(b *testing.B, n int, lat []time.Duration) []time.Duration {
	f := newFixture(b)
	tr := &signalTrader{Ops: f.ops, done: make(chan time.Time, 1)}
	e, err := New(Options{Platform: f.sim, Trader: tr, Config: &f.configs.Holder, Now: f.clock.Now})
	require.NoError(b, err)
	f.ops.SetGate(e)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- e.Run(ctx) }()
	defer func() {
		cancel()
		<-stopped
		f.sim.Close()
	}()
	killOn := func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.killOn
	}
	for range n {
		f.trade("Sim101", es, protocol.ActionBuy, 1)
		f.trade("Sim102", nq, protocol.ActionSell, 1)
		b.StartTimer()
		t0 := time.Now()
		f.apply(protocol.Config{Controls: protocol.Controls{KillSwitch: true, FlattenOnKill: true}})
		t1 := <-tr.done
		b.StopTimer()
		lat = append(lat, t1.Sub(t0))
		if !f.flat() {
			b.Fatal("not flat after the kill switch")
		}
		f.apply(protocol.Config{Controls: protocol.Controls{FlattenOnKill: true}})
		for killOn() {
			time.Sleep(10 * time.Microsecond)
		}
	}
	return lat
}

// BenchmarkCheck measures the gate's judgement of one order while the
// kill switch, blockAllSignals and a news window with roots are all on.
//
//	go test -run '^$' -bench BenchmarkCheck ./trading/engine/controls/
func BenchmarkCheck(b *testing.B) {
	h := &mgmtconfig.Holder{}
	n := news(protocol.NewsFlatten, "NQ", "ES")
	for i := range 20 {
		n.Events = append(n.Events, protocol.NewsEvent{At: newsAt.Add(time.Duration(i) * time.Hour), Title: "event"})
	}
	h.Apply(&protocol.Config{Version: 1, NewsLockout: n,
		Controls: protocol.Controls{KillSwitch: false, BlockAllSignals: true}})
	e, err := New(Options{Platform: nopPlatform{}, Trader: nopTrader{}, Config: h, Now: func() time.Time { return newsAt }})
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if v := e.Check("Sim101", es, ops.SourceAPI); v.Entries == nil || v.Any == nil {
			b.Fatal("not refused")
		}
	}
}
