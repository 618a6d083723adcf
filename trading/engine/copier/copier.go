// Package copier runs the management configuration's copiers on the agent:
// it copies a leader account's trading to follower accounts
// (protocol.Copier), next to the platform, driven by the platform's event
// stream.
//
// A copier in copy mode "order" mirrors each new order of the leader
// (type, prices, time in force, OCO group), its changes and its
// cancellation; one in copy mode "execution" turns each fill of the leader
// into market orders. Quantities are scaled by the follower's ratio (the
// copier's default when the follower names none) and rounded half away
// from zero; in execution mode the cumulative filled quantity of a leader
// order is rounded, so partial fills add up to the rounded whole. With
// inverse a follower trades the other side; symbol replacements (ES to
// MES) swap the root and keep the contract month; the instruments filter
// limits the roots copied.
//
// Every order the engine places passes the trading gate
// (Trader.Submit under ops.WithSource(ctx, ops.SourceCopier)); changes and
// cancellations of follower orders go to the platform directly. Follower
// order ids are deterministic (IDPrefix and a hash of the copier, the
// leader order or fill and the follower), so a copy repeated after a crash
// is refused by the platform instead of placed twice, and orders placed by
// a copier are never copied again. What is copied in order mode (leader
// order id to follower order ids) is kept in the Store (bucket
// "copier.orders"), so a restarted agent keeps mirroring changes and
// cancellations of orders it copied before.
//
// Auto-sync realigns follower positions to the leader's × ratio every
// autoSyncSeconds with bounded market orders; tandem halts a copier when
// a follower's monitor stops, until the trader turns it off and on. See
// docs/engines.md for the rules traders see.
package copier

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/engine"
	"tradebridge/trading/mgmtconfig"
)

// Defaults of Options.
const (
	// DefaultTickInterval is how often Run calls Tick.
	DefaultTickInterval = time.Second
	// DefaultCatchUp is how far back a starting engine (or one that lost
	// events) copies what it missed: leader fills in execution mode, new
	// leader orders in order mode.
	DefaultCatchUp = 30 * time.Second
	// DefaultMaxSyncCorrection is the largest auto-sync correction, in
	// contracts, of one follower in one instrument in one pass.
	DefaultMaxSyncCorrection = 10
	// DefaultSubmitWorkers is how many follower copies of one leader event
	// are submitted at once.
	DefaultSubmitWorkers = 1
	// DefaultMaxSyncBackoff caps the wait before auto-sync tries again to
	// align a follower it could not align.
	DefaultMaxSyncBackoff = 5 * time.Minute
)

// IDPrefix starts the id of every order a copier places. Orders whose id
// starts with it are never copied.
const IDPrefix = "cp-"

// Store buckets of the engine.
const (
	bucketOrders = "copier.orders"
	bucketHalts  = "copier.halts"
)

const (
	// maxRecent is how many copy outcomes Status keeps per copier.
	maxRecent = 50
	// minAutoSync is the shortest auto-sync period.
	minAutoSync = 3 * time.Second
	// forgetAfter is how long the engine remembers fills it copied and
	// leader orders it chose not to copy, once they are over.
	forgetAfter = 10 * time.Minute
)

// MonitorStates tells the state of each account's monitor:
// protocol.MonitorActive, MonitorPaused or MonitorStopped, "" when the
// account has none. The monitor engine implements it.
type MonitorStates interface {
	MonitorState(account string) string
}

// Options configure an Engine.
type Options struct {
	// Platform is the trading platform; required. Run reads its event
	// stream; cancellations and changes of follower orders go to it.
	Platform bridge.Platform
	// Trader places the copies and corrections through the trading gate;
	// required.
	Trader engine.Trader
	// Config holds the management configuration; required.
	Config *mgmtconfig.Holder
	// Store keeps the order map and the halts; required.
	Store engine.Store
	// Reporter receives halts and restarts; nil reports nothing.
	Reporter engine.Reporter
	// Monitors tells the followers' monitor states for tandem copiers;
	// nil means no account has a monitor (tandem copiers then copy
	// nothing).
	Monitors MonitorStates
	// Now is the engine's clock, the platform's (a simulator's may stand
	// anywhere in time): catch-up, auto-sync periods and retries follow
	// it. Default time.Now.
	Now engine.Clock
	// Wall is the real time: what the engine reports (copier states,
	// halts, copy outcomes, follower issues, activity entries) is stamped
	// with it, as every time a resource carries is wall-clock time.
	// Default time.Now.
	Wall engine.Clock
	// Logger receives the engine's logs; nil discards them.
	Logger *zap.Logger
	// TickInterval is how often Run calls Tick (auto-sync); default
	// DefaultTickInterval.
	TickInterval time.Duration
	// CatchUp is how far back a starting engine copies what it missed;
	// default DefaultCatchUp.
	CatchUp time.Duration
	// MaxSyncCorrection bounds one auto-sync correction, in contracts;
	// default DefaultMaxSyncCorrection.
	MaxSyncCorrection int
	// SubmitWorkers is how many copies of one leader event are submitted
	// at once; default DefaultSubmitWorkers.
	SubmitWorkers int
	// MaxSyncBackoff caps the wait between auto-sync attempts at a
	// follower it could not align; default DefaultMaxSyncBackoff.
	MaxSyncBackoff time.Duration
}

// Engine runs the copiers. Its methods are safe for concurrent use.
type Engine struct {
	opts Options
	p    bridge.Platform
	log  *zap.Logger
	now  engine.Clock

	// mu guards everything below it.
	mu       sync.Mutex
	copiers  map[string]*run   // by copier id
	byLeader map[string][]*run // active or not, by leader account
	halts    map[string]halt   // persisted halts, by copier id
	version  int64             // configuration version applied
	entries  map[string]*entry // order map, by entryKey
	byCopy   map[string]*entry // order map, by follower order id
	fills    map[string]*fillTrack
	copied   map[string]time.Time // fills copied (execution mode), by copier and execution id
	activity map[string]uint64    // order and fill events seen, by account
	syncSeq  uint64               // numbers auto-sync corrections

	tickMu sync.Mutex // one auto-sync pass at a time

	loopMu sync.Mutex
	loop   *loop // the running Run's loop; nil when none

	// afterCopy, when set, runs after the copies of one leader event were
	// submitted (benchmarks).
	afterCopy func()
}

// loop is how Tick reaches a running Run.
type loop struct {
	ticks chan chan struct{}
	done  chan struct{}
}

// halt is a copier's persisted halt.
type halt struct {
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// New validates opts, fills its defaults, loads the order map and the halts
// from the Store and returns an Engine.
func New(opts Options) (*Engine, error) {
	switch {
	case opts.Platform == nil:
		return nil, errors.New("copier: Options.Platform is required")
	case opts.Trader == nil:
		return nil, errors.New("copier: Options.Trader is required")
	case opts.Config == nil:
		return nil, errors.New("copier: Options.Config is required")
	case opts.Store == nil:
		return nil, errors.New("copier: Options.Store is required")
	case opts.TickInterval < 0, opts.CatchUp < 0, opts.MaxSyncCorrection < 0, opts.MaxSyncBackoff < 0,
		opts.SubmitWorkers < 0:
		return nil, errors.New("copier: Options durations and bounds must not be negative")
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
	if opts.TickInterval == 0 {
		opts.TickInterval = DefaultTickInterval
	}
	if opts.CatchUp == 0 {
		opts.CatchUp = DefaultCatchUp
	}
	if opts.MaxSyncCorrection == 0 {
		opts.MaxSyncCorrection = DefaultMaxSyncCorrection
	}
	if opts.SubmitWorkers == 0 {
		opts.SubmitWorkers = DefaultSubmitWorkers
	}
	if opts.MaxSyncBackoff == 0 {
		opts.MaxSyncBackoff = DefaultMaxSyncBackoff
	}
	e := &Engine{
		opts:     opts,
		p:        opts.Platform,
		log:      opts.Logger.Named("copier"),
		now:      opts.Now,
		copiers:  make(map[string]*run),
		byLeader: make(map[string][]*run),
		halts:    make(map[string]halt),
		entries:  make(map[string]*entry),
		byCopy:   make(map[string]*entry),
		fills:    make(map[string]*fillTrack),
		copied:   make(map[string]time.Time),
		activity: make(map[string]uint64),
	}
	if err := e.loadHalts(); err != nil {
		return nil, err
	}
	if err := e.loadEntries(); err != nil {
		return nil, err
	}
	e.applyConfig(opts.Config.Current())
	return e, nil
}

// Run copies until ctx ends, then returns ctx.Err(). It reads its own
// event stream of the platform, applies each configuration the Holder
// receives, calls Tick every TickInterval, and on start (and whenever the
// stream reports lost events) catches up with what it missed. Every
// goroutine it starts has ended when it returns.
func (e *Engine) Run(ctx context.Context) error {
	events := e.p.Events(ctx)
	l := &loop{ticks: make(chan chan struct{}), done: make(chan struct{})}
	e.loopMu.Lock()
	e.loop = l
	e.loopMu.Unlock()
	defer func() {
		e.loopMu.Lock()
		e.loop = nil
		e.loopMu.Unlock()
		close(l.done)
	}()

	cfg, changed := e.opts.Config.Watch()
	e.mu.Lock()
	e.applyConfigLocked(cfg)
	e.mu.Unlock()
	e.catchUp(ctx)

	t := time.NewTicker(e.opts.TickInterval)
	defer t.Stop()
	drain := func() { e.drain(ctx, events) }
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-events:
			if !ok {
				if err := ctx.Err(); err != nil {
					return err
				}
				return errors.New("copier: the platform closed its event stream")
			}
			e.handle(ctx, ev)
		case <-changed:
			cfg, changed = e.opts.Config.Watch()
			e.mu.Lock()
			e.applyConfigLocked(cfg)
			e.mu.Unlock()
		case <-t.C:
			e.tick(ctx, drain)
		case done := <-l.ticks:
			e.tick(ctx, drain)
			close(done)
		}
	}
}

// drain handles the events already waiting, without waiting for more.
func (e *Engine) drain(ctx context.Context, events <-chan bridge.Event) {
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			e.handle(ctx, ev)
		default:
			return
		}
	}
}

// Tick runs one auto-sync pass of the copiers that are due by the engine's
// clock. While Run runs, the pass runs in Run's loop, after the events
// already received, and Tick waits for it; otherwise it runs at once.
// Passes run one at a time.
func (e *Engine) Tick(ctx context.Context) {
	e.loopMu.Lock()
	l := e.loop
	e.loopMu.Unlock()
	if l == nil {
		e.tick(ctx, nil)
		return
	}
	done := make(chan struct{})
	select {
	case l.ticks <- done:
	case <-l.done:
		e.tick(ctx, nil)
		return
	case <-ctx.Done():
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// MonitorChanged tells the engine that account's monitor is now in state
// (protocol.MonitorActive, …). A monitor that stopped halts every active
// tandem copier that copies to the account. It never calls back into the
// monitors.
func (e *Engine) MonitorChanged(account, state string) {
	if state != protocol.MonitorStopped {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, id := range e.sortedIDs() {
		r := e.copiers[id]
		if !r.active || !r.cfg.tandem || r.halted() {
			continue
		}
		if r.cfg.hasFollower(account) {
			e.haltLocked(r, "the monitor of follower "+account+" stopped")
		}
	}
}

// Status returns each copier of the configuration as the engine runs it,
// in id order.
func (e *Engine) Status() []protocol.CopierStatus {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]protocol.CopierStatus, 0, len(e.copiers))
	for _, id := range e.sortedIDs() {
		r := e.copiers[id]
		st := protocol.CopierStatus{ID: id, State: protocol.CopierRunning}
		switch {
		case r.halted():
			h := e.halts[id]
			at := h.At
			st.State, st.Reason, st.At = protocol.CopierHalted, h.Reason, &at
		case !r.active:
			st.State = protocol.CopierOff
		}
		for _, k := range r.sortedIssues() {
			is := r.unaligned[k]
			st.Unaligned = append(st.Unaligned, protocol.FollowerIssue{Account: k.follower,
				Instrument: k.instrument, Reason: is.reason, At: is.at})
		}
		st.Recent = slices.Clone(r.recent)
		out = append(out, st)
	}
	return out
}

// stamp is the time of what the engine reports: the wall clock's, in UTC.
func (e *Engine) stamp() time.Time { return e.opts.Wall().UTC() }

// sortedIDs returns the copier ids in order, with e.mu held.
func (e *Engine) sortedIDs() []string {
	ids := make([]string, 0, len(e.copiers))
	for id := range e.copiers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// report sends a copier's state to the relay.
func (e *Engine) report(s protocol.CopierState) {
	if e.opts.Reporter != nil {
		e.opts.Reporter.ReportCopier(s)
	}
}
