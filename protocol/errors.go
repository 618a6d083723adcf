package protocol

// Error is an RPC failure as it travels on the wire: a stable Code to program
// against and a human Detail whose wording may change. The relay hands Code
// to bot authors as the "error" field of its responses.
type Error struct {
	Code   string `json:"code"`
	Detail string `json:"detail,omitempty"`
}

// Error implements error.
func (e *Error) Error() string {
	if e.Detail == "" {
		return e.Code
	}
	return e.Code + ": " + e.Detail
}

// Is reports whether target is an *Error with the same Code, so that
// errors.Is(err, &Error{Code: CodeNoPosition}) matches any detail.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Errorf-free constructor: NewError returns an *Error with code and detail.
func NewError(code, detail string) *Error { return &Error{Code: code, Detail: detail} }

// RPC error codes. They are part of the wire format: a code never changes
// meaning, and new failures take new codes.
const (
	// CodeInvalidArgument: an argument is missing, of the wrong type, or
	// out of range. Nothing was done.
	CodeInvalidArgument = "invalid_argument"
	// CodeMissingFields: required fields are missing; the detail names them.
	CodeMissingFields = "missing_required_fields"
	// CodeInvalidInstrument: the instrument is malformed, unknown or expired.
	CodeInvalidInstrument = "invalid_instrument"
	// CodeAccountNotFound: no such account on the platform.
	CodeAccountNotFound = "account_not_found"
	// CodeOrderNotFound: no such order on the account.
	CodeOrderNotFound = "order_not_found"
	// CodeStrategyNotFound: no such strategy on the account.
	CodeStrategyNotFound = "strategy_not_found"
	// CodeTemplateNotFound: no ATM template of that name.
	CodeTemplateNotFound = "atm_template_not_found"
	// CodeNoPosition: the operation needs an open position and there is none.
	CodeNoPosition = "no_position"
	// CodeOrderRejected: the platform refused the order; the detail says why.
	CodeOrderRejected = "order_rejected"
	// CodePositionOwned: another strategy tag owns the position.
	CodePositionOwned = "position_owned"
	// CodeMarketPositionMismatch: requireMarketPosition did not hold.
	CodeMarketPositionMismatch = "market_position_mismatch"
	// CodeMaxPositions: the account already holds maxPositions positions.
	CodeMaxPositions = "max_positions_reached"
	// CodeStrategyTerminal: the strategy has ended and cannot change state.
	CodeStrategyTerminal = "strategy_terminal"
	// CodeTradingBlocked: a control (kill switch, monitor, news lockout)
	// refuses orders that open or add to a position.
	CodeTradingBlocked = "trading_blocked"
	// CodeUnknownFunction: the agent does not implement Fn.
	CodeUnknownFunction = "unknown_function"
	// CodeRequestInProgress: a write with the same RequestID is still running.
	CodeRequestInProgress = "request_in_progress"
	// CodeDeadlineExceeded: the call did not finish within its timeout.
	CodeDeadlineExceeded = "deadline_exceeded"
	// CodeCancelled: the caller cancelled the call.
	CodeCancelled = "cancelled"
	// CodePlatformUnavailable: the trading platform is not connected to the agent.
	CodePlatformUnavailable = "platform_unavailable"
	// CodeInternal: a fault in the agent; the detail is safe to show.
	CodeInternal = "internal_error"
	// CodePositionNotFlat: an operation that closes a position before it
	// places a new order (ReversePosition, Reverse, FlatPlace,
	// flattenFirst) closed it, but the old position or its orders did not
	// clear within the wait; the new order was not placed.
	CodePositionNotFlat = "position_not_flat"
	// CodeOutcomeUnknown: a write with this RequestID began, and the agent
	// stopped (crashed, restarted) before it learned the outcome; nothing
	// was run again. Check the account's orders and positions.
	CodeOutcomeUnknown = "outcome_unknown"
	// CodeResyncLimit: reaching targetQuantity needs a larger correction
	// than maxResyncCorrection allows, or an order on the other side of a
	// priced (non-market) order; nothing was placed.
	CodeResyncLimit = "resync_limit_exceeded"
	// CodeNotSupported: the platform lacks what the call needs (a broker
	// with no strategies, ATM templates or historical bars, or OCO groups
	// joined one order at a time); the detail says what to do instead.
	// Nothing was done, and asking again will not help.
	CodeNotSupported = "not_supported"
)

// BrokerRejectPrefix begins the codes of an order a linked broker refused
// (the broker family, trading/bridge/tradovate): "tradovate_" and the
// broker's reason in snake case, as tradovate_max_pos_limit_reached.
// Such a code means what CodeOrderRejected means, with the broker's
// reason named.
const BrokerRejectPrefix = "tradovate_"

// Codes lists every RPC error code, for tests and documentation.
var Codes = []string{
	CodeInvalidArgument, CodeMissingFields, CodeInvalidInstrument,
	CodeAccountNotFound, CodeOrderNotFound, CodeStrategyNotFound,
	CodeTemplateNotFound, CodeNoPosition, CodeOrderRejected,
	CodePositionOwned, CodeMarketPositionMismatch, CodeMaxPositions,
	CodeStrategyTerminal, CodeTradingBlocked, CodeUnknownFunction,
	CodeRequestInProgress, CodeDeadlineExceeded, CodeCancelled,
	CodePlatformUnavailable, CodeInternal,
	CodePositionNotFlat, CodeResyncLimit, CodeOutcomeUnknown,
	CodeNotSupported,
}
