package controls

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/engine/enginetest"
	"tradebridge/trading/ops"
)

// The kill switch is reported when the agent applies it: on (after its
// flatten's first attempt, with the orders), and off.
func TestKillSwitchActivity(t *testing.T) {
	t.Parallel()
	t.Run("on with flattenOnKill, then off", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.trade("Sim101", es, protocol.ActionBuy, 2)
		f.rest("Sim102", nq, 20000)
		since := time.Now()
		f.apply(protocol.Config{Controls: protocol.Controls{KillSwitch: true, FlattenOnKill: true}})
		f.eng.Tick(bg)
		require.True(t, f.flat())
		got := f.rep.Activity("")
		require.Len(t, got, 1)
		a := got[0]
		require.Equal(t, protocol.ActivityKillSwitchChanged, a.Kind)
		require.Equal(t, protocol.ActivitySource{Kind: protocol.SourceKillSwitch}, a.Source)
		require.Empty(t, a.Account)
		enginetest.RequireRealTime(t, since, a.At)
		d := enginetest.Detail(t, a)
		require.Equal(t, true, d["enabled"])
		fl := d["flatten"].(map[string]any)
		require.Len(t, fl["orderIds"], 1, "the ES position closed")
		require.Len(t, fl["cancelledOrderIds"], 1, "the NQ order cancelled")
		require.NotContains(t, fl, "error")

		f.eng.Tick(bg)
		require.Len(t, f.rep.Activity(""), 1, "once")
		f.clock.Advance(time.Minute)
		f.apply(protocol.Config{Controls: protocol.Controls{FlattenOnKill: true}})
		f.eng.Tick(bg)
		got = f.rep.Activity("")
		require.Len(t, got, 2)
		require.Equal(t, map[string]any{"enabled": false}, enginetest.Detail(t, got[1]))
		require.Equal(t, "Kill switch turned off", got[1].Summary)
	})
	t.Run("on without flattenOnKill", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.apply(protocol.Config{Controls: protocol.Controls{KillSwitch: true}})
		f.eng.Tick(bg)
		got := f.rep.Activity(protocol.ActivityKillSwitchChanged)
		require.Len(t, got, 1)
		require.Equal(t, map[string]any{"enabled": true}, enginetest.Detail(t, got[0]))
	})
	t.Run("flatten failed", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.trade("Sim101", es, protocol.ActionBuy, 2)
		f.trader.fail = 2
		f.apply(protocol.Config{Controls: protocol.Controls{KillSwitch: true, FlattenOnKill: true}})
		f.eng.Tick(bg)
		got := f.rep.Activity("")
		require.Len(t, got, 1)
		fl := enginetest.Detail(t, got[0])["flatten"].(map[string]any)
		require.Contains(t, fl["error"], "platform unavailable")
		require.Contains(t, got[0].Summary, "retrying")
		f.clock.Advance(retryMin)
		f.eng.Tick(bg)
		require.True(t, f.flat())
		require.Len(t, f.rep.Activity(""), 1, "the retry is in the agent's log, not a second entry")
	})
}

// A news window is reported once when it opens, with its flatten when its
// action is flatten.
func TestNewsLockoutActivity(t *testing.T) {
	t.Parallel()
	for _, action := range []string{protocol.NewsBlock, protocol.NewsFlatten} {
		t.Run(action, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.trade("Sim101", es, protocol.ActionBuy, 1)
			since := time.Now()
			f.apply(protocol.Config{NewsLockout: news(action, "ES")})
			f.clock.Set(newsAt.Add(-5*time.Minute - time.Second))
			f.eng.Tick(bg)
			require.Empty(t, f.rep.Activity(""), "before the window")
			f.clock.Set(newsAt.Add(-5 * time.Minute))
			f.eng.Tick(bg)
			f.clock.Advance(time.Minute)
			f.eng.Tick(bg)
			got := f.rep.Activity("")
			require.Len(t, got, 1, "once per window")
			a := got[0]
			require.Equal(t, protocol.ActivityNewsLockoutEntered, a.Kind)
			require.Equal(t, protocol.ActivitySource{Kind: protocol.SourceNewsLockout}, a.Source)
			enginetest.RequireRealTime(t, since, a.At, "the window's from is the platform's time, the entry's the real one")
			d := enginetest.Detail(t, a)
			require.Equal(t, "CPI", d["title"])
			require.Equal(t, newsAt.Add(-5*time.Minute).Format(time.RFC3339), d["from"])
			require.Equal(t, newsAt.Add(10*time.Minute).Format(time.RFC3339), d["until"])
			require.Equal(t, action, d["action"])
			require.Equal(t, []any{"ES"}, d["roots"])
			if action == protocol.NewsFlatten {
				require.Len(t, d["flatten"].(map[string]any)["orderIds"], 1)
			} else {
				require.NotContains(t, d, "flatten")
			}
		})
	}
}

// Orders refused by a strategy lock are counted per account, instrument,
// strategy and rule, and reported once a minute after the first.
func TestStrategyRefusalsAggregated(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ops.SetRefusalObserver(f.eng.StrategyRefused)
	since := time.Now()
	own := market("Sim101", "ES", protocol.ActionBuy, 1)
	own.StrategyTag = "botA"
	_, err := f.ops.PlaceOrder(bg, own)
	require.NoError(t, err)
	loop := market("Sim101", "ES", protocol.ActionBuy, 1)
	loop.StrategyTag = "botB"
	for range 5 {
		_, err := f.ops.PlaceOrder(bg, loop)
		var pe *protocol.Error
		require.ErrorAs(t, err, &pe)
		require.Equal(t, protocol.CodePositionOwned, pe.Code)
		f.clock.Advance(time.Second)
	}
	f.eng.Tick(bg)
	require.Empty(t, f.rep.Activity(""), "not before the minute is over")
	f.clock.Set(start.Add(time.Minute))
	f.eng.Tick(bg)
	got := f.rep.Activity("")
	require.Len(t, got, 1)
	a := got[0]
	require.Equal(t, protocol.ActivityStrategyRefused, a.Kind)
	require.Equal(t, "Sim101", a.Account)
	d := enginetest.Detail(t, a)
	from, until := stampOf(t, d["from"]), stampOf(t, d["until"])
	enginetest.RequireRealTime(t, since, from)
	enginetest.RequireRealTime(t, from, until)
	require.True(t, a.At.Equal(until.Truncate(time.Millisecond)), "the entry is the last refusal's (%s, %s)", a.At, until)
	delete(d, "from")
	delete(d, "until")
	require.Equal(t, map[string]any{"instrument": es, "strategy": "botB", "rule": ops.RuleStrategyOwned,
		"owner": "botA", "count": 5.0}, d)
	require.Equal(t, "5 orders of strategy botB in ES 12-26 refused (strategyOwned)", a.Summary)
	f.eng.Tick(bg)
	require.Len(t, f.rep.Activity(""), 1)

	// A refusal after the report starts the next count.
	_, err = f.ops.PlaceOrder(bg, loop)
	require.Error(t, err)
	f.clock.Advance(time.Minute)
	f.eng.Tick(bg)
	got = f.rep.Activity("")
	require.Len(t, got, 2)
	require.Equal(t, 1.0, enginetest.Detail(t, got[1])["count"])
}

// stampOf parses a time of an activity entry's detail.
func stampOf(t *testing.T, v any) time.Time {
	t.Helper()
	s, ok := v.(string)
	require.True(t, ok, "a time: %v", v)
	at, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return at.UTC()
}

// What the engine reports is stamped with the real time, also when the
// platform's clock stands a year away: the kill switch, the news window
// entered (whose window the platform's clock opens) and the strategy-lock
// refusals (whose minute the platform's clock counts).
func TestReportsAreStampedInRealTime(t *testing.T) {
	t.Parallel()
	f := newFixtureAt(t, lastYear)
	f.ops.SetRefusalObserver(f.eng.StrategyRefused)
	since := time.Now()
	f.apply(protocol.Config{Controls: protocol.Controls{KillSwitch: true}})
	f.eng.Tick(bg)
	kill := f.rep.Activity(protocol.ActivityKillSwitchChanged)
	require.Len(t, kill, 1)
	enginetest.RequireRealTime(t, since, kill[0].At, "killSwitch.changed at %s", kill[0].At)

	cpi := lastYear.Add(newsAt.Sub(start))
	n := news(protocol.NewsBlock)
	n.Events[0].At = cpi
	f.apply(protocol.Config{NewsLockout: n})
	f.clock.Set(cpi.Add(-5*time.Minute - time.Second))
	f.eng.Tick(bg)
	require.Empty(t, f.rep.Activity(protocol.ActivityNewsLockoutEntered), "the platform's clock opens the window")
	f.clock.Set(cpi.Add(-5 * time.Minute))
	f.eng.Tick(bg)
	entered := f.rep.Activity(protocol.ActivityNewsLockoutEntered)
	require.Len(t, entered, 1)
	enginetest.RequireRealTime(t, since, entered[0].At, "newsLockout.entered at %s", entered[0].At)
	require.Equal(t, cpi.Add(-5*time.Minute).Format(time.RFC3339), enginetest.Detail(t, entered[0])["from"],
		"the window is the platform's time")

	f.apply(protocol.Config{})
	own := market("Sim101", "ES", protocol.ActionBuy, 1)
	own.StrategyTag = "botA"
	_, err := f.ops.PlaceOrder(bg, own)
	require.NoError(t, err)
	loop := market("Sim101", "ES", protocol.ActionBuy, 1)
	loop.StrategyTag = "botB"
	_, err = f.ops.PlaceOrder(bg, loop)
	require.Error(t, err)
	f.eng.Tick(bg)
	require.Empty(t, f.rep.Activity(protocol.ActivityStrategyRefused), "the platform's clock counts the minute")
	f.clock.Advance(time.Minute)
	f.eng.Tick(bg)
	refused := f.rep.Activity(protocol.ActivityStrategyRefused)
	require.Len(t, refused, 1)
	enginetest.RequireRealTime(t, since, refused[0].At, "strategy.refused at %s", refused[0].At)
	d := enginetest.Detail(t, refused[0])
	enginetest.RequireRealTime(t, since, stampOf(t, d["from"]))
	enginetest.RequireRealTime(t, since, stampOf(t, d["until"]))
}
