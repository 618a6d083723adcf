package monitor

import (
	"testing"
	"time"
	"tradebridge/trading/engine/enginetest"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/ops"
)

func TestNewValidates(t *testing.T) {
	t.Parallel()
	f := newFixture(t, wednesday10)
	full := Options{Platform: f.sim, Trader: f.ops, Config: f.holder, Store: f.store, Reporter: f.rep}
	for _, tc := range []struct {
		name string
		edit func(*Options)
	}{
		{"platform", func(o *Options) { o.Platform = nil }},
		{"trader", func(o *Options) { o.Trader = nil }},
		{"config", func(o *Options) { o.Config = nil }},
		{"store", func(o *Options) { o.Store = nil }},
		{"reporter", func(o *Options) { o.Reporter = nil }},
		{"tick interval", func(o *Options) { o.TickInterval = -time.Second }},
	} {
		o := full
		tc.edit(&o)
		_, err := New(o)
		require.Error(t, err, tc.name)
	}
	_, err := New(full)
	require.NoError(t, err)
}

// The P&L limits trip on the account event that reaches them: the
// monitor cancels the working orders, flattens (onTrip flatten) or only
// cancels (onTrip none), stops, reports, and refuses entries.
func TestPnlTrips(t *testing.T) {
	t.Parallel()
	// A round turn of one ES contract buys at the ask (a tick above the
	// last price) and sells at the bid: from 6000 to 5990 it loses 512.50,
	// to 6010 it makes 487.50; 6000 → 6020 then 6020 → 6008 makes 987.50
	// then loses 612.50.
	for _, tc := range []struct {
		name   string
		mon    func(*protocol.Monitor)
		moves  []float64 // prices of round turns of one ES contract
		reason string
	}{
		{"loss limit", func(m *protocol.Monitor) { m.LossLimit = limit(500) }, []float64{5990}, reasonLossLimit},
		{"loss limit not reached", func(m *protocol.Monitor) { m.LossLimit = limit(520) }, []float64{5990}, ""},
		{"profit target", func(m *protocol.Monitor) { m.ProfitTarget = limit(487.5) }, []float64{6010}, reasonProfitTarget},
		{"profit target not reached", func(m *protocol.Monitor) { m.ProfitTarget = limit(487.51) }, []float64{6010}, ""},
		{"trailing drawdown from the session high", func(m *protocol.Monitor) { m.TrailingDrawdown = limit(600) },
			[]float64{6020, 6008}, reasonTrailingDrawdown},
		{"trailing drawdown within the amount", func(m *protocol.Monitor) { m.TrailingDrawdown = limit(650) },
			[]float64{6020, 6008}, ""},
		{"trailing drawdown from a flat start", func(m *protocol.Monitor) { m.TrailingDrawdown = limit(500) },
			[]float64{5990}, reasonTrailingDrawdown},
		{"commission counts when included", func(m *protocol.Monitor) {
			m.ProfitTarget = limit(487.5)
			m.IncludeCommission = true
		}, []float64{6010}, ""},

		// The minimum-profit drawdown: +987.50 (the high), then 375.
		{"profit floor armed, trips at the floor", func(m *protocol.Monitor) { m.MinimumProfitDrawdown = floor(900, 375) },
			[]float64{6020, 6008}, reasonMinimumProfitDrawdown},
		{"profit floor armed, above the floor", func(m *protocol.Monitor) { m.MinimumProfitDrawdown = floor(900, 374.99) },
			[]float64{6020, 6008}, ""},
		{"profit floor armed by a high exactly at the trigger", func(m *protocol.Monitor) {
			m.MinimumProfitDrawdown = floor(987.5, 375)
		}, []float64{6020, 6008}, reasonMinimumProfitDrawdown},
		{"profit floor waiting: the high stayed below the trigger", func(m *protocol.Monitor) {
			m.MinimumProfitDrawdown = floor(987.51, 375)
		}, []float64{6020, 6008}, ""},
		{"profit floor waiting: a loss before the trigger is no trip", func(m *protocol.Monitor) {
			m.MinimumProfitDrawdown = floor(500, 0)
		}, []float64{5990}, ""},
		{"profit floor at break even, crossed in one move", func(m *protocol.Monitor) {
			m.MinimumProfitDrawdown = floor(900, 0)
		}, []float64{6020, 6000}, reasonMinimumProfitDrawdown},
		{"profit floor disabled", func(m *protocol.Monitor) {
			m.MinimumProfitDrawdown = floor(900, 375)
			m.MinimumProfitDrawdown.Enabled = false
		}, []float64{6020, 6008}, ""},
		{"profit floor: commission keeps the high below the trigger", func(m *protocol.Monitor) {
			m.MinimumProfitDrawdown = floor(987.5, 375)
			m.IncludeCommission = true
		}, []float64{6020, 6008}, ""},
		{"profit floor: commission counted, armed", func(m *protocol.Monitor) {
			m.MinimumProfitDrawdown = floor(980, 375)
			m.IncludeCommission = true
		}, []float64{6020, 6008}, reasonMinimumProfitDrawdown},
		{"profit floor after the trailing drawdown", func(m *protocol.Monitor) {
			m.MinimumProfitDrawdown = floor(900, 375)
			m.TrailingDrawdown = limit(600)
		}, []float64{6020, 6008}, reasonTrailingDrawdown},
		{"profit floor before the trailing drawdown it beats", func(m *protocol.Monitor) {
			m.MinimumProfitDrawdown = floor(900, 375)
			m.TrailingDrawdown = limit(650)
		}, []float64{6020, 6008}, reasonMinimumProfitDrawdown},
	} {
		for _, onTrip := range []string{protocol.OnTripFlatten, protocol.OnTripNone} {
			t.Run(tc.name+"/"+onTrip, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, wednesday10)
				m := monitor(acct)
				m.OnTrip = onTrip
				tc.mon(&m)
				f.push(m, monitor(other))
				require.Equal(t, protocol.MonitorActive, f.e.MonitorState(acct))
				require.Equal(t, []string{acct + "=active", other + "=active"}, sorted(f.states.Log()))

				f.tradeIn(acct, "NQ", protocol.ActionBuy, 1) // open while the limit is reached
				id := f.working(acct)
				for _, px := range tc.moves {
					f.trade(acct, protocol.ActionBuy, 1)
					f.price(px)
					f.trade(acct, protocol.ActionSell, 1)
				}
				if tc.reason == "" {
					require.Equal(t, protocol.MonitorActive, f.e.MonitorState(acct))
					require.Empty(t, f.rep.Monitors())
					require.NoError(t, f.place(acct, protocol.ActionBuy, 1))
					return
				}
				require.Equal(t, protocol.MonitorStopped, f.e.MonitorState(acct))
				st := f.status(acct)
				require.Equal(t, tc.reason, st.Reason)
				require.NotNil(t, st.StoppedAt)
				require.True(t, st.StoppedAt.Equal(realNow), "the stop is the trip's wall-clock time, not the market's (%s)", st.StoppedAt)
				require.Equal(t, []protocol.MonitorState{{Account: acct, State: protocol.MonitorStopped, Reason: tc.reason,
					At: *st.StoppedAt}}, f.rep.Monitors())
				require.Contains(t, f.states.Log(), acct+"="+protocol.MonitorStopped)

				require.Equal(t, protocol.OrderStateCancelled, f.orderState(acct, id), "working orders are cancelled")
				if onTrip == protocol.OnTripFlatten {
					require.Zero(t, f.position(acct, "NQ"), "the account is flattened")
				} else {
					require.Equal(t, 1, f.position(acct, "NQ"), "onTrip none keeps the position")
					require.NoError(t, f.placeIn(acct, "NQ", protocol.ActionSell, 1), "reducing orders pass")
				}
				enginetest.RequireBlocked(t, f.place(acct, protocol.ActionBuy, 1), ops.RuleMonitorStopped)
				require.Equal(t, protocol.MonitorActive, f.e.MonitorState(other))
				require.NoError(t, f.place(other, protocol.ActionBuy, 1), "other accounts trade on")

				f.trade(acct, protocol.ActionBuy, 1)
				f.price(5900)
				f.trade(acct, protocol.ActionSell, 1)
				require.Len(t, f.rep.Monitors(), 1, "a stopped monitor does not trip again")
			})
		}
	}
}

// With includeUnrealized, the open positions' P&L counts, high and low.
func TestUnrealizedTrailingDrawdown(t *testing.T) {
	t.Parallel()
	f := newFixture(t, wednesday10)
	m := monitor(acct)
	m.IncludeUnrealized = true
	m.TrailingDrawdown = limit(1000)
	f.push(m)
	f.trade(acct, protocol.ActionBuy, 2)
	f.price(6020) // about +2000 open
	high := f.status(acct).SessionHigh
	require.InDelta(t, 1950, high, 60)
	f.price(6012) // about 800 below the high
	require.Equal(t, protocol.MonitorActive, f.e.MonitorState(acct))
	f.price(6009) // about 1100 below it
	require.Equal(t, protocol.MonitorStopped, f.e.MonitorState(acct))
	require.Equal(t, reasonTrailingDrawdown, f.status(acct).Reason)
	require.Equal(t, high, f.status(acct).SessionHigh)
	require.Zero(t, f.position(acct, "ES"))
}

// The minimum-profit drawdown counts the P&L the monitor's way: with
// includeUnrealized an open position's gain arms it and its fall trips it,
// without flattening first; counting realized P&L only, the same moves
// neither arm nor trip it.
func TestUnrealizedMinimumProfitDrawdown(t *testing.T) {
	t.Parallel()
	for _, unrealized := range []bool{true, false} {
		t.Run(map[bool]string{true: "unrealized counted", false: "realized only"}[unrealized], func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, wednesday10)
			m := monitor(acct)
			m.IncludeUnrealized = unrealized
			m.MinimumProfitDrawdown = floor(1500, 500)
			f.push(m)
			f.trade(acct, protocol.ActionBuy, 2)
			f.price(6020) // about +1950 open: armed when counted
			f.price(6010) // about +950, above the floor
			require.Equal(t, protocol.MonitorActive, f.e.MonitorState(acct))
			f.price(6005) // about +450, below it
			if !unrealized {
				require.Equal(t, protocol.MonitorActive, f.e.MonitorState(acct))
				require.Zero(t, f.status(acct).SessionHigh, "nothing realized: never armed")
				require.Equal(t, 2, f.position(acct, "ES"))
				return
			}
			st := f.status(acct)
			require.Equal(t, protocol.MonitorStopped, st.State)
			require.Equal(t, reasonMinimumProfitDrawdown, st.Reason)
			require.GreaterOrEqual(t, st.SessionHigh, 1500.0)
			require.Zero(t, f.position(acct, "ES"), "flattened")
		})
	}
}

// verdict judges the P&L limits in the order loss limit, trailing
// drawdown, minimum-profit drawdown, profit target: when several are
// reached at once the first names the trip.
func TestVerdictOrder(t *testing.T) {
	t.Parallel()
	all := func() protocol.Monitor {
		m := monitor(acct)
		m.LossLimit, m.TrailingDrawdown, m.ProfitTarget = limit(500), limit(600), limit(300)
		m.MinimumProfitDrawdown = floor(900, 400)
		return m
	}
	for _, tc := range []struct {
		name      string
		edit      func(*protocol.Monitor)
		pnl, high float64
		want      string
	}{
		{"loss limit first", func(*protocol.Monitor) {}, -500, 1000, reasonLossLimit},
		{"trailing drawdown before the profit floor", func(*protocol.Monitor) {}, 400, 1000, reasonTrailingDrawdown},
		{"profit floor before the profit target", func(m *protocol.Monitor) { m.TrailingDrawdown.Enabled = false },
			400, 1000, reasonMinimumProfitDrawdown},
		{"profit floor below it", func(m *protocol.Monitor) { m.TrailingDrawdown.Enabled = false },
			-499.99, 1000, reasonMinimumProfitDrawdown},
		{"profit target when the floor is not armed", func(m *protocol.Monitor) { m.TrailingDrawdown.Enabled = false },
			400, 899.99, reasonProfitTarget},
		{"profit target above the floor", func(m *protocol.Monitor) { m.TrailingDrawdown.Enabled = false },
			400.01, 1000, reasonProfitTarget},
		{"nothing reached", func(m *protocol.Monitor) {
			m.TrailingDrawdown.Enabled, m.ProfitTarget.Enabled = false, false
		}, 400.01, 1000, ""},
		{"a disabled profit floor is not judged", func(m *protocol.Monitor) {
			m.TrailingDrawdown.Enabled, m.ProfitTarget.Enabled, m.MinimumProfitDrawdown.Enabled = false, false, false
		}, 0, 1000, ""},
	} {
		m := all()
		tc.edit(&m)
		require.Equal(t, tc.want, verdict(&m, tc.pnl, tc.high), tc.name)
		if tc.want == reasonMinimumProfitDrawdown {
			require.Equal(t, m.MinimumProfitDrawdown.Floor, *threshold(&m, tc.want, tc.high), "the threshold is the floor")
		}
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
