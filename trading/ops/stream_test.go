package ops

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

func TestSetSubscriptions(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	events := f.sim.Events(ctx)

	res, err := f.ops.SetSubscriptions(bg, protocol.SubscriptionsArgs{Instruments: []string{"ES", "NQ", "ES 12-26", "ZZTOP"}})
	require.NoError(t, err)
	require.Equal(t, []string{"ES 12-26", "NQ 12-26"}, res.Instruments, "resolved, sorted, without duplicates")
	require.Equal(t, []string{"ZZTOP"}, res.Unknown)
	require.Equal(t, map[string]string{"ES": "ES 12-26", "NQ": "NQ 12-26", "ES 12-26": "ES 12-26"}, res.Resolved)

	quotes := func() map[string]bool {
		got := map[string]bool{}
		for {
			select {
			case ev := <-events:
				if ev.Kind == bridge.EventQuote {
					got[ev.Quote.Instrument] = true
				}
			default:
				return got
			}
		}
	}
	require.Equal(t, map[string]bool{"ES 12-26": true, "NQ 12-26": true}, quotes())

	// The set replaces the previous one.
	res, err = f.ops.SetSubscriptions(bg, protocol.SubscriptionsArgs{Instruments: []string{"NQ"}})
	require.NoError(t, err)
	require.Equal(t, []string{"NQ 12-26"}, res.Instruments)
	f.clock.Advance(time.Minute)
	require.NoError(t, f.sim.Step(bg))
	got := quotes()
	require.False(t, got["ES 12-26"], "ES is no longer streamed")

	// An empty set unsubscribes everything.
	res, err = f.ops.SetSubscriptions(bg, protocol.SubscriptionsArgs{})
	require.NoError(t, err)
	require.Empty(t, res.Instruments)
	f.clock.Advance(time.Minute)
	require.NoError(t, f.sim.Step(bg))
	require.Empty(t, quotes())
}

func TestGetPnl(t *testing.T) {
	f := newFixture(t)
	_, err := f.ops.PlaceOrder(bg, protocol.PlaceOrderArgs{Account: "Sim101", Action: "Buy", Instrument: "ES", OrderType: "Market", Quantity: 2, TimeInForce: "Day"})
	require.NoError(t, err)
	require.NoError(t, f.sim.SetPrice(es, 6010))
	snap, err := f.ops.GetPnl(bg, protocol.NoArgs{})
	require.NoError(t, err)
	require.Len(t, snap.Accounts, 2)
	a := snap.Accounts[0]
	require.Equal(t, "Sim101", a.Account)
	require.Len(t, a.Positions, 1)
	acct, err := f.sim.Account(bg, "Sim101")
	require.NoError(t, err)
	require.Equal(t, acct.Item.UnrealizedProfitLoss, a.UnrealizedProfitLoss)
	require.Equal(t, acct.Item.RealizedProfitLoss+acct.Item.UnrealizedProfitLoss, a.TotalProfitLoss)
	require.Positive(t, a.UnrealizedProfitLoss)
	require.Equal(t, f.clock.Now().UnixMilli(), snap.Epoch)
	require.Empty(t, snap.Accounts[1].Positions)
}
