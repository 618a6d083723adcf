package monitor

import (
	"strconv"
	"time"

	"tradebridge/protocol"
)

// clockTime is a time of day in minutes after midnight, New York time; -1
// is none.
type clockTime int

// noTime is the clockTime of an empty or malformed "HH:MM".
const noTime clockTime = -1

// parseClock parses "HH:MM" (00:00 to 23:59); anything else is noTime.
func parseClock(s string) clockTime {
	if len(s) != 5 || s[2] != ':' {
		return noTime
	}
	h, err1 := strconv.Atoi(s[:2])
	m, err2 := strconv.Atoi(s[3:])
	if err1 != nil || err2 != nil || h < 0 || h > 23 || m < 0 || m > 59 {
		return noTime
	}
	return clockTime(h*60 + m)
}

// on returns the instant of c on the New York calendar day of d (a time
// in New York). On the days daylight saving time changes, a time of day
// that does not exist is normalized forward by time.Date.
func (c clockTime) on(d time.Time) time.Time {
	return time.Date(d.Year(), d.Month(), d.Day(), int(c)/60, int(c)%60, 0, 0, protocol.NewYork())
}

// dayNames are the days of a window, indexed by time.Weekday.
var dayNames = [7]string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// window is a parsed weekly window: the weekdays it starts on and its
// hours. A window whose end is before its start runs past midnight; the
// day it belongs to is the day it starts.
type window struct {
	days       [7]bool // by time.Weekday
	start, end clockTime
}

// parseWindow parses w; ok is false when it has no valid hours (no
// window).
func parseWindow(w protocol.Window) (window, bool) {
	var out window
	out.start, out.end = parseClock(w.Start), parseClock(w.End)
	if out.start == noTime || out.end == noTime || out.start == out.end {
		return window{}, false
	}
	if len(w.Days) == 0 {
		out.days = [7]bool{true, true, true, true, true, true, true}
	}
	for _, d := range w.Days {
		for i, n := range dayNames {
			if d == n {
				out.days[i] = true
			}
		}
	}
	return out, true
}

// occurrence returns the occurrence of the window that contains t: its
// start and end. ok is false when t is in none. Only the occurrences
// starting on t's New York day and the day before can contain it.
func (w window) occurrence(t time.Time) (start, end time.Time, ok bool) {
	ny := t.In(protocol.NewYork())
	for back := 0; back <= 1; back++ {
		day := time.Date(ny.Year(), ny.Month(), ny.Day()-back, 12, 0, 0, 0, protocol.NewYork())
		if !w.days[day.Weekday()] {
			continue
		}
		start = w.start.on(day)
		endDay := day
		if w.end < w.start {
			endDay = time.Date(day.Year(), day.Month(), day.Day()+1, 12, 0, 0, 0, protocol.NewYork())
		}
		end = w.end.on(endDay)
		if !t.Before(start) && t.Before(end) {
			return start, end, true
		}
	}
	return time.Time{}, time.Time{}, false
}

// contains reports whether t falls in an occurrence of the window.
func (w window) contains(t time.Time) bool {
	_, _, ok := w.occurrence(t)
	return ok
}

// plan is a monitor's time rules, parsed once per configuration.
type plan struct {
	master    window
	hasMaster bool
	trading   []window // the enabled, valid trading windows
	// closingAfter is closingOnlyAfter; noTime for none.
	closingAfter clockTime
	// flattenAt is autoFlattenAt; noTime for none.
	flattenAt clockTime
}

// newPlan parses a monitor's time rules. Settings the relay would have
// refused (malformed times, empty windows) are ignored.
func newPlan(m *protocol.Monitor) plan {
	p := plan{closingAfter: parseClock(m.ClosingOnlyAfter), flattenAt: parseClock(m.AutoFlattenAt)}
	p.master, p.hasMaster = parseWindow(m.MasterWindow)
	for _, tw := range m.TradingWindows {
		if !tw.Enabled {
			continue
		}
		if w, ok := parseWindow(tw.Window); ok {
			p.trading = append(p.trading, w)
		}
	}
	return p
}

// outside returns the reason a monitor running at t is outside its
// trading hours: reasonMasterWindow, reasonTradingWindows, or "" when it
// is inside them.
func (p *plan) outside(t time.Time) string {
	if p.hasMaster && !p.master.contains(t) {
		return reasonMasterWindow
	}
	if len(p.trading) == 0 {
		return ""
	}
	for _, w := range p.trading {
		if w.contains(t) {
			return ""
		}
	}
	return reasonTradingWindows
}

// closingOnlyAt reports whether closingOnlyAfter holds at t: from that
// time of day until the master window's occurrence ends, or, without a
// master window, until the session ends (6 PM New York time).
func (p *plan) closingOnlyAt(t time.Time) bool {
	if p.closingAfter == noTime {
		return false
	}
	var from time.Time
	if p.hasMaster {
		start, _, ok := p.master.occurrence(t)
		if !ok {
			return false
		}
		from = p.closingAfter.on(start)
		if from.Before(start) {
			from = p.closingAfter.on(start.AddDate(0, 0, 1))
		}
	} else {
		s := protocol.SessionStart(t)
		from = p.closingAfter.on(s)
		if from.Before(s) {
			from = p.closingAfter.on(s.AddDate(0, 0, 1))
		}
	}
	return !t.Before(from)
}

// flattenInstant returns the latest autoFlattenAt instant at or before t
// (zero when the monitor has none).
func (p *plan) flattenInstant(t time.Time) time.Time {
	if p.flattenAt == noTime {
		return time.Time{}
	}
	ny := t.In(protocol.NewYork())
	at := p.flattenAt.on(ny)
	if at.After(t) {
		at = p.flattenAt.on(time.Date(ny.Year(), ny.Month(), ny.Day()-1, 12, 0, 0, 0, protocol.NewYork()))
	}
	return at
}
