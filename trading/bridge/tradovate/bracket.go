package tradovate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// reasonBracket refuses a bracket whose orders do not fit together;
// reasonExitsDropped reports an entry the broker placed without its
// exits, which was cancelled.
const (
	reasonBracket = "a bracket is an entry and one or two exits on the other side, for the same account, " +
		"instrument and quantity, each with its own order id"
	reasonExitsDropped = "Tradovate placed the entry without its exits, so the entry was cancelled; " +
		"check the position in case it filled first"
)

// SubmitBracket implements bridge.BracketSubmitter with order/placeoso
// ("order sends order"): the entry and its exits (bracket1, bracket2) in
// one request. The broker holds the exits and sends them when the entry
// fills; two exits are an OCO pair. Every order carries our id as its
// text and its clOrdId, as SubmitOrder's do. Exits not sent yet are
// answered as Accepted.
func (p *Platform) SubmitBracket(ctx context.Context, entry bridge.OrderRequest, exits ...bridge.OrderRequest) ([]protocol.Order, error) {
	if err := p.usable(ctx); err != nil {
		return nil, err
	}
	if len(exits) == 0 || len(exits) > 2 {
		return nil, &bridge.RequestError{Reason: reasonBracket}
	}
	if entry.Oco != "" {
		return nil, notSupportedOCO
	}
	oe, err := p.validate(ctx, entry)
	if err != nil {
		return nil, err
	}
	oco := ""
	if len(exits) == 2 {
		oco = exits[0].Oco
	}
	legs := make([]order, len(exits))
	ids := []string{entry.OrderID}
	for i, x := range exits {
		x.Oco = ""
		ox, err := p.validate(ctx, x)
		if err != nil {
			return nil, err
		}
		if ox.account != oe.account || ox.inst.Symbol != oe.inst.Symbol || ox.quantity != oe.quantity || ox.action == oe.action {
			return nil, &bridge.RequestError{Reason: reasonBracket}
		}
		legs[i] = ox
		ids = append(ids, x.OrderID)
	}
	for i, id := range ids {
		if id == "" {
			ids[i] = newOrderID()
			continue
		}
		for _, other := range ids[:i] {
			if other == id {
				return nil, &bridge.RequestError{Reason: reasonBracket}
			}
		}
	}
	reqs := append([]bridge.OrderRequest{entry}, exits...)
	for i := range reqs {
		reqs[i].Oco = ""
		if i > 0 {
			reqs[i].Oco = oco
		}
		if err := p.reserve(ids[i], reqs[i]); err != nil {
			for _, id := range ids[:i] {
				p.ids.release(id)
			}
			return nil, err
		}
	}
	bracket := func(i int) *tradovatewire.OtherOrder {
		if i >= len(legs) {
			return nil
		}
		o := legs[i]
		return &tradovatewire.OtherOrder{Action: o.action, OrderType: o.typ, Price: o.limit, StopPrice: o.stop,
			PegDifference: o.peg, TimeInForce: o.tif, Text: ids[i+1], ClOrdID: ids[i+1]}
	}
	body := tradovatewire.PlaceOSORequest{PlaceOrderRequest: p.placeRequest(oe, ids[0]),
		Bracket1: bracket(0), Bracket2: bracket(1)}
	p.startPlacing()
	var res tradovatewire.PlaceOSOResponse
	err = writeError(p.sess.Do(ctx, http.MethodPost, "/order/placeoso", "", body, &res), false)
	if failed := p.placed(ids[0], err, res.OrderID, res.FailureReason, res.ErrorText); failed != nil {
		if errors.Is(failed, bridge.ErrOutcomeUnknown) {
			// The exits keep their reservations: their text binds them
			// when the broker sends them.
			return nil, failed
		}
		p.mu.Lock()
		for _, id := range ids[1:] {
			p.ids.release(id)
			p.failed[id] = true
		}
		p.mu.Unlock()
		return nil, failed
	}
	exitIDs := []int64{res.OSO1ID, res.OSO2ID}[:len(legs)]
	if slices.Contains(exitIDs, 0) {
		// The entry stands but the broker named no exit for it: it
		// must not stand unprotected.
		p.mu.Lock()
		for _, id := range ids[1:] {
			p.ids.release(id)
			p.failed[id] = true
		}
		p.mu.Unlock()
		return nil, p.takeBackEntry(ctx, res.OrderID)
	}
	for i, broker := range exitIDs {
		p.ids.bind(ids[i+1], broker)
	}
	p.mu.Lock()
	p.flushHeldLocked()
	p.mu.Unlock()
	first, err := p.afterWrite(ctx, res.OrderID, func(o protocol.Order) bool { return o.OrderState != protocol.OrderStateSubmitted })
	if err != nil {
		return nil, err
	}
	out := []protocol.Order{first}
	for i, broker := range exitIDs {
		out = append(out, p.heldExit(broker, ids[i+1], reqs[i+1], legs[i]))
	}
	return out, nil
}

// heldExit is an exit of a bracket as it stands: the mirror's record once
// the broker sent it, else the order as placed, held by the broker
// (Accepted).
func (p *Platform) heldExit(broker int64, ours string, req bridge.OrderRequest, o order) protocol.Order {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m != nil && broker != 0 {
		if rec, ok := p.orderRecordLocked(broker); ok {
			return rec
		}
	}
	return protocol.Order{OrderID: ours, Account: req.Account, Instrument: req.Instrument, Name: req.Name,
		OrderAction: req.Action, OrderType: req.OrderType, OrderState: protocol.OrderStateAccepted,
		Quantity: o.quantity, LimitPrice: req.LimitPrice, StopPrice: req.StopPrice, TimeInForce: req.TimeInForce,
		Oco: req.Oco, StrategyTag: req.StrategyTag}
}

// takeBackEntry cancels an entry the broker placed without its exits.
// When the cancel is refused or its outcome is unknown, the entry may
// stand (or have filled) unprotected: the caller must read the orders
// (ErrOutcomeUnknown).
func (p *Platform) takeBackEntry(ctx context.Context, broker int64) error {
	var res tradovatewire.CommandResponse
	err := writeError(p.sess.Do(ctx, http.MethodPost, "/order/cancelorder", "",
		tradovatewire.CancelOrderRequest{OrderID: broker, IsAutomated: true}, &res), true)
	if err != nil || res.CommandID == 0 {
		p.log.Error("tradovate: an entry placed without its exits could not be cancelled")
		return fmt.Errorf("tradovate: the entry was placed without its exits and could not be cancelled: %w", bridge.ErrOutcomeUnknown)
	}
	_, _ = p.afterWrite(ctx, broker, func(o protocol.Order) bool { return protocol.TerminalOrderState(o.OrderState) })
	return reject(reasonExitsDropped)
}
