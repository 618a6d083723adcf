package mcp

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"

	"tradebridge/protocol"
	"tradebridge/relay/activity"
	"tradebridge/relay/admit"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/events"
	"tradebridge/relay/store"
	"tradebridge/relay/tradeapi"
	"tradebridge/relay/tradecall"
)

// Path is the endpoint's path.
const Path = "/mcp"

// DoorInFlight is how many requests of one user the endpoint runs at
// once; another is 429 too_many_concurrent_requests.
const DoorInFlight = 8

// MaxBody bounds a request's body: a JSON-RPC message (or a batch) of
// tool arguments is a few kilobytes.
const MaxBody = 256 << 10

// BrokerPrefix prefixes the names of the broker family's tools
// (tv_PlaceOrder), as /v1/api/tv/ prefixes its routes.
const BrokerPrefix = "tv_"

// Door is the endpoint's admission policy (see package admit): the
// trading API's (the client address's budget, an API token, the pro plan:
// 403 plan_required) with DoorInFlight requests of a user at once. Its
// requests are the protocol's, every one a read as admission sees it: a
// tool call that writes is held to the trade scope, and charged, when it
// runs (Server.call). New fills in the address's budget.
var Door = func() admit.Door {
	d := tradecall.Door
	d.Name = "mcp"
	d.PlanDetail = "AI assistants (MCP) need the pro plan or higher"
	d.InFlight = DoorInFlight
	d.Source = protocol.SourceMCP
	d.Scope = func(*http.Request) auth.Scope { return auth.ScopeRead }
	return d
}()

// Links tells whether a user has a linked broker login: its stored link,
// store.ErrNotFound when none; store.Store implements it. One row read,
// nothing of the login's accounts: every request asks it.
type Links interface {
	BrokerLink(ctx context.Context, userID string) (store.BrokerLink, error)
}

// Manager runs the Management API's routes in process; *manage.Server
// implements it.
type Manager interface {
	Invoke(ctx context.Context, p auth.Principal, src protocol.ActivitySource, method, path string, body []byte) (int, []byte)
}

// Options configure a Server.
type Options struct {
	// Admit admits the requests (Door); the relay passes the one Admitter
	// of every door. Required.
	Admit *admit.Admitter
	// IPBudget is the per-client-address budget checked before the
	// token; nil means none.
	IPBudget *budget.Limiter
	// Trading is the user's trading budget, shared with the HTTP routes
	// and the stream socket: each trading tool call costs 1. Required.
	Trading *budget.Limiter
	// Desktop runs the desktop family's calls (the agents' hub, behind
	// the kill switch's gate). Required.
	Desktop tradecall.Caller
	// Broker runs the broker family's calls (*broker.Manager); nil lists
	// no broker tools. Links is then required.
	Broker tradecall.Caller
	Links  Links
	// Idempotency stores the outcomes of keyed writes, the store the
	// HTTP routes and the socket use. Required.
	Idempotency tradecall.IdempotencyStore
	// Events is where the writes' activity entries are published (source
	// mcp, the token's id); nil records nothing.
	Events events.Publisher
	// Activity reads the activity log for GetActivity, charged to
	// ActivityBudget (the activity route's budget, shared with it); nil
	// lists no GetActivity.
	Activity       activity.Reader
	ActivityBudget *budget.Limiter
	// Manage answers GetMonitors and GetCopiers (elite plan); nil lists
	// neither.
	Manage Manager
	// CallTimeout bounds a trading call. Default 30 s, as on HTTP.
	CallTimeout time.Duration
	// Now is the clock of idempotency records; nil means time.Now.
	Now func() time.Time
	// Version is the relay's version, told to clients as the server's.
	Version string
	Logger  *zap.Logger
}

// Server is the MCP endpoint. It is an http.Handler; it starts no
// goroutine of its own (the SDK's per-request sessions end with their
// requests), and Close makes it refuse new requests.
type Server struct {
	opts    Options
	log     *zap.Logger
	door    admit.Door
	desktop *family
	broker  *family // nil: no broker family
	sdk     http.Handler

	mu      sync.Mutex
	servers map[toolSet]*sdk.Server
	closed  bool
}

// family is one family of trading routes as tools.
type family struct {
	name   string // "" desktop, "tv" broker
	prefix string // of the tools' names
	table  *tradecall.Table
	calls  *tradecall.Calls
}

// New returns the endpoint.
func New(opts Options) (*Server, error) { return newServer(opts, tradecall.Desktop()) }

// newServer is New over the desktop family's route table desktop.
func newServer(opts Options, desktop *tradecall.Table) (*Server, error) {
	if opts.Admit == nil || opts.Trading == nil || opts.Desktop == nil || opts.Idempotency == nil {
		return nil, errors.New("mcp: Options.Admit, Options.Trading, Options.Desktop and Options.Idempotency are required")
	}
	if opts.Broker != nil && opts.Links == nil {
		return nil, errors.New("mcp: Options.Links is required with Options.Broker")
	}
	if opts.Activity != nil && opts.ActivityBudget == nil {
		return nil, errors.New("mcp: Options.ActivityBudget is required with Options.Activity")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = 30 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	s := &Server{opts: opts, log: opts.Logger.Named("mcp"), door: Door, servers: map[toolSet]*sdk.Server{}}
	s.door.IP = opts.IPBudget
	var err error
	if s.desktop, err = s.newFamily(tradeapi.FamilyDesktop, "", desktop, opts.Desktop); err != nil {
		return nil, err
	}
	if opts.Broker != nil {
		if s.broker, err = s.newFamily(tradeapi.FamilyBroker, BrokerPrefix, tradeapi.BrokerTable(), opts.Broker); err != nil {
			return nil, err
		}
	}
	h := sdk.NewStreamableHTTPHandler(s.serverOf, &sdk.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
		Logger:       slog.New(zapslog.NewHandler(s.log.Core())),
		// Every request carries a bearer token, which no page of
		// another site can make a browser send; the relay is often
		// reached through a proxy on the loopback address with its
		// public name as the Host.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        MaxBody,
	})
	s.sdk = sdkauth.RequireBearerToken(tokenInfo, &sdkauth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	return s, nil
}

// newFamily makes the tools' runner of one family: the same keyed writes
// (in the family's key space) and activity entries as its HTTP routes.
func (s *Server) newFamily(name, prefix string, table *tradecall.Table, caller tradecall.Caller) (*family, error) {
	keyed, err := tradecall.NewKeyedWrites(tradecall.KeyedOptions{Store: s.opts.Idempotency, Caller: caller,
		CallTimeout: s.opts.CallTimeout, Now: s.opts.Now, Logger: s.log, Namespace: name})
	if err != nil {
		return nil, err
	}
	calls, err := tradecall.NewCalls(tradecall.CallsOptions{Caller: caller, Keyed: keyed, Events: s.opts.Events, Now: s.opts.Now,
		Source: protocol.SourceMCP, Family: name, CallTimeout: s.opts.CallTimeout, Logger: s.log})
	if err != nil {
		return nil, err
	}
	return &family{name: name, prefix: prefix, table: table, calls: calls}, nil
}

// Mux is where Register adds the endpoint; *http.ServeMux implements it.
type Mux interface {
	Handle(pattern string, handler http.Handler)
}

// Register adds POST Path to mux: the stateless transport serves no
// other method (the relay answers them 405 method_not_allowed).
func (s *Server) Register(mux Mux) { mux.Handle(http.MethodPost+" "+Path, s) }

// Close makes the endpoint refuse new requests (503 shutting_down); the
// requests running finish. It is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

// ServeHTTP admits the request (Door), picks the tools the caller sees and
// hands the request to the SDK's transport.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ad, ok := s.opts.Admit.Admit(w, r, &s.door)
	if !ok {
		return
	}
	defer ad.Done()
	p := ad.Principal
	srv := s.server(s.toolSet(r.Context(), p))
	if srv == nil {
		writeShuttingDown(w)
		return
	}
	ctx := context.WithValue(r.Context(), requestKey{}, &admitted{p: p, srv: srv})
	s.sdk.ServeHTTP(w, r.WithContext(ctx))
}

// requestKey keys an admitted request's caller and server in its
// context.
type requestKey struct{}

type admitted struct {
	p   auth.Principal
	srv *sdk.Server
}

// serverOf is the SDK's getServer: the server ServeHTTP chose.
func (s *Server) serverOf(r *http.Request) *sdk.Server {
	if a, ok := r.Context().Value(requestKey{}).(*admitted); ok {
		return a.srv
	}
	return nil
}

// principalExtra keys the caller in the SDK's TokenInfo.Extra.
const principalExtra = "tradebridge.principal"

// tokenInfo hands the admitted caller to the SDK, which gives it to every
// handler as the request's TokenInfo: the token was checked by ServeHTTP.
func tokenInfo(ctx context.Context, _ string, _ *http.Request) (*sdkauth.TokenInfo, error) {
	a, ok := ctx.Value(requestKey{}).(*admitted)
	if !ok {
		return nil, sdkauth.ErrInvalidToken
	}
	scope := a.p.Scope
	if scope == "" {
		scope = auth.ScopeTrade
	}
	return &sdkauth.TokenInfo{UserID: a.p.UserID, Scopes: []string{string(scope)},
		Extra: map[string]any{principalExtra: a.p}}, nil
}

// principal returns the caller of a request the SDK hands a handler.
func principal(extra *sdk.RequestExtra) (auth.Principal, bool) {
	if extra == nil || extra.TokenInfo == nil {
		return auth.Principal{}, false
	}
	p, ok := extra.TokenInfo.Extra[principalExtra].(auth.Principal)
	return p, ok
}

// toolSet is which optional tools a caller sees.
type toolSet uint8

const (
	// withBroker lists the broker family's tools.
	withBroker toolSet = 1 << iota
	// withManage lists the Management API's reads.
	withManage
)

// toolSet returns the optional tools p sees: the broker family's when the
// plan includes it and a login is linked (a store that cannot say lists
// none), the Management API's reads on the elite plan.
func (s *Server) toolSet(ctx context.Context, p auth.Principal) toolSet {
	var set toolSet
	if s.opts.Manage != nil && p.Plan.AtLeast(auth.PlanElite) {
		set |= withManage
	}
	if s.broker != nil && !p.Withholds(tradeapi.FamilyBroker) {
		_, err := s.opts.Links.BrokerLink(ctx, p.UserID)
		switch {
		case err == nil:
			set |= withBroker
		case !errors.Is(err, store.ErrNotFound) && ctx.Err() == nil:
			s.log.Warn("reading the broker link", zap.String("user", p.UserID), zap.Error(err))
		}
	}
	return set
}

// server returns the SDK server of a tool set, built once; nil once the
// endpoint is closed.
func (s *Server) server(set toolSet) *sdk.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	srv := s.servers[set]
	if srv == nil {
		srv = s.build(set)
		s.servers[set] = srv
	}
	return srv
}
