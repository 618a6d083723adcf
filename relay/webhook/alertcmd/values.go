package alertcmd

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"tradebridge/protocol"
)

// Bounds of the values, as the trading API has them.
const (
	maxQty      = 10_000
	maxNameLen  = 64  // accounts, ids, tags, ATM template names
	maxKeyLen   = 256 // the secret key
	maxPrice    = 1e9
	maxTicks    = 1e6
	maxPercent  = 100
	maxRateN    = 10_000
	maxRatePer  = 86_400 // seconds
	minCancel   = 1      // minutes
	maxCancel   = 60     // minutes
	maxEchoName = 32     // longest unknown field name an error repeats
)

// errorf returns an *Error. Details never hold a value the sender wrote:
// callers pass field names only.
func errorf(field, format string, args ...any) *Error {
	return &Error{Field: field, Detail: fmt.Sprintf(format, args...)}
}

func placeholderError(field string) *Error {
	if field == "" {
		return errorf("", "the text holds a TradingView placeholder ({{…}}) that was not substituted: TradingView fills in only the placeholders it knows for the alert's kind")
	}
	return errorf(field, "%s holds a TradingView placeholder ({{…}}) that was not substituted: TradingView fills in only the placeholders it knows for the alert's kind", field)
}

// safeName reports whether an unknown field's name may be repeated in an
// error: a short name of lower-case letters, digits and underscores,
// which cannot be a secret pasted by mistake in any useful way.
func safeName(k string) bool {
	if k == "" || len(k) > maxEchoName {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// fieldName is how an error names the field k: its name when safe to
// repeat, else "a field".
func fieldName(k string) string {
	if safeName(k) {
		return k
	}
	return "a field"
}

// parseBool reads true/false, yes/no, on/off and 1/0, in any case.
func parseBool(v string) (bool, bool) {
	switch strings.ToLower(v) {
	case "true", "yes", "on", "1":
		return true, true
	case "false", "no", "off", "0":
		return false, true
	}
	return false, false
}

// validName checks a name (account, id, tag, template): 1 to 64 bytes of
// valid, printable text, as the trading API's names.
func validName(s string, max int) bool {
	if s == "" || len(s) > max || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// decimal reads an unsigned decimal number: digits with at most one
// point ("12", "0.5", ".5", "7."). No sign, exponent, spaces or
// separators.
func decimal(s string) (float64, bool) {
	if s == "" || s == "." {
		return 0, false
	}
	dot := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '.' && !dot:
			dot = true
		case '0' <= c && c <= '9':
		default:
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// parseWhole reads a whole number, also written with a zero fraction
// ("2.0", as some placeholders print one), with an optional '+'.
func parseWhole(s string) (int, bool) {
	s = strings.TrimPrefix(s, "+")
	f, ok := decimal(s)
	if !ok || f != math.Trunc(f) || f > math.MaxInt32 {
		return 0, false
	}
	return int(f), true
}

// ParseInstrument reads an instrument= value: a name of protocol's
// instrument grammar (protocol.ParseInstrument: "ES 12-26", "ESZ26",
// "ESZ6", "ES", in any case), or one of TradingView's spellings of a
// contract, rewritten into it: the front month "ES1!" (a root followed by
// 1!) is the root "ES", and a month code with a four-digit year "ESZ2026"
// ({{ticker}} of a dated contract) is "ESZ26". The result is the name
// upper case, as protocol.Instrument.String writes it.
func ParseInstrument(v string) (string, bool) {
	s := protocol.NormalizeInstrument(v)
	if root, ok := strings.CutSuffix(s, "1!"); ok {
		if !protocol.ValidRoot(root) {
			return "", false
		}
		s = root
	} else if n := len(s); n >= 6 && s[n-4:n-2] == "20" && allDigits(s[n-4:]) &&
		protocol.MonthOfCode(s[n-5]) != 0 && protocol.ValidRoot(s[:n-5]) {
		s = s[:n-4] + s[n-2:]
	}
	in, err := protocol.ParseInstrument(s)
	if err != nil {
		return "", false
	}
	return in.String(), true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// ParsePrice reads a price field: a level (4550.25, above 0) or a
// relative price, a number of a unit with an optional sign: ticks
// ("10 ticks", "10ticks", "1 tick", "7.5 ticks"), points ("4 points",
// "4 pts", "4 point", "4 pt"), percent ("0.5%", "0.5 %", "0.5 percent")
// or dollars ("$100", "100 dollars", "100$", "100 usd"; "-$100" and
// "$-100" alike). A level has no sign: "-4" is refused, as a relative
// price needs its unit. Units match without regard to case.
func ParsePrice(v string) (Price, bool) {
	s := strings.ToLower(strings.TrimSpace(v))
	sign, signed := 1.0, false
	takeSign := func() {
		if s != "" && (s[0] == '+' || s[0] == '-') && !signed {
			if s[0] == '-' {
				sign = -1
			}
			signed = true
			s = strings.TrimSpace(s[1:])
		}
	}
	takeSign()
	dollar := false
	if rest, ok := strings.CutPrefix(s, "$"); ok {
		dollar, s = true, strings.TrimSpace(rest)
		takeSign()
	}
	i := 0
	for i < len(s) && (s[i] == '.' || '0' <= s[i] && s[i] <= '9') {
		i++
	}
	num, unit := s[:i], strings.TrimSpace(s[i:])
	f, ok := decimal(num)
	if !ok {
		return Price{}, false
	}
	var u string
	switch unit {
	case "":
		if dollar {
			u = protocol.OffsetDollars
		}
	case "tick", "ticks":
		u = protocol.OffsetTicks
	case "point", "points", "pt", "pts":
		u = protocol.OffsetPoints
	case "%", "percent":
		u = protocol.OffsetPercent
	case "$", "dollar", "dollars", "usd":
		u = protocol.OffsetDollars
	default:
		return Price{}, false
	}
	if dollar && unit != "" {
		return Price{}, false
	}
	if u == "" {
		if signed || f <= 0 || f > maxPrice {
			return Price{}, false
		}
		return Price{Level: &f}, true
	}
	limit := maxPrice
	switch u {
	case protocol.OffsetTicks:
		limit = maxTicks
	case protocol.OffsetPercent:
		limit = maxPercent
	}
	if f > limit {
		return Price{}, false
	}
	return Price{Offset: &Offset{Unit: u, Value: sign * f, Signed: signed}}, true
}

// String writes p as the language does: "4550.25", "-10 ticks", "+4
// points", "0.5%", "$100".
func (p Price) String() string {
	switch {
	case p.Level != nil:
		return strconv.FormatFloat(*p.Level, 'f', -1, 64)
	case p.Offset != nil:
		o := p.Offset
		v := strconv.FormatFloat(math.Abs(o.Value), 'f', -1, 64)
		sign := ""
		if o.Value < 0 {
			sign = "-"
		} else if o.Signed {
			sign = "+"
		}
		switch o.Unit {
		case protocol.OffsetPercent:
			return sign + v + "%"
		case protocol.OffsetDollars:
			return sign + "$" + v
		}
		return sign + v + " " + o.Unit
	}
	return ""
}

// ParseClock reads a time of day: "HH:MM" or "H:MM" on the 24-hour clock
// ("09:30", "16:00"), or on the 12-hour clock with AM or PM, with or
// without a space ("1:30 PM", "1:30pm", "12:05 AM" is 00:05).
func ParseClock(v string) (ClockTime, bool) {
	s := strings.ToUpper(strings.TrimSpace(v))
	ampm := ""
	if rest, ok := strings.CutSuffix(s, "AM"); ok {
		ampm, s = "AM", strings.TrimSpace(rest)
	} else if rest, ok := strings.CutSuffix(s, "PM"); ok {
		ampm, s = "PM", strings.TrimSpace(rest)
	}
	hs, ms, ok := strings.Cut(s, ":")
	if !ok || len(hs) < 1 || len(hs) > 2 || len(ms) != 2 || !allDigits(hs) || !allDigits(ms) {
		return 0, false
	}
	h, _ := strconv.Atoi(hs)
	m, _ := strconv.Atoi(ms)
	if m > 59 {
		return 0, false
	}
	switch ampm {
	case "":
		if h > 23 {
			return 0, false
		}
	default:
		if h < 1 || h > 12 {
			return 0, false
		}
		h %= 12
		if ampm == "PM" {
			h += 12
		}
	}
	return ClockTime(h*60 + m), true
}

// String writes t on the 24-hour clock: "09:30".
func (t ClockTime) String() string {
	return fmt.Sprintf("%02d:%02d", int(t)/60, int(t)%60)
}

// Clock returns the time of day of t in t's location: pass a time in New
// York time (the caller loads the location; this package does no I/O).
func Clock(t time.Time) ClockTime {
	return ClockTime(t.Hour()*60 + t.Minute())
}

// ParseRateLimit reads rate_limit: "N" (per DefaultRateLimitPer) or
// "N/seconds", N from 1 to 10000 and seconds from 1 to 86400.
func ParseRateLimit(v string) (RateLimit, bool) {
	ns, ps, per := strings.Cut(v, "/")
	n, ok := parseWhole(strings.TrimSpace(ns))
	if !ok || n < 1 || n > maxRateN {
		return RateLimit{}, false
	}
	rl := RateLimit{N: n, Per: DefaultRateLimitPer}
	if per {
		p, ok := parseWhole(strings.TrimSpace(ps))
		if !ok || p < 1 || p > maxRatePer {
			return RateLimit{}, false
		}
		rl.Per = time.Duration(p) * time.Second
	}
	return rl, true
}

// parseSeconds reads a decimal number of seconds: 0 < d ≤ MaxDelay,
// rounded to the millisecond.
func parseSeconds(v string) (time.Duration, bool) {
	f, ok := decimal(strings.TrimPrefix(v, "+"))
	if !ok || f <= 0 || f > MaxDelay.Seconds() {
		return 0, false
	}
	d := time.Duration(math.Round(f*1000)) * time.Millisecond
	return d, d > 0
}

// parseMinutes reads cancel_after: a decimal number of minutes from 1 to
// 60, rounded to the second.
func parseMinutes(v string) (time.Duration, bool) {
	f, ok := decimal(strings.TrimPrefix(v, "+"))
	if !ok || f < minCancel || f > maxCancel {
		return 0, false
	}
	return time.Duration(math.Round(f*60)) * time.Second, true
}

// parsePositions reads require_market_position: flat, long and short,
// separated by '/' or ',', in any case, into the canonical comma list in
// the order flat, long, short.
func parsePositions(v string) (string, bool) {
	seen := map[string]bool{}
	for part := range strings.FieldsFuncSeq(v, func(r rune) bool { return r == '/' || r == ',' }) {
		p := strings.ToLower(strings.TrimSpace(part))
		switch p {
		case "flat", "long", "short":
			seen[p] = true
		case "":
		default:
			return "", false
		}
	}
	var out []string
	for _, p := range []string{"flat", "long", "short"} {
		if seen[p] {
			out = append(out, p)
		}
	}
	return strings.Join(out, ","), len(out) > 0
}

// normalizeOrderType reads order_type: MARKET, LIMIT, STOPMARKET (also
// STOP), STOPLIMIT, in any case, also with '_', '-' or spaces inside
// ("stop_limit").
func normalizeOrderType(v string) (string, bool) {
	s := strings.ToUpper(typeSeparators.Replace(v))
	switch s {
	case "MARKET":
		return protocol.OrderTypeMarket, true
	case "LIMIT":
		return protocol.OrderTypeLimit, true
	case "STOPMARKET", "STOP":
		return protocol.OrderTypeStopMarket, true
	case "STOPLIMIT":
		return protocol.OrderTypeStopLimit, true
	}
	return "", false
}

var typeSeparators = strings.NewReplacer("_", "", "-", "", " ", "")

// langOrderType is an order type as the language spells it.
func langOrderType(t string) string {
	return strings.ToUpper(t)
}
