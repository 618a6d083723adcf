package stack_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/bridge/tradovate/tradovatetest"
	"tradebridge/trading/dispatch"
	"tradebridge/trading/engine"
	"tradebridge/trading/engine/enginetest"
	"tradebridge/trading/mgmtconfig"
	"tradebridge/trading/stack"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testStart is a Wednesday at 10:00 New York time: the market is open.
var testStart = time.Date(2026, 11, 18, 15, 0, 0, 0, time.UTC)

// memState is a State in memory whose journal records nothing.
type memState struct{ engine.MemStore }

func newMemState() *memState { return &memState{engine.NewMemStore()} }

func (*memState) BeginWrite(string, [32]byte, time.Time) error               { return nil }
func (*memState) FinishWrite(string, json.RawMessage, *protocol.Error) error { return nil }
func (*memState) LoadWrites(time.Time) ([]dispatch.JournalRecord, error)     { return nil, nil }
func (*memState) PruneWrites(time.Time) error                                { return nil }

// newSim starts a simulator on a manual clock; it closes when the test
// ends.
func newSim(t *testing.T) (*sim.Platform, *sim.ManualClock) {
	t.Helper()
	clock := sim.NewManualClock(testStart)
	p, err := sim.New(sim.Options{Clock: clock})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	require.NoError(t, p.SetPrice("ES 12-26", 6000))
	return p, clock
}

// newStack builds a stack over p on clock, with a recording reporter; its
// logs are observed.
func newStack(t *testing.T, p bridge.Platform, clock *sim.ManualClock) (*stack.Stack, *enginetest.Reporter, *observer.ObservedLogs) {
	t.Helper()
	rep := new(enginetest.Reporter)
	core, logs := observer.New(zap.WarnLevel)
	s, err := stack.New(stack.Options{Platform: p, State: newMemState(), Reporter: rep, Now: clock.Now,
		EngineTick: time.Millisecond, Logger: zap.New(core)})
	require.NoError(t, err)
	return s, rep, logs
}

// apply applies the configuration written as JSON.
func apply(t *testing.T, h *mgmtconfig.Holder, cfg string) {
	t.Helper()
	var c protocol.Config
	require.NoError(t, json.Unmarshal([]byte(cfg), &c))
	require.Equal(t, c.Version, h.Apply(&c))
}

// run runs s until the test ends, and checks then that Run returned nil
// once its context ended.
func run(t *testing.T, s *stack.Stack) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(enginetest.Wait):
			t.Error("Run did not return after its context ended")
		}
	})
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	p, _ := newSim(t)
	valid := func() stack.Options {
		return stack.Options{Platform: p, State: newMemState(), Reporter: new(enginetest.Reporter)}
	}
	for _, tc := range []struct {
		name   string
		change func(*stack.Options)
		field  string
	}{
		{"no platform", func(o *stack.Options) { o.Platform = nil }, "Platform"},
		{"no state", func(o *stack.Options) { o.State = nil }, "State"},
		{"no reporter", func(o *stack.Options) { o.Reporter = nil }, "Reporter"},
		{"a negative tick", func(o *stack.Options) { o.EngineTick = -time.Second }, "EngineTick"},
		{"options of the operations they refuse", func(o *stack.Options) { o.Ops.BracketDelay = -1 }, "BracketDelay"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := valid()
			tc.change(&opts)
			s, err := stack.New(opts)
			require.Error(t, err)
			require.Nil(t, s)
			require.Contains(t, err.Error(), tc.field)
			if tc.field != "BracketDelay" {
				require.ErrorIs(t, err, stack.ErrInvalidOptions)
			}
		})
	}
	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		s, err := stack.New(valid())
		require.NoError(t, err)
		require.NotNil(t, s.Config, "a configuration is made when none is given")
		require.Zero(t, s.Config.Version())
	})
	t.Run("the configuration given", func(t *testing.T) {
		t.Parallel()
		opts := valid()
		opts.Config = new(mgmtconfig.Holder)
		s, err := stack.New(opts)
		require.NoError(t, err)
		require.Same(t, opts.Config, s.Config)
	})
}

// The dispatcher serves every public function of the protocol: they are
// all the operations'.
func TestOperationsRegistered(t *testing.T) {
	t.Parallel()
	p, clock := newSim(t)
	s, _, _ := newStack(t, p, clock)
	for _, f := range protocol.Functions {
		require.Contains(t, s.Dispatcher.Functions(), f.Name)
	}
	for _, f := range protocol.InternalFunctions {
		if f.Name == protocol.FnApplyConfig || f.Name == protocol.FnEngineStatus || f.Name == protocol.FnCheckMonitorRestart {
			require.NotContains(t, s.Dispatcher.Functions(), f.Name, "the caller's own function")
		}
	}
}

// The controls are the operations' gate: with the kill switch on, an
// order that opens is refused through the dispatcher, one that reduces
// passes.
func TestGateThroughTheDispatcher(t *testing.T) {
	t.Parallel()
	p, clock := newSim(t)
	s, _, _ := newStack(t, p, clock)
	place := func(action string, qty int) *protocol.Error {
		b, err := json.Marshal(map[string]any{"account": "Sim101", "action": action, "instrument": "ES 12-26",
			"orderType": "Market", "quantity": qty, "timeInForce": "Day"})
		require.NoError(t, err)
		_, perr := s.Dispatcher.Handle(context.Background(), &protocol.Request{Fn: protocol.FnPlaceOrder, Args: b})
		return perr
	}
	require.Nil(t, place("Buy", 2))
	apply(t, s.Config, `{"version":1,"controls":{"killSwitch":true}}`)
	perr := place("Buy", 1)
	require.NotNil(t, perr)
	require.Equal(t, protocol.CodeTradingBlocked, perr.Code)
	require.Contains(t, perr.Detail, "(rule: killSwitch)")
	require.Nil(t, place("Sell", 1), "reducing passes")
}

// A monitor that trips reaches the copiers: the tandem copier that copies
// to its account halts, and the reporter hears of both.
func TestMonitorTripHaltsTandemCopier(t *testing.T) {
	t.Parallel()
	p, clock := newSim(t)
	s, rep, _ := newStack(t, p, clock)
	apply(t, s.Config, `{"version":1,
		"monitors":[{"account":"Sim102","active":true,"state":"active","masterWindow":{"days":[]},
			"lossLimit":{"enabled":true,"amount":100},"includeUnrealized":true}],
		"copiers":[{"id":"c1","active":true,"leader":"Sim101","followers":[{"account":"Sim102"}],
			"copyMode":"execution","tandem":true}]}`)
	run(t, s)
	require.Eventually(t, func() bool {
		st := s.Copiers.Status()
		return len(st) == 1 && st[0].State == protocol.CopierRunning
	}, enginetest.Wait, time.Millisecond)

	// Sim102 loses 50 points of ES (2,500 USD): its monitor trips.
	_, err := p.SubmitOrder(context.Background(), bridge.OrderRequest{Account: "Sim102", Instrument: "ES 12-26",
		Action: "Buy", OrderType: "Market", Quantity: 1, TimeInForce: "Day"})
	require.NoError(t, err)
	require.NoError(t, p.SetPrice("ES 12-26", 5950))
	require.Eventually(t, func() bool {
		st := s.Copiers.Status()
		return len(st) == 1 && st[0].State == protocol.CopierHalted
	}, enginetest.Wait, time.Millisecond)
	require.Contains(t, s.Copiers.Status()[0].Reason, "Sim102")
	require.NotEmpty(t, rep.Monitors())
	require.NotEmpty(t, rep.Copiers())
}

// closedEvents is a platform whose event stream ends at once.
type closedEvents struct{ *sim.Platform }

func (closedEvents) Events(context.Context) <-chan bridge.Event {
	ch := make(chan bridge.Event)
	close(ch)
	return ch
}

// Run returns once its context ended and the engines stopped; an engine
// that failed before is logged at once, and is in what Run returns.
func TestRunStops(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		closed bool
		want   string
	}{
		{"on its context", false, ""},
		{"with the engines that failed early", true, "stack: the monitors stopped early"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sp, clock := newSim(t)
			var p bridge.Platform = sp
			if tc.closed {
				p = closedEvents{sp}
			}
			s, _, logs := newStack(t, p, clock)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- s.Run(ctx) }()
			if tc.closed {
				require.Eventually(t, func() bool {
					return logs.FilterMessage("stopped early").FilterField(zap.String("part", "monitors")).Len() == 1
				}, enginetest.Wait, time.Millisecond)
			}
			// The controls still run: a kill switch is acted on.
			_, err := sp.SubmitOrder(context.Background(), bridge.OrderRequest{Account: "Sim101", Instrument: "ES 12-26",
				Action: "Buy", OrderType: "Market", Quantity: 1, TimeInForce: "Day"})
			require.NoError(t, err)
			held := func() int { // -1 when the platform did not answer
				pos, err := sp.Positions(context.Background(), "Sim101")
				if err != nil {
					return -1
				}
				n := 0
				for _, p := range pos {
					n += p.Quantity
				}
				return n
			}
			require.Equal(t, 1, held())
			apply(t, s.Config, `{"version":1,"controls":{"killSwitch":true,"flattenOnKill":true}}`)
			require.Eventually(t, func() bool { return held() == 0 }, enginetest.Wait, time.Millisecond)
			select {
			case err := <-done:
				t.Fatalf("Run returned before its context ended: %v", err)
			default:
			}
			cancel()
			select {
			case err = <-done:
			case <-time.After(enginetest.Wait):
				t.Fatal("Run did not return after its context ended")
			}
			if tc.want == "" {
				require.NoError(t, err)
				require.Zero(t, logs.Len())
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// The broker family's stack over the fake Tradovate places an entry's
// exits as one OCO pair, in one request (bridge.PairSubmitter), and grows
// nothing when the entry filled at once.
func TestExitsOverTradovate(t *testing.T) {
	t.Parallel()
	h := tradovatetest.Factory(t, sim.Options{Clock: sim.NewManualClock(testStart)})
	require.NoError(t, h.Market.SetPrice("ES 12-26", 6000))
	h.Settle(t)
	accts, err := h.Platform.Accounts(context.Background())
	require.NoError(t, err)
	require.NotEmpty(t, accts)
	acct := accts[0].Name
	rep := new(enginetest.Reporter)
	s, err := stack.New(stack.Options{Platform: h.Platform, State: newMemState(), Reporter: rep, Now: h.Clock.Now,
		EngineTick: 5 * time.Millisecond})
	require.NoError(t, err)
	run(t, s)
	res, err := s.Ops.PlaceOrder(context.Background(), protocol.PlaceOrderArgs{Account: acct, Instrument: "ES 12-26",
		Action: "Buy", OrderType: "Market", Quantity: 2, TimeInForce: "Day",
		Exits: &protocol.Exits{TakeProfit: &protocol.ExitPrice{Offset: &protocol.PriceOffset{Unit: "ticks", Value: 8}},
			StopLoss: &protocol.ExitPrice{Offset: &protocol.PriceOffset{Unit: "points", Value: 3}}}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(rep.Activity(protocol.ActivityExitsPlaced)) == 1 }, enginetest.Wait, time.Millisecond)
	h.Settle(t)
	orders, err := h.Platform.Orders(context.Background(), acct)
	require.NoError(t, err)
	var legs []protocol.Order
	for _, o := range orders {
		if o.OrderID != res.OrderID && !protocol.TerminalOrderState(o.OrderState) {
			legs = append(legs, o)
		}
	}
	require.Len(t, legs, 2)
	for _, l := range legs {
		require.Equal(t, protocol.ActionSell, l.OrderAction)
		require.Equal(t, 2, l.Quantity)
		require.NotEmpty(t, l.Oco)
		require.Equal(t, legs[0].Oco, l.Oco, "one OCO pair")
	}
	require.Empty(t, rep.Activity(protocol.ActivityExitsFailed))
}
