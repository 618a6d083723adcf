package bridgetest

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
)

// The market every check starts from: the simulator's default accounts, ES
// and NQ of December 2026 priced at round figures (bid and last there, ask
// one tick above).
const (
	acct  = "Sim101"
	acct2 = "Sim102"
	es    = "ES 12-26"
	nq    = "NQ 12-26"
	// esBid is ES's bid and last price, esAsk its ask.
	esBid = 6000.0
	esAsk = 6000.25
	nqBid = 21000.0
	// startingCash is each account's cash before any trade.
	startingCash = sim.DefaultStartingCash
	// commission is the commission of one contract.
	commission = sim.DefaultCommissionPerContract
)

// check is one named behaviour of the contract.
type check struct {
	name string
	run  func(t *testing.T, h Harness)
	// opts are the options of the check's market; the zero value is the
	// simulator's defaults.
	opts sim.Options
	// needs is the capability the check needs, if any: on a platform that
	// lacks it, the check is replaced by the capability's lackingCheck.
	needs Capability
}

// Run runs the contract suite as subtests of t, each on its own harness
// from newHarness and in parallel with the others. A check that needs a
// capability the harness lacks (Harness.Lacks) asserts in its place that
// the platform answers bridge.ErrNotSupported (see Capability).
func Run(t *testing.T, newHarness Factory) {
	for _, group := range suite() {
		for _, c := range group {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, c.opts)
				require.NotNil(t, h.Platform, "the harness has a platform")
				require.NotNil(t, h.Market, "the harness has a market")
				require.NotNil(t, h.Clock, "the harness has a manual clock")
				for _, l := range h.Lacks {
					require.Contains(t, Capabilities, l, "the harness lacks a known capability")
				}
				setPrice(t, h, es, esBid)
				setPrice(t, h, nq, nqBid)
				if c.needs != "" && h.lacks(c.needs) {
					t.Logf("the platform lacks %s: checking that it answers ErrNotSupported instead", c.needs)
					lackingChecks[c.needs](t, h)
					return
				}
				c.run(t, h)
			})
		}
	}
}

// suite returns the contract's checks, by group.
func suite() [][]check {
	return [][]check{
		accountChecks(), orderChecks(), trailingChecks(), changeChecks(), atmChecks(), sessionChecks(), depthChecks(),
		marketChecks(), strategyChecks(), eventChecks(), closeChecks(),
	}
}

// setPrice moves the market of an instrument and waits for the platform
// to see it.
func setPrice(t testing.TB, h Harness, instrument string, last float64) {
	t.Helper()
	require.NoError(t, h.Market.SetPrice(instrument, last))
	h.settle(t)
}

// submit submits an order that must be accepted, and waits for the
// platform to have seen its effects.
func submit(t *testing.T, h Harness, req bridge.OrderRequest) protocol.Order {
	t.Helper()
	o, err := h.Platform.SubmitOrder(t.Context(), req)
	require.NoError(t, err)
	h.settle(t)
	return o
}

func marketOrder(account, action string, qty int) bridge.OrderRequest {
	return bridge.OrderRequest{Account: account, Instrument: es, Action: action,
		OrderType: protocol.OrderTypeMarket, Quantity: qty}
}

func limitOrder(account, action string, qty int, limit float64) bridge.OrderRequest {
	return bridge.OrderRequest{Account: account, Instrument: es, Action: action,
		OrderType: protocol.OrderTypeLimit, Quantity: qty, LimitPrice: limit, TimeInForce: protocol.TimeInForceGtc}
}

func stopOrder(account, action string, qty int, stop float64) bridge.OrderRequest {
	return bridge.OrderRequest{Account: account, Instrument: es, Action: action,
		OrderType: protocol.OrderTypeStopMarket, Quantity: qty, StopPrice: stop, TimeInForce: protocol.TimeInForceGtc}
}

// ordersOf returns an account's orders as the platform lists them.
func ordersOf(t *testing.T, h Harness, account string) []protocol.Order {
	t.Helper()
	h.settle(t)
	os, err := h.Platform.Orders(t.Context(), account)
	require.NoError(t, err)
	return os
}

// orderOf returns one order of an account by id.
func orderOf(t *testing.T, h Harness, account, id string) protocol.Order {
	t.Helper()
	for _, o := range ordersOf(t, h, account) {
		if o.OrderID == id {
			return o
		}
	}
	t.Fatalf("the account lists no order %s", id)
	return protocol.Order{}
}

// namedOrder returns the last order of an account with a name.
func namedOrder(t *testing.T, h Harness, account, name string) protocol.Order {
	t.Helper()
	var found *protocol.Order
	for _, o := range ordersOf(t, h, account) {
		if o.Name == name {
			found = &o
		}
	}
	require.NotNil(t, found, "the account lists no order named %s", name)
	return *found
}

// positionsOf returns an account's positions as the platform lists them.
func positionsOf(t *testing.T, h Harness, account string) []protocol.Position {
	t.Helper()
	h.settle(t)
	ps, err := h.Platform.Positions(t.Context(), account)
	require.NoError(t, err)
	return ps
}

// signed returns an account's signed position in an instrument (0 when
// flat).
func signed(t *testing.T, h Harness, account, instrument string) int {
	t.Helper()
	for _, p := range positionsOf(t, h, account) {
		if p.Instrument == instrument {
			if p.MarketPosition == protocol.MarketPositionShort {
				return -p.Quantity
			}
			return p.Quantity
		}
	}
	return 0
}

// accountOf returns one account as the platform reports it.
func accountOf(t *testing.T, h Harness, account string) protocol.Account {
	t.Helper()
	h.settle(t)
	a, err := h.Platform.Account(t.Context(), account)
	require.NoError(t, err)
	return a
}

// requireReject checks that err is a *bridge.RejectError with a reason
// that repeats none of inputs.
func requireReject(t *testing.T, err error, inputs ...string) {
	t.Helper()
	var re *bridge.RejectError
	require.ErrorAs(t, err, &re)
	require.NotEmpty(t, re.Reason)
	requireNoEcho(t, err, inputs...)
}

// requireNoEcho checks that an error repeats none of the caller's inputs.
func requireNoEcho(t *testing.T, err error, inputs ...string) {
	t.Helper()
	require.Error(t, err)
	for _, in := range inputs {
		require.NotContains(t, err.Error(), in, "errors never repeat the caller's input")
	}
}

// requireIs checks that err wraps target and repeats none of inputs.
func requireIs(t *testing.T, err, target error, inputs ...string) {
	t.Helper()
	require.ErrorIs(t, err, target)
	requireNoEcho(t, err, inputs...)
}

// requireNotRecorded checks that an account has no orders and no
// executions: a refused request left no trace.
func requireNotRecorded(t *testing.T, h Harness, account string) {
	t.Helper()
	require.Empty(t, ordersOf(t, h, account), "a refused order is not recorded")
	exs, err := h.Platform.Executions(t.Context(), account)
	require.NoError(t, err)
	require.Empty(t, exs)
}

// cents rounds a dollar amount to cents, as platforms report them.
func cents(x float64) float64 { return math.Round(x*100) / 100 }

// requireOneOf checks that err matches one of targets.
func requireOneOf(t *testing.T, err error, targets ...error) {
	t.Helper()
	require.Error(t, err)
	for _, target := range targets {
		if errors.Is(err, target) {
			return
		}
	}
	t.Fatalf("the error matches none of %v: %v", targets, err)
}
