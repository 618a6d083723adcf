package tradovatewire

import (
	"strings"
	"unicode"
)

// FailureReasons are the broker's documented order failure reasons
// (failureReason of placeorder, placeoco, modifyorder, cancelorder and
// liquidateposition), in its spelling.
var FailureReasons = []string{
	"AccountClosed", "AdvancedTrailingStopUnsupported", "AnotherCommandPending",
	"BackMonthProhibited", "ExecutionProviderNotConfigured", "ExecutionProviderUnavailable",
	"InvalidContract", "InvalidPrice", "LiquidationOnly", "LiquidationOnlyBeforeExpiration",
	"MaxOrderQtyIsNotSpecified", "MaxOrderQtyLimitReached", "MaxPosLimitMisconfigured",
	"MaxPosLimitReached", "MaxTotalPosLimitReached", "MultipleAccountPlanRequired", "NoQuote",
	"NotEnoughLiquidity", "OtherExecutionRelated", "ParentRejected", "RiskCheckTimeout",
	"SessionClosed", "Success", "TooLate", "TradingLocked", "TrailingStopNonOrderQtyModify",
	"Unauthorized", "UnknownReason", "Unsupported",
}

// ReasonUnknown is the reason a failure the table does not know is
// reported as.
const ReasonUnknown = "UnknownReason"

// CodePrefix starts every rejection code of the broker.
const CodePrefix = "tradovate_"

// sentences says, for each failure reason, what it means to a trader. The
// broker's failureText is never passed on: it may repeat the request.
var sentences = map[string]string{
	"AccountClosed":                   "The account is closed at the broker.",
	"AdvancedTrailingStopUnsupported": "The broker does not support this kind of trailing stop.",
	"AnotherCommandPending":           "Another change of this order is still pending at the broker; try again when it completes.",
	"BackMonthProhibited":             "The broker does not allow trading this back-month contract on the account.",
	"ExecutionProviderNotConfigured":  "The broker has no execution route configured for this contract.",
	"ExecutionProviderUnavailable":    "The broker's execution route for this contract is unavailable.",
	"InvalidContract":                 "The broker does not know this contract or does not allow trading it.",
	"InvalidPrice":                    "The broker refused the order's price.",
	"LiquidationOnly":                 "The account may only reduce positions (liquidation only).",
	"LiquidationOnlyBeforeExpiration": "The contract is close to expiry: the broker allows only orders that reduce the position.",
	"MaxOrderQtyIsNotSpecified":       "The account has no maximum order quantity configured at the broker.",
	"MaxOrderQtyLimitReached":         "The order's quantity is above the account's maximum order quantity.",
	"MaxPosLimitMisconfigured":        "The account's position limit is misconfigured at the broker.",
	"MaxPosLimitReached":              "The order would take the position above the account's position limit for the contract.",
	"MaxTotalPosLimitReached":         "The order would take the account above its total position limit.",
	"MultipleAccountPlanRequired":     "The broker requires a multiple-account plan for this.",
	"NoQuote":                         "The broker has no quote for the contract.",
	"NotEnoughLiquidity":              "There is not enough liquidity to fill the order.",
	"OtherExecutionRelated":           "The broker's execution venue refused the order.",
	"ParentRejected":                  "The order's parent order was rejected.",
	"RiskCheckTimeout":                "The broker's risk check timed out.",
	"SessionClosed":                   "The contract's trading session is closed.",
	"Success":                         "The broker reported success without an order.",
	"TooLate":                         "The order can no longer be changed or cancelled.",
	"TradingLocked":                   "Trading is locked on the account at the broker.",
	"TrailingStopNonOrderQtyModify":   "Only the quantity of a trailing stop can be changed.",
	"Unauthorized":                    "The login is not allowed to trade this account.",
	"UnknownReason":                   "The broker refused the order without a known reason.",
	"Unsupported":                     "The broker does not support this order.",
}

// KnownReason reports whether reason is one of FailureReasons.
func KnownReason(reason string) bool {
	_, ok := sentences[reason]
	return ok
}

// RejectCode returns our stable code for a failure reason: "tradovate_"
// and the reason in snake case (MaxPosLimitReached →
// tradovate_max_pos_limit_reached). A reason the table does not know is
// tradovate_unknown_reason.
func RejectCode(reason string) string {
	if !KnownReason(reason) {
		reason = ReasonUnknown
	}
	return CodePrefix + snake(reason)
}

// RejectSentence returns a fixed sentence saying what a failure reason
// means; an unknown reason has UnknownReason's.
func RejectSentence(reason string) string {
	if s, ok := sentences[reason]; ok {
		return s
	}
	return sentences[ReasonUnknown]
}

func snake(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		if unicode.IsUpper(r) {
			// A word starts at an upper-case letter that follows a lower-case
			// one, or that begins a new word after an acronym.
			if i > 0 && (unicode.IsLower(rs[i-1]) ||
				(i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1]))) {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
