package sim_test

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start is a Monday in October 2026, when ES 12-26 is the front month.
var start = time.Date(2026, time.October, 5, 14, 30, 0, 0, time.UTC)

var ctx = context.Background()

func newSim(t *testing.T, opts sim.Options) (*sim.Platform, *sim.ManualClock) {
	t.Helper()
	clock := sim.NewManualClock(start)
	if opts.Clock == nil {
		opts.Clock = clock
	}
	p, err := sim.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p, clock
}

func market(account, instrument, action string, qty int) bridge.OrderRequest {
	return bridge.OrderRequest{Account: account, Instrument: instrument, Action: action,
		OrderType: protocol.OrderTypeMarket, Quantity: qty, TimeInForce: protocol.TimeInForceDay}
}

func submit(t *testing.T, p *sim.Platform, req bridge.OrderRequest) protocol.Order {
	t.Helper()
	o, err := p.SubmitOrder(ctx, req)
	require.NoError(t, err)
	return o
}

func position(t *testing.T, p *sim.Platform, account, instrument string) (protocol.Position, bool) {
	t.Helper()
	ps, err := p.Positions(ctx, account)
	require.NoError(t, err)
	for _, pos := range ps {
		if pos.Instrument == instrument {
			return pos, true
		}
	}
	return protocol.Position{}, false
}

func TestDefaults(t *testing.T) {
	p, _ := newSim(t, sim.Options{})
	require.Equal(t, "sim", p.Kind())

	conns, err := p.Connections(ctx)
	require.NoError(t, err)
	require.Equal(t, []protocol.Connection{{Name: "Simulated Data Feed", Status: "Connected",
		Accounts: []string{"Sim101", "Sim102"}}}, conns)

	accts, err := p.Accounts(ctx)
	require.NoError(t, err)
	require.Len(t, accts, 2)
	for i, name := range []string{"Sim101", "Sim102"} {
		a := accts[i]
		require.Equal(t, name, a.Name)
		require.Equal(t, name, a.DisplayName)
		require.Equal(t, "Simulated Data Feed", a.Connection)
		require.Equal(t, "Connected", a.ConnectionStatus)
		require.Equal(t, "UsDollar", a.Denomination)
		require.Equal(t, protocol.AccountItem{BuyingPower: 100_000, CashValue: 100_000,
			NetLiquidation: 100_000}, a.Item)
	}

	a, err := p.Account(ctx, "Sim102")
	require.NoError(t, err)
	require.Equal(t, accts[1], a)

	ps, err := p.Positions(ctx, "Sim101")
	require.NoError(t, err)
	require.NotNil(t, ps, "no positions is an empty list, not null")
	require.Empty(t, ps)
}

func TestOptions(t *testing.T) {
	p, _ := newSim(t, sim.Options{Accounts: []string{"A", "B", "C"}, StartingCash: 50_000,
		CommissionPerContract: -1})
	accts, err := p.Accounts(ctx)
	require.NoError(t, err)
	require.Len(t, accts, 3)
	require.Equal(t, "C", accts[2].Name)
	require.Equal(t, 50_000.0, accts[2].Item.CashValue)

	require.NoError(t, p.SetPrice("ES", 6000))
	submit(t, p, market("A", "ES", "Buy", 1))
	a, err := p.Account(ctx, "A")
	require.NoError(t, err)
	require.Zero(t, a.Item.Commission, "a negative commission means none")

	for name, opts := range map[string]sim.Options{
		"duplicate account": {Accounts: []string{"X", "X"}},
		"empty account":     {Accounts: []string{" "}},
		"negative cash":     {StartingCash: -1},
		"NaN cash":          {StartingCash: math.NaN()},
		"NaN commission":    {CommissionPerContract: math.NaN()},
	} {
		_, err := sim.New(opts)
		require.Error(t, err, name)
	}
}

func TestFrontMonth(t *testing.T) {
	utc := func(y int, m time.Month, d, h, min int) time.Time { return time.Date(y, m, d, h, min, 0, 0, time.UTC) }
	for _, tc := range []struct {
		name       string
		at         time.Time
		instrument string
		want       string // "" means unknown
	}{
		// ES 12-26 expires Friday 18 December; the roll date is Thursday
		// 10 December, whose session opens at 18:00 EST (23:00 UTC) on the 9th.
		{"before the roll", utc(2026, 12, 9, 22, 59), "ES", "ES 12-26"},
		{"at the roll", utc(2026, 12, 9, 23, 0), "ES", "ES 03-27"},
		{"micro rolls alike", utc(2026, 12, 9, 23, 0), "MES", "MES 03-27"},
		{"old month after the roll", utc(2026, 12, 15, 12, 0), "ES 12-26", "ES 12-26"},
		{"old month expired", utc(2026, 12, 18, 22, 0), "ES 12-26", ""},
		{"old month before its expiry", utc(2026, 12, 18, 21, 59), "ES 12-26", "ES 12-26"},
		// March 2026 roll: 18:00 EDT (22:00 UTC) on 11 March.
		{"daylight saving roll before", utc(2026, 3, 11, 21, 59), "NQ", "NQ 03-26"},
		{"daylight saving roll after", utc(2026, 3, 11, 22, 0), "NQ", "NQ 06-26"},
		// CL 02-26 last trades 20 January; it rolls on the 12th.
		{"crude before the roll", utc(2026, 1, 11, 22, 59), "CL", "CL 02-26"},
		{"crude after the roll", utc(2026, 1, 11, 23, 0), "CL", "CL 03-26"},
		{"crude every month", utc(2026, 1, 5, 0, 0), "CL 11-26", "CL 11-26"},
		// GC 02-26 rolls on 25 January; gold trades even months.
		{"gold before the roll", utc(2026, 1, 24, 22, 59), "GC", "GC 02-26"},
		{"gold after the roll", utc(2026, 1, 24, 23, 0), "GC", "GC 04-26"},
		{"gold odd month", utc(2026, 1, 5, 0, 0), "GC 03-26", ""},
		{"year end", utc(2026, 12, 31, 12, 0), "YM", "YM 03-27"},
		{"RTY", start, "RTY", "RTY 12-26"},
		{"not a contract month", start, "ES 11-26", ""},
		{"expired long ago", start, "ES 12-25", ""},
		{"too far out", start, "ES 12-99", ""},
		{"month code", start, "ESZ26", "ES 12-26"},
		{"month code, one digit", start, "NQH7", "NQ 03-27"},
		{"month code, lower case", start, "mnqz6", "MNQ 12-26"},
		{"month code, expired", start, "ESU6", ""},
		{"bad month", start, "ES 13-26", ""},
		{"bad format", start, "ES 12/26", ""},
		{"unknown root", start, "ZZTOP", ""},
		{"unknown root with month", start, "ZZ 12-26", ""},
		{"empty", start, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, clock := newSim(t, sim.Options{})
			clock.Set(tc.at)
			q, err := p.Quote(ctx, tc.instrument)
			if tc.want == "" {
				require.ErrorIs(t, err, bridge.ErrInstrumentUnknown)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, q.Instrument)
		})
	}
}

func TestFrontMonthFollowsTheClock(t *testing.T) {
	p, clock := newSim(t, sim.Options{})
	// 16:00 New York time: 17:00-18:00 is the daily break, when market
	// orders are refused.
	clock.Set(time.Date(2026, 12, 9, 21, 0, 0, 0, time.UTC))
	require.NoError(t, p.SetPrice("ES", 6000))
	o := submit(t, p, market("Sim101", "ES", "Buy", 1))
	require.Equal(t, "ES 12-26", o.Instrument)

	clock.Advance(2 * time.Hour) // at the roll, when the session opens
	o = submit(t, p, market("Sim101", "ES", "Buy", 1))
	require.Equal(t, "ES 03-27", o.Instrument)

	ps, err := p.Positions(ctx, "Sim101")
	require.NoError(t, err)
	require.Len(t, ps, 2, "the two months are two positions")
	require.Equal(t, "ES 03-27", ps[0].Instrument)
	require.Equal(t, "ES 12-26", ps[1].Instrument)
}

func TestInstrumentsAreCaseInsensitive(t *testing.T) {
	p, _ := newSim(t, sim.Options{})
	for _, name := range []string{"ES", "es", "Es 12-26", " es 12-26 ", "esz6", "ESZ26"} {
		q, err := p.Quote(ctx, name)
		require.NoError(t, err, name)
		require.Equal(t, "ES 12-26", q.Instrument, name)
	}
	submit(t, p, market("Sim101", "es", "buy", 1))
	submit(t, p, market("Sim101", "ES 12-26", "BUY", 1))
	ps, err := p.Positions(ctx, "Sim101")
	require.NoError(t, err)
	require.Len(t, ps, 1)
	require.Equal(t, "ES 12-26", ps[0].Instrument)
	require.Equal(t, 2, ps[0].Quantity)
}

func TestInstrumentSpecs(t *testing.T) {
	p, _ := newSim(t, sim.Options{})
	for _, tc := range []struct {
		root                        string
		tick, pointValue, tickValue float64
	}{
		{"ES", 0.25, 50, 12.5}, {"MES", 0.25, 5, 1.25},
		{"NQ", 0.25, 20, 5}, {"MNQ", 0.25, 2, 0.5},
		{"YM", 1, 5, 5}, {"MYM", 1, 0.5, 0.5},
		{"RTY", 0.1, 50, 5}, {"M2K", 0.1, 5, 0.5},
		{"CL", 0.01, 1000, 10}, {"MCL", 0.01, 100, 1},
		{"GC", 0.1, 100, 10}, {"MGC", 0.1, 10, 1},
	} {
		q, err := p.Quote(ctx, tc.root)
		require.NoError(t, err, tc.root)
		require.Equal(t, tc.tick, q.TickSize, tc.root)
		require.Equal(t, tc.pointValue, q.PointValue, tc.root)
		require.Equal(t, tc.tickValue, q.TickValue, tc.root)
		require.InDelta(t, tc.tick, q.Ask-q.Bid, 1e-9, "%s: bid and ask one tick apart", tc.root)
	}
}

func TestUnknownAccountAndInstrument(t *testing.T) {
	p, _ := newSim(t, sim.Options{})
	_, err := p.Account(ctx, "Nope")
	require.ErrorIs(t, err, bridge.ErrAccountNotFound)
	_, err = p.Account(ctx, "sim101")
	require.ErrorIs(t, err, bridge.ErrAccountNotFound, "account names are exact")
	_, err = p.Positions(ctx, "Nope")
	require.ErrorIs(t, err, bridge.ErrAccountNotFound)
	_, err = p.Orders(ctx, "Nope")
	require.ErrorIs(t, err, bridge.ErrAccountNotFound)
	_, err = p.Executions(ctx, "Nope")
	require.ErrorIs(t, err, bridge.ErrAccountNotFound)
	_, err = p.SubmitOrder(ctx, market("Nope", "ES", "Buy", 1))
	require.ErrorIs(t, err, bridge.ErrAccountNotFound)

	_, err = p.SubmitOrder(ctx, market("Sim101", "ZZTOP", "Buy", 1))
	require.ErrorIs(t, err, bridge.ErrInstrumentUnknown)
	_, err = p.Quote(ctx, "ZZTOP")
	require.ErrorIs(t, err, bridge.ErrInstrumentUnknown)
	require.ErrorIs(t, p.SetPrice("ZZTOP", 1), bridge.ErrInstrumentUnknown)

	os, err := p.Orders(ctx, "Sim101")
	require.NoError(t, err)
	require.Empty(t, os, "refused orders are not recorded")
}

func TestMarketOrdersFillAtTheTouch(t *testing.T) {
	p, clock := newSim(t, sim.Options{})
	require.NoError(t, p.SetPrice("ES", 6000.1)) // snapped to 6000
	q, err := p.Quote(ctx, "ES")
	require.NoError(t, err)
	require.Equal(t, 6000.0, q.Bid)
	require.Equal(t, 6000.25, q.Ask)
	require.Equal(t, 6000.0, q.Last)

	buy := submit(t, p, bridge.OrderRequest{Account: "Sim101", Instrument: "ES", Action: "Buy",
		OrderType: "market", Quantity: 2, TimeInForce: "gtc", Name: "Entry", StrategyTag: "s1"})
	require.Equal(t, protocol.Order{
		OrderID: "sim-1", Account: "Sim101", Instrument: "ES 12-26", Name: "Entry",
		OrderAction: "Buy", OrderType: "Market", OrderState: "Filled", Quantity: 2, Filled: 2,
		AverageFillPrice: 6000.25, TimeInForce: "Gtc", StrategyTag: "s1",
		Time: "2026-10-05T14:30:00.000Z", Epoch: start.UnixMilli(),
	}, buy)
	q, err = p.Quote(ctx, "ES")
	require.NoError(t, err)
	require.Equal(t, 6000.25, q.Last, "the fill traded at the ask")
	require.Equal(t, int64(2), q.Volume)

	clock.Advance(500 * time.Millisecond) // less than a step: prices stay
	sell := submit(t, p, market("Sim101", "ES", "Sell", 1))
	require.Equal(t, "sim-2", sell.OrderID)
	require.Equal(t, 6000.0, sell.AverageFillPrice)
	require.Equal(t, "2026-10-05T14:30:00.500Z", sell.Time)

	execs, err := p.Executions(ctx, "Sim101")
	require.NoError(t, err)
	require.Equal(t, []protocol.Execution{
		{ID: "sim-exec-1", OrderID: "sim-1", Account: "Sim101", Instrument: "ES 12-26", Name: "Entry",
			MarketPosition: "Long", Quantity: 2, Price: 6000.25, Commission: 1.24,
			Time: "2026-10-05T14:30:00.000Z", Epoch: start.UnixMilli()},
		{ID: "sim-exec-2", OrderID: "sim-2", Account: "Sim101", Instrument: "ES 12-26",
			MarketPosition: "Short", Quantity: 1, Price: 6000, Commission: 0.62,
			Time: "2026-10-05T14:30:00.500Z", Epoch: start.Add(500 * time.Millisecond).UnixMilli()},
	}, execs)

	os, err := p.Orders(ctx, "Sim101")
	require.NoError(t, err)
	require.Equal(t, []protocol.Order{buy, sell}, os)
	os, err = p.Orders(ctx, "Sim102")
	require.NoError(t, err)
	require.Empty(t, os)
}

func TestOrderIDs(t *testing.T) {
	p, _ := newSim(t, sim.Options{})
	req := market("Sim101", "ES", "Buy", 1)
	req.OrderID = "sim-2"
	require.Equal(t, "sim-2", submit(t, p, req).OrderID)
	require.Equal(t, "sim-1", submit(t, p, market("Sim101", "ES", "Buy", 1)).OrderID)
	require.Equal(t, "sim-3", submit(t, p, market("Sim102", "ES", "Buy", 1)).OrderID, "generated ids skip ids in use")

	req.Account = "Sim102" // ids are unique across accounts
	_, err := p.SubmitOrder(ctx, req)
	var re *bridge.RejectError
	require.ErrorAs(t, err, &re)
	require.Equal(t, "order id already used", re.Reason)
	pos, ok := position(t, p, "Sim102", "ES 12-26")
	require.True(t, ok)
	require.Equal(t, 1, pos.Quantity, "the duplicate placed nothing")
}

func TestAveragePrice(t *testing.T) {
	p, _ := newSim(t, sim.Options{})
	step := func(price float64, action string, qty int, wantPos string, wantQty int, wantAvg float64) {
		t.Helper()
		require.NoError(t, p.SetPrice("ES", price))
		submit(t, p, market("Sim101", "ES", action, qty))
		pos, ok := position(t, p, "Sim101", "ES 12-26")
		require.True(t, ok)
		require.Equal(t, wantPos, pos.MarketPosition)
		require.Equal(t, wantQty, pos.Quantity)
		require.Equal(t, wantAvg, pos.AveragePrice)
		require.Equal(t, "Future", pos.InstrumentType)
	}
	step(6000, "Buy", 1, "Long", 1, 6000.25)
	step(6010, "Buy", 1, "Long", 2, 6005.25)                         // (6000.25+6010.25)/2
	step(6020, "Buy", 2, "Long", 4, 6012.75)                         // (2·6005.25+2·6020.25)/4
	step(6030, "Sell", 1, "Long", 3, 6012.75)                        // a reduction keeps the average
	step(5990, "Sell", 5, "Short", 2, 5990)                          // a flip restarts at the fill
	step(5980, "Sell", 1, "Short", 3, 5986.6666666667)               // (2·5990+5980)/3
	step(5970, "Buy", 4, "Long", 1, 5970.25)                         // flip back
	step(5970, "Buy", 1, "Long", 2, 5970.25)                         // same price
	step(5960, "Sell", 1, "Long", 1, 5970.25)                        // loss on a reduction
	step(5960, "Buy", 1, "Long", 2, float64(5970.25+5960.25)/2)      // 5965.25
	step(5960, "Buy", 2, "Long", 4, float64(2*5965.25+2*5960.25)/4)  // 5962.75
	step(5900, "Sell", 3, "Long", 1, float64(2*5965.25+2*5960.25)/4) // unchanged
}

func TestProfitAndCommission(t *testing.T) {
	p, _ := newSim(t, sim.Options{})
	account := func() protocol.AccountItem {
		t.Helper()
		a, err := p.Account(ctx, "Sim101")
		require.NoError(t, err)
		return a.Item
	}

	require.NoError(t, p.SetPrice("ES", 6000))
	submit(t, p, market("Sim101", "ES", "Buy", 2)) // 2 @ 6000.25, commission 1.24
	require.Equal(t, protocol.AccountItem{
		CashValue: 99_998.76, NetLiquidation: 99_998.76, RealizedProfitLoss: -1.24, Commission: 1.24,
		UnrealizedProfitLoss: 0, MaintenanceMargin: 44_000, InitialMargin: 48_400,
		BuyingPower: 51_598.76, WeeklyProfitLoss: -1.24,
	}, account())

	require.NoError(t, p.SetPrice("ES", 6010)) // +9.75 points × 2 × $50
	pos, _ := position(t, p, "Sim101", "ES 12-26")
	require.Equal(t, 975.0, pos.UnrealizedProfitLoss)
	require.Equal(t, 6010.0, pos.MarketPrice)
	item := account()
	require.Equal(t, 975.0, item.UnrealizedProfitLoss)
	require.Equal(t, 100_973.76, item.NetLiquidation)

	submit(t, p, market("Sim101", "ES", "Sell", 1)) // 1 @ 6010: +487.50, commission 0.62
	require.Equal(t, protocol.AccountItem{
		GrossRealizedProfitLoss: 487.5, Commission: 1.86, RealizedProfitLoss: 485.64,
		CashValue: 100_485.64, UnrealizedProfitLoss: 487.5, NetLiquidation: 100_973.14,
		MaintenanceMargin: 22_000, InitialMargin: 24_200, BuyingPower: 76_773.14,
		WeeklyProfitLoss: 485.64,
	}, account())

	require.NoError(t, p.SetPrice("ES", 5990))
	submit(t, p, market("Sim101", "ES", "Sell", 3)) // closes 1 @ 5990: −512.50; opens short 2
	item = account()
	require.Equal(t, -25.0, item.GrossRealizedProfitLoss)
	require.Equal(t, 3.72, item.Commission)
	require.Equal(t, -28.72, item.RealizedProfitLoss)
	require.Equal(t, 99_971.28, item.CashValue)
	require.Equal(t, 0.0, item.UnrealizedProfitLoss)

	require.NoError(t, p.SetPrice("ES", 5980)) // short 2 from 5990, last 5980: +1000
	require.Equal(t, 1000.0, account().UnrealizedProfitLoss)

	// Crude oil: 0.01 ticks worth $10.
	require.NoError(t, p.SetPrice("CL", 70.5))
	submit(t, p, market("Sim102", "CL", "Buy", 3)) // 3 @ 70.51
	require.NoError(t, p.SetPrice("CL", 71.37))
	submit(t, p, market("Sim102", "CL", "Sell", 3)) // 3 @ 71.37: 86 ticks × 3 × $10
	a, err := p.Account(ctx, "Sim102")
	require.NoError(t, err)
	require.Equal(t, 2580.0, a.Item.GrossRealizedProfitLoss)
	require.Equal(t, 3.72, a.Item.Commission)
	require.Equal(t, 2576.28, a.Item.RealizedProfitLoss)
	require.Equal(t, 102_576.28, a.Item.CashValue)
	require.Equal(t, 102_576.28, a.Item.NetLiquidation)
}

func TestCommissionOption(t *testing.T) {
	p, _ := newSim(t, sim.Options{CommissionPerContract: 2.25})
	require.NoError(t, p.SetPrice("RTY", 2300.1))
	submit(t, p, market("Sim101", "RTY", "Buy", 4)) // 4 @ 2300.2
	require.NoError(t, p.SetPrice("RTY", 2301.3))
	submit(t, p, market("Sim101", "RTY", "Sell", 4)) // 4 @ 2301.3: 11 ticks × 4 × $5
	a, err := p.Account(ctx, "Sim101")
	require.NoError(t, err)
	require.Equal(t, 220.0, a.Item.GrossRealizedProfitLoss)
	require.Equal(t, 18.0, a.Item.Commission)
	require.Equal(t, 202.0, a.Item.RealizedProfitLoss)
}

func TestFlatPositionsDisappear(t *testing.T) {
	p, _ := newSim(t, sim.Options{})
	submit(t, p, market("Sim101", "ES", "Buy", 2))
	submit(t, p, market("Sim101", "NQ", "Sell", 1))
	ps, err := p.Positions(ctx, "Sim101")
	require.NoError(t, err)
	require.Len(t, ps, 2)
	require.Equal(t, "Short", ps[1].MarketPosition)

	submit(t, p, market("Sim101", "ES", "Sell", 2))
	ps, err = p.Positions(ctx, "Sim101")
	require.NoError(t, err)
	require.Len(t, ps, 1)
	require.Equal(t, "NQ 12-26", ps[0].Instrument)

	submit(t, p, market("Sim101", "NQ", "Buy", 1))
	ps, err = p.Positions(ctx, "Sim101")
	require.NoError(t, err)
	require.Empty(t, ps)
	a, err := p.Account(ctx, "Sim101")
	require.NoError(t, err)
	require.Zero(t, a.Item.UnrealizedProfitLoss)
	require.Zero(t, a.Item.MaintenanceMargin)
	require.Equal(t, a.Item.CashValue, a.Item.NetLiquidation)
}

func TestRejections(t *testing.T) {
	p, _ := newSim(t, sim.Options{})
	require.NoError(t, p.SetPrice("ES", 6000))
	base := market("Sim101", "ES", "Buy", 1)
	for _, tc := range []struct {
		name   string
		change func(*bridge.OrderRequest)
		reason string
	}{
		{"zero quantity", func(r *bridge.OrderRequest) { r.Quantity = 0 }, "quantity must be at least 1"},
		{"negative quantity", func(r *bridge.OrderRequest) { r.Quantity = -3 }, "quantity must be at least 1"},
		{"bad action", func(r *bridge.OrderRequest) { r.Action = "Hold" }, "action must be Buy or Sell"},
		{"empty action", func(r *bridge.OrderRequest) { r.Action = "" }, "action must be Buy or Sell"},
		{"bad order type", func(r *bridge.OrderRequest) { r.OrderType = "Iceberg" },
			"order type must be Market, Limit, StopMarket or StopLimit"},
		{"bad time in force", func(r *bridge.OrderRequest) { r.TimeInForce = "Ioc" }, "time in force must be Day or Gtc"},
		{"limit without price", func(r *bridge.OrderRequest) { r.OrderType = "Limit" }, "limit price must be positive"},
		{"negative limit", func(r *bridge.OrderRequest) { r.OrderType = "Limit"; r.LimitPrice = -6000 },
			"limit price must be positive"},
		{"NaN limit", func(r *bridge.OrderRequest) { r.OrderType = "Limit"; r.LimitPrice = math.NaN() },
			"limit price must be positive"},
		{"off-tick limit", func(r *bridge.OrderRequest) { r.OrderType = "Limit"; r.LimitPrice = 5990.1 },
			"limit price must be a multiple of the tick size 0.25"},
		{"huge limit", func(r *bridge.OrderRequest) { r.OrderType = "Limit"; r.LimitPrice = 1e300 },
			"limit price must be a multiple of the tick size 0.25"},
		{"stop without price", func(r *bridge.OrderRequest) { r.OrderType = "StopMarket" }, "stop price must be positive"},
		{"off-tick stop", func(r *bridge.OrderRequest) { r.OrderType = "StopMarket"; r.StopPrice = 6010.3 },
			"stop price must be a multiple of the tick size 0.25"},
		{"stop limit without limit", func(r *bridge.OrderRequest) { r.OrderType = "StopLimit"; r.StopPrice = 6010 },
			"limit price must be positive"},
		{"buy stop below the market", func(r *bridge.OrderRequest) { r.OrderType = "StopMarket"; r.StopPrice = 5990 },
			"buy stop price must be above the market"},
		{"buy stop at the ask", func(r *bridge.OrderRequest) { r.OrderType = "StopMarket"; r.StopPrice = 6000.25 },
			"buy stop price must be above the market"},
		{"sell stop above the market", func(r *bridge.OrderRequest) {
			r.Action = "Sell"
			r.OrderType = "StopLimit"
			r.StopPrice = 6000
			r.LimitPrice = 5999
		}, "sell stop price must be below the market"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := base
			tc.change(&req)
			_, err := p.SubmitOrder(ctx, req)
			var re *bridge.RejectError
			require.ErrorAs(t, err, &re)
			require.Equal(t, tc.reason, re.Reason)
		})
	}
	os, err := p.Orders(ctx, "Sim101")
	require.NoError(t, err)
	require.Empty(t, os, "refused orders are not recorded")
	ps, err := p.Positions(ctx, "Sim101")
	require.NoError(t, err)
	require.Empty(t, ps)

	// Ticks of other sizes.
	for _, tc := range []struct {
		instrument string
		price      float64
		ok         bool
	}{
		{"CL", 70.01, true}, {"CL", 70.005, false}, {"RTY", 2300.1, true}, {"RTY", 2300.15, false},
		{"YM", 44000, true}, {"YM", 44000.5, false}, {"GC", 2600.3, true}, {"GC", 2600.35, false},
	} {
		_, err := p.SubmitOrder(ctx, bridge.OrderRequest{Account: "Sim102", Instrument: tc.instrument,
			Action: "Buy", OrderType: "Limit", Quantity: 1, LimitPrice: tc.price})
		if tc.ok {
			require.NoError(t, err, "%s %v", tc.instrument, tc.price)
		} else {
			var re *bridge.RejectError
			require.ErrorAs(t, err, &re, "%s %v", tc.instrument, tc.price)
		}
	}
}

func TestRestingOrders(t *testing.T) {
	p, _ := newSim(t, sim.Options{})
	require.NoError(t, p.SetPrice("ES", 6000))
	limit := func(action string, price float64) bridge.OrderRequest {
		return bridge.OrderRequest{Account: "Sim101", Instrument: "ES", Action: action, OrderType: "Limit",
			Quantity: 1, LimitPrice: price, TimeInForce: "Day"}
	}
	orders := func() map[string]protocol.Order {
		os, err := p.Orders(ctx, "Sim101")
		require.NoError(t, err)
		m := map[string]protocol.Order{}
		for _, o := range os {
			m[o.OrderID] = o
		}
		return m
	}

	// A marketable limit fills at once at the ask.
	o := submit(t, p, limit("Buy", 6005))
	require.Equal(t, "Filled", o.OrderState)
	require.Equal(t, 6000.25, o.AverageFillPrice)
	require.Equal(t, 6005.0, o.LimitPrice)

	// A limit below the market works until the market reaches it.
	bid := submit(t, p, limit("Buy", 5995))
	require.Equal(t, "Working", bid.OrderState)
	require.Zero(t, bid.Filled)
	require.NoError(t, p.SetPrice("ES", 5995)) // ask 5995.25: not yet
	require.Equal(t, "Working", orders()[bid.OrderID].OrderState)
	require.NoError(t, p.SetPrice("ES", 5994.75)) // ask 5995
	got := orders()[bid.OrderID]
	require.Equal(t, "Filled", got.OrderState)
	require.Equal(t, 5995.0, got.AverageFillPrice)
	pos, _ := position(t, p, "Sim101", "ES 12-26")
	require.Equal(t, 2, pos.Quantity)

	// A bracket: target and stop in one OCO group; the stop fills at the
	// market and cancels the target.
	target := bridge.OrderRequest{Account: "Sim101", Instrument: "ES", Action: "Sell", OrderType: "Limit",
		Quantity: 2, LimitPrice: 6020, Oco: "b1"}
	stop := bridge.OrderRequest{Account: "Sim101", Instrument: "ES", Action: "Sell", OrderType: "StopMarket",
		Quantity: 2, StopPrice: 5980, Oco: "b1"}
	tgt := submit(t, p, target)
	stp := submit(t, p, stop)
	require.Equal(t, "Working", tgt.OrderState)
	require.Equal(t, "Accepted", stp.OrderState)
	require.Equal(t, 5980.0, stp.StopPrice)
	require.Zero(t, stp.LimitPrice)
	require.NoError(t, p.SetPrice("ES", 5978.5)) // gapped through the stop
	m := orders()
	require.Equal(t, "Filled", m[stp.OrderID].OrderState)
	require.Equal(t, 5978.5, m[stp.OrderID].AverageFillPrice)
	require.Equal(t, "Cancelled", m[tgt.OrderID].OrderState)
	_, open := position(t, p, "Sim101", "ES 12-26")
	require.False(t, open)
	require.NoError(t, p.SetPrice("ES", 6030))
	require.Equal(t, "Cancelled", orders()[tgt.OrderID].OrderState, "a cancelled order never fills")

	// A stop-limit triggers into a working limit, then fills.
	sl := submit(t, p, bridge.OrderRequest{Account: "Sim101", Instrument: "ES", Action: "Buy",
		OrderType: "StopLimit", Quantity: 1, StopPrice: 6040, LimitPrice: 6041})
	require.Equal(t, "Accepted", sl.OrderState)
	require.NoError(t, p.SetPrice("ES", 6045)) // ask 6045.25 is past the stop and the limit
	require.Equal(t, "Working", orders()[sl.OrderID].OrderState)
	require.NoError(t, p.SetPrice("ES", 6040.5))
	got = orders()[sl.OrderID]
	require.Equal(t, "Filled", got.OrderState)
	require.Equal(t, 6040.75, got.AverageFillPrice)
}

func TestPricesWalkWithTheClock(t *testing.T) {
	p, clock := newSim(t, sim.Options{})
	roots := []string{"ES", "NQ", "YM", "RTY", "CL", "GC", "MES", "MNQ"}
	first := map[string]protocol.Quote{}
	for _, r := range roots {
		q, err := p.Quote(ctx, r)
		require.NoError(t, err)
		first[r] = q
	}
	require.Equal(t, 6000.0, first["ES"].Bid)
	require.Equal(t, 21000.0, first["NQ"].Bid)
	require.Equal(t, 44000.0, first["YM"].Bid)
	require.Equal(t, 2300.0, first["RTY"].Bid)
	require.Equal(t, 70.0, first["CL"].Bid)
	require.Equal(t, 2600.0, first["GC"].Bid)

	// A stopped clock stops the prices.
	for _, r := range roots {
		q, err := p.Quote(ctx, r)
		require.NoError(t, err)
		require.Equal(t, first[r], q)
	}

	moved := 0
	for i := 0; i < 600; i++ {
		clock.Advance(time.Second)
		for _, r := range roots {
			q, err := p.Quote(ctx, r)
			require.NoError(t, err)
			require.InDelta(t, q.TickSize, q.Ask-q.Bid, 1e-9)
			ticks := q.Bid / q.TickSize
			require.InDelta(t, math.Round(ticks), ticks, 1e-6, "%s bid %v on the tick grid", r, q.Bid)
			require.LessOrEqual(t, q.Low, q.Bid)
			require.GreaterOrEqual(t, q.High, q.Last)
			require.Contains(t, []float64{q.Bid, q.Ask}, q.Last)
			require.Greater(t, q.Bid, 0.0)
		}
	}
	for _, r := range roots {
		q, err := p.Quote(ctx, r)
		require.NoError(t, err)
		if q.Bid != first[r].Bid {
			moved++
		}
		// Ten minutes of a ~1%/day walk stays well within 2%.
		require.InDelta(t, first[r].Bid, q.Bid, first[r].Bid*0.02, r)
		require.Equal(t, "2026-10-05T14:40:00.000Z", q.QuoteTimeUTC)
	}
	require.Greater(t, moved, len(roots)/2, "the walk moves")

	// A clock that goes back freezes the prices.
	q1, err := p.Quote(ctx, "ES")
	require.NoError(t, err)
	clock.Advance(-time.Hour)
	q2, err := p.Quote(ctx, "ES")
	require.NoError(t, err)
	require.Equal(t, q1, q2)

	// A long jump is one step, and the walk stays positive.
	clock.Advance(30 * 24 * time.Hour)
	q, err := p.Quote(ctx, "GC 12-26")
	require.NoError(t, err)
	require.Equal(t, first["GC"].Instrument, q.Instrument)
	require.NotEqual(t, first["GC"].Bid, q.Bid)
	require.Greater(t, q.Bid, 0.0)
	require.InDelta(t, first["GC"].Bid, q.Bid, first["GC"].Bid*0.5)
}

// script runs one fixed sequence of calls and returns every quote seen.
func script(t *testing.T, seed int64) []protocol.Quote {
	clock := sim.NewManualClock(start)
	p, err := sim.New(sim.Options{Seed: seed, Clock: clock})
	require.NoError(t, err)
	defer p.Close()
	var quotes []protocol.Quote
	for i := 0; i < 200; i++ {
		clock.Advance(time.Duration(1+i%7) * time.Second)
		for _, r := range []string{"ES", "NQ", "CL", "GC"} {
			q, err := p.Quote(ctx, r)
			require.NoError(t, err)
			quotes = append(quotes, q)
		}
		if i%10 == 0 {
			action := "Buy"
			if i%20 == 0 {
				action = "Sell"
			}
			submit(t, p, market("Sim101", "ES", action, 1+i%3))
		}
	}
	return quotes
}

func TestReproducible(t *testing.T) {
	a, b := script(t, 7), script(t, 7)
	require.Equal(t, a, b, "same seed, same calls, same quotes")
	require.NotEqual(t, a, script(t, 8), "another seed, another walk")

	p1, err := sim.New(sim.Options{Clock: sim.NewManualClock(start)})
	require.NoError(t, err)
	defer p1.Close()
	p2, err := sim.New(sim.Options{Seed: sim.DefaultSeed, Clock: sim.NewManualClock(start)})
	require.NoError(t, err)
	defer p2.Close()
	q1, err := p1.Quote(ctx, "ES")
	require.NoError(t, err)
	q2, err := p2.Quote(ctx, "ES")
	require.NoError(t, err)
	require.Equal(t, q1, q2, "seed 0 is the default seed")
}

func TestConcurrentOrders(t *testing.T) {
	p, clock := newSim(t, sim.Options{})
	var wg sync.WaitGroup
	want := 0
	for i := 0; i < 100; i++ {
		action, qty := "Buy", 1+i%4
		if i%3 == 0 {
			action = "Sell"
			want -= qty
		} else {
			want += qty
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%10 == 0 {
				clock.Advance(time.Second)
			}
			_, err := p.SubmitOrder(ctx, market("Sim101", "NQ", action, qty))
			if err != nil {
				t.Error(err)
			}
			if _, err := p.Accounts(ctx); err != nil {
				t.Error(err)
			}
			if _, err := p.Quote(ctx, "NQ"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()

	pos, ok := position(t, p, "Sim101", "NQ 12-26")
	require.True(t, ok)
	require.Equal(t, "Long", pos.MarketPosition)
	require.Equal(t, want, pos.Quantity)
	os, err := p.Orders(ctx, "Sim101")
	require.NoError(t, err)
	require.Len(t, os, 100)
	ids := map[string]bool{}
	for _, o := range os {
		require.Equal(t, "Filled", o.OrderState)
		ids[o.OrderID] = true
	}
	require.Len(t, ids, 100, "ids are unique")
	execs, err := p.Executions(ctx, "Sim101")
	require.NoError(t, err)
	require.Len(t, execs, 100)
	a, err := p.Account(ctx, "Sim101")
	require.NoError(t, err)
	contracts := 0
	for _, e := range execs {
		contracts += e.Quantity
	}
	require.InDelta(t, float64(contracts)*sim.DefaultCommissionPerContract, a.Item.Commission, 1e-6)
}

func TestClose(t *testing.T) {
	p, err := sim.New(sim.Options{})
	require.NoError(t, err)
	require.NoError(t, p.Close())
	require.NoError(t, p.Close())
	_, err = p.Accounts(ctx)
	require.ErrorIs(t, err, bridge.ErrNotConnected)
	_, err = p.SubmitOrder(ctx, market("Sim101", "ES", "Buy", 1))
	require.ErrorIs(t, err, bridge.ErrNotConnected)
	_, err = p.Quote(ctx, "ES")
	require.ErrorIs(t, err, bridge.ErrNotConnected)
	require.Equal(t, "sim", p.Kind())
}

func TestCancelledContext(t *testing.T) {
	p, _ := newSim(t, sim.Options{})
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()
	for _, c := range []struct {
		ctx  context.Context
		want error
	}{{cancelled, context.Canceled}, {expired, context.DeadlineExceeded}} {
		calls := map[string]func() error{
			"Connections": func() error { _, err := p.Connections(c.ctx); return err },
			"Accounts":    func() error { _, err := p.Accounts(c.ctx); return err },
			"Account":     func() error { _, err := p.Account(c.ctx, "Sim101"); return err },
			"Positions":   func() error { _, err := p.Positions(c.ctx, "Sim101"); return err },
			"Orders":      func() error { _, err := p.Orders(c.ctx, "Sim101"); return err },
			"Executions":  func() error { _, err := p.Executions(c.ctx, "Sim101"); return err },
			"SubmitOrder": func() error {
				_, err := p.SubmitOrder(c.ctx, market("Sim101", "ES", "Buy", 1))
				return err
			},
		}
		for name, call := range calls {
			require.ErrorIs(t, call(), c.want, name)
		}
	}
	os, err := p.Orders(ctx, "Sim101")
	require.NoError(t, err)
	require.Empty(t, os, "a cancelled call places nothing")
}

func TestManualClock(t *testing.T) {
	c := sim.NewManualClock(start)
	require.Equal(t, start, c.Now())
	c.Advance(90 * time.Second)
	require.Equal(t, start.Add(90*time.Second), c.Now())
	later := start.Add(48 * time.Hour)
	c.Set(later)
	require.Equal(t, later, c.Now())

	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Advance(time.Second)
			_ = c.Now()
		}()
	}
	wg.Wait()
	require.Equal(t, later.Add(10*time.Second), c.Now())
}

func TestRealClockByDefault(t *testing.T) {
	p, err := sim.New(sim.Options{})
	require.NoError(t, err)
	defer p.Close()
	// A resting limit: a market order would be refused when the wall clock
	// is outside trading hours.
	o, err := p.SubmitOrder(ctx, bridge.OrderRequest{Account: "Sim101", Instrument: "ES", Action: "Buy",
		OrderType: "Limit", Quantity: 1, LimitPrice: 1})
	require.NoError(t, err)
	require.Equal(t, "Working", o.OrderState)
	require.InDelta(t, time.Now().UnixMilli(), o.Epoch, float64(time.Minute.Milliseconds()))
	require.Regexp(t, `^ES (03|06|09|12)-\d\d$`, o.Instrument)
}
