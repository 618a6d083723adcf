package ops

import (
	"context"
	"errors"
	"strings"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// CancelAndBracket cancels every non-terminal order of the instrument on
// the account, waits BracketDelay, then places a stop-loss stop-market order
// and a take-profit limit order (either may be omitted, not both) as one
// OCO pair on the side opposite to action, sized to the position when it is
// smaller than quantity. When the position went flat during the wait no
// bracket is placed; when there was no position at all the bracket is
// placed at quantity as a straddle entry. Two legs go to a platform that
// implements bridge.PairSubmitter in one SubmitOCO request. See the
// package documentation.
func (o *Ops) CancelAndBracket(ctx context.Context, a protocol.CancelAndBracketArgs) (protocol.BracketResult, error) {
	res := protocol.BracketResult{OrderIDs: []string{}, CancelledOrderIDs: []string{}, Orders: []protocol.Order{}}
	var miss fields
	miss.need("account", strings.TrimSpace(a.Account) != "")
	miss.need("instrument", strings.TrimSpace(a.Instrument) != "")
	miss.need("action", strings.TrimSpace(a.Action) != "")
	miss.need("quantity", a.Quantity != 0)
	miss.need("takeProfit or stopLoss", a.TakeProfit != nil || a.StopLoss != nil)
	if err := miss.err(); err != nil {
		return res, err
	}
	if err := account(a.Account); err != nil {
		return res, err
	}
	action, ok := protocol.NormalizeAction(a.Action)
	if !ok {
		return res, invalid("action must be Buy or Sell")
	}
	if err := quantity("quantity", a.Quantity); err != nil {
		return res, err
	}
	if a.TakeProfit != nil {
		if err := positive("takeProfit", *a.TakeProfit); err != nil {
			return res, err
		}
	}
	if a.StopLoss != nil {
		if err := positive("stopLoss", *a.StopLoss); err != nil {
			return res, err
		}
	}
	if err := text("ocoId", a.OcoID, maxTagLen); err != nil {
		return res, err
	}
	info, err := o.resolve(ctx, "instrument", a.Instrument)
	if err != nil {
		return res, err
	}
	if a.TakeProfit != nil {
		if err := onTick("takeProfit", *a.TakeProfit, info); err != nil {
			return res, err
		}
	}
	if a.StopLoss != nil {
		if err := onTick("stopLoss", *a.StopLoss, info); err != nil {
			return res, err
		}
	}
	dir := side(action) // direction of the protected position
	if a.TakeProfit != nil && a.StopLoss != nil && float64(dir)*(*a.TakeProfit-*a.StopLoss) <= 0 {
		return res, invalid("takeProfit must be on the profit side of stopLoss for the position's direction")
	}
	k := key{a.Account, info.Instrument}
	st, unlock, err := o.hold(ctx, k)
	if err != nil {
		return res, err
	}
	defer unlock()
	if st.qty != 0 && sign(st.qty) != dir {
		return res, protocol.NewError(protocol.CodeMarketPositionMismatch, "the open position is on the other side than action; nothing was cancelled or placed")
	}
	// Legs the platform would refuse are refused now, before anything is
	// cancelled: a stop through the market, or (with no position to
	// protect) a take profit that would enter at once.
	q, err := o.p.Quote(ctx, k.instrument)
	if err != nil {
		return res, wireError(err)
	}
	if a.StopLoss != nil && ((dir > 0 && *a.StopLoss >= q.Bid) || (dir < 0 && *a.StopLoss <= q.Ask)) {
		return res, invalid("stopLoss is at or through the market; nothing was cancelled or placed")
	}
	if st.qty == 0 && a.TakeProfit != nil && ((dir > 0 && *a.TakeProfit <= q.Bid) || (dir < 0 && *a.TakeProfit >= q.Ask)) {
		return res, invalid("takeProfit is at or through the market and there is no position to protect; nothing was cancelled or placed")
	}

	// Judged before anything is cancelled: with a position the legs close
	// it; without one they would open one.
	legQty := a.Quantity
	if st.qty != 0 {
		legQty = min(legQty, abs(st.qty))
	}
	if err := o.admit(ctx, k, st.qty, -dir*legQty); err != nil {
		return res, err
	}
	hadPosition := st.qty != 0
	ids, err := o.cancel(ctx, k.account, st.working(), func(protocol.Order) bool { return true })
	res.CancelledOrderIDs = ids
	if err != nil {
		return res, err
	}
	if err := o.opts.Sleep(ctx, o.opts.BracketDelay); err != nil {
		return res, wireError(err)
	}
	st, err = o.read(ctx, k)
	if err != nil {
		return res, err
	}
	qty := a.Quantity
	if hadPosition {
		if st.qty == 0 {
			o.log.Debug("position went flat during the cancel window; no bracket placed")
			return res, nil
		}
		if sign(st.qty) != dir {
			return res, protocol.NewError(protocol.CodeMarketPositionMismatch, "the position changed side during the cancel window; the orders were cancelled and no bracket was placed")
		}
		qty = min(qty, abs(st.qty))
	}
	oco := a.OcoID
	if oco == "" {
		oco = o.opts.NewOcoID()
	}
	exit := actionFor(-dir)
	var legs []bridge.OrderRequest
	if a.StopLoss != nil {
		legs = append(legs, bridge.OrderRequest{Account: k.account, Instrument: k.instrument, Action: exit,
			OrderType: protocol.OrderTypeStopMarket, Quantity: qty, StopPrice: *a.StopLoss,
			TimeInForce: protocol.TimeInForceGtc, Oco: oco, Name: "Stop loss"})
	}
	if a.TakeProfit != nil {
		legs = append(legs, bridge.OrderRequest{Account: k.account, Instrument: k.instrument, Action: exit,
			OrderType: protocol.OrderTypeLimit, Quantity: qty, LimitPrice: *a.TakeProfit,
			TimeInForce: protocol.TimeInForceGtc, Oco: oco, Name: "Profit target"})
	}
	placed, err := o.submitLegs(ctx, k, legs)
	if err != nil {
		return protocol.BracketResult{OrderIDs: []string{}, CancelledOrderIDs: res.CancelledOrderIDs, Orders: []protocol.Order{}},
			bracketError(err)
	}
	for _, ord := range placed {
		res.OrderIDs = append(res.OrderIDs, ord.OrderID)
		res.Orders = append(res.Orders, ord)
	}
	res.Placed, res.OcoID, res.Quantity = true, oco, qty
	return res, nil
}

// bracketError is the wire error of a bracket that could not be placed
// after the instrument's orders were cancelled.
func bracketError(err error) error {
	if errors.Is(err, bridge.ErrOutcomeUnknown) {
		return withDetail(wireError(err), "the orders were cancelled; whether the bracket was placed is unknown: ")
	}
	return withDetail(wireError(err), "the orders were cancelled, but the bracket could not be placed: ")
}

// withDetail prefixes a wire error's detail.
func withDetail(err error, prefix string) error {
	if pe, ok := err.(*protocol.Error); ok {
		return protocol.NewError(pe.Code, prefix+pe.Detail)
	}
	return err
}
