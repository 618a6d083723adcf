package sim

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// Names NinjaTrader gives the orders of an ATM strategy: the entry, and the
// stop and target of bracket n ("Stop1", "Target1", …).
const (
	atmEntryName  = "Entry"
	atmStopName   = "Stop"
	atmTargetName = "Target"
)

// DefaultAtmTemplates returns the simulator's built-in ATM templates, the
// ones a simulator has when Options.AtmTemplates is nil:
//
//   - "ATM 1 Target": 1 contract, stop 8 ticks, target 16 ticks;
//   - "ATM 2 Targets": 2 contracts in two brackets, both stops 8 ticks,
//     targets 8 and 16 ticks, breakeven +1 tick once 8 ticks in profit;
//   - "ATM Trail": 1 contract, stop 12 ticks, target 40 ticks, the stop
//     trailing 8 ticks behind the best price in 2-tick steps once 8 ticks
//     in profit.
//
// All are Gtc.
func DefaultAtmTemplates() []protocol.AtmTemplate {
	return []protocol.AtmTemplate{
		{Name: "ATM 1 Target", Quantity: 1, TimeInForce: protocol.TimeInForceGtc,
			Brackets: []protocol.AtmBracket{{Quantity: 1, StopLossTicks: 8, ProfitTargetTicks: 16}}},
		{Name: "ATM 2 Targets", Quantity: 2, TimeInForce: protocol.TimeInForceGtc,
			Brackets: []protocol.AtmBracket{
				{Quantity: 1, StopLossTicks: 8, ProfitTargetTicks: 8},
				{Quantity: 1, StopLossTicks: 8, ProfitTargetTicks: 16},
			},
			Breakeven: &protocol.AtmBreakeven{Enabled: true, TriggerTicks: 8, PlusTicks: 1}},
		{Name: "ATM Trail", Quantity: 1, TimeInForce: protocol.TimeInForceGtc,
			Brackets:     []protocol.AtmBracket{{Quantity: 1, StopLossTicks: 12, ProfitTargetTicks: 40}},
			TrailingStop: &protocol.AtmTrailingStop{Enabled: true, TriggerTicks: 8, DistanceTicks: 8, StepTicks: 2}},
	}
}

// validateTemplates checks templates and returns private copies, names
// trimmed and an empty time in force made Gtc. Errors name the template by
// its position (1-based), never by its content.
func validateTemplates(ts []protocol.AtmTemplate) ([]protocol.AtmTemplate, error) {
	out := make([]protocol.AtmTemplate, 0, len(ts))
	seen := make(map[string]bool, len(ts))
	for i, t := range ts {
		bad := func(reason string) error { return fmt.Errorf("sim: ATM template %d: %s", i+1, reason) }
		name := strings.TrimSpace(t.Name)
		if name == "" {
			return nil, bad("the name is empty")
		}
		key := strings.ToLower(name)
		if seen[key] {
			return nil, bad("an earlier template has the same name")
		}
		seen[key] = true
		if t.Quantity < 1 {
			return nil, bad("the quantity must be at least 1")
		}
		tif := protocol.TimeInForceGtc
		if t.TimeInForce != "" {
			var ok bool
			if tif, ok = protocol.NormalizeTimeInForce(t.TimeInForce); !ok {
				return nil, bad("the time in force must be Day or Gtc")
			}
		}
		if len(t.Brackets) == 0 {
			return nil, bad("a template needs at least one bracket")
		}
		sum := 0
		for _, b := range t.Brackets {
			if b.Quantity < 1 {
				return nil, bad("a bracket quantity must be at least 1")
			}
			if b.StopLossTicks < 1 || b.ProfitTargetTicks < 1 {
				return nil, bad("stop loss and profit target must be at least 1 tick")
			}
			if sum += b.Quantity; sum > t.Quantity {
				break
			}
		}
		if sum != t.Quantity {
			return nil, bad("the bracket quantities must add up to the template quantity")
		}
		if be := t.Breakeven; be != nil && be.Enabled {
			if be.TriggerTicks < 1 {
				return nil, bad("the breakeven trigger must be at least 1 tick")
			}
			if be.PlusTicks < 0 || be.PlusTicks >= be.TriggerTicks {
				return nil, bad("the breakeven plus ticks must be at least 0 and below the trigger")
			}
		}
		if ts := t.TrailingStop; ts != nil && ts.Enabled {
			if ts.TriggerTicks < 1 || ts.DistanceTicks < 1 || ts.StepTicks < 1 {
				return nil, bad("the trailing stop trigger, distance and step must be at least 1 tick")
			}
		}
		c := copyTemplate(t)
		c.Name, c.TimeInForce = name, tif
		out = append(out, c)
	}
	return out, nil
}

// copyTemplate returns a deep copy of t.
func copyTemplate(t protocol.AtmTemplate) protocol.AtmTemplate {
	t.Brackets = append([]protocol.AtmBracket(nil), t.Brackets...)
	if t.Breakeven != nil {
		be := *t.Breakeven
		t.Breakeven = &be
	}
	if t.TrailingStop != nil {
		ts := *t.TrailingStop
		t.TrailingStop = &ts
	}
	return t
}

// SetAtmTemplates replaces the simulator's ATM templates with a validated
// copy of ts, atomically: on an error nothing changes. Names must be
// non-empty and unique (ignoring case), bracket quantities must add up to
// the template quantity, and tick distances must be at least 1. An empty
// list leaves no templates. ATM strategies already running keep the
// template they started with.
func (p *Platform) SetAtmTemplates(ts []protocol.AtmTemplate) error {
	v, err := validateTemplates(ts)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return fmt.Errorf("sim: closed: %w", bridge.ErrNotConnected)
	}
	p.templates = v
	p.log.Info("ATM templates set", zap.Int("count", len(v)))
	return nil
}

// AtmTemplates lists the simulator's ATM templates in the order they were
// given.
func (p *Platform) AtmTemplates(ctx context.Context) ([]protocol.AtmTemplate, error) {
	return locked(ctx, p, func(_ time.Time) ([]protocol.AtmTemplate, error) {
		out := make([]protocol.AtmTemplate, len(p.templates))
		for i, t := range p.templates {
			out[i] = copyTemplate(t)
		}
		return out, nil
	})
}

// template finds a template by name, ignoring case and surrounding spaces.
func (p *Platform) template(name string) *protocol.AtmTemplate {
	name = strings.TrimSpace(name)
	for i := range p.templates {
		if strings.EqualFold(p.templates[i].Name, name) {
			return &p.templates[i]
		}
	}
	return nil
}

// atmStrategy is an ATM strategy: an entry order and the brackets its fills
// place.
type atmStrategy struct {
	tmpl     protocol.AtmTemplate // a private copy
	entry    *order
	brackets []*atmBracket
	started  bool  // the entry has filled
	best     int64 // the best last price since the entry filled, in ticks
	beDone   bool  // breakeven has acted
}

// atmBracket is one stop/target pair of an ATM strategy.
type atmBracket struct {
	index        int // 1-based, as in the order names
	spec         protocol.AtmBracket
	alloc        int // entry contracts allocated to the bracket
	placed       int // stop/target pairs placed so far
	stop, target *order
}

func newAtm(entry *order, t protocol.AtmTemplate) *atmStrategy {
	s := &atmStrategy{tmpl: copyTemplate(t), entry: entry}
	for i, b := range s.tmpl.Brackets {
		s.brackets = append(s.brackets, &atmBracket{index: i + 1, spec: b})
	}
	return s
}

// live reports whether o is a placed order that is not terminal.
func live(o *order) bool { return o != nil && !o.terminal() }

// done reports whether the strategy can do nothing more: its entry and
// every bracket order are terminal.
func (s *atmStrategy) done() bool {
	if !s.entry.terminal() {
		return false
	}
	for _, b := range s.brackets {
		if live(b.stop) || live(b.target) {
			return false
		}
	}
	return true
}

// base is the entry's average fill price, in whole ticks.
func (s *atmStrategy) base() int64 {
	e := s.entry
	return int64(math.Round(e.fillValue / float64(e.rec.Filled)))
}

// shares splits an entry of qty contracts across the template's brackets in
// proportion to their quantities, by largest remainder (ties to the
// earlier bracket). For the template's own quantity they are the bracket
// quantities.
func shares(qty int, t *protocol.AtmTemplate) []int {
	out := make([]int, len(t.Brackets))
	rem := make([]int, len(t.Brackets))
	given := 0
	for i, b := range t.Brackets {
		x := qty * b.Quantity
		out[i], rem[i] = x/t.Quantity, x%t.Quantity
		given += out[i]
	}
	for ; given < qty; given++ {
		best := 0
		for i := range rem {
			if rem[i] > rem[best] {
				best = i
			}
		}
		out[best]++
		rem[best] = -1
	}
	return out
}

// atmEntryFilled allocates q newly filled entry contracts to the brackets,
// in template order, each up to its share of the entry quantity, and
// protects them: a bracket with live orders has them grow by its new
// contracts, a bracket without places a new stop and target.
func (p *Platform) atmEntryFilled(o *order, q int, now time.Time) {
	s := o.atm
	if !s.started {
		s.started = true
		s.best = p.markets[o.c.Name].last
	}
	sh := shares(o.rec.Quantity, &s.tmpl)
	for i, b := range s.brackets {
		if q == 0 {
			return
		}
		if add := min(q, sh[i]-b.alloc); add > 0 {
			p.atmGrow(s, b, add, now)
			q -= add
		}
	}
	if q > 0 {
		p.atmGrow(s, s.brackets[len(s.brackets)-1], q, now)
	}
}

// atmGrow adds n contracts to a bracket.
func (p *Platform) atmGrow(s *atmStrategy, b *atmBracket, n int, now time.Time) {
	b.alloc += n
	grown := false
	for _, o := range [2]*order{b.stop, b.target} {
		if live(o) {
			o.rec.Quantity += n
			p.emitOrder(o)
			grown = true
		}
	}
	if !grown {
		p.atmPlace(s, b, n, now)
	}
}

// atmPlace places a bracket's stop and target for n contracts, priced in
// ticks from the entry's average fill price, sharing an OCO id of their
// own. A stop that would already be at or through the market is placed as
// a market order instead, which exits at once, and no target is placed.
func (p *Platform) atmPlace(s *atmStrategy, b *atmBracket, n int, now time.Time) {
	e := s.entry
	a, c := e.acct, e.c
	m := p.markets[c.Name]
	side := int64(e.side)
	base := s.base()
	stopN := base - side*int64(b.spec.StopLossTicks)
	targetN := base + side*int64(b.spec.ProfitTargetTicks)
	exit := protocol.ActionSell
	if e.side < 0 {
		exit = protocol.ActionBuy
	}
	b.placed++
	oco := "atm-" + e.rec.OrderID + "-" + strconv.Itoa(b.index)
	if b.placed > 1 {
		oco += "-" + strconv.Itoa(b.placed)
	}
	idx := strconv.Itoa(b.index)
	req := bridge.OrderRequest{Account: a.name, Instrument: c.Name, Action: exit,
		OrderType: protocol.OrderTypeStopMarket, Quantity: n, StopPrice: c.Root.Price(max(stopN, 1)),
		TimeInForce: s.tmpl.TimeInForce, Oco: oco, Name: atmStopName + idx, StrategyTag: e.rec.StrategyTag}
	through := stopN < 1 || (side > 0 && stopN >= m.bid) || (side < 0 && stopN <= m.ask())
	if through {
		req.OrderType, req.StopPrice, req.Oco = protocol.OrderTypeMarket, 0, ""
	}
	stop, err := p.prepareLocked(now, a, c, req)
	if err != nil {
		p.log.Warn("ATM stop refused", zap.String("entry", e.rec.OrderID), zap.Error(err))
		return
	}
	stop.bracket, b.stop = b, stop
	p.acceptLocked(now, stop)
	if through || targetN < 1 {
		return
	}
	req.OrderType, req.StopPrice, req.Oco = protocol.OrderTypeLimit, 0, oco
	req.LimitPrice, req.Name = c.Root.Price(targetN), atmTargetName+idx
	target, err := p.prepareLocked(now, a, c, req)
	if err != nil {
		p.log.Warn("ATM target refused", zap.String("entry", e.rec.OrderID), zap.Error(err))
		return
	}
	target.bracket, b.target = b, target
	p.acceptLocked(now, target)
}

// atmExitFilled keeps a bracket's stop and target in step after one of them
// filled: a partial fill leaves the other for the contracts still open, a
// complete fill cancels it.
func (p *Platform) atmExitFilled(o *order, now time.Time) {
	b := o.bracket
	partner := b.stop
	if o == b.stop {
		partner = b.target
	}
	if partner == o || !live(partner) {
		return
	}
	if rem := o.remaining(); rem > 0 && !o.terminal() {
		if partner.remaining() != rem {
			partner.rec.Quantity = partner.rec.Filled + rem
			p.emitOrder(partner)
		}
		return
	}
	p.log.Debug("ATM bracket order cancelled by OCO", zap.String("orderId", partner.rec.OrderID))
	p.cancelAt(partner, now)
}

// atmUpdateLocked lets every running ATM strategy act on the current
// prices (breakeven, trailing stop) and forgets the strategies that are
// done.
func (p *Platform) atmUpdateLocked(now time.Time) {
	if len(p.atms) == 0 {
		return
	}
	for _, s := range p.atms {
		if s.started && !s.done() {
			p.atmManage(s, now)
		}
	}
	kept := p.atms[:0]
	for _, s := range p.atms {
		if !s.done() {
			kept = append(kept, s)
		}
	}
	clear(p.atms[len(kept):])
	p.atms = kept
}

// atmManage moves a strategy's stops: to breakeven once, when the last
// price first reaches the trigger, and behind the best price while
// trailing. A stop only ever moves in the position's favour, and a stop
// moved to or through the market triggers at once.
func (p *Platform) atmManage(s *atmStrategy, now time.Time) {
	e := s.entry
	m := p.markets[e.c.Name]
	side := int64(e.side)
	if (m.last-s.best)*side > 0 {
		s.best = m.last
	}
	base := s.base()
	if be := s.tmpl.Breakeven; be != nil && be.Enabled && !s.beDone && (m.last-base)*side >= int64(be.TriggerTicks) {
		s.beDone = true
		for _, b := range s.brackets {
			p.atmMoveStop(s, b.stop, base+side*int64(be.PlusTicks), now)
		}
	}
	if ts := s.tmpl.TrailingStop; ts != nil && ts.Enabled && (s.best-base)*side >= int64(ts.TriggerTicks) {
		want := s.best - side*int64(ts.DistanceTicks)
		step := int64(ts.StepTicks)
		for _, b := range s.brackets {
			if o := b.stop; live(o) && o.isStop() {
				if gain := (want - o.stop) * side; gain >= step {
					p.atmMoveStop(s, o, o.stop+side*(gain/step)*step, now)
				}
			}
		}
	}
}

// atmMoveStop moves an untriggered bracket stop to n ticks if that is in
// the position's favour.
func (p *Platform) atmMoveStop(s *atmStrategy, o *order, n int64, now time.Time) {
	if !live(o) || !o.isStop() || o.triggered || (n-o.stop)*int64(s.entry.side) <= 0 || n < 1 {
		return
	}
	o.stop, o.rec.StopPrice = n, o.c.Root.Price(n)
	p.log.Debug("ATM stop moved", zap.String("orderId", o.rec.OrderID), zap.Float64("stop", o.rec.StopPrice))
	p.emitOrder(o)
	p.match(o, p.markets[o.c.Name], now, true)
}
