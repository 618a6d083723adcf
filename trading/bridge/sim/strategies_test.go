package sim_test

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
)

// closeBar ends the minute bar in progress at price: the clock goes to the
// minute's last half second, where the market is set to price (the bar's
// last print), then to the next minute, where the simulator steps and
// strategies see the bar closed.
func closeBar(t *testing.T, p *sim.Platform, clock *sim.ManualClock, instrument string, price float64) {
	t.Helper()
	end := clock.Now().Truncate(time.Minute).Add(time.Minute)
	clock.Set(end.Add(-500 * time.Millisecond))
	require.NoError(t, p.SetPrice(instrument, price))
	clock.Set(end)
	require.NoError(t, p.Step(ctx))
}

func strategyByID(t *testing.T, p *sim.Platform, account, id string) protocol.Strategy {
	t.Helper()
	ss, err := p.Strategies(ctx, account)
	require.NoError(t, err)
	for _, s := range ss {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no strategy %s", id)
	return protocol.Strategy{}
}

// tagged returns the account's orders of a strategy, as "Action Qty Name".
func tagged(t *testing.T, p *sim.Platform, account, id string) []string {
	t.Helper()
	os, err := p.Orders(ctx, account)
	require.NoError(t, err)
	out := []string{}
	for _, o := range os {
		if o.StrategyTag == id {
			require.Equal(t, "Market", o.OrderType)
			require.Equal(t, "Filled", o.OrderState)
			out = append(out, o.OrderAction+" "+strconv.Itoa(o.Quantity)+" "+o.Name)
		}
	}
	return out
}

// strategyFills returns the strategy's signed fills (quantity, price).
func strategyFills(t *testing.T, p *sim.Platform, account, id string) (qty []int, price []float64) {
	t.Helper()
	os, err := p.Orders(ctx, account)
	require.NoError(t, err)
	mine := map[string]bool{}
	for _, o := range os {
		if o.StrategyTag == id {
			mine[o.OrderID] = true
		}
	}
	execs, err := p.Executions(ctx, account)
	require.NoError(t, err)
	for _, e := range execs {
		if mine[e.OrderID] {
			q := e.Quantity
			if e.MarketPosition == "Short" {
				q = -q
			}
			qty, price = append(qty, q), append(price, e.Price)
		}
	}
	return qty, price
}

func TestMACrossOverTrades(t *testing.T) {
	p, clock := newSim(t, sim.Options{})
	ch := events(t, p)
	s, err := p.StartStrategy(ctx, bridge.StrategyRequest{Account: "Sim101", Class: "samplemacrossover",
		Instrument: "ES", Mode: "disabled", PeriodType: "Minute", Period: 1,
		Parameters: map[string]any{"fast": 2, "Slow": 3.0, "QUANTITY": json.Number("2")}})
	require.NoError(t, err)
	require.Equal(t, protocol.Strategy{ID: "sim-strat-1", StrategyID: "sim-strat-1", Class: "SampleMACrossOver",
		Account: "Sim101", Instrument: "ES 12-26", PeriodType: "minute", Period: 1,
		Parameters: map[string]any{"Fast": 2, "Slow": 3, "Quantity": 2},
		State:      "Disabled", MarketPosition: "Flat", StartedAt: "2026-10-05T14:30:00.000Z"}, s)
	id := s.ID

	// Flat bars settle the averages; disabled, the strategy places nothing.
	for range 4 {
		closeBar(t, p, clock, "ES", 6000)
	}
	s, err = p.SetStrategyState(ctx, "Sim101", id, bridge.StrategyEnable)
	require.NoError(t, err)
	require.Equal(t, "Enabled", s.State)
	require.True(t, s.Enabled)
	require.Empty(t, tagged(t, p, "Sim101", id))

	// The fast average crosses above the slow one: long 2.
	closeBar(t, p, clock, "ES", 6010)
	require.Equal(t, []string{"Buy 2 Long"}, tagged(t, p, "Sim101", id))
	s = strategyByID(t, p, "Sim101", id)
	require.Equal(t, "Long", s.MarketPosition)
	require.Equal(t, 2, s.Quantity)
	pos, ok := position(t, p, "Sim101", "ES 12-26")
	require.True(t, ok)
	require.Equal(t, s.AveragePrice, pos.AveragePrice)

	// Still above: nothing. Then it crosses below: the strategy reverses.
	closeBar(t, p, clock, "ES", 6020)
	require.Len(t, tagged(t, p, "Sim101", id), 1)
	closeBar(t, p, clock, "ES", 5990)
	require.Equal(t, []string{"Buy 2 Long", "Sell 2 Close position", "Sell 2 Short"}, tagged(t, p, "Sim101", id))
	qty, price := strategyFills(t, p, "Sim101", id)
	require.Equal(t, []int{2, -2, -2}, qty)
	s = strategyByID(t, p, "Sim101", id)
	require.Equal(t, "Short", s.MarketPosition)
	require.Equal(t, 2, s.Quantity)
	require.Equal(t, price[2], s.AveragePrice)
	require.InDelta(t, (price[1]-price[0])*2*50-6*sim.DefaultCommissionPerContract, s.RealizedProfitLoss, 1e-6,
		"realized on its own fills, net of the commission of every fill")
	q, err := p.Quote(ctx, "ES")
	require.NoError(t, err)
	require.InDelta(t, (price[2]-q.Last)*2*50, s.UnrealizedProfitLoss, 1e-6)

	// Disabled, it keeps its position and places nothing on a new cross.
	s, err = p.SetStrategyState(ctx, "Sim101", id, bridge.StrategyDisable)
	require.NoError(t, err)
	require.Equal(t, "Disabled", s.State)
	require.False(t, s.Enabled)
	closeBar(t, p, clock, "ES", 6050)
	closeBar(t, p, clock, "ES", 6060)
	require.Len(t, tagged(t, p, "Sim101", id), 3)
	require.Equal(t, "Short", strategyByID(t, p, "Sim101", id).MarketPosition)

	// The trader holds a contract of their own in the same instrument;
	// closing the strategy closes the strategy's share only.
	submit(t, p, market("Sim101", "ES", "Buy", 3)) // account: -2 + 3 = long 1
	s, err = p.SetStrategyState(ctx, "Sim101", id, bridge.StrategyClose)
	require.NoError(t, err)
	require.Equal(t, "Closed", s.State)
	require.True(t, s.Terminal)
	require.False(t, s.Enabled)
	require.Equal(t, "Flat", s.MarketPosition)
	require.Zero(t, s.Quantity)
	require.Zero(t, s.UnrealizedProfitLoss)
	require.Equal(t, formatNow(clock), s.EndedAt)
	require.Equal(t, []string{"Buy 2 Long", "Sell 2 Close position", "Sell 2 Short", "Buy 2 Close position"},
		tagged(t, p, "Sim101", id))
	pos, ok = position(t, p, "Sim101", "ES 12-26")
	require.True(t, ok)
	require.Equal(t, "Long", pos.MarketPosition, "the trader's own 3 contracts remain")
	require.Equal(t, 3, pos.Quantity)
	qty, price = strategyFills(t, p, "Sim101", id)
	require.Equal(t, []int{2, -2, -2, 2}, qty)
	require.InDelta(t, (price[1]-price[0])*2*50+(price[2]-price[3])*2*50-8*sim.DefaultCommissionPerContract,
		s.RealizedProfitLoss, 1e-6)

	// Terminal: nothing changes it any more.
	for _, a := range []bridge.StrategyAction{bridge.StrategyEnable, bridge.StrategyDisable, bridge.StrategyClose} {
		_, err = p.SetStrategyState(ctx, "Sim101", id, a)
		require.ErrorIs(t, err, bridge.ErrStrategyTerminal, a)
	}
	closeBar(t, p, clock, "ES", 5900)
	require.Len(t, tagged(t, p, "Sim101", id), 4)
	ss, err := p.Strategies(ctx, "Sim101")
	require.NoError(t, err)
	require.Len(t, ss, 1, "terminal strategies are listed")

	// Every state change was published.
	var states []string
	for _, ev := range pending(ch) {
		if ev.Kind == bridge.EventStrategy {
			require.Equal(t, id, ev.Strategy.ID)
			states = append(states, ev.Strategy.State+" "+ev.Strategy.MarketPosition)
		}
	}
	require.Equal(t, []string{"Disabled Flat", "Enabled Flat", "Enabled Long", "Enabled Flat", "Enabled Short",
		"Disabled Short", "Disabled Flat", "Closed Flat"}, states)
}

func formatNow(c *sim.ManualClock) string {
	return c.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

func TestRsiTrades(t *testing.T) {
	p, clock := newSim(t, sim.Options{})
	s, err := p.StartStrategy(ctx, bridge.StrategyRequest{Account: "Sim102", Class: sim.StrategyRsi,
		Instrument: "CL", Mode: "Disabled", Parameters: map[string]any{"Period": 2}})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"Period": 2, "Upper": 70, "Lower": 30, "Quantity": 1}, s.Parameters)
	require.Equal(t, "minute", s.PeriodType, "minute bars by default")
	require.Equal(t, 1, s.Period)
	id := s.ID

	// A steady fall takes the RSI to the floor.
	price := 70.0
	for range 10 {
		price -= 0.2
		closeBar(t, p, clock, "CL", price)
	}
	_, err = p.SetStrategyState(ctx, "Sim102", id, bridge.StrategyEnable)
	require.NoError(t, err)
	// A rise takes it back above 30: long.
	closeBar(t, p, clock, "CL", price+0.8)
	require.Equal(t, []string{"Buy 1 Long"}, tagged(t, p, "Sim102", id))
	// Higher still, then a fall takes it back below 70: short.
	closeBar(t, p, clock, "CL", price+1.6)
	closeBar(t, p, clock, "CL", price+2.4)
	require.Len(t, tagged(t, p, "Sim102", id), 1)
	closeBar(t, p, clock, "CL", price+1.6)
	require.Equal(t, []string{"Buy 1 Long", "Sell 1 Close position", "Sell 1 Short"}, tagged(t, p, "Sim102", id))
	require.Equal(t, "Short", strategyByID(t, p, "Sim102", id).MarketPosition)
	ss, err := p.Strategies(ctx, "Sim101")
	require.NoError(t, err)
	require.Empty(t, ss, "another account's strategies are not listed")
}

func TestStrategyActsWhenTheMarketOpens(t *testing.T) {
	p, clock := newSim(t, sim.Options{})
	clock.Set(time.Date(2026, time.October, 6, 20, 55, 0, 0, time.UTC)) // Tuesday 16:55 New York
	s, err := p.StartStrategy(ctx, bridge.StrategyRequest{Account: "Sim101", Class: sim.StrategyMACrossOver,
		Instrument: "NQ", Mode: "disabled", Parameters: map[string]any{"Fast": 1, "Slow": 2}})
	require.NoError(t, err)
	id := s.ID
	for range 4 {
		closeBar(t, p, clock, "NQ", 21000)
	}
	_, err = p.SetStrategyState(ctx, "Sim101", id, bridge.StrategyEnable)
	require.NoError(t, err)
	// The session's last bar (16:59) crosses up; it closes with the market.
	closeBar(t, p, clock, "NQ", 21050)
	require.Equal(t, time.Date(2026, time.October, 6, 21, 0, 0, 0, time.UTC), clock.Now())
	require.Empty(t, tagged(t, p, "Sim101", id), "the market is closed")
	clock.Advance(59 * time.Minute)
	require.NoError(t, p.Step(ctx))
	require.Empty(t, tagged(t, p, "Sim101", id))
	// At 18:00 the strategy acts on the bar that closed the session.
	clock.Advance(time.Minute)
	require.NoError(t, p.Step(ctx))
	require.Equal(t, []string{"Buy 1 Long"}, tagged(t, p, "Sim101", id))

	// Closing a strategy that holds a position needs the market.
	clock.Advance(23 * time.Hour) // Wednesday 17:00, the daily break
	_, err = p.SetStrategyState(ctx, "Sim101", id, bridge.StrategyClose)
	var rej *bridge.RejectError
	require.ErrorAs(t, err, &rej)
	require.Equal(t, "Enabled", strategyByID(t, p, "Sim101", id).State, "nothing changed")
	clock.Advance(time.Hour)
	s, err = p.SetStrategyState(ctx, "Sim101", id, bridge.StrategyClose)
	require.NoError(t, err)
	require.Equal(t, "Closed", s.State)
	require.Equal(t, "2026-10-07T22:00:00.000Z", s.EndedAt)
	_, ok := position(t, p, "Sim101", "NQ 12-26")
	require.False(t, ok, "flat")

	// A flat strategy closes while the market is closed.
	s, err = p.StartStrategy(ctx, bridge.StrategyRequest{Account: "Sim101", Class: sim.StrategyMACrossOver, Instrument: "NQ"})
	require.NoError(t, err)
	require.Equal(t, "sim-strat-2", s.ID)
	require.Equal(t, "Enabled", s.State, "realtime by default")
	clock.Advance(23 * time.Hour)
	s, err = p.SetStrategyState(ctx, "Sim101", s.ID, bridge.StrategyClose)
	require.NoError(t, err)
	require.Equal(t, "Closed", s.State)
}

func TestStrategyTracksItsOwnFills(t *testing.T) {
	p, clock := newSim(t, sim.Options{})
	s, err := p.StartStrategy(ctx, bridge.StrategyRequest{Account: "Sim101", Class: sim.StrategyMACrossOver,
		Instrument: "MNQ", PeriodType: "second", Period: 30, Parameters: map[string]any{"Fast": 3, "Slow": 8, "Quantity": 3}})
	require.NoError(t, err)
	id := s.ID
	// Three hours of the random walk, stepped every ten seconds; the trader
	// trades the same instrument now and then.
	for i := range 3 * 360 {
		clock.Advance(10 * time.Second)
		require.NoError(t, p.Step(ctx))
		if i%100 == 0 {
			submit(t, p, market("Sim101", "MNQ", "Buy", 1))
		}
	}
	qty, price := strategyFills(t, p, "Sim101", id)
	require.Greater(t, len(qty), 4, "the walk crosses")
	pos, value, realized := 0, 0.0, 0.0
	for i, q := range qty {
		require.Contains(t, []int{3, -3}, q)
		realized -= 3 * sim.DefaultCommissionPerContract
		if pos != 0 && (pos > 0) != (q > 0) {
			realized += (price[i] - value) * float64(pos) * 2 // MNQ: $2 a point
			pos = 0
			continue
		}
		pos, value = pos+q, price[i]
	}
	s = strategyByID(t, p, "Sim101", id)
	require.Equal(t, abs(pos), s.Quantity)
	require.InDelta(t, realized, s.RealizedProfitLoss, 0.011)
	require.Equal(t, "Enabled", s.State)
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func TestStartStrategyErrors(t *testing.T) {
	p, _ := newSim(t, sim.Options{})
	good := bridge.StrategyRequest{Account: "Sim101", Class: sim.StrategyMACrossOver, Instrument: "ES"}
	for _, tc := range []struct {
		name   string
		change func(r *bridge.StrategyRequest)
		want   error
	}{
		{"unknown account", func(r *bridge.StrategyRequest) { r.Account = "Nope" }, bridge.ErrAccountNotFound},
		{"unknown class", func(r *bridge.StrategyRequest) { r.Class = "Martingale" }, bridge.ErrStrategyClass},
		{"unknown instrument", func(r *bridge.StrategyRequest) { r.Instrument = "ZZ" }, bridge.ErrInstrumentUnknown},
		{"bad period type", func(r *bridge.StrategyRequest) { r.PeriodType = "hour" }, sim.ErrBadStrategyRequest},
		{"negative period", func(r *bridge.StrategyRequest) { r.Period = -5 }, sim.ErrBadStrategyRequest},
		{"bad mode", func(r *bridge.StrategyRequest) { r.Mode = "Historical" }, sim.ErrBadStrategyRequest},
		{"unknown parameter", func(r *bridge.StrategyRequest) { r.Parameters = map[string]any{"Period": 3} },
			sim.ErrBadStrategyRequest},
		{"text parameter", func(r *bridge.StrategyRequest) { r.Parameters = map[string]any{"Fast": "3"} },
			sim.ErrBadStrategyRequest},
		{"fractional parameter", func(r *bridge.StrategyRequest) { r.Parameters = map[string]any{"Fast": 2.5} },
			sim.ErrBadStrategyRequest},
		{"boolean parameter", func(r *bridge.StrategyRequest) { r.Parameters = map[string]any{"Quantity": true} },
			sim.ErrBadStrategyRequest},
		{"parameter out of range", func(r *bridge.StrategyRequest) { r.Parameters = map[string]any{"Quantity": 0} },
			sim.ErrBadStrategyRequest},
		{"fast not below slow", func(r *bridge.StrategyRequest) { r.Parameters = map[string]any{"Fast": 30} },
			sim.ErrBadStrategyRequest},
		{"parameter twice", func(r *bridge.StrategyRequest) { r.Parameters = map[string]any{"Fast": 3, "fast": 3} },
			sim.ErrBadStrategyRequest},
		{"rsi bounds crossed", func(r *bridge.StrategyRequest) {
			r.Class, r.Parameters = sim.StrategyRsi, map[string]any{"Lower": 80}
		}, sim.ErrBadStrategyRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := good
			tc.change(&req)
			_, err := p.StartStrategy(ctx, req)
			require.ErrorIs(t, err, tc.want)
			for _, word := range []string{"Martingale", "ZZ", "hour", "Historical"} {
				require.NotContains(t, err.Error(), word, "errors do not repeat the input")
			}
		})
	}
	ss, err := p.Strategies(ctx, "Sim101")
	require.NoError(t, err)
	require.Empty(t, ss, "refused strategies are not recorded")
	_, err = p.Strategies(ctx, "Nope")
	require.ErrorIs(t, err, bridge.ErrAccountNotFound)

	s, err := p.StartStrategy(ctx, good)
	require.NoError(t, err)
	require.Equal(t, "sim-strat-1", s.ID, "ids count started strategies only")
	_, err = p.SetStrategyState(ctx, "Sim102", s.ID, bridge.StrategyDisable)
	require.ErrorIs(t, err, bridge.ErrStrategyNotFound, "another account's strategy")
	_, err = p.SetStrategyState(ctx, "Sim101", "sim-strat-9", bridge.StrategyDisable)
	require.ErrorIs(t, err, bridge.ErrStrategyNotFound)
	_, err = p.SetStrategyState(ctx, "Nope", s.ID, bridge.StrategyDisable)
	require.ErrorIs(t, err, bridge.ErrAccountNotFound)
	_, err = p.SetStrategyState(ctx, "Sim101", s.ID, "pause")
	require.ErrorIs(t, err, sim.ErrBadStrategyRequest)
	// Enabling an enabled strategy changes nothing.
	again, err := p.SetStrategyState(ctx, "Sim101", s.ID, bridge.StrategyEnable)
	require.NoError(t, err)
	require.Equal(t, s, again)
}
