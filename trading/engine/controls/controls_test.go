package controls

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/engine"
	"tradebridge/trading/engine/enginetest"
	"tradebridge/trading/mgmtconfig"
	"tradebridge/trading/ops"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start is a Monday afternoon, inside trading hours.
var start = time.Date(2026, time.October, 5, 14, 30, 0, 0, time.UTC)

// lastYear is start 52 weeks earlier, also a Monday afternoon: a
// simulator's clock that stands a year away from the real time.
var lastYear = start.AddDate(0, 0, -364)

const (
	es = "ES 12-26"
	nq = "NQ 12-26"
)

var bg = context.Background()

type fixture struct {
	t       testing.TB
	sim     *sim.Platform
	clock   *sim.ManualClock
	ops     *ops.Ops
	configs *enginetest.Configs
	eng     *Engine
	trader  *countingTrader
	rep     *enginetest.Reporter
}

// countingTrader is the real operations, counting the Flatten calls that
// reach them and failing the next fail calls.
type countingTrader struct {
	*ops.Ops
	mu       sync.Mutex
	flattens []protocol.FlattenArgs
	fail     int
}

func (c *countingTrader) Flatten(ctx context.Context, a protocol.FlattenArgs) (protocol.FlattenResult, error) {
	c.mu.Lock()
	c.flattens = append(c.flattens, a)
	failing := c.fail > 0
	if failing {
		c.fail--
	}
	c.mu.Unlock()
	if ops.SourceOf(ctx) != ops.SourceEngine {
		return protocol.FlattenResult{}, errors.New("flatten without the engine's source")
	}
	if failing {
		return protocol.FlattenResult{}, errors.New("platform unavailable")
	}
	return c.Ops.Flatten(ctx, a)
}

func (c *countingTrader) calls() []protocol.FlattenArgs {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]protocol.FlattenArgs(nil), c.flattens...)
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	return newFixtureAt(t, start)
}

// newFixtureAt is newFixture with the simulator's clock at at.
func newFixtureAt(t testing.TB, at time.Time) *fixture {
	t.Helper()
	m := enginetest.NewMarket(t, at, sim.Options{}, ops.Options{})
	p, clock, o := m.Sim, m.Clock, m.Ops
	f := &fixture{t: t, sim: p, clock: clock, ops: o, configs: &enginetest.Configs{}, trader: &countingTrader{Ops: o},
		rep: &enginetest.Reporter{}}
	var err error
	f.eng, err = New(Options{Platform: p, Trader: f.trader, Config: &f.configs.Holder, Now: clock.Now,
		TickInterval: 10 * time.Millisecond, Reporter: f.rep})
	require.NoError(t, err)
	o.SetGate(f.eng)
	require.NoError(t, p.SetPrice(es, 6000))
	require.NoError(t, p.SetPrice(nq, 21000))
	return f
}

// apply applies c as the next version of the configuration.
func (f *fixture) apply(c protocol.Config) {
	f.t.Helper()
	f.configs.Push(f.t, c)
}

// run runs the engine until the test ends.
func (f *fixture) run() {
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() { done <- f.eng.Run(ctx) }()
	f.t.Cleanup(func() {
		cancel()
		require.ErrorIs(f.t, <-done, context.Canceled)
	})
}

// trade submits a market order straight to the simulator: the trader's own
// activity in the platform, which no gate sees.
func (f *fixture) trade(account, instrument, action string, qty int) {
	f.t.Helper()
	_, err := f.sim.SubmitOrder(bg, bridge.OrderRequest{Account: account, Instrument: instrument, Action: action,
		OrderType: protocol.OrderTypeMarket, Quantity: qty, TimeInForce: protocol.TimeInForceDay})
	require.NoError(f.t, err)
}

// rest places a resting buy limit straight to the simulator.
func (f *fixture) rest(account, instrument string, price float64) {
	f.t.Helper()
	_, err := f.sim.SubmitOrder(bg, bridge.OrderRequest{Account: account, Instrument: instrument, Action: protocol.ActionBuy,
		OrderType: protocol.OrderTypeLimit, LimitPrice: price, Quantity: 1, TimeInForce: protocol.TimeInForceGtc})
	require.NoError(f.t, err)
}

// position is the account's signed position in instrument.
func (f *fixture) position(account, instrument string) int {
	f.t.Helper()
	return enginetest.Position(f.t, f.sim, account, instrument)
}

// working counts the account's working orders.
func (f *fixture) working(account string) int {
	f.t.Helper()
	os, err := f.sim.Orders(bg, account)
	require.NoError(f.t, err)
	n := 0
	for _, o := range os {
		if !protocol.TerminalOrderState(o.OrderState) {
			n++
		}
	}
	return n
}

// flat reports whether no account holds a position or a working order.
func (f *fixture) flat() bool {
	for _, a := range []string{"Sim101", "Sim102"} {
		ps, err := f.sim.Positions(bg, a)
		if err != nil || len(ps) > 0 {
			return false
		}
		os, err := f.sim.Orders(bg, a)
		if err != nil {
			return false
		}
		for _, o := range os {
			if !protocol.TerminalOrderState(o.OrderState) {
				return false
			}
		}
	}
	return true
}

func market(account, instrument, action string, qty int) protocol.PlaceOrderArgs {
	return protocol.PlaceOrderArgs{Account: account, Action: action, Instrument: instrument,
		OrderType: protocol.OrderTypeMarket, Quantity: qty, TimeInForce: protocol.TimeInForceDay}
}

func TestNew(t *testing.T) {
	t.Parallel()
	p, err := sim.New(sim.Options{Clock: sim.NewManualClock(start)})
	require.NoError(t, err)
	defer p.Close()
	o, err := ops.New(ops.Options{Platform: p})
	require.NoError(t, err)
	h := &mgmtconfig.Holder{}
	tests := []struct {
		name string
		opts Options
		ok   bool
	}{
		{"complete", Options{Platform: p, Trader: o, Config: h}, true},
		{"no platform", Options{Trader: o, Config: h}, false},
		{"no trader", Options{Platform: p, Config: h}, false},
		{"no config", Options{Platform: p, Trader: o}, false},
		{"negative tick", Options{Platform: p, Trader: o, Config: h, TickInterval: -time.Second}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := New(tt.opts)
			if !tt.ok {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, DefaultTickInterval, e.opts.TickInterval)
			require.Equal(t, ops.Verdict{}, e.Check("Sim101", es, ops.SourceAPI), "no configuration refuses nothing")
		})
	}
}

func TestKillSwitchRefusesEntries(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.trade("Sim101", es, protocol.ActionBuy, 2)
	f.apply(protocol.Config{Controls: protocol.Controls{KillSwitch: true}})

	_, err := f.ops.PlaceOrder(bg, market("Sim101", "ES", protocol.ActionBuy, 1))
	enginetest.RequireBlocked(t, err, ops.RuleKillSwitch)
	_, err = f.ops.PlaceOrder(bg, market("Sim102", "NQ", protocol.ActionSell, 1))
	enginetest.RequireBlocked(t, err, ops.RuleKillSwitch)
	_, err = f.ops.Submit(ops.WithSource(bg, ops.SourceCopier), enginetest.MarketOrder("Sim102", es, protocol.ActionBuy, 1))
	enginetest.RequireBlocked(t, err, ops.RuleKillSwitch)
	_, err = f.ops.PlaceOrder(bg, market("Sim101", "ES", protocol.ActionSell, 3))
	enginetest.RequireBlocked(t, err, ops.RuleKillSwitch) // it would reverse to short 1
	bypass := protocol.WithCallOptions(bg, protocol.CallOptions{BypassWindows: true})
	_, err = f.ops.PlaceOrder(bypass, market("Sim101", "ES", protocol.ActionBuy, 1))
	enginetest.RequireBlocked(t, err, ops.RuleKillSwitch) // bypassing the windows bypasses no kill switch
	require.Equal(t, 2, f.position("Sim101", es))

	_, err = f.ops.PlaceOrder(bg, market("Sim101", "ES", protocol.ActionSell, 1))
	require.NoError(t, err, "a reducing order passes")
	require.Equal(t, 1, f.position("Sim101", es))
	_, err = f.ops.Flatten(bg, protocol.FlattenArgs{Account: "Sim101"})
	require.NoError(t, err, "a flatten passes")
	require.Zero(t, f.position("Sim101", es))
	require.Empty(t, f.trader.calls(), "no flatten without flattenOnKill")

	f.apply(protocol.Config{Controls: protocol.Controls{KillSwitch: false}})
	_, err = f.ops.PlaceOrder(bg, market("Sim101", "ES", protocol.ActionBuy, 1))
	require.NoError(t, err, "off: normal")
	require.Equal(t, 1, f.position("Sim101", es))
}

func TestKillSwitchFlattensEverything(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.trade("Sim101", es, protocol.ActionBuy, 2)
	f.trade("Sim101", nq, protocol.ActionSell, 1)
	f.trade("Sim102", es, protocol.ActionSell, 3)
	f.rest("Sim102", nq, 20000) // an order without a position
	f.apply(protocol.Config{Controls: protocol.Controls{FlattenOnKill: true}})
	f.run()

	f.apply(protocol.Config{Controls: protocol.Controls{KillSwitch: true, FlattenOnKill: true}})
	require.Eventually(t, f.flat, enginetest.Wait, time.Millisecond, "every account, every instrument, orders cancelled")
	require.Equal(t, []protocol.FlattenArgs{{Force: true}}, f.trader.calls())
	require.True(t, f.eng.Status().KillSwitch)

	// Positions opened in the platform while the switch is on stay.
	f.trade("Sim101", es, protocol.ActionBuy, 1)
	f.eng.Tick(bg)
	require.Equal(t, 1, f.position("Sim101", es))
	require.Len(t, f.trader.calls(), 1)

	// Off, then on again: flattened again.
	f.apply(protocol.Config{Controls: protocol.Controls{FlattenOnKill: true}})
	require.Eventually(t, func() bool {
		f.eng.mu.Lock()
		defer f.eng.mu.Unlock()
		return !f.eng.killOn
	}, enginetest.Wait, time.Millisecond)
	f.apply(protocol.Config{Controls: protocol.Controls{KillSwitch: true, FlattenOnKill: true}})
	require.Eventually(t, f.flat, enginetest.Wait, time.Millisecond)
	require.Len(t, f.trader.calls(), 2)
}

func TestKillSwitchOnAtStart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		flatten bool
	}{
		{"flattenOnKill re-flattens", true},
		{"without flattenOnKill nothing", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.trade("Sim101", es, protocol.ActionBuy, 2)
			// The saved configuration the agent starts with.
			f.apply(protocol.Config{Controls: protocol.Controls{KillSwitch: true, FlattenOnKill: tt.flatten}})
			f.eng.Tick(bg)
			require.Equal(t, tt.flatten, f.flat())
			f.trade("Sim101", es, protocol.ActionBuy, 1)
			f.eng.Tick(bg)
			require.False(t, f.flat(), "once only")
		})
	}
}

func TestKillSwitchRetriesFailedFlatten(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.trade("Sim101", es, protocol.ActionBuy, 2)
	f.trader.fail = 2 // the flatten of everything, and the sweep's one flatten
	f.apply(protocol.Config{Controls: protocol.Controls{KillSwitch: true, FlattenOnKill: true}})
	f.eng.Tick(bg)
	require.Len(t, f.trader.calls(), 2)
	require.Equal(t, 2, f.position("Sim101", es))

	f.eng.Tick(bg)
	require.Len(t, f.trader.calls(), 2, "not before the retry wait")
	f.clock.Advance(retryMin)
	f.eng.Tick(bg)
	require.Len(t, f.trader.calls(), 3)
	require.True(t, f.flat())
	f.clock.Advance(retryMax)
	f.eng.Tick(bg)
	require.Len(t, f.trader.calls(), 3, "done")
}

func TestKillSwitchSweepsPastFailure(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.trade("Sim101", es, protocol.ActionBuy, 2)
	f.trade("Sim102", nq, protocol.ActionBuy, 1)
	f.trader.fail = 1 // the flatten of everything fails; the sweep goes account by account
	f.apply(protocol.Config{Controls: protocol.Controls{KillSwitch: true, FlattenOnKill: true}})
	f.eng.Tick(bg)
	require.True(t, f.flat())
	require.Equal(t, []protocol.FlattenArgs{{Force: true},
		{Account: "Sim101", Instrument: es, Force: true}, {Account: "Sim102", Instrument: nq, Force: true}}, f.trader.calls())
}

func TestBlockAllSignals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.trade("Sim101", es, protocol.ActionBuy, 2)
	f.apply(protocol.Config{Controls: protocol.Controls{BlockAllSignals: true}})

	_, err := f.ops.PlaceOrder(bg, market("Sim102", "ES", protocol.ActionBuy, 1))
	enginetest.RequireBlocked(t, err, ops.RuleBlockAllSignals)
	_, err = f.ops.PlaceOrder(bg, market("Sim101", "ES", protocol.ActionSell, 1))
	enginetest.RequireBlocked(t, err, ops.RuleBlockAllSignals) // even reducing
	_, err = f.ops.Submit(bg, enginetest.MarketOrder("Sim101", es, protocol.ActionBuy, 1))
	enginetest.RequireBlocked(t, err, ops.RuleBlockAllSignals) // no source is the API
	_, err = f.ops.PlaceOrder(protocol.WithCallOptions(bg, protocol.CallOptions{BypassWindows: true}), market("Sim102", "ES", protocol.ActionBuy, 1))
	enginetest.RequireBlocked(t, err, ops.RuleBlockAllSignals) // bypassing the windows is still the API
	require.Equal(t, 2, f.position("Sim101", es))

	_, err = f.ops.Submit(ops.WithSource(bg, ops.SourceCopier), enginetest.MarketOrder("Sim102", es, protocol.ActionBuy, 1))
	require.NoError(t, err, "copier orders pass")
	_, err = f.ops.Submit(ops.WithSource(bg, ops.SourceEngine), enginetest.MarketOrder("Sim101", es, protocol.ActionSell, 2))
	require.NoError(t, err, "engine orders pass")
	require.Equal(t, 1, f.position("Sim102", es))
	require.Zero(t, f.position("Sim101", es))
	_, err = f.ops.Flatten(bg, protocol.FlattenArgs{})
	require.NoError(t, err, "a flatten from the API passes")
	require.True(t, f.flat())
	require.True(t, f.eng.Status().BlockAllSignals)
}

// news is a lockout of one event at 16:00 with 5 minutes before and 10
// after.
var newsAt = time.Date(2026, time.October, 5, 16, 0, 0, 0, time.UTC)

func news(action string, roots ...string) protocol.NewsLockout {
	return protocol.NewsLockout{Enabled: true, Events: []protocol.NewsEvent{{At: newsAt, Title: "CPI", Impact: "high"}},
		MinutesBefore: 5, MinutesAfter: 10, Roots: roots, Action: action}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	inWindow := newsAt
	tests := []struct {
		name       string
		cfg        protocol.Config
		at         time.Time
		instrument string
		src        ops.Source
		any        *ops.Block
		entries    *ops.Block
	}{
		{"nothing", protocol.Config{}, inWindow, es, ops.SourceAPI, nil, nil},
		{"kill switch, copier", protocol.Config{Controls: protocol.Controls{KillSwitch: true}}, start, es, ops.SourceCopier, nil, KillBlock},
		{"kill switch, engine", protocol.Config{Controls: protocol.Controls{KillSwitch: true}}, start, es, ops.SourceEngine, nil, KillBlock},
		{"block all, api", protocol.Config{Controls: protocol.Controls{BlockAllSignals: true}}, start, es, ops.SourceAPI, blockAllBlock, nil},
		{"block all, copier", protocol.Config{Controls: protocol.Controls{BlockAllSignals: true}}, start, es, ops.SourceCopier, nil, nil},
		{"all three", protocol.Config{Controls: protocol.Controls{KillSwitch: true, BlockAllSignals: true}, NewsLockout: news(protocol.NewsBlock)},
			inWindow, es, ops.SourceAPI, blockAllBlock, KillBlock},
		{"block all and news", protocol.Config{Controls: protocol.Controls{BlockAllSignals: true}, NewsLockout: news(protocol.NewsBlock)},
			inWindow, es, ops.SourceAPI, blockAllBlock, newsBlock},
		{"news, copier", protocol.Config{NewsLockout: news(protocol.NewsFlatten)}, inWindow, nq, ops.SourceCopier, nil, newsBlock},
		{"news outside the window", protocol.Config{NewsLockout: news(protocol.NewsBlock)}, start, es, ops.SourceAPI, nil, nil},
		{"news disabled", protocol.Config{NewsLockout: func() protocol.NewsLockout { n := news(protocol.NewsBlock); n.Enabled = false; return n }()},
			inWindow, es, ops.SourceAPI, nil, nil},
		{"news, listed root", protocol.Config{NewsLockout: news(protocol.NewsBlock, "ES", "CL")}, inWindow, es, ops.SourceAPI, nil, newsBlock},
		{"news, root in lower case", protocol.Config{NewsLockout: news(protocol.NewsBlock, " es ")}, inWindow, es, ops.SourceAPI, nil, newsBlock},
		{"news, other root", protocol.Config{NewsLockout: news(protocol.NewsBlock, "ES")}, inWindow, nq, ops.SourceAPI, nil, nil},
		{"news, micro of a listed root", protocol.Config{NewsLockout: news(protocol.NewsBlock, "ES")}, inWindow, "MES 12-26", ops.SourceAPI, nil, nil},
		{"news, month-code name", protocol.Config{NewsLockout: news(protocol.NewsBlock, "NQ")}, inWindow, "NQZ6", ops.SourceAPI, nil, newsBlock},
		{"news, unreadable name", protocol.Config{NewsLockout: news(protocol.NewsBlock, "NQ")}, inWindow, "not an instrument", ops.SourceAPI, nil, newsBlock},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := &mgmtconfig.Holder{}
			tt.cfg.Version = 1
			h.Apply(&tt.cfg)
			e, err := New(Options{Platform: nopPlatform{}, Trader: nopTrader{}, Config: h, Now: func() time.Time { return tt.at }})
			require.NoError(t, err)
			v := e.Check("Sim101", tt.instrument, tt.src)
			require.Equal(t, tt.any, v.Any)
			require.Equal(t, tt.entries, v.Entries)
		})
	}
}

func TestNewsWindowEdges(t *testing.T) {
	t.Parallel()
	from, until := newsAt.Add(-5*time.Minute), newsAt.Add(10*time.Minute)
	tests := []struct {
		name    string
		at      time.Time
		blocked bool
	}{
		{"before the window", from.Add(-time.Nanosecond), false},
		{"its start, inclusive", from, true},
		{"the event", newsAt, true},
		{"just before its end", until.Add(-time.Nanosecond), true},
		{"its end, exclusive", until, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.apply(protocol.Config{NewsLockout: news(protocol.NewsBlock, "ES")})
			f.clock.Set(tt.at)
			_, err := f.ops.PlaceOrder(bg, market("Sim101", "ES", protocol.ActionBuy, 1))
			if !tt.blocked {
				require.NoError(t, err)
				require.Nil(t, f.eng.Status().NewsLockout)
				return
			}
			enginetest.RequireBlocked(t, err, ops.RuleNewsLockout)
			require.Equal(t, &protocol.NewsWindow{Title: "CPI", From: from, Until: until, Action: protocol.NewsBlock, Roots: []string{"ES"}},
				f.eng.Status().NewsLockout)
			_, err = f.ops.PlaceOrder(bg, market("Sim101", "NQ", protocol.ActionBuy, 1))
			require.NoError(t, err, "NQ is not locked out")
		})
	}
}

func TestNewsBlockLetsReducingOrdersThrough(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.trade("Sim101", es, protocol.ActionBuy, 2)
	f.apply(protocol.Config{NewsLockout: news(protocol.NewsBlock)})
	f.clock.Set(newsAt)
	f.eng.Tick(bg)
	require.Empty(t, f.trader.calls(), "block never flattens")
	_, err := f.ops.PlaceOrder(bg, market("Sim101", "ES", protocol.ActionBuy, 1))
	enginetest.RequireBlocked(t, err, ops.RuleNewsLockout)
	_, err = f.ops.PlaceOrder(bg, market("Sim101", "ES", protocol.ActionSell, 1))
	require.NoError(t, err)
	require.Equal(t, 1, f.position("Sim101", es))
}

func TestNewsFlatten(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.trade("Sim101", es, protocol.ActionBuy, 2)
	f.trade("Sim101", nq, protocol.ActionBuy, 1)
	f.trade("Sim102", es, protocol.ActionSell, 1)
	f.rest("Sim102", es, 5000)
	n := news(protocol.NewsFlatten, "ES")
	n.Events = append(n.Events, protocol.NewsEvent{At: newsAt.Add(2 * time.Hour), Title: "FOMC"})
	f.apply(protocol.Config{NewsLockout: n})

	f.clock.Set(newsAt.Add(-5*time.Minute - time.Second))
	f.eng.Tick(bg)
	require.Empty(t, f.trader.calls(), "before the window")

	f.clock.Set(newsAt.Add(-5 * time.Minute))
	f.eng.Tick(bg)
	require.Zero(t, f.position("Sim101", es))
	require.Zero(t, f.position("Sim102", es))
	require.Zero(t, f.working("Sim102"), "the ES order is cancelled")
	require.Equal(t, 1, f.position("Sim101", nq), "NQ is not in the roots")
	require.ElementsMatch(t, []protocol.FlattenArgs{
		{Account: "Sim101", Instrument: es, Force: true}, {Account: "Sim102", Instrument: es, Force: true}}, f.trader.calls())

	// Once per window: a position opened in the platform meanwhile stays.
	f.trade("Sim101", es, protocol.ActionBuy, 1)
	f.clock.Advance(time.Minute)
	f.eng.Tick(bg)
	require.Equal(t, 1, f.position("Sim101", es))
	require.Len(t, f.trader.calls(), 2)

	// The roots grow inside the window: only the new root is flattened.
	n.Roots = []string{"ES", "NQ"}
	f.apply(protocol.Config{NewsLockout: n})
	f.eng.Tick(bg)
	require.Zero(t, f.position("Sim101", nq))
	require.Equal(t, 1, f.position("Sim101", es))
	require.Len(t, f.trader.calls(), 3)
	f.eng.Tick(bg)
	require.Len(t, f.trader.calls(), 3)

	// After the window, nothing; the next window flattens again.
	f.clock.Set(newsAt.Add(10 * time.Minute))
	f.eng.Tick(bg)
	require.Len(t, f.trader.calls(), 3)
	f.clock.Set(newsAt.Add(2*time.Hour - 5*time.Minute))
	f.eng.Tick(bg)
	require.Zero(t, f.position("Sim101", es))
	require.Len(t, f.trader.calls(), 4)
	require.Equal(t, "FOMC", f.eng.Status().NewsLockout.Title)
}

func TestNewsFlattenOverlappingWindows(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.trade("Sim101", es, protocol.ActionBuy, 1)
	n := news(protocol.NewsFlatten)
	// [15:55, 16:10) and [16:05, 16:20): one window [15:55, 16:20).
	n.Events = append(n.Events, protocol.NewsEvent{At: newsAt.Add(10 * time.Minute), Title: "Claims"})
	f.apply(protocol.Config{NewsLockout: n})

	f.clock.Set(newsAt.Add(-5 * time.Minute))
	f.eng.Tick(bg)
	require.Zero(t, f.position("Sim101", es))
	require.Len(t, f.trader.calls(), 1)

	f.trade("Sim101", es, protocol.ActionBuy, 1)
	f.clock.Set(newsAt.Add(5 * time.Minute)) // the second event's window opens
	f.eng.Tick(bg)
	require.Equal(t, 1, f.position("Sim101", es), "the merged window was flattened already")
	require.Len(t, f.trader.calls(), 1)
	require.Equal(t, &protocol.NewsWindow{Title: "CPI; Claims", From: newsAt.Add(-5 * time.Minute),
		Until: newsAt.Add(20 * time.Minute), Action: protocol.NewsFlatten}, f.eng.Status().NewsLockout)

	f.clock.Set(newsAt.Add(15 * time.Minute)) // after the first event's window: still locked
	_, err := f.ops.PlaceOrder(bg, market("Sim102", "NQ", protocol.ActionBuy, 1))
	enginetest.RequireBlocked(t, err, ops.RuleNewsLockout)
}

func TestMergeWindows(t *testing.T) {
	t.Parallel()
	at := func(m int) time.Time { return newsAt.Add(time.Duration(m) * time.Minute) }
	ev := func(m int, title string) protocol.NewsEvent { return protocol.NewsEvent{At: at(m), Title: title} }
	tests := []struct {
		name          string
		events        []protocol.NewsEvent
		before, after int
		want          []window
	}{
		{"none", nil, 5, 5, []window{}},
		{"apart", []protocol.NewsEvent{ev(30, "B"), ev(0, "A")}, 5, 5,
			[]window{{at(-5), at(5), "A"}, {at(25), at(35), "B"}}},
		{"overlapping", []protocol.NewsEvent{ev(0, "A"), ev(5, "B")}, 5, 5, []window{{at(-5), at(10), "A; B"}}},
		{"touching", []protocol.NewsEvent{ev(0, "A"), ev(10, "B")}, 5, 5, []window{{at(-5), at(15), "A; B"}}},
		{"inside another", []protocol.NewsEvent{ev(0, "A"), ev(1, "A")}, 5, 30, []window{{at(-5), at(31), "A"}}},
		{"only before", []protocol.NewsEvent{ev(0, "A")}, 5, 0, []window{{at(-5), at(0), "A"}}},
		{"empty window", []protocol.NewsEvent{ev(0, "A")}, 0, 0, []window{}},
		{"negative minutes", []protocol.NewsEvent{ev(0, "A")}, -5, 5, []window{{at(0), at(5), "A"}}},
		{"no time", []protocol.NewsEvent{{Title: "A"}}, 5, 5, []window{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := mergeWindows(protocol.NewsLockout{Events: tt.events, MinutesBefore: tt.before, MinutesAfter: tt.after})
			require.Equal(t, tt.want, got)
		})
	}
}

func TestRunReturnsWhenContextEnds(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() { done <- f.eng.Run(ctx) }()
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(enginetest.Wait):
		t.Fatal("Run did not return")
	}
}

// nopPlatform and nopTrader stand in where Check alone is tested.
type nopPlatform struct{ bridge.Platform }

type nopTrader struct{ engine.Trader }
