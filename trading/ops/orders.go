package ops

import (
	"context"
	"strings"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// CancelOrders cancels the account's working orders, in one instrument
// when given, and only those carrying strategyTag when given (force drops
// the tag filter).
func (o *Ops) CancelOrders(ctx context.Context, a protocol.CancelOrdersArgs) (protocol.CancelResult, error) {
	res := protocol.CancelResult{CancelledOrderIDs: []string{}}
	if err := account(a.Account); err != nil {
		return res, err
	}
	if err := text("strategyTag", a.StrategyTag, maxTagLen); err != nil {
		return res, err
	}
	sel := selector{tag: a.StrategyTag}
	if a.Force {
		sel = selector{}
	}
	instrument := ""
	if a.Instrument != "" {
		info, err := o.resolve(ctx, "instrument", a.Instrument)
		if err != nil {
			return res, err
		}
		instrument = info.Instrument
	}
	if _, err := o.p.Account(ctx, a.Account); err != nil {
		return res, wireError(err)
	}
	err := o.cancelIn(ctx, a.Account, instrument, sel, &res)
	return res, err
}

// CancelAllOrders cancels every working order of every account.
func (o *Ops) CancelAllOrders(ctx context.Context, _ protocol.NoArgs) (protocol.CancelResult, error) {
	res := protocol.CancelResult{CancelledOrderIDs: []string{}}
	accounts, err := o.accounts(ctx, "")
	if err != nil {
		return res, err
	}
	for _, acct := range accounts {
		if err := o.cancelIn(ctx, acct, "", selector{}, &res); err != nil {
			return res, err
		}
	}
	return res, nil
}

// cancelIn cancels sel's working orders of account in instrument (every
// instrument when empty), one instrument at a time under its lock.
func (o *Ops) cancelIn(ctx context.Context, account, instrument string, sel selector, res *protocol.CancelResult) error {
	var ks []key
	if instrument != "" {
		ks = []key{{account, instrument}}
	} else {
		orders, err := o.p.Orders(ctx, account)
		if err != nil {
			return wireError(err)
		}
		seen := map[string]bool{}
		for _, ord := range orders {
			if !protocol.TerminalOrderState(ord.OrderState) && !seen[ord.Instrument] {
				seen[ord.Instrument] = true
				ks = append(ks, key{account, ord.Instrument})
			}
		}
	}
	for _, k := range ks {
		err := func() error {
			st, unlock, err := o.hold(ctx, k)
			if err != nil {
				return err
			}
			defer unlock()
			ids, err := o.cancel(ctx, account, st.working(), func(ord protocol.Order) bool { return sel.orderMatches(ord.StrategyTag) })
			res.CancelledOrderIDs = append(res.CancelledOrderIDs, ids...)
			return err
		}()
		if err != nil {
			return err
		}
	}
	return nil
}

// findOrder finds an order by any id it has had, on account or, when
// account is empty, on every account.
func (o *Ops) findOrder(ctx context.Context, account, id string) (protocol.Order, error) {
	id = o.ids.currentID(id)
	accounts, err := o.accounts(ctx, account)
	if err != nil {
		return protocol.Order{}, err
	}
	for _, acct := range accounts {
		orders, err := o.p.Orders(ctx, acct)
		if err != nil {
			return protocol.Order{}, wireError(err)
		}
		for _, ord := range orders {
			if ord.OrderID == id {
				return ord, nil
			}
		}
	}
	return protocol.Order{}, protocol.NewError(protocol.CodeOrderNotFound, "no such order on the account")
}

func checkOrderID(id string) error {
	if strings.TrimSpace(id) == "" {
		return missing("orderId")
	}
	return text("orderId", id, maxTagLen)
}

// checkAccountOrder checks the account and order id of a call about one
// order, naming every missing field at once.
func checkAccountOrder(acct, orderID string) error {
	var miss fields
	miss.need("account", strings.TrimSpace(acct) != "")
	miss.need("orderId", strings.TrimSpace(orderID) != "")
	if err := miss.err(); err != nil {
		return err
	}
	if err := account(acct); err != nil {
		return err
	}
	return checkOrderID(orderID)
}

// CancelOrder cancels one working order of the account.
func (o *Ops) CancelOrder(ctx context.Context, a protocol.OrderArgs) (protocol.OrderResult, error) {
	if err := checkAccountOrder(a.Account, a.OrderID); err != nil {
		return protocol.OrderResult{}, err
	}
	ord, err := o.findOrder(ctx, a.Account, a.OrderID)
	if err != nil {
		return protocol.OrderResult{}, err
	}
	unlock, err := o.locks.lock(ctx, key{a.Account, ord.Instrument})
	if err != nil {
		return protocol.OrderResult{}, err
	}
	defer unlock()
	ord, err = o.p.CancelOrder(ctx, a.Account, ord.OrderID)
	if err != nil {
		return protocol.OrderResult{}, wireError(err)
	}
	return protocol.OrderResult{OrderID: ord.OrderID, Order: ord}, nil
}

// ChangeOrder changes a working order's quantity or prices. When the
// platform gives the changed order a new id, the agent remembers it: later
// calls may use either id, and GetExecutionsByOrderId finds the fills of
// both.
func (o *Ops) ChangeOrder(ctx context.Context, a protocol.ChangeOrderArgs) (protocol.OrderResult, error) {
	if err := checkAccountOrder(a.Account, a.OrderID); err != nil {
		return protocol.OrderResult{}, err
	}
	if a.Quantity == nil && a.LimitPrice == nil && a.StopPrice == nil {
		return protocol.OrderResult{}, missing("quantity or limitPrice or stopPrice")
	}
	req := bridge.ChangeRequest{Account: a.Account}
	if a.Quantity != nil {
		if err := quantity("quantity", *a.Quantity); err != nil {
			return protocol.OrderResult{}, err
		}
		req.Quantity = *a.Quantity
	}
	if a.LimitPrice != nil {
		if err := positive("limitPrice", *a.LimitPrice); err != nil {
			return protocol.OrderResult{}, err
		}
		req.LimitPrice = *a.LimitPrice
	}
	if a.StopPrice != nil {
		if err := positive("stopPrice", *a.StopPrice); err != nil {
			return protocol.OrderResult{}, err
		}
		req.StopPrice = *a.StopPrice
	}
	ord, err := o.findOrder(ctx, a.Account, a.OrderID)
	if err != nil {
		return protocol.OrderResult{}, err
	}
	hasLimit := ord.OrderType == protocol.OrderTypeLimit || ord.OrderType == protocol.OrderTypeStopLimit
	hasStop := ord.OrderType == protocol.OrderTypeStopMarket || ord.OrderType == protocol.OrderTypeStopLimit
	if protocol.TrailingOrderType(ord.OrderType) && (a.LimitPrice != nil || a.StopPrice != nil) {
		return protocol.OrderResult{}, invalid("a trailing order's prices follow the market: only its quantity can be changed")
	}
	if a.LimitPrice != nil && !hasLimit {
		return protocol.OrderResult{}, invalid("limitPrice applies only to Limit and StopLimit orders")
	}
	if a.StopPrice != nil && !hasStop {
		return protocol.OrderResult{}, invalid("stopPrice applies only to StopMarket and StopLimit orders")
	}
	info, err := o.resolve(ctx, "instrument", ord.Instrument)
	if err != nil {
		return protocol.OrderResult{}, err
	}
	if req.LimitPrice != 0 {
		if err := onTick("limitPrice", req.LimitPrice, info); err != nil {
			return protocol.OrderResult{}, err
		}
	}
	if req.StopPrice != 0 {
		if err := onTick("stopPrice", req.StopPrice, info); err != nil {
			return protocol.OrderResult{}, err
		}
	}
	unlock, err := o.locks.lock(ctx, key{a.Account, ord.Instrument})
	if err != nil {
		return protocol.OrderResult{}, err
	}
	defer unlock()
	if err := o.admitChange(ctx, ord, req); err != nil {
		return protocol.OrderResult{}, err
	}
	req.OrderID = ord.OrderID
	changed, err := o.p.ChangeOrder(ctx, req)
	if err != nil {
		return protocol.OrderResult{}, wireError(err)
	}
	o.ids.changed(ord.OrderID, changed.OrderID)
	return protocol.OrderResult{OrderID: changed.OrderID, Order: changed}, nil
}

// admitChange asks the gate about a change of ord: a rule that refuses
// every order refuses the change; a rule that refuses entries refuses a
// larger quantity of an order that would open or add to the position.
// Prices change freely otherwise.
func (o *Ops) admitChange(ctx context.Context, ord protocol.Order, req bridge.ChangeRequest) error {
	k := key{ord.Account, ord.Instrument}
	delta := 0 // a change that does not raise the quantity adds nothing
	if req.Quantity > ord.Quantity {
		delta = side(ord.OrderAction) * (req.Quantity - ord.Filled)
	}
	return o.admitAt(ctx, k, delta, func() (int, error) { return o.position(ctx, k) })
}
