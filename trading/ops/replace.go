package ops

import (
	"context"
	"errors"
	"strings"
	"time"

	"tradebridge/protocol"
)

// CancelReplace cancels the working order CancelOrderID of Account (by its
// current or original id), waits for the cancel to take effect (looking
// every PollInterval, for at most ClearTimeout, as Reverse waits for its
// close), and, when nothing of the order filled, places the order the
// embedded PlaceOrderArgs describe as PlaceOrder does, with its rules
// (exits, relative prices, cancel-after included). The new order's
// arguments are checked, and the trading gate asked, before anything is
// cancelled. An order that filled, wholly or in part, before the cancel
// took effect places nothing (market_position_mismatch). The result is the
// new order's, with the cancelled order in CancelledOrderIDs.
func (o *Ops) CancelReplace(ctx context.Context, a protocol.CancelReplaceArgs) (protocol.PlaceResult, error) {
	var res protocol.PlaceResult
	var miss fields
	miss.need("account", strings.TrimSpace(a.Account) != "")
	miss.need("cancelOrderId", strings.TrimSpace(a.CancelOrderID) != "")
	if err := miss.err(); err != nil {
		return res, err
	}
	if err := text("cancelOrderId", a.CancelOrderID, maxTagLen); err != nil {
		return res, err
	}
	pa := a.PlaceOrderArgs
	req, _, err := checkPlace(pa, false)
	if err != nil {
		return res, err
	}
	info, err := o.prepare(ctx, &req)
	if err != nil {
		return res, err
	}
	if err := o.settleExits(ctx, pa, &req, info); err != nil {
		return res, err
	}
	old, err := o.findOrder(ctx, a.Account, a.CancelOrderID)
	if err != nil {
		return res, err
	}
	if protocol.TerminalOrderState(old.OrderState) {
		return res, notWorking()
	}
	k := key{req.Account, req.Instrument}
	if err := o.admitAt(ctx, k, side(req.Action)*req.Quantity, func() (int, error) { return o.position(ctx, k) }); err != nil {
		return res, err
	}
	if err := o.cancelOne(ctx, old); err != nil {
		return res, err
	}
	res.CancelledOrderIDs = []string{old.OrderID}
	ended, err := o.waitEnded(ctx, old)
	if err != nil {
		return res, err
	}
	if ended.Filled > 0 {
		return res, protocol.NewError(protocol.CodeMarketPositionMismatch, "the order filled, wholly or in part, before its cancel took effect; nothing was placed")
	}
	placed, err := o.place(ctx, pa, false)
	if err != nil {
		var pe *protocol.Error
		if errors.As(err, &pe) {
			err = protocol.NewError(pe.Code, "the order was cancelled, but the new order failed: "+pe.Detail)
		}
		return res, err
	}
	placed.CancelledOrderIDs = append(res.CancelledOrderIDs, placed.CancelledOrderIDs...)
	return placed, nil
}

// notWorking refuses to cancel an order that already ended.
func notWorking() error {
	return invalid("the order to cancel is not working (it filled, was cancelled or was rejected); nothing was cancelled or placed")
}

// cancelOne cancels one working order under its instrument's lock.
func (o *Ops) cancelOne(ctx context.Context, ord protocol.Order) error {
	unlock, err := o.locks.lock(ctx, key{ord.Account, ord.Instrument})
	if err != nil {
		return err
	}
	defer unlock()
	ids, err := o.cancel(ctx, ord.Account, []protocol.Order{ord}, func(protocol.Order) bool { return true })
	if err != nil {
		return err
	}
	if len(ids) == 0 { // it ended before the cancel reached it
		return notWorking()
	}
	return nil
}

// waitEnded waits until ord is terminal and returns it as it ended. It
// looks at once, then every PollInterval, for at most ClearTimeout.
func (o *Ops) waitEnded(ctx context.Context, ord protocol.Order) (protocol.Order, error) {
	var waited time.Duration
	for {
		cur, err := o.findOrder(ctx, ord.Account, ord.OrderID)
		if err != nil {
			return cur, err
		}
		if protocol.TerminalOrderState(cur.OrderState) {
			return cur, nil
		}
		if waited >= o.opts.ClearTimeout {
			return cur, protocol.NewError(protocol.CodeDeadlineExceeded, "the order's cancel was not confirmed in time; the new order was not placed")
		}
		if err := o.opts.Sleep(ctx, o.opts.PollInterval); err != nil {
			return cur, wireError(err)
		}
		waited += o.opts.PollInterval
	}
}
