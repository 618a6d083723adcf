package tradovate_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate"
	"tradebridge/trading/bridge/tradovate/tradovatetest"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
	"tradebridge/trading/ops"
)

// marketBuy opens a position in the market behind the fake, not through
// the platform: the broker holds it whatever the platform saw.
func marketBuy(t *testing.T, pr *tradovatetest.Pair, qty int) {
	t.Helper()
	_, err := pr.Market.SubmitOrder(t.Context(), bridge.OrderRequest{Account: acct, Instrument: es,
		Action: protocol.ActionBuy, OrderType: protocol.OrderTypeMarket, Quantity: qty})
	require.NoError(t, err)
	pr.Fake.Flush()
}

// brokerQty is the position the market behind the fake holds in es.
func brokerQty(t *testing.T, pr *tradovatetest.Pair) int {
	t.Helper()
	pr.Fake.Flush()
	ps, err := pr.Market.Positions(t.Context(), acct)
	require.NoError(t, err)
	for _, p := range ps {
		if p.Instrument == es {
			return p.Quantity
		}
	}
	return 0
}

// resync cuts the sockets and waits until the platform synced again.
func resync(t *testing.T, pr *tradovatetest.Pair) {
	t.Helper()
	n := pr.Fake.Requests("user/syncrequest")
	pr.Fake.DropSockets()
	require.Eventually(t, func() bool {
		return pr.Fake.Requests("user/syncrequest") > n && pr.Platform.Status().Connected
	}, testkit.Medium, time.Millisecond)
	pr.Settle(t)
}

func TestFlattenWithoutUserSocket(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	working, err := pr.Platform.SubmitOrder(t.Context(), limit(protocol.ActionBuy, 5990))
	require.NoError(t, err)
	pr.Fake.RefuseUserSockets(true)
	require.Eventually(t, func() bool { return !pr.Platform.Status().Connected }, testkit.Medium, time.Millisecond)
	marketBuy(t, pr, 2)
	require.Equal(t, 2, brokerQty(t, pr))

	require.NoError(t, pr.Platform.Flatten(t.Context(), acct, es), "REST works: the flatten must too")
	assert.Zero(t, brokerQty(t, pr), "the position is closed")
	os, err := pr.Market.Orders(t.Context(), acct)
	require.NoError(t, err)
	for _, o := range os {
		if o.Name == working.OrderID || o.LimitPrice == 5990 {
			assert.Equal(t, protocol.OrderStateCancelled, o.OrderState, "the working order is cancelled")
		}
	}

	// Without a position, the working orders alone are cancelled.
	_, err = pr.Market.SubmitOrder(t.Context(), bridge.OrderRequest{Account: acct, Instrument: es,
		Action: protocol.ActionBuy, OrderType: protocol.OrderTypeLimit, Quantity: 1, LimitPrice: 5980,
		TimeInForce: protocol.TimeInForceGtc, OrderID: "direct-1"})
	require.NoError(t, err)
	pr.Fake.Flush()
	require.NoError(t, pr.Platform.Flatten(t.Context(), acct, es))
	os, err = pr.Market.Orders(t.Context(), acct)
	require.NoError(t, err)
	for _, o := range os {
		assert.True(t, protocol.TerminalOrderState(o.OrderState), "%s is %s", o.OrderID, o.OrderState)
	}
}

func TestFlattenWhenTheMirrorIsStale(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	pr.Fake.MuteUserEvents(true) // the events of the fill are lost on the way
	marketBuy(t, pr, 1)
	ps, err := pr.Platform.Positions(t.Context(), acct)
	require.NoError(t, err)
	require.Empty(t, ps, "the mirror shows the account flat")
	require.Equal(t, 1, brokerQty(t, pr))

	require.NoError(t, pr.Platform.Flatten(t.Context(), acct, es))
	assert.Zero(t, brokerQty(t, pr), "the broker's position is closed")
}

func TestLateCommandRejection(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	for _, after := range []bool{false, true} {
		o, err := pr.Platform.SubmitOrder(t.Context(), limit(protocol.ActionBuy, 5990))
		require.NoError(t, err)

		pr.Fake.RejectNextCommand(tradovatewire.CommandRiskRejected, "TradingLocked", after)
		_, err = pr.Platform.CancelOrder(t.Context(), acct, o.OrderID)
		var re *bridge.RejectError
		require.ErrorAs(t, err, &re, "a cancel rejected after it was accepted (events after the answer: %v)", after)
		assert.Equal(t, tradovatewire.RejectCode("TradingLocked"), re.Code)

		pr.Fake.RejectNextCommand(tradovatewire.CommandExecutionRejected, "TooLate", after)
		_, err = pr.Platform.ChangeOrder(t.Context(), bridge.ChangeRequest{Account: acct, OrderID: o.OrderID, LimitPrice: 5985})
		require.ErrorAs(t, err, &re, "a modification rejected after it was accepted")
		assert.Equal(t, tradovatewire.RejectCode("TooLate"), re.Code)

		pr.Settle(t)
		os, err := pr.Platform.Orders(t.Context(), acct)
		require.NoError(t, err)
		for _, x := range os {
			if x.OrderID == o.OrderID {
				assert.Equal(t, protocol.OrderStateWorking, x.OrderState, "the order is still working")
				assert.Equal(t, 5990.0, x.LimitPrice, "at its price")
			}
		}
		c, err := pr.Platform.CancelOrder(t.Context(), acct, o.OrderID)
		require.NoError(t, err)
		assert.Equal(t, protocol.OrderStateCancelled, c.OrderState)
	}
}

func TestSuccessFailureReasonIsSuccess(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	pr.Fake.SuccessReason(true)
	o, err := pr.Platform.SubmitOrder(t.Context(), limit(protocol.ActionBuy, 5990))
	require.NoError(t, err)
	c, err := pr.Platform.ChangeOrder(t.Context(), bridge.ChangeRequest{Account: acct, OrderID: o.OrderID, LimitPrice: 5985})
	require.NoError(t, err, `failureReason "Success" is no failure`)
	assert.Equal(t, 5985.0, c.LimitPrice)
	c, err = pr.Platform.CancelOrder(t.Context(), acct, o.OrderID)
	require.NoError(t, err)
	assert.Equal(t, protocol.OrderStateCancelled, c.OrderState)
}

func TestBustedFillCountsNowhere(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	_, err := pr.Platform.SubmitOrder(t.Context(), bridge.OrderRequest{Account: acct, Instrument: es,
		Action: protocol.ActionBuy, OrderType: protocol.OrderTypeMarket, Quantity: 1})
	require.NoError(t, err)
	pr.Settle(t)
	exs, err := pr.Platform.Executions(t.Context(), acct)
	require.NoError(t, err)
	require.Len(t, exs, 1)
	a, err := pr.Platform.Account(t.Context(), acct)
	require.NoError(t, err)
	require.Positive(t, a.Item.Commission)

	id, err := strconv.ParseInt(exs[0].ID, 10, 64)
	require.NoError(t, err)
	require.True(t, pr.Fake.BustFill(id))
	pr.Settle(t)
	exs, err = pr.Platform.Executions(t.Context(), acct)
	require.NoError(t, err)
	assert.Empty(t, exs, "a busted fill is no execution")
	a, err = pr.Platform.Account(t.Context(), acct)
	require.NoError(t, err)
	assert.Zero(t, a.Item.Commission, "nor any commission")

	// Nor after a resync, where the list says active false.
	resync(t, pr)
	exs, err = pr.Platform.Executions(t.Context(), acct)
	require.NoError(t, err)
	assert.Empty(t, exs)
}

func TestCommissionSurvivesAResync(t *testing.T) {
	t.Parallel()
	pr, clock := pairClock(t, tradovatetest.PairOptions{})
	_, err := pr.Platform.SubmitOrder(t.Context(), bridge.OrderRequest{Account: acct, Instrument: es,
		Action: protocol.ActionBuy, OrderType: protocol.OrderTypeMarket, Quantity: 2})
	require.NoError(t, err)
	pr.Settle(t)
	a, err := pr.Platform.Account(t.Context(), acct)
	require.NoError(t, err)
	want := a.Item.Commission
	require.Positive(t, want)

	resync(t, pr)
	a, err = pr.Platform.Account(t.Context(), acct)
	require.NoError(t, err)
	assert.Equal(t, want, a.Item.Commission, "the day's commission after a resync")

	// A platform that never saw the fills reads their fees too.
	p2, err := tradovate.New(tradovate.Options{Session: pr.Session, Now: clock.Now})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p2.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p2.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, func() bool {
		a, err := p2.Account(t.Context(), acct)
		return err == nil && a.Item.Commission == want
	}, testkit.Medium, time.Millisecond, "the commission of a fresh platform")
}

func TestOlderTradeDatePositionIsNoPhantom(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	// Today: bought and sold, flat.
	marketBuy(t, pr, 1)
	_, err := pr.Market.SubmitOrder(t.Context(), bridge.OrderRequest{Account: acct, Instrument: es,
		Action: protocol.ActionSell, OrderType: protocol.OrderTypeMarket, Quantity: 1})
	require.NoError(t, err)
	// Yesterday's row of the same contract, long 3.
	require.True(t, pr.Fake.AddPositionRow(acct, es, 1, 3, 5950))
	pr.Settle(t)
	ps, err := pr.Platform.Positions(t.Context(), acct)
	require.NoError(t, err)
	assert.Empty(t, ps, "an older trade date's row is no position")

	resync(t, pr)
	ps, err = pr.Platform.Positions(t.Context(), acct)
	require.NoError(t, err)
	assert.Empty(t, ps, "nor after a resync")
	require.NoError(t, pr.Platform.Flatten(t.Context(), acct, es), "nothing to liquidate")
	assert.Zero(t, pr.Fake.Requests("/order/liquidateposition"))
}

func TestOpsFlattenEverythingWithoutUserSocket(t *testing.T) {
	t.Parallel()
	pr, clock := pairClock(t, tradovatetest.PairOptions{})
	o, err := ops.New(ops.Options{Platform: pr.Platform, Now: clock.Now})
	require.NoError(t, err)
	_, err = pr.Platform.SubmitOrder(t.Context(), limit(protocol.ActionBuy, 5990))
	require.NoError(t, err)
	pr.Fake.RefuseUserSockets(true)
	require.Eventually(t, func() bool { return !pr.Platform.Status().Connected }, testkit.Medium, time.Millisecond)
	marketBuy(t, pr, 2)

	res, err := o.FlattenEverything(t.Context(), protocol.NoArgs{})
	require.NoError(t, err, "the kill switch's flatten works over REST alone")
	assert.Zero(t, brokerQty(t, pr))
	require.Len(t, res.Positions, 1)
	assert.Equal(t, es, res.Positions[0].Instrument)
	assert.Equal(t, 2, res.Positions[0].Quantity)
	os, err := pr.Market.Orders(t.Context(), acct)
	require.NoError(t, err)
	for _, x := range os {
		assert.True(t, protocol.TerminalOrderState(x.OrderState), "%s is %s", x.OrderID, x.OrderState)
	}

	// A tagged flatten does not fall back: it needs the platform's state.
	_, err = o.Flatten(t.Context(), protocol.FlattenArgs{StrategyTag: "bot-1"})
	var pe *protocol.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, protocol.CodePlatformUnavailable, pe.Code)
}

// The kill switch's flatten takes everything the broker lists, not only
// what the platform's state shows: a position whose events were lost is
// closed too.
func TestOpsFlattenEverythingWhenTheMirrorIsStale(t *testing.T) {
	t.Parallel()
	pr, clock := pairClock(t, tradovatetest.PairOptions{})
	o, err := ops.New(ops.Options{Platform: pr.Platform, Now: clock.Now})
	require.NoError(t, err)
	pr.Fake.MuteUserEvents(true) // the events of the fill are lost on the way
	marketBuy(t, pr, 1)
	ps, err := pr.Platform.Positions(t.Context(), acct)
	require.NoError(t, err)
	require.Empty(t, ps, "the platform's state shows the account flat")

	res, err := o.FlattenEverything(t.Context(), protocol.NoArgs{})
	require.NoError(t, err)
	assert.Zero(t, brokerQty(t, pr), "the broker's position is closed")
	require.Len(t, res.Positions, 1)
	assert.Equal(t, es, res.Positions[0].Instrument)
}
