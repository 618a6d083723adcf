package sim

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"time"

	"tradebridge/futures"
)

// history generates a contract's prices before the simulator first priced
// it. It is a pure function of the seed, the contract and the instant the
// contract was first priced: the walk runs backwards from the live walk's
// opening price, so the last generated minute closes exactly there.
//
// It is built top down, so any stretch costs only the sessions it covers:
// each session's net move comes from a generator seeded by the seed, the
// contract and the session; inside a session, a generator seeded by the
// session draws the path of its 1380 minutes as a Brownian bridge that ends
// at the session's move; each minute has an open one second's move from the
// previous close, a high, a low and a volume; inside a minute, a generator
// seeded by the minute draws one print per second that opens, touches the
// high and the low, and closes as the minute does.
type history struct {
	seed     uint64
	name     uint64 // hash of the contract's name
	base     int64  // the live walk's opening price
	lo, hi   int64
	sdSec    float64 // one second's move, in ticks
	sdMin    float64 // one minute's move, in ticks
	activity int64

	// last is the latest session with history; lastMinutes its minutes of
	// history, all of them unless the contract was first priced inside it.
	last        tradingSession
	lastMinutes int
	end         time.Time // the history ends here: no generated print at or after it

	pcg *rand.PCG
	rng *rand.Rand
}

// Generator streams of the history, mixed into each generator's seed.
const (
	streamSessionMove = iota + 1
	streamSessionPath
	streamMinute
)

func newHistory(m *market, seed int64) *history {
	f := fnv.New64a()
	_, _ = f.Write([]byte(m.c.Name))
	h := &history{
		seed: uint64(seed), name: f.Sum64(), base: m.base, lo: m.lo, hi: m.hi,
		sdSec: m.sd, sdMin: m.sd * math.Sqrt(60), activity: m.activity,
	}
	h.pcg = rand.NewPCG(0, 0)
	h.rng = rand.New(h.pcg)
	t0 := m.opened
	if s := futures.SessionFrom(t0); s.Contains(t0) {
		h.last = s
		h.lastMinutes = int(t0.Truncate(time.Minute).Sub(s.Open) / time.Minute)
	} else {
		h.last = s.Prev()
		h.lastMinutes = sessionMinutes
	}
	h.end = h.last.Open.Add(time.Duration(h.lastMinutes) * time.Minute)
	return h
}

// splitmix mixes a 64-bit value (SplitMix64's finalizer).
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// reseed starts the generator of one stream and bucket.
func (h *history) reseed(stream int, bucket int64) {
	h.pcg.Seed(splitmix(h.seed^uint64(stream)<<56), splitmix(h.name^splitmix(uint64(bucket))))
}

// sessionMove is the net move of a whole session, in ticks.
func (h *history) sessionMove(s tradingSession) float64 {
	h.reseed(streamSessionMove, sessionIndex(s.Day))
	return h.rng.NormFloat64() * h.sdMin * math.Sqrt(sessionMinutes)
}

// minuteBar is one generated minute: its closing path value (before
// rounding) and its bar.
type minuteBar struct {
	end float64
	bar bar
}

// sessionPath generates the minutes of session s opening at open (a path
// value in ticks) into buf and returns it.
func (h *history) sessionPath(s tradingSession, open float64, buf []minuteBar) []minuteBar {
	move := h.sessionMove(s)
	h.reseed(streamSessionPath, sessionIndex(s.Day))
	buf = buf[:0]
	var sum float64
	for range sessionMinutes {
		z := h.rng.NormFloat64() * h.sdMin
		sum += z
		buf = append(buf, minuteBar{end: z})
	}
	drift := (move - sum) / sessionMinutes
	x := open
	t := s.Open.UnixNano()
	for i := range buf {
		prev := x
		x += buf[i].end + drift
		buf[i].end = x
		o := h.clamp(math.Round(prev + h.rng.NormFloat64()*h.sdSec))
		c := h.clamp(math.Round(x))
		hi := h.clamp(float64(max(o, c)) + math.Round(math.Abs(h.rng.NormFloat64())*h.sdMin/2))
		lo := h.clamp(float64(min(o, c)) - math.Round(math.Abs(h.rng.NormFloat64())*h.sdMin/2))
		v := 60 + h.activity*30 + h.rng.Int64N(h.activity*60)
		buf[i].bar = bar{t: t + int64(i)*int64(time.Minute), o: o, h: hi, l: lo, c: c, v: v}
	}
	return buf
}

func (h *history) clamp(x float64) int64 {
	return min(max(int64(x), h.lo), h.hi)
}

// opens returns the opening path values of the sessions from first to
// h.last, in order, computed backwards from the live walk's opening price.
func (h *history) opens(first tradingSession, buf []minuteBar) []float64 {
	path := h.sessionPath(h.last, 0, buf)
	open := float64(h.base)
	if h.lastMinutes > 0 {
		open -= path[h.lastMinutes-1].end
	}
	var rev []float64
	for s := h.last; ; s = s.Prev() {
		rev = append(rev, open)
		if !s.Open.After(first.Open) {
			break
		}
		open -= h.sessionMove(s.Prev())
	}
	out := make([]float64, len(rev))
	for i, v := range rev {
		out[len(rev)-1-i] = v
	}
	return out
}

// History levels: what each makes of the generated prices.
const (
	levelTick    = iota // each print, as a tick
	levelSecond         // each print, as a one-second bar
	levelMinute         // each minute bar
	levelSession        // one bar per session, starting at its open
)

// each calls fn, in time order, with the history's units of a level that
// start in [from, stop): prints as ticks, or bars. fn returns false to stop.
func (h *history) each(level int, from, stop time.Time, fn func(bar, int64) bool) {
	if stop.After(h.end) {
		stop = h.end
	}
	if !from.Before(stop) {
		return
	}
	first := futures.SessionFrom(from)
	if first.Open.After(h.last.Open) {
		return
	}
	buf := make([]minuteBar, 0, sessionMinutes)
	opens := h.opens(first, buf)
	fromNs, stopNs := from.UnixNano(), stop.UnixNano()
	var prints []tick
	for i, s := 0, first; i < len(opens) && s.Open.Before(stop); i, s = i+1, s.Next() {
		n := sessionMinutes
		if s.Day.Equal(h.last.Day) {
			n = h.lastMinutes
		}
		if n == 0 {
			continue
		}
		path := h.sessionPath(s, opens[i], buf)[:n]
		if level == levelSession {
			if s.Open.UnixNano() < fromNs {
				continue
			}
			day := path[0].bar
			day.t = s.Open.UnixNano()
			for _, mb := range path[1:] {
				day.merge(mb.bar)
			}
			if !fn(day, -1) {
				return
			}
			continue
		}
		openNs := s.Open.UnixNano()
		for _, mb := range path {
			b := mb.bar
			if b.t >= stopNs {
				return
			}
			if b.t+int64(time.Minute) <= fromNs {
				continue
			}
			if level == levelMinute {
				if b.t >= fromNs && !fn(b, -1) {
					return
				}
				continue
			}
			prints = h.minutePrints(b, prints)
			for _, p := range prints {
				if p.t < fromNs || p.t >= stopNs {
					continue
				}
				one := bar{t: p.t, o: p.px, h: p.px, l: p.px, c: p.px, v: p.v}
				if !fn(one, (p.t-openNs)/int64(stepInterval)) {
					return
				}
			}
		}
	}
}

// minutePrints generates the 60 one-second prints of a minute bar into buf:
// the first at the open, the last at the close, one at the high and one at
// the low, the others a random bridge between them; their sizes add up to
// the bar's volume.
func (h *history) minutePrints(b bar, buf []tick) []tick {
	const n = 60
	h.reseed(streamMinute, b.t/int64(time.Minute))
	buf = buf[:0]
	for i := range n {
		buf = append(buf, tick{t: b.t + int64(i)*int64(time.Second)})
	}
	// Anchors: index and price the path must pass through.
	iH, iL := 1+h.rng.IntN(n-2), 1+h.rng.IntN(n-3)
	if iL >= iH {
		iL++
	}
	switch {
	case b.h == b.o:
		iH = 0
	case b.h == b.c:
		iH = n - 1
	}
	switch {
	case b.l == b.o:
		iL = 0
	case b.l == b.c:
		iL = n - 1
	}
	type anchor struct {
		i  int
		px int64
	}
	anchors := []anchor{{0, b.o}, {iH, b.h}, {iL, b.l}, {n - 1, b.c}}
	if anchors[1].i > anchors[2].i {
		anchors[1], anchors[2] = anchors[2], anchors[1]
	}
	bridgeSd := h.sdSec * 0.6
	for k := 0; k+1 < len(anchors); k++ {
		a, z := anchors[k], anchors[k+1]
		buf[a.i].px, buf[z.i].px = a.px, z.px
		steps := z.i - a.i
		if steps < 2 {
			continue
		}
		// A random walk pinned at both ends, clamped to the bar's range. Its
		// steps are damped because joining the anchors adds moves of its own:
		// so the prints move about as much as the live walk's.
		var w float64
		walk := make([]float64, steps)
		for j := 1; j < steps; j++ {
			w += h.rng.NormFloat64() * bridgeSd
			walk[j] = w
		}
		w += h.rng.NormFloat64() * bridgeSd
		for j := 1; j < steps; j++ {
			f := float64(j) / float64(steps)
			x := float64(a.px) + f*float64(z.px-a.px) + walk[j] - f*w
			buf[a.i+j].px = min(max(int64(math.Round(x)), b.l), b.h)
		}
	}
	// Anchored extremes win over the bridge.
	for _, a := range anchors {
		buf[a.i].px = a.px
	}
	var weights [n]int64
	var total int64
	for i := range weights {
		weights[i] = 1 + h.rng.Int64N(8)
		total += weights[i]
	}
	spare, left := b.v-n, b.v
	for i := range buf {
		v := 1 + spare*weights[i]/total
		if i == n-1 {
			v = left
		}
		buf[i].v = v
		left -= v
	}
	return buf
}
