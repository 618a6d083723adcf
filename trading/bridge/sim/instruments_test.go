package sim_test

import (
	"errors"
	"testing"
	"time"
	_ "time/tzdata" // the tz database checks the simulator's own New York time

	"github.com/stretchr/testify/require"

	"tradebridge/futures"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
)

func newYorkTime(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	return loc
}

// The simulator resolves and describes instruments as package futures
// does at its clock (futures tests the contracts, names and hours), and
// reports a refusal as a *bridge.InstrumentError with futures' cause,
// root, months and front month.
func TestInstrumentIsFutures(t *testing.T) {
	for _, tc := range []struct {
		in string
		at time.Time
	}{
		{"ES", time.Date(2026, time.October, 5, 14, 30, 0, 0, time.UTC)},
		{"mes", time.Date(2026, time.October, 10, 16, 0, 0, 0, time.UTC)}, // Saturday: closed
		{"NQZ6", time.Date(2026, time.December, 9, 23, 0, 0, 0, time.UTC)},
		{"ES", time.Date(2026, time.December, 9, 23, 0, 0, 0, time.UTC)}, // rolled
		{"ES 12-26", time.Date(2026, time.December, 17, 17, 0, 0, 0, time.UTC)},
		{"CL", time.Date(2026, time.November, 1, 23, 0, 0, 0, time.UTC)},
		{"GC 02-27", time.Date(2026, time.October, 5, 21, 30, 0, 0, time.UTC)}, // daily break
		{"ES 09-26", time.Date(2026, time.October, 5, 14, 30, 0, 0, time.UTC)},
		{"ESF27", time.Date(2026, time.October, 5, 14, 30, 0, 0, time.UTC)},
		{"ES 12-99", time.Date(2026, time.October, 5, 14, 30, 0, 0, time.UTC)},
		{"ESA26", time.Date(2026, time.October, 5, 14, 30, 0, 0, time.UTC)},
		{"ZZ", time.Date(2026, time.October, 5, 14, 30, 0, 0, time.UTC)},
	} {
		t.Run(tc.in, func(t *testing.T) {
			p, clock := newSim(t, sim.Options{})
			clock.Set(tc.at)
			info, err := p.Instrument(ctx, tc.in)
			c, ferr := futures.Resolve(tc.in, tc.at)
			if ferr == nil {
				require.NoError(t, err)
				require.Equal(t, c.Info(tc.at), info)
				return
			}
			var re *futures.ResolveError
			require.True(t, errors.As(ferr, &re))
			var ie *bridge.InstrumentError
			require.ErrorAs(t, err, &ie)
			require.ErrorIs(t, err, bridge.ErrInstrumentUnknown)
			require.Equal(t, bridge.InstrumentError{Cause: re.Cause, Root: re.Root, Months: re.Months, Front: re.Front}, *ie)
		})
	}
}

func TestMarketOrdersNeedOpenMarket(t *testing.T) {
	p, clock := newSim(t, sim.Options{})
	clock.Set(time.Date(2026, time.October, 10, 16, 0, 0, 0, time.UTC)) // Saturday
	q1, err := p.Quote(ctx, "ES")
	require.NoError(t, err)
	clock.Advance(time.Hour)
	q2, err := p.Quote(ctx, "ES")
	require.NoError(t, err)
	require.Equal(t, q1, q2, "prices do not move while the market is closed")
	_, err = p.SubmitOrder(ctx, market("Sim101", "ES", "Buy", 1))
	var rej *bridge.RejectError
	require.ErrorAs(t, err, &rej)
}
