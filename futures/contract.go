package futures

import (
	"time"

	"tradebridge/protocol"
)

// ListedYears is the listing horizon: a contract whose year is more than
// ListedYears after the current one is not listed yet.
const ListedYears = 10

// Contract is one delivery month of a root. The zero Contract is no
// contract; the others come from Resolve, Root.Front and Contract.Next.
type Contract struct {
	Root  *Root
	Year  int
	Month time.Month
	// Name is the contract name, "ES 12-26".
	Name string
	// RollDay is the roll date and LastDay the last trading day, as
	// midnight UTC of their New York calendar day.
	RollDay, LastDay time.Time
	// RollAt is the instant from which the next contract is the front
	// month: when the roll date's session opens.
	RollAt time.Time
	// ExpiresAt is the instant from which the contract no longer trades:
	// when the last trading day's session closes.
	ExpiresAt time.Time
}

// newContract returns the contract of r's month in year (a contract month
// of r).
func newContract(r *Root, year int, month time.Month) Contract {
	c := Contract{Root: r, Year: year, Month: month, Name: protocol.ContractName(r.Symbol, month, year)}
	var roll, last time.Time // dates (midnight UTC of a New York calendar day)
	switch r.Family {
	case FamilyIndex:
		last = nthWeekday(year, month, time.Friday, 3)
		roll = last.AddDate(0, 0, -8)
	case FamilyEnergy:
		last = date(year, month-1, 20)
		roll = last.AddDate(0, 0, -8)
	case FamilyMetal:
		last = date(year, month, 27)
		roll = date(year, month-1, 25)
	}
	c.RollDay, c.LastDay = roll, last
	c.RollAt = newYork(roll.AddDate(0, 0, -1), SessionOpenHour) // the roll date's session opens
	c.ExpiresAt = newYork(last, SessionCloseHour)               // the last day's session closes
	return c
}

// Next returns the contract that follows c: the root's next contract
// month.
func (c Contract) Next() Contract {
	for _, m := range c.Root.Months {
		if m > c.Month {
			return newContract(c.Root, c.Year, m)
		}
	}
	return newContract(c.Root, c.Year+1, c.Root.Months[0])
}

// Open reports whether c trades at now: inside a session of the trading
// hours, and before the contract expires.
func (c Contract) Open(now time.Time) bool {
	return now.Before(c.ExpiresAt) && SessionFrom(now).Contains(now)
}

// upcomingSessions is how many sessions Info lists.
const upcomingSessions = 5

// Info describes c at now: root, description, exchange, currency, tick
// size and values, expiry (the last trading day) and roll date
// (YYYY-MM-DD, New York), the next contract, the trading hours, whether
// the market is open at now, and the next five sessions in RFC 3339 UTC
// (the current one first while it is open), none past the contract's
// expiry.
func (c Contract) Info(now time.Time) protocol.InstrumentInfo {
	r := c.Root
	info := protocol.InstrumentInfo{
		Instrument:     c.Name,
		Root:           r.Symbol,
		Description:    r.Description,
		Exchange:       r.Exchange,
		Currency:       r.Currency,
		TickSize:       r.TickSize,
		PointValue:     r.PointValue,
		TickValue:      r.TickValue,
		Expiry:         c.LastDay.Format(time.DateOnly),
		RollDate:       c.RollDay.Format(time.DateOnly),
		NextInstrument: c.Next().Name,
		TradingHours:   TradingHours(),
		MarketOpen:     c.Open(now),
		Sessions:       []protocol.TradingWindow{},
	}
	for s := SessionFrom(now); len(info.Sessions) < upcomingSessions && s.Open.Before(c.ExpiresAt); s = s.Next() {
		info.Sessions = append(info.Sessions, protocol.TradingWindow{
			Open: s.Open.UTC().Format(time.RFC3339), Close: s.Close.UTC().Format(time.RFC3339)})
	}
	return info
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
// afternoon hours, the only ones this package uses.
func newYork(d time.Time, hour int) time.Time {
	offset := 5 // EST
	dstStart := nthWeekday(d.Year(), time.March, time.Sunday, 2)
	dstEnd := nthWeekday(d.Year(), time.November, time.Sunday, 1)
	if !d.Before(dstStart) && d.Before(dstEnd) {
		offset = 4 // EDT
	}
	return time.Date(d.Year(), d.Month(), d.Day(), hour+offset, 0, 0, 0, time.UTC)
}
