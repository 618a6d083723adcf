package tradeapi

import (
	"net/http"
	"slices"
	"sort"

	"tradebridge/protocol"
	"tradebridge/relay/auth"
	"tradebridge/relay/errcode"
)

// The error codes each operation documents, per HTTP status. The lists
// are decided here, from what the code can answer:
//
//   - every route: the request and access codes (401 unauthorized, 403
//     plan_required, 429 rate_limited, 408 addon_disconnected and
//     platform_unavailable, 400 invalid_argument, missing_required_fields,
//     unknown_parameter, invalid_path, unexpected_body on GET and the
//     body codes on POST, 500 internal_error, 503 storage_unavailable,
//     504 deadline_exceeded and cancelled), plus unknown_function (an
//     agent older than the relay);
//   - routes that name an account (path or body): account_not_found;
//     an instrument or root: invalid_instrument; an order id:
//     order_not_found; a strategy id: strategy_not_found;
//   - writes that touch orders and positions: the order codes (below);
//     strategy writes: strategy_not_found, strategy_terminal,
//     order_rejected, trading_blocked; both: not_supported (a platform
//     that lacks what the write needs: ATM templates, OCO groups joined
//     one order at a time, strategies);
//   - writes: 409 request_in_progress, 422 idempotency_key_reused, 503
//     outcome_unknown;
//   - routes that need the trade scope (tradecall.Endpoint.Scope: the
//     writes, whatever their method): 403 insufficient_scope, a read
//     token's answer. POST /v1/api/market/bars reads and has none.
//
// 404 not_found and 405 method_not_allowed are answered for paths and
// methods outside the table; they belong to no operation.
var (
	commonCodes = map[int][]string{
		http.StatusBadRequest:          {errcode.InvalidArgument, errcode.MissingRequiredFields, errcode.UnknownParameter, errcode.InvalidPath, protocol.CodeUnknownFunction},
		http.StatusUnauthorized:        {errcode.Unauthorized},
		http.StatusForbidden:           {errcode.PlanRequired},
		http.StatusRequestTimeout:      {errcode.AddonDisconnected, errcode.PlatformUnavailable},
		http.StatusTooManyRequests:     {errcode.RateLimited},
		http.StatusInternalServerError: {errcode.InternalError},
		http.StatusServiceUnavailable:  {errcode.StorageUnavailable, errcode.ShuttingDown},
		http.StatusGatewayTimeout:      {errcode.DeadlineExceeded, protocol.CodeCancelled},
	}
	getCodes  = map[int][]string{http.StatusBadRequest: {errcode.UnexpectedBody}}
	postCodes = map[int][]string{
		http.StatusBadRequest:            {errcode.InvalidJSON, errcode.InvalidField, errcode.UnexpectedBody},
		http.StatusRequestTimeout:        {errcode.BodyTimeout},
		http.StatusRequestEntityTooLarge: {errcode.BodyTooLarge},
		http.StatusUnsupportedMediaType:  {errcode.UnsupportedContentType},
	}
	writeCodes = map[int][]string{
		http.StatusConflict:            {errcode.RequestInProgress},
		http.StatusUnprocessableEntity: {errcode.IdempotencyKeyReused},
		http.StatusServiceUnavailable:  {errcode.OutcomeUnknown},
	}
	// orderCodes are the refusals of writes on orders and positions.
	orderCodes = []string{
		protocol.CodeOrderRejected, protocol.CodeNoPosition, protocol.CodePositionOwned,
		protocol.CodeMarketPositionMismatch, protocol.CodeMaxPositions, protocol.CodeTradingBlocked,
		protocol.CodePositionNotFlat, protocol.CodeResyncLimit, protocol.CodeTemplateNotFound,
		protocol.CodeOrderNotFound, protocol.CodeNotSupported,
	}
	// scopeCodes are the answer to a read token on a route that needs
	// the trade scope (relay/admit's RequireScope).
	scopeCodes         = map[int][]string{http.StatusForbidden: {errcode.InsufficientScope}}
	strategyWriteCodes = []string{protocol.CodeStrategyNotFound, protocol.CodeStrategyTerminal, protocol.CodeOrderRejected, protocol.CodeTradingBlocked, protocol.CodeNotSupported}
)

// errorCodes returns the codes ep documents, by status, each list sorted.
func errorCodes(ep *endpoint) map[int][]string {
	out := map[int][]string{}
	add := func(m map[int][]string) {
		for st, codes := range m {
			out[st] = append(out[st], codes...)
		}
	}
	add(commonCodes)
	if ep.Method == http.MethodGet {
		add(getCodes)
	} else {
		add(postCodes)
	}
	var agent []string
	for _, p := range ep.Params {
		switch p.Name {
		case "account":
			agent = append(agent, protocol.CodeAccountNotFound)
		case "instrument", "root":
			agent = append(agent, protocol.CodeInvalidInstrument)
		case "orderId":
			if p.In == inPath {
				agent = append(agent, protocol.CodeOrderNotFound)
			}
		case "id":
			agent = append(agent, protocol.CodeStrategyNotFound)
		}
	}
	if ep.Scope() == auth.ScopeTrade {
		add(scopeCodes)
	}
	if isWrite(ep.Fn) {
		add(writeCodes)
		if isStrategyFn(ep.Fn) {
			agent = append(agent, strategyWriteCodes...)
		} else {
			agent = append(agent, orderCodes...)
		}
	}
	out[http.StatusBadRequest] = append(out[http.StatusBadRequest], agent...)
	for st, codes := range out {
		sort.Strings(codes)
		out[st] = slices.Compact(codes)
	}
	return out
}

func isStrategyFn(fn string) bool {
	switch fn {
	case protocol.FnStartStrategy, protocol.FnCloseStrategy, protocol.FnEnableStrategy, protocol.FnDisableStrategy:
		return true
	}
	return false
}

// statusDescriptions say what each error status means.
var statusDescriptions = map[int]string{
	http.StatusBadRequest:            "the request is malformed, or the operation was refused (nothing was placed)",
	http.StatusUnauthorized:          "missing, malformed, unknown or revoked API token",
	http.StatusForbidden:             "the user's plan lacks the trading API, or (writes: insufficient_scope) the API token has the read scope: writes need a trade token (the WWW-Authenticate header names the scope needed)",
	http.StatusNotFound:              "no such resource of the user (Management API)",
	http.StatusPreconditionFailed:    "If-Match did not match the resource's current ETag (Management API)",
	http.StatusRequestTimeout:        "the user's agent is not connected, or dropped during a read; or the body was not received in time",
	http.StatusConflict:              "a write with the same Idempotency-Key or orderId is still running",
	http.StatusRequestEntityTooLarge: "the body is too large",
	http.StatusUnsupportedMediaType:  "the body is not application/json",
	http.StatusUnprocessableEntity:   "the Idempotency-Key was used for a different request",
	http.StatusTooManyRequests:       "the request budget is used up (policy, retryAfter, Retry-After)",
	http.StatusInternalServerError:   "the relay or the agent failed",
	http.StatusServiceUnavailable:    "the relay cannot check tokens right now, or (writes) the outcome is unknown: retry with the same key to learn it",
	http.StatusGatewayTimeout:        "the agent did not answer in time",
}
