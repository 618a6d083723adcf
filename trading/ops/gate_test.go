package ops

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// fakeGate refuses by a fixed verdict, the same for every account and
// instrument, and records the sources it was asked about.
type fakeGate struct {
	verdict func(src Source) Verdict
	asked   []Source
}

func (g *fakeGate) Check(_, _ string, src Source) Verdict {
	g.asked = append(g.asked, src)
	return g.verdict(src)
}

var (
	killBlock   = &Block{Rule: RuleKillSwitch, Reason: "the kill switch is on"}
	signalBlock = &Block{Rule: RuleBlockSignals, Reason: "the account's monitor refuses orders from the API"}
)

func entriesRefused(Source) Verdict { return Verdict{Entries: killBlock} }

func TestOpens(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cur, delta int
		want       bool
	}{
		{0, 1, true}, {0, -1, true},
		{2, 1, true}, {-2, -1, true}, // adds
		{2, -1, false}, {2, -2, false}, {-2, 2, false}, // reduces or closes
		{2, -3, true}, {-2, 3, true}, // through flat to the other side
	} {
		require.Equal(t, tc.want, opens(tc.cur, tc.delta), "%+v", tc)
	}
}

// A rule refusing entries refuses every order that opens or adds, by every
// operation that places one, before anything changes; orders that reduce
// and the closing operations pass.
func TestGateRefusesEntries(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.market("Sim101", protocol.ActionBuy, 2)
	f.ops.SetGate(&fakeGate{verdict: entriesRefused})
	place := func(action string, qty int, smart json.RawMessage) error {
		_, err := f.ops.PlaceOrder(bg, protocol.PlaceOrderArgs{Account: "Sim101", Action: action, Instrument: es,
			OrderType: "Market", Quantity: qty, TimeInForce: "Day", SmartOptions: smart})
		return err
	}
	requireCode(t, place(protocol.ActionBuy, 1, nil), protocol.CodeTradingBlocked)
	requireCode(t, place(protocol.ActionSell, 3, nil), protocol.CodeTradingBlocked)
	requireCode(t, place(protocol.ActionSell, 1, json.RawMessage(`{"flattenFirst":true}`)), protocol.CodeTradingBlocked)
	_, err := f.ops.ReversePosition(bg, protocol.ReversePositionArgs{Account: "Sim101", Instrument: es,
		Action: protocol.ActionSell, Quantity: 1, OrderType: "Market", TimeInForce: "Day"})
	requireCode(t, err, protocol.CodeTradingBlocked)
	_, err = f.ops.Reverse(bg, protocol.ReverseArgs{Account: "Sim101", Instrument: es})
	requireCode(t, err, protocol.CodeTradingBlocked)
	_, err = f.ops.StartStrategy(bg, protocol.StartStrategyArgs{Account: "Sim101", StrategyClass: "SampleMACrossOver", Instrument: es})
	requireCode(t, err, protocol.CodeTradingBlocked)
	require.Equal(t, 2, f.position("Sim101"), "nothing was closed by a refused reverse or flatten-first")
	require.Empty(t, f.working("Sim101"))

	require.NoError(t, place(protocol.ActionSell, 1, nil), "reducing passes")
	_, err = f.ops.ClosePosition(bg, protocol.ClosePositionArgs{Account: "Sim101", Instrument: es})
	require.NoError(t, err, "closing never asks the gate")
	require.Zero(t, f.position("Sim101"))
}

// The refusal names the rule and never repeats the caller's input.
func TestGateErrorNamesTheRule(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ops.SetGate(&fakeGate{verdict: entriesRefused})
	_, err := f.ops.PlaceOrder(bg, protocol.PlaceOrderArgs{Account: "Sim101", Action: "Buy", Instrument: es,
		OrderType: "Market", Quantity: 1, TimeInForce: "Day", StrategyTag: "secret-tag"})
	requireCode(t, err, protocol.CodeTradingBlocked, "secret-tag", "Sim101")
	require.Contains(t, err.Error(), "(rule: killSwitch)")
}

// A rule refusing every order refuses the API's, reducing ones too, and
// the source decides: the copier's pass.
func TestGateBySource(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.market("Sim101", protocol.ActionBuy, 1)
	g := &fakeGate{verdict: func(src Source) Verdict {
		if src == SourceAPI {
			return Verdict{Any: signalBlock}
		}
		return Verdict{}
	}}
	f.ops.SetGate(g)
	_, err := f.ops.PlaceOrder(bg, protocol.PlaceOrderArgs{Account: "Sim101", Action: "Sell", Instrument: es,
		OrderType: "Market", Quantity: 1, TimeInForce: "Day"})
	requireCode(t, err, protocol.CodeTradingBlocked)
	ctx := WithSource(context.Background(), SourceCopier)
	_, err = f.ops.Submit(ctx, bridge.OrderRequest{Account: "Sim101", Instrument: es, Action: "Sell",
		OrderType: "Market", Quantity: 1, TimeInForce: "Day"})
	require.NoError(t, err)
	require.Equal(t, []Source{SourceAPI, SourceCopier}, g.asked)
	_, err = f.ops.Flatten(bg, protocol.FlattenArgs{Account: "Sim101"})
	require.NoError(t, err, "flatten never asks the gate")
}

// Submit places through the gate: an entry is refused and nothing is
// placed; without a gate everything passes.
func TestSubmitThroughTheGate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	req := bridge.OrderRequest{Account: "Sim101", Instrument: es, Action: "Buy", OrderType: "Market", Quantity: 1, TimeInForce: "Day"}
	f.ops.SetGate(&fakeGate{verdict: entriesRefused})
	_, err := f.ops.Submit(bg, req)
	requireCode(t, err, protocol.CodeTradingBlocked)
	require.Zero(t, f.position("Sim101"))
	f.ops.SetGate(nil)
	_, err = f.ops.Submit(bg, req)
	require.NoError(t, err)
	require.Equal(t, 1, f.position("Sim101"))
	require.Equal(t, SourceAPI, SourceOf(bg))
}

// A change that raises the quantity of an entry order is refused; a price
// change or a smaller quantity passes; a rule refusing everything refuses
// any change.
func TestGateOnChanges(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	o := f.resting("Sim101", protocol.ActionBuy, protocol.OrderTypeLimit, 5990, 2)
	f.ops.SetGate(&fakeGate{verdict: entriesRefused})
	_, err := f.ops.ChangeOrder(bg, protocol.ChangeOrderArgs{Account: "Sim101", OrderID: o.OrderID, Quantity: ptr(3)})
	requireCode(t, err, protocol.CodeTradingBlocked)
	_, err = f.ops.ChangeOrder(bg, protocol.ChangeOrderArgs{Account: "Sim101", OrderID: o.OrderID, Quantity: ptr(1)})
	require.NoError(t, err)
	_, err = f.ops.ChangeOrder(bg, protocol.ChangeOrderArgs{Account: "Sim101", OrderID: o.OrderID, LimitPrice: ptr(5991.0)})
	require.NoError(t, err)
	f.ops.SetGate(&fakeGate{verdict: func(Source) Verdict { return Verdict{Any: signalBlock} }})
	_, err = f.ops.ChangeOrder(bg, protocol.ChangeOrderArgs{Account: "Sim101", OrderID: o.OrderID, LimitPrice: ptr(5990.0)})
	requireCode(t, err, protocol.CodeTradingBlocked)
	_, err = f.ops.CancelOrder(bg, protocol.OrderArgs{Account: "Sim101", OrderID: o.OrderID})
	require.NoError(t, err, "cancelling never asks the gate")
}

// Gates asks every Checker in order; for each kind of refusal the first
// Checker that refuses names the rule, and every Checker is asked.
func TestGates(t *testing.T) {
	t.Parallel()
	lockout := &Block{Rule: RuleNewsLockout, Reason: "a news lockout is open"}
	closing := &Block{Rule: RuleClosingOnly, Reason: "the account's monitor allows closing orders only"}
	fixed := func(v Verdict) *fakeGate { return &fakeGate{verdict: func(Source) Verdict { return v }} }
	for _, tc := range []struct {
		name     string
		checkers []Verdict
		want     Verdict
	}{
		{"none", nil, Verdict{}},
		{"nobody refuses", []Verdict{{}, {}}, Verdict{}},
		{"one refuses all", []Verdict{{}, {Any: killBlock}}, Verdict{Any: killBlock}},
		{"the first refusal of all wins", []Verdict{{Any: killBlock}, {Any: signalBlock}}, Verdict{Any: killBlock}},
		{"the first refusal of entries wins", []Verdict{{Entries: lockout}, {Entries: closing}}, Verdict{Entries: lockout}},
		{"kinds combine across checkers", []Verdict{{Entries: lockout}, {Any: signalBlock, Entries: closing}},
			Verdict{Any: signalBlock, Entries: lockout}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var g Gates
			var fakes []*fakeGate
			for _, v := range tc.checkers {
				fg := fixed(v)
				fakes = append(fakes, fg)
				g = append(g, fg)
			}
			require.Equal(t, tc.want, g.Check("Sim101", es, SourceCopier))
			for i, fg := range fakes {
				require.Equal(t, []Source{SourceCopier}, fg.asked, "checker %d is asked once, with the source", i)
			}
		})
	}
	// Gates is a Gate: Ops refuses by it.
	f := newFixture(t)
	f.ops.SetGate(Gates{fixed(Verdict{}), fixed(Verdict{Any: killBlock})})
	_, err := f.ops.PlaceOrder(bg, marketArgs("Buy", 1))
	requireCode(t, err, protocol.CodeTradingBlocked)
	require.Contains(t, err.Error(), "(rule: "+RuleKillSwitch+")")
	require.Empty(t, f.rec.Writes())
}
