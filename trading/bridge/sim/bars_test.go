package sim_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
)

func bars(t *testing.T, p *sim.Platform, req bridge.BarsRequest) []protocol.Bar {
	t.Helper()
	b, err := p.Bars(ctx, req)
	require.NoError(t, err)
	require.Equal(t, len(b.Bars), b.Count)
	return b.Bars
}

func barTime(t *testing.T, b protocol.Bar) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339, b.Time)
	require.NoError(t, err)
	require.Equal(t, at.UnixMilli(), b.Epoch)
	require.Equal(t, "Z", b.Time[len(b.Time)-1:])
	return at
}

// inTradingHours reports whether t is inside the trading hours, by the tz
// database.
func inTradingHours(t time.Time, ny *time.Location) bool {
	l := t.In(ny)
	switch wd := l.Weekday(); {
	case wd == time.Saturday:
		return false
	case wd == time.Sunday:
		return l.Hour() >= 18
	case wd == time.Friday:
		return l.Hour() < 17
	default:
		return l.Hour() != 17
	}
}

// checkBars checks what every list of bars must satisfy.
func checkBars(t *testing.T, bs []protocol.Bar, tick float64) {
	t.Helper()
	var prev time.Time
	for i, b := range bs {
		at := barTime(t, b)
		require.True(t, at.After(prev), "bar %d in time order", i)
		prev = at
		require.LessOrEqual(t, b.Low, math.Min(b.Open, b.Close), "bar %d", i)
		require.GreaterOrEqual(t, b.High, math.Max(b.Open, b.Close), "bar %d", i)
		for _, x := range []float64{b.Open, b.High, b.Low, b.Close} {
			require.InDelta(t, math.Round(x/tick), x/tick, 1e-6, "bar %d on the tick grid", i)
		}
		require.Positive(t, b.Volume, "bar %d", i)
	}
}

func TestBarsOfEveryPeriod(t *testing.T) {
	ny := newYorkTime(t)
	for _, tc := range []struct {
		typ    string
		period int
		days   int
		count  int // bars expected; 0 to skip
		// align checks a bar's start in New York time.
		align func(t *testing.T, l time.Time)
	}{
		{typ: "tick", period: 100, days: 1, align: func(*testing.T, time.Time) {}},
		{typ: "Tick", period: 1, days: 1},
		{typ: "second", period: 1, days: 1, align: func(t *testing.T, l time.Time) {
			require.Zero(t, l.Nanosecond())
		}},
		{typ: "second", period: 15, days: 1, align: func(t *testing.T, l time.Time) {
			require.Zero(t, l.Second()%15)
		}},
		{typ: "minute", period: 1, days: 2, count: 1380 + 16*60 + 40 + 1}, // Friday, then Monday to 10:40
		{typ: "minute", period: 7, days: 2, align: func(t *testing.T, l time.Time) {
			// Seven-minute bars count from the session's 18:00 open.
			open := time.Date(l.Year(), l.Month(), l.Day(), 18, 0, 0, 0, l.Location())
			if l.Hour() < 18 {
				open = open.AddDate(0, 0, -1)
			}
			require.Zero(t, l.Sub(open)%(7*time.Minute), "%v", l)
		}},
		{typ: "Minute", period: 60, days: 5, count: 4*23 + 17}, // Sunday 18:00 to Monday 10:40 is 17 bars
		{typ: "day", period: 1, days: 30, count: 30, align: func(t *testing.T, l time.Time) {
			require.Equal(t, 18, l.Hour())
			require.NotEqual(t, time.Friday, l.Weekday())
			require.NotEqual(t, time.Saturday, l.Weekday())
		}},
		{typ: "week", period: 1, days: 60, count: 12, align: func(t *testing.T, l time.Time) {
			require.Equal(t, time.Sunday, l.Weekday())
			require.Equal(t, 18, l.Hour())
		}},
		{typ: "month", period: 1, days: 300, count: 14, align: func(t *testing.T, l time.Time) {
			require.Equal(t, 18, l.Hour())
			// The first session of the month: its trade date is the month's first weekday.
			trade := l.Add(6 * time.Hour)
			for d := trade.AddDate(0, 0, -1); d.Month() == trade.Month(); d = d.AddDate(0, 0, -1) {
				require.Contains(t, []time.Weekday{time.Saturday, time.Sunday}, d.Weekday(), "%v", l)
			}
		}},
	} {
		t.Run(tc.typ+"/"+time.Duration(tc.period).String(), func(t *testing.T) {
			p, clock := newSim(t, sim.Options{})
			_, err := p.Quote(ctx, "ES") // the walk opens now
			require.NoError(t, err)
			clock.Advance(10 * time.Minute)
			b, err := p.Bars(ctx, bridge.BarsRequest{Instrument: "ES", PeriodType: tc.typ, Period: tc.period,
				DaysBack: tc.days})
			require.NoError(t, err)
			require.Equal(t, "ES 12-26", b.Instrument)
			require.Equal(t, tc.period, b.Period)
			require.Equal(t, len(b.Bars), b.Count)
			require.NotEmpty(t, b.Bars)
			checkBars(t, b.Bars, 0.25)
			if tc.count > 0 {
				require.Equal(t, tc.count, len(b.Bars))
			}
			for _, bar := range b.Bars {
				at := barTime(t, bar)
				require.True(t, inTradingHours(at, ny), "%v", at.In(ny))
				if tc.align != nil {
					tc.align(t, at.In(ny))
				}
			}
			last := barTime(t, b.Bars[len(b.Bars)-1])
			require.False(t, last.After(start.Add(10*time.Minute)))
		})
	}
}

func TestBarsJoinHistoryToTheLiveWalk(t *testing.T) {
	p, clock := newSim(t, sim.Options{})
	q, err := p.Quote(ctx, "ES")
	require.NoError(t, err)
	clock.Advance(10*time.Minute + 30*time.Second)
	bs := bars(t, p, bridge.BarsRequest{Instrument: "ES", PeriodType: "minute",
		From: start.Add(-5 * time.Minute), To: start.Add(time.Hour)})
	require.Len(t, bs, 16, "14:25 to 14:40, one a minute")
	for i, b := range bs {
		require.Equal(t, start.Add(time.Duration(i-5)*time.Minute), barTime(t, b))
	}
	require.Equal(t, q.Open, bs[4].Close, "the history closes at the walk's opening price")
	require.Equal(t, 6000.0, bs[4].Close)
	require.InDelta(t, bs[4].Close, bs[5].Open, 1, "the live walk goes on from there")
	checkBars(t, bs, 0.25)
	now, err := p.Quote(ctx, "ES")
	require.NoError(t, err)
	require.Equal(t, now.Last, bs[15].Close, "the last bar is the one in progress")

	// Second bars: the history's last print, then the live walk's.
	ss := bars(t, p, bridge.BarsRequest{Instrument: "ES", PeriodType: "second",
		From: start.Add(-2 * time.Second), To: start.Add(2 * time.Second)})
	require.Len(t, ss, 4)
	require.Equal(t, 6000.0, ss[1].Close)
	require.Equal(t, start.Add(-time.Second), barTime(t, ss[1]))
	require.Equal(t, start.Add(time.Second), barTime(t, ss[2]), "the walk's first step")
}

func TestBarsAgreeAcrossPeriods(t *testing.T) {
	p, clock := newSim(t, sim.Options{})
	_, err := p.Quote(ctx, "NQ")
	require.NoError(t, err)
	clock.Advance(20 * time.Minute)
	for _, tc := range []struct {
		name     string
		from, to time.Time
		a, b     bridge.BarsRequest
	}{
		{"second(60) = minute(1), history and live", start.Add(-time.Hour), start.Add(20 * time.Minute),
			bridge.BarsRequest{PeriodType: "second", Period: 60}, bridge.BarsRequest{PeriodType: "minute", Period: 1}},
		{"tick(60) = minute(1) in the history", start.Add(-3 * time.Hour), start.Add(-time.Minute),
			bridge.BarsRequest{PeriodType: "tick", Period: 60}, bridge.BarsRequest{PeriodType: "minute", Period: 1}},
		{"minute(1380) = day(1)", start.AddDate(0, 0, -30), start,
			bridge.BarsRequest{PeriodType: "minute", Period: 1380}, bridge.BarsRequest{PeriodType: "day", Period: 1}},
		{"minute(30) = minute(5) six at a time", start.Add(-24 * time.Hour), start.Add(20 * time.Minute),
			bridge.BarsRequest{PeriodType: "minute", Period: 30}, bridge.BarsRequest{PeriodType: "minute", Period: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []*bridge.BarsRequest{&tc.a, &tc.b} {
				r.Instrument, r.From, r.To, r.Limit = "NQ", tc.from, tc.to, sim.MaxBarsLimit
			}
			a, b := bars(t, p, tc.a), bars(t, p, tc.b)
			require.NotEmpty(t, a)
			if tc.b.Period == 5 {
				b = merge(t, b, 6, 30*time.Minute)
			}
			require.Equal(t, b, a)
		})
	}
}

// merge merges bars n at a time, aligned on size.
func merge(t *testing.T, bs []protocol.Bar, n int, size time.Duration) []protocol.Bar {
	var out []protocol.Bar
	for _, b := range bs {
		at := barTime(t, b)
		if len(out) > 0 && at.Sub(barTime(t, out[len(out)-1])) < size {
			m := &out[len(out)-1]
			m.High, m.Low = math.Max(m.High, b.High), math.Min(m.Low, b.Low)
			m.Close = b.Close
			m.Volume += b.Volume
			continue
		}
		require.Zero(t, at.Sub(start)%size, "aligned")
		out = append(out, b)
	}
	require.LessOrEqual(t, len(out)*n, len(bs)+n)
	return out
}

func TestBarsLimitKeepsTheLatest(t *testing.T) {
	p, clock := newSim(t, sim.Options{})
	clock.Advance(time.Minute)
	all := bars(t, p, bridge.BarsRequest{Instrument: "GC", PeriodType: "minute", DaysBack: 1})
	require.Greater(t, len(all), 100)
	some := bars(t, p, bridge.BarsRequest{Instrument: "GC", PeriodType: "minute", DaysBack: 1, Limit: 100})
	require.Equal(t, all[len(all)-100:], some)
	checkBars(t, some, 0.1)
	// With no range, Limit bars back.
	latest := bars(t, p, bridge.BarsRequest{Instrument: "GC", PeriodType: "minute", Limit: 30})
	require.Equal(t, all[len(all)-30:], latest)
	days := bars(t, p, bridge.BarsRequest{Instrument: "GC", PeriodType: "day", Limit: 3})
	require.Len(t, days, 3)
}

func TestBarsAreDeterministic(t *testing.T) {
	req := bridge.BarsRequest{Instrument: "CL", PeriodType: "minute", Period: 3, DaysBack: 2}
	run := func(seed int64) []protocol.Bar {
		clock := sim.NewManualClock(start)
		p, err := sim.New(sim.Options{Seed: seed, Clock: clock})
		require.NoError(t, err)
		defer p.Close()
		_, err = p.Quote(ctx, "CL")
		require.NoError(t, err)
		clock.Advance(7 * time.Minute)
		a := bars(t, p, req)
		require.Equal(t, a, bars(t, p, req), "the same request at the same clock")
		return a
	}
	require.Equal(t, run(5), run(5))
	require.NotEqual(t, run(5), run(6))

	// Bars that closed do not change as the clock goes on.
	p, clock := newSim(t, sim.Options{})
	_, err := p.Quote(ctx, "CL")
	require.NoError(t, err)
	clock.Advance(7 * time.Minute)
	before := bars(t, p, req)
	clock.Advance(7 * time.Minute)
	after := bars(t, p, bridge.BarsRequest{Instrument: "CL", PeriodType: "minute", Period: 3,
		From: barTime(t, before[0]), To: start.Add(7 * time.Minute)})
	require.Equal(t, before[:len(before)-1], after[:len(before)-1])
	require.Len(t, after, len(before))
}

func TestBarsOnlyInTradingHours(t *testing.T) {
	p, clock := newSim(t, sim.Options{})
	_, err := p.Quote(ctx, "ES")
	require.NoError(t, err)
	// Walk live to Tuesday 18:05 New York time, an hour at a time.
	for clock.Now().Before(time.Date(2026, time.October, 6, 22, 5, 0, 0, time.UTC)) {
		clock.Advance(time.Hour)
		require.NoError(t, p.Step(ctx))
	}
	// The weekend before, in the history.
	saturday := time.Date(2026, time.October, 3, 12, 0, 0, 0, time.UTC)
	for _, typ := range []string{"second", "minute", "tick"} {
		weekend := bars(t, p, bridge.BarsRequest{Instrument: "ES", PeriodType: typ,
			From: saturday.Add(-15 * time.Hour), To: saturday.Add(30*time.Hour - time.Second)}) // Friday 17:00 to Sunday 17:59:59
		require.Empty(t, weekend, typ)
	}
	// The daily break, in the history (Thursday) and in the live walk (Tuesday).
	for _, day := range []time.Time{start.AddDate(0, 0, -4), start.AddDate(0, 0, 1)} {
		brk := time.Date(day.Year(), day.Month(), day.Day(), 21, 0, 0, 0, time.UTC) // 17:00 EDT
		bs := bars(t, p, bridge.BarsRequest{Instrument: "ES", PeriodType: "minute",
			From: brk.Add(-2 * time.Minute), To: brk.Add(time.Hour + time.Minute)})
		require.Equal(t, 4, len(bs), "16:58, 16:59, 18:00, 18:01")
		require.Equal(t, brk.Add(-time.Minute), barTime(t, bs[1]))
		require.Equal(t, brk.Add(time.Hour), barTime(t, bs[2]))
		ss := bars(t, p, bridge.BarsRequest{Instrument: "ES", PeriodType: "second",
			From: brk.Add(-time.Second), To: brk.Add(time.Hour)})
		require.Equal(t, 2, len(ss), "16:59:59, 18:00:00")
	}
}

func TestBarsDaysBackCountsSessions(t *testing.T) {
	p, _ := newSim(t, sim.Options{})
	days := bars(t, p, bridge.BarsRequest{Instrument: "ES", PeriodType: "day", DaysBack: 5})
	require.Len(t, days, 5)
	// Monday's session, in progress, opened on Sunday at 18:00 New York time.
	require.Equal(t, "2026-10-04T22:00:00.000Z", days[4].Time)
	require.Equal(t, "2026-09-28T22:00:00.000Z", days[0].Time, "Tuesday's session a week before")
	minutes := bars(t, p, bridge.BarsRequest{Instrument: "ES", PeriodType: "minute", DaysBack: 1})
	require.Equal(t, "2026-10-04T22:00:00.000Z", minutes[0].Time)
	require.Len(t, minutes, 16*60+30)
	require.Equal(t, days[4].Open, minutes[0].Open)
}

func TestBarsOfSeveralDaysAlign(t *testing.T) {
	p, _ := newSim(t, sim.Options{})
	a := bars(t, p, bridge.BarsRequest{Instrument: "RTY", PeriodType: "day", Period: 3, DaysBack: 40})
	b := bars(t, p, bridge.BarsRequest{Instrument: "RTY", PeriodType: "day", Period: 3, DaysBack: 41})
	require.Equal(t, a[len(a)-5:], b[len(b)-5:], "the same cut whatever the range")
	days := bars(t, p, bridge.BarsRequest{Instrument: "RTY", PeriodType: "day", DaysBack: 40})
	for _, x := range a[1:] {
		// Each three-day bar opens where one of the day bars opens.
		found := false
		for _, d := range days {
			found = found || (d.Time == x.Time && d.Open == x.Open)
		}
		require.True(t, found, x.Time)
	}
}

func TestBarsErrors(t *testing.T) {
	p, _ := newSim(t, sim.Options{})
	for _, tc := range []struct {
		name string
		req  bridge.BarsRequest
		want error
	}{
		{"unknown period type", bridge.BarsRequest{PeriodType: "hour"}, sim.ErrBadBarsRequest},
		{"empty period type", bridge.BarsRequest{}, sim.ErrBadBarsRequest},
		{"negative period", bridge.BarsRequest{PeriodType: "minute", Period: -1}, sim.ErrBadBarsRequest},
		{"negative limit", bridge.BarsRequest{PeriodType: "minute", Limit: -1}, sim.ErrBadBarsRequest},
		{"limit too large", bridge.BarsRequest{PeriodType: "minute", Limit: sim.MaxBarsLimit + 1}, sim.ErrBadBarsRequest},
		{"negative daysBack", bridge.BarsRequest{PeriodType: "minute", DaysBack: -1}, sim.ErrBadBarsRequest},
		{"daysBack too large for ticks", bridge.BarsRequest{PeriodType: "tick", DaysBack: 6}, sim.ErrBadBarsRequest},
		{"daysBack too large for minutes", bridge.BarsRequest{PeriodType: "minute", DaysBack: 261}, sim.ErrBadBarsRequest},
		{"from after to", bridge.BarsRequest{PeriodType: "minute", From: start, To: start.Add(-time.Minute)},
			sim.ErrBadBarsRequest},
		{"range too large", bridge.BarsRequest{PeriodType: "second", From: start.AddDate(0, 0, -8), To: start},
			sim.ErrBadBarsRequest},
		{"range too large up to now", bridge.BarsRequest{PeriodType: "minute", From: start.AddDate(-2, 0, 0)},
			sim.ErrBadBarsRequest},
		{"too far back", bridge.BarsRequest{PeriodType: "day", From: start.AddDate(-40, 0, 0),
			To: start.AddDate(-39, 0, 0)}, sim.ErrBadBarsRequest},
		{"unknown instrument", bridge.BarsRequest{Instrument: "ZZ", PeriodType: "minute"}, bridge.ErrInstrumentUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.req.Instrument == "" {
				tc.req.Instrument = "ES"
			}
			_, err := p.Bars(ctx, tc.req)
			require.ErrorIs(t, err, tc.want)
		})
	}
	// A range wholly in the future is empty, not an error.
	b, err := p.Bars(ctx, bridge.BarsRequest{Instrument: "ES", PeriodType: "minute", From: start.Add(time.Hour)})
	require.NoError(t, err)
	require.Zero(t, b.Count)
	require.NotNil(t, b.Bars)
	// Period 0 means 1.
	b, err = p.Bars(ctx, bridge.BarsRequest{Instrument: "ES", PeriodType: "day", Limit: 2})
	require.NoError(t, err)
	require.Equal(t, 1, b.Period)
	require.Equal(t, "day", b.PeriodType)
	require.Equal(t, bars(t, p, bridge.BarsRequest{Instrument: "ES", PeriodType: "Day", Period: 1, Limit: 2}), b.Bars)
}
