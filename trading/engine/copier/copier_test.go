package copier

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/engine"
	"tradebridge/trading/engine/enginetest"
	"tradebridge/trading/ops"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start is a Monday in October 2026, 10:30 in New York: the market is
// open and ES 12-26 is the front month.
var start = time.Date(2026, time.October, 5, 14, 30, 0, 0, time.UTC)

// lastYear is start 52 weeks earlier, also a Monday at 10:30 in New York:
// a simulator's clock that stands a year away from the real time.
var lastYear = start.AddDate(0, 0, -364)

const (
	es   = "ES 12-26"
	mes  = "MES 12-26"
	nq   = "NQ 12-26"
	poll = 5 * time.Millisecond
)

// monitors is a MonitorStates of fixed states.
type monitors struct {
	mu sync.Mutex
	m  map[string]string
}

func (m *monitors) MonitorState(account string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.m[account]
}
func (m *monitors) set(account, state string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m[account] = state
}

// gate refuses the copier's entries on some accounts.
type gate struct{ refuse map[string]bool }

func (g gate) Check(account, _ string, src ops.Source) ops.Verdict {
	if src == ops.SourceCopier && g.refuse[account] {
		return ops.Verdict{Entries: &ops.Block{Rule: ops.RuleClosingOnly, Reason: "the account's monitor allows closing orders only"}}
	}
	return ops.Verdict{}
}

// harness is a simulator with accounts L (the leader), A, B and C, the
// operations over it, and copier engines.
type harness struct {
	t       *testing.T
	ctx     context.Context
	clock   *sim.ManualClock
	p       *sim.Platform
	ops     *ops.Ops
	configs *enginetest.Configs
	store   engine.MemStore
	rep     *enginetest.Reporter
	mons    *monitors
	opts    Options

	e      *Engine
	cancel context.CancelFunc
	done   chan error
}

func newHarness(t *testing.T, depth int) *harness {
	t.Helper()
	return newHarnessAt(t, depth, start)
}

// newHarnessAt is newHarness with the simulator's clock at at.
func newHarnessAt(t *testing.T, depth int, at time.Time) *harness {
	t.Helper()
	m := enginetest.NewMarket(t, at, sim.Options{Accounts: []string{"L", "A", "B", "C"}, BookDepth: depth,
		CommissionPerContract: -1}, ops.Options{})
	p, clock, o := m.Sim, m.Clock, m.Ops
	require.NoError(t, p.SetPrice(es, 6000))
	require.NoError(t, p.SetPrice(mes, 6000))
	require.NoError(t, p.SetPrice(nq, 21000))
	h := &harness{t: t, ctx: context.Background(), clock: clock, p: p, ops: o, configs: &enginetest.Configs{},
		store: engine.NewMemStore(), rep: &enginetest.Reporter{}, mons: &monitors{m: map[string]string{}}}
	h.opts = Options{Platform: p, Trader: o, Config: &h.configs.Holder, Store: h.store, Reporter: h.rep, Monitors: h.mons,
		Now: clock.Now, Logger: zaptest.NewLogger(t), TickInterval: time.Hour}
	return h
}

// apply pushes a configuration of copiers.
func (h *harness) apply(cs ...protocol.Copier) {
	h.configs.Push(h.t, protocol.Config{Copiers: cs})
}

// start builds an engine over the harness and runs it until the test ends
// or stop.
func (h *harness) start() *Engine {
	h.t.Helper()
	e, err := New(h.opts)
	require.NoError(h.t, err)
	ctx, cancel := context.WithCancel(h.ctx)
	h.e, h.cancel, h.done = e, cancel, make(chan error, 1)
	go func() { h.done <- e.Run(ctx) }()
	h.t.Cleanup(h.stop)
	require.Eventually(h.t, func() bool {
		e.loopMu.Lock()
		defer e.loopMu.Unlock()
		return e.loop != nil
	}, enginetest.Wait, poll)
	h.settle()
	return e
}

// stop ends the running engine.
func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	<-h.done
	h.cancel = nil
}

// settle waits until the engine handled every event already published
// (Tick runs in Run's loop after them) and the configuration applied.
func (h *harness) settle() {
	h.t.Helper()
	require.Eventually(h.t, func() bool {
		h.e.mu.Lock()
		defer h.e.mu.Unlock()
		return h.e.version == h.configs.Holder.Version()
	}, enginetest.Wait, poll)
	h.e.Tick(h.ctx)
}

func (h *harness) submit(req bridge.OrderRequest) protocol.Order {
	h.t.Helper()
	if req.TimeInForce == "" {
		req.TimeInForce = protocol.TimeInForceGtc
	}
	o, err := h.p.SubmitOrder(h.ctx, req)
	require.NoError(h.t, err)
	return o
}

// orders returns an account's orders by id.
func (h *harness) orders(account string) []protocol.Order {
	h.t.Helper()
	os, err := h.p.Orders(h.ctx, account)
	require.NoError(h.t, err)
	return os
}

// position returns an account's signed position in an instrument.
func (h *harness) position(account, instrument string) int {
	h.t.Helper()
	return enginetest.Position(h.t, h.p, account, instrument)
}

func (h *harness) status(id string) protocol.CopierStatus {
	h.t.Helper()
	for _, s := range h.e.Status() {
		if s.ID == id {
			return s
		}
	}
	h.t.Fatalf("no copier %s", id)
	return protocol.CopierStatus{}
}

func copierOf(id, mode string, followers ...protocol.Follower) protocol.Copier {
	return protocol.Copier{Meta: protocol.Meta{ID: id}, Active: true, Leader: "L", Followers: followers,
		Sizing: protocol.Sizing{Ratio: 1}, CopyMode: mode}
}

func ratio(r float64) *protocol.Sizing { return &protocol.Sizing{Ratio: r} }

func TestOrderModeMirrorsOrdersChangesAndCancels(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		follower protocol.Follower
		repl     []protocol.SymbolReplacement
		// the copy of a Buy Limit 4 @ 5990, then of the change to 6 @ 5985
		inst                  string
		action, orderType     string
		qty, changedQty       int
		limit, stop, newPrice float64
	}{
		{name: "ratio 0.5", follower: protocol.Follower{Account: "A", Sizing: ratio(0.5)},
			inst: es, action: "Buy", orderType: "Limit", qty: 2, changedQty: 3, limit: 5990, newPrice: 5985},
		{name: "ratio 2", follower: protocol.Follower{Account: "A", Sizing: ratio(2)},
			inst: es, action: "Buy", orderType: "Limit", qty: 8, changedQty: 12, limit: 5990, newPrice: 5985},
		{name: "inverse", follower: protocol.Follower{Account: "A", Inverse: true},
			inst: es, action: "Sell", orderType: "StopMarket", qty: 4, changedQty: 6, stop: 5990, newPrice: 5985},
		{name: "ES to MES", follower: protocol.Follower{Account: "A"},
			repl: []protocol.SymbolReplacement{{From: "ES", To: "MES"}},
			inst: mes, action: "Buy", orderType: "Limit", qty: 4, changedQty: 6, limit: 5990, newPrice: 5985},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, 0)
			c := copierOf("c1", protocol.CopyModeOrder, tc.follower)
			c.SymbolReplacements = tc.repl
			h.apply(c)
			h.start()

			lo := h.submit(bridge.OrderRequest{Account: "L", Instrument: es, Action: "Buy", OrderType: "Limit",
				Quantity: 4, LimitPrice: 5990})
			h.settle()
			fos := h.orders("A")
			require.Len(t, fos, 1)
			cp := fos[0]
			require.Equal(t, copyID("c1", "order", lo.OrderID, "A"), cp.OrderID)
			require.Equal(t, tc.inst, cp.Instrument)
			require.Equal(t, tc.action, cp.OrderAction)
			require.Equal(t, tc.orderType, cp.OrderType)
			require.Equal(t, tc.qty, cp.Quantity)
			require.Equal(t, tc.limit, cp.LimitPrice)
			require.Equal(t, tc.stop, cp.StopPrice)
			require.Equal(t, protocol.TimeInForceGtc, cp.TimeInForce)

			_, err := h.p.ChangeOrder(h.ctx, bridge.ChangeRequest{Account: "L", OrderID: lo.OrderID, Quantity: 6,
				LimitPrice: 5985})
			require.NoError(t, err)
			h.settle()
			cp = h.orders("A")[0]
			require.Equal(t, tc.changedQty, cp.Quantity)
			require.Equal(t, tc.newPrice, cp.LimitPrice+cp.StopPrice)

			_, err = h.p.CancelOrder(h.ctx, "L", lo.OrderID)
			require.NoError(t, err)
			h.settle()
			fos = h.orders("A")
			require.Len(t, fos, 1)
			require.Equal(t, protocol.OrderStateCancelled, fos[0].OrderState)
			m, err := h.store.Load(bucketOrders)
			require.NoError(t, err)
			require.Empty(t, m, "an entry whose leader order and copies are over is forgotten")
			require.Empty(t, h.status("c1").Recent)
		})
	}
}

func TestOrderModeInstrumentFilter(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0)
	c := copierOf("c1", protocol.CopyModeOrder, protocol.Follower{Account: "A"})
	c.Instruments = []string{"NQ"}
	h.apply(c)
	h.start()
	h.submit(bridge.OrderRequest{Account: "L", Instrument: es, Action: "Buy", OrderType: "Limit", Quantity: 1, LimitPrice: 5990})
	h.submit(bridge.OrderRequest{Account: "L", Instrument: nq, Action: "Sell", OrderType: "Limit", Quantity: 1, LimitPrice: 21100})
	h.settle()
	fos := h.orders("A")
	require.Len(t, fos, 1)
	require.Equal(t, nq, fos[0].Instrument)
}

func TestExecutionModeCopiesFills(t *testing.T) {
	t.Parallel()
	// A book one contract deep fills the leader's market order of 3 in
	// three fills; the cumulative quantity is what the ratio rounds.
	h := newHarness(t, 1)
	h.apply(copierOf("c1", protocol.CopyModeExecution,
		protocol.Follower{Account: "A", Sizing: ratio(0.5)},
		protocol.Follower{Account: "B", Sizing: ratio(2), Inverse: true},
		protocol.Follower{Account: "C"}))
	h.start()
	h.submit(bridge.OrderRequest{Account: "L", Instrument: es, Action: "Buy", OrderType: "Market", Quantity: 3})
	h.settle()
	xs, err := h.p.Executions(h.ctx, "L")
	require.NoError(t, err)
	require.Len(t, xs, 3, "the leader filled in three parts")
	require.Equal(t, 2, h.position("A", es), "round(3 × 0.5) half away from zero")
	require.Equal(t, -6, h.position("B", es))
	require.Equal(t, 3, h.position("C", es))
	for _, o := range h.orders("A") {
		require.Equal(t, protocol.OrderTypeMarket, o.OrderType)
	}
	require.Len(t, h.orders("A"), 2, "fills of 1, 1, 1 at 0.5 copy as 1, 0, 1")

	h.submit(bridge.OrderRequest{Account: "L", Instrument: es, Action: "Sell", OrderType: "Market", Quantity: 3})
	h.settle()
	require.Zero(t, h.position("A", es))
	require.Zero(t, h.position("B", es))
	require.Zero(t, h.position("C", es))
	require.Empty(t, h.status("c1").Recent)
}

func TestRoundedToZeroIsReported(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{protocol.CopyModeOrder, protocol.CopyModeExecution} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, 0)
			h.apply(copierOf("c1", mode, protocol.Follower{Account: "A", Sizing: ratio(0.25)},
				protocol.Follower{Account: "B"}))
			h.start()
			lo := h.submit(bridge.OrderRequest{Account: "L", Instrument: es, Action: "Buy", OrderType: "Market", Quantity: 1})
			h.settle()
			require.Empty(t, h.orders("A"))
			require.Equal(t, 1, h.position("B", es))
			rec := h.status("c1").Recent
			require.Len(t, rec, 1)
			require.Equal(t, protocol.CopyRoundedToZero, rec[0].Outcome)
			require.Equal(t, "A", rec[0].Follower)
			require.Equal(t, lo.OrderID, rec[0].LeaderOrderID)
		})
	}
}

func TestGateRefusalIsBlocked(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0)
	h.ops.SetGate(gate{refuse: map[string]bool{"A": true}})
	h.apply(copierOf("c1", protocol.CopyModeExecution, protocol.Follower{Account: "A"}, protocol.Follower{Account: "B"}))
	h.start()
	h.submit(bridge.OrderRequest{Account: "L", Instrument: es, Action: "Buy", OrderType: "Market", Quantity: 2})
	h.settle()
	require.Zero(t, h.position("A", es))
	require.Equal(t, 2, h.position("B", es))
	rec := h.status("c1").Recent
	require.Len(t, rec, 1)
	require.Equal(t, protocol.CopyBlocked, rec[0].Outcome)
	require.Contains(t, rec[0].Reason, "(rule: closingOnly)")
	require.Equal(t, 2, rec[0].Quantity)
}

func TestPlatformRejectionIsRecorded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0)
	// MES rests in its own market: a sell stop through it is rejected.
	require.NoError(t, h.p.SetPrice(mes, 5980))
	c := copierOf("c1", protocol.CopyModeOrder, protocol.Follower{Account: "A"})
	c.SymbolReplacements = []protocol.SymbolReplacement{{From: "ES", To: "MES"}}
	h.apply(c)
	h.start()
	h.submit(bridge.OrderRequest{Account: "L", Instrument: es, Action: "Sell", OrderType: "StopMarket", Quantity: 1, StopPrice: 5990})
	h.settle()
	require.Empty(t, h.orders("A"))
	rec := h.status("c1").Recent
	require.Len(t, rec, 1)
	require.Equal(t, protocol.CopyRejected, rec[0].Outcome)
	require.NotEmpty(t, rec[0].Reason)
}

func TestAutoSync(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0)
	h.opts.MaxSyncCorrection = 3
	c := copierOf("c1", protocol.CopyModeExecution, protocol.Follower{Account: "A", Sizing: ratio(2)})
	c.AutoSync, c.AutoSyncSeconds = true, 3
	h.apply(c)
	h.start()
	h.submit(bridge.OrderRequest{Account: "L", Instrument: es, Action: "Buy", OrderType: "Market", Quantity: 1})
	h.settle()
	require.Equal(t, 2, h.position("A", es))

	// A manual trade on the follower: auto-sync takes it back at the next
	// pass, not before.
	h.submit(bridge.OrderRequest{Account: "A", Instrument: es, Action: "Buy", OrderType: "Market", Quantity: 1})
	h.clock.Advance(2 * time.Second)
	h.settle()
	require.Equal(t, 3, h.position("A", es))
	h.clock.Advance(time.Second)
	h.settle()
	require.Equal(t, 2, h.position("A", es))
	require.Empty(t, h.status("c1").Unaligned)

	// A position in a contract the leader does not hold is closed too.
	h.submit(bridge.OrderRequest{Account: "A", Instrument: nq, Action: "Sell", OrderType: "Market", Quantity: 1})
	h.clock.Advance(3 * time.Second)
	h.settle()
	require.Zero(t, h.position("A", nq))

	// Beyond the bound: nothing placed, reported, retried with backoff.
	h.submit(bridge.OrderRequest{Account: "A", Instrument: es, Action: "Sell", OrderType: "Market", Quantity: 6})
	h.clock.Advance(3 * time.Second)
	h.settle()
	require.Equal(t, -4, h.position("A", es))
	un := h.status("c1").Unaligned
	require.Len(t, un, 1)
	require.Equal(t, "A", un[0].Account)
	require.Equal(t, es, un[0].Instrument)
	require.Contains(t, un[0].Reason, "exceeds the auto-sync bound of 3")

	// The follower comes back within the bound; the next pass waits for
	// the backoff (6 s after the failure), then aligns.
	h.submit(bridge.OrderRequest{Account: "A", Instrument: es, Action: "Buy", OrderType: "Market", Quantity: 4})
	h.clock.Advance(3 * time.Second)
	h.settle()
	require.Equal(t, 0, h.position("A", es), "still backing off")
	require.Len(t, h.status("c1").Unaligned, 1)
	h.clock.Advance(3 * time.Second)
	h.settle()
	require.Equal(t, 2, h.position("A", es))
	require.Empty(t, h.status("c1").Unaligned)
}

func TestAutoSyncRefusedIsUnaligned(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0)
	c := copierOf("c1", protocol.CopyModeExecution, protocol.Follower{Account: "A"})
	c.AutoSync, c.AutoSyncSeconds = true, 3
	h.apply(c)
	h.start()
	h.submit(bridge.OrderRequest{Account: "L", Instrument: es, Action: "Buy", OrderType: "Market", Quantity: 1})
	h.settle()
	require.Equal(t, 1, h.position("A", es))
	h.ops.SetGate(gate{refuse: map[string]bool{"A": true}})
	h.submit(bridge.OrderRequest{Account: "A", Instrument: es, Action: "Sell", OrderType: "Market", Quantity: 1})
	h.clock.Advance(3 * time.Second)
	h.settle()
	require.Zero(t, h.position("A", es))
	un := h.status("c1").Unaligned
	require.Len(t, un, 1)
	require.Contains(t, un[0].Reason, "rule: closingOnly")
	rec := h.status("c1").Recent
	require.Len(t, rec, 1)
	require.Equal(t, protocol.CopyBlocked, rec[0].Outcome)
	// Not hammered: the next pass is inside the backoff.
	h.clock.Advance(3 * time.Second)
	h.settle()
	require.Len(t, h.status("c1").Recent, 1)
}

func TestTandemHaltAndRestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0)
	h.mons.set("A", protocol.MonitorActive)
	h.mons.set("B", protocol.MonitorActive)
	c := copierOf("c1", protocol.CopyModeExecution, protocol.Follower{Account: "A"}, protocol.Follower{Account: "B"})
	c.Tandem = true
	h.apply(c)
	h.start()
	h.submit(bridge.OrderRequest{Account: "L", Instrument: es, Action: "Buy", OrderType: "Market", Quantity: 1})
	h.settle()
	require.Equal(t, 1, h.position("A", es))

	h.mons.set("B", protocol.MonitorStopped)
	h.e.MonitorChanged("B", protocol.MonitorStopped)
	st := h.status("c1")
	require.Equal(t, protocol.CopierHalted, st.State)
	require.Contains(t, st.Reason, "B")
	rs := h.rep.Copiers()
	require.Len(t, rs, 1)
	require.Equal(t, protocol.CopierHalted, rs[0].State)
	halts, err := h.store.Load(bucketHalts)
	require.NoError(t, err)
	require.Contains(t, halts, "c1")

	h.mons.set("B", protocol.MonitorActive)
	h.submit(bridge.OrderRequest{Account: "L", Instrument: es, Action: "Buy", OrderType: "Market", Quantity: 1})
	h.settle()
	require.Equal(t, 1, h.position("A", es), "a halted copier copies nothing")

	// The halt survives a restart of the agent.
	h.stop()
	h.start()
	require.Equal(t, protocol.CopierHalted, h.status("c1").State)

	// Off, then on: running again.
	c.Active = false
	h.apply(c)
	h.settle()
	require.Equal(t, protocol.CopierOff, h.status("c1").State)
	rs = h.rep.Copiers()
	require.Equal(t, protocol.CopierRunning, rs[len(rs)-1].State)
	halts, err = h.store.Load(bucketHalts)
	require.NoError(t, err)
	require.Empty(t, halts)
	c.Active = true
	h.apply(c)
	h.settle()
	require.Equal(t, protocol.CopierRunning, h.status("c1").State)
	h.submit(bridge.OrderRequest{Account: "L", Instrument: es, Action: "Buy", OrderType: "Market", Quantity: 1})
	h.settle()
	require.Equal(t, 2, h.position("A", es))
	require.Equal(t, 2, h.position("B", es))
}

func TestTandemSeenAtCopyTime(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0)
	h.mons.set("A", protocol.MonitorStopped)
	c := copierOf("c1", protocol.CopyModeOrder, protocol.Follower{Account: "A"})
	c.Tandem = true
	h.apply(c)
	h.start()
	h.submit(bridge.OrderRequest{Account: "L", Instrument: es, Action: "Buy", OrderType: "Limit", Quantity: 1, LimitPrice: 5990})
	h.settle()
	require.Empty(t, h.orders("A"))
	require.Equal(t, protocol.CopierHalted, h.status("c1").State)
}

func TestCopierOffCopiesNothingNew(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0)
	c := copierOf("c1", protocol.CopyModeOrder, protocol.Follower{Account: "A"})
	h.apply(c)
	h.start()
	lo := h.submit(bridge.OrderRequest{Account: "L", Instrument: es, Action: "Buy", OrderType: "Limit", Quantity: 1, LimitPrice: 5990})
	h.settle()
	require.Len(t, h.orders("A"), 1)

	c.Active = false
	h.apply(c)
	h.settle()
	h.submit(bridge.OrderRequest{Account: "L", Instrument: es, Action: "Buy", OrderType: "Limit", Quantity: 1, LimitPrice: 5980})
	_, err := h.p.CancelOrder(h.ctx, "L", lo.OrderID)
	require.NoError(t, err)
	h.settle()
	fos := h.orders("A")
	require.Len(t, fos, 1, "nothing new copied")
	require.Equal(t, protocol.OrderStateWorking, fos[0].OrderState, "orders already working stay")

	// Turned on again, the order placed while off is still not copied.
	c.Active = true
	h.apply(c)
	h.settle()
	require.Len(t, h.orders("A"), 1)
	require.Equal(t, protocol.CopierRunning, h.status("c1").State)
}

func TestRestartedEngineKeepsMirroring(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0)
	h.apply(copierOf("c1", protocol.CopyModeOrder, protocol.Follower{Account: "A"}, protocol.Follower{Account: "B"}))
	h.start()
	lo := h.submit(bridge.OrderRequest{Account: "L", Instrument: es, Action: "Buy", OrderType: "Limit", Quantity: 2, LimitPrice: 5990})
	h.settle()
	h.stop()

	// While the agent is down, the leader changes the order; the new
	// engine mirrors it on start, then mirrors the cancel.
	_, err := h.p.ChangeOrder(h.ctx, bridge.ChangeRequest{Account: "L", OrderID: lo.OrderID, Quantity: 3})
	require.NoError(t, err)
	h.clock.Advance(time.Minute)
	h.start()
	for _, acct := range []string{"A", "B"} {
		fos := h.orders(acct)
		require.Len(t, fos, 1)
		require.Equal(t, 3, fos[0].Quantity)
	}
	_, err = h.p.CancelOrder(h.ctx, "L", lo.OrderID)
	require.NoError(t, err)
	h.settle()
	for _, acct := range []string{"A", "B"} {
		fos := h.orders(acct)
		require.Len(t, fos, 1)
		require.Equal(t, protocol.OrderStateCancelled, fos[0].OrderState)
	}
}

func TestCrashMidCopyResumesWithoutDuplicates(t *testing.T) {
	t.Parallel()
	t.Run("order", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, 0)
		h.apply(copierOf("c1", protocol.CopyModeOrder, protocol.Follower{Account: "A"}, protocol.Follower{Account: "B"}))
		// The engine that crashed placed A's copy, not B's, and recorded
		// nothing.
		lo := h.submit(bridge.OrderRequest{Account: "L", Instrument: es, Action: "Buy", OrderType: "Limit", Quantity: 2, LimitPrice: 5990})
		h.submit(bridge.OrderRequest{Account: "A", Instrument: es, Action: "Buy", OrderType: "Limit", Quantity: 2, LimitPrice: 5990,
			OrderID: copyID("c1", "order", lo.OrderID, "A")})
		h.clock.Advance(5 * time.Second)
		h.start()
		require.Len(t, h.orders("A"), 1)
		require.Len(t, h.orders("B"), 1)
		// Both copies are in the map: the cancel reaches both.
		_, err := h.p.CancelOrder(h.ctx, "L", lo.OrderID)
		require.NoError(t, err)
		h.settle()
		require.Equal(t, protocol.OrderStateCancelled, h.orders("A")[0].OrderState)
		require.Equal(t, protocol.OrderStateCancelled, h.orders("B")[0].OrderState)
		require.Empty(t, h.status("c1").Recent)
	})
	t.Run("execution", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, 0)
		h.apply(copierOf("c1", protocol.CopyModeExecution, protocol.Follower{Account: "A"}, protocol.Follower{Account: "B"}))
		h.submit(bridge.OrderRequest{Account: "L", Instrument: es, Action: "Buy", OrderType: "Market", Quantity: 2})
		xs, err := h.p.Executions(h.ctx, "L")
		require.NoError(t, err)
		h.submit(bridge.OrderRequest{Account: "A", Instrument: es, Action: "Buy", OrderType: "Market", Quantity: 2,
			OrderID: copyID("c1", "fill", xs[0].ID, "A")})
		h.clock.Advance(5 * time.Second)
		h.start()
		require.Equal(t, 2, h.position("A", es))
		require.Equal(t, 2, h.position("B", es))
		require.Empty(t, h.status("c1").Recent)
	})
	t.Run("too old", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, 0)
		h.apply(copierOf("c1", protocol.CopyModeExecution, protocol.Follower{Account: "A"}))
		h.submit(bridge.OrderRequest{Account: "L", Instrument: es, Action: "Buy", OrderType: "Market", Quantity: 2})
		h.clock.Advance(DefaultCatchUp + time.Second)
		h.start()
		require.Zero(t, h.position("A", es), "fills older than the catch-up window are not copied")
	})
}

func TestNoCopyLoop(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0)
	ab := copierOf("l-a", protocol.CopyModeOrder, protocol.Follower{Account: "A"})
	bc := copierOf("a-b", protocol.CopyModeExecution, protocol.Follower{Account: "B"})
	bc.Leader = "A"
	h.apply(ab, bc)
	h.start()
	h.submit(bridge.OrderRequest{Account: "L", Instrument: es, Action: "Buy", OrderType: "Market", Quantity: 1})
	h.submit(bridge.OrderRequest{Account: "L", Instrument: es, Action: "Buy", OrderType: "Limit", Quantity: 1, LimitPrice: 5990})
	h.settle()
	require.Len(t, h.orders("A"), 2, "copied to A once each")
	require.Equal(t, 1, h.position("A", es))
	require.Empty(t, h.orders("B"), "copies are not copied on")

	// A's own trade is A's leader trading: copied to B.
	h.submit(bridge.OrderRequest{Account: "A", Instrument: es, Action: "Buy", OrderType: "Market", Quantity: 1})
	h.settle()
	require.Equal(t, 1, h.position("B", es))
}

func TestLostEventsCatchUp(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0)
	h.apply(copierOf("c1", protocol.CopyModeOrder, protocol.Follower{Account: "A"}))
	h.start()
	lo := h.submit(bridge.OrderRequest{Account: "L", Instrument: es, Action: "Buy", OrderType: "Limit", Quantity: 1, LimitPrice: 5990})
	h.settle()
	// Events an engine never saw: a new order, and the cancel of the
	// copied one; then its stream says it lost them.
	h.stop()
	lo2 := h.submit(bridge.OrderRequest{Account: "L", Instrument: es, Action: "Sell", OrderType: "Limit", Quantity: 1, LimitPrice: 6010})
	_, err := h.p.CancelOrder(h.ctx, "L", lo.OrderID)
	require.NoError(t, err)
	e, err := New(h.opts)
	require.NoError(t, err)
	e.handle(h.ctx, bridge.Event{Lost: true})
	fos := h.orders("A")
	require.Len(t, fos, 2)
	require.Equal(t, protocol.OrderStateCancelled, fos[0].OrderState)
	require.Equal(t, copyID("c1", "order", lo2.OrderID, "A"), fos[1].OrderID)
	// Handling the missed events afterwards changes nothing.
	for _, o := range h.orders("L") {
		e.handle(h.ctx, bridge.Event{Kind: bridge.EventOrder, Order: &o})
	}
	require.Len(t, h.orders("A"), 2)
	require.Empty(t, e.Status()[0].Recent)
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0)
	for _, mut := range []func(*Options){
		func(o *Options) { o.Platform = nil },
		func(o *Options) { o.Trader = nil },
		func(o *Options) { o.Config = nil },
		func(o *Options) { o.Store = nil },
		func(o *Options) { o.CatchUp = -1 },
	} {
		o := h.opts
		mut(&o)
		_, err := New(o)
		require.Error(t, err)
	}
}
