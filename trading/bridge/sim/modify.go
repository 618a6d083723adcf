package sim

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// closeOrderName is the name of the market order that closes a position on
// Flatten, as NinjaTrader names it.
const closeOrderName = "Close"

// CancelOrder cancels a working order and returns it as it stands
// afterwards: Cancelled, keeping what it had filled. Cancelling a terminal
// order is a *bridge.RejectError; an id the account does not have wraps
// bridge.ErrOrderNotFound.
func (p *Platform) CancelOrder(ctx context.Context, account, orderID string) (protocol.Order, error) {
	return locked(ctx, p, func(now time.Time) (protocol.Order, error) {
		o, err := p.accountOrder(account, orderID)
		if err != nil {
			return protocol.Order{}, err
		}
		if err := p.cancelLocked(now, o); err != nil {
			return protocol.Order{}, err
		}
		return o.rec, nil
	})
}

// ChangeOrder changes a working order's quantity, limit price or stop price
// (zero fields keep their value) and returns it as it stands afterwards. A
// limit the change makes marketable fills at once, as a new order would.
func (p *Platform) ChangeOrder(ctx context.Context, req bridge.ChangeRequest) (protocol.Order, error) {
	return locked(ctx, p, func(now time.Time) (protocol.Order, error) {
		o, err := p.accountOrder(req.Account, req.OrderID)
		if err != nil {
			return protocol.Order{}, err
		}
		if err := p.changeLocked(now, o, req); err != nil {
			return protocol.Order{}, err
		}
		return o.rec, nil
	})
}

// Flatten cancels the account's working orders in the instrument, then
// closes its position there with a market order named "Close". An empty
// instrument flattens every instrument in which the account has a position
// or a working order. Nothing to do is not an error.
func (p *Platform) Flatten(ctx context.Context, account, instrument string) error {
	return lockedErr(ctx, p, func(now time.Time) error {
		a, err := p.account(account)
		if err != nil {
			return err
		}
		if strings.TrimSpace(instrument) != "" {
			c, err := resolve(instrument, now)
			if err != nil {
				return err
			}
			return p.flattenLocked(now, a, c)
		}
		byName := make(map[string]contract)
		for _, pos := range a.positions {
			byName[pos.c.Name] = pos.c
		}
		for _, o := range a.orders {
			if !o.terminal() {
				byName[o.c.Name] = o.c
			}
		}
		names := make([]string, 0, len(byName))
		for name := range byName {
			names = append(names, name)
		}
		sort.Strings(names)
		var first error
		for _, name := range names {
			if err := p.flattenLocked(now, a, byName[name]); err != nil && first == nil {
				first = err
			}
		}
		return first
	})
}

// accountOrder finds an order of the named account.
func (p *Platform) accountOrder(account, orderID string) (*order, error) {
	a, err := p.account(account)
	if err != nil {
		return nil, err
	}
	o := p.orders[orderID]
	if o == nil || o.acct != a {
		return nil, fmt.Errorf("sim: the account has no such order: %w", bridge.ErrOrderNotFound)
	}
	return o, nil
}

// cancelLocked cancels a non-terminal order with p.mu held; a terminal
// order is a *bridge.RejectError.
func (p *Platform) cancelLocked(now time.Time, o *order) error {
	if o.terminal() {
		return reject(terminalReason(o))
	}
	p.log.Debug("order cancelled", zap.String("orderId", o.rec.OrderID))
	p.cancelAt(o, now)
	return nil
}

// cancelAt marks a non-terminal order Cancelled at t and publishes it.
// Working lists drop it on their next pass.
func (p *Platform) cancelAt(o *order, t time.Time) {
	o.rec.OrderState = protocol.OrderStateCancelled
	o.done = t
	p.emitOrder(o)
}

// flattenLocked cancels the account's working orders in the contract and
// closes its position at the market, with p.mu held. Closing is refused
// (a *bridge.RejectError) while the market is closed; the orders are
// cancelled all the same.
func (p *Platform) flattenLocked(now time.Time, a *account, c contract) error {
	for _, o := range a.orders {
		if o.c.Name == c.Name && !o.terminal() {
			p.cancelAt(o, now)
		}
	}
	pos := a.positions[c.Name]
	if pos == nil {
		return nil
	}
	action := protocol.ActionSell
	if pos.qty < 0 {
		action = protocol.ActionBuy
	}
	o, err := p.prepareLocked(now, a, c, bridge.OrderRequest{Account: a.name, Instrument: c.Name,
		Action: action, OrderType: protocol.OrderTypeMarket, Quantity: abs(pos.qty),
		TimeInForce: protocol.TimeInForceGtc, Name: closeOrderName})
	if err != nil {
		return err
	}
	p.acceptLocked(now, o)
	return nil
}

// changeLocked applies a change request to o with p.mu held.
func (p *Platform) changeLocked(now time.Time, o *order, req bridge.ChangeRequest) error {
	if o.terminal() {
		return reject(terminalReason(o))
	}
	r := o.c.Root
	m := p.markets[o.c.Name]
	qty, limit, stop := o.rec.Quantity, o.limit, o.stop
	if req.Quantity != 0 {
		switch {
		case req.Quantity < 1:
			return reject("quantity must be at least 1")
		case req.Quantity <= o.rec.Filled:
			return reject("quantity must be more than the filled quantity")
		}
		qty = req.Quantity
	}
	if req.LimitPrice != 0 {
		if !o.hasLimit() {
			return reject("order type has no limit price")
		}
		n, err := tickPrice("limit", req.LimitPrice, r)
		if err != nil {
			return err
		}
		limit = n
	}
	if req.StopPrice != 0 {
		if !o.isStop() {
			return reject("order type has no stop price")
		}
		if o.triggered {
			return reject("stop price cannot change once the stop has triggered")
		}
		n, err := tickPrice("stop", req.StopPrice, r)
		if err != nil {
			return err
		}
		if o.stopThrough(m, n) {
			if o.side > 0 {
				return reject("buy stop price must be above the market")
			}
			return reject("sell stop price must be below the market")
		}
		stop = n
	}
	repriced := limit != o.limit || stop != o.stop
	if !repriced && qty == o.rec.Quantity {
		return nil
	}
	if repriced && o.hasLimit() && (!o.isStop() || o.triggered) && o.limitReached(m, limit) &&
		!o.c.Open(now) {
		return closedReject(o.c, now)
	}
	o.rec.Quantity = qty
	if o.hasLimit() {
		o.limit, o.rec.LimitPrice = limit, r.Price(limit)
	}
	if o.isStop() {
		o.stop, o.rec.StopPrice = stop, r.Price(stop)
	}
	p.log.Debug("order changed", zap.String("orderId", o.rec.OrderID))
	p.emitOrder(o)
	if repriced {
		p.match(o, m, now, true)
	}
	return nil
}
