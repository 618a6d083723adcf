// Package relay is the cloud service bot authors call. It wires the store
// (relay/store), token checks (relay/auth), the agent tunnels (relay/hub),
// the trading API (relay/api), the WebSocket stream API (relay/stream) and
// metrics (relay/metrics) into one HTTP server with timeouts and a graceful
// shutdown that also closes the stream sockets and ends the tunnels.
package relay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/api"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/hub"
	"tradebridge/relay/metrics"
	"tradebridge/relay/store"
	"tradebridge/relay/stream"
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
	// Hub tunes the tunnels; Auth, Logger and Metrics in it are filled by
	// the Relay.
	Hub hub.Options
	// TradingBudget is the per-user budget of the trading API; the zero
	// value means budget.Trading (the spec's 180 per minute, burst 20).
	TradingBudget budget.Policy
	// IPBudget is the per-client-address budget; zero means
	// api.DefaultIPPolicy.
	IPBudget budget.Policy
	// Stream tunes the WebSocket stream API; Auth, Upstream, Budget,
	// Idempotency, IPBudget, Logger and Metrics in it are filled by the
	// Relay.
	Stream stream.Options
}

// Relay is the relay service.
type Relay struct {
	opts    Options
	log     *zap.Logger
	hub     *hub.Hub
	stream  *stream.Server
	metrics *metrics.Metrics
	handler http.Handler
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
		opts.ShutdownTimeout = 10 * time.Second
	}
	authn, err := auth.New(auth.Options{Store: opts.Store, CacheTTL: opts.AuthCacheTTL, Logger: opts.Logger.Named("auth")})
	if err != nil {
		return nil, err
	}
	m := metrics.New()
	hopts := opts.Hub
	hopts.Auth = authn
	hopts.Logger = opts.Logger
	hopts.Metrics = m
	// The stream server needs the hub, and the hub its callbacks: they
	// reach it through streams once it exists (before anything is served).
	var streams atomic.Pointer[stream.Server]
	onEvent, onStatus := hopts.OnEvent, hopts.OnStatus
	hopts.OnEvent = func(e hub.Event) {
		if onEvent != nil {
			onEvent(e)
		}
		if st := streams.Load(); st != nil {
			st.HandleEvent(e.UserID, e.Event)
		}
	}
	hopts.OnStatus = func(userID string, connected bool) {
		if onStatus != nil {
			onStatus(userID, connected)
		}
		if st := streams.Load(); st != nil {
			st.HandleStatus(userID, connected)
		}
	}
	h, err := hub.New(hopts)
	if err != nil {
		return nil, err
	}
	if opts.TradingBudget == (budget.Policy{}) {
		opts.TradingBudget = budget.Trading
	}
	if opts.IPBudget == (budget.Policy{}) {
		opts.IPBudget = api.DefaultIPPolicy
	}
	trading, err := budget.New(budget.Options{Policy: opts.TradingBudget})
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("relay: trading budget: %w", err)
	}
	perIP, err := budget.New(budget.Options{Policy: opts.IPBudget})
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("relay: ip budget: %w", err)
	}
	a, err := api.New(api.Options{Caller: h, Auth: authn, Idempotency: opts.Store, Budget: trading, IPBudget: perIP, Logger: opts.Logger})
	if err != nil {
		h.Close()
		return nil, err
	}
	sopts := opts.Stream
	sopts.Auth = authn
	sopts.Upstream = h
	sopts.Budget = a.Budget()      // one trading budget for HTTP and WebSocket
	sopts.Idempotency = opts.Store // one store of keyed writes for both doors
	sopts.IPBudget = perIP
	sopts.Logger = opts.Logger
	sopts.Metrics = m
	st, err := stream.New(sopts)
	if err != nil {
		h.Close()
		return nil, err
	}
	streams.Store(st)
	r := &Relay{opts: opts, log: opts.Logger.Named("relay"), hub: h, stream: st, metrics: m}

	mux := &routes{ServeMux: http.NewServeMux()}
	mux.Handle("GET "+protocol.ConnectPath, h)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		httpapi.Write(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", r.ready)
	mux.Handle("GET /metrics", m.Handler())
	a.Register(mux)
	mux.Handle("GET "+stream.Path, st)
	mux.addNotAllowed()
	mux.ServeMux.HandleFunc("/", fallback(mux.ServeMux))
	r.handler = r.requestIDs(m.Middleware(mux.ServeMux))
	return r, nil
}

// requestIDs names every request before anything else runs: the caller's
// X-Request-Id when it is 1–64 characters of [A-Za-z0-9._-]
// (protocol.ValidTrace), else a new one. The id is set on the response
// before the handler runs, so every response carries it (and
// httpapi.WriteError repeats it as meta.requestId); it rides the request's
// context to the agent (hub.WithTrace) and is in the relay's log line of the
// request: debug level for successes, info for refusals and failures.
func (r *Relay) requestIDs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		id := req.Header.Get(httpapi.RequestIDHeader)
		if !protocol.ValidTrace(id) {
			id = newRequestID()
		}
		w.Header().Set(httpapi.RequestIDHeader, id)
		req = req.WithContext(hub.WithTrace(req.Context(), id))
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

// Hub returns the relay's tunnel hub.
func (r *Relay) Hub() *hub.Hub { return r.hub }

// Stream returns the relay's WebSocket stream server.
func (r *Relay) Stream() *stream.Server { return r.stream }

// ready answers 200 when the store answers.
func (r *Relay) ready(w http.ResponseWriter, req *http.Request) {
	ctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
	defer cancel()
	if err := r.opts.Store.Ping(ctx); err != nil {
		r.log.Warn("readiness: store unavailable", zap.Error(err))
		httpapi.WriteError(w, http.StatusServiceUnavailable, httpapi.Error{Code: "storage_unavailable", Detail: "the store does not answer"})
		return
	}
	httpapi.Write(w, http.StatusOK, map[string]string{"status": "ready"})
}

// Serve answers HTTP on ln until ctx ends, then shuts down gracefully:
// it stops accepting, lets running requests finish within ShutdownTimeout,
// closes every stream socket (1001) and every agent tunnel.
func (r *Relay) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           r.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          zap.NewStdLog(r.log.Named("http")),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	jctx, stopJanitor := context.WithCancel(ctx)
	janitorDone := make(chan struct{})
	go func() { defer close(janitorDone); r.janitor(jctx) }()
	defer func() { stopJanitor(); <-janitorDone }()
	r.log.Info("relay listening", zap.String("addr", ln.Addr().String()))
	select {
	case err := <-errc:
		r.stream.Close()
		r.hub.Close()
		return fmt.Errorf("relay: serve: %w", err)
	case <-ctx.Done():
	}
	r.log.Info("relay shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), r.opts.ShutdownTimeout)
	defer cancel()
	// Hijacked connections (stream sockets, tunnels) are not waited for
	// by Shutdown: they are closed next, sockets first so that they hear
	// 1001 rather than a lost agent.
	err := srv.Shutdown(sctx)
	r.stream.Close()
	r.hub.Close()
	<-errc
	if err != nil {
		return fmt.Errorf("relay: shutdown: %w", err)
	}
	return nil
}

// janitor deletes expired idempotency records every hour until ctx ends.
func (r *Relay) janitor(ctx context.Context) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		if n, err := r.opts.Store.PurgeIdempotent(ctx, time.Now().Add(-api.IdempotencyTTL)); err != nil && ctx.Err() == nil {
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
	return r.hub.Close()
}
