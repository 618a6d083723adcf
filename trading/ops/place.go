package ops

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// orderFields are the fields every order-placing function shares.
type orderFields struct {
	account, action, instrument, orderType, timeInForce string
	quantity                                            int
	quantityOptional                                    bool // PlaceOrder with targetQuantity
	limitPrice, stopPrice                               *float64
	limitOffset, stopOffset                             bool     // relative prices, resolved later
	trailDistance                                       *float64 // the trailing types
	ocoID, orderID, strategy, strategyTag               string
}

// checkOrder validates an order's fields without asking the platform and
// returns the request with normalized spellings (the instrument as sent).
func checkOrder(f orderFields) (bridge.OrderRequest, error) {
	var miss fields
	miss.need("account", strings.TrimSpace(f.account) != "")
	miss.need("action", strings.TrimSpace(f.action) != "")
	miss.need("instrument", strings.TrimSpace(f.instrument) != "")
	miss.need("orderType", strings.TrimSpace(f.orderType) != "")
	miss.need("quantity", f.quantity != 0 || f.quantityOptional)
	miss.need("timeInForce", strings.TrimSpace(f.timeInForce) != "")
	orderType, typeOK := protocol.NormalizeOrderType(f.orderType)
	need := protocol.OrderPricesOf(orderType)
	needLimit, needStop, trailing := need.Limit, need.Stop, need.TrailDistance
	miss.need("limitPrice", !needLimit || f.limitPrice != nil || f.limitOffset)
	miss.need("stopPrice", !needStop || f.stopPrice != nil || f.stopOffset)
	miss.need("trailDistance", !trailing || f.trailDistance != nil)
	if err := miss.err(); err != nil {
		return bridge.OrderRequest{}, err
	}
	action, ok := protocol.NormalizeAction(f.action)
	if !ok {
		return bridge.OrderRequest{}, invalid("action must be Buy or Sell")
	}
	if !typeOK {
		return bridge.OrderRequest{}, invalid("orderType must be Market, Limit, StopMarket, StopLimit, TrailingStop or TrailingStopLimit")
	}
	if f.trailDistance != nil && !trailing {
		return bridge.OrderRequest{}, invalid("trailDistance applies only to TrailingStop and TrailingStopLimit orders")
	}
	tif, ok := protocol.NormalizeTimeInForce(f.timeInForce)
	if !ok {
		return bridge.OrderRequest{}, invalid("timeInForce must be Day or Gtc")
	}
	if f.quantity != 0 || !f.quantityOptional {
		if err := quantity("quantity", f.quantity); err != nil {
			return bridge.OrderRequest{}, err
		}
	}
	req := bridge.OrderRequest{
		Account: f.account, Instrument: f.instrument, Action: action, OrderType: orderType,
		Quantity: f.quantity, TimeInForce: tif, Oco: f.ocoID, OrderID: f.orderID,
		StrategyTag: f.strategyTag, AtmTemplate: f.strategy,
	}
	if needLimit && f.limitPrice != nil {
		if err := positive("limitPrice", *f.limitPrice); err != nil {
			return req, err
		}
		req.LimitPrice = *f.limitPrice
	}
	// A TrailingStop's stop price is optional: its starting stop.
	if (needStop || orderType == protocol.OrderTypeTrailingStop) && f.stopPrice != nil {
		if err := positive("stopPrice", *f.stopPrice); err != nil {
			return req, err
		}
		req.StopPrice = *f.stopPrice
	}
	if trailing {
		if err := distance("trailDistance", *f.trailDistance); err != nil {
			return req, err
		}
		req.TrailDistance = *f.trailDistance
	}
	if err := account(f.account); err != nil {
		return req, err
	}
	for _, t := range []struct{ name, v string }{
		{"ocoId", f.ocoID}, {"orderId", f.orderID}, {"strategy", f.strategy}, {"strategyTag", f.strategyTag},
	} {
		if err := text(t.name, t.v, maxTagLen); err != nil {
			return req, err
		}
	}
	return req, nil
}

// prepare checks that req's account exists, resolves its instrument, checks
// its prices against the tick size and its ATM template against the
// platform's list. It only reads.
func (o *Ops) prepare(ctx context.Context, req *bridge.OrderRequest) (protocol.InstrumentInfo, error) {
	if _, err := o.p.Account(ctx, req.Account); err != nil {
		return protocol.InstrumentInfo{}, wireError(err)
	}
	info, err := o.resolve(ctx, "instrument", req.Instrument)
	if err != nil {
		return info, err
	}
	req.Instrument = info.Instrument
	if req.LimitPrice != 0 {
		if err := onTick("limitPrice", req.LimitPrice, info); err != nil {
			return info, err
		}
	}
	if req.StopPrice != 0 {
		if err := onTick("stopPrice", req.StopPrice, info); err != nil {
			return info, err
		}
	}
	if req.TrailDistance != 0 {
		if err := onTick("trailDistance", req.TrailDistance, info); err != nil {
			return info, err
		}
	}
	if req.AtmTemplate != "" {
		if err := o.templateExists(ctx, req.AtmTemplate); err != nil {
			return info, err
		}
	}
	return info, nil
}

// templateExists checks that the platform knows the ATM template name
// (matched exactly, as the platform names it).
func (o *Ops) templateExists(ctx context.Context, name string) error {
	ts, err := o.p.AtmTemplates(ctx)
	if err != nil {
		return wireError(err)
	}
	for _, t := range ts {
		if t.Name == name {
			return nil
		}
	}
	return protocol.NewError(protocol.CodeTemplateNotFound, "no ATM template of that name"+templateList(ts))
}

// maxListedTemplates bounds the template names a refusal lists.
const maxListedTemplates = 20

// templateList completes atm_template_not_found's detail with the names
// the platform knows (matched exactly), the first maxListedTemplates in
// the platform's order.
func templateList(ts []protocol.AtmTemplate) string {
	if len(ts) == 0 {
		return "; the platform has no ATM templates"
	}
	names := make([]string, 0, min(len(ts), maxListedTemplates))
	for _, t := range ts[:min(len(ts), maxListedTemplates)] {
		names = append(names, t.Name)
	}
	out := "; the platform's templates (names match exactly): " + strings.Join(names, ", ")
	if n := len(ts) - maxListedTemplates; n > 0 {
		out += fmt.Sprintf(" and %d more", n)
	}
	return out
}

// placeRules are PlaceOrder's conditions on the position.
type placeRules struct {
	tag                 string
	force               bool
	require             map[string]bool // requireMarketPosition; nil: no check
	maxPositions        *int
	targetQuantity      *int
	maxResyncCorrection *int
	smart               protocol.SmartOptions
}

// needsState reports whether the rules read the position before placing.
func (r placeRules) needsState() bool {
	return r.tag != "" || r.require != nil || r.maxPositions != nil || r.targetQuantity != nil ||
		r.smart.FlattenFirst || r.smart.ReduceOnly
}

// parseRequire parses requireMarketPosition: a comma-separated subset of
// flat, long and short, in any casing.
func parseRequire(s string) (map[string]bool, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	set := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		v, ok := protocolMarketPosition(strings.TrimSpace(part))
		if !ok {
			return nil, invalid("requireMarketPosition must be a comma-separated list of flat, long and short")
		}
		set[v] = true
	}
	return set, nil
}

func protocolMarketPosition(s string) (string, bool) {
	for _, v := range []string{protocol.MarketPositionFlat, protocol.MarketPositionLong, protocol.MarketPositionShort} {
		if strings.EqualFold(s, v) {
			return v, true
		}
	}
	return "", false
}

// PlaceOrder checks and submits one order. See the package documentation
// for strategyTag, requireMarketPosition, maxPositions, targetQuantity,
// maxResyncCorrection, force and smartOptions.
func (o *Ops) PlaceOrder(ctx context.Context, a protocol.PlaceOrderArgs) (protocol.PlaceResult, error) {
	return o.place(ctx, a, false)
}

// FlatPlace flattens the account's position and working orders in the
// instrument (the strategy tag's share and orders when strategyTag is
// set), waits for them to clear, then places the order as PlaceOrder does.
// instrument, action and quantity are required; orderType defaults from
// the prices sent (protocol.FlatPlaceOrderType) and timeInForce to Day.
func (o *Ops) FlatPlace(ctx context.Context, a protocol.FlatPlaceArgs) (protocol.PlaceResult, error) {
	if strings.TrimSpace(a.OrderType) == "" {
		a.OrderType = protocol.FlatPlaceOrderType(a.LimitPrice != nil || a.LimitOffset != nil, a.StopPrice != nil || a.StopOffset != nil)
	}
	if strings.TrimSpace(a.TimeInForce) == "" {
		a.TimeInForce = protocol.TimeInForceDay
	}
	res, err := o.place(ctx, a, true)
	var pe *protocol.Error
	if errors.As(err, &pe) && pe.Code == protocol.CodeMissingFields {
		return res, protocol.NewError(pe.Code, pe.Detail+"; flat place needs them to know what to place")
	}
	return res, err
}

func (o *Ops) place(ctx context.Context, a protocol.PlaceOrderArgs, flattenFirst bool) (protocol.PlaceResult, error) {
	var res protocol.PlaceResult
	req, rules, err := checkPlace(a, flattenFirst)
	if err != nil {
		return res, err
	}
	info, err := o.prepare(ctx, &req)
	if err != nil {
		return res, err
	}
	if err := o.settleExits(ctx, a, &req, info); err != nil {
		return res, err
	}
	k := key{req.Account, req.Instrument}
	if rules.maxPositions != nil {
		unlock, err := o.locks.lock(ctx, accountKey(k.account))
		if err != nil {
			return res, err
		}
		defer unlock()
	}
	unlock, err := o.locks.lock(ctx, k)
	if err != nil {
		return res, err
	}
	defer unlock()

	if !rules.needsState() {
		if err := o.admitPlace(ctx, k, req); err != nil {
			return res, err
		}
		return o.submitFollowed(ctx, a, req, info, res)
	}
	st, err := o.read(ctx, k)
	if err != nil {
		return res, err
	}
	if err := o.checkOwner(st, rules.tag, rules.force); err != nil {
		return res, err
	}
	cur := current(st, rules.tag)
	if rules.require != nil && !rules.require[marketPosition(cur)] {
		return res, protocol.NewError(protocol.CodeMarketPositionMismatch, "the market position is not one requireMarketPosition allows; nothing was placed")
	}
	if rules.smart.ReduceOnly {
		s := side(req.Action) * req.Quantity
		if cur == 0 || sign(s) != -sign(cur) || abs(s) > abs(cur) {
			return res, protocol.NewError(protocol.CodeMarketPositionMismatch, "reduceOnly: the order would open or add to a position; nothing was placed")
		}
	}
	before := st
	if rules.smart.FlattenFirst {
		// Judged before anything is closed: what follows the close opens.
		if err := o.admit(ctx, k, 0, side(req.Action)*req.Quantity); err != nil {
			return res, err
		}
		sel := selector{tag: rules.tag}
		if rules.force {
			sel = selector{}
		}
		c, _, err := o.closeOut(ctx, st, sel, true)
		res.CloseOrderIDs, res.CancelledOrderIDs = c.closeIDs, c.cancelled
		if err != nil {
			return res, err
		}
		if st, err = o.waitClear(ctx, k, sel, c); err != nil {
			return res, err
		}
		cur = current(st, rules.tag)
	}
	if rules.targetQuantity != nil {
		unchanged, err := applyTarget(&req, rules, cur)
		if err != nil || unchanged {
			res.Unchanged = unchanged
			return res, err
		}
	}
	if rules.maxPositions != nil && st.qty == 0 {
		if n, err := o.openPositions(ctx, k.account); err != nil {
			return res, err
		} else if n >= *rules.maxPositions {
			return res, protocol.NewError(protocol.CodeMaxPositions, "the account already holds maxPositions positions; nothing was placed")
		}
	}
	if err := o.admit(ctx, k, st.qty, side(req.Action)*req.Quantity); err != nil {
		return res, err
	}
	o.reclaim(rules.tag, before, st)
	return o.submitFollowed(ctx, a, req, info, res)
}

// checkPlace validates PlaceOrder's arguments.
func checkPlace(a protocol.PlaceOrderArgs, flattenFirst bool) (bridge.OrderRequest, placeRules, error) {
	rules := placeRules{tag: a.StrategyTag, force: a.Force, maxPositions: a.MaxPositions,
		targetQuantity: a.TargetQuantity, maxResyncCorrection: a.MaxResyncCorrection}
	req, err := checkOrder(orderFields{
		account: a.Account, action: a.Action, instrument: a.Instrument, orderType: a.OrderType,
		timeInForce: a.TimeInForce, quantity: a.Quantity, quantityOptional: a.TargetQuantity != nil,
		limitPrice: a.LimitPrice, stopPrice: a.StopPrice, trailDistance: a.TrailDistance, ocoID: a.OcoID,
		orderID: a.OrderID, strategy: a.Strategy, strategyTag: a.StrategyTag,
		limitOffset: a.LimitOffset != nil, stopOffset: a.StopOffset != nil,
	})
	if err != nil {
		return req, rules, err
	}
	if rules.require, err = parseRequire(a.RequireMarketPosition); err != nil {
		return req, rules, err
	}
	if a.MaxPositions != nil && (*a.MaxPositions < 0 || *a.MaxPositions > maxQty) {
		return req, rules, invalid("maxPositions must be between 0 and 10000")
	}
	if a.TargetQuantity != nil && (*a.TargetQuantity < 0 || *a.TargetQuantity > maxQty) {
		return req, rules, invalid("targetQuantity must be between 0 and 10000")
	}
	if a.MaxResyncCorrection != nil {
		if a.TargetQuantity == nil {
			return req, rules, invalid("maxResyncCorrection applies only with targetQuantity")
		}
		if *a.MaxResyncCorrection < 0 || *a.MaxResyncCorrection > maxQty {
			return req, rules, invalid("maxResyncCorrection must be between 0 and 10000")
		}
	}
	if rules.smart, err = protocol.ParseSmartOptions(a.SmartOptions); err != nil {
		return req, rules, err
	}
	rules.smart.FlattenFirst = rules.smart.FlattenFirst || flattenFirst
	if rules.smart.FlattenFirst && rules.smart.ReduceOnly {
		return req, rules, invalid("reduceOnly cannot be combined with flattening first")
	}
	if rules.smart.ReduceOnly && a.TargetQuantity != nil {
		return req, rules, invalid("reduceOnly cannot be combined with targetQuantity")
	}
	if err := checkExits(a, req); err != nil {
		return req, rules, err
	}
	return req, rules, nil
}

// current is the position a rule of a write with tag looks at: the tag's
// share when it owns the key, else the whole position.
func current(st state, tag string) int {
	if tag != "" && st.owner == tag {
		return st.share
	}
	return st.qty
}

// applyTarget sizes req so that the position becomes targetQuantity in the
// direction of req's action, from cur. It reports unchanged when the
// position already is there.
func applyTarget(req *bridge.OrderRequest, r placeRules, cur int) (bool, error) {
	target := side(req.Action) * *r.targetQuantity
	needed := target - cur
	if needed == 0 {
		return true, nil
	}
	if r.maxResyncCorrection != nil {
		expected := side(req.Action) * req.Quantity
		if abs(needed-expected) > *r.maxResyncCorrection {
			return false, protocol.NewError(protocol.CodeResyncLimit, "reaching targetQuantity needs a larger correction than maxResyncCorrection allows; nothing was placed")
		}
	}
	if sign(needed) != side(req.Action) {
		if req.OrderType != protocol.OrderTypeMarket {
			return false, protocol.NewError(protocol.CodeResyncLimit, "reaching targetQuantity needs an order on the other side of action, which only a Market order may do; nothing was placed")
		}
		req.Action = actionFor(needed)
	}
	if abs(needed) > maxQty {
		return false, invalid("the order that reaches targetQuantity would exceed 10000 contracts")
	}
	req.Quantity = abs(needed)
	return false, nil
}

// openPositions counts the account's open positions.
func (o *Ops) openPositions(ctx context.Context, account string) (int, error) {
	ps, err := o.p.Positions(ctx, account)
	if err != nil {
		return 0, wireError(err)
	}
	n := 0
	for _, p := range ps {
		if p.Quantity != 0 {
			n++
		}
	}
	return n, nil
}

// reclaim gives a tagged write the key before its order goes out: the tag
// claims a key nobody owns while it is flat, and keeps a key it owned
// before the write closed its share.
func (o *Ops) reclaim(tag string, before, now state) {
	if tag == "" || now.owner == tag {
		return
	}
	if before.owner == tag || (now.owner == "" && now.qty == 0) {
		o.book.claim(now.k, tag, now.orders)
	}
}

// submitFollowed places req, the entry of a, and hands it to the
// EntryWatcher when a has exits or a cancel-after; with exits at fixed
// prices on a bridge.BracketSubmitter, the entry and its exits go in one
// request instead (submitBracket).
func (o *Ops) submitFollowed(ctx context.Context, a protocol.PlaceOrderArgs, req bridge.OrderRequest, info protocol.InstrumentInfo, res protocol.PlaceResult) (protocol.PlaceResult, error) {
	if o.brackets(a) {
		return o.submitBracket(ctx, a, req, info, res)
	}
	res, err := o.submit(ctx, req, res)
	if err != nil || res.Order == nil {
		return res, err
	}
	return res, o.follow(ctx, a, req, info, *res.Order)
}

// submit places req and fills res with the order.
func (o *Ops) submit(ctx context.Context, req bridge.OrderRequest, res protocol.PlaceResult) (protocol.PlaceResult, error) {
	ord, err := o.p.SubmitOrder(ctx, req)
	if err != nil {
		return res, wireError(err)
	}
	res.OrderID, res.Order = ord.OrderID, &ord
	return res, nil
}
