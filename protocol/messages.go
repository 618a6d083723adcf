package protocol

import "encoding/json"

// Hello is the agent's first frame on the first stream it opens. The relay
// answers with Welcome, or closes the connection with one of the Close codes.
type Hello struct {
	ProtocolVersion int    `json:"protocolVersion"`
	AgentVersion    string `json:"agentVersion"`
	// Platform is the kind of trading platform the agent drives: "sim" or
	// "ninjatrader".
	Platform    string       `json:"platform"`
	Connections []Connection `json:"connections"`
}

// Connection is one of the platform's connections to a data or order feed,
// with the accounts it carries.
type Connection struct {
	Name     string   `json:"name"`
	Status   string   `json:"status"`
	Accounts []string `json:"accounts"`
}

// Welcome accepts a Hello.
type Welcome struct {
	ProtocolVersion int    `json:"protocolVersion"`
	SessionID       string `json:"sessionId"`
	// ServerTime is the relay's clock when it wrote the Welcome, in Unix
	// milliseconds; the agent compares it with the midpoint of its Hello
	// and the Welcome to estimate its clock skew. Zero from a relay older
	// than protocol version 5.
	ServerTime int64 `json:"serverTime,omitempty"`
}

// Request calls the RPC function Fn on the agent. ID correlates the Response
// and any Cancel on the same stream; IDs are chosen by the caller and unique
// per stream while the call runs.
type Request struct {
	ID uint64 `json:"id"`
	Fn string `json:"fn"`
	// TimeoutMs is the time the caller will wait, in milliseconds, measured
	// from receipt (clocks of the two peers are not compared). The agent
	// abandons the call when it passes. Zero means DefaultTimeoutMs.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
	// RequestID names a write for exactly-once execution: the agent answers
	// a repeated RequestID with the first result and runs nothing.
	RequestID string          `json:"requestId,omitempty"`
	Args      json.RawMessage `json:"args,omitempty"`
	// Trace is the id the relay gave the HTTP (or stream) request that
	// made this call, for the agent's logs: 1–64 characters of
	// [A-Za-z0-9._-]. It is optional, changes nothing in what the call
	// does, and is not part of the exactly-once identity (RequestID is).
	Trace string `json:"trace,omitempty"`
	// BypassWindows is CallOptions.BypassWindows: the call's orders pass
	// the account monitor's trading windows (since protocol version 7;
	// an older agent ignores it and keeps the windows).
	BypassWindows bool `json:"bypassWindows,omitempty"`
}

// MaxTraceLen is the longest Request.Trace.
const MaxTraceLen = 64

// ValidTrace reports whether s may be a Request.Trace: 1 to MaxTraceLen
// characters of [A-Za-z0-9._-]. The relay uses the same rule for the
// X-Request-Id it accepts from callers, so a trace is safe to log as is.
func ValidTrace(s string) bool {
	if s == "" || len(s) > MaxTraceLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// DefaultTimeoutMs is the deadline of a Request that names none.
const DefaultTimeoutMs = 30_000

// Response answers the Request with the same ID: exactly one of Result and
// Error is set.
type Response struct {
	ID     uint64          `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}

// Cancel abandons the Request with the same ID. The agent answers it with
// CodeCancelled if it was still running; a Cancel for an unknown ID is ignored.
type Cancel struct {
	ID uint64 `json:"id"`
}

// Event is an update the agent sends without being asked, on the stream that
// carried its Hello. Seq increases by one per event within a session.
type Event struct {
	Seq  uint64          `json:"seq"`
	Kind string          `json:"kind"`
	Data json.RawMessage `json:"data,omitempty"`
}

// Event kinds.
const (
	EventOrder     = "order"
	EventExecution = "execution"
	EventPosition  = "position"
	EventAccount   = "account"
	EventQuote     = "quote"
	EventStrategy  = "strategy"
	// EventMonitorState reports a monitor's new state (MonitorState).
	// Since protocol version 2.
	EventMonitorState = "monitorState"
	// EventCopierState reports a copier halted or running again
	// (CopierState). Since protocol version 2.
	EventCopierState = "copierState"
	// EventConnections reports the platform's connections and their
	// accounts after they changed: the data is the whole list
	// ([]Connection), empty while the platform is unreachable. Since
	// protocol version 4.
	EventConnections = "connections"
	// EventDiagnostics carries the agent's Diagnostics. The agent sends
	// it once after every Welcome; the relay keeps the latest one of each
	// session for support staff. Since protocol version 5.
	EventDiagnostics = "diagnostics"
	// EventActivity reports what the agent's engines did or decided (an
	// ActivityEntry whose ID is the report's id on the agent): a copy, a
	// copier halted, a monitor tripped, the kill switch applied, a news
	// lockout window entered, an order refused by a strategy lock. The
	// agent sends each report again after a reconnect until it is older
	// than its outbox keeps; the relay records each id once. Since
	// protocol version 6.
	EventActivity = "activity"
)

// WebSocket close codes the relay uses when it ends a tunnel. They are in the
// private range 4000–4999 of RFC 6455 and never change meaning.
const (
	// CloseReplaced: a newer connection of the same user took over.
	CloseReplaced = 4001
	// CloseVersionUnsupported: the agent's protocol version is not accepted.
	CloseVersionUnsupported = 4002
	// CloseBadHandshake: the first frame was not a valid Hello in time.
	CloseBadHandshake = 4003
	// CloseFrameTooLarge: a frame exceeded MaxFrameSize.
	CloseFrameTooLarge = 4004
	// CloseProtocolError: garbage or a frame out of place on the tunnel.
	CloseProtocolError = 4005
	// CloseShuttingDown: the relay is stopping; reconnect to another node.
	CloseShuttingDown = 4006
	// CloseRevoked: the agent token was revoked or the user disabled.
	CloseRevoked = 4007
)

// CloseReason returns the stable name of a close code, or "" for codes this
// protocol does not define.
func CloseReason(code int) string {
	switch code {
	case CloseReplaced:
		return "replaced"
	case CloseVersionUnsupported:
		return "version_unsupported"
	case CloseBadHandshake:
		return "bad_handshake"
	case CloseFrameTooLarge:
		return "frame_too_large"
	case CloseProtocolError:
		return "protocol_error"
	case CloseShuttingDown:
		return "shutting_down"
	case CloseRevoked:
		return "revoked"
	}
	return ""
}
