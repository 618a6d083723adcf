package ati

import (
	"context"
	"math"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// atmStrategySuffix makes the STRATEGY ID of an ATM entry from its order
// id.
const atmStrategySuffix = "-atm"

// rejectedReason is the reason of a RejectError for an order NinjaTrader
// rejected: the ATI tells no more.
const rejectedReason = "NinjaTrader rejected the order (the ATI gives no reason; see NinjaTrader's log)"

// SubmitOrder places an order with a PLACE instruction and returns it as
// NinjaTrader's order state file shows it once settled: Filled (a market
// order), or Accepted, Working, PartFilled or Filled (the others).
// req.AtmTemplate becomes the STRATEGY field (with STRATEGY ID "<order
// id>-atm"); req.OrderID the ORDER ID, generated ("tb" and 16 hex digits)
// when empty. Name and StrategyTag are kept in the returned record only:
// the ATI has no field for them. Instruments must be contracts ("ES
// 12-26"): others are a *bridge.InstrumentError (InstrumentMalformed).
//
// When NinjaTrader does not read the file in time (Options.WaitTimeout,
// or ctx's end), the file is withdrawn and the error is ErrNotPickedUp:
// nothing was placed. When it read it but wrote no state in time, the
// order is returned as it was last seen (Submitted when nothing was), with
// a warning logged: it must not be placed again. An order NinjaTrader
// rejects is a RejectError, and is not listed afterwards.
func (f *Files) SubmitOrder(ctx context.Context, req bridge.OrderRequest) (protocol.Order, error) {
	if err := ctx.Err(); err != nil {
		return protocol.Order{}, err
	}
	cmd, rec, err := f.placeCommand(req)
	if err != nil {
		return protocol.Order{}, err
	}
	if err := f.scan(); err != nil { // a fresh view for the duplicate check
		return protocol.Order{}, err
	}
	f.mu.Lock()
	if f.life.Stopped() {
		f.mu.Unlock()
		return protocol.Order{}, ErrClosed
	}
	pk := posKey{rec.Account, rec.Instrument}
	posBefore, hadPos := f.positions[pk]
	if rec.OrderID == "" {
		if rec.OrderID, err = f.newOrderID(); err != nil {
			f.mu.Unlock()
			return protocol.Order{}, err
		}
	}
	key := strings.ToLower(rec.OrderID)
	if _, dup := f.used[key]; dup || f.hasStateFile(rec.Account, rec.OrderID) {
		f.mu.Unlock()
		return protocol.Order{}, reject("order id already used")
	}
	f.used[key] = struct{}{}
	cmd.OrderID = rec.OrderID
	if cmd.Strategy != "" {
		cmd.StrategyID = rec.OrderID + atmStrategySuffix
	}
	now := f.now()
	rec.Time, rec.Epoch = protocol.FormatTime(now), now.UnixMilli()
	rec.OrderState = protocol.OrderStateSubmitted
	f.orderSeq++
	o := &order{rec: rec, seq: f.orderSeq}
	// Registered before the file exists, so no scan misses its state file;
	// listed only once handed.
	f.orders[rec.OrderID] = o
	f.mu.Unlock()

	path, err := f.hand(cmd)
	if err != nil {
		f.forget(o, true)
		return protocol.Order{}, err
	}
	market := rec.OrderType == protocol.OrderTypeMarket
	res := f.await(ctx, path, waiter{
		done: func() bool {
			s := o.rec.OrderState
			return o.seen && (protocol.TerminalOrderState(s) || !market && settled(s))
		},
		evidence: func() bool { return o.seen },
		handed: func() {
			if !o.handed {
				o.handed = true
				f.emitOrder(o)
			}
		},
	})
	f.mu.Lock()
	out, seen := o.rec, o.seen
	f.mu.Unlock()
	switch {
	case res == waitWithdrawn:
		f.forget(o, true)
		f.log.Warn("NinjaTrader did not read the order instruction in time; withdrawn unread",
			zap.String("orderId", out.OrderID))
		return protocol.Order{}, ErrNotPickedUp
	case out.OrderState == protocol.OrderStateRejected:
		f.forget(o, false)
		return protocol.Order{}, reject(rejectedReason)
	case res == waitPending && !seen:
		f.log.Warn("NinjaTrader read the order instruction but wrote no order state in time; "+
			"the order is reported Submitted and must not be placed again",
			zap.String("orderId", out.OrderID), zap.Duration("waited", f.waitTimeout))
	case res == waitPending:
		f.log.Info("order not settled in time; reported as last seen",
			zap.String("orderId", out.OrderID), zap.String("state", out.OrderState))
	}
	if out.Filled > 0 {
		f.awaitPosition(ctx, pk, posBefore.st, hadPos)
		f.mu.Lock()
		out = o.rec
		f.mu.Unlock()
	}
	return out, nil
}

// positionGrace bounds the wait, after a fill, for NinjaTrader to rewrite
// the position file, which it may write after the order's state file.
const positionGrace = time.Second

// awaitPosition waits, at most positionGrace (and Options.WaitTimeout),
// for the position file k to be rewritten since it had stamp before (or
// written, when it did not exist), so that a caller reading the positions
// after a fill sees it.
func (f *Files) awaitPosition(ctx context.Context, k posKey, before stamp, had bool) {
	ok := f.waitFor(ctx, min(positionGrace, f.waitTimeout), func() bool {
		e, ok := f.positions[k]
		return ok && (!had || !e.st.equal(before))
	})
	if !ok {
		f.log.Info("position file not rewritten in time after a fill",
			zap.String("account", k.account), zap.String("instrument", k.instrument))
	}
}

// waitFor reads the outgoing folder until cond, run with f.mu held, holds
// (true) or until d passes, ctx ends or Files closes (false).
func (f *Files) waitFor(ctx context.Context, d time.Duration, cond func() bool) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	tick := time.NewTicker(f.poll)
	defer tick.Stop()
	for {
		if err := f.scan(); err != nil {
			f.log.Debug("scan while waiting", zap.Error(err))
		}
		f.mu.Lock()
		ok := cond()
		changed := f.changed
		f.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
			return false
		case <-f.life.Done():
			return false
		case <-changed:
		case <-tick.C:
		}
	}
}

// settled reports whether an order in state s has reached the market, or
// further: the state SubmitOrder returns.
func settled(s string) bool {
	switch s {
	case protocol.OrderStateAccepted, protocol.OrderStateWorking, protocol.OrderStateTriggerPending,
		protocol.OrderStatePartFilled:
		return true
	}
	return protocol.TerminalOrderState(s)
}

// forget drops an order that is not NinjaTrader's (withdrawn, never
// written) or that it rejected. freeID releases its id for reuse: only
// when NinjaTrader never read it.
func (f *Files) forget(o *order, freeID bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.orders[o.rec.OrderID] == o {
		delete(f.orders, o.rec.OrderID)
	}
	if freeID {
		delete(f.used, strings.ToLower(o.rec.OrderID))
	}
}

// placeCommand validates req into a PLACE command and the record of the
// order. The order id is left empty when req has none.
func (f *Files) placeCommand(req bridge.OrderRequest) (command, protocol.Order, error) {
	if req.Account == "" {
		return command{}, protocol.Order{}, &bridge.RequestError{Reason: "account is required"}
	}
	instrument, err := contract(req.Instrument)
	if err != nil {
		return command{}, protocol.Order{}, err
	}
	if req.Quantity < 1 {
		return command{}, protocol.Order{}, reject("quantity must be at least 1")
	}
	action, ok := protocol.NormalizeAction(req.Action)
	if !ok {
		return command{}, protocol.Order{}, reject("action must be Buy or Sell")
	}
	typ, ok := protocol.NormalizeOrderType(req.OrderType)
	if !ok || protocol.TrailingOrderType(typ) {
		// The ATI's PLACE command has no trailing types.
		return command{}, protocol.Order{}, reject("order type must be Market, Limit, StopMarket or StopLimit")
	}
	tif := protocol.TimeInForceDay
	if req.TimeInForce != "" {
		if tif, ok = protocol.NormalizeTimeInForce(req.TimeInForce); !ok {
			return command{}, protocol.Order{}, reject("time in force must be Day or Gtc")
		}
	}
	var limit, stop float64
	if hasLimit(typ) {
		if !positive(req.LimitPrice) {
			return command{}, protocol.Order{}, reject("limit price must be positive")
		}
		limit = req.LimitPrice
	}
	if hasStop(typ) {
		if !positive(req.StopPrice) {
			return command{}, protocol.Order{}, reject("stop price must be positive")
		}
		stop = req.StopPrice
	}
	if req.OrderID != "" {
		if err := checkOrderID(req.OrderID); err != nil {
			return command{}, protocol.Order{}, err
		}
	}
	cmd := command{
		Command:    cmdPlace,
		Account:    req.Account,
		Instrument: instrument,
		Action:     atiAction[action],
		Quantity:   req.Quantity,
		OrderType:  atiOrderType[typ],
		LimitPrice: limit,
		StopPrice:  stop,
		TIF:        atiTIF[tif],
		OcoID:      req.Oco,
		OrderID:    req.OrderID,
		Strategy:   req.AtmTemplate,
	}
	if _, err := cmd.encode(); err != nil {
		return command{}, protocol.Order{}, err
	}
	rec := protocol.Order{
		OrderID:     req.OrderID,
		Account:     req.Account,
		Instrument:  instrument,
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
	return cmd, rec, nil
}

func hasLimit(typ string) bool {
	return typ == protocol.OrderTypeLimit || typ == protocol.OrderTypeStopLimit
}

func hasStop(typ string) bool {
	return typ == protocol.OrderTypeStopMarket || typ == protocol.OrderTypeStopLimit
}

func positive(p float64) bool { return p > 0 && !math.IsInf(p, 1) }

// ownOrder returns the order of account with id, placed by this process,
// with f.mu held.
func (f *Files) ownOrder(account, id string) (*order, error) {
	o := f.orders[id]
	if o == nil || !o.handed {
		return nil, errUnknownOrder
	}
	if o.rec.Account != account {
		return nil, errUnknownOrder
	}
	return o, nil
}

// terminalReason is why a terminal order cannot be cancelled or changed.
func terminalReason(state string) string {
	switch state {
	case protocol.OrderStateFilled:
		return "order is already filled"
	case protocol.OrderStateCancelled:
		return "order is already cancelled"
	}
	return "order is already rejected"
}

// CancelOrder cancels an order this process placed, with a CANCEL
// instruction, and returns it once its state file shows it terminal
// (Cancelled, or Filled if it filled first). Cancelling a terminal order
// is a RejectError. An order this process did not place matches both
// bridge.ErrOrderNotFound and ErrNeedsAddon: the ATI cannot describe it.
// When NinjaTrader does not read the file in time it is withdrawn
// (ErrNotPickedUp); when it read it but wrote no state in time, the order
// is returned CancelPending (or as last seen) with a warning logged.
func (f *Files) CancelOrder(ctx context.Context, account, orderID string) (protocol.Order, error) {
	if err := ctx.Err(); err != nil {
		return protocol.Order{}, err
	}
	if err := f.scan(); err != nil {
		return protocol.Order{}, err
	}
	f.mu.Lock()
	o, err := f.ownOrder(account, orderID)
	if err != nil {
		f.mu.Unlock()
		return protocol.Order{}, err
	}
	if protocol.TerminalOrderState(o.rec.OrderState) {
		state := o.rec.OrderState
		f.mu.Unlock()
		return protocol.Order{}, reject(terminalReason(state))
	}
	base := o.version
	fill := f.fillMark(o)
	f.mu.Unlock()

	path, err := f.hand(command{Command: cmdCancel, OrderID: orderID})
	if err != nil {
		return protocol.Order{}, err
	}
	res := f.await(ctx, path, waiter{
		done:     func() bool { return o.version > base && protocol.TerminalOrderState(o.rec.OrderState) },
		evidence: func() bool { return o.version > base },
		handed: func() {
			if o.version == base && !protocol.TerminalOrderState(o.rec.OrderState) {
				o.rec.OrderState = protocol.OrderStateCancelPending
				f.emitOrder(o)
			}
		},
	})
	return f.finish(ctx, o, res, "cancel", fill)
}

// ChangeOrder changes the quantity, limit price or stop price of a working
// order this process placed, with a CHANGE instruction (zero fields keep
// their value, as in the ATI), and returns it once NinjaTrader rewrote its
// state file with a settled state. The ATI does not report prices or
// quantities: the returned order holds the values sent. Errors are those
// of CancelOrder; a change to a value the order type does not have, or a
// quantity not above the filled quantity, is a RejectError. A change that
// changes nothing returns the order without writing anything.
func (f *Files) ChangeOrder(ctx context.Context, req bridge.ChangeRequest) (protocol.Order, error) {
	if err := ctx.Err(); err != nil {
		return protocol.Order{}, err
	}
	if err := f.scan(); err != nil {
		return protocol.Order{}, err
	}
	f.mu.Lock()
	o, err := f.ownOrder(req.Account, req.OrderID)
	if err != nil {
		f.mu.Unlock()
		return protocol.Order{}, err
	}
	rec := o.rec
	base := o.version
	fill := f.fillMark(o)
	f.mu.Unlock()

	if protocol.TerminalOrderState(rec.OrderState) {
		return protocol.Order{}, reject(terminalReason(rec.OrderState))
	}
	cmd := command{Command: cmdChange, OrderID: rec.OrderID}
	qty, limit, stop := rec.Quantity, rec.LimitPrice, rec.StopPrice
	switch {
	case req.Quantity < 0:
		return protocol.Order{}, reject("quantity must be at least 1")
	case req.Quantity > 0 && req.Quantity <= rec.Filled:
		return protocol.Order{}, reject("quantity must be more than the filled quantity")
	case req.Quantity > 0:
		qty = req.Quantity
	}
	if req.LimitPrice != 0 {
		if !hasLimit(rec.OrderType) {
			return protocol.Order{}, reject("order type has no limit price")
		}
		if !positive(req.LimitPrice) {
			return protocol.Order{}, reject("limit price must be positive")
		}
		limit = req.LimitPrice
	}
	if req.StopPrice != 0 {
		if !hasStop(rec.OrderType) {
			return protocol.Order{}, reject("order type has no stop price")
		}
		if !positive(req.StopPrice) {
			return protocol.Order{}, reject("stop price must be positive")
		}
		stop = req.StopPrice
	}
	if qty == rec.Quantity && limit == rec.LimitPrice && stop == rec.StopPrice {
		return rec, nil
	}
	if qty != rec.Quantity {
		cmd.Quantity = qty
	}
	if limit != rec.LimitPrice {
		cmd.LimitPrice = limit
	}
	if stop != rec.StopPrice {
		cmd.StopPrice = stop
	}
	path, err := f.hand(cmd)
	if err != nil {
		return protocol.Order{}, err
	}
	res := f.await(ctx, path, waiter{
		done: func() bool { return o.version > base && settled(o.rec.OrderState) },
		evidence: func() bool {
			return o.version > base
		},
		handed: func() {
			o.rec.Quantity, o.rec.LimitPrice, o.rec.StopPrice = qty, limit, stop
			if o.version == base && !protocol.TerminalOrderState(o.rec.OrderState) {
				o.rec.OrderState = protocol.OrderStateChangePending
			}
			f.emitOrder(o)
		},
	})
	return f.finish(ctx, o, res, "change", fill)
}

// fillState is an order's filled quantity and its position file's stamp
// before a command.
type fillState struct {
	filled int
	k      posKey
	st     stamp
	had    bool
}

// fillMark records o's fillState, with f.mu held.
func (f *Files) fillMark(o *order) fillState {
	k := posKey{o.rec.Account, o.rec.Instrument}
	e, had := f.positions[k]
	return fillState{filled: o.rec.Filled, k: k, st: e.st, had: had}
}

// finish turns the end of a wait for a cancel or a change into the
// method's result. When the order filled meanwhile, it waits for the
// position file too (see awaitPosition).
func (f *Files) finish(ctx context.Context, o *order, res waitResult, what string, fill fillState) (protocol.Order, error) {
	f.mu.Lock()
	out := o.rec
	f.mu.Unlock()
	if res != waitWithdrawn && out.Filled > fill.filled {
		f.awaitPosition(ctx, fill.k, fill.st, fill.had)
		f.mu.Lock()
		out = o.rec
		f.mu.Unlock()
	}
	switch res {
	case waitWithdrawn:
		f.log.Warn("NinjaTrader did not read the "+what+" instruction in time; withdrawn unread",
			zap.String("orderId", out.OrderID))
		return protocol.Order{}, ErrNotPickedUp
	case waitPending:
		f.log.Warn("NinjaTrader read the "+what+" instruction but reported no outcome in time; "+
			"the order is reported as last seen", zap.String("orderId", out.OrderID),
			zap.String("state", out.OrderState))
	}
	return out, nil
}

// Flatten closes the account's position in instrument (a contract, "ES
// 12-26") with a CLOSEPOSITION instruction, which also cancels the
// account's working orders there, and waits until the position file shows
// the position flat, when one was open. Nothing to do is not an error. An
// instruction NinjaTrader does not read in time is withdrawn
// (ErrNotPickedUp); an outcome not seen in time is logged, not an error.
func (f *Files) Flatten(ctx context.Context, account, instrument string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if account == "" {
		return &bridge.RequestError{Reason: "account is required"}
	}
	name, err := contract(instrument)
	if err != nil {
		return err
	}
	cmd := command{Command: cmdClosePosition, Account: account, Instrument: name}
	if _, err := cmd.encode(); err != nil {
		return err
	}
	if err := f.scan(); err != nil {
		return err
	}
	k := posKey{account, name}
	f.mu.Lock()
	before, open := f.positions[k]
	open = open && before.pos.MarketPosition != protocol.MarketPositionFlat
	f.mu.Unlock()

	path, err := f.hand(cmd)
	if err != nil {
		return err
	}
	res := f.await(ctx, path, waiter{
		done: func() bool {
			e, ok := f.positions[k]
			return !open || !ok || e.pos.MarketPosition == protocol.MarketPositionFlat
		},
		evidence: func() bool {
			e, ok := f.positions[k]
			return open && ok && !e.st.equal(before.st)
		},
	})
	return f.finishAll(res, cmdClosePosition)
}

// CancelAllOrders cancels every working order of every account and
// connection (CANCELALLORDERS), orders not placed by this process
// included. It waits only until NinjaTrader reads the instruction (see
// ErrNotPickedUp).
func (f *Files) CancelAllOrders(ctx context.Context) error {
	return f.global(ctx, cmdCancelAllOrders)
}

// FlattenEverything cancels every working order and closes every position
// of every account and connection (FLATTENEVERYTHING). It waits only until
// NinjaTrader reads the instruction (see ErrNotPickedUp).
func (f *Files) FlattenEverything(ctx context.Context) error {
	return f.global(ctx, cmdFlattenEverything)
}

func (f *Files) global(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	path, err := f.hand(command{Command: name})
	if err != nil {
		return err
	}
	return f.finishAll(f.await(ctx, path, waiter{done: func() bool { return true }}), name)
}

// finishAll turns the end of a wait for an instruction without an order
// into the method's result.
func (f *Files) finishAll(res waitResult, name string) error {
	switch res {
	case waitWithdrawn:
		f.log.Warn("NinjaTrader did not read the instruction in time; withdrawn unread", zap.String("command", name))
		return ErrNotPickedUp
	case waitPending:
		f.log.Warn("NinjaTrader read the instruction but its outcome was not seen in time", zap.String("command", name))
	}
	return nil
}

// Orders lists the orders this process placed in account and NinjaTrader
// read, oldest first, with what their state files tell (state, filled
// quantity, average fill price) and what was sent (the rest). Orders
// placed otherwise are unknown to the ATI.
func (f *Files) Orders(ctx context.Context, account string) ([]protocol.Order, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := f.scan(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	list := make([]*order, 0, len(f.orders))
	for _, o := range f.orders {
		if o.handed && o.rec.Account == account {
			list = append(list, o)
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].seq < list[j].seq })
	out := make([]protocol.Order, len(list))
	for i, o := range list {
		out[i] = o.rec
	}
	return out, nil
}

// Positions lists the account's open positions as the position files tell
// them (market position, quantity, average price; no market price or
// unrealized P&L), by instrument. A position whose file NinjaTrader has
// not written since it started (it empties the folder then) is not known.
func (f *Files) Positions(ctx context.Context, account string) ([]protocol.Position, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := f.scan(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]protocol.Position, 0)
	for k, e := range f.positions {
		if k.account == account && e.pos.MarketPosition != protocol.MarketPositionFlat {
			out = append(out, e.pos)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Instrument < out[j].Instrument })
	return out, nil
}

// Connections lists the connections the connection files tell, by name,
// with status Connected or Disconnected. The ATI does not tell their
// accounts: Accounts is empty.
func (f *Files) Connections(ctx context.Context) ([]protocol.Connection, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := f.scan(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]protocol.Connection, 0, len(f.conns))
	for name, status := range f.conns {
		out = append(out, protocol.Connection{Name: name, Status: status, Accounts: []string{}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
