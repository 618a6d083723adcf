package monitor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/engine/enginetest"
	"tradebridge/trading/ops"
)

// autoFlattenAt flattens and stops once a day, whatever onTrip says; a
// time set after it passed takes effect the next day; an agent that was
// down at the time catches up within the session.
func TestAutoFlattenAt(t *testing.T) {
	t.Parallel()
	t.Run("daily", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, ny(2026, 3, 4, 15, 50))
		m := monitor(acct)
		m.AutoFlattenAt, m.OnTrip = "15:55", protocol.OnTripNone
		f.push(m)
		f.trade(acct, protocol.ActionBuy, 1)
		id := f.working(acct)
		f.at(ny(2026, 3, 4, 15, 54).Add(59 * time.Second))
		require.Equal(t, protocol.MonitorActive, f.e.MonitorState(acct))
		f.at(ny(2026, 3, 4, 15, 55))
		require.Equal(t, protocol.MonitorStopped, f.e.MonitorState(acct))
		require.Equal(t, reasonAutoFlattenAt, f.status(acct).Reason)
		require.Zero(t, f.position(acct, "ES"), "flattened although onTrip is none")
		require.Equal(t, protocol.OrderStateCancelled, f.orderState(acct, id))

		restarted := m
		restarted.RestartedFrom = f.status(acct).StoppedAt
		f.push(restarted)
		require.Equal(t, protocol.MonitorActive, f.e.MonitorState(acct))
		f.at(ny(2026, 3, 4, 16, 30))
		require.Equal(t, protocol.MonitorActive, f.e.MonitorState(acct), "once a day")
		f.at(ny(2026, 3, 5, 15, 55))
		require.Equal(t, protocol.MonitorStopped, f.e.MonitorState(acct), "the next day again")
		require.Len(t, f.rep.Monitors(), 3, "stopped, restarted, stopped")
	})
	t.Run("a time set after it passed", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, ny(2026, 3, 4, 16, 0))
		m := monitor(acct)
		m.AutoFlattenAt = "15:55"
		f.push(m)
		f.at(ny(2026, 3, 4, 16, 1))
		require.Equal(t, protocol.MonitorActive, f.e.MonitorState(acct))
	})
	t.Run("the agent was down at the time", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, ny(2026, 3, 4, 15, 0))
		m := monitor(acct)
		m.AutoFlattenAt = "15:55"
		f.push(m)
		f.clock.Set(ny(2026, 3, 4, 16, 10))
		f.e = f.newEngine()
		f.e.Tick(bg)
		require.Equal(t, protocol.MonitorStopped, f.e.MonitorState(acct))
		require.Equal(t, reasonAutoFlattenAt, f.status(acct).Reason)
	})
	t.Run("not from the last session", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, ny(2026, 3, 4, 15, 0))
		m := monitor(acct)
		m.AutoFlattenAt = "15:55"
		f.push(m)
		f.clock.Set(ny(2026, 3, 4, 18, 10)) // the next session started at 18:00
		f.e = f.newEngine()
		f.e.Tick(bg)
		require.Equal(t, protocol.MonitorActive, f.e.MonitorState(acct))
	})
}

// A monitor outside its master window or every enabled trading window
// trips; the gate refuses entries there even before the engine ticks.
func TestWindowTrips(t *testing.T) {
	t.Parallel()
	weekday := win("09:30", "16:00", "mon", "tue", "wed", "thu", "fri")
	for _, tc := range []struct {
		name          string
		start         time.Time
		master        protocol.Window
		trading       []protocol.MonitorWindow
		inside, after time.Time
		reason        string
	}{
		{"master window", wednesday10, weekday, nil, ny(2026, 3, 4, 15, 59), ny(2026, 3, 4, 16, 0), reasonMasterWindow},
		{"trading windows", wednesday10, weekday,
			[]protocol.MonitorWindow{tw(true, win("09:30", "11:00")), tw(false, win("11:00", "13:00")), tw(true, win("13:00", "15:00"))},
			ny(2026, 3, 4, 10, 59), ny(2026, 3, 4, 11, 0), reasonTradingWindows},
		{"trading window past midnight", ny(2026, 3, 3, 21, 0), protocol.Window{},
			[]protocol.MonitorWindow{tw(true, win("20:00", "02:00", "tue"))},
			ny(2026, 3, 4, 1, 59), ny(2026, 3, 4, 2, 0), reasonTradingWindows},
		{"master window on the spring-forward day", ny(2026, 3, 7, 18, 0), win("18:00", "09:30", "sat"), nil,
			ny(2026, 3, 8, 9, 29), ny(2026, 3, 8, 9, 30), reasonMasterWindow},
		{"trading window on the fall-back day", ny(2026, 10, 31, 23, 0), protocol.Window{},
			[]protocol.MonitorWindow{tw(true, win("23:00", "03:00", "sat"))},
			ny(2026, 11, 1, 2, 59), ny(2026, 11, 1, 3, 0), reasonTradingWindows},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, tc.start)
			m := monitor(acct)
			m.MasterWindow, m.TradingWindows = tc.master, tc.trading
			f.push(m)
			require.Equal(t, protocol.MonitorActive, f.e.MonitorState(acct))
			f.at(tc.inside)
			require.Equal(t, protocol.MonitorActive, f.e.MonitorState(acct))
			require.Equal(t, ops.Verdict{}, f.e.Check(acct, "ES 06-26", ops.SourceAPI))

			f.clock.Set(tc.after)
			v := f.e.Check(acct, "ES 06-26", ops.SourceAPI)
			require.NotNil(t, v.Entries, "entries are refused before the engine ticks")
			require.Equal(t, ops.RuleMonitorStopped, v.Entries.Rule)
			f.e.Tick(bg)
			require.Equal(t, protocol.MonitorStopped, f.e.MonitorState(acct))
			require.Equal(t, tc.reason, f.status(acct).Reason)
			require.Equal(t, tc.reason, f.rep.Monitors()[0].Reason)
		})
	}
	t.Run("configured outside its window", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, ny(2026, 3, 4, 16, 30))
		m := monitor(acct)
		m.MasterWindow = weekday
		f.push(m)
		require.Equal(t, protocol.MonitorStopped, f.e.MonitorState(acct))
		require.Equal(t, reasonMasterWindow, f.status(acct).Reason)
	})
}

// closingOnly and closingOnlyAfter refuse orders that open or add to a
// position, through the operations; reducing orders pass.
func TestClosingOnly(t *testing.T) {
	t.Parallel()
	t.Run("closingOnly", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, wednesday10)
		f.trade(acct, protocol.ActionBuy, 2)
		m := monitor(acct)
		m.ClosingOnly = true
		f.push(m)
		enginetest.RequireBlocked(t, f.place(acct, protocol.ActionBuy, 1), ops.RuleClosingOnly)
		enginetest.RequireBlocked(t, f.place(acct, protocol.ActionSell, 3), ops.RuleClosingOnly) // would go short
		require.NoError(t, f.place(acct, protocol.ActionSell, 1))
		require.Equal(t, 1, f.position(acct, "ES"))
		require.True(t, f.status(acct).ClosingOnly)
		enginetest.RequireBlocked(t, f.place(acct, protocol.ActionSell, 2), ops.RuleClosingOnly)
		require.NoError(t, f.place(acct, protocol.ActionSell, 1))
		require.Equal(t, protocol.MonitorActive, f.e.MonitorState(acct), "closing-only is no trip")
	})
	t.Run("closingOnlyAfter", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, ny(2026, 3, 4, 15, 0))
		f.trade(acct, protocol.ActionBuy, 2)
		m := monitor(acct)
		m.MasterWindow = win("09:30", "16:00")
		m.ClosingOnlyAfter = "15:30"
		f.push(m)
		f.at(ny(2026, 3, 4, 15, 29))
		require.NoError(t, f.place(acct, protocol.ActionBuy, 1))
		require.False(t, f.status(acct).ClosingOnly)
		f.at(ny(2026, 3, 4, 15, 30))
		require.True(t, f.status(acct).ClosingOnly)
		enginetest.RequireBlocked(t, f.place(acct, protocol.ActionBuy, 1), ops.RuleClosingOnly)
		require.NoError(t, f.place(acct, protocol.ActionSell, 1))
		require.Equal(t, 2, f.position(acct, "ES"))
	})
}

// blockSignals refuses every order from the API, and only those.
func TestBlockSignals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, wednesday10)
	f.trade(acct, protocol.ActionBuy, 1)
	m := monitor(acct)
	m.BlockSignals = true
	f.push(m)
	enginetest.RequireBlocked(t, f.place(acct, protocol.ActionBuy, 1), ops.RuleBlockSignals)
	enginetest.RequireBlocked(t, f.place(acct, protocol.ActionSell, 1), ops.RuleBlockSignals)
	copier := ops.WithSource(bg, ops.SourceCopier)
	_, err := f.ops.Submit(copier, enginetest.MarketOrder(acct, "ES 06-26", protocol.ActionBuy, 1))
	require.NoError(t, err, "the copier's orders pass")
	require.Equal(t, ops.Verdict{}, f.e.Check(acct, "ES 06-26", ops.SourceEngine))
	require.Equal(t, ops.Verdict{}, f.e.Check(other, "ES 06-26", ops.SourceAPI), "no monitor, no refusal")
	require.True(t, f.status(acct).BlockSignals)

	m.Active, m.State = false, protocol.MonitorPaused
	f.push(m)
	require.Equal(t, protocol.MonitorPaused, f.e.MonitorState(acct))
	require.NoError(t, f.place(acct, protocol.ActionBuy, 1), "a paused monitor refuses nothing")
}

// A paused monitor does not trip.
func TestPausedDoesNotTrip(t *testing.T) {
	t.Parallel()
	f := newFixture(t, wednesday10)
	m := monitor(acct)
	m.Active, m.State = false, protocol.MonitorPaused
	m.LossLimit = limit(100)
	m.MasterWindow = win("09:30", "09:45")
	f.push(m)
	f.trade(acct, protocol.ActionBuy, 1)
	f.price(5990)
	f.trade(acct, protocol.ActionSell, 1)
	f.at(ny(2026, 3, 4, 11, 0))
	require.Equal(t, protocol.MonitorPaused, f.e.MonitorState(acct))
	require.Empty(t, f.rep.Monitors())
	require.NoError(t, f.place(acct, protocol.ActionBuy, 1))
}

// An order from the API that bypasses the trading windows passes the
// master window, the trading windows, closingOnlyAfter and a stop for
// being outside them; every other rule still refuses it.
func TestBypassWindows(t *testing.T) {
	t.Parallel()
	bypass := protocol.WithCallOptions(bg, protocol.CallOptions{BypassWindows: true})
	placeFrom := func(f *fixture, ctx context.Context, action string) error {
		_, err := f.ops.PlaceOrder(ctx, protocol.PlaceOrderArgs{Account: acct, Action: action, Instrument: es,
			OrderType: protocol.OrderTypeMarket, Quantity: 1, TimeInForce: protocol.TimeInForceDay})
		return err
	}
	t.Run("outside the windows", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, wednesday10)
		m := monitor(acct)
		m.MasterWindow = win("09:30", "16:00")
		m.TradingWindows = []protocol.MonitorWindow{tw(true, win("09:30", "11:00"))}
		f.push(m)
		f.clock.Set(ny(2026, 3, 4, 11, 30)) // before the engine ticks
		enginetest.RequireBlocked(t, placeFrom(f, bg, protocol.ActionBuy), ops.RuleMonitorStopped)
		require.NoError(t, placeFrom(f, bypass, protocol.ActionBuy))
		f.e.Tick(bg) // now stopped for its trading windows
		require.Equal(t, protocol.MonitorStopped, f.e.MonitorState(acct))
		require.Equal(t, reasonTradingWindows, f.status(acct).Reason)
		enginetest.RequireBlocked(t, placeFrom(f, bg, protocol.ActionBuy), ops.RuleMonitorStopped)
		require.NoError(t, placeFrom(f, bypass, protocol.ActionBuy))
		require.Equal(t, ops.Verdict{}, f.e.Check(acct, "ES 06-26", ops.SourceAPIBypassWindows))
	})
	t.Run("closingOnlyAfter", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, ny(2026, 3, 4, 15, 0))
		m := monitor(acct)
		m.MasterWindow = win("09:30", "16:00")
		m.ClosingOnlyAfter = "15:30"
		f.push(m)
		f.at(ny(2026, 3, 4, 15, 45))
		enginetest.RequireBlocked(t, placeFrom(f, bg, protocol.ActionBuy), ops.RuleClosingOnly)
		require.NoError(t, placeFrom(f, bypass, protocol.ActionBuy))
	})
	t.Run("other rules still apply", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, wednesday10)
		m := monitor(acct)
		m.BlockSignals, m.ClosingOnly = true, true
		f.push(m)
		enginetest.RequireBlocked(t, placeFrom(f, bypass, protocol.ActionBuy), ops.RuleBlockSignals)
		m.BlockSignals = false
		f.push(m)
		enginetest.RequireBlocked(t, placeFrom(f, bypass, protocol.ActionBuy), ops.RuleClosingOnly)
		m.ClosingOnly, m.LossLimit = false, limit(100)
		f.push(m)
		f.trade(acct, protocol.ActionBuy, 1)
		require.NoError(t, f.sim.SetPrice(es, 5990)) // a 500 loss
		f.trade(acct, protocol.ActionSell, 1)
		f.pump()
		require.Equal(t, protocol.MonitorStopped, f.e.MonitorState(acct))
		enginetest.RequireBlocked(t, placeFrom(f, bypass, protocol.ActionBuy), ops.RuleMonitorStopped)
	})
}
