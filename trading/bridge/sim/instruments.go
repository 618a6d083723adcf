package sim

import (
	"fmt"
	"math"
	"time"

	"tradebridge/futures"
	"tradebridge/trading/bridge"
)

// contract is a futures contract the simulator trades. What contracts exist,
// their names, dates and trading hours are package futures'.
type contract = futures.Contract

// walk is what the simulator adds to a futures root: how its prices move,
// and the margin it reports.
type walk struct {
	base     float64 // starting price of the walk
	dailyVol float64 // daily volatility of the walk, as a fraction of base
	margin   float64 // approximate exchange maintenance margin, dollars per contract
	activity int64   // average contracts traded per second, for synthetic volume
}

// walks lists the roots the simulator trades, by symbol: every root of
// package futures.
var walks = map[string]*walk{
	"ES":  {6000, 0.01, 22000, 15},
	"MES": {6000, 0.01, 2200, 12},
	"NQ":  {21000, 0.01, 32000, 6},
	"MNQ": {21000, 0.01, 3200, 14},
	"YM":  {44000, 0.01, 15000, 2},
	"MYM": {44000, 0.01, 1500, 2},
	"RTY": {2300, 0.01, 10000, 2},
	"M2K": {2300, 0.01, 1000, 2},
	"CL":  {70, 0.02, 6000, 6},
	"MCL": {70, 0.02, 600, 2},
	"GC":  {2600, 0.01, 16000, 4},
	"MGC": {2600, 0.01, 1600, 2},
}

// walkOf returns the walk of c's root. resolve returns only contracts of
// roots in walks.
func walkOf(c contract) *walk { return walks[c.Root.Symbol] }

// maxTicks bounds prices in ticks.
const maxTicks = futures.MaxTicks

// resolve turns an instrument as a caller wrote it into a contract trading
// at now (futures.Resolve: "ES 12-26", "ES" for the front month, "ESZ26" or
// "ESZ6", in any case). A refusal is a *bridge.InstrumentError saying why.
func resolve(instrument string, now time.Time) (contract, error) {
	c, err := futures.Resolve(instrument, now)
	if err == nil && walks[c.Root.Symbol] == nil {
		err = &futures.ResolveError{Cause: futures.CauseUnknownRoot}
	}
	if err != nil {
		return contract{}, fmt.Errorf("sim: not a contract the simulator trades: %w", bridge.InstrumentErrorFrom(err))
	}
	return c, nil
}

// roundTo rounds x to n decimal places.
func roundTo(x float64, n int) float64 {
	p := math.Pow10(n)
	return math.Round(x*p) / p
}

// cents rounds a dollar amount to cents.
func cents(x float64) float64 { return roundTo(x, 2) }
