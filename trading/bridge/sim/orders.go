package sim

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"go.uber.org/zap"

	"tradebridge/futures"
	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// maxBookLevels bounds the price levels one match may take, so that a huge
// order on a thin book cannot produce an unbounded number of fills. A
// market order takes whatever is left at its last level; a limit order
// rests the rest.
const maxBookLevels = 1000

// order is an order on the simulator. rec is the record callers see.
type order struct {
	rec       protocol.Order
	acct      *account
	c         contract
	side      int   // +1 buy, -1 sell
	limit     int64 // limit price in ticks, for Limit and StopLimit
	stop      int64 // stop price in ticks, for StopMarket and StopLimit
	triggered bool  // a stop order whose stop the market reached

	fillValue float64   // sum of fill price (ticks) × quantity, for the average
	expires   time.Time // a Day order's session close; zero for Gtc
	done      time.Time // when the order reached a terminal state
	// gen is the market update whose depth the order last took (see
	// Options.BookDepth): a resting order takes depth once per update.
	gen uint64

	atm     *atmStrategy // the ATM strategy this order is the entry of
	bracket *atmBracket  // the ATM bracket this order is a stop or target of
}

func (o *order) terminal() bool { return protocol.TerminalOrderState(o.rec.OrderState) }

func (o *order) isStop() bool {
	return o.rec.OrderType == protocol.OrderTypeStopMarket || o.rec.OrderType == protocol.OrderTypeStopLimit
}

func (o *order) hasLimit() bool {
	return o.rec.OrderType == protocol.OrderTypeLimit || o.rec.OrderType == protocol.OrderTypeStopLimit
}

// remaining is the quantity still to fill.
func (o *order) remaining() int { return o.rec.Quantity - o.rec.Filled }

// touch is the price an order of o's side trades at now: the ask for a
// buy, the bid for a sell.
func (o *order) touch(m *market) int64 {
	if o.side > 0 {
		return m.ask()
	}
	return m.bid
}

// limitReached reports whether a limit price of o's side is marketable.
func (o *order) limitReached(m *market, limit int64) bool {
	t := o.touch(m)
	return (o.side > 0 && t <= limit) || (o.side < 0 && t >= limit)
}

// stopThrough reports whether a stop price of o's side is at or through
// the market, where a new stop is refused.
func (o *order) stopThrough(m *market, stop int64) bool {
	return (o.side > 0 && stop <= m.ask()) || (o.side < 0 && stop >= m.bid)
}

// fillsAtOnce reports whether o, arriving at the market now, would fill at
// once: a market order, or a limit order that is marketable.
func (o *order) fillsAtOnce(m *market) bool {
	switch o.rec.OrderType {
	case protocol.OrderTypeMarket:
		return true
	case protocol.OrderTypeLimit:
		return o.limitReached(m, o.limit)
	case protocol.OrderTypeStopLimit:
		return o.triggered && o.limitReached(m, o.limit)
	}
	return false
}

func reject(reason string) error { return &bridge.RejectError{Reason: reason} }

// errNoTrailing answers a trailing order: the simulator has none.
var errNoTrailing = &bridge.NotSupportedError{What: "trailing stops",
	Reason: "the simulator has no trailing orders; place a stop and move it with the market (change the order)"}

// terminalReason is why a terminal order cannot be cancelled or changed.
func terminalReason(o *order) string {
	switch o.rec.OrderState {
	case protocol.OrderStateFilled:
		return "order is already filled"
	case protocol.OrderStateCancelled:
		return "order is already cancelled"
	}
	return "order is already rejected"
}

// SubmitOrder validates and submits an order and returns it as it stands
// after submission: Filled for a market order, Filled, PartFilled, Working or
// Accepted for the others (see the package documentation).
func (p *Platform) SubmitOrder(ctx context.Context, req bridge.OrderRequest) (protocol.Order, error) {
	return locked(ctx, p, func(now time.Time) (protocol.Order, error) {
		o, err := p.submitLocked(now, req)
		if err != nil {
			return protocol.Order{}, err
		}
		return o.rec, nil
	})
}

// submitLocked validates and submits an order with p.mu held and the
// markets brought up to now. Strategies and ATM brackets submit through it.
func (p *Platform) submitLocked(now time.Time, req bridge.OrderRequest) (*order, error) {
	a, err := p.account(req.Account)
	if err != nil {
		return nil, err
	}
	c, err := resolve(req.Instrument, now)
	if err != nil {
		return nil, err
	}
	o, err := p.prepareLocked(now, a, c, req)
	if err != nil {
		return nil, err
	}
	p.acceptLocked(now, o)
	return o, nil
}

// prepareLocked validates req into an order of account a in contract c,
// ready for acceptLocked. It records nothing, so a refused order leaves no
// trace.
func (p *Platform) prepareLocked(now time.Time, a *account, c contract, req bridge.OrderRequest) (*order, error) {
	o, err := newOrder(a, c, req)
	if err != nil {
		return nil, err
	}
	if req.OrderID != "" {
		if p.orders[req.OrderID] != nil {
			return nil, reject("order id already used")
		}
		o.rec.OrderID = req.OrderID
	}
	if req.AtmTemplate != "" {
		t := p.template(req.AtmTemplate)
		if t == nil {
			return nil, fmt.Errorf("sim: no ATM template has that name: %w", bridge.ErrTemplateNotFound)
		}
		o.atm = newAtm(o, *t)
		if o.rec.Name == "" {
			o.rec.Name = atmEntryName
		}
	}
	m := p.market(c, now)
	if o.isStop() && o.stopThrough(m, o.stop) {
		if o.side > 0 {
			return nil, reject("buy stop price must be above the market")
		}
		return nil, reject("sell stop price must be below the market")
	}
	if o.fillsAtOnce(m) && !c.Open(now) {
		return nil, closedReject(c, now)
	}
	return o, nil
}

// acceptLocked records a prepared order, publishes its submission and
// matches it against the market.
func (p *Platform) acceptLocked(now time.Time, o *order) {
	a := o.acct
	if o.rec.OrderID == "" {
		o.rec.OrderID = p.nextOrderID()
	}
	o.rec.Time, o.rec.Epoch = protocol.FormatTime(now), now.UnixMilli()
	if o.rec.TimeInForce == protocol.TimeInForceDay {
		o.expires = nextSessionClose(now)
	}
	p.orders[o.rec.OrderID] = o
	a.orders = append(a.orders, o)
	o.rec.OrderState = protocol.OrderStateSubmitted
	p.emitOrder(o)
	o.rec.OrderState = protocol.OrderStateWorking
	if o.isStop() {
		o.rec.OrderState = protocol.OrderStateAccepted
	}
	p.emitOrder(o)
	if ce := p.log.Check(zap.DebugLevel, "order submitted"); ce != nil {
		ce.Write(zap.String("orderId", o.rec.OrderID), zap.String("account", a.name),
			zap.String("instrument", o.c.Name), zap.String("action", o.rec.OrderAction),
			zap.String("orderType", o.rec.OrderType), zap.Int("quantity", o.rec.Quantity))
	}
	if o.atm != nil {
		p.atms = append(p.atms, o.atm)
	}
	p.match(o, p.markets[o.c.Name], now, true)
	if o.terminal() {
		return
	}
	p.working = append(p.working, o)
	if !o.expires.IsZero() && (p.nextExpiry.IsZero() || o.expires.Before(p.nextExpiry)) {
		p.nextExpiry = o.expires
	}
}

// newOrder validates a request into an order without an id or a state.
func newOrder(a *account, c contract, req bridge.OrderRequest) (*order, error) {
	if req.Quantity < 1 {
		return nil, reject("quantity must be at least 1")
	}
	action, ok := protocol.NormalizeAction(req.Action)
	if !ok {
		return nil, reject("action must be Buy or Sell")
	}
	typ, ok := protocol.NormalizeOrderType(req.OrderType)
	if !ok {
		return nil, reject("order type must be Market, Limit, StopMarket or StopLimit")
	}
	if protocol.TrailingOrderType(typ) {
		return nil, errNoTrailing
	}
	tif := protocol.TimeInForceDay
	if req.TimeInForce != "" {
		if tif, ok = protocol.NormalizeTimeInForce(req.TimeInForce); !ok {
			return nil, reject("time in force must be Day or Gtc")
		}
	}
	o := &order{acct: a, c: c, side: 1}
	if action == protocol.ActionSell {
		o.side = -1
	}
	r := c.Root
	var limit, stop float64
	if typ == protocol.OrderTypeLimit || typ == protocol.OrderTypeStopLimit {
		n, err := tickPrice("limit", req.LimitPrice, r)
		if err != nil {
			return nil, err
		}
		o.limit, limit = n, r.Price(n)
	}
	if typ == protocol.OrderTypeStopMarket || typ == protocol.OrderTypeStopLimit {
		n, err := tickPrice("stop", req.StopPrice, r)
		if err != nil {
			return nil, err
		}
		o.stop, stop = n, r.Price(n)
	}
	o.rec = protocol.Order{
		Account:     a.name,
		Instrument:  c.Name,
		Name:        req.Name,
		OrderAction: action,
		OrderType:   typ,
		Quantity:    req.Quantity,
		LimitPrice:  limit,
		StopPrice:   stop,
		TimeInForce: tif,
		Oco:         req.Oco,
		StrategyTag: req.StrategyTag,
	}
	return o, nil
}

// tickPrice checks that a price is positive and on the root's tick grid.
func tickPrice(name string, price float64, r *futures.Root) (int64, error) {
	if !(price > 0) {
		return 0, reject(name + " price must be positive")
	}
	n, ok := r.Ticks(price)
	if !ok || n < 1 {
		return 0, reject(name + " price must be a multiple of the tick size " +
			strconv.FormatFloat(r.TickSize, 'f', -1, 64))
	}
	return n, nil
}

func (p *Platform) nextOrderID() string {
	for {
		p.orderSeq++
		id := "sim-" + strconv.FormatInt(p.orderSeq, 10)
		if p.orders[id] == nil {
			return id
		}
	}
}

// matchAll matches every resting order against its market, in submission
// order, and forgets the orders that are done. Orders placed during the
// pass (ATM brackets) were matched when they were placed.
func (p *Platform) matchAll(now time.Time) {
	if len(p.working) == 0 {
		return
	}
	for _, o := range p.working {
		if !o.terminal() {
			p.match(o, p.markets[o.c.Name], now, false)
		}
	}
	kept := p.working[:0]
	for _, o := range p.working {
		if !o.terminal() {
			kept = append(kept, o)
		}
	}
	clear(p.working[len(kept):])
	p.working = kept
}

// match triggers or fills o if the market reaches it. arrival is true when
// o has just reached the market (submitted, re-priced or triggered): a
// marketable limit then takes the book level by level up to its limit. A
// resting limit takes at most BookDepth contracts at the touch, once per
// market update. Nothing fills while o's market is closed.
func (p *Platform) match(o *order, m *market, now time.Time, arrival bool) {
	if o.terminal() || !o.c.Open(now) {
		return
	}
	touch := o.touch(m)
	if o.isStop() && !o.triggered {
		if (o.side > 0 && touch < o.stop) || (o.side < 0 && touch > o.stop) {
			return
		}
		o.triggered, arrival = true, true
		if o.rec.OrderType == protocol.OrderTypeStopLimit {
			o.rec.OrderState = protocol.OrderStateWorking
			p.emitOrder(o)
		}
	}
	switch o.rec.OrderType {
	case protocol.OrderTypeMarket, protocol.OrderTypeStopMarket:
		p.walk(o, m, touch, 0, now)
	case protocol.OrderTypeLimit, protocol.OrderTypeStopLimit:
		if !o.limitReached(m, o.limit) {
			return
		}
		if arrival {
			p.walk(o, m, touch, o.limit, now)
			return
		}
		gen := p.gen[m]
		if p.bookDepth > 0 && o.gen == gen {
			return // this update's depth is taken
		}
		o.gen = gen
		q := o.remaining()
		if p.bookDepth > 0 {
			q = min(q, p.bookDepth)
		}
		p.fill(o, m, touch, q, now)
	}
}

// walk fills o through the book from level n, one execution per level of
// BookDepth contracts, each level one tick worse than the one before: up to
// the limit level for a limit order (limit > 0), as far as needed for a
// market order.
func (p *Platform) walk(o *order, m *market, n, limit int64, now time.Time) {
	o.gen = p.gen[m]
	for level := 1; !o.terminal() && o.remaining() > 0; level++ {
		last := level == maxBookLevels || n+int64(o.side) < 1 || (limit > 0 && n == limit)
		q := o.remaining()
		if p.bookDepth > 0 && q > p.bookDepth && !(last && limit == 0) {
			q = p.bookDepth
		}
		p.fill(o, m, n, q, now)
		if last {
			return
		}
		n += int64(o.side)
	}
}

// fill makes one execution of q contracts of o at n ticks: the position,
// the account's P&L and commission, the market's last price, the order's
// fill, the execution, their events, the watermarks, then the OCO group and
// the ATM strategy the order belongs to.
func (p *Platform) fill(o *order, m *market, n int64, q int, now time.Time) {
	a, c := o.acct, o.c
	pos := a.positionFor(c)
	realized := pos.fill(o.side*q, n)
	if pos.qty == 0 {
		a.dropPosition(c)
	}
	commission := cents(float64(q) * p.commission)
	a.book(realized, commission)
	m.trade(n, q)

	o.rec.Filled += q
	o.fillValue += float64(n) * float64(q)
	o.rec.AverageFillPrice = averagePrice(c.Root, o.fillValue, o.rec.Filled)
	o.rec.OrderState = protocol.OrderStatePartFilled
	if o.rec.Filled >= o.rec.Quantity {
		o.rec.OrderState = protocol.OrderStateFilled
		o.done = now
	}
	direction := protocol.MarketPositionLong
	if o.side < 0 {
		direction = protocol.MarketPositionShort
	}
	p.execSeq++
	e := protocol.Execution{
		ID:             "sim-exec-" + strconv.FormatInt(p.execSeq, 10),
		OrderID:        o.rec.OrderID,
		Account:        a.name,
		Instrument:     c.Name,
		Name:           o.rec.Name,
		MarketPosition: direction,
		Quantity:       q,
		Price:          c.Root.Price(n),
		Commission:     commission,
		Time:           protocol.FormatTime(now),
		Epoch:          now.UnixMilli(),
	}
	a.executions = append(a.executions, e)
	if ce := p.log.Check(zap.DebugLevel, "order filled"); ce != nil {
		ce.Write(zap.String("orderId", o.rec.OrderID), zap.String("account", a.name),
			zap.String("instrument", c.Name), zap.Int("quantity", o.side*q), zap.Float64("price", e.Price),
			zap.Float64("realized", realized), zap.Int("position", pos.qty))
	}
	p.emitOrder(o)
	p.emitExecution(e)
	p.emitPosition(a, c)
	p.emitAccount(a)
	p.observeLocked(a)

	if o.bracket != nil {
		p.atmExitFilled(o, now)
	} else if o.rec.Oco != "" {
		for _, other := range a.orders {
			if other != o && other.rec.Oco == o.rec.Oco && !other.terminal() {
				p.log.Debug("order cancelled by OCO", zap.String("orderId", other.rec.OrderID))
				p.cancelAt(other, now)
			}
		}
	}
	if o.atm != nil {
		p.atmEntryFilled(o, q, now)
	}
}

// averagePrice is the quantity-weighted price of fills worth value ticks
// × contracts over qty contracts.
func averagePrice(r *futures.Root, value float64, qty int) float64 {
	x := value / float64(qty)
	if x == math.Trunc(x) {
		return r.Price(int64(x))
	}
	return roundTo(x*r.TickSize, r.Decimals+8)
}
