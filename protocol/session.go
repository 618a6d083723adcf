package protocol

import (
	"time"

	// The New York zone is built in, so the session times are right on a
	// machine without a zone database.
	_ "time/tzdata"
)

// Trading sessions and the Monitor Lock window, in New York time. A session
// starts at 6 PM New York time and runs to 6 PM the next day (23 or 25 hours
// on the days daylight saving time starts or ends). The Monitor Lock window
// is the hour before a session ends, 5 PM to 6 PM New York time: in it a
// locked monitor may be changed again.

// Hours of the session reset and the Monitor Lock window, New York time.
const (
	// SessionResetHour is the hour (6 PM) at which a session starts.
	SessionResetHour = 18
	// MonitorLockWindowHour is the hour (5 PM) at which the Monitor Lock
	// window opens; it closes at SessionResetHour.
	MonitorLockWindowHour = 17
)

// sessionZone is America/New_York, from the zone data built into the binary.
var sessionZone = mustLoadSessionZone()

// mustLoadSessionZone loads America/New_York; time/tzdata guarantees it is
// there, so a failure is a broken build.
func mustLoadSessionZone() *time.Location {
	loc, err := time.LoadLocation("America/New_York")
	if err != nil {
		panic("protocol: the America/New_York zone is missing: " + err.Error())
	}
	return loc
}

// NewYork returns the America/New_York time zone, in which sessions and
// the times of day of the management resources are given.
func NewYork() *time.Location { return sessionZone }

// SessionStart returns the start of the session t falls in: the last 6 PM
// New York time at or before t. The result is in New York time.
func SessionStart(t time.Time) time.Time {
	ny := t.In(sessionZone)
	start := time.Date(ny.Year(), ny.Month(), ny.Day(), SessionResetHour, 0, 0, 0, sessionZone)
	if start.After(t) {
		// Before 6 PM: the session started at 6 PM the day before. The
		// calendar day is stepped, not 24 hours, so DST days are right.
		start = time.Date(ny.Year(), ny.Month(), ny.Day()-1, SessionResetHour, 0, 0, 0, sessionZone)
	}
	return start
}

// NextSessionStart returns the start of the session after the one t falls
// in: the first 6 PM New York time after t. The result is in New York time.
func NextSessionStart(t time.Time) time.Time {
	s := SessionStart(t)
	return time.Date(s.Year(), s.Month(), s.Day()+1, SessionResetHour, 0, 0, 0, sessionZone)
}

// InMonitorLockWindow reports whether t is in the Monitor Lock window, from
// 5 PM (included) to 6 PM (excluded) New York time.
func InMonitorLockWindow(t time.Time) bool {
	return t.In(sessionZone).Hour() == MonitorLockWindowHour
}

// InSession reports whether at falls in the same session as now: at or
// after the last 6 PM New York time before now, and not after now's
// session's end. A nil at is in no session.
func InSession(at *time.Time, now time.Time) bool {
	if at == nil {
		return false
	}
	return !at.Before(SessionStart(now)) && at.Before(NextSessionStart(now))
}
