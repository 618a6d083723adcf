// Package api serves the trading API under /v1/api: it admits the request
// (Door, package admit: the client address's budget, the bot author's API
// token, the plan, the trading budget), validates it against the route
// table, forwards it as an RPC to the user's agent through package hub, and
// answers with the {"success":…} envelope. The call itself (arguments,
// exactly-once writes, rendering, failures) is package tradecall's, shared
// with the WebSocket door (package stream). Errors carry stable codes
// (package errcode) and never repeat what the caller sent. Every write,
// once answered, is an entry of the user's activity log (Options.Events,
// tradecall.Activity).
//
// The same package serves the broker family under /v1/api/tv (Options.Family
// FamilyBroker): a subset of the same routes, whose Caller runs the operations
// in the relay against the user's linked broker login rather than in an
// agent (package relay/broker), and the family's own OpenAPI documents.
package tradeapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/admit"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/errcode"
	"tradebridge/relay/events"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/tradecall"
)

// Authenticator checks API tokens; *auth.Authenticator implements it.
type Authenticator interface {
	Authenticate(ctx context.Context, token string, want auth.Kind) (auth.Principal, error)
}

// Options configure the API.
type Options struct {
	// Caller reaches the agents; *hub.Hub implements it. Required.
	Caller tradecall.Caller
	// Auth checks API tokens. Required unless Admit is set.
	Auth Authenticator
	// Admit admits the requests (Door); the relay passes the one
	// Admitter of every door. Default: a new Admitter of Auth.
	Admit *admit.Admitter
	// Idempotency stores write outcomes by Idempotency-Key and orderId.
	// Required.
	Idempotency tradecall.IdempotencyStore
	// Budget is the per-user trading budget, shared with the WebSocket
	// stream API. Default: a new limiter of budget.Trading.
	Budget *budget.Limiter
	// IPBudget is the per-client-address budget checked before the token.
	// Default: a new limiter of admit.DefaultIPPolicy.
	IPBudget *budget.Limiter
	Logger   *zap.Logger
	// CallTimeout bounds the wait for the agent's answer. Default 30 s.
	CallTimeout time.Duration
	// Now is the clock of idempotency records; nil means time.Now.
	Now func() time.Time
	// Family is the family of routes served: FamilyDesktop ("", the
	// routes under /v1/api, answered by the user's agent) or FamilyBroker
	// ("tv", the broker family under /v1/api/tv; see BrokerRoutes). Each
	// family is its own API with its own Caller; both share Budget, the
	// Admitter and the idempotency store, whose keys they keep apart.
	Family string
	// Events is where the writes' activity log entries are published
	// (tradecall.Activity: source api, the token's id), once the caller
	// has its answer; the relay passes its event spine. Nil records
	// nothing.
	Events events.Publisher
}

// Families of routes (Options.Family).
const (
	// FamilyDesktop is the trading API answered by the user's agent next
	// to the desktop platform, under /v1/api.
	FamilyDesktop = ""
	// FamilyBroker is the broker family, answered in the relay against the
	// user's linked Tradovate login, under /v1/api/tv.
	FamilyBroker = "tv"
)

// BrokerPrefix is the path prefix of the broker family's routes.
const BrokerPrefix = "/v1/api/tv/"

// brokerRoutes are the desktop routes the broker family serves, by method and
// desktop path; each is served at its path with /v1/api/ replaced by
// BrokerPrefix. Strategies, bars, ATM templates, watermarks, quotes and
// market info are the desktop family's only.
var brokerRoutes = map[[2]string]bool{
	{"GET", "/v1/api/accounts"}:                                      true,
	{"GET", "/v1/api/accounts/{account}"}:                            true,
	{"GET", "/v1/api/accounts/{account}/positions"}:                  true,
	{"GET", "/v1/api/accounts/{account}/position"}:                   true,
	{"GET", "/v1/api/accounts/{account}/orders"}:                     true,
	{"GET", "/v1/api/accounts/{account}/orders/{orderId}"}:           true,
	{"GET", "/v1/api/accounts/{account}/executions"}:                 true,
	{"GET", "/v1/api/executions/order/{orderId}"}:                    true,
	{"GET", "/v1/api/positions"}:                                     true,
	{"POST", "/v1/api/accounts/{account}/orders/place"}:              true,
	{"POST", "/v1/api/accounts/{account}/orders/flatplace"}:          true,
	{"POST", "/v1/api/accounts/{account}/orders/cancel"}:             true,
	{"POST", "/v1/api/accounts/{account}/orders/{orderId}/cancel"}:   true,
	{"POST", "/v1/api/accounts/{account}/orders/{orderId}/change"}:   true,
	{"POST", "/v1/api/accounts/{account}/positions/flatten"}:         true,
	{"POST", "/v1/api/positions/flatten"}:                            true,
	{"POST", "/v1/api/accounts/{account}/positions/close"}:           true,
	{"POST", "/v1/api/accounts/{account}/positions/reverse"}:         true,
	{"POST", "/v1/api/accounts/{account}/positions/reverseposition"}: true,
	{"POST", "/v1/api/accounts/{account}/orders/cancel_and_bracket"}: true,
	{"POST", "/v1/api/orders/cancelall"}:                             true,
}

// brokerEndpoints is the broker family's route table: the desktop table's
// routes of brokerRoutes, in its order, under BrokerPrefix; the routes that place
// an order of a type the caller names (place, flatplace,
// reverseposition) also take the broker's trailing types and
// trailDistance (tradecall.WithTrailingStops).
var brokerEndpoints = func() []endpoint {
	var out []endpoint
	for _, ep := range tradecall.Endpoints() {
		if brokerRoutes[[2]string{ep.Method, ep.Path}] {
			ep = tradecall.WithTrailingStops(ep)
			ep.Path = BrokerPrefix + strings.TrimPrefix(ep.Path, "/v1/api/")
			out = append(out, ep)
		}
	}
	return out
}()

var brokerTable = sync.OnceValue(func() *tradecall.Table { return tradecall.NewTable(brokerEndpoints) })

// BrokerTable returns the broker family's route table by function (its
// order types with the trailing ones), built once: the functions the
// routes under BrokerPrefix call.
func BrokerTable() *tradecall.Table { return brokerTable() }

// BrokerRoutes lists the broker family's routes as method and path pattern
// pairs ("GET", "/v1/api/tv/accounts").
func BrokerRoutes() [][2]string {
	out := make([][2]string, len(brokerEndpoints))
	for i, ep := range brokerEndpoints {
		out[i] = [2]string{ep.Method, ep.Path}
	}
	return out
}

// Door is the trading routes' admission policy (see package admit): the
// client address's budget, an API token, the pro plan (403
// plan_required), and the user's trading budget, whose state every
// admitted response carries in the RateLimit headers. New fills in the
// budgets.
var Door = func() admit.Door {
	d := tradecall.Door
	d.Name, d.RateLimitHeaders = "trading", true
	return d
}()

// BrokerDoor is the broker family's admission policy: Door's, named "tv",
// refusing a user whose plan withholds the feature "tv" with 403
// plan_required. New fills in the budgets.
var BrokerDoor = func() admit.Door {
	d := Door
	d.Name = "tv"
	d.Gate = func(_ *http.Request, p auth.Principal) *httpapi.Error {
		if p.Withholds(FamilyBroker) {
			return &httpapi.Error{Status: http.StatusForbidden, Code: errcode.PlanRequired, Detail: "the broker family is not in the plan"}
		}
		return nil
	}
	return d
}()

// API is the trading API's handler set.
type API struct {
	opts      Options
	log       *zap.Logger
	door      admit.Door
	calls     *tradecall.Calls // runs the calls, records the writes
	endpoints []endpoint
}

// New returns the API.
func New(opts Options) (*API, error) {
	if opts.Caller == nil || (opts.Auth == nil && opts.Admit == nil) || opts.Idempotency == nil {
		return nil, errors.New("api: Options.Caller, Options.Auth (or Options.Admit) and Options.Idempotency are required")
	}
	if opts.Family != FamilyDesktop && opts.Family != FamilyBroker {
		return nil, errors.New(`api: Options.Family must be "" (desktop) or "tv"`)
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
	var err error
	if opts.Budget == nil {
		if opts.Budget, err = budget.New(budget.Options{Policy: budget.Trading}); err != nil {
			return nil, err
		}
	}
	if opts.IPBudget == nil {
		if opts.IPBudget, err = budget.New(budget.Options{Policy: admit.DefaultIPPolicy}); err != nil {
			return nil, err
		}
	}
	if opts.Admit == nil {
		if opts.Admit, err = admit.New(admit.Options{Auth: opts.Auth, Logger: opts.Logger}); err != nil {
			return nil, err
		}
	}
	keyed, err := tradecall.NewKeyedWrites(tradecall.KeyedOptions{Store: opts.Idempotency, Caller: opts.Caller, CallTimeout: opts.CallTimeout, Now: opts.Now, Logger: opts.Logger,
		Namespace: opts.Family})
	if err != nil {
		return nil, err
	}
	a := &API{opts: opts, log: opts.Logger.Named("api"), door: Door, endpoints: endpoints}
	if opts.Family == FamilyBroker {
		a.log, a.door, a.endpoints = opts.Logger.Named("api").Named("tv"), BrokerDoor, brokerEndpoints
	}
	a.calls, err = tradecall.NewCalls(tradecall.CallsOptions{Caller: opts.Caller, Keyed: keyed, Events: opts.Events, Now: opts.Now,
		Source: protocol.SourceAPI, Family: opts.Family, CallTimeout: opts.CallTimeout, Logger: a.log})
	if err != nil {
		return nil, err
	}
	a.door.IP = opts.IPBudget
	a.door.Budgets = []*budget.Limiter{opts.Budget}
	return a, nil
}

// Budget returns the per-user trading budget, for the stream API to share.
func (a *API) Budget() *budget.Limiter { return a.opts.Budget }

// Door returns a copy of the API's admission policy, its budgets filled
// in (Door, or BrokerDoor for the broker family), so that other routes of the
// family (the broker links' routes) admit their requests as its trading
// routes do and draw on the same budgets.
func (a *API) Door() *admit.Door {
	d := a.door
	return &d
}

// Mux is where Register adds routes; *http.ServeMux implements it.
type Mux interface {
	Handle(pattern string, handler http.Handler)
}

// Register adds the family's trading routes to mux, and its contract
// documents, served without a token. The desktop family's are the OpenAPI
// documents at GET /v1/api/openapi.json (standard profile) and
// /v1/api/openapi.compatible.json, and the stream API's AsyncAPI
// document at GET /v1/api/asyncapi.json (DocumentPaths); the broker
// family's, its OpenAPI documents at GET /v1/api/tv/openapi.json and
// /v1/api/tv/openapi.compatible.json (BrokerDocumentPaths), which also
// describe the link routes package relay/broker registers.
func (a *API) Register(mux Mux) {
	for i := range a.endpoints {
		ep := &a.endpoints[i]
		d := a.door
		scope := ep.Scope()
		d.Scope = func(*http.Request) auth.Scope { return scope }
		mux.Handle(ep.Method+" "+ep.Path, a.authenticated(&d, func(w http.ResponseWriter, r *http.Request, p auth.Principal) {
			a.serve(w, r, p, ep)
		}))
	}
	if a.opts.Family == FamilyDesktop {
		registerDocuments(mux)
	} else {
		registerBrokerDocuments(mux)
	}
}

type handlerFunc func(w http.ResponseWriter, r *http.Request, p auth.Principal)

// serve runs one endpoint for an authenticated caller within budget.
func (a *API) serve(w http.ResponseWriter, r *http.Request, p auth.Principal, ep *endpoint) {
	args, e := tradecall.ParseHTTP(w, r, ep)
	if e != nil {
		httpapi.WriteError(w, e.Status, *e)
		return
	}
	fn := ep.Fn
	if ep.Choose != nil {
		fn = ep.Choose(args)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, httpapi.Error{Code: errcode.InternalError, Detail: "the relay failed to encode the request"})
		return
	}
	call := tradecall.SocketCall{Fn: fn, Args: raw}
	if f, _ := protocol.LookupFunction(fn); f.Write {
		key, e := idempotencyKey(r, ep, args)
		if e != nil {
			httpapi.WriteError(w, e.Status, *e)
			return
		}
		call.Write, call.Key = true, key
	}
	// A keyed write is answered its recorded outcome when it is a repeat
	// (see tradecall.KeyedWrites); any other call runs once.
	o := a.calls.Run(r.Context(), p, call)
	a.writeOutcome(w, p, o)
	if call.Write {
		// The answer is sent first (a flush; it has its Content-Length),
		// so that nothing the log does runs before the caller can read
		// it.
		_ = http.NewResponseController(w).Flush()
		a.calls.Record(p, call, o)
	}
}

// authenticated admits a request through d (the API's door, with the
// route's scope: its function's, tradecall.Endpoint.Scope) before h runs.
// Every response to an admitted request carries the user's trading budget
// in the RateLimit headers.
func (a *API) authenticated(d *admit.Door, h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ad, ok := a.opts.Admit.Admit(w, r, d)
		if !ok {
			return
		}
		defer ad.Done()
		h(w, r, ad.Principal)
	})
}

// writeResult answers with fn's result in the caller's response profile.
func (a *API) writeResult(w http.ResponseWriter, p auth.Principal, fn string, result json.RawMessage) {
	reply, e := tradecall.Render(a.log, p.Profile, fn, result)
	if e != nil {
		httpapi.WriteError(w, e.Status, *e)
		return
	}
	httpapi.WriteMembers(w, http.StatusOK, reply.AppendTo)
}
