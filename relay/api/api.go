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
	"unicode"
	"unicode/utf8"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/auth"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/hub"
)

// Caller sends an RPC to a user's agent; *hub.Hub implements it.
type Caller interface {
	Call(ctx context.Context, userID, fn, requestID string, args json.RawMessage) (json.RawMessage, error)
}

// Authenticator checks API tokens; *auth.Authenticator implements it.
type Authenticator interface {
	Authenticate(ctx context.Context, token string, want auth.Kind) (auth.Principal, error)
}

// Options configure the API.
type Options struct {
	Caller Caller
	Auth   Authenticator
	Logger *zap.Logger
	// CallTimeout bounds the wait for the agent's answer. Default 30 s.
	CallTimeout time.Duration
}

// API is the trading API's handler set.
type API struct {
	opts Options
	log  *zap.Logger
}

// New returns the API.
func New(opts Options) (*API, error) {
	if opts.Caller == nil || opts.Auth == nil {
		return nil, errors.New("api: Options.Caller and Options.Auth are required")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = 30 * time.Second
	}
	return &API{opts: opts, log: opts.Logger.Named("api")}, nil
}

// Register adds the trading routes to mux.
func (a *API) Register(mux *http.ServeMux) {
	for _, rt := range a.routes() {
		mux.Handle(rt.pattern, a.authenticated(rt.handler))
	}
}

type route struct {
	pattern string
	handler handlerFunc
}

type handlerFunc func(w http.ResponseWriter, r *http.Request, p auth.Principal)

func (a *API) routes() []route {
	return []route{
		{"GET /v1/api/accounts", a.noArgs(protocol.FnListAccounts)},
		{"GET /v1/api/accounts/{account}", a.accountOnly(protocol.FnGetAccount)},
		{"GET /v1/api/accounts/{account}/positions", a.accountOnly(protocol.FnListPositions)},
		{"POST /v1/api/accounts/{account}/orders/place", a.placeOrder},
	}
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

// authenticated checks the API token and the plan before h runs.
func (a *API) authenticated(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := auth.BearerToken(r.Header)
		if !ok {
			httpapi.WriteError(w, http.StatusUnauthorized, httpapi.Error{Code: CodeUnauthorized, Detail: "an API token is required in the Authorization header"})
			return
		}
		p, err := a.opts.Auth.Authenticate(r.Context(), token, auth.KindAPI)
		if err != nil {
			if errors.Is(err, auth.ErrUnauthorized) {
				httpapi.WriteError(w, http.StatusUnauthorized, httpapi.Error{Code: CodeUnauthorized, Detail: "the API token is missing, malformed or revoked"})
				return
			}
			a.log.Error("authenticating request", zap.Error(err))
			httpapi.WriteError(w, http.StatusServiceUnavailable, httpapi.Error{Code: CodeStorageUnavailable, Detail: "the relay cannot check tokens right now; retry shortly", RetryAfter: 5})
			return
		}
		if !p.Plan.AtLeast(auth.PlanPro) {
			httpapi.WriteError(w, http.StatusForbidden, httpapi.Error{Code: CodePlanRequired, Detail: "the trading API needs the pro plan or higher"})
			return
		}
		h(w, r, p)
	})
}

func (a *API) noArgs(fn string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p auth.Principal) {
		if e := httpapi.RejectBody(r); e != nil {
			httpapi.WriteError(w, e.Status, *e)
			return
		}
		a.call(w, r, p, fn, "", nil, nil)
	}
}

func (a *API) accountOnly(fn string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p auth.Principal) {
		if e := httpapi.RejectBody(r); e != nil {
			httpapi.WriteError(w, e.Status, *e)
			return
		}
		account, ok := pathAccount(w, r)
		if !ok {
			return
		}
		args, _ := json.Marshal(protocol.AccountArgs{Account: account})
		a.call(w, r, p, fn, "", args, nil)
	}
}

func (a *API) placeOrder(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	account, ok := pathAccount(w, r)
	if !ok {
		return
	}
	var args protocol.PlaceOrderArgs
	if e := httpapi.ReadJSON(w, r, &args, httpapi.ReadOptions{}); e != nil {
		httpapi.WriteError(w, e.Status, *e)
		return
	}
	args.Account = account
	raw, err := json.Marshal(args)
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, httpapi.Error{Code: CodeInternal, Detail: "the relay failed to encode the request"})
		return
	}
	a.call(w, r, p, protocol.FnPlaceOrder, writeRequestID(r, args.OrderID), raw, topOrderID)
}

// topOrderID lifts the new order's id to the top level of the response, where
// bot authors also look for it.
func topOrderID(result json.RawMessage) map[string]any {
	var or struct {
		OrderID string `json:"orderId"`
	}
	if json.Unmarshal(result, &or) != nil || or.OrderID == "" {
		return nil
	}
	return map[string]any{"orderId": or.OrderID}
}

// writeRequestID names a write for exactly-once execution on the agent: the
// caller's Idempotency-Key or orderId when given, else a fresh id.
func writeRequestID(r *http.Request, orderID string) string {
	if k := r.Header.Get("Idempotency-Key"); k != "" {
		return "key:" + k
	}
	if orderID != "" {
		return "order:" + orderID
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "rly:" + hex.EncodeToString(b[:])
}

// call forwards one RPC and writes the outcome. top, when set, adds
// top-level fields derived from the result.
func (a *API) call(w http.ResponseWriter, r *http.Request, p auth.Principal, fn, requestID string, args json.RawMessage, top func(json.RawMessage) map[string]any) {
	ctx, cancel := context.WithTimeout(r.Context(), a.opts.CallTimeout)
	defer cancel()
	result, err := a.opts.Caller.Call(ctx, p.UserID, fn, requestID, args)
	if err != nil {
		a.writeCallError(w, r, p, fn, err)
		return
	}
	if top != nil {
		if t := top(result); t != nil {
			httpapi.WriteWithTop(w, http.StatusOK, result, t)
			return
		}
	}
	httpapi.Write(w, http.StatusOK, result)
}

// writeCallError maps a failed call to its status and code.
func (a *API) writeCallError(w http.ResponseWriter, r *http.Request, p auth.Principal, fn string, err error) {
	f, _ := protocol.LookupFunction(fn)
	var pe *protocol.Error
	switch {
	case errors.As(err, &pe):
		httpapi.WriteError(w, statusOf(pe.Code), httpapi.Error{Code: pe.Code, Detail: pe.Detail})
	case errors.Is(err, hub.ErrNotConnected):
		httpapi.WriteError(w, http.StatusRequestTimeout, httpapi.Error{Code: CodeAddonDisconnected, Detail: "the trading add-on is not connected: start the agent next to the platform"})
	case (errors.Is(err, hub.ErrConnectionLost) || errors.Is(err, hub.ErrTimeout)) && f.Write:
		httpapi.WriteError(w, http.StatusServiceUnavailable, httpapi.Error{Code: CodeOutcomeUnknown, Detail: "the add-on did not confirm the outcome; retry with the same Idempotency-Key or orderId to learn it"})
	case errors.Is(err, hub.ErrConnectionLost):
		httpapi.WriteError(w, http.StatusRequestTimeout, httpapi.Error{Code: CodeAddonDisconnected, Detail: "the trading add-on disconnected during the call"})
	case errors.Is(err, hub.ErrTimeout):
		httpapi.WriteError(w, http.StatusGatewayTimeout, httpapi.Error{Code: CodeDeadlineExceeded, Detail: "the add-on did not answer in time"})
	case r.Context().Err() != nil:
		// The caller went away; there is nobody to answer.
		a.log.Debug("caller left before the answer", zap.String("user", p.UserID), zap.String("fn", fn))
	default:
		a.log.Error("call failed", zap.String("user", p.UserID), zap.String("fn", fn), zap.Error(err))
		httpapi.WriteError(w, http.StatusInternalServerError, httpapi.Error{Code: CodeInternal, Detail: "the relay failed to complete the call"})
	}
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

// pathAccount returns the decoded {account} path value, or answers 400
// invalid_path.
func pathAccount(w http.ResponseWriter, r *http.Request) (string, bool) {
	account := r.PathValue("account")
	if !validName(account) {
		httpapi.WriteError(w, http.StatusBadRequest, httpapi.Error{Code: CodeInvalidPath, Detail: "the account name in the path is not valid"})
		return "", false
	}
	return account, true
}

// validName accepts 1–64 printable characters with no leading or trailing
// space: account names as platforms show them (Sim101, APEX-12345-01).
func validName(s string) bool {
	if s == "" || len(s) > 64 || !utf8.ValidString(s) || s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}
