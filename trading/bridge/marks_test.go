package bridge_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

func TestMarksFollowFiguresWithinASession(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 10, 5, 14, 30, 0, 0, time.UTC)
	start := protocol.FormatTime(protocol.SessionStart(now))
	type step struct {
		f     bridge.Figures
		after time.Duration
	}
	cases := []struct {
		name  string
		steps []step
		want  protocol.WatermarkValues
		start string
	}{
		{
			name:  "the first observation starts the marks",
			steps: []step{{f: bridge.Figures{Realized: 10, Unrealized: 5.004, NetLiq: 50015}}},
			want: protocol.WatermarkValues{PnlHigh: 15, PnlLow: 15, NetLiqHigh: 50015, NetLiqLow: 50015,
				UnrealHigh: 5.004, UnrealLow: 5.004},
			start: start,
		},
		{
			name: "later observations widen them",
			steps: []step{
				{f: bridge.Figures{Realized: 10, Unrealized: 5, NetLiq: 50015}},
				{f: bridge.Figures{Realized: 10, Unrealized: -40, NetLiq: 49970}, after: time.Minute},
				{f: bridge.Figures{Realized: 30, Unrealized: 20, NetLiq: 50050}, after: 2 * time.Minute},
			},
			want: protocol.WatermarkValues{PnlHigh: 50, PnlLow: -30, NetLiqHigh: 50050, NetLiqLow: 49970,
				UnrealHigh: 20, UnrealLow: -40},
			start: start,
		},
		{
			name: "a new session starts them afresh",
			steps: []step{
				{f: bridge.Figures{Realized: 10, Unrealized: -40, NetLiq: 49970}},
				{f: bridge.Figures{Unrealized: 1, NetLiq: 50001}, after: 24 * time.Hour},
			},
			want: protocol.WatermarkValues{PnlHigh: 1, PnlLow: 1, NetLiqHigh: 50001, NetLiqLow: 50001,
				UnrealHigh: 1, UnrealLow: 1},
			start: protocol.FormatTime(protocol.SessionStart(now.Add(24 * time.Hour))),
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var k bridge.Marks
			at := now
			for _, s := range c.steps[:len(c.steps)-1] {
				at = at.Add(s.after)
				k.Observe(s.f, at)
			}
			last := c.steps[len(c.steps)-1]
			w := k.Watermarks("Sim101", last.f, at.Add(last.after))
			assert.Equal(t, "Sim101", w.Account)
			assert.Equal(t, c.want, w.Watermarks)
			assert.Equal(t, c.start, w.SessionStart)
		})
	}
}

func TestMarksWatermarksCarryTheFigures(t *testing.T) {
	t.Parallel()
	var k bridge.Marks
	f := bridge.Figures{Realized: -26.244, Unrealized: 12.5, NetLiq: 49986.26, Commission: 2.48, Positions: 2}
	w := k.Watermarks("DEMO1", f, time.Date(2026, 10, 5, 14, 30, 0, 0, time.UTC))
	assert.Equal(t, protocol.WatermarkStats{Pnl: -13.74, Realized: -26.244, Unrealized: 12.5, Total: -13.74,
		NetLiq: 49986.26, PosCount: 2, Commission: 2.48}, w.Stats)
}
