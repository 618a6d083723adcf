package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
	"tradebridge/trading/engine/enginetest"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/ops"
)

// relayTime is t as the relay stores and sends it back (JSON).
func relayTime(t *testing.T, at time.Time) *time.Time {
	t.Helper()
	raw, err := json.Marshal(at)
	require.NoError(t, err)
	var out time.Time
	require.NoError(t, json.Unmarshal(raw, &out))
	return &out
}

// trip stops acct's monitor on its loss limit and returns its stop time.
func (f *fixture) trip(m protocol.Monitor) time.Time {
	f.t.Helper()
	m.LossLimit = limit(100)
	f.push(m)
	f.trade(acct, protocol.ActionBuy, 1)
	f.price(5990)
	f.trade(acct, protocol.ActionSell, 1)
	require.Equal(f.t, protocol.MonitorStopped, f.e.MonitorState(acct))
	return *f.status(acct).StoppedAt
}

// A stopped monitor resumes only when a configuration restarts that very
// stop; it stays stopped across configurations pushed before the relay
// learned of it, and across an agent restart.
func TestRestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t, wednesday10)
	m := monitor(acct)
	m.LossLimit = limit(100)
	stoppedAt := f.trip(m)

	f.clock.Advance(time.Minute)
	stale := m // pushed before the relay learned of the stop: "active"
	f.push(stale)
	require.Equal(t, protocol.MonitorStopped, f.e.MonitorState(acct), "a stale active configuration does not resume")
	older := m
	older.RestartedFrom = relayTime(t, stoppedAt.Add(-time.Hour)) // restarted from an earlier stop
	f.push(older)
	require.Equal(t, protocol.MonitorStopped, f.e.MonitorState(acct))
	known := m
	known.State, known.StoppedReason, known.StoppedAt = protocol.MonitorStopped, reasonLossLimit, relayTime(t, stoppedAt)
	f.push(known)
	require.Equal(t, protocol.MonitorStopped, f.e.MonitorState(acct))

	// An agent restart: a new engine over the same store.
	f.e = f.newEngine()
	require.Equal(t, protocol.MonitorStopped, f.e.MonitorState(acct), "stopped before the configuration")
	enginetest.RequireBlocked(t, f.place(acct, protocol.ActionBuy, 1), ops.RuleMonitorStopped)
	f.e.Tick(bg)
	require.Equal(t, protocol.MonitorStopped, f.e.MonitorState(acct))
	require.True(t, f.status(acct).StoppedAt.Equal(stoppedAt))
	require.Len(t, f.rep.Monitors(), 1)

	restarted := m
	restarted.LossLimit = limit(1000)
	restarted.RestartedFrom = relayTime(t, stoppedAt)
	f.push(restarted)
	require.Equal(t, protocol.MonitorActive, f.e.MonitorState(acct))
	reports := f.rep.Monitors()
	require.Len(t, reports, 2)
	require.Equal(t, protocol.MonitorActive, reports[1].State)
	require.Equal(t, acct+"="+protocol.MonitorActive, f.states.Log()[len(f.states.Log())-1])
	require.NoError(t, f.place(acct, protocol.ActionBuy, 1))

	// A configuration that still says stopped at the stop the monitor
	// resumed from does not stop it again.
	late := restarted
	late.State, late.StoppedAt = protocol.MonitorStopped, relayTime(t, stoppedAt)
	f.push(late)
	require.Equal(t, protocol.MonitorActive, f.e.MonitorState(acct))

	// A stop the engine does not know of is adopted, without acting.
	other := restarted
	otherAt := stoppedAt.Add(time.Hour)
	other.State, other.StoppedReason, other.StoppedAt = protocol.MonitorStopped, reasonProfitTarget, relayTime(t, otherAt)
	f.push(other)
	require.Equal(t, protocol.MonitorStopped, f.e.MonitorState(acct))
	require.Equal(t, reasonProfitTarget, f.status(acct).Reason)
	require.Equal(t, 1, f.position(acct, "ES"), "an adopted stop does not flatten")
	enginetest.RequireBlocked(t, f.place(acct, protocol.ActionBuy, 1), ops.RuleMonitorStopped)
	require.Len(t, f.rep.Monitors(), 2, "an adopted stop is not reported back")

	// A monitor removed from the configuration refuses nothing.
	f.push()
	require.Equal(t, "", f.e.MonitorState(acct))
	require.Empty(t, f.e.Status())
	require.Equal(t, acct+"=", f.states.Log()[len(f.states.Log())-1])
	require.NoError(t, f.place(acct, protocol.ActionBuy, 1))
}

// The session reset at 6 PM New York time restarts the session high, but
// a stopped monitor stays stopped.
func TestSessionReset(t *testing.T) {
	t.Parallel()
	for _, tickFirst := range []bool{true, false} {
		t.Run(map[bool]string{true: "engine first", false: "platform first"}[tickFirst], func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, ny(2026, 3, 4, 16, 0))
			m := monitor(acct)
			m.TrailingDrawdown = limit(800)
			stopped := monitor(other)
			stopped.LossLimit = limit(100)
			f.push(m, stopped)
			f.trade(other, protocol.ActionBuy, 1)
			f.price(5990)
			f.trade(other, protocol.ActionSell, 1)
			require.Equal(t, protocol.MonitorStopped, f.e.MonitorState(other))

			f.trade(acct, protocol.ActionBuy, 1)
			f.price(6010)
			f.trade(acct, protocol.ActionSell, 1)
			require.Equal(t, 987.5, f.status(acct).SessionHigh)
			require.Equal(t, ny(2026, 3, 3, 18, 0), f.status(acct).Session)

			reset := ny(2026, 3, 4, 18, 0).Add(time.Second)
			f.clock.Set(reset)
			if tickFirst {
				f.e.Tick(bg)
			}
			require.NoError(t, f.sim.Step(bg)) // the simulator's session restarts
			f.pump()
			f.e.Tick(bg)
			st := f.status(acct)
			require.Equal(t, protocol.MonitorActive, st.State, "the platform's reset is no drawdown")
			require.Zero(t, st.SessionPnl)
			require.Zero(t, st.SessionHigh)
			require.True(t, st.Session.Equal(ny(2026, 3, 4, 18, 0)))
			require.Equal(t, protocol.MonitorStopped, f.e.MonitorState(other), "a stop outlives the session")

			f.e = f.newEngine() // and the high is saved
			f.e.Tick(bg)
			require.Zero(t, f.status(acct).SessionHigh)
		})
	}
}

// The session high is saved, so an agent restart in the session keeps it.
func TestHighSurvivesRestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t, wednesday10)
	m := monitor(acct)
	m.TrailingDrawdown = limit(600)
	f.push(m)
	f.trade(acct, protocol.ActionBuy, 1)
	f.price(6020)
	f.trade(acct, protocol.ActionSell, 1) // +987.50
	f.e.Tick(bg)                          // saves the high

	f.e = f.newEngine()
	f.e.Tick(bg)
	f.trade(acct, protocol.ActionBuy, 1)
	f.price(6008)
	f.trade(acct, protocol.ActionSell, 1) // -612.50
	require.Equal(t, protocol.MonitorStopped, f.e.MonitorState(acct))
	require.Equal(t, reasonTrailingDrawdown, f.status(acct).Reason)
}

// The minimum-profit drawdown follows the session high: armed in one
// session, it is waiting again in the next (the high restarts from the
// new P&L), and a loss there trips it only once a new high reached the
// trigger. An agent restart within a session keeps it armed.
func TestProfitFloorSessions(t *testing.T) {
	t.Parallel()
	for _, tickFirst := range []bool{true, false} {
		t.Run(map[bool]string{true: "engine first", false: "platform first"}[tickFirst], func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, ny(2026, 3, 4, 16, 0))
			m := monitor(acct)
			m.MinimumProfitDrawdown = floor(900, 0)
			f.push(m)
			f.trade(acct, protocol.ActionBuy, 1)
			f.price(6020)
			f.trade(acct, protocol.ActionSell, 1) // +987.50: armed
			require.Equal(t, 987.5, f.status(acct).SessionHigh)

			f.clock.Set(ny(2026, 3, 4, 18, 0).Add(time.Second))
			if tickFirst {
				f.e.Tick(bg)
			}
			require.NoError(t, f.sim.Step(bg)) // the simulator's session restarts
			f.pump()
			f.e.Tick(bg)
			require.Zero(t, f.status(acct).SessionHigh)

			f.price(6020) // the new session's market
			f.trade(acct, protocol.ActionBuy, 1)
			f.price(6010)
			f.trade(acct, protocol.ActionSell, 1) // -512.50 from a flat start
			require.Equal(t, protocol.MonitorActive, f.e.MonitorState(acct), "waiting again in the new session")

			f.trade(acct, protocol.ActionBuy, 1)
			f.price(6040)
			f.trade(acct, protocol.ActionSell, 1) // +1487.50: P&L 975, armed again
			require.Equal(t, protocol.MonitorActive, f.e.MonitorState(acct))
			f.e.Tick(bg) // saves the high

			f.e = f.newEngine() // an agent restart in the session
			f.e.Tick(bg)
			require.Equal(t, 975.0, f.status(acct).SessionHigh)
			f.trade(acct, protocol.ActionBuy, 1)
			f.price(6020)
			f.trade(acct, protocol.ActionSell, 1) // -1012.50: P&L -37.50
			st := f.status(acct)
			require.Equal(t, protocol.MonitorStopped, st.State, "armed before the agent restart, armed after it")
			require.Equal(t, reasonMinimumProfitDrawdown, st.Reason)
		})
	}
}

// CheckRestart judges the limits the restart would run with against the
// session P&L and its high, and the windows.
func TestCheckRestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t, wednesday10)
	m := monitor(acct)
	m.TrailingDrawdown = limit(600)
	f.push(m)
	f.trade(acct, protocol.ActionBuy, 1)
	f.price(6020)
	f.trade(acct, protocol.ActionSell, 1) // +987.50, commission 1.24
	f.trade(acct, protocol.ActionBuy, 1)
	f.price(6008)
	f.trade(acct, protocol.ActionSell, 1) // -612.50: P&L 375, commission 2.48
	require.Equal(t, protocol.MonitorStopped, f.e.MonitorState(acct))
	stoppedAt := f.status(acct).StoppedAt

	for _, tc := range []struct {
		name   string
		edit   func(*protocol.Monitor)
		reason string
	}{
		{"the same trailing drawdown", func(*protocol.Monitor) {}, reasonTrailingDrawdown},
		{"a trailing drawdown at the drop", func(m *protocol.Monitor) { m.TrailingDrawdown = limit(612.5) }, reasonTrailingDrawdown},
		{"a trailing drawdown beyond the drop", func(m *protocol.Monitor) { m.TrailingDrawdown = limit(612.51) }, ""},
		{"trailing drawdown off", func(m *protocol.Monitor) { m.TrailingDrawdown.Enabled = false }, ""},
		{"with commission the drop is larger", func(m *protocol.Monitor) {
			m.TrailingDrawdown, m.IncludeCommission = limit(613.5), true
		}, reasonTrailingDrawdown},
		{"with commission, beyond it", func(m *protocol.Monitor) {
			m.TrailingDrawdown, m.IncludeCommission = limit(613.75), true
		}, ""},
		{"profit target reached", func(m *protocol.Monitor) { m.TrailingDrawdown, m.ProfitTarget = limit(700), limit(375) }, reasonProfitTarget},
		{"profit target beyond", func(m *protocol.Monitor) { m.TrailingDrawdown, m.ProfitTarget = limit(700), limit(375.01) }, ""},
		{"a loss limit is not reached by a profit", func(m *protocol.Monitor) { m.TrailingDrawdown, m.LossLimit = limit(700), limit(1) }, ""},
		{"the loss limit is judged first", func(m *protocol.Monitor) { m.LossLimit, m.ProfitTarget = limit(-1000), limit(1) }, reasonLossLimit},
		{"outside the master window", func(m *protocol.Monitor) {
			m.TrailingDrawdown, m.MasterWindow = limit(700), win("11:00", "16:00")
		}, reasonMasterWindow},
		{"outside the trading windows", func(m *protocol.Monitor) {
			m.TrailingDrawdown, m.TradingWindows = limit(700), []protocol.MonitorWindow{tw(true, win("11:00", "16:00"))}
		}, reasonTradingWindows},
		{"inside them", func(m *protocol.Monitor) {
			m.TrailingDrawdown, m.MasterWindow = limit(700), win("09:00", "16:00")
			m.TradingWindows = []protocol.MonitorWindow{tw(true, win("09:30", "16:00"))}
		}, ""},
		{"autoFlattenAt never refuses", func(m *protocol.Monitor) { m.TrailingDrawdown, m.AutoFlattenAt = limit(700), "09:00" }, ""},

		// The minimum-profit drawdown: the high (987.50) stays, so an
		// armed floor stays armed across the restart.
		{"a profit floor armed, at the P&L", func(m *protocol.Monitor) {
			m.TrailingDrawdown, m.MinimumProfitDrawdown = limit(700), floor(900, 375)
		}, reasonMinimumProfitDrawdown},
		{"a profit floor armed, below the P&L", func(m *protocol.Monitor) {
			m.TrailingDrawdown, m.MinimumProfitDrawdown = limit(700), floor(900, 374.99)
		}, ""},
		{"a profit floor whose trigger the high did not reach", func(m *protocol.Monitor) {
			m.TrailingDrawdown, m.MinimumProfitDrawdown = limit(700), floor(987.51, 375)
		}, ""},
		{"a profit floor turned off", func(m *protocol.Monitor) {
			m.TrailingDrawdown, m.MinimumProfitDrawdown = limit(700), floor(900, 375)
			m.MinimumProfitDrawdown.Enabled = false
		}, ""},
		{"with commission the high is below the trigger", func(m *protocol.Monitor) {
			m.TrailingDrawdown, m.MinimumProfitDrawdown, m.IncludeCommission = limit(700), floor(987.5, 375), true
		}, ""},
		{"with commission, armed at the P&L", func(m *protocol.Monitor) {
			m.TrailingDrawdown, m.MinimumProfitDrawdown, m.IncludeCommission = limit(700), floor(986.26, 372.52), true
		}, reasonMinimumProfitDrawdown},
		{"with commission, the P&L above the floor", func(m *protocol.Monitor) {
			m.TrailingDrawdown, m.MinimumProfitDrawdown, m.IncludeCommission = limit(700), floor(986.26, 372.51), true
		}, ""},
		{"the trailing drawdown is judged before the profit floor", func(m *protocol.Monitor) {
			m.MinimumProfitDrawdown = floor(900, 375)
		}, reasonTrailingDrawdown},
		{"the profit floor is judged before the profit target", func(m *protocol.Monitor) {
			m.TrailingDrawdown, m.MinimumProfitDrawdown, m.ProfitTarget = limit(700), floor(900, 375), limit(375)
		}, reasonMinimumProfitDrawdown},
	} {
		next := m
		tc.edit(&next)
		next.RestartedFrom = stoppedAt
		got, err := f.e.CheckRestart(bg, protocol.RestartCheck{Monitor: next})
		require.NoError(t, err, tc.name)
		require.Equal(t, protocol.RestartVerdict{WouldRetrip: tc.reason != "", Reason: tc.reason}, got, tc.name)
	}
	require.Equal(t, protocol.MonitorStopped, f.e.MonitorState(acct), "the check changes nothing")

	for _, tc := range []struct{ account, code string }{
		{"", protocol.CodeMissingFields},
		{"NoSuchAccount", protocol.CodeAccountNotFound},
	} {
		_, err := f.e.CheckRestart(bg, protocol.RestartCheck{Monitor: protocol.Monitor{Account: tc.account}})
		var pe *protocol.Error
		require.True(t, errors.As(err, &pe), tc.account)
		require.Equal(t, tc.code, pe.Code, tc.account)
	}
}

// Run follows the platform's events and the configuration by itself: it
// seeds the P&L when it starts, trips on events, and resumes on a
// restart it is pushed.
func TestRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, wednesday10)
	m := monitor(acct)
	m.LossLimit = limit(100)
	f.configs.Push(t, protocol.Config{Monitors: []protocol.Monitor{m}})
	_, err := f.sim.SubmitOrder(bg, enginetest.MarketOrder(acct, "ES", protocol.ActionBuy, 1))
	require.NoError(t, err)
	f.move(5990)
	_, err = f.sim.SubmitOrder(bg, enginetest.MarketOrder(acct, "ES", protocol.ActionSell, 1))
	require.NoError(t, err) // a loss before the engine runs

	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() { done <- f.e.Run(ctx) }()
	require.Eventually(t, func() bool { return f.e.MonitorState(acct) == protocol.MonitorStopped }, enginetest.Wait, tick,
		"the start's read of the accounts trips")
	stoppedAt := f.status(acct).StoppedAt

	restarted := m
	restarted.LossLimit = limit(1000)
	restarted.RestartedFrom = relayTime(t, *stoppedAt)
	f.configs.Push(t, protocol.Config{Monitors: []protocol.Monitor{restarted}})
	require.Eventually(t, func() bool { return f.e.MonitorState(acct) == protocol.MonitorActive }, enginetest.Wait, tick)

	for range 2 {
		_, err = f.sim.SubmitOrder(bg, enginetest.MarketOrder(acct, "ES", protocol.ActionBuy, 1))
		require.NoError(t, err)
		f.move(5990 - 100)
		_, err = f.sim.SubmitOrder(bg, enginetest.MarketOrder(acct, "ES", protocol.ActionSell, 1))
		require.NoError(t, err)
		f.move(5990)
	}
	require.Eventually(t, func() bool { return f.e.MonitorState(acct) == protocol.MonitorStopped }, enginetest.Wait, tick,
		"an account event trips")
	cancel()
	require.NoError(t, <-done)
}

// A restart check reads the account afresh while the engine may not have
// taken the platform's latest events yet: the read must not move the
// engine's state, or those events, older than the read, would look like a
// fall from a fresher high and trip the running monitor.
func TestCheckRestartLeavesTheEngineState(t *testing.T) {
	t.Parallel()
	f := newFixture(t, wednesday10)
	m := monitor(acct)
	m.IncludeUnrealized, m.MinimumProfitDrawdown = true, floor(1000, 500)
	f.push(m)
	f.trade(acct, protocol.ActionBuy, 1)
	f.move(6005) // about +250; the engine has not taken these events yet
	f.move(6030) // about +1500
	v, err := f.e.CheckRestart(bg, protocol.RestartCheck{Monitor: m})
	require.NoError(t, err)
	require.Equal(t, protocol.RestartVerdict{}, v)

	f.pump() // the events in their order: +250, then +1500
	require.Equal(t, protocol.MonitorActive, f.e.MonitorState(acct), "the floor armed only at +1500, after the +250")
	require.Equal(t, 1, f.position(acct, "ES"))
	f.price(6009) // about +450: below the floor, armed
	require.Equal(t, protocol.MonitorStopped, f.e.MonitorState(acct))
}
