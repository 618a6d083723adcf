package tradovate_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate"
	"tradebridge/trading/bridge/tradovate/tradovatetest"
)

// An open position whose quotes the broker refuses (a login without the
// market-data entitlement) has an unknown unrealized P&L, not 0, and so
// has its account; the link's status names the refused contract. When the
// broker serves quotes again, the P&L is counted again.
func TestUnrealizedUnknownWhenQuotesRefused(t *testing.T) {
	t.Parallel()
	var told atomic.Int32
	pr := pair(t, tradovatetest.PairOptions{Platform: func(o *tradovate.Options) {
		o.MDRetry = 20 * time.Millisecond
		o.OnQuotesRefused = func(instrument string, delayed bool) {
			if instrument == es && !delayed {
				told.Add(1)
			}
		}
	}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	evs := pr.Platform.Events(ctx)
	pr.Fake.RefuseQuotes("Market data subscription is required")

	_, err := pr.Platform.SubmitOrder(t.Context(), bridge.OrderRequest{Account: acct, Instrument: es,
		Action: protocol.ActionBuy, OrderType: protocol.OrderTypeMarket, Quantity: 1, TimeInForce: protocol.TimeInForceDay})
	require.NoError(t, err)
	require.NoError(t, pr.Market.SetPrice(es, 5990)) // a loss of 512.50 (bought at the ask, 6000.25) nobody can price
	pr.Settle(t)
	require.Eventually(t, func() bool {
		return len(pr.Platform.Status().MarketDataRefused) == 1
	}, testkit.Medium, time.Millisecond, "the broker's refusal is seen")
	require.Equal(t, []string{es}, pr.Platform.Status().MarketDataRefused)
	require.Eventually(t, func() bool { return pr.Fake.Requests("md/subscribequote") >= 3 }, testkit.Medium, time.Millisecond,
		"asked again after MDRetry")
	require.Equal(t, int32(1), told.Load(), "told once of the refusal, however often it is asked again")

	ps, err := pr.Platform.Positions(t.Context(), acct)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	pos := ps[0]
	require.Equal(t, 1, pos.Quantity)
	require.True(t, pos.UnrealizedUnknown, "no price: the P&L is unknown, not 0")
	require.Zero(t, pos.UnrealizedProfitLoss)
	a, err := pr.Platform.Account(t.Context(), acct)
	require.NoError(t, err)
	require.True(t, a.Item.UnrealizedUnknown, "the account's unrealized P&L is unknown too")

	// The account event the monitors follow says so.
	lastAccount := func() *protocol.Account {
		var last *protocol.Account
		for {
			select {
			case ev := <-evs:
				if ev.Kind == bridge.EventAccount && ev.Account != nil && ev.Account.Name == acct {
					last = ev.Account
				}
			default:
				return last
			}
		}
	}
	last := lastAccount()
	require.NotNil(t, last)
	require.True(t, last.Item.UnrealizedUnknown)

	pr.Fake.RefuseQuotes("") // the entitlement is back: asked again, the quotes come
	require.Eventually(t, func() bool {
		ps, err := pr.Platform.Positions(t.Context(), acct)
		return err == nil && len(ps) == 1 && !ps[0].UnrealizedUnknown && ps[0].UnrealizedProfitLoss == -512.5
	}, testkit.Medium, time.Millisecond, "priced again")
	require.Empty(t, pr.Platform.Status().MarketDataRefused)
	require.Eventually(t, func() bool {
		if l := lastAccount(); l != nil {
			last = l
		}
		return !last.Item.UnrealizedUnknown && last.Item.UnrealizedProfitLoss == -512.5
	}, testkit.Medium, time.Millisecond)
}

// When the market-data socket drops, open positions have no price: their
// accounts are published with the P&L unknown, never as 0, until quotes
// come back.
func TestUnrealizedUnknownWhileMarketDataDown(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	_, err := pr.Platform.SubmitOrder(t.Context(), bridge.OrderRequest{Account: acct, Instrument: es,
		Action: protocol.ActionSell, OrderType: protocol.OrderTypeMarket, Quantity: 1, TimeInForce: protocol.TimeInForceDay})
	require.NoError(t, err)
	require.NoError(t, pr.Market.SetPrice(es, 6004))
	pr.Settle(t)
	require.Eventually(t, func() bool {
		a, err := pr.Platform.Account(t.Context(), acct)
		return err == nil && !a.Item.UnrealizedUnknown && a.Item.UnrealizedProfitLoss == -200
	}, testkit.Medium, time.Millisecond)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	evs := pr.Platform.Events(ctx)

	pr.Fake.DropMDSockets()
	var unknown, again bool
	timeout := time.After(testkit.Medium)
	for !again {
		select {
		case ev := <-evs:
			if ev.Kind != bridge.EventAccount || ev.Account == nil || ev.Account.Name != acct {
				continue
			}
			it := ev.Account.Item
			switch {
			case it.UnrealizedUnknown:
				unknown = true
				require.Zero(t, it.UnrealizedProfitLoss, "the unpriced position is left out")
			case unknown:
				require.Equal(t, -200.0, it.UnrealizedProfitLoss, "priced again once quotes are back")
				again = true
			default:
				require.Equal(t, -200.0, it.UnrealizedProfitLoss, "never a P&L of 0 passed for known")
			}
		case <-timeout:
			t.Fatalf("the account's P&L was not published as unknown, then priced again (unknown seen: %v)", unknown)
		}
	}
}
