package ops

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/bridgetest"
)

// pairer is a platform that joins orders to an OCO group only in pairs
// placed together, as a broker does: SubmitOrder with Oco set is
// ErrNotSupported, and SubmitOCO places both legs (through the platform
// below, the recorded simulator) or neither. It records each SubmitOCO
// call; fail, when set, refuses the pair before anything is placed.
type pairer struct {
	bridge.Platform
	mu    sync.Mutex
	pairs [][2]bridge.OrderRequest
	fail  error
}

func (p *pairer) SubmitOrder(ctx context.Context, req bridge.OrderRequest) (protocol.Order, error) {
	if req.Oco != "" {
		return protocol.Order{}, &bridge.NotSupportedError{What: "OCO groups", Reason: "place the pair together"}
	}
	return p.Platform.SubmitOrder(ctx, req)
}

func (p *pairer) SubmitOCO(ctx context.Context, a, b bridge.OrderRequest) (protocol.Order, protocol.Order, error) {
	p.mu.Lock()
	p.pairs = append(p.pairs, [2]bridge.OrderRequest{a, b})
	fail := p.fail
	p.mu.Unlock()
	if fail != nil {
		return protocol.Order{}, protocol.Order{}, fail
	}
	oa, err := p.Platform.SubmitOrder(ctx, a)
	if err != nil {
		return protocol.Order{}, protocol.Order{}, err
	}
	ob, err := p.Platform.SubmitOrder(ctx, b)
	if err != nil {
		_, _ = p.Platform.CancelOrder(ctx, a.Account, oa.OrderID) // both or neither
		return protocol.Order{}, protocol.Order{}, err
	}
	return oa, ob, nil
}

// Pairs returns the SubmitOCO calls made so far.
func (p *pairer) Pairs() [][2]bridge.OrderRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][2]bridge.OrderRequest(nil), p.pairs...)
}

var _ bridge.PairSubmitter = (*pairer)(nil)

// newPairFixture builds a fixture whose Ops runs over a pairer over the
// recorded simulator.
func newPairFixture(t testing.TB, tune ...func(*Options)) (*fixture, *pairer) {
	t.Helper()
	var p *pairer
	wrap := func(o *Options) {
		p = &pairer{Platform: o.Platform}
		o.Platform = p
	}
	f := newFixtureOn(t, bridgetest.Sim, append([]func(*Options){wrap}, tune...)...)
	return f, p
}

// Every rule of CancelAndBracket holds on a platform that places OCO
// pairs together.
func TestBracketRulesOnPairSubmitter(t *testing.T) {
	t.Parallel()
	maker := func(t testing.TB, tune ...func(*Options)) *fixture {
		f, _ := newPairFixture(t, tune...)
		return f
	}
	for name, rule := range map[string]func(*testing.T, fixtureMaker){
		"1 opposite side":      testBracketRule1OppositeSide,
		"2 needs a leg":        testBracketRule2NeedsTakeProfitOrStopLoss,
		"3 cancel, delay":      testBracketRule3CancelThenDelayThenBracket,
		"delay and ctx":        testBracketDelayRespectsContext,
		"4 reduced":            testBracketRule4ReducedToPosition,
		"5 flat in the window": testBracketRule5FlatDuringWindow,
		"6 straddle":           testBracketRule6StraddleEntry,
		"7 shared OCO":         testBracketRule7SharedOCO,
		"8 result":             testBracketRule8ResultAndMissingFields,
		"bad input":            testBracketRefusesBadInput,
		"never half placed":    testBracketNeverHalfPlaced,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rule(t, maker)
		})
	}
}

// Two legs go to a PairSubmitter in one SubmitOCO call, stop loss first,
// with the OCO id the caller sees; a lone leg is a plain order.
func TestBracketUsesSubmitOCO(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		tp, sl   *float64
		oco      string
		pairs    int
		wantOco  string
		orderOco string // the OCO id on the placed orders
	}{
		{"both legs, generated id", ptr(6010.0), ptr(5990.0), "", 1, "oco-generated", "oco-generated"},
		{"both legs, caller's id", ptr(6010.0), ptr(5990.0), "my-oco", 1, "my-oco", "my-oco"},
		{"stop loss alone", nil, ptr(5990.0), "", 0, "oco-generated", ""},
		{"take profit alone", ptr(6010.0), nil, "my-oco", 0, "my-oco", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, p := newPairFixture(t)
			f.market("Sim101", protocol.ActionBuy, 2)
			a := bracketArgs("Buy", 2, tc.tp, tc.sl)
			a.OcoID = tc.oco
			res, err := f.ops.CancelAndBracket(bg, a)
			require.NoError(t, err)
			require.True(t, res.Placed)
			require.Equal(t, tc.wantOco, res.OcoID)
			require.Len(t, p.Pairs(), tc.pairs)
			legs := 1
			if tc.pairs == 1 {
				legs = 2
				pair := p.Pairs()[0]
				require.Equal(t, protocol.OrderTypeStopMarket, pair[0].OrderType, "the stop loss first")
				require.Equal(t, protocol.OrderTypeLimit, pair[1].OrderType)
				require.Equal(t, tc.wantOco, pair[0].Oco)
				require.Equal(t, tc.wantOco, pair[1].Oco)
			}
			require.Len(t, res.Orders, legs)
			require.Len(t, res.OrderIDs, legs)
			for i, o := range res.Orders {
				require.Equal(t, o.OrderID, res.OrderIDs[i])
				require.Equal(t, tc.orderOco, o.Oco)
				require.Equal(t, protocol.ActionSell, o.OrderAction)
				require.Equal(t, 2, o.Quantity)
				require.False(t, protocol.TerminalOrderState(f.order("Sim101", o.OrderID).OrderState))
			}
		})
	}
}

// A pair the platform refuses places nothing: the answer is the
// platform's code (order_rejected, a broker's own code, not_supported,
// outcome_unknown), the cancelled orders are reported, and no leg works.
func TestBracketPairRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		code string
	}{
		{"rejected", &bridge.RejectError{Reason: "market is closed"}, protocol.CodeOrderRejected},
		{"broker's code", &bridge.RejectError{Reason: "the position limit is reached", Code: "tradovate_max_pos_limit_reached"}, "tradovate_max_pos_limit_reached"},
		{"not supported", &bridge.NotSupportedError{What: "OCO groups"}, protocol.CodeNotSupported},
		{"outcome unknown", bridge.ErrOutcomeUnknown, protocol.CodeOutcomeUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, p := newPairFixture(t)
			f.market("Sim101", protocol.ActionBuy, 1)
			old := f.resting("Sim101", protocol.ActionSell, protocol.OrderTypeLimit, 6050, 1)
			p.fail = tc.err
			res, err := f.ops.CancelAndBracket(bg, bracketArgs("Buy", 1, ptr(6010.0), ptr(5990.0)))
			requireCode(t, err, tc.code)
			require.Contains(t, err.Error(), "the orders were cancelled")
			require.False(t, res.Placed)
			require.Empty(t, res.OrderIDs)
			require.Equal(t, []string{old.OrderID}, res.CancelledOrderIDs)
			require.Empty(t, f.working("Sim101"))
			require.Len(t, p.Pairs(), 1)
		})
	}
}
