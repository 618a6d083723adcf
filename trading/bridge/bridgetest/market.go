package bridgetest

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// marketChecks cover instruments, quotes, market-data subscriptions and
// bars.
func marketChecks() []check {
	return []check{
		{name: "Instrument/every accepted form", run: func(t *testing.T, h Harness) {
			for _, in := range []string{"ES", "es", "ES 12-26", "es 12-26", " ES 12-26 ", "ESZ26", "esz26", "ESZ6"} {
				info, err := h.Platform.Instrument(t.Context(), in)
				require.NoError(t, err, in)
				require.Equal(t, es, info.Instrument, in)
			}
		}},
		{name: "Instrument/describes the contract", run: func(t *testing.T, h Harness) {
			info, err := h.Platform.Instrument(t.Context(), "ES")
			require.NoError(t, err)
			require.Equal(t, es, info.Instrument)
			require.Equal(t, "ES", info.Root)
			require.Equal(t, "E-mini S&P 500", info.Description)
			require.Equal(t, "CME", info.Exchange)
			require.Equal(t, "USD", info.Currency)
			require.Equal(t, 0.25, info.TickSize)
			require.Equal(t, 50.0, info.PointValue)
			require.Equal(t, 12.5, info.TickValue)
			require.Equal(t, "2026-12-18", info.Expiry, "the third Friday of the month")
			require.Equal(t, "2026-12-10", info.RollDate, "eight days before")
			require.Equal(t, "ES 03-27", info.NextInstrument)
			require.True(t, info.MarketOpen)
			require.Equal(t, "America/New_York", info.TradingHours.TimeZone)
			require.Len(t, info.Sessions, 5)
			require.Equal(t, protocol.TradingWindow{Open: "2026-10-04T22:00:00Z", Close: "2026-10-05T21:00:00Z"},
				info.Sessions[0], "the current session first")
			require.Equal(t, protocol.TradingWindow{Open: "2026-10-08T22:00:00Z", Close: "2026-10-09T21:00:00Z"},
				info.Sessions[4])
		}},
		{name: "Instrument/front months of other roots", run: func(t *testing.T, h Harness) {
			for in, want := range map[string]struct {
				name, exchange string
				tick           float64
			}{
				"NQ":  {nq, "CME", 0.25},
				"YM":  {"YM 12-26", "CBOT", 1},
				"M2K": {"M2K 12-26", "CME", 0.1},
				"CL":  {"CL 11-26", "NYMEX", 0.01},
				"GC":  {"GC 12-26", "COMEX", 0.1},
			} {
				info, err := h.Platform.Instrument(t.Context(), in)
				require.NoError(t, err, in)
				require.Equal(t, want.name, info.Instrument, in)
				require.Equal(t, in, info.Root)
				require.Equal(t, want.exchange, info.Exchange, in)
				require.Equal(t, want.tick, info.TickSize, in)
			}
		}},
		{name: "Instrument/refusals name their cause", run: func(t *testing.T, h Harness) {
			for _, tc := range []struct {
				in    string
				cause string
				root  bool // the error names ES, its months and front month
			}{
				{"", bridge.InstrumentMalformed, false},
				{"ES-12-26", bridge.InstrumentMalformed, false},
				{"ES 13-26", bridge.InstrumentMalformed, true},
				{"ESA26", bridge.InstrumentMalformed, true},
				{"QQ", bridge.InstrumentUnknownRoot, false},
				{"QQ 12-26", bridge.InstrumentUnknownRoot, false},
				{"QQZ26", bridge.InstrumentUnknownRoot, false},
				{"ES 11-26", bridge.InstrumentNotContractMonth, true},
				{"ESX26", bridge.InstrumentNotContractMonth, true},
				{"ES 09-26", bridge.InstrumentExpired, true},
				{"ES 12-37", bridge.InstrumentNotListed, true},
			} {
				_, err := h.Platform.Instrument(t.Context(), tc.in)
				require.ErrorIs(t, err, bridge.ErrInstrumentUnknown, tc.in)
				var ie *bridge.InstrumentError
				require.True(t, errors.As(err, &ie), "%q: an InstrumentError, got %v", tc.in, err)
				require.Equal(t, tc.cause, ie.Cause, tc.in)
				if tc.root {
					require.Equal(t, bridge.InstrumentError{Cause: tc.cause, Root: "ES", Months: "HMUZ", Front: es}, *ie, tc.in)
				} else {
					require.Equal(t, bridge.InstrumentError{Cause: tc.cause}, *ie, tc.in)
				}
				if tc.in != "" {
					requireNoEcho(t, err, tc.in)
				}
			}
		}},
		{name: "Quote/the current market", run: func(t *testing.T, h Harness) {
			q, err := h.Platform.Quote(t.Context(), "ESZ6")
			require.NoError(t, err)
			require.Equal(t, es, q.Instrument)
			require.Equal(t, esBid, q.Bid)
			require.Equal(t, esAsk, q.Ask)
			require.Equal(t, esBid, q.Last)
			require.Equal(t, q.Last, q.Close)
			require.Equal(t, 0.25, q.TickSize)
			require.Equal(t, 50.0, q.PointValue)
			require.Equal(t, 12.5, q.TickValue)
			require.NotEmpty(t, q.QuoteTimeUTC)
			setPrice(t, h, es, 6012.5)
			q, err = h.Platform.Quote(t.Context(), es)
			require.NoError(t, err)
			require.Equal(t, 6012.5, q.Bid)
			require.Equal(t, 6012.75, q.Ask)
			require.Equal(t, 6012.5, q.Last)
			require.GreaterOrEqual(t, q.High, 6012.5)
			_, err = h.Platform.Quote(t.Context(), "QQ 12-26")
			requireIs(t, err, bridge.ErrInstrumentUnknown, "QQ")
		}},
		{name: "Subscribe/quotes stream for subscribed instruments", run: func(t *testing.T, h Harness) {
			s := watch(t, h)
			require.NoError(t, h.Platform.Subscribe(t.Context(), []string{"ES"}))
			ev := s.next()
			require.True(t, isQuote(es)(ev), "the first event is the new subscription's quote, got %s", ev.Kind)
			require.Equal(t, esBid, ev.Quote.Bid)
			require.Equal(t, esAsk, ev.Quote.Ask)

			setPrice(t, h, es, 6005)
			ev = s.next()
			require.True(t, isQuote(es)(ev), "the move is published: %s", ev.Kind)
			require.Equal(t, 6005.0, ev.Quote.Last)
			require.Equal(t, 6005.0, ev.Quote.Bid)

			// Subscribing again is idempotent (no new quote while the
			// market stands still), and a call naming an unknown
			// instrument subscribes nothing (no NQ quote): the next event
			// is ES's next move.
			require.NoError(t, h.Platform.Subscribe(t.Context(), []string{es, "ESZ26"}))
			requireIs(t, h.Platform.Subscribe(t.Context(), []string{"NQ", "QQ"}), bridge.ErrInstrumentUnknown, "QQ")
			setPrice(t, h, es, 6007)
			ev = s.next()
			require.True(t, isQuote(es)(ev), "got %s %+v", ev.Kind, ev.Quote)
			require.Equal(t, 6007.0, ev.Quote.Last)

			// After Unsubscribe the instrument's moves are not published:
			// the next quote is the new subscription's.
			require.NoError(t, h.Platform.Unsubscribe(t.Context(), []string{"ESZ6"}))
			setPrice(t, h, es, 6010)
			require.NoError(t, h.Platform.Subscribe(t.Context(), []string{"NQ"}))
			ev = s.next()
			require.True(t, isQuote(nq)(ev), "only NQ is subscribed now, got %s %+v", ev.Kind, ev.Quote)
			require.Equal(t, nqBid, ev.Quote.Bid)
		}},
		{name: "Subscribe/unsubscribing what is not subscribed is not an error", run: func(t *testing.T, h Harness) {
			require.NoError(t, h.Platform.Unsubscribe(t.Context(), []string{"ES", "NQ 12-26"}))
			requireIs(t, h.Platform.Unsubscribe(t.Context(), []string{"QQ"}), bridge.ErrInstrumentUnknown, "QQ")
			require.NoError(t, h.Platform.Subscribe(t.Context(), nil))
		}},
		{name: "Bars/shape", needs: CapBars, run: func(t *testing.T, h Harness) {
			h.Clock.Advance(10 * time.Minute)
			require.NoError(t, h.Market.Step(t.Context()))
			h.settle(t)
			bars, err := h.Platform.Bars(t.Context(), bridge.BarsRequest{Instrument: "ES", PeriodType: "Minute", Period: 1, DaysBack: 1})
			require.NoError(t, err)
			require.Equal(t, es, bars.Instrument)
			require.Equal(t, protocol.PeriodMinute, bars.PeriodType)
			require.Equal(t, 1, bars.Period)
			require.Equal(t, len(bars.Bars), bars.Count)
			require.NotEmpty(t, bars.Bars)
			session := time.Date(2026, time.October, 4, 22, 0, 0, 0, time.UTC)
			now := Start.Add(10 * time.Minute)
			var prev int64
			for i, b := range bars.Bars {
				at, err := time.Parse(time.RFC3339, b.Time)
				require.NoError(t, err, i)
				require.Equal(t, at.UnixMilli(), b.Epoch, i)
				require.Zero(t, b.Epoch%60_000, "minute bars start on the minute")
				require.Greater(t, b.Epoch, prev, "oldest first, one bar per minute")
				prev = b.Epoch
				require.False(t, at.Before(session), "DaysBack 1 is the session so far")
				require.False(t, at.After(now))
				require.LessOrEqual(t, b.Low, min(b.Open, b.Close), i)
				require.GreaterOrEqual(t, b.High, max(b.Open, b.Close), i)
				require.GreaterOrEqual(t, b.Volume, int64(0), i)
			}
			last := bars.Bars[len(bars.Bars)-1]
			require.Equal(t, now.Truncate(time.Minute).UnixMilli(), last.Epoch, "the bar in progress is included")
		}},
		{name: "Bars/limit keeps the most recent", needs: CapBars, run: func(t *testing.T, h Harness) {
			h.Clock.Advance(5 * time.Minute)
			require.NoError(t, h.Market.Step(t.Context()))
			h.settle(t)
			req := bridge.BarsRequest{Instrument: es, PeriodType: protocol.PeriodMinute, DaysBack: 1}
			all, err := h.Platform.Bars(t.Context(), req)
			require.NoError(t, err)
			require.Greater(t, len(all.Bars), 3)
			req.Limit = 3
			some, err := h.Platform.Bars(t.Context(), req)
			require.NoError(t, err)
			require.Equal(t, 3, some.Count)
			require.Equal(t, all.Bars[len(all.Bars)-3:], some.Bars)
		}},
		{name: "Bars/bad requests", needs: CapBars, run: func(t *testing.T, h Harness) {
			for _, req := range []bridge.BarsRequest{
				{Instrument: es, PeriodType: "fortnight"},
				{Instrument: es, PeriodType: protocol.PeriodMinute, Period: -1},
				{Instrument: es, PeriodType: protocol.PeriodMinute, Limit: -1},
				{Instrument: es, PeriodType: protocol.PeriodMinute, From: Start, To: Start.Add(-time.Hour)},
			} {
				_, err := h.Platform.Bars(t.Context(), req)
				var re *bridge.RequestError
				require.ErrorAs(t, err, &re, "%+v", req)
				require.NotEmpty(t, re.Reason)
				requireNoEcho(t, err, "fortnight")
			}
			_, err := h.Platform.Bars(t.Context(), bridge.BarsRequest{Instrument: "QQ", PeriodType: protocol.PeriodMinute})
			requireIs(t, err, bridge.ErrInstrumentUnknown, "QQ")
		}},
	}
}
