// Package relay is the cloud service bot authors call. It wires the store
// (relay/store), token checks (relay/auth), one admission for every door
// (relay/admit), the agent tunnels (relay/hub), the trading API
// (relay/api), the WebSocket stream API (relay/stream), the Management API
// (relay/manage), the broker family (relay/broker), the support staff's
// route (relay/support) with the agents' connection history
// (relay/history) and metrics (relay/metrics) into one HTTP server with
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
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/admit"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/auth"
	"tradebridge/relay/broker"
	"tradebridge/relay/budget"
	"tradebridge/relay/cluster"
	"tradebridge/relay/connhistory"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/hub"
	"tradebridge/relay/manage"
	"tradebridge/relay/metrics"
	"tradebridge/relay/sealed"
	"tradebridge/relay/store"
	"tradebridge/relay/stream"
	"tradebridge/relay/support"
	"tradebridge/relay/tradeapi"
	"tradebridge/relay/tradecall"
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
	// Hub tunes the tunnels; Auth, Admit, IPBudget, Logger and Metrics in
	// it are filled by the Relay, and its OnSession is called before the
	// Relay's connection history records the entry.
	Hub hub.Options
	// History tunes the agents' connection history; Store and Logger in
	// it are filled by the Relay. Serve runs it.
	History connhistory.Options
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
	// logins run in the relay); Store, Logger, Config and Report in it
	// are filled by the Relay. Its Keys seal the links' secrets; nil
	// means a key made for this Relay alone, so links stored by an
	// earlier one cannot be opened (tests only: relay serve always passes
	// its key file's).
	Broker broker.Options

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
	metrics  *metrics.Metrics
	guard    *httpapi.Guard
	patterns []string
	handler  http.Handler
	operator http.Handler
	// stopping is set when Serve starts shutting down: /readyz answers
	// 503 so that load balancers stop sending.
	stopping atomic.Bool
}

// New builds a Relay.
func New(opts Options) (*Relay, error) {
	if opts.Store == nil {
		return nil, errors.New("relay: Options.Store is required")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	if opts.Bus != "" && opts.Node == "" {
		return nil, errors.New("relay: Options.Node is required with Options.Bus")
	}
	if opts.ReadHeaderTimeout < 0 || opts.BodyTimeout < 0 || opts.UnreadBodyGrace < 0 || opts.WriteTimeout < 0 || opts.IdleTimeout < 0 {
		return nil, errors.New("relay: Options timeouts must not be negative")
	}
	if opts.ReadHeaderTimeout == 0 {
		opts.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	guard, err := httpapi.NewGuard(httpapi.GuardOptions{BodyTimeout: opts.BodyTimeout, UnreadBodyGrace: opts.UnreadBodyGrace, WriteTimeout: opts.WriteTimeout})
	if err != nil {
		return nil, err
	}
	authn, err := auth.New(auth.Options{Store: opts.Store, CacheTTL: opts.AuthCacheTTL, Logger: opts.Logger.Named("auth")})
	if err != nil {
		return nil, err
	}
	if opts.TradingBudget == (budget.Policy{}) {
		opts.TradingBudget = budget.Trading
	}
	if opts.IPBudget == (budget.Policy{}) {
		opts.IPBudget = admit.DefaultIPPolicy
	}
	trading, err := budget.New(budget.Options{Policy: opts.TradingBudget, Backend: opts.Budgets})
	if err != nil {
		return nil, fmt.Errorf("relay: trading budget: %w", err)
	}
	// One per-address budget for every door (trading routes, stream,
	// tunnel), checked before any token.
	perIP, err := budget.New(budget.Options{Policy: opts.IPBudget, Backend: opts.Budgets})
	if err != nil {
		return nil, fmt.Errorf("relay: ip budget: %w", err)
	}
	// One admission for every door: each admits its requests through it
	// with its own policy (hub.Door, tradeapi.Door, stream.Door).
	adm, err := admit.New(admit.Options{Auth: authn, Logger: opts.Logger, Leases: opts.Budgets})
	if err != nil {
		return nil, err
	}
	m := metrics.New()
	hist := opts.History
	hist.Store = opts.Store
	hist.Logger = opts.Logger
	hist.Node = opts.Node
	writer, err := connhistory.New(hist)
	if err != nil {
		return nil, err
	}
	hopts := opts.Hub
	hopts.Auth = authn
	hopts.Admit = adm
	hopts.IPBudget = perIP
	hopts.Logger = opts.Logger
	hopts.Metrics = m
	// The stream server needs the hub, and the hub its callbacks: they
	// reach it through streams once it exists (before anything is served).
	var streams atomic.Pointer[stream.Server]
	var managers atomic.Pointer[manage.Server]
	var clusters atomic.Pointer[cluster.Cluster]
	onEvent, onStatus := hopts.OnEvent, hopts.OnStatus
	hopts.OnEvent = func(e hub.Event) {
		if onEvent != nil {
			onEvent(e)
		}
		if cl := clusters.Load(); cl != nil {
			cl.HandleEvent(e)
		}
		if st := streams.Load(); st != nil {
			st.HandleEvent(e.UserID, e.Event)
		}
		if mg := managers.Load(); mg != nil {
			mg.HandleEvent(e)
		}
	}
	hopts.OnStatus = func(userID string, connected bool) {
		// The cluster first: the node serves the user's subject before
		// the stream re-sends the user's subscriptions through it.
		if cl := clusters.Load(); cl != nil {
			cl.HandleStatus(userID, connected)
		}
		if onStatus != nil {
			onStatus(userID, connected)
		}
		if st := streams.Load(); st != nil {
			st.HandleStatus(userID, connected)
		}
		if mg := managers.Load(); mg != nil {
			mg.HandleStatus(userID, connected)
		}
	}
	onSession := hopts.OnSession
	hopts.OnSession = func(e agentcall.SessionEvent) {
		if onSession != nil {
			onSession(e)
		}
		writer.Record(e)
	}
	h, err := hub.New(hopts)
	if err != nil {
		return nil, err
	}
	// With a bus, the users' agents are reached through the cluster,
	// wherever they are connected.
	var up agentcall.Caller = h
	var cl *cluster.Cluster
	if opts.Bus != "" {
		cl, err = cluster.New(cluster.Options{URL: opts.Bus, Node: opts.Node, Local: h, Prefix: opts.BusPrefix, Logger: opts.Logger,
			OnRemoteEvent: func(e hub.Event) {
				if st := streams.Load(); st != nil {
					st.HandleEvent(e.UserID, e.Event)
				}
			},
			OnRemoteStatus: func(userID string, connected bool) {
				if st := streams.Load(); st != nil {
					st.HandleStatus(userID, connected)
				}
			}})
		if err != nil {
			h.Close()
			return nil, err
		}
		clusters.Store(cl)
		up = cl
	}
	closeHub := func() {
		h.Close()
		if cl != nil {
			cl.Close()
		}
	}
	a, err := tradeapi.New(tradeapi.Options{Caller: up, Auth: authn, Admit: adm, Idempotency: opts.Store, Budget: trading, IPBudget: perIP, Logger: opts.Logger})
	if err != nil {
		closeHub()
		return nil, err
	}
	sopts := opts.Stream
	sopts.Auth = authn
	sopts.Admit = adm
	sopts.Upstream = up
	sopts.Budget = a.Budget()      // one trading budget for HTTP and WebSocket
	sopts.Idempotency = opts.Store // one store of keyed writes for both doors
	sopts.IPBudget = perIP
	if sopts.SubscriptionBudget == nil && opts.Budgets != nil {
		if sopts.SubscriptionBudget, err = budget.New(budget.Options{Policy: stream.SubscriptionPolicy, Backend: opts.Budgets}); err != nil {
			closeHub()
			return nil, fmt.Errorf("relay: subscription budget: %w", err)
		}
	}
	sopts.Logger = opts.Logger
	sopts.Metrics = m
	st, err := stream.New(sopts)
	if err != nil {
		closeHub()
		return nil, err
	}
	streams.Store(st)
	// The broker family: the links' instances run the agent's operations
	// and engines in the relay; the Management API configures their
	// engines and stores what they report.
	bopts := opts.Broker
	bopts.Store = opts.Store
	bopts.Logger = opts.Logger
	if cl != nil {
		bopts.Router = cl.Route("broker")
		bopts.Node = opts.Node
	}
	if bopts.Keys == nil {
		if bopts.Keys, err = sealed.Generate("relay"); err != nil {
			st.Close()
			closeHub()
			return nil, err
		}
	}
	bopts.Config = func(ctx context.Context, userID string) (protocol.Config, error) {
		mg := managers.Load()
		if mg == nil {
			return protocol.Config{}, errors.New("relay: the Management API is not ready")
		}
		return mg.BrokerConfig(ctx, userID)
	}
	bopts.Report = func(userID, kind string, data json.RawMessage) {
		if mg := managers.Load(); mg != nil {
			mg.ReportBroker(userID, kind, data)
		}
	}
	bm, err := broker.New(bopts)
	if err != nil {
		st.Close()
		closeHub()
		return nil, err
	}
	tv, err := tradeapi.New(tradeapi.Options{Family: tradeapi.FamilyBroker, Caller: bm, Auth: authn, Admit: adm, Idempotency: opts.Store, Budget: trading, IPBudget: perIP, Logger: opts.Logger})
	if err != nil {
		bm.Close()
		st.Close()
		closeHub()
		return nil, err
	}
	mopts := opts.Manage
	mopts.BrokerLinks = bm
	mopts.Store = opts.Store
	mopts.Hub = up
	mopts.Admitter = adm
	mopts.IPBudget = perIP
	mopts.Budgets = opts.Budgets
	mopts.Logger = opts.Logger
	if mopts.BodyTimeout == 0 {
		mopts.BodyTimeout = opts.BodyTimeout
	}
	mg, err := manage.New(mopts)
	if err != nil {
		bm.Close()
		st.Close()
		closeHub()
		return nil, err
	}
	managers.Store(mg)
	sup := opts.Support
	sup.Hub = up
	sup.Store = opts.Store
	sup.Admit = adm
	sup.IPBudget = perIP
	sup.Budgets = opts.Budgets
	sup.Logger = opts.Logger
	sp, err := support.New(sup)
	if err != nil {
		mg.Close()
		bm.Close()
		st.Close()
		closeHub()
		return nil, err
	}
	r := &Relay{opts: opts, log: opts.Logger.Named("relay"), hub: h, cluster: cl, stream: st, manage: mg, broker: bm, history: writer,
		metrics: m, guard: guard}

	mux := &routes{ServeMux: http.NewServeMux()}
	mux.Handle("GET "+protocol.ConnectPath, h)
	mux.HandleFunc("GET /healthz", healthy)
	mux.HandleFunc("GET /readyz", r.ready)
	a.Register(mux)
	tv.Register(mux)
	bm.Register(mux, adm, tv.Door())
	mux.Handle("GET "+stream.Path, st)
	mg.Register(mux)
	sp.Register(mux)
	mux.addNotAllowed()
	mux.ServeMux.HandleFunc("/", fallback(mux.ServeMux))
	r.patterns = mux.patterns
	r.handler = guard.Wrap(r.requestIDs(m.Middleware(oneAuthorization(mux.ServeMux))))

	op := &routes{ServeMux: http.NewServeMux()}
	op.Handle("GET /metrics", m.Handler())
	op.HandleFunc("GET /healthz", healthy)
	op.HandleFunc("GET /readyz", r.ready)
	modes := manage.ModesHandler(mg.Modes())
	op.Handle("GET "+manage.OperatorModesPath, modes)
	op.Handle("PUT "+manage.OperatorModesPath, modes)
	op.addNotAllowed()
	op.ServeMux.HandleFunc("/", fallback(op.ServeMux))
	r.operator = guard.Wrap(op.ServeMux)
	return r, nil
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
	// The connection history is written until the tunnels have ended
	// (shutdown closes the hub), so that their ends are recorded too.
	hctx, stopHistory := context.WithCancel(context.WithoutCancel(ctx))
	historyDone := make(chan struct{})
	go func() { defer close(historyDone); _ = r.history.Run(hctx) }()
	defer func() { stopHistory(); <-historyDone }()
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
	r.hub.Close()
	r.broker.Close()
	r.manage.Close()
	r.closeCluster()
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

// janitor deletes expired idempotency records every hour until ctx ends.
func (r *Relay) janitor(ctx context.Context) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		if n, err := r.opts.Store.PurgeIdempotent(ctx, time.Now().Add(-tradecall.IdempotencyTTL)); err != nil && ctx.Err() == nil {
			r.log.Warn("purging idempotency records", zap.Error(err))
		} else if n > 0 {
			r.log.Info("purged idempotency records", zap.Int("count", n))
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
	err := r.hub.Close()
	r.broker.Close()
	r.manage.Close()
	r.closeCluster()
	r.history.Close()
	return err
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
