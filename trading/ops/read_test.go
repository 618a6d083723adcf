package ops

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

func TestAccounts(t *testing.T) {
	f := newFixture(t)
	accts, err := f.ops.ListAccounts(bg, protocol.NoArgs{})
	require.NoError(t, err)
	require.Len(t, accts, 2)
	require.Equal(t, "Sim101", accts[0].Name)

	a, err := f.ops.GetAccount(bg, protocol.AccountArgs{Account: "Sim102"})
	require.NoError(t, err)
	require.Equal(t, "Sim102", a.Name)
	_, err = f.ops.GetAccount(bg, protocol.AccountArgs{Account: "Nope"})
	requireCode(t, err, protocol.CodeAccountNotFound, "Nope")
	_, err = f.ops.GetAccount(bg, protocol.AccountArgs{})
	requireCode(t, err, protocol.CodeMissingFields)

	w, err := f.ops.GetWatermarks(bg, protocol.AccountArgs{Account: "Sim101"})
	require.NoError(t, err)
	require.Equal(t, "Sim101", w.Account)
	_, err = f.ops.GetWatermarks(bg, protocol.AccountArgs{Account: "Nope"})
	requireCode(t, err, protocol.CodeAccountNotFound)
}

func TestAccountSummary(t *testing.T) {
	f := newFixture(t)
	f.market("Sim101", protocol.ActionBuy, 2)
	stop := f.resting("Sim101", protocol.ActionSell, protocol.OrderTypeStopMarket, 5990, 2)
	sum, err := f.ops.GetAccountSummary(bg, protocol.NoArgs{})
	require.NoError(t, err)
	require.Len(t, sum.Accounts, 2)
	require.Equal(t, start.UnixMilli(), sum.Epoch)
	s101 := sum.Accounts[0]
	require.Equal(t, "Sim101", s101.Name)
	require.Len(t, s101.Positions, 1)
	require.Equal(t, 2, s101.Positions[0].Quantity)
	require.Len(t, s101.Orders, 1, "only working orders")
	require.Equal(t, stop.OrderID, s101.Orders[0].OrderID)
	require.Empty(t, sum.Accounts[1].Positions)
	require.NotNil(t, sum.Accounts[1].Orders)

	m := shape(t, sum)
	require.Contains(t, m, "accounts")
	require.Contains(t, m, "time")
	acct := m["accounts"].([]any)[0].(map[string]any)
	for _, k := range []string{"name", "item", "positions", "orders", "connection"} {
		require.Contains(t, acct, k, "an account snapshot is an account record plus positions and orders")
	}
}

func TestPositions(t *testing.T) {
	f := newFixture(t)
	p, err := f.ops.GetPosition(bg, protocol.PositionArgs{Account: "Sim101", Instrument: "ES"})
	require.NoError(t, err)
	require.Equal(t, protocol.Position{Account: "Sim101", Instrument: es, InstrumentType: "Future", MarketPosition: protocol.MarketPositionFlat}, p,
		"a Flat record, with the full contract name")

	f.market("Sim101", protocol.ActionSell, 3)
	for _, name := range []string{"ES", es, "ESZ26", "esz6"} {
		p, err = f.ops.GetPosition(bg, protocol.PositionArgs{Account: "Sim101", Instrument: name})
		require.NoError(t, err)
		require.Equal(t, protocol.MarketPositionShort, p.MarketPosition, name)
		require.Equal(t, 3, p.Quantity)
	}
	_, err = f.ops.GetPosition(bg, protocol.PositionArgs{Account: "Sim101", Instrument: "ZZTOP"})
	requireCode(t, err, protocol.CodeInvalidInstrument, "ZZTOP")
	_, err = f.ops.GetPosition(bg, protocol.PositionArgs{})
	requireCode(t, err, protocol.CodeMissingFields)
	require.Contains(t, err.Error(), "account, instrument")

	ps, err := f.ops.ListPositions(bg, protocol.AccountArgs{Account: "Sim101"})
	require.NoError(t, err)
	require.Len(t, ps, 1)
	ps, err = f.ops.ListPositions(bg, protocol.AccountArgs{Account: "Sim102"})
	require.NoError(t, err)
	require.NotNil(t, ps)
	require.Empty(t, ps)

	// GetAllPositions: open ones; with includeFlat also instruments that
	// had orders this session.
	f.market("Sim102", protocol.ActionBuy, 1)
	f.market("Sim102", protocol.ActionSell, 1)
	all, err := f.ops.GetAllPositions(bg, protocol.AllPositionsArgs{})
	require.NoError(t, err)
	require.Len(t, all, 1)
	all, err = f.ops.GetAllPositions(bg, protocol.AllPositionsArgs{IncludeFlat: true})
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.Equal(t, "Sim102", all[1].Account)
	require.Equal(t, protocol.MarketPositionFlat, all[1].MarketPosition)
}

func TestOrdersAndLookback(t *testing.T) {
	f := newFixture(t)
	filled := f.market("Sim101", protocol.ActionBuy, 1)
	limit := f.resting("Sim101", protocol.ActionBuy, protocol.OrderTypeLimit, 5900, 1)

	ids := func(orders []protocol.Order) []string {
		out := []string{}
		for _, o := range orders {
			out = append(out, o.OrderID)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		args    protocol.ListOrdersArgs
		advance time.Duration
		want    []string
	}{
		{"active only by default", protocol.ListOrdersArgs{Account: "Sim101"}, 0, []string{limit.OrderID}},
		{"all recent", protocol.ListOrdersArgs{Account: "Sim101", ActiveOnly: ptr(false)}, 0, []string{filled.OrderID, limit.OrderID}},
		{"ended within the default 320 s", protocol.ListOrdersArgs{Account: "Sim101", ActiveOnly: ptr(false)}, 300 * time.Second, []string{filled.OrderID, limit.OrderID}},
		{"ended before the default 320 s", protocol.ListOrdersArgs{Account: "Sim101", ActiveOnly: ptr(false)}, 30 * time.Second, []string{limit.OrderID}},
		{"a longer lookback", protocol.ListOrdersArgs{Account: "Sim101", ActiveOnly: ptr(false), LookbackTime: ptr(900)}, 0, []string{filled.OrderID, limit.OrderID}},
		{"zero lookback", protocol.ListOrdersArgs{Account: "Sim101", ActiveOnly: ptr(false), LookbackTime: ptr(0)}, 0, []string{limit.OrderID}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.clock.Advance(tc.advance)
			got, err := f.ops.ListOrders(bg, tc.args)
			require.NoError(t, err)
			require.Equal(t, tc.want, ids(got))
		})
	}
	_, err := f.ops.ListOrders(bg, protocol.ListOrdersArgs{Account: "Sim101", LookbackTime: ptr(901)})
	requireCode(t, err, protocol.CodeInvalidArgument, "901")
	_, err = f.ops.ListOrders(bg, protocol.ListOrdersArgs{Account: "Sim101", LookbackTime: ptr(-1)})
	requireCode(t, err, protocol.CodeInvalidArgument)

	all, err := f.ops.GetAllOrders(bg, protocol.AllOrdersArgs{ActiveOnly: ptr(false), LookbackTime: ptr(900)})
	require.NoError(t, err)
	require.Equal(t, []string{filled.OrderID, limit.OrderID}, ids(all))

	o, err := f.ops.GetOrder(bg, protocol.OrderArgs{Account: "Sim101", OrderID: limit.OrderID})
	require.NoError(t, err)
	require.Equal(t, limit.OrderID, o.OrderID)
	o, err = f.ops.GetOrder(bg, protocol.OrderArgs{OrderID: limit.OrderID})
	require.NoError(t, err, "without an account every account is searched")
	require.Equal(t, "Sim101", o.Account)
	_, err = f.ops.GetOrder(bg, protocol.OrderArgs{Account: "Sim102", OrderID: limit.OrderID})
	requireCode(t, err, protocol.CodeOrderNotFound)
	_, err = f.ops.GetOrder(bg, protocol.OrderArgs{})
	requireCode(t, err, protocol.CodeMissingFields)
}

func TestExecutions(t *testing.T) {
	f := newFixture(t)
	o1 := f.market("Sim101", protocol.ActionBuy, 1)
	f.clock.Advance(400 * time.Second)
	require.NoError(t, f.sim.SetPrice(es, 6000))
	o2 := f.market("Sim101", protocol.ActionSell, 1)

	execs, err := f.ops.ListExecutions(bg, protocol.ListExecutionsArgs{Account: "Sim101"})
	require.NoError(t, err)
	require.Len(t, execs, 1, "the default lookback is 320 s")
	require.Equal(t, o2.OrderID, execs[0].OrderID)
	execs, err = f.ops.ListExecutions(bg, protocol.ListExecutionsArgs{Account: "Sim101", LookbackTime: ptr(900)})
	require.NoError(t, err)
	require.Len(t, execs, 2)

	execs, err = f.ops.GetExecutionsByOrderId(bg, protocol.OrderArgs{OrderID: o1.OrderID})
	require.NoError(t, err)
	require.Len(t, execs, 1)
	require.Equal(t, o1.OrderID, execs[0].OrderID)
	execs, err = f.ops.GetExecutionsByOrderId(bg, protocol.OrderArgs{Account: "Sim102", OrderID: o1.OrderID})
	require.NoError(t, err)
	require.Empty(t, execs)
	require.NotNil(t, execs)
}

// idChangingPlatform gives every changed order a new id, as some platforms
// do, and reports executions under the id the order had when it filled.
type idChangingPlatform struct {
	bridge.Platform
	execs []protocol.Execution
}

func (p *idChangingPlatform) ChangeOrder(ctx context.Context, req bridge.ChangeRequest) (protocol.Order, error) {
	o, err := p.Platform.ChangeOrder(ctx, req)
	o.OrderID = "new-" + o.OrderID
	return o, err
}

func (p *idChangingPlatform) Orders(ctx context.Context, account string) ([]protocol.Order, error) {
	orders, err := p.Platform.Orders(ctx, account)
	for i := range orders {
		if orders[i].Quantity == 3 { // the changed one
			orders[i].OrderID = "new-" + orders[i].OrderID
		}
	}
	return orders, err
}

func (p *idChangingPlatform) Executions(context.Context, string) ([]protocol.Execution, error) {
	return p.execs, nil
}

// GetExecutionsByOrderId matches both the current and the original id of
// an order whose id the platform changed.
func TestExecutionsFollowChangedIDs(t *testing.T) {
	f := newFixture(t)
	limit := f.resting("Sim101", protocol.ActionBuy, protocol.OrderTypeLimit, 5900, 1)
	p := &idChangingPlatform{Platform: f.platform}
	o, err := New(Options{Platform: p, Now: f.clock.Now})
	require.NoError(t, err)
	res, err := o.ChangeOrder(bg, protocol.ChangeOrderArgs{Account: "Sim101", OrderID: limit.OrderID, Quantity: ptr(3)})
	require.NoError(t, err)
	newID := "new-" + limit.OrderID
	require.Equal(t, newID, res.OrderID)
	p.execs = []protocol.Execution{
		{ID: "e1", OrderID: limit.OrderID, Account: "Sim101", Quantity: 1},
		{ID: "e2", OrderID: newID, Account: "Sim101", Quantity: 2},
		{ID: "e3", OrderID: "other", Account: "Sim101", Quantity: 1},
	}
	for _, id := range []string{limit.OrderID, newID} {
		execs, err := o.GetExecutionsByOrderId(bg, protocol.OrderArgs{Account: "Sim101", OrderID: id})
		require.NoError(t, err)
		require.Len(t, execs, 2, id)
	}
	// The original id still finds the order.
	got, err := o.GetOrder(bg, protocol.OrderArgs{Account: "Sim101", OrderID: limit.OrderID})
	require.NoError(t, err)
	require.Equal(t, newID, got.OrderID)
}

func TestMarketReads(t *testing.T) {
	f := newFixture(t)
	q, err := f.ops.GetQuote(bg, protocol.QuoteArgs{Instrument: "ES"})
	require.NoError(t, err)
	require.Equal(t, es, q.Instrument)
	require.Equal(t, 6000.0, q.Last)
	require.Nil(t, q.Rollover)
	require.NotContains(t, shape(t, q), "rollover")
	q, err = f.ops.GetQuote(bg, protocol.QuoteArgs{Root: "ES", ShowRollover: true})
	require.NoError(t, err)
	require.Equal(t, es, q.Instrument)
	require.NotNil(t, q.Rollover)
	require.Equal(t, "ES 03-27", q.Rollover.Instrument)
	m := shape(t, q)
	require.Contains(t, m, "bid", "the quote's fields are at the top level")
	require.Contains(t, m, "rollover")
	_, err = f.ops.GetQuote(bg, protocol.QuoteArgs{})
	requireCode(t, err, protocol.CodeMissingFields)
	_, err = f.ops.GetQuote(bg, protocol.QuoteArgs{Instrument: "ES 11-26"})
	requireCode(t, err, protocol.CodeInvalidInstrument, "11-26")

	info, err := f.ops.MarketInfo(bg, protocol.InstrumentArgs{Root: "NQ"})
	require.NoError(t, err)
	require.Equal(t, "NQ 12-26", info.Instrument)
	require.Equal(t, 0.25, info.TickSize)
	_, err = f.ops.MarketInfo(bg, protocol.InstrumentArgs{})
	requireCode(t, err, protocol.CodeMissingFields)

	ts, err := f.ops.GetAtmTemplates(bg, protocol.NoArgs{})
	require.NoError(t, err)
	require.NotEmpty(t, ts)
}

func TestBars(t *testing.T) {
	f := newFixture(t)
	f.clock.Advance(10 * time.Minute)
	b, err := f.ops.GetBars(bg, protocol.BarsArgs{Instrument: "ES", PeriodType: "Minute", Period: ptr(1), Limit: ptr(5)})
	require.NoError(t, err)
	require.Equal(t, es, b.Instrument)
	require.Equal(t, protocol.PeriodMinute, b.PeriodType)
	require.LessOrEqual(t, len(b.Bars), 5)
	require.Equal(t, len(b.Bars), b.Count)

	for _, tc := range []struct {
		name string
		args protocol.BarsArgs
		code string
	}{
		{"no instrument", protocol.BarsArgs{}, protocol.CodeMissingFields},
		{"bad period type", protocol.BarsArgs{Instrument: "ES", PeriodType: "fortnight"}, protocol.CodeInvalidArgument},
		{"bad period", protocol.BarsArgs{Instrument: "ES", Period: ptr(0)}, protocol.CodeInvalidArgument},
		{"bad limit", protocol.BarsArgs{Instrument: "ES", Limit: ptr(0)}, protocol.CodeInvalidArgument},
		{"limit too large", protocol.BarsArgs{Instrument: "ES", Limit: ptr(20_001)}, protocol.CodeInvalidArgument},
		{"negative daysBack", protocol.BarsArgs{Instrument: "ES", DaysBack: ptr(-1)}, protocol.CodeInvalidArgument},
		{"bad from", protocol.BarsArgs{Instrument: "ES", From: "yesterday"}, protocol.CodeInvalidArgument},
		{"to without from", protocol.BarsArgs{Instrument: "ES", To: "2026-10-05"}, protocol.CodeMissingFields},
		{"from after to", protocol.BarsArgs{Instrument: "ES", From: "2026-10-05", To: "2026-10-01"}, protocol.CodeInvalidArgument},
		{"bad timeout", protocol.BarsArgs{Instrument: "ES", TimeoutMs: ptr(0)}, protocol.CodeInvalidArgument},
		{"bad merge policy", protocol.BarsArgs{Instrument: "ES", MergePolicy: "Blend"}, protocol.CodeInvalidArgument},
		{"unknown instrument", protocol.BarsArgs{Instrument: "ZZ"}, protocol.CodeInvalidInstrument},
		// The simulator's own refusal (a tick range longer than it keeps)
		// is invalid_argument too.
		{"range the platform refuses", protocol.BarsArgs{Instrument: "ES", PeriodType: "tick", From: "2026-01-01", To: "2026-10-05"}, protocol.CodeInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.ops.GetBars(bg, tc.args)
			requireCode(t, err, tc.code, "fortnight", "yesterday", "Blend", "ZZ")
		})
	}
	b, err = f.ops.GetBars(bg, protocol.BarsArgs{Instrument: "ES", From: "2026-10-05T14:00:00Z", To: "2026-10-05T14:40:00Z",
		SplitAdjust: true, DividendAdjust: true, MergePolicy: "donotmerge", TimeoutMs: ptr(1000)})
	require.NoError(t, err)
	require.NotNil(t, b.Bars)
}

func TestStrategies(t *testing.T) {
	f := newFixture(t)
	s, err := f.ops.StartStrategy(bg, protocol.StartStrategyArgs{Account: "Sim101", StrategyClass: "SampleMACrossOver",
		Instrument: "ES", PeriodType: "minute", Period: 1})
	require.NoError(t, err)
	require.Equal(t, es, s.Instrument)
	require.Equal(t, protocol.StrategyStateEnabled, s.State)

	got, err := f.ops.GetStrategy(bg, protocol.StrategyArgs{Account: "Sim101", ID: s.ID})
	require.NoError(t, err)
	require.Equal(t, s.ID, got.ID)
	got, err = f.ops.GetStrategy(bg, protocol.StrategyArgs{Account: "Sim101", StrategyID: s.ID})
	require.NoError(t, err)
	require.Equal(t, s.ID, got.ID)
	_, err = f.ops.GetStrategy(bg, protocol.StrategyArgs{Account: "Sim101", ID: s.ID, StrategyID: "other"})
	requireCode(t, err, protocol.CodeInvalidArgument)
	_, err = f.ops.GetStrategy(bg, protocol.StrategyArgs{Account: "Sim101", ID: "nope"})
	requireCode(t, err, protocol.CodeStrategyNotFound, "nope")

	s, err = f.ops.DisableStrategy(bg, protocol.StrategyArgs{Account: "Sim101", ID: s.ID})
	require.NoError(t, err)
	require.Equal(t, protocol.StrategyStateDisabled, s.State)
	s, err = f.ops.EnableStrategy(bg, protocol.StrategyArgs{Account: "Sim101", ID: s.ID})
	require.NoError(t, err)
	require.Equal(t, protocol.StrategyStateEnabled, s.State)

	list, err := f.ops.ListStrategies(bg, protocol.ListStrategiesArgs{Account: "Sim101"})
	require.NoError(t, err)
	require.Len(t, list, 1)

	_, err = f.ops.CloseStrategy(bg, protocol.CloseStrategyArgs{Account: "Sim101", ID: s.ID, SignalName: "Entry"})
	requireCode(t, err, protocol.CodeInvalidArgument, "Entry")
	s, err = f.ops.CloseStrategy(bg, protocol.CloseStrategyArgs{Account: "Sim101", ID: s.ID})
	require.NoError(t, err)
	require.True(t, protocol.TerminalStrategyState(s.State))
	_, err = f.ops.EnableStrategy(bg, protocol.StrategyArgs{Account: "Sim101", ID: s.ID})
	requireCode(t, err, protocol.CodeStrategyTerminal)

	list, err = f.ops.ListStrategies(bg, protocol.ListStrategiesArgs{Account: "Sim101"})
	require.NoError(t, err)
	require.Empty(t, list, "terminal strategies are left out by default")
	list, err = f.ops.ListStrategies(bg, protocol.ListStrategiesArgs{Account: "Sim101", IncludeTerminal: true})
	require.NoError(t, err)
	require.Len(t, list, 1)
	all, err := f.ops.ListAllStrategies(bg, protocol.AllStrategiesArgs{IncludeTerminal: true})
	require.NoError(t, err)
	require.Len(t, all, 1)
	all, err = f.ops.ListAllStrategies(bg, protocol.AllStrategiesArgs{})
	require.NoError(t, err)
	require.Empty(t, all)

	for _, tc := range []struct {
		name string
		args protocol.StartStrategyArgs
		code string
	}{
		{"missing", protocol.StartStrategyArgs{Account: "Sim101"}, protocol.CodeMissingFields},
		{"unknown class", protocol.StartStrategyArgs{Account: "Sim101", StrategyClass: "Nope", Instrument: "ES"}, protocol.CodeInvalidArgument},
		{"bad mode", protocol.StartStrategyArgs{Account: "Sim101", StrategyClass: "SampleMACrossOver", Instrument: "ES", Mode: "Turbo"}, protocol.CodeInvalidArgument},
		{"bad period type", protocol.StartStrategyArgs{Account: "Sim101", StrategyClass: "SampleMACrossOver", Instrument: "ES", PeriodType: "eon"}, protocol.CodeInvalidArgument},
		{"bad period", protocol.StartStrategyArgs{Account: "Sim101", StrategyClass: "SampleMACrossOver", Instrument: "ES", Period: -1}, protocol.CodeInvalidArgument},
		{"bad parameter", protocol.StartStrategyArgs{Account: "Sim101", StrategyClass: "SampleMACrossOver", Instrument: "ES", Parameters: map[string]any{"Fast": 50, "Slow": 10}}, protocol.CodeInvalidArgument},
		{"unknown instrument", protocol.StartStrategyArgs{Account: "Sim101", StrategyClass: "SampleMACrossOver", Instrument: "ZZ"}, protocol.CodeInvalidInstrument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.rec.Writes())
			_, err := f.ops.StartStrategy(bg, tc.args)
			requireCode(t, err, tc.code, "Nope", "Turbo", "eon")
			if tc.code != protocol.CodeInvalidArgument || tc.name == "bad mode" || tc.name == "bad period type" || tc.name == "bad period" {
				require.Len(t, f.rec.Writes(), before, "nothing reached the platform")
			}
		})
	}
}
