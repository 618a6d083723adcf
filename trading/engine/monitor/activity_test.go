package monitor

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/engine/enginetest"
)

var reportID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// A trip is reported to the activity log once, after its flatten, with the
// limit, the P&L at the trip, the threshold and the flatten's orders.
func TestTripActivity(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		mon       func(*protocol.Monitor)
		moves     []float64
		limit     string
		pnl       float64
		threshold any
	}{
		{"loss limit", func(m *protocol.Monitor) { m.LossLimit = limit(500) }, []float64{5990}, reasonLossLimit, -512.5, -500.0},
		{"profit target", func(m *protocol.Monitor) { m.ProfitTarget = limit(487.5) }, []float64{6010}, reasonProfitTarget, 487.5, 487.5},
		{"trailing drawdown", func(m *protocol.Monitor) { m.TrailingDrawdown = limit(600) }, []float64{6020, 6008},
			reasonTrailingDrawdown, 375.0, 387.5},
		{"minimum-profit drawdown", func(m *protocol.Monitor) { m.MinimumProfitDrawdown = floor(900, 380) }, []float64{6020, 6008},
			reasonMinimumProfitDrawdown, 375.0, 380.0},
	} {
		for _, onTrip := range []string{protocol.OnTripFlatten, protocol.OnTripNone} {
			t.Run(tc.name+"/"+onTrip, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, wednesday10)
				m := monitor(acct)
				m.ID, m.OnTrip = "mon_1", onTrip
				tc.mon(&m)
				f.push(m)
				f.tradeIn(acct, "NQ", protocol.ActionBuy, 1)
				id := f.working(acct)
				for _, px := range tc.moves {
					f.trade(acct, protocol.ActionBuy, 1)
					f.price(px)
					f.trade(acct, protocol.ActionSell, 1)
				}
				require.Equal(t, protocol.MonitorStopped, f.e.MonitorState(acct))

				got := f.rep.Activity("")
				require.Len(t, got, 1)
				a := got[0]
				require.Regexp(t, reportID, a.ID)
				require.Equal(t, protocol.ActivityMonitorTripped, a.Kind)
				require.True(t, a.At.Equal(realNow), "at the stop's time, stoppedAt's (wall clock)")
				require.Equal(t, acct, a.Account)
				require.Equal(t, protocol.ActivitySource{Kind: protocol.SourceMonitor, ID: "mon_1"}, a.Source)
				require.Contains(t, a.Summary, tc.limit)
				d := enginetest.Detail(t, a)
				require.Equal(t, tc.limit, d["limit"])
				require.Equal(t, tc.pnl, d["pnl"])
				require.Equal(t, tc.threshold, d["threshold"])
				require.Equal(t, onTrip, d["onTrip"])
				fl := d["flatten"].(map[string]any)
				require.NotContains(t, fl, "error")
				require.Contains(t, fl["cancelledOrderIds"], id, "the working order cancelled")
				if onTrip == protocol.OnTripFlatten {
					require.Len(t, fl["orderIds"], 1, "the NQ position closed")
				} else {
					require.Empty(t, fl["orderIds"])
				}

				f.trade(acct, protocol.ActionBuy, 1)
				f.price(5900)
				f.trade(acct, protocol.ActionSell, 1)
				require.Len(t, f.rep.Activity(""), 1, "a stopped monitor does not trip again")
			})
		}
	}
	t.Run("limit of time", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, wednesday10)
		m := monitor(acct)
		m.MasterWindow = win("09:30", "16:00", "wed")
		f.push(m)
		f.at(ny(2026, 3, 4, 16, 0))
		got := f.rep.Activity(protocol.ActivityMonitorTripped)
		require.Len(t, got, 1)
		d := enginetest.Detail(t, got[0])
		require.Equal(t, reasonMasterWindow, d["limit"])
		require.NotContains(t, d, "threshold", "a limit of time has no P&L threshold")
		require.Equal(t, protocol.ActivitySource{Kind: protocol.SourceMonitor, ID: acct}, got[0].Source,
			"a monitor without an id is named by its account")
	})
}
