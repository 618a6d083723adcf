package sim

import (
	"errors"
	"testing"
	"time"

	"tradebridge/futures"
	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// FuzzResolve feeds resolve instrument names as callers write them, at a
// time up to ten years after 2026-10-05, and checks that
//
//   - a contract it returns trades at that time, in a contract month of
//     its root, is futures.Resolve's, and its name is in the grammar's
//     contract form and resolves to itself;
//   - a refusal is a *bridge.InstrumentError matching
//     bridge.ErrInstrumentUnknown, with futures.Resolve's cause, and a
//     Root (and Front) only when the simulator trades that root.
//
// How names resolve is futures' (its FuzzResolve holds the oracle of the
// simulator's parser before the shared grammar).
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
	causes := map[string]bool{bridge.InstrumentMalformed: true, bridge.InstrumentUnknownRoot: true,
		bridge.InstrumentNotContractMonth: true, bridge.InstrumentExpired: true, bridge.InstrumentNotListed: true}
	f.Fuzz(func(t *testing.T, s string, days uint16) {
		now := base.AddDate(0, 0, int(days%3653))
		c, err := resolve(s, now)
		fc, ferr := futures.Resolve(s, now)
		if err == nil {
			in, perr := protocol.ParseInstrument(c.Name)
			if perr != nil || in.Form != protocol.InstrumentContract || in.Root != c.Root.Symbol {
				t.Fatalf("resolve(%q) = %q, not a contract name of %s", s, c.Name, c.Root.Symbol)
			}
			if !now.Before(c.ExpiresAt) || !c.Root.HasMonth(c.Month) || walks[c.Root.Symbol] == nil {
				t.Fatalf("resolve(%q) = %q, which does not trade at %s", s, c.Name, now)
			}
			if ferr != nil || fc != c {
				t.Fatalf("resolve(%q) = %q, futures.Resolve = %q, %v", s, c.Name, fc.Name, ferr)
			}
			if again, err := resolve(c.Name, now); err != nil || again.Name != c.Name {
				t.Fatalf("resolve(%q) = %q, which resolves to %q, %v", s, c.Name, again.Name, err)
			}
			return
		}
		var ie *bridge.InstrumentError
		if !errors.Is(err, bridge.ErrInstrumentUnknown) || !errors.As(err, &ie) || !causes[ie.Cause] {
			t.Fatalf("resolve(%q): %v", s, err)
		}
		var fe *futures.ResolveError
		if !errors.As(ferr, &fe) || fe.Cause != ie.Cause {
			t.Fatalf("resolve(%q): %v, futures.Resolve: %v", s, err, ferr)
		}
		if ie.Root != "" {
			r, ok := futures.Lookup(ie.Root)
			if !ok || walks[ie.Root] == nil || ie.Front != r.Front(now).Name || ie.Months != r.MonthCodes() {
				t.Fatalf("resolve(%q): %+v names a root the simulator does not trade", s, ie)
			}
		} else if ie.Front != "" || ie.Months != "" {
			t.Fatalf("resolve(%q): %+v names no root but its months", s, ie)
		}
	})
}
