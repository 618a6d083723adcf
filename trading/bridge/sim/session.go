package sim

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"tradebridge/futures"
)

// Trading sessions are futures': CME Globex hours, Sunday 18:00 to Friday
// 17:00 New York time with a daily break from 17:00 to 18:00. What follows
// is the simulator's use of them: the session clock that expires Day
// orders and restarts session figures, and the numbering of sessions that
// aligns bars and seeds the generated history.

// tradingSession is one trading session.
type tradingSession = futures.Session

// sessionMinutes is the length of every session in minutes.
const sessionMinutes = futures.SessionMinutes

// sessionAt returns the session current at t: the last one that opened at
// or before t. Between Friday's close and Sunday's open it is still the
// session that closed on Friday.
func sessionAt(t time.Time) tradingSession {
	s := futures.SessionFrom(t)
	if t.Before(s.Open) {
		s = s.Prev()
	}
	return s
}

// sessionStartAt returns the opening of the trading session current at t.
func sessionStartAt(t time.Time) time.Time { return sessionAt(t).Open }

// nextSessionStart returns the first session opening strictly after t.
func nextSessionStart(t time.Time) time.Time {
	s := futures.SessionFrom(t)
	if !s.Open.After(t) {
		s = s.Next()
	}
	return s.Open
}

// nextSessionClose returns the first session close strictly after t: the
// instant a Day order submitted at t expires.
func nextSessionClose(t time.Time) time.Time { return futures.SessionFrom(t).Close }

// weekStartAt returns the opening of the trading week current at t: the
// latest Sunday 18:00 New York time at or before t, when Monday's session
// opens.
func weekStartAt(t time.Time) time.Time {
	s := sessionAt(t)
	for s.Day.Weekday() != time.Monday {
		s = s.Prev()
	}
	return s.Open
}

// sessionOn returns the session of a trade date d (a Monday to Friday).
func sessionOn(d time.Time) tradingSession {
	s, _ := futures.SessionOn(d)
	return s
}

// date returns midnight UTC of a calendar day, normalizing month and day as
// time.Date does.
func date(year int, month time.Month, day int) time.Time {
	return time.Date(year, month, day, 0, 0, 0, 0, time.UTC)
}

// sessionEpoch is the Monday from which sessions and weeks are numbered, so
// that bars of several days or weeks align the same way in every request.
var sessionEpoch = date(2000, time.January, 3)

// daysSinceEpoch counts calendar days from sessionEpoch to d (a date).
func daysSinceEpoch(d time.Time) int64 {
	return int64(d.Sub(sessionEpoch).Round(time.Hour) / (24 * time.Hour))
}

// sessionIndex numbers trade dates: sessionEpoch is 0, each Monday to
// Friday after it one more.
func sessionIndex(d time.Time) int64 {
	n := daysSinceEpoch(d)
	w := floorDiv(n, 7)
	return w*5 + min(n-w*7, 4)
}

// sessionAtIndex returns the session numbered i (see sessionIndex).
func sessionAtIndex(i int64) tradingSession {
	w := floorDiv(i, 5)
	return sessionOn(sessionEpoch.AddDate(0, 0, int(w*7+i-w*5)))
}

// floorDiv divides rounding towards minus infinity.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// startSessions sets the session clock at construction time.
func (p *Platform) startSessions(now time.Time) {
	p.sessionStart = sessionStartAt(now)
	p.nextReset = nextSessionStart(now)
	p.weekStart = weekStartAt(now)
	for _, a := range p.accounts {
		a.marks.reset(p.figures(a))
	}
}

// sessionsLocked processes, in time order, every session boundary the clock
// has passed since the last call: Day orders expire at each session close,
// and the trading session resets at each session open. It runs with p.mu
// held, before the markets advance, so fills made afterwards belong to the
// session current at now.
func (p *Platform) sessionsLocked(now time.Time) {
	for {
		next, expiry := p.nextReset, false
		if !p.nextExpiry.IsZero() && !p.nextExpiry.After(next) {
			next, expiry = p.nextExpiry, true
		}
		if next.After(now) {
			return
		}
		if expiry {
			p.expireLocked(next)
		} else {
			p.resetLocked(next)
		}
	}
}

// expireLocked cancels every working Day order whose session closed at or
// before t, and finds the next expiry.
func (p *Platform) expireLocked(t time.Time) {
	var next time.Time
	for _, o := range p.working {
		if o.terminal() || o.expires.IsZero() {
			continue
		}
		if !o.expires.After(t) {
			p.log.Debug("day order expired", zap.String("orderId", o.rec.OrderID))
			p.cancelAt(o, t)
			continue
		}
		if next.IsZero() || o.expires.Before(next) {
			next = o.expires
		}
	}
	p.nextExpiry = next
}

// resetLocked starts the trading session that opens at t: session P&L,
// session commission and watermarks restart, terminal orders and fills of
// earlier sessions are dropped, and each account's new values are published.
func (p *Platform) resetLocked(t time.Time) {
	p.sessionStart = t
	p.nextReset = nextSessionStart(t)
	newWeek := false
	if w := weekStartAt(t); !w.Equal(p.weekStart) {
		p.weekStart, newWeek = w, true
	}
	for _, a := range p.accounts {
		a.sessionGross, a.sessionCommission = 0, 0
		if newWeek {
			a.weekGross, a.weekCommission = 0, 0
		}
		kept := make([]*order, 0, len(a.orders))
		for _, o := range a.orders {
			if !o.terminal() || !o.done.Before(t) {
				kept = append(kept, o)
			}
		}
		a.orders = kept
		a.executions = nil
		a.marks.reset(p.figures(a))
		p.emitAccount(a)
	}
	p.log.Debug("trading session started", zap.Time("at", t))
}

// orderInSession reports whether an order is listed by Orders: it is still
// working, or it ended in the current session.
func (p *Platform) orderInSession(o *order) bool {
	return !o.terminal() || !o.done.Before(p.sessionStart)
}

// closedReject refuses a trade of c while its market is closed at now,
// saying when it reopens, in New York time and UTC, or that the contract
// has expired.
func closedReject(c contract, now time.Time) error {
	if !now.Before(c.ExpiresAt) {
		return reject("market is closed: the contract has expired")
	}
	s := futures.SessionFrom(now)
	if !now.Before(s.Open) {
		s = s.Next()
	}
	return reject(reopenReason(s))
}

// reopenReason is the refusal of a trade before session s opens.
func reopenReason(s tradingSession) string {
	ny := s.Day.AddDate(0, 0, -1) // the session opens on the evening before its trade date
	return fmt.Sprintf("market is closed; it reopens %s %d %s %d at %02d:00 New York time (%s UTC)",
		ny.Weekday(), ny.Day(), ny.Month().String()[:3], ny.Year(), futures.SessionOpenHour,
		s.Open.UTC().Format("2006-01-02 15:04"))
}
