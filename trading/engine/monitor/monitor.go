// Package monitor is the agent's monitor engine: one monitor per account,
// from the management configuration (protocol.Monitor), that watches the
// account's session P&L and trading hours and stops the account's trading
// when a limit is reached.
//
// The engine follows each account's values from the platform's event
// stream (bridge.EventAccount), after one read of every account when it
// starts; it never polls. A trip (loss limit, trailing drawdown,
// minimum-profit drawdown, profit target, autoFlattenAt, outside the
// master window or the trading windows) cancels the account's working
// orders, flattens it when the monitor says so, and stops the monitor:
// from then on the trading gate (Check) refuses every order that opens or
// adds to a position on the account until the relay restarts the monitor.
// The stop is kept in the engine's Store, so it survives an agent restart
// and the session reset, and reported to the relay (engine.Reporter).
//
// The engine is also the monitor's part of the trading gate: closing-only
// and block-signals refusals. See docs/engines.md, "Monitor", for the
// rules as traders see them.
package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/engine"
	"tradebridge/trading/mgmtconfig"
	"tradebridge/trading/ops"
)

// Reasons of a stop (protocol.MonitorState.Reason) and of a
// protocol.RestartVerdict: the JSON names of the monitor's settings.
const (
	reasonLossLimit             = "lossLimit"
	reasonProfitTarget          = "profitTarget"
	reasonTrailingDrawdown      = "trailingDrawdown"
	reasonMinimumProfitDrawdown = "minimumProfitDrawdown"
	reasonAutoFlattenAt         = "autoFlattenAt"
	reasonMasterWindow          = "masterWindow"
	reasonTradingWindows        = "tradingWindows"
)

// Bucket is the Store bucket of the engine's state: one value per
// account, keyed by the account's name.
const Bucket = "monitor.state"

// blindAfter is how long an account's unrealized P&L must stay unknown
// (an open position without a live price) before a monitor that counts it
// reports itself blind: long enough for a new position's first quote to
// arrive, short enough that an open loss does not go unwatched unnoticed.
const blindAfter = 15 * time.Second

// DefaultTickInterval is how often Run checks the monitors' times when
// Options.TickInterval is 0.
const DefaultTickInterval = time.Second

// tripTimeout bounds the cancellations and the flatten of one trip. They
// run even while the engine's context ends (the agent shutting down): a
// trip is always carried out.
const tripTimeout = 10 * time.Second

// Options configure an Engine.
type Options struct {
	// Platform is the trading platform whose events the engine follows;
	// required.
	Platform bridge.Platform
	// Trader cancels and flattens on a trip (trading/ops.Ops); required.
	Trader engine.Trader
	// Config holds the management configuration; required.
	Config *mgmtconfig.Holder
	// Store keeps the monitors' states and session highs; required.
	Store engine.Store
	// Reporter carries stops and restarts to the relay; required.
	Reporter engine.Reporter
	// Now is the engine's clock, the platform's (a simulator's may stand
	// anywhere in time): sessions, windows and autoFlattenAt follow it.
	// Default time.Now.
	Now engine.Clock
	// Wall is the real time: the stops and restarts the engine reports
	// (stoppedAt) are stamped with it, as every time a resource carries is
	// wall-clock time. Default time.Now.
	Wall engine.Clock
	// Logger receives the engine's logs; nil discards them.
	Logger *zap.Logger
	// TickInterval is how often Run calls Tick (windows, autoFlattenAt,
	// session reset, saving session highs). Default DefaultTickInterval;
	// negative is invalid.
	TickInterval time.Duration
	// OnState, when set, is called on every change of a monitor's state,
	// with the new state (protocol.MonitorActive, MonitorPaused,
	// MonitorStopped, or "" when the account no longer has a monitor). It
	// is called without the engine's locks held and must not block.
	OnState func(account, state string)
}

// Engine runs the monitors. It is safe for concurrent use.
type Engine struct {
	opts Options
	log  *zap.Logger

	mu      sync.RWMutex
	accts   map[string]*account
	version int64 // of the configuration applied

	storeMu sync.Mutex        // orders Store writes
	written map[string]uint64 // per account, the seq last written
}

// account is what the engine knows of one account: its monitor (nil when
// it has none), the monitor's state and the session P&L.
type account struct {
	name string
	mon  *protocol.Monitor
	plan plan

	state         string // "" when the account has no monitor
	reason        string
	stoppedAt     time.Time
	restartedFrom time.Time // the stop the last restart resumed from

	session time.Time // start of the session the highs belong to
	item    protocol.AccountItem
	seen    bool // item holds the platform's values
	highs   [nCounts]float64
	highSet bool

	// unknownSince is when (the engine's clock) the account's unrealized
	// P&L became unknown (AccountItem.UnrealizedUnknown); zero while it is
	// known. blind is whether the monitor reported itself blind.
	unknownSince time.Time
	blind        bool
	// staleBlind: the configuration says the monitor is blind (the
	// relay kept a report from before this engine started) while this
	// engine has not found it so; it tells the relay once it sees.
	staleBlind bool

	flattenSetting string    // the autoFlattenAt flattenedFor belongs to
	flattenedFor   time.Time // the autoFlattenAt instant last handled

	seq   uint64 // counts changes, to order Store writes
	dirty bool   // changed since last written
}

// New validates opts, fills its defaults, loads the engine's state from
// the Store and returns the Engine. Monitors stopped before an agent
// restart are stopped from the start.
func New(opts Options) (*Engine, error) {
	switch {
	case opts.Platform == nil:
		return nil, errors.New("monitor: Options.Platform is required")
	case opts.Trader == nil:
		return nil, errors.New("monitor: Options.Trader is required")
	case opts.Config == nil:
		return nil, errors.New("monitor: Options.Config is required")
	case opts.Store == nil:
		return nil, errors.New("monitor: Options.Store is required")
	case opts.Reporter == nil:
		return nil, errors.New("monitor: Options.Reporter is required")
	case opts.TickInterval < 0:
		return nil, errors.New("monitor: Options.TickInterval must not be negative")
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
	e := &Engine{
		opts:    opts,
		log:     opts.Logger.Named("monitor"),
		accts:   make(map[string]*account),
		written: make(map[string]uint64),
	}
	recs, err := opts.Store.Load(Bucket)
	if err != nil {
		return nil, fmt.Errorf("monitor: loading the state: %w", err)
	}
	for name, raw := range recs {
		var r record
		if err := json.Unmarshal(raw, &r); err != nil {
			e.log.Error("a monitor's saved state is unreadable; it starts afresh", zap.String("account", name), zap.Error(err))
			continue
		}
		e.accts[name] = r.account(name)
	}
	return e, nil
}

// now is the engine's time.
func (e *Engine) now() time.Time { return e.opts.Now() }

// wall is the real time, stoppedAt's.
func (e *Engine) wall() time.Time { return e.opts.Wall() }

// Run follows the platform's events and the configuration, and calls Tick
// every TickInterval, until ctx ends; it returns nil then, or an error
// when the platform closes its event stream first. It reads every
// account's values once when it starts, and again when the event stream
// reports lost events. Run starts no goroutine.
func (e *Engine) Run(ctx context.Context) error {
	events := e.opts.Platform.Events(ctx)
	cfg, changed := e.opts.Config.Watch()
	e.apply(cfg)
	e.seed(ctx)
	e.Tick(ctx)
	t := time.NewTicker(e.opts.TickInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return errors.New("monitor: the platform closed its event stream")
			}
			e.handle(ctx, ev)
		case <-changed:
			cfg, changed = e.opts.Config.Watch()
			e.apply(cfg)
			e.Tick(ctx)
		case <-t.C:
			e.Tick(ctx)
		}
	}
}

// handle takes one event of the platform.
func (e *Engine) handle(ctx context.Context, ev bridge.Event) {
	switch {
	case ev.Lost:
		e.log.Warn("platform events lost; reading the accounts again")
		e.seed(ctx)
	case ev.Kind == bridge.EventAccount && ev.Account != nil:
		e.observe(ctx, ev.Account)
	}
}

// seed reads every account's values once.
func (e *Engine) seed(ctx context.Context) {
	accts, err := e.opts.Platform.Accounts(ctx)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return
	case errors.Is(err, bridge.ErrNotConnected):
		// The platform sends every account's values when it connects.
		e.log.Info("the platform is not connected yet; accounts follow when it connects", zap.Error(err))
		return
	default:
		e.log.Warn("reading the accounts", zap.Error(err))
		return
	}
	for i := range accts {
		e.observe(ctx, &accts[i])
	}
}

// observe takes an account's values: the session P&L and its highs
// follow, and an active monitor whose limit they reach trips.
func (e *Engine) observe(ctx context.Context, acct *protocol.Account) {
	now := e.now()
	e.mu.Lock()
	a := e.take(acct.Name, acct.Item, now)
	var trip *action
	if a.state == protocol.MonitorActive && a.mon != nil && !a.unseen() {
		i := countOf(a.mon.IncludeUnrealized, a.mon.IncludeCommission)
		if r := verdict(a.mon, sessionPnl(&a.item, i), a.highs[i]); r != "" {
			trip = e.tripLocked(a, r)
		}
	}
	sight := e.sightLocked(a, now)
	e.mu.Unlock()
	if trip != nil {
		e.act(ctx, trip)
	}
	if sight != nil {
		e.see(sight)
	}
}

// unseen reports whether a's monitor counts unrealized P&L and the
// account's is unknown: its P&L limits cannot be judged (a made-up 0
// must neither trip it nor pass for safe).
func (a *account) unseen() bool {
	return a.mon != nil && a.mon.IncludeUnrealized && !a.unknownSince.IsZero()
}

// sighting is a monitor going blind or seeing again, to report after the
// engine's lock is released.
type sighting struct {
	report   protocol.MonitorState
	pnl      float64
	source   protocol.ActivitySource
	activity bool
}

// blindDetail is the detail of a monitor.blind report.
type blindDetail struct {
	// Blind is true when the monitor went blind, false when it sees
	// again.
	Blind bool `json:"blind"`
	// Pnl is the session P&L the monitor can see, counted its way
	// (without the unpriced positions' P&L while blind).
	Pnl float64 `json:"pnl"`
}

// sightLocked updates a's blindness at now, with e.mu held: an active
// monitor that counts unrealized P&L is blind once the account's has been
// unknown for blindAfter, and sees again as soon as it is known. It
// returns the change to report, or nil. A monitor that stops or pauses
// stops being blind without a report of its own (its new state says it).
func (e *Engine) sightLocked(a *account, now time.Time) *sighting {
	if a.state != protocol.MonitorActive || a.mon == nil {
		a.blind = false
		return nil
	}
	blind := a.unseen() && now.Sub(a.unknownSince) >= blindAfter
	stale := a.staleBlind && !blind && a.seen && a.unknownSince.IsZero()
	if blind {
		a.staleBlind = false
	}
	if blind == a.blind && !stale {
		return nil
	}
	if stale {
		// The relay still shows a blindness from before this engine
		// started: correct it, without a new activity entry.
		a.staleBlind = false
		return &sighting{report: protocol.MonitorState{Account: a.name, State: protocol.MonitorActive, At: stamp(e.wall())}}
	}
	a.blind = blind
	i := countOf(a.mon.IncludeUnrealized, a.mon.IncludeCommission)
	s := &sighting{report: protocol.MonitorState{Account: a.name, State: protocol.MonitorActive, Blind: blind, At: stamp(e.wall())},
		pnl: sessionPnl(&a.item, i), source: protocol.ActivitySource{Kind: protocol.SourceMonitor, ID: a.mon.ID}, activity: true}
	if s.source.ID == "" {
		s.source.ID = a.name
	}
	if blind {
		e.log.Warn("monitor blind: an open position has no live price", zap.String("account", a.name),
			zap.Time("since", a.unknownSince))
	} else {
		e.log.Info("monitor sees the account's P&L again", zap.String("account", a.name))
	}
	return s
}

// see reports a sighting to the relay and the activity log.
func (e *Engine) see(s *sighting) {
	e.opts.Reporter.ReportMonitor(s.report)
	if !s.activity {
		return
	}
	summary := fmt.Sprintf("Monitor on %s is blind: an open position has no live price, so no P&L limit can trip "+
		"(the P&L it can see: %.2f)", s.report.Account, s.pnl)
	if !s.report.Blind {
		summary = fmt.Sprintf("Monitor on %s sees the account's P&L again (session P&L %.2f)", s.report.Account, s.pnl)
	}
	e.opts.Reporter.ReportActivity(engine.NewActivity(s.report.At, protocol.ActivityMonitorBlind, s.report.Account,
		s.source, summary, blindDetail{Blind: s.report.Blind, Pnl: s.pnl}))
}

// take records an account's values at now and returns the account, with
// e.mu held.
func (e *Engine) take(name string, item protocol.AccountItem, now time.Time) *account {
	a := e.get(name)
	a.update(item, now)
	return a
}

// update takes the account's values read at now: the session rolls, and
// the highs follow.
func (a *account) update(item protocol.AccountItem, now time.Time) {
	a.roll(now)
	if a.seen && platformRestarted(&a.item, &item) {
		a.highSet = false // the platform began a new session
	}
	switch {
	case !item.UnrealizedUnknown:
		a.unknownSince = time.Time{}
	case a.unknownSince.IsZero():
		a.unknownSince = now
	}
	a.item, a.seen = item, true
	a.mark()
}

// get returns the account of that name, adding it, with e.mu held.
func (e *Engine) get(name string) *account {
	a := e.accts[name]
	if a == nil {
		a = &account{name: name}
		e.accts[name] = a
	}
	return a
}

// roll starts a new session's highs when now is past the session the
// account's belong to.
func (a *account) roll(now time.Time) {
	s := protocol.SessionStart(now)
	if a.session.Equal(s) {
		return
	}
	a.session, a.highSet, a.dirty = s, false, true
	a.mark()
}

// mark raises the session highs to the current P&L.
func (a *account) mark() {
	if !a.seen {
		return
	}
	for i := range a.highs {
		p := sessionPnl(&a.item, i)
		if i&1 != 0 && a.item.UnrealizedUnknown {
			// The unrealized P&L is unknown: a high is never raised on
			// it, and a new session's starts from the realized P&L.
			if a.highSet {
				continue
			}
			p = sessionPnl(&a.item, i&^1)
		}
		if !a.highSet || p > a.highs[i] {
			a.highs[i], a.dirty = p, true
		}
	}
	a.highSet = true
}

// action is a trip to carry out after the engine's lock is released.
type action struct {
	account string
	flatten bool
	report  protocol.MonitorState
	save    pending
	// activity is the trip as the activity log records it, its flatten
	// filled in once it ran.
	activity tripDetail
	source   protocol.ActivitySource
}

// tripDetail is the detail of a monitor.tripped report.
type tripDetail struct {
	// Limit is the rule that tripped: a reason* name.
	Limit string `json:"limit"`
	// Pnl is the session P&L at the trip, counted the monitor's way.
	Pnl float64 `json:"pnl"`
	// Threshold is the P&L the limit stood at (the loss limit as a
	// negative P&L, the trailing drawdown's floor, the minimum-profit
	// drawdown's floor, the profit target); absent for the limits of time.
	Threshold *float64 `json:"threshold,omitempty"`
	// OnTrip is what the trip did: "flatten" (cancel and close) or "none"
	// (cancel the working orders only).
	OnTrip string `json:"onTrip"`
	// Flatten is its outcome.
	Flatten engine.FlattenDetail `json:"flatten"`
}

// threshold returns the P&L at which m's limit reason trips, with high the
// session high of m's count; nil for the limits of time.
func threshold(m *protocol.Monitor, reason string, high float64) *float64 {
	var v float64
	switch reason {
	case reasonLossLimit:
		v = -m.LossLimit.Amount
	case reasonTrailingDrawdown:
		v = round(high - m.TrailingDrawdown.Amount)
	case reasonMinimumProfitDrawdown:
		v = m.MinimumProfitDrawdown.Floor
	case reasonProfitTarget:
		v = m.ProfitTarget.Amount
	default:
		return nil
	}
	return &v
}

// pending is a state to write to the Store.
type pending struct {
	account string
	seq     uint64
	rec     record
}

// tripLocked stops a's monitor for reason now (the wall clock's time), with e.mu held, and
// returns what remains to do.
func (e *Engine) tripLocked(a *account, reason string) *action {
	a.state, a.reason = protocol.MonitorStopped, reason
	a.stoppedAt = stamp(e.wall()) // real time, whatever the platform's clock says
	a.seq++
	a.dirty = false
	i := countOf(a.mon.IncludeUnrealized, a.mon.IncludeCommission)
	pnl := sessionPnl(&a.item, i)
	e.log.Warn("monitor tripped", zap.String("account", a.name), zap.String("reason", reason),
		zap.Float64("sessionPnl", pnl))
	t := &action{
		account: a.name,
		flatten: reason == reasonAutoFlattenAt || a.mon.OnTrip != protocol.OnTripNone,
		report:  protocol.MonitorState{Account: a.name, State: protocol.MonitorStopped, Reason: reason, At: a.stoppedAt},
		save:    a.pending(),
		activity: tripDetail{Limit: reason, Pnl: pnl, Threshold: threshold(a.mon, reason, a.highs[i]),
			OnTrip: protocol.OnTripNone},
		source: protocol.ActivitySource{Kind: protocol.SourceMonitor, ID: a.mon.ID},
	}
	if t.flatten {
		t.activity.OnTrip = protocol.OnTripFlatten
	}
	if t.source.ID == "" {
		t.source.ID = a.name
	}
	return t
}

// stamp is the time of a stop as it is reported: the wall clock's (wall),
// UTC, to the millisecond, so that it survives every encoding the relay
// stores it in unchanged.
func stamp(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// act carries out a trip: it cancels the account's working orders and
// flattens it (or only cancels), then saves, reports and announces the
// stop. The monitor already refuses entries.
func (e *Engine) act(ctx context.Context, t *action) {
	tctx, cancel := context.WithTimeout(ops.WithSource(context.WithoutCancel(ctx), ops.SourceEngine), tripTimeout)
	defer cancel()
	log := e.log.With(zap.String("account", t.account), zap.String("reason", t.report.Reason))
	var err error
	if t.flatten {
		var res protocol.FlattenResult
		res, err = e.opts.Trader.Flatten(tctx, protocol.FlattenArgs{Account: t.account, Force: true})
		if err != nil {
			log.Error("flattening a tripped account", zap.Error(err))
		} else {
			log.Info("tripped account flattened", zap.Int("closed", len(res.Positions)),
				zap.Int("cancelled", len(res.CancelledOrderIDs)))
		}
		t.activity.Flatten = engine.NewFlattenDetail(res, err)
	} else {
		var res protocol.CancelResult
		res, err = e.opts.Trader.CancelOrders(tctx, protocol.CancelOrdersArgs{Account: t.account, Force: true})
		if err != nil {
			log.Error("cancelling a tripped account's orders", zap.Error(err))
		} else {
			log.Info("tripped account's orders cancelled", zap.Int("cancelled", len(res.CancelledOrderIDs)))
		}
		t.activity.Flatten = engine.NewFlattenDetail(protocol.FlattenResult{CancelledOrderIDs: res.CancelledOrderIDs}, err)
	}
	e.write(t.save)
	e.opts.Reporter.ReportMonitor(t.report)
	e.opts.Reporter.ReportActivity(engine.NewActivity(t.report.At, protocol.ActivityMonitorTripped, t.account,
		t.source, tripSummary(t.account, &t.activity, err), t.activity))
	e.notify(t.account, protocol.MonitorStopped)
}

// tripSummary is the one line of a monitor.tripped report.
func tripSummary(account string, d *tripDetail, err error) string {
	s := fmt.Sprintf("Monitor stopped trading on %s: %s reached at a session P&L of %.2f", account, d.Limit, d.Pnl)
	switch {
	case err != nil && d.OnTrip == protocol.OnTripFlatten:
		return s + "; the flatten failed"
	case err != nil:
		return s + "; cancelling the working orders failed"
	case d.OnTrip == protocol.OnTripFlatten:
		return s + fmt.Sprintf("; flattened (%d closing orders, %d orders cancelled)",
			len(d.Flatten.OrderIDs), len(d.Flatten.CancelledOrderIDs))
	}
	return s + fmt.Sprintf("; %d working orders cancelled", len(d.Flatten.CancelledOrderIDs))
}

// notify calls OnState.
func (e *Engine) notify(account, state string) {
	if e.opts.OnState != nil {
		e.opts.OnState(account, state)
	}
}

// Tick does the engine's time-based work at the engine's clock: it applies
// a newer configuration, starts a new session's highs after 6 PM New York
// time, trips the active monitors whose autoFlattenAt came or that are
// outside their master window or every trading window, and saves the
// session highs that changed. Run calls it every TickInterval; tests call
// it with a manual clock.
func (e *Engine) Tick(ctx context.Context) {
	if cfg := e.opts.Config.Current(); cfg != nil {
		e.mu.RLock()
		newer := cfg.Version != e.version
		e.mu.RUnlock()
		if newer {
			e.apply(cfg)
		}
	}
	now := e.now()
	var trips []*action
	var saves []pending
	var sights []*sighting
	e.mu.Lock()
	for _, a := range e.accts {
		a.roll(now)
		if a.mon != nil {
			if at := a.plan.flattenInstant(now); !at.IsZero() && !at.Before(a.session) && at.After(a.flattenedFor) {
				a.flattenedFor, a.dirty = at, true
				if a.state == protocol.MonitorActive {
					trips = append(trips, e.tripLocked(a, reasonAutoFlattenAt))
				}
			}
			if a.state == protocol.MonitorActive {
				if r := a.plan.outside(now); r != "" {
					trips = append(trips, e.tripLocked(a, r))
				}
			}
		}
		if s := e.sightLocked(a, now); s != nil {
			sights = append(sights, s)
		}
		if a.dirty {
			a.seq++
			a.dirty = false
			saves = append(saves, a.pending())
		}
	}
	e.mu.Unlock()
	for _, t := range trips {
		e.act(ctx, t)
	}
	for _, s := range sights {
		e.see(s)
	}
	for _, p := range saves {
		e.write(p)
	}
}

// apply runs cfg's monitors: new ones start, removed ones end, changed
// ones take their new settings. A stopped monitor resumes only when cfg
// restarts that very stop (RestartedFrom equals its StoppedAt); a monitor
// cfg says is stopped, from a stop this engine did not resume from, is
// stopped.
func (e *Engine) apply(cfg *protocol.Config) {
	if cfg == nil {
		return
	}
	now := e.now()
	type change struct {
		account, state string
		report         *protocol.MonitorState
	}
	var changes []change
	var saves []pending
	var sights []*sighting
	e.mu.Lock()
	if cfg.Version == e.version {
		e.mu.Unlock()
		return
	}
	e.version = cfg.Version
	seen := make(map[string]bool, len(cfg.Monitors))
	for i := range cfg.Monitors {
		m := cfg.Monitors[i]
		if m.Account == "" || seen[m.Account] {
			continue
		}
		seen[m.Account] = true
		a := e.get(m.Account)
		before := a.state
		a.mon, a.plan = &m, newPlan(&m)
		a.staleBlind = m.Blind && !a.blind
		if m.AutoFlattenAt != a.flattenSetting {
			// A new time of day takes effect from its next occurrence.
			a.flattenSetting, a.flattenedFor = m.AutoFlattenAt, a.plan.flattenInstant(now)
			a.dirty = true
		}
		var report *protocol.MonitorState
		switch {
		case a.state == protocol.MonitorStopped:
			if m.State != protocol.MonitorStopped && m.RestartedFrom != nil && m.RestartedFrom.Equal(a.stoppedAt) {
				a.restartedFrom, a.stoppedAt, a.reason = a.stoppedAt, time.Time{}, ""
				a.state = runState(&m)
				report = &protocol.MonitorState{Account: a.name, State: protocol.MonitorActive, At: stamp(e.wall())}
				e.log.Info("monitor restarted", zap.String("account", a.name), zap.Time("from", a.restartedFrom))
			}
		case m.State == protocol.MonitorStopped &&
			!(m.StoppedAt != nil && !a.restartedFrom.IsZero() && m.StoppedAt.Equal(a.restartedFrom)):
			a.state, a.reason = protocol.MonitorStopped, m.StoppedReason
			a.stoppedAt = stamp(e.wall())
			if m.StoppedAt != nil {
				a.stoppedAt = m.StoppedAt.UTC()
			}
			e.log.Info("monitor stopped by the configuration", zap.String("account", a.name), zap.String("reason", a.reason))
		default:
			a.state = runState(&m)
		}
		if a.state != before {
			a.dirty = true
			changes = append(changes, change{a.name, a.state, report})
		}
		if s := e.sightLocked(a, now); s != nil {
			sights = append(sights, s)
		}
	}
	for _, a := range e.accts {
		if a.state != "" && !seen[a.name] {
			a.mon, a.plan = nil, plan{}
			a.state, a.reason, a.stoppedAt, a.restartedFrom = "", "", time.Time{}, time.Time{}
			a.flattenSetting, a.flattenedFor = "", time.Time{}
			a.dirty = true
			changes = append(changes, change{account: a.name})
		}
	}
	for _, a := range e.accts {
		if a.dirty {
			a.seq++
			a.dirty = false
			saves = append(saves, a.pending())
		}
	}
	e.mu.Unlock()
	for _, p := range saves {
		e.write(p)
	}
	for _, c := range changes {
		if c.report != nil {
			e.opts.Reporter.ReportMonitor(*c.report)
		}
		e.notify(c.account, c.state)
	}
	for _, s := range sights {
		e.see(s)
	}
}

// runState is the state of a monitor that is not stopped.
func runState(m *protocol.Monitor) string {
	if m.Active {
		return protocol.MonitorActive
	}
	return protocol.MonitorPaused
}

// Refusals of the gate.
var (
	blockStopped = &ops.Block{Rule: ops.RuleMonitorStopped,
		Reason: "the account's monitor stopped trading; only orders that reduce a position are accepted until it is restarted"}
	blockOutside = &ops.Block{Rule: ops.RuleMonitorStopped,
		Reason: "the account's monitor is outside its trading hours; only orders that reduce a position are accepted"}
	blockClosingOnly = &ops.Block{Rule: ops.RuleClosingOnly,
		Reason: "the account's monitor accepts only orders that reduce a position"}
	blockSignals = &ops.Block{Rule: ops.RuleBlockSignals,
		Reason: "the account's monitor refuses orders from the API"}
)

// Check is the monitor's part of the trading gate (ops.Gate). A stopped
// monitor refuses entries (RuleMonitorStopped), and so does an active one
// outside its trading hours, until the engine trips it; closingOnly, and
// closingOnlyAfter once its time came, refuse entries (RuleClosingOnly);
// blockSignals refuses every order from the API (RuleBlockSignals), on a
// stopped monitor too. A paused monitor refuses nothing. An order of
// ops.SourceAPIBypassWindows passes the trading hours: the master window,
// the trading windows and closingOnlyAfter, and a stop for being outside
// them (every other rule still applies). Check never blocks for long: it
// reads the engine's state under a read lock.
func (e *Engine) Check(account, _ string, src ops.Source) ops.Verdict {
	e.mu.RLock()
	defer e.mu.RUnlock()
	a := e.accts[account]
	if a == nil {
		return ops.Verdict{}
	}
	var v ops.Verdict
	if a.mon != nil && a.state != protocol.MonitorPaused && a.mon.BlockSignals && src.API() {
		v.Any = blockSignals
	}
	switch a.state {
	case protocol.MonitorStopped:
		if src.BypassesWindows() && a.mon != nil && (a.reason == reasonMasterWindow || a.reason == reasonTradingWindows) {
			// Stopped by its trading hours only, which the order passes.
			if a.mon.ClosingOnly {
				v.Entries = blockClosingOnly
			}
			break
		}
		v.Entries = blockStopped
	case protocol.MonitorActive:
		if a.mon == nil {
			break
		}
		if a.mon.ClosingOnly {
			v.Entries = blockClosingOnly
			break
		}
		if src.BypassesWindows() || (a.plan.closingAfter == noTime && !a.plan.hasMaster && len(a.plan.trading) == 0) {
			break
		}
		now := e.now()
		switch {
		case a.plan.outside(now) != "":
			v.Entries = blockOutside
		case a.plan.closingOnlyAt(now):
			v.Entries = blockClosingOnly
		}
	}
	return v
}

// MonitorState returns the state of the account's monitor:
// protocol.MonitorActive, MonitorPaused or MonitorStopped, or "" when the
// account has none.
func (e *Engine) MonitorState(account string) string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if a := e.accts[account]; a != nil {
		return a.state
	}
	return ""
}

// Status reports every monitor as the engine runs it, by account.
func (e *Engine) Status() []protocol.MonitorStatus {
	now := e.now()
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := make([]protocol.MonitorStatus, 0, len(e.accts))
	for _, a := range e.accts {
		if a.state == "" {
			continue
		}
		s := protocol.MonitorStatus{Account: a.name, State: a.state, Reason: a.reason, Session: a.session}
		if !a.stoppedAt.IsZero() {
			at := a.stoppedAt
			s.StoppedAt = &at
		}
		if a.mon != nil {
			i := countOf(a.mon.IncludeUnrealized, a.mon.IncludeCommission)
			s.SessionPnl, s.SessionHigh = sessionPnl(&a.item, i), a.highs[i]
			s.BlockSignals = a.mon.BlockSignals
			s.ClosingOnly = a.mon.ClosingOnly || a.plan.closingOnlyAt(now)
			s.Blind = a.blind
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(x, y protocol.MonitorStatus) int {
		switch {
		case x.Account < y.Account:
			return -1
		case x.Account > y.Account:
			return 1
		}
		return 0
	})
	return out
}

// CheckRestart answers the relay's FnCheckMonitorRestart: whether the
// monitor, restarted with the settings of a, would stop again at once. It
// reads the account's values once and judges the loss limit, the trailing
// drawdown and the minimum-profit drawdown (against the session high of
// the P&L counted the way a's monitor counts it: a restart does not
// restart the high, so an armed minimum-profit drawdown stays armed), the
// profit target, then the master window and the trading windows at the
// engine's clock. The Reason names the first one reached. autoFlattenAt
// never refuses a restart: it acts once a day. It changes no monitor.
func (e *Engine) CheckRestart(ctx context.Context, a protocol.RestartCheck) (protocol.RestartVerdict, error) {
	m := a.Monitor
	if m.Account == "" {
		return protocol.RestartVerdict{}, protocol.NewError(protocol.CodeMissingFields, "missing required fields: monitor.account")
	}
	acct, err := e.opts.Platform.Account(ctx, m.Account)
	if err != nil {
		return protocol.RestartVerdict{}, readError(err)
	}
	now := e.now()
	// The check judges a copy of the account's state: the engine's own
	// follows the platform's events in their order, and a read fresher
	// than events it has not taken yet must not move it (those events
	// would then look like a fall from the fresher high).
	e.mu.Lock()
	x := account{name: acct.Name}
	if a := e.accts[acct.Name]; a != nil {
		x = *a
	}
	e.mu.Unlock()
	x.update(acct.Item, now)
	i := countOf(m.IncludeUnrealized, m.IncludeCommission)
	pnl, high := sessionPnl(&x.item, i), x.highs[i]
	// A P&L it cannot see would not trip the restarted monitor: it would
	// be blind, as the running one is.
	if r := verdict(&m, pnl, high); r != "" && !(m.IncludeUnrealized && acct.Item.UnrealizedUnknown) {
		return protocol.RestartVerdict{WouldRetrip: true, Reason: r}, nil
	}
	p := newPlan(&m)
	if r := p.outside(now); r != "" {
		return protocol.RestartVerdict{WouldRetrip: true, Reason: r}, nil
	}
	return protocol.RestartVerdict{}, nil
}

// readError turns the platform's error reading an account into the wire
// error of the call.
func readError(err error) error {
	switch {
	case errors.Is(err, bridge.ErrAccountNotFound):
		return protocol.NewError(protocol.CodeAccountNotFound, "no such account on the platform")
	case errors.Is(err, bridge.ErrNotConnected):
		return protocol.NewError(protocol.CodePlatformUnavailable, "the trading platform is not connected to the agent")
	case errors.Is(err, context.DeadlineExceeded):
		return protocol.NewError(protocol.CodeDeadlineExceeded, "the platform did not answer in time")
	case errors.Is(err, context.Canceled):
		return protocol.NewError(protocol.CodeCancelled, "the call was cancelled")
	}
	return fmt.Errorf("monitor: reading the account: %w", err)
}
