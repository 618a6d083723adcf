package monitor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
)

func win(start, end string, days ...string) protocol.Window {
	return protocol.Window{Days: days, Start: start, End: end}
}

func tw(enabled bool, w protocol.Window) protocol.MonitorWindow {
	return protocol.MonitorWindow{Enabled: enabled, Window: w}
}

// Windows are in New York time, run past midnight when they end before
// they start (the day being the day they start), and follow daylight
// saving time: 2026-03-08 and 2026-11-01 are the Sundays it starts and
// ends.
func TestOutside(t *testing.T) {
	t.Parallel()
	weekday := win("09:30", "16:00", "mon", "tue", "wed", "thu", "fri")
	for _, tc := range []struct {
		name    string
		master  protocol.Window
		trading []protocol.MonitorWindow
		at      time.Time
		want    string
	}{
		{"no window", protocol.Window{Days: []string{}}, nil, wednesday10, ""},
		{"inside the master window", weekday, nil, wednesday10, ""},
		{"at its start", weekday, nil, ny(2026, 3, 4, 9, 30), ""},
		{"a minute before", weekday, nil, ny(2026, 3, 4, 9, 29), reasonMasterWindow},
		{"at its end", weekday, nil, ny(2026, 3, 4, 16, 0), reasonMasterWindow},
		{"a day it is not on", weekday, nil, ny(2026, 3, 7, 10, 0), reasonMasterWindow},
		{"every day when no days", win("09:30", "16:00"), nil, ny(2026, 3, 7, 10, 0), ""},
		{"past midnight, after midnight", win("18:00", "02:00", "tue"), nil, ny(2026, 3, 4, 1, 59), ""},
		{"past midnight, its end", win("18:00", "02:00", "tue"), nil, ny(2026, 3, 4, 2, 0), reasonMasterWindow},
		{"past midnight, the next day's evening is not the window's", win("18:00", "02:00", "tue"), nil,
			ny(2026, 3, 4, 18, 0), reasonMasterWindow},
		{"past midnight, the day it starts", win("18:00", "02:00", "tue"), nil, ny(2026, 3, 3, 23, 0), ""},
		{"inside the master, outside the trading windows", weekday,
			[]protocol.MonitorWindow{tw(true, win("09:30", "11:00")), tw(false, win("11:00", "13:00")), tw(true, win("13:00", "15:00"))},
			ny(2026, 3, 4, 12, 0), reasonTradingWindows},
		{"inside a trading window", weekday,
			[]protocol.MonitorWindow{tw(true, win("09:30", "11:00")), tw(true, win("13:00", "15:00"))},
			ny(2026, 3, 4, 13, 0), ""},
		{"disabled trading windows do not count", protocol.Window{}, []protocol.MonitorWindow{tw(false, win("09:30", "11:00"))},
			ny(2026, 3, 4, 12, 0), ""},
		{"outside the master window first", weekday, []protocol.MonitorWindow{tw(true, win("17:00", "18:00"))},
			ny(2026, 3, 4, 17, 30), reasonMasterWindow},
		// Spring forward: Saturday 18:00 EST to Sunday 09:30 EDT.
		{"spring forward, overnight window inside", win("18:00", "09:30", "sat"), nil, ny(2026, 3, 8, 9, 29), ""},
		{"spring forward, overnight window end", win("18:00", "09:30", "sat"), nil, ny(2026, 3, 8, 9, 30), reasonMasterWindow},
		{"spring forward, through the missing hour", win("01:00", "04:00", "sun"), nil, ny(2026, 3, 8, 3, 30), ""},
		{"spring forward, 01:00 to 04:00 is two hours", win("01:00", "04:00", "sun"), nil,
			ny(2026, 3, 8, 1, 0).Add(2 * time.Hour), reasonMasterWindow},
		{"spring forward, a Sunday window past midnight", win("22:00", "02:00", "sun"), nil, ny(2026, 3, 9, 1, 59), ""},
		{"spring forward, not Saturday's", win("22:00", "02:00", "sun"), nil, ny(2026, 3, 8, 1, 0), reasonMasterWindow},
		// Fall back: Saturday 23:00 EDT to Sunday 03:00 EST is five hours.
		{"fall back, four and a half hours in", win("23:00", "03:00", "sat"), nil,
			ny(2026, 10, 31, 23, 0).Add(4*time.Hour + 30*time.Minute), ""},
		{"fall back, 02:59 EST", win("23:00", "03:00", "sat"), nil, ny(2026, 11, 1, 2, 59), ""},
		{"fall back, 03:00 EST", win("23:00", "03:00", "sat"), nil, ny(2026, 11, 1, 3, 0), reasonMasterWindow},
		{"fall back, five hours in", win("23:00", "03:00", "sat"), nil, ny(2026, 10, 31, 23, 0).Add(5 * time.Hour), reasonMasterWindow},
		{"fall back, a day window", protocol.Window{}, []protocol.MonitorWindow{tw(true, win("09:30", "16:00", "sun"))},
			ny(2026, 11, 1, 9, 30), ""},
		{"fall back, a trading window past midnight", protocol.Window{},
			[]protocol.MonitorWindow{tw(true, win("20:00", "01:30", "sat"))}, ny(2026, 11, 1, 1, 45), reasonTradingWindows},
	} {
		m := protocol.Monitor{MasterWindow: tc.master, TradingWindows: tc.trading}
		p := newPlan(&m)
		require.Equal(t, tc.want, p.outside(tc.at), tc.name)
	}
}

// closingOnlyAfter holds from its time until the master window ends, or
// without one until the session ends at 6 PM New York time.
func TestClosingOnlyAt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		master protocol.Window
		after  string
		at     time.Time
		want   bool
	}{
		{"none", win("09:30", "16:00"), "", ny(2026, 3, 4, 15, 45), false},
		{"before", win("09:30", "16:00"), "15:30", ny(2026, 3, 4, 15, 29), false},
		{"from", win("09:30", "16:00"), "15:30", ny(2026, 3, 4, 15, 30), true},
		{"to the end", win("09:30", "16:00"), "15:30", ny(2026, 3, 4, 15, 59), true},
		{"not after the window", win("09:30", "16:00"), "15:30", ny(2026, 3, 4, 16, 0), false},
		{"not before it", win("09:30", "16:00"), "15:30", ny(2026, 3, 4, 9, 0), false},
		{"past midnight window, the next day", win("18:00", "16:00", "sun", "mon", "tue", "wed", "thu"), "15:00",
			ny(2026, 3, 2, 15, 0), true},
		{"past midnight window, its evening", win("18:00", "16:00", "sun", "mon", "tue", "wed", "thu"), "15:00",
			ny(2026, 3, 1, 19, 0), false},
		{"past midnight window, before the time", win("18:00", "16:00", "sun", "mon", "tue", "wed", "thu"), "15:00",
			ny(2026, 3, 2, 14, 59), false},
		{"no master window: from the time", protocol.Window{}, "15:00", ny(2026, 3, 4, 15, 0), true},
		{"no master window: to the session's end", protocol.Window{}, "15:00", ny(2026, 3, 4, 17, 59), true},
		{"no master window: not in the next session", protocol.Window{}, "15:00", ny(2026, 3, 4, 18, 0), false},
		{"no master window: not overnight", protocol.Window{}, "15:00", ny(2026, 3, 5, 2, 0), false},
		{"no master window: an evening time", protocol.Window{}, "20:00", ny(2026, 3, 4, 21, 0), true},
		{"no master window: an evening time, next morning", protocol.Window{}, "20:00", ny(2026, 3, 5, 9, 0), true},
	} {
		m := protocol.Monitor{MasterWindow: tc.master, ClosingOnlyAfter: tc.after}
		p := newPlan(&m)
		require.Equal(t, tc.want, p.closingOnlyAt(tc.at), tc.name)
	}
}

func TestParseClock(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]clockTime{"00:00": 0, "09:30": 570, "23:55": 1435, "": noTime, "24:00": noTime,
		"9:30": noTime, "09:60": noTime, "ab:cd": noTime, "09-30": noTime} {
		require.Equal(t, want, parseClock(in), in)
	}
}
