package bridge

import (
	"errors"

	"tradebridge/protocol"
)

// EventConnections reports that the platform's connections or their
// accounts changed: Event.Connections holds the whole list as it stands
// (empty while the platform itself is unreachable).
const EventConnections EventKind = protocol.EventConnections

// ErrOutcomeUnknown reports a write that reached the platform, after which
// the link to it broke before the platform answered: the platform may have
// acted on it. Nothing is retried; the caller should read the orders and
// positions before trying again.
var ErrOutcomeUnknown = errors.New("bridge: the platform may have acted; the outcome is unknown")

// UnavailableError reports why a platform cannot be reached. It matches
// ErrNotConnected with errors.Is. Reason is a fixed sentence for the
// trader (never anything a caller sent); Code names the reason for
// programs and logs.
type UnavailableError struct {
	Code   string
	Reason string
}

func (e *UnavailableError) Error() string { return "bridge: platform not connected: " + e.Reason }

// Is matches ErrNotConnected.
func (e *UnavailableError) Is(target error) bool { return target == ErrNotConnected }
