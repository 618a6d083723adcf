package ops

import (
	"context"
	"errors"
	"time"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// state is one account's holding of one contract as read at one moment.
type state struct {
	k      key
	pos    protocol.Position // the platform's record; zero when flat
	qty    int               // signed position
	orders []protocol.Order  // the key's orders, terminal ones included
	owner  string            // strategy tag owning the key, or ""
	share  int               // the owner's signed share of qty
}

// working returns the key's non-terminal orders.
func (st state) working() []protocol.Order {
	var out []protocol.Order
	for _, o := range st.orders {
		if !protocol.TerminalOrderState(o.OrderState) {
			out = append(out, o)
		}
	}
	return out
}

// find returns the key's order with id.
func (st state) find(id string) (protocol.Order, bool) {
	for _, o := range st.orders {
		if o.OrderID == id {
			return o, true
		}
	}
	return protocol.Order{}, false
}

// hold locks k for a write and reads it. On success the caller must call
// unlock; on error nothing is held.
func (o *Ops) hold(ctx context.Context, k key) (st state, unlock func(), err error) {
	unlock, err = o.locks.lock(ctx, k)
	if err != nil {
		return state{}, nil, err
	}
	if st, err = o.read(ctx, k); err != nil {
		unlock()
		return state{}, nil, err
	}
	return st, unlock, nil
}

// holdShare resolves instrument, holds its key on account, checks that tag
// may act there, and returns the part of the position the call acts on: the
// tag's share, or the whole position when force is set or there is no tag.
// It refuses with no_position when that part is flat. On success the
// caller must call unlock; on error nothing is held.
func (o *Ops) holdShare(ctx context.Context, account, instrument, tag string, force bool) (st state, sel selector, q int, unlock func(), err error) {
	info, err := o.resolve(ctx, "instrument", instrument)
	if err != nil {
		return st, sel, 0, nil, err
	}
	st, unlock, err = o.hold(ctx, key{account, info.Instrument})
	if err != nil {
		return st, sel, 0, nil, err
	}
	if err := o.checkOwner(st, tag, force); err != nil {
		unlock()
		return st, sel, 0, nil, err
	}
	if !force {
		sel = selector{tag: tag}
	}
	if q = sel.qty(st); q == 0 {
		unlock()
		return st, sel, 0, nil, noPosition()
	}
	return st, sel, q, unlock, nil
}

// read reads k's position and orders and reconciles its ownership. The
// caller holds k's lock when it acts on the result.
func (o *Ops) read(ctx context.Context, k key) (state, error) {
	st := state{k: k}
	positions, err := o.p.Positions(ctx, k.account)
	if err != nil {
		return st, wireError(err)
	}
	for _, p := range positions {
		if p.Instrument == k.instrument {
			st.pos, st.qty = p, signedQty(p)
		}
	}
	orders, err := o.p.Orders(ctx, k.account)
	if err != nil {
		return st, wireError(err)
	}
	for _, ord := range orders {
		if ord.Instrument == k.instrument {
			st.orders = append(st.orders, ord)
		}
	}
	st.owner, st.share = o.book.reconcile(k, st.qty, st.orders)
	return st, nil
}

// checkOwner refuses a write of tag on st when another tag owns the key, or
// when the key holds a position no tag owns (a tag claims only a flat
// instrument), and tells the refusal's observer (SetRefusalObserver).
// Untagged writes and forced writes pass.
func (o *Ops) checkOwner(st state, tag string, force bool) error {
	if tag == "" || force || st.owner == tag {
		return nil
	}
	if st.owner != "" {
		o.observeRefusal(OwnerRefusal{Account: st.k.account, Instrument: st.k.instrument, Tag: tag,
			Owner: st.owner, Rule: RuleStrategyOwned})
		return protocol.NewError(protocol.CodePositionOwned, "the position in this instrument is owned by strategy tag "+quoteTag(st.owner)+"; send force to act anyway")
	}
	if st.qty != 0 {
		o.observeRefusal(OwnerRefusal{Account: st.k.account, Instrument: st.k.instrument, Tag: tag,
			Rule: RuleUntaggedPosition})
		return protocol.NewError(protocol.CodePositionOwned, "an untagged position is open in this instrument and a strategy tag claims only a flat instrument; send force to act anyway")
	}
	return nil
}

// quoteTag quotes an owner's tag for an error detail, shortened.
func quoteTag(t string) string {
	if len(t) > 40 {
		t = t[:40] + "…"
	}
	return `"` + t + `"`
}

// closed is what closeOut did.
type closed struct {
	// position is the part of the position closed, as it stood; nil when
	// there was none.
	position  *protocol.Position
	closeIDs  []string // closing orders placed
	cancelled []string // working orders asked to cancel
	// platformFlatten is set when the platform's own flatten ran: then
	// every order of the key must end, not only those listed.
	platformFlatten bool
}

// closeOut closes sel's part of st's position at the market and, with
// cancelOrders, cancels sel's working orders first. It does not wait for
// the platform to confirm. When sel selects everything and orders are
// cancelled too, the platform's own flatten does the work.
func (o *Ops) closeOut(ctx context.Context, st state, sel selector, cancelOrders bool) (closed, state, error) {
	var c closed
	if sel.all() && cancelOrders {
		before := st.working()
		if st.qty == 0 && len(before) == 0 {
			return c, st, nil
		}
		if err := o.p.Flatten(ctx, st.k.account, st.k.instrument); err != nil {
			return c, st, wireError(err)
		}
		c.platformFlatten = true
		if st.qty != 0 {
			p := st.pos
			c.position = &p
		}
		known := make(map[string]bool, len(st.orders))
		for _, ord := range st.orders {
			known[ord.OrderID] = true
		}
		for _, ord := range before {
			c.cancelled = append(c.cancelled, ord.OrderID)
		}
		after, err := o.read(ctx, st.k)
		if err != nil {
			return c, st, err
		}
		for _, ord := range after.orders {
			if !known[ord.OrderID] {
				c.closeIDs = append(c.closeIDs, ord.OrderID)
			}
		}
		return c, after, nil
	}
	if cancelOrders {
		ids, err := o.cancel(ctx, st.k.account, st.working(), func(ord protocol.Order) bool { return sel.orderMatches(ord.StrategyTag) })
		c.cancelled = ids
		if err != nil {
			return c, st, err
		}
		if len(ids) > 0 {
			// A cancelled order may have filled meanwhile: size the close
			// on the position as it is now.
			if st, err = o.read(ctx, st.k); err != nil {
				return c, st, err
			}
		}
	}
	q := sel.qty(st)
	if q == 0 {
		return c, st, nil
	}
	p := st.pos
	p.MarketPosition, p.Quantity = marketPosition(q), abs(q)
	p.Tag = sel.closeTag(st)
	c.position = &p
	ord, err := o.p.SubmitOrder(ctx, bridge.OrderRequest{
		Account: st.k.account, Instrument: st.k.instrument, Action: actionFor(-q),
		OrderType: protocol.OrderTypeMarket, Quantity: abs(q), TimeInForce: protocol.TimeInForceDay,
		Name: "Close", StrategyTag: sel.closeTag(st),
	})
	if err != nil {
		return c, st, wireError(err)
	}
	c.closeIDs = append(c.closeIDs, ord.OrderID)
	return c, st, nil
}

// cancel asks the platform to cancel each of orders that keep selects and
// returns the ids it asked for. An order that ended meanwhile (the platform
// refuses to cancel it, or no longer knows it) is skipped; any other error
// stops the loop.
func (o *Ops) cancel(ctx context.Context, account string, orders []protocol.Order, keep func(protocol.Order) bool) ([]string, error) {
	ids := []string{}
	for _, ord := range orders {
		if protocol.TerminalOrderState(ord.OrderState) || !keep(ord) {
			continue
		}
		_, err := o.p.CancelOrder(ctx, account, ord.OrderID)
		var re *bridge.RejectError
		switch {
		case err == nil:
			ids = append(ids, ord.OrderID)
		case errors.As(err, &re), errors.Is(err, bridge.ErrOrderNotFound):
			o.log.Debug("order ended before it could be cancelled")
		default:
			return ids, wireError(err)
		}
	}
	return ids, nil
}

// waitClear waits until sel's part of the key's position is flat and every
// order closeOut cancelled or placed has ended (every order of the key,
// after a platform flatten). It looks at once, then every PollInterval, for
// at most ClearTimeout, and respects ctx. It returns the state it saw last.
func (o *Ops) waitClear(ctx context.Context, k key, sel selector, c closed) (state, error) {
	watch := append(append([]string(nil), c.cancelled...), c.closeIDs...)
	var waited time.Duration
	for {
		st, err := o.read(ctx, k)
		if err != nil {
			return st, err
		}
		if cleared(st, sel, c.platformFlatten, watch) {
			return st, nil
		}
		if waited >= o.opts.ClearTimeout {
			return st, protocol.NewError(protocol.CodePositionNotFlat, "the old position or its orders did not clear in time after closing; the new order was not placed")
		}
		if err := o.opts.Sleep(ctx, o.opts.PollInterval); err != nil {
			return st, wireError(err)
		}
		waited += o.opts.PollInterval
	}
}

func cleared(st state, sel selector, everyOrder bool, watch []string) bool {
	if sel.qty(st) != 0 {
		return false
	}
	if everyOrder {
		return len(st.working()) == 0
	}
	for _, id := range watch {
		if ord, ok := st.find(id); ok && !protocol.TerminalOrderState(ord.OrderState) {
			return false
		}
	}
	return true
}
