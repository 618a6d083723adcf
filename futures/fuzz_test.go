package futures

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"tradebridge/protocol"
)

// FuzzResolve feeds Resolve instrument names as callers write them, at a
// time up to ten years after 2026-10-05, and checks that
//
//   - a contract it returns trades at that time, in a contract month of
//     its root, and its name is in the grammar's contract form and
//     resolves to itself;
//   - a refusal is a *ResolveError matching ErrUnknown, with one of the
//     documented causes, and a Root (with its Months and Front) only when
//     the root is a known one;
//   - parse decides as the simulator's parser did before the shared
//     grammar (oldParse, kept below as the oracle), but for the two edges
//     the grammar settled (see settledEdge).
func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		"ES", "es", " ES 12-26 ", "ES 12-26", "ESZ26", "ESZ6", "esh7", "NQ 03-27", "CL", "CLF27", "MGC",
		"M2K", "M2KZ6", "ES 01-27", "ESF27", "ES 06-26", "ES 12-99", "ES 13-26", "ES 00-26", "ESA26",
		"ES123", "Z6", "ZZ", "ZZTOP", "QQQ 12-26", "XXZ6", "ABCDEFZ6", "ES  12-26", "ES \t12-26", "",
		"ÉS", "ES-Z6", "123", "ESZ", "ES 12-2", "ES 12-266",
	} {
		f.Add(s, uint16(0))
	}
	f.Add("GCG7", uint16(400))
	f.Add("ESZ6", uint16(3000))
	base := time.Date(2026, time.October, 5, 14, 30, 0, 0, time.UTC)
	causes := map[string]bool{CauseMalformed: true, CauseUnknownRoot: true, CauseNotContractMonth: true,
		CauseExpired: true, CauseNotListed: true}
	f.Fuzz(func(t *testing.T, s string, days uint16) {
		now := base.AddDate(0, 0, int(days%3653))
		c, err := Resolve(s, now)
		if err == nil {
			in, perr := protocol.ParseInstrument(c.Name)
			if perr != nil || in.Form != protocol.InstrumentContract || in.Root != c.Root.Symbol {
				t.Fatalf("Resolve(%q) = %q, not a contract name of %s", s, c.Name, c.Root.Symbol)
			}
			if !now.Before(c.ExpiresAt) || !c.Root.HasMonth(c.Month) {
				t.Fatalf("Resolve(%q) = %q, which does not trade at %s", s, c.Name, now)
			}
			if again, err := Resolve(c.Name, now); err != nil || again != c {
				t.Fatalf("Resolve(%q) = %q, which resolves to %q, %v", s, c.Name, again.Name, err)
			}
		} else {
			var re *ResolveError
			if !errors.Is(err, ErrUnknown) || !errors.As(err, &re) || !causes[re.Cause] || c != (Contract{}) {
				t.Fatalf("Resolve(%q): %v", s, err)
			}
			if re.Root != "" && (roots[re.Root] == nil || re.Front != roots[re.Root].Front(now).Name ||
				re.Months != roots[re.Root].MonthCodes()) ||
				re.Root == "" && (re.Front != "" || re.Months != "") {
				t.Fatalf("Resolve(%q): %+v names an unknown root", s, re)
			}
		}

		n := protocol.NormalizeInstrument(s)
		nc, nr, ncause := parse(n, now)
		oc, or, ocause := oldParse(n, now)
		if nc == oc && nr == or && ncause == ocause {
			return
		}
		switch settledEdge(n) {
		case "spacing":
			if ncause != CauseMalformed || nr != likelyRoot(n) {
				t.Fatalf("%q: got (%q, %v, %q), want malformed", n, nc.Name, nr, ncause)
			}
		case "long root":
			if ncause != CauseUnknownRoot || nr != nil {
				t.Fatalf("%q: got (%q, %v, %q), want unknown_root", n, nc.Name, nr, ncause)
			}
		default:
			t.Fatalf("%q: got (%q, %v, %q), the old parser (%q, %v, %q)", n, nc.Name, nr, ncause, oc.Name, or, ocause)
		}
	})
}

// settledEdge names the edge where the simulator's old parser and the
// stream's disagreed, which the shared grammar settled the stream's way:
// "spacing" for a contract with other white space than one space between
// root and month (the old parser trimmed it away), "long root" for a month
// code of a six-character root (the old parser took the root and letter
// together for a root, too long, and said malformed).
func settledEdge(n string) string {
	if sym, rest, ok := strings.Cut(n, " "); ok && protocol.ValidRoot(sym) && rest != strings.TrimSpace(rest) {
		return "spacing"
	}
	if in, err := protocol.ParseInstrument(n); err == nil && in.Form == protocol.InstrumentMonthCode && len(in.Root) == 6 {
		return "long root"
	}
	return ""
}

// oldParse is the simulator's parser as it was before the shared grammar,
// kept as the oracle of FuzzResolve.
func oldParse(s string, now time.Time) (Contract, *Root, string) {
	if sym, rest, ok := strings.Cut(s, " "); ok {
		r := roots[sym]
		rest = strings.TrimSpace(rest)
		if len(rest) != 5 || rest[2] != '-' || !oldDigits(rest[:2]) || !oldDigits(rest[3:]) || !oldValidSymbol(sym) {
			return Contract{}, r, CauseMalformed
		}
		mm, _ := strconv.Atoi(rest[:2])
		yy, _ := strconv.Atoi(rest[3:])
		if mm < 1 || mm > 12 {
			return Contract{}, r, CauseMalformed
		}
		if r == nil {
			return Contract{}, nil, CauseUnknownRoot
		}
		return r.listed(2000+yy, time.Month(mm), now)
	}
	if r := roots[s]; r != nil {
		return r.Front(now), r, ""
	}
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	yearDigits := s[i:]
	switch {
	case !oldValidSymbol(s[:i]):
		return Contract{}, nil, CauseMalformed
	case yearDigits == "":
		return Contract{}, nil, CauseUnknownRoot
	case len(yearDigits) > 2 || i < 2:
		return Contract{}, roots[s[:i]], CauseMalformed
	}
	r := roots[s[:i-1]]
	m := strings.IndexByte(protocol.MonthCodes, s[i-1])
	switch {
	case r == nil && m >= 0:
		return Contract{}, nil, CauseUnknownRoot
	case m < 0:
		return Contract{}, r, CauseMalformed
	}
	n, _ := strconv.Atoi(yearDigits)
	year := 2000 + n
	if len(yearDigits) == 1 {
		year = now.Year()
		for year%10 != n {
			year++
		}
	}
	return r.listed(year, time.Month(m+1), now)
}

func oldValidSymbol(s string) bool {
	if s == "" || len(s) > 6 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

func oldDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
