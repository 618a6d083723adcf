package ops

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge/bridgetest"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/bridge/tradovate/tradovatetest"
)

// newTradovateFixture builds a fixture whose Ops runs over the Tradovate
// platform itself (a bridge.BracketSubmitter) and a fake Tradovate,
// returned to count its requests.
func newTradovateFixture(t *testing.T) (*fixture, *tradovatetest.Pair) {
	t.Helper()
	var pr *tradovatetest.Pair
	factory := func(t testing.TB, opts sim.Options) bridgetest.Harness {
		clock := bridgetest.UseManualClock(&opts)
		market, err := sim.New(opts)
		require.NoError(t, err)
		t.Cleanup(func() { _ = market.Close() })
		pr = tradovatetest.NewPair(t, market, tradovatetest.PairOptions{Now: opts.Clock.Now})
		pr.Run(t)
		return bridgetest.Harness{Platform: pr.Platform, Market: market, Clock: clock, Settle: pr.Settle, Lacks: tradovatetest.Lacks}
	}
	unwrap := func(o *Options) { o.Platform = o.Platform.(*recorder).Platform }
	f := newFixtureOn(t, factory, unwrap)
	return f, pr
}

// workingOrders returns the platform's working orders of the account.
func (f *fixture) workingOrders() []protocol.Order {
	f.t.Helper()
	f.settle()
	os, err := f.platform.Orders(bg, "Sim101")
	require.NoError(f.t, err)
	var out []protocol.Order
	for _, o := range os {
		if !protocol.TerminalOrderState(o.OrderState) {
			out = append(out, o)
		}
	}
	return out
}

// An order with exits at fixed prices goes to a platform that places
// brackets in one request as that one request: on Tradovate one
// order/placeoso, whose exits the broker sends when the entry fills. The
// exits engine is not asked to place them, so a relay that dies after the
// entry cannot leave its fill unprotected.
func TestExitsAtFixedPricesAreOnePlaceOSO(t *testing.T) {
	t.Parallel()
	f, pr := newTradovateFixture(t)
	w := &watcher{}
	f.ops.SetEntryWatcher(w)
	a := marketArgs("Buy", 2)
	a.OrderType, a.LimitPrice, a.TimeInForce = "Limit", ptr(5990.0), "Gtc"
	a.Exits = &protocol.Exits{TakeProfit: exitAt(6010), StopLoss: exitAt(5980)}
	res, err := f.ops.PlaceOrder(bg, a)
	require.NoError(t, err)
	require.NotNil(t, res.Order)
	assert.Equal(t, 1, pr.Fake.Requests("/order/placeoso"))
	assert.Zero(t, pr.Fake.Requests("/order/placeorder")+pr.Fake.Requests("/order/placeoco"))
	assert.Empty(t, w.Entries(), "the broker places the exits, not the exits engine")

	// The relay goes away before the entry fills; the broker protects it.
	pr.Platform.Close()
	require.NoError(t, f.sim.SetPrice(es, 5985))
	pr.Fake.Flush()
	recs, err := f.sim.Orders(bg, "Sim101")
	require.NoError(t, err)
	exits := map[string]protocol.Order{}
	for _, r := range recs {
		if !protocol.TerminalOrderState(r.OrderState) {
			exits[r.OrderType] = r
		}
	}
	require.Len(t, exits, 2)
	assert.Equal(t, 5980.0, exits[protocol.OrderTypeStopMarket].StopPrice)
	assert.Equal(t, 6010.0, exits[protocol.OrderTypeLimit].LimitPrice)
	for _, x := range exits {
		assert.Equal(t, protocol.ActionSell, x.OrderAction)
		assert.Equal(t, 2, x.Quantity)
	}
}

// Exits at offsets from the fill need the fill: the entry goes alone and
// the exits engine places them, as on every platform.
func TestExitsAtOffsetsStayWithTheEngine(t *testing.T) {
	t.Parallel()
	f, pr := newTradovateFixture(t)
	w := &watcher{}
	f.ops.SetEntryWatcher(w)
	a := marketArgs("Buy", 1)
	a.OrderType, a.LimitPrice, a.TimeInForce = "Limit", ptr(5990.0), "Gtc"
	a.Exits = &protocol.Exits{TakeProfit: exitAt(6010), StopLoss: exitOff("ticks", 8)}
	_, err := f.ops.PlaceOrder(bg, a)
	require.NoError(t, err)
	assert.Zero(t, pr.Fake.Requests("/order/placeoso"))
	assert.Equal(t, 1, pr.Fake.Requests("/order/placeorder"))
	assert.Len(t, w.Entries(), 1)
}

// With a cancel-after, the entry of a one-request bracket is still
// handed to the watcher, for the cancel only.
func TestBracketWithCancelAfterIsWatchedWithoutExits(t *testing.T) {
	t.Parallel()
	f, pr := newTradovateFixture(t)
	w := &watcher{}
	f.ops.SetEntryWatcher(w)
	a := marketArgs("Buy", 1)
	a.OrderType, a.LimitPrice, a.TimeInForce = "Limit", ptr(5990.0), "Gtc"
	a.Exits = &protocol.Exits{StopLoss: exitAt(5980)}
	a.CancelAfterSeconds = ptr(60)
	res, err := f.ops.PlaceOrder(bg, a)
	require.NoError(t, err)
	assert.Equal(t, 1, pr.Fake.Requests("/order/placeoso"))
	entries := w.Entries()
	require.Len(t, entries, 1)
	assert.Nil(t, entries[0].Exits)
	assert.Equal(t, res.OrderID, entries[0].OrderID)
	assert.False(t, entries[0].CancelAt.IsZero())
	assert.Len(t, f.workingOrders(), 1, "the stop waits at the broker for the fill")
}
