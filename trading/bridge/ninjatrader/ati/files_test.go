package ati

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	// testPoll is the outgoing folder's poll in tests.
	testPoll = 2 * time.Millisecond
	// testWait bounds waits for the fake NinjaTrader, which answers at
	// once: reaching it fails the test.
	testWait = testkit.Medium
	// shortWait is the wait of tests in which NinjaTrader does not
	// answer.
	shortWait = 150 * time.Millisecond
	// eventTimeout bounds the wait for one event.
	eventTimeout = testkit.Medium
	// settleTimeout bounds require.Eventually.
	settleTimeout = testkit.Medium
)

type harness struct {
	f   *Files
	nt  *fakeNT
	dir string
}

// newHarness builds Files over a fake NinjaTrader. mod, when set, changes
// the options.
func newHarness(t *testing.T, prefixAccount bool, mod func(*Options)) harness {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, incomingDir), 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(dir, outgoingDir), 0o755))
	nt := newFakeNT(t, dir, prefixAccount)
	opts := Options{
		Dir:         dir,
		Logger:      zaptest.NewLogger(t),
		Poll:        testPoll,
		WaitTimeout: testWait,
		Now:         func() time.Time { return time.Date(2026, 7, 1, 14, 30, 0, 0, time.UTC) },
	}
	if mod != nil {
		mod(&opts)
	}
	f, err := New(opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, f.Close())
		requireNoProblems(t, nt)
	})
	return harness{f: f, nt: nt, dir: dir}
}

// incomingNames lists the incoming folder.
func (h harness) incomingNames(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(h.dir, incomingDir))
	require.NoError(t, err)
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func market(account, instrument, action string, qty int) bridge.OrderRequest {
	return bridge.OrderRequest{Account: account, Instrument: instrument, Action: action, OrderType: "Market", Quantity: qty}
}

func limit(account, instrument, action string, qty int, price float64) bridge.OrderRequest {
	return bridge.OrderRequest{Account: account, Instrument: instrument, Action: action, OrderType: "Limit",
		Quantity: qty, LimitPrice: price}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(dir string) Options
		isErr error
	}{
		{"no dir", func(string) Options { return Options{} }, nil},
		{"no incoming", func(dir string) Options {
			_ = os.Mkdir(filepath.Join(dir, outgoingDir), 0o755)
			return Options{Dir: dir}
		}, ErrFolder},
		{"no outgoing", func(dir string) Options {
			_ = os.Mkdir(filepath.Join(dir, incomingDir), 0o755)
			return Options{Dir: dir}
		}, ErrFolder},
		{"outgoing is a file", func(dir string) Options {
			_ = os.Mkdir(filepath.Join(dir, incomingDir), 0o755)
			_ = os.WriteFile(filepath.Join(dir, outgoingDir), nil, 0o644)
			return Options{Dir: dir}
		}, ErrFolder},
		{"missing dir", func(dir string) Options { return Options{Dir: filepath.Join(dir, "nope")} }, ErrFolder},
		{"negative poll", func(dir string) Options { return Options{Dir: dir, Poll: -1} }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := New(tt.setup(t.TempDir()))
			require.Error(t, err)
			require.Nil(t, f)
			if tt.isErr != nil {
				require.ErrorIs(t, err, tt.isErr)
			}
		})
	}
}

func TestMarketOrderFilled(t *testing.T) {
	t.Parallel()
	for _, prefix := range []bool{false, true} {
		name := "guide file names"
		if prefix {
			name = "account-prefixed file names"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, prefix, nil)
			ctx := t.Context()
			req := market("Sim101", "es 12-26", "buy", 2)
			req.Name, req.StrategyTag = "Entry", "bot-1"
			o, err := h.f.SubmitOrder(ctx, req)
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(o.OrderID, "tb"), o.OrderID)
			require.Equal(t, protocol.Order{
				OrderID: o.OrderID, Account: "Sim101", Instrument: "ES 12-26", Name: "Entry",
				OrderAction: protocol.ActionBuy, OrderType: protocol.OrderTypeMarket,
				OrderState: protocol.OrderStateFilled, Quantity: 2, Filled: 2, AverageFillPrice: 5950.25,
				TimeInForce: protocol.TimeInForceDay, StrategyTag: "bot-1",
				Time: "2026-07-01T14:30:00.000Z", Epoch: 1782916200000,
			}, o)
			require.Equal(t, [][]string{{"PLACE", "Sim101", "ES 12-26", "BUY", "2", "MARKET", "", "", "DAY", "", o.OrderID, "", ""}},
				h.nt.readLines())

			pos, err := h.f.Positions(ctx, "Sim101")
			require.NoError(t, err)
			require.Equal(t, []protocol.Position{{Account: "Sim101", Instrument: "ES 12-26", InstrumentType: "Future",
				MarketPosition: protocol.MarketPositionLong, Quantity: 2, AveragePrice: 5950.25}}, pos)
			pos, err = h.f.Positions(ctx, "Sim102")
			require.NoError(t, err)
			require.Empty(t, pos)

			orders, err := h.f.Orders(ctx, "Sim101")
			require.NoError(t, err)
			require.Equal(t, []protocol.Order{o}, orders)
			require.Empty(t, h.incomingNames(t), "instruction files are consumed, temporary files gone")
		})
	}
}

func TestLimitWorkingThenCancelled(t *testing.T) {
	t.Parallel()
	h := newHarness(t, true, nil)
	ctx := t.Context()
	req := limit("Sim101", "ES 12-26", "Buy", 1, 5940.5)
	req.TimeInForce, req.Oco, req.OrderID = "gtc", "grp-1", "my-order.1"
	o, err := h.f.SubmitOrder(ctx, req)
	require.NoError(t, err)
	require.Equal(t, "my-order.1", o.OrderID)
	require.Equal(t, protocol.OrderStateWorking, o.OrderState)
	require.Equal(t, 5940.5, o.LimitPrice)
	require.Equal(t, protocol.TimeInForceGtc, o.TimeInForce)
	require.Equal(t, "grp-1", o.Oco)

	orders, err := h.f.Orders(ctx, "Sim101")
	require.NoError(t, err)
	require.Len(t, orders, 1)
	require.Equal(t, protocol.OrderStateWorking, orders[0].OrderState)

	c, err := h.f.CancelOrder(ctx, "Sim101", "my-order.1")
	require.NoError(t, err)
	require.Equal(t, protocol.OrderStateCancelled, c.OrderState)
	require.Equal(t, 0, c.Filled)

	_, err = h.f.CancelOrder(ctx, "Sim101", "my-order.1")
	var re *bridge.RejectError
	require.ErrorAs(t, err, &re)
	require.Equal(t, "order is already cancelled", re.Reason)

	lines := h.nt.readLines()
	require.Len(t, lines, 2, "a refused cancel writes nothing")
	require.Equal(t, []string{"PLACE", "Sim101", "ES 12-26", "BUY", "1", "LIMIT", "5940.5", "", "GTC", "grp-1", "my-order.1", "", ""}, lines[0])
	require.Equal(t, []string{"CANCEL", "", "", "", "", "", "", "", "", "", "my-order.1", "", ""}, lines[1])
}

func TestChangeOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, nil)
	ctx := t.Context()
	o, err := h.f.SubmitOrder(ctx, limit("Sim101", "ES 12-26", "Buy", 1, 5940))
	require.NoError(t, err)
	id := o.OrderID

	_, err = h.f.ChangeOrder(ctx, bridge.ChangeRequest{Account: "Sim101", OrderID: id, StopPrice: 5900})
	var re *bridge.RejectError
	require.ErrorAs(t, err, &re)
	require.Equal(t, "order type has no stop price", re.Reason)

	c, err := h.f.ChangeOrder(ctx, bridge.ChangeRequest{Account: "Sim101", OrderID: id, LimitPrice: 5945.75})
	require.NoError(t, err)
	require.Equal(t, protocol.OrderStateWorking, c.OrderState)
	require.Equal(t, 5945.75, c.LimitPrice)

	c, err = h.f.ChangeOrder(ctx, bridge.ChangeRequest{Account: "Sim101", OrderID: id, Quantity: 3})
	require.NoError(t, err)
	require.Equal(t, 3, c.Quantity)
	require.Equal(t, 5945.75, c.LimitPrice)

	n := len(h.nt.readLines())
	c, err = h.f.ChangeOrder(ctx, bridge.ChangeRequest{Account: "Sim101", OrderID: id, Quantity: 3, LimitPrice: 5945.75})
	require.NoError(t, err)
	require.Equal(t, 3, c.Quantity)
	require.Len(t, h.nt.readLines(), n, "a change that changes nothing writes nothing")

	// A marketable limit fills.
	c, err = h.f.ChangeOrder(ctx, bridge.ChangeRequest{Account: "Sim101", OrderID: id, LimitPrice: 5951})
	require.NoError(t, err)
	require.Equal(t, protocol.OrderStateFilled, c.OrderState)
	require.Equal(t, 3, c.Filled)
	require.Equal(t, 5950.25, c.AverageFillPrice)

	_, err = h.f.ChangeOrder(ctx, bridge.ChangeRequest{Account: "Sim101", OrderID: id, LimitPrice: 5952})
	require.ErrorAs(t, err, &re)
	require.Equal(t, "order is already filled", re.Reason)

	lines := h.nt.readLines()
	require.Equal(t, []string{"CHANGE", "", "", "", "0", "", "5945.75", "0", "", "", id, "", ""}, lines[1])
	require.Equal(t, []string{"CHANGE", "", "", "", "3", "", "0", "0", "", "", id, "", ""}, lines[2])
	require.Equal(t, []string{"CHANGE", "", "", "", "0", "", "5951", "0", "", "", id, "", ""}, lines[3])
}

func TestStopOrderTriggers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, nil)
	ctx := t.Context()
	o, err := h.f.SubmitOrder(ctx, bridge.OrderRequest{Account: "Sim101", Instrument: "ES 12-26", Action: "Sell",
		OrderType: "StopMarket", Quantity: 1, StopPrice: 5940})
	require.NoError(t, err)
	require.Equal(t, protocol.OrderStateAccepted, o.OrderState)
	require.Equal(t, 5940.0, o.StopPrice)

	h.nt.setPrice("ES 12-26", 5939.75)
	require.Eventually(t, func() bool {
		orders, err := h.f.Orders(ctx, "Sim101")
		return err == nil && len(orders) == 1 && orders[0].OrderState == protocol.OrderStateFilled &&
			orders[0].AverageFillPrice == 5939.75
	}, settleTimeout, testPoll)
	want := []protocol.Position{{Account: "Sim101", Instrument: "ES 12-26", InstrumentType: "Future",
		MarketPosition: protocol.MarketPositionShort, Quantity: 1, AveragePrice: 5939.75}}
	require.Eventually(t, func() bool {
		pos, err := h.f.Positions(ctx, "Sim101")
		return err == nil && len(pos) == 1 && pos[0] == want[0]
	}, settleTimeout, testPoll)
}

func TestFlatten(t *testing.T) {
	t.Parallel()
	h := newHarness(t, true, nil)
	ctx := t.Context()
	_, err := h.f.SubmitOrder(ctx, market("Sim101", "ES 12-26", "Buy", 2))
	require.NoError(t, err)
	working, err := h.f.SubmitOrder(ctx, limit("Sim101", "ES 12-26", "Sell", 2, 5990))
	require.NoError(t, err)
	require.Equal(t, protocol.OrderStateWorking, working.OrderState)

	require.NoError(t, h.f.Flatten(ctx, "Sim101", "ES 12-26"))
	pos, err := h.f.Positions(ctx, "Sim101")
	require.NoError(t, err)
	require.Empty(t, pos)
	require.Eventually(t, func() bool {
		orders, err := h.f.Orders(ctx, "Sim101")
		return err == nil && len(orders) == 2 && orders[1].OrderState == protocol.OrderStateCancelled
	}, settleTimeout, testPoll)
	require.Equal(t, []string{"CLOSEPOSITION", "Sim101", "ES 12-26", "", "", "", "", "", "", "", "", "", ""},
		h.nt.readLines()[2])

	// Nothing to do is not an error.
	require.NoError(t, h.f.Flatten(ctx, "Sim101", "ES 12-26"))

	err = h.f.Flatten(ctx, "Sim101", "ES")
	var ie *bridge.InstrumentError
	require.ErrorAs(t, err, &ie)
	require.Equal(t, bridge.InstrumentMalformed, ie.Cause)
	require.Len(t, h.nt.readLines(), 4)
}

func TestCancelAllAndFlattenEverything(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, nil)
	ctx := t.Context()
	_, err := h.f.SubmitOrder(ctx, market("Sim102", "MES 12-26", "Sell", 1))
	require.NoError(t, err)
	w, err := h.f.SubmitOrder(ctx, limit("Sim101", "ES 12-26", "Buy", 1, 5900))
	require.NoError(t, err)

	require.NoError(t, h.f.CancelAllOrders(ctx))
	require.Eventually(t, func() bool {
		orders, err := h.f.Orders(ctx, "Sim101")
		return err == nil && len(orders) == 1 && orders[0].OrderID == w.OrderID &&
			orders[0].OrderState == protocol.OrderStateCancelled
	}, settleTimeout, testPoll)

	require.NoError(t, h.f.FlattenEverything(ctx))
	require.Eventually(t, func() bool {
		pos, err := h.f.Positions(ctx, "Sim102")
		return err == nil && len(pos) == 0
	}, settleTimeout, testPoll)
	lines := h.nt.readLines()
	require.Equal(t, []string{"CANCELALLORDERS", "", "", "", "", "", "", "", "", "", "", "", ""}, lines[2])
	require.Equal(t, []string{"FLATTENEVERYTHING", "", "", "", "", "", "", "", "", "", "", "", ""}, lines[3])
}

func TestRejectedOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, true, nil)
	ctx := t.Context()
	req := market("NoSuchAccount", "ES 12-26", "Buy", 1)
	req.OrderID = "r1"
	_, err := h.f.SubmitOrder(ctx, req)
	var re *bridge.RejectError
	require.ErrorAs(t, err, &re)
	require.Equal(t, rejectedReason, re.Reason)

	orders, err := h.f.Orders(ctx, "NoSuchAccount")
	require.NoError(t, err)
	require.Empty(t, orders, "a rejected order is not recorded")

	_, err = h.f.SubmitOrder(ctx, req)
	require.ErrorAs(t, err, &re)
	require.Equal(t, "order id already used", re.Reason)
	require.Len(t, h.nt.readLines(), 1)
}

func TestDuplicateOrderIDs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, nil)
	ctx := t.Context()
	// A state file left by an earlier run, in either naming.
	require.NoError(t, os.WriteFile(filepath.Join(h.dir, outgoingDir, "Sim101_old1.txt"), []byte("FILLED;1;5000"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(h.dir, outgoingDir, "old2.txt"), []byte("WORKING;0;0"), 0o644))

	req := limit("Sim101", "ES 12-26", "Buy", 1, 5900)
	req.OrderID = "abc"
	_, err := h.f.SubmitOrder(ctx, req)
	require.NoError(t, err)
	for _, id := range []string{"abc", "ABC", "old1", "OLD2"} {
		req.OrderID = id
		_, err = h.f.SubmitOrder(ctx, req)
		var re *bridge.RejectError
		require.ErrorAs(t, err, &re, id)
		require.Equal(t, "order id already used", re.Reason)
	}
	require.Len(t, h.nt.readLines(), 1)
}

func TestRequestsRefusedBeforeWriting(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, nil)
	ctx := t.Context()
	base := limit("Sim101", "ES 12-26", "Buy", 1, 5900)
	tests := []struct {
		name string
		mod  func(*bridge.OrderRequest)
		want any // *bridge.RequestError, *bridge.RejectError or *bridge.InstrumentError
	}{
		{"semicolon in account", func(r *bridge.OrderRequest) { r.Account = "Sim101;CANCELALLORDERS" }, &bridge.RequestError{}},
		{"second command after a line break", func(r *bridge.OrderRequest) {
			r.Account = "Sim101\r\nFLATTENEVERYTHING;;;;;;;;;;;;"
		}, &bridge.RequestError{}},
		{"line break in OCO", func(r *bridge.OrderRequest) { r.Oco = "g\n1" }, &bridge.RequestError{}},
		{"semicolon in ATM template", func(r *bridge.OrderRequest) { r.AtmTemplate = "ATM;x" }, &bridge.RequestError{}},
		{"control character in ATM template", func(r *bridge.OrderRequest) { r.AtmTemplate = "ATM\x1b" }, &bridge.RequestError{}},
		{"path in order id", func(r *bridge.OrderRequest) { r.OrderID = `..\..\x` }, &bridge.RequestError{}},
		{"semicolon in order id", func(r *bridge.OrderRequest) { r.OrderID = "a;b" }, &bridge.RequestError{}},
		{"no account", func(r *bridge.OrderRequest) { r.Account = "" }, &bridge.RequestError{}},
		{"root", func(r *bridge.OrderRequest) { r.Instrument = "ES" }, &bridge.InstrumentError{}},
		{"month code", func(r *bridge.OrderRequest) { r.Instrument = "ESZ26" }, &bridge.InstrumentError{}},
		{"no instrument", func(r *bridge.OrderRequest) { r.Instrument = "" }, &bridge.InstrumentError{}},
		{"instrument with a semicolon", func(r *bridge.OrderRequest) { r.Instrument = "ES 12-26;" }, &bridge.InstrumentError{}},
		{"zero quantity", func(r *bridge.OrderRequest) { r.Quantity = 0 }, &bridge.RejectError{}},
		{"bad action", func(r *bridge.OrderRequest) { r.Action = "Short" }, &bridge.RejectError{}},
		{"bad order type", func(r *bridge.OrderRequest) { r.OrderType = "Stop" }, &bridge.RejectError{}},
		{"bad time in force", func(r *bridge.OrderRequest) { r.TimeInForce = "Gtd" }, &bridge.RejectError{}},
		{"no limit price", func(r *bridge.OrderRequest) { r.LimitPrice = 0 }, &bridge.RejectError{}},
		{"stop limit without stop", func(r *bridge.OrderRequest) { r.OrderType = "StopLimit" }, &bridge.RejectError{}},
	}
	for _, tt := range tests {
		req := base
		tt.mod(&req)
		_, err := h.f.SubmitOrder(ctx, req)
		require.Error(t, err, tt.name)
		switch tt.want.(type) {
		case *bridge.RequestError:
			var e *bridge.RequestError
			require.ErrorAs(t, err, &e, tt.name)
		case *bridge.RejectError:
			var e *bridge.RejectError
			require.ErrorAs(t, err, &e, tt.name)
		case *bridge.InstrumentError:
			var e *bridge.InstrumentError
			require.ErrorAs(t, err, &e, tt.name)
			require.Equal(t, bridge.InstrumentMalformed, e.Cause, tt.name)
			require.ErrorIs(t, err, bridge.ErrInstrumentUnknown, tt.name)
		}
	}
	require.Empty(t, h.incomingNames(t), "nothing written")
	require.Zero(t, h.nt.fileCount(), "nothing read")
}

func TestATMTemplate(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, nil)
	req := market("Sim101", "ES 12-26", "Buy", 1)
	req.AtmTemplate, req.OrderID = "ATM 2R", "atm1"
	_, err := h.f.SubmitOrder(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, []string{"PLACE", "Sim101", "ES 12-26", "BUY", "1", "MARKET", "", "", "DAY", "", "atm1", "ATM 2R", "atm1-atm"},
		h.nt.readLines()[0])
}

func TestNotPickedUpIsWithdrawn(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, func(o *Options) { o.WaitTimeout = shortWait })
	ctx := t.Context()
	w, err := h.f.SubmitOrder(ctx, limit("Sim101", "ES 12-26", "Buy", 1, 5900))
	require.NoError(t, err)
	h.nt.setEnabled(false) // the ATI is switched off

	req := market("Sim101", "ES 12-26", "Buy", 1)
	req.OrderID = "late1"
	_, err = h.f.SubmitOrder(ctx, req)
	require.ErrorIs(t, err, ErrNotPickedUp)
	require.ErrorIs(t, err, bridge.ErrNotConnected)
	_, err = h.f.CancelOrder(ctx, "Sim101", w.OrderID)
	require.ErrorIs(t, err, ErrNotPickedUp)
	_, err = h.f.ChangeOrder(ctx, bridge.ChangeRequest{Account: "Sim101", OrderID: w.OrderID, Quantity: 2})
	require.ErrorIs(t, err, ErrNotPickedUp)
	require.ErrorIs(t, h.f.Flatten(ctx, "Sim101", "ES 12-26"), ErrNotPickedUp)
	require.ErrorIs(t, h.f.CancelAllOrders(ctx), ErrNotPickedUp)
	require.ErrorIs(t, h.f.FlattenEverything(ctx), ErrNotPickedUp)
	require.Empty(t, h.incomingNames(t), "withdrawn files are gone")

	// The order that was withdrawn is not recorded, and the working one is
	// unchanged.
	orders, err := h.f.Orders(ctx, "Sim101")
	require.NoError(t, err)
	require.Len(t, orders, 1)
	require.Equal(t, protocol.OrderStateWorking, orders[0].OrderState)
	require.Equal(t, 1, orders[0].Quantity)

	// Once NinjaTrader reads again, nothing withdrawn is acted on, and the
	// withdrawn id can be used.
	h.nt.setEnabled(true)
	o, err := h.f.SubmitOrder(ctx, req)
	require.NoError(t, err)
	require.Equal(t, protocol.OrderStateFilled, o.OrderState)
	lines := h.nt.readLines()
	require.Len(t, lines, 2)
	require.Equal(t, "late1", lines[1][10])
}

func TestContextEndWithdraws(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, nil)
	h.nt.setEnabled(false)
	ctx, cancel := context.WithTimeout(t.Context(), shortWait)
	defer cancel()
	_, err := h.f.SubmitOrder(ctx, market("Sim101", "ES 12-26", "Buy", 1))
	require.ErrorIs(t, err, ErrNotPickedUp)
	require.Empty(t, h.incomingNames(t))

	_, err = h.f.SubmitOrder(ctx, market("Sim101", "ES 12-26", "Buy", 1))
	require.ErrorIs(t, err, context.DeadlineExceeded, "an ended context writes nothing")
}

func TestReadButNoStateIsPending(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, func(o *Options) { o.WaitTimeout = shortWait })
	ctx := t.Context()
	h.nt.setSilent(true) // reads and deletes instruction files, writes nothing
	o, err := h.f.SubmitOrder(ctx, market("Sim101", "ES 12-26", "Buy", 1))
	require.NoError(t, err)
	require.Equal(t, protocol.OrderStateSubmitted, o.OrderState)
	require.Equal(t, 1, h.nt.fileCount(), "handed over once, never again")

	orders, err := h.f.Orders(ctx, "Sim101")
	require.NoError(t, err)
	require.Equal(t, []protocol.Order{o}, orders)

	c, err := h.f.CancelOrder(ctx, "Sim101", o.OrderID)
	require.NoError(t, err)
	require.Equal(t, protocol.OrderStateCancelPending, c.OrderState)
	require.Equal(t, 2, h.nt.fileCount())
}

func TestUnknownOrders(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, nil)
	ctx := t.Context()
	o, err := h.f.SubmitOrder(ctx, limit("Sim101", "ES 12-26", "Buy", 1, 5900))
	require.NoError(t, err)
	for _, tt := range []struct{ account, id string }{{"Sim101", "nope"}, {"Sim102", o.OrderID}} {
		_, err := h.f.CancelOrder(ctx, tt.account, tt.id)
		require.ErrorIs(t, err, bridge.ErrOrderNotFound)
		require.ErrorIs(t, err, ErrNeedsAddon)
		_, err = h.f.ChangeOrder(ctx, bridge.ChangeRequest{Account: tt.account, OrderID: tt.id, Quantity: 2})
		require.ErrorIs(t, err, bridge.ErrOrderNotFound)
		require.ErrorIs(t, err, ErrNeedsAddon)
	}
	require.Len(t, h.nt.readLines(), 1)
}

func TestConnections(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, nil)
	ctx := t.Context()
	conns, err := h.f.Connections(ctx)
	require.NoError(t, err)
	require.Equal(t, []protocol.Connection{{Name: "Simulated Data Feed", Status: "Connected", Accounts: []string{}}}, conns)

	h.nt.mu.Lock()
	h.nt.write("Simulated Data Feed.txt", "DISCONNECTED")
	h.nt.write("Rithmic.txt", "CONNECTED")
	h.nt.mu.Unlock()
	require.Eventually(t, func() bool {
		conns, err := h.f.Connections(ctx)
		return err == nil && len(conns) == 2 && conns[0].Name == "Rithmic" && conns[0].Status == "Connected" &&
			conns[1].Status == "Disconnected"
	}, settleTimeout, testPoll)
}

// TestInstructionFilesAppearWhole writes every instruction one byte at a
// time while the fake NinjaTrader reads the folder continuously: it would
// see part of a line if a file were written under its final name.
func TestInstructionFilesAppearWhole(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, nil)
	h.f.writeData = func(fh *os.File, b []byte) error {
		for i := range b {
			if _, err := fh.Write(b[i : i+1]); err != nil {
				return err
			}
			if err := fh.Sync(); err != nil {
				return err
			}
			runtime.Gosched()
		}
		return nil
	}
	ctx := t.Context()
	for range 3 {
		o, err := h.f.SubmitOrder(ctx, limit("Sim101", "ES 12-26", "Buy", 1, 5900.25))
		require.NoError(t, err)
		_, err = h.f.CancelOrder(ctx, "Sim101", o.OrderID)
		require.NoError(t, err)
	}
	requireNoProblems(t, h.nt)
	require.Len(t, h.nt.readLines(), 6)

	// The fake does notice a file written in place.
	require.NoError(t, os.WriteFile(filepath.Join(h.dir, incomingDir, "oifpartial.txt"), []byte("PLACE;Sim1"), 0o644))
	require.Eventually(t, func() bool { return len(h.nt.takeProblems()) > 0 }, settleTimeout, testPoll)
}

func TestEvents(t *testing.T) {
	t.Parallel()
	h := newHarness(t, true, nil)
	require.NoError(t, h.f.Start())
	require.NoError(t, h.f.Start(), "Start is idempotent")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	events := h.f.Events(ctx)

	o, err := h.f.SubmitOrder(t.Context(), market("Sim101", "ES 12-26", "Sell", 1))
	require.NoError(t, err)

	var (
		lastSeq  uint64
		orderEvs []protocol.Order
		position *protocol.Position
	)
	for position == nil || len(orderEvs) == 0 || orderEvs[len(orderEvs)-1].OrderState != protocol.OrderStateFilled {
		select {
		case ev, ok := <-events:
			require.True(t, ok)
			require.False(t, ev.Lost)
			if lastSeq != 0 {
				require.Equal(t, lastSeq+1, ev.Seq)
			}
			lastSeq = ev.Seq
			switch ev.Kind {
			case bridge.EventOrder:
				require.Equal(t, o.OrderID, ev.Order.OrderID)
				orderEvs = append(orderEvs, *ev.Order)
			case bridge.EventPosition:
				position = ev.Position
			default:
				t.Fatalf("unexpected event kind %q", ev.Kind)
			}
		case <-time.After(eventTimeout):
			t.Fatal("no event")
		}
	}
	require.Equal(t, protocol.Position{Account: "Sim101", Instrument: "ES 12-26", InstrumentType: "Future",
		MarketPosition: protocol.MarketPositionShort, Quantity: 1, AveragePrice: 5950.25}, *position)

	// A change NinjaTrader makes on its own (the poller sees it).
	h.nt.mu.Lock()
	h.nt.movePosition("Sim101", "ES 12-26", 1, 5949)
	h.nt.mu.Unlock()
	select {
	case ev := <-events:
		require.Equal(t, lastSeq+1, ev.Seq)
		require.Equal(t, bridge.EventPosition, ev.Kind)
		require.Equal(t, protocol.MarketPositionFlat, ev.Position.MarketPosition)
		require.Zero(t, ev.Position.Quantity)
	case <-time.After(eventTimeout):
		t.Fatal("no position event")
	}

	cancel()
	select {
	case _, ok := <-events:
		require.False(t, ok, "the stream ends with its context")
	case <-time.After(eventTimeout):
		t.Fatal("stream not closed")
	}
}

func TestEventsLost(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, func(o *Options) { o.EventBuffer = 2 })
	ctx := t.Context()
	events := h.f.Events(ctx)
	require.NoError(t, h.f.Start())
	h.nt.mu.Lock()
	for _, inst := range []string{"ES 12-26", "MES 12-26", "M6E 12-26"} {
		h.nt.movePosition("Sim101", inst, 1, 100)
	}
	h.nt.mu.Unlock()
	require.Eventually(t, func() bool {
		pos, err := h.f.Positions(ctx, "Sim101")
		return err == nil && len(pos) == 3
	}, settleTimeout, testPoll)
	first, second := <-events, <-events
	require.False(t, first.Lost)
	require.Equal(t, first.Seq+1, second.Seq)

	h.nt.mu.Lock()
	h.nt.movePosition("Sim101", "ES 12-26", 1, 100)
	h.nt.mu.Unlock()
	select {
	case ev := <-events:
		require.True(t, ev.Lost)
		require.Greater(t, ev.Seq, second.Seq+1)
	case <-time.After(eventTimeout):
		t.Fatal("no Lost marker")
	}
	select {
	case ev := <-events:
		require.False(t, ev.Lost)
		require.Equal(t, bridge.EventPosition, ev.Kind)
		require.Equal(t, 2, ev.Position.Quantity)
	case <-time.After(eventTimeout):
		t.Fatal("no event after the Lost marker")
	}
}

func TestClose(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, nil)
	require.NoError(t, h.f.Start())
	events := h.f.Events(t.Context())
	require.NoError(t, h.f.Close())
	require.NoError(t, h.f.Close(), "Close is idempotent")
	select {
	case _, ok := <-events:
		require.False(t, ok)
	case <-time.After(eventTimeout):
		t.Fatal("stream not closed")
	}
	_, ok := <-h.f.Events(t.Context())
	require.False(t, ok, "a closed Files gives closed streams")
	require.ErrorIs(t, h.f.Start(), ErrClosed)
	_, err := h.f.SubmitOrder(t.Context(), market("Sim101", "ES 12-26", "Buy", 1))
	require.ErrorIs(t, err, ErrClosed)
	require.True(t, errors.Is(err, bridge.ErrNotConnected))
	require.Zero(t, h.nt.fileCount())
}

func TestErrNeedsAddonNamesTheInstallStep(t *testing.T) {
	t.Parallel()
	require.Contains(t, ErrNeedsAddon.Error(), "Tools > Import > NinjaScript Add-On")
}

// TestRewriteInProgress reads files NinjaTrader is rewriting in place
// (found empty): what they said before stands until the new content is
// there, and no event reports the blip.
func TestRewriteInProgress(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, nil)
	ctx := t.Context()
	events := h.f.Events(ctx)
	_, err := h.f.SubmitOrder(ctx, market("Sim101", "ES 12-26", "Buy", 2))
	require.NoError(t, err)
	want := []protocol.Position{{Account: "Sim101", Instrument: "ES 12-26", InstrumentType: "Future",
		MarketPosition: protocol.MarketPositionLong, Quantity: 2, AveragePrice: 5950.25}}
	pos, err := h.f.Positions(ctx, "Sim101")
	require.NoError(t, err)
	require.Equal(t, want, pos)
	conns, err := h.f.Connections(ctx)
	require.NoError(t, err)
	require.Len(t, conns, 1)
	for len(events) > 0 {
		<-events
	}

	out := filepath.Join(h.dir, outgoingDir)
	require.NoError(t, os.WriteFile(filepath.Join(out, "ES 12-26 Globex_Sim101_position.txt"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(out, "Simulated Data Feed.txt"), nil, 0o644))
	pos, err = h.f.Positions(ctx, "Sim101")
	require.NoError(t, err)
	require.Equal(t, want, pos)
	conns, err = h.f.Connections(ctx)
	require.NoError(t, err)
	require.Equal(t, []protocol.Connection{{Name: "Simulated Data Feed", Status: "Connected", Accounts: []string{}}}, conns)
	require.Empty(t, events)

	require.NoError(t, os.WriteFile(filepath.Join(out, "ES 12-26 Globex_Sim101_position.txt"), []byte("LONG;3;5950"), 0o644))
	pos, err = h.f.Positions(ctx, "Sim101")
	require.NoError(t, err)
	require.Equal(t, 3, pos[0].Quantity)
	select {
	case ev := <-events:
		require.Equal(t, bridge.EventPosition, ev.Kind)
		require.Equal(t, 3, ev.Position.Quantity)
	case <-time.After(eventTimeout):
		t.Fatal("no position event")
	}
}
