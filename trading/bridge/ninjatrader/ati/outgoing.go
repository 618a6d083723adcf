package ati

import (
	"strconv"
	"strings"
	"time"

	"tradebridge/protocol"
)

// maxOutgoingFile bounds the size of a file read from the outgoing folder:
// every file the ATI writes there is one short line.
const maxOutgoingFile = 4096

// positionSuffix ends a position file's name (compared without case: the
// help guide writes "_Position.txt", NinjaTrader 8 writes "_position.txt").
const positionSuffix = "_position.txt"

// orderFile is the content of an order state file:
// "<state>;<filled>;<average fill price>".
type orderFile struct {
	State   string // protocol spelling
	Filled  int
	AvgFill float64
}

// parseOrderFile reads an order state file. ok is false when the content
// is not three fields of the expected types (a file read while NinjaTrader
// was writing it, or not an order state file). An order state this
// package does not know reads as protocol.OrderStateUnknown.
func parseOrderFile(content string) (orderFile, bool) {
	f := splitFields(content)
	if len(f) != 3 || f[0] == "" {
		return orderFile{}, false
	}
	filled, err := strconv.Atoi(f[1])
	if err != nil || filled < 0 {
		return orderFile{}, false
	}
	avg, ok := parseDecimal(f[2])
	if !ok {
		return orderFile{}, false
	}
	return orderFile{State: orderState(f[0]), Filled: filled, AvgFill: avg}, true
}

// orderStates maps NinjaTrader's order states, folded to lower case
// without spaces, '_' or '-', to protocol's. NinjaTrader writes the
// OrderState name ("FILLED", "PARTFILLED", "Working"); the help guide's
// table uses display names ("Partially filled", "Cancel pending").
var orderStates = map[string]string{
	"initialized":     protocol.OrderStateInitialized,
	"submitted":       protocol.OrderStateSubmitted,
	"accepted":        protocol.OrderStateAccepted,
	"suspended":       protocol.OrderStateAccepted, // held by the broker until triggered
	"triggerpending":  protocol.OrderStateTriggerPending,
	"working":         protocol.OrderStateWorking,
	"changepending":   protocol.OrderStateChangePending,
	"changesubmitted": protocol.OrderStateChangeSubmitted,
	"cancelpending":   protocol.OrderStateCancelPending,
	"cancelsubmitted": protocol.OrderStateCancelSubmitted,
	"cancelled":       protocol.OrderStateCancelled,
	"canceled":        protocol.OrderStateCancelled,
	"rejected":        protocol.OrderStateRejected,
	"partfilled":      protocol.OrderStatePartFilled,
	"partiallyfilled": protocol.OrderStatePartFilled,
	"filled":          protocol.OrderStateFilled,
	"unknown":         protocol.OrderStateUnknown,
}

// orderState returns the protocol spelling of a NinjaTrader order state.
func orderState(s string) string {
	if st, ok := orderStates[foldName(s)]; ok {
		return st
	}
	return protocol.OrderStateUnknown
}

// foldName lower-cases s and drops spaces, '_' and '-'.
func foldName(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '_' || c == '-':
		case 'A' <= c && c <= 'Z':
			b.WriteByte(c + 'a' - 'A')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// isPositionFileName reports whether name is a position file's name.
func isPositionFileName(name string) bool {
	return len(name) > len(positionSuffix) && strings.EqualFold(name[len(name)-len(positionSuffix):], positionSuffix)
}

// parsePositionName splits a position file's name,
// "<instrument> <exchange>_<account>_position.txt", into the account and
// the instrument's contract name. Instruments and exchanges contain no
// '_', so the first '_' ends them; the account is the rest, '_' and spaces
// included. now resolves one-digit years of month codes.
func parsePositionName(name string, now time.Time) (account, instrument string, ok bool) {
	if !isPositionFileName(name) {
		return "", "", false
	}
	stem := name[:len(name)-len(positionSuffix)]
	inst, account, found := strings.Cut(stem, "_")
	if !found || account == "" || inst == "" {
		return "", "", false
	}
	instrument, ok = contractFromFile(inst, now)
	return account, instrument, ok
}

// parsePositionContent reads a position file's content.
func parsePositionContent(content string) (marketPosition string, qty int, avg float64, ok bool) {
	f := splitFields(content)
	if len(f) != 3 {
		return "", 0, 0, false
	}
	switch strings.ToUpper(f[0]) {
	case "LONG":
		marketPosition = protocol.MarketPositionLong
	case "SHORT":
		marketPosition = protocol.MarketPositionShort
	case "FLAT":
		marketPosition = protocol.MarketPositionFlat
	default:
		return "", 0, 0, false
	}
	qty, err := strconv.Atoi(f[1])
	if err != nil || qty < 0 {
		return "", 0, 0, false
	}
	if avg, ok = parseDecimal(f[2]); !ok {
		return "", 0, 0, false
	}
	if marketPosition == protocol.MarketPositionFlat {
		qty, avg = 0, 0
	} else if qty == 0 {
		return "", 0, 0, false
	}
	return marketPosition, qty, avg, true
}

// parseConnection reads a connection state file: CONNECTED or
// DISCONNECTED, returned in protocol's casing.
func parseConnection(content string) (string, bool) {
	switch strings.ToUpper(strings.TrimSpace(content)) {
	case "CONNECTED":
		return "Connected", true
	case "DISCONNECTED":
		return "Disconnected", true
	}
	return "", false
}

// splitFields splits one line of ';'-separated fields, each trimmed. A
// byte-order mark and a trailing line break are ignored; a second line
// makes the content unreadable (nil).
func splitFields(content string) []string {
	content = strings.TrimPrefix(content, "\uFEFF")
	content = strings.TrimRight(content, "\r\n")
	if strings.ContainsAny(content, "\r\n") || content == "" {
		return nil
	}
	f := strings.Split(content, ";")
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	return f
}

// parseDecimal reads a non-negative decimal as NinjaTrader writes it: '.'
// as the separator, or a single ',' when the machine's culture uses one
// and there is no '.'.
func parseDecimal(s string) (float64, bool) {
	if strings.Count(s, ",") == 1 && !strings.Contains(s, ".") {
		s = strings.Replace(s, ",", ".", 1)
	}
	if s == "" || strings.ContainsAny(s, "eEnNiI_xXpP+-") {
		// Only plain digits and one '.': no exponents, NaN, Inf, hex or
		// signs.
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}

// monthAbbrevs are the month names NinjaTrader shows ("SEP26").
var monthAbbrevs = [...]string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}

// contractFromFile reads the instrument part of a position file's name,
// with or without the exchange after it, as a contract name. NinjaTrader 8
// writes the instrument's full name ("ES 12-26 Globex"); the help guide
// shows "ES 0914 Globex", and names like "ESZ6 Globex" and "ES SEP26
// Globex" have been seen. A root alone (no contract month) is not read.
func contractFromFile(s string, now time.Time) (string, bool) {
	s = strings.ToUpper(strings.TrimSpace(s))
	if name, ok := contractName(s, now); ok {
		return name, true
	}
	if i := strings.LastIndexByte(s, ' '); i > 0 {
		return contractName(strings.TrimSpace(s[:i]), now)
	}
	return "", false
}

// contractName reads an upper-case instrument name in any of the forms of
// contractFromFile, without exchange.
func contractName(s string, now time.Time) (string, bool) {
	if in, err := protocol.ParseInstrument(s); err == nil {
		switch in.Form {
		case protocol.InstrumentContract:
			return in.String(), true
		case protocol.InstrumentMonthCode:
			y := in.Year
			if in.YearDigits == 1 {
				// The first year from now's that ends in the digit.
				cur := now.Year()
				y = cur + ((in.Year-cur%10)+10)%10
			}
			return protocol.ContractName(in.Root, in.Month, y), true
		}
		return "", false
	}
	root, date, ok := strings.Cut(s, " ")
	if !ok || !protocol.ValidRoot(root) {
		return "", false
	}
	switch {
	case len(date) == 4 && allDigits(date): // "0914": MMYY
		m, _ := strconv.Atoi(date[:2])
		y, _ := strconv.Atoi(date[2:])
		if m < 1 || m > 12 {
			return "", false
		}
		return protocol.ContractName(root, time.Month(m), y), true
	case len(date) == 5 && allDigits(date[3:]): // "SEP26"
		for i, a := range monthAbbrevs {
			if date[:3] == a {
				y, _ := strconv.Atoi(date[3:])
				return protocol.ContractName(root, time.Month(i+1), y), true
			}
		}
	}
	return "", false
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
