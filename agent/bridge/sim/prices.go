package sim

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"time"

	"tradebridge/protocol"
)

// stepInterval is the clock time of one step of the price walk.
const stepInterval = time.Second

// secondsPerDay scales a daily volatility to one step.
const secondsPerDay = 24 * 60 * 60

// market is the current market of one contract. Prices are in ticks.
type market struct {
	c   contract
	rng *rand.Rand
	vol float64 // standard deviation of one step, in ticks
	// lo and hi bound the walk (a quarter and four times the base price);
	// the walk never moves further outside them.
	lo, hi int64

	bid       int64 // the ask is one tick above
	last      int64
	open      int64
	high, low int64
	volume    int64
	bidSize   int64
	askSize   int64
	walked    time.Time // clock time the walk has reached
}

func newMarket(c contract, seed int64, now time.Time) *market {
	h := fnv.New64a()
	_, _ = h.Write([]byte(c.name))
	r := c.root
	base := int64(math.Round(r.base / r.tickSize))
	m := &market{
		c:       c,
		rng:     rand.New(rand.NewPCG(uint64(seed), h.Sum64())),
		vol:     r.base * r.dailyVol / r.tickSize / math.Sqrt(secondsPerDay),
		lo:      max(1, base/4),
		hi:      base * 4,
		bid:     base,
		last:    base,
		open:    base,
		high:    base,
		low:     base,
		bidSize: 10,
		askSize: 10,
		walked:  now,
	}
	return m
}

// advance moves the walk to now: one normally distributed move for all the
// whole steps elapsed since the last one. A clock that went back moves
// nothing.
func (m *market) advance(now time.Time) {
	k := int64(now.Sub(m.walked) / stepInterval)
	if k <= 0 {
		return
	}
	m.walked = m.walked.Add(time.Duration(k) * stepInterval)
	move := int64(math.Round(m.rng.NormFloat64() * m.vol * math.Sqrt(float64(k))))
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
	m.bidSize = 1 + m.rng.Int64N(40)
	m.askSize = 1 + m.rng.Int64N(40)
	m.touch(m.last)
}

// set puts the market at n ticks: bid and last there, ask one tick above.
func (m *market) set(n int64, now time.Time) {
	m.bid, m.last = n, n
	if now.After(m.walked) {
		m.walked = now
	}
	m.touch(n)
}

// trade records a fill of qty contracts at n ticks.
func (m *market) trade(n int64, qty int) {
	m.last = n
	m.volume += int64(qty)
	m.touch(n)
}

func (m *market) touch(n int64) {
	m.high = max(m.high, n)
	m.low = min(m.low, n)
}

func (m *market) ask() int64 { return m.bid + 1 }

func (m *market) quote() protocol.Quote {
	r := m.c.root
	return protocol.Quote{
		Instrument:   m.c.name,
		Bid:          r.price(m.bid),
		Ask:          r.price(m.ask()),
		Last:         r.price(m.last),
		Open:         r.price(m.open),
		High:         r.price(m.high),
		Low:          r.price(m.low),
		Close:        r.price(m.last),
		Volume:       m.volume,
		BidSize:      m.bidSize,
		AskSize:      m.askSize,
		TickSize:     r.tickSize,
		PointValue:   r.pointValue,
		TickValue:    r.tickValue,
		QuoteTimeUTC: formatTime(m.walked),
		Epoch:        m.walked.UnixMilli(),
	}
}

// formatTime writes t as RFC 3339 UTC with milliseconds.
func formatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }
