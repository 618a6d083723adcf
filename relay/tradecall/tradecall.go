// Package tradecall runs a trading RPC for every door, the HTTP routes
// (package tradeapi), the WebSocket form of RPC (package stream) and the
// MCP tools: arguments checked against the one route table (Endpoints,
// ParseHTTP; by function through a Table: Desktop, Table.Prepare,
// PrepareSocketCall), the JSON Schemas of the parameters (ParamSchema,
// ObjectSchema, Table.ArgsSchema), calls run by one runner (Calls) with
// exactly-once writes by key (KeyedWrites), results rendered in the
// caller's response profile (Render), call failures mapped to codes
// (CallError), and each write's entry in the user's activity log
// (Activity), so that a call reads the same whichever door it came in
// by.
package tradecall

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/admit"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/auth"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/profile"
)

// Door is the admission policy both trading doors share (see package
// admit): the client address's budget, an API token, the pro plan (403
// plan_required), then the user's trading budget, which each door's New
// fills in. Package api and package stream name their copy and add what
// is theirs (the RateLimit headers; the upgrade's token).
var Door = admit.Door{
	Kind:               auth.KindAPI,
	Plan:               auth.PlanPro,
	PlanCode:           errcode.PlanRequired,
	PlanDetail:         "the trading API needs the pro plan or higher",
	MissingTokenDetail: "an API token is required in the Authorization header",
	InvalidTokenDetail: "the API token is missing, malformed or revoked",
}

// Caller sends an RPC to a user's agent; *hub.Hub implements it.
type Caller interface {
	Call(ctx context.Context, userID, fn, requestID string, args json.RawMessage) (json.RawMessage, error)
}

// IdempotencyTTL is how long a write's outcome answers its repeats.
const IdempotencyTTL = 24 * time.Hour

// Render renders fn's result in response profile prof, for the HTTP
// routes and the WebSocket form of RPC alike. A record of the wrong shape
// is the agent's fault: it is logged and answered 500 internal_error.
func Render(log *zap.Logger, prof profile.Profile, fn string, result json.RawMessage) (profile.Reply, *httpapi.Error) {
	reply, err := profile.Render(prof, fn, result)
	if err != nil {
		log.Error("agent answered with a record of the wrong shape", zap.String("fn", fn), zap.Error(err))
		return profile.Reply{}, &httpapi.Error{Status: http.StatusInternalServerError, Code: errcode.InternalError,
			Detail: "the add-on answered with a result the relay cannot read"}
	}
	return reply, nil
}

// CallError maps an error of Caller.Call to the trading API's answer: the
// HTTP status (in e.Status), the stable code and the detail. The HTTP API
// and the WebSocket form of RPC (package stream) both answer with it, so a
// failure reads the same on either transport. write says whether the
// function changes anything: a write interrupted after it was sent has an
// unknown outcome. ok is false for errors that are neither the agent's nor
// the tunnel's (the caller's own context ended, the hub is closed, a bug);
// the caller decides how to answer those. An *httpapi.Error in err's
// chain (a Caller that answers for the relay itself, such as the broker
// family's, which never reaches an agent) is answered as it is: its status
// (which must be set), code and detail.
func CallError(err error, write bool) (e httpapi.Error, ok bool) {
	var pe *protocol.Error
	var he *httpapi.Error
	switch {
	case errors.Is(err, ErrMalformedResult):
		return *malformedResult(false), true
	case errors.As(err, &he):
		return *he, true
	case errors.As(err, &pe):
		return httpapi.Error{Status: statusOf(pe.Code), Code: pe.Code, Detail: pe.Detail}, true
	case errors.Is(err, agentcall.ErrNotConnected):
		return httpapi.Error{Status: http.StatusRequestTimeout, Code: errcode.AddonDisconnected, Detail: "the trading add-on is not connected: start the agent next to the platform"}, true
	case (errors.Is(err, agentcall.ErrConnectionLost) || errors.Is(err, agentcall.ErrTimeout)) && write:
		return httpapi.Error{Status: http.StatusServiceUnavailable, Code: errcode.OutcomeUnknown, Detail: "the add-on did not confirm the outcome; retry with the same Idempotency-Key or orderId to learn it"}, true
	case errors.Is(err, agentcall.ErrConnectionLost):
		return httpapi.Error{Status: http.StatusRequestTimeout, Code: errcode.AddonDisconnected, Detail: "the trading add-on disconnected during the call"}, true
	case errors.Is(err, agentcall.ErrTimeout):
		return httpapi.Error{Status: http.StatusGatewayTimeout, Code: errcode.DeadlineExceeded, Detail: "the add-on did not answer in time"}, true
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
	case protocol.CodeOutcomeUnknown:
		return http.StatusServiceUnavailable
	case protocol.CodeDeadlineExceeded, protocol.CodeCancelled:
		return http.StatusGatewayTimeout
	}
	return http.StatusBadRequest
}
