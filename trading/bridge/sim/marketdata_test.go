package sim_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
)

// pending returns the events already delivered to ch, without waiting:
// the simulator publishes synchronously, so a call's events are there when
// it returns.
func pending(ch <-chan bridge.Event) []bridge.Event {
	var out []bridge.Event
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return out
			}
			out = append(out, ev)
		default:
			return out
		}
	}
}

// quotes returns the instruments of the quote events among evs, in order.
func quotes(t *testing.T, evs []bridge.Event) []string {
	t.Helper()
	out := []string{}
	for _, ev := range evs {
		if ev.Kind == bridge.EventQuote {
			require.NotNil(t, ev.Quote)
			out = append(out, ev.Quote.Instrument)
		}
	}
	return out
}

func events(t *testing.T, p *sim.Platform) <-chan bridge.Event {
	t.Helper()
	c, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	return p.Events(c)
}

func TestSubscribe(t *testing.T) {
	p, clock := newSim(t, sim.Options{})
	ch := events(t, p)

	// Subscribing publishes the current quotes at once, by contract name.
	require.NoError(t, p.Subscribe(ctx, []string{"NQ", "es", "ESZ6"}))
	evs := pending(ch)
	require.Equal(t, []string{"ES 12-26", "NQ 12-26"}, quotes(t, evs))
	es, err := p.Quote(ctx, "ES")
	require.NoError(t, err)
	require.Equal(t, es, *evs[0].Quote)

	// Idempotent: nothing new to publish.
	require.NoError(t, p.Subscribe(ctx, []string{"ES 12-26"}))
	require.Empty(t, quotes(t, pending(ch)))

	// Nothing moved: no quotes.
	require.NoError(t, p.Step(ctx))
	require.Empty(t, quotes(t, pending(ch)))

	// Five steps of the walk are conflated into one quote per contract.
	clock.Advance(5 * time.Second)
	require.NoError(t, p.Step(ctx))
	evs = pending(ch)
	require.Equal(t, []string{"ES 12-26", "NQ 12-26"}, quotes(t, evs))
	es, err = p.Quote(ctx, "ES")
	require.NoError(t, err)
	require.Equal(t, es, *evs[0].Quote, "the latest quote")
	require.Equal(t, "2026-10-05T14:30:05.000Z", es.QuoteTimeUTC)

	// A contract that is priced but not subscribed publishes nothing.
	_, err = p.Quote(ctx, "CL")
	require.NoError(t, err)
	clock.Advance(time.Second)
	require.NoError(t, p.Step(ctx))
	require.Equal(t, []string{"ES 12-26", "NQ 12-26"}, quotes(t, pending(ch)))

	// Any call brings the simulator up to the clock and publishes.
	clock.Advance(time.Second)
	_, err = p.Accounts(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"ES 12-26", "NQ 12-26"}, quotes(t, pending(ch)))

	// A fill changes the quote (last, volume).
	submit(t, p, market("Sim101", "ES", "Buy", 1))
	require.NoError(t, p.Step(ctx))
	require.Equal(t, []string{"ES 12-26"}, quotes(t, pending(ch)))

	// Unsubscribing stops the contract's quotes.
	require.NoError(t, p.Unsubscribe(ctx, []string{"NQZ26", "GC"})) // GC was not subscribed
	clock.Advance(time.Second)
	require.NoError(t, p.Step(ctx))
	require.Equal(t, []string{"ES 12-26"}, quotes(t, pending(ch)))
}

func TestSubscribeIsAllOrNothing(t *testing.T) {
	p, clock := newSim(t, sim.Options{})
	ch := events(t, p)
	err := p.Subscribe(ctx, []string{"ES", "ZZ 12-26"})
	require.ErrorIs(t, err, bridge.ErrInstrumentUnknown)
	require.NotContains(t, err.Error(), "ES", "the error names the bad instrument only")
	require.Empty(t, quotes(t, pending(ch)))
	clock.Advance(time.Second)
	require.NoError(t, p.Step(ctx))
	require.Empty(t, quotes(t, pending(ch)), "ES was not subscribed")

	require.NoError(t, p.Subscribe(ctx, []string{"ES", "NQ"}))
	require.Len(t, quotes(t, pending(ch)), 2)
	require.ErrorIs(t, p.Unsubscribe(ctx, []string{"NQ", "ES 11-26"}), bridge.ErrInstrumentUnknown)
	clock.Advance(time.Second)
	require.NoError(t, p.Step(ctx))
	require.Equal(t, []string{"ES 12-26", "NQ 12-26"}, quotes(t, pending(ch)), "NQ is still subscribed")
}

func TestSubscriptionKeepsItsContract(t *testing.T) {
	p, clock := newSim(t, sim.Options{})
	ch := events(t, p)
	// 9 December 2026, 12:00 New York time: ES 12-26 is still the front month.
	clock.Set(time.Date(2026, time.December, 9, 17, 0, 0, 0, time.UTC))
	require.NoError(t, p.Subscribe(ctx, []string{"ES"}))
	require.Equal(t, []string{"ES 12-26"}, quotes(t, pending(ch)))
	// The front month rolls at 18:00: the subscription stays on ES 12-26.
	clock.Advance(26 * time.Hour)
	require.NoError(t, p.Step(ctx))
	require.Equal(t, []string{"ES 12-26"}, quotes(t, pending(ch)))
	// "ES" now names ES 03-27, which is not subscribed.
	require.NoError(t, p.Unsubscribe(ctx, []string{"ES"}))
	clock.Advance(time.Second)
	require.NoError(t, p.Step(ctx))
	require.Equal(t, []string{"ES 12-26"}, quotes(t, pending(ch)))
	// Once expired, the contract is still unsubscribed by its full name.
	clock.Advance(10 * 24 * time.Hour)
	_, err := p.Quote(ctx, "ES 12-26")
	require.ErrorIs(t, err, bridge.ErrInstrumentUnknown)
	require.NoError(t, p.Unsubscribe(ctx, []string{"es 12-26"}))
}

func TestNoQuotesWhileClosed(t *testing.T) {
	p, clock := newSim(t, sim.Options{})
	clock.Set(time.Date(2026, time.October, 9, 20, 59, 58, 0, time.UTC)) // Friday 16:59:58 New York
	ch := events(t, p)
	require.NoError(t, p.Subscribe(ctx, []string{"ES"}))
	require.Len(t, quotes(t, pending(ch)), 1)
	clock.Advance(time.Second)
	require.NoError(t, p.Step(ctx))
	require.Len(t, quotes(t, pending(ch)), 1, "16:59:59 is the last step")
	for range 10 {
		clock.Advance(time.Hour)
		require.NoError(t, p.Step(ctx))
	}
	require.Empty(t, quotes(t, pending(ch)))
}

func TestStepAfterClose(t *testing.T) {
	p, err := sim.New(sim.Options{Clock: sim.NewManualClock(start)})
	require.NoError(t, err)
	require.NoError(t, p.Close())
	require.ErrorIs(t, p.Step(ctx), bridge.ErrNotConnected)
	require.ErrorIs(t, p.Run(ctx), bridge.ErrNotConnected)
	require.ErrorIs(t, p.Subscribe(ctx, []string{"ES"}), bridge.ErrNotConnected)
	require.ErrorIs(t, p.Unsubscribe(ctx, []string{"ES"}), bridge.ErrNotConnected)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, p.Step(cancelled), context.Canceled)
}

func TestRun(t *testing.T) {
	clock := sim.NewManualClock(start)
	p, err := sim.New(sim.Options{Clock: clock, TickInterval: time.Millisecond})
	require.NoError(t, err)
	defer p.Close()
	require.NoError(t, p.Subscribe(ctx, []string{"ES"}))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	ch := p.Events(runCtx)
	go func() { done <- p.Run(runCtx) }()

	// Run publishes the quotes without any other call.
	clock.Advance(3 * time.Second)
	deadline := time.After(testkit.Long)
	for got := false; !got; {
		select {
		case ev := <-ch:
			got = ev.Kind == bridge.EventQuote && ev.Quote.QuoteTimeUTC == "2026-10-05T14:30:03.000Z"
		case <-deadline:
			t.Fatal("no quote from Run")
		}
	}
	stop()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(testkit.Long):
		t.Fatal("Run did not return")
	}
}

func TestQuoteEventsCarryTheQuote(t *testing.T) {
	p, _ := newSim(t, sim.Options{})
	ch := events(t, p)
	require.NoError(t, p.SetPrice("CL", 71.5))
	require.NoError(t, p.Subscribe(ctx, []string{"CL"}))
	evs := pending(ch)
	require.Len(t, evs, 1)
	q := evs[0].Quote
	require.Equal(t, protocol.Quote{Instrument: "CL 11-26", Bid: 71.5, Ask: 71.51, Last: 71.5, Open: 70, High: 71.5,
		Low: 70, Close: 71.5, Volume: 0, BidSize: 10, AskSize: 10, TickSize: 0.01, PointValue: 1000, TickValue: 10,
		QuoteTimeUTC: "2026-10-05T14:30:00.000Z", Epoch: start.UnixMilli()}, *q)
	require.NotZero(t, evs[0].Seq)
}
