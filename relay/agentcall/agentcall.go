// Package agentcall is the vocabulary of the relay's calls to the users'
// agents, shared by the tunnels that carry them (relay/hub), the nodes
// that forward them (relay/cluster) and every door that makes them: the
// errors a call ends with, what a live tunnel tells about its agent
// (Info), the request id a call carries to the agent's logs (WithTrace),
// the entries of the tunnels' history (Session), and the interface of
// whatever reaches the agents (Caller).
package agentcall

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"tradebridge/protocol"
)

// Errors returned by Call. A *protocol.Error is the agent's own answer.
var (
	// ErrNotConnected: the user has no agent connected. Nothing was sent.
	ErrNotConnected = errors.New("agentcall: agent not connected")
	// ErrConnectionLost: the tunnel dropped while the call was in flight.
	// The agent may or may not have run it.
	ErrConnectionLost = errors.New("agentcall: tunnel lost during the call")
	// ErrTimeout: the caller's deadline passed before the agent answered.
	// The agent may or may not have run the call.
	ErrTimeout = errors.New("agentcall: call timed out")
	// ErrClosed: the hub is shut down.
	ErrClosed = errors.New("agentcall: closed")
)

// Caller reaches the users' agents: *hub.Hub on one relay node, and
// *cluster.Cluster, which finds the node holding the user's tunnel, on
// many. All methods are safe for concurrent use.
type Caller interface {
	// Call runs the RPC function fn with args on userID's agent and
	// returns its result. requestID, when set, makes a write run at
	// most once on the agent. Errors: ErrNotConnected,
	// ErrConnectionLost, ErrTimeout, ErrClosed, or the agent's
	// *protocol.Error.
	Call(ctx context.Context, userID, fn, requestID string, args json.RawMessage) (json.RawMessage, error)
	// Connected reports whether userID's agent has a live tunnel.
	Connected(userID string) bool
	// Info returns the handshake of userID's live tunnel.
	Info(userID string) (Info, bool)
}

// Info describes a live tunnel.
type Info struct {
	SessionID string
	// Hello is the agent's, with the connections it reported last; its
	// ProtocolVersion is the tunnel's.
	Hello       protocol.Hello
	ConnectedAt time.Time
	// RemoteAddr is the agent's address (httpapi.ClientAddr).
	RemoteAddr string
	// Diagnostics is the latest the agent sent (EventDiagnostics) on this
	// tunnel, received at DiagnosticsAt; nil when none. Callers must not
	// change it.
	Diagnostics   *protocol.Diagnostics
	DiagnosticsAt time.Time
	// ConfigApplied is the highest management configuration version the
	// agent acknowledged on this tunnel (protocol.FnApplyConfig's
	// answer); 0 before the first acknowledgement.
	ConfigApplied int64
}

type traceKey struct{}

// WithTrace returns ctx carrying id, the request id of the HTTP (or stream)
// request a call serves. Call sends it to the agent as Request.Trace, for
// its logs. An id that breaks protocol.ValidTrace is not carried.
func WithTrace(ctx context.Context, id string) context.Context {
	if !protocol.ValidTrace(id) {
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, id)
}

// TraceFrom returns the request id WithTrace put in ctx, or "".
func TraceFrom(ctx context.Context) string {
	id, _ := ctx.Value(traceKey{}).(string)
	return id
}
