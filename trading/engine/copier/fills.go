package copier

import (
	"context"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// fillTrack is how much of one leader order filled (execution mode), so
// that the cumulative quantity is what the ratio rounds.
type fillTrack struct {
	cum    int
	overAt time.Time // when the leader order became terminal; zero before
}

func fillKey(copierID, leaderOrderID string) string { return copierID + "/" + leaderOrderID }

// fillsOver notes that a leader order is terminal: its track is forgotten
// a while later.
func (e *Engine) fillsOver(copierID, leaderOrderID string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ft := e.fills[fillKey(copierID, leaderOrderID)]; ft != nil && ft.overAt.IsZero() {
		ft.overAt = e.now()
	}
}

// actionOf returns the order action of a fill.
func actionOf(x *protocol.Execution) string {
	if x.MarketPosition == protocol.MarketPositionShort {
		return protocol.ActionSell
	}
	return protocol.ActionBuy
}

// onLeaderFill copies one leader fill (execution mode) as market orders.
func (e *Engine) onLeaderFill(ctx context.Context, r *run, x protocol.Execution) {
	inst, ok := r.cfg.mapInstrument(x.Instrument)
	if !ok {
		return
	}
	now := e.now()
	states := e.monitorStates(&r.cfg)
	e.mu.Lock()
	key := r.cfg.id + "/" + x.ID
	if _, dup := e.copied[key]; dup {
		e.mu.Unlock()
		return
	}
	e.copied[key] = now
	ft := e.fills[fillKey(r.cfg.id, x.OrderID)]
	if ft == nil {
		ft = &fillTrack{}
		e.fills[fillKey(r.cfg.id, x.OrderID)] = ft
	}
	before := ft.cum
	ft.cum += x.Quantity
	if !r.copying() {
		e.mu.Unlock()
		return
	}
	reqs := e.fillCopiesLocked(r, &x, inst, before, ft.cum, states, nil)
	e.mu.Unlock()
	e.placeFills(ctx, r, reqs, x.OrderID)
}

// fillCopiesLocked builds the followers' market orders of one leader fill
// that took the leader order's filled quantity from before to after, with
// e.mu held. have, when set, holds followers' orders already placed.
func (e *Engine) fillCopiesLocked(r *run, x *protocol.Execution, inst string, before, after int,
	states []string, have map[string]map[string]protocol.Order) []bridge.OrderRequest {
	if why := e.tandemOK(r, states); why != "" {
		e.refusedAll(r, inst, x.OrderID, x.Quantity, why)
		return nil
	}
	action := actionOf(x)
	var reqs []bridge.OrderRequest
	for _, f := range r.cfg.followers {
		total := scale(after, f.ratio)
		q := total - scale(before, f.ratio)
		if q <= 0 {
			if total == 0 {
				e.roundedToZero(r, f, inst, x.OrderID)
			}
			continue
		}
		id := copyID(r.cfg.id, "fill", x.ID, f.account)
		if _, ok := have[f.account][id]; ok {
			continue
		}
		a := action
		if f.inverse {
			a = flip(a)
		}
		reqs = append(reqs, bridge.OrderRequest{Account: f.account, Instrument: inst, Action: a,
			OrderType: protocol.OrderTypeMarket, Quantity: q, TimeInForce: protocol.TimeInForceDay,
			OrderID: id, Name: "Copy"})
	}
	return reqs
}

// placeFills submits the market orders of one leader fill.
func (e *Engine) placeFills(ctx context.Context, r *run, reqs []bridge.OrderRequest, leaderOrderID string) {
	if len(reqs) == 0 {
		return
	}
	res := e.submitAll(ctx, reqs)
	if e.afterCopy != nil {
		e.afterCopy()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, rs := range res {
		if rs.err != nil {
			e.outcomeOf(r, reqs[i], leaderOrderID, rs.err)
			continue
		}
		e.reportCopy(r, reqs[i], leaderOrderID, reqs[i].OrderID, outcomePlaced, "")
	}
}

// reconcileFills catches up with a copier's leader in execution mode: the
// leader's fills of the last CatchUp that have no follower order yet are
// copied, and the filled quantity of every leader order is read again.
func (e *Engine) reconcileFills(ctx context.Context, r *run) {
	cfg := &r.cfg
	xs, err := e.p.Executions(ctx, cfg.leader)
	if err != nil {
		e.log.Warn("leader fills not read", zap.String("copier", cfg.id), zap.Error(err))
		return
	}
	now := e.now()
	fos := &followerOrders{e: e}
	cum := make(map[string]int)
	for i := range xs {
		x := &xs[i]
		if isCopy(x.OrderID) {
			continue
		}
		inst, ok := cfg.mapInstrument(x.Instrument)
		if !ok {
			continue
		}
		before := cum[x.OrderID]
		cum[x.OrderID] = before + x.Quantity
		key := cfg.id + "/" + x.ID
		e.mu.Lock()
		_, done := e.copied[key]
		e.copied[key] = now
		e.mu.Unlock()
		if done || e.tooOld(x.Epoch, now) {
			continue
		}
		have := make(map[string]map[string]protocol.Order, len(cfg.followers))
		for _, f := range cfg.followers {
			have[f.account] = fos.get(ctx, f.account)
		}
		states := e.monitorStates(cfg)
		e.mu.Lock()
		var reqs []bridge.OrderRequest
		if r.copying() {
			reqs = e.fillCopiesLocked(r, x, inst, before, before+x.Quantity, states, have)
		}
		e.mu.Unlock()
		e.placeFills(ctx, r, reqs, x.OrderID)
	}
	e.mu.Lock()
	for id, n := range cum {
		k := fillKey(cfg.id, id)
		if ft := e.fills[k]; ft != nil {
			ft.cum = n
		} else {
			e.fills[k] = &fillTrack{cum: n}
		}
	}
	e.mu.Unlock()
}
