package sim_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
)

func utc(y int, m time.Month, d, h, min int) time.Time {
	return time.Date(y, m, d, h, min, 0, 0, time.UTC)
}

// newSimAt is newSim with the clock starting at t.
func newSimAt(t *testing.T, at time.Time, opts sim.Options) (*sim.Platform, *sim.ManualClock) {
	t.Helper()
	clock := sim.NewManualClock(at)
	opts.Clock = clock
	p, err := sim.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p, clock
}

func TestDayOrdersExpireAtTheClose(t *testing.T) {
	for _, tc := range []struct {
		name      string
		submitted time.Time
		expires   time.Time // 17:00 New York time
	}{
		{"Monday morning", utc(2026, 10, 5, 14, 30), utc(2026, 10, 5, 21, 0)},
		{"in the daily break", utc(2026, 10, 5, 21, 30), utc(2026, 10, 6, 21, 0)},
		{"at the close", utc(2026, 10, 5, 21, 0), utc(2026, 10, 6, 21, 0)},
		{"Friday", utc(2026, 10, 9, 16, 0), utc(2026, 10, 9, 21, 0)},
		{"Saturday", utc(2026, 10, 10, 16, 0), utc(2026, 10, 12, 21, 0)},
		{"winter", utc(2026, 12, 7, 15, 0), utc(2026, 12, 7, 22, 0)},
		// Daylight saving ends on Sunday 1 November 2026.
		{"across the end of daylight saving", utc(2026, 10, 30, 22, 0), utc(2026, 11, 2, 22, 0)},
		// Daylight saving starts on Sunday 8 March 2026.
		{"across the start of daylight saving", utc(2026, 3, 6, 22, 0), utc(2026, 3, 9, 21, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, clock := newSimAt(t, tc.submitted, sim.Options{})
			day := esOrder("Buy", "Limit", 1, 1000, 0) // never reached
			day.TimeInForce = "Day"
			d := submit(t, p, day)
			g := submit(t, p, esOrder("Buy", "Limit", 1, 1000, 0))
			ch := watch(t, p)

			clock.Set(tc.expires.Add(-time.Millisecond))
			require.Equal(t, "Working", orderByID(t, p, "Sim101", d.OrderID).OrderState)
			clock.Set(tc.expires)
			require.Equal(t, "Cancelled", orderByID(t, p, "Sim101", d.OrderID).OrderState)
			require.Equal(t, "Working", orderByID(t, p, "Sim101", g.OrderID).OrderState, "Gtc survives")
			evs := drain(ch)
			require.Equal(t, "order "+d.OrderID+" Cancelled 0/1", describe(evs)[len(evs)-1])
			_, err := p.CancelOrder(ctx, "Sim101", d.OrderID)
			var re *bridge.RejectError
			require.ErrorAs(t, err, &re)
			require.Equal(t, "order is already cancelled", re.Reason)
		})
	}
}

func TestDayOrderPartFilledExpires(t *testing.T) {
	p, clock := newSim(t, sim.Options{BookDepth: 1})
	require.NoError(t, p.SetPrice("ES", 6000))
	req := esOrder("Buy", "Limit", 3, 6000.25, 0)
	req.TimeInForce = "Day"
	o := submit(t, p, req)
	require.Equal(t, "PartFilled", o.OrderState)
	clock.Set(utc(2026, 10, 5, 21, 0))
	got := orderByID(t, p, "Sim101", o.OrderID)
	require.Equal(t, "Cancelled", got.OrderState)
	require.Equal(t, 1, got.Filled)
}

func TestSessionStart(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   time.Time
		want string
	}{
		{"Monday morning", utc(2026, 10, 5, 14, 30), "2026-10-04T22:00:00.000Z"},
		{"just before the open", utc(2026, 10, 5, 21, 59), "2026-10-04T22:00:00.000Z"},
		{"at the open", utc(2026, 10, 5, 22, 0), "2026-10-05T22:00:00.000Z"},
		{"Friday evening", utc(2026, 10, 9, 23, 0), "2026-10-08T22:00:00.000Z"},
		{"Saturday", utc(2026, 10, 10, 12, 0), "2026-10-08T22:00:00.000Z"},
		{"Sunday before the open", utc(2026, 10, 11, 21, 59), "2026-10-08T22:00:00.000Z"},
		{"Sunday open", utc(2026, 10, 11, 22, 0), "2026-10-11T22:00:00.000Z"},
		{"first session in standard time", utc(2026, 11, 2, 15, 0), "2026-11-01T23:00:00.000Z"},
		{"last session in standard time", utc(2026, 3, 6, 15, 0), "2026-03-05T23:00:00.000Z"},
		{"first session in daylight time", utc(2026, 3, 9, 15, 0), "2026-03-08T22:00:00.000Z"},
		{"winter, just after midnight UTC", utc(2026, 12, 8, 0, 30), "2026-12-07T23:00:00.000Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newSimAt(t, tc.at, sim.Options{})
			w, err := p.Watermarks(ctx, "Sim101")
			require.NoError(t, err)
			require.Equal(t, tc.want, w.SessionStart)
		})
	}
}

func TestSessionReset(t *testing.T) {
	p, clock := newSim(t, sim.Options{})
	require.NoError(t, p.SetPrice("ES", 6000))
	buy := submit(t, p, market("Sim101", "ES", "Buy", 1)) // 6000.25
	require.NoError(t, p.SetPrice("ES", 6010))
	sell := submit(t, p, market("Sim101", "ES", "Sell", 1)) // 6010: +487.50
	gtc := submit(t, p, esOrder("Buy", "Limit", 1, 1000, 0))
	dayReq := esOrder("Buy", "Limit", 1, 1000, 0)
	dayReq.TimeInForce = "Day"
	day := submit(t, p, dayReq)

	ids := func() []string {
		os, err := p.Orders(ctx, "Sim101")
		require.NoError(t, err)
		out := []string{}
		for _, o := range os {
			out = append(out, o.OrderID)
		}
		return out
	}
	item := func(account string) protocol.AccountItem {
		a, err := p.Account(ctx, account)
		require.NoError(t, err)
		return a.Item
	}

	clock.Set(utc(2026, 10, 5, 21, 59)) // 17:59 New York: after the close, same session
	require.Equal(t, []string{buy.OrderID, sell.OrderID, gtc.OrderID, day.OrderID}, ids())
	require.Equal(t, "Cancelled", orderByID(t, p, "Sim101", day.OrderID).OrderState)
	execs, err := p.Executions(ctx, "Sim101")
	require.NoError(t, err)
	require.Len(t, execs, 2)
	require.Equal(t, 486.26, item("Sim101").RealizedProfitLoss)

	ch := watch(t, p)
	clock.Set(utc(2026, 10, 5, 22, 0)) // 18:00: a new session
	require.Equal(t, []string{gtc.OrderID}, ids(), "only working orders carry over")
	execs, err = p.Executions(ctx, "Sim101")
	require.NoError(t, err)
	require.Empty(t, execs)
	got := item("Sim101")
	require.Zero(t, got.RealizedProfitLoss)
	require.Zero(t, got.GrossRealizedProfitLoss)
	require.Zero(t, got.Commission)
	require.Equal(t, 100_486.26, got.CashValue, "cash keeps every session's P&L")
	require.Equal(t, 100_486.26, got.NetLiquidation)
	require.Equal(t, 486.26, got.WeeklyProfitLoss, "the week goes on")
	require.Equal(t, []string{"account", "account"}, describe(drain(ch)), "each account is published at the reset")

	w, err := p.Watermarks(ctx, "Sim101")
	require.NoError(t, err)
	require.Equal(t, protocol.Watermarks{Account: "Sim101",
		Watermarks:   protocol.WatermarkValues{NetLiqHigh: 100_486.26, NetLiqLow: 100_486.26},
		Stats:        protocol.WatermarkStats{Total: 486.26, NetLiq: 100_486.26},
		SessionStart: "2026-10-05T22:00:00.000Z"}, w)

	// A jump across several sessions: Tuesday, Wednesday, Thursday and
	// Sunday open; Sunday's starts a new week.
	clock.Set(utc(2026, 10, 12, 15, 0))
	require.Len(t, drain(ch), 0, "nothing is published until the simulator is called")
	require.Equal(t, []string{gtc.OrderID}, ids())
	require.Len(t, drain(ch), 8, "four resets of two accounts")
	got = item("Sim101")
	require.Zero(t, got.WeeklyProfitLoss)
	require.Equal(t, 100_486.26, got.CashValue)
	w, err = p.Watermarks(ctx, "Sim101")
	require.NoError(t, err)
	require.Equal(t, "2026-10-11T22:00:00.000Z", w.SessionStart)

	// A clock that goes back resets nothing.
	clock.Set(utc(2026, 10, 5, 15, 0))
	w, err = p.Watermarks(ctx, "Sim101")
	require.NoError(t, err)
	require.Equal(t, "2026-10-11T22:00:00.000Z", w.SessionStart)
}

func TestSessionKeepsOpenPositions(t *testing.T) {
	p, clock := newSim(t, sim.Options{})
	require.NoError(t, p.SetPrice("ES", 6000))
	submit(t, p, market("Sim101", "ES", "Buy", 1)) // 6000.25
	clock.Set(utc(2026, 10, 5, 22, 0))
	require.NoError(t, p.SetPrice("ES", 6010))
	pos, ok := position(t, p, "Sim101", "ES 12-26")
	require.True(t, ok, "positions carry over")
	require.Equal(t, 6000.25, pos.AveragePrice)
	w, err := p.Watermarks(ctx, "Sim101")
	require.NoError(t, err)
	require.Equal(t, 487.5, w.Stats.Unrealized)
	require.Equal(t, 487.5, w.Stats.Pnl, "session P&L counts the whole open P&L of a carried position")
	require.Zero(t, w.Stats.Realized)
	require.Equal(t, 486.88, w.Stats.Total)
	require.Equal(t, 1, w.Stats.PosCount)

	submit(t, p, market("Sim101", "ES", "Sell", 1)) // closes at 6010
	a, err := p.Account(ctx, "Sim101")
	require.NoError(t, err)
	require.Equal(t, 487.5, a.Item.GrossRealizedProfitLoss)
	require.Equal(t, 0.62, a.Item.Commission, "only this session's commission")
	require.Equal(t, 486.88, a.Item.RealizedProfitLoss)
	require.Equal(t, 100_486.26, a.Item.CashValue)
}

func TestWatermarks(t *testing.T) {
	p, _ := newSim(t, sim.Options{})
	require.NoError(t, p.SetPrice("ES", 6000))
	submit(t, p, market("Sim101", "ES", "Buy", 1)) // 6000.25, commission 0.62
	for _, price := range []float64{6010, 5990, 6005} {
		require.NoError(t, p.SetPrice("ES", price)) // unrealized +487.50, −512.50, +237.50
	}
	submit(t, p, market("Sim101", "ES", "Sell", 1)) // 6005: +237.50, commission 0.62

	w, err := p.Watermarks(ctx, "Sim101")
	require.NoError(t, err)
	require.Equal(t, protocol.Watermarks{
		Account: "Sim101",
		Watermarks: protocol.WatermarkValues{
			PnlHigh: 486.88, PnlLow: -513.12, // 487.50 − 0.62, −512.50 − 0.62
			NetLiqHigh: 100_486.88, NetLiqLow: 99_486.88,
			UnrealHigh: 487.5, UnrealLow: -512.5,
		},
		Stats: protocol.WatermarkStats{Pnl: 236.26, Realized: 236.26, Unrealized: 0, Total: 236.26,
			NetLiq: 100_236.26, PosCount: 0, Commission: 1.24},
		SessionStart: "2026-10-04T22:00:00.000Z",
	}, w)

	w, err = p.Watermarks(ctx, "Sim102")
	require.NoError(t, err)
	require.Equal(t, protocol.WatermarkValues{NetLiqHigh: 100_000, NetLiqLow: 100_000}, w.Watermarks)

	_, err = p.Watermarks(ctx, "Nope")
	require.ErrorIs(t, err, bridge.ErrAccountNotFound)
}

func TestWatermarkLows(t *testing.T) {
	// A low the market left is kept.
	p, _ := newSim(t, sim.Options{})
	require.NoError(t, p.SetPrice("ES", 6000))
	submit(t, p, market("Sim101", "ES", "Buy", 2)) // 2 @ 6000.25
	require.NoError(t, p.SetPrice("ES", 5995))     // −525
	require.NoError(t, p.SetPrice("ES", 6000))
	w, err := p.Watermarks(ctx, "Sim101")
	require.NoError(t, err)
	require.Equal(t, -525.0, w.Watermarks.UnrealLow)
	require.Equal(t, -526.24, w.Watermarks.PnlLow)
	require.Equal(t, 0.0, w.Watermarks.UnrealHigh)
	require.Equal(t, -25.0, w.Stats.Unrealized)
}

func TestProfitWithBookDepth(t *testing.T) {
	p, _ := newSim(t, sim.Options{BookDepth: 1, CommissionPerContract: 2})
	require.NoError(t, p.SetPrice("ES", 6000))
	submit(t, p, market("Sim101", "ES", "Buy", 3)) // 6000.25, 6000.50, 6000.75
	pos, _ := position(t, p, "Sim101", "ES 12-26")
	require.Equal(t, 6000.5, pos.AveragePrice)
	require.NoError(t, p.SetPrice("ES", 6010))
	pos, _ = position(t, p, "Sim101", "ES 12-26")
	require.Equal(t, 1425.0, pos.UnrealizedProfitLoss, "9.5 points × 3 × $50")

	submit(t, p, market("Sim101", "ES", "Sell", 3)) // 6010, 6009.75, 6009.50
	a, err := p.Account(ctx, "Sim101")
	require.NoError(t, err)
	require.Equal(t, 1387.5, a.Item.GrossRealizedProfitLoss, "(9.5 + 9.25 + 9) points × $50")
	require.Equal(t, 12.0, a.Item.Commission, "6 contracts × $2")
	require.Equal(t, 1375.5, a.Item.RealizedProfitLoss)
	require.Equal(t, 101_375.5, a.Item.CashValue)
	execs, err := p.Executions(ctx, "Sim101")
	require.NoError(t, err)
	require.Len(t, execs, 6)
	for _, e := range execs {
		require.Equal(t, 1, e.Quantity)
		require.Equal(t, 2.0, e.Commission)
	}

	// NQ: $20 a point.
	submit(t, p, market("Sim102", "NQ", "Buy", 1)) // the walk starts NQ at 21000: 21000.25
	require.NoError(t, p.SetPrice("NQ", 21010))
	submit(t, p, market("Sim102", "NQ", "Sell", 1))
	a, err = p.Account(ctx, "Sim102")
	require.NoError(t, err)
	require.Equal(t, 195.0, a.Item.GrossRealizedProfitLoss, "9.75 points × $20")
	require.Equal(t, 191.0, a.Item.RealizedProfitLoss)
}
