package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// ErrBadStrategyRequest is wrapped by the error of a strategy request the
// simulator refuses: an unknown or mistyped parameter or one out of its
// range, an unknown mode, period type or action, a period below 1, or too
// many strategies.
var ErrBadStrategyRequest = errors.New("sim: bad strategy request")

// Built-in strategy classes.
const (
	// StrategyMACrossOver is NinjaTrader's SampleMACrossOver: long when the
	// fast simple moving average of the closes crosses above the slow one,
	// short when it crosses below. Parameters: Fast (10), Slow (25),
	// Quantity (1).
	StrategyMACrossOver = "SampleMACrossOver"
	// StrategyRsi trades Wilder's relative strength index of the closes:
	// long when it crosses above Lower, short when it crosses below Upper.
	// Parameters: Period (14), Upper (70), Lower (30), Quantity (1).
	StrategyRsi = "SampleRsi"
)

// Signal names of strategy orders, as NinjaTrader names them.
const (
	signalLong  = "Long"
	signalShort = "Short"
	signalClose = "Close position"
)

// maxStrategies bounds the strategies a simulator keeps: starting one more
// forgets the oldest terminal one, or is refused when none is terminal.
const maxStrategies = 1000

// maxStrategyCatchUp bounds the bars a strategy reads in one step after a
// long jump of the clock; it acts on the latest of them.
const maxStrategyCatchUp = 10_000

// paramSpec is one integer parameter of a strategy class.
type paramSpec struct {
	name          string
	def, min, max int
}

// strategyClass is a built-in strategy class.
type strategyClass struct {
	name   string
	params []paramSpec
	// check validates the parameters together; nil when they are fine.
	check    func(v map[string]int) error
	newLogic func(v map[string]int) strategyLogic
}

// strategyLogic is a strategy's trading rule.
type strategyLogic interface {
	// onBar takes the close of a closed bar, in ticks, and returns the
	// position direction the strategy wants from now on: 1 long, -1 short,
	// 0 no change.
	onBar(close float64) int
	// warmup is how many bars the logic needs before it can signal.
	warmup() int
}

var strategyClasses = []*strategyClass{
	{
		name: StrategyMACrossOver,
		params: []paramSpec{
			{"Fast", 10, 1, 500}, {"Slow", 25, 2, 1000}, {"Quantity", 1, 1, 1000},
		},
		check: func(v map[string]int) error {
			if v["Fast"] >= v["Slow"] {
				return errors.New("Fast must be below Slow")
			}
			return nil
		},
		newLogic: func(v map[string]int) strategyLogic { return &maCross{fast: v["Fast"], slow: v["Slow"]} },
	},
	{
		name: StrategyRsi,
		params: []paramSpec{
			{"Period", 14, 2, 500}, {"Upper", 70, 1, 99}, {"Lower", 30, 1, 99}, {"Quantity", 1, 1, 1000},
		},
		check: func(v map[string]int) error {
			if v["Lower"] >= v["Upper"] {
				return errors.New("Lower must be below Upper")
			}
			return nil
		},
		newLogic: func(v map[string]int) strategyLogic {
			return &rsi{period: v["Period"], upper: float64(v["Upper"]), lower: float64(v["Lower"])}
		},
	},
}

// maCross is SampleMACrossOver's rule.
type maCross struct {
	fast, slow int
	closes     []float64 // the latest slow+1 closes
}

func (s *maCross) warmup() int { return s.slow + 1 }

func (s *maCross) onBar(c float64) int {
	if len(s.closes) == s.slow+1 {
		copy(s.closes, s.closes[1:])
		s.closes = s.closes[:s.slow]
	}
	s.closes = append(s.closes, c)
	if len(s.closes) < s.slow+1 {
		return 0
	}
	fast0, slow0 := sma(s.closes, s.fast, 0), sma(s.closes, s.slow, 0)
	fast1, slow1 := sma(s.closes, s.fast, 1), sma(s.closes, s.slow, 1)
	switch {
	case fast1 <= slow1 && fast0 > slow0:
		return 1
	case fast1 >= slow1 && fast0 < slow0:
		return -1
	}
	return 0
}

// sma is the mean of the n closes that end ago bars before the latest.
func sma(closes []float64, n, ago int) float64 {
	end := len(closes) - ago
	var sum float64
	for _, c := range closes[end-n : end] {
		sum += c
	}
	return sum / float64(n)
}

// rsi is SampleRsi's rule, on Wilder's smoothing.
type rsi struct {
	period       int
	upper, lower float64
	bars         int // closes seen
	prevClose    float64
	gain, loss   float64 // averages once bars > period
	prev         float64 // previous RSI value, once there is one
	hasPrev      bool
}

func (s *rsi) warmup() int { return 3*s.period + 1 }

func (s *rsi) onBar(c float64) int {
	s.bars++
	if s.bars == 1 {
		s.prevClose = c
		return 0
	}
	d := c - s.prevClose
	s.prevClose = c
	up, down := max(d, 0), max(-d, 0)
	n := float64(s.period)
	switch {
	case s.bars <= s.period+1:
		s.gain += up / n
		s.loss += down / n
		if s.bars < s.period+1 {
			return 0
		}
	default:
		s.gain = (s.gain*(n-1) + up) / n
		s.loss = (s.loss*(n-1) + down) / n
	}
	v := 50.0
	switch {
	case s.loss > 0:
		v = 100 - 100/(1+s.gain/s.loss)
	case s.gain > 0:
		v = 100
	}
	prev, had := s.prev, s.hasPrev
	s.prev, s.hasPrev = v, true
	switch {
	case had && prev <= s.lower && v > s.lower:
		return 1
	case had && prev >= s.upper && v < s.upper:
		return -1
	}
	return 0
}

// strategy is a running or ended strategy.
type strategy struct {
	rec    protocol.Strategy // identity, parameters and state; position fields are filled on reading
	class  *strategyClass
	params map[string]int
	acct   *account
	m      *market
	bp     barPeriod
	qty    int
	logic  strategyLogic

	// next: bars that start before it were evaluated; pendingEnd is when
	// the time-based bar starting at next closes (zero when unknown).
	next       time.Time
	pendingEnd time.Time

	pos      int     // signed contracts
	avg      float64 // average entry price, in ticks
	realized float64 // dollars, net of commission
	orders   []*strategyOrder
}

// strategyOrder is an order of a strategy and how much of its fill the
// strategy accounted for.
type strategyOrder struct {
	o     *order
	seen  int     // contracts accounted
	value float64 // ticks times contracts accounted
}

// findClass returns a class by name, in any casing.
func findClass(name string) *strategyClass {
	for _, c := range strategyClasses {
		if strings.EqualFold(c.name, strings.TrimSpace(name)) {
			return c
		}
	}
	return nil
}

// classNames lists the classes in words.
func classNames() string {
	names := make([]string, len(strategyClasses))
	for i, c := range strategyClasses {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

func badStrategy(format string, args ...any) error {
	return &bridge.RequestError{Reason: fmt.Sprintf(format, args...), Err: ErrBadStrategyRequest}
}

// parseParams validates parameters against a class and returns every
// parameter's value, defaults filled in. Names match in any casing.
func (cls *strategyClass) parseParams(in map[string]any) (map[string]int, error) {
	names := make([]string, len(cls.params))
	for i, ps := range cls.params {
		names[i] = ps.name
	}
	v := make(map[string]int, len(cls.params))
	for k, raw := range in {
		var spec *paramSpec
		for i := range cls.params {
			if strings.EqualFold(cls.params[i].name, strings.TrimSpace(k)) {
				spec = &cls.params[i]
			}
		}
		if spec == nil {
			return nil, badStrategy("the parameters of %s are %s", cls.name, strings.Join(names, ", "))
		}
		if _, dup := v[spec.name]; dup {
			return nil, badStrategy("parameter %s is given twice", spec.name)
		}
		n, ok := intParam(raw)
		if !ok {
			return nil, badStrategy("parameter %s must be a whole number", spec.name)
		}
		if n < spec.min || n > spec.max {
			return nil, badStrategy("parameter %s must be from %d to %d", spec.name, spec.min, spec.max)
		}
		v[spec.name] = n
	}
	for _, ps := range cls.params {
		if _, ok := v[ps.name]; !ok {
			v[ps.name] = ps.def
		}
	}
	if err := cls.check(v); err != nil {
		return nil, badStrategy("%s", err.Error())
	}
	return v, nil
}

// intParam reads a whole number given as any Go or JSON number.
func intParam(v any) (int, bool) {
	var f float64
	switch x := v.(type) {
	case int:
		return x, true
	case int32:
		return int(x), true
	case int64:
		f = float64(x)
	case float32:
		f = float64(x)
	case float64:
		f = x
	case json.Number:
		n, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return 0, false
		}
		f = n
	default:
		return 0, false
	}
	if f != math.Trunc(f) || math.Abs(f) > 1e9 {
		return 0, false
	}
	return int(f), true
}

// StartStrategy starts a strategy of a built-in class (StrategyMACrossOver,
// StrategyRsi) on an account and instrument. The strategy first reads the
// bars its rule needs, without trading on them; from then on it acts when a
// bar of its period closes (see the package documentation).
func (p *Platform) StartStrategy(ctx context.Context, req bridge.StrategyRequest) (protocol.Strategy, error) {
	if err := ctx.Err(); err != nil {
		return protocol.Strategy{}, err
	}
	cls := findClass(req.Class)
	if cls == nil {
		return protocol.Strategy{}, fmt.Errorf("sim: the classes are %s: %w", classNames(), bridge.ErrStrategyClass)
	}
	params, err := cls.parseParams(req.Parameters)
	if err != nil {
		return protocol.Strategy{}, err
	}
	state := protocol.StrategyStateEnabled
	switch mode := strings.TrimSpace(req.Mode); {
	case mode == "" || strings.EqualFold(mode, protocol.StrategyModeRealtime):
	case strings.EqualFold(mode, protocol.StrategyModeDisabled):
		state = protocol.StrategyStateDisabled
	default:
		return protocol.Strategy{}, badStrategy("mode must be %s or %s",
			protocol.StrategyModeRealtime, protocol.StrategyModeDisabled)
	}
	typ := req.PeriodType
	if strings.TrimSpace(typ) == "" {
		typ = protocol.PeriodMinute
	}
	bp, err := newBarPeriod(typ, req.Period)
	if err != nil {
		return protocol.Strategy{}, badStrategy("%s", err.Error())
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	now, err := p.begin()
	if err != nil {
		return protocol.Strategy{}, err
	}
	a, err := p.account(req.Account)
	if err != nil {
		return protocol.Strategy{}, err
	}
	c, err := resolve(req.Instrument, now)
	if err != nil {
		return protocol.Strategy{}, err
	}
	if len(p.feed.strategies) >= maxStrategies && !p.forgetStrategyLocked() {
		return protocol.Strategy{}, badStrategy("at most %d strategies may run", maxStrategies)
	}
	p.feed.strategySeq++
	id := "sim-strat-" + strconv.FormatInt(p.feed.strategySeq, 10)
	s := &strategy{
		class: cls, params: params, acct: a, m: p.market(c, now), bp: bp,
		qty: params["Quantity"], logic: cls.newLogic(params),
		rec: protocol.Strategy{
			ID: id, StrategyID: id, Class: cls.name, Account: a.name, Instrument: c.Name,
			PeriodType: bp.typ, Period: int(bp.n), State: state, StartedAt: protocol.FormatTime(now),
		},
	}
	p.warmUpLocked(s, now)
	p.feed.strategies = append(p.feed.strategies, s)
	p.log.Info("strategy started", zap.String("id", id), zap.String("class", cls.name),
		zap.String("account", a.name), zap.String("instrument", c.Name), zap.String("state", state))
	rec := p.strategyRecord(s)
	p.emit(bridge.Event{Kind: bridge.EventStrategy, Strategy: &rec})
	return rec, nil
}

// forgetStrategyLocked drops the oldest terminal strategy; false when none
// is terminal.
func (p *Platform) forgetStrategyLocked() bool {
	for i, s := range p.feed.strategies {
		if protocol.TerminalStrategyState(s.rec.State) {
			p.feed.strategies = append(p.feed.strategies[:i], p.feed.strategies[i+1:]...)
			return true
		}
	}
	return false
}

// warmUpLocked feeds a new strategy the closed bars its rule needs, ending
// at now, without trading.
func (p *Platform) warmUpLocked(s *strategy, now time.Time) {
	n := s.logic.warmup() + 1
	from := barsBack(s.bp, now, n, barsReach[s.bp.typ].span)
	bars := p.barsJobLocked(s.m, s.bp, from, now, n).run()
	s.next, s.pendingEnd = now, time.Time{}
	for _, b := range bars {
		if !s.bp.closed(b, now) {
			s.setPending(b)
			break
		}
		s.logic.onBar(float64(b.c))
		s.next = time.Unix(0, b.t+1)
	}
}

// setPending makes an unclosed bar the next one to evaluate.
func (s *strategy) setPending(b builtBar) {
	s.next = time.Unix(0, b.t)
	s.pendingEnd = time.Time{}
	if s.bp.typ != protocol.PeriodTick {
		s.pendingEnd = time.Unix(0, b.end)
	}
}

// runStrategiesLocked lets every strategy act on the bars that closed since
// it last looked, with p.mu held. A strategy looks only while its market is
// open, so a bar that closed with the session is acted on when the next
// session opens, as on NinjaTrader with bars evaluated on their close.
func (p *Platform) runStrategiesLocked(now time.Time) {
	for _, s := range p.feed.strategies {
		if protocol.TerminalStrategyState(s.rec.State) {
			continue
		}
		p.syncStrategyLocked(s)
		if !s.m.c.Open(now) || now.Before(s.next) ||
			(!s.pendingEnd.IsZero() && now.Before(s.pendingEnd)) {
			continue
		}
		bars := p.barsJobLocked(s.m, s.bp, s.next, now, maxStrategyCatchUp).run()
		want := 0
		for _, b := range bars {
			if !s.bp.closed(b, now) {
				s.setPending(b)
				break
			}
			if w := s.logic.onBar(float64(b.c)); w != 0 {
				want = w
			}
			s.next, s.pendingEnd = time.Unix(0, b.t+1), time.Time{}
		}
		if want != 0 && s.rec.State == protocol.StrategyStateEnabled {
			p.strategyTargetLocked(s, now, want*s.qty)
		}
	}
}

// strategyTargetLocked submits the market orders that take a strategy's own
// position to target: a reversal closes the position ("Close position") and
// then enters ("Long" or "Short"), as NinjaTrader does.
func (p *Platform) strategyTargetLocked(s *strategy, now time.Time, target int) {
	if target == s.pos {
		return
	}
	if s.pos != 0 && (target == 0 || (target > 0) != (s.pos > 0)) {
		if p.strategyOrderLocked(s, now, -s.pos, signalClose) != nil {
			return
		}
	}
	if diff := target - s.pos; diff != 0 && target != 0 {
		name := signalLong
		if target < 0 {
			name = signalShort
		}
		_ = p.strategyOrderLocked(s, now, diff, name)
	}
}

// strategyOrderLocked submits a market order of qty contracts (signed) for
// a strategy and accounts for its fill.
func (p *Platform) strategyOrderLocked(s *strategy, now time.Time, qty int, name string) error {
	action := protocol.ActionBuy
	if qty < 0 {
		action = protocol.ActionSell
	}
	o, err := p.submitLocked(now, bridge.OrderRequest{
		Account: s.acct.name, Instrument: s.m.c.Name, Action: action, OrderType: protocol.OrderTypeMarket,
		Quantity: abs(qty), TimeInForce: protocol.TimeInForceGtc, Name: name, StrategyTag: s.rec.ID,
	})
	if err != nil {
		p.log.Warn("strategy order refused", zap.String("id", s.rec.ID), zap.String("signal", name), zap.Error(err))
		return err
	}
	s.orders = append(s.orders, &strategyOrder{o: o})
	p.syncStrategyLocked(s)
	return nil
}

// syncStrategyLocked accounts for the new fills of a strategy's orders:
// its position, average price and realized P&L (net of commission), and
// publishes the strategy when they changed.
func (p *Platform) syncStrategyLocked(s *strategy) {
	changed := false
	kept := s.orders[:0]
	for _, so := range s.orders {
		if filled := so.o.rec.Filled; filled > so.seen {
			value := so.o.rec.AverageFillPrice / s.m.c.Root.TickSize * float64(filled)
			qty := filled - so.seen
			price := (value - so.value) / float64(qty)
			so.seen, so.value = filled, value
			side := 1
			if so.o.rec.OrderAction == protocol.ActionSell {
				side = -1
			}
			s.realized = cents(s.realized + s.fill(side*qty, price) - float64(qty)*p.commission)
			changed = true
		}
		if !so.o.terminal() {
			kept = append(kept, so)
		}
	}
	clear(s.orders[len(kept):])
	s.orders = kept
	if changed {
		rec := p.strategyRecord(s)
		p.emit(bridge.Event{Kind: bridge.EventStrategy, Strategy: &rec})
	}
}

// fill applies a fill of qty contracts (signed) at price ticks to the
// strategy's own position and returns the realized P&L in dollars, before
// commission.
func (s *strategy) fill(qty int, price float64) float64 {
	tv := s.m.c.Root.TickValue
	switch {
	case s.pos == 0 || (s.pos > 0) == (qty > 0):
		held, added := float64(abs(s.pos)), float64(abs(qty))
		s.avg = (s.avg*held + price*added) / (held + added)
		s.pos += qty
		return 0
	case abs(qty) <= abs(s.pos):
		realized := (price - s.avg) * float64(-qty) * tv
		s.pos += qty
		if s.pos == 0 {
			s.avg = 0
		}
		return realized
	default:
		realized := (price - s.avg) * float64(s.pos) * tv
		s.pos += qty
		s.avg = price
		return realized
	}
}

// strategyRecord returns the strategy as callers see it, its position
// marked at the last price, with p.mu held.
func (p *Platform) strategyRecord(s *strategy) protocol.Strategy {
	rec := s.rec
	r := s.m.c.Root
	rec.Parameters = make(map[string]any, len(s.params))
	for k, v := range s.params {
		rec.Parameters[k] = v
	}
	rec.Enabled = rec.State == protocol.StrategyStateEnabled
	rec.Terminal = protocol.TerminalStrategyState(rec.State)
	rec.MarketPosition = protocol.MarketPositionFlat
	switch {
	case s.pos > 0:
		rec.MarketPosition = protocol.MarketPositionLong
	case s.pos < 0:
		rec.MarketPosition = protocol.MarketPositionShort
	}
	rec.Quantity = abs(s.pos)
	rec.AveragePrice = roundTo(s.avg*r.TickSize, r.Decimals+8)
	rec.RealizedProfitLoss = s.realized
	if s.pos != 0 {
		rec.UnrealizedProfitLoss = cents((float64(s.m.last) - s.avg) * float64(s.pos) * r.TickValue)
	}
	return rec
}

// Strategies lists the account's strategies in start order, terminal ones
// included.
func (p *Platform) Strategies(ctx context.Context, account string) ([]protocol.Strategy, error) {
	return locked(ctx, p, func(_ time.Time) ([]protocol.Strategy, error) {
		a, err := p.account(account)
		if err != nil {
			return nil, err
		}
		out := []protocol.Strategy{}
		for _, s := range p.feed.strategies {
			if s.acct == a {
				out = append(out, p.strategyRecord(s))
			}
		}
		return out, nil
	})
}

// SetStrategyState enables, disables or closes a strategy. Enabling an
// enabled strategy or disabling a disabled one changes nothing. A disabled
// strategy keeps its position and follows the bars, but places no order.
// Closing is terminal: it cancels the strategy's working orders and closes
// its own position (not the account's) with a market order; while the
// market is closed, closing a strategy that holds a position is refused
// with a *bridge.RejectError and changes nothing.
func (p *Platform) SetStrategyState(ctx context.Context, account, id string, action bridge.StrategyAction) (protocol.Strategy, error) {
	return locked(ctx, p, func(now time.Time) (protocol.Strategy, error) {
		a, err := p.account(account)
		if err != nil {
			return protocol.Strategy{}, err
		}
		var s *strategy
		for _, x := range p.feed.strategies {
			if x.acct == a && x.rec.ID == id {
				s = x
			}
		}
		if s == nil {
			return protocol.Strategy{}, fmt.Errorf("sim: %w", bridge.ErrStrategyNotFound)
		}
		if protocol.TerminalStrategyState(s.rec.State) {
			return protocol.Strategy{}, fmt.Errorf("sim: the strategy is %s: %w", s.rec.State, bridge.ErrStrategyTerminal)
		}
		state := s.rec.State
		switch action {
		case bridge.StrategyEnable:
			state = protocol.StrategyStateEnabled
		case bridge.StrategyDisable:
			state = protocol.StrategyStateDisabled
		case bridge.StrategyClose:
			if err := p.closeStrategyLocked(s, now); err != nil {
				return protocol.Strategy{}, err
			}
			state = protocol.StrategyStateClosed
			s.rec.EndedAt = protocol.FormatTime(now)
		default:
			return protocol.Strategy{}, badStrategy("action must be enable, disable or close")
		}
		if state != s.rec.State {
			s.rec.State = state
			p.log.Info("strategy state changed", zap.String("id", s.rec.ID), zap.String("state", state))
			rec := p.strategyRecord(s)
			p.emit(bridge.Event{Kind: bridge.EventStrategy, Strategy: &rec})
		}
		return p.strategyRecord(s), nil
	})
}

// closeStrategyLocked cancels a strategy's working orders and closes its
// own position at the market.
func (p *Platform) closeStrategyLocked(s *strategy, now time.Time) error {
	if s.pos != 0 && !s.m.c.Open(now) {
		return closedReject(s.m.c, now)
	}
	for _, so := range s.orders {
		if !so.o.terminal() {
			if err := p.cancelLocked(now, so.o); err != nil {
				return err
			}
		}
	}
	p.syncStrategyLocked(s)
	if s.pos != 0 {
		if err := p.strategyOrderLocked(s, now, -s.pos, signalClose); err != nil {
			return err
		}
	}
	return nil
}
