package sim

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/trading/bridge"
)

// monday is a Monday in October 2026, 10:30 New York time, when ES 12-26
// is the front month.
var monday = time.Date(2026, time.October, 5, 14, 30, 0, 0, time.UTC)

func stddev(xs []float64) float64 {
	var s, s2 float64
	for _, x := range xs {
		s += x
		s2 += x * x
	}
	n := float64(len(xs))
	return math.Sqrt(s2/n - (s/n)*(s/n))
}

func frontMarket(t *testing.T, root string, at time.Time) *market {
	t.Helper()
	c, err := resolve(root, at)
	require.NoError(t, err)
	return newMarket(c, DefaultSeed, at)
}

func TestWalkVolatility(t *testing.T) {
	for _, tc := range []struct {
		root     string
		dailyVol float64
	}{
		{"ES", 0.01}, {"NQ", 0.01}, {"YM", 0.01}, {"RTY", 0.01}, {"CL", 0.02}, {"GC", 0.01}, {"MCL", 0.02},
	} {
		t.Run(tc.root, func(t *testing.T) {
			m := frontMarket(t, tc.root, monday)
			// One session of steps, one per second.
			end := monday.Add(sessionMinutes * time.Minute)
			var moves []float64
			prev := m.bid
			touch, sizes := true, true
			for s := monday.Add(time.Second); !s.After(end); s = s.Add(time.Second) {
				m.step(s, 1)
				moves = append(moves, float64(m.bid-prev))
				prev = m.bid
				touch = touch && (m.last == m.bid || m.last == m.bid+1)
				sizes = sizes && m.bidSize >= 1 && m.askSize >= 1
			}
			require.True(t, touch, "the last trade is at the bid or the ask")
			require.True(t, sizes, "bid and ask sizes are at least 1")
			// One step's deviation is the daily volatility spread over a 23-hour session.
			want := float64(m.base) * tc.dailyVol / math.Sqrt(secondsPerSession)
			require.InDelta(t, want, stddev(moves), want*0.03)
			// So a session's moves add up to the daily volatility.
			require.InDelta(t, tc.dailyVol*float64(m.base), want*math.Sqrt(float64(len(moves))), 1e-6*float64(m.base))
			// Steps are single ticks most of the time: bars are made of small moves.
			small := 0
			for _, mv := range moves {
				if math.Abs(mv) <= 3*want+1 {
					small++
				}
			}
			require.Greater(t, float64(small)/float64(len(moves)), 0.99)
		})
	}
}

func TestCalibrate(t *testing.T) {
	for _, sd := range []float64{0.2, 0.45, 0.8, 1.5, 3} {
		s := calibrate(sd)
		var v float64
		for k := -40.0; k <= 40; k++ {
			p := 0.5 * (math.Erfc((k-0.5)/(s*math.Sqrt2)) - math.Erfc((k+0.5)/(s*math.Sqrt2)))
			v += k * k * p
		}
		require.InDelta(t, sd, math.Sqrt(v), 1e-6, "sd %v", sd)
	}
}

func TestWalkStepsOncePerSecond(t *testing.T) {
	m := frontMarket(t, "ES", monday)
	m.advance(monday.Add(500 * time.Millisecond))
	require.Zero(t, m.ticks.len(), "less than a second: no step")
	m.advance(monday.Add(10*time.Second + 700*time.Millisecond))
	require.Equal(t, 10, m.ticks.len())
	for i := range 10 {
		tk := m.ticks.at(i)
		require.Equal(t, monday.Add(time.Duration(i+1)*time.Second).UnixNano(), tk.t, "one print per whole second")
		require.GreaterOrEqual(t, tk.v, int64(1))
	}
	m.advance(monday.Add(11 * time.Second))
	require.Equal(t, 11, m.ticks.len())
	m.advance(monday) // a clock that went back moves nothing
	require.Equal(t, 11, m.ticks.len())
	// The session's first print counts after the generated history of the
	// session (18:00 to 10:30 New York time: 16.5 hours, one print a second).
	require.Equal(t, int64(16*3600+1800), m.ticks.at(0).seq)
	require.Equal(t, int64(16*3600+1800+10), m.ticks.at(10).seq)
}

func TestWalkLongJumpIsCapped(t *testing.T) {
	m := frontMarket(t, "ES", monday)
	m.advance(monday.Add(30 * 24 * time.Hour))
	require.LessOrEqual(t, m.ticks.len(), maxFineSteps+maxCoarseSteps)
	require.Greater(t, m.ticks.len(), maxFineSteps+maxCoarseSteps/2)
	// The latest hour is simulated second by second.
	n := m.ticks.len()
	for i := n - maxFineSteps + 1; i < n; i++ {
		require.Equal(t, int64(time.Second), m.ticks.at(i).t-m.ticks.at(i-1).t)
	}
	// Earlier steps are coarser, and every print is in trading hours.
	require.Greater(t, m.ticks.at(1).t-m.ticks.at(0).t, int64(time.Second))
	for i := range n {
		at := time.Unix(0, m.ticks.at(i).t)
		require.True(t, m.c.Open(at), "print at %v", at)
	}
	require.Greater(t, m.bid, m.lo)
	require.Less(t, m.bid, m.hi)
}

func TestWalkStandsStillWhileClosed(t *testing.T) {
	// Friday 16:59:00 New York time (EDT), one minute before the close.
	friday := time.Date(2026, time.October, 9, 20, 59, 0, 0, time.UTC)
	m := frontMarket(t, "ES", friday)
	m.advance(friday.Add(time.Minute))
	require.Equal(t, 59, m.ticks.len(), "16:59:01 to 16:59:59")
	bid, last, quoted := m.bid, m.last, m.quoted
	require.Equal(t, friday.Add(59*time.Second), quoted)
	m.advance(friday.Add(49 * time.Hour)) // Sunday 17:59
	require.Equal(t, 59, m.ticks.len())
	require.Equal(t, bid, m.bid)
	require.Equal(t, last, m.last)
	require.Equal(t, quoted, m.quoted, "the quote keeps the time of the last print")

	// Sunday 18:00 opens a new session: the quote's session figures restart.
	m.advance(friday.Add(49*time.Hour + 2*time.Minute))
	require.Equal(t, 59+61, m.ticks.len(), "18:00:00 to 18:01:00")
	first := m.ticks.at(59)
	require.Equal(t, time.Date(2026, time.October, 11, 22, 0, 0, 0, time.UTC).UnixNano(), first.t)
	require.Equal(t, int64(0), first.seq)
	q := m.quote()
	require.Equal(t, m.c.Root.Price(first.px), q.Open)
	var vol int64
	for i := 59; i < m.ticks.len(); i++ {
		vol += m.ticks.at(i).v
	}
	require.Equal(t, vol, q.Volume)
}

func TestWalkReproducible(t *testing.T) {
	run := func(seed int64) []tick {
		c, err := resolve("CL 12-26", monday)
		require.NoError(t, err)
		m := newMarket(c, seed, monday)
		now := monday
		for i := range 300 {
			now = now.Add(time.Duration(1+i%5) * 700 * time.Millisecond)
			m.advance(now)
		}
		out := make([]tick, m.ticks.len())
		for i := range out {
			out[i] = *m.ticks.at(i)
		}
		return out
	}
	require.Equal(t, run(3), run(3))
	require.NotEqual(t, run(3), run(4))
}

func TestQuoteCountsSyntheticVolumeAndFills(t *testing.T) {
	clock := NewManualClock(monday)
	p, err := New(Options{Clock: clock})
	require.NoError(t, err)
	defer p.Close()
	ctx := context.Background()
	q0, err := p.Quote(ctx, "ES")
	require.NoError(t, err)
	require.Zero(t, q0.Volume)
	clock.Advance(5 * time.Second)
	q1, err := p.Quote(ctx, "ES")
	require.NoError(t, err)
	require.Greater(t, q1.Volume, int64(5), "each step trades a synthetic size")
	_, err = p.SubmitOrder(ctx, marketOrder("Sim101", "ES", "Buy", 3))
	require.NoError(t, err)
	q2, err := p.Quote(ctx, "ES")
	require.NoError(t, err)
	require.Equal(t, q1.Volume+3, q2.Volume, "fills add to the volume")
	require.Equal(t, q2.Ask, q2.Last)
	require.InDelta(t, q2.TickSize, q2.Ask-q2.Bid, 1e-9)
}

func marketOrder(account, instrument, action string, qty int) bridge.OrderRequest {
	return bridge.OrderRequest{Account: account, Instrument: instrument, Action: action,
		OrderType: "Market", Quantity: qty, TimeInForce: "Day"}
}
