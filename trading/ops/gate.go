package ops

import (
	"context"
	"sync/atomic"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// The trading gate. Every order the operations place passes through one
// Gate: orders from the relay (HTTP and socket calls), the copier's copies
// and the auto-sync's corrections alike. The engines (trading/engine) answer
// for it: the kill switch, the account's monitor (stopped, closing-only,
// block signals), the news lockout and the controls' blockAllSignals. A
// refusal is the stable code trading_blocked, whose detail says why and
// names the rule that refused (see BlockError).
//
// What the gate never refuses: cancelling orders, and the operations that
// only close (Flatten, FlattenEverything, ClosePosition, CancelOrders):
// a trader must always be able to get out.

// Source says where an order comes from. The operations read it from the
// context (WithSource); a call of the relay has none and is SourceAPI, or
// SourceAPIBypassWindows when the call asks to pass the trading windows
// (protocol.CallOptions in the context, which the dispatcher sets from
// protocol.Request.BypassWindows).
type Source string

// Sources of orders.
const (
	// SourceAPI is a bot's call through the relay (HTTP or socket).
	SourceAPI Source = "api"
	// SourceAPIBypassWindows is a call through the relay that passes the
	// account monitor's trading windows (a TradingView alert's
	// bypass_trade_windows=true): every rule treats it as SourceAPI
	// (blockSignals and blockAllSignals refuse it) except the monitor's
	// windows (masterWindow, tradingWindows, closingOnlyAfter).
	SourceAPIBypassWindows Source = "api.bypassWindows"
	// SourceCopier is a copier's copy or auto-sync correction.
	SourceCopier Source = "copier"
	// SourceEngine is an engine's own risk action (a monitor's flatten).
	SourceEngine Source = "engine"
)

type sourceKey struct{}

// WithSource returns ctx marking the orders placed under it as coming from
// src.
func WithSource(ctx context.Context, src Source) context.Context {
	return context.WithValue(ctx, sourceKey{}, src)
}

// SourceOf returns the source ctx carries; when none, SourceAPI, or
// SourceAPIBypassWindows when ctx carries protocol.CallOptions with
// BypassWindows.
func SourceOf(ctx context.Context) Source {
	if s, ok := ctx.Value(sourceKey{}).(Source); ok {
		return s
	}
	if protocol.CallOptionsOf(ctx).BypassWindows {
		return SourceAPIBypassWindows
	}
	return SourceAPI
}

// API reports whether s is a call through the relay (SourceAPI or
// SourceAPIBypassWindows): the rules on API orders apply to it.
func (s Source) API() bool { return s == SourceAPI || s == SourceAPIBypassWindows }

// BypassesWindows reports whether s passes the account monitor's trading
// windows.
func (s Source) BypassesWindows() bool { return s == SourceAPIBypassWindows }

// Rules a gate refuses by (BlockError.Rule). They are part of the wire:
// the detail of trading_blocked ends with "(rule: <name>)".
const (
	RuleKillSwitch      = "killSwitch"      // the controls' kill switch is on
	RuleBlockAllSignals = "blockAllSignals" // the controls refuse API orders on every account
	RuleMonitorStopped  = "monitorStopped"  // the account's monitor tripped
	RuleClosingOnly     = "closingOnly"     // the account's monitor allows closing orders only
	RuleBlockSignals    = "blockSignals"    // the account's monitor refuses API orders
	RuleNewsLockout     = "newsLockout"     // a news event's lockout window is open
)

// Block is one rule's refusal: Rule names it, Reason is a fixed sentence
// (never the caller's input) saying why.
type Block struct {
	Rule   string
	Reason string
}

// Verdict is what a gate requires of orders on one account and instrument
// from one source. Any names a rule refusing every order; Entries names a
// rule refusing orders that open or add to a position (orders that only
// reduce it pass). Nil fields refuse nothing.
type Verdict struct {
	Any     *Block
	Entries *Block
}

// Gate judges orders before they reach the platform. Check must be fast
// and must not block: it runs on every order, holding the instrument's
// lock. instrument is the full contract name ("ES 12-26").
type Gate interface {
	Check(account, instrument string, src Source) Verdict
}

// Checker is one part of a Gates: an engine's judgment of orders (the
// controls, the account monitors, the news lockout). Like Gate.Check, its
// Check must be fast and must not block.
type Checker interface {
	Check(account, instrument string, src Source) Verdict
}

// Gates is a Gate made of several Checkers, asked in order: an agent's
// controls first (kill switch, blockAllSignals, news lockout), then the
// account's monitor; a relay's broker engines likewise. For each kind of
// refusal (Verdict.Any, Verdict.Entries) the first Checker that refuses
// names the rule. Nil Checkers are not allowed; an empty Gates refuses
// nothing.
type Gates []Checker

// Check implements Gate.
func (g Gates) Check(account, instrument string, src Source) Verdict {
	var v Verdict
	for _, c := range g {
		w := c.Check(account, instrument, src)
		if v.Any == nil {
			v.Any = w.Any
		}
		if v.Entries == nil {
			v.Entries = w.Entries
		}
	}
	return v
}

// SetGate makes g the gate every order passes; nil lets every order pass.
// The agent sets it once, before serving calls.
func (o *Ops) SetGate(g Gate) {
	if g == nil {
		o.gate.Store(nil)
		return
	}
	o.gate.Store(&g)
}

// gateHolder holds the Gate of an Ops.
type gateHolder = atomic.Pointer[Gate]

// BlockError builds the trading_blocked error of b.
func BlockError(b *Block) *protocol.Error {
	return protocol.NewError(protocol.CodeTradingBlocked, b.Reason+" (rule: "+b.Rule+")")
}

// opens reports whether trading delta (signed) contracts from a position
// of cur (signed) opens or adds to a position: everything except an order
// on the other side no larger than the position.
func opens(cur, delta int) bool {
	return !(cur != 0 && sign(delta) == -sign(cur) && abs(delta) <= abs(cur))
}

// admit asks the gate about an order of delta (signed) contracts in k from
// a position of cur. It returns the trading_blocked error of the refusing
// rule, or nil.
func (o *Ops) admit(ctx context.Context, k key, cur, delta int) error {
	return o.admitAt(ctx, k, delta, func() (int, error) { return cur, nil })
}

// admitAt is admit reading the position only when a rule refusing entries
// needs it: an order no rule restricts costs the gate one map read.
func (o *Ops) admitAt(ctx context.Context, k key, delta int, position func() (int, error)) error {
	gp := o.gate.Load()
	if gp == nil {
		return nil
	}
	v := (*gp).Check(k.account, k.instrument, SourceOf(ctx))
	switch {
	case v.Any != nil:
		return BlockError(v.Any)
	case v.Entries == nil || delta == 0:
		return nil // nothing restricts entries, or the order trades nothing
	}
	cur, err := position()
	if err != nil {
		return err
	}
	if opens(cur, delta) {
		return BlockError(v.Entries)
	}
	return nil
}

// admitPlace asks the gate about req, reading the position only when a
// rule needs it.
func (o *Ops) admitPlace(ctx context.Context, k key, req bridge.OrderRequest) error {
	return o.admitAt(ctx, k, side(req.Action)*req.Quantity, func() (int, error) { return o.position(ctx, k) })
}

// admitEntry asks the gate about something that can only open (a strategy
// that starts trading, a placement after a close).
func (o *Ops) admitEntry(ctx context.Context, k key) error {
	return o.admit(ctx, k, 0, 1)
}

// Submit places one order for an engine (a copy, an auto-sync correction)
// through the gate, as the source ctx carries (WithSource): it reads the
// position when a rule refusing entries needs it, and places nothing when
// the gate refuses.
// It takes the instrument's lock, so it is ordered with the operations on
// the same account and instrument. req.Instrument must be the full
// contract name.
func (o *Ops) Submit(ctx context.Context, req bridge.OrderRequest) (protocol.Order, error) {
	k := key{req.Account, req.Instrument}
	unlock, err := o.locks.lock(ctx, k)
	if err != nil {
		return protocol.Order{}, err
	}
	defer unlock()
	if err := o.admitPlace(ctx, k, req); err != nil {
		return protocol.Order{}, err
	}
	ord, err := o.p.SubmitOrder(ctx, req)
	if err != nil {
		return protocol.Order{}, wireError(err)
	}
	return ord, nil
}

// position returns the account's signed position in k's instrument.
func (o *Ops) position(ctx context.Context, k key) (int, error) {
	ps, err := o.p.Positions(ctx, k.account)
	if err != nil {
		return 0, wireError(err)
	}
	for _, p := range ps {
		if p.Instrument == k.instrument {
			return signedQty(p), nil
		}
	}
	return 0, nil
}
