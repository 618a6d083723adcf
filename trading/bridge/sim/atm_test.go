package sim_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
)

// atmOrders returns the account's orders by name (the last one of each
// name), for the names ATM strategies give.
func atmOrders(t *testing.T, p *sim.Platform, account string) map[string]protocol.Order {
	t.Helper()
	os, err := p.Orders(ctx, account)
	require.NoError(t, err)
	out := map[string]protocol.Order{}
	for _, o := range os {
		out[o.Name] = o
	}
	return out
}

func TestAtmTemplates(t *testing.T) {
	p, _ := newSim(t, sim.Options{})
	ts, err := p.AtmTemplates(ctx)
	require.NoError(t, err)
	require.Equal(t, sim.DefaultAtmTemplates(), ts)
	require.Equal(t, "ATM 1 Target", ts[0].Name)
	ts[0].Brackets[0].StopLossTicks = 99 // a copy
	again, err := p.AtmTemplates(ctx)
	require.NoError(t, err)
	require.Equal(t, 8, again[0].Brackets[0].StopLossTicks)

	mine := []protocol.AtmTemplate{{Name: " Scalp ", Quantity: 3, Brackets: []protocol.AtmBracket{
		{Quantity: 2, StopLossTicks: 4, ProfitTargetTicks: 4}, {Quantity: 1, StopLossTicks: 4, ProfitTargetTicks: 12}}}}
	require.NoError(t, p.SetAtmTemplates(mine))
	ts, err = p.AtmTemplates(ctx)
	require.NoError(t, err)
	require.Len(t, ts, 1)
	require.Equal(t, "Scalp", ts[0].Name, "names are trimmed")
	require.Equal(t, "Gtc", ts[0].TimeInForce, "an empty time in force is Gtc")

	valid := func() protocol.AtmTemplate {
		return protocol.AtmTemplate{Name: "T", Quantity: 2, TimeInForce: "day", Brackets: []protocol.AtmBracket{
			{Quantity: 1, StopLossTicks: 8, ProfitTargetTicks: 8}, {Quantity: 1, StopLossTicks: 8, ProfitTargetTicks: 16}},
			Breakeven:    &protocol.AtmBreakeven{Enabled: true, TriggerTicks: 4, PlusTicks: 1},
			TrailingStop: &protocol.AtmTrailingStop{Enabled: true, TriggerTicks: 4, DistanceTicks: 4, StepTicks: 1}}
	}
	for _, tc := range []struct {
		name   string
		change func(ts *[]protocol.AtmTemplate)
		ok     bool
	}{
		{"valid", func(*[]protocol.AtmTemplate) {}, true},
		{"empty list", func(ts *[]protocol.AtmTemplate) { *ts = nil }, true},
		{"disabled breakeven is not checked", func(ts *[]protocol.AtmTemplate) {
			(*ts)[0].Breakeven = &protocol.AtmBreakeven{}
		}, true},
		{"empty name", func(ts *[]protocol.AtmTemplate) { (*ts)[0].Name = "  " }, false},
		{"duplicate name", func(ts *[]protocol.AtmTemplate) {
			dup := valid()
			dup.Name = "t"
			*ts = append(*ts, dup)
		}, false},
		{"zero quantity", func(ts *[]protocol.AtmTemplate) { (*ts)[0].Quantity = 0 }, false},
		{"quantities do not add up", func(ts *[]protocol.AtmTemplate) { (*ts)[0].Quantity = 3 }, false},
		{"no brackets", func(ts *[]protocol.AtmTemplate) { (*ts)[0].Brackets = nil }, false},
		{"zero bracket quantity", func(ts *[]protocol.AtmTemplate) { (*ts)[0].Brackets[0].Quantity = 0 }, false},
		{"zero stop ticks", func(ts *[]protocol.AtmTemplate) { (*ts)[0].Brackets[1].StopLossTicks = 0 }, false},
		{"zero target ticks", func(ts *[]protocol.AtmTemplate) { (*ts)[0].Brackets[0].ProfitTargetTicks = 0 }, false},
		{"bad time in force", func(ts *[]protocol.AtmTemplate) { (*ts)[0].TimeInForce = "Ioc" }, false},
		{"zero breakeven trigger", func(ts *[]protocol.AtmTemplate) { (*ts)[0].Breakeven.TriggerTicks = 0 }, false},
		{"breakeven plus at the trigger", func(ts *[]protocol.AtmTemplate) { (*ts)[0].Breakeven.PlusTicks = 4 }, false},
		{"negative breakeven plus", func(ts *[]protocol.AtmTemplate) { (*ts)[0].Breakeven.PlusTicks = -1 }, false},
		{"zero trailing distance", func(ts *[]protocol.AtmTemplate) { (*ts)[0].TrailingStop.DistanceTicks = 0 }, false},
		{"zero trailing step", func(ts *[]protocol.AtmTemplate) { (*ts)[0].TrailingStop.StepTicks = 0 }, false},
		{"zero trailing trigger", func(ts *[]protocol.AtmTemplate) { (*ts)[0].TrailingStop.TriggerTicks = 0 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newSim(t, sim.Options{})
			ts := []protocol.AtmTemplate{valid()}
			tc.change(&ts)
			err := p.SetAtmTemplates(ts)
			_, newErr := sim.New(sim.Options{AtmTemplates: ts})
			got, listErr := p.AtmTemplates(ctx)
			require.NoError(t, listErr)
			if !tc.ok {
				require.Error(t, err)
				require.Error(t, newErr, "New checks templates alike")
				require.Equal(t, sim.DefaultAtmTemplates(), got, "a refused list changes nothing")
				return
			}
			require.NoError(t, err)
			require.NoError(t, newErr)
			require.Len(t, got, len(ts))
		})
	}

	empty, err := sim.New(sim.Options{AtmTemplates: []protocol.AtmTemplate{}})
	require.NoError(t, err)
	defer empty.Close()
	ts, err = empty.AtmTemplates(ctx)
	require.NoError(t, err)
	require.Empty(t, ts, "an empty list is no templates")
}

func TestAtmUnknownTemplate(t *testing.T) {
	p, _ := newSim(t, sim.Options{})
	ch := watch(t, p)
	req := esOrder("Buy", "Market", 1, 0, 0)
	req.AtmTemplate = "Nope"
	_, err := p.SubmitOrder(ctx, req)
	require.ErrorIs(t, err, bridge.ErrTemplateNotFound)
	require.NotContains(t, err.Error(), "Nope")
	os, err := p.Orders(ctx, "Sim101")
	require.NoError(t, err)
	require.Empty(t, os, "nothing recorded")
	require.Empty(t, drain(ch))
	_, open := position(t, p, "Sim101", "ES 12-26")
	require.False(t, open)

	req.AtmTemplate = " atm 1 target " // names match ignoring case and spaces
	o := submit(t, p, req)
	require.Equal(t, "Entry", o.Name, "an unnamed ATM entry is named Entry")
}

func TestAtmBracketPlacement(t *testing.T) {
	type leg struct {
		action, typ string
		qty         int
		price       float64
	}
	for _, tc := range []struct {
		name     string
		depth    int
		template string
		entry    bridge.OrderRequest
		want     map[string]leg
	}{
		{name: "long, one target", template: "ATM 1 Target", entry: esOrder("Buy", "Market", 1, 0, 0),
			want: map[string]leg{ // entry at 6000.25
				"Stop1": {"Sell", "StopMarket", 1, 5998.25}, "Target1": {"Sell", "Limit", 1, 6004.25}}},
		{name: "short, one target", template: "ATM 1 Target", entry: esOrder("Sell", "Market", 1, 0, 0),
			want: map[string]leg{ // entry at 6000
				"Stop1": {"Buy", "StopMarket", 1, 6002}, "Target1": {"Buy", "Limit", 1, 5996}}},
		{name: "two brackets", template: "ATM 2 Targets", entry: esOrder("Buy", "Market", 2, 0, 0),
			want: map[string]leg{
				"Stop1": {"Sell", "StopMarket", 1, 5998.25}, "Target1": {"Sell", "Limit", 1, 6002.25},
				"Stop2": {"Sell", "StopMarket", 1, 5998.25}, "Target2": {"Sell", "Limit", 1, 6004.25}}},
		{name: "entry larger than the template is split in proportion", template: "ATM 2 Targets",
			entry: esOrder("Buy", "Market", 5, 0, 0), // 2.5 each: the earlier bracket takes the odd one
			want: map[string]leg{
				"Stop1": {"Sell", "StopMarket", 3, 5998.25}, "Target1": {"Sell", "Limit", 3, 6002.25},
				"Stop2": {"Sell", "StopMarket", 2, 5998.25}, "Target2": {"Sell", "Limit", 2, 6004.25}}},
		{name: "entry smaller than the template", template: "ATM 2 Targets", entry: esOrder("Sell", "Market", 1, 0, 0),
			want: map[string]leg{"Stop1": {"Buy", "StopMarket", 1, 6002}, "Target1": {"Buy", "Limit", 1, 5998}}},
		{name: "partial entry fills grow the brackets", depth: 1, template: "ATM 2 Targets",
			entry: esOrder("Buy", "Market", 3, 0, 0), // fills 1@6000.25, 1@6000.5, 1@6000.75; shares 2 and 1
			want: map[string]leg{
				// Bracket 1 is placed at the first fill and grows with the
				// second; bracket 2 is placed at the third, from the average
				// price 6000.5.
				"Stop1": {"Sell", "StopMarket", 2, 5998.25}, "Target1": {"Sell", "Limit", 2, 6002.25},
				"Stop2": {"Sell", "StopMarket", 1, 5998.5}, "Target2": {"Sell", "Limit", 1, 6004.5}}},
		{name: "resting limit entry", template: "ATM 1 Target", entry: esOrder("Buy", "Limit", 1, 6000.25, 0),
			want: map[string]leg{"Stop1": {"Sell", "StopMarket", 1, 5998.25}, "Target1": {"Sell", "Limit", 1, 6004.25}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newSim(t, sim.Options{BookDepth: tc.depth})
			require.NoError(t, p.SetPrice("ES", 6000))
			req := tc.entry
			req.AtmTemplate, req.StrategyTag = tc.template, "bot-7"
			entry := submit(t, p, req)
			require.Equal(t, "Filled", entry.OrderState)
			orders := atmOrders(t, p, "Sim101")
			require.Len(t, orders, len(tc.want)+1)
			ocos := map[string]string{}
			for name, w := range tc.want {
				o, ok := orders[name]
				require.True(t, ok, name)
				require.Equal(t, w.action, o.OrderAction, name)
				require.Equal(t, w.typ, o.OrderType, name)
				require.Equal(t, w.qty, o.Quantity, name)
				if w.typ == "Limit" {
					require.Equal(t, w.price, o.LimitPrice, name)
					require.Equal(t, "Working", o.OrderState, name)
				} else {
					require.Equal(t, w.price, o.StopPrice, name)
					require.Equal(t, "Accepted", o.OrderState, name)
				}
				require.Equal(t, "bot-7", o.StrategyTag, name)
				require.Equal(t, "Gtc", o.TimeInForce, name)
				require.NotEmpty(t, o.Oco, name)
				ocos[name] = o.Oco
			}
			require.Equal(t, ocos["Stop1"], ocos["Target1"], "a bracket's stop and target share an OCO id")
			if _, two := tc.want["Stop2"]; two {
				require.Equal(t, ocos["Stop2"], ocos["Target2"])
				require.NotEqual(t, ocos["Stop1"], ocos["Stop2"], "each bracket has its own")
			}
		})
	}
}

func TestAtmExits(t *testing.T) {
	t.Run("target fills, stop cancelled", func(t *testing.T) {
		p, _ := newSim(t, sim.Options{})
		require.NoError(t, p.SetPrice("ES", 6000))
		req := esOrder("Buy", "Market", 1, 0, 0)
		req.AtmTemplate = "ATM 1 Target"
		submit(t, p, req)
		require.NoError(t, p.SetPrice("ES", 6004.25))
		o := atmOrders(t, p, "Sim101")
		require.Equal(t, "Filled", o["Target1"].OrderState)
		require.Equal(t, "Cancelled", o["Stop1"].OrderState)
		_, open := position(t, p, "Sim101", "ES 12-26")
		require.False(t, open)
		a, err := p.Account(ctx, "Sim101")
		require.NoError(t, err)
		require.Equal(t, 200.0, a.Item.GrossRealizedProfitLoss, "16 ticks × $12.50")
		require.Equal(t, 198.76, a.Item.RealizedProfitLoss, "less 2 × 0.62")
	})

	t.Run("stop fills, target cancelled", func(t *testing.T) {
		p, _ := newSim(t, sim.Options{})
		require.NoError(t, p.SetPrice("ES", 6000))
		req := esOrder("Sell", "Market", 1, 0, 0) // at 6000; stop 6002 above
		req.AtmTemplate = "ATM 1 Target"
		submit(t, p, req)
		require.NoError(t, p.SetPrice("ES", 6003)) // ask 6003.25 gaps through 6002
		o := atmOrders(t, p, "Sim101")
		require.Equal(t, "Filled", o["Stop1"].OrderState)
		require.Equal(t, 6003.25, o["Stop1"].AverageFillPrice)
		require.Equal(t, "Cancelled", o["Target1"].OrderState)
		a, err := p.Account(ctx, "Sim101")
		require.NoError(t, err)
		require.Equal(t, -162.5, a.Item.GrossRealizedProfitLoss, "13 ticks × $12.50")
	})

	t.Run("a partial target fill resizes the stop", func(t *testing.T) {
		p, _ := newSim(t, sim.Options{BookDepth: 1})
		require.NoError(t, p.SetPrice("ES", 6000))
		req := esOrder("Buy", "Limit", 3, 6000.25, 0)
		req.AtmTemplate = "ATM 1 Target" // entry fills 1 per market update
		submit(t, p, req)
		require.NoError(t, p.SetPrice("ES", 6000))
		require.NoError(t, p.SetPrice("ES", 6000))
		o := atmOrders(t, p, "Sim101")
		require.Equal(t, 3, o["Entry"].Filled)
		require.Equal(t, 3, o["Stop1"].Quantity)
		require.Equal(t, 3, o["Target1"].Quantity)

		ch := watch(t, p)
		require.NoError(t, p.SetPrice("ES", 6004.25)) // the target takes 1
		o = atmOrders(t, p, "Sim101")
		require.Equal(t, "PartFilled", o["Target1"].OrderState)
		require.Equal(t, 1, o["Target1"].Filled)
		require.Equal(t, "Accepted", o["Stop1"].OrderState, "the stop still protects the rest")
		require.Equal(t, 2, o["Stop1"].Quantity)
		evs := describe(drain(ch))
		require.Contains(t, evs, "order "+o["Stop1"].OrderID+" Accepted 0/2")

		require.NoError(t, p.SetPrice("ES", 6004.25))
		require.NoError(t, p.SetPrice("ES", 6004.25))
		o = atmOrders(t, p, "Sim101")
		require.Equal(t, "Filled", o["Target1"].OrderState)
		require.Equal(t, "Cancelled", o["Stop1"].OrderState)
		_, open := position(t, p, "Sim101", "ES 12-26")
		require.False(t, open)
	})

	t.Run("a stop already through the market exits at once", func(t *testing.T) {
		p, _ := newSim(t, sim.Options{AtmTemplates: []protocol.AtmTemplate{{Name: "Tight", Quantity: 1,
			Brackets: []protocol.AtmBracket{{Quantity: 1, StopLossTicks: 1, ProfitTargetTicks: 4}}}}})
		require.NoError(t, p.SetPrice("ES", 6000))
		req := esOrder("Buy", "Market", 1, 0, 0) // at 6000.25: a 1-tick stop is 6000, the bid
		req.AtmTemplate = "Tight"
		submit(t, p, req)
		o := atmOrders(t, p, "Sim101")
		require.Equal(t, "Market", o["Stop1"].OrderType)
		require.Equal(t, "Filled", o["Stop1"].OrderState)
		require.Equal(t, 6000.0, o["Stop1"].AverageFillPrice)
		_, placed := o["Target1"]
		require.False(t, placed, "no target for an exited bracket")
		_, open := position(t, p, "Sim101", "ES 12-26")
		require.False(t, open)
	})

	t.Run("a cancelled entry places nothing", func(t *testing.T) {
		p, _ := newSim(t, sim.Options{})
		require.NoError(t, p.SetPrice("ES", 6000))
		req := esOrder("Buy", "Limit", 1, 5990, 0)
		req.AtmTemplate = "ATM 1 Target"
		e := submit(t, p, req)
		_, err := p.CancelOrder(ctx, "Sim101", e.OrderID)
		require.NoError(t, err)
		require.NoError(t, p.SetPrice("ES", 5980))
		require.Len(t, atmOrders(t, p, "Sim101"), 1)
	})

	t.Run("flatten cancels the brackets", func(t *testing.T) {
		p, _ := newSim(t, sim.Options{})
		require.NoError(t, p.SetPrice("ES", 6000))
		req := esOrder("Buy", "Market", 2, 0, 0)
		req.AtmTemplate = "ATM 2 Targets"
		submit(t, p, req)
		require.NoError(t, p.Flatten(ctx, "Sim101", "ES"))
		o := atmOrders(t, p, "Sim101")
		for _, name := range []string{"Stop1", "Target1", "Stop2", "Target2"} {
			require.Equal(t, "Cancelled", o[name].OrderState, name)
		}
		require.Equal(t, "Filled", o["Close"].OrderState)
		require.NoError(t, p.SetPrice("ES", 6010))
		_, open := position(t, p, "Sim101", "ES 12-26")
		require.False(t, open, "no bracket survives to open a position")
	})
}

func TestAtmBreakeven(t *testing.T) {
	p, _ := newSim(t, sim.Options{})
	require.NoError(t, p.SetPrice("ES", 6000))
	req := esOrder("Buy", "Market", 2, 0, 0) // 2 @ 6000.25
	req.AtmTemplate = "ATM 2 Targets"        // targets 8 and 16 ticks, breakeven +1 at 8 ticks
	submit(t, p, req)

	require.NoError(t, p.SetPrice("ES", 6002)) // 7 ticks: not yet
	o := atmOrders(t, p, "Sim101")
	require.Equal(t, 5998.25, o["Stop2"].StopPrice)

	// Replacing the templates does not change a running strategy.
	require.NoError(t, p.SetAtmTemplates(nil))

	require.NoError(t, p.SetPrice("ES", 6002.25)) // 8 ticks: target 1 fills, stop 2 to 6000.50
	o = atmOrders(t, p, "Sim101")
	require.Equal(t, "Filled", o["Target1"].OrderState)
	require.Equal(t, "Cancelled", o["Stop1"].OrderState)
	require.Equal(t, 6000.5, o["Stop2"].StopPrice)
	require.Equal(t, "Accepted", o["Stop2"].OrderState)

	require.NoError(t, p.SetPrice("ES", 6001)) // breakeven acts once: the stop stays
	require.Equal(t, 6000.5, atmOrders(t, p, "Sim101")["Stop2"].StopPrice)

	require.NoError(t, p.SetPrice("ES", 6000.5)) // back to the stop
	o = atmOrders(t, p, "Sim101")
	require.Equal(t, "Filled", o["Stop2"].OrderState)
	require.Equal(t, 6000.5, o["Stop2"].AverageFillPrice)
	require.Equal(t, "Cancelled", o["Target2"].OrderState)
	a, err := p.Account(ctx, "Sim101")
	require.NoError(t, err)
	// Target 1: +8 ticks = $100; stop 2: +1 tick = $12.50; 4 contracts × 0.62.
	require.Equal(t, 112.5, a.Item.GrossRealizedProfitLoss)
	require.Equal(t, 2.48, a.Item.Commission)
	require.Equal(t, 110.02, a.Item.RealizedProfitLoss)
}

func TestAtmBreakevenShort(t *testing.T) {
	p, _ := newSim(t, sim.Options{AtmTemplates: []protocol.AtmTemplate{{Name: "BE", Quantity: 1,
		Brackets:  []protocol.AtmBracket{{Quantity: 1, StopLossTicks: 8, ProfitTargetTicks: 40}},
		Breakeven: &protocol.AtmBreakeven{Enabled: true, TriggerTicks: 4, PlusTicks: 0}}}})
	require.NoError(t, p.SetPrice("ES", 6000))
	req := esOrder("Sell", "Market", 1, 0, 0) // 1 @ 6000; stop 6002
	req.AtmTemplate = "BE"
	submit(t, p, req)
	require.NoError(t, p.SetPrice("ES", 5999.25)) // 3 ticks
	require.Equal(t, 6002.0, atmOrders(t, p, "Sim101")["Stop1"].StopPrice)
	require.NoError(t, p.SetPrice("ES", 5999)) // 4 ticks: stop to the entry
	require.Equal(t, 6000.0, atmOrders(t, p, "Sim101")["Stop1"].StopPrice)
}

func TestAtmTrailingStop(t *testing.T) {
	p, _ := newSim(t, sim.Options{})
	require.NoError(t, p.SetPrice("ES", 6000))
	req := esOrder("Buy", "Market", 1, 0, 0) // 1 @ 6000.25
	req.AtmTemplate = "ATM Trail"            // stop 12, trail 8 behind in 2-tick steps after 8
	submit(t, p, req)
	stop := func() float64 { return atmOrders(t, p, "Sim101")["Stop1"].StopPrice }
	require.Equal(t, 5997.25, stop())

	for _, step := range []struct {
		price, stop float64
	}{
		{6002, 5997.25},    // 7 ticks in profit: not yet
		{6002.25, 6000.25}, // 8 ticks: best 6002.25, 8 behind is 6000.25 (12 ticks, in 2-tick steps)
		{6002.5, 6000.25},  // 1 tick more: less than a step
		{6002.75, 6000.75}, // 2 ticks more: one step
		{6004, 6001.75},    // 5 ticks more (8 behind is 6002): two whole steps
		{6002.5, 6001.75},  // never back
	} {
		require.NoError(t, p.SetPrice("ES", step.price))
		require.Equal(t, step.stop, stop(), "at %v", step.price)
	}
	require.NoError(t, p.SetPrice("ES", 6001.75))
	o := atmOrders(t, p, "Sim101")
	require.Equal(t, "Filled", o["Stop1"].OrderState)
	require.Equal(t, 6001.75, o["Stop1"].AverageFillPrice)
	require.Equal(t, "Cancelled", o["Target1"].OrderState)
	a, err := p.Account(ctx, "Sim101")
	require.NoError(t, err)
	require.Equal(t, 75.0, a.Item.GrossRealizedProfitLoss, "6 ticks × $12.50")
}
