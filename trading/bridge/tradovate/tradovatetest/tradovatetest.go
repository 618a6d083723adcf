// Package tradovatetest pairs the relay's Tradovate platform
// (trading/bridge/tradovate) with a fake Tradovate server
// (trading/bridge/tradovate/tradovatefake) over a simulated market, for tests: the
// bridgetest Factory of the Tradovate bridge, and a Pair for tests that
// drive the fake's knobs. It is for tests only; the relay's binary never
// links it.
package tradovatetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"tradebridge/trading/bridge/bridgetest"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/bridge/tradovate"
	"tradebridge/trading/bridge/tradovate/tradovatefake"
)

// SettleTimeout bounds Settle and the wait for the first sync.
const SettleTimeout = 5 * time.Second

// Lacks are the bridgetest capabilities the Tradovate platform lacks:
// NinjaTrader's strategies, ATM templates and bars, OCO groups joined one
// order at a time (the broker places OCO pairs together), and the state
// of a triggered stop-limit (the broker's order records do not tell it
// from one waiting for its stop).
var Lacks = []bridgetest.Capability{bridgetest.CapStrategies, bridgetest.CapATM, bridgetest.CapBars,
	bridgetest.CapOCOGroups, bridgetest.CapTriggerState}

// Pair is a fake Tradovate over a simulator, and a session and platform
// that talk to it.
type Pair struct {
	Platform *tradovate.Platform
	Session  *tradovate.Session
	Fake     *tradovatefake.Server
	Market   *sim.Platform
}

// PairOptions tunes NewPair; the zero value is a demo login with the
// fake's default credentials.
type PairOptions struct {
	// Now is the platform's trading clock (the market's); time.Now when
	// nil.
	Now func() time.Time
	// Persist is the platform's; nil keeps the order-id map in memory.
	Persist tradovate.Persist
	// Session edits the session's options before it is made.
	Session func(*tradovate.SessionOptions)
	Logger  *zap.Logger

	// Platform edits the platform's options before it is made.
	Platform func(*tradovate.Options)
}

// NewPair starts a fake over market and makes a session and a platform
// for it, not running yet (Run runs them). Everything but the market is
// closed when t ends.
func NewPair(t testing.TB, market *sim.Platform, opts PairOptions) *Pair {
	t.Helper()
	fake, err := tradovatefake.Start(tradovatefake.Options{Market: market})
	require.NoError(t, err)
	t.Cleanup(func() { _ = fake.Close() })
	so := tradovate.SessionOptions{
		Env: tradovate.EnvDemo, Endpoints: fake.Endpoints(),
		Credentials: &tradovate.Credentials{Name: tradovatefake.DefaultName, Password: tradovatefake.DefaultPassword,
			AppID: tradovatefake.DefaultAppID, AppVersion: "1.0", CID: tradovatefake.DefaultCID, Sec: tradovatefake.DefaultSec},
		Logger: opts.Logger,
	}
	if opts.Session != nil {
		opts.Session(&so)
	}
	sess, err := tradovate.NewSession(so)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sess.Close() })
	po := tradovate.Options{Session: sess, Persist: opts.Persist, Now: opts.Now,
		Logger: opts.Logger, MinBackoff: time.Millisecond, MaxBackoff: 50 * time.Millisecond}
	if opts.Platform != nil {
		opts.Platform(&po)
	}
	p, err := tradovate.New(po)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return &Pair{Platform: p, Session: sess, Fake: fake, Market: market}
}

// Run runs the session and the platform until t ends, and waits until
// the platform has synced.
func (pr *Pair) Run(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { _ = pr.Session.Run(ctx); done <- struct{}{} }()
	go func() { _ = pr.Platform.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() {
		cancel()
		<-done
		<-done
	})
	pr.WaitConnected(t)
}

// WaitConnected waits until the platform has synced.
func (pr *Pair) WaitConnected(t testing.TB) {
	t.Helper()
	require.Eventually(t, func() bool { return pr.Platform.Status().Connected }, SettleTimeout, time.Millisecond,
		"the platform never synced with the fake Tradovate")
}

// Settle waits until the platform has applied every event the simulator
// published so far: the fake sends them (Flush), the platform applies
// the props events (EventsApplied reaches EventsSent), and a round trip on
// each socket makes sure the quotes sent before are applied too.
func (pr *Pair) Settle(t testing.TB) {
	t.Helper()
	pr.Fake.Flush()
	want := pr.Fake.EventsSent()
	require.Eventually(t, func() bool {
		return pr.Platform.Status().Connected && pr.Platform.EventsApplied() >= want
	}, SettleTimeout, 100*time.Microsecond, "the platform did not catch up with the fake Tradovate")
	ctx, cancel := context.WithTimeout(context.Background(), SettleTimeout)
	defer cancel()
	_ = pr.Platform.Barrier(ctx)
}

// Factory is the bridgetest Factory of the Tradovate platform over a fake
// Tradovate.
func Factory(t testing.TB, opts sim.Options) bridgetest.Harness {
	t.Helper()
	clock := bridgetest.UseManualClock(&opts)
	market, err := sim.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = market.Close() })
	pr := NewPair(t, market, PairOptions{Now: opts.Clock.Now})
	pr.Run(t)
	return bridgetest.Harness{Platform: pr.Platform, Market: market, Clock: clock, Settle: pr.Settle, Lacks: Lacks}
}
