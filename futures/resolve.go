package futures

import (
	"errors"
	"strings"
	"time"

	"tradebridge/protocol"
)

// Why a name does not resolve to a contract (ResolveError.Cause).
const (
	// CauseMalformed: not in any accepted form ("ES 12-26", "ES",
	// "ESZ26").
	CauseMalformed = "malformed"
	// CauseUnknownRoot: no root of this package.
	CauseUnknownRoot = "unknown_root"
	// CauseNotContractMonth: the month is not a contract month of the
	// root.
	CauseNotContractMonth = "not_contract_month"
	// CauseExpired: the contract no longer trades.
	CauseExpired = "expired"
	// CauseNotListed: the contract is too far out to be listed yet (see
	// ListedYears).
	CauseNotListed = "not_listed"
)

// ErrUnknown is matched (errors.Is) by every refusal of Resolve.
var ErrUnknown = errors.New("futures: unknown contract")

// ResolveError says why a name does not resolve to a contract. Its fields
// are this package's own names, never the caller's text: Root is set only
// when the root is one of this package's.
type ResolveError struct {
	Cause string // one of the Cause* constants
	// Root is the root symbol, when the name is written with a known
	// root ("ES").
	Root string
	// Months lists the root's contract months as month codes ("HMUZ"),
	// when Root is set.
	Months string
	// Front is the root's front month ("ES 12-26"), when Root is set.
	Front string
}

func (e *ResolveError) Error() string { return "futures: unknown contract: " + e.Cause }

// Is matches ErrUnknown.
func (e *ResolveError) Is(target error) bool { return target == ErrUnknown }

// Resolve turns an instrument name as a caller wrote it into the contract
// it names at now: "ES 12-26", "ES" (the front month), "ESZ26" or "ESZ6",
// in any case, with surrounding white space (the forms of
// protocol.ParseInstrument, after protocol.NormalizeInstrument). A refusal
// is a *ResolveError saying why.
func Resolve(name string, now time.Time) (Contract, error) {
	c, r, cause := parse(protocol.NormalizeInstrument(name), now)
	if cause == "" {
		return c, nil
	}
	e := &ResolveError{Cause: cause}
	if r != nil {
		e.Root, e.Months, e.Front = r.Symbol, r.MonthCodes(), r.Front(now).Name
	}
	return Contract{}, e
}

// parse resolves s (normalized: trimmed, upper case). On failure it
// returns the cause, and the root when it is one of this package's.
//
// The syntax is protocol.ParseInstrument's; the rest is decided here: a
// root is that root's front month, a one-digit year is the next year
// ending in that digit, and since every root ends in a letter, a name that
// is no month code but ends in a digit ("ESA26", "ES123") is reported
// malformed (a month code gone wrong), not an unknown root.
func parse(s string, now time.Time) (Contract, *Root, string) {
	if r := roots[s]; r != nil {
		return r.Front(now), r, ""
	}
	in, err := protocol.ParseInstrument(s)
	if err != nil {
		return Contract{}, likelyRoot(s), CauseMalformed
	}
	r := roots[in.Root]
	switch in.Form {
	case protocol.InstrumentContract, protocol.InstrumentMonthCode:
		if r == nil {
			return Contract{}, nil, CauseUnknownRoot
		}
		return r.listed(ContractYear(in, now), in.Month, now)
	}
	if c := s[len(s)-1]; '0' <= c && c <= '9' {
		return Contract{}, likelyRoot(s), CauseMalformed
	}
	return Contract{}, nil, CauseUnknownRoot
}

// ContractYear is the year a contract or month code names at now: a
// two-digit year is in this century, a one-digit year the next year
// ending in that digit (this year included).
func ContractYear(in protocol.Instrument, now time.Time) int {
	if in.YearDigits != 1 {
		return 2000 + in.Year
	}
	year := now.Year()
	for year%10 != in.Year {
		year++
	}
	return year
}

// listed returns the contract of year and month if it trades at now, and
// otherwise the cause, with r.
func (r *Root) listed(year int, month time.Month, now time.Time) (Contract, *Root, string) {
	switch {
	case !r.HasMonth(month):
		return Contract{}, r, CauseNotContractMonth
	case year > now.Year()+ListedYears:
		return Contract{}, r, CauseNotListed
	}
	c := newContract(r, year, month)
	if !now.Before(c.ExpiresAt) {
		return Contract{}, r, CauseExpired
	}
	return c, r, ""
}

// likelyRoot is the root a malformed name s (normalized) seems to be
// written with, when it is one of this package's: the text before the
// space of a contract, else the text before the month letter and year
// digits ("ES" of "ESA26"), or before the digits when there are more than
// two ("ES" of "ES123").
func likelyRoot(s string) *Root {
	if sym, _, ok := strings.Cut(s, " "); ok {
		return roots[sym]
	}
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	switch {
	case !protocol.ValidRoot(s[:i]):
		return nil
	case len(s)-i > 2 || i < 2:
		return roots[s[:i]]
	}
	return roots[s[:i-1]]
}
