package sim

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"tradebridge/futures"
	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// ErrBadBarsRequest is wrapped by the error of a Bars request the simulator
// refuses: an unknown period type, a period below 1, a negative DaysBack or
// Limit, a Limit above MaxBarsLimit, From after To, or a range longer than
// the period type allows (see the package documentation).
var ErrBadBarsRequest = errors.New("sim: bad bars request")

// Limits of Bars requests.
const (
	// DefaultBarsLimit is how many bars a request with no Limit returns at
	// most: the most recent ones.
	DefaultBarsLimit = 5000
	// MaxBarsLimit is the largest Limit a request may ask for.
	MaxBarsLimit = 50_000
)

// barsReach bounds a request's range per period type: the longest From-To
// range, and the largest DaysBack (in sessions).
var barsReach = map[string]struct {
	span     time.Duration
	sessions int
}{
	protocol.PeriodTick:   {7 * 24 * time.Hour, 5},
	protocol.PeriodSecond: {7 * 24 * time.Hour, 5},
	protocol.PeriodMinute: {366 * 24 * time.Hour, 260},
	protocol.PeriodDay:    {3660 * 24 * time.Hour, 2600},
	protocol.PeriodWeek:   {3660 * 24 * time.Hour, 2600},
	protocol.PeriodMonth:  {3660 * 24 * time.Hour, 2600},
}

// maxBarsAge bounds how far back a range may start.
const maxBarsAge = 30 * 366 * 24 * time.Hour

func badBars(reason string) error {
	return &bridge.RequestError{Reason: reason, Err: ErrBadBarsRequest}
}

// barPeriod is a bar period: its type (a protocol Period value) and size.
type barPeriod struct {
	typ string
	n   int64
}

// newBarPeriod validates a period type and period; a period of 0 means 1.
func newBarPeriod(typ string, n int) (barPeriod, error) {
	t, ok := protocol.NormalizePeriodType(typ)
	if !ok {
		return barPeriod{}, errors.New("period type must be tick, second, minute, day, week or month")
	}
	if n < 0 {
		return barPeriod{}, errors.New("period must be at least 1")
	}
	return barPeriod{typ: t, n: int64(max(n, 1))}, nil
}

// level is the unit bars of the period are built from.
func (bp barPeriod) level() int {
	switch bp.typ {
	case protocol.PeriodTick:
		return levelTick
	case protocol.PeriodSecond:
		return levelSecond
	case protocol.PeriodMinute:
		return levelMinute
	}
	return levelSession
}

// bucket returns the start and end of the time-based bar that holds an
// instant t of trading time. Second and minute bars align on the session's
// open and end at its close at the latest; day, week and month bars start
// at the open of their first session and end at the close of their last;
// bars of several days, weeks or months align on sessionEpoch (days, weeks)
// or on year 0 (months), so every request cuts them the same way.
func (bp barPeriod) bucket(t time.Time) (start, end time.Time) {
	s := futures.SessionFrom(t)
	switch bp.typ {
	case protocol.PeriodSecond, protocol.PeriodMinute:
		size := time.Duration(bp.n) * time.Second
		if bp.typ == protocol.PeriodMinute {
			size = time.Duration(bp.n) * time.Minute
		}
		start = s.Open.Add(t.Sub(s.Open) / size * size)
		return start, minTime(start.Add(size), s.Close)
	case protocol.PeriodDay:
		k := floorDiv(sessionIndex(s.Day), bp.n) * bp.n
		return sessionAtIndex(k).Open, sessionAtIndex(k + bp.n - 1).Close
	case protocol.PeriodWeek:
		k := floorDiv(floorDiv(daysSinceEpoch(s.Day), 7), bp.n) * bp.n
		monday := sessionEpoch.AddDate(0, 0, int(k*7))
		return sessionOn(monday).Open, sessionOn(monday.AddDate(0, 0, int(bp.n*7-3))).Close
	default: // month
		mi := int64(s.Day.Year())*12 + int64(s.Day.Month()) - 1
		k := floorDiv(mi, bp.n) * bp.n
		first := date(int(floorDiv(k, 12)), time.Month(k-floorDiv(k, 12)*12+1), 1)
		last := first.AddDate(0, int(bp.n), -1)
		return futures.SessionFrom(first).Open, lastSessionOn(last).Close
	}
}

// lastSessionOn returns the session of the last trade date at or before d.
func lastSessionOn(d time.Time) tradingSession {
	for !futures.IsTradeDay(d) {
		d = d.AddDate(0, 0, -1)
	}
	return sessionOn(d)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// builtBar is a bar being built or built, with what tells whether it closed.
type builtBar struct {
	bar
	end     int64 // time-based bars: when the bar closes (Unix ns)
	sessEnd int64 // tick bars: the close of the bar's session
	count   int64 // tick bars: prints in the bar
}

// aggregator builds bars of a period from units (ticks or bars) fed in time
// order, keeping the latest limit bars that start in [from, to]. A bar
// whose first units were not fed (it started before from) is dropped.
type aggregator struct {
	bp       barPeriod
	from, to int64
	limit    int

	out  []builtBar // a ring once limit bars are kept
	head int

	cur     builtBar
	has     bool
	partial bool
	// Cached bucket of cur (time-based) or session and index (tick bars).
	bStart, bEnd int64
	sOpen, sEnd  int64
	idx          int64
}

func newAggregator(bp barPeriod, from, to time.Time, limit int) *aggregator {
	return &aggregator{bp: bp, from: from.UnixNano(), to: to.UnixNano(), limit: limit}
}

// add feeds one unit; seq is a tick's index in its session (tick bars). It
// returns false once no later unit can make a bar that starts by to.
func (a *aggregator) add(u bar, seq int64) bool {
	if a.bp.typ == protocol.PeriodTick {
		if !a.has || u.t >= a.sEnd || u.t < a.sOpen || seq/a.bp.n != a.idx {
			a.flush()
			if u.t > a.to {
				return false
			}
			if u.t >= a.sEnd || u.t < a.sOpen {
				s := futures.SessionFrom(time.Unix(0, u.t))
				a.sOpen, a.sEnd = s.Open.UnixNano(), s.Close.UnixNano()
			}
			a.cur = builtBar{bar: u, sessEnd: a.sEnd}
			a.idx, a.has, a.partial = seq/a.bp.n, true, seq%a.bp.n != 0
		} else {
			a.cur.merge(u)
		}
		a.cur.count++
		return true
	}
	if a.has && u.t >= a.bStart && u.t < a.bEnd {
		a.cur.merge(u)
		return true
	}
	a.flush()
	start, end := a.bp.bucket(time.Unix(0, u.t))
	a.bStart, a.bEnd = start.UnixNano(), end.UnixNano()
	if a.bStart > a.to {
		return false
	}
	u.t = a.bStart
	a.cur = builtBar{bar: u, end: a.bEnd}
	a.has, a.partial = true, a.bStart < a.from
	return true
}

// flush keeps the bar being built, if it belongs to the result.
func (a *aggregator) flush() {
	if !a.has {
		return
	}
	a.has = false
	if a.partial || a.cur.t < a.from || a.cur.t > a.to {
		return
	}
	if len(a.out) < a.limit {
		a.out = append(a.out, a.cur)
		return
	}
	a.out[a.head] = a.cur
	a.head = (a.head + 1) % a.limit
}

// bars ends the feed and returns the kept bars, oldest first.
func (a *aggregator) bars() []builtBar {
	a.flush()
	return append(a.out[a.head:len(a.out):len(a.out)], a.out[:a.head]...)
}

// closed reports whether a built bar had closed at now.
func (bp barPeriod) closed(b builtBar, now time.Time) bool {
	ns := now.UnixNano()
	if bp.typ == protocol.PeriodTick {
		return b.count >= bp.n || b.sessEnd <= ns
	}
	return b.end <= ns
}

// liveUnits returns the market's live units of a level that start in
// [from, stop), and seq for ticks.
func (m *market) liveUnits(level int, from, stop time.Time) (units []bar, seqs []int64) {
	f, s := from.UnixNano(), stop.UnixNano()
	if level == levelTick {
		i := sort.Search(m.ticks.len(), func(i int) bool { return m.ticks.at(i).t >= f })
		for ; i < m.ticks.len(); i++ {
			tk := m.ticks.at(i)
			if tk.t >= s {
				break
			}
			units = append(units, bar{t: tk.t, o: tk.px, h: tk.px, l: tk.px, c: tk.px, v: tk.v})
			seqs = append(seqs, tk.seq)
		}
		return units, seqs
	}
	r := &m.secs
	switch level {
	case levelMinute:
		r = &m.mins
	case levelSession:
		r = &m.days
	}
	i := sort.Search(r.len(), func(i int) bool { return r.at(i).t >= f })
	for ; i < r.len(); i++ {
		b := r.at(i)
		if b.t >= s {
			break
		}
		units = append(units, *b)
	}
	return units, nil
}

// barsJob is a snapshot of what building bars needs, taken with p.mu held
// so that the bars can be built without it.
type barsJob struct {
	bp       barPeriod
	from, to time.Time
	stop     time.Time // units that start from here on cannot change the result
	limit    int
	hist     *history
	live     []bar
	seqs     []int64
}

// run builds the bars.
func (j *barsJob) run() []builtBar {
	agg := newAggregator(j.bp, j.from, j.to, j.limit)
	more := true
	j.hist.each(j.bp.level(), j.from, j.stop, func(u bar, seq int64) bool {
		more = agg.add(u, seq)
		return more
	})
	for i := 0; more && i < len(j.live); i++ {
		var seq int64
		if j.seqs != nil {
			seq = j.seqs[i]
		}
		more = agg.add(j.live[i], seq)
	}
	return agg.bars()
}

// barsJobLocked prepares the bars of m in [from, to] (to at most now), with
// p.mu held.
func (p *Platform) barsJobLocked(m *market, bp barPeriod, from, to time.Time, limit int) *barsJob {
	stop := to
	switch {
	case bp.typ == protocol.PeriodTick:
		if s := futures.SessionFrom(to); s.Contains(to) {
			stop = s.Close
		}
	case futures.SessionFrom(to).Contains(to):
		_, stop = bp.bucket(to)
	}
	stop = stop.Add(time.Nanosecond) // to itself may start a unit
	j := &barsJob{bp: bp, from: from, to: to, stop: stop, limit: limit, hist: newHistory(m, p.seed)}
	j.live, j.seqs = m.liveUnits(bp.level(), from, stop)
	return j
}

// Bars returns bars of an instrument built from the simulator's prices: the
// live walk's prints since the simulator first priced the contract, and
// before that a generated history that ends at the walk's opening price.
// See the package documentation for ranges, alignment and limits.
func (p *Platform) Bars(ctx context.Context, req bridge.BarsRequest) (protocol.Bars, error) {
	if err := ctx.Err(); err != nil {
		return protocol.Bars{}, err
	}
	bp, err := newBarPeriod(req.PeriodType, req.Period)
	if err != nil {
		return protocol.Bars{}, badBars(err.Error())
	}
	limit := req.Limit
	switch {
	case limit < 0:
		return protocol.Bars{}, badBars("limit must not be negative")
	case limit > MaxBarsLimit:
		return protocol.Bars{}, badBars(fmt.Sprintf("limit must be at most %d", MaxBarsLimit))
	case limit == 0:
		limit = DefaultBarsLimit
	}
	reach := barsReach[bp.typ]
	switch {
	case req.DaysBack < 0:
		return protocol.Bars{}, badBars("daysBack must not be negative")
	case req.DaysBack > reach.sessions:
		return protocol.Bars{}, badBars(fmt.Sprintf("daysBack must be at most %d for %s bars", reach.sessions, bp.typ))
	case !req.From.IsZero() && !req.To.IsZero() && req.From.After(req.To):
		return protocol.Bars{}, badBars("from must not be after to")
	case !req.From.IsZero() && !req.To.IsZero() && req.To.Sub(req.From) > reach.span:
		return protocol.Bars{}, badBars(fmt.Sprintf("the range must be at most %d days for %s bars",
			int(reach.span/(24*time.Hour)), bp.typ))
	}

	p.mu.Lock()
	now, err := p.begin()
	if err != nil {
		p.mu.Unlock()
		return protocol.Bars{}, err
	}
	c, err := resolve(req.Instrument, now)
	if err != nil {
		p.mu.Unlock()
		return protocol.Bars{}, err
	}
	to := now
	if !req.To.IsZero() && req.To.Before(now) {
		to = req.To
	}
	var from time.Time
	switch {
	case !req.From.IsZero():
		from = req.From
		if to.Sub(from) > reach.span {
			p.mu.Unlock()
			return protocol.Bars{}, badBars(fmt.Sprintf("the range must be at most %d days for %s bars",
				int(reach.span/(24*time.Hour)), bp.typ))
		}
	case req.DaysBack > 0:
		from = sessionsBack(to, req.DaysBack)
	default:
		from = barsBack(bp, to, limit, reach.span)
	}
	if now.Sub(from) > maxBarsAge {
		p.mu.Unlock()
		return protocol.Bars{}, badBars("the range starts too far back")
	}
	var job *barsJob
	if !from.After(to) {
		job = p.barsJobLocked(p.market(c, now), bp, from, to, limit)
	}
	p.mu.Unlock()

	out := protocol.Bars{Instrument: c.Name, PeriodType: bp.typ, Period: int(bp.n), Bars: []protocol.Bar{}}
	if job != nil {
		for _, b := range job.run() {
			out.Bars = append(out.Bars, barRecord(c.Root, b.bar))
		}
	}
	out.Count = len(out.Bars)
	return out, nil
}

// barRecord writes a bar in prices.
func barRecord(r *futures.Root, b bar) protocol.Bar {
	t := time.Unix(0, b.t)
	return protocol.Bar{Time: protocol.FormatTime(t), Epoch: t.UnixMilli(), Open: r.Price(b.o), High: r.Price(b.h),
		Low: r.Price(b.l), Close: r.Price(b.c), Volume: b.v}
}

// sessionsBack returns the open of the n-th session back from t, the
// session in progress (or the last one) counting as the first.
func sessionsBack(t time.Time, n int) time.Time {
	s := futures.SessionFrom(t)
	if !s.Contains(t) {
		s = s.Prev()
	}
	for range n - 1 {
		s = s.Prev()
	}
	return s.Open
}

// barsBack returns a start from which the range up to t holds about limit
// bars of the period, at most span before t.
func barsBack(bp barPeriod, t time.Time, limit int, span time.Duration) time.Time {
	earliest := t.Add(-span)
	units := int64(limit) * bp.n
	var from time.Time
	switch bp.typ {
	case protocol.PeriodTick, protocol.PeriodSecond, protocol.PeriodMinute:
		d := time.Duration(units) * time.Second
		if bp.typ == protocol.PeriodMinute {
			d = time.Duration(units) * time.Minute
		}
		from = tradingTimeBack(t, d, earliest)
	case protocol.PeriodDay:
		from = sessionsBack(t, int(min(units, 1<<20)))
	case protocol.PeriodWeek:
		from = t.AddDate(0, 0, -7*int(min(units, 1<<20)))
	default:
		from = t.AddDate(0, -int(min(units, 1<<20)), 0)
	}
	if from.Before(earliest) {
		from = earliest
	}
	return from
}

// tradingTimeBack returns the instant from which d of trading time passes
// until t, or earliest if that comes first.
func tradingTimeBack(t time.Time, d time.Duration, earliest time.Time) time.Time {
	s := futures.SessionFrom(t)
	end := t
	if !s.Contains(t) {
		s = s.Prev()
		end = s.Close
	}
	for {
		if have := end.Sub(s.Open); have >= d {
			return end.Add(-d)
		} else {
			d -= have
		}
		if s.Open.Before(earliest) {
			return earliest
		}
		s = s.Prev()
		end = s.Close
	}
}
