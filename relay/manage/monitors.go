package manage

import (
	"encoding/json"
	"regexp"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// Bounds of a monitor's settings.
const (
	// MonitorMaxAmount is the largest profit target, loss limit,
	// trailing drawdown, or minimum-profit drawdown trigger or floor, in
	// dollars.
	MonitorMaxAmount = 10_000_000
	// MonitorMaxTradingWindows is the most trading windows a monitor has.
	MonitorMaxTradingWindows = 5
)

// monitorTimeRE is TimePattern compiled.
var monitorTimeRE = regexp.MustCompile(TimePattern)

// monitorKind is the monitor kind of the Management API: one monitor per
// account, which watches the account's session P&L and trading hours and
// stops its trading at a limit. The agent runs it; the relay keeps the
// state the agent reports (stopped, with reason and time) and enforces the
// spec's monitor state table in Guard.
var monitorKind = &Kind[protocol.Monitor]{
	Name:       "monitor",
	Path:       "desktop/monitors",
	Singleton:  false,
	ReadOnly:   []string{"state", "stoppedReason", "stoppedAt", "restartedFrom", "blind"},
	Immutable:  []string{"account"},
	Required:   []string{"account"},
	NeedsAgent: true,
	Default:    monitorDefault,
	Meta:       func(v *protocol.Monitor) *protocol.Meta { return &v.Meta },
	Derive:     monitorDerive,
	Guard:      monitorGuard,
	Validate:   monitorValidate,
	Check:      monitorCheck,
	Actions:    map[string]func(*Change[protocol.Monitor], Agent) *httpapi.Error{"restart": monitorRestart},
}

// monitorDefault is a new monitor: active, flattening on a trip, counting
// unrealized P&L, with no limit, window or switch on (the minimum-profit
// drawdown disabled, at trigger 0 and floor 0).
func monitorDefault() protocol.Monitor {
	return protocol.Monitor{
		Active:            true,
		State:             protocol.MonitorActive,
		IncludeUnrealized: true,
		MasterWindow:      protocol.Window{Days: []string{}},
		TradingWindows:    []protocol.MonitorWindow{},
		OnTrip:            protocol.OnTripFlatten,
	}
}

// monitorDerive sets the state: stopped while the agent's stop stands,
// else active or paused after Active. Only an active monitor is blind.
func monitorDerive(v *protocol.Monitor, _ *Snapshot) {
	switch {
	case v.State == protocol.MonitorStopped:
	case v.Active:
		v.State = protocol.MonitorActive
	default:
		v.State = protocol.MonitorPaused
	}
	if v.State != protocol.MonitorActive {
		v.Blind = false
	}
}

// monitorIsStopped reports whether the monitor tripped and was not
// restarted.
func monitorIsStopped(m *protocol.Monitor) bool { return m.State == protocol.MonitorStopped }

// monitorLocked reports whether Monitor Lock holds m at now: the lock is
// on, the monitor stopped during the current session, and now is outside
// the 5–6 PM New York window.
func monitorLocked(m *protocol.Monitor, c *Change[protocol.Monitor]) bool {
	return m.MonitorLock && protocol.InSession(m.StoppedAt, c.Now) && !protocol.InMonitorLockWindow(c.Now)
}

// monitorSentBool returns the boolean the request sent for the top-level
// field name; ok is false when the field was not sent or is not a boolean
// (the merge then reports the type).
func monitorSentBool(sent map[string]json.RawMessage, name string) (v, ok bool) {
	raw, found := sent[name]
	if !found {
		return false, false
	}
	var b *bool
	if json.Unmarshal(raw, &b) != nil || b == nil {
		return false, false
	}
	return *b, true
}

// monitorSwitchesLocked reports whether a request changes blockSignals or
// closingOnly (sends a value other than the stored one) while the stored
// switchesLocked is on and the same request does not send switchesLocked
// false.
func monitorSwitchesLocked(old *protocol.Monitor, sent map[string]json.RawMessage) bool {
	if !old.SwitchesLocked {
		return false
	}
	if locked, ok := monitorSentBool(sent, "switchesLocked"); ok && !locked {
		return false
	}
	if v, ok := monitorSentBool(sent, "blockSignals"); ok && v != old.BlockSignals {
		return true
	}
	v, ok := monitorSentBool(sent, "closingOnly")
	return ok && v != old.ClosingOnly
}

// monitorGuard enforces the monitor state table: monitor_locked on any
// change while Monitor Lock holds; monitor_stopped_use_restart for
// "active": true on a stopped monitor; switches_locked for a change of
// blockSignals or closingOnly while switchesLocked is on and not turned
// off by the same request; monitor_not_stopped for a restart of a monitor
// that is not stopped.
func monitorGuard(c *Change[protocol.Monitor]) *httpapi.Error {
	old := c.Old
	if old == nil {
		return nil
	}
	if monitorLocked(old, c) {
		return refuse(errcode.MonitorLocked,
			"Monitor Lock is on and the monitor stopped this session; changes open again from 5 PM to 6 PM New York time")
	}
	switch c.Op {
	case OpPatch:
		if active, ok := monitorSentBool(c.Sent, "active"); ok && active && monitorIsStopped(old) {
			return refuse(errcode.MonitorStoppedUseRestart,
				"a stopped monitor resumes only by the restart operation")
		}
		if monitorSwitchesLocked(old, c.Sent) {
			return refuse(errcode.SwitchesLocked,
				"blockSignals and closingOnly are locked; send switchesLocked false in the same request or unlock first")
		}
	case OpAction:
		if c.Action == "restart" && !monitorIsStopped(old) {
			return refuse(errcode.MonitorNotStopped, "only a stopped monitor can be restarted")
		}
	}
	return nil
}

// monitorValidate checks a monitor on its own and reports every field at
// fault (422 validation_failed).
func monitorValidate(c *Change[protocol.Monitor]) *httpapi.Error {
	m := c.New
	if m == nil {
		return nil
	}
	var f fieldErrs
	monitorCheckLimit(&f, "profitTarget", m.ProfitTarget)
	monitorCheckLimit(&f, "lossLimit", m.LossLimit)
	monitorCheckLimit(&f, "trailingDrawdown", m.TrailingDrawdown)
	monitorCheckProfitFloor(&f, "minimumProfitDrawdown", m.MinimumProfitDrawdown)

	master, hasMaster := monitorCheckWindow(&f, "masterWindow", m.MasterWindow, false)

	if len(m.TradingWindows) > MonitorMaxTradingWindows {
		f.limit("tradingWindows", errcode.FieldCodeLessThanEqual, MonitorMaxTradingWindows)
	}
	spans := make([]*monitorSpan, len(m.TradingWindows))
	for i, w := range m.TradingWindows {
		s, ok := monitorCheckWindow(&f, path("tradingWindows", i), w.Window, true)
		if ok && w.Enabled {
			spans[i] = &s
		}
	}
	overlap := make([]bool, len(spans))
	for i := range spans {
		for j := i + 1; j < len(spans); j++ {
			if spans[i] != nil && spans[j] != nil && spans[i].overlaps(spans[j]) {
				overlap[i], overlap[j] = true, true
			}
		}
	}
	for i, o := range overlap {
		if o {
			f.add(path("tradingWindows", i), errcode.FieldCodeWindowsOverlap)
		}
	}

	if m.ClosingOnlyAfter != "" {
		t, ok := monitorParseTime(m.ClosingOnlyAfter)
		switch {
		case !ok:
			f.pattern("closingOnlyAfter", TimePattern)
		case hasMaster && !master.strictlyInside(t):
			f.add("closingOnlyAfter", errcode.FieldCodeOutsideWindow)
		}
	}
	if m.AutoFlattenAt != "" {
		if _, ok := monitorParseTime(m.AutoFlattenAt); !ok {
			f.pattern("autoFlattenAt", TimePattern)
		}
	}
	if m.OnTrip != protocol.OnTripFlatten && m.OnTrip != protocol.OnTripNone {
		f.allowed("onTrip", protocol.OnTripFlatten, protocol.OnTripNone)
	}
	return f.err()
}

// monitorCheckLimit checks a P&L limit: 0 ≤ amount ≤ MonitorMaxAmount,
// and an amount above 0 when it is enabled.
func monitorCheckLimit(f *fieldErrs, name string, l protocol.Limit) {
	monitorCheckAmount(f, path(name, "amount"), l.Amount, l.Enabled)
}

// monitorCheckAmount checks the dollar amount at path at: 0 ≤ v ≤
// MonitorMaxAmount (out_of_range limit 0, less_than_equal), and above 0
// when needed (required_when_enabled). It reports whether v is valid.
func monitorCheckAmount(f *fieldErrs, at string, v float64, needed bool) bool {
	switch {
	case v < 0:
		f.limit(at, errcode.FieldCodeOutOfRange, 0)
	case v > MonitorMaxAmount:
		f.limit(at, errcode.FieldCodeLessThanEqual, MonitorMaxAmount)
	case needed && v == 0:
		f.add(at, errcode.FieldCodeRequiredWhenEnabled)
	default:
		return true
	}
	return false
}

// monitorCheckProfitFloor checks a minimum-profit drawdown: trigger and
// floor are amounts (0 ≤ v ≤ MonitorMaxAmount; a negative floor, a loss
// limit in disguise, is out_of_range limit 0 like any negative amount),
// and an enabled one needs a trigger above 0 (required_when_enabled) and a
// floor below its trigger (out_of_range at the floor, with the trigger as
// limit). The floor is judged against the trigger only when the trigger
// itself is valid. A disabled one keeps its numbers unjudged against each
// other, so that the default (0 and 0) is valid.
func monitorCheckProfitFloor(f *fieldErrs, name string, d protocol.ProfitFloor) {
	trigger := monitorCheckAmount(f, path(name, "trigger"), d.Trigger, d.Enabled)
	at := path(name, "floor")
	if monitorCheckAmount(f, at, d.Floor, false) && d.Enabled && trigger && d.Floor >= d.Trigger {
		f.limit(at, errcode.FieldCodeOutOfRange, d.Trigger)
	}
}

// monitorParseTime parses a time of day of TimePattern into minutes after
// midnight.
func monitorParseTime(s string) (int, bool) {
	if !monitorTimeRE.MatchString(s) {
		return 0, false
	}
	return minuteOfDay(s)
}

// monitorSpan is a valid weekly window: its days (Monday 0; all seven when
// none were given) and its start and end in minutes after midnight. End
// before start runs past midnight into the next day.
type monitorSpan struct {
	days       []int
	start, end int
}

// monitorSlotsPerDay is the number of 5-minute marks in a day; windows
// start and end on them.
const monitorSlotsPerDay = 24 * 60 / 5

// slots marks the 5-minute slots of the week the window covers, wrapping
// from Sunday night into Monday.
func (s *monitorSpan) slots() []bool {
	week := make([]bool, 7*monitorSlotsPerDay)
	length := s.end - s.start
	if length < 0 {
		length += 24 * 60
	}
	for _, d := range s.days {
		first := d*monitorSlotsPerDay + s.start/5
		for k := 0; k < length/5; k++ {
			week[(first+k)%len(week)] = true
		}
	}
	return week
}

// overlaps reports whether the two windows share a minute of the week.
func (s *monitorSpan) overlaps(o *monitorSpan) bool {
	a, b := s.slots(), o.slots()
	for i := range a {
		if a[i] && b[i] {
			return true
		}
	}
	return false
}

// strictlyInside reports whether the time of day t (minutes) lies inside
// the window's hours, neither at its start nor at its end.
func (s *monitorSpan) strictlyInside(t int) bool {
	if s.start < s.end {
		return s.start < t && t < s.end
	}
	return t > s.start || t < s.end // past midnight
}

// monitorCheckWindow checks a weekly window at path at and returns it when
// it is valid and sets hours (ok). Days are mon…sun without repeats; a
// window with days, or with one of start and end, needs both
// (required_when_days_set when days are set, else required); needTimes
// makes start and end required even without days (trading windows; a
// master window with neither days nor hours is no window). Start equal to
// end is empty_window.
func monitorCheckWindow(f *fieldErrs, at string, w protocol.Window, needTimes bool) (span monitorSpan, ok bool) {
	ok = true
	var seen [7]bool
	for i, d := range w.Days {
		k := dayIndex(d)
		if k < 0 || seen[k] {
			f.allowed(path(at, "days", i), Days...)
			ok = false
			continue
		}
		seen[k] = true
		span.days = append(span.days, k)
	}
	if !needTimes && len(w.Days) == 0 && w.Start == "" && w.End == "" {
		return span, false
	}
	if len(w.Days) == 0 {
		span.days = []int{0, 1, 2, 3, 4, 5, 6}
	}
	missing := errcode.FieldCodeRequired
	if len(w.Days) > 0 {
		missing = errcode.FieldCodeRequiredWhenDaysSet
	}
	times := [2]int{}
	for i, v := range [2]string{w.Start, w.End} {
		name := [2]string{"start", "end"}[i]
		if v == "" {
			f.add(path(at, name), missing)
			ok = false
			continue
		}
		t, good := monitorParseTime(v)
		if !good {
			f.pattern(path(at, name), TimePattern)
			ok = false
			continue
		}
		times[i] = t
	}
	if !ok {
		return span, false
	}
	if times[0] == times[1] {
		f.add(at, errcode.FieldCodeEmptyWindow)
		return span, false
	}
	span.start, span.end = times[0], times[1]
	return span, true
}

// monitorTandemFollower reports whether the account is a follower of one
// of the user's Tandem copiers, active or not.
func monitorTandemFollower(s *Snapshot, account string) bool {
	for _, cp := range s.Copiers {
		if !cp.Tandem {
			continue
		}
		for _, fl := range cp.Followers {
			if fl.Account == account {
				return true
			}
		}
	}
	return false
}

// monitorAgentTooOld refuses a desktop monitor with its minimum-profit
// drawdown enabled while the user's connected agent announced a protocol
// older than protocol.ProfitFloorProtocolVersion (409
// addon_version_unsupported): such an agent ignores the member and would
// never trip by it. A disconnected agent is left to the generic handlers
// (addon_disconnected); the broker family's engines run in the relay.
func monitorAgentTooOld(c *Change[protocol.Monitor], m *protocol.Monitor) *httpapi.Error {
	if m == nil || !m.MinimumProfitDrawdown.Enabled || c.Family == FamilyBroker || c.Snap == nil ||
		!c.Snap.AgentConnected || c.Snap.AgentProtocol >= protocol.ProfitFloorProtocolVersion {
		return nil
	}
	return refuse(errcode.AddonVersionUnsupported,
		"the minimum-profit drawdown needs a newer trading add-on: update the agent, or turn the minimum-profit drawdown off")
}

// monitorCheck judges a monitor against the user's other resources: a
// create needs a known account without a monitor (404 account_not_found,
// in the broker family 409 account_identity_unresolved; 409 already_exists); a Tandem copier's follower keeps its monitor and
// keeps it active (409 tandem_dependency); blockSignals cannot be turned
// off while the controls block all signals (409 field_locked). A create
// or change that leaves the minimum-profit drawdown enabled needs an agent
// that runs it (monitorAgentTooOld).
func monitorCheck(c *Change[protocol.Monitor]) *httpapi.Error {
	if c.Op != OpDelete {
		if e := monitorAgentTooOld(c, c.New); e != nil {
			return e
		}
	}
	switch c.Op {
	case OpCreate:
		if c.New == nil {
			return nil
		}
		if c.Family == FamilyBroker {
			if !c.Snap.HasBrokerAccount(c.New.Account) {
				return refuse(errcode.AccountIdentityUnresolved, brokerAccountDetail,
					httpapi.FieldError{Path: "account", Code: errcode.AccountIdentityUnresolved})
			}
		} else if !c.Snap.HasAccount(c.New.Account) {
			return refuse(errcode.AccountNotFound, "the account is not on any of your platform connections"+c.Snap.yourAccounts(),
				httpapi.FieldError{Path: "account", Code: errcode.AccountNotFound})
		}
		if c.Snap.MonitorOf(c.New.Account) != nil {
			return refuse(errcode.AlreadyExists, "a monitor already exists for the account")
		}
	case OpDelete:
		if c.Old != nil && monitorTandemFollower(c.Snap, c.Old.Account) {
			return refuse(errcode.TandemDependency,
				"the account is a follower of a Tandem copier, which needs its monitor")
		}
	case OpPatch:
		if c.Old == nil || c.New == nil {
			return nil
		}
		if c.Old.Active && !c.New.Active && monitorTandemFollower(c.Snap, c.Old.Account) {
			return refuse(errcode.TandemDependency,
				"the account is a follower of a Tandem copier, which needs its monitor active")
		}
		if c.Snap.Controls.BlockAllSignals && c.Old.BlockSignals && !c.New.BlockSignals {
			return refuse(errcode.FieldLocked, "signals are blocked for every account by the controls",
				httpapi.FieldError{Path: "blockSignals", Code: errcode.FieldCodeManagedByControls})
		}
	}
	return nil
}

// monitorRestart is the restart action: it resumes a stopped monitor when
// the agent finds that the monitor, restarted, would not stop again at once
// (409 would_retrip otherwise).
func monitorRestart(c *Change[protocol.Monitor], ag Agent) *httpapi.Error {
	if c.Old == nil || c.New == nil || !monitorIsStopped(c.Old) {
		return refuse(errcode.MonitorNotStopped, "only a stopped monitor can be restarted")
	}
	if ag == nil {
		return refuse(errcode.AddonDisconnected, "the restart needs the add-on connected")
	}
	if e := monitorAgentTooOld(c, c.New); e != nil {
		return e
	}
	next := *c.New
	next.State = protocol.MonitorActive
	next.Active = true
	next.StoppedReason = ""
	next.RestartedFrom = c.Old.StoppedAt // the stop this restart resumes from
	next.StoppedAt = nil
	verdict, err := ag.CheckMonitorRestart(next)
	if err != nil {
		return err
	}
	if verdict.WouldRetrip {
		return refuse(errcode.WouldRetrip,
			"the monitor would stop again at once; set limits beyond the current session P&L first")
	}
	*c.New = next
	return nil
}
