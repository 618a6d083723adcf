package manage

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// Times of the monitor tests, New York time in January (EST, UTC-5).
var (
	// monNoon is Wednesday 14 January 2026, noon New York: outside the
	// Monitor Lock window. Its session began 13 January at 6 PM.
	monNoon = time.Date(2026, time.January, 14, 12, 0, 0, 0, protocol.NewYork())
	// monInWindow is 5:30 PM the same day, inside the window.
	monInWindow = time.Date(2026, time.January, 14, 17, 30, 0, 0, protocol.NewYork())
	// monStoppedToday is 10 AM the same day, in the current session.
	monStoppedToday = time.Date(2026, time.January, 14, 10, 0, 0, 0, protocol.NewYork())
	// monSessionStart is the current session's start.
	monSessionStart = time.Date(2026, time.January, 13, 18, 0, 0, 0, protocol.NewYork())
	// monStoppedBefore is a second before the session's start.
	monStoppedBefore = monSessionStart.Add(-time.Second)
)

// monValid is a valid monitor with every setting used.
func monValid() protocol.Monitor {
	m := monitorDefault()
	m.ID = "mon_1"
	m.Account = "Sim101"
	m.ProfitTarget = protocol.Limit{Enabled: true, Amount: 1500}
	m.LossLimit = protocol.Limit{Enabled: true, Amount: 800}
	m.TrailingDrawdown = protocol.Limit{Enabled: true, Amount: 500}
	m.MinimumProfitDrawdown = protocol.ProfitFloor{Enabled: true, Trigger: 1000, Floor: 200}
	m.MasterWindow = protocol.Window{Days: []string{"mon", "tue", "wed", "thu", "fri"}, Start: "09:30", End: "16:00"}
	m.TradingWindows = []protocol.MonitorWindow{
		{Enabled: true, Window: protocol.Window{Days: []string{"mon"}, Start: "09:30", End: "11:00"}},
		{Enabled: true, Window: protocol.Window{Days: []string{"mon"}, Start: "11:00", End: "12:00"}},
	}
	m.ClosingOnlyAfter = "15:45"
	m.AutoFlattenAt = "15:55"
	return m
}

// monStopped is a stopped monitor that tripped at at.
func monStopped(at time.Time) protocol.Monitor {
	m := monValid()
	m.State = protocol.MonitorStopped
	m.StoppedReason = "lossLimit"
	m.StoppedAt = &at
	return m
}

// monSent turns a JSON object into the top-level fields of a body.
func monSent(t *testing.T, body string) map[string]json.RawMessage {
	t.Helper()
	if body == "" {
		return nil
	}
	var sent map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(body), &sent))
	return sent
}

// monSnap is a snapshot with the accounts Sim101 and Sim102 on one
// connection.
func monSnap() *Snapshot {
	return &Snapshot{Connections: []protocol.Connection{{Name: "Sim", Accounts: []string{"Sim101", "Sim102"}}}}
}

// monRequireCode checks that err is the code with its status.
func monRequireCode(t *testing.T, err *httpapi.Error, code string) {
	t.Helper()
	require.NotNil(t, err, "want %s", code)
	require.Equal(t, code, err.Code)
	require.Equal(t, errcode.Status(code), err.Status)
	require.NotZero(t, err.Status)
	require.NotEmpty(t, err.Detail)
}

func TestMonitorKindDeclaration(t *testing.T) {
	t.Parallel()
	k := monitorKind
	require.Equal(t, "monitor", k.Name)
	require.Equal(t, "desktop/monitors", k.Path)
	require.False(t, k.Singleton)
	require.True(t, k.NeedsAgent)
	require.Equal(t, []string{"account"}, k.Required)
	require.Equal(t, []string{"account"}, k.Immutable)
	require.ElementsMatch(t, []string{"state", "stoppedReason", "stoppedAt", "restartedFrom", "blind"}, k.ReadOnly)
	require.NotNil(t, k.Guard)
	require.NotNil(t, k.Validate)
	require.NotNil(t, k.Check)
	require.NotNil(t, k.Derive)
	require.Contains(t, k.Actions, "restart")

	d := k.Default()
	require.True(t, d.Active)
	require.Equal(t, protocol.MonitorActive, d.State)
	require.Equal(t, protocol.OnTripFlatten, d.OnTrip)
	require.True(t, d.IncludeUnrealized)
	require.False(t, d.IncludeCommission)
	require.False(t, d.MonitorLock)
	require.False(t, d.SwitchesLocked)
	m := &d
	require.Same(t, &m.Meta, k.Meta(m))

	// The default with an account is a valid monitor.
	d.Account = "Sim101"
	require.Nil(t, monitorValidate(&Change[protocol.Monitor]{Op: OpCreate, New: &d, Snap: monSnap(), Now: monNoon}))

	// Default resources do not share slices.
	a, b := k.Default(), k.Default()
	a.MasterWindow.Days = append(a.MasterWindow.Days, "mon")
	require.Empty(t, b.MasterWindow.Days)
}

func TestMonitorDerive(t *testing.T) {
	t.Parallel()
	stoppedAt := monStoppedToday
	cases := []struct {
		name    string
		state   string
		active  bool
		stopped *time.Time
		want    string
	}{
		{"active", protocol.MonitorActive, true, nil, protocol.MonitorActive},
		{"turned off", protocol.MonitorActive, false, nil, protocol.MonitorPaused},
		{"turned on again", protocol.MonitorPaused, true, nil, protocol.MonitorActive},
		{"stopped stays stopped while active", protocol.MonitorStopped, true, &stoppedAt, protocol.MonitorStopped},
		{"stopped stays stopped while off", protocol.MonitorStopped, false, &stoppedAt, protocol.MonitorStopped},
		{"no state stored", "", true, nil, protocol.MonitorActive},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := protocol.Monitor{State: tc.state, Active: tc.active, StoppedAt: tc.stopped}
			monitorDerive(&m, monSnap())
			require.Equal(t, tc.want, m.State)
		})
	}
}

func TestMonitorValidate(t *testing.T) {
	t.Parallel()
	fe := func(p, code string) httpapi.FieldError { return httpapi.FieldError{Path: p, Code: code} }
	lim := func(p, code string, l any) httpapi.FieldError {
		return httpapi.FieldError{Path: p, Code: code, Limit: l}
	}
	pat := func(p string) httpapi.FieldError {
		return httpapi.FieldError{Path: p, Code: errcode.FieldCodeStringPatternMismatch, Pattern: TimePattern}
	}
	day := func(p string) httpapi.FieldError {
		return httpapi.FieldError{Path: p, Code: errcode.FieldCodeNotAllowed, Allowed: Days}
	}
	tw := func(enabled bool, start, end string, days ...string) protocol.MonitorWindow {
		return protocol.MonitorWindow{Enabled: enabled, Window: protocol.Window{Days: days, Start: start, End: end}}
	}
	cases := []struct {
		name   string
		change func(m *protocol.Monitor)
		want   []httpapi.FieldError
	}{
		{"valid", func(*protocol.Monitor) {}, nil},

		// Limits.
		{"negative profit target", func(m *protocol.Monitor) { m.ProfitTarget.Amount = -1 },
			[]httpapi.FieldError{lim("profitTarget.amount", errcode.FieldCodeOutOfRange, 0)}},
		{"negative amount of a disabled limit", func(m *protocol.Monitor) { m.LossLimit = protocol.Limit{Amount: -0.01} },
			[]httpapi.FieldError{lim("lossLimit.amount", errcode.FieldCodeOutOfRange, 0)}},
		{"loss limit above the maximum", func(m *protocol.Monitor) { m.LossLimit.Amount = 10_000_000.01 },
			[]httpapi.FieldError{lim("lossLimit.amount", errcode.FieldCodeLessThanEqual, MonitorMaxAmount)}},
		{"the maximum itself", func(m *protocol.Monitor) { m.LossLimit.Amount = 10_000_000 }, nil},
		{"trailing drawdown enabled at 0", func(m *protocol.Monitor) { m.TrailingDrawdown = protocol.Limit{Enabled: true} },
			[]httpapi.FieldError{fe("trailingDrawdown.amount", errcode.FieldCodeRequiredWhenEnabled)}},
		{"profit target enabled at 0", func(m *protocol.Monitor) { m.ProfitTarget.Amount = 0 },
			[]httpapi.FieldError{fe("profitTarget.amount", errcode.FieldCodeRequiredWhenEnabled)}},
		{"disabled at 0", func(m *protocol.Monitor) { m.TrailingDrawdown = protocol.Limit{} }, nil},

		// Minimum-profit drawdown.
		{"profit floor, the default", func(m *protocol.Monitor) { m.MinimumProfitDrawdown = monitorDefault().MinimumProfitDrawdown }, nil},
		{"profit floor enabled without a trigger", func(m *protocol.Monitor) {
			m.MinimumProfitDrawdown = protocol.ProfitFloor{Enabled: true}
		}, []httpapi.FieldError{fe("minimumProfitDrawdown.trigger", errcode.FieldCodeRequiredWhenEnabled)}},
		{"profit floor at break even", func(m *protocol.Monitor) {
			m.MinimumProfitDrawdown = protocol.ProfitFloor{Enabled: true, Trigger: 500}
		}, nil},
		{"profit floor a cent below the trigger", func(m *protocol.Monitor) {
			m.MinimumProfitDrawdown = protocol.ProfitFloor{Enabled: true, Trigger: 500, Floor: 499.99}
		}, nil},
		{"profit floor at the trigger", func(m *protocol.Monitor) {
			m.MinimumProfitDrawdown = protocol.ProfitFloor{Enabled: true, Trigger: 500, Floor: 500}
		}, []httpapi.FieldError{lim("minimumProfitDrawdown.floor", errcode.FieldCodeOutOfRange, 500.0)}},
		{"profit floor above the trigger", func(m *protocol.Monitor) {
			m.MinimumProfitDrawdown = protocol.ProfitFloor{Enabled: true, Trigger: 250.5, Floor: 900}
		}, []httpapi.FieldError{lim("minimumProfitDrawdown.floor", errcode.FieldCodeOutOfRange, 250.5)}},
		{"negative profit floor", func(m *protocol.Monitor) {
			m.MinimumProfitDrawdown = protocol.ProfitFloor{Enabled: true, Trigger: 500, Floor: -100}
		}, []httpapi.FieldError{lim("minimumProfitDrawdown.floor", errcode.FieldCodeOutOfRange, 0)}},
		{"negative profit floor, disabled", func(m *protocol.Monitor) {
			m.MinimumProfitDrawdown = protocol.ProfitFloor{Trigger: 500, Floor: -0.01}
		}, []httpapi.FieldError{lim("minimumProfitDrawdown.floor", errcode.FieldCodeOutOfRange, 0)}},
		{"negative trigger: the floor is not judged against it", func(m *protocol.Monitor) {
			m.MinimumProfitDrawdown = protocol.ProfitFloor{Enabled: true, Trigger: -5, Floor: 100}
		}, []httpapi.FieldError{lim("minimumProfitDrawdown.trigger", errcode.FieldCodeOutOfRange, 0)}},
		{"trigger above the maximum", func(m *protocol.Monitor) {
			m.MinimumProfitDrawdown = protocol.ProfitFloor{Enabled: true, Trigger: 10_000_000.01, Floor: 100}
		}, []httpapi.FieldError{lim("minimumProfitDrawdown.trigger", errcode.FieldCodeLessThanEqual, MonitorMaxAmount)}},
		{"trigger at the maximum", func(m *protocol.Monitor) {
			m.MinimumProfitDrawdown = protocol.ProfitFloor{Enabled: true, Trigger: 10_000_000, Floor: 9_999_999.99}
		}, nil},
		{"both above the maximum", func(m *protocol.Monitor) {
			m.MinimumProfitDrawdown = protocol.ProfitFloor{Enabled: true, Trigger: 2e7, Floor: 3e7}
		}, []httpapi.FieldError{lim("minimumProfitDrawdown.trigger", errcode.FieldCodeLessThanEqual, MonitorMaxAmount),
			lim("minimumProfitDrawdown.floor", errcode.FieldCodeLessThanEqual, MonitorMaxAmount)}},
		{"disabled: the floor is kept above its trigger", func(m *protocol.Monitor) {
			m.MinimumProfitDrawdown = protocol.ProfitFloor{Trigger: 500, Floor: 800}
		}, nil},
		{"disabled: the floor is kept without a trigger", func(m *protocol.Monitor) {
			m.MinimumProfitDrawdown = protocol.ProfitFloor{Floor: 300}
		}, nil},

		// Master window.
		{"no master window", func(m *protocol.Monitor) { m.MasterWindow = protocol.Window{}; m.ClosingOnlyAfter = "03:00" }, nil},
		{"master window every day", func(m *protocol.Monitor) { m.MasterWindow.Days = nil }, nil},
		{"unknown day", func(m *protocol.Monitor) { m.MasterWindow.Days = []string{"mon", "xyz", "Tue"} },
			[]httpapi.FieldError{day("masterWindow.days.1"), day("masterWindow.days.2")}},
		{"repeated day", func(m *protocol.Monitor) { m.MasterWindow.Days = []string{"mon", "tue", "mon"} },
			[]httpapi.FieldError{day("masterWindow.days.2")}},
		{"days without start", func(m *protocol.Monitor) { m.MasterWindow.Start = ""; m.ClosingOnlyAfter = "" },
			[]httpapi.FieldError{fe("masterWindow.start", errcode.FieldCodeRequiredWhenDaysSet)}},
		{"days without start or end", func(m *protocol.Monitor) {
			m.MasterWindow.Start, m.MasterWindow.End = "", ""
			m.ClosingOnlyAfter = ""
		}, []httpapi.FieldError{
			fe("masterWindow.start", errcode.FieldCodeRequiredWhenDaysSet),
			fe("masterWindow.end", errcode.FieldCodeRequiredWhenDaysSet)}},
		{"start without end, no days", func(m *protocol.Monitor) {
			m.MasterWindow = protocol.Window{Start: "09:30"}
			m.ClosingOnlyAfter = ""
		}, []httpapi.FieldError{fe("masterWindow.end", errcode.FieldCodeRequired)}},
		{"start without a leading zero", func(m *protocol.Monitor) { m.MasterWindow.Start = "9:30" },
			[]httpapi.FieldError{pat("masterWindow.start")}},
		{"end off the 5-minute marks", func(m *protocol.Monitor) { m.MasterWindow.End = "16:02" },
			[]httpapi.FieldError{pat("masterWindow.end")}},
		{"end at 24:00", func(m *protocol.Monitor) { m.MasterWindow.End = "24:00" },
			[]httpapi.FieldError{pat("masterWindow.end")}},
		{"start with a sign", func(m *protocol.Monitor) { m.MasterWindow.Start = "+9:30" },
			[]httpapi.FieldError{pat("masterWindow.start")}},
		{"start equals end", func(m *protocol.Monitor) { m.MasterWindow.End = "09:30"; m.ClosingOnlyAfter = "" },
			[]httpapi.FieldError{fe("masterWindow", errcode.FieldCodeEmptyWindow)}},

		// closingOnlyAfter.
		{"closing only after, inside", func(m *protocol.Monitor) { m.ClosingOnlyAfter = "09:35" }, nil},
		{"closing only after, at the end", func(m *protocol.Monitor) { m.ClosingOnlyAfter = "16:00" },
			[]httpapi.FieldError{fe("closingOnlyAfter", errcode.FieldCodeOutsideWindow)}},
		{"closing only after, at the start", func(m *protocol.Monitor) { m.ClosingOnlyAfter = "09:30" },
			[]httpapi.FieldError{fe("closingOnlyAfter", errcode.FieldCodeOutsideWindow)}},
		{"closing only after, later", func(m *protocol.Monitor) { m.ClosingOnlyAfter = "17:00" },
			[]httpapi.FieldError{fe("closingOnlyAfter", errcode.FieldCodeOutsideWindow)}},
		{"closing only after, earlier", func(m *protocol.Monitor) { m.ClosingOnlyAfter = "08:00" },
			[]httpapi.FieldError{fe("closingOnlyAfter", errcode.FieldCodeOutsideWindow)}},
		{"closing only after, past midnight, evening", func(m *protocol.Monitor) {
			m.MasterWindow = protocol.Window{Start: "18:00", End: "02:00"}
			m.ClosingOnlyAfter = "23:00"
		}, nil},
		{"closing only after, past midnight, after midnight", func(m *protocol.Monitor) {
			m.MasterWindow = protocol.Window{Start: "18:00", End: "02:00"}
			m.ClosingOnlyAfter = "01:55"
		}, nil},
		{"closing only after, past midnight, at the end", func(m *protocol.Monitor) {
			m.MasterWindow = protocol.Window{Start: "18:00", End: "02:00"}
			m.ClosingOnlyAfter = "02:00"
		}, []httpapi.FieldError{fe("closingOnlyAfter", errcode.FieldCodeOutsideWindow)}},
		{"closing only after, past midnight, at the start", func(m *protocol.Monitor) {
			m.MasterWindow = protocol.Window{Start: "18:00", End: "02:00"}
			m.ClosingOnlyAfter = "18:00"
		}, []httpapi.FieldError{fe("closingOnlyAfter", errcode.FieldCodeOutsideWindow)}},
		{"closing only after, past midnight, midday", func(m *protocol.Monitor) {
			m.MasterWindow = protocol.Window{Start: "18:00", End: "02:00"}
			m.ClosingOnlyAfter = "12:00"
		}, []httpapi.FieldError{fe("closingOnlyAfter", errcode.FieldCodeOutsideWindow)}},
		{"closing only after, bad time", func(m *protocol.Monitor) { m.ClosingOnlyAfter = "3pm" },
			[]httpapi.FieldError{pat("closingOnlyAfter")}},
		{"closing only after, master window at fault: only the window is reported", func(m *protocol.Monitor) {
			m.MasterWindow.End = "4pm"
			m.ClosingOnlyAfter = "17:00"
		}, []httpapi.FieldError{pat("masterWindow.end")}},

		// autoFlattenAt and onTrip.
		{"auto flatten off the marks", func(m *protocol.Monitor) { m.AutoFlattenAt = "15:57" },
			[]httpapi.FieldError{pat("autoFlattenAt")}},
		{"auto flatten off", func(m *protocol.Monitor) { m.AutoFlattenAt = "" }, nil},
		{"on trip none", func(m *protocol.Monitor) { m.OnTrip = protocol.OnTripNone }, nil},
		{"on trip unknown", func(m *protocol.Monitor) { m.OnTrip = "explode" },
			[]httpapi.FieldError{{Path: "onTrip", Code: errcode.FieldCodeNotAllowed,
				Allowed: []string{protocol.OnTripFlatten, protocol.OnTripNone}}}},
		{"on trip empty", func(m *protocol.Monitor) { m.OnTrip = "" },
			[]httpapi.FieldError{{Path: "onTrip", Code: errcode.FieldCodeNotAllowed,
				Allowed: []string{protocol.OnTripFlatten, protocol.OnTripNone}}}},

		// Trading windows.
		{"no trading windows", func(m *protocol.Monitor) { m.TradingWindows = nil }, nil},
		{"five trading windows", func(m *protocol.Monitor) {
			m.TradingWindows = []protocol.MonitorWindow{
				tw(true, "09:30", "10:00", "mon"), tw(true, "09:30", "10:00", "tue"), tw(true, "09:30", "10:00", "wed"),
				tw(true, "09:30", "10:00", "thu"), tw(true, "09:30", "10:00", "fri")}
		}, nil},
		{"six trading windows", func(m *protocol.Monitor) {
			m.TradingWindows = []protocol.MonitorWindow{
				tw(true, "09:30", "10:00", "mon"), tw(true, "09:30", "10:00", "tue"), tw(true, "09:30", "10:00", "wed"),
				tw(true, "09:30", "10:00", "thu"), tw(true, "09:30", "10:00", "fri"), tw(false, "09:30", "10:00", "sat")}
		}, []httpapi.FieldError{lim("tradingWindows", errcode.FieldCodeLessThanEqual, MonitorMaxTradingWindows)}},
		{"trading window without hours", func(m *protocol.Monitor) { m.TradingWindows = []protocol.MonitorWindow{{Enabled: true}} },
			[]httpapi.FieldError{fe("tradingWindows.0.start", errcode.FieldCodeRequired),
				fe("tradingWindows.0.end", errcode.FieldCodeRequired)}},
		{"disabled trading window without hours", func(m *protocol.Monitor) { m.TradingWindows = []protocol.MonitorWindow{{}} },
			[]httpapi.FieldError{fe("tradingWindows.0.start", errcode.FieldCodeRequired),
				fe("tradingWindows.0.end", errcode.FieldCodeRequired)}},
		{"trading window with days and no end", func(m *protocol.Monitor) { m.TradingWindows[1].End = "" },
			[]httpapi.FieldError{fe("tradingWindows.1.end", errcode.FieldCodeRequiredWhenDaysSet)}},
		{"trading window with a bad day and a bad time", func(m *protocol.Monitor) {
			m.TradingWindows[1].Days = []string{"funday"}
			m.TradingWindows[1].Start = "11:01"
		}, []httpapi.FieldError{day("tradingWindows.1.days.0"), pat("tradingWindows.1.start")}},
		{"empty trading window", func(m *protocol.Monitor) { m.TradingWindows[0].End = "09:30" },
			[]httpapi.FieldError{fe("tradingWindows.0", errcode.FieldCodeEmptyWindow)}},

		// Overlaps.
		{"adjacent windows touch but do not overlap", func(m *protocol.Monitor) {}, nil},
		{"overlapping hours on the same day", func(m *protocol.Monitor) { m.TradingWindows[1].Start = "10:55" },
			[]httpapi.FieldError{fe("tradingWindows.0", errcode.FieldCodeWindowsOverlap),
				fe("tradingWindows.1", errcode.FieldCodeWindowsOverlap)}},
		{"same hours on different days", func(m *protocol.Monitor) {
			m.TradingWindows = []protocol.MonitorWindow{tw(true, "09:30", "11:00", "mon", "wed"), tw(true, "09:30", "11:00", "tue")}
		}, nil},
		{"a window on every day overlaps one on Saturday", func(m *protocol.Monitor) {
			m.TradingWindows = []protocol.MonitorWindow{tw(true, "10:00", "11:00"), tw(true, "10:30", "12:00", "sat")}
		}, []httpapi.FieldError{fe("tradingWindows.0", errcode.FieldCodeWindowsOverlap),
			fe("tradingWindows.1", errcode.FieldCodeWindowsOverlap)}},
		{"past midnight runs into the next day", func(m *protocol.Monitor) {
			m.TradingWindows = []protocol.MonitorWindow{tw(true, "22:00", "02:00", "mon"), tw(true, "01:00", "03:00", "tue")}
		}, []httpapi.FieldError{fe("tradingWindows.0", errcode.FieldCodeWindowsOverlap),
			fe("tradingWindows.1", errcode.FieldCodeWindowsOverlap)}},
		{"past midnight ending where the next begins", func(m *protocol.Monitor) {
			m.TradingWindows = []protocol.MonitorWindow{tw(true, "22:00", "02:00", "mon"), tw(true, "02:00", "03:00", "tue")}
		}, nil},
		{"past midnight does not reach the same day's morning", func(m *protocol.Monitor) {
			m.TradingWindows = []protocol.MonitorWindow{tw(true, "22:00", "02:00", "mon"), tw(true, "01:00", "03:00", "mon")}
		}, nil},
		{"Sunday night runs into Monday", func(m *protocol.Monitor) {
			m.TradingWindows = []protocol.MonitorWindow{tw(true, "23:00", "01:00", "sun"), tw(true, "00:30", "00:45", "mon")}
		}, []httpapi.FieldError{fe("tradingWindows.0", errcode.FieldCodeWindowsOverlap),
			fe("tradingWindows.1", errcode.FieldCodeWindowsOverlap)}},
		{"two past-midnight windows every day", func(m *protocol.Monitor) {
			m.TradingWindows = []protocol.MonitorWindow{tw(true, "23:00", "01:00"), tw(true, "00:55", "02:00", "thu")}
		}, []httpapi.FieldError{fe("tradingWindows.0", errcode.FieldCodeWindowsOverlap),
			fe("tradingWindows.1", errcode.FieldCodeWindowsOverlap)}},
		{"a disabled window may overlap", func(m *protocol.Monitor) { m.TradingWindows[1].Start = "10:00"; m.TradingWindows[1].Enabled = false }, nil},
		{"only the overlapping windows are reported", func(m *protocol.Monitor) {
			m.TradingWindows = []protocol.MonitorWindow{
				tw(true, "09:00", "10:00", "fri"), tw(true, "12:00", "13:00", "fri"), tw(true, "09:55", "10:30", "fri")}
		}, []httpapi.FieldError{fe("tradingWindows.0", errcode.FieldCodeWindowsOverlap),
			fe("tradingWindows.2", errcode.FieldCodeWindowsOverlap)}},
		{"a window at fault is not judged for overlap", func(m *protocol.Monitor) {
			m.TradingWindows = []protocol.MonitorWindow{tw(true, "09:00", "10:00", "fri"), tw(true, "09:00", "10:01", "fri")}
		}, []httpapi.FieldError{pat("tradingWindows.1.end")}},

		// Everything at once.
		{"every fault is reported", func(m *protocol.Monitor) {
			m.ProfitTarget.Amount = -5
			m.LossLimit.Amount = 2e7
			m.TrailingDrawdown.Amount = 0
			m.MinimumProfitDrawdown.Floor = m.MinimumProfitDrawdown.Trigger
			m.MasterWindow.Start = "9am"
			m.TradingWindows[0].Days = []string{"mon", "mon"}
			m.AutoFlattenAt = "x"
			m.OnTrip = "none!"
		}, []httpapi.FieldError{
			lim("profitTarget.amount", errcode.FieldCodeOutOfRange, 0),
			lim("lossLimit.amount", errcode.FieldCodeLessThanEqual, MonitorMaxAmount),
			fe("trailingDrawdown.amount", errcode.FieldCodeRequiredWhenEnabled),
			lim("minimumProfitDrawdown.floor", errcode.FieldCodeOutOfRange, 1000.0),
			pat("masterWindow.start"),
			day("tradingWindows.0.days.1"),
			pat("autoFlattenAt"),
			{Path: "onTrip", Code: errcode.FieldCodeNotAllowed, Allowed: []string{protocol.OnTripFlatten, protocol.OnTripNone}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := monValid()
			tc.change(&m)
			for _, op := range []Op{OpCreate, OpPatch} {
				err := monitorValidate(&Change[protocol.Monitor]{Op: op, New: &m, Snap: monSnap(), Now: monNoon})
				if tc.want == nil {
					require.Nil(t, err)
					continue
				}
				monRequireCode(t, err, errcode.ValidationFailed)
				require.Equal(t, http.StatusUnprocessableEntity, err.Status)
				require.ElementsMatch(t, tc.want, err.Fields)
			}
		})
	}
}

func TestMonitorValidateLimitsEncodeAsIntegers(t *testing.T) {
	t.Parallel()
	m := monValid()
	m.LossLimit.Amount = 1e8
	err := monitorValidate(&Change[protocol.Monitor]{Op: OpPatch, New: &m, Snap: monSnap()})
	require.NotNil(t, err)
	b, jerr := json.Marshal(err.Fields)
	require.NoError(t, jerr)
	require.Contains(t, string(b), `"limit":10000000`)
}

func TestMonitorValidateNoChange(t *testing.T) {
	t.Parallel()
	require.Nil(t, monitorValidate(&Change[protocol.Monitor]{Op: OpDelete, Snap: monSnap()}))
}

// TestMonitorStateTable runs every row of the spec's monitor state table
// through the hooks the core runs for a change.
func TestMonitorStateTable(t *testing.T) {
	t.Parallel()
	locked := func(at time.Time) protocol.Monitor {
		m := monStopped(at)
		m.MonitorLock = true
		return m
	}
	switchesOn := func() protocol.Monitor {
		m := monValid()
		m.SwitchesLocked = true
		m.BlockSignals = true
		return m
	}
	paused := func() protocol.Monitor {
		m := monValid()
		m.Active = false
		m.State = protocol.MonitorPaused
		return m
	}
	cases := []struct {
		name   string
		old    protocol.Monitor
		op     Op
		body   string
		now    time.Time
		want   string // "" when the guard lets the change through
		action string
	}{
		// stopped | PATCH with active: true | always | 409 monitor_stopped_use_restart
		{name: "stopped, PATCH active true", old: monStopped(monStoppedToday), op: OpPatch,
			body: `{"active":true}`, now: monNoon, want: errcode.MonitorStoppedUseRestart},
		{name: "stopped, PATCH active true with other fields", old: monStopped(monStoppedToday), op: OpPatch,
			body: `{"lossLimit":{"enabled":true,"amount":2000},"active":true}`, now: monNoon, want: errcode.MonitorStoppedUseRestart},
		{name: "stopped and paused, PATCH active true", old: func() protocol.Monitor {
			m := monStopped(monStoppedToday)
			m.Active = false
			return m
		}(), op: OpPatch, body: `{"active":true}`, now: monNoon, want: errcode.MonitorStoppedUseRestart},
		{name: "stopped in an earlier session, PATCH active true", old: monStopped(monStoppedBefore), op: OpPatch,
			body: `{"active":true}`, now: monNoon, want: errcode.MonitorStoppedUseRestart},
		{name: "stopped, PATCH active false", old: monStopped(monStoppedToday), op: OpPatch,
			body: `{"active":false}`, now: monNoon},
		{name: "stopped, PATCH of the limits", old: monStopped(monStoppedToday), op: OpPatch,
			body: `{"lossLimit":{"enabled":true,"amount":2000}}`, now: monNoon},
		{name: "paused, PATCH active true", old: paused(), op: OpPatch, body: `{"active":true}`, now: monNoon},
		{name: "active, PATCH active true", old: monValid(), op: OpPatch, body: `{"active":true}`, now: monNoon},
		{name: "stopped, active of the wrong type is left to the merge", old: monStopped(monStoppedToday), op: OpPatch,
			body: `{"active":"true"}`, now: monNoon},

		// stopped | restart | would not retrip → restarted (see TestMonitorRestart)
		{name: "stopped, restart", old: monStopped(monStoppedToday), op: OpAction, action: "restart", now: monNoon},
		// not stopped | restart | any | 409 monitor_not_stopped
		{name: "active, restart", old: monValid(), op: OpAction, action: "restart", now: monNoon,
			want: errcode.MonitorNotStopped},
		{name: "paused, restart", old: paused(), op: OpAction, action: "restart", now: monNoon,
			want: errcode.MonitorNotStopped},

		// any | change of blockSignals or closingOnly | switchesLocked and not
		// unlocked in the same request | 409 switches_locked
		{name: "switches locked, blockSignals turned off", old: switchesOn(), op: OpPatch,
			body: `{"blockSignals":false}`, now: monNoon, want: errcode.SwitchesLocked},
		{name: "switches locked, closingOnly turned on", old: switchesOn(), op: OpPatch,
			body: `{"closingOnly":true}`, now: monNoon, want: errcode.SwitchesLocked},
		{name: "switches locked, sent switchesLocked true", old: switchesOn(), op: OpPatch,
			body: `{"blockSignals":false,"switchesLocked":true}`, now: monNoon, want: errcode.SwitchesLocked},
		{name: "switches locked on a stopped monitor", old: func() protocol.Monitor {
			m := monStopped(monStoppedToday)
			m.SwitchesLocked = true
			return m
		}(), op: OpPatch, body: `{"closingOnly":true}`, now: monNoon, want: errcode.SwitchesLocked},
		{name: "switches locked, unlocked in the same request", old: switchesOn(), op: OpPatch,
			body: `{"blockSignals":false,"closingOnly":true,"switchesLocked":false}`, now: monNoon},
		{name: "switches locked, same values sent back", old: switchesOn(), op: OpPatch,
			body: `{"blockSignals":true,"closingOnly":false}`, now: monNoon},
		{name: "switches locked, other fields", old: switchesOn(), op: OpPatch,
			body: `{"autoFlattenAt":"15:50"}`, now: monNoon},
		{name: "switches locked, unlock alone", old: switchesOn(), op: OpPatch,
			body: `{"switchesLocked":false}`, now: monNoon},
		{name: "switches locked, delete", old: switchesOn(), op: OpDelete, now: monNoon},
		{name: "switches not locked, blockSignals changed", old: monValid(), op: OpPatch,
			body: `{"blockSignals":true,"closingOnly":true}`, now: monNoon},

		// any | any change | Monitor Lock on and a limit reached today | 409
		// monitor_locked; clears in 5–6 PM ET or with Monitor Lock off
		{name: "locked, PATCH", old: locked(monStoppedToday), op: OpPatch,
			body: `{"lossLimit":{"enabled":true,"amount":5000}}`, now: monNoon, want: errcode.MonitorLocked},
		{name: "locked, PATCH that only turns Monitor Lock off", old: locked(monStoppedToday), op: OpPatch,
			body: `{"monitorLock":false}`, now: monNoon, want: errcode.MonitorLocked},
		{name: "locked, PATCH active true is monitor_locked first", old: locked(monStoppedToday), op: OpPatch,
			body: `{"active":true}`, now: monNoon, want: errcode.MonitorLocked},
		{name: "locked, DELETE", old: locked(monStoppedToday), op: OpDelete, now: monNoon, want: errcode.MonitorLocked},
		{name: "locked, restart", old: locked(monStoppedToday), op: OpAction, action: "restart", now: monNoon,
			want: errcode.MonitorLocked},
		{name: "locked, stopped at the session's start", old: locked(monSessionStart), op: OpPatch,
			body: `{"closingOnly":true}`, now: monNoon, want: errcode.MonitorLocked},
		{name: "locked, a minute before the window", old: locked(monStoppedToday), op: OpPatch,
			body: `{"closingOnly":true}`, now: monInWindow.Add(-31 * time.Minute), want: errcode.MonitorLocked},
		{name: "lock window, PATCH", old: locked(monStoppedToday), op: OpPatch,
			body: `{"lossLimit":{"enabled":true,"amount":5000}}`, now: monInWindow},
		{name: "lock window, Monitor Lock turned off", old: locked(monStoppedToday), op: OpPatch,
			body: `{"monitorLock":false}`, now: monInWindow},
		{name: "lock window opens at 5 PM", old: locked(monStoppedToday), op: OpDelete,
			now: monInWindow.Add(-30 * time.Minute)},
		{name: "lock window, restart", old: locked(monStoppedToday), op: OpAction, action: "restart", now: monInWindow},
		{name: "new session at 6 PM: the lock has cleared", old: locked(monStoppedToday), op: OpAction, action: "restart",
			now: monInWindow.Add(30 * time.Minute)},
		{name: "new session the next morning", old: locked(monStoppedToday), op: OpPatch,
			body: `{"closingOnly":true}`, now: monNoon.Add(24 * time.Hour)},
		{name: "stopped in the previous session", old: locked(monStoppedBefore), op: OpPatch,
			body: `{"closingOnly":true}`, now: monNoon},
		{name: "Monitor Lock off, stopped today", old: monStopped(monStoppedToday), op: OpDelete, now: monNoon},
		{name: "Monitor Lock on, never stopped", old: func() protocol.Monitor {
			m := monValid()
			m.MonitorLock = true
			return m
		}(), op: OpPatch, body: `{"monitorLock":false}`, now: monNoon},

		// Creates have nothing stored to guard.
		{name: "create", op: OpCreate, body: `{"account":"Sim101","active":true}`, now: monNoon},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &Change[protocol.Monitor]{Op: tc.op, Action: tc.action, Sent: monSent(t, tc.body), Snap: monSnap(), Now: tc.now}
			if tc.op != OpCreate {
				old := tc.old
				c.Old = &old
			}
			err := monitorGuard(c)
			if tc.want == "" {
				require.Nil(t, err)
				return
			}
			monRequireCode(t, err, tc.want)
			require.Equal(t, http.StatusConflict, err.Status)
			require.Empty(t, err.Fields)
		})
	}
}

// monAgent is a fake Agent that answers CheckMonitorRestart with a fixed
// verdict or error and records the monitor it was asked about.
type monAgent struct {
	verdict protocol.RestartVerdict
	err     *httpapi.Error
	asked   []protocol.Monitor
}

// CheckMonitorRestart records m and returns the fixed answer.
func (a *monAgent) CheckMonitorRestart(m protocol.Monitor) (protocol.RestartVerdict, *httpapi.Error) {
	a.asked = append(a.asked, m)
	return a.verdict, a.err
}

func TestMonitorRestart(t *testing.T) {
	t.Parallel()
	restart := monitorKind.Actions["restart"]
	cases := []struct {
		name    string
		old     protocol.Monitor
		agent   *monAgent
		want    string
		asked   bool
		resumed bool
		// agentProtocol, when set, is the connected agent's version.
		agentProtocol int
	}{
		{name: "would not retrip: restarted", old: monStopped(monStoppedToday), agent: &monAgent{},
			asked: true, resumed: true},
		{name: "a paused stopped monitor comes back active", old: func() protocol.Monitor {
			m := monStopped(monStoppedToday)
			m.Active = false
			return m
		}(), agent: &monAgent{}, asked: true, resumed: true},
		{name: "would retrip", old: monStopped(monStoppedToday),
			agent: &monAgent{verdict: protocol.RestartVerdict{WouldRetrip: true, Reason: "lossLimit"}},
			want:  errcode.WouldRetrip, asked: true},
		{name: "agent error is returned", old: monStopped(monStoppedToday),
			agent: &monAgent{err: &httpapi.Error{Status: http.StatusServiceUnavailable, Code: errcode.OutcomeUnknown, Detail: "no ack"}},
			want:  errcode.OutcomeUnknown, asked: true},
		{name: "not stopped", old: monValid(), agent: &monAgent{}, want: errcode.MonitorNotStopped},
		{name: "an agent too old for its profit floor", old: monStopped(monStoppedToday), agent: &monAgent{},
			agentProtocol: protocol.ProfitFloorProtocolVersion - 1, want: errcode.AddonVersionUnsupported},
		{name: "an agent too old, the profit floor off", old: func() protocol.Monitor {
			m := monStopped(monStoppedToday)
			m.MinimumProfitDrawdown.Enabled = false
			return m
		}(), agent: &monAgent{}, agentProtocol: protocol.ProfitFloorProtocolVersion - 1, asked: true, resumed: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			old := tc.old
			next := tc.old
			snap := monSnap()
			snap.AgentConnected, snap.AgentProtocol = tc.agentProtocol != 0, tc.agentProtocol
			c := &Change[protocol.Monitor]{Op: OpAction, Action: "restart", Old: &old, New: &next, Snap: snap, Now: monNoon}
			err := restart(c, tc.agent)
			if tc.asked {
				require.Len(t, tc.agent.asked, 1)
				asked := tc.agent.asked[0]
				require.Equal(t, protocol.MonitorActive, asked.State)
				require.True(t, asked.Active)
				require.Nil(t, asked.StoppedAt)
				require.Empty(t, asked.StoppedReason)
				require.NotNil(t, asked.RestartedFrom, "the restart names the stop it resumes from")
				require.True(t, tc.old.StoppedAt.Equal(*asked.RestartedFrom))
				require.Equal(t, tc.old.LossLimit, asked.LossLimit)
				require.Equal(t, tc.old.Account, asked.Account)
			} else {
				require.Empty(t, tc.agent.asked)
			}
			if tc.want != "" {
				require.NotNil(t, err)
				require.Equal(t, tc.want, err.Code)
				require.Equal(t, errcode.Status(tc.want), err.Status)
				require.Equal(t, tc.old, next, "a refused restart leaves the monitor as it was")
				return
			}
			require.Nil(t, err)
			require.True(t, tc.resumed)
			require.Equal(t, protocol.MonitorActive, next.State)
			require.True(t, next.Active)
			require.Empty(t, next.StoppedReason)
			require.Nil(t, next.StoppedAt)
			require.Equal(t, tc.old.TradingWindows, next.TradingWindows)
			monitorDerive(&next, c.Snap)
			require.Equal(t, protocol.MonitorActive, next.State)
			require.Equal(t, tc.old, old, "the stored monitor is not changed")
		})
	}
}

func TestMonitorRestartWithoutAgent(t *testing.T) {
	t.Parallel()
	old := monStopped(monStoppedToday)
	next := old
	err := monitorRestart(&Change[protocol.Monitor]{Op: OpAction, Action: "restart", Old: &old, New: &next, Snap: monSnap()}, nil)
	monRequireCode(t, err, errcode.AddonDisconnected)
}

func TestMonitorCheck(t *testing.T) {
	t.Parallel()
	withCopier := func(cp protocol.Copier) func(s *Snapshot) {
		return func(s *Snapshot) { s.Copiers = append(s.Copiers, cp) }
	}
	tandem := protocol.Copier{Tandem: true, Leader: "Sim102", Followers: []protocol.Follower{{Account: "Sim101"}}}
	inactiveTandem := tandem
	inactiveTandem.Active = false
	plain := protocol.Copier{Active: true, Leader: "Sim102", Followers: []protocol.Follower{{Account: "Sim101"}}}
	leadsTandem := protocol.Copier{Tandem: true, Leader: "Sim101", Followers: []protocol.Follower{{Account: "Sim102"}}}
	blockAll := func(s *Snapshot) { s.Controls.BlockAllSignals = true }
	existing := func(s *Snapshot) { s.Monitors = append(s.Monitors, monValid()) }
	set := func(f func(m *protocol.Monitor)) func(m *protocol.Monitor) { return f }
	agentAt := func(version int) func(s *Snapshot) {
		return func(s *Snapshot) { s.AgentConnected, s.AgentProtocol = true, version }
	}
	floorOff := set(func(m *protocol.Monitor) { m.MinimumProfitDrawdown.Enabled = false })

	cases := []struct {
		name   string
		op     Op
		family string
		snap   func(s *Snapshot)
		old    func(m *protocol.Monitor) // nil: no stored monitor
		new    func(m *protocol.Monitor) // nil: no new monitor
		want   string
		fields []httpapi.FieldError
	}{
		// monValid's minimum-profit drawdown is enabled: an agent that
		// would ignore it must not be handed it.
		{name: "profit floor on an agent too old to run it", op: OpCreate, snap: agentAt(protocol.ProfitFloorProtocolVersion - 1),
			new: set(func(*protocol.Monitor) {}), want: errcode.AddonVersionUnsupported},
		{name: "another change that keeps it on, agent too old", op: OpPatch, snap: agentAt(protocol.ProfitFloorProtocolVersion - 1),
			old: set(func(*protocol.Monitor) {}), new: set(func(m *protocol.Monitor) { m.LossLimit.Amount = 900 }),
			want: errcode.AddonVersionUnsupported},
		{name: "profit floor turned off, agent too old", op: OpPatch, snap: agentAt(protocol.ProfitFloorProtocolVersion - 1),
			old: set(func(*protocol.Monitor) {}), new: floorOff},
		{name: "profit floor off, created on an agent too old", op: OpCreate, snap: agentAt(protocol.ProfitFloorProtocolVersion - 1),
			new: floorOff},
		{name: "delete, agent too old", op: OpDelete, snap: agentAt(protocol.ProfitFloorProtocolVersion - 1),
			old: set(func(*protocol.Monitor) {})},
		{name: "profit floor on an agent that runs it", op: OpCreate, snap: agentAt(protocol.ProfitFloorProtocolVersion),
			new: set(func(*protocol.Monitor) {})},
		{name: "profit floor on a broker account: the relay's engines run it", op: OpPatch, family: FamilyBroker,
			snap: agentAt(protocol.ProfitFloorProtocolVersion - 1), old: set(func(*protocol.Monitor) {}),
			new: set(func(m *protocol.Monitor) { m.LossLimit.Amount = 900 })},

		{name: "create", op: OpCreate, new: set(func(*protocol.Monitor) {})},
		{name: "create on an unknown account", op: OpCreate, new: set(func(m *protocol.Monitor) { m.Account = "Live999" }),
			want: errcode.AccountNotFound, fields: []httpapi.FieldError{{Path: "account", Code: errcode.AccountNotFound}}},
		{name: "create on an empty account", op: OpCreate, new: set(func(m *protocol.Monitor) { m.Account = "" }),
			want: errcode.AccountNotFound, fields: []httpapi.FieldError{{Path: "account", Code: errcode.AccountNotFound}}},
		{name: "create where a monitor exists", op: OpCreate, snap: existing, new: set(func(*protocol.Monitor) {}),
			want: errcode.AlreadyExists},
		{name: "create for another account where a monitor exists", op: OpCreate, snap: existing,
			new: set(func(m *protocol.Monitor) { m.Account = "Sim102" })},
		{name: "create while the controls block all signals", op: OpCreate, snap: blockAll, new: set(func(*protocol.Monitor) {})},

		{name: "delete", op: OpDelete, old: set(func(*protocol.Monitor) {})},
		{name: "delete of a Tandem follower's monitor", op: OpDelete, snap: withCopier(tandem), old: set(func(*protocol.Monitor) {}),
			want: errcode.TandemDependency},
		{name: "delete of an inactive Tandem copier's follower's monitor", op: OpDelete, snap: withCopier(inactiveTandem),
			old: set(func(*protocol.Monitor) {}), want: errcode.TandemDependency},
		{name: "delete of a plain copier's follower's monitor", op: OpDelete, snap: withCopier(plain), old: set(func(*protocol.Monitor) {})},
		{name: "delete of a Tandem leader's monitor", op: OpDelete, snap: withCopier(leadsTandem), old: set(func(*protocol.Monitor) {})},

		{name: "Tandem follower turned off", op: OpPatch, snap: withCopier(tandem), old: set(func(*protocol.Monitor) {}),
			new: set(func(m *protocol.Monitor) { m.Active = false }), want: errcode.TandemDependency},
		{name: "Tandem follower, other change", op: OpPatch, snap: withCopier(tandem), old: set(func(*protocol.Monitor) {}),
			new: set(func(m *protocol.Monitor) { m.LossLimit.Amount = 900 })},
		{name: "Tandem follower already off, other change", op: OpPatch, snap: withCopier(tandem),
			old: set(func(m *protocol.Monitor) { m.Active = false }),
			new: set(func(m *protocol.Monitor) { m.Active = false; m.LossLimit.Amount = 900 })},
		{name: "Tandem follower turned on", op: OpPatch, snap: withCopier(tandem),
			old: set(func(m *protocol.Monitor) { m.Active = false }), new: set(func(*protocol.Monitor) {})},
		{name: "plain follower turned off", op: OpPatch, snap: withCopier(plain), old: set(func(*protocol.Monitor) {}),
			new: set(func(m *protocol.Monitor) { m.Active = false })},

		{name: "blockSignals off while the controls block all", op: OpPatch, snap: blockAll,
			old: set(func(m *protocol.Monitor) { m.BlockSignals = true }), new: set(func(*protocol.Monitor) {}),
			want: errcode.FieldLocked, fields: []httpapi.FieldError{{Path: "blockSignals", Code: errcode.FieldCodeManagedByControls}}},
		{name: "blockSignals off, controls do not block", op: OpPatch,
			old: set(func(m *protocol.Monitor) { m.BlockSignals = true }), new: set(func(*protocol.Monitor) {})},
		{name: "blockSignals on while the controls block all", op: OpPatch, snap: blockAll,
			old: set(func(*protocol.Monitor) {}), new: set(func(m *protocol.Monitor) { m.BlockSignals = true })},
		{name: "blockSignals stays off while the controls block all", op: OpPatch, snap: blockAll,
			old: set(func(*protocol.Monitor) {}), new: set(func(m *protocol.Monitor) { m.ClosingOnly = true })},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			snap := monSnap()
			if tc.snap != nil {
				tc.snap(snap)
			}
			c := &Change[protocol.Monitor]{Op: tc.op, Snap: snap, Now: monNoon, Family: tc.family}
			if tc.old != nil {
				m := monValid()
				tc.old(&m)
				c.Old = &m
			}
			if tc.new != nil {
				m := monValid()
				if c.Old != nil {
					m = *c.Old
					m.Active = true
					m.BlockSignals = false
				}
				tc.new(&m)
				c.New = &m
			}
			err := monitorCheck(c)
			if tc.want == "" {
				require.Nil(t, err)
				return
			}
			monRequireCode(t, err, tc.want)
			require.Equal(t, tc.fields, err.Fields)
		})
	}
}

// TestMonitorErrorsEchoNothing checks that no refusal repeats what the
// caller sent.
func TestMonitorErrorsEchoNothing(t *testing.T) {
	t.Parallel()
	const secret = "Zq7secretAccount"
	m := monValid()
	m.Account = secret
	m.OnTrip = secret
	m.AutoFlattenAt = secret
	m.MasterWindow.Days = []string{secret}
	errs := []*httpapi.Error{
		monitorValidate(&Change[protocol.Monitor]{Op: OpCreate, New: &m, Snap: monSnap()}),
		monitorCheck(&Change[protocol.Monitor]{Op: OpCreate, New: &m, Snap: monSnap()}),
	}
	for _, e := range errs {
		require.NotNil(t, e)
		b, err := json.Marshal(struct {
			D string
			F []httpapi.FieldError
		}{e.Detail, e.Fields})
		require.NoError(t, err)
		require.False(t, strings.Contains(string(b), secret), string(b))
	}
}

// The minimum-profit drawdown through the Management API: a monitor
// stored before it existed reads it disabled at 0 and 0; a PATCH merges
// its members onto the stored ones; every fault is a 422 at its dotted
// path; the agent is pushed what was stored; disabling keeps the numbers.
func TestMonitorProfitFloorOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	id := newID(monitorKind.Name)
	_, err := e.store.WriteResources(t.Context(), "u1", true,
		storeWrite(monitorKind.Name, id, monitorJSON(id, "Sim101", protocol.MonitorActive), 0))
	require.NoError(t, err)
	at := "/desktop/monitors/" + id
	floorOf := func(r resp) json.RawMessage {
		t.Helper()
		var m map[string]json.RawMessage
		r.data(t, &m)
		return m["minimumProfitDrawdown"]
	}

	r := e.do(http.MethodGet, at, tokElite, "")
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	require.JSONEq(t, `{"enabled":false,"trigger":0,"floor":0}`, string(floorOf(r)), "a stored monitor without it reads as disabled")
	r = e.do(http.MethodPatch, at, tokElite, `{"minimumProfitDrawdown":{"enabled":false}}`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	require.False(t, *r.body(t).Changed, "sending the default back to an old monitor changes nothing")

	pushes := len(e.hub.pushes("u1"))
	for _, tc := range []struct{ name, body, fields string }{
		{"enabled without a trigger", `{"minimumProfitDrawdown":{"enabled":true}}`,
			`[{"path":"minimumProfitDrawdown.trigger","code":"required_when_enabled"}]`},
		{"floor at the trigger", `{"minimumProfitDrawdown":{"enabled":true,"trigger":500,"floor":500}}`,
			`[{"path":"minimumProfitDrawdown.floor","code":"out_of_range","limit":500}]`},
		{"negative floor", `{"minimumProfitDrawdown":{"enabled":true,"trigger":500,"floor":-50}}`,
			`[{"path":"minimumProfitDrawdown.floor","code":"out_of_range","limit":0}]`},
		{"a trigger as a string", `{"minimumProfitDrawdown":{"trigger":"500"}}`,
			`[{"path":"minimumProfitDrawdown.trigger","code":"wrong_type"}]`},
		{"the trailing drawdown's member name", `{"minimumProfitDrawdown":{"amount":500}}`,
			`[{"path":"minimumProfitDrawdown.amount","code":"unknown_field"}]`},
	} {
		r = e.do(http.MethodPatch, at, tokElite, tc.body)
		require.Equal(t, http.StatusUnprocessableEntity, r.Code, "%s: %s", tc.name, r.Body)
		fields, err := json.Marshal(r.body(t).Fields)
		require.NoError(t, err)
		require.JSONEq(t, tc.fields, string(fields), tc.name)
	}
	require.Len(t, e.hub.pushes("u1"), pushes, "a refused change pushes nothing")

	r = e.do(http.MethodPatch, at, tokElite, `{"minimumProfitDrawdown":{"enabled":true,"trigger":500}}`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	require.JSONEq(t, `{"enabled":true,"trigger":500,"floor":0}`, string(floorOf(r)), "the floor merged from the stored 0: break even")
	p := e.hub.pushes("u1")
	require.Equal(t, protocol.ProfitFloor{Enabled: true, Trigger: 500}, p[len(p)-1].Monitors[0].MinimumProfitDrawdown)

	// A floor sent alone is judged against the stored trigger, which the
	// refusal names as its limit.
	r = e.do(http.MethodPatch, at, tokElite, `{"minimumProfitDrawdown":{"floor":650}}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.Code, string(r.Body))
	require.Equal(t, []map[string]any{{"path": "minimumProfitDrawdown.floor", "code": "out_of_range", "limit": 500.0}},
		r.body(t).Fields)
	r = e.do(http.MethodPatch, at, tokElite, `{"minimumProfitDrawdown":{"floor":250.5}}`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))

	r = e.do(http.MethodPatch, at, tokElite, `{"minimumProfitDrawdown":{"enabled":false}}`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	require.JSONEq(t, `{"enabled":false,"trigger":500,"floor":250.5}`, string(floorOf(r)), "disabling keeps the numbers")

	r = e.do(http.MethodPost, "/desktop/monitors", tokElite, `{"account":"Sim102"}`)
	require.Equal(t, http.StatusCreated, r.Code, string(r.Body))
	require.JSONEq(t, `{"enabled":false,"trigger":0,"floor":0}`, string(floorOf(r)), "a new monitor's default")
}

// An agent of a protocol older than protocol.ProfitFloorProtocolVersion
// ignores the minimum-profit drawdown: while one is connected, a monitor
// with it enabled is neither stored nor pushed (409
// addon_version_unsupported), and turning it off is accepted.
func TestMonitorProfitFloorNeedsAnAgentThatRunsIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.hub.connect("u1", protocol.ProfitFloorProtocolVersion-1)
	r := e.do(http.MethodPost, "/desktop/monitors", tokElite,
		`{"account":"Sim101","lossLimit":{"enabled":true,"amount":500},"minimumProfitDrawdown":{"enabled":true,"trigger":900,"floor":100}}`)
	require.Equal(t, http.StatusConflict, r.Code, string(r.Body))
	require.Equal(t, errcode.AddonVersionUnsupported, r.code(t))
	require.Empty(t, e.hub.pushes("u1"), "nothing pushed")

	r = e.do(http.MethodPost, "/desktop/monitors", tokElite,
		`{"account":"Sim101","lossLimit":{"enabled":true,"amount":500},"minimumProfitDrawdown":{"trigger":900,"floor":100}}`)
	require.Equal(t, http.StatusCreated, r.Code, "kept disabled, the monitor is stored: %s", r.Body)
	var m protocol.Monitor
	r.data(t, &m)
	r = e.do(http.MethodPatch, "/desktop/monitors/"+m.ID, tokElite, `{"minimumProfitDrawdown":{"enabled":true}}`)
	require.Equal(t, errcode.AddonVersionUnsupported, r.code(t), string(r.Body))
	require.Len(t, e.hub.pushes("u1"), 1)

	e.hub.connect("u1", protocol.ProfitFloorProtocolVersion) // the agent updated
	r = e.do(http.MethodPatch, "/desktop/monitors/"+m.ID, tokElite, `{"minimumProfitDrawdown":{"enabled":true}}`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	p := e.hub.pushes("u1")
	require.Len(t, p, 2)
	require.Equal(t, protocol.ProfitFloor{Enabled: true, Trigger: 900, Floor: 100}, p[1].Monitors[0].MinimumProfitDrawdown)
}
