package copier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// entry is one leader order a copier copied in order mode, with its
// copies: the order map, persisted in the Store.
type entry struct {
	Copier        string `json:"copier"`
	Leader        string `json:"leader"`
	LeaderOrderID string `json:"leaderOrderId"`
	Instrument    string `json:"instrument"`
	// OrderType, Quantity and the prices are the leader order's as last
	// mirrored.
	OrderType  string    `json:"orderType"`
	Quantity   int       `json:"quantity"`
	LimitPrice float64   `json:"limitPrice,omitempty"`
	StopPrice  float64   `json:"stopPrice,omitempty"`
	LeaderDone bool      `json:"leaderDone,omitempty"`
	Copies     []copyRec `json:"copies"`
}

// copyRec is one follower order of an entry.
type copyRec struct {
	Follower   string  `json:"follower"`
	OrderID    string  `json:"orderId"`
	Instrument string  `json:"instrument"`
	Ratio      float64 `json:"ratio"`
	Inverse    bool    `json:"inverse,omitempty"`
	Quantity   int     `json:"quantity"`
	Done       bool    `json:"done,omitempty"`
}

func entryKey(copierID, leaderOrderID string) string { return copierID + "/" + leaderOrderID }

func (en *entry) key() string { return entryKey(en.Copier, en.LeaderOrderID) }

// over reports whether the leader order and all its copies are terminal.
func (en *entry) over() bool {
	if !en.LeaderDone {
		return false
	}
	for _, c := range en.Copies {
		if !c.Done {
			return false
		}
	}
	return true
}

// loadEntries reads the order map.
func (e *Engine) loadEntries() error {
	m, err := e.opts.Store.Load(bucketOrders)
	if err != nil {
		return fmt.Errorf("copier: load order map: %w", err)
	}
	for k, v := range m {
		en := new(entry)
		if err := json.Unmarshal(v, en); err != nil || en.key() != k {
			e.log.Error("unreadable order map entry ignored", zap.String("key", k), zap.Error(err))
			continue
		}
		e.entries[k] = en
		for _, c := range en.Copies {
			e.byCopy[c.OrderID] = en
		}
	}
	return nil
}

// persist writes an entry, or deletes it once it is over. It runs after
// the copies were submitted: their deterministic ids make a copy repeated
// after a crash before the write harmless.
func (e *Engine) persist(en *entry) {
	if en.over() {
		e.mu.Lock()
		delete(e.entries, en.key())
		for _, c := range en.Copies {
			delete(e.byCopy, c.OrderID)
		}
		e.mu.Unlock()
		if err := e.opts.Store.Delete(bucketOrders, en.key()); err != nil {
			e.log.Error("order map entry not deleted", zap.String("copier", en.Copier), zap.Error(err))
		}
		return
	}
	b, err := json.Marshal(en)
	if err == nil {
		err = e.opts.Store.Put(bucketOrders, en.key(), b)
	}
	if err != nil {
		e.log.Error("order map entry not persisted", zap.String("copier", en.Copier),
			zap.String("leaderOrderId", en.LeaderOrderID), zap.Error(err))
	}
}

// onLeaderOrder acts on an update of a leader order (order mode): a new
// order is copied when first seen working or accepted, a copied one has
// its changes and cancellation mirrored.
func (e *Engine) onLeaderOrder(ctx context.Context, r *run, o protocol.Order) {
	now := e.now()
	e.mu.Lock()
	en := e.entries[entryKey(r.cfg.id, o.OrderID)]
	copying := r.copying()
	if en != nil {
		e.mu.Unlock()
		if copying {
			e.mirror(ctx, r, en, o)
		}
		return
	}
	if _, skip := r.skipped[o.OrderID]; skip {
		e.mu.Unlock()
		return
	}
	switch o.OrderState {
	case protocol.OrderStateInitialized, protocol.OrderStateSubmitted,
		protocol.OrderStateCancelled, protocol.OrderStateRejected:
		e.mu.Unlock()
		return
	}
	inst, ok := r.cfg.mapInstrument(o.Instrument)
	if !ok {
		e.mu.Unlock()
		return
	}
	if !copying || e.tooOld(o.Epoch, now) {
		r.skipped[o.OrderID] = now
		e.mu.Unlock()
		return
	}
	e.mu.Unlock()
	e.copyOrder(ctx, r, o, inst, nil)
}

// copyOrder copies a new leader order to every follower and records the
// copies in the order map. existing, when set, holds the followers' orders
// (catching up): a copy already there is taken over, not placed again.
func (e *Engine) copyOrder(ctx context.Context, r *run, o protocol.Order, inst string, existing *followerOrders) {
	cfg := &r.cfg
	orderType := o.OrderType
	if o.OrderState == protocol.OrderStateFilled {
		orderType = protocol.OrderTypeMarket // it filled before the engine saw it work
	}
	en := &entry{Copier: cfg.id, Leader: cfg.leader, LeaderOrderID: o.OrderID, Instrument: o.Instrument,
		OrderType: orderType, Quantity: o.Quantity, LimitPrice: o.LimitPrice, StopPrice: o.StopPrice}
	var reqs []bridge.OrderRequest
	var recs []copyRec
	var have map[string]map[string]protocol.Order
	if existing != nil {
		have = make(map[string]map[string]protocol.Order, len(cfg.followers))
		for _, f := range cfg.followers {
			have[f.account] = existing.get(ctx, f.account)
		}
	}
	states := e.monitorStates(cfg)
	e.mu.Lock()
	if why := e.tandemOK(r, states); why != "" {
		e.refusedAll(r, inst, o.OrderID, o.Quantity, why)
		e.mu.Unlock()
		e.persist(en)
		return
	}
	for _, f := range cfg.followers {
		q := scale(o.Quantity, f.ratio)
		if q == 0 {
			e.roundedToZero(r, f, inst, o.OrderID)
			continue
		}
		id := copyID(cfg.id, "order", o.OrderID, f.account)
		rec := copyRec{Follower: f.account, OrderID: id, Instrument: inst, Ratio: f.ratio, Inverse: f.inverse, Quantity: q}
		if have != nil {
			if fo, ok := have[f.account][id]; ok {
				rec.Done = protocol.TerminalOrderState(fo.OrderState)
				en.Copies = append(en.Copies, rec)
				continue
			}
		}
		p := mapPrices(orderType, o.LimitPrice, o.StopPrice, f.inverse)
		action := o.OrderAction
		if f.inverse {
			action = flip(action)
		}
		oco := ""
		if o.Oco != "" {
			oco = copyID(cfg.id, "oco", o.Oco, f.account)
		}
		reqs = append(reqs, bridge.OrderRequest{Account: f.account, Instrument: inst, Action: action,
			OrderType: p.orderType, Quantity: q, LimitPrice: p.limitPrice, StopPrice: p.stopP,
			TimeInForce: o.TimeInForce, Oco: oco, OrderID: id, Name: o.Name})
		recs = append(recs, rec)
	}
	e.mu.Unlock()

	res := e.submitAll(ctx, reqs)
	if e.afterCopy != nil {
		e.afterCopy()
	}

	e.mu.Lock()
	for i, rs := range res {
		if rs.err != nil {
			e.outcomeOf(r, reqs[i], o.OrderID, rs.err)
			continue
		}
		recs[i].Done = protocol.TerminalOrderState(rs.ord.OrderState)
		en.Copies = append(en.Copies, recs[i])
		e.reportCopy(r, reqs[i], o.OrderID, reqs[i].OrderID, outcomePlaced, "")
	}
	if protocol.TerminalOrderState(o.OrderState) {
		en.LeaderDone = true
	}
	e.entries[en.key()] = en
	for _, c := range en.Copies {
		e.byCopy[c.OrderID] = en
	}
	e.mu.Unlock()
	e.log.Debug("order copied", zap.String("copier", cfg.id), zap.String("leaderOrderId", o.OrderID),
		zap.Int("copies", len(en.Copies)))
	e.persist(en)
}

// mirror brings the copies of en to the leader order o: a cancelled (or
// rejected) leader order cancels its working copies; a change of quantity
// or prices changes them.
func (e *Engine) mirror(ctx context.Context, r *run, en *entry, o protocol.Order) {
	if en.LeaderDone {
		return
	}
	dirty := false
	switch {
	case protocol.TerminalOrderState(o.OrderState):
		en.LeaderDone = true
		dirty = true
		if o.OrderState == protocol.OrderStateFilled {
			break // the copies fill on their own
		}
		for i := range en.Copies {
			c := &en.Copies[i]
			if c.Done {
				continue
			}
			ord, err := e.p.CancelOrder(ctx, c.Follower, c.OrderID)
			switch {
			case err == nil:
				c.Done = protocol.TerminalOrderState(ord.OrderState)
			case errors.Is(err, bridge.ErrOrderNotFound), isReject(err):
				c.Done = true // already over on the follower
			default:
				e.mu.Lock()
				e.outcomeLocked(r, protocol.CopyOutcome{Follower: c.Follower, Instrument: c.Instrument,
					LeaderOrderID: en.LeaderOrderID, Quantity: c.Quantity, Outcome: protocol.CopyFailed,
					Reason: "cancel not mirrored: " + err.Error()})
				e.mu.Unlock()
			}
		}
	case o.Quantity != en.Quantity || o.LimitPrice != en.LimitPrice || o.StopPrice != en.StopPrice:
		for i := range en.Copies {
			c := &en.Copies[i]
			if c.Done {
				continue
			}
			e.changeCopy(ctx, r, en, c, o)
		}
		en.Quantity, en.LimitPrice, en.StopPrice = o.Quantity, o.LimitPrice, o.StopPrice
		dirty = true
	}
	if dirty {
		e.persist(en)
	}
}

// changeCopy mirrors a change of the leader order o on one copy.
func (e *Engine) changeCopy(ctx context.Context, r *run, en *entry, c *copyRec, o protocol.Order) {
	q := scale(o.Quantity, c.Ratio)
	if q == 0 {
		// The new quantity copies as nothing: the copy goes.
		if _, err := e.p.CancelOrder(ctx, c.Follower, c.OrderID); err == nil || isReject(err) ||
			errors.Is(err, bridge.ErrOrderNotFound) {
			c.Done = true
		}
		e.mu.Lock()
		e.roundedToZero(r, follower{account: c.Follower, ratio: c.Ratio}, c.Instrument, en.LeaderOrderID)
		e.mu.Unlock()
		return
	}
	oldP := mapPrices(en.OrderType, en.LimitPrice, en.StopPrice, c.Inverse)
	newP := mapPrices(en.OrderType, o.LimitPrice, o.StopPrice, c.Inverse)
	req := bridge.ChangeRequest{Account: c.Follower, OrderID: c.OrderID}
	if q != c.Quantity {
		req.Quantity = q
	}
	if newP.limitPrice != oldP.limitPrice {
		req.LimitPrice = newP.limitPrice
	}
	if newP.stopP != oldP.stopP {
		req.StopPrice = newP.stopP
	}
	if req.Quantity == 0 && req.LimitPrice == 0 && req.StopPrice == 0 {
		return
	}
	ord, err := e.p.ChangeOrder(ctx, req)
	if err != nil {
		if errors.Is(err, bridge.ErrOrderNotFound) {
			c.Done = true
			return
		}
		out, reason := classify(err)
		e.mu.Lock()
		e.outcomeLocked(r, protocol.CopyOutcome{Follower: c.Follower, Instrument: c.Instrument,
			LeaderOrderID: en.LeaderOrderID, Quantity: q, Outcome: out, Reason: "change not mirrored: " + reason})
		e.mu.Unlock()
		return
	}
	c.Quantity = ord.Quantity
	c.Done = protocol.TerminalOrderState(ord.OrderState)
}

// onCopyOrder follows a copy's state; an entry whose leader order and
// copies are all over is forgotten.
func (e *Engine) onCopyOrder(o *protocol.Order) {
	if !protocol.TerminalOrderState(o.OrderState) {
		return
	}
	e.mu.Lock()
	en := e.byCopy[o.OrderID]
	e.mu.Unlock()
	if en == nil {
		return
	}
	for i := range en.Copies {
		if en.Copies[i].OrderID == o.OrderID {
			en.Copies[i].Done = true
		}
	}
	if en.over() {
		e.persist(en)
	}
}

// reconcileOrders catches up with a copier's leader in order mode: copies
// are brought to the leader orders as they stand now, and leader orders
// submitted within CatchUp that were not copied are copied.
func (e *Engine) reconcileOrders(ctx context.Context, r *run) {
	cfg := &r.cfg
	los, err := e.p.Orders(ctx, cfg.leader)
	if err != nil {
		e.log.Warn("leader orders not read", zap.String("copier", cfg.id), zap.Error(err))
		return
	}
	fos := &followerOrders{e: e}
	byID := make(map[string]protocol.Order, len(los))
	for _, o := range los {
		byID[o.OrderID] = o
	}
	e.mu.Lock()
	var mine []*entry
	for _, en := range e.entries {
		if en.Copier == cfg.id {
			mine = append(mine, en)
		}
	}
	e.mu.Unlock()
	for _, en := range mine {
		for i := range en.Copies {
			c := &en.Copies[i]
			if fo, ok := fos.get(ctx, c.Follower)[c.OrderID]; !c.Done && (!ok || protocol.TerminalOrderState(fo.OrderState)) {
				c.Done = true
			}
		}
		if lo, ok := byID[en.LeaderOrderID]; ok {
			e.mirror(ctx, r, en, lo)
		} else {
			en.LeaderDone = true // the platform forgot it: a past session's
		}
		e.persist(en)
	}
	now := e.now()
	for _, o := range los {
		if isCopy(o.OrderID) {
			continue
		}
		e.mu.Lock()
		_, mapped := e.entries[entryKey(cfg.id, o.OrderID)]
		_, skipped := r.skipped[o.OrderID]
		e.mu.Unlock()
		if mapped || skipped {
			continue
		}
		switch o.OrderState {
		case protocol.OrderStateInitialized, protocol.OrderStateSubmitted,
			protocol.OrderStateCancelled, protocol.OrderStateRejected:
			continue
		}
		inst, ok := cfg.mapInstrument(o.Instrument)
		if !ok {
			continue
		}
		if e.tooOld(o.Epoch, now) {
			if !protocol.TerminalOrderState(o.OrderState) {
				e.mu.Lock()
				r.skipped[o.OrderID] = now
				e.mu.Unlock()
			}
			continue
		}
		e.copyOrder(ctx, r, o, inst, fos)
	}
}

// isReject reports whether err is the platform's refusal of an order
// action (an order already terminal).
func isReject(err error) bool {
	var re *bridge.RejectError
	return errors.As(err, &re)
}
