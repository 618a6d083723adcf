package futures_test

import (
	"testing"
	"time"
	_ "time/tzdata" // the tz database checks the package's own New York time

	"github.com/stretchr/testify/require"

	"tradebridge/futures"
	"tradebridge/protocol"
)

func newYorkTime(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	return loc
}

// Every session, from the first year of today's daylight-saving rule,
// opens at 18:00 and closes at 17:00 New York time as the tz database
// says, lasts SessionLength, and follows the one before.
func TestSessionsMatchTheTZDatabase(t *testing.T) {
	t.Parallel()
	ny := newYorkTime(t)
	prev, ok := futures.SessionOn(day(2007, 1, 1))
	require.True(t, ok)
	for d := day(2007, 1, 2); d.Year() < 2050; d = d.AddDate(0, 0, 1) {
		s, ok := futures.SessionOn(d)
		wd := d.Weekday()
		require.Equal(t, wd != time.Saturday && wd != time.Sunday, ok, "%v", d)
		require.Equal(t, ok, futures.IsTradeDay(d))
		if !ok {
			require.Zero(t, s)
			continue
		}
		require.Equal(t, d, s.Day)
		require.Equal(t, time.Date(d.Year(), d.Month(), d.Day()-1, 18, 0, 0, 0, ny), s.Open.In(ny), "%v", d)
		require.Equal(t, time.Date(d.Year(), d.Month(), d.Day(), 17, 0, 0, 0, ny), s.Close.In(ny), "%v", d)
		require.Equal(t, futures.SessionLength, s.Close.Sub(s.Open), "%v", d)
		require.Equal(t, s, prev.Next(), "%v", d)
		require.Equal(t, prev, s.Prev(), "%v", d)
		prev = s
	}
}

func TestSessionOnAnyLocation(t *testing.T) {
	t.Parallel()
	ny := newYorkTime(t)
	want, ok := futures.SessionOn(day(2026, 10, 6))
	require.True(t, ok)
	for _, d := range []time.Time{
		time.Date(2026, 10, 6, 23, 59, 0, 0, ny),
		time.Date(2026, 10, 6, 0, 0, 0, 0, time.FixedZone("Tokyo", 9*3600)),
		utc(2026, 10, 6, 12, 0),
	} {
		got, ok := futures.SessionOn(d)
		require.True(t, ok)
		require.Equal(t, want, got, "the trade date is d's calendar day")
	}
}

func TestSessionFrom(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		at       time.Time
		day      time.Time // the trade date of SessionFrom(at)
		contains bool
	}{
		{"Monday morning", utc(2026, 10, 5, 14, 30), day(2026, 10, 5), true},
		{"just before the close", utc(2026, 10, 5, 20, 59), day(2026, 10, 5), true},
		{"at the close", utc(2026, 10, 5, 21, 0), day(2026, 10, 6), false},
		{"in the daily break", utc(2026, 10, 5, 21, 30), day(2026, 10, 6), false},
		{"at the open", utc(2026, 10, 5, 22, 0), day(2026, 10, 6), true},
		{"Friday after the close", utc(2026, 10, 9, 23, 0), day(2026, 10, 12), false},
		{"Saturday", utc(2026, 10, 10, 12, 0), day(2026, 10, 12), false},
		{"Sunday open", utc(2026, 10, 11, 22, 0), day(2026, 10, 12), true},
		{"winter, just after midnight UTC", utc(2026, 12, 8, 0, 30), day(2026, 12, 8), true},
		// Daylight saving ends on Sunday 1 November 2026: the Sunday
		// session opens at 23:00 UTC.
		{"DST end, Sunday 22:30 UTC", utc(2026, 11, 1, 22, 30), day(2026, 11, 2), false},
		{"DST end, Sunday open", utc(2026, 11, 1, 23, 0), day(2026, 11, 2), true},
		// And starts on Sunday 8 March 2026: the Sunday session opens at
		// 22:00 UTC.
		{"DST start, Sunday open", utc(2026, 3, 8, 22, 0), day(2026, 3, 9), true},
		{"DST start, Friday before", utc(2026, 3, 6, 21, 59), day(2026, 3, 6), true},
		{"DST start, Friday close", utc(2026, 3, 6, 22, 0), day(2026, 3, 9), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := futures.SessionFrom(tc.at)
			require.Equal(t, tc.day, s.Day)
			require.Equal(t, tc.contains, s.Contains(tc.at))
			require.True(t, tc.at.Before(s.Close), "not closed at t")
			require.False(t, s.Prev().Contains(tc.at))
			require.False(t, tc.at.Before(s.Prev().Close), "the session before has closed")
		})
	}
}

func TestSessionNextPrevAcrossDST(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		day         time.Time
		next        time.Time
		open, close time.Time // of next
	}{
		{"Friday to Monday, DST starts", day(2026, 3, 6), day(2026, 3, 9), utc(2026, 3, 8, 22, 0), utc(2026, 3, 9, 21, 0)},
		{"Friday to Monday, DST ends", day(2026, 10, 30), day(2026, 11, 2), utc(2026, 11, 1, 23, 0), utc(2026, 11, 2, 22, 0)},
		{"Thursday to Friday", day(2026, 10, 8), day(2026, 10, 9), utc(2026, 10, 8, 22, 0), utc(2026, 10, 9, 21, 0)},
		{"across the year", day(2026, 12, 31), day(2027, 1, 1), utc(2026, 12, 31, 23, 0), utc(2027, 1, 1, 22, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, ok := futures.SessionOn(tc.day)
			require.True(t, ok)
			n := s.Next()
			require.Equal(t, futures.Session{Day: tc.next, Open: tc.open, Close: tc.close}, n)
			require.Equal(t, s, n.Prev())
		})
	}
}

func TestTradingHours(t *testing.T) {
	t.Parallel()
	require.Equal(t, protocol.TradingHours{TimeZone: "America/New_York",
		Description: "Sunday 18:00 to Friday 17:00, daily break 17:00-18:00"}, futures.TradingHours())
	require.Equal(t, 23*time.Hour, futures.SessionLength)
}
