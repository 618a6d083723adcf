package copier

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// syncKey names one follower's position in one contract.
type syncKey struct{ follower, instrument string }

// syncIssue is a follower position auto-sync could not align.
type syncIssue struct {
	reason   string
	at       time.Time // when it was last seen, the wall clock's
	failures int
	retryAt  time.Time // the next attempt, on the platform's clock
}

// tick runs one auto-sync pass and forgets what is old. drain, when set,
// handles the events already received (Run's loop), so that positions
// are read after every copy of the fills they show was placed.
func (e *Engine) tick(ctx context.Context, drain func()) {
	e.tickMu.Lock()
	defer e.tickMu.Unlock()
	if drain != nil {
		drain()
	}
	now := e.now()
	e.prune(now)
	e.mu.Lock()
	var due []*run
	for _, id := range e.sortedIDs() {
		r := e.copiers[id]
		if r.copying() && r.cfg.autoSync && !now.Before(r.nextSync) {
			due = append(due, r)
		}
	}
	e.mu.Unlock()
	for _, r := range due {
		if ctx.Err() != nil {
			return
		}
		if e.syncCopier(ctx, r, now, drain) {
			e.mu.Lock()
			r.nextSync = now.Add(r.cfg.syncEvery)
			e.mu.Unlock()
		}
	}
}

// prune forgets copied fills, finished fill tracks and skipped orders
// older than forgetAfter (and CatchUp).
func (e *Engine) prune(now time.Time) {
	cut := now.Add(-max(forgetAfter, 2*e.opts.CatchUp))
	e.mu.Lock()
	defer e.mu.Unlock()
	maps.DeleteFunc(e.copied, func(_ string, at time.Time) bool { return at.Before(cut) })
	maps.DeleteFunc(e.fills, func(_ string, ft *fillTrack) bool { return !ft.overAt.IsZero() && ft.overAt.Before(cut) })
	for _, r := range e.copiers {
		maps.DeleteFunc(r.skipped, func(_ string, at time.Time) bool { return at.Before(cut) })
	}
}

// signedQty is a position's quantity, negative when short.
func signedQty(p protocol.Position) int {
	if p.MarketPosition == protocol.MarketPositionShort {
		return -p.Quantity
	}
	return p.Quantity
}

// syncCopier aligns each follower of r to the leader × ratio. It returns
// false when the pass must run again at the next tick (trading on the
// accounts while it read them).
func (e *Engine) syncCopier(ctx context.Context, r *run, now time.Time, drain func()) bool {
	cfg := r.cfg
	states := e.monitorStates(&cfg)
	e.mu.Lock()
	why := e.tandemOK(r, states) // a follower's stopped monitor halts the copier here too
	e.mu.Unlock()
	if why != "" {
		return true
	}
	accounts := []string{cfg.leader}
	for _, f := range cfg.followers {
		accounts = append(accounts, f.account)
	}
	if drain != nil {
		drain()
	}
	seen := e.activityOf(accounts)
	lps, err := e.p.Positions(ctx, cfg.leader)
	if err != nil {
		e.log.Warn("auto-sync: leader positions not read", zap.String("copier", cfg.id), zap.Error(err))
		return true
	}
	type state struct {
		pos     []protocol.Position
		pending map[string]bool // contracts with a copy still working
		err     error
	}
	fs := make([]state, len(cfg.followers))
	for i, f := range cfg.followers {
		fs[i].pos, fs[i].err = e.p.Positions(ctx, f.account)
		if fs[i].err != nil {
			continue
		}
		var os []protocol.Order
		os, fs[i].err = e.p.Orders(ctx, f.account)
		fs[i].pending = make(map[string]bool)
		for _, o := range os {
			if isCopy(o.OrderID) && !protocol.TerminalOrderState(o.OrderState) {
				fs[i].pending[o.Instrument] = true
			}
		}
	}
	if drain != nil {
		drain()
		if !maps.Equal(seen, e.activityOf(accounts)) {
			return false // orders or fills came in while reading: look again
		}
	}
	for i, f := range cfg.followers {
		if fs[i].err != nil {
			e.log.Warn("auto-sync: follower not read", zap.String("copier", cfg.id),
				zap.String("follower", f.account), zap.Error(fs[i].err))
			continue
		}
		target := make(map[string]int)
		for _, lp := range lps {
			inst, ok := cfg.mapInstrument(lp.Instrument)
			if !ok {
				continue
			}
			q := scaleSigned(signedQty(lp), f.ratio)
			if f.inverse {
				q = -q
			}
			target[inst] += q
		}
		cur := make(map[string]int)
		for _, p := range fs[i].pos {
			in, err := protocol.ParseInstrument(protocol.NormalizeInstrument(p.Instrument))
			if err != nil || !cfg.managesRoot(in.Root) {
				continue
			}
			cur[p.Instrument] += signedQty(p)
		}
		keys := slices.Sorted(maps.Keys(target))
		for k := range cur {
			if _, ok := target[k]; !ok {
				keys = append(keys, k)
			}
		}
		for _, inst := range keys {
			if ctx.Err() != nil {
				return true
			}
			e.align(ctx, r, f, inst, target[inst]-cur[inst], fs[i].pending[inst], now)
		}
	}
	return true
}

// activityOf returns the event counts of accounts.
func (e *Engine) activityOf(accounts []string) map[string]uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := make(map[string]uint64, len(accounts))
	for _, a := range accounts {
		m[a] = e.activity[a]
	}
	return m
}

// align corrects one follower position by delta contracts, within the
// bound, with a market order through the gate.
func (e *Engine) align(ctx context.Context, r *run, f follower, inst string, delta int, pending bool, now time.Time) {
	k := syncKey{f.account, inst}
	e.mu.Lock()
	is := r.unaligned[k]
	switch {
	case delta == 0:
		delete(r.unaligned, k)
		e.mu.Unlock()
		return
	case pending:
		e.mu.Unlock()
		return // a copy is still working: it may align the position itself
	case is != nil && now.Before(is.retryAt):
		e.mu.Unlock()
		return
	case abs(delta) > e.opts.MaxSyncCorrection:
		e.unalignedLocked(r, k, now, fmt.Sprintf("the correction of %d contracts exceeds the auto-sync bound of %d",
			abs(delta), e.opts.MaxSyncCorrection))
		e.mu.Unlock()
		return
	}
	e.syncSeq++
	seq := e.syncSeq
	e.mu.Unlock()

	action := protocol.ActionBuy
	if delta < 0 {
		action = protocol.ActionSell
	}
	req := bridge.OrderRequest{Account: f.account, Instrument: inst, Action: action,
		OrderType: protocol.OrderTypeMarket, Quantity: abs(delta), TimeInForce: protocol.TimeInForceDay,
		OrderID: copyID(r.cfg.id, "sync", f.account, inst, strconv.FormatInt(now.UnixNano(), 10),
			strconv.FormatUint(seq, 10)), Name: "Sync"}
	res := e.submitAll(ctx, []bridge.OrderRequest{req})[0]
	e.mu.Lock()
	defer e.mu.Unlock()
	if res.err != nil {
		_, reason := classify(res.err)
		e.outcomeOf(r, req, "", res.err)
		e.unalignedLocked(r, k, now, "auto-sync correction refused: "+reason)
		return
	}
	delete(r.unaligned, k)
	e.reportCopy(r, req, "", req.OrderID, outcomePlaced, "")
	e.log.Info("auto-sync corrected a follower", zap.String("copier", r.cfg.id), zap.String("follower", f.account),
		zap.String("instrument", inst), zap.Int("delta", delta))
}

// unalignedLocked records a follower auto-sync could not align and when
// to try again: the wait doubles with each failure, up to MaxSyncBackoff.
func (e *Engine) unalignedLocked(r *run, k syncKey, now time.Time, reason string) {
	is := r.unaligned[k]
	if is == nil {
		is = &syncIssue{}
		r.unaligned[k] = is
		e.log.Warn("auto-sync could not align a follower", zap.String("copier", r.cfg.id),
			zap.String("follower", k.follower), zap.String("instrument", k.instrument), zap.String("reason", reason))
	}
	is.reason, is.at = reason, e.stamp()
	is.failures++
	wait := r.cfg.syncEvery << min(is.failures, 16)
	is.retryAt = now.Add(min(wait, e.opts.MaxSyncBackoff))
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
