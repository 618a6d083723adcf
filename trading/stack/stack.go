// Package stack assembles what runs over one trading platform: the
// operations, the trading gate, the engines and the dispatcher — the agent
// next to NinjaTrader and the relay's broker family per linked login both
// run one.
//
// New builds the operations (trading/ops) over the platform, the engines
// over the operations (trading/engine/controls, monitor, copier, exits; a
// monitor's change of state reaches the copiers, which halt a tandem
// copier whose follower's monitor stopped; the exits engine follows the
// entries the operations place with exits or a cancel-after, in the
// State's bucket exits.Bucket), makes the controls and the
// monitors the operations' trading gate (and the controls the observer of
// the strategy-lock refusals, which they report), and builds a dispatcher
// (trading/dispatch) with the operations' functions registered. The caller
// registers its own functions on the dispatcher, applies the management
// configuration to the Holder it passed, and runs the engines with Run
// beside whatever else it runs (the agent's tunnel, a relay instance's
// followers). The platform's own loop is the caller's to run and close.
package stack

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"tradebridge/trading/bridge"
	"tradebridge/trading/dispatch"
	"tradebridge/trading/engine"
	"tradebridge/trading/engine/controls"
	"tradebridge/trading/engine/copier"
	"tradebridge/trading/engine/exits"
	"tradebridge/trading/engine/monitor"
	"tradebridge/trading/mgmtconfig"
	"tradebridge/trading/ops"
)

// DefaultEngineTick is how often the engines look at the clock when
// Options.EngineTick is zero.
const DefaultEngineTick = time.Second

// ErrInvalidOptions is what New returns (wrapped, with the field named)
// for Options it cannot build a Stack from.
var ErrInvalidOptions = errors.New("stack: invalid options")

// State is what the stack must not forget across a restart: the engines'
// state and strategy-tag ownership (engine.Store, which is ops.Persist's
// shape) and the outcomes of writes (dispatch.Journal). The caller owns
// it and closes it after the stack stopped.
type State interface {
	engine.Store
	dispatch.Journal
}

// Options configure a Stack.
type Options struct {
	// Platform is the trading platform; required. The caller runs its
	// loop, if it has one, and closes it.
	Platform bridge.Platform
	// State keeps the engines' state, strategy tags and write outcomes;
	// required.
	State State
	// Reporter receives the engines' state changes (monitors, copiers)
	// and what they did (activity reports); required.
	Reporter engine.Reporter
	// Config is the management configuration the engines act on; nil
	// makes a new, empty one (Stack.Config).
	Config *mgmtconfig.Holder
	// Now is the clock of the operations and the engines; nil means
	// Ops.Now, or time.Now when that is nil too.
	Now func() time.Time
	// EngineTick is how often the engines look at the clock (trading
	// windows, auto-sync, news windows, the session reset); zero means
	// DefaultEngineTick. Everything else they do is driven by the
	// platform's events.
	EngineTick time.Duration
	// Ops tunes the operations (their waits); Platform, Persist, Logger
	// and Now in it are filled by New.
	Ops ops.Options
	// Dispatch tunes the dispatcher (write timeout, remembered outcomes,
	// its clock); Explain, Journal and Logger in it are filled by New.
	Dispatch dispatch.Options
	// Logger receives the logs of the operations ("ops"), the engines
	// ("engine") and the dispatcher ("dispatch"); nil discards them.
	Logger *zap.Logger
}

// Stack is the operations, the engines and the dispatcher over one
// platform. Its fields are set by New and must not be changed.
type Stack struct {
	// Ops runs the operations, through the trading gate of Controls and
	// Monitors.
	Ops *ops.Ops
	// Dispatcher serves the operations' functions (ops.Ops.Functions);
	// the caller registers its own beside them.
	Dispatcher *dispatch.Dispatcher
	// Config is the management configuration the engines act on.
	Config *mgmtconfig.Holder
	// Controls is the kill switch, blockAllSignals and the news lockout.
	Controls *controls.Engine
	// Monitors is the accounts' monitors.
	Monitors *monitor.Engine
	// Copiers is the trade copiers.
	Copiers *copier.Engine
	// Exits places the exits of entries placed with them and cancels
	// entries whose cancel-after passed (the operations' EntryWatcher).
	Exits *exits.Engine

	log *zap.Logger
}

// New validates opts, fills its defaults and builds the stack. Nothing
// runs until Run.
func New(opts Options) (*Stack, error) {
	switch {
	case opts.Platform == nil:
		return nil, fmt.Errorf("%w: Platform is required", ErrInvalidOptions)
	case opts.State == nil:
		return nil, fmt.Errorf("%w: State is required", ErrInvalidOptions)
	case opts.Reporter == nil:
		return nil, fmt.Errorf("%w: Reporter is required", ErrInvalidOptions)
	case opts.EngineTick < 0:
		return nil, fmt.Errorf("%w: EngineTick must not be negative", ErrInvalidOptions)
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Config == nil {
		opts.Config = new(mgmtconfig.Holder)
	}
	if opts.Now == nil {
		opts.Now = opts.Ops.Now
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.EngineTick == 0 {
		opts.EngineTick = DefaultEngineTick
	}
	s := &Stack{Config: opts.Config, log: opts.Logger}

	oopts := opts.Ops
	oopts.Platform, oopts.Persist, oopts.Logger, oopts.Now = opts.Platform, opts.State, opts.Logger, opts.Now
	var err error
	if s.Ops, err = ops.New(oopts); err != nil {
		return nil, err
	}
	if err := s.newEngines(opts); err != nil {
		return nil, err
	}
	s.Ops.SetGate(ops.Gates{s.Controls, s.Monitors})

	dopts := opts.Dispatch
	dopts.Explain, dopts.Journal, dopts.Logger = s.Ops.Explain, opts.State, opts.Logger
	if s.Dispatcher, err = dispatch.New(dopts); err != nil {
		return nil, err
	}
	for name, h := range s.Ops.Functions() {
		if err := s.Dispatcher.Register(name, h); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// newEngines builds the engines over the operations: a monitor's change
// of state reaches the copiers.
func (s *Stack) newEngines(opts Options) error {
	log := opts.Logger.Named("engine")
	now := engine.Clock(opts.Now)
	var err error
	if s.Controls, err = controls.New(controls.Options{Platform: opts.Platform, Trader: s.Ops, Config: s.Config,
		Now: now, Logger: log, TickInterval: opts.EngineTick, Reporter: opts.Reporter}); err != nil {
		return err
	}
	s.Ops.SetRefusalObserver(s.Controls.StrategyRefused)
	if s.Monitors, err = monitor.New(monitor.Options{Platform: opts.Platform, Trader: s.Ops, Config: s.Config,
		Store: opts.State, Reporter: opts.Reporter, Now: now, Logger: log, TickInterval: opts.EngineTick,
		OnState: func(account, state string) {
			if s.Copiers != nil { // set once New returns, before Run
				s.Copiers.MonitorChanged(account, state)
			}
		}}); err != nil {
		return err
	}
	if s.Copiers, err = copier.New(copier.Options{Platform: opts.Platform, Trader: s.Ops, Config: s.Config,
		Store: opts.State, Reporter: opts.Reporter, Monitors: s.Monitors, Now: now, Logger: log,
		TickInterval: opts.EngineTick}); err != nil {
		return err
	}
	if s.Exits, err = exits.New(exits.Options{Platform: opts.Platform, Trader: s.Ops, Store: opts.State,
		Reporter: opts.Reporter, Now: now, Logger: log, TickInterval: opts.EngineTick}); err != nil {
		return err
	}
	s.Ops.SetEntryWatcher(s.Exits)
	return nil
}

// Run runs the engines, each on a goroutine of its own, until ctx
// ends, and returns when all of them have stopped. An engine that fails
// before ctx ends is logged at once and the others go on; Run then
// returns the errors of those that failed early (nil when none did).
// Run once at a time.
func (s *Stack) Run(ctx context.Context) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		early []error
	)
	for _, part := range []struct {
		name string
		run  func(context.Context) error
	}{
		{"controls", s.Controls.Run},
		{"monitors", s.Monitors.Run},
		{"copiers", s.Copiers.Run},
		{"exits", s.Exits.Run},
	} {
		wg.Go(func() {
			err := part.run(ctx)
			if err == nil || ctx.Err() != nil {
				return // stopped on ctx, as asked
			}
			s.log.Warn("stopped early", zap.String("part", part.name), zap.Error(err))
			mu.Lock()
			early = append(early, fmt.Errorf("stack: the %s stopped early: %w", part.name, err))
			mu.Unlock()
		})
	}
	wg.Wait()
	return errors.Join(early...)
}
