package ops

import (
	"context"
	"errors"
	"math"
	"sort"
	"strings"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// checkMode validates a strategyTagMode.
func checkMode(mode, tag string) (string, error) {
	if mode == "" {
		return protocol.StrategyTagModeExact, nil
	}
	if tag == "" {
		return "", invalid("strategyTagMode needs strategyTag")
	}
	for _, m := range []string{protocol.StrategyTagModeExact, protocol.StrategyTagModePrefix, protocol.StrategyTagModeExclude} {
		if strings.EqualFold(mode, m) {
			return m, nil
		}
	}
	return "", invalid("strategyTagMode must be exact, prefix or exclude")
}

// Flatten closes positions at the market and, unless cancelOrders is
// false, cancels working orders first: of one account or every account,
// in one instrument or every instrument. With strategyTag it touches only
// the orders and position share the tag selects (strategyTagMode); force
// drops that restriction. It does not wait for the platform to confirm.
//
// A call that takes everything (no strategyTag, or force, and the orders
// cancelled) on a platform that can flatten from the broker's own records
// (bridge.BrokerFlattener) then sweeps what the broker still lists: a
// kill switch's flatten must neither wait for the platform's event stream
// nor trust a state that missed events. When the platform cannot read
// (it is not connected), the sweep does it all.
func (o *Ops) Flatten(ctx context.Context, a protocol.FlattenArgs) (protocol.FlattenResult, error) {
	res, err := o.flatten(ctx, a)
	bf, ok := o.p.(bridge.BrokerFlattener)
	if !ok || (a.StrategyTag != "" && !a.Force) || (a.CancelOrders != nil && !*a.CancelOrders) {
		return res, err
	}
	if err != nil {
		var pe *protocol.Error
		if !errors.As(err, &pe) || pe.Code != protocol.CodePlatformUnavailable {
			return res, err
		}
		o.log.Warn("ops: the platform cannot read; flattening from the broker's records")
	}
	ps, ferr := bf.FlattenFromBroker(ctx, a.Account, a.Instrument)
	res.Positions = append(res.Positions, ps...)
	return res, wireError(ferr)
}

func (o *Ops) flatten(ctx context.Context, a protocol.FlattenArgs) (protocol.FlattenResult, error) {
	res := emptyFlatten()
	if a.Account != "" {
		if err := account(a.Account); err != nil {
			return res, err
		}
	}
	if err := text("strategyTag", a.StrategyTag, maxTagLen); err != nil {
		return res, err
	}
	mode, err := checkMode(a.StrategyTagMode, a.StrategyTag)
	if err != nil {
		return res, err
	}
	sel := selector{tag: a.StrategyTag, mode: mode}
	if a.Force {
		sel = selector{}
	}
	cancelOrders := a.CancelOrders == nil || *a.CancelOrders
	instrument := ""
	if a.Instrument != "" {
		info, err := o.resolve(ctx, "instrument", a.Instrument)
		if err != nil {
			return res, err
		}
		instrument = info.Instrument
	}
	accounts, err := o.accounts(ctx, a.Account)
	if err != nil {
		return res, err
	}
	for _, acct := range accounts {
		keys, err := o.keys(ctx, acct, instrument)
		if err != nil {
			return res, err
		}
		for _, k := range keys {
			if err := o.flattenKey(ctx, k, sel, cancelOrders, &res); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// FlattenEverything flattens every position and cancels every working
// order of every account.
func (o *Ops) FlattenEverything(ctx context.Context, _ protocol.NoArgs) (protocol.FlattenResult, error) {
	return o.Flatten(ctx, protocol.FlattenArgs{})
}

func emptyFlatten() protocol.FlattenResult {
	return protocol.FlattenResult{Positions: []protocol.Position{}, OrderIDs: []string{}, CancelledOrderIDs: []string{}}
}

func (o *Ops) flattenKey(ctx context.Context, k key, sel selector, cancelOrders bool, res *protocol.FlattenResult) error {
	st, unlock, err := o.hold(ctx, k)
	if err != nil {
		return err
	}
	defer unlock()
	c, _, err := o.closeOut(ctx, st, sel, cancelOrders)
	if c.position != nil {
		res.Positions = append(res.Positions, *c.position)
	}
	res.OrderIDs = append(res.OrderIDs, c.closeIDs...)
	res.CancelledOrderIDs = append(res.CancelledOrderIDs, c.cancelled...)
	return err
}

// accounts returns [name] after checking the account exists, or every
// account when name is empty.
func (o *Ops) accounts(ctx context.Context, name string) ([]string, error) {
	if name != "" {
		if _, err := o.p.Account(ctx, name); err != nil {
			return nil, wireError(err)
		}
		return []string{name}, nil
	}
	all, err := o.p.Accounts(ctx)
	if err != nil {
		return nil, wireError(err)
	}
	names := make([]string, len(all))
	for i, a := range all {
		names[i] = a.Name
	}
	return names, nil
}

// keys returns the account's keys in instrument, or, when instrument is
// empty, every instrument where it holds a position or a working order,
// sorted by name.
func (o *Ops) keys(ctx context.Context, account, instrument string) ([]key, error) {
	if instrument != "" {
		return []key{{account, instrument}}, nil
	}
	seen := map[string]bool{}
	ps, err := o.p.Positions(ctx, account)
	if err != nil {
		return nil, wireError(err)
	}
	for _, p := range ps {
		seen[p.Instrument] = true
	}
	orders, err := o.p.Orders(ctx, account)
	if err != nil {
		return nil, wireError(err)
	}
	for _, ord := range orders {
		if !protocol.TerminalOrderState(ord.OrderState) {
			seen[ord.Instrument] = true
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	ks := make([]key, len(names))
	for i, n := range names {
		ks[i] = key{account, n}
	}
	return ks, nil
}

// ClosePosition closes all or part of the position at the market: quantity
// contracts (at most the position), or the fraction percent of it (0 <
// percent ≤ 1) rounded up to a whole contract (never zero, at most the
// position), or all of it. The result names the closing order (orderId,
// orderIds) and the position as it stood before (closedPositions). A close
// that leaves the position (or the tag's share) flat also cancels the
// working orders it selects, so that stops and targets of a closed position
// cannot open a new one; a partial close leaves them alone.
func (o *Ops) ClosePosition(ctx context.Context, a protocol.ClosePositionArgs) (protocol.PlaceResult, error) {
	var res protocol.PlaceResult
	var miss fields
	miss.need("account", strings.TrimSpace(a.Account) != "")
	miss.need("instrument", strings.TrimSpace(a.Instrument) != "")
	if err := miss.err(); err != nil {
		return res, err
	}
	if err := account(a.Account); err != nil {
		return res, err
	}
	if a.Quantity != nil && a.Percent != nil {
		return res, invalid("send quantity or percent, not both")
	}
	if a.Quantity != nil {
		if err := quantity("quantity", *a.Quantity); err != nil {
			return res, err
		}
	}
	if a.Percent != nil && (math.IsNaN(*a.Percent) || !(*a.Percent > 0 && *a.Percent <= 1)) {
		return res, invalid(percentRule)
	}
	if err := text("strategyTag", a.StrategyTag, maxTagLen); err != nil {
		return res, err
	}
	st, sel, q, unlock, err := o.holdShare(ctx, a.Account, a.Instrument, a.StrategyTag, a.Force)
	if err != nil {
		return res, err
	}
	defer unlock()
	k := st.k
	n := abs(q)
	switch {
	case a.Quantity != nil:
		n = min(*a.Quantity, abs(q))
	case a.Percent != nil:
		n = fractionOf(abs(q), *a.Percent)
	}
	// The position the call acts on (the tag's share, or all of it), as
	// it stood before the close.
	before := st.pos
	before.MarketPosition, before.Quantity = marketPosition(q), abs(q)
	before.Tag = sel.closeTag(st)
	if n == abs(q) {
		c, after, err := o.closeOut(ctx, st, sel, true)
		res.CancelledOrderIDs = c.cancelled
		if err != nil {
			return res, err
		}
		if len(c.closeIDs) > 0 {
			res.OrderID = c.closeIDs[len(c.closeIDs)-1]
			res.OrderIDs = c.closeIDs
			if ord, ok := after.find(res.OrderID); ok {
				res.Order = &ord
			}
		}
		if c.position != nil {
			res.ClosedPositions = []protocol.Position{before}
		}
		return res, nil
	}
	res, err = o.submit(ctx, bridge.OrderRequest{
		Account: k.account, Instrument: k.instrument, Action: actionFor(-q), OrderType: protocol.OrderTypeMarket,
		Quantity: n, TimeInForce: protocol.TimeInForceDay, Name: "Close", StrategyTag: sel.closeTag(st),
	}, res)
	if err == nil {
		res.OrderIDs = []string{res.OrderID}
		res.ClosedPositions = []protocol.Position{before}
	}
	return res, err
}

// percentRule is the detail of a percent outside (0, 1].
const percentRule = "percent is a fraction of the position: 0.5 closes half; it must be above 0 and at most 1"

// fractionOf is the fraction f (0 < f ≤ 1) of n contracts, rounded up to
// a whole contract: never zero, never more than n (0.01 of 1 is 1, 0.5 of
// 3 is 2).
func fractionOf(n int, f float64) int {
	k := int(math.Ceil(float64(n)*f - 1e-9))
	return min(max(k, 1), n)
}

func noPosition() error {
	return protocol.NewError(protocol.CodeNoPosition, "no position is open in this instrument on the account")
}

// Reverse closes the position (the strategy tag's share, with strategyTag)
// and its working orders, waits for them to clear, then opens the opposite
// side at the same size with a market order.
func (o *Ops) Reverse(ctx context.Context, a protocol.ReverseArgs) (protocol.PlaceResult, error) {
	var res protocol.PlaceResult
	var miss fields
	miss.need("account", strings.TrimSpace(a.Account) != "")
	miss.need("instrument", strings.TrimSpace(a.Instrument) != "")
	if err := miss.err(); err != nil {
		return res, err
	}
	if err := account(a.Account); err != nil {
		return res, err
	}
	if err := text("strategyTag", a.StrategyTag, maxTagLen); err != nil {
		return res, err
	}
	st, sel, q, unlock, err := o.holdShare(ctx, a.Account, a.Instrument, a.StrategyTag, a.Force)
	if err != nil {
		return res, err
	}
	defer unlock()
	k := st.k
	req := bridge.OrderRequest{
		Account: k.account, Instrument: k.instrument, Action: actionFor(-q), OrderType: protocol.OrderTypeMarket,
		Quantity: abs(q), TimeInForce: protocol.TimeInForceDay, Name: "Reverse", StrategyTag: a.StrategyTag,
	}
	return o.closeThenPlace(ctx, st, sel, req, a.StrategyTag)
}

// closeThenPlace closes sel's part of st with its orders, waits for them to
// clear, and places req.
func (o *Ops) closeThenPlace(ctx context.Context, st state, sel selector, req bridge.OrderRequest, tag string) (protocol.PlaceResult, error) {
	var res protocol.PlaceResult
	// Judged before anything is closed: the order after the close opens,
	// and a refused one must leave the position as it was.
	if err := o.admit(ctx, st.k, 0, side(req.Action)*req.Quantity); err != nil {
		return res, err
	}
	c, _, err := o.closeOut(ctx, st, sel, true)
	res.CloseOrderIDs, res.CancelledOrderIDs = c.closeIDs, c.cancelled
	if err != nil {
		return res, err
	}
	now, err := o.waitClear(ctx, st.k, sel, c)
	if err != nil {
		return res, err
	}
	o.reclaim(tag, st, now)
	res, err = o.submit(ctx, req, res)
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return res, protocol.NewError(pe.Code, "the old position was closed, but the new order failed: "+pe.Detail)
	}
	if err != nil {
		return res, err
	}
	return res, nil
}

// ReversePosition closes the open position in the instrument, with its
// working orders, waits up to ClearTimeout for them to clear, then places
// the order the arguments describe. When no position is open it refuses
// with no_position and does nothing else.
func (o *Ops) ReversePosition(ctx context.Context, a protocol.ReversePositionArgs) (protocol.PlaceResult, error) {
	var res protocol.PlaceResult
	req, err := checkOrder(orderFields{
		account: a.Account, action: a.Action, instrument: a.Instrument, orderType: a.OrderType,
		timeInForce: a.TimeInForce, quantity: a.Quantity, limitPrice: a.LimitPrice, stopPrice: a.StopPrice,
		trailDistance: a.TrailDistance, ocoID: a.OcoID, strategy: a.Strategy, strategyTag: a.StrategyTag,
	})
	if err != nil {
		return res, err
	}
	if _, err := o.prepare(ctx, &req); err != nil {
		return res, err
	}
	st, unlock, err := o.hold(ctx, key{req.Account, req.Instrument})
	if err != nil {
		return res, err
	}
	defer unlock()
	if st.qty == 0 {
		return res, noPosition()
	}
	if err := o.checkOwner(st, a.StrategyTag, a.Force); err != nil {
		return res, err
	}
	return o.closeThenPlace(ctx, st, selector{}, req, a.StrategyTag)
}
