package protocol

import (
	"errors"
	"strings"
	"time"
)

// Instrument names. Callers name a futures instrument in one of three
// forms, read the same way by every side that parses them (the relay's
// stream, the agent's platforms):
//
//	ES 12-26   a contract: root, one space, month 01–12, '-', two-digit year
//	ESZ26      a month code: root, month letter, two-digit year
//	ESZ6       the same with the last digit of the year only
//	ES         a root alone, which stands for its front month
//
// A root is 1 to 6 ASCII letters and digits ("ES", "M2K", "SR3"). The
// month letters are [MonthCodes]. Letters match in either case; the
// parsed Root is upper case. A name that reads as a month code is one:
// "ESZ6" is root ES, December, year 6, never a root "ESZ6" (a platform
// may still look such a name up as a root of its own). Nothing else is
// an instrument name: no other spacing, separators or characters.
//
// Names are compared after [NormalizeInstrument]. Which roots and
// contracts exist, and what a root or a one-digit year resolves to, is
// the platform's to say: the grammar is syntax only.

// MonthCodes are the futures month letters, January first:
// MonthCodes[m-1] is the letter of month m.
const MonthCodes = "FGHJKMNQUVXZ"

// InstrumentPattern is a regular expression (RE2 and ECMA-262 alike) that
// matches exactly the names ParseInstrument accepts, for documents such
// as OpenAPI that describe the grammar.
const InstrumentPattern = `^[A-Za-z0-9]{1,6}( (0[1-9]|1[0-2])-[0-9]{2}|[FGHJKMNQUVXZfghjkmnquvxz][0-9]{1,2})?$`

// MaxInstrumentLen is the length of the longest instrument name: a
// contract of a six-character root ("ABCDEF 12-26").
const MaxInstrumentLen = 12

// ErrMalformedInstrument is the error of ParseInstrument for a name in
// none of the forms. It never quotes the name.
var ErrMalformedInstrument = errors.New("protocol: malformed instrument name")

// InstrumentForm is the form in which an instrument is named.
type InstrumentForm uint8

// Forms of instrument names.
const (
	// InstrumentRoot is a root alone: "ES".
	InstrumentRoot InstrumentForm = iota + 1
	// InstrumentMonthCode is a root, month letter and year: "ESZ26",
	// "ESZ6".
	InstrumentMonthCode
	// InstrumentContract is a root and a contract month: "ES 12-26".
	InstrumentContract
)

// String returns the form's name, for logs and tests.
func (f InstrumentForm) String() string {
	switch f {
	case InstrumentRoot:
		return "root"
	case InstrumentMonthCode:
		return "month code"
	case InstrumentContract:
		return "contract"
	}
	return "invalid"
}

// Instrument is a parsed instrument name.
type Instrument struct {
	Form InstrumentForm
	// Root is the root symbol, upper case.
	Root string
	// Month is the contract month; 0 for a root.
	Month time.Month
	// Year is the year as written: 0–99 with two digits, 0–9 with one
	// (the platform decides which decade); 0 for a root.
	Year int
	// YearDigits is how many digits the year was written with: 2 for a
	// contract, 1 or 2 for a month code, 0 for a root.
	YearDigits int
}

// ParseInstrument parses an instrument name in one of the forms above.
// It neither trims nor folds anything but ASCII case: callers pass names
// through NormalizeInstrument first. The error is ErrMalformedInstrument.
func ParseInstrument(s string) (Instrument, error) {
	if len(s) > MaxInstrumentLen {
		return Instrument{}, ErrMalformedInstrument
	}
	if root, date, ok := strings.Cut(s, " "); ok {
		// "<ROOT> MM-YY"
		if !ValidRoot(root) || len(date) != 5 || date[2] != '-' ||
			!isDigit(date[0]) || !isDigit(date[1]) || !isDigit(date[3]) || !isDigit(date[4]) {
			return Instrument{}, ErrMalformedInstrument
		}
		m := int(date[0]-'0')*10 + int(date[1]-'0')
		if m < 1 || m > 12 {
			return Instrument{}, ErrMalformedInstrument
		}
		return Instrument{Form: InstrumentContract, Root: upperASCII(root), Month: time.Month(m),
			Year: int(date[3]-'0')*10 + int(date[4]-'0'), YearDigits: 2}, nil
	}
	// "<ROOT><letter><Y or YY>": the year is the trailing run of digits,
	// the letter the byte before it.
	i := len(s)
	for i > 0 && isDigit(s[i-1]) {
		i--
	}
	if d := len(s) - i; d >= 1 && d <= 2 && i >= 2 {
		if m := MonthOfCode(s[i-1]); m != 0 && ValidRoot(s[:i-1]) {
			y := 0
			for j := i; j < len(s); j++ {
				y = y*10 + int(s[j]-'0')
			}
			return Instrument{Form: InstrumentMonthCode, Root: upperASCII(s[:i-1]), Month: m, Year: y, YearDigits: d}, nil
		}
	}
	if ValidRoot(s) {
		return Instrument{Form: InstrumentRoot, Root: upperASCII(s)}, nil
	}
	return Instrument{}, ErrMalformedInstrument
}

// String returns the name in its form, upper case: "ES 12-26", "ESZ26",
// "ESZ6" or "ES". For a name ParseInstrument accepted it is the name
// upper-cased; the zero Instrument is "".
func (in Instrument) String() string {
	switch in.Form {
	case InstrumentRoot:
		return in.Root
	case InstrumentContract:
		return ContractName(in.Root, in.Month, in.Year)
	case InstrumentMonthCode:
		b := make([]byte, 0, len(in.Root)+3)
		b = append(b, in.Root...)
		b = append(b, MonthCode(in.Month))
		if in.YearDigits == 1 {
			return string(append(b, byte('0'+mod(in.Year, 10))))
		}
		return string(appendTwoDigits(b, in.Year))
	}
	return ""
}

// ContractName returns the contract name of root's month in year, as the
// platforms spell it: "ES 12-26" (the year's last two digits).
func ContractName(root string, month time.Month, year int) string {
	b := make([]byte, 0, len(root)+6)
	b = append(b, root...)
	b = append(b, ' ')
	b = appendTwoDigits(b, int(month))
	b = append(b, '-')
	return string(appendTwoDigits(b, year))
}

// ValidRoot reports whether s is a root: 1 to 6 ASCII letters and digits.
func ValidRoot(s string) bool {
	if s == "" || len(s) > 6 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || isDigit(c)) {
			return false
		}
	}
	return true
}

// MonthCode returns the month letter of m ('Z' for December), or 0 when m
// is not a month.
func MonthCode(m time.Month) byte {
	if m < time.January || m > time.December {
		return 0
	}
	return MonthCodes[m-1]
}

// MonthOfCode returns the month of a month letter in either case
// (time.December for 'Z' or 'z'), or 0 when c is not one.
func MonthOfCode(c byte) time.Month {
	if 'a' <= c && c <= 'z' {
		c -= 'a' - 'A'
	}
	return time.Month(strings.IndexByte(MonthCodes, c) + 1)
}

// NormalizeInstrument is the form in which names are compared and
// forwarded: without surrounding white space, upper case.
func NormalizeInstrument(s string) string { return strings.ToUpper(strings.TrimSpace(s)) }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// upperASCII upper-cases ASCII letters, without allocating when there are
// none to change.
func upperASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'a' <= s[i] && s[i] <= 'z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'a' <= b[j] && b[j] <= 'z' {
					b[j] -= 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// appendTwoDigits appends n's last two decimal digits.
func appendTwoDigits(b []byte, n int) []byte {
	n = mod(n, 100)
	return append(b, byte('0'+n/10), byte('0'+n%10))
}

// mod is n modulo m, never negative.
func mod(n, m int) int { return (n%m + m) % m }
