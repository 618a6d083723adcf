package futures

import (
	"time"

	"tradebridge/protocol"
)

// Trading hours, New York time. A session opens at SessionOpenHour on the
// day before its trade date (Sunday to Thursday) and closes at
// SessionCloseHour on the trade date (Monday to Friday).
const (
	SessionOpenHour  = 18
	SessionCloseHour = 17
	// SessionMinutes is the length of every session in minutes:
	// daylight-saving changes happen on Sunday mornings, outside every
	// session.
	SessionMinutes = 23 * 60
	// SessionLength is the length of every session.
	SessionLength = SessionMinutes * time.Minute
)

// The trading hours in words.
const (
	TimeZone         = "America/New_York"
	HoursDescription = "Sunday 18:00 to Friday 17:00, daily break 17:00-18:00"
)

// TradingHours describes the trading hours of every root, for
// protocol.InstrumentInfo.
func TradingHours() protocol.TradingHours {
	return protocol.TradingHours{TimeZone: TimeZone, Description: HoursDescription}
}

// Session is one trading session: it opens at 18:00 New York time on the
// day before its trade date and closes at 17:00 on the trade date, a Monday
// to Friday.
type Session struct {
	// Day is the trade date, as midnight UTC of its New York calendar day.
	Day time.Time
	// Open is the first instant of the session; Close the first instant
	// after it.
	Open, Close time.Time
}

// IsTradeDay reports whether a calendar day (the year, month and day of d
// in its location) has a session: Monday to Friday.
func IsTradeDay(d time.Time) bool {
	wd := d.Weekday()
	return wd != time.Saturday && wd != time.Sunday
}

// SessionOn returns the session of a trade date: the year, month and day
// of day in its location. It is false for a Saturday or a Sunday, which
// have none.
func SessionOn(day time.Time) (Session, bool) {
	d := date(day.Year(), day.Month(), day.Day())
	if !IsTradeDay(d) {
		return Session{}, false
	}
	return sessionOn(d), true
}

// sessionOn returns the session of a trade date d (a date from date, Monday
// to Friday).
func sessionOn(d time.Time) Session {
	return Session{Day: d, Open: newYork(d.AddDate(0, 0, -1), SessionOpenHour),
		Close: newYork(d, SessionCloseHour)}
}

// SessionFrom returns the first session that has not closed at t: the one
// in progress at t, or else the next one to open.
func SessionFrom(t time.Time) Session {
	for d := utcDate(t).AddDate(0, 0, -1); ; d = d.AddDate(0, 0, 1) {
		if IsTradeDay(d) {
			if s := sessionOn(d); t.Before(s.Close) {
				return s
			}
		}
	}
}

// Contains reports whether the market is open at t in s.
func (s Session) Contains(t time.Time) bool {
	return !t.Before(s.Open) && t.Before(s.Close)
}

// Next returns the session after s.
func (s Session) Next() Session {
	d := s.Day.AddDate(0, 0, 1)
	for !IsTradeDay(d) {
		d = d.AddDate(0, 0, 1)
	}
	return sessionOn(d)
}

// Prev returns the session before s.
func (s Session) Prev() Session {
	d := s.Day.AddDate(0, 0, -1)
	for !IsTradeDay(d) {
		d = d.AddDate(0, 0, -1)
	}
	return sessionOn(d)
}

// utcDate returns midnight UTC of t's UTC calendar day. The New York day of
// t is that day or the one before.
func utcDate(t time.Time) time.Time {
	t = t.UTC()
	return date(t.Year(), t.Month(), t.Day())
}
