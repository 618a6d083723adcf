// Package controls runs the user's account-wide controls on the agent: the
// kill switch, blockAllSignals and the news lockout of the management
// configuration (protocol.Controls, protocol.NewsLockout).
//
// The Engine is a trading gate (ops.Gate): Check refuses orders by reading
// the configuration the agent runs at that instant, so a switch takes
// effect on the next order once the configuration is applied
// (mgmtconfig.Holder.Apply). The Engine's Run acts on the changes: it
// flattens every account when the kill switch turns on with flattenOnKill,
// and flattens the lockout's instruments when a news window with the
// action "flatten" opens.
//
// In order of precedence:
//
//   - kill switch on: every order that opens or adds to a position is
//     refused on every account, whatever its source (rule killSwitch);
//     orders that only reduce a position, cancellations and flattens pass.
//   - blockAllSignals: every order from the API (ops.Source.API) is refused
//     on every account (rule blockAllSignals); the copier's and the
//     engines' orders pass.
//   - news lockout: while a window is open, orders that open or add to a
//     position in the lockout's roots are refused, whatever their source
//     (rule newsLockout).
//
// A window of an event runs from At − MinutesBefore, inclusive, to At +
// MinutesAfter, exclusive. Windows that overlap or touch are one window.
package controls

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/engine"
	"tradebridge/trading/mgmtconfig"
	"tradebridge/trading/ops"
)

// DefaultTickInterval is how often Run looks at the news windows when
// Options.TickInterval is zero.
const DefaultTickInterval = time.Second

// Bounds of the wait before a failed flatten is tried again: it doubles
// from retryMin after each failure, up to retryMax.
const (
	retryMin = time.Second
	retryMax = 30 * time.Second
)

// KillBlock is the kill switch's refusal, which the relay gives too while
// a switch stored on waits for the agent (relay/killswitch).
var KillBlock = &ops.Block{Rule: ops.RuleKillSwitch,
	Reason: "the kill switch is on: orders that open or add to a position are refused"}

// The gate's other refusals. Reasons are fixed sentences: they never
// repeat the configuration's text (an event's title shows in Status only).
var (
	blockAllBlock = &ops.Block{Rule: ops.RuleBlockAllSignals,
		Reason: "signals are blocked on every account: orders from the API are refused"}
	newsBlock = &ops.Block{Rule: ops.RuleNewsLockout,
		Reason: "a news lockout window is open: orders that open or add to a position are refused"}
)

// Options configure an Engine.
type Options struct {
	// Platform lists the accounts, positions and orders to flatten;
	// required.
	Platform bridge.Platform
	// Trader flattens (trading/ops.Ops); required.
	Trader engine.Trader
	// Config is the management configuration the agent runs; required.
	Config *mgmtconfig.Holder
	// Now is the engine's clock, the platform's (a simulator's may stand
	// anywhere in time): news windows, flatten retries and the
	// strategy-lock refusals' minute follow it. Default time.Now.
	Now engine.Clock
	// Wall is the real time: what the engine reports (its activity
	// entries) is stamped with it, as every time a resource carries is
	// wall-clock time. Default time.Now.
	Wall engine.Clock
	// Logger receives the engine's logs; nil discards them.
	Logger *zap.Logger
	// TickInterval is how often Run calls Tick, which opens the news
	// windows and retries failed flattens. Default DefaultTickInterval;
	// negative is invalid.
	TickInterval time.Duration
	// Reporter receives what the controls did for the activity log (the
	// kill switch applied, news windows entered, strategy-lock refusals
	// counted); nil reports nothing.
	Reporter engine.Reporter
}

// Engine runs the controls. Check and Status are safe for concurrent use
// with each other and with Run and Tick.
type Engine struct {
	opts Options
	log  *zap.Logger
	now  engine.Clock

	// snap caches what Check needs of the current configuration, derived
	// once per configuration.
	snap atomic.Pointer[snapshot]

	mu sync.Mutex // serializes Tick; guards the fields below
	// killOn is the kill switch as Tick last saw it; false before the
	// first Tick, so a configuration that starts with it on flattens.
	killOn bool
	kill   retry // the pending flatten of the kill switch
	// killReport is the killSwitch.changed of the switch turned on, sent
	// once its flatten's first attempt is over; nil when none waits.
	killReport *killDetail
	news       newsState
	// newsEntered is the start of the last news window reported entered.
	newsEntered time.Time

	refusals refusals // strategy-lock refusals, counted per minute
}

// retry is a flatten to be done, and when it may be tried next.
type retry struct {
	pending bool
	at      time.Time     // not before this time
	wait    time.Duration // the wait after the next failure
}

// fail schedules the next attempt after a failure at now.
func (r *retry) fail(now time.Time) {
	r.wait = min(max(r.wait*2, retryMin), retryMax)
	r.at = now.Add(r.wait)
}

// due reports whether the flatten should be tried at now.
func (r *retry) due(now time.Time) bool { return r.pending && !now.Before(r.at) }

// newsState is what Tick remembers of the news window it flattened.
type newsState struct {
	// doneAt is when the last flatten of a window succeeded (zero for
	// none); a window contains doneAt when it has been flattened.
	doneAt time.Time
	// doneAll and doneRoots are the roots flattened in that window.
	doneAll   bool
	doneRoots map[string]bool
	// window is the start of the window being flattened (retry applies
	// to it only).
	window time.Time
	retry  retry
}

// New validates opts, fills its defaults and returns an Engine.
func New(opts Options) (*Engine, error) {
	switch {
	case opts.Platform == nil:
		return nil, errors.New("controls: Options.Platform is required")
	case opts.Trader == nil:
		return nil, errors.New("controls: Options.Trader is required")
	case opts.Config == nil:
		return nil, errors.New("controls: Options.Config is required")
	case opts.TickInterval < 0:
		return nil, errors.New("controls: Options.TickInterval must not be negative")
	}
	if opts.TickInterval == 0 {
		opts.TickInterval = DefaultTickInterval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Wall == nil {
		opts.Wall = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	return &Engine{opts: opts, log: opts.Logger.Named("controls"), now: opts.Now,
		refusals: refusals{open: make(map[refusalKey]*refusalCount)}}, nil
}

// Run acts on the configuration until ctx ends, then returns ctx.Err(). It
// calls Tick at once when a newer configuration is applied (the kill
// switch's flatten starts as soon as Holder.Apply returns) and every
// TickInterval. When ctx ends it reports the strategy-lock refusals
// counted so far. Run starts no goroutine.
func (e *Engine) Run(ctx context.Context) error {
	t := time.NewTicker(e.opts.TickInterval)
	defer t.Stop()
	for {
		// Watch before Tick: a configuration applied during Tick wakes
		// the next wait.
		_, changed := e.opts.Config.Watch()
		e.Tick(ctx)
		select {
		case <-ctx.Done():
			e.flushRefusals(e.now(), true) // what was counted so far
			return ctx.Err()
		case <-changed:
		case <-t.C:
		}
	}
}

// Tick brings the controls to the current configuration and clock: it
// flattens every account when the kill switch has turned on with
// flattenOnKill since the last Tick, flattens the lockout's roots when a
// news window with the action "flatten" is open and has not been flattened
// yet, and retries a flatten that failed. Run calls it; tests call it
// with a manual clock. Calls run one at a time.
func (e *Engine) Tick(ctx context.Context) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.snapshot()
	now := e.now()
	e.tickKill(ctx, s, now)
	e.tickNews(ctx, s, now)
	e.flushRefusals(now, false)
}

// tickKill flattens on the kill switch's transition from off to on.
func (e *Engine) tickKill(ctx context.Context, s *snapshot, now time.Time) {
	switch {
	case s.kill && !e.killOn:
		e.log.Info("kill switch on", zap.Bool("flattenOnKill", s.flattenOnKill), zap.Int64("configVersion", s.version))
		e.kill = retry{pending: s.flattenOnKill}
		e.killReport = &killDetail{Enabled: true, at: e.opts.Wall()}
		if !s.flattenOnKill {
			e.reportKill(nil)
		}
	case !s.kill && e.killOn:
		e.log.Info("kill switch off", zap.Int64("configVersion", s.version))
		e.kill = retry{}
		if e.killReport != nil { // turned off before its flatten ran
			e.reportKill(nil)
		}
		e.killReport = &killDetail{Enabled: false, at: e.opts.Wall()}
		e.reportKill(nil)
	}
	e.killOn = s.kill
	if !e.kill.due(now) {
		return
	}
	ctx = ops.WithSource(ctx, ops.SourceEngine)
	res, err := e.opts.Trader.Flatten(ctx, protocol.FlattenArgs{Force: true})
	if err != nil && ctx.Err() == nil {
		// One failing account or instrument stops Flatten: go through
		// each one, so that the others are flattened anyway.
		e.log.Warn("kill switch: flatten failed, flattening each account and instrument", zap.Error(err))
		res, err = e.sweep(ctx, func(string) bool { return true })
	}
	if err != nil {
		if ctx.Err() != nil {
			return // retried by the next Tick
		}
		e.kill.fail(now)
		e.log.Error("kill switch: flatten failed", zap.Error(err), zap.Duration("retryIn", e.kill.wait))
		fd := engine.NewFlattenDetail(res, err)
		e.reportKill(&fd)
		return
	}
	fd := engine.NewFlattenDetail(res, nil)
	e.reportKill(&fd)
	e.kill = retry{}
	e.log.Info("kill switch: flattened every account",
		zap.Int("positions", len(res.Positions)), zap.Int("cancelledOrders", len(res.CancelledOrderIDs)))
}

// tickNews reports a news window entered, and flattens the roots of an
// open "flatten" window, once per window.
func (e *Engine) tickNews(ctx context.Context, s *snapshot, now time.Time) {
	w, ok := s.openWindow(now)
	if !ok {
		return
	}
	entered := !e.newsEntered.Equal(w.from)
	e.newsEntered = w.from
	var fd *engine.FlattenDetail
	if s.newsFlatten {
		fd = e.flattenNews(ctx, s, w, now)
	}
	if entered {
		e.reportNews(s, w, fd)
	}
}

// flattenNews flattens the roots of the open "flatten" window w, once per
// window, and returns the outcome of the attempt it made (nil when it made
// none, or the engine is stopping).
func (e *Engine) flattenNews(ctx context.Context, s *snapshot, w window, now time.Time) *engine.FlattenDetail {
	st := &e.news
	done := !st.doneAt.IsZero() && w.contains(st.doneAt)
	if !done {
		st.doneAll, st.doneRoots = false, nil
	}
	todo := func(root string) bool {
		return s.coversRoot(root) && !st.doneAll && !st.doneRoots[root]
	}
	if done && (st.doneAll || (!s.allRoots && allIn(s.roots, st.doneRoots))) {
		return nil // this window is flattened, for every root it covers now
	}
	if !st.window.Equal(w.from) {
		st.window, st.retry = w.from, retry{}
	}
	st.retry.pending = true
	if !st.retry.due(now) {
		return nil
	}
	e.log.Info("news lockout: window open, flattening", zap.Time("from", w.from), zap.Time("until", w.until),
		zap.Strings("roots", s.rootList))
	res, err := e.sweep(ops.WithSource(ctx, ops.SourceEngine), todo)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		st.retry.fail(now)
		e.log.Error("news lockout: flatten failed", zap.Error(err), zap.Duration("retryIn", st.retry.wait))
		fd := engine.NewFlattenDetail(res, err)
		return &fd
	}
	fd := engine.NewFlattenDetail(res, nil)
	st.retry = retry{}
	st.doneAt = now
	if s.allRoots {
		st.doneAll = true
		return &fd
	}
	if st.doneRoots == nil {
		st.doneRoots = make(map[string]bool, len(s.roots))
	}
	for r := range s.roots {
		st.doneRoots[r] = true
	}
	return &fd
}

// allIn reports whether every key of a is in b.
func allIn(a, b map[string]bool) bool {
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// sweep flattens, on every account, each instrument whose root want
// accepts and where the account holds a position or a working order, as
// the platform lists them now. It goes on past failures and returns them
// joined, with the orders the flattens that succeeded placed and
// cancelled.
func (e *Engine) sweep(ctx context.Context, want func(root string) bool) (protocol.FlattenResult, error) {
	var all protocol.FlattenResult
	accts, err := e.opts.Platform.Accounts(ctx)
	if err != nil {
		return all, fmt.Errorf("list accounts: %w", err)
	}
	var errs []error
	for _, a := range accts {
		instruments, err := e.holdings(ctx, a.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, inst := range instruments {
			if !want(rootOf(inst)) {
				continue
			}
			res, err := e.opts.Trader.Flatten(ctx, protocol.FlattenArgs{Account: a.Name, Instrument: inst, Force: true})
			if err != nil {
				errs = append(errs, fmt.Errorf("flatten %s %s: %w", a.Name, inst, err))
				continue
			}
			all.OrderIDs = append(all.OrderIDs, res.OrderIDs...)
			all.CancelledOrderIDs = append(all.CancelledOrderIDs, res.CancelledOrderIDs...)
			all.Positions = append(all.Positions, res.Positions...)
			e.log.Info("flattened", zap.String("account", a.Name), zap.String("instrument", inst))
		}
	}
	return all, errors.Join(errs...)
}

// holdings lists the instruments where account holds a position or a
// working order, each once.
func (e *Engine) holdings(ctx context.Context, account string) ([]string, error) {
	ps, err := e.opts.Platform.Positions(ctx, account)
	if err != nil {
		return nil, fmt.Errorf("positions of %s: %w", account, err)
	}
	os, err := e.opts.Platform.Orders(ctx, account)
	if err != nil {
		return nil, fmt.Errorf("orders of %s: %w", account, err)
	}
	seen := make(map[string]bool, len(ps))
	var out []string
	add := func(inst string) {
		if !seen[inst] {
			seen[inst] = true
			out = append(out, inst)
		}
	}
	for _, p := range ps {
		add(p.Instrument)
	}
	for _, o := range os {
		if !protocol.TerminalOrderState(o.OrderState) {
			add(o.Instrument)
		}
	}
	return out, nil
}

// Check is the Engine's answer as the trading gate (ops.Gate). It reads
// the current configuration and clock and never blocks.
func (e *Engine) Check(account, instrument string, src ops.Source) ops.Verdict {
	s := e.snapshot()
	var v ops.Verdict
	if s.kill {
		v.Entries = KillBlock
	}
	if s.blockAll && src.API() {
		v.Any = blockAllBlock
	}
	if v.Entries == nil && len(s.windows) > 0 {
		if _, open := s.openWindow(e.now()); open && s.covers(instrument) {
			v.Entries = newsBlock
		}
	}
	return v
}

// Status returns the controls as the agent runs them now: the switches
// and the open news window, if any.
func (e *Engine) Status() protocol.ControlsStatus {
	s := e.snapshot()
	st := protocol.ControlsStatus{KillSwitch: s.kill, BlockAllSignals: s.blockAll}
	if w, ok := s.openWindow(e.now()); ok {
		st.NewsLockout = &protocol.NewsWindow{
			Title: w.title, From: w.from, Until: w.until, Action: s.newsAction,
			Roots: append([]string(nil), s.rootList...),
		}
	}
	return st
}

// snapshot returns what the Engine derived from the current configuration,
// deriving it on the first call after a change.
func (e *Engine) snapshot() *snapshot {
	cfg := e.opts.Config.Current()
	if s := e.snap.Load(); s != nil && s.cfg == cfg {
		return s
	}
	s := derive(cfg)
	e.snap.Store(s)
	return s
}
