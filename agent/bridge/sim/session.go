package sim

import (
	"fmt"
	"time"

	"go.uber.org/zap"
)

// Trading-session hours, New York time. A session opens at 18:00 on Sunday
// to Thursday and closes at 17:00 on the next day, Monday to Friday.
const (
	sessionOpenHour  = 18
	sessionCloseHour = 17
)

// opensSession reports whether a New York calendar day (a date from date)
// has a session opening at 18:00: Sunday to Thursday.
func opensSession(d time.Time) bool {
	wd := d.Weekday()
	return wd != time.Friday && wd != time.Saturday
}

// closesSession reports whether a New York calendar day has a session
// closing at 17:00: Monday to Friday.
func closesSession(d time.Time) bool {
	wd := d.Weekday()
	return wd != time.Saturday && wd != time.Sunday
}

// utcDate returns midnight UTC of t's UTC calendar day. The New York day of
// t is that day or the one before.
func utcDate(t time.Time) time.Time {
	t = t.UTC()
	return date(t.Year(), t.Month(), t.Day())
}

// sessionStartAt returns the opening of the trading session current at t:
// the latest 18:00 New York time on a Sunday to Thursday at or before t.
// Between Friday's close and Sunday's open it is still the session that
// closed on Friday.
func sessionStartAt(t time.Time) time.Time {
	for d := utcDate(t).AddDate(0, 0, 1); ; d = d.AddDate(0, 0, -1) {
		if o := newYork(d, sessionOpenHour); opensSession(d) && !o.After(t) {
			return o
		}
	}
}

// nextSessionStart returns the first session opening strictly after t.
func nextSessionStart(t time.Time) time.Time {
	for d := utcDate(t).AddDate(0, 0, -1); ; d = d.AddDate(0, 0, 1) {
		if o := newYork(d, sessionOpenHour); opensSession(d) && o.After(t) {
			return o
		}
	}
}

// nextSessionClose returns the first session close strictly after t: the
// instant a Day order submitted at t expires.
func nextSessionClose(t time.Time) time.Time {
	for d := utcDate(t).AddDate(0, 0, -1); ; d = d.AddDate(0, 0, 1) {
		if c := newYork(d, sessionCloseHour); closesSession(d) && c.After(t) {
			return c
		}
	}
}

// weekStartAt returns the opening of the trading week current at t: the
// latest Sunday 18:00 New York time at or before t.
func weekStartAt(t time.Time) time.Time {
	for d := utcDate(t).AddDate(0, 0, 1); ; d = d.AddDate(0, 0, -1) {
		if o := newYork(d, sessionOpenHour); d.Weekday() == time.Sunday && !o.After(t) {
			return o
		}
	}
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
	if !now.Before(c.expiresAt) {
		return reject("market is closed: the contract has expired")
	}
	s := sessionFrom(now)
	if !now.Before(s.open) {
		s = s.next()
	}
	return reject(reopenReason(s))
}

// reopenReason is the refusal of a trade before session s opens.
func reopenReason(s tradingSession) string {
	ny := s.day.AddDate(0, 0, -1) // the session opens on the evening before its trade date
	return fmt.Sprintf("market is closed; it reopens %s %d %s %d at %02d:00 New York time (%s UTC)",
		ny.Weekday(), ny.Day(), ny.Month().String()[:3], ny.Year(), sessionOpenHour,
		s.open.UTC().Format("2006-01-02 15:04"))
}
