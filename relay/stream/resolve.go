package stream

import (
	"tradebridge/protocol"
)

// The relay sends the agent the instrument names clients asked for ("ES",
// "ESZ26", "ES 12-26"); the agent answers with the contracts it subscribed
// ("ES 12-26") and the names it does not know, as sets. Quotes carry
// contract names, so the relay maps each requested name to its contract
// from that answer:
//
//  1. a name the agent reported unknown is unknown;
//  2. a name the answer holds as is (a contract name) is itself;
//  3. a month code ("ESZ26", "ESZ6") is the answer's contract of that
//     root, month and year (the last digit of the year for "ESZ6");
//  4. a root ("ES") is the answer's contract of that root that no other
//     requested name names exactly, the earliest if several (the front
//     month is the earliest contract still trading);
//  5. anything else is unknown.
//
// The rules are exact whenever the agent resolves a root to its front
// month, which is what roots mean (DESIGN.md). An agent that reports its
// own mapping (SubscriptionsResult.Resolved) is taken at its word and the
// rules are not needed. Names are read with the one instrument grammar,
// protocol.ParseInstrument.

// contract is a parsed contract name "<ROOT> MM-YY".
type contract struct {
	name  string // as the agent spells it
	root  string // upper case
	month int
	year  int // two digits
}

// parseContract parses a name of the contract form.
func parseContract(s string) (contract, bool) {
	in, err := protocol.ParseInstrument(s)
	if err != nil || in.Form != protocol.InstrumentContract {
		return contract{}, false
	}
	return contract{name: s, root: in.Root, month: int(in.Month), year: in.Year}, true
}

func (c contract) before(d contract) bool {
	if c.year != d.year {
		return c.year < d.year
	}
	return c.month < d.month
}

// normalizeContract is the map key of a contract name: trimmed, upper
// case.
func normalizeContract(s string) string { return protocol.NormalizeInstrument(s) }

// resolveNames maps each requested name (normalized: trimmed, upper case)
// to the normalized contract name quotes will carry, per the rules above.
// Names that map to nothing are in unknown.
func resolveNames(requested []string, res protocol.SubscriptionsResult) (mapping map[string]string, unknown map[string]bool) {
	mapping = make(map[string]string, len(requested))
	unknown = make(map[string]bool)
	if res.Resolved != nil {
		for _, r := range requested {
			if c, ok := res.Resolved[r]; ok {
				mapping[r] = normalizeContract(c)
			} else {
				unknown[r] = true
			}
		}
		return mapping, unknown
	}
	notKnown := make(map[string]bool, len(res.Unknown))
	for _, u := range res.Unknown {
		notKnown[normalizeContract(u)] = true
	}
	set := make(map[string]contract, len(res.Instruments))
	var byRoot = make(map[string][]contract)
	for _, name := range res.Instruments {
		n := normalizeContract(name)
		if _, dup := set[n]; dup {
			continue
		}
		c, ok := parseContract(n)
		if !ok {
			c = contract{name: n}
		} else {
			byRoot[c.root] = append(byRoot[c.root], c)
		}
		set[n] = c
	}
	explicit := make(map[string]bool)
	for _, r := range requested {
		if _, ok := set[r]; ok {
			explicit[r] = true
		}
	}
	for _, r := range requested {
		switch {
		case notKnown[r]:
			unknown[r] = true
		case explicit[r]:
			mapping[r] = r
		default:
			if c, ok := resolveAlias(r, byRoot, explicit); ok {
				mapping[r] = c
			} else {
				unknown[r] = true
			}
		}
	}
	return mapping, unknown
}

// resolveAlias applies rules 3 and 4 to r.
func resolveAlias(r string, byRoot map[string][]contract, explicit map[string]bool) (string, bool) {
	in, err := protocol.ParseInstrument(r)
	if err == nil && in.Form == protocol.InstrumentContract {
		return "", false
	}
	if err == nil && in.Form == protocol.InstrumentMonthCode {
		var best *contract
		for i, c := range byRoot[in.Root] {
			if c.month != int(in.Month) {
				continue
			}
			if (in.YearDigits == 2 && c.year == in.Year) || (in.YearDigits == 1 && c.year%10 == in.Year) {
				if best == nil || c.before(*best) {
					best = &byRoot[in.Root][i]
				}
			}
		}
		if best != nil {
			return best.name, true
		}
	}
	cands := byRoot[r]
	var best, bestAny *contract
	for i, c := range cands {
		if bestAny == nil || c.before(*bestAny) {
			bestAny = &cands[i]
		}
		if explicit[c.name] {
			continue
		}
		if best == nil || c.before(*best) {
			best = &cands[i]
		}
	}
	if best != nil {
		return best.name, true
	}
	if bestAny != nil {
		return bestAny.name, true
	}
	return "", false
}
