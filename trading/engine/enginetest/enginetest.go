// Package enginetest holds what the engines' tests share (the copier's,
// the monitor's, the controls'): a simulated market on a manual clock with
// the real operations over it, a Reporter that records, configuration
// pushes by version, and the checks every engine's tests make. It is for
// tests only.
package enginetest

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/mgmtconfig"
	"tradebridge/trading/ops"
)

// Wait bounds every wait for an engine to act.
const Wait = 5 * time.Second

// Market is a simulator on a manual clock and the real operations over it.
type Market struct {
	Sim   *sim.Platform
	Clock *sim.ManualClock
	Ops   *ops.Ops
}

// NewMarket starts a simulator at at with simOpts (its Clock is set) and
// the operations over it with opsOpts (Platform and Now are set); the
// simulator closes when the test ends.
func NewMarket(t testing.TB, at time.Time, simOpts sim.Options, opsOpts ops.Options) Market {
	t.Helper()
	clock := sim.NewManualClock(at)
	simOpts.Clock = clock
	p, err := sim.New(simOpts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	opsOpts.Platform, opsOpts.Now = p, clock.Now
	o, err := ops.New(opsOpts)
	require.NoError(t, err)
	return Market{Sim: p, Clock: clock, Ops: o}
}

// Reporter is an engine.Reporter that records what it is told.
type Reporter struct {
	mu       sync.Mutex
	monitors []protocol.MonitorState
	copiers  []protocol.CopierState
	activity []protocol.ActivityEntry
}

// ReportActivity implements engine.Reporter.
func (r *Reporter) ReportActivity(e protocol.ActivityEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.activity = append(r.activity, e)
}

// Activity returns the activity reports of kind made so far, or every one
// when kind is "".
func (r *Reporter) Activity(kind string) []protocol.ActivityEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []protocol.ActivityEntry
	for _, e := range r.activity {
		if kind == "" || e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// ReportMonitor implements engine.Reporter.
func (r *Reporter) ReportMonitor(s protocol.MonitorState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.monitors = append(r.monitors, s)
}

// ReportCopier implements engine.Reporter.
func (r *Reporter) ReportCopier(s protocol.CopierState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.copiers = append(r.copiers, s)
}

// Monitors returns the monitor states reported so far.
func (r *Reporter) Monitors() []protocol.MonitorState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]protocol.MonitorState(nil), r.monitors...)
}

// Copiers returns the copier states reported so far.
func (r *Reporter) Copiers() []protocol.CopierState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]protocol.CopierState(nil), r.copiers...)
}

// Detail decodes an activity report's detail, for comparing it.
func Detail(t testing.TB, e protocol.ActivityEntry) map[string]any {
	t.Helper()
	var d map[string]any
	require.NoError(t, json.Unmarshal(e.Detail, &d))
	return d
}

// Configs pushes configurations to a Holder, each with the next version,
// as the relay does.
type Configs struct {
	Holder  mgmtconfig.Holder
	version int64
}

// Push applies cfg as the next version and returns that version.
func (c *Configs) Push(t testing.TB, cfg protocol.Config) int64 {
	t.Helper()
	c.version++
	cfg.Version = c.version
	require.Equal(t, c.version, c.Holder.Apply(&cfg))
	return c.version
}

// Position returns the account's signed position in instrument: a full
// contract name ("ES 12-26"), or a root ("ES") for its contract held.
func Position(t testing.TB, p bridge.Platform, account, instrument string) int {
	t.Helper()
	ps, err := p.Positions(context.Background(), account)
	require.NoError(t, err)
	for _, pos := range ps {
		if pos.Instrument == instrument || strings.HasPrefix(pos.Instrument, instrument+" ") {
			if pos.MarketPosition == protocol.MarketPositionShort {
				return -pos.Quantity
			}
			return pos.Quantity
		}
	}
	return 0
}

// MarketOrder is a Day market order request, to send straight to a
// platform (the trader's own trading, which no gate sees).
func MarketOrder(account, instrument, action string, qty int) bridge.OrderRequest {
	return bridge.OrderRequest{Account: account, Instrument: instrument, Action: action,
		OrderType: protocol.OrderTypeMarket, Quantity: qty, TimeInForce: protocol.TimeInForceDay}
}

// RequireBlocked requires err to be trading_blocked, refused by rule.
func RequireBlocked(t testing.TB, err error, rule string) {
	t.Helper()
	var pe *protocol.Error
	require.ErrorAs(t, err, &pe, "want trading_blocked")
	require.Equal(t, protocol.CodeTradingBlocked, pe.Code)
	require.True(t, strings.HasSuffix(pe.Detail, "(rule: "+rule+")"), pe.Detail)
}

// RequireRealTime requires at, a time an engine stamped on what it
// reported, to be the real time (UTC) between since and now, whatever the
// platform's clock says: since is the test's time.Now() before the engine
// acted (taken to the millisecond below, as activity entries are).
func RequireRealTime(t testing.TB, since, at time.Time, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, time.UTC, at.Location(), msgAndArgs...)
	require.WithinRange(t, at, since.Truncate(time.Millisecond), time.Now(), msgAndArgs...)
}
