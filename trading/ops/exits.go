package ops

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// Orders placed with their exits (protocol.Exits), relative prices
// (LimitOffset, StopOffset) and a cancel-after. The operations check them
// before anything reaches the platform, resolve relative prices against the
// instrument's last price, place the entry, and hand it to the
// EntryWatcher (the exits engine, trading/engine/exits), which records it
// before the operation returns and places the exits as the entry fills.

// Entry is an order placed with exits or a cancel-after, as the operations
// hand it to the EntryWatcher.
type Entry struct {
	// Account and Instrument (the full contract name) hold the entry.
	Account    string `json:"account"`
	Instrument string `json:"instrument"`
	// OrderID is the entry's id as the platform first reported it.
	OrderID string `json:"orderId"`
	// Action is the entry's side (Buy or Sell); its exits are on the
	// other side.
	Action string `json:"action"`
	// Quantity is the entry's quantity.
	Quantity int `json:"quantity"`
	// Exits are placed once the entry fills; nil for none.
	Exits *protocol.Exits `json:"exits,omitempty"`
	// CancelAt is when what is left of the entry is cancelled (the
	// operations' clock); zero for never.
	CancelAt time.Time `json:"cancelAt,omitzero"`
	// TickSize and PointValue are the instrument's, for the exits'
	// prices.
	TickSize   float64 `json:"tickSize"`
	PointValue float64 `json:"pointValue"`
	// StrategyTag is the entry's strategy tag; its exits carry it.
	StrategyTag string `json:"strategyTag,omitempty"`
}

// EntryWatcher follows the entries placed with exits or a cancel-after
// (SetEntryWatcher). WatchEntry must record e durably before it returns
// (an operation returns only once its entry is followed) and must not
// block on the platform: it runs while the operation holds the
// instrument's lock.
type EntryWatcher interface {
	WatchEntry(e Entry) error
}

// SetEntryWatcher makes w the follower of the entries placed with exits
// or a cancel-after; nil refuses such orders (not_supported). The stack
// sets it once, before serving calls.
func (o *Ops) SetEntryWatcher(w EntryWatcher) {
	if w == nil {
		o.watcher.Store(nil)
		return
	}
	o.watcher.Store(&w)
}

// watcherHolder holds the EntryWatcher of an Ops.
type watcherHolder = atomic.Pointer[EntryWatcher]

// maxOffset bounds a PriceOffset's value in any unit.
const maxOffset = 1e6

// checkOffset checks a relative price. signed allows a value of any sign
// (an entry's price above or below the last price); otherwise the value is
// a distance, above 0.
func checkOffset(name string, off *protocol.PriceOffset, signed bool) error {
	v := off.Value
	if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > maxOffset {
		return invalid(name + ".value must be a finite number")
	}
	if !signed && v <= 0 {
		return invalid(name + ".value must be above 0: it is a distance from the entry's fill price")
	}
	unit, ok := normalizeUnit(off.Unit)
	if !ok {
		return invalid(name + ".unit must be one of " + strings.Join(protocol.OffsetUnits, ", "))
	}
	off.Unit = unit
	return nil
}

// normalizeUnit matches an offset's unit in any casing.
func normalizeUnit(u string) (string, bool) {
	for _, v := range protocol.OffsetUnits {
		if strings.EqualFold(strings.TrimSpace(u), v) {
			return v, true
		}
	}
	return "", false
}

// checkExitPrice checks one exit's price: exactly one of Price and Offset.
func checkExitPrice(name string, p *protocol.ExitPrice) error {
	switch {
	case p.Price == nil && p.Offset == nil:
		return missing(name + ".price or " + name + ".offset")
	case p.Price != nil && p.Offset != nil:
		return invalid(name + " takes a price or an offset, not both")
	case p.Price != nil:
		return positive(name+".price", *p.Price)
	}
	return checkOffset(name+".offset", p.Offset, false)
}

// exitLegs names the legs of Exits in the order they are checked.
func exitLegs(e *protocol.Exits) []struct {
	name string
	p    *protocol.ExitPrice
} {
	return []struct {
		name string
		p    *protocol.ExitPrice
	}{{"exits.takeProfit", e.TakeProfit}, {"exits.stopLoss", e.StopLoss},
		{"exits.stopLossLimit", e.StopLossLimit}, {"exits.stopLossStop", e.StopLossStop}}
}

// checkExits checks PlaceOrder's exits, relative prices and cancel-after
// without asking the platform. req is the entry as checkOrder made it.
func checkExits(a protocol.PlaceOrderArgs, req bridge.OrderRequest) error {
	if e := a.Exits; e != nil {
		if e.TakeProfit == nil && e.StopLoss == nil && e.StopLossLimit == nil {
			return missing("exits.takeProfit or exits.stopLoss or exits.stopLossLimit")
		}
		switch {
		case e.StopLoss != nil && e.StopLossLimit != nil:
			return invalid("exits take stopLoss (a stop-market order) or stopLossLimit (a stop-limit order), not both")
		case e.StopLossStop != nil && e.StopLossLimit == nil:
			return invalid("exits.stopLossStop is the trigger of stopLossLimit and needs it")
		case strings.TrimSpace(a.Strategy) != "":
			return invalid("exits cannot be combined with an ATM template (strategy): the template places its own exits")
		case a.TargetQuantity != nil:
			return invalid("exits cannot be combined with targetQuantity")
		}
		for _, l := range exitLegs(e) {
			if l.p != nil {
				if err := checkExitPrice(l.name, l.p); err != nil {
					return err
				}
			}
		}
		// Absolute prices on the wrong sides of each other can never
		// both be right for the entry's direction.
		dir := float64(side(req.Action))
		if tp := e.TakeProfit; tp != nil && tp.Price != nil {
			for _, sl := range []*protocol.ExitPrice{e.StopLoss, e.StopLossLimit, e.StopLossStop} {
				if sl != nil && sl.Price != nil && dir*(*tp.Price-*sl.Price) <= 0 {
					return invalid("exits.takeProfit must be on the profit side of the stop loss for the entry's direction")
				}
			}
		}
	}
	if a.LimitOffset != nil {
		switch {
		case a.LimitPrice != nil:
			return invalid("send limitPrice or limitOffset, not both")
		case req.OrderType != protocol.OrderTypeLimit && req.OrderType != protocol.OrderTypeStopLimit:
			return invalid("limitOffset applies only to Limit and StopLimit orders")
		}
		if err := checkOffset("limitOffset", a.LimitOffset, true); err != nil {
			return err
		}
	}
	if a.StopOffset != nil {
		switch {
		case a.StopPrice != nil:
			return invalid("send stopPrice or stopOffset, not both")
		case req.OrderType != protocol.OrderTypeStopMarket && req.OrderType != protocol.OrderTypeStopLimit:
			return invalid("stopOffset applies only to StopMarket and StopLimit orders")
		}
		if err := checkOffset("stopOffset", a.StopOffset, true); err != nil {
			return err
		}
	}
	if s := a.CancelAfterSeconds; s != nil {
		if *s < protocol.MinCancelAfterSeconds || *s > protocol.MaxCancelAfterSeconds {
			return invalid(fmt.Sprintf("cancelAfterSeconds must be between %d and %d", protocol.MinCancelAfterSeconds, protocol.MaxCancelAfterSeconds))
		}
		switch req.OrderType {
		case protocol.OrderTypeLimit, protocol.OrderTypeStopLimit, protocol.OrderTypeStopMarket:
		default:
			return invalid("cancelAfterSeconds applies only to Limit, StopLimit and StopMarket orders")
		}
	}
	return nil
}

// followed reports whether a's entry is handed to the EntryWatcher.
func followed(a protocol.PlaceOrderArgs) bool {
	return a.Exits != nil || a.CancelAfterSeconds != nil
}

// settleExits finishes the checks of a's exits and relative prices that
// need the platform: absolute exit prices on the tick grid, and relative
// entry prices resolved against the instrument's last price into req.
func (o *Ops) settleExits(ctx context.Context, a protocol.PlaceOrderArgs, req *bridge.OrderRequest, info protocol.InstrumentInfo) error {
	if followed(a) && o.watcher.Load() == nil && !(o.brackets(a) && a.CancelAfterSeconds == nil) {
		return protocol.NewError(protocol.CodeNotSupported, "exits and cancelAfterSeconds need the trading engines, which these operations run without; nothing was placed")
	}
	if e := a.Exits; e != nil {
		for _, l := range exitLegs(e) {
			if l.p != nil && l.p.Price != nil {
				if err := onTick(l.name+".price", *l.p.Price, info); err != nil {
					return err
				}
			}
		}
	}
	if a.LimitOffset == nil && a.StopOffset == nil {
		return nil
	}
	q, err := o.p.Quote(ctx, info.Instrument)
	if err != nil {
		return wireError(err)
	}
	if q.Last <= 0 || math.IsNaN(q.Last) || math.IsInf(q.Last, 0) {
		return invalid("limitOffset and stopOffset need the instrument's last price, which the platform does not have now; send limitPrice or stopPrice instead; nothing was placed")
	}
	for _, r := range []struct {
		name string
		off  *protocol.PriceOffset
		dst  *float64
	}{{"limitOffset", a.LimitOffset, &req.LimitPrice}, {"stopOffset", a.StopOffset, &req.StopPrice}} {
		if r.off == nil {
			continue
		}
		p := OffsetPrice(q.Last, *r.off, 1, info.TickSize, info.PointValue)
		if err := positive(r.name+" (the price it names)", p); err != nil {
			return err
		}
		*r.dst = p
	}
	return nil
}

// OffsetPrice returns the price off names from ref in direction dir (+1
// above, -1 below; a negative Value turns it), rounded to the nearest
// tick: ticks of tickSize, points, a percent of ref, or dollars of one
// contract (Value / pointValue points).
func OffsetPrice(ref float64, off protocol.PriceOffset, dir int, tickSize, pointValue float64) float64 {
	var points float64
	switch off.Unit {
	case protocol.OffsetTicks:
		points = off.Value * tickSize
	case protocol.OffsetPercent:
		points = ref * off.Value / 100
	case protocol.OffsetDollars:
		if pointValue > 0 {
			points = off.Value / pointValue
		}
	default: // points
		points = off.Value
	}
	return RoundToTick(ref+float64(dir)*points, tickSize)
}

// RoundToTick rounds p to the nearest multiple of tick (p itself when
// tick is not positive), without the binary fractions a multiplication
// leaves (5012.250000000001).
func RoundToTick(p, tick float64) float64 {
	if tick <= 0 {
		return p
	}
	r := math.Round(p/tick) * tick
	return math.Round(r*1e9) / 1e9
}

// ExitOrders returns the exit orders of e for qty contracts of an entry
// whose average fill price is fill, and the prices they name: a take
// profit (Limit) and a stop loss (StopMarket, or StopLimit), Gtc, on the
// other side, in the OCO group oco. It fails when a price it computes is
// not positive.
func ExitOrders(e Entry, fill float64, qty int, oco string) ([]bridge.OrderRequest, ExitPrices, error) {
	var prices ExitPrices
	if e.Exits == nil {
		return nil, prices, nil
	}
	dir := side(e.Action)
	price := func(p *protocol.ExitPrice, profit bool) (float64, error) {
		if p.Price != nil {
			return *p.Price, nil
		}
		d := -dir // a stop loss is on the losing side of the fill
		if profit {
			d = dir
		}
		v := OffsetPrice(fill, *p.Offset, d, e.TickSize, e.PointValue)
		if v <= 0 || math.IsNaN(v) {
			return 0, invalid("an exit's offset puts its price at or below zero")
		}
		return v, nil
	}
	base := bridge.OrderRequest{Account: e.Account, Instrument: e.Instrument, Action: actionFor(-dir),
		Quantity: qty, TimeInForce: protocol.TimeInForceGtc, Oco: oco, StrategyTag: e.StrategyTag}
	var legs []bridge.OrderRequest
	x := e.Exits
	switch {
	case x.StopLoss != nil:
		p, err := price(x.StopLoss, false)
		if err != nil {
			return nil, prices, err
		}
		prices.StopLoss = &p
		leg := base
		leg.OrderType, leg.StopPrice, leg.Name = protocol.OrderTypeStopMarket, p, "Stop loss"
		legs = append(legs, leg)
	case x.StopLossLimit != nil:
		lim, err := price(x.StopLossLimit, false)
		if err != nil {
			return nil, prices, err
		}
		stop := lim
		if x.StopLossStop != nil {
			if stop, err = price(x.StopLossStop, false); err != nil {
				return nil, prices, err
			}
		}
		prices.StopLossLimit, prices.StopLossStop = &lim, &stop
		leg := base
		leg.OrderType, leg.LimitPrice, leg.StopPrice, leg.Name = protocol.OrderTypeStopLimit, lim, stop, "Stop loss"
		legs = append(legs, leg)
	}
	if x.TakeProfit != nil {
		p, err := price(x.TakeProfit, true)
		if err != nil {
			return nil, prices, err
		}
		prices.TakeProfit = &p
		leg := base
		leg.OrderType, leg.LimitPrice, leg.Name = protocol.OrderTypeLimit, p, "Profit target"
		legs = append(legs, leg)
	}
	if len(legs) == 1 {
		legs[0].Oco = ""
	}
	return legs, prices, nil
}

// ExitPrices are the prices of an entry's exit orders, those placed.
type ExitPrices struct {
	TakeProfit    *float64 `json:"takeProfit,omitempty"`
	StopLoss      *float64 `json:"stopLoss,omitempty"`
	StopLossLimit *float64 `json:"stopLossLimit,omitempty"`
	StopLossStop  *float64 `json:"stopLossStop,omitempty"`
}

// brackets reports whether a's entry and exits go to the platform in one
// request (bridge.BracketSubmitter): the platform implements it and every
// exit price is fixed (an offset from the fill needs the fill).
func (o *Ops) brackets(a protocol.PlaceOrderArgs) bool {
	if _, ok := o.p.(bridge.BracketSubmitter); !ok || a.Exits == nil {
		return false
	}
	for _, l := range exitLegs(a.Exits) {
		if l.p != nil && l.p.Price == nil {
			return false
		}
	}
	return true
}

// submitBracket places req, the entry of a, with its exits in one
// request (bridge.BracketSubmitter): the platform's broker sends the
// exits when the entry fills, so nothing of the relay stands between a
// fill and its protection. A cancel-after is still handed to the
// EntryWatcher, without the exits.
func (o *Ops) submitBracket(ctx context.Context, a protocol.PlaceOrderArgs, req bridge.OrderRequest, info protocol.InstrumentInfo, res protocol.PlaceResult) (protocol.PlaceResult, error) {
	e := Entry{Account: req.Account, Instrument: req.Instrument, Action: req.Action, Quantity: req.Quantity,
		Exits: a.Exits, TickSize: info.TickSize, PointValue: info.PointValue, StrategyTag: req.StrategyTag}
	legs, _, err := ExitOrders(e, 0, req.Quantity, o.opts.NewOcoID())
	if err != nil {
		return res, err
	}
	placed, err := o.p.(bridge.BracketSubmitter).SubmitBracket(ctx, req, legs...)
	if err != nil {
		return res, wireError(err)
	}
	res.OrderID, res.Order = placed[0].OrderID, &placed[0]
	if a.CancelAfterSeconds == nil {
		return res, nil
	}
	a.Exits = nil
	return res, o.follow(ctx, a, req, info, placed[0])
}

// follow hands the entry just placed to the EntryWatcher. When it cannot
// record it, the entry is cancelled: an entry must not stand without the
// exits asked for.
func (o *Ops) follow(ctx context.Context, a protocol.PlaceOrderArgs, req bridge.OrderRequest, info protocol.InstrumentInfo, ord protocol.Order) error {
	wp := o.watcher.Load()
	if wp == nil || !followed(a) {
		return nil
	}
	e := Entry{Account: req.Account, Instrument: req.Instrument, OrderID: ord.OrderID, Action: req.Action,
		Quantity: req.Quantity, Exits: a.Exits, TickSize: info.TickSize, PointValue: info.PointValue,
		StrategyTag: req.StrategyTag}
	if s := a.CancelAfterSeconds; s != nil {
		e.CancelAt = o.opts.Now().Add(time.Duration(*s) * time.Second)
	}
	if err := (*wp).WatchEntry(e); err != nil {
		o.log.Error("recording an entry's exits failed; the entry is cancelled", zap.Error(err))
		if _, cerr := o.p.CancelOrder(ctx, req.Account, ord.OrderID); cerr != nil {
			o.log.Error("cancelling the entry whose exits were not recorded failed", zap.Error(cerr))
			return protocol.NewError(protocol.CodeInternal, "the order was placed, but its exits could not be recorded and it could not be cancelled; check the account's orders and position")
		}
		return protocol.NewError(protocol.CodeInternal, "the order was placed, but its exits could not be recorded, so it was cancelled; check the account's position in case it filled first")
	}
	return nil
}

// PlaceExits places the exit legs of an entry for the exits engine: one
// order, or two as one OCO pair (in one request on a platform that
// implements bridge.PairSubmitter). They pass the trading gate as closing
// orders: only a rule refusing every order (Verdict.Any) refuses them,
// for the source ctx carries. Both legs or neither stand: a leg placed
// before the other failed is cancelled. It takes the instrument's lock;
// every leg names the same account and instrument (the full contract
// name).
func (o *Ops) PlaceExits(ctx context.Context, legs []bridge.OrderRequest) ([]protocol.Order, error) {
	if len(legs) == 0 || len(legs) > 2 {
		return nil, invalid("exits are one or two orders")
	}
	k := key{legs[0].Account, legs[0].Instrument}
	unlock, err := o.locks.lock(ctx, k)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := o.admit(ctx, k, 0, 0); err != nil {
		return nil, err
	}
	placed, err := o.submitLegs(ctx, k, legs)
	if err != nil {
		return nil, wireError(err)
	}
	return placed, nil
}

// submitLegs places one or two orders of one OCO group, both or neither.
// The caller holds k's lock.
func (o *Ops) submitLegs(ctx context.Context, k key, legs []bridge.OrderRequest) ([]protocol.Order, error) {
	pair, isPair := o.p.(bridge.PairSubmitter)
	if isPair && len(legs) == 2 {
		// The platform joins orders to an OCO group only when they are
		// placed together: both legs in one request, both or neither.
		first, second, err := pair.SubmitOCO(ctx, legs[0], legs[1])
		if err != nil {
			return nil, err
		}
		return []protocol.Order{first, second}, nil
	}
	var placed []protocol.Order
	for _, leg := range legs {
		if isPair && len(legs) == 1 {
			// Such a platform joins no order to a group afterwards: a
			// lone leg is a plain order.
			leg.Oco = ""
		}
		ord, err := o.p.SubmitOrder(ctx, leg)
		if err != nil {
			// Never leave half a pair: take back the legs placed.
			if _, cerr := o.cancel(ctx, k.account, placed, func(protocol.Order) bool { return true }); cerr != nil {
				o.log.Error("taking back an exit leg failed")
			}
			return nil, err
		}
		placed = append(placed, ord)
	}
	return placed, nil
}
