package sim

import (
	"context"
	"strconv"
	"time"

	"go.uber.org/zap"

	"tradebridge/agent/bridge"
	"tradebridge/protocol"
)

// order is an order on the simulator. rec is the record callers see.
type order struct {
	rec       protocol.Order
	acct      *account
	c         contract
	side      int   // +1 buy, -1 sell
	limit     int64 // limit price in ticks, for Limit and StopLimit
	stop      int64 // stop price in ticks, for StopMarket and StopLimit
	triggered bool  // a stop order whose stop the market reached
}

func (o *order) terminal() bool { return protocol.TerminalOrderState(o.rec.OrderState) }

func (o *order) isStop() bool {
	return o.rec.OrderType == protocol.OrderTypeStopMarket || o.rec.OrderType == protocol.OrderTypeStopLimit
}

func reject(reason string) error { return &bridge.RejectError{Reason: reason} }

// SubmitOrder validates and submits an order and returns it as it stands
// after submission: Filled for a market order, Filled, Working or Accepted for
// the others (see the package documentation).
func (p *Platform) SubmitOrder(ctx context.Context, req bridge.OrderRequest) (protocol.Order, error) {
	if err := ctx.Err(); err != nil {
		return protocol.Order{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now, err := p.begin()
	if err != nil {
		return protocol.Order{}, err
	}
	o, err := p.submitLocked(now, req)
	if err != nil {
		return protocol.Order{}, err
	}
	return o.rec, nil
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
	m := p.market(c, now)
	if o.isStop() {
		if o.side > 0 && o.stop <= m.ask() {
			return nil, reject("buy stop price must be above the market")
		}
		if o.side < 0 && o.stop >= m.bid {
			return nil, reject("sell stop price must be below the market")
		}
	}
	if o.rec.OrderID == "" {
		o.rec.OrderID = p.nextOrderID()
	}
	o.rec.Time, o.rec.Epoch = formatTime(now), now.UnixMilli()
	o.rec.OrderState = protocol.OrderStateWorking
	if o.isStop() {
		o.rec.OrderState = protocol.OrderStateAccepted
	}
	p.orders[o.rec.OrderID] = o
	a.orders = append(a.orders, o)
	p.log.Debug("order submitted", zap.String("orderId", o.rec.OrderID), zap.String("account", a.name),
		zap.String("instrument", c.name), zap.String("action", o.rec.OrderAction),
		zap.String("orderType", o.rec.OrderType), zap.Int("quantity", o.rec.Quantity))
	p.match(o, m, now)
	if !o.terminal() {
		p.working = append(p.working, o)
	}
	return o, nil
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
	r := c.root
	var limit, stop float64
	if typ == protocol.OrderTypeLimit || typ == protocol.OrderTypeStopLimit {
		n, err := tickPrice("limit", req.LimitPrice, r)
		if err != nil {
			return nil, err
		}
		o.limit, limit = n, r.price(n)
	}
	if typ == protocol.OrderTypeStopMarket || typ == protocol.OrderTypeStopLimit {
		n, err := tickPrice("stop", req.StopPrice, r)
		if err != nil {
			return nil, err
		}
		o.stop, stop = n, r.price(n)
	}
	o.rec = protocol.Order{
		Account:     a.name,
		Instrument:  c.name,
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
func tickPrice(name string, price float64, r *rootSpec) (int64, error) {
	if !(price > 0) {
		return 0, reject(name + " price must be positive")
	}
	n, ok := r.ticks(price)
	if !ok || n < 1 {
		return 0, reject(name + " price must be a multiple of the tick size " +
			strconv.FormatFloat(r.tickSize, 'f', -1, 64))
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
// order, and forgets the orders that are done.
func (p *Platform) matchAll(now time.Time) {
	if len(p.working) == 0 {
		return
	}
	for _, o := range p.working {
		if !o.terminal() {
			p.match(o, p.markets[o.c.name], now)
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

// match fills or triggers o if the market reaches it.
func (p *Platform) match(o *order, m *market, now time.Time) {
	touch := m.bid // the price a market order of o's side gets
	if o.side > 0 {
		touch = m.ask()
	}
	if o.isStop() && !o.triggered {
		if (o.side > 0 && touch < o.stop) || (o.side < 0 && touch > o.stop) {
			return
		}
		o.triggered = true
		if o.rec.OrderType == protocol.OrderTypeStopMarket {
			p.fill(o, m, touch, now)
			return
		}
		o.rec.OrderState = protocol.OrderStateWorking
	}
	switch o.rec.OrderType {
	case protocol.OrderTypeMarket:
		p.fill(o, m, touch, now)
	case protocol.OrderTypeLimit, protocol.OrderTypeStopLimit:
		if (o.side > 0 && touch <= o.limit) || (o.side < 0 && touch >= o.limit) {
			p.fill(o, m, touch, now)
		}
	}
}

// fill fills o entirely at n ticks: the position, the account's P&L and
// commission, the market's last price, an execution, and the OCO group.
func (p *Platform) fill(o *order, m *market, n int64, now time.Time) {
	a, c, qty := o.acct, o.c, o.rec.Quantity
	pos := a.positions[c.name]
	if pos == nil {
		pos = &position{c: c}
		a.positions[c.name] = pos
	}
	realized := pos.fill(o.side*qty, n)
	if pos.qty == 0 {
		delete(a.positions, c.name)
	}
	commission := cents(float64(qty) * p.commission)
	a.grossRealized += realized
	a.commission += commission
	m.trade(n, qty)

	price := c.root.price(n)
	o.rec.OrderState = protocol.OrderStateFilled
	o.rec.Filled = qty
	o.rec.AverageFillPrice = price
	direction := protocol.MarketPositionLong
	if o.side < 0 {
		direction = protocol.MarketPositionShort
	}
	p.execSeq++
	a.executions = append(a.executions, protocol.Execution{
		ID:             "sim-exec-" + strconv.FormatInt(p.execSeq, 10),
		OrderID:        o.rec.OrderID,
		Account:        a.name,
		Instrument:     c.name,
		Name:           o.rec.Name,
		MarketPosition: direction,
		Quantity:       qty,
		Price:          price,
		Commission:     commission,
		Time:           formatTime(now),
		Epoch:          now.UnixMilli(),
	})
	p.log.Debug("order filled", zap.String("orderId", o.rec.OrderID), zap.String("account", a.name),
		zap.String("instrument", c.name), zap.Int("quantity", o.side*qty), zap.Float64("price", price),
		zap.Float64("realized", realized), zap.Int("position", pos.qty))
	if o.rec.Oco != "" {
		for _, other := range a.orders {
			if other != o && other.rec.Oco == o.rec.Oco && !other.terminal() {
				other.rec.OrderState = protocol.OrderStateCancelled
				p.log.Debug("order cancelled by OCO", zap.String("orderId", other.rec.OrderID),
					zap.String("oco", o.rec.Oco))
			}
		}
	}
}
