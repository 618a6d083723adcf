package exits_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/engine"
	"tradebridge/trading/engine/enginetest"
	"tradebridge/trading/engine/exits"
	"tradebridge/trading/ops"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start is a Monday afternoon, inside trading hours.
var start = time.Date(2026, time.October, 5, 14, 30, 0, 0, time.UTC)

// lastYear is start 52 weeks earlier, also a Monday afternoon: a
// simulator's clock that stands a year away from the real time.
var lastYear = start.AddDate(0, 0, -364)

const (
	es   = "ES 12-26"
	acct = "Sim101"
)

var bg = context.Background()

type fixture struct {
	t     testing.TB
	m     enginetest.Market
	store engine.MemStore
	rep   *enginetest.Reporter
	eng   *exits.Engine
}

// newFixture is a simulator at ES 6000 with the operations and an exits
// engine over it. bookDepth > 0 makes resting orders fill that many
// contracts per market update.
func newFixture(t testing.TB, bookDepth int) *fixture {
	t.Helper()
	return newFixtureAt(t, bookDepth, start)
}

// newFixtureAt is newFixture with the simulator's clock at at.
func newFixtureAt(t testing.TB, bookDepth int, at time.Time) *fixture {
	t.Helper()
	m := enginetest.NewMarket(t, at, sim.Options{BookDepth: bookDepth}, ops.Options{})
	f := &fixture{t: t, m: m, store: engine.NewMemStore(), rep: &enginetest.Reporter{}}
	f.eng = f.newEngine()
	require.NoError(t, m.Sim.SetPrice(es, 6000))
	return f
}

// newEngine builds an engine over the fixture's store (a restart when one
// ran before) and makes it the operations' watcher.
func (f *fixture) newEngine() *exits.Engine {
	f.t.Helper()
	eng, err := exits.New(exits.Options{Platform: f.m.Sim, Trader: f.m.Ops, Store: f.store, Reporter: f.rep,
		Now: f.m.Clock.Now, TickInterval: 5 * time.Millisecond, NewOcoID: func() string { return "oco-test" }})
	require.NoError(f.t, err)
	f.m.Ops.SetEntryWatcher(eng)
	return eng
}

// run runs the engine until the test ends.
func (f *fixture) run() {
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() { done <- f.eng.Run(ctx) }()
	f.t.Cleanup(func() {
		cancel()
		require.NoError(f.t, <-done)
	})
}

func price(v float64) *protocol.ExitPrice { return &protocol.ExitPrice{Price: &v} }

func offset(unit string, v float64) *protocol.ExitPrice {
	return &protocol.ExitPrice{Offset: &protocol.PriceOffset{Unit: unit, Value: v}}
}

func ptr[T any](v T) *T { return &v }

// buyLimit is a Buy Limit entry of qty at limit with exits.
func buyLimit(qty int, limit float64, x *protocol.Exits) protocol.PlaceOrderArgs {
	return protocol.PlaceOrderArgs{Account: acct, Instrument: "ES", Action: "Buy", OrderType: "Limit",
		LimitPrice: &limit, Quantity: qty, TimeInForce: "Day", Exits: x}
}

// exitsOf returns the account's orders other than id, working or not.
func (f *fixture) exitsOf(id string) []protocol.Order {
	f.t.Helper()
	os, err := f.m.Sim.Orders(bg, acct)
	require.NoError(f.t, err)
	var out []protocol.Order
	for _, o := range os {
		if o.OrderID != id {
			out = append(out, o)
		}
	}
	return out
}

func (f *fixture) order(id string) protocol.Order {
	f.t.Helper()
	o, err := f.m.Ops.GetOrder(bg, protocol.OrderArgs{Account: acct, OrderID: id})
	require.NoError(f.t, err)
	return o
}

// A market entry's exits are placed once it filled, at their offsets from
// the fill, as an OCO pair sized to the fill, and reported; the watch
// ends.
func TestMarketEntryGetsItsExits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0)
	f.run()
	res, err := f.m.Ops.PlaceOrder(bg, protocol.PlaceOrderArgs{Account: acct, Instrument: "ES", Action: "buy",
		OrderType: "market", Quantity: 2, TimeInForce: "day", StrategyTag: "bot",
		Exits: &protocol.Exits{TakeProfit: offset("ticks", 8), StopLoss: offset("dollars", 250)}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return f.eng.Watching() == 0 }, testkit.Medium, testkit.Tick)
	fill := f.order(res.OrderID).AverageFillPrice
	legs := f.exitsOf(res.OrderID)
	require.Len(t, legs, 2)
	byType := map[string]protocol.Order{}
	for _, l := range legs {
		byType[l.OrderType] = l
		require.Equal(t, protocol.ActionSell, l.OrderAction)
		require.Equal(t, 2, l.Quantity)
		require.Equal(t, protocol.TimeInForceGtc, l.TimeInForce)
		require.Equal(t, "oco-test", l.Oco)
		require.Equal(t, "bot", l.StrategyTag)
		require.False(t, protocol.TerminalOrderState(l.OrderState))
	}
	require.InDelta(t, fill+2, byType[protocol.OrderTypeLimit].LimitPrice, 1e-9, "8 ticks above the fill")
	require.InDelta(t, fill-5, byType[protocol.OrderTypeStopMarket].StopPrice, 1e-9, "$250 of ES is 5 points below")

	placed := f.rep.Activity(protocol.ActivityExitsPlaced)
	require.Len(t, placed, 1)
	d := enginetest.Detail(t, placed[0])
	require.Equal(t, res.OrderID, d["entryOrderId"])
	require.Equal(t, "oco-test", d["ocoId"])
	require.EqualValues(t, 2, d["quantity"])
	require.Len(t, d["orderIds"], 2)
	require.Equal(t, map[string]any{"takeProfit": fill + 2, "stopLoss": fill - 5}, d["prices"])
	require.Equal(t, acct, placed[0].Account)
	require.Equal(t, protocol.SourceAgent, placed[0].Source.Kind)
	require.True(t, protocol.ValidActivityKind(placed[0].Kind))
}

// A limit entry's exits wait for its fill, grow with its partial fills,
// and stay sized to what filled when the rest is cancelled.
func TestLimitEntryPartialFillsGrowTheExits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1)
	res, err := f.m.Ops.PlaceOrder(bg, buyLimit(3, 5990, &protocol.Exits{TakeProfit: price(6050), StopLossLimit: price(5950), StopLossStop: price(5951)}))
	require.NoError(t, err)
	require.Equal(t, 1, f.eng.Watching(), "recorded before PlaceOrder returned")
	f.eng.Tick(bg)
	require.Empty(t, f.exitsOf(res.OrderID), "nothing filled, no exits")

	require.NoError(t, f.m.Sim.SetPrice(es, 5989.75))
	require.Equal(t, 1, f.order(res.OrderID).Filled)
	f.eng.Tick(bg)
	legs := f.exitsOf(res.OrderID)
	require.Len(t, legs, 2)
	for _, l := range legs {
		require.Equal(t, 1, l.Quantity)
		if l.OrderType == protocol.OrderTypeStopLimit {
			require.Equal(t, 5950.0, l.LimitPrice)
			require.Equal(t, 5951.0, l.StopPrice)
		}
	}

	require.NoError(t, f.m.Sim.SetPrice(es, 5989.75))
	require.Equal(t, 2, f.order(res.OrderID).Filled)
	f.eng.Tick(bg)
	for _, l := range f.exitsOf(res.OrderID) {
		require.Equal(t, 2, l.Quantity, "resized to the fills")
	}

	_, err = f.m.Ops.CancelOrder(bg, protocol.OrderArgs{Account: acct, OrderID: res.OrderID})
	require.NoError(t, err)
	f.eng.Tick(bg)
	require.Zero(t, f.eng.Watching())
	legs = f.exitsOf(res.OrderID)
	require.Len(t, legs, 2)
	for _, l := range legs {
		require.Equal(t, 2, l.Quantity)
		require.False(t, protocol.TerminalOrderState(l.OrderState))
	}
	require.Len(t, f.rep.Activity(protocol.ActivityExitsPlaced), 2, "placed, then resized")
	loaded, err := f.store.Load(exits.Bucket)
	require.NoError(t, err)
	require.Empty(t, loaded, "the ended watch is forgotten")
}

// An entry cancelled with nothing filled places no exits.
func TestCancelledEntryWithoutFillPlacesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0)
	res, err := f.m.Ops.PlaceOrder(bg, buyLimit(1, 5990, &protocol.Exits{StopLoss: offset("points", 4)}))
	require.NoError(t, err)
	_, err = f.m.Ops.CancelOrder(bg, protocol.OrderArgs{Account: acct, OrderID: res.OrderID})
	require.NoError(t, err)
	f.eng.Tick(bg)
	require.Zero(t, f.eng.Watching())
	require.Empty(t, f.exitsOf(res.OrderID))
	require.Empty(t, f.rep.Activity(""))
}

// A watch survives a restart: the engine built over the same store takes
// it up and places the exits when the entry fills.
func TestRestartRestoresTheWatch(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0)
	res, err := f.m.Ops.PlaceOrder(bg, buyLimit(1, 5990, &protocol.Exits{TakeProfit: offset("percent", 0.5)}))
	require.NoError(t, err)

	f.eng = f.newEngine() // the agent restarted
	require.Equal(t, 1, f.eng.Watching())
	require.NoError(t, f.m.Sim.SetPrice(es, 5989.75))
	f.run()
	require.Eventually(t, func() bool { return f.eng.Watching() == 0 }, testkit.Medium, testkit.Tick)
	legs := f.exitsOf(res.OrderID)
	require.Len(t, legs, 1)
	fill := f.order(res.OrderID).AverageFillPrice
	require.Equal(t, ops.RoundToTick(fill*1.005, 0.25), legs[0].LimitPrice)
	require.Empty(t, legs[0].Oco, "a lone exit is no OCO group")
}

// cancelAfterSeconds cancels what is left of the entry when its time
// passed; its exits stay sized to what filled.
func TestCancelAfter(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1)
	res, err := f.m.Ops.PlaceOrder(bg, protocol.PlaceOrderArgs{Account: acct, Instrument: "ES", Action: "Buy",
		OrderType: "Limit", LimitPrice: ptr(5990.0), Quantity: 3, TimeInForce: "Gtc", CancelAfterSeconds: ptr(60),
		Exits: &protocol.Exits{TakeProfit: offset("points", 100), StopLoss: offset("points", 100)}})
	require.NoError(t, err)
	require.NoError(t, f.m.Sim.SetPrice(es, 5989.75))
	require.NoError(t, f.m.Sim.SetPrice(es, 6010))
	f.eng.Tick(bg)
	require.Equal(t, protocol.OrderStateWorking, stateOf(f.order(res.OrderID)))

	f.m.Clock.Advance(59 * time.Second)
	require.NoError(t, f.m.Sim.SetPrice(es, 6010))
	f.eng.Tick(bg)
	require.False(t, protocol.TerminalOrderState(f.order(res.OrderID).OrderState), "not yet")

	f.m.Clock.Advance(2 * time.Second)
	require.NoError(t, f.m.Sim.SetPrice(es, 6010))
	f.eng.Tick(bg)
	ord := f.order(res.OrderID)
	require.Equal(t, protocol.OrderStateCancelled, ord.OrderState)
	require.Equal(t, 1, ord.Filled)
	require.Zero(t, f.eng.Watching())
	for _, l := range f.exitsOf(res.OrderID) {
		require.Equal(t, 1, l.Quantity)
		require.False(t, protocol.TerminalOrderState(l.OrderState))
	}
}

// stateOf folds the working states of a resting order into Working.
func stateOf(o protocol.Order) string {
	if protocol.TerminalOrderState(o.OrderState) {
		return o.OrderState
	}
	return protocol.OrderStateWorking
}

// A leg the platform refuses is reported once and never tried again.
func TestRefusedExitsAreReportedOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0)
	// A sell stop above the market is refused by the platform.
	res, err := f.m.Ops.PlaceOrder(bg, protocol.PlaceOrderArgs{Account: acct, Instrument: "ES", Action: "Buy",
		OrderType: "Market", Quantity: 1, TimeInForce: "Day", Exits: &protocol.Exits{StopLoss: price(6100)}})
	require.NoError(t, err)
	f.eng.Tick(bg)
	f.eng.Tick(bg)
	failed := f.rep.Activity(protocol.ActivityExitsFailed)
	require.Len(t, failed, 1)
	d := enginetest.Detail(t, failed[0])
	require.Equal(t, res.OrderID, d["entryOrderId"])
	require.Contains(t, d["reason"], "the exits could not be placed")
	require.Empty(t, f.exitsOf(res.OrderID))
	require.Zero(t, f.eng.Watching())
}

// What the engine reports is stamped with the real time, also when the
// platform's clock stands a year away; the platform's clock still runs
// the cancel-after deadline.
func TestReportsAreStampedInRealTime(t *testing.T) {
	t.Parallel()
	f := newFixtureAt(t, 0, lastYear)
	since := time.Now()
	_, err := f.m.Ops.PlaceOrder(bg, protocol.PlaceOrderArgs{Account: acct, Instrument: "ES", Action: "Buy",
		OrderType: "Market", Quantity: 1, TimeInForce: "Day", Exits: &protocol.Exits{TakeProfit: offset("ticks", 8)}})
	require.NoError(t, err)
	// A sell stop above the market is refused by the platform.
	_, err = f.m.Ops.PlaceOrder(bg, protocol.PlaceOrderArgs{Account: acct, Instrument: "ES", Action: "Buy",
		OrderType: "Market", Quantity: 1, TimeInForce: "Day", Exits: &protocol.Exits{StopLoss: price(6100)}})
	require.NoError(t, err)
	limit, err := f.m.Ops.PlaceOrder(bg, protocol.PlaceOrderArgs{Account: acct, Instrument: "ES", Action: "Buy",
		OrderType: "Limit", LimitPrice: ptr(5900.0), Quantity: 1, TimeInForce: "Gtc", CancelAfterSeconds: ptr(60),
		Exits: &protocol.Exits{TakeProfit: offset("ticks", 8)}})
	require.NoError(t, err)
	f.eng.Tick(bg)
	placed := f.rep.Activity(protocol.ActivityExitsPlaced)
	require.Len(t, placed, 1)
	enginetest.RequireRealTime(t, since, placed[0].At, "exits.placed at %s", placed[0].At)
	failed := f.rep.Activity(protocol.ActivityExitsFailed)
	require.Len(t, failed, 1)
	enginetest.RequireRealTime(t, since, failed[0].At, "exits.failed at %s", failed[0].At)

	require.Equal(t, protocol.OrderStateWorking, stateOf(f.order(limit.OrderID)), "the platform's deadline is not due")
	f.m.Clock.Advance(61 * time.Second)
	f.eng.Tick(bg)
	require.Equal(t, protocol.OrderStateCancelled, f.order(limit.OrderID).OrderState, "cancelled on the platform's clock")
}

// failingStore fails every Put.
type failingStore struct{ engine.MemStore }

func (failingStore) Put(string, string, []byte) error { return errors.New("disk full") }

// An entry whose watch cannot be recorded does not stand: the operation
// cancels it and fails.
func TestUnrecordedEntryIsCancelled(t *testing.T) {
	t.Parallel()
	m := enginetest.NewMarket(t, start, sim.Options{}, ops.Options{})
	require.NoError(t, m.Sim.SetPrice(es, 6000))
	eng, err := exits.New(exits.Options{Platform: m.Sim, Trader: m.Ops, Store: failingStore{engine.NewMemStore()},
		Reporter: &enginetest.Reporter{}, Now: m.Clock.Now})
	require.NoError(t, err)
	m.Ops.SetEntryWatcher(eng)
	_, err = m.Ops.PlaceOrder(bg, buyLimit(1, 5990, &protocol.Exits{StopLoss: price(5980)}))
	var pe *protocol.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, protocol.CodeInternal, pe.Code)
	os, err := m.Sim.Orders(bg, acct)
	require.NoError(t, err)
	require.Len(t, os, 1)
	require.Equal(t, protocol.OrderStateCancelled, os[0].OrderState)
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	m := enginetest.NewMarket(t, start, sim.Options{}, ops.Options{})
	ok := exits.Options{Platform: m.Sim, Trader: m.Ops, Store: engine.NewMemStore(), Reporter: &enginetest.Reporter{}}
	for name, mut := range map[string]func(*exits.Options){
		"platform": func(o *exits.Options) { o.Platform = nil },
		"trader":   func(o *exits.Options) { o.Trader = nil },
		"store":    func(o *exits.Options) { o.Store = nil },
		"reporter": func(o *exits.Options) { o.Reporter = nil },
		"tick":     func(o *exits.Options) { o.TickInterval = -1 },
	} {
		o := ok
		mut(&o)
		_, err := exits.New(o)
		require.Error(t, err, name)
	}
	_, err := exits.New(ok)
	require.NoError(t, err)
}

// Exits placed just before a crash, whose record was lost, are found
// again by the restarted engine and never placed twice.
func TestRestartFindsExitsPlacedBeforeTheirRecord(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0)
	res, err := f.m.Ops.PlaceOrder(bg, buyLimit(2, 5990, &protocol.Exits{TakeProfit: offset("ticks", 8), StopLoss: offset("ticks", 8)}))
	require.NoError(t, err)
	// The record as it stood before the exits were placed.
	before, err := f.store.Load(exits.Bucket)
	require.NoError(t, err)
	require.Len(t, before, 1)

	require.NoError(t, f.m.Sim.SetPrice(es, 5989.75))
	f.eng.Tick(bg)
	require.Len(t, f.exitsOf(res.OrderID), 2)

	// The agent crashed before the placed exits were recorded.
	for k, v := range before {
		require.NoError(t, f.store.Put(exits.Bucket, k, v))
	}
	f.eng = f.newEngine()
	require.Equal(t, 1, f.eng.Watching())
	f.eng.Tick(bg)
	require.Equal(t, 0, f.eng.Watching())
	legs := f.exitsOf(res.OrderID)
	require.Len(t, legs, 2, "the exits are not placed a second time")
	require.Empty(t, f.rep.Activity(protocol.ActivityExitsFailed), "the exits found are the entry's, not a refusal")
	for _, l := range legs {
		require.Equal(t, 2, l.Quantity)
		require.False(t, protocol.TerminalOrderState(l.OrderState))
	}
}
