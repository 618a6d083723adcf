// Package agent is the program that runs on the trader's PC next to the
// trading platform. It dials out to the relay (package agent/tunnel), serves
// the relay's RPCs through the dispatcher (agent/dispatch) and operations
// (agent/ops) against a platform (agent/bridge), and never listens on a port
// reachable from outside.
package agent

import (
	"context"
	"errors"
	"sync"

	"go.uber.org/zap"

	"tradebridge/agent/bridge"
	"tradebridge/agent/dispatch"
	"tradebridge/agent/mgmtconfig"
	"tradebridge/agent/ops"
	"tradebridge/agent/tunnel"
	"tradebridge/protocol"
)

// Version is the agent's version, reported in the tunnel handshake. Release
// builds set it with -ldflags "-X tradebridge/agent.Version=…".
var Version = "0.1.0-dev"

// Options configure an Agent.
type Options struct {
	// RelayURL is the relay's base URL (http://127.0.0.1:8080,
	// https://relay.example).
	RelayURL string
	// Token is the agent token issued for the trader.
	Token    string
	Platform bridge.Platform
	Logger   *zap.Logger
	// Tunnel tunes the connection; RelayURL, Token, Hello, Handler and
	// Logger in it are filled by the Agent.
	Tunnel tunnel.Options
	// Ops tunes the operations (clock, waits); Platform and Logger in it
	// are filled by the Agent.
	Ops ops.Options
	// Dispatch tunes the dispatcher (write timeout, remembered outcomes);
	// Ops and Logger in it are filled by the Agent, and Config when nil.
	Dispatch dispatch.Options
}

// Agent ties a platform to the relay. Create it with New, run it with Run,
// stop it with Close.
type Agent struct {
	opts       Options
	log        *zap.Logger
	dispatcher *dispatch.Dispatcher
	tunnel     *tunnel.Client
	closeOnce  sync.Once
}

// New validates opts and builds the agent.
func New(opts Options) (*Agent, error) {
	if opts.Platform == nil {
		return nil, errors.New("agent: Options.Platform is required")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	oopts := opts.Ops
	oopts.Platform = opts.Platform
	oopts.Logger = opts.Logger
	o, err := ops.New(oopts)
	if err != nil {
		return nil, err
	}
	dopts := opts.Dispatch
	dopts.Ops = o
	dopts.Logger = opts.Logger
	if dopts.Config == nil {
		dopts.Config = new(mgmtconfig.Holder)
	}
	d, err := dispatch.New(dopts)
	if err != nil {
		return nil, err
	}
	a := &Agent{opts: opts, log: opts.Logger, dispatcher: d}
	topts := opts.Tunnel
	topts.RelayURL = opts.RelayURL
	topts.Token = opts.Token
	topts.Hello = a.hello
	topts.Handler = d
	topts.Logger = opts.Logger
	if a.tunnel, err = tunnel.New(topts); err != nil {
		return nil, err
	}
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
// the tunnel it forwards the platform's events to the relay and, for a
// platform that is a Runner, runs its loop; it returns when all of them
// have stopped.
func (a *Agent) Run(ctx context.Context) error {
	a.log.Info("agent starting", zap.String("version", Version), zap.String("platform", a.opts.Platform.Kind()))
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // runs before wg.Wait: the helpers stop when the tunnel does
	if r, ok := a.opts.Platform.(Runner); ok {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Run(ctx); err != nil && ctx.Err() == nil {
				a.log.Warn("platform loop stopped", zap.Error(err))
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.forwardEvents(ctx)
	}()
	return a.tunnel.Run(ctx)
}

// forwardEvents sends the platform's quotes to the relay while the tunnel
// is up, for the stream API's market data. Order, execution, position and
// account events are not forwarded: nothing in the relay consumes them
// yet, and every frame on the tunnel delays the replies behind it (a
// market order makes six). Quotes that come while the tunnel is down are
// not queued: the relay subscribes again when the agent reconnects.
func (a *Agent) forwardEvents(ctx context.Context) {
	lost := 0
	for ev := range a.opts.Platform.Events(ctx) {
		switch {
		case ev.Lost:
			lost++
			a.log.Warn("platform events were dropped: the agent fell behind the platform", zap.Int("times", lost))
		case ev.Kind == bridge.EventQuote && a.tunnel.Connected():
			_ = a.tunnel.SendEvent(protocol.EventQuote, ev.Quote) // a dropped tunnel is the tunnel's to report
		}
	}
}

// Config returns the management configuration the relay pushed (copiers,
// monitors, controls, …), for the engines that act on it.
func (a *Agent) Config() *mgmtconfig.Holder { return a.dispatcher.Config() }

// Connected reports whether the tunnel to the relay is up.
func (a *Agent) Connected() bool { return a.tunnel.Connected() }

// Close stops the agent and waits for its goroutines. It does not close the
// platform, which the caller owns. It is idempotent.
func (a *Agent) Close() error {
	a.closeOnce.Do(func() { a.tunnel.Close() })
	return nil
}
