package broker

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/events"
	"tradebridge/relay/store"
	"tradebridge/trading/bridge"
	"tradebridge/trading/stack"
)

// instance is one linked login at work: its platform, and the stack over
// it (the operations, the trading gate, the engines and the dispatcher,
// trading/stack, as the agent runs next to NinjaTrader).
type instance struct {
	m        *Manager
	userID   string
	link     Link
	log      *zap.Logger
	state    userState
	platform Platform

	// stack is the operations, the engines and the dispatcher over the
	// platform.
	stack *stack.Stack

	// reload is signalled when the user's configuration changed.
	reload chan struct{}
	// version numbers the configurations applied (the Holder takes only
	// newer ones); owned by followConfig.
	version int64

	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once

	// With a Router: the end of the serving of the user's calls on it,
	// nil while they are not served; unserved is true once stopServing
	// was called.
	serveMu   sync.Mutex
	serveStop func()
	unserved  bool
}

// newInstance builds the instance of a link; start runs it.
func (m *Manager) newInstance(link Link) (*instance, error) {
	log := m.log.With(zap.String("user", link.UserID))
	in := &instance{m: m, userID: link.UserID, link: link, log: log,
		state:  userState{db: m.opts.Store, userID: link.UserID},
		reload: make(chan struct{}, 1)}
	watch := &loginWatch{m: m, link: link}
	p, err := m.opts.NewPlatform(m.ctx, PlatformConfig{Link: link, State: in.state, Logger: log.Named("tradovate"),
		SaveSession: func(ctx context.Context, s Session) error {
			return m.links.SaveSession(ctx, link.UserID, s.AccessToken, s.MDAccessToken, s.Expires, s.BrokerUserID)
		},
		OnSessionState: watch.state, OnQuotesRefused: func(instrument string, delayed bool) { m.quotesRefused(link, instrument, delayed) }})
	if err != nil {
		return nil, err
	}
	in.platform = p
	if in.stack, err = stack.New(stack.Options{Platform: p, State: in.state, Reporter: in,
		Now: m.opts.Now, EngineTick: m.opts.EngineTick, Ops: m.opts.Ops, Dispatch: m.opts.Dispatch,
		Logger: log}); err != nil {
		p.Close()
		return nil, err
	}
	return in, nil
}

// start runs the platform, the engines and the followers until stop.
func (in *instance) start(parent context.Context) {
	ctx, cancel := context.WithCancel(parent)
	in.cancel = cancel
	run := func(name string, f func(context.Context) error) {
		in.wg.Add(1)
		go func() {
			defer in.wg.Done()
			if err := f(ctx); err != nil && ctx.Err() == nil {
				in.log.Warn("stopped early", zap.String("part", name), zap.Error(err))
			}
		}()
	}
	// The configuration is applied before the engines start, so that
	// they never act on an empty one while the user has limits set.
	in.applyConfig(ctx)
	events := in.platform.Events(ctx) // before the platform runs: its first connections are seen
	run("accounts", func(ctx context.Context) error { return in.followAccounts(ctx, events) })
	run("platform", in.platform.Run)
	run("configuration", in.followConfig)
	run("engines", in.stack.Run)
	if in.m.opts.Router != nil {
		in.serve()
		run("lease", in.keepLease)
	}
}

// stop ends the instance (its calls from other nodes first) and waits
// for its goroutines, then closes the platform. It is idempotent.
func (in *instance) stop() {
	in.once.Do(func() {
		in.stopServing()
		if in.cancel != nil {
			in.cancel()
		}
		in.wg.Wait()
		in.platform.Close()
	})
}

// serve makes this node answer the user's calls forwarded by the other
// nodes, unless it does already or the instance stops. A Router that
// refuses is asked again at the next renewal of the lease.
func (in *instance) serve() {
	in.serveMu.Lock()
	defer in.serveMu.Unlock()
	if in.serveStop != nil || in.unserved {
		return
	}
	stop, err := in.m.opts.Router.Serve(in.userID, in.m.handler(in.userID))
	if err != nil {
		in.log.Warn("serving the user's calls to the other relay nodes; tried again shortly", zap.Error(err))
		return
	}
	in.serveStop = stop
}

// stopServing ends serve for good.
func (in *instance) stopServing() {
	in.serveMu.Lock()
	stop := in.serveStop
	in.serveStop, in.unserved = nil, true
	in.serveMu.Unlock()
	if stop != nil {
		stop()
	}
}

// keepLease renews the node's lease on the user's instance every
// LeaseTTL/3, each renewal given LeaseTTL/3 to answer. When one fails or
// is refused the instance stops at once, before the lease can expire
// and another node start the user's instance.
func (in *instance) keepLease(ctx context.Context) error {
	ttl := in.m.opts.LeaseTTL
	t := time.NewTicker(ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		in.serve() // if the Router refused before
		rctx, cancel := context.WithTimeout(ctx, ttl/3)
		ok, err := in.m.acquireLease(rctx, in.userID)
		cancel()
		if ctx.Err() != nil {
			return nil // stopping anyway
		}
		if err == nil && ok {
			continue
		}
		in.lose(err)
		return nil
	}
}

// lose stops the instance whose lease could not be renewed (err nil: the
// store refused it): at once it serves no more calls, its engines and
// platform stop, and the node forgets it; the rest of the stop goes on in
// the background.
func (in *instance) lose(err error) {
	m := in.m
	if err != nil {
		in.log.Error("the lease of the broker link could not be renewed: the link stops on this relay node", zap.Error(err))
	} else {
		in.log.Warn("the lease of the broker link went to another relay node: the link stops on this one")
	}
	in.stopServing()
	in.cancel()
	m.mu.Lock()
	if m.insts[in.userID] == in {
		delete(m.insts, in.userID)
	}
	// Close waits for bg after stopAll, which either finds the instance
	// (and waits for this goroutine) or runs after this Add.
	m.bg.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.bg.Done()
		in.stop()
	}()
}

// run runs fn in the instance: a protocol function in its dispatcher, or
// one of the Manager's pseudo-functions (fnPrefix).
func (in *instance) run(ctx context.Context, fn, requestID string, args json.RawMessage) (json.RawMessage, error) {
	switch fn {
	case fnConfigChanged:
		in.configChanged()
		return json.RawMessage(`{}`), nil
	case fnCheckMonitorRestart:
		var rc protocol.RestartCheck
		if err := json.Unmarshal(args, &rc); err != nil {
			return nil, protocol.NewError(protocol.CodeInvalidArgument, "the restart check is not a monitor")
		}
		v, err := in.stack.Monitors.CheckRestart(ctx, rc)
		if err != nil {
			return nil, err
		}
		return json.Marshal(v)
	case fnLinkState:
		return json.Marshal(in.liveState(ctx))
	}
	if strings.HasPrefix(fn, fnPrefix) {
		return nil, protocol.NewError(protocol.CodeUnknownFunction, "the relay's broker link does not implement this function")
	}
	if err := in.ready(ctx); err != nil {
		return nil, err
	}
	raw, perr := in.stack.Dispatcher.Handle(ctx, &protocol.Request{Fn: fn, RequestID: requestID, Args: args,
		BypassWindows: protocol.CallOptionsOf(ctx).BypassWindows})
	if perr != nil {
		return nil, callError(perr)
	}
	return raw, nil
}

// liveState tells the login's state as the platform reports it now.
func (in *instance) liveState(ctx context.Context) liveState {
	var st liveState
	if s, ok := in.platform.(stater); ok {
		ls := s.LinkState()
		st = liveState{Known: true, Session: ls.Session, TokenExpires: ls.TokenExpires, RetryAt: ls.RetryAt, Connected: ls.Connected,
			MarketData: ls.MarketData, MarketDataRefused: ls.MarketDataRefused}
	}
	st.Accounts, _ = in.liveAccounts(ctx)
	return st
}

// sameLink reports whether the stored link l is the one the instance
// runs (not deleted and linked again since).
func (in *instance) sameLink(l store.BrokerLink) bool {
	return l.Env == in.link.Env && l.Method == in.link.Method && l.LinkedAt.Equal(in.link.LinkedAt)
}

// configChanged asks followConfig to read the configuration again.
func (in *instance) configChanged() {
	select {
	case in.reload <- struct{}{}:
	default:
	}
}

// followConfig applies the user's configuration whenever it changes.
func (in *instance) followConfig(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-in.reload:
			in.applyConfig(ctx)
		}
	}
}

// applyConfig reads the user's configuration and hands it to the engines
// under the next version. A configuration that cannot be read leaves the
// engines on the one they run; the next change tries again.
func (in *instance) applyConfig(ctx context.Context) {
	if in.m.opts.Config == nil {
		return
	}
	cfg, err := in.m.opts.Config(ctx, in.userID)
	if err != nil {
		if ctx.Err() == nil {
			in.log.Warn("reading the broker engines' configuration; the engines keep the one they run", zap.Error(err))
			// Tried again on the next change, or the next start.
		}
		return
	}
	in.version++
	cfg.Version = in.version
	in.stack.Config.Apply(&cfg)
	in.log.Debug("broker engines configured", zap.Int("copiers", len(cfg.Copiers)), zap.Int("monitors", len(cfg.Monitors)),
		zap.Bool("killSwitch", cfg.Controls.KillSwitch))
}

// followAccounts keeps the login's accounts in the store whenever the
// platform reports its connections, for the Management API's broker family.
func (in *instance) followAccounts(ctx context.Context, events <-chan bridge.Event) error {
	var last []string
	keep := func() {
		accounts, ok := in.liveAccounts(ctx)
		if !ok || slices.Equal(accounts, last) {
			return // none while the broker is away: the last ones stand
		}
		if err := in.state.saveAccounts(accounts); err != nil {
			in.log.Warn("keeping the login's accounts", zap.Error(err))
			return
		}
		last = accounts
	}
	keep() // a platform connected already reports no change
	for ev := range events {
		if ev.Lost || ev.Kind == bridge.EventConnections {
			keep()
		}
	}
	return nil
}

// liveAccounts returns the login's accounts as its platform reports them
// now, sorted; false while it reports none (not connected).
func (in *instance) liveAccounts(ctx context.Context) ([]string, bool) {
	conns, err := in.platform.Connections(ctx)
	if err != nil {
		return nil, false
	}
	accounts := accountsOf(conns)
	return accounts, len(accounts) > 0
}

// accountsOf returns the accounts of conns, sorted, each once.
func accountsOf(conns []protocol.Connection) []string {
	accounts := []string{}
	for _, c := range conns {
		accounts = append(accounts, c.Accounts...)
	}
	slices.Sort(accounts)
	return slices.Compact(accounts)
}

// ReportMonitor implements engine.Reporter: the state is stored on the broker
// monitor.
func (in *instance) ReportMonitor(s protocol.MonitorState) { in.report(protocol.EventMonitorState, s) }

// ReportCopier implements engine.Reporter: the state is stored on the broker
// copier.
func (in *instance) ReportCopier(s protocol.CopierState) { in.report(protocol.EventCopierState, s) }

// ReportActivity implements engine.Reporter: the report is published as an
// agent's would be (protocol.EventActivity, the entry as data), for the
// activity log's recorder, which records each report id once.
func (in *instance) ReportActivity(e protocol.ActivityEntry) { in.report(protocol.EventActivity, e) }

func (in *instance) report(kind string, v any) {
	if in.m.opts.Events == nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		in.log.Error("encoding an engine's report", zap.Error(err))
		return
	}
	in.m.opts.Events.Publish(events.Event{Type: events.TypeBroker, UserID: in.userID, Agent: protocol.Event{Kind: kind, Data: b}})
}
