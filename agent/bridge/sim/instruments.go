package sim

import (
	"fmt"
	"math"
	"strings"
	"time"

	"tradebridge/agent/bridge"
	"tradebridge/protocol"
)

// family is a group of roots that share contract months and a roll rule.
type family int

const (
	familyIndex  family = iota // quarterly, expiring on the third Friday
	familyEnergy               // monthly, expiring in the month before
	familyMetal                // bimonthly, rolling in the month before
)

var (
	quarterly = []time.Month{time.March, time.June, time.September, time.December}
	monthly   = []time.Month{time.January, time.February, time.March, time.April, time.May, time.June,
		time.July, time.August, time.September, time.October, time.November, time.December}
	bimonthly = []time.Month{time.February, time.April, time.June, time.August, time.October, time.December}
)

// rootSpec is what the simulator knows of one futures root.
type rootSpec struct {
	symbol     string
	tickSize   float64
	tickValue  float64 // dollars per tick per contract
	pointValue float64 // dollars per point per contract
	decimals   int     // decimal places of a price on the tick grid
	family     family
	months     []time.Month
	base       float64 // starting price of the walk
	dailyVol   float64 // daily volatility of the walk, as a fraction of base
	margin     float64 // approximate exchange maintenance margin, dollars per contract
	activity   int64   // average contracts traded per second, for synthetic volume
	exchange   string
	desc       string
}

// roots lists the simulator's instruments (CME specifications).
var roots = func() map[string]*rootSpec {
	specs := []rootSpec{
		{"ES", 0.25, 12.50, 50, 2, familyIndex, quarterly, 6000, 0.01, 22000, 15, "CME", "E-mini S&P 500"},
		{"MES", 0.25, 1.25, 5, 2, familyIndex, quarterly, 6000, 0.01, 2200, 12, "CME", "Micro E-mini S&P 500"},
		{"NQ", 0.25, 5.00, 20, 2, familyIndex, quarterly, 21000, 0.01, 32000, 6, "CME", "E-mini Nasdaq-100"},
		{"MNQ", 0.25, 0.50, 2, 2, familyIndex, quarterly, 21000, 0.01, 3200, 14, "CME", "Micro E-mini Nasdaq-100"},
		{"YM", 1, 5.00, 5, 0, familyIndex, quarterly, 44000, 0.01, 15000, 2, "CBOT", "E-mini Dow ($5)"},
		{"MYM", 1, 0.50, 0.5, 0, familyIndex, quarterly, 44000, 0.01, 1500, 2, "CBOT", "Micro E-mini Dow"},
		{"RTY", 0.10, 5.00, 50, 1, familyIndex, quarterly, 2300, 0.01, 10000, 2, "CME", "E-mini Russell 2000"},
		{"M2K", 0.10, 0.50, 5, 1, familyIndex, quarterly, 2300, 0.01, 1000, 2, "CME", "Micro E-mini Russell 2000"},
		{"CL", 0.01, 10.00, 1000, 2, familyEnergy, monthly, 70, 0.02, 6000, 6, "NYMEX", "Crude Oil (WTI)"},
		{"MCL", 0.01, 1.00, 100, 2, familyEnergy, monthly, 70, 0.02, 600, 2, "NYMEX", "Micro WTI Crude Oil"},
		{"GC", 0.10, 10.00, 100, 1, familyMetal, bimonthly, 2600, 0.01, 16000, 4, "COMEX", "Gold"},
		{"MGC", 0.10, 1.00, 10, 1, familyMetal, bimonthly, 2600, 0.01, 1600, 2, "COMEX", "Micro Gold"},
	}
	m := make(map[string]*rootSpec, len(specs))
	for i := range specs {
		m[specs[i].symbol] = &specs[i]
	}
	return m
}()

// maxTicks bounds prices in ticks, far above any real price and far below
// the range of int64.
const maxTicks = 1e12

// price returns the price of n ticks, rounded to the tick's decimals so that
// it equals the literal a person would write (2300.1, not 2300.1000000000004).
func (r *rootSpec) price(n int64) float64 {
	return roundTo(float64(n)*r.tickSize, r.decimals)
}

// ticks returns p in ticks and whether p lies on the tick grid.
func (r *rootSpec) ticks(p float64) (int64, bool) {
	if math.IsNaN(p) || math.IsInf(p, 0) {
		return 0, false
	}
	x := p / r.tickSize
	if math.Abs(x) > maxTicks {
		return 0, false
	}
	n := math.Round(x)
	return int64(n), math.Abs(x-n) < 1e-6
}

func (r *rootSpec) hasMonth(m time.Month) bool {
	for _, c := range r.months {
		if c == m {
			return true
		}
	}
	return false
}

// contract is one delivery month of a root.
type contract struct {
	root      *rootSpec
	year      int
	month     time.Month
	name      string    // "ES 12-26"
	rollDay   time.Time // the roll date (a date from date)
	lastDay   time.Time // the last trading day (a date from date)
	rollAt    time.Time // from this instant the next contract is the front month
	expiresAt time.Time // from this instant the contract no longer trades
}

func newContract(r *rootSpec, year int, month time.Month) contract {
	c := contract{root: r, year: year, month: month, name: protocol.ContractName(r.symbol, month, year)}
	var roll, last time.Time // dates (midnight UTC of a New York calendar day)
	switch r.family {
	case familyIndex:
		last = nthWeekday(year, month, time.Friday, 3)
		roll = last.AddDate(0, 0, -8)
	case familyEnergy:
		last = date(year, month-1, 20)
		roll = last.AddDate(0, 0, -8)
	case familyMetal:
		last = date(year, month, 27)
		roll = date(year, month-1, 25)
	}
	c.rollDay, c.lastDay = roll, last
	c.rollAt = newYork(roll.AddDate(0, 0, -1), 18) // the roll date's session opens
	c.expiresAt = newYork(last, 17)                // the last day's session closes
	return c
}

// front returns the root's front month at now.
func (r *rootSpec) front(now time.Time) contract {
	for y := now.Year() - 1; ; y++ {
		for _, m := range r.months {
			if c := newContract(r, y, m); now.Before(c.rollAt) {
				return c
			}
		}
	}
}

// listed returns the contract of year and month if it trades at now, and
// otherwise the cause (bridge.Instrument*) with r.
func (r *rootSpec) listed(year int, month time.Month, now time.Time) (contract, *rootSpec, string) {
	switch {
	case !r.hasMonth(month):
		return contract{}, r, bridge.InstrumentNotContractMonth
	case year > now.Year()+10:
		return contract{}, r, bridge.InstrumentNotListed
	}
	c := newContract(r, year, month)
	if !now.Before(c.expiresAt) {
		return contract{}, r, bridge.InstrumentExpired
	}
	return c, r, ""
}

// resolve turns an instrument as a caller wrote it into a contract trading at
// now: "ES 12-26", "ES" (front month), "ESZ26" or "ESZ6", in any case (the
// forms of protocol.ParseInstrument). A refusal is a *bridge.InstrumentError
// saying why.
func resolve(instrument string, now time.Time) (contract, error) {
	c, r, cause := parseInstrument(protocol.NormalizeInstrument(instrument), now)
	if cause == "" {
		return c, nil
	}
	e := &bridge.InstrumentError{Cause: cause}
	if r != nil {
		e.Root, e.Front = r.symbol, r.front(now).name
		for _, m := range r.months {
			e.Months += string(protocol.MonthCode(m))
		}
	}
	return contract{}, fmt.Errorf("sim: not a contract the simulator trades: %w", e)
}

// parseInstrument resolves s (normalized: trimmed, upper case). On failure
// it returns the cause, and the root when it is one the simulator trades.
//
// The syntax is protocol.ParseInstrument's; the rest is the simulator's:
// a root it trades is that root's front month, a one-digit year is the
// next year ending in that digit, and since every root it trades ends in
// a letter, a name that is no month code but ends in a digit ("ESA26",
// "ES123") is reported malformed (a month code gone wrong), not an
// unknown root.
func parseInstrument(s string, now time.Time) (contract, *rootSpec, string) {
	if r := roots[s]; r != nil {
		return r.front(now), r, ""
	}
	in, err := protocol.ParseInstrument(s)
	if err != nil {
		return contract{}, likelyRoot(s), bridge.InstrumentMalformed
	}
	r := roots[in.Root]
	switch in.Form {
	case protocol.InstrumentContract, protocol.InstrumentMonthCode:
		if r == nil {
			return contract{}, nil, bridge.InstrumentUnknownRoot
		}
		year := 2000 + in.Year
		if in.YearDigits == 1 {
			year = now.Year()
			for year%10 != in.Year {
				year++
			}
		}
		return r.listed(year, in.Month, now)
	}
	if c := s[len(s)-1]; '0' <= c && c <= '9' {
		return contract{}, likelyRoot(s), bridge.InstrumentMalformed
	}
	return contract{}, nil, bridge.InstrumentUnknownRoot
}

// likelyRoot is the root a malformed name s (normalized) seems to be
// written with, when the simulator trades it: the text before the space
// of a contract, else the text before the month letter and year digits
// ("ES" of "ESA26"), or before the digits when there are more than two
// ("ES" of "ES123").
func likelyRoot(s string) *rootSpec {
	if sym, _, ok := strings.Cut(s, " "); ok {
		return roots[sym]
	}
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	switch {
	case !protocol.ValidRoot(s[:i]):
		return nil
	case len(s)-i > 2 || i < 2:
		return roots[s[:i]]
	}
	return roots[s[:i-1]]
}

// date returns midnight UTC of a calendar day, normalizing month and day as
// time.Date does (month 0 is December of the year before).
func date(year int, month time.Month, day int) time.Time {
	return time.Date(year, month, day, 0, 0, 0, 0, time.UTC)
}

// nthWeekday returns the n-th weekday wd of a month.
func nthWeekday(year int, month time.Month, wd time.Weekday, n int) time.Time {
	first := date(year, month, 1)
	offset := (int(wd) - int(first.Weekday()) + 7) % 7
	return first.AddDate(0, 0, offset+7*(n-1))
}

// newYork returns the instant of hour:00 New York time on day d (a date from
// date). Daylight-saving time follows the US rule in force since 2007: from
// the second Sunday of March to the first Sunday of November. It is right for
// afternoon hours, the only ones the simulator uses.
func newYork(d time.Time, hour int) time.Time {
	offset := 5 // EST
	dstStart := nthWeekday(d.Year(), time.March, time.Sunday, 2)
	dstEnd := nthWeekday(d.Year(), time.November, time.Sunday, 1)
	if !d.Before(dstStart) && d.Before(dstEnd) {
		offset = 4 // EDT
	}
	return time.Date(d.Year(), d.Month(), d.Day(), hour+offset, 0, 0, 0, time.UTC)
}

// roundTo rounds x to n decimal places.
func roundTo(x float64, n int) float64 {
	p := math.Pow10(n)
	return math.Round(x*p) / p
}

// cents rounds a dollar amount to cents.
func cents(x float64) float64 { return roundTo(x, 2) }

// next returns the contract that follows c: the root's next contract month.
func (c contract) next() contract {
	for _, m := range c.root.months {
		if m > c.month {
			return newContract(c.root, c.year, m)
		}
	}
	return newContract(c.root, c.year+1, c.root.months[0])
}

// Trading hours. Every root trades CME Globex hours: from Sunday 18:00 to
// Friday 17:00 New York time, with a daily break from 17:00 to 18:00. The
// simulator knows no holidays.

// tradingHours describes the hours in words, for InstrumentInfo.
var tradingHours = protocol.TradingHours{
	TimeZone:    "America/New_York",
	Description: "Sunday 18:00 to Friday 17:00, daily break 17:00-18:00",
}

// upcomingSessions is how many sessions InstrumentInfo lists.
const upcomingSessions = 5

// tradingSession is one trading session: it opens at 18:00 New York time on
// the day before its trade date and closes at 17:00 on the trade date, a
// Monday to Friday. Every session lasts 23 hours (daylight-saving changes
// happen on Sunday mornings, outside every session).
type tradingSession struct {
	day         time.Time // the trade date (a date from date)
	open, close time.Time
}

// sessionMinutes is the length of every session in minutes.
const sessionMinutes = 23 * 60

// sessionOn returns the session of a trade date (a Monday to Friday).
func sessionOn(day time.Time) tradingSession {
	return tradingSession{day: day, open: newYork(day.AddDate(0, 0, -1), sessionOpenHour),
		close: newYork(day, sessionCloseHour)}
}

// isTradeDay reports whether a date has a session: Monday to Friday.
func isTradeDay(d time.Time) bool {
	wd := d.Weekday()
	return wd != time.Saturday && wd != time.Sunday
}

// sessionFrom returns the first session that has not closed at t: the one in
// progress at t, or else the next one to open.
func sessionFrom(t time.Time) tradingSession {
	for d := utcDate(t).AddDate(0, 0, -1); ; d = d.AddDate(0, 0, 1) {
		if isTradeDay(d) {
			if s := sessionOn(d); t.Before(s.close) {
				return s
			}
		}
	}
}

// contains reports whether the market is open at t in s.
func (s tradingSession) contains(t time.Time) bool {
	return !t.Before(s.open) && t.Before(s.close)
}

// next returns the session after s.
func (s tradingSession) next() tradingSession {
	d := s.day.AddDate(0, 0, 1)
	for !isTradeDay(d) {
		d = d.AddDate(0, 0, 1)
	}
	return sessionOn(d)
}

// prev returns the session before s.
func (s tradingSession) prev() tradingSession {
	d := s.day.AddDate(0, 0, -1)
	for !isTradeDay(d) {
		d = d.AddDate(0, 0, -1)
	}
	return sessionOn(d)
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

// marketOpen reports whether c trades at now: inside a session of the
// trading hours, and before the contract expires. Orders that need the
// market, such as Market orders, are refused while it is closed, and prices
// do not move.
func marketOpen(c contract, now time.Time) bool {
	return now.Before(c.expiresAt) && sessionFrom(now).contains(now)
}
