package cluster

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/httpapi"
)

// ProtocolVersion is the version of the node-to-node messages below, sent
// in every request's HeaderVersion. A node answers requests of the
// versions it knows and refuses others with an error naming the version;
// statuses carry it too, and a node ignores statuses of versions it does
// not know.
//
//   - 1: calls, info and routed services on a user's subject (HeaderOp),
//     replies as heartbeats, one result (in parts when it exceeds the
//     server's max payload) or one wire error; statuses; quotes; activity
//     entries (SubjectActivity: a node that does not subscribe to it
//     ignores it).
const ProtocolVersion = 1

// Subjects, under Options.Prefix ("tb"). <user>, <service> and
// <contract> are the base64url (unpadded) encodings of the user id, the
// service name and the contract name as quotes carry it (upper case,
// trimmed), so that any of them makes a single valid subject token.
const (
	// SubjectAgent, <prefix>.agent.<user>: calls (OpCall) and look-ups
	// (OpInfo) of the user's agent. The node whose hub holds the user
	// queue-subscribes while it does, in QueueGroup.
	SubjectAgent = "agent"
	// SubjectService, <prefix>.svc.<service>.<user>: calls of a routed
	// service (Route), queue-subscribed by the node serving the user.
	SubjectService = "svc"
	// SubjectStatus, <prefix>.status: every node's agent connects and
	// disconnects (statusMsg, JSON); every node subscribes.
	SubjectStatus = "status"
	// SubjectQuote, <prefix>.quote.<user>.<contract>: the user's quotes
	// of one contract, published by the holder while another node asked
	// for the contract; the body is the quote event's data
	// (protocol.Quote, JSON) and HeaderSeq its sequence number.
	SubjectQuote = "quote"
	// SubjectActivity, <prefix>.activity: the entries every node's
	// activity log stores (activityMsg, JSON); every node subscribes.
	SubjectActivity = "activity"
	// QueueGroup is the queue group of the agent and service subjects:
	// each request reaches one node even while two hold the user during a
	// handover.
	QueueGroup = "holders"
)

// Headers of the node-to-node messages.
const (
	// HeaderVersion is the sender's ProtocolVersion, in decimal (requests).
	HeaderVersion = "Tb-Version"
	// HeaderOp is the request's operation: OpCall or OpInfo.
	HeaderOp = "Tb-Op"
	// HeaderFn is the RPC function of a call.
	HeaderFn = "Tb-Fn"
	// HeaderRequestID is the call's request id (hub.Hub.Call's
	// requestID), absent when empty.
	HeaderRequestID = "Tb-Request-Id"
	// HeaderTrace is the call's trace id (agentcall.WithTrace), absent when
	// none.
	HeaderTrace = "Tb-Trace"
	// HeaderBypassWindows is "1" when the call's protocol.CallOptions ask
	// to pass the trading windows (BypassWindows); absent otherwise.
	HeaderBypassWindows = "Tb-Bypass-Windows"
	// HeaderTimeout is the time the caller still waits, in decimal
	// milliseconds rounded up, as the request leaves: the serving node's
	// call ends when it passes. A duration, not an instant, so that the
	// nodes' clocks need not agree.
	HeaderTimeout = "Tb-Timeout-Ms"
	// HeaderOrigin is the calling node's name (Options.Node); the holder
	// keeps one subscription set per origin.
	HeaderOrigin = "Tb-Origin"
	// HeaderKind is a reply's kind: KindHeartbeat, KindResult or
	// KindError.
	HeaderKind = "Tb-Kind"
	// HeaderPart numbers a result sent in parts, "i/n" (1 ≤ i ≤ n, in
	// order); absent on a result sent whole.
	HeaderPart = "Tb-Part"
	// HeaderSeq is a quote's event sequence number, in decimal.
	HeaderSeq = "Tb-Seq"
)

// Operations (HeaderOp).
const (
	// OpCall runs HeaderFn with the body as its arguments (JSON).
	OpCall = "call"
	// OpInfo asks the holder for the user's agentcall.Info (infoMsg, JSON).
	OpInfo = "info"
)

// Reply kinds (HeaderKind), sent to the request's reply subject.
const (
	// KindHeartbeat: the call still runs; empty body, every
	// Options.HeartbeatInterval.
	KindHeartbeat = "heartbeat"
	// KindResult: the call's result (JSON), or one part of it.
	KindResult = "result"
	// KindError: the call failed; the body is a wireError (JSON).
	KindError = "error"
)

// Kinds of wireError: which error the caller's node rebuilds.
const (
	errNotConnected   = "not_connected"   // agentcall.ErrNotConnected
	errConnectionLost = "connection_lost" // agentcall.ErrConnectionLost
	errTimeout        = "timeout"         // agentcall.ErrTimeout
	errClosed         = "closed"          // agentcall.ErrClosed
	errCanceled       = "canceled"        // context.Canceled
	errDeadline       = "deadline"        // context.DeadlineExceeded
	errAgent          = "agent"           // *protocol.Error: code, detail
	errHTTP           = "http"            // *httpapi.Error: status, code, detail, …
	errVersion        = "version"         // the request's version is not spoken: *RemoteError
	errInternal       = "internal"        // anything else: *RemoteError with the detail
)

// wireError is a failure as it crosses from the serving node to the
// caller's.
type wireError struct {
	Kind       string               `json:"kind"`
	Code       string               `json:"code,omitempty"`
	Detail     string               `json:"detail,omitempty"`
	Status     int                  `json:"status,omitempty"`
	RetryAfter int                  `json:"retryAfter,omitempty"`
	Policy     string               `json:"policy,omitempty"`
	ETag       string               `json:"etag,omitempty"`
	Fields     []httpapi.FieldError `json:"fields,omitempty"`
}

// encodeError turns a serving node's error into its wire form.
func encodeError(err error) wireError {
	var he *httpapi.Error
	var pe *protocol.Error
	switch {
	case errors.As(err, &he):
		return wireError{Kind: errHTTP, Status: he.Status, Code: he.Code, Detail: he.Detail, RetryAfter: he.RetryAfter,
			Policy: he.Policy, ETag: he.ETag, Fields: he.Fields}
	case errors.As(err, &pe):
		return wireError{Kind: errAgent, Code: pe.Code, Detail: pe.Detail}
	case errors.Is(err, agentcall.ErrNotConnected):
		return wireError{Kind: errNotConnected}
	case errors.Is(err, agentcall.ErrConnectionLost):
		return wireError{Kind: errConnectionLost}
	case errors.Is(err, agentcall.ErrTimeout):
		return wireError{Kind: errTimeout}
	case errors.Is(err, agentcall.ErrClosed):
		return wireError{Kind: errClosed}
	case errors.Is(err, context.Canceled):
		return wireError{Kind: errCanceled}
	case errors.Is(err, context.DeadlineExceeded):
		return wireError{Kind: errDeadline}
	}
	return wireError{Kind: errInternal, Detail: err.Error()}
}

// decode rebuilds the error on the caller's node.
func (w wireError) decode() error {
	switch w.Kind {
	case errHTTP:
		return &httpapi.Error{Status: w.Status, Code: w.Code, Detail: w.Detail, RetryAfter: w.RetryAfter, Policy: w.Policy,
			ETag: w.ETag, Fields: w.Fields}
	case errAgent:
		return &protocol.Error{Code: w.Code, Detail: w.Detail}
	case errNotConnected:
		return agentcall.ErrNotConnected
	case errConnectionLost:
		return agentcall.ErrConnectionLost
	case errTimeout:
		return agentcall.ErrTimeout
	case errClosed:
		return agentcall.ErrClosed
	case errCanceled:
		return context.Canceled
	case errDeadline:
		return context.DeadlineExceeded
	}
	return &RemoteError{Detail: w.Detail}
}

// RemoteError is a failure of the serving node that has no error value of
// its own on the caller's node (an internal fault there, a protocol
// version it does not speak).
type RemoteError struct {
	Detail string
}

// Error implements error.
func (e *RemoteError) Error() string { return "cluster: the serving node failed: " + e.Detail }

// statusMsg is a node's news about one user's agent (SubjectStatus).
type statusMsg struct {
	Version int `json:"v"`
	// Node is the sender's name; Instance tells two Clusters of one name
	// apart (a node never acts on its own statuses).
	Node     string `json:"node"`
	Instance string `json:"instance"`
	User     string `json:"user"`
	// Connected: the sender's hub holds the user's agent (true) or no
	// longer does (false).
	Connected bool `json:"connected"`
	// Session and ConnectedAt (Unix nanoseconds) name the tunnel the
	// sender holds.
	Session     string `json:"session,omitempty"`
	ConnectedAt int64  `json:"connectedAt,omitempty"`
}

// activityMsg is an entry a node's activity log stored
// (SubjectActivity).
type activityMsg struct {
	Version int `json:"v"`
	// Node and Instance name the sender (a node never takes its own).
	Node     string                 `json:"node"`
	Instance string                 `json:"instance"`
	User     string                 `json:"user"`
	Entry    protocol.ActivityEntry `json:"entry"`
}

// newer reports whether the tunnel (at, node, session) is newer than the
// other: later connectedAt first, then the greater node name, then the
// greater session id, so that every node agrees which one stays.
func newer(at int64, node, session string, oAt int64, oNode, oSession string) bool {
	if at != oAt {
		return at > oAt
	}
	if node != oNode {
		return node > oNode
	}
	return session > oSession
}

// infoMsg is agentcall.Info on the wire (OpInfo's result).
type infoMsg struct {
	SessionID     string                `json:"sessionId"`
	Hello         protocol.Hello        `json:"hello"`
	ConnectedAt   time.Time             `json:"connectedAt"`
	RemoteAddr    string                `json:"remoteAddr,omitempty"`
	Diagnostics   *protocol.Diagnostics `json:"diagnostics,omitempty"`
	DiagnosticsAt time.Time             `json:"diagnosticsAt,omitzero"`
	ConfigApplied int64                 `json:"configApplied,omitempty"`
}

func infoToWire(i agentcall.Info) infoMsg {
	return infoMsg{SessionID: i.SessionID, Hello: i.Hello, ConnectedAt: i.ConnectedAt, RemoteAddr: i.RemoteAddr,
		Diagnostics: i.Diagnostics, DiagnosticsAt: i.DiagnosticsAt, ConfigApplied: i.ConfigApplied}
}

func (m infoMsg) info() agentcall.Info {
	return agentcall.Info{SessionID: m.SessionID, Hello: m.Hello, ConnectedAt: m.ConnectedAt, RemoteAddr: m.RemoteAddr,
		Diagnostics: m.Diagnostics, DiagnosticsAt: m.DiagnosticsAt, ConfigApplied: m.ConfigApplied}
}

// token encodes s as one subject token.
func token(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// subjects builds the subjects under one prefix.
type subjects struct{ prefix string }

func (s subjects) agent(user string) string { return s.prefix + "." + SubjectAgent + "." + token(user) }
func (s subjects) service(svc, user string) string {
	return s.prefix + "." + SubjectService + "." + token(svc) + "." + token(user)
}
func (s subjects) status() string   { return s.prefix + "." + SubjectStatus }
func (s subjects) activity() string { return s.prefix + "." + SubjectActivity }
func (s subjects) quote(user, contract string) string {
	return s.prefix + "." + SubjectQuote + "." + token(user) + "." + token(contract)
}

// validPrefix reports whether p is one or more subject tokens without
// wildcards or white space.
func validPrefix(p string) bool {
	if p == "" {
		return false
	}
	for _, t := range strings.Split(p, ".") {
		if t == "" || strings.ContainsAny(t, "*> \t\r\n") {
			return false
		}
	}
	return true
}

// timeoutHeader encodes d for HeaderTimeout.
func timeoutHeader(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Millisecond-1)/time.Millisecond), 10)
}

// parseTimeout reads HeaderTimeout; ok is false when it is absent or
// malformed.
func parseTimeout(v string) (time.Duration, bool) {
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 || ms > int64(24*time.Hour/time.Millisecond) {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// partHeader encodes part i of n.
func partHeader(i, n int) string { return strconv.Itoa(i) + "/" + strconv.Itoa(n) }

// parsePart reads HeaderPart.
func parsePart(v string) (i, n int, err error) {
	a, b, ok := strings.Cut(v, "/")
	if ok {
		i, err = strconv.Atoi(a)
		if err == nil {
			n, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || i < 1 || i > n {
		return 0, 0, fmt.Errorf("%w: part %q", ErrProtocol, v)
	}
	return i, n, nil
}

// noResponders reports the server's answer to a request nobody is
// subscribed to.
func noResponders(m *nats.Msg) bool {
	return len(m.Data) == 0 && m.Header.Get("Status") == "503"
}

// replyKind is m's HeaderKind.
func replyKind(m *nats.Msg) string { return m.Header.Get(HeaderKind) }

// mustJSON encodes what the nodes send each other, without HTML escaping
// (httpapi.Marshal): the activity details and errors forwarded reach
// callers as written.
func mustJSON(v any) []byte {
	b, err := httpapi.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
