package monitor

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/engine"
	"tradebridge/trading/engine/enginetest"
	"tradebridge/trading/mgmtconfig"
	"tradebridge/trading/ops"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	es    = "ES"
	acct  = "Sim101"
	other = "Sim102"
	// wait bounds every require.Eventually.
	wait = testkit.Medium
	tick = time.Millisecond
)

var bg = context.Background()

// ny is a wall time in New York.
func ny(year int, month time.Month, day, hour, min int) time.Time {
	return time.Date(year, month, day, hour, min, 0, 0, protocol.NewYork())
}

// wednesday10 is a Wednesday morning, in the middle of a trading session.
var wednesday10 = ny(2026, time.March, 4, 10, 0)

// realNow is the wall clock of the fixtures' engines: a year and a day
// after the simulator's clock, which starts at the tests' market times
// (wednesday10 and others), so that a time taken from the wrong clock
// shows.
var realNow = wednesday10.AddDate(1, 0, 1).Add(1234 * time.Millisecond)

func wallClock() time.Time { return realNow }

// stateLog records OnState calls.
type stateLog struct {
	mu  sync.Mutex
	log []string
}

func (s *stateLog) on(account, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, account+"="+state)
}

func (s *stateLog) Log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

// fixture is a simulator on a manual clock, the real operations gated by
// a monitor engine, and the engine's event stream, pumped by hand.
type fixture struct {
	t       *testing.T
	clock   *sim.ManualClock
	sim     *sim.Platform
	ops     *ops.Ops
	configs *enginetest.Configs
	holder  *mgmtconfig.Holder
	store   engine.MemStore
	rep     *enginetest.Reporter
	states  *stateLog
	e       *Engine
	events  <-chan bridge.Event
}

func newFixture(t *testing.T, at time.Time) *fixture {
	t.Helper()
	m := enginetest.NewMarket(t, at, sim.Options{},
		ops.Options{Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	p := m.Sim
	configs := &enginetest.Configs{}
	f := &fixture{t: t, clock: m.Clock, sim: p, ops: m.Ops, configs: configs, holder: &configs.Holder,
		store: engine.NewMemStore(), rep: &enginetest.Reporter{}, states: &stateLog{}}
	f.e = f.newEngine()
	ctx, cancel := context.WithCancel(bg)
	t.Cleanup(cancel)
	f.events = p.Events(ctx)
	require.NoError(t, p.SetPrice(es, 6000))
	return f
}

// newEngine builds an engine over the fixture's store and gates the
// operations with it: an agent (re)start.
func (f *fixture) newEngine() *Engine {
	f.t.Helper()
	e, err := New(Options{Platform: f.sim, Trader: f.ops, Config: f.holder, Store: f.store, Reporter: f.rep,
		Now: f.clock.Now, Wall: wallClock, OnState: f.states.on})
	require.NoError(f.t, err)
	f.ops.SetGate(e)
	return e
}

// pump hands the engine every event the simulator published so far.
func (f *fixture) pump() {
	for {
		select {
		case ev := <-f.events:
			f.e.handle(bg, ev)
		default:
			return
		}
	}
}

// push applies a configuration of these monitors and lets the engine
// take it (Tick).
func (f *fixture) push(ms ...protocol.Monitor) {
	f.configs.Push(f.t, protocol.Config{Monitors: ms})
	f.e.Tick(bg)
}

// at moves the clock to t and ticks the engine.
func (f *fixture) at(t time.Time) {
	f.clock.Set(t)
	require.NoError(f.t, f.sim.Step(bg))
	f.pump()
	f.e.Tick(bg)
}

func (f *fixture) place(account, action string, qty int) error {
	return f.placeIn(account, es, action, qty)
}

// placeIn places a market order through the operations, from the API.
func (f *fixture) placeIn(account, instrument, action string, qty int) error {
	_, err := f.ops.PlaceOrder(bg, protocol.PlaceOrderArgs{Account: account, Action: action, Instrument: instrument,
		OrderType: protocol.OrderTypeMarket, Quantity: qty, TimeInForce: protocol.TimeInForceDay})
	return err
}

// trade places a market order straight on the simulator (the trader's
// own activity, not gated) and pumps the events.
func (f *fixture) trade(account, action string, qty int) {
	f.t.Helper()
	f.tradeIn(account, es, action, qty)
}

// tradeIn is trade in another instrument.
func (f *fixture) tradeIn(account, instrument, action string, qty int) {
	f.t.Helper()
	_, err := f.sim.SubmitOrder(bg, enginetest.MarketOrder(account, instrument, action, qty))
	require.NoError(f.t, err)
	f.pump()
}

// price moves ES to last and hands the engine the account values the
// simulator publishes for the move.
func (f *fixture) price(last float64) {
	f.t.Helper()
	f.move(last)
	f.pump()
}

// move moves ES to last, for an engine that reads its events itself (Run).
func (f *fixture) move(last float64) {
	f.t.Helper()
	require.NoError(f.t, f.sim.SetPrice(es, last))
	require.NoError(f.t, f.sim.Step(bg))
}

// working places a resting buy limit far below the market.
func (f *fixture) working(account string) string {
	f.t.Helper()
	o, err := f.sim.SubmitOrder(bg, bridge.OrderRequest{Account: account, Instrument: es, Action: protocol.ActionBuy,
		OrderType: protocol.OrderTypeLimit, LimitPrice: 5000, Quantity: 1, TimeInForce: protocol.TimeInForceDay})
	require.NoError(f.t, err)
	f.pump()
	return o.OrderID
}

// position returns the account's signed position in the root's contract.
func (f *fixture) position(account, root string) int {
	f.t.Helper()
	return enginetest.Position(f.t, f.sim, account, root)
}

// orderState returns an order's state.
func (f *fixture) orderState(account, id string) string {
	f.t.Helper()
	os, err := f.sim.Orders(bg, account)
	require.NoError(f.t, err)
	for _, o := range os {
		if o.OrderID == id {
			return o.OrderState
		}
	}
	return ""
}

// status returns the account's monitor status.
func (f *fixture) status(account string) protocol.MonitorStatus {
	f.t.Helper()
	for _, s := range f.e.Status() {
		if s.Account == account {
			return s
		}
	}
	f.t.Fatalf("no monitor status for %s", account)
	return protocol.MonitorStatus{}
}

func limit(amount float64) protocol.Limit { return protocol.Limit{Enabled: true, Amount: amount} }

// floor is an enabled minimum-profit drawdown.
func floor(trigger, at float64) protocol.ProfitFloor {
	return protocol.ProfitFloor{Enabled: true, Trigger: trigger, Floor: at}
}

// monitor is an active monitor of the account that flattens on a trip and
// counts realized P&L only.
func monitor(account string) protocol.Monitor {
	return protocol.Monitor{Account: account, Active: true, State: protocol.MonitorActive, OnTrip: protocol.OnTripFlatten,
		MasterWindow: protocol.Window{Days: []string{}}, TradingWindows: []protocol.MonitorWindow{}}
}
