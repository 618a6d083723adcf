package futures_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/futures"
	"tradebridge/protocol"
)

// monday is a Monday in October 2026, 10:30 New York time, when ES 12-26
// is the front month.
var monday = time.Date(2026, time.October, 5, 14, 30, 0, 0, time.UTC)

func utc(y int, m time.Month, d, h, min int) time.Time {
	return time.Date(y, m, d, h, min, 0, 0, time.UTC)
}

func day(y int, m time.Month, d int) time.Time { return utc(y, m, d, 0, 0) }

// resolve resolves a name that must resolve at now.
func resolve(t *testing.T, name string, now time.Time) futures.Contract {
	t.Helper()
	c, err := futures.Resolve(name, now)
	require.NoError(t, err, name)
	return c
}

func TestContractDates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name              string
		now               time.Time
		roll, last        time.Time
		rollAt, expiresAt time.Time
		next              string
	}{
		// Index: the third Friday, rolling the Thursday eight days before.
		{"ES 12-26", monday, day(2026, 12, 10), day(2026, 12, 18),
			utc(2026, 12, 9, 23, 0), utc(2026, 12, 18, 22, 0), "ES 03-27"},
		// Rolls in standard time, expires in daylight time (14 March 2027).
		{"ES 03-27", monday, day(2027, 3, 11), day(2027, 3, 19),
			utc(2027, 3, 10, 23, 0), utc(2027, 3, 19, 21, 0), "ES 06-27"},
		{"NQ 09-27", monday, day(2027, 9, 9), day(2027, 9, 17),
			utc(2027, 9, 8, 22, 0), utc(2027, 9, 17, 21, 0), "NQ 12-27"},
		// A month that starts on a Friday.
		{"ES 03-30", monday, day(2030, 3, 7), day(2030, 3, 15),
			utc(2030, 3, 6, 23, 0), utc(2030, 3, 15, 21, 0), "ES 06-30"},
		{"M2K 06-29", monday, day(2029, 6, 7), day(2029, 6, 15),
			utc(2029, 6, 6, 22, 0), utc(2029, 6, 15, 21, 0), "M2K 09-29"},
		// Energy: the 20th of the month before, rolling on the 12th.
		{"CL 12-26", monday, day(2026, 11, 12), day(2026, 11, 20),
			utc(2026, 11, 11, 23, 0), utc(2026, 11, 20, 22, 0), "CL 01-27"},
		// Across the year.
		{"CL 01-27", monday, day(2026, 12, 12), day(2026, 12, 20),
			utc(2026, 12, 11, 23, 0), utc(2026, 12, 20, 22, 0), "CL 02-27"},
		// Rolls in standard time, expires in daylight time.
		{"MCL 04-27", monday, day(2027, 3, 12), day(2027, 3, 20),
			utc(2027, 3, 11, 23, 0), utc(2027, 3, 20, 21, 0), "MCL 05-27"},
		// Metal: the 27th of the month, rolling on the 25th of the month
		// before.
		{"GC 12-26", monday, day(2026, 11, 25), day(2026, 12, 27),
			utc(2026, 11, 24, 23, 0), utc(2026, 12, 27, 22, 0), "GC 02-27"},
		{"GC 02-27", monday, day(2027, 1, 25), day(2027, 2, 27),
			utc(2027, 1, 24, 23, 0), utc(2027, 2, 27, 22, 0), "GC 04-27"},
		{"MGC 04-27", monday, day(2027, 3, 25), day(2027, 4, 27),
			utc(2027, 3, 24, 22, 0), utc(2027, 4, 27, 21, 0), "MGC 06-27"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := resolve(t, tc.name, tc.now)
			require.Equal(t, tc.name, c.Name)
			require.Equal(t, tc.roll, c.RollDay, "roll date")
			require.Equal(t, tc.last, c.LastDay, "last trading day")
			require.Equal(t, tc.rollAt, c.RollAt, "roll instant")
			require.Equal(t, tc.expiresAt, c.ExpiresAt, "expiry instant")
			require.Equal(t, tc.next, c.Next().Name)
			require.Equal(t, c, resolve(t, c.Name, c.ExpiresAt.Add(-time.Nanosecond)), "trades to its expiry")
			_, err := futures.Resolve(c.Name, c.ExpiresAt)
			requireCause(t, err, futures.CauseExpired)
		})
	}
}

func TestNextWrapsTheYear(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, next string }{
		{"ES 12-26", "ES 03-27"},
		{"CL 12-26", "CL 01-27"},
		{"GC 12-26", "GC 02-27"},
		{"ES 09-26", "ES 12-26"},
	} {
		c := resolve(t, tc.name, utc(2026, 1, 5, 15, 0))
		next := c.Next()
		require.Equal(t, tc.next, next.Name)
		require.Same(t, c.Root, next.Root)
		require.Equal(t, next, resolve(t, tc.next, utc(2026, 1, 5, 15, 0)))
	}
}

func TestFrontAcrossTheRoll(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		root   string
		rollAt time.Time // the roll date's session opens
		before string
		after  string
	}{
		{"ES", utc(2026, 12, 9, 23, 0), "ES 12-26", "ES 03-27"},
		{"MES", utc(2027, 3, 10, 23, 0), "MES 03-27", "MES 06-27"},
		{"YM", utc(2027, 6, 9, 22, 0), "YM 06-27", "YM 09-27"},
		{"CL", utc(2026, 11, 11, 23, 0), "CL 12-26", "CL 01-27"},
		{"MCL", utc(2026, 12, 11, 23, 0), "MCL 01-27", "MCL 02-27"},
		{"GC", utc(2026, 11, 24, 23, 0), "GC 12-26", "GC 02-27"},
		{"MGC", utc(2027, 1, 24, 23, 0), "MGC 02-27", "MGC 04-27"},
	} {
		t.Run(tc.root, func(t *testing.T) {
			t.Parallel()
			r, ok := futures.Lookup(tc.root)
			require.True(t, ok)
			require.Equal(t, tc.before, r.Front(tc.rollAt.Add(-time.Nanosecond)).Name)
			require.Equal(t, tc.after, r.Front(tc.rollAt).Name)
			require.Equal(t, tc.after, resolve(t, tc.root, tc.rollAt).Name, "a root resolves to its front month")
			require.Equal(t, tc.before, resolve(t, tc.before, tc.rollAt).Name, "the old front month still trades")
			require.Equal(t, tc.rollAt, resolve(t, tc.before, tc.rollAt).RollAt)
		})
	}
}

func TestFrontOverTenYears(t *testing.T) {
	t.Parallel()
	for _, r := range futures.Roots() {
		prev := r.Front(monday)
		for now := monday; now.Before(monday.AddDate(10, 0, 0)); now = now.Add(13 * time.Hour) {
			f := r.Front(now)
			require.True(t, now.Before(f.RollAt), "%s at %v", f.Name, now)
			require.True(t, f.RollAt.Before(f.ExpiresAt))
			require.True(t, f.Open(now) || !futures.SessionFrom(now).Contains(now), "the front month trades")
			if f.Name != prev.Name {
				require.Equal(t, prev.Next(), f, "the front month moves to the next contract")
				require.False(t, now.Before(prev.RollAt))
				prev = f
			}
		}
	}
}

func TestOpen(t *testing.T) {
	t.Parallel()
	ny := newYorkTime(t)
	at := func(y int, m time.Month, d, h, min int) time.Time { return time.Date(y, m, d, h, min, 0, 0, ny) }
	es := resolve(t, "ES 03-27", monday)
	for _, tc := range []struct {
		name string
		at   time.Time
		open bool
	}{
		{"Monday morning", at(2026, time.October, 5, 10, 30), true},
		{"Friday before the close", at(2026, time.October, 9, 16, 59).Add(59 * time.Second), true},
		{"Friday close", at(2026, time.October, 9, 17, 0), false},
		{"Saturday", at(2026, time.October, 10, 12, 0), false},
		{"Sunday before the open", at(2026, time.October, 11, 18, 0).Add(-time.Second), false},
		{"Sunday open", at(2026, time.October, 11, 18, 0), true},
		{"before the daily break", at(2026, time.October, 13, 17, 0).Add(-time.Second), true},
		{"daily break starts", at(2026, time.October, 13, 17, 0), false},
		{"daily break", at(2026, time.October, 13, 17, 30), false},
		{"end of the daily break", at(2026, time.October, 13, 18, 0).Add(-time.Second), false},
		{"daily break ends", at(2026, time.October, 13, 18, 0), true},
		{"Tuesday night", at(2026, time.October, 13, 23, 0), true},
		{"Thursday 18:00", at(2026, time.October, 15, 18, 0), true},
		// Daylight-saving time starts on Sunday 8 March 2026 at 2:00.
		{"DST start Sunday before the open", at(2026, time.March, 8, 17, 59), false},
		{"DST start Sunday open", at(2026, time.March, 8, 18, 0), true},
		{"DST start Monday break", at(2026, time.March, 9, 17, 15), false},
		// And ends on Sunday 1 November 2026 at 2:00.
		{"DST end Sunday before the open", at(2026, time.November, 1, 17, 59), false},
		{"DST end Sunday open", at(2026, time.November, 1, 18, 0), true},
		{"DST end Friday close", at(2026, time.November, 6, 17, 0), false},
		{"winter break", at(2027, time.January, 12, 17, 30), false},
		{"winter open", at(2027, time.January, 12, 18, 0), true},
		{"no holidays: Christmas Day", at(2026, time.December, 25, 12, 0), true},
		{"the last trading day", at(2027, time.March, 19, 16, 59), true},
		{"expired", at(2027, time.March, 19, 17, 0), false},
		{"a session after the expiry", at(2027, time.March, 22, 10, 0), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.open, es.Open(tc.at))
		})
	}
}

func TestInfo(t *testing.T) {
	t.Parallel()
	ny := newYorkTime(t)
	for _, tc := range []struct {
		in   string
		want protocol.InstrumentInfo
	}{
		{"ES", protocol.InstrumentInfo{Instrument: "ES 12-26", Root: "ES", Description: "E-mini S&P 500",
			Exchange: "CME", TickSize: 0.25, PointValue: 50, TickValue: 12.5,
			Expiry: "2026-12-18", RollDate: "2026-12-10", NextInstrument: "ES 03-27"}},
		{"mes", protocol.InstrumentInfo{Instrument: "MES 12-26", Root: "MES", Description: "Micro E-mini S&P 500",
			Exchange: "CME", TickSize: 0.25, PointValue: 5, TickValue: 1.25,
			Expiry: "2026-12-18", RollDate: "2026-12-10", NextInstrument: "MES 03-27"}},
		{"NQZ6", protocol.InstrumentInfo{Instrument: "NQ 12-26", Root: "NQ", Description: "E-mini Nasdaq-100",
			Exchange: "CME", TickSize: 0.25, PointValue: 20, TickValue: 5,
			Expiry: "2026-12-18", RollDate: "2026-12-10", NextInstrument: "NQ 03-27"}},
		{"MNQ", protocol.InstrumentInfo{Instrument: "MNQ 12-26", Root: "MNQ", Description: "Micro E-mini Nasdaq-100",
			Exchange: "CME", TickSize: 0.25, PointValue: 2, TickValue: 0.5,
			Expiry: "2026-12-18", RollDate: "2026-12-10", NextInstrument: "MNQ 03-27"}},
		{"YM 03-27", protocol.InstrumentInfo{Instrument: "YM 03-27", Root: "YM", Description: "E-mini Dow ($5)",
			Exchange: "CBOT", TickSize: 1, PointValue: 5, TickValue: 5,
			Expiry: "2027-03-19", RollDate: "2027-03-11", NextInstrument: "YM 06-27"}},
		{"MYM", protocol.InstrumentInfo{Instrument: "MYM 12-26", Root: "MYM", Description: "Micro E-mini Dow",
			Exchange: "CBOT", TickSize: 1, PointValue: 0.5, TickValue: 0.5,
			Expiry: "2026-12-18", RollDate: "2026-12-10", NextInstrument: "MYM 03-27"}},
		{"RTY", protocol.InstrumentInfo{Instrument: "RTY 12-26", Root: "RTY", Description: "E-mini Russell 2000",
			Exchange: "CME", TickSize: 0.1, PointValue: 50, TickValue: 5,
			Expiry: "2026-12-18", RollDate: "2026-12-10", NextInstrument: "RTY 03-27"}},
		{"M2K", protocol.InstrumentInfo{Instrument: "M2K 12-26", Root: "M2K", Description: "Micro E-mini Russell 2000",
			Exchange: "CME", TickSize: 0.1, PointValue: 5, TickValue: 0.5,
			Expiry: "2026-12-18", RollDate: "2026-12-10", NextInstrument: "M2K 03-27"}},
		{"CL", protocol.InstrumentInfo{Instrument: "CL 11-26", Root: "CL", Description: "Crude Oil (WTI)",
			Exchange: "NYMEX", TickSize: 0.01, PointValue: 1000, TickValue: 10,
			Expiry: "2026-10-20", RollDate: "2026-10-12", NextInstrument: "CL 12-26"}},
		{"MCL 12-26", protocol.InstrumentInfo{Instrument: "MCL 12-26", Root: "MCL", Description: "Micro WTI Crude Oil",
			Exchange: "NYMEX", TickSize: 0.01, PointValue: 100, TickValue: 1,
			Expiry: "2026-11-20", RollDate: "2026-11-12", NextInstrument: "MCL 01-27"}},
		{"GC", protocol.InstrumentInfo{Instrument: "GC 12-26", Root: "GC", Description: "Gold",
			Exchange: "COMEX", TickSize: 0.1, PointValue: 100, TickValue: 10,
			Expiry: "2026-12-27", RollDate: "2026-11-25", NextInstrument: "GC 02-27"}},
		{"MGC", protocol.InstrumentInfo{Instrument: "MGC 12-26", Root: "MGC", Description: "Micro Gold",
			Exchange: "COMEX", TickSize: 0.1, PointValue: 10, TickValue: 1,
			Expiry: "2026-12-27", RollDate: "2026-11-25", NextInstrument: "MGC 02-27"}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			info := resolve(t, tc.in, monday).Info(monday)
			require.Len(t, info.Sessions, 5)
			for i, s := range info.Sessions {
				open, err := time.Parse(time.RFC3339, s.Open)
				require.NoError(t, err)
				close, err := time.Parse(time.RFC3339, s.Close)
				require.NoError(t, err)
				require.Equal(t, "Z", s.Open[len(s.Open)-1:], "UTC")
				// Monday's session (in progress) to Friday's.
				day := time.Date(2026, time.October, 5+i, 0, 0, 0, 0, ny)
				require.Equal(t, day.Add(-6*time.Hour), open.In(ny), "session %d opens at 18:00 the day before", i)
				require.Equal(t, day.Add(17*time.Hour), close.In(ny), "session %d closes at 17:00", i)
			}
			want := tc.want
			want.Currency = "USD"
			want.MarketOpen = true
			want.TradingHours = protocol.TradingHours{TimeZone: "America/New_York",
				Description: "Sunday 18:00 to Friday 17:00, daily break 17:00-18:00"}
			want.Sessions = info.Sessions
			require.Equal(t, want, info)
		})
	}
}

func TestInfoSessions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		now      time.Time
		open     bool
		sessions []protocol.TradingWindow
	}{
		{
			// Thursday 17 December 2026, 12:00 New York time: ES 12-26
			// trades one more session, Friday's.
			name: "near expiry", in: "ES 12-26", now: utc(2026, 12, 17, 17, 0), open: true,
			sessions: []protocol.TradingWindow{
				{Open: "2026-12-16T23:00:00Z", Close: "2026-12-17T22:00:00Z"},
				{Open: "2026-12-17T23:00:00Z", Close: "2026-12-18T22:00:00Z"},
			},
		},
		{
			// Saturday: the next sessions start on Sunday evening, across
			// the end of daylight-saving time.
			name: "weekend", in: "ES 12-26", now: utc(2026, 10, 31, 12, 0),
			sessions: []protocol.TradingWindow{
				{Open: "2026-11-01T23:00:00Z", Close: "2026-11-02T22:00:00Z"},
				{Open: "2026-11-02T23:00:00Z", Close: "2026-11-03T22:00:00Z"},
				{Open: "2026-11-03T23:00:00Z", Close: "2026-11-04T22:00:00Z"},
				{Open: "2026-11-04T23:00:00Z", Close: "2026-11-05T22:00:00Z"},
				{Open: "2026-11-05T23:00:00Z", Close: "2026-11-06T22:00:00Z"},
			},
		},
		{
			// In the daily break of Friday 30 October, 17:30 New York time.
			name: "daily break before the weekend", in: "CL", now: utc(2026, 10, 30, 21, 30),
			sessions: []protocol.TradingWindow{
				{Open: "2026-11-01T23:00:00Z", Close: "2026-11-02T22:00:00Z"},
				{Open: "2026-11-02T23:00:00Z", Close: "2026-11-03T22:00:00Z"},
				{Open: "2026-11-03T23:00:00Z", Close: "2026-11-04T22:00:00Z"},
				{Open: "2026-11-04T23:00:00Z", Close: "2026-11-05T22:00:00Z"},
				{Open: "2026-11-05T23:00:00Z", Close: "2026-11-06T22:00:00Z"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			info := resolve(t, tc.in, tc.now).Info(tc.now)
			require.Equal(t, tc.open, info.MarketOpen)
			require.Equal(t, tc.sessions, info.Sessions)
		})
	}
}
