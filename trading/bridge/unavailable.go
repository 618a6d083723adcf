package bridge

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
