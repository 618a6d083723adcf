// Package api serves the trading API under /v1/api: it authenticates the
// bot author's API token, checks the plan, validates the request, forwards
// it as an RPC to the user's agent through package hub, and answers with the
// {"success":…} envelope. Errors carry stable codes (see Codes) and never
// repeat what the caller sent.
package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/hub"
	"tradebridge/relay/profile"
	"tradebridge/relay/store"
)

// Caller sends an RPC to a user's agent; *hub.Hub implements it.
type Caller interface {
	Call(ctx context.Context, userID, fn, requestID string, args json.RawMessage) (json.RawMessage, error)
}

// Authenticator checks API tokens; *auth.Authenticator implements it.
type Authenticator interface {
	Authenticate(ctx context.Context, token string, want auth.Kind) (auth.Principal, error)
}

// IdempotencyStore keeps the outcomes of writes by idempotency key;
// *store.SQLite implements it.
type IdempotencyStore interface {
	ClaimIdempotent(ctx context.Context, rec store.Idempotent, staleBefore, expiredBefore time.Time) (store.Idempotent, bool, error)
	FinishIdempotent(ctx context.Context, rec store.Idempotent) error
}

// Options configure the API.
type Options struct {
	Caller Caller
	Auth   Authenticator
	// Idempotency stores write outcomes by Idempotency-Key and orderId.
	Idempotency IdempotencyStore
	// Budget is the per-user trading budget, shared with the WebSocket
	// stream API. Default: a new limiter of budget.Trading.
	Budget *budget.Limiter
	// IPBudget is the per-client-address budget checked before the token.
	// Default: a new limiter of DefaultIPPolicy.
	IPBudget *budget.Limiter
	Logger   *zap.Logger
	// CallTimeout bounds the wait for the agent's answer. Default 30 s.
	CallTimeout time.Duration
	// Now is the clock of idempotency records; nil means time.Now.
	Now func() time.Time
}

// DefaultIPPolicy is the per-address budget: generous enough for several
// bots behind one address, low enough that a flood of bad tokens never
// reaches the token store.
var DefaultIPPolicy = budget.Policy{Name: "ip", Rate: 1200, Period: time.Minute, Burst: 300}

// IdempotencyTTL is how long a write's outcome answers its repeats.
const IdempotencyTTL = 24 * time.Hour

// API is the trading API's handler set.
type API struct {
	opts  Options
	log   *zap.Logger
	keyed *KeyedWrites
}

// New returns the API.
func New(opts Options) (*API, error) {
	if opts.Caller == nil || opts.Auth == nil || opts.Idempotency == nil {
		return nil, errors.New("api: Options.Caller, Options.Auth and Options.Idempotency are required")
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
		if opts.IPBudget, err = budget.New(budget.Options{Policy: DefaultIPPolicy}); err != nil {
			return nil, err
		}
	}
	keyed, err := NewKeyedWrites(KeyedOptions{Store: opts.Idempotency, Caller: opts.Caller, CallTimeout: opts.CallTimeout, Now: opts.Now, Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	return &API{opts: opts, log: opts.Logger.Named("api"), keyed: keyed}, nil
}

// Budget returns the per-user trading budget, for the stream API to share.
func (a *API) Budget() *budget.Limiter { return a.opts.Budget }

// Mux is where Register adds routes; *http.ServeMux implements it.
type Mux interface {
	Handle(pattern string, handler http.Handler)
}

// Register adds the trading routes to mux, and the contract documents,
// served without a token: the OpenAPI documents at GET
// /v1/api/openapi.json (standard profile) and
// /v1/api/openapi.compatible.json, and the stream API's AsyncAPI
// document at GET /v1/api/asyncapi.json.
func (a *API) Register(mux Mux) {
	for i := range endpoints {
		ep := &endpoints[i]
		mux.Handle(ep.Method+" "+ep.Path, a.authenticated(func(w http.ResponseWriter, r *http.Request, p auth.Principal) {
			a.serve(w, r, p, ep)
		}))
	}
	registerDocuments(mux)
}

type handlerFunc func(w http.ResponseWriter, r *http.Request, p auth.Principal)

// serve runs one endpoint for an authenticated caller within budget.
func (a *API) serve(w http.ResponseWriter, r *http.Request, p auth.Principal, ep *endpoint) {
	args, e := parseArgs(w, r, ep)
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
		httpapi.WriteError(w, http.StatusInternalServerError, httpapi.Error{Code: CodeInternal, Detail: "the relay failed to encode the request"})
		return
	}
	if f, _ := protocol.LookupFunction(fn); !f.Write {
		a.call(w, r, p, fn, "", raw)
		return
	}
	key, e := idempotencyKey(r, ep, args)
	if e != nil {
		httpapi.WriteError(w, e.Status, *e)
		return
	}
	if key == "" {
		a.call(w, r, p, fn, newRequestID(), raw)
		return
	}
	a.idempotentCall(w, r, p, ep, fn, key, raw)
}

// Error codes of the trading API that the relay itself produces; the
// agent's codes (package protocol) pass through unchanged.
const (
	CodeUnauthorized        = "unauthorized"
	CodePlanRequired        = "plan_required"
	CodeAddonDisconnected   = "addon_disconnected"
	CodeOutcomeUnknown      = "outcome_unknown"
	CodeInvalidPath         = "invalid_path"
	CodeStorageUnavailable  = "storage_unavailable"
	CodeInternal            = "internal_error"
	CodeRequestInProgress   = protocol.CodeRequestInProgress
	CodeDeadlineExceeded    = protocol.CodeDeadlineExceeded
	CodePlatformUnavailable = protocol.CodePlatformUnavailable
)

// authenticated admits a request before h runs: the client address's
// budget, then the API token, the plan, and the user's trading budget.
// Every response to an admitted request carries the user's budget in the
// RateLimit headers.
func (a *API) authenticated(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !httpapi.AllowAddress(w, r, a.opts.IPBudget) {
			return
		}
		token, _ := auth.BearerToken(r.Header)
		p, e := CheckToken(r.Context(), a.opts.Auth, token, a.log)
		if e != nil {
			httpapi.WriteError(w, e.Status, *e)
			return
		}
		pol := a.opts.Budget.Policy()
		d := a.opts.Budget.Allow(p.UserID)
		if !d.Allowed {
			httpapi.WriteRateLimited(w, pol, d)
			return
		}
		w.Header().Set("RateLimit-Policy", pol.PolicyHeader())
		w.Header().Set("RateLimit", pol.Header(d))
		h(w, r, p)
	})
}

// CheckToken runs the checks every trading request passes, on HTTP and on
// the stream socket: the API token (401 unauthorized when missing,
// malformed or revoked; 503 storage_unavailable when it cannot be looked
// up) and the plan (403 plan_required below pro). log receives store
// failures.
func CheckToken(ctx context.Context, authn Authenticator, token string, log *zap.Logger) (auth.Principal, *httpapi.Error) {
	if token == "" {
		return auth.Principal{}, &httpapi.Error{Status: http.StatusUnauthorized, Code: CodeUnauthorized, Detail: "an API token is required in the Authorization header"}
	}
	p, err := authn.Authenticate(ctx, token, auth.KindAPI)
	if err != nil {
		if errors.Is(err, auth.ErrUnauthorized) {
			return auth.Principal{}, &httpapi.Error{Status: http.StatusUnauthorized, Code: CodeUnauthorized, Detail: "the API token is missing, malformed or revoked"}
		}
		log.Error("authenticating request", zap.Error(err))
		return auth.Principal{}, &httpapi.Error{Status: http.StatusServiceUnavailable, Code: CodeStorageUnavailable, Detail: "the relay cannot check tokens right now; retry shortly", RetryAfter: 5}
	}
	if !p.Plan.AtLeast(auth.PlanPro) {
		return auth.Principal{}, &httpapi.Error{Status: http.StatusForbidden, Code: CodePlanRequired, Detail: "the trading API needs the pro plan or higher"}
	}
	return p, nil
}

// CodeRateLimited answers a request over budget (429); the OpenAPI
// document lists it among the trading API's codes. httpapi.WriteRateLimited
// writes it.
const CodeRateLimited = httpapi.CodeRateLimited

// newRequestID names a write that has no idempotency key, so that the
// agent still runs it at most once however the tunnel behaves.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "rly:" + hex.EncodeToString(b[:])
}

// call forwards one RPC and writes the outcome in the caller's response
// profile.
func (a *API) call(w http.ResponseWriter, r *http.Request, p auth.Principal, fn, requestID string, args json.RawMessage) {
	ctx, cancel := context.WithTimeout(r.Context(), a.opts.CallTimeout)
	defer cancel()
	result, err := a.opts.Caller.Call(ctx, p.UserID, fn, requestID, args)
	if err != nil {
		a.writeCallError(w, r, p, fn, err)
		return
	}
	a.writeResult(w, p, fn, result)
}

// writeResult answers with fn's result in the caller's response profile.
func (a *API) writeResult(w http.ResponseWriter, p auth.Principal, fn string, result json.RawMessage) {
	reply, e := Render(a.log, p.Profile, fn, result)
	if e != nil {
		httpapi.WriteError(w, e.Status, *e)
		return
	}
	httpapi.WriteMembers(w, http.StatusOK, reply.AppendTo)
}

// Render renders fn's result in response profile prof, for the HTTP
// routes and the WebSocket form of RPC alike. A record of the wrong shape
// is the agent's fault: it is logged and answered 500 internal_error.
func Render(log *zap.Logger, prof profile.Profile, fn string, result json.RawMessage) (profile.Reply, *httpapi.Error) {
	reply, err := profile.Render(prof, fn, result)
	if err != nil {
		log.Error("agent answered with a record of the wrong shape", zap.String("fn", fn), zap.Error(err))
		return profile.Reply{}, &httpapi.Error{Status: http.StatusInternalServerError, Code: CodeInternal,
			Detail: "the add-on answered with a result the relay cannot read"}
	}
	return reply, nil
}

// writeCallError maps a failed call to its status and code.
func (a *API) writeCallError(w http.ResponseWriter, r *http.Request, p auth.Principal, fn string, err error) {
	f, _ := protocol.LookupFunction(fn)
	if e, ok := CallError(err, f.Write); ok {
		httpapi.WriteError(w, e.Status, e)
		return
	}
	if r.Context().Err() != nil {
		// The caller went away; there is nobody to answer.
		a.log.Debug("caller left before the answer", zap.String("user", p.UserID), zap.String("fn", fn))
		return
	}
	a.log.Error("call failed", zap.String("user", p.UserID), zap.String("fn", fn), zap.Error(err))
	httpapi.WriteError(w, http.StatusInternalServerError, httpapi.Error{Code: CodeInternal, Detail: "the relay failed to complete the call"})
}

// CallError maps an error of Caller.Call to the trading API's answer: the
// HTTP status (in e.Status), the stable code and the detail. The HTTP API
// and the WebSocket form of RPC (package stream) both answer with it, so a
// failure reads the same on either transport. write says whether the
// function changes anything: a write interrupted after it was sent has an
// unknown outcome. ok is false for errors that are neither the agent's nor
// the tunnel's (the caller's own context ended, the hub is closed, a bug);
// the caller decides how to answer those.
func CallError(err error, write bool) (e httpapi.Error, ok bool) {
	var pe *protocol.Error
	switch {
	case errors.As(err, &pe):
		return httpapi.Error{Status: statusOf(pe.Code), Code: pe.Code, Detail: pe.Detail}, true
	case errors.Is(err, hub.ErrNotConnected):
		return httpapi.Error{Status: http.StatusRequestTimeout, Code: CodeAddonDisconnected, Detail: "the trading add-on is not connected: start the agent next to the platform"}, true
	case (errors.Is(err, hub.ErrConnectionLost) || errors.Is(err, hub.ErrTimeout)) && write:
		return httpapi.Error{Status: http.StatusServiceUnavailable, Code: CodeOutcomeUnknown, Detail: "the add-on did not confirm the outcome; retry with the same Idempotency-Key or orderId to learn it"}, true
	case errors.Is(err, hub.ErrConnectionLost):
		return httpapi.Error{Status: http.StatusRequestTimeout, Code: CodeAddonDisconnected, Detail: "the trading add-on disconnected during the call"}, true
	case errors.Is(err, hub.ErrTimeout):
		return httpapi.Error{Status: http.StatusGatewayTimeout, Code: CodeDeadlineExceeded, Detail: "the add-on did not answer in time"}, true
	}
	return httpapi.Error{}, false
}

// statusOf maps the agent's error codes to HTTP statuses.
func statusOf(code string) int {
	switch code {
	case protocol.CodeInternal:
		return http.StatusInternalServerError
	case protocol.CodePlatformUnavailable:
		return http.StatusRequestTimeout
	case protocol.CodeRequestInProgress:
		return http.StatusConflict
	case protocol.CodeDeadlineExceeded, protocol.CodeCancelled:
		return http.StatusGatewayTimeout
	}
	return http.StatusBadRequest
}
