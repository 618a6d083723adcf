package monitor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/engine"
	"tradebridge/trading/engine/enginetest"
)

// A monitor that counts unrealized P&L goes blind when an open position
// of its account has no live price: it neither trips on the platform's
// made-up 0 nor passes for safe; it reports itself blind once (to the
// relay and the activity log), and sees again when prices return.
func TestBlindWhileUnrealizedUnknown(t *testing.T) {
	t.Parallel()
	f := newFixture(t, wednesday10)
	m := monitor(acct)
	m.ID, m.IncludeUnrealized = "mon_1", true
	m.TrailingDrawdown, m.LossLimit = limit(250), limit(500)
	f.push(m)
	feed := func(unrealized float64, unknown bool) {
		f.e.observe(bg, &protocol.Account{Name: acct,
			Item: protocol.AccountItem{UnrealizedProfitLoss: unrealized, UnrealizedUnknown: unknown}})
	}
	lastReport := func() protocol.MonitorState {
		rs := f.rep.Monitors()
		require.NotEmpty(t, rs)
		return rs[len(rs)-1]
	}

	feed(300, false) // the session high: +300
	feed(0, true)    // the price is lost: the platform says 0, unknown
	require.Equal(t, protocol.MonitorActive, f.e.MonitorState(acct), "a made-up 0 does not trip the trailing drawdown")
	require.False(t, f.status(acct).Blind, "not blind before a new position's first quote had time to come")
	require.Empty(t, f.rep.Activity(protocol.ActivityMonitorBlind))

	f.clock.Set(wednesday10.Add(blindAfter))
	f.e.Tick(bg)
	require.Equal(t, protocol.MonitorActive, f.e.MonitorState(acct))
	st := f.status(acct)
	require.True(t, st.Blind)
	require.Equal(t, 300.0, st.SessionHigh, "the high is not lowered nor raised on an unknown P&L")
	require.Equal(t, protocol.MonitorState{Account: acct, State: protocol.MonitorActive, Blind: true, At: stamp(realNow)},
		lastReport())
	got := f.rep.Activity(protocol.ActivityMonitorBlind)
	require.Len(t, got, 1)
	require.Equal(t, protocol.ActivitySource{Kind: protocol.SourceMonitor, ID: "mon_1"}, got[0].Source)
	require.Equal(t, true, enginetest.Detail(t, got[0])["blind"])
	require.Contains(t, got[0].Summary, "blind")

	feed(-900, true) // a partial figure while blind: judged neither way
	f.e.Tick(bg)
	require.Equal(t, protocol.MonitorActive, f.e.MonitorState(acct))
	require.Len(t, f.rep.Activity(protocol.ActivityMonitorBlind), 1, "reported once")

	feed(100, false) // prices are back
	require.False(t, f.status(acct).Blind)
	require.Equal(t, protocol.MonitorState{Account: acct, State: protocol.MonitorActive, At: stamp(realNow)}, lastReport())
	got = f.rep.Activity(protocol.ActivityMonitorBlind)
	require.Len(t, got, 2)
	require.Equal(t, false, enginetest.Detail(t, got[1])["blind"])

	feed(-600, false) // a loss it sees trips it
	require.Equal(t, protocol.MonitorStopped, f.e.MonitorState(acct))
	require.Equal(t, reasonLossLimit, f.status(acct).Reason)
}

// A monitor that counts realized P&L only is never blind: an unknown
// unrealized P&L does not concern it.
func TestRealizedOnlyMonitorIsNeverBlind(t *testing.T) {
	t.Parallel()
	f := newFixture(t, wednesday10)
	m := monitor(acct)
	m.LossLimit = limit(500)
	f.push(m)
	f.e.observe(bg, &protocol.Account{Name: acct, Item: protocol.AccountItem{UnrealizedUnknown: true}})
	f.clock.Set(wednesday10.Add(2 * blindAfter))
	f.e.Tick(bg)
	require.False(t, f.status(acct).Blind)
	require.Empty(t, f.rep.Activity(protocol.ActivityMonitorBlind))
	f.e.observe(bg, &protocol.Account{Name: acct, Item: protocol.AccountItem{GrossRealizedProfitLoss: -500, UnrealizedUnknown: true}})
	require.Equal(t, protocol.MonitorStopped, f.e.MonitorState(acct))
}

// A monitor the relay still shows blind (a report from before the engine
// started) is corrected once the engine sees the account's P&L: one
// report, without an activity entry.
func TestStaleBlindCorrected(t *testing.T) {
	t.Parallel()
	f := newFixture(t, wednesday10)
	m := monitor(acct)
	m.IncludeUnrealized, m.Blind = true, true
	f.push(m)
	require.Empty(t, f.rep.Monitors())
	f.e.observe(bg, &protocol.Account{Name: acct, Item: protocol.AccountItem{UnrealizedProfitLoss: 50}})
	require.Equal(t, []protocol.MonitorState{{Account: acct, State: protocol.MonitorActive, At: stamp(realNow)}}, f.rep.Monitors())
	require.Empty(t, f.rep.Activity(protocol.ActivityMonitorBlind))
	f.e.observe(bg, &protocol.Account{Name: acct, Item: protocol.AccountItem{UnrealizedProfitLoss: 60}})
	f.e.Tick(bg)
	require.Len(t, f.rep.Monitors(), 1, "corrected once")
}

// unpriced is a platform whose accounts' unrealized P&L is unknown.
type unpriced struct{ *sim.Platform }

func (p unpriced) Account(ctx context.Context, name string) (protocol.Account, error) {
	a, err := p.Platform.Account(ctx, name)
	a.Item.UnrealizedUnknown = true
	return a, err
}

// A restart check judges no P&L the restarted monitor could not see: it
// would be blind, not stopped again.
func TestCheckRestartWhileUnrealizedUnknown(t *testing.T) {
	t.Parallel()
	f := newFixture(t, wednesday10)
	m := monitor(acct)
	m.IncludeUnrealized, m.LossLimit = true, limit(100)
	f.trade(acct, protocol.ActionBuy, 1)
	f.price(5990) // an open loss of about 500, which a platform without prices cannot see
	v, err := f.e.CheckRestart(bg, protocol.RestartCheck{Monitor: m})
	require.NoError(t, err)
	require.Equal(t, protocol.RestartVerdict{WouldRetrip: true, Reason: reasonLossLimit}, v, "seen, it would trip")

	e, err := New(Options{Platform: unpriced{f.sim}, Trader: f.ops, Config: f.holder, Store: engine.NewMemStore(),
		Reporter: &enginetest.Reporter{}, Now: f.clock.Now, Wall: wallClock})
	require.NoError(t, err)
	v, err = e.CheckRestart(bg, protocol.RestartCheck{Monitor: m})
	require.NoError(t, err)
	require.Equal(t, protocol.RestartVerdict{}, v)
	m.IncludeUnrealized = false
	v, err = e.CheckRestart(bg, protocol.RestartCheck{Monitor: m})
	require.NoError(t, err)
	require.Equal(t, protocol.RestartVerdict{}, v, "realized only: nothing lost yet")
}
