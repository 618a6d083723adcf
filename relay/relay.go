// Package relay is the cloud service bot authors call. It wires the store
// (relay/store), token checks (relay/auth), one admission for every door
// (relay/admit), the agent tunnels (relay/hub), the trading API
// (relay/tradeapi), the WebSocket stream API (relay/stream), the Management API
// (relay/manage), the broker family (relay/broker), pairing a PC
// (relay/pairing), the support staff's route (relay/support) with the agents' connection history
// (relay/connhistory), the users' activity logs (relay/activity), the TradingView webhook
// (relay/webhook), the traders' dashboard (relay/dashboard) and metrics
// (relay/metrics) into one HTTP server with
// timeouts and a graceful shutdown that also closes the stream sockets and
// ends the tunnels.
//
// # Limits
//
// The relay is public, so what any client can make it hold is bounded,
// whatever the client sends (the defaults; each is an Option):
//
//   - a connection sends its request's headers within ReadHeaderTimeout
//     (10 s) of opening, or of its first byte after the previous request;
//     headers larger than 64 KiB are refused (431);
//   - a request's body arrives within BodyTimeout (10 s) of its headers
//     (else 408 body_timeout), whoever reads it;
//   - a request answered before its body was read (a refusal: 401, 403,
//     429, 404, 405, or a route that takes no body) is answered at once
//     with Connection: close, and the connection is closed at most
//     UnreadBodyGrace (1 s) later;
//   - a response is written within WriteTimeout (60 s) of the headers;
//   - an idle keep-alive connection is closed after IdleTimeout (60 s);
//   - one client address (an IPv6 /64) holds at most MaxConnsPerAddr (128)
//     open connections, WebSocket sockets and tunnels included; the next
//     is answered 429 rate_limited (policy "connections") and closed.
//
// So no request without a token holds a connection longer than
// ReadHeaderTimeout + UnreadBodyGrace (11 s), one with a token no longer
// than ReadHeaderTimeout + WriteTimeout (70 s), a connection between
// requests no longer than IdleTimeout (60 s), and one address no more than
// 128 connections.
//
// # Shutdown
//
// When Serve's context ends the relay stops accepting and lets running
// requests finish within ShutdownTimeout. If some have not by then, it
// logs a warning and cuts them short: it closes the stream sockets (1001)
// and the tunnels, so that a call waiting on an agent answers 503
// outcome_unknown (a write, recorded as such for its idempotency key) or
// 408 addon_disconnected (a read), and ends every request's context with
// httpapi.ErrShuttingDown. Serve returns only when every handler has
// returned, so that the caller may close the store; it returns nil for a
// shutdown that was asked for.
package relay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/account"
	"tradebridge/relay/activity"
	"tradebridge/relay/admit"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/alerts"
	"tradebridge/relay/auth"
	"tradebridge/relay/broker"
	"tradebridge/relay/budget"
	"tradebridge/relay/cluster"
	"tradebridge/relay/connhistory"
	"tradebridge/relay/dashboard"
	"tradebridge/relay/errcode"
	"tradebridge/relay/events"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/hub"
	"tradebridge/relay/killswitch"
	"tradebridge/relay/manage"
	"tradebridge/relay/mcp"
	"tradebridge/relay/metrics"
	"tradebridge/relay/pairing"
	"tradebridge/relay/sealed"
	"tradebridge/relay/store"
	"tradebridge/relay/stream"
	"tradebridge/relay/support"
	"tradebridge/relay/tradeapi"
	"tradebridge/relay/tradecall"
	"tradebridge/relay/webhook"
)

// Options configure a Relay.
type Options struct {
	// Store is the durable store; the Relay does not close it.
	Store  store.Store
	Logger *zap.Logger
	// ShutdownTimeout bounds the graceful shutdown. Default 10 s.
	ShutdownTimeout time.Duration
	// AuthCacheTTL is how long a checked token is trusted before it is
	// looked up again, and so how long a revocation may take to apply.
	// Default 2 s.
	AuthCacheTTL time.Duration
	// Hub tunes the tunnels; Auth, Admit, IPBudget, Logger, Metrics and
	// Events in it are filled by the Relay.
	Hub hub.Options
	// History tunes the agents' connection history; Store and Logger in
	// it are filled by the Relay. Serve runs it.
	History connhistory.Options
	// Activity tunes the users' activity logs (retention, caps); Store,
	// Publisher and Logger in it are filled by the Relay, which records
	// the spine's entries, engine reports and sessions with it and serves
	// GET /v1/api/activity. Serve prunes the logs.
	Activity activity.Options
	// Support tunes the support staff's route; Hub, Store, Admit,
	// IPBudget and Logger in it are filled by the Relay.
	Support support.Options
	// TradingBudget is the per-user budget of the trading API; the zero
	// value means budget.Trading (the spec's 180 per minute, burst 20).
	TradingBudget budget.Policy
	// IPBudget is the per-client-address budget; zero means
	// admit.DefaultIPPolicy.
	IPBudget budget.Policy
	// Budgets, when set, keeps every budget of the relay (trading,
	// per-address, the stream's subscriptions, the Management API's and
	// the support route's) and the in-flight leases where every relay node
	// sees them (a *budget.Redis), so that N nodes enforce one budget; it
	// fills Stream.SubscriptionBudget when nil, Manage.Budgets and
	// Support.Budgets. Nil means this node's memory. The caller closes it.
	Budgets budget.Backend
	// Stream tunes the WebSocket stream API; Auth, Admit, Upstream,
	// Budget, Idempotency, IPBudget, Logger and Metrics in it are filled by
	// the Relay.
	Stream stream.Options
	// Manage tunes the Management API (/v1/api/manage); Store, Hub,
	// Admitter, IPBudget and Logger in it are filled by the Relay. Its
	// Modes are the service modes, which the operator's listener serves
	// at GET and PUT manage.OperatorModesPath.
	Manage manage.Options
	// Broker configures the broker family (/v1/api/tv: linked Tradovate
	// logins run in the relay); Store, Logger, Config, Events and
	// BrowserSession (the dashboard's) in it are filled by the Relay. Its Keys seal the links' secrets; nil
	// means a key made for this Relay alone, so links stored by an
	// earlier one cannot be opened (tests only: relay serve always passes
	// its key file's).
	Broker broker.Options
	// Pairing tunes pairing a PC (POST /v1/agent/pair, DELETE
	// /v1/agent/token); Store, Admit, IPBudget, Budgets, Metrics and
	// Logger in it are filled by the Relay.
	Pairing pairing.Options
	// Alerts tunes the alerts (relay/alerts: the alert destinations'
	// deliveries); Store, Publisher, Connected, Keys (the broker's), Node
	// and Logger in it are filled by the Relay. Its AllowPrivate and SMTP
	// also rule the Management API's alert destinations.
	Alerts alerts.Options
	// Account tunes the traders' accounts (package relay/account: sign-up,
	// sign-in, the dashboard's sessions, password resets); Store, Logger,
	// Budgets and SMTP (Alerts.SMTP: one mail server) in it are filled by
	// the Relay, and its SessionIdle rules the sessions' admission too.
	Account account.Options
	// Dashboard tunes the traders' dashboard (/app, package
	// relay/dashboard): its Budget and CallTimeout; Accounts (the
	// relay's, Options.Account), Signup and EmailReset (the accounts'),
	// Admit, IPBudget, Budgets, Tokens, Pairing, Hub, Agent, Broker,
	// BrokerDoor, Manage, Activity and Logger in it are filled by the
	// Relay.
	Dashboard dashboard.Options
	// Webhook tunes the TradingView webhook (POST /v1/send/{webhookId},
	// GET /v1/api/webhook and its alerts): its Allow, DuplicateWindow and
	// AnswerWithin; Store, Keys (the broker's), Admit, Refusals, IPBudget,
	// Budget (the trading API's), Budgets, Desktop, Broker, Manage,
	// Events, Metrics and Logger in it are filled by the Relay. Serve runs
	// its sweeper.
	Webhook webhook.Options
	// MCP tunes the AI assistants' endpoint (POST /mcp, package
	// relay/mcp): its CallTimeout and Version; Admit, IPBudget, Trading
	// (the trading API's budget), Desktop, Broker, Links, Idempotency,
	// Events, Activity, ActivityBudget, Manage and Logger in it are
	// filled by the Relay.
	MCP mcp.Options

	// ReadHeaderTimeout bounds the time to receive a request's headers.
	// Default 10 s.
	ReadHeaderTimeout time.Duration
	// BodyTimeout bounds the time to receive a request's body, from when
	// its headers are in. Default 10 s (httpapi.DefaultTimeout).
	BodyTimeout time.Duration
	// UnreadBodyGrace bounds how long a connection stays open after an
	// answer sent before its request's body was read. Default 1 s.
	UnreadBodyGrace time.Duration
	// WriteTimeout bounds the time to write a response, from when the
	// request's headers are in. It must exceed the longest a request may
	// wait (its body, the agent's 30 s, the store). Default 60 s.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that sends no new request
	// for that long. Default 60 s.
	IdleTimeout time.Duration
	// MaxConnsPerAddr caps the open connections of one client address (an
	// IPv6 /64). Zero means httpapi.DefaultMaxConnsPerAddr (128); negative
	// means no cap (behind a proxy that does not keep the client's
	// address, every connection has the proxy's).
	MaxConnsPerAddr int
	// Bus is the NATS URL of the relay's nodes (relay serve --bus): this
	// node is then one of several sharing the store, and reaches the
	// agents connected to the others over the bus (package relay/cluster).
	// "" means one node: no bus at all.
	Bus string
	// BusPrefix begins the bus's subjects; the nodes of one relay share
	// it. Default cluster.DefaultPrefix ("tb").
	BusPrefix string
	// Node names this node among the relay's nodes: its agents' sessions
	// in the connection history, its broker leases and its messages on
	// the bus carry it. Required with Bus; "" on a relay that runs alone.
	Node string
	// OperatorListener, when set, is where Serve also answers the
	// operator's routes: GET /metrics (Prometheus), /healthz and /readyz,
	// and the Management API's service modes (GET and PUT
	// /v1/operator/modes).
	// /metrics is served there only, never on the public listener. Serve
	// closes it when it returns.
	OperatorListener net.Listener
}

// Defaults of Options.
const (
	DefaultShutdownTimeout   = 10 * time.Second
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
)

// ErrShutdownIncomplete reports handlers still running when Serve gave up
// waiting for them after a shutdown.
var ErrShutdownIncomplete = errors.New("relay: requests still running after shutdown")

// Relay is the relay service.
type Relay struct {
	opts     Options
	log      *zap.Logger
	hub      *hub.Hub
	cluster  *cluster.Cluster // nil without a bus
	stream   *stream.Server
	manage   *manage.Server
	broker   *broker.Manager
	history  *connhistory.Writer
	activity *activity.Recorder
	alerts   *alerts.Dispatcher
	account  *account.Service
	webhook  *webhook.Server
	mcp      *mcp.Server
	events   *events.Bus
	refusals *activity.Refusals // the users' budget refusals, aggregated for the activity log
	metrics  *metrics.Metrics
	guard    *httpapi.Guard
	patterns []string
	handler  http.Handler
	operator http.Handler
	// stopping is set when Serve starts shutting down: /readyz answers
	// 503 so that load balancers stop sending.
	stopping atomic.Bool
}

// New builds a Relay, in steps (see build): the event spine, the
// admission of every door (which tells the spine of budget refusals),
// then each part over what the earlier steps built, and last the spine's
// subscriptions and the routes. A step that fails undoes the ones before
// it.
func New(opts Options) (*Relay, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	b := &build{opts: opts, log: opts.Logger}
	r, err := b.run()
	if err != nil {
		b.undo.run()
		return nil, err
	}
	return r, nil
}

// fill checks the options and fills their defaults.
func (o *Options) fill() error {
	if o.Store == nil {
		return errors.New("relay: Options.Store is required")
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	if o.Bus != "" && o.Node == "" {
		return errors.New("relay: Options.Node is required with Options.Bus")
	}
	if o.ReadHeaderTimeout < 0 || o.BodyTimeout < 0 || o.UnreadBodyGrace < 0 || o.WriteTimeout < 0 || o.IdleTimeout < 0 {
		return errors.New("relay: Options timeouts must not be negative")
	}
	if o.ReadHeaderTimeout == 0 {
		o.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.TradingBudget == (budget.Policy{}) {
		o.TradingBudget = budget.Trading
	}
	if o.IPBudget == (budget.Policy{}) {
		o.IPBudget = admit.DefaultIPPolicy
	}
	return nil
}

// undoStack holds what to close if a later step of New fails, run last
// first.
type undoStack []func()

func (u *undoStack) push(f func()) { *u = append(*u, f) }

func (u undoStack) run() {
	for i := len(u) - 1; i >= 0; i-- {
		u[i]()
	}
}

// build is New under way: each step fills its part of the Relay.
type build struct {
	opts Options
	log  *zap.Logger
	undo undoStack
	r    *Relay

	authn   *auth.Authenticator
	adm     *admit.Admitter
	trading *budget.Limiter // the trading budget of HTTP and the socket
	perIP   *budget.Limiter // one per-address budget for every door
	up      agentcall.Caller
	// killGate is up's gate of the kill switch (relay/killswitch).
	killGate *killswitch.Gate
	trade    *tradeapi.API // the desktop family's trading routes
	broker   *tradeapi.API // the broker family's trading routes
	support  *support.Server
	pairing  *pairing.Server
	actLog   *activity.Server  // GET /v1/api/activity
	dash     *dashboard.Server // /app
	mcp      *mcp.Server       // /mcp
	keys     *sealed.Keyring   // the broker's, which seal the alerts' secrets too
}

// run runs the steps in order.
func (b *build) run() (*Relay, error) {
	b.r = &Relay{opts: b.opts, log: b.log.Named("relay"), metrics: metrics.New()}
	for _, step := range []func() error{
		b.spine,
		b.admission,
		b.tunnels,
		b.nodes,
		b.doors,
		b.brokerFamily,
		b.alerting,
		b.accounts,
		b.management,
		b.webhookDoor,
		b.supportRoute,
		b.pairingRoutes,
		b.activityRoute,
		b.dashboardRoutes,
		b.mcpDoor,
		b.subscribe,
		b.routes,
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return b.r, nil
}

// admission builds the request guard, the token checks, the budgets that
// several doors share and the one Admitter of every door.
func (b *build) admission() error {
	var err error
	o := &b.opts
	if b.r.guard, err = httpapi.NewGuard(httpapi.GuardOptions{BodyTimeout: o.BodyTimeout, UnreadBodyGrace: o.UnreadBodyGrace, WriteTimeout: o.WriteTimeout}); err != nil {
		return err
	}
	if b.authn, err = auth.New(auth.Options{Store: o.Store, CacheTTL: o.AuthCacheTTL, SessionIdle: o.Account.SessionIdle,
		Logger: b.log.Named("auth")}); err != nil {
		return err
	}
	if b.trading, err = budget.New(budget.Options{Policy: o.TradingBudget, Backend: o.Budgets}); err != nil {
		return fmt.Errorf("relay: trading budget: %w", err)
	}
	// Checked before any token, on every door (trading routes, stream,
	// tunnel).
	if b.perIP, err = budget.New(budget.Options{Policy: o.IPBudget, Backend: o.Budgets}); err != nil {
		return fmt.Errorf("relay: ip budget: %w", err)
	}
	// The users' budget refusals are recorded in the activity log,
	// aggregated per user, budget and minute.
	if b.r.refusals, err = activity.NewRefusals(activity.RefusalsOptions{Events: b.entries(), Logger: b.log}); err != nil {
		return err
	}
	b.undo.push(func() { _ = b.r.refusals.Close() })
	// Each door admits its requests through it with its own policy
	// (hub.Door, tradeapi's Door, stream.Door, …).
	b.adm, err = admit.New(admit.Options{Auth: b.authn, Logger: b.log, Leases: o.Budgets, Refusals: b.r.refusals})
	return err
}

// spine builds the event spine every producer publishes to, the
// connection history, which records the tunnels' entries from it, and the
// activity log's recorder, which records the entries, engine reports and
// sessions on it.
func (b *build) spine() error {
	bus, err := events.New(events.Options{Logger: b.log, Metrics: b.r.metrics})
	if err != nil {
		return err
	}
	b.undo.push(bus.Close)
	b.r.events = bus
	hist := b.opts.History
	hist.Store = b.opts.Store
	hist.Logger = b.log
	hist.Node = b.opts.Node
	if b.r.history, err = connhistory.New(hist); err != nil {
		return err
	}
	b.undo.push(func() { _ = b.r.history.Close() })
	act := b.opts.Activity
	act.Store = b.opts.Store
	act.Publisher = bus
	act.Logger = b.log
	act.AlsoPrune = b.opts.Store.PruneWebhookAlerts
	if b.r.activity, err = activity.New(act); err != nil {
		return err
	}
	b.undo.push(func() { _ = b.r.activity.Close() })
	return nil
}

// entries is where the doors publish the entries of the activity log:
// the spine, or nowhere when the log is off (Options.Activity.Disabled),
// so that the doors do not even build them.
func (b *build) entries() events.Publisher {
	if b.opts.Activity.Disabled {
		return nil
	}
	return b.r.events
}

// tunnels builds the hub of the agents' tunnels, publishing to the spine.
func (b *build) tunnels() error {
	hopts := b.opts.Hub
	hopts.Auth = b.authn
	hopts.Admit = b.adm
	hopts.IPBudget = b.perIP
	hopts.Logger = b.log
	hopts.Metrics = b.r.metrics
	hopts.Events = b.r.events
	// A new tunnel gets the user's stored configuration (a kill switch
	// turned on while the agent was offline) before any other call.
	r := b.r
	hopts.Prepare = func(ctx context.Context, userID string, info agentcall.Info, call hub.CallFunc) {
		r.manage.PrepareTunnel(ctx, userID, info, call)
	}
	h, err := hub.New(hopts)
	if err != nil {
		return err
	}
	b.undo.push(func() { _ = h.Close() })
	b.r.hub, b.up = h, h
	return nil
}

// nodes joins the other relay nodes when there is a bus: the users'
// agents are then reached through the cluster, wherever they are
// connected.
func (b *build) nodes() error {
	if b.opts.Bus == "" {
		return nil
	}
	cl, err := cluster.New(cluster.Options{URL: b.opts.Bus, Node: b.opts.Node, Local: b.r.hub, Prefix: b.opts.BusPrefix,
		Logger: b.log, Events: b.r.events})
	if err != nil {
		return err
	}
	b.undo.push(func() { _ = cl.Close() })
	b.r.cluster, b.up = cl, cl
	return nil
}

// doors builds the desktop family's trading routes and the stream socket,
// over one trading budget and one store of keyed writes. Every desktop
// call goes through the kill switch's gate, which refuses a user's
// entries while a kill switch stored on waits for the agent.
func (b *build) doors() error {
	var err error
	o := &b.opts
	if b.killGate, err = killswitch.New(killswitch.Options{Caller: b.up, Lookup: manage.KillSwitches(o.Store, b.log), Logger: b.log}); err != nil {
		return err
	}
	b.up = b.killGate
	if b.trade, err = tradeapi.New(tradeapi.Options{Caller: b.up, Auth: b.authn, Admit: b.adm, Idempotency: o.Store, Budget: b.trading, IPBudget: b.perIP, Logger: b.log,
		Events: b.entries()}); err != nil {
		return err
	}
	sopts := o.Stream
	sopts.Auth = b.authn
	sopts.Admit = b.adm
	sopts.Upstream = b.up
	sopts.Budget = b.trading
	sopts.Idempotency = o.Store
	sopts.IPBudget = b.perIP
	if sopts.SubscriptionBudget == nil && o.Budgets != nil {
		if sopts.SubscriptionBudget, err = budget.New(budget.Options{Policy: stream.SubscriptionPolicy, Backend: o.Budgets}); err != nil {
			return fmt.Errorf("relay: subscription budget: %w", err)
		}
	}
	sopts.Logger = b.log
	sopts.Events = b.entries()
	sopts.Metrics = b.r.metrics
	// The dashboard's pages open the socket with their session cookie.
	sopts.SessionToken = dashboard.SessionToken
	st, err := stream.New(sopts)
	if err != nil {
		return err
	}
	b.undo.push(func() { st.Close() })
	b.r.stream = st
	return nil
}

// brokerFamily builds the broker family: the links' instances run the
// trading core's operations and engines in the relay, over the
// configuration stored by the Management API, and publish what the
// engines report to the spine.
func (b *build) brokerFamily() error {
	var err error
	o := &b.opts
	bopts := o.Broker
	bopts.Store = o.Store
	bopts.Logger = b.log
	if b.r.cluster != nil {
		bopts.Router = b.r.cluster.Route("broker")
		bopts.Node = o.Node
	}
	if bopts.Keys == nil {
		if bopts.Keys, err = sealed.Generate("relay"); err != nil {
			return err
		}
	}
	b.keys = bopts.Keys
	bopts.Config = manage.BrokerConfigs(o.Store, b.log)
	bopts.Events = b.r.events
	// An OAuth link started in the dashboard ends in its browser session.
	bopts.BrowserSession = dashboard.SessionID
	bm, err := broker.New(bopts)
	if err != nil {
		return err
	}
	b.undo.push(func() { bm.Close() })
	b.r.broker = bm
	b.broker, err = tradeapi.New(tradeapi.Options{Family: tradeapi.FamilyBroker, Caller: bm, Auth: b.authn, Admit: b.adm, Idempotency: o.Store, Budget: b.trading, IPBudget: b.perIP, Logger: b.log,
		Events: b.entries()})
	return err
}

// alerting builds the alerts' dispatcher, over the broker's key ring
// and the agents' hub (or the cluster's view of every node's agents).
func (b *build) alerting() error {
	aopts := b.opts.Alerts
	aopts.Store = b.opts.Store
	aopts.Publisher = b.r.events
	aopts.Connected = b.up.Connected
	aopts.Keys = b.keys
	aopts.Node = b.opts.Node
	aopts.Logger = b.log
	d, err := alerts.New(aopts)
	if err != nil {
		return err
	}
	b.undo.push(func() { _ = d.Close() })
	b.r.alerts = d
	return nil
}

// accounts builds the traders' accounts, which mail their reset links
// through the alerts' mail server.
func (b *build) accounts() error {
	aopts := b.opts.Account
	aopts.Store = b.opts.Store
	aopts.Budgets = b.opts.Budgets
	aopts.SMTP = b.opts.Alerts.SMTP
	aopts.Logger = b.log.Named("account")
	a, err := account.New(aopts)
	if err != nil {
		return err
	}
	b.undo.push(a.Close)
	b.r.account = a
	return nil
}

// management builds the Management API.
func (b *build) management() error {
	o := &b.opts
	mopts := o.Manage
	mopts.BrokerLinks = b.r.broker
	mopts.Store = o.Store
	mopts.Hub = b.up
	mopts.Admitter = b.adm
	mopts.IPBudget = b.perIP
	mopts.Budgets = o.Budgets
	mopts.Events = b.entries()
	mopts.Logger = b.log
	mopts.Keys = b.keys
	mopts.Alerts = b.r.alerts
	mopts.AlertsAllowPrivate = b.r.alerts.AllowPrivate()
	mopts.EmailEnabled = b.r.alerts.EmailEnabled()
	mopts.KillSwitch = b.killGate
	if mopts.BodyTimeout == 0 {
		mopts.BodyTimeout = o.BodyTimeout
	}
	mg, err := manage.New(mopts)
	if err != nil {
		return err
	}
	b.undo.push(func() { _ = mg.Close() })
	b.r.manage = mg
	return nil
}

// webhookDoor builds the TradingView webhook: admitted over the
// webhooks' keys with the trading budget, its calls through the agents'
// hub or the broker family, its kill switch through the Management API.
func (b *build) webhookDoor() error {
	o := &b.opts
	w := o.Webhook
	w.Store = o.Store
	w.Keys = b.keys
	w.Admit = b.adm
	w.Refusals = b.r.refusals
	w.IPBudget = b.perIP
	w.Budget = b.trading
	w.Budgets = o.Budgets
	w.Desktop = b.up
	w.Broker = b.r.broker
	w.Manage = b.r.manage
	w.Links = o.Store
	w.Events = b.entries()
	w.Metrics = b.r.metrics
	w.Logger = b.log
	s, err := webhook.New(w)
	if err != nil {
		return err
	}
	b.undo.push(func() { _ = s.Close() })
	b.r.webhook = s
	return nil
}

// supportRoute builds the support staff's route.
func (b *build) supportRoute() error {
	sup := b.opts.Support
	sup.Hub = b.up
	sup.Store = b.opts.Store
	sup.Admit = b.adm
	sup.IPBudget = b.perIP
	sup.Budgets = b.opts.Budgets
	sup.Logger = b.log
	var err error
	b.support, err = support.New(sup)
	return err
}

// pairingRoutes builds the routes that pair a PC's agent with a user and
// let it give its token back.
func (b *build) pairingRoutes() error {
	p := b.opts.Pairing
	p.Store = b.opts.Store
	p.Admit = b.adm
	p.IPBudget = b.perIP
	p.Budgets = b.opts.Budgets
	p.Metrics = b.r.metrics
	p.Logger = b.log
	var err error
	b.pairing, err = pairing.New(p)
	return err
}

// activityRoute builds GET /v1/api/activity.
func (b *build) activityRoute() error {
	var err error
	b.actLog, err = activity.NewServer(activity.ServerOptions{Store: b.opts.Store, Admit: b.adm, IPBudget: b.perIP,
		Budgets: b.opts.Budgets, Logger: b.log})
	return err
}

// dashboardRoutes builds the traders' dashboard: one more door over the
// relay's own parts (the Management API, pairing, tokens, the agents'
// hub, the support route's view of an agent, the activity log).
func (b *build) dashboardRoutes() error {
	o := &b.opts
	d := o.Dashboard
	d.Accounts = b.r.account
	d.Signup = b.r.account.Signup()
	d.EmailReset = b.r.account.ResetByEmail()
	d.Admit = b.adm
	d.IPBudget = b.perIP
	d.Budgets = o.Budgets
	d.Tokens = dashboard.StoreTokens{Store: o.Store}
	d.Pairing = o.Store
	d.Hub = b.up
	d.Agent = b.support
	d.Broker = b.r.broker
	d.BrokerDoor = b.broker.Door()
	d.Manage = b.r.manage
	d.Activity = o.Store
	d.Webhook = b.r.webhook
	d.Logger = b.log
	var err error
	b.dash, err = dashboard.New(d)
	return err
}

// mcpDoor builds the AI assistants' endpoint: one more door over the
// trading calls (the hub behind the kill switch's gate, the broker
// family), the trading and activity budgets, the activity log and the
// Management API's reads.
func (b *build) mcpDoor() error {
	o := &b.opts
	m := o.MCP
	m.Admit = b.adm
	m.IPBudget = b.perIP
	m.Trading = b.trading
	m.Desktop = b.up
	m.Broker = b.r.broker
	m.Links = o.Store
	m.Idempotency = o.Store
	m.Events = b.entries()
	m.Activity = o.Store
	m.ActivityBudget = b.actLog.Budget()
	m.Manage = b.r.manage
	m.Logger = b.log
	var err error
	if b.mcp, err = mcp.New(m); err != nil {
		return err
	}
	b.undo.push(func() { _ = b.mcp.Close() })
	b.r.mcp = b.mcp
	return nil
}

// activityWorkers is how many of the spine's goroutines write activity
// entries (each of another user at a time).
const activityWorkers = 2

// reportQueue bounds each user's reported states waiting to be stored by
// the Management API.
const reportQueue = 256

// subscribe subscribes the spine's consumers. The direct ones see each
// event in this order: the cluster first, so that the node serves a
// user's subject before the stream re-sends the user's subscriptions
// through it; then the stream sockets (other nodes' quotes and statuses
// too, and the activity entries); then the Management API's push on
// connect, and the connection history. The Management API stores
// reported states, and the connections of an agent that connects, from a
// queue per user, so that they are stored in the order they happened; the
// activity log records its entries, the engines' reports and the
// sessions the same way.
func (b *build) subscribe() error {
	bus, r := b.r.events, b.r
	var subs []events.Subscription
	if r.cluster != nil {
		subs = append(subs, events.Subscription{Name: "cluster", Types: []events.Type{events.TypeAgent, events.TypeStatus, events.TypeRecorded}, Handle: r.cluster.Handle})
	}
	subs = append(subs,
		events.Subscription{Name: "stream", Types: []events.Type{events.TypeAgent, events.TypeStatus, events.TypeRecorded}, Remote: true, Handle: r.stream.Handle},
		events.Subscription{Name: "manage-push", Types: []events.Type{events.TypeStatus}, Handle: func(e events.Event) {
			r.manage.HandleStatus(e.UserID, e.Connected)
		}},
		events.Subscription{Name: "connhistory", Types: []events.Type{events.TypeSession}, Handle: func(e events.Event) {
			r.history.Record(e.Session)
		}},
	)
	for _, s := range subs {
		if err := bus.Subscribe(s); err != nil {
			return err
		}
	}
	// The alerts take the entries the activity log recorded on this node
	// (another node's are alerted by that node).
	if err := bus.SubscribeQueued(events.QueuedSubscription{
		Name: "alerts", Types: []events.Type{events.TypeRecorded}, Handle: r.alerts.Handle,
	}); err != nil {
		return err
	}
	if err := bus.SubscribeQueued(events.QueuedSubscription{
		Name: "manage-reports", Types: []events.Type{events.TypeStatus, events.TypeAgent, events.TypeBroker}, Kinds: manage.ReportedKinds,
		QueueSize: reportQueue, Workers: 2,
		Handle: func(_ context.Context, e events.Event) { r.manage.HandleEvent(e) },
	}); err != nil {
		return err
	}
	return bus.SubscribeQueued(events.QueuedSubscription{
		Name: "activity", Types: activity.Types, Kinds: activity.Kinds, Workers: activityWorkers,
		Handle: r.activity.Handle,
	})
}

// routes builds the public and the operator's handlers.
func (b *build) routes() error {
	r := b.r
	mux := &routes{ServeMux: http.NewServeMux()}
	mux.Handle("GET "+protocol.ConnectPath, r.hub)
	mux.HandleFunc("GET /healthz", healthy)
	mux.HandleFunc("GET /readyz", r.ready)
	b.trade.Register(mux)
	b.broker.Register(mux)
	r.broker.Register(mux, b.adm, b.broker.Door())
	mux.Handle("GET "+stream.Path, r.stream)
	r.manage.Register(mux)
	b.support.Register(mux)
	b.pairing.Register(mux)
	b.actLog.Register(mux)
	r.webhook.Register(mux)
	b.dash.Register(mux)
	b.mcp.Register(mux)
	mux.addNotAllowed()
	mux.ServeMux.HandleFunc("/", fallback(mux.ServeMux))
	r.patterns = mux.patterns
	r.handler = r.guard.Wrap(r.requestIDs(r.metrics.Middleware(oneAuthorization(mux.ServeMux))))

	op := &routes{ServeMux: http.NewServeMux()}
	op.Handle("GET /metrics", r.metrics.Handler())
	op.HandleFunc("GET /healthz", healthy)
	op.HandleFunc("GET /readyz", r.ready)
	modes := manage.ModesHandler(r.manage.Modes())
	op.Handle("GET "+manage.OperatorModesPath, modes)
	op.Handle("PUT "+manage.OperatorModesPath, modes)
	op.addNotAllowed()
	op.ServeMux.HandleFunc("/", fallback(op.ServeMux))
	r.operator = r.guard.Wrap(op.ServeMux)
	return nil
}

// healthy answers the liveness probe.
func healthy(w http.ResponseWriter, _ *http.Request) {
	httpapi.Write(w, http.StatusOK, map[string]string{"status": "ok"})
}

// oneAuthorization refuses a request with more than one Authorization
// header, on every door (trading routes, the stream socket before its
// upgrade, the agents' tunnel), with 401 unauthorized: which header counts
// would depend on who reads it, and a proxy in front may read another one
// than the relay. auth.BearerToken finds no token in such a request either.
func oneAuthorization(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if auth.AmbiguousAuthorization(req.Header) {
			httpapi.WriteError(w, http.StatusUnauthorized, httpapi.Error{Code: errcode.Unauthorized, Detail: auth.DetailAmbiguousAuthorization})
			return
		}
		next.ServeHTTP(w, req)
	})
}

// requestIDs names every request before anything else runs: the caller's
// X-Request-Id when it is 1–64 characters of [A-Za-z0-9._-]
// (protocol.ValidTrace), else a new one. The id is set on the response
// before the handler runs, so every response carries it (and
// httpapi.WriteError repeats it as meta.requestId); it rides the request's
// context to the agent (agentcall.WithTrace) and is in the relay's log line of the
// request: debug level for successes, info for refusals and failures.
func (r *Relay) requestIDs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		id := req.Header.Get(httpapi.RequestIDHeader)
		if !protocol.ValidTrace(id) {
			id = newRequestID()
		}
		w.Header().Set(httpapi.RequestIDHeader, id)
		req = req.WithContext(agentcall.WithTrace(req.Context(), id))
		start := time.Now()
		sw := &httpapi.StatusRecorder{ResponseWriter: w}
		next.ServeHTTP(sw, req)
		level := zap.DebugLevel
		if sw.Status >= 400 {
			level = zap.InfoLevel
		}
		if ce := r.log.Check(level, "request"); ce != nil {
			route := req.Pattern
			if route == "" {
				route = "unmatched"
			}
			ce.Write(zap.String("requestId", id), zap.String("route", route), zap.Int("status", sw.Status),
				zap.Duration("took", time.Since(start)))
		}
	})
}

// newRequestID returns a fresh request id: "req-" and 16 hex digits.
func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "req-" + hex.EncodeToString(b[:])
}

// Handler returns the relay's HTTP handler.
func (r *Relay) Handler() http.Handler { return r.handler }

// OperatorHandler returns the handler of the operator's listener: GET
// /metrics, /healthz and /readyz, and GET and PUT /v1/operator/modes (the
// Management API's service modes).
func (r *Relay) OperatorHandler() http.Handler { return r.operator }

// Hub returns the relay's tunnel hub.
func (r *Relay) Hub() *hub.Hub { return r.hub }

// Cluster returns the relay's link to its other nodes; nil without a
// bus (Options.Bus).
func (r *Relay) Cluster() *cluster.Cluster { return r.cluster }

// Manage returns the relay's Management API server.
func (r *Relay) Manage() *manage.Server { return r.manage }

// Broker returns the relay's broker family (the linked logins).
func (r *Relay) Broker() *broker.Manager { return r.broker }

// Events returns the relay's event spine: a test or an operator's
// extension may subscribe to it.
func (r *Relay) Events() *events.Bus { return r.events }

// Activity returns the relay's activity log recorder.
func (r *Relay) Activity() *activity.Recorder { return r.activity }

// Account returns the traders' accounts (sign-in, sessions, passwords).
func (r *Relay) Account() *account.Service { return r.account }

// Stream returns the relay's WebSocket stream server.
func (r *Relay) Stream() *stream.Server { return r.stream }

// ready answers 200 when the store answers, and 503 shutting_down once the
// relay is shutting down.
func (r *Relay) ready(w http.ResponseWriter, req *http.Request) {
	if r.stopping.Load() {
		httpapi.WriteError(w, http.StatusServiceUnavailable, httpapi.Error{Code: errcode.ShuttingDown, Detail: "the relay is shutting down", RetryAfter: 1})
		return
	}
	ctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
	defer cancel()
	if err := r.opts.Store.Ping(ctx); err != nil {
		r.log.Warn("readiness: store unavailable", zap.Error(err))
		httpapi.WriteError(w, http.StatusServiceUnavailable, httpapi.Error{Code: errcode.StorageUnavailable, Detail: "the store does not answer"})
		return
	}
	httpapi.Write(w, http.StatusOK, map[string]string{"status": "ready"})
}

// Serve answers HTTP on ln (capped per client address, see
// Options.MaxConnsPerAddr), and the operator's routes on
// Options.OperatorListener when set, until ctx ends; then it shuts down
// (see the package documentation) and returns nil once every handler has
// returned. It returns an error when a listener fails, or
// ErrShutdownIncomplete when handlers still run after the shutdown's
// grace. A Relay serves once: after Serve returns, build a new one.
func (r *Relay) Serve(ctx context.Context, ln net.Listener) error {
	if r.opts.MaxConnsPerAddr >= 0 {
		var err error
		ln, err = httpapi.LimitListener(ln, httpapi.LimitOptions{MaxPerAddr: r.opts.MaxConnsPerAddr, OnRefuse: r.metrics.ConnectionRefused})
		if err != nil {
			return err
		}
	}
	// Requests' contexts do not end with ctx: running requests finish
	// during the graceful shutdown. hardStop ends them once it is over.
	base, hardStop := context.WithCancelCause(context.WithoutCancel(ctx))
	defer hardStop(nil)
	errLog := zap.NewStdLog(r.log.Named("http"))
	servers := []*http.Server{{
		Handler:           r.handler,
		ReadHeaderTimeout: r.opts.ReadHeaderTimeout,
		IdleTimeout:       r.opts.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          errLog,
		BaseContext:       func(net.Listener) context.Context { return base },
	}}
	listeners := []net.Listener{ln}
	if op := r.opts.OperatorListener; op != nil {
		servers = append(servers, &http.Server{
			Handler:           r.operator,
			ReadHeaderTimeout: r.opts.ReadHeaderTimeout,
			IdleTimeout:       r.opts.IdleTimeout,
			MaxHeaderBytes:    64 << 10,
			ErrorLog:          errLog,
			BaseContext:       func(net.Listener) context.Context { return base },
		})
		listeners = append(listeners, op)
	}
	errc := make(chan error, len(servers))
	for i, srv := range servers {
		go func() { errc <- srv.Serve(listeners[i]) }()
	}
	served := len(servers)
	jctx, stopJanitor := context.WithCancel(ctx)
	janitorDone := make(chan struct{})
	go func() { defer close(janitorDone); r.janitor(jctx) }()
	defer func() { stopJanitor(); <-janitorDone }()
	// The broker links start with the relay, so that their engines
	// enforce the users' limits whether or not anyone calls.
	brokerDone := make(chan struct{})
	go func() { defer close(brokerDone); _ = r.broker.Run(jctx) }()
	defer func() { stopJanitor(); <-brokerDone }()
	// The activity logs are pruned by their retention while the relay
	// serves.
	activityDone := make(chan struct{})
	go func() { defer close(activityDone); _ = r.activity.Run(jctx) }()
	defer func() { stopJanitor(); <-activityDone }()
	// The delayed alerts whose node stopped are marked failed.
	webhookDone := make(chan struct{})
	go func() { defer close(webhookDone); _ = r.webhook.Run(jctx) }()
	defer func() { stopJanitor(); <-webhookDone }()
	// The budget refusals counted are published each minute; shutdown
	// publishes the last ones before the spine closes.
	refusalsDone := make(chan struct{})
	go func() { defer close(refusalsDone); _ = r.refusals.Run(jctx) }()
	defer func() { stopJanitor(); <-refusalsDone }()
	// The connection history is written until the tunnels have ended
	// (shutdown closes the hub), so that their ends are recorded too.
	hctx, stopHistory := context.WithCancel(context.WithoutCancel(ctx))
	historyDone := make(chan struct{})
	go func() { defer close(historyDone); _ = r.history.Run(hctx) }()
	defer func() { stopHistory(); <-historyDone }()
	// The alerts are sent until the spine stops handing them entries
	// (shutdown closes it, then the dispatcher).
	alertsDone := make(chan struct{})
	go func() { defer close(alertsDone); _ = r.alerts.Run(context.WithoutCancel(ctx)) }()
	defer func() { _ = r.alerts.Close(); <-alertsDone }()
	r.log.Info("relay listening", zap.String("addr", ln.Addr().String()))
	if len(listeners) > 1 {
		r.log.Info("operator routes listening", zap.String("addr", listeners[1].Addr().String()))
	}
	var failed error
	select {
	case failed = <-errc:
		served--
		r.log.Error("a listener failed; stopping", zap.Error(failed))
	case <-ctx.Done():
		r.log.Info("relay shutting down")
	}
	err := r.shutdown(servers, hardStop)
	for range served {
		<-errc
	}
	if failed != nil {
		return fmt.Errorf("relay: serve: %w", failed)
	}
	return err
}

// shutdown stops servers gracefully within ShutdownTimeout, then cuts
// what still runs short (see the package documentation). It returns once
// every handler has returned, or ErrShutdownIncomplete.
func (r *Relay) shutdown(servers []*http.Server, hardStop context.CancelCauseFunc) error {
	r.stopping.Store(true)
	grace := r.opts.ShutdownTimeout
	cut := !shutdownAll(servers, grace)
	if cut {
		r.log.Warn("shutdown: requests still running; cutting them short",
			zap.Duration("shutdownTimeout", grace), zap.Int("running", r.guard.Running()))
	}
	// Hijacked connections are not waited for by Shutdown: the stream
	// sockets close first, so that they hear 1001 rather than a lost
	// agent, then the tunnels, which fails the calls still waiting on an
	// agent (their outcome is recorded, then answered).
	r.stream.Close()
	_ = r.webhook.Close()
	_ = r.mcp.Close()
	r.hub.Close()
	r.broker.Close()
	r.manage.Close()
	r.closeCluster()
	r.refusals.Close()
	// The tunnels' ends are in the history's queue by now, and in the
	// activity log's: what the spine's queues hold is handled before
	// they close.
	r.drainSpine()
	r.events.Close()
	_ = r.alerts.Close()
	_ = r.activity.Close()
	hardStop(httpapi.ErrShuttingDown)
	// Wait for the handlers to answer; those that have not within grace
	// (a body still trickling in, a client that does not read) lose their
	// connections, which ends them.
	wctx, cancel := context.WithTimeout(context.Background(), grace)
	err := r.guard.Wait(wctx)
	cancel()
	if err == nil {
		// Every handler returned; net/http sends what they answered
		// after they return, then closes the connections.
		shutdownAll(servers, grace)
	}
	for _, srv := range servers {
		_ = srv.Close()
	}
	if err != nil {
		wctx, cancel := context.WithTimeout(context.Background(), grace)
		err = r.guard.Wait(wctx)
		cancel()
	}
	if err != nil {
		n := r.guard.Running()
		r.log.Error("shutdown: requests still running; giving up on them", zap.Int("running", n))
		return fmt.Errorf("%w: %d", ErrShutdownIncomplete, n)
	}
	if cut {
		r.log.Warn("shutdown: requests cut short; all handlers returned")
	}
	return nil
}

// shutdownAll shuts servers down (http.Server.Shutdown) side by side and
// reports whether they all finished within timeout.
func shutdownAll(servers []*http.Server, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	errs := make(chan error, len(servers))
	for _, srv := range servers {
		go func() { errs <- srv.Shutdown(ctx) }()
	}
	ok := true
	for range servers {
		if err := <-errs; errors.Is(err, context.DeadlineExceeded) {
			ok = false
		}
	}
	return ok
}

// janitor deletes expired idempotency records and the dashboard's ended
// sessions every hour until ctx ends.
func (r *Relay) janitor(ctx context.Context) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		if n, err := r.opts.Store.PurgeIdempotent(ctx, time.Now().Add(-tradecall.IdempotencyTTL)); err != nil && ctx.Err() == nil {
			r.log.Warn("purging idempotency records", zap.Error(err))
		} else if n > 0 {
			r.log.Info("purged idempotency records", zap.Int("count", n))
		}
		if n, err := r.account.PruneSessions(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("pruning ended sessions", zap.Error(err))
		} else if n > 0 {
			r.log.Info("pruned ended sessions", zap.Int("count", n))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Close releases the relay's stream sockets and tunnels. Serve calls it on
// shutdown; it is idempotent.
func (r *Relay) Close() error {
	r.stream.Close()
	_ = r.webhook.Close()
	_ = r.mcp.Close()
	err := r.hub.Close()
	r.broker.Close()
	r.manage.Close()
	r.closeCluster()
	r.refusals.Close()
	r.drainSpine()
	r.events.Close()
	_ = r.alerts.Close()
	r.account.Close()
	r.history.Close()
	r.activity.Close()
	return err
}

// drainTimeout bounds how long a closing relay waits for the spine's
// queued subscribers (the activity log, the alerts, the reported states)
// to handle what its producers published last.
const drainTimeout = 2 * time.Second

// drainSpine lets the spine's queued subscribers handle what waits for
// them, within drainTimeout.
func (r *Relay) drainSpine() {
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	// The spine's queues, the entries the activity log has taken from
	// them, then what it published of those (to the alerts).
	err := r.events.Drain(ctx)
	if err == nil {
		err = r.activity.Flush(ctx)
	}
	if err == nil {
		err = r.events.Drain(ctx)
	}
	if err != nil {
		r.log.Warn("shutdown: events still queued were dropped", zap.Duration("waited", drainTimeout))
	}
}

// closeCluster leaves the bus, after the hub (its tunnels' ends reach the
// other nodes) and the users of the cluster.
func (r *Relay) closeCluster() {
	if r.cluster != nil {
		r.cluster.Close()
	}
}

// Routes lists the patterns of the relay's public routes ("GET
// /v1/api/accounts"), in the order they were registered, the 405 answers
// of other methods left out.
func (r *Relay) Routes() []string { return slices.Clone(r.patterns) }
