package ninjatrader_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/ninjatrader"
	"tradebridge/trading/bridge/ninjatrader/ntfake"
)

// transcriptNow is the bridge's clock in the transcripts' tests: inside
// the session of 25 November 2026 that the recorded times belong to.
var transcriptNow = time.Date(2026, 11, 25, 15, 0, 10, 0, time.UTC)

// replay plays a transcript against a running bridge, whose event stream
// is read from the start.
func replay(t *testing.T, name string) (*ntfake.Replayer, *ninjatrader.Platform, <-chan bridge.Event) {
	t.Helper()
	dir := t.TempDir()
	r := ntfake.Replay(t, filepath.Join("testdata", "transcripts", name), dir)
	p := newBridge(t, ninjatrader.Options{DiscoveryFile: r.DiscoveryPath(),
		Now: func() time.Time { return transcriptNow }})
	events := p.Events(t.Context())
	runBridge(t, p)
	t.Cleanup(r.Close) // before the bridge stops: the replayer's end is checked with the bridge still connected
	return r, p, events
}

func waitDone(t *testing.T, r *ntfake.Replayer) {
	t.Helper()
	select {
	case <-r.Done():
	case <-time.After(3 * waitFor):
		t.Fatal("the transcript did not play out")
	}
}

func waitReady(t *testing.T, p *ninjatrader.Platform) {
	t.Helper()
	require.Eventually(t, func() bool { return p.Status().Connected }, waitFor, time.Millisecond)
}

func orderStates(t *testing.T, p *ninjatrader.Platform) map[string]string {
	t.Helper()
	os, err := p.Orders(context.Background(), "Sim101")
	require.NoError(t, err)
	m := map[string]string{}
	for _, o := range os {
		m[o.OrderID] = o.OrderState
	}
	return m
}

func executionIDs(t *testing.T, p *ninjatrader.Platform) []string {
	t.Helper()
	exs, err := p.Executions(context.Background(), "Sim101")
	require.NoError(t, err)
	ids := []string{}
	for _, e := range exs {
		ids = append(ids, e.ID)
	}
	return ids
}

// A write reads its own effects: the events come before the reply.
func TestTranscriptSubmitReadsItsWrites(t *testing.T) {
	t.Parallel()
	r, p, events := replay(t, "handshake_submit.txt")
	waitReady(t, p)
	ord, err := p.SubmitOrder(context.Background(), bridge.OrderRequest{Account: "Sim101", Instrument: "ES 12-26",
		Action: protocol.ActionBuy, OrderType: protocol.OrderTypeMarket, Quantity: 1, Name: "Entry", TimeInForce: protocol.TimeInForceDay})
	require.NoError(t, err)
	require.Equal(t, protocol.OrderStateFilled, ord.OrderState)
	require.Equal(t, 6000.25, ord.AverageFillPrice)
	// Read at once, without waiting: the bridge already holds it all.
	require.Equal(t, map[string]string{ord.OrderID: protocol.OrderStateFilled}, orderStates(t, p))
	require.Equal(t, []string{"ex-1"}, executionIDs(t, p))
	ps, err := p.Positions(context.Background(), "Sim101")
	require.NoError(t, err)
	require.Len(t, ps, 1)
	require.Equal(t, protocol.MarketPositionLong, ps[0].MarketPosition)
	acct, err := p.Account(context.Background(), "Sim101")
	require.NoError(t, err)
	require.Equal(t, 0.62, acct.Item.Commission)
	kinds := []bridge.EventKind{}
	for len(events) > 0 {
		kinds = append(kinds, (<-events).Kind)
	}
	require.Contains(t, kinds, bridge.EventExecution)
	require.Contains(t, kinds, bridge.EventPosition)
	waitDone(t, r)
}

// Duplicates are dropped, early events wait for the missing ones, an
// event older than the snapshot is ignored, and no other snapshot is taken.
func TestTranscriptOutOfOrderAndDuplicates(t *testing.T) {
	t.Parallel()
	r, p, events := replay(t, "out_of_order.txt")
	waitDone(t, r)
	require.Equal(t, map[string]string{"lim-1": protocol.OrderStateFilled}, orderStates(t, p))
	require.Equal(t, []string{"ex-1", "ex-2"}, executionIDs(t, p))
	ps, err := p.Positions(context.Background(), "Sim101")
	require.NoError(t, err)
	require.Len(t, ps, 1)
	require.Equal(t, 2, ps[0].Quantity)
	require.Equal(t, 25.0, ps[0].UnrealizedProfitLoss)
	acct, err := p.Account(context.Background(), "Sim101")
	require.NoError(t, err)
	require.Equal(t, 1.24, acct.Item.Commission)
	require.Equal(t, uint64(13), p.Status().Seq)
	var execs, orders int
	for len(events) > 0 {
		ev := <-events
		switch ev.Kind {
		case bridge.EventExecution:
			execs++
		case bridge.EventOrder:
			orders++
			require.NotEqual(t, protocol.OrderStateCancelled, ev.Order.OrderState, "the event older than the snapshot is ignored")
		}
	}
	require.Equal(t, 2, execs, "each execution once")
}

// A write whose connection drops before the reply is outcome_unknown and
// is not sent again; the reconnect's snapshot shows what happened.
func TestTranscriptDropReconnect(t *testing.T) {
	t.Parallel()
	r, p, _ := replay(t, "drop_reconnect.txt")
	waitReady(t, p)
	_, err := p.SubmitOrder(context.Background(), bridge.OrderRequest{Account: "Sim101", Instrument: "ES 12-26",
		Action: protocol.ActionBuy, OrderType: protocol.OrderTypeLimit, LimitPrice: 5990, Quantity: 1, Name: "Entry",
		TimeInForce: protocol.TimeInForceDay})
	require.ErrorIs(t, err, bridge.ErrOutcomeUnknown)
	waitDone(t, r)
	st := orderStates(t, p)
	require.Len(t, st, 1)
	for _, s := range st {
		require.Equal(t, protocol.OrderStateFilled, s)
	}
	require.Equal(t, []string{"ex-1"}, executionIDs(t, p))
	ps, err := p.Positions(context.Background(), "Sim101")
	require.NoError(t, err)
	require.Len(t, ps, 1)
	require.Equal(t, 512.5, ps[0].UnrealizedProfitLoss)
}

// A NinjaTrader restart: a new session whose numbering starts again, and
// the orders that changed meanwhile reach the event stream.
func TestTranscriptRestart(t *testing.T) {
	t.Parallel()
	r, p, events := replay(t, "restart.txt")
	waitDone(t, r)
	require.Equal(t, "e5f6071829304152", p.Status().SessionID, "the second session's")
	require.Equal(t, map[string]string{"ent-1": protocol.OrderStateFilled, "stop-1": protocol.OrderStateCancelled,
		"tgt-1": protocol.OrderStateFilled, "8f2c0a71b9d44c0e9e2b6f7d1a3c5e8f": protocol.OrderStateWorking}, orderStates(t, p))
	ps, err := p.Positions(context.Background(), "Sim101")
	require.NoError(t, err)
	require.Empty(t, ps)
	require.ElementsMatch(t, []string{"ex-8", "ex-9"}, executionIDs(t, p))
	acct, err := p.Account(context.Background(), "Sim101")
	require.NoError(t, err)
	require.Equal(t, 1248.76, acct.Item.RealizedProfitLoss)
	var flat, conns bool
	for len(events) > 0 {
		ev := <-events
		flat = flat || ev.Kind == bridge.EventPosition && ev.Position.MarketPosition == protocol.MarketPositionFlat
		conns = conns || ev.Kind == bridge.EventConnections
	}
	require.True(t, flat, "the position closed while the bridge could not watch is reported flat")
	require.True(t, conns, "the connections are reported again")
}
