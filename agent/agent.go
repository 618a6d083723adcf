// Package agent is the program that runs on the trader's PC next to the
// trading platform. It dials out to the relay (package agent/tunnel), serves
// the relay's RPCs through the dispatcher (trading/dispatch) and operations
// (trading/ops) against a platform (trading/bridge), runs the engines (copiers,
// monitors, kill switch, news lockout: trading/engine) next to the platform —
// all of them assembled by trading/stack, as the relay's broker family
// assembles them per linked login — and never listens on a port reachable
// from outside.
//
// An Agent owns every goroutine it starts: the platform's loop, the event
// forwarding, the engines and the state reports. Run returns only when all
// of them have stopped, and Close waits for Run.
package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"tradebridge/agent/tunnel"
	"tradebridge/internal/lifecycle"
	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/dispatch"
	"tradebridge/trading/engine"
	"tradebridge/trading/mgmtconfig"
	"tradebridge/trading/ops"
	"tradebridge/trading/stack"
)

// Version is the agent's version, reported in the tunnel handshake. Release
// builds set it with -ldflags "-X tradebridge/agent.Version=…" (scripts/version.sh);
// a plain go build reports 0.0.0-dev, as version.sh does outside a git checkout.
var Version = "0.0.0-dev"

// State is the agent's durable state: the last configuration the relay
// pushed, the engines' state, strategy-tag ownership and the outcomes of
// writes (agent/agentstore keeps them in one file under the agent's data
// folder).
type State interface {
	engine.Store
	dispatch.Journal
	// SaveConfig keeps cfg unless a configuration of the same or a newer
	// version is kept already.
	SaveConfig(cfg *protocol.Config) error
	// LoadConfig returns the configuration kept, or nil.
	LoadConfig() (*protocol.Config, error)
}

// Options configure an Agent.
type Options struct {
	// RelayURL is the relay's base URL (http://127.0.0.1:8080,
	// https://relay.example).
	RelayURL string
	// Token is the agent token issued for the trader.
	Token    string
	Platform bridge.Platform
	Logger   *zap.Logger
	// State keeps what the agent must not forget across a restart. Nil
	// keeps everything in memory: a restart then forgets the
	// configuration, the engines' state, strategy tags and write outcomes.
	// The caller owns it and closes it after the Agent.
	State State
	// Tunnel tunes the connection; RelayURL, Token, Hello, Handler,
	// OnConnect and Logger in it are filled by the Agent.
	Tunnel tunnel.Options
	// Ops tunes the operations (clock, waits); Platform, Persist and
	// Logger in it are filled by the Agent.
	Ops ops.Options
	// Dispatch tunes the dispatcher (write timeout, remembered outcomes);
	// Explain, Journal and Logger in it are filled by the Agent.
	Dispatch dispatch.Options
	// EngineTick is how often the engines look at the clock (trading
	// windows, auto-sync, news windows, the session reset); default 1 s.
	// Everything else they do is driven by the platform's events.
	EngineTick time.Duration
	// Diagnostics configure what the agent tells support staff
	// (FnDiagnostics, EventDiagnostics, the snapshot file).
	Diagnostics DiagnosticsOptions
}

// Agent ties a platform to the relay. Create it with New, run it with Run,
// stop it with Close.
type Agent struct {
	opts    Options
	log     *zap.Logger
	stack   *stack.Stack // its Dispatcher serves the agent's own functions too
	tunnel  *tunnel.Client
	config  *mgmtconfig.Holder
	state   State
	reports *reporter

	diagLog         *zap.Logger
	diagKick        chan struct{} // the tunnel connected: send the diagnostics
	diagMu          sync.Mutex
	snapshotFailing bool // the last snapshot write failed

	life lifecycle.Group // Run; stopped by Close
}

// New validates opts and builds the agent: it loads the configuration the
// state kept, so the engines act on it before the relay is reached.
func New(opts Options) (*Agent, error) {
	if opts.Platform == nil {
		return nil, errors.New("agent: Options.Platform is required")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.EngineTick <= 0 {
		opts.EngineTick = time.Second
	}
	if opts.Diagnostics.SnapshotEvery <= 0 {
		opts.Diagnostics.SnapshotEvery = 15 * time.Second
	}
	a := &Agent{opts: opts, log: opts.Logger, config: new(mgmtconfig.Holder), state: opts.State,
		diagLog: opts.Logger.Named("diagnostics"), diagKick: make(chan struct{}, 1)}
	if a.state == nil {
		a.state = newMemState()
	}
	saved, err := a.state.LoadConfig()
	if err != nil {
		return nil, fmt.Errorf("agent: loading the saved configuration: %w", err)
	}
	if saved != nil {
		a.config.Apply(saved)
		a.log.Info("running the configuration saved before the restart", zap.Int64("version", saved.Version))
	}

	a.reports = newReporter(opts.Logger.Named("engine"), a.state)
	if a.stack, err = stack.New(stack.Options{Platform: opts.Platform, State: a.state, Reporter: a.reports,
		Config: a.config, EngineTick: opts.EngineTick, Ops: opts.Ops, Dispatch: opts.Dispatch,
		Logger: opts.Logger}); err != nil {
		return nil, err
	}
	if err := a.register(); err != nil {
		return nil, err
	}

	topts := opts.Tunnel
	topts.RelayURL = opts.RelayURL
	topts.Token = opts.Token
	topts.Hello = a.hello
	topts.Handler = a.stack.Dispatcher
	topts.Logger = opts.Logger
	topts.OnConnect = func() {
		a.reports.resendAll()
		a.kickDiagnostics()
	}
	if a.tunnel, err = tunnel.New(topts); err != nil {
		return nil, err
	}
	a.reports.tunnel = a.tunnel
	return a, nil
}

// hello describes the platform for the tunnel handshake.
func (a *Agent) hello(ctx context.Context) (protocol.Hello, error) {
	conns, err := a.opts.Platform.Connections(ctx)
	if err != nil {
		return protocol.Hello{}, err
	}
	return protocol.Hello{
		ProtocolVersion: protocol.ProtocolVersion,
		AgentVersion:    Version,
		Platform:        a.opts.Platform.Kind(),
		Connections:     conns,
	}, nil
}

// Runner is a platform that needs a loop of its own (the simulator's
// clock-driven market); Run keeps it going until ctx ends.
type Runner interface {
	Run(ctx context.Context) error
}

// Run keeps the agent connected until ctx ends or Close is called. Beside
// the tunnel it runs the engines, forwards the platform's events and the
// engines' state reports to the relay, sends its diagnostics after each
// connection and keeps their snapshot file and, for a platform that is a
// Runner, runs its loop; it returns when all of them have stopped. An
// Agent runs once; after Close, Run returns at once.
func (a *Agent) Run(ctx context.Context) error {
	ctx, leave, ok := a.life.Enter(ctx)
	if !ok {
		return nil
	}
	defer leave()
	a.log.Info("agent starting", zap.String("version", Version), zap.String("platform", a.opts.Platform.Kind()))
	ctx, cancel := context.WithCancel(ctx)
	defer a.finalSnapshot() // runs last: everything it describes has stopped
	// Keeps the activity reports the engines made while they stopped, for
	// the next run to send.
	defer a.reports.persist()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // runs before wg.Wait: the helpers stop when the tunnel does
	goRun := func(name string, run func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(ctx); err != nil && ctx.Err() == nil {
				a.log.Warn("stopped early", zap.String("part", name), zap.Error(err))
			}
		}()
	}
	if r, ok := a.opts.Platform.(Runner); ok {
		goRun("platform loop", r.Run)
	}
	goRun("event forwarding", a.forwardEvents)
	goRun("state reports", a.reports.run)
	goRun("diagnostics", a.runDiagnostics)
	goRun("engines", a.stack.Run)
	return a.tunnel.Run(ctx)
}

// forwardEvents sends the platform's quotes to the relay while the tunnel
// is up, for the stream API's market data, and hands changes of the
// platform's connections to the reporter (which sends the latest list
// again after each reconnect). Order, execution, position and
// account events are not forwarded: nothing in the relay consumes them,
// and every frame on the tunnel delays the replies behind it (a
// market order makes six). Quotes that come while the tunnel is down are
// not queued: the relay subscribes again when the agent reconnects. The
// connections a platform reports while the agent stops are not sent.
//
// The connections are read once the events are subscribed to: a platform
// that connected before (NinjaTrader's add-on found at once, before this
// loop ran and after the handshake read its connections) sent its event
// to nobody, and every change after the subscription comes as an event.
// A platform with none yet has nothing to add to the handshake's.
func (a *Agent) forwardEvents(ctx context.Context) error {
	lost := 0
	events := a.opts.Platform.Events(ctx)
	if conns, err := a.opts.Platform.Connections(ctx); err == nil && len(conns) > 0 && ctx.Err() == nil {
		a.reports.ReportConnections(conns)
	}
	for ev := range events {
		switch {
		case ev.Lost:
			lost++
			a.log.Warn("platform events were dropped: the agent fell behind the platform", zap.Int("times", lost))
		case ev.Kind == bridge.EventQuote && a.tunnel.Connected():
			_ = a.tunnel.SendEvent(protocol.EventQuote, ev.Quote) // a dropped tunnel is the tunnel's to report
		case ev.Kind == bridge.EventConnections && ctx.Err() == nil:
			// Not once the agent is stopping: the platform's loop ends
			// with it and reports its connections gone, which is the
			// agent's going, not the platform's.
			a.reports.ReportConnections(ev.Connections)
		}
	}
	return nil
}

// Config returns the management configuration the agent runs (the one the
// relay pushed last, or the one saved before a restart).
func (a *Agent) Config() *mgmtconfig.Holder { return a.config }

// Connected reports whether the tunnel to the relay is up.
func (a *Agent) Connected() bool { return a.tunnel.Connected() }

// Close stops the agent and waits for Run and every goroutine it started.
// It does not close the platform or the state, which the caller owns. It
// is idempotent.
func (a *Agent) Close() error {
	a.life.Stop()
	a.tunnel.Close()
	a.life.Wait()
	return nil
}
