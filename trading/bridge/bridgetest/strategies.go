package bridgetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// maCross is the simulator's moving-average crossover class.
const maCross = "SampleMACrossOver"

// strategyChecks cover strategies.
func strategyChecks() []check {
	return []check{
		{name: "StartStrategy/disabled", needs: CapStrategies, run: func(t *testing.T, h Harness) {
			s := start(t, h, bridge.StrategyRequest{Account: acct, Class: "samplemacrossover", Instrument: "ES",
				Mode: protocol.StrategyModeDisabled})
			require.NotEmpty(t, s.ID)
			require.Equal(t, s.ID, s.StrategyID)
			require.Equal(t, maCross, s.Class, "the class's own spelling")
			require.Equal(t, acct, s.Account)
			require.Equal(t, es, s.Instrument, "a root trades the front month")
			require.Equal(t, protocol.PeriodMinute, s.PeriodType, "minute bars by default")
			require.Equal(t, 1, s.Period)
			require.Equal(t, protocol.StrategyStateDisabled, s.State)
			require.False(t, s.Enabled)
			require.False(t, s.Terminal)
			require.Equal(t, protocol.MarketPositionFlat, s.MarketPosition)
			require.Zero(t, s.Quantity)
			require.NotEmpty(t, s.StartedAt)
			require.Empty(t, s.EndedAt)
			require.Equal(t, map[string]float64{"Fast": 10, "Slow": 25, "Quantity": 1}, numbers(t, s.Parameters),
				"missing parameters take their defaults")
		}},
		{name: "StartStrategy/realtime starts enabled", needs: CapStrategies, run: func(t *testing.T, h Harness) {
			s := start(t, h, bridge.StrategyRequest{Account: acct, Class: maCross, Instrument: es,
				Mode: protocol.StrategyModeRealtime, Parameters: map[string]any{"fast": 5, "Slow": 20.0}})
			require.Equal(t, protocol.StrategyStateEnabled, s.State)
			require.True(t, s.Enabled)
			require.Equal(t, map[string]float64{"Fast": 5, "Slow": 20, "Quantity": 1}, numbers(t, s.Parameters))
		}},
		{name: "StartStrategy/refusals", needs: CapStrategies, run: func(t *testing.T, h Harness) {
			ok := bridge.StrategyRequest{Account: acct, Class: maCross, Instrument: es}
			req := ok
			req.Class = "NoSuchClass"
			_, err := h.Platform.StartStrategy(t.Context(), req)
			requireIs(t, err, bridge.ErrStrategyClass, "NoSuchClass")
			req = ok
			req.Account = "NoSuchAcct"
			_, err = h.Platform.StartStrategy(t.Context(), req)
			requireIs(t, err, bridge.ErrAccountNotFound, "NoSuchAcct")
			req = ok
			req.Instrument = "QQ 12-26"
			_, err = h.Platform.StartStrategy(t.Context(), req)
			requireIs(t, err, bridge.ErrInstrumentUnknown, "QQ")
			for _, params := range []map[string]any{
				{"Fast": "ten"}, {"Fast": 2.5}, {"Fast": 0}, {"Fast": 30, "Slow": 20}, {"Nope": 1},
			} {
				req = ok
				req.Parameters = params
				_, err = h.Platform.StartStrategy(t.Context(), req)
				var re *bridge.RequestError
				require.ErrorAs(t, err, &re, "%v", params)
				requireNoEcho(t, err, "ten", "Nope")
			}
			req = ok
			req.Mode = "Sometimes"
			_, err = h.Platform.StartStrategy(t.Context(), req)
			var re *bridge.RequestError
			require.ErrorAs(t, err, &re)
			requireNoEcho(t, err, "Sometimes")
			ss, err := h.Platform.Strategies(t.Context(), acct)
			require.NoError(t, err)
			require.Empty(t, ss, "a refused strategy does not start")
		}},
		{name: "SetStrategyState/enable, disable, close", needs: CapStrategies, run: func(t *testing.T, h Harness) {
			s := start(t, h, bridge.StrategyRequest{Account: acct, Class: maCross, Instrument: es,
				Mode: protocol.StrategyModeDisabled})
			for _, step := range []struct {
				action bridge.StrategyAction
				state  string
			}{
				{bridge.StrategyEnable, protocol.StrategyStateEnabled},
				{bridge.StrategyEnable, protocol.StrategyStateEnabled}, // again: no change
				{bridge.StrategyDisable, protocol.StrategyStateDisabled},
				{bridge.StrategyDisable, protocol.StrategyStateDisabled},
				{bridge.StrategyClose, protocol.StrategyStateClosed},
			} {
				got, err := h.Platform.SetStrategyState(t.Context(), acct, s.ID, step.action)
				require.NoError(t, err, step.action)
				require.Equal(t, s.ID, got.ID)
				require.Equal(t, step.state, got.State, step.action)
				require.Equal(t, step.state == protocol.StrategyStateEnabled, got.Enabled)
			}
			closed := strategyOf(t, h, acct, s.ID)
			require.Equal(t, protocol.StrategyStateClosed, closed.State)
			require.True(t, closed.Terminal)
			require.NotEmpty(t, closed.EndedAt)
			for _, action := range []bridge.StrategyAction{bridge.StrategyEnable, bridge.StrategyDisable, bridge.StrategyClose} {
				_, err := h.Platform.SetStrategyState(t.Context(), acct, s.ID, action)
				requireIs(t, err, bridge.ErrStrategyTerminal)
			}
		}},
		{name: "SetStrategyState/unknown id is ErrStrategyNotFound", needs: CapStrategies, run: func(t *testing.T, h Harness) {
			_, err := h.Platform.SetStrategyState(t.Context(), acct, "no-such-strategy", bridge.StrategyEnable)
			requireIs(t, err, bridge.ErrStrategyNotFound, "no-such-strategy")
			s := start(t, h, bridge.StrategyRequest{Account: acct, Class: maCross, Instrument: es,
				Mode: protocol.StrategyModeDisabled})
			_, err = h.Platform.SetStrategyState(t.Context(), acct2, s.ID, bridge.StrategyEnable)
			requireIs(t, err, bridge.ErrStrategyNotFound)
			require.Equal(t, protocol.StrategyStateDisabled, strategyOf(t, h, acct, s.ID).State)
		}},
		{name: "Strategies/start order, terminal ones included", needs: CapStrategies, run: func(t *testing.T, h Harness) {
			a := start(t, h, bridge.StrategyRequest{Account: acct, Class: maCross, Instrument: es, Mode: protocol.StrategyModeDisabled})
			b := start(t, h, bridge.StrategyRequest{Account: acct, Class: "SampleRsi", Instrument: "NQ", Mode: protocol.StrategyModeDisabled})
			c := start(t, h, bridge.StrategyRequest{Account: acct2, Class: maCross, Instrument: es, Mode: protocol.StrategyModeDisabled})
			require.NotEqual(t, a.ID, b.ID)
			_, err := h.Platform.SetStrategyState(t.Context(), acct, a.ID, bridge.StrategyClose)
			require.NoError(t, err)
			ss := strategiesOf(t, h, acct)
			require.Len(t, ss, 2)
			require.Equal(t, []string{a.ID, b.ID}, []string{ss[0].ID, ss[1].ID})
			require.Equal(t, protocol.StrategyStateClosed, ss[0].State)
			require.Equal(t, nq, ss[1].Instrument)
			require.Equal(t, "SampleRsi", ss[1].Class)
			other := strategiesOf(t, h, acct2)
			require.Len(t, other, 1)
			require.Equal(t, c.ID, other[0].ID)
			_, err = h.Platform.Strategies(t.Context(), "NoSuchAcct")
			requireIs(t, err, bridge.ErrAccountNotFound, "NoSuchAcct")
		}},
		{name: "SetStrategyState/close flattens the strategy's own position", needs: CapStrategies, run: func(t *testing.T, h Harness) {
			s := start(t, h, bridge.StrategyRequest{Account: acct, Class: maCross, Instrument: es,
				Parameters: map[string]any{"Fast": 1, "Slow": 2}})
			submit(t, h, marketOrder(acct, protocol.ActionSell, 3)) // the trader's own position
			// A bar closing low, then one closing high: the fast average
			// crosses above the slow one, and the strategy goes long 1.
			closeBar(t, h, 5950)
			closeBar(t, h, 6050)
			got := strategyOf(t, h, acct, s.ID)
			require.Equal(t, protocol.MarketPositionLong, got.MarketPosition)
			require.Equal(t, 1, got.Quantity)
			require.Equal(t, -2, signed(t, h, acct, es), "the account nets the strategy's 1 with the trader's -3")
			for _, o := range ordersOf(t, h, acct) {
				if o.StrategyTag == s.ID {
					require.Equal(t, protocol.OrderTypeMarket, o.OrderType)
				}
			}

			got, err := h.Platform.SetStrategyState(t.Context(), acct, s.ID, bridge.StrategyClose)
			require.NoError(t, err)
			require.Equal(t, protocol.StrategyStateClosed, got.State)
			require.Equal(t, protocol.MarketPositionFlat, strategyOf(t, h, acct, s.ID).MarketPosition)
			require.Equal(t, -3, signed(t, h, acct, es), "only the strategy's own contract was closed")
			closer := namedOrder(t, h, acct, "Close position")
			require.Equal(t, s.ID, closer.StrategyTag)
			require.Equal(t, protocol.ActionSell, closer.OrderAction)
			require.Equal(t, 1, closer.Quantity)
		}},
	}
}

// start starts a strategy that must start.
func start(t *testing.T, h Harness, req bridge.StrategyRequest) protocol.Strategy {
	t.Helper()
	s, err := h.Platform.StartStrategy(t.Context(), req)
	require.NoError(t, err)
	h.settle(t)
	return s
}

// strategiesOf lists an account's strategies.
func strategiesOf(t *testing.T, h Harness, account string) []protocol.Strategy {
	t.Helper()
	h.settle(t)
	ss, err := h.Platform.Strategies(t.Context(), account)
	require.NoError(t, err)
	return ss
}

// strategyOf returns one strategy of an account.
func strategyOf(t *testing.T, h Harness, account, id string) protocol.Strategy {
	t.Helper()
	for _, s := range strategiesOf(t, h, account) {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("the account lists no strategy %s", id)
	return protocol.Strategy{}
}

// closeBar ends the minute bar in progress at price: the clock goes to the
// minute's last half second, where the market is set to price (the bar's
// last print), then to the next minute, where the market steps and
// strategies see the bar closed.
func closeBar(t *testing.T, h Harness, price float64) {
	t.Helper()
	end := h.Clock.Now().Truncate(time.Minute).Add(time.Minute)
	h.Clock.Set(end.Add(-500 * time.Millisecond))
	require.NoError(t, h.Market.SetPrice(es, price))
	h.Clock.Set(end)
	require.NoError(t, h.Market.Step(t.Context()))
	h.settle(t)
}

// numbers reads strategy parameters as numbers, whichever number type the
// platform reports them in.
func numbers(t *testing.T, params map[string]any) map[string]float64 {
	t.Helper()
	out := make(map[string]float64, len(params))
	for k, v := range params {
		switch x := v.(type) {
		case int:
			out[k] = float64(x)
		case int64:
			out[k] = float64(x)
		case float64:
			out[k] = x
		case json.Number:
			f, err := x.Float64()
			require.NoError(t, err)
			out[k] = f
		default:
			t.Fatalf("parameter %s is a %T, not a number", k, v)
		}
	}
	return out
}
