package sim

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"time"

	"tradebridge/futures"
	"tradebridge/protocol"
)

// The walk takes one step per stepInterval of trading time, on whole
// seconds of the clock. After a long jump of the clock it simulates the
// latest maxFineSteps steps one by one and the time before them in at most
// maxCoarseSteps coarser steps of several seconds each, so a call never
// does more than maxFineSteps+maxCoarseSteps steps per contract.
const (
	stepInterval   = time.Second
	maxFineSteps   = 3600
	maxCoarseSteps = 3600
)

// secondsPerSession scales a daily volatility to one step: a session
// trades for 23 hours.
const secondsPerSession = sessionMinutes * 60

// Live bar memory of a market: the ticks and the one-second and one-minute
// bars it keeps for Bars and strategies. Older ones are dropped; session
// bars are kept for about twenty years.
const (
	keptTicks    = 1 << 15
	keptSeconds  = 1 << 15 // about nine hours of trading
	keptMinutes  = 1 << 16 // about seven weeks of trading
	keptSessions = 5000
)

// tick is one trade print: its time in Unix nanoseconds, its price in
// ticks, its size in contracts, and its index among the prints of its
// session (counting the generated history of the session too).
type tick struct {
	t, px, v, seq int64
}

// bar is a bar in ticks, starting at t (Unix nanoseconds).
type bar struct {
	t, o, h, l, c, v int64
}

// merge adds a later bar (or print) to b.
func (b *bar) merge(o bar) {
	b.h = max(b.h, o.h)
	b.l = min(b.l, o.l)
	b.c = o.c
	b.v += o.v
}

// ring keeps the latest max values pushed to it.
type ring[T any] struct {
	buf  []T // grows to max, then wraps
	head int // index of the oldest value once full
	max  int
}

func (r *ring[T]) push(v T) {
	if len(r.buf) < r.max {
		r.buf = append(r.buf, v)
		return
	}
	r.buf[r.head] = v
	r.head = (r.head + 1) % r.max
}

func (r *ring[T]) len() int { return len(r.buf) }

// at returns the i-th oldest value.
func (r *ring[T]) at(i int) *T { return &r.buf[(r.head+i)%len(r.buf)] }

// market is the current market of one contract, and its live bars. Prices
// are in ticks. Like all the simulator's state, it is guarded by p.mu.
type market struct {
	c        contract
	rng      *rand.Rand
	sd       float64 // standard deviation of one step, in ticks
	sd1      float64 // scale of a one-second step before rounding (see calibrate)
	activity int64   // average contracts per second
	// lo and hi bound the walk (a quarter and four times the base price);
	// the walk never moves further outside them.
	lo, hi int64
	base   int64
	opened time.Time // when the simulator first priced the contract

	bid     int64 // the ask is one tick above
	last    int64
	bidSize int64
	askSize int64
	walked  time.Time // the walk has stepped through this instant (a whole second once it moved)
	at      time.Time // latest clock time seen: fills print then
	quoted  time.Time // time of the latest print

	// The quote's session figures: open, high, low and volume since the
	// session began (or since the contract was first priced).
	sess      tradingSession
	open      int64
	high, low int64
	volume    int64
	seq       int64 // prints of sess so far, history included

	ticks ring[tick]
	secs  ring[bar]
	mins  ring[bar]
	days  ring[bar] // one per session, starting at its open
}

func newMarket(c contract, seed int64, now time.Time) *market {
	h := fnv.New64a()
	_, _ = h.Write([]byte(c.Name))
	r, w := c.Root, walkOf(c)
	base := int64(math.Round(w.base / r.TickSize))
	sd := w.base * w.dailyVol / r.TickSize / math.Sqrt(secondsPerSession)
	m := &market{
		c:        c,
		rng:      rand.New(rand.NewPCG(uint64(seed), h.Sum64())),
		sd:       sd,
		sd1:      calibrate(sd),
		activity: w.activity,
		lo:       max(1, base/4),
		hi:       base * 4,
		base:     base,
		opened:   now,
		bid:      base,
		last:     base,
		open:     base,
		high:     base,
		low:      base,
		bidSize:  10,
		askSize:  10,
		walked:   now,
		at:       now,
		quoted:   now,
		sess:     futures.SessionFrom(now),
		ticks:    ring[tick]{max: keptTicks},
		secs:     ring[bar]{max: keptSeconds},
		mins:     ring[bar]{max: keptMinutes},
		days:     ring[bar]{max: keptSessions},
	}
	if m.sess.Contains(now) {
		// The generated history fills the session up to now's minute.
		m.seq = int64(now.Truncate(time.Minute).Sub(m.sess.Open) / stepInterval)
	}
	return m
}

// calibrate returns the scale s for which a normal move of standard
// deviation s, rounded to whole ticks, has standard deviation sd: rounding
// alone would make small steps too wild or too tame.
func calibrate(sd float64) float64 {
	variance := func(s float64) float64 {
		var v float64
		for k := 1.0; k < 12*s+2; k++ {
			p := 0.5 * (math.Erfc((k-0.5)/(s*math.Sqrt2)) - math.Erfc((k+0.5)/(s*math.Sqrt2)))
			v += 2 * k * k * p
		}
		return v
	}
	lo, hi := 0.0, 2*sd+1
	for range 60 {
		mid := (lo + hi) / 2
		if variance(mid) < sd*sd {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// advance moves the walk to now: one step per whole second of trading time
// in (walked, now], or coarser steps for the earlier part of a long jump
// (see maxFineSteps). A clock that went back moves nothing; the walk stands
// still while the market is closed.
func (m *market) advance(now time.Time) {
	if now.After(m.at) {
		m.at = now
	}
	if now.Unix() <= m.walked.Unix() {
		return // no whole second passed
	}
	from := m.walked
	m.walked = time.Unix(now.Unix(), 0).UTC()
	type span struct{ a, b int64 } // whole seconds, inclusive
	var spans []span
	var n int64
	for s := futures.SessionFrom(from); s.Open.Before(now) && s.Open.Before(m.c.ExpiresAt); s = s.Next() {
		a := max(from.Unix()+1, s.Open.Unix())
		b := min(now.Unix(), s.Close.Unix()-1, m.c.ExpiresAt.Unix()-1)
		if a <= b {
			spans = append(spans, span{a, b})
			n += b - a + 1
		}
	}
	coarse := n - min(n, maxFineSteps)
	group := int64(1)
	if coarse > 0 {
		group = (coarse + maxCoarseSteps - 1) / maxCoarseSteps
	}
	var done, acc int64
	for _, sp := range spans {
		for s := sp.a; s <= sp.b; {
			if done < coarse {
				take := min(sp.b-s+1, group-acc, coarse-done)
				s += take
				done += take
				acc += take
				if acc == group || done == coarse {
					m.step(time.Unix(s-1, 0).UTC(), acc)
					acc = 0
				}
				continue
			}
			m.step(time.Unix(s, 0).UTC(), 1)
			s++
			done++
		}
	}
}

// step moves the walk by the normally distributed move of k seconds and
// prints a trade at the new last price with a synthetic size.
func (m *market) step(t time.Time, k int64) {
	var move int64
	var size int64
	if k == 1 {
		move = int64(math.Round(m.rng.NormFloat64() * m.sd1))
		size = 1 + m.rng.Int64N(2*m.activity)
	} else {
		move = int64(math.Round(m.rng.NormFloat64() * m.sd * math.Sqrt(float64(k))))
		size = 1 + k*m.activity/2 + m.rng.Int64N(k*m.activity)
	}
	nb := m.bid + move
	if move < 0 && nb < m.lo {
		nb = min(m.bid, m.lo)
	}
	if move > 0 && nb > m.hi {
		nb = max(m.bid, m.hi)
	}
	switch {
	case nb > m.bid:
		m.last = nb + 1 // an uptick trades at the ask
	case nb < m.bid:
		m.last = nb // a downtick trades at the bid
	}
	m.bid = nb
	m.bidSize = 1 + m.rng.Int64N(4*m.activity)
	m.askSize = 1 + m.rng.Int64N(4*m.activity)
	m.print(t, m.last, size)
}

// set puts the market at n ticks: bid and last there, ask one tick above.
// It prints a trade of no contracts, so bars show the new price.
func (m *market) set(n int64, now time.Time) {
	m.bid = n
	if now.After(m.at) {
		m.at = now
	}
	m.print(m.at, n, 0)
}

// trade records a fill of qty contracts at n ticks.
func (m *market) trade(n int64, qty int) {
	m.print(m.at, n, int64(qty))
}

// print records a trade of v contracts at px ticks at t: the last price, the
// quote's session figures, and, inside trading hours, the live ticks and
// bars.
func (m *market) print(t time.Time, px, v int64) {
	m.last = px
	m.quoted = t
	open := true
	if !m.sess.Contains(t) {
		if s := futures.SessionFrom(t); s.Contains(t) {
			m.sess, m.seq = s, 0
			m.open, m.high, m.low, m.volume = px, px, px, 0
		} else {
			open = false
		}
	}
	m.high = max(m.high, px)
	m.low = min(m.low, px)
	m.volume += v
	if !open || !t.Before(m.c.ExpiresAt) {
		return
	}
	ns := t.UnixNano()
	m.ticks.push(tick{t: ns, px: px, v: v, seq: m.seq})
	m.seq++
	one := bar{o: px, h: px, l: px, c: px, v: v}
	addPrint(&m.secs, t.Truncate(time.Second).UnixNano(), one)
	addPrint(&m.mins, t.Truncate(time.Minute).UnixNano(), one)
	addPrint(&m.days, m.sess.Open.UnixNano(), one)
}

// addPrint adds a print to the bar starting at start, the latest of r or a
// new one.
func addPrint(r *ring[bar], start int64, one bar) {
	if n := r.len(); n > 0 {
		if b := r.at(n - 1); b.t == start {
			b.merge(one)
			return
		}
	}
	one.t = start
	r.push(one)
}

func (m *market) ask() int64 { return m.bid + 1 }

func (m *market) quote() protocol.Quote {
	r := m.c.Root
	return protocol.Quote{
		Instrument:   m.c.Name,
		Bid:          r.Price(m.bid),
		Ask:          r.Price(m.ask()),
		Last:         r.Price(m.last),
		Open:         r.Price(m.open),
		High:         r.Price(m.high),
		Low:          r.Price(m.low),
		Close:        r.Price(m.last),
		Volume:       m.volume,
		BidSize:      m.bidSize,
		AskSize:      m.askSize,
		TickSize:     r.TickSize,
		PointValue:   r.PointValue,
		TickValue:    r.TickValue,
		QuoteTimeUTC: protocol.FormatTime(m.quoted),
		Epoch:        m.quoted.UnixMilli(),
	}
}
