package ntfake

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/trading/bridge/bridgetest"
	"tradebridge/trading/bridge/ninjatrader"
	"tradebridge/trading/bridge/sim"
)

// SettleTimeout is how long Settle waits for the bridge to apply the
// events the fake sent.
const SettleTimeout = 5 * time.Second

// Pair is a fake add-on over a simulator and a NinjaTrader bridge that
// talks to it: relay → tunnel → agent → ninjatrader bridge → fake add-on →
// simulator, for tests.
type Pair struct {
	Bridge *ninjatrader.Platform
	Fake   *Server
	Market *sim.Platform
}

// NewPair starts a fake add-on over market and makes a bridge to it whose
// sessions follow now. The bridge's connection loop is not started: call
// Run (the agent runs it as the platform's loop), or use StartPair. The
// fake and the bridge close when t ends; the market is the caller's.
func NewPair(t testing.TB, market *sim.Platform, now func() time.Time) *Pair {
	t.Helper()
	fake, err := Start(Options{Market: market, Dir: t.TempDir()})
	require.NoError(t, err)
	p, err := ninjatrader.New(ninjatrader.Options{DiscoveryFile: fake.DiscoveryPath(), Now: now,
		NinjaTraderDir: t.TempDir(), MinBackoff: time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = p.Close()
		_ = fake.Close()
	})
	return &Pair{Bridge: p, Fake: fake, Market: market}
}

// Run runs the bridge's connection loop until t ends, and waits until it
// is connected.
func (pr *Pair) Run(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = pr.Bridge.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	pr.WaitConnected(t)
}

// WaitConnected waits until the bridge has taken its snapshot.
func (pr *Pair) WaitConnected(t testing.TB) {
	t.Helper()
	require.Eventually(t, func() bool { return pr.Bridge.Status().Connected }, SettleTimeout, time.Millisecond,
		"the bridge never connected to the fake add-on")
}

// Settle waits until the bridge has applied every event the simulator
// published so far.
func (pr *Pair) Settle(t testing.TB) {
	t.Helper()
	pr.Fake.Flush()
	want := pr.Fake.LastSeq()
	require.Eventually(t, func() bool {
		st := pr.Bridge.Status()
		return st.Connected && st.Seq >= want
	}, SettleTimeout, 100*time.Microsecond, "the bridge did not catch up with the fake add-on")
}

// Factory is the bridgetest Factory of the NinjaTrader bridge over a fake
// add-on. NinjaTrader's orders have no trailing types: the harness lacks
// bridgetest.CapTrailingStops.
func Factory(t testing.TB, opts sim.Options) bridgetest.Harness {
	t.Helper()
	clock := bridgetest.UseManualClock(&opts)
	market, err := sim.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = market.Close() })
	pr := NewPair(t, market, opts.Clock.Now)
	pr.Run(t)
	return bridgetest.Harness{Platform: pr.Bridge, Market: market, Clock: clock, Settle: pr.Settle,
		Lacks: []bridgetest.Capability{bridgetest.CapTrailingStops}}
}
