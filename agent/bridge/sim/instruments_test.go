package sim_test

import (
	"testing"
	"time"
	_ "time/tzdata" // the tz database checks the simulator's own New York time

	"github.com/stretchr/testify/require"

	"tradebridge/agent/bridge"
	"tradebridge/agent/bridge/sim"
	"tradebridge/protocol"
)

func newYorkTime(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	return loc
}

func TestTradingHours(t *testing.T) {
	ny := newYorkTime(t)
	at := func(y int, m time.Month, d, h, min int) time.Time { return time.Date(y, m, d, h, min, 0, 0, ny) }
	for _, tc := range []struct {
		name string
		at   time.Time
		open bool
	}{
		{"Monday morning", at(2026, time.October, 5, 10, 30), true},
		{"Friday before the close", at(2026, time.October, 9, 16, 59).Add(59 * time.Second), true},
		{"Friday close", at(2026, time.October, 9, 17, 0), false},
		{"Saturday", at(2026, time.October, 10, 12, 0), false},
		{"Sunday before the open", at(2026, time.October, 11, 18, 0).Add(-time.Second), false},
		{"Sunday open", at(2026, time.October, 11, 18, 0), true},
		{"before the daily break", at(2026, time.October, 13, 17, 0).Add(-time.Second), true},
		{"daily break starts", at(2026, time.October, 13, 17, 0), false},
		{"daily break", at(2026, time.October, 13, 17, 30), false},
		{"end of the daily break", at(2026, time.October, 13, 18, 0).Add(-time.Second), false},
		{"daily break ends", at(2026, time.October, 13, 18, 0), true},
		{"Tuesday night", at(2026, time.October, 13, 23, 0), true},
		{"Thursday 18:00", at(2026, time.October, 15, 18, 0), true},
		// Daylight-saving time starts on Sunday 8 March 2026 at 2:00.
		{"DST start Sunday before the open", at(2026, time.March, 8, 17, 59), false},
		{"DST start Sunday open", at(2026, time.March, 8, 18, 0), true},
		{"DST start Monday break", at(2026, time.March, 9, 17, 15), false},
		// And ends on Sunday 1 November 2026 at 2:00.
		{"DST end Sunday before the open", at(2026, time.November, 1, 17, 59), false},
		{"DST end Sunday open", at(2026, time.November, 1, 18, 0), true},
		{"DST end Friday close", at(2026, time.November, 6, 17, 0), false},
		{"winter break", at(2027, time.January, 12, 17, 30), false},
		{"winter open", at(2027, time.January, 12, 18, 0), true},
		{"no holidays: Christmas Day", at(2026, time.December, 25, 12, 0), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, clock := newSim(t, sim.Options{})
			clock.Set(tc.at)
			info, err := p.Instrument(ctx, "ES")
			require.NoError(t, err)
			require.Equal(t, tc.open, info.MarketOpen)
		})
	}
}

func TestMarketOrdersNeedOpenMarket(t *testing.T) {
	p, clock := newSim(t, sim.Options{})
	clock.Set(time.Date(2026, time.October, 10, 16, 0, 0, 0, time.UTC)) // Saturday
	q1, err := p.Quote(ctx, "ES")
	require.NoError(t, err)
	clock.Advance(time.Hour)
	q2, err := p.Quote(ctx, "ES")
	require.NoError(t, err)
	require.Equal(t, q1, q2, "prices do not move while the market is closed")
	_, err = p.SubmitOrder(ctx, market("Sim101", "ES", "Buy", 1))
	var rej *bridge.RejectError
	require.ErrorAs(t, err, &rej)
}

func TestInstrumentInfo(t *testing.T) {
	ny := newYorkTime(t)
	for _, tc := range []struct {
		in   string
		want protocol.InstrumentInfo
	}{
		{"ES", protocol.InstrumentInfo{Instrument: "ES 12-26", Root: "ES", Description: "E-mini S&P 500",
			Exchange: "CME", TickSize: 0.25, PointValue: 50, TickValue: 12.5,
			Expiry: "2026-12-18", RollDate: "2026-12-10", NextInstrument: "ES 03-27"}},
		{"mes", protocol.InstrumentInfo{Instrument: "MES 12-26", Root: "MES", Description: "Micro E-mini S&P 500",
			Exchange: "CME", TickSize: 0.25, PointValue: 5, TickValue: 1.25,
			Expiry: "2026-12-18", RollDate: "2026-12-10", NextInstrument: "MES 03-27"}},
		{"NQZ6", protocol.InstrumentInfo{Instrument: "NQ 12-26", Root: "NQ", Description: "E-mini Nasdaq-100",
			Exchange: "CME", TickSize: 0.25, PointValue: 20, TickValue: 5,
			Expiry: "2026-12-18", RollDate: "2026-12-10", NextInstrument: "NQ 03-27"}},
		{"MNQ", protocol.InstrumentInfo{Instrument: "MNQ 12-26", Root: "MNQ", Description: "Micro E-mini Nasdaq-100",
			Exchange: "CME", TickSize: 0.25, PointValue: 2, TickValue: 0.5,
			Expiry: "2026-12-18", RollDate: "2026-12-10", NextInstrument: "MNQ 03-27"}},
		{"YM 03-27", protocol.InstrumentInfo{Instrument: "YM 03-27", Root: "YM", Description: "E-mini Dow ($5)",
			Exchange: "CBOT", TickSize: 1, PointValue: 5, TickValue: 5,
			Expiry: "2027-03-19", RollDate: "2027-03-11", NextInstrument: "YM 06-27"}},
		{"MYM", protocol.InstrumentInfo{Instrument: "MYM 12-26", Root: "MYM", Description: "Micro E-mini Dow",
			Exchange: "CBOT", TickSize: 1, PointValue: 0.5, TickValue: 0.5,
			Expiry: "2026-12-18", RollDate: "2026-12-10", NextInstrument: "MYM 03-27"}},
		{"RTY", protocol.InstrumentInfo{Instrument: "RTY 12-26", Root: "RTY", Description: "E-mini Russell 2000",
			Exchange: "CME", TickSize: 0.1, PointValue: 50, TickValue: 5,
			Expiry: "2026-12-18", RollDate: "2026-12-10", NextInstrument: "RTY 03-27"}},
		{"M2K", protocol.InstrumentInfo{Instrument: "M2K 12-26", Root: "M2K", Description: "Micro E-mini Russell 2000",
			Exchange: "CME", TickSize: 0.1, PointValue: 5, TickValue: 0.5,
			Expiry: "2026-12-18", RollDate: "2026-12-10", NextInstrument: "M2K 03-27"}},
		{"CL", protocol.InstrumentInfo{Instrument: "CL 11-26", Root: "CL", Description: "Crude Oil (WTI)",
			Exchange: "NYMEX", TickSize: 0.01, PointValue: 1000, TickValue: 10,
			Expiry: "2026-10-20", RollDate: "2026-10-12", NextInstrument: "CL 12-26"}},
		{"MCL 12-26", protocol.InstrumentInfo{Instrument: "MCL 12-26", Root: "MCL", Description: "Micro WTI Crude Oil",
			Exchange: "NYMEX", TickSize: 0.01, PointValue: 100, TickValue: 1,
			Expiry: "2026-11-20", RollDate: "2026-11-12", NextInstrument: "MCL 01-27"}},
		{"GC", protocol.InstrumentInfo{Instrument: "GC 12-26", Root: "GC", Description: "Gold",
			Exchange: "COMEX", TickSize: 0.1, PointValue: 100, TickValue: 10,
			Expiry: "2026-12-27", RollDate: "2026-11-25", NextInstrument: "GC 02-27"}},
		{"MGC", protocol.InstrumentInfo{Instrument: "MGC 12-26", Root: "MGC", Description: "Micro Gold",
			Exchange: "COMEX", TickSize: 0.1, PointValue: 10, TickValue: 1,
			Expiry: "2026-12-27", RollDate: "2026-11-25", NextInstrument: "MGC 02-27"}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			p, _ := newSim(t, sim.Options{})
			info, err := p.Instrument(ctx, tc.in)
			require.NoError(t, err)
			require.Len(t, info.Sessions, 5)
			for i, s := range info.Sessions {
				open, err := time.Parse(time.RFC3339, s.Open)
				require.NoError(t, err)
				close, err := time.Parse(time.RFC3339, s.Close)
				require.NoError(t, err)
				require.Equal(t, "Z", s.Open[len(s.Open)-1:], "UTC")
				// Monday's session (in progress) to Friday's.
				day := time.Date(2026, time.October, 5+i, 0, 0, 0, 0, ny)
				require.Equal(t, day.Add(-6*time.Hour), open.In(ny), "session %d opens at 18:00 the day before", i)
				require.Equal(t, day.Add(17*time.Hour), close.In(ny), "session %d closes at 17:00", i)
			}
			want := tc.want
			want.Currency = "USD"
			want.MarketOpen = true
			want.TradingHours = protocol.TradingHours{TimeZone: "America/New_York",
				Description: "Sunday 18:00 to Friday 17:00, daily break 17:00-18:00"}
			want.Sessions = info.Sessions
			require.Equal(t, want, info)
		})
	}
}

func TestInstrumentInfoNearExpiry(t *testing.T) {
	p, clock := newSim(t, sim.Options{})
	// Thursday 17 December 2026, 12:00 New York time: ES 12-26 trades one
	// more session, Friday's.
	clock.Set(time.Date(2026, time.December, 17, 17, 0, 0, 0, time.UTC))
	info, err := p.Instrument(ctx, "ES 12-26")
	require.NoError(t, err)
	require.Equal(t, []protocol.TradingWindow{
		{Open: "2026-12-16T23:00:00Z", Close: "2026-12-17T22:00:00Z"},
		{Open: "2026-12-17T23:00:00Z", Close: "2026-12-18T22:00:00Z"},
	}, info.Sessions, "no session past the expiry")
	front, err := p.Instrument(ctx, "ES")
	require.NoError(t, err)
	require.Equal(t, "ES 03-27", front.Instrument, "rolled on the 10th")

	_, err = p.Instrument(ctx, "ZZ")
	require.ErrorIs(t, err, bridge.ErrInstrumentUnknown)
	_, err = p.Instrument(ctx, "ES 09-26")
	require.ErrorIs(t, err, bridge.ErrInstrumentUnknown, "expired")
}

// Names are read with protocol's instrument grammar; the simulator says
// why it refuses one, and names the root when it trades it. The
// "settled" cases are where its parser and the relay stream's used to
// disagree: the grammar decided (docs: one instrument grammar).
func TestInstrumentCauses(t *testing.T) {
	for _, tc := range []struct {
		in, want, cause, root string
	}{
		{in: "es 12-26", want: "ES 12-26"},
		{in: " esz6 ", want: "ES 12-26"},
		{in: "ESZ26", want: "ES 12-26"},
		{in: "ESH7", want: "ES 03-27"},
		{in: "GC", want: "GC 12-26"},
		{in: "ES 13-26", cause: bridge.InstrumentMalformed, root: "ES"},
		{in: "ESA26", cause: bridge.InstrumentMalformed, root: "ES"},
		{in: "ES123", cause: bridge.InstrumentMalformed, root: "ES"},
		{in: "MESA6", cause: bridge.InstrumentMalformed, root: "MES"},
		{in: "Z6", cause: bridge.InstrumentMalformed},
		{in: "ES-Z6", cause: bridge.InstrumentMalformed},
		{in: "ES 12-26 X", cause: bridge.InstrumentMalformed, root: "ES"},
		{in: "ZZ", cause: bridge.InstrumentUnknownRoot},
		{in: "XXZ6", cause: bridge.InstrumentUnknownRoot},
		{in: "QQQ 12-26", cause: bridge.InstrumentUnknownRoot},
		{in: "ESF27", cause: bridge.InstrumentNotContractMonth, root: "ES"},
		{in: "ES 06-26", cause: bridge.InstrumentExpired, root: "ES"},
		{in: "ES 12-99", cause: bridge.InstrumentNotListed, root: "ES"},
		// Settled: one space between root and month, as the stream reads
		// contract names (the simulator used to trim any white space
		// there).
		{in: "ES  12-26", cause: bridge.InstrumentMalformed, root: "ES"},
		{in: "ES \t12-26", cause: bridge.InstrumentMalformed, root: "ES"},
		// Settled: a month code's root may have six characters, as the
		// stream reads them (the simulator used to say malformed).
		{in: "ABCDEFZ6", cause: bridge.InstrumentUnknownRoot},
	} {
		t.Run(tc.in, func(t *testing.T) {
			p, _ := newSim(t, sim.Options{})
			info, err := p.Instrument(ctx, tc.in)
			if tc.cause == "" {
				require.NoError(t, err)
				require.Equal(t, tc.want, info.Instrument)
				return
			}
			var ie *bridge.InstrumentError
			require.ErrorAs(t, err, &ie)
			require.Equal(t, tc.cause, ie.Cause)
			require.Equal(t, tc.root, ie.Root)
		})
	}
}
