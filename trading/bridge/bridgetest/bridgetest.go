// Package bridgetest is the contract every bridge.Platform keeps, written
// once as a test suite. A bridge's tests call Run with a Factory that builds
// the platform over a simulated market (package sim): the simulator itself
// (Sim), or a simulator behind the connection a bridge speaks (a fake
// NinjaTrader add-on). The suite acts and observes through the platform
// only, and moves the market through the simulator and its clock, so one
// suite asserts the documented behaviour of bridge.Platform, and of the
// market the simulator models, on every bridge. The operations' tests
// (trading/ops) build their fixtures from the same factories.
//
// It is for tests only.
package bridgetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
)

// Start is the instant a factory's clock reads when sim.Options names no
// clock: Monday 5 October 2026, 10:30 in New York, inside a trading
// session, when ES 12-26 is the front month of ES.
var Start = time.Date(2026, time.October, 5, 14, 30, 0, 0, time.UTC)

// Harness is a platform under test and the market behind it.
type Harness struct {
	Platform bridge.Platform
	// Market is the simulator whose prices, orders and clock the platform
	// reflects: the platform itself for the simulator, the simulator
	// behind a fake add-on otherwise.
	Market *sim.Platform
	// Clock is the Market's clock; nil when the factory was given a clock
	// that is not a *sim.ManualClock.
	Clock *sim.ManualClock
	// Settle, when set, waits until Platform has seen everything Market
	// published so far (for bridges that learn of changes by events over a
	// connection). Nil for the simulator.
	Settle func(t testing.TB)
	// Lacks lists the capabilities the platform lacks (see Capability);
	// nil for a platform with every primitive. Sim's and Lagging's lack
	// CapTrailingStops, as the simulator does.
	Lacks []Capability
}

// Factory builds a harness over a simulator made with opts (the factory
// sets opts.Clock to a ManualClock reading Start when it is nil). It
// registers cleanup with t.
type Factory func(t testing.TB, opts sim.Options) Harness

// Sim is the Factory of the simulator itself: the platform is the market.
// The simulator has no trailing orders: the harness lacks
// CapTrailingStops.
func Sim(t testing.TB, opts sim.Options) Harness {
	t.Helper()
	clock := UseManualClock(&opts)
	p, err := sim.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return Harness{Platform: p, Market: p, Clock: clock, Lacks: []Capability{CapTrailingStops}}
}

// UseManualClock gives opts a ManualClock reading Start when it has no clock,
// and returns the options' clock when it is a *sim.ManualClock (nil
// otherwise). Factories call it first.
func UseManualClock(opts *sim.Options) *sim.ManualClock {
	if opts.Clock == nil {
		c := sim.NewManualClock(Start)
		opts.Clock = c
		return c
	}
	c, _ := opts.Clock.(*sim.ManualClock)
	return c
}

// settle waits for the platform to catch up with the market, when the
// harness says how.
func (h Harness) settle(t testing.TB) {
	t.Helper()
	if h.Settle != nil {
		h.Settle(t)
	}
}

// Timeouts of the suite's waits.
const (
	// eventWait bounds the wait for each event of a stream.
	eventWait = 5 * time.Second
	// streamEndWait bounds the wait for a stream to close once its ctx
	// ended or the platform closed.
	streamEndWait = 5 * time.Second
)

// stream reads one Events stream of a platform and checks, for every event
// it reads, that none was lost and that Seq grew by one.
type stream struct {
	t    testing.TB
	ch   <-chan bridge.Event
	last uint64
}

// watch opens an Events stream that ends with the test.
func watch(t testing.TB, h Harness) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return &stream{t: t, ch: h.Platform.Events(ctx)}
}

// next returns the stream's next event, failing the test after eventWait.
func (s *stream) next() bridge.Event {
	s.t.Helper()
	timer := time.NewTimer(eventWait)
	defer timer.Stop()
	select {
	case ev, ok := <-s.ch:
		require.True(s.t, ok, "the stream ended early")
		require.False(s.t, ev.Lost, "a reader that keeps up loses nothing")
		requireOneRecord(s.t, ev)
		if s.last != 0 {
			require.Equal(s.t, s.last+1, ev.Seq, "Seq increases by one per event")
		}
		s.last = ev.Seq
		return ev
	case <-timer.C:
		s.t.Fatalf("no event within %v", eventWait)
		return bridge.Event{}
	}
}

// until reads events up to and including the first for which match is
// true, and returns them all.
func (s *stream) until(match func(bridge.Event) bool) []bridge.Event {
	s.t.Helper()
	var out []bridge.Event
	for {
		ev := s.next()
		out = append(out, ev)
		if match(ev) {
			return out
		}
	}
}

// ended waits for the stream's channel to close, draining what is left.
func (s *stream) ended() {
	s.t.Helper()
	timer := time.NewTimer(streamEndWait)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-s.ch:
			if !ok {
				return
			}
		case <-timer.C:
			s.t.Fatalf("the stream did not end within %v", streamEndWait)
			return
		}
	}
}

// isOrder matches the order event of an order id in a state.
func isOrder(id, state string) func(bridge.Event) bool {
	return func(ev bridge.Event) bool {
		return ev.Kind == bridge.EventOrder && ev.Order != nil && ev.Order.OrderID == id && ev.Order.OrderState == state
	}
}

// isPosition matches the position event of an account and instrument in a
// direction.
func isPosition(account, instrument, marketPosition string) func(bridge.Event) bool {
	return func(ev bridge.Event) bool {
		return ev.Kind == bridge.EventPosition && ev.Position != nil && ev.Position.Account == account &&
			ev.Position.Instrument == instrument && ev.Position.MarketPosition == marketPosition
	}
}

// isQuote matches the quote event of an instrument.
func isQuote(instrument string) func(bridge.Event) bool {
	return func(ev bridge.Event) bool {
		return ev.Kind == bridge.EventQuote && ev.Quote != nil && ev.Quote.Instrument == instrument
	}
}

// requireOneRecord checks that an event carries exactly the record its
// Kind names.
func requireOneRecord(t testing.TB, ev bridge.Event) {
	t.Helper()
	set := map[bridge.EventKind]bool{
		bridge.EventOrder:     ev.Order != nil,
		bridge.EventExecution: ev.Execution != nil,
		bridge.EventPosition:  ev.Position != nil,
		bridge.EventAccount:   ev.Account != nil,
		bridge.EventQuote:     ev.Quote != nil,
		bridge.EventStrategy:  ev.Strategy != nil,
	}
	for k, has := range set {
		require.Equal(t, k == ev.Kind, has, "event %d of kind %s: record %s", ev.Seq, ev.Kind, k)
	}
}

// orderStates returns the states an order went through in evs.
func orderStates(evs []bridge.Event, id string) []string {
	var out []string
	for _, ev := range evs {
		if ev.Kind == bridge.EventOrder && ev.Order != nil && ev.Order.OrderID == id {
			out = append(out, ev.Order.OrderState)
		}
	}
	return out
}
