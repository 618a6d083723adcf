package bridgetest

import (
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// Capability names a family of primitives of bridge.Platform that a
// platform may lack (a broker reached over its API has no NinjaTrader
// strategies, ATM templates or bars). A harness lists what its platform
// lacks in Harness.Lacks; the suite then asserts, in place of each check
// that needs the capability, that the platform says so: the primitive
// answers an error matching bridge.ErrNotSupported (a
// *bridge.NotSupportedError naming what is missing) that repeats none of
// the caller's input, and nothing is recorded. A check is never skipped.
type Capability string

// Capabilities.
const (
	// CapStrategies: Strategies, StartStrategy and SetStrategyState. A
	// platform that lacks it answers ErrNotSupported to all three.
	CapStrategies Capability = "strategies"
	// CapATM: ATM templates. A platform that lacks it lists no templates
	// (AtmTemplates answers an empty list), and answers ErrNotSupported to
	// an order naming one (OrderRequest.AtmTemplate).
	CapATM Capability = "atm"
	// CapBars: historical bars. A platform that lacks it answers
	// ErrNotSupported to Bars.
	CapBars Capability = "bars"
	// CapOCOGroups: OCO groups joined one order at a time, through
	// SubmitOrder with OrderRequest.Oco set. A platform that lacks it
	// answers ErrNotSupported to such an order and records nothing; it
	// may place OCO pairs together (bridge.PairSubmitter).
	CapOCOGroups Capability = "oco-groups"
	// CapTriggerState: telling a stop-limit order whose stop was reached
	// (Working) from one still waiting for it (Accepted). A platform that
	// lacks it (a broker whose order records do not say) may report a
	// triggered stop-limit Accepted; the order still triggers, and fills
	// at its limit.
	CapTriggerState Capability = "trigger-state"
	// CapTrailingStops: the trailing order types, TrailingStop and
	// TrailingStopLimit (see bridge.OrderRequest). A platform that lacks
	// them answers ErrNotSupported to a trailing order and records
	// nothing.
	CapTrailingStops Capability = "trailing-stops"
)

// Capabilities lists every Capability.
var Capabilities = []Capability{CapStrategies, CapATM, CapBars, CapOCOGroups, CapTriggerState, CapTrailingStops}

// lacks reports whether the harness's platform lacks c.
func (h Harness) lacks(c Capability) bool { return slices.Contains(h.Lacks, c) }

// lackingChecks are the checks that replace a check needing a capability
// the platform lacks: each asserts that the platform says it lacks it.
var lackingChecks = map[Capability]func(t *testing.T, h Harness){
	CapTriggerState: func(t *testing.T, h Harness) {
		o := submit(t, h, bridge.OrderRequest{Account: acct, Instrument: es, Action: protocol.ActionBuy,
			OrderType: protocol.OrderTypeStopLimit, Quantity: 1, StopPrice: 6010, LimitPrice: 6011,
			TimeInForce: protocol.TimeInForceGtc})
		require.Equal(t, protocol.OrderStateAccepted, o.OrderState)
		setPrice(t, h, es, 6015) // through the stop and past the limit
		o = orderOf(t, h, acct, o.OrderID)
		require.Contains(t, []string{protocol.OrderStateAccepted, protocol.OrderStateWorking}, o.OrderState,
			"triggered, the limit not marketable: still working, whichever state names it")
		setPrice(t, h, es, 6010.5) // the ask comes back to 6010.75
		o = orderOf(t, h, acct, o.OrderID)
		require.Equal(t, protocol.OrderStateFilled, o.OrderState)
		require.Equal(t, 6010.75, o.AverageFillPrice)
	},
	CapStrategies: func(t *testing.T, h Harness) {
		const class, id = "SecretClass9", "strat-x9"
		_, err := h.Platform.Strategies(t.Context(), acct)
		requireNotSupported(t, err, acct)
		_, err = h.Platform.StartStrategy(t.Context(), bridge.StrategyRequest{Account: acct, Class: class, Instrument: es,
			Mode: protocol.StrategyModeRealtime, Parameters: map[string]any{"Fast": 3}})
		requireNotSupported(t, err, acct, class)
		_, err = h.Platform.StartStrategy(t.Context(), bridge.StrategyRequest{Account: acct, Class: maCross, Instrument: es})
		requireNotSupported(t, err, acct, maCross)
		for _, action := range []bridge.StrategyAction{bridge.StrategyEnable, bridge.StrategyDisable, bridge.StrategyClose} {
			_, err = h.Platform.SetStrategyState(t.Context(), acct, id, action)
			requireNotSupported(t, err, acct, id)
		}
		requireNotRecorded(t, h, acct)
		require.Empty(t, positionsOf(t, h, acct))
	},
	CapATM: func(t *testing.T, h Harness) {
		ts, err := h.Platform.AtmTemplates(t.Context())
		require.NoError(t, err, "a platform without ATM templates lists none")
		require.Empty(t, ts)
		for _, template := range []string{"ATM 1 Target", "Secret Template 7"} {
			for _, req := range []bridge.OrderRequest{marketOrder(acct, protocol.ActionBuy, 1), limitOrder(acct, protocol.ActionSell, 2, 6010)} {
				req.AtmTemplate = template
				_, err := h.Platform.SubmitOrder(t.Context(), req)
				requireNotSupported(t, err, template, "6010")
			}
		}
		requireNotRecorded(t, h, acct)
		require.Empty(t, positionsOf(t, h, acct))
	},
	CapBars: func(t *testing.T, h Harness) {
		for _, req := range []bridge.BarsRequest{
			{Instrument: "ES", PeriodType: protocol.PeriodMinute, Period: 1, DaysBack: 1},
			{Instrument: "esz26", PeriodType: protocol.PeriodDay, Period: 3, Limit: 77},
		} {
			_, err := h.Platform.Bars(t.Context(), req)
			requireNotSupported(t, err, "esz26", "77")
		}
	},
	CapTrailingStops: func(t *testing.T, h Harness) {
		for _, req := range []bridge.OrderRequest{
			trailingStop(acct, protocol.ActionSell, 1, 4.75, 0),
			trailingStop(acct, protocol.ActionSell, 2, 4.75, 5993.25),
			trailingStopLimit(acct, protocol.ActionBuy, 1, 3.5, 6003.25, 6004.25),
			{Account: acct, Instrument: es, Action: "bUY", OrderType: "trailingstop", Quantity: 1, TrailDistance: 4.75},
		} {
			_, err := h.Platform.SubmitOrder(t.Context(), req)
			requireNotSupported(t, err, "4.75", "5993.25", "6003.25", "6004.25", "3.5")
		}
		requireNotRecorded(t, h, acct)
		require.Empty(t, positionsOf(t, h, acct))
	},
	CapOCOGroups: func(t *testing.T, h Harness) {
		const group = "grp-secret-5"
		tp, sl := limitOrder(acct, protocol.ActionSell, 1, 6010), stopOrder(acct, protocol.ActionSell, 1, 5990)
		mkt := marketOrder(acct, protocol.ActionBuy, 1)
		for _, req := range []bridge.OrderRequest{tp, sl, mkt} {
			req.Oco = group
			_, err := h.Platform.SubmitOrder(t.Context(), req)
			requireNotSupported(t, err, group, "6010", "5990")
		}
		requireNotRecorded(t, h, acct)
		require.Empty(t, positionsOf(t, h, acct))
	},
}

// requireNotSupported checks that err says the platform lacks a primitive:
// it matches bridge.ErrNotSupported, is a *bridge.NotSupportedError naming
// what is missing, and repeats none of inputs.
func requireNotSupported(t *testing.T, err error, inputs ...string) {
	t.Helper()
	require.ErrorIs(t, err, bridge.ErrNotSupported)
	var ne *bridge.NotSupportedError
	require.True(t, errors.As(err, &ne), "a *bridge.NotSupportedError, got %T", err)
	require.NotEmpty(t, ne.What, "the error names what the platform lacks")
	requireNoEcho(t, err, inputs...)
}
