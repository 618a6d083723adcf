package futures_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/futures"
)

func TestRoots(t *testing.T) {
	t.Parallel()
	type spec struct {
		exchange, desc                  string
		tickSize, tickValue, pointValue float64
		decimals                        int
		family                          futures.Family
		months                          string
	}
	want := map[string]spec{
		"ES":  {"CME", "E-mini S&P 500", 0.25, 12.5, 50, 2, futures.FamilyIndex, "HMUZ"},
		"MES": {"CME", "Micro E-mini S&P 500", 0.25, 1.25, 5, 2, futures.FamilyIndex, "HMUZ"},
		"NQ":  {"CME", "E-mini Nasdaq-100", 0.25, 5, 20, 2, futures.FamilyIndex, "HMUZ"},
		"MNQ": {"CME", "Micro E-mini Nasdaq-100", 0.25, 0.5, 2, 2, futures.FamilyIndex, "HMUZ"},
		"YM":  {"CBOT", "E-mini Dow ($5)", 1, 5, 5, 0, futures.FamilyIndex, "HMUZ"},
		"MYM": {"CBOT", "Micro E-mini Dow", 1, 0.5, 0.5, 0, futures.FamilyIndex, "HMUZ"},
		"RTY": {"CME", "E-mini Russell 2000", 0.1, 5, 50, 1, futures.FamilyIndex, "HMUZ"},
		"M2K": {"CME", "Micro E-mini Russell 2000", 0.1, 0.5, 5, 1, futures.FamilyIndex, "HMUZ"},
		"CL":  {"NYMEX", "Crude Oil (WTI)", 0.01, 10, 1000, 2, futures.FamilyEnergy, "FGHJKMNQUVXZ"},
		"MCL": {"NYMEX", "Micro WTI Crude Oil", 0.01, 1, 100, 2, futures.FamilyEnergy, "FGHJKMNQUVXZ"},
		"GC":  {"COMEX", "Gold", 0.1, 10, 100, 1, futures.FamilyMetal, "GJMQVZ"},
		"MGC": {"COMEX", "Micro Gold", 0.1, 1, 10, 1, futures.FamilyMetal, "GJMQVZ"},
	}
	roots := futures.Roots()
	require.Len(t, roots, len(want))
	for i, r := range roots {
		if i > 0 {
			require.Less(t, roots[i-1].Symbol, r.Symbol, "sorted by symbol")
		}
		w, ok := want[r.Symbol]
		require.True(t, ok, r.Symbol)
		got := spec{r.Exchange, r.Description, r.TickSize, r.TickValue, r.PointValue, r.Decimals, r.Family, r.MonthCodes()}
		require.Equal(t, w, got, r.Symbol)
		require.Equal(t, "USD", r.Currency)
		require.InDelta(t, r.TickValue, r.TickSize*r.PointValue, 1e-9, "%s: a tick is worth its size in points", r.Symbol)
		l, ok := futures.Lookup(r.Symbol)
		require.True(t, ok)
		require.Same(t, r, l)
	}

	roots[0] = nil
	require.NotNil(t, futures.Roots()[0], "Roots returns the caller's own slice")
	for _, s := range []string{"", "es", "ZZ", "ES 12-26", "ESZ6"} {
		_, ok := futures.Lookup(s)
		require.False(t, ok, "%q", s)
	}
}

func TestFamilyString(t *testing.T) {
	t.Parallel()
	for f, want := range map[futures.Family]string{futures.FamilyIndex: "index", futures.FamilyEnergy: "energy",
		futures.FamilyMetal: "metal", 0: "invalid"} {
		require.Equal(t, want, f.String())
	}
}

func TestHasMonth(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		root  string
		month time.Month
		want  bool
	}{
		{"ES", time.March, true},
		{"ES", time.December, true},
		{"ES", time.January, false},
		{"ES", time.November, false},
		{"CL", time.January, true},
		{"CL", time.November, true},
		{"GC", time.February, true},
		{"GC", time.March, false},
		{"GC", time.December, true},
	} {
		r, _ := futures.Lookup(tc.root)
		require.Equal(t, tc.want, r.HasMonth(tc.month), "%s %s", tc.root, tc.month)
	}
}

func TestPriceAndTicks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		root   string
		price  float64
		ticks  int64
		onGrid bool
	}{
		{"ES", 6000.25, 24001, true},
		{"ES", 6000.1, 24000, false},
		{"ES", 0.25, 1, true},
		{"ES", 0, 0, true},
		{"ES", -0.5, -2, true},
		{"RTY", 2300.1, 23001, true},
		{"RTY", 2300.15, 23002, false},
		{"YM", 44001, 44001, true},
		{"YM", 44000.5, 44001, false},
		{"CL", 70.01, 7001, true},
		{"CL", 70.015, 7002, false},
		{"GC", 2600.3, 26003, true},
		{"ES", math.NaN(), 0, false},
		{"ES", math.Inf(1), 0, false},
		{"ES", math.Inf(-1), 0, false},
		{"ES", futures.MaxTicks * 0.25, futures.MaxTicks, true},
		{"ES", futures.MaxTicks*0.25 + 1, 0, false},
	} {
		r, _ := futures.Lookup(tc.root)
		n, ok := r.Ticks(tc.price)
		require.Equal(t, tc.ticks, n, "%s %v", tc.root, tc.price)
		require.Equal(t, tc.onGrid, ok, "%s %v", tc.root, tc.price)
		if ok {
			require.Equal(t, tc.price, r.Price(n), "%s: the price of %d ticks is the literal", tc.root, n)
		}
	}
}
