package protocol

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sessionUTC builds a UTC time for the session tests.
func sessionUTC(y int, mo time.Month, d, h, mi int) time.Time {
	return time.Date(y, mo, d, h, mi, 0, 0, time.UTC)
}

func TestNewYorkZone(t *testing.T) {
	t.Parallel()
	require.Equal(t, "America/New_York", NewYork().String())
	_, winter := sessionUTC(2026, time.January, 14, 12, 0).In(NewYork()).Zone()
	_, summer := sessionUTC(2026, time.July, 14, 12, 0).In(NewYork()).Zone()
	require.Equal(t, -5*3600, winter)
	require.Equal(t, -4*3600, summer)
}

func TestSessionStart(t *testing.T) {
	t.Parallel()
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	require.NoError(t, err)
	cases := []struct {
		name        string
		at          time.Time
		start, next time.Time
	}{
		{"winter afternoon: session began yesterday 6 PM EST",
			sessionUTC(2026, time.January, 14, 17, 0), sessionUTC(2026, time.January, 13, 23, 0), sessionUTC(2026, time.January, 14, 23, 0)},
		{"winter exactly 6 PM: a new session",
			sessionUTC(2026, time.January, 14, 23, 0), sessionUTC(2026, time.January, 14, 23, 0), sessionUTC(2026, time.January, 15, 23, 0)},
		{"winter a second before 6 PM",
			sessionUTC(2026, time.January, 14, 22, 59).Add(59 * time.Second), sessionUTC(2026, time.January, 13, 23, 0), sessionUTC(2026, time.January, 14, 23, 0)},
		{"winter evening after 6 PM, next UTC day",
			sessionUTC(2026, time.January, 15, 2, 0), sessionUTC(2026, time.January, 14, 23, 0), sessionUTC(2026, time.January, 15, 23, 0)},
		{"summer afternoon: 6 PM EDT is 22:00 UTC",
			sessionUTC(2026, time.July, 14, 16, 0), sessionUTC(2026, time.July, 13, 22, 0), sessionUTC(2026, time.July, 14, 22, 0)},
		{"summer exactly 6 PM EDT",
			sessionUTC(2026, time.July, 14, 22, 0), sessionUTC(2026, time.July, 14, 22, 0), sessionUTC(2026, time.July, 15, 22, 0)},
		// DST starts Sunday 2026-03-08 at 2 AM: the session from Saturday
		// 6 PM EST to Sunday 6 PM EDT lasts 23 hours.
		{"spring forward: Sunday noon EDT",
			sessionUTC(2026, time.March, 8, 16, 0), sessionUTC(2026, time.March, 7, 23, 0), sessionUTC(2026, time.March, 8, 22, 0)},
		{"spring forward: Sunday 1:30 AM EST, before the jump",
			sessionUTC(2026, time.March, 8, 6, 30), sessionUTC(2026, time.March, 7, 23, 0), sessionUTC(2026, time.March, 8, 22, 0)},
		{"spring forward: Sunday 6 PM EDT starts the next session",
			sessionUTC(2026, time.March, 8, 22, 0), sessionUTC(2026, time.March, 8, 22, 0), sessionUTC(2026, time.March, 9, 22, 0)},
		// DST ends Sunday 2026-11-01 at 2 AM: the session from Saturday
		// 6 PM EDT to Sunday 6 PM EST lasts 25 hours.
		{"fall back: Sunday noon EST",
			sessionUTC(2026, time.November, 1, 17, 0), sessionUTC(2026, time.October, 31, 22, 0), sessionUTC(2026, time.November, 1, 23, 0)},
		{"fall back: first 1:30 AM (EDT)",
			sessionUTC(2026, time.November, 1, 5, 30), sessionUTC(2026, time.October, 31, 22, 0), sessionUTC(2026, time.November, 1, 23, 0)},
		{"fall back: second 1:30 AM (EST)",
			sessionUTC(2026, time.November, 1, 6, 30), sessionUTC(2026, time.October, 31, 22, 0), sessionUTC(2026, time.November, 1, 23, 0)},
		{"fall back: 5:30 PM EST is still the long session",
			sessionUTC(2026, time.November, 1, 22, 30), sessionUTC(2026, time.October, 31, 22, 0), sessionUTC(2026, time.November, 1, 23, 0)},
		{"month and year boundary",
			sessionUTC(2027, time.January, 1, 3, 0), sessionUTC(2026, time.December, 31, 23, 0), sessionUTC(2027, time.January, 1, 23, 0)},
		{"given in another zone: same instant, same session",
			sessionUTC(2026, time.March, 8, 16, 0).In(tokyo), sessionUTC(2026, time.March, 7, 23, 0), sessionUTC(2026, time.March, 8, 22, 0)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start, next := SessionStart(tc.at), NextSessionStart(tc.at)
			require.True(t, tc.start.Equal(start), "start %s, want %s", start, tc.start)
			require.True(t, tc.next.Equal(next), "next %s, want %s", next, tc.next)
			require.Equal(t, SessionResetHour, start.Hour())
			require.Equal(t, NewYork(), start.Location())
			require.False(t, start.After(tc.at))
			require.True(t, next.After(tc.at))
		})
	}
}

func TestSessionLengthOnDSTDays(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		at   time.Time
		want time.Duration
	}{
		{sessionUTC(2026, time.January, 14, 17, 0), 24 * time.Hour},
		{sessionUTC(2026, time.March, 8, 16, 0), 23 * time.Hour},
		{sessionUTC(2026, time.November, 1, 17, 0), 25 * time.Hour},
	} {
		require.Equal(t, tc.want, NextSessionStart(tc.at).Sub(SessionStart(tc.at)), tc.at.String())
	}
}

func TestInMonitorLockWindow(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		at   time.Time
		want bool
	}{
		{"winter 5 PM EST opens it", sessionUTC(2026, time.January, 14, 22, 0), true},
		{"winter 5:59 PM EST", sessionUTC(2026, time.January, 14, 22, 59), true},
		{"winter 6 PM EST closes it", sessionUTC(2026, time.January, 14, 23, 0), false},
		{"winter 4:59 PM EST", sessionUTC(2026, time.January, 14, 21, 59), false},
		{"summer 5 PM EDT is 21:00 UTC", sessionUTC(2026, time.July, 14, 21, 0), true},
		{"summer 22:00 UTC is 6 PM EDT", sessionUTC(2026, time.July, 14, 22, 0), false},
		{"summer 20:59 UTC is 4:59 PM EDT", sessionUTC(2026, time.July, 14, 20, 59), false},
		{"spring-forward Sunday 5:30 PM EDT", sessionUTC(2026, time.March, 8, 21, 30), true},
		{"Saturday before it, 4:30 PM EST", sessionUTC(2026, time.March, 7, 21, 30), false},
		{"Saturday before it, 5:30 PM EST", sessionUTC(2026, time.March, 7, 22, 30), true},
		{"fall-back Sunday 5:30 PM EST", sessionUTC(2026, time.November, 1, 22, 30), true},
		{"fall-back Sunday 21:30 UTC is 4:30 PM EST", sessionUTC(2026, time.November, 1, 21, 30), false},
		{"midnight", sessionUTC(2026, time.January, 15, 5, 0), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, InMonitorLockWindow(tc.at))
		})
	}
}

func TestInSession(t *testing.T) {
	t.Parallel()
	now := sessionUTC(2026, time.January, 14, 17, 0) // noon EST; the session began 13 Jan 23:00 UTC
	at := func(tm time.Time) *time.Time { return &tm }
	cases := []struct {
		name string
		at   *time.Time
		want bool
	}{
		{"nil", nil, false},
		{"this morning", at(sessionUTC(2026, time.January, 14, 14, 0)), true},
		{"at the session's start", at(sessionUTC(2026, time.January, 13, 23, 0)), true},
		{"a second before the session's start", at(sessionUTC(2026, time.January, 13, 22, 59).Add(59 * time.Second)), false},
		{"yesterday morning", at(sessionUTC(2026, time.January, 13, 14, 0)), false},
		{"a little after now (clock skew)", at(now.Add(time.Minute)), true},
		{"in the next session", at(sessionUTC(2026, time.January, 14, 23, 0)), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, InSession(tc.at, now))
		})
	}
}
