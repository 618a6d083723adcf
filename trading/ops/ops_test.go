package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/bridgetest"
	"tradebridge/trading/bridge/ninjatrader/ntfake"
	"tradebridge/trading/bridge/sim"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start is a Monday in October 2026, 10:30 in New York, when ES 12-26 is
// the front month and the market is open.
var start = time.Date(2026, time.October, 5, 14, 30, 0, 0, time.UTC)

const es = "ES 12-26"

var bg = context.Background()

// recorder wraps the simulator: it records every call that changes
// something on the platform, and lets a test replace some of them.
type recorder struct {
	bridge.Platform
	mu     sync.Mutex
	writes []string
	// flatten, when set, replaces Flatten (e.g. a platform that is slow to
	// close).
	flatten func(ctx context.Context, account, instrument string) error
	// submit, when set, runs before SubmitOrder and may refuse it.
	submit func(req bridge.OrderRequest) error
}

func (r *recorder) note(s string) {
	r.mu.Lock()
	r.writes = append(r.writes, s)
	r.mu.Unlock()
}

// Writes returns the write calls made so far.
func (r *recorder) Writes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.writes...)
}

func (r *recorder) SubmitOrder(ctx context.Context, req bridge.OrderRequest) (protocol.Order, error) {
	r.note("submit " + req.Action + " " + req.OrderType)
	if r.submit != nil {
		if err := r.submit(req); err != nil {
			return protocol.Order{}, err
		}
	}
	return r.Platform.SubmitOrder(ctx, req)
}

func (r *recorder) CancelOrder(ctx context.Context, account, id string) (protocol.Order, error) {
	r.note("cancel " + id)
	return r.Platform.CancelOrder(ctx, account, id)
}

func (r *recorder) ChangeOrder(ctx context.Context, req bridge.ChangeRequest) (protocol.Order, error) {
	r.note("change " + req.OrderID)
	return r.Platform.ChangeOrder(ctx, req)
}

func (r *recorder) Flatten(ctx context.Context, account, instrument string) error {
	r.note("flatten " + instrument)
	if r.flatten != nil {
		return r.flatten(ctx, account, instrument)
	}
	return r.Platform.Flatten(ctx, account, instrument)
}

func (r *recorder) StartStrategy(ctx context.Context, req bridge.StrategyRequest) (protocol.Strategy, error) {
	r.note("start " + req.Class)
	return r.Platform.StartStrategy(ctx, req)
}

func (r *recorder) SetStrategyState(ctx context.Context, account, id string, action bridge.StrategyAction) (protocol.Strategy, error) {
	r.note("strategy " + string(action))
	return r.Platform.SetStrategyState(ctx, account, id, action)
}

// platforms are the platforms the operations' tests run on: each builds a
// platform over a simulated market (see bridgetest.Factory). "lagging"
// sees the market's moves only when settled, as a bridge over a connection
// does.
var platforms = []struct {
	name string
	new  bridgetest.Factory
}{
	{"sim", bridgetest.Sim},
	{"lagging", bridgetest.Lagging},
	{"ninjatrader", ntfake.Factory},
}

// fixtureMaker builds a fixture on one platform.
type fixtureMaker = func(t testing.TB, tune ...func(*Options)) *fixture

// onEachPlatform runs body as a subtest for each of platforms, with a
// newFixture that builds fixtures on that platform.
func onEachPlatform(t *testing.T, body func(t *testing.T, newFixture fixtureMaker)) {
	t.Helper()
	for _, p := range platforms {
		t.Run(p.name, func(t *testing.T) {
			body(t, func(t testing.TB, tune ...func(*Options)) *fixture { return newFixtureOn(t, p.new, tune...) })
		})
	}
}

// fixture is Ops over a recorded platform over a simulated market on a
// manual clock. Waits go through sleep, which records them, runs onSleep,
// lets the platform catch up with the market, and returns at once.
//
// Nothing in it assumes the platform is the simulator: the trader's own
// activity goes through the platform (unrecorded), the market moves
// through sim and clock, and every read of the platform's state first lets
// it catch up with the market (settle).
type fixture struct {
	t testing.TB
	// platform is the platform under test, not recorded.
	platform bridge.Platform
	// sim is the market the platform reflects; tests move its prices.
	sim     *sim.Platform
	clock   *sim.ManualClock
	settleH func(testing.TB) // the harness's Settle; nil for the simulator
	rec     *recorder
	ops     *Ops
	mu      sync.Mutex
	sleeps  []time.Duration
	onSleep func(n int) // called with the number of the sleep, from 1
}

// newFixture builds a fixture on the simulator.
func newFixture(t testing.TB, tune ...func(*Options)) *fixture {
	t.Helper()
	return newFixtureOn(t, bridgetest.Sim, tune...)
}

// newFixtureOn builds a fixture on the platform newHarness makes, with the
// market's clock at start and ES at 6000.
func newFixtureOn(t testing.TB, newHarness bridgetest.Factory, tune ...func(*Options)) *fixture {
	t.Helper()
	h := newHarness(t, sim.Options{Clock: sim.NewManualClock(start)})
	require.NotNil(t, h.Clock)
	f := &fixture{t: t, platform: h.Platform, sim: h.Market, clock: h.Clock, settleH: h.Settle,
		rec: &recorder{Platform: h.Platform}}
	opts := Options{Platform: f.rec, Now: f.clock.Now, Sleep: f.sleep, NewOcoID: func() string { return "oco-generated" }}
	for _, fn := range tune {
		fn(&opts)
	}
	var err error
	f.ops, err = New(opts)
	require.NoError(t, err)
	f.setPrice(es, 6000)
	return f
}

// settle waits until the platform has seen everything the market
// published.
func (f *fixture) settle() {
	f.t.Helper()
	if f.settleH != nil {
		f.settleH(f.t)
	}
}

// setPrice moves the market of an instrument and lets the platform see it.
func (f *fixture) setPrice(instrument string, last float64) {
	f.t.Helper()
	require.NoError(f.t, f.sim.SetPrice(instrument, last))
	f.settle()
}

func (f *fixture) sleep(ctx context.Context, d time.Duration) error {
	f.mu.Lock()
	f.sleeps = append(f.sleeps, d)
	n := len(f.sleeps)
	hook := f.onSleep
	f.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	f.settle()
	return ctx.Err()
}

func (f *fixture) Sleeps() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.sleeps...)
}

// market submits a market order straight to the platform (not through
// Ops and not recorded): the trader's own activity.
func (f *fixture) market(account, action string, qty int) protocol.Order {
	f.t.Helper()
	return f.trade(bridge.OrderRequest{Account: account, Instrument: es, Action: action,
		OrderType: protocol.OrderTypeMarket, Quantity: qty, TimeInForce: protocol.TimeInForceDay})
}

// resting submits a resting order straight to the platform.
func (f *fixture) resting(account, action, typ string, price float64, qty int) protocol.Order {
	f.t.Helper()
	req := bridge.OrderRequest{Account: account, Instrument: es, Action: action, OrderType: typ,
		Quantity: qty, TimeInForce: protocol.TimeInForceGtc}
	if typ == protocol.OrderTypeLimit {
		req.LimitPrice = price
	} else {
		req.StopPrice = price
	}
	return f.trade(req)
}

// trade submits an order straight to the platform, and lets the platform
// catch up with its effects.
func (f *fixture) trade(req bridge.OrderRequest) protocol.Order {
	f.t.Helper()
	o, err := f.platform.SubmitOrder(bg, req)
	require.NoError(f.t, err)
	f.settle()
	return o
}

// position returns the signed position of account in ES 12-26.
func (f *fixture) position(account string) int {
	f.t.Helper()
	f.settle()
	ps, err := f.platform.Positions(bg, account)
	require.NoError(f.t, err)
	for _, p := range ps {
		if p.Instrument == es {
			return signedQty(p)
		}
	}
	return 0
}

// working returns the account's non-terminal orders.
func (f *fixture) working(account string) []protocol.Order {
	f.t.Helper()
	f.settle()
	orders, err := f.platform.Orders(bg, account)
	require.NoError(f.t, err)
	var out []protocol.Order
	for _, o := range orders {
		if !protocol.TerminalOrderState(o.OrderState) {
			out = append(out, o)
		}
	}
	return out
}

// order returns one order of the account by id.
func (f *fixture) order(account, id string) protocol.Order {
	f.t.Helper()
	f.settle()
	orders, err := f.platform.Orders(bg, account)
	require.NoError(f.t, err)
	for _, o := range orders {
		if o.OrderID == id {
			return o
		}
	}
	f.t.Fatalf("no order %s", id)
	return protocol.Order{}
}

// requireCode checks that err is a wire error with code, whose detail does
// not repeat any of the given inputs.
func requireCode(t *testing.T, err error, code string, inputs ...string) {
	t.Helper()
	require.Error(t, err)
	pe, ok := err.(*protocol.Error)
	require.True(t, ok, "a wire error, got %T %v", err, err)
	require.Equal(t, code, pe.Code, pe.Detail)
	for _, in := range inputs {
		require.NotContains(t, pe.Detail, in, "errors never repeat the caller's input")
	}
}

func ptr[T any](v T) *T { return &v }

// shape marshals v and decodes it into a map, to check field names.
func shape(t *testing.T, v any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

func TestNewOptions(t *testing.T) {
	p, err := sim.New(sim.Options{})
	require.NoError(t, err)
	defer p.Close()
	for _, tc := range []struct {
		name string
		opts Options
		ok   bool
	}{
		{"no platform", Options{}, false},
		{"defaults", Options{Platform: p}, true},
		{"negative delay", Options{Platform: p, BracketDelay: -1}, false},
		{"negative clear timeout", Options{Platform: p, ClearTimeout: -1}, false},
		{"negative poll", Options{Platform: p, PollInterval: -1}, false},
		{"poll above timeout", Options{Platform: p, ClearTimeout: time.Second, PollInterval: 2 * time.Second}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := New(tc.opts)
			if !tc.ok {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, DefaultBracketDelay, o.opts.BracketDelay)
			require.Equal(t, DefaultClearTimeout, o.opts.ClearTimeout)
			require.Equal(t, DefaultPollInterval, o.opts.PollInterval)
			require.NotEmpty(t, o.opts.NewOcoID())
		})
	}
}

// The default sleep waits, and stops early when ctx ends.
func TestDefaultSleep(t *testing.T) {
	require.NoError(t, sleep(bg, 0))
	ctx, cancel := context.WithCancel(bg)
	cancel()
	require.ErrorIs(t, sleep(ctx, time.Hour), context.Canceled)
}

func TestLockerRespectsContext(t *testing.T) {
	l := newLocker()
	k := key{"A", es}
	unlock, err := l.lock(bg, k)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(bg)
	cancel()
	_, err = l.lock(ctx, k)
	requireCode(t, err, protocol.CodeCancelled)
	// Another key is independent.
	unlock2, err := l.lock(bg, key{"A", "NQ 12-26"})
	require.NoError(t, err)
	unlock2()
	unlock()
	unlock, err = l.lock(bg, k)
	require.NoError(t, err)
	unlock()
}

func TestIDMap(t *testing.T) {
	m := newIDMap(2)
	require.Equal(t, "a", m.currentID("a"))
	require.Equal(t, []string{"a"}, m.all("a"))
	m.changed("a", "b")
	m.changed("b", "c")
	require.Equal(t, "c", m.currentID("a"))
	require.Equal(t, "c", m.currentID("b"))
	require.Equal(t, "a", m.original("c"))
	require.Equal(t, []string{"a", "b", "c"}, m.all("b"))
	m.changed("x", "x") // no change
	require.Equal(t, []string{"x"}, m.all("x"))
	m.changed("x", "y") // a third alias: the oldest family goes
	require.Equal(t, "y", m.currentID("x"))
	require.Equal(t, []string{"a"}, m.all("a"))
}

func TestWireError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code string
	}{
		{&bridge.RejectError{Reason: "market is closed"}, protocol.CodeOrderRejected},
		{fmt.Errorf("x: %w", bridge.ErrAccountNotFound), protocol.CodeAccountNotFound},
		{fmt.Errorf("x: %w", bridge.ErrInstrumentUnknown), protocol.CodeInvalidInstrument},
		{fmt.Errorf("x: %w", bridge.ErrOrderNotFound), protocol.CodeOrderNotFound},
		{fmt.Errorf("x: %w", bridge.ErrNotConnected), protocol.CodePlatformUnavailable},
		{fmt.Errorf("x: %w", bridge.ErrTemplateNotFound), protocol.CodeTemplateNotFound},
		{fmt.Errorf("x: %w", bridge.ErrStrategyNotFound), protocol.CodeStrategyNotFound},
		{fmt.Errorf("x: %w", bridge.ErrStrategyClass), protocol.CodeInvalidArgument},
		{fmt.Errorf("x: %w", bridge.ErrStrategyTerminal), protocol.CodeStrategyTerminal},
		{&bridge.RequestError{Reason: "from must not be after to", Err: sim.ErrBadBarsRequest}, protocol.CodeInvalidArgument},
		{fmt.Errorf("x: %w", &bridge.RequestError{Reason: "mode is wrong"}), protocol.CodeInvalidArgument},
		{context.DeadlineExceeded, protocol.CodeDeadlineExceeded},
		{context.Canceled, protocol.CodeCancelled},
		{protocol.NewError(protocol.CodeNoPosition, "x"), protocol.CodeNoPosition},
		{&bridge.RejectError{Reason: "the position limit is reached", Code: "tradovate_max_pos_limit_reached"}, "tradovate_max_pos_limit_reached"},
		{fmt.Errorf("x: %w", &bridge.RejectError{Reason: "r", Code: "broker_code"}), "broker_code"},
		{&bridge.NotSupportedError{What: "bars", Reason: "read bars from a market-data service"}, protocol.CodeNotSupported},
		{fmt.Errorf("x: %w", &bridge.NotSupportedError{What: "strategies"}), protocol.CodeNotSupported},
		{fmt.Errorf("x: %w", bridge.ErrNotSupported), protocol.CodeNotSupported},
	} {
		requireCode(t, wireError(tc.err), tc.code)
	}
	// A coded rejection keeps its reason as the detail; a NotSupportedError
	// says what is missing and what to do instead.
	require.Equal(t, protocol.NewError("tradovate_max_pos_limit_reached", "the position limit is reached"),
		wireError(&bridge.RejectError{Reason: "the position limit is reached", Code: "tradovate_max_pos_limit_reached"}))
	require.Equal(t, protocol.NewError(protocol.CodeOrderRejected, "market is closed"),
		wireError(&bridge.RejectError{Reason: "market is closed"}))
	require.Equal(t, protocol.NewError(protocol.CodeNotSupported, "the trading platform does not support bars: read bars from a market-data service"),
		wireError(&bridge.NotSupportedError{What: "bars", Reason: "read bars from a market-data service"}))
	require.NoError(t, wireError(nil))
	err := wireError(errors.New("disk on fire"))
	var pe *protocol.Error
	require.False(t, errors.As(err, &pe), "unknown failures stay internal (the dispatcher answers internal_error)")
	reason, ok := badRequest(fmt.Errorf("x: %w", &bridge.RequestError{Reason: "from must not be after to", Err: sim.ErrBadBarsRequest}))
	require.True(t, ok)
	require.Equal(t, "from must not be after to", reason)
}

// Every operation reports a platform that is gone as platform_unavailable.
func TestPlatformGone(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, f.platform.Close())
	for name, call := range map[string]func() error{
		"ListAccounts": func() error { _, err := f.ops.ListAccounts(bg, protocol.NoArgs{}); return err },
		"GetAccountSummary": func() error {
			_, err := f.ops.GetAccountSummary(bg, protocol.NoArgs{})
			return err
		},
		"ListPositions": func() error {
			_, err := f.ops.ListPositions(bg, protocol.AccountArgs{Account: "Sim101"})
			return err
		},
		"GetAllOrders":    func() error { _, err := f.ops.GetAllOrders(bg, protocol.AllOrdersArgs{}); return err },
		"GetAtmTemplates": func() error { _, err := f.ops.GetAtmTemplates(bg, protocol.NoArgs{}); return err },
		"PlaceOrder":      func() error { _, err := f.ops.PlaceOrder(bg, marketArgs("Buy", 1)); return err },
		"FlattenAll":      func() error { _, err := f.ops.FlattenEverything(bg, protocol.NoArgs{}); return err },
		"CancelAllOrders": func() error { _, err := f.ops.CancelAllOrders(bg, protocol.NoArgs{}); return err },
		"ListAllStrategies": func() error {
			_, err := f.ops.ListAllStrategies(bg, protocol.AllStrategiesArgs{})
			return err
		},
		"GetQuote": func() error { _, err := f.ops.GetQuote(bg, protocol.QuoteArgs{Root: "ES"}); return err },
	} {
		requireCode(t, call(), protocol.CodePlatformUnavailable, name)
	}
}

func TestCloseStrategyOwnership(t *testing.T) {
	f := newFixture(t)
	s, err := f.ops.StartStrategy(bg, protocol.StartStrategyArgs{Account: "Sim101", StrategyClass: "SampleMACrossOver", Instrument: "ES", Mode: "disabled"})
	require.NoError(t, err)
	require.Equal(t, protocol.StrategyStateDisabled, s.State)
	a := marketArgs("Buy", 1)
	a.StrategyTag = "botA"
	_, err = f.ops.PlaceOrder(bg, a)
	require.NoError(t, err)
	_, err = f.ops.CloseStrategy(bg, protocol.CloseStrategyArgs{Account: "Sim101", ID: s.ID, StrategyTag: "botB"})
	requireCode(t, err, protocol.CodePositionOwned, "botB")
	_, err = f.ops.CloseStrategy(bg, protocol.CloseStrategyArgs{Account: "Sim101", StrategyID: s.ID, StrategyTag: "botB", Force: true})
	require.NoError(t, err)
	_, err = f.ops.CloseStrategy(bg, protocol.CloseStrategyArgs{Account: "Sim101"})
	requireCode(t, err, protocol.CodeMissingFields)
}

func TestInstrumentCache(t *testing.T) {
	var c instrumentCache
	info := protocol.InstrumentInfo{Instrument: es}
	_, ok := c.get("ES", start)
	require.False(t, ok)
	c.put("ES", info, start)
	got, ok := c.get("ES", start.Add(999*time.Millisecond))
	require.True(t, ok)
	require.Equal(t, info, got)
	_, ok = c.get("ES", start.Add(time.Second))
	require.False(t, ok, "expired after a second of the platform's clock")
	_, ok = c.get("ES", start.Add(-time.Millisecond))
	require.False(t, ok, "a clock that went back does not trust the entry")
	for i := range maxCachedInstruments + 1 {
		c.put(fmt.Sprint(i), info, start)
	}
	require.LessOrEqual(t, len(c.m), maxCachedInstruments)
}
