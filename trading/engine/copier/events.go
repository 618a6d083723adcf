package copier

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/ops"
)

// handle acts on one event of the platform.
func (e *Engine) handle(ctx context.Context, ev bridge.Event) {
	if ev.Lost {
		e.log.Warn("platform events lost; reading the leaders' orders and fills again")
		e.catchUp(ctx)
		return
	}
	switch ev.Kind {
	case bridge.EventOrder:
		o := ev.Order
		runs := e.noteActivity(o.Account)
		if isCopy(o.OrderID) {
			e.onCopyOrder(o)
			return
		}
		for _, r := range runs {
			if r.cfg.mode == protocol.CopyModeOrder {
				e.onLeaderOrder(ctx, r, *o)
			} else if protocol.TerminalOrderState(o.OrderState) {
				e.fillsOver(r.cfg.id, o.OrderID)
			}
		}
	case bridge.EventExecution:
		x := ev.Execution
		runs := e.noteActivity(x.Account)
		if isCopy(x.OrderID) {
			return
		}
		for _, r := range runs {
			if r.cfg.mode == protocol.CopyModeExecution {
				e.onLeaderFill(ctx, r, *x)
			}
		}
	case bridge.EventPosition:
		e.noteActivity(ev.Position.Account)
	}
}

// noteActivity counts an order or fill event of account (auto-sync reads
// positions only when none came in between) and returns the copiers that
// lead from it.
func (e *Engine) noteActivity(account string) []*run {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.activity[account]++
	return e.byLeader[account]
}

// catchUp reads every active copier's leader again and copies what the
// engine missed (on start, and after lost events).
func (e *Engine) catchUp(ctx context.Context) {
	e.mu.Lock()
	var runs []*run
	for _, id := range e.sortedIDs() {
		if r := e.copiers[id]; r.copying() {
			runs = append(runs, r)
		}
	}
	e.mu.Unlock()
	for _, r := range runs {
		if ctx.Err() != nil {
			return
		}
		if r.cfg.mode == protocol.CopyModeOrder {
			e.reconcileOrders(ctx, r)
		} else {
			e.reconcileFills(ctx, r)
		}
	}
}

// tooOld reports whether a leader order was submitted longer than CatchUp
// ago: the engine copies it no more.
func (e *Engine) tooOld(epochMillis int64, now time.Time) bool {
	return epochMillis > 0 && now.Sub(time.UnixMilli(epochMillis)) > e.opts.CatchUp
}

// submitResult is the answer to one submitted copy.
type submitResult struct {
	ord protocol.Order
	err error
}

// submitAll submits reqs through the trading gate as the copier's, up to
// SubmitWorkers at once, and returns the answers in order.
func (e *Engine) submitAll(ctx context.Context, reqs []bridge.OrderRequest) []submitResult {
	ctx = ops.WithSource(ctx, ops.SourceCopier)
	res := make([]submitResult, len(reqs))
	workers := min(e.opts.SubmitWorkers, len(reqs))
	if workers <= 1 {
		for i := range reqs {
			res[i] = e.submit(ctx, reqs[i])
		}
		return res
	}
	var next atomic.Int64
	work := func() {
		for i := int(next.Add(1) - 1); i < len(reqs); i = int(next.Add(1) - 1) {
			res[i] = e.submit(ctx, reqs[i])
		}
	}
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	return res
}

// submit submits one copy. A copy the platform refuses because the
// follower already has its id was placed before (by an engine that
// stopped before it recorded it): its order is returned as placed.
func (e *Engine) submit(ctx context.Context, req bridge.OrderRequest) submitResult {
	ord, err := e.opts.Trader.Submit(ctx, req)
	if err != nil {
		if out, _ := classify(err); out == protocol.CopyRejected {
			if o, ok := e.findOrder(ctx, req.Account, req.OrderID); ok {
				return submitResult{ord: o}
			}
		}
	}
	return submitResult{ord: ord, err: err}
}

// findOrder looks an order up among the account's orders.
func (e *Engine) findOrder(ctx context.Context, account, orderID string) (protocol.Order, bool) {
	os, err := e.p.Orders(ctx, account)
	if err != nil {
		return protocol.Order{}, false
	}
	for _, o := range os {
		if o.OrderID == orderID {
			return o, true
		}
	}
	return protocol.Order{}, false
}

// followerOrders reads followers' orders by id, once per account, for
// catching up: a copy already placed is taken as placed.
type followerOrders struct {
	e  *Engine
	by map[string]map[string]protocol.Order
}

func (f *followerOrders) get(ctx context.Context, account string) map[string]protocol.Order {
	if m, ok := f.by[account]; ok {
		return m
	}
	m := make(map[string]protocol.Order)
	os, err := f.e.p.Orders(ctx, account)
	if err != nil {
		f.e.log.Warn("follower orders not read", zap.String("follower", account), zap.Error(err))
	}
	for _, o := range os {
		m[o.OrderID] = o
	}
	if f.by == nil {
		f.by = make(map[string]map[string]protocol.Order)
	}
	f.by[account] = m
	return m
}

// classify turns the error of a copy into its outcome and reason.
func classify(err error) (outcome, reason string) {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		switch pe.Code {
		case protocol.CodeTradingBlocked:
			return protocol.CopyBlocked, pe.Detail
		case protocol.CodeOrderRejected:
			return protocol.CopyRejected, pe.Detail
		}
		if strings.HasPrefix(pe.Code, protocol.BrokerRejectPrefix) {
			return protocol.CopyRejected, pe.Detail
		}
		return protocol.CopyFailed, pe.Error()
	}
	var re *bridge.RejectError
	if errors.As(err, &re) {
		return protocol.CopyRejected, re.Reason
	}
	return protocol.CopyFailed, err.Error()
}

// outcomeOf records the failure of a copy.
func (e *Engine) outcomeOf(r *run, req bridge.OrderRequest, leaderOrderID string, err error) {
	out, reason := classify(err)
	e.outcomeLocked(r, protocol.CopyOutcome{Follower: req.Account, Instrument: req.Instrument,
		LeaderOrderID: leaderOrderID, Quantity: req.Quantity, Outcome: out, Reason: reason})
	e.reportCopy(r, req, leaderOrderID, "", out, reason)
}

// refusedAll records that a tandem copier copied nothing to any follower.
func (e *Engine) refusedAll(r *run, instrument, leaderOrderID string, qty int, why string) {
	for _, f := range r.cfg.followers {
		e.outcomeLocked(r, protocol.CopyOutcome{Follower: f.account, Instrument: instrument,
			LeaderOrderID: leaderOrderID, Quantity: scale(qty, f.ratio), Outcome: protocol.CopyBlocked, Reason: why})
		e.reportCopy(r, bridge.OrderRequest{Account: f.account, Instrument: instrument, Quantity: scale(qty, f.ratio)},
			leaderOrderID, "", protocol.CopyBlocked, why)
	}
}

// roundedToZero records a copy the ratio made empty.
func (e *Engine) roundedToZero(r *run, f follower, instrument, leaderOrderID string) {
	e.outcomeLocked(r, protocol.CopyOutcome{Follower: f.account, Instrument: instrument,
		LeaderOrderID: leaderOrderID, Outcome: protocol.CopyRoundedToZero,
		Reason: "the ratio rounds the quantity to zero"})
}
