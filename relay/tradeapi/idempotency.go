package tradeapi

import (
	"net/http"

	"tradebridge/relay/auth"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/tradecall"
)

// IdempotencyKeyHeader names a write for exactly-once execution.
const IdempotencyKeyHeader = "Idempotency-Key"

// ReplayedHeader marks an HTTP response that repeats a recorded outcome.
const ReplayedHeader = "Idempotent-Replayed"

// idempotencyKey returns the write's key: the Idempotency-Key header, or
// the body's orderId on routes that place one order. Empty means none.
func idempotencyKey(r *http.Request, ep *endpoint, args map[string]any) (string, *httpapi.Error) {
	vals := r.Header.Values(IdempotencyKeyHeader)
	switch {
	case len(vals) > 1:
		return "", argsError(errcode.InvalidArgument, "send one Idempotency-Key header")
	case len(vals) == 1:
		if !tradecall.ValidKey(vals[0]) {
			return "", argsError(errcode.InvalidArgument, "the Idempotency-Key header must be 1 to 255 visible ASCII characters")
		}
		return "key:" + vals[0], nil
	}
	if ep.OrderIDKey {
		if id, ok := args["orderId"].(string); ok && id != "" {
			return "order:" + id, nil
		}
	}
	return "", nil
}

// argsError is a 400 about the arguments.
func argsError(code, detail string) *httpapi.Error {
	return &httpapi.Error{Status: http.StatusBadRequest, Code: code, Detail: detail}
}

// ---- The HTTP door ----

// writeOutcome answers with a call's outcome: the rendered result in the
// caller's profile, or the error; a replay of a keyed write carries
// Idempotent-Replayed: true; nothing when the caller left.
func (a *API) writeOutcome(w http.ResponseWriter, p auth.Principal, o tradecall.Outcome) {
	if o.Gone {
		return
	}
	if o.Replayed {
		w.Header().Set(ReplayedHeader, "true")
	}
	switch {
	case o.Err != nil:
		httpapi.WriteError(w, o.Err.Status, *o.Err)
	default:
		a.writeResult(w, p, o.Fn, o.Result)
	}
}
