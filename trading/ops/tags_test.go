package ops

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
)

func tagged(tag, action string, qty int) protocol.PlaceOrderArgs {
	a := marketArgs(action, qty)
	a.StrategyTag = tag
	return a
}

func TestTagClaimsFlatInstrument(t *testing.T) {
	onEachPlatform(t, testTagClaimsFlatInstrument)
}

func testTagClaimsFlatInstrument(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	_, err := f.ops.PlaceOrder(bg, tagged("botA", "Buy", 2))
	require.NoError(t, err)
	ps, err := f.ops.ListPositions(bg, protocol.AccountArgs{Account: "Sim101"})
	require.NoError(t, err)
	require.Equal(t, "botA", ps[0].Tag, "positions show their owner")

	// The owner adds; another tag is refused, the detail names the owner.
	_, err = f.ops.PlaceOrder(bg, tagged("botA", "Buy", 1))
	require.NoError(t, err)
	_, err = f.ops.PlaceOrder(bg, tagged("botB", "Sell", 1))
	requireCode(t, err, protocol.CodePositionOwned, "botB")
	require.Contains(t, err.Error(), `"botA"`)
	require.Equal(t, 3, f.position("Sim101"))

	// force lets it through without taking ownership.
	forced := tagged("botB", "Sell", 1)
	forced.Force = true
	_, err = f.ops.PlaceOrder(bg, forced)
	require.NoError(t, err)
	require.Equal(t, 2, f.position("Sim101"))
	require.Equal(t, "botA", f.ops.book.owner(key{"Sim101", es}))

	// Untagged writes are the trader's own and pass.
	_, err = f.ops.PlaceOrder(bg, marketArgs("Buy", 1))
	require.NoError(t, err)

	// Another account, or another instrument, is free.
	other := tagged("botB", "Buy", 1)
	other.Account = "Sim102"
	_, err = f.ops.PlaceOrder(bg, other)
	require.NoError(t, err)
	other = tagged("botB", "Buy", 1)
	other.Instrument = "NQ"
	_, err = f.ops.PlaceOrder(bg, other)
	require.NoError(t, err)
}

func TestTagReleasedWhenFlat(t *testing.T) {
	onEachPlatform(t, testTagReleasedWhenFlat)
}

func testTagReleasedWhenFlat(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	_, err := f.ops.PlaceOrder(bg, tagged("botA", "Buy", 1))
	require.NoError(t, err)
	_, err = f.ops.PlaceOrder(bg, tagged("botA", "Sell", 1))
	require.NoError(t, err)
	_, err = f.ops.PlaceOrder(bg, tagged("botB", "Sell", 1))
	require.NoError(t, err, "a flat instrument with no working orders of the owner is free again")
	require.Equal(t, "botB", f.ops.book.owner(key{"Sim101", es}))

	// A resting order keeps the claim while the position is flat.
	f2 := newFixture(t)
	lim := tagged("botA", "Buy", 1)
	lim.OrderType, lim.LimitPrice = "Limit", ptr(5900.0)
	_, err = f2.ops.PlaceOrder(bg, lim)
	require.NoError(t, err)
	_, err = f2.ops.PlaceOrder(bg, tagged("botB", "Buy", 1))
	requireCode(t, err, protocol.CodePositionOwned)

	// A position flattened outside the tag (by the trader) frees it too.
	f3 := newFixture(t)
	_, err = f3.ops.PlaceOrder(bg, tagged("botA", "Buy", 2))
	require.NoError(t, err)
	require.NoError(t, f3.platform.Flatten(bg, "Sim101", es)) // not recorded: the trader's own
	f3.settle()
	_, err = f3.ops.PlaceOrder(bg, tagged("botB", "Buy", 1))
	require.NoError(t, err)
}

func TestTagClaimsOnlyFlat(t *testing.T) {
	onEachPlatform(t, testTagClaimsOnlyFlat)
}

func testTagClaimsOnlyFlat(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	f.market("Sim101", protocol.ActionBuy, 1) // the trader's own position
	_, err := f.ops.PlaceOrder(bg, tagged("botA", "Buy", 1))
	requireCode(t, err, protocol.CodePositionOwned)
	require.Equal(t, 1, f.position("Sim101"))
	a := tagged("botA", "Buy", 1)
	a.Force = true
	_, err = f.ops.PlaceOrder(bg, a)
	require.NoError(t, err)
	require.Empty(t, f.ops.book.owner(key{"Sim101", es}), "a forced order does not claim")
}

// Flatten and close with a tag touch only the tag's orders and share.
func TestTagShare(t *testing.T) {
	onEachPlatform(t, testTagShare)
}

func testTagShare(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	_, err := f.ops.PlaceOrder(bg, tagged("botA", "Buy", 2))
	require.NoError(t, err)
	tagStop := tagged("botA", "Sell", 2)
	tagStop.OrderType, tagStop.StopPrice = "StopMarket", ptr(5950.0)
	stopRes, err := f.ops.PlaceOrder(bg, tagStop)
	require.NoError(t, err)
	// The trader adds 3 of their own, with their own stop.
	f.market("Sim101", protocol.ActionBuy, 3)
	own := f.resting("Sim101", protocol.ActionSell, protocol.OrderTypeStopMarket, 5940, 3)
	require.Equal(t, 5, f.position("Sim101"))

	res, err := f.ops.Flatten(bg, protocol.FlattenArgs{Account: "Sim101", StrategyTag: "botA"})
	require.NoError(t, err)
	require.Equal(t, 3, f.position("Sim101"), "only the tag's 2 were closed")
	require.Equal(t, []string{stopRes.OrderID}, res.CancelledOrderIDs)
	require.Len(t, res.Positions, 1)
	require.Equal(t, 2, res.Positions[0].Quantity)
	require.Equal(t, "botA", res.Positions[0].Tag)
	require.Len(t, res.OrderIDs, 1)
	require.Equal(t, protocol.OrderStateAccepted, f.order("Sim101", own.OrderID).OrderState, "the trader's stop stays")
	ps, err := f.ops.ListPositions(bg, protocol.AccountArgs{Account: "Sim101"})
	require.NoError(t, err)
	require.Empty(t, ps[0].Tag, "the tag's share is gone: the rest is the trader's")

	// A tag with nothing here flattens nothing.
	res, err = f.ops.Flatten(bg, protocol.FlattenArgs{Account: "Sim101", StrategyTag: "botZ"})
	require.NoError(t, err)
	require.Empty(t, res.Positions)
	require.Equal(t, 3, f.position("Sim101"))
}

func TestTagModes(t *testing.T) {
	onEachPlatform(t, testTagModes)
}

func testTagModes(t *testing.T, newFixture fixtureMaker) {
	setup := func(t *testing.T) *fixture {
		f := newFixture(t)
		_, err := f.ops.PlaceOrder(bg, tagged("bot-A1", "Buy", 2))
		require.NoError(t, err)
		f.market("Sim101", protocol.ActionBuy, 3)
		return f
	}
	for _, tc := range []struct {
		mode, tag string
		left      int
	}{
		{"", "bot-A1", 3},
		{"EXACT", "bot-A1", 3},
		{"exact", "bot-A", 5},
		{"prefix", "bot-", 3},
		{"prefix", "other", 5},
		{"exclude", "bot-A1", 2},
		{"exclude", "nobody", 0},
	} {
		t.Run(tc.mode+" "+tc.tag, func(t *testing.T) {
			f := setup(t)
			_, err := f.ops.Flatten(bg, protocol.FlattenArgs{Account: "Sim101", Instrument: "ES", StrategyTag: tc.tag, StrategyTagMode: tc.mode})
			require.NoError(t, err)
			require.Equal(t, tc.left, f.position("Sim101"))
		})
	}
	f := setup(t)
	_, err := f.ops.Flatten(bg, protocol.FlattenArgs{StrategyTag: "x", StrategyTagMode: "fuzzy"})
	requireCode(t, err, protocol.CodeInvalidArgument, "fuzzy")
	_, err = f.ops.Flatten(bg, protocol.FlattenArgs{StrategyTagMode: "prefix"})
	requireCode(t, err, protocol.CodeInvalidArgument)
	// force drops the tag: everything goes.
	_, err = f.ops.Flatten(bg, protocol.FlattenArgs{Account: "Sim101", StrategyTag: "bot-A1", Force: true})
	require.NoError(t, err)
	require.Zero(t, f.position("Sim101"))
}

func TestTagClose(t *testing.T) {
	onEachPlatform(t, testTagClose)
}

func testTagClose(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	_, err := f.ops.PlaceOrder(bg, tagged("botA", "Sell", 4))
	require.NoError(t, err)
	f.market("Sim101", protocol.ActionSell, 1)
	res, err := f.ops.ClosePosition(bg, protocol.ClosePositionArgs{Account: "Sim101", Instrument: "ES", StrategyTag: "botA", Percent: ptr(0.5)})
	require.NoError(t, err)
	require.Equal(t, 2, res.Order.Quantity, "half of the tag's 4")
	require.Len(t, res.ClosedPositions, 1)
	require.Equal(t, 4, res.ClosedPositions[0].Quantity, "the tag's share as it stood, not the account's 5")
	require.Equal(t, "botA", res.ClosedPositions[0].Tag)
	require.Equal(t, -3, f.position("Sim101"))
	_, err = f.ops.ClosePosition(bg, protocol.ClosePositionArgs{Account: "Sim101", Instrument: "ES", StrategyTag: "botB"})
	requireCode(t, err, protocol.CodePositionOwned, "botB")
	_, err = f.ops.ClosePosition(bg, protocol.ClosePositionArgs{Account: "Sim101", Instrument: "ES", StrategyTag: "botA"})
	require.NoError(t, err)
	require.Equal(t, -1, f.position("Sim101"), "the trader's own contract stays")
}

func TestTagReverse(t *testing.T) {
	onEachPlatform(t, testTagReverse)
}

func testTagReverse(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	_, err := f.ops.PlaceOrder(bg, tagged("botA", "Buy", 2))
	require.NoError(t, err)
	f.market("Sim101", protocol.ActionBuy, 1)
	res, err := f.ops.Reverse(bg, protocol.ReverseArgs{Account: "Sim101", Instrument: "ES", StrategyTag: "botA"})
	require.NoError(t, err)
	require.Equal(t, protocol.ActionSell, res.Order.OrderAction)
	require.Equal(t, 2, res.Order.Quantity)
	require.Equal(t, -1, f.position("Sim101"), "the tag went from +2 to -2; the trader's +1 stays")
	require.Equal(t, "botA", f.ops.book.owner(key{"Sim101", es}), "the tag keeps its claim")
	st, err := f.ops.read(bg, key{"Sim101", es})
	require.NoError(t, err)
	require.Equal(t, -1, st.share, "a share never exceeds the net position: the trader's +1 nets against it")
}

// Concurrent tags racing for one flat instrument: exactly one wins.
func TestTagRace(t *testing.T) {
	onEachPlatform(t, testTagRace)
}

func testTagRace(t *testing.T, newFixture fixtureMaker) {
	f := newFixture(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := map[string]bool{}
	for _, tag := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.ops.PlaceOrder(bg, tagged(tag, "Buy", 1))
			if err == nil {
				mu.Lock()
				won[tag] = true
				mu.Unlock()
				return
			}
			var pe *protocol.Error
			if assert.ErrorAs(t, err, &pe) {
				assert.Equal(t, protocol.CodePositionOwned, pe.Code, pe.Detail)
			}
		}()
	}
	wg.Wait()
	require.Len(t, won, 1)
	require.Equal(t, 1, f.position("Sim101"))
}
