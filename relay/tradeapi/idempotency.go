package tradeapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

// legacyFingerprint is the fingerprint the HTTP API gave a request before
// outcomes were transport-neutral.
func legacyFingerprint(ep *endpoint, fn string, args json.RawMessage) string {
	sum := sha256.New()
	sum.Write([]byte(ep.Method + " " + ep.Path + "\x00" + fn + "\x00"))
	sum.Write(args)
	return hex.EncodeToString(sum.Sum(nil))
}

// ---- The HTTP door ----

// idempotentCall runs a keyed write from an HTTP route and answers with
// its outcome (see tradecall.KeyedWrites).
func (a *API) idempotentCall(w http.ResponseWriter, r *http.Request, p auth.Principal, ep *endpoint, fn, key string, args json.RawMessage) {
	if a.opts.Family != FamilyDesktop {
		// Only the desktop family wrote records of the previous format.
		a.writeOutcome(w, p, a.keyed.Run(r.Context(), p.UserID, fn, key, args))
		return
	}
	o := a.keyed.RunLegacy(r.Context(), p.UserID, fn, key, args, legacyFingerprint(ep, fn, args))
	a.writeOutcome(w, p, o)
}

// writeOutcome answers with a keyed write's outcome: the rendered result
// in the caller's profile, or the error; a replay carries
// Idempotent-Replayed: true.
func (a *API) writeOutcome(w http.ResponseWriter, p auth.Principal, o tradecall.Outcome) {
	if o.Gone {
		return
	}
	if o.Replayed {
		w.Header().Set(ReplayedHeader, "true")
	}
	if status, body, ok := o.Legacy(); ok {
		replayLegacy(w, status, body)
		return
	}
	switch {
	case o.Err != nil:
		httpapi.WriteError(w, o.Err.Status, *o.Err)
	default:
		a.writeResult(w, p, o.Fn, o.Result)
	}
}

// replayLegacy answers with a response recorded in the previous format,
// byte for byte.
func replayLegacy(w http.ResponseWriter, status int, body []byte) {
	httpapi.WriteRecorded(w, status, body)
}
