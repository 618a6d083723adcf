package copier

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/engine/enginetest"
	"tradebridge/trading/ops"
)

var reportID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// Every copy placed for a follower is reported as copier.copied, with the
// follower's order; a copy the gate or the platform refused is reported
// with its outcome; a copy the ratio rounds to nothing is not (it is in
// the copier's status).
func TestCopiesAreReported(t *testing.T) {
	t.Parallel()
	t.Run("order mode", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, 0)
		h.apply(copierOf("c1", protocol.CopyModeOrder, protocol.Follower{Account: "A", Sizing: ratio(0.5)},
			protocol.Follower{Account: "B", Sizing: ratio(0.2)}))
		h.start()
		since := time.Now()
		lo := h.submit(bridge.OrderRequest{Account: "L", Instrument: es, Action: "Buy", OrderType: "Limit", Quantity: 2, LimitPrice: 5990})
		h.settle()
		as := h.orders("A")
		require.Len(t, as, 1)
		got := h.rep.Activity("")
		require.Len(t, got, 1, "the copy to B rounds to nothing and is not reported")
		a := got[0]
		require.Regexp(t, reportID, a.ID)
		require.Equal(t, protocol.ActivityCopierCopied, a.Kind)
		enginetest.RequireRealTime(t, since, a.At)
		require.Equal(t, "A", a.Account)
		require.Equal(t, protocol.ActivitySource{Kind: protocol.SourceCopier, ID: "c1"}, a.Source)
		require.Equal(t, "Copier c1 copied Buy 1 ES 12-26 on A", a.Summary)
		require.Equal(t, map[string]any{"copierId": "c1", "leader": "L", "follower": "A", "instrument": es,
			"action": "Buy", "quantity": 1.0, "leaderOrderId": lo.OrderID, "orderId": as[0].OrderID, "outcome": "placed"},
			enginetest.Detail(t, a))
	})
	t.Run("execution mode, one follower refused", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, 0)
		h.ops.SetGate(gate{refuse: map[string]bool{"A": true}})
		h.apply(copierOf("c1", protocol.CopyModeExecution, protocol.Follower{Account: "A"}, protocol.Follower{Account: "B"}))
		h.start()
		lo := h.submit(bridge.OrderRequest{Account: "L", Instrument: es, Action: "Sell", OrderType: "Market", Quantity: 2})
		h.settle()
		got := h.rep.Activity(protocol.ActivityCopierCopied)
		require.Len(t, got, 2)
		by := map[string]map[string]any{}
		for _, a := range got {
			by[a.Account] = enginetest.Detail(t, a)
		}
		require.Equal(t, "blocked", by["A"]["outcome"])
		require.Contains(t, by["A"]["reason"], "(rule: "+ops.RuleClosingOnly+")")
		require.NotContains(t, by["A"], "orderId", "nothing was placed")
		require.Equal(t, lo.OrderID, by["A"]["leaderOrderId"])
		require.Equal(t, "placed", by["B"]["outcome"])
		require.Equal(t, "Sell", by["B"]["action"])
		require.Equal(t, 2.0, by["B"]["quantity"])
		bs := h.orders("B")
		require.Len(t, bs, 1)
		require.Equal(t, bs[0].OrderID, by["B"]["orderId"])
	})
	t.Run("auto-sync correction", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, 0)
		c := copierOf("c1", protocol.CopyModeExecution, protocol.Follower{Account: "A"})
		c.AutoSync, c.AutoSyncSeconds = true, 3
		h.apply(c)
		h.start()
		h.submit(bridge.OrderRequest{Account: "A", Instrument: es, Action: "Buy", OrderType: "Market", Quantity: 1})
		h.clock.Advance(3 * time.Second)
		h.settle()
		require.Zero(t, h.position("A", es))
		got := h.rep.Activity(protocol.ActivityCopierCopied)
		require.Len(t, got, 1)
		d := enginetest.Detail(t, got[0])
		require.Equal(t, true, d["sync"])
		require.Equal(t, "Sell", d["action"])
		require.NotContains(t, d, "leaderOrderId")
		require.Contains(t, got[0].Summary, "corrected")
	})
}

// A halt is reported once as copier.halted, with its reason.
func TestHaltIsReported(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0)
	h.mons.set("A", protocol.MonitorActive)
	c := copierOf("c1", protocol.CopyModeExecution, protocol.Follower{Account: "A"})
	c.Tandem = true
	h.apply(c)
	h.start()
	h.mons.set("A", protocol.MonitorStopped)
	h.e.MonitorChanged("A", protocol.MonitorStopped)
	h.e.MonitorChanged("A", protocol.MonitorStopped)
	got := h.rep.Activity(protocol.ActivityCopierHalted)
	require.Len(t, got, 1)
	require.Equal(t, protocol.ActivitySource{Kind: protocol.SourceCopier, ID: "c1"}, got[0].Source)
	require.Equal(t, "L", got[0].Account, "the copier's leader")
	require.Equal(t, map[string]any{"copierId": "c1", "reason": "the monitor of follower A stopped"},
		enginetest.Detail(t, got[0]))
}

// What the engine reports is stamped with the real time, also when the
// platform's clock stands a year away: the copier.copied and
// copier.halted entries, the halt's state and status, the outcomes and
// the follower issues of the status. The platform's clock still runs the
// auto-sync periods.
func TestReportsAreStampedInRealTime(t *testing.T) {
	t.Parallel()
	h := newHarnessAt(t, 0, lastYear)
	h.mons.set("C", protocol.MonitorActive)
	c1 := copierOf("c1", protocol.CopyModeExecution, protocol.Follower{Account: "A"},
		protocol.Follower{Account: "B", Sizing: ratio(0.25)})
	c1.AutoSync, c1.AutoSyncSeconds = true, 3
	c2 := copierOf("c2", protocol.CopyModeExecution, protocol.Follower{Account: "C"})
	c2.Tandem = true
	h.apply(c1, c2)
	h.start()
	since := time.Now()
	h.submit(bridge.OrderRequest{Account: "L", Instrument: es, Action: "Buy", OrderType: "Market", Quantity: 1})
	h.settle()
	require.Equal(t, 1, h.position("A", es))
	copied := h.rep.Activity(protocol.ActivityCopierCopied)
	require.Len(t, copied, 2, "to A by c1, to C by c2")
	for _, a := range copied {
		enginetest.RequireRealTime(t, since, a.At, "copier.copied at %s", a.At)
	}
	rec := h.status("c1").Recent
	require.Len(t, rec, 1)
	require.Equal(t, protocol.CopyRoundedToZero, rec[0].Outcome)
	enginetest.RequireRealTime(t, since, rec[0].At, "the outcome at %s", rec[0].At)

	// A correction the gate refuses: the follower issue is stamped now,
	// and the next attempt waits on the platform's clock.
	h.ops.SetGate(gate{refuse: map[string]bool{"A": true}})
	h.submit(bridge.OrderRequest{Account: "A", Instrument: es, Action: "Sell", OrderType: "Market", Quantity: 1})
	h.clock.Advance(3 * time.Second)
	h.settle()
	un := h.status("c1").Unaligned
	require.Len(t, un, 1)
	enginetest.RequireRealTime(t, since, un[0].At, "the follower issue at %s", un[0].At)
	h.clock.Advance(3 * time.Second)
	h.settle()
	require.Len(t, h.status("c1").Recent, 2, "inside the backoff")
	h.clock.Advance(3 * time.Second)
	h.settle()
	require.Len(t, h.status("c1").Recent, 3, "retried once the platform's clock passed the backoff")

	h.mons.set("C", protocol.MonitorStopped)
	h.e.MonitorChanged("C", protocol.MonitorStopped)
	halted := h.rep.Activity(protocol.ActivityCopierHalted)
	require.Len(t, halted, 1)
	enginetest.RequireRealTime(t, since, halted[0].At, "copier.halted at %s", halted[0].At)
	states := h.rep.Copiers()
	require.Len(t, states, 1)
	enginetest.RequireRealTime(t, since, states[0].At, "the halted state at %s", states[0].At)
	st := h.status("c2")
	require.Equal(t, protocol.CopierHalted, st.State)
	require.NotNil(t, st.At)
	enginetest.RequireRealTime(t, since, *st.At, "the status's halt at %s", *st.At)
}
