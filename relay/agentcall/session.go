package agentcall

import (
	"encoding/json"
	"time"
)

// SessionKind is what a SessionEvent reports.
type SessionKind string

// Kinds of SessionEvent.
const (
	// SessionStarted: the relay wrote the tunnel's Welcome.
	SessionStarted SessionKind = "started"
	// SessionDiagnostics: the agent sent its diagnostics
	// (EventDiagnostics) on a started session.
	SessionDiagnostics SessionKind = "diagnostics"
	// SessionEnded: a started session ended, for Reason.
	SessionEnded SessionKind = "ended"
	// SessionRefused: a connect with a valid agent token was refused
	// before any session began, for Reason; SessionID is empty.
	SessionRefused SessionKind = "refused"
)

// Reasons a session ended or a handshake was refused (SessionEvent.Reason).
// They are stable names, shown to support staff in the connection
// history.
const (
	// ReasonReplaced: a newer connection of the same user took over
	// (the agent was started twice, or reconnected before the relay saw
	// the old connection drop).
	ReasonReplaced = "replaced"
	// ReasonRevoked: the agent token was revoked or its user disabled.
	ReasonRevoked = "revoked"
	// ReasonShuttingDown: the relay was shutting down.
	ReasonShuttingDown = "shutting_down"
	// ReasonProtocolError: the agent broke the tunnel protocol (a
	// malformed frame or event, a frame out of place, a stream it may not
	// open, a frame it did not finish in time).
	ReasonProtocolError = "protocol_error"
	// ReasonFrameTooLarge: the agent sent a frame over the protocol's
	// bound.
	ReasonFrameTooLarge = "frame_too_large"
	// ReasonAgentClosed: the agent closed the tunnel (it stopped or
	// restarted).
	ReasonAgentClosed = "agent_closed"
	// ReasonConnectionLost: the connection dropped without a close (the
	// network, a killed process, a sleeping machine) or the agent stopped
	// answering keepalives.
	ReasonConnectionLost = "connection_lost"
	// ReasonAgentUnresponsive: the agent stopped reading: a request could
	// not be sent to it in time.
	ReasonAgentUnresponsive = "agent_unresponsive"
	// ReasonVersionUnsupported: refused: the agent speaks no tunnel
	// protocol version this relay accepts.
	ReasonVersionUnsupported = "version_unsupported"
	// ReasonBadHandshake: refused: no valid Hello in time.
	ReasonBadHandshake = "bad_handshake"
	// ReasonRelayStopped: the relay stopped without recording the
	// session's end (a crash, a kill); written at the next start.
	ReasonRelayStopped = "relay_stopped"
)

// SessionEvent is one entry of the tunnels' history (published by the hub on the event spine).
type SessionEvent struct {
	Kind   SessionKind
	UserID string
	// SessionID is the tunnel's session id; "" for SessionRefused.
	SessionID string
	// At is when it happened: the Welcome, the receipt of the
	// diagnostics, the end, the refusal.
	At time.Time
	// Reason is why the session ended or the handshake was refused (one
	// of the Reason constants); "" otherwise.
	Reason string
	// AgentVersion, ProtocolVersion and Platform are the agent's Hello's
	// (SessionStarted, and SessionRefused as far as they were read: the
	// version the agent offered when it was refused for it);
	// RemoteAddr is the agent's address.
	AgentVersion    string
	ProtocolVersion int
	Platform        string
	RemoteAddr      string
	// Diagnostics is, for SessionDiagnostics, the agent's
	// protocol.Diagnostics as the relay re-encoded them: only the
	// contract's fields, at most protocol.MaxDiagnosticErrors errors.
	Diagnostics json.RawMessage
}
