package futures

import (
	"math"
	"slices"
	"time"

	"tradebridge/protocol"
)

// Family is a group of roots that share contract months and a roll rule.
type Family int

// Families of roots.
const (
	// FamilyIndex: equity index futures, quarterly, last trading day the
	// third Friday of the month.
	FamilyIndex Family = iota + 1
	// FamilyEnergy: crude oil, monthly, last trading day in the month
	// before the contract month.
	FamilyEnergy
	// FamilyMetal: gold, bimonthly, rolling in the month before the
	// contract month.
	FamilyMetal
)

// String returns the family's name, for logs and tests.
func (f Family) String() string {
	switch f {
	case FamilyIndex:
		return "index"
	case FamilyEnergy:
		return "energy"
	case FamilyMetal:
		return "metal"
	}
	return "invalid"
}

var (
	quarterly = []time.Month{time.March, time.June, time.September, time.December}
	monthly   = []time.Month{time.January, time.February, time.March, time.April, time.May, time.June,
		time.July, time.August, time.September, time.October, time.November, time.December}
	bimonthly = []time.Month{time.February, time.April, time.June, time.August, time.October, time.December}
)

// Root is the specification of one futures root. Roots are shared by every
// caller: they are read-only.
type Root struct {
	// Symbol is the root symbol, upper case ("ES").
	Symbol string
	// Exchange is the listing exchange ("CME", "CBOT", "NYMEX", "COMEX").
	Exchange string
	// Description names the product ("E-mini S&P 500").
	Description string
	// Currency is the currency of prices and values ("USD").
	Currency string
	// TickSize is the smallest price increment, in points.
	TickSize float64
	// TickValue is the value of one tick of one contract, in Currency.
	TickValue float64
	// PointValue is the value of one point of one contract, in Currency.
	PointValue float64
	// Decimals is the number of decimal places of a price on the tick
	// grid.
	Decimals int
	// Family decides the contract months and the roll rule.
	Family Family
	// Months are the contract months, in calendar order.
	Months []time.Month
}

// roots is the table of roots, by symbol.
var roots = func() map[string]*Root {
	specs := []Root{
		{"ES", "CME", "E-mini S&P 500", "USD", 0.25, 12.50, 50, 2, FamilyIndex, quarterly},
		{"MES", "CME", "Micro E-mini S&P 500", "USD", 0.25, 1.25, 5, 2, FamilyIndex, quarterly},
		{"NQ", "CME", "E-mini Nasdaq-100", "USD", 0.25, 5.00, 20, 2, FamilyIndex, quarterly},
		{"MNQ", "CME", "Micro E-mini Nasdaq-100", "USD", 0.25, 0.50, 2, 2, FamilyIndex, quarterly},
		{"YM", "CBOT", "E-mini Dow ($5)", "USD", 1, 5.00, 5, 0, FamilyIndex, quarterly},
		{"MYM", "CBOT", "Micro E-mini Dow", "USD", 1, 0.50, 0.5, 0, FamilyIndex, quarterly},
		{"RTY", "CME", "E-mini Russell 2000", "USD", 0.10, 5.00, 50, 1, FamilyIndex, quarterly},
		{"M2K", "CME", "Micro E-mini Russell 2000", "USD", 0.10, 0.50, 5, 1, FamilyIndex, quarterly},
		{"CL", "NYMEX", "Crude Oil (WTI)", "USD", 0.01, 10.00, 1000, 2, FamilyEnergy, monthly},
		{"MCL", "NYMEX", "Micro WTI Crude Oil", "USD", 0.01, 1.00, 100, 2, FamilyEnergy, monthly},
		{"GC", "COMEX", "Gold", "USD", 0.10, 10.00, 100, 1, FamilyMetal, bimonthly},
		{"MGC", "COMEX", "Micro Gold", "USD", 0.10, 1.00, 10, 1, FamilyMetal, bimonthly},
	}
	m := make(map[string]*Root, len(specs))
	for i := range specs {
		m[specs[i].Symbol] = &specs[i]
	}
	return m
}()

// sortedRoots is the table sorted by symbol.
var sortedRoots = func() []*Root {
	out := make([]*Root, 0, len(roots))
	for _, r := range roots {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *Root) int {
		switch {
		case a.Symbol < b.Symbol:
			return -1
		case a.Symbol > b.Symbol:
			return 1
		}
		return 0
	})
	return out
}()

// Lookup returns the root of a symbol, upper case as Root.Symbol ("ES").
func Lookup(symbol string) (*Root, bool) {
	r, ok := roots[symbol]
	return r, ok
}

// Roots returns every root, sorted by symbol. The slice is the caller's.
func Roots() []*Root { return slices.Clone(sortedRoots) }

// MaxTicks bounds prices in ticks: far above any real price and far below
// the range of int64.
const MaxTicks = 1e12

// Price returns the price of n ticks, rounded to the root's decimals so
// that it equals the literal a person would write (2300.1, not
// 2300.1000000000004).
func (r *Root) Price(n int64) float64 {
	return roundTo(float64(n)*r.TickSize, r.Decimals)
}

// Ticks returns p in ticks (rounded to the nearest) and whether p lies on
// the tick grid. A price that is not finite, or beyond MaxTicks ticks, is
// 0 and off the grid.
func (r *Root) Ticks(p float64) (int64, bool) {
	if math.IsNaN(p) || math.IsInf(p, 0) {
		return 0, false
	}
	x := p / r.TickSize
	if math.Abs(x) > MaxTicks {
		return 0, false
	}
	n := math.Round(x)
	return int64(n), math.Abs(x-n) < 1e-6
}

// HasMonth reports whether m is a contract month of the root.
func (r *Root) HasMonth(m time.Month) bool { return slices.Contains(r.Months, m) }

// MonthCodes returns the root's contract months as month codes, in
// calendar order ("HMUZ").
func (r *Root) MonthCodes() string {
	b := make([]byte, len(r.Months))
	for i, m := range r.Months {
		b[i] = protocol.MonthCode(m)
	}
	return string(b)
}

// Front returns the root's front month at now: the first contract whose
// roll has not come yet.
func (r *Root) Front(now time.Time) Contract {
	for y := now.Year() - 1; ; y++ {
		for _, m := range r.Months {
			if c := newContract(r, y, m); now.Before(c.RollAt) {
				return c
			}
		}
	}
}

// roundTo rounds x to n decimal places.
func roundTo(x float64, n int) float64 {
	p := math.Pow10(n)
	return math.Round(x*p) / p
}
