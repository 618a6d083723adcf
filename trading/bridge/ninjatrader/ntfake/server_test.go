package ntfake_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/ninjatrader/ntfake"
	"tradebridge/trading/bridge/ninjatrader/ntwire"
	"tradebridge/trading/bridge/sim"
)

const (
	es  = "ES 12-26"
	acc = "Sim101"
	// feed is the simulator's connection.
	feed = "Simulated Data Feed"
)

func TestStartValidates(t *testing.T) {
	t.Parallel()
	market, err := sim.New(sim.Options{})
	require.NoError(t, err)
	defer market.Close()
	for name, o := range map[string]ntfake.Options{
		"no market":        {Dir: t.TempDir()},
		"no dir":           {Market: market},
		"negative version": {Market: market, Dir: t.TempDir(), Version: -1},
		"negative timing":  {Market: market, Dir: t.TempDir(), PingAfter: -time.Second},
	} {
		_, err := ntfake.Start(o)
		require.Error(t, err, name)
	}
}

// The discovery file says where the fake listens and its secret, is the
// user's alone, and is gone after Close.
func TestDiscoveryFile(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	path := f.s.DiscoveryPath()
	require.Equal(t, filepath.Join(f.dir, ntwire.DiscoveryFileName), path)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var d ntwire.Discovery
	strict(t, b, &d)
	require.Equal(t, ntwire.Version, d.Version)
	require.Equal(t, f.s.Secret(), d.Secret)
	require.Len(t, d.Secret, 43)
	require.Equal(t, "127.0.0.1:"+strconv.Itoa(d.Port), f.s.Addr())
	require.Equal(t, os.Getpid(), d.PID)
	require.Equal(t, ntfake.DefaultAddonVersion, d.AddonVersion)
	_, err = time.Parse(time.RFC3339, d.StartedAt)
	require.NoError(t, err)
	if runtime.GOOS != "windows" { // POSIX file modes
		fi, err := os.Stat(path)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	}
	entries, err := os.ReadDir(f.dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left")

	require.NoError(t, f.s.Close())
	require.NoError(t, f.s.Close())
	require.NoFileExists(t, path)
	require.ErrorIs(t, f.s.Restart(), ntfake.ErrClosed)
	require.ErrorIs(t, f.s.Resume(), ntfake.ErrClosed)
	require.ErrorIs(t, f.s.SetConnectionStatus(feed, "Disconnected"), ntfake.ErrClosed)
	f.s.Flush()
	f.s.Drop()
	f.s.Stop()
}

func TestHandshake(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// send writes the agent's first line; nil sends nothing.
		send func(a *agent, s *ntfake.Server)
		// want is the refusal code, or "" for a welcome, or "-" for a
		// connection closed without a word.
		want    string
		version int // of the welcome
	}{
		{name: "welcome", version: 1, send: func(a *agent, s *ntfake.Server) {
			a.send(ntwire.Message{Type: ntwire.TypeHello, ProtocolVersion: 1, Secret: s.Secret(), Client: "x"})
		}},
		{name: "newer agent gets the fake's version", version: 1, send: func(a *agent, s *ntfake.Server) {
			a.send(ntwire.Message{Type: ntwire.TypeHello, ProtocolVersion: 7, Secret: s.Secret()})
		}},
		{name: "bad secret", want: ntwire.RefusedBadSecret, send: func(a *agent, s *ntfake.Server) {
			a.send(ntwire.Message{Type: ntwire.TypeHello, ProtocolVersion: 1, Secret: "wrong-secret-value"})
		}},
		{name: "empty secret", want: ntwire.RefusedBadSecret, send: func(a *agent, s *ntfake.Server) {
			a.send(ntwire.Message{Type: ntwire.TypeHello, ProtocolVersion: 1})
		}},
		{name: "no version", want: ntwire.RefusedVersionUnsupported, send: func(a *agent, s *ntfake.Server) {
			a.send(ntwire.Message{Type: ntwire.TypeHello, Secret: s.Secret()})
		}},
		{name: "not a hello", want: ntwire.RefusedBadHello, send: func(a *agent, s *ntfake.Server) {
			a.send(ntwire.Message{Type: ntwire.TypeRequest, ID: 1, Method: ntwire.MethodSnapshot})
		}},
		{name: "not JSON", want: ntwire.RefusedBadHello, send: func(a *agent, s *ntfake.Server) {
			a.sendRaw("hello there")
		}},
		{name: "silent", want: "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, func(o *ntfake.Options) { o.HelloTimeout = 100 * time.Millisecond })
			a := dial(t, f.s.Addr())
			if tt.send != nil {
				tt.send(a, f.s)
			}
			switch tt.want {
			case "":
				m := a.read()
				require.Equal(t, ntwire.Message{Type: ntwire.TypeWelcome, ProtocolVersion: tt.version,
					SessionID: f.s.SessionID(), AddonVersion: ntfake.DefaultAddonVersion,
					PlatformVersion: ntfake.DefaultPlatformVersion}, m)
				require.Regexp(t, `^[A-Za-z0-9_-]{8,64}$`, m.SessionID)
				require.Equal(t, 1, f.s.Connections())
			case "-":
				require.Empty(t, a.closed())
			default:
				msgs := a.closed()
				require.Len(t, msgs, 1)
				require.Equal(t, ntwire.TypeRefused, msgs[0].Type)
				require.Equal(t, tt.want, msgs[0].Code)
				require.NotEmpty(t, msgs[0].Text)
				require.NotContains(t, msgs[0].Text, "wrong-secret-value")
				require.NotContains(t, msgs[0].Text, "hello there")
				require.Zero(t, f.s.Connections())
			}
		})
	}
}

// One agent at a time: a second one is refused busy until the first is
// gone.
func TestBusy(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	first, _ := connect(t, f.s)
	second := dial(t, f.s.Addr())
	second.send(ntwire.Message{Type: ntwire.TypeHello, ProtocolVersion: 1, Secret: f.s.Secret()})
	msgs := second.closed()
	require.Len(t, msgs, 1)
	require.Equal(t, ntwire.RefusedBusy, msgs[0].Code)

	require.NoError(t, first.c.Close())
	require.Eventually(t, func() bool { return welcomes(f.s) }, waitFor, tick)
	require.Equal(t, 2, f.s.Connections())
}

// The snapshot holds every account's state and the seq of the last event,
// also of events published while no agent was connected.
func TestSnapshot(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.market.SubmitOrder(ctx, bridge.OrderRequest{Account: acc, Instrument: es, Action: "Buy",
		OrderType: "Limit", Quantity: 1, LimitPrice: 5900, TimeInForce: "Gtc", OrderID: "lim-1"})
	require.NoError(t, err)
	_, err = f.market.SubmitOrder(ctx, bridge.OrderRequest{Account: "Sim102", Instrument: es, Action: "Sell",
		OrderType: "Market", Quantity: 2, OrderID: "mkt-1"})
	require.NoError(t, err)
	f.s.Flush()
	require.NotZero(t, f.s.LastSeq(), "events are numbered while no agent is connected")

	a, _ := connect(t, f.s)
	_, reply := a.call(ntwire.MethodSnapshot, nil)
	require.Nil(t, reply.Error)
	require.Contains(t, string(reply.Result), `"strategies":[]`)
	var snap ntwire.Snapshot
	strict(t, reply.Result, &snap)
	require.Equal(t, f.s.LastSeq(), snap.Seq)
	require.Equal(t, []protocol.Connection{{Name: feed, Status: "Connected", Accounts: []string{acc, "Sim102"}}}, snap.Connections)
	require.Len(t, snap.Accounts, 2)
	require.Len(t, snap.Orders, 2)
	require.Equal(t, "lim-1", snap.Orders[0].OrderID)
	require.Equal(t, protocol.OrderStateWorking, snap.Orders[0].OrderState)
	require.Equal(t, "mkt-1", snap.Orders[1].OrderID)
	require.Len(t, snap.Executions, 1)
	require.Len(t, snap.Positions, 1)
	require.Equal(t, protocol.MarketPositionShort, snap.Positions[0].MarketPosition)
	require.Equal(t, 2, snap.Positions[0].Quantity)
	require.Empty(t, snap.Strategies)
}

// While orders are placed concurrently, every event sent before a
// snapshot's reply is numbered at most its seq and reflected in it, and
// every event after it is numbered above.
func TestSnapshotConsistency(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, _ := connect(t, f.s)
	const orders = 200
	errc := make(chan error, 1)
	go func() {
		var err error
		for i := 0; i < orders && err == nil; i++ {
			_, err = f.market.SubmitOrder(context.Background(), bridge.OrderRequest{Account: acc, Instrument: es,
				Action: "Buy", OrderType: "Limit", Quantity: 1, LimitPrice: 5000, TimeInForce: "Gtc",
				OrderID: "c-" + strconv.Itoa(i)})
		}
		errc <- err
	}()
	seen := map[string]bool{} // orders of events received so far
	var last uint64
	for done := false; !done; {
		select {
		case err := <-errc:
			require.NoError(t, err)
			done = true
		default:
		}
		events, reply := a.call(ntwire.MethodSnapshot, nil)
		require.Nil(t, reply.Error)
		var snap ntwire.Snapshot
		strict(t, reply.Result, &snap)
		for _, e := range events {
			require.Equal(t, last+1, e.Seq, "events after a snapshot are numbered above its seq, one by one")
			require.LessOrEqual(t, e.Seq, snap.Seq, "an event before the reply is in the snapshot")
			last = e.Seq
			if e.Kind == ntwire.KindOrder {
				var o protocol.Order
				strict(t, e.Data, &o)
				seen[o.OrderID] = true
			}
		}
		last = max(last, snap.Seq)
		in := map[string]bool{}
		for _, o := range snap.Orders {
			in[o.OrderID] = true
		}
		for id := range seen {
			require.True(t, in[id], "order %s of an event numbered at most %d is missing from the snapshot", id, snap.Seq)
		}
	}
	require.Len(t, seen, orders)
	require.Equal(t, f.s.LastSeq(), last)
}

// The events a request causes come before its reply, numbered one by one.
func TestSubmitOrderEventsBeforeReply(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, _ := connect(t, f.s)
	a.ok(ntwire.MethodSnapshot, nil, nil)
	base := f.s.LastSeq()

	var res ntwire.OrderResult
	events := a.ok(ntwire.MethodSubmitOrder, ntwire.SubmitOrderParams{Account: acc, Instrument: es,
		Action: "Buy", OrderType: "Market", Quantity: 1, TimeInForce: "Day", OrderID: "t-1", Name: "Entry",
		StrategyTag: "tag-1"}, &res)
	require.Equal(t, "t-1", res.Order.OrderID)
	require.Equal(t, "Entry", res.Order.Name)
	require.Equal(t, "tag-1", res.Order.StrategyTag)
	require.Equal(t, es, res.Order.Instrument)
	require.Equal(t, protocol.OrderStateFilled, res.Order.OrderState)
	consecutive(t, base+1, events)
	require.Equal(t, f.s.LastSeq(), events[len(events)-1].Seq)
	require.Subset(t, kinds(events), []string{ntwire.KindOrder, ntwire.KindExecution, ntwire.KindPosition, ntwire.KindAccount})

	var lastOrder protocol.Order
	for _, e := range events {
		switch e.Kind {
		case ntwire.KindOrder:
			strict(t, e.Data, &lastOrder)
		case ntwire.KindExecution:
			var x protocol.Execution
			strict(t, e.Data, &x)
			require.Equal(t, "t-1", x.OrderID)
		case ntwire.KindPosition:
			var p protocol.Position
			strict(t, e.Data, &p)
			require.Equal(t, protocol.MarketPositionLong, p.MarketPosition)
		case ntwire.KindAccount:
			var ac protocol.Account
			strict(t, e.Data, &ac)
			require.Equal(t, acc, ac.Name)
		}
	}
	require.Equal(t, res.Order, lastOrder, "the reply's order is the last order event's")

	// A resting limit order: its events too.
	events = a.ok(ntwire.MethodSubmitOrder, ntwire.SubmitOrderParams{Account: acc, Instrument: "ES",
		Action: "Buy", OrderType: "Limit", Quantity: 1, LimitPrice: 5900, OrderID: "t-2"}, &res)
	require.Equal(t, protocol.OrderStateWorking, res.Order.OrderState)
	require.Equal(t, es, res.Order.Instrument, "records carry the contract")
	require.NotEmpty(t, events)
	require.Equal(t, ntwire.KindOrder, events[len(events)-1].Kind)
}

func TestOrderMethods(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, _ := connect(t, f.s)
	a.ok(ntwire.MethodSnapshot, nil, nil)

	var res ntwire.OrderResult
	a.ok(ntwire.MethodSubmitOrder, ntwire.SubmitOrderParams{Account: acc, Instrument: es, Action: "Buy",
		OrderType: "Limit", Quantity: 1, LimitPrice: 5900, TimeInForce: "Gtc", OrderID: "lim-1"}, &res)
	require.Equal(t, protocol.OrderStateWorking, res.Order.OrderState)

	t.Run("change", func(t *testing.T) {
		events := a.ok(ntwire.MethodChangeOrder, ntwire.ChangeOrderParams{Account: acc, OrderID: "lim-1",
			LimitPrice: 5905}, &res)
		require.Equal(t, 5905.0, res.Order.LimitPrice)
		require.Equal(t, 1, res.Order.Quantity, "zero keeps the quantity")
		require.NotEmpty(t, events)
		var o protocol.Order
		strict(t, events[len(events)-1].Data, &o)
		require.Equal(t, 5905.0, o.LimitPrice)
	})
	t.Run("cancel", func(t *testing.T) {
		events := a.ok(ntwire.MethodCancelOrder, ntwire.OrderRef{Account: acc, OrderID: "lim-1"}, &res)
		require.Equal(t, protocol.OrderStateCancelled, res.Order.OrderState)
		require.NotEmpty(t, events)
		var o protocol.Order
		strict(t, events[len(events)-1].Data, &o)
		require.Equal(t, protocol.OrderStateCancelled, o.OrderState)
	})
	t.Run("cancel a terminal order", func(t *testing.T) {
		e := a.fails(ntwire.MethodCancelOrder, ntwire.OrderRef{Account: acc, OrderID: "lim-1"})
		require.Equal(t, ntwire.CodeOrderRejected, e.Code)
		require.NotEmpty(t, e.Message)
	})
	t.Run("cancel an unknown order", func(t *testing.T) {
		e := a.fails(ntwire.MethodCancelOrder, ntwire.OrderRef{Account: acc, OrderID: "nope"})
		require.Equal(t, ntwire.CodeOrderNotFound, e.Code)
	})
	t.Run("flatten", func(t *testing.T) {
		a.ok(ntwire.MethodSubmitOrder, ntwire.SubmitOrderParams{Account: acc, Instrument: es, Action: "Buy",
			OrderType: "Market", Quantity: 2, OrderID: "mkt-1"}, nil)
		a.ok(ntwire.MethodSubmitOrder, ntwire.SubmitOrderParams{Account: acc, Instrument: es, Action: "Sell",
			OrderType: "Limit", Quantity: 2, LimitPrice: 6100, OrderID: "tgt-1"}, nil)
		var out map[string]any
		events := a.ok(ntwire.MethodFlatten, ntwire.FlattenParams{Account: acc, Instrument: es}, &out)
		require.Empty(t, out)
		var flat, cancelled bool
		for _, e := range events {
			switch e.Kind {
			case ntwire.KindPosition:
				var p protocol.Position
				strict(t, e.Data, &p)
				flat = p.MarketPosition == protocol.MarketPositionFlat && p.Quantity == 0
			case ntwire.KindOrder:
				var o protocol.Order
				strict(t, e.Data, &o)
				cancelled = cancelled || o.OrderID == "tgt-1" && o.OrderState == protocol.OrderStateCancelled
			}
		}
		require.True(t, flat, "a Flat position event comes before the reply")
		require.True(t, cancelled, "the working order's cancellation comes before the reply")
		var snap ntwire.Snapshot
		a.ok(ntwire.MethodSnapshot, nil, &snap)
		require.Empty(t, snap.Positions)
		a.ok(ntwire.MethodFlatten, ntwire.FlattenParams{Account: acc, Instrument: es}, nil)
	})
}

func TestErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, _ := connect(t, f.s)
	a.ok(ntwire.MethodSnapshot, nil, nil)
	a.ok(ntwire.MethodSubmitOrder, ntwire.SubmitOrderParams{Account: acc, Instrument: es, Action: "Buy",
		OrderType: "Limit", Quantity: 1, LimitPrice: 5900, OrderID: "dup-1"}, nil)
	var st ntwire.StrategyResult
	a.ok(ntwire.MethodStartStrategy, ntwire.StartStrategyParams{Account: acc, Class: "SampleMACrossOver",
		Instrument: es}, &st)
	a.ok(ntwire.MethodSetStrategyState, ntwire.StrategyStateParams{Account: acc, ID: st.Strategy.ID,
		Action: "close"}, nil)

	order := func(f func(p *ntwire.SubmitOrderParams)) ntwire.SubmitOrderParams {
		p := ntwire.SubmitOrderParams{Account: acc, Instrument: es, Action: "Buy", OrderType: "Market",
			Quantity: 1, OrderID: "new-1"}
		f(&p)
		return p
	}
	tests := []struct {
		name   string
		method string
		params any // json.RawMessage is sent as is
		want   ntwire.Error
	}{
		{"unknown method", "explode", nil, ntwire.Error{Code: ntwire.CodeUnknownMethod}},
		{"no params", ntwire.MethodSubmitOrder, nil, ntwire.Error{Code: ntwire.CodeBadRequest}},
		{"null params", ntwire.MethodQuote, json.RawMessage("null"), ntwire.Error{Code: ntwire.CodeBadRequest}},
		{"params of the wrong type", ntwire.MethodSubmitOrder, json.RawMessage(`{"quantity":"one"}`), ntwire.Error{Code: ntwire.CodeBadRequest}},
		{"params not an object", ntwire.MethodQuote, json.RawMessage(`[1]`), ntwire.Error{Code: ntwire.CodeBadRequest}},
		{"no orderId", ntwire.MethodSubmitOrder, order(func(p *ntwire.SubmitOrderParams) { p.OrderID = "" }), ntwire.Error{Code: ntwire.CodeBadRequest}},
		{"orderId with a space", ntwire.MethodSubmitOrder, order(func(p *ntwire.SubmitOrderParams) { p.OrderID = "bad id" }), ntwire.Error{Code: ntwire.CodeBadRequest}},
		{"orderId too long", ntwire.MethodSubmitOrder, order(func(p *ntwire.SubmitOrderParams) { p.OrderID = strings.Repeat("x", 65) }), ntwire.Error{Code: ntwire.CodeBadRequest}},
		{"| in the name", ntwire.MethodSubmitOrder, order(func(p *ntwire.SubmitOrderParams) { p.Name = "En|try" }), ntwire.Error{Code: ntwire.CodeBadRequest}},
		{"| in the tag", ntwire.MethodSubmitOrder, order(func(p *ntwire.SubmitOrderParams) { p.StrategyTag = "ta|g" }), ntwire.Error{Code: ntwire.CodeBadRequest}},
		{"known orderId", ntwire.MethodSubmitOrder, order(func(p *ntwire.SubmitOrderParams) { p.OrderID = "dup-1" }), ntwire.Error{Code: ntwire.CodeOrderRejected}},
		{"quantity 0", ntwire.MethodSubmitOrder, order(func(p *ntwire.SubmitOrderParams) { p.Quantity = 0 }), ntwire.Error{Code: ntwire.CodeOrderRejected}},
		{"unknown account", ntwire.MethodSubmitOrder, order(func(p *ntwire.SubmitOrderParams) { p.Account = "Nobody" }), ntwire.Error{Code: ntwire.CodeAccountNotFound}},
		{"unknown template", ntwire.MethodSubmitOrder, order(func(p *ntwire.SubmitOrderParams) { p.AtmTemplate = "nope" }), ntwire.Error{Code: ntwire.CodeTemplateNotFound}},
		{"month code", ntwire.MethodSubmitOrder, order(func(p *ntwire.SubmitOrderParams) { p.Instrument = "ESZ26" }),
			ntwire.Error{Code: ntwire.CodeInstrumentUnknown, Cause: bridge.InstrumentMalformed}},
		{"not a contract month", ntwire.MethodInstrument, ntwire.InstrumentParams{Instrument: "ES 11-26"},
			ntwire.Error{Code: ntwire.CodeInstrumentUnknown, Cause: bridge.InstrumentNotContractMonth, Root: "ES", Months: "HMUZ", Front: es}},
		{"expired", ntwire.MethodQuote, ntwire.InstrumentParams{Instrument: "ES 03-20"},
			ntwire.Error{Code: ntwire.CodeInstrumentUnknown, Cause: bridge.InstrumentExpired, Root: "ES", Months: "HMUZ", Front: es}},
		{"unknown root", ntwire.MethodSubscribe, ntwire.InstrumentsParams{Instruments: []string{es, "QQQQ"}},
			ntwire.Error{Code: ntwire.CodeInstrumentUnknown, Cause: bridge.InstrumentUnknownRoot}},
		{"month code in a subscription", ntwire.MethodSubscribe, ntwire.InstrumentsParams{Instruments: []string{"ESZ6"}},
			ntwire.Error{Code: ntwire.CodeInstrumentUnknown, Cause: bridge.InstrumentMalformed}},
		{"cancel on an unknown account", ntwire.MethodCancelOrder, ntwire.OrderRef{Account: "Nobody", OrderID: "dup-1"}, ntwire.Error{Code: ntwire.CodeAccountNotFound}},
		{"unknown strategy class", ntwire.MethodStartStrategy, ntwire.StartStrategyParams{Account: acc, Class: "Nope", Instrument: es}, ntwire.Error{Code: ntwire.CodeStrategyClassUnknown}},
		{"bad strategy parameter", ntwire.MethodStartStrategy, ntwire.StartStrategyParams{Account: acc, Class: "SampleMACrossOver", Instrument: es, Parameters: map[string]any{"Fast": "ten"}}, ntwire.Error{Code: ntwire.CodeBadRequest}},
		{"unknown strategy", ntwire.MethodSetStrategyState, ntwire.StrategyStateParams{Account: acc, ID: "nope", Action: "enable"}, ntwire.Error{Code: ntwire.CodeStrategyNotFound}},
		{"terminal strategy", ntwire.MethodSetStrategyState, ntwire.StrategyStateParams{Account: acc, ID: st.Strategy.ID, Action: "enable"}, ntwire.Error{Code: ntwire.CodeStrategyTerminal}},
		{"bad period type", ntwire.MethodBars, ntwire.BarsParams{Instrument: es, PeriodType: "fortnight", Period: 1}, ntwire.Error{Code: ntwire.CodeBadRequest}},
		{"bad from", ntwire.MethodBars, ntwire.BarsParams{Instrument: es, PeriodType: "minute", Period: 1, From: "yesterday"}, ntwire.Error{Code: ntwire.CodeBadRequest}},
		{"bad bar series", ntwire.MethodSubscribeBars, ntwire.BarSeries{Instrument: es, PeriodType: "fortnight", Period: 1}, ntwire.Error{Code: ntwire.CodeBadRequest}},
		{"negative bar period", ntwire.MethodSubscribeBars, ntwire.BarSeries{Instrument: es, PeriodType: "minute", Period: -1}, ntwire.Error{Code: ntwire.CodeBadRequest}},
		{"bar series of an unknown root", ntwire.MethodUnsubscribeBars, ntwire.BarSeries{Instrument: "QQQQ", PeriodType: "minute", Period: 1}, ntwire.Error{Code: ntwire.CodeInstrumentUnknown, Cause: bridge.InstrumentUnknownRoot}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e *ntwire.Error
			if raw, ok := tt.params.(json.RawMessage); ok {
				_, reply := a.callRaw(tt.method, raw)
				require.NotNil(t, reply.Error)
				e = reply.Error
			} else {
				e = a.fails(tt.method, tt.params)
			}
			require.NotEmpty(t, e.Message)
			for _, echo := range []string{"explode", "bad id", "En|try", "ta|g", "Nobody", "nope", "ESZ", "QQQQ", "fortnight", "yesterday", "ten"} {
				require.NotContains(t, e.Message, echo, "the message never repeats the request")
			}
			e.Message = ""
			require.Equal(t, tt.want, *e)
		})
	}
	require.Equal(t, 0, countEvents(t, a, f), "refused requests publish nothing")
}

// countEvents returns how many events are pending for the agent.
func countEvents(t *testing.T, a *agent, f *fixture) int {
	t.Helper()
	before := f.s.LastSeq()
	events, _ := a.call(ntwire.MethodAtmTemplates, nil)
	require.Equal(t, before, f.s.LastSeq())
	return len(events)
}

func TestMethods(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, _ := connect(t, f.s)
	a.ok(ntwire.MethodSnapshot, nil, nil)

	t.Run("instrument", func(t *testing.T) {
		var info protocol.InstrumentInfo
		a.ok(ntwire.MethodInstrument, ntwire.InstrumentParams{Instrument: "ES"}, &info)
		require.Equal(t, es, info.Instrument)
		require.Equal(t, 0.25, info.TickSize)
	})
	t.Run("quote", func(t *testing.T) {
		var q protocol.Quote
		a.ok(ntwire.MethodQuote, ntwire.InstrumentParams{Instrument: es}, &q)
		require.Equal(t, es, q.Instrument)
		require.Positive(t, q.Bid)
	})
	t.Run("subscribe", func(t *testing.T) {
		var out map[string]any
		events := a.ok(ntwire.MethodSubscribe, ntwire.InstrumentsParams{Instruments: []string{es}}, &out)
		require.Empty(t, out)
		require.Equal(t, []string{ntwire.KindQuote}, kinds(events), "a first subscription publishes the quote")
		require.NoError(t, f.market.SetPrice(es, 6010))
		f.s.Flush()
		events = a.eventsUntil(f.s.LastSeq())
		require.Equal(t, ntwire.KindQuote, events[len(events)-1].Kind)
		var q protocol.Quote
		strict(t, events[len(events)-1].Data, &q)
		require.Equal(t, 6010.0, q.Last)
		a.ok(ntwire.MethodUnsubscribe, ntwire.InstrumentsParams{Instruments: []string{es}}, &out)
		require.NoError(t, f.market.SetPrice(es, 6020))
		f.s.Flush()
		require.Zero(t, countEvents(t, a, f), "no quote after unsubscribe")
	})
	t.Run("bars", func(t *testing.T) {
		var bars protocol.Bars
		a.ok(ntwire.MethodBars, ntwire.BarsParams{Instrument: es, PeriodType: "minute", Period: 1, Limit: 10}, &bars)
		require.Equal(t, es, bars.Instrument)
		require.Len(t, bars.Bars, 10)
		require.Equal(t, 10, bars.Count)
		a.ok(ntwire.MethodBars, ntwire.BarsParams{Instrument: es, PeriodType: "day", Period: 1,
			From: start.Add(-72 * time.Hour).Format(time.RFC3339), To: start.Format(time.RFC3339)}, &bars)
		require.NotEmpty(t, bars.Bars)
	})
	t.Run("bar subscriptions", func(t *testing.T) {
		var out map[string]any
		a.ok(ntwire.MethodSubscribeBars, ntwire.BarSeries{Instrument: es, PeriodType: "Minute", Period: 1}, &out)
		require.Empty(t, out)
		a.ok(ntwire.MethodUnsubscribeBars, ntwire.BarSeries{Instrument: es, PeriodType: "minute", Period: 1}, &out)
	})
	t.Run("atm templates", func(t *testing.T) {
		var res ntwire.AtmTemplatesResult
		a.ok(ntwire.MethodAtmTemplates, nil, &res)
		require.NotEmpty(t, res.Templates)
	})
	t.Run("strategies", func(t *testing.T) {
		var res ntwire.StrategyResult
		events := a.ok(ntwire.MethodStartStrategy, ntwire.StartStrategyParams{Account: acc,
			Class: "SampleMACrossOver", Instrument: es, Mode: protocol.StrategyModeRealtime,
			Parameters: map[string]any{"Fast": 5, "Slow": 12}}, &res)
		require.Equal(t, protocol.StrategyStateEnabled, res.Strategy.State)
		require.Contains(t, kinds(events), ntwire.KindStrategy)
		id := res.Strategy.ID
		// In order: an action that leaves the state as it is changes
		// nothing and publishes no event.
		for _, step := range []struct {
			action, state string
			changes       bool
		}{
			{"disable", protocol.StrategyStateDisabled, true},
			{"enable", protocol.StrategyStateEnabled, true},
			{"enable", protocol.StrategyStateEnabled, false},
		} {
			events = a.ok(ntwire.MethodSetStrategyState, ntwire.StrategyStateParams{Account: acc, ID: id, Action: step.action}, &res)
			require.Equal(t, step.state, res.Strategy.State, step.action)
			if step.changes {
				require.Contains(t, kinds(events), ntwire.KindStrategy, step.action)
			} else {
				require.NotContains(t, kinds(events), ntwire.KindStrategy, step.action)
			}
		}
		a.ok(ntwire.MethodSetStrategyState, ntwire.StrategyStateParams{Account: acc, ID: id, Action: "close"}, &res)
		require.Equal(t, protocol.StrategyStateClosed, res.Strategy.State)
		var snap ntwire.Snapshot
		a.ok(ntwire.MethodSnapshot, nil, &snap)
		require.Len(t, snap.Strategies, 1)
	})
}

// Events of the market reach the agent as they happen, numbered one by
// one; Flush makes sure they were sent.
func TestEvents(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, _ := connect(t, f.s)
	a.ok(ntwire.MethodSnapshot, nil, nil)
	base := f.s.LastSeq()
	_, err := f.market.SubmitOrder(context.Background(), bridge.OrderRequest{Account: acc, Instrument: es,
		Action: "Buy", OrderType: "Limit", Quantity: 1, LimitPrice: 5990, OrderID: "rest-1"})
	require.NoError(t, err)
	require.NoError(t, f.market.SetPrice(es, 5985)) // fills the order
	f.s.Flush()
	events := a.eventsUntil(f.s.LastSeq())
	consecutive(t, base+1, events)
	require.Subset(t, kinds(events), []string{ntwire.KindOrder, ntwire.KindExecution, ntwire.KindPosition, ntwire.KindAccount})
}

// Events the simulator drops for the fake leave a gap in the numbering.
func TestLostEventsLeaveAGap(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, _ := connect(t, f.s)
	a.ok(ntwire.MethodSnapshot, nil, nil)
	a.ok(ntwire.MethodSubscribe, ntwire.InstrumentsParams{Instruments: []string{es}}, nil)
	base := f.s.LastSeq()

	f.s.HoldEvents(true)
	const moves = 5000 // more than the simulator buffers for a reader
	for i := range moves {
		require.NoError(t, f.market.SetPrice(es, 6000+float64(i%2)))
	}
	f.s.HoldEvents(false)
	f.s.Flush()
	require.NoError(t, f.market.SetPrice(es, 6050)) // publishes the loss, then its quote
	f.s.Flush()
	events := a.eventsUntil(f.s.LastSeq())
	require.Less(t, len(events), moves)
	var gaps int
	next := base + 1
	for _, e := range events {
		if e.Seq != next {
			require.Equal(t, next+1, e.Seq, "one number is skipped")
			gaps++
		}
		next = e.Seq + 1
	}
	require.Equal(t, 1, gaps)
	var q protocol.Quote
	strict(t, events[len(events)-1].Data, &q)
	require.Equal(t, 6050.0, q.Last)
}

// Restart: bye platform_closing, a new session id, secret and discovery
// file, and seq from 1 again.
func TestRestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, welcome := connect(t, f.s)
	a.ok(ntwire.MethodSnapshot, nil, nil)
	a.ok(ntwire.MethodSubmitOrder, ntwire.SubmitOrderParams{Account: acc, Instrument: es, Action: "Buy",
		OrderType: "Limit", Quantity: 1, LimitPrice: 5900, OrderID: "gtc-1", TimeInForce: "Gtc"}, nil)
	require.NotZero(t, f.s.LastSeq())
	oldSecret, oldSession := f.s.Secret(), welcome.SessionID

	require.NoError(t, f.s.Restart())
	msgs := a.closed()
	require.Equal(t, []ntwire.Message{{Type: ntwire.TypeBye, Reason: ntwire.ByePlatformClosing}}, msgs)
	require.NotEqual(t, oldSecret, f.s.Secret())
	require.NotEqual(t, oldSession, f.s.SessionID())
	require.Zero(t, f.s.LastSeq())
	b, err := os.ReadFile(f.s.DiscoveryPath())
	require.NoError(t, err)
	var d ntwire.Discovery
	strict(t, b, &d)
	require.Equal(t, f.s.Secret(), d.Secret)
	require.Equal(t, "127.0.0.1:"+strconv.Itoa(d.Port), f.s.Addr())

	old := dial(t, f.s.Addr())
	old.send(ntwire.Message{Type: ntwire.TypeHello, ProtocolVersion: 1, Secret: oldSecret})
	require.Equal(t, ntwire.RefusedBadSecret, old.closed()[0].Code)

	a2, welcome2 := connect(t, f.s)
	require.Equal(t, f.s.SessionID(), welcome2.SessionID)
	var snap ntwire.Snapshot
	a2.ok(ntwire.MethodSnapshot, nil, &snap)
	require.Zero(t, snap.Seq)
	require.Len(t, snap.Orders, 1, "orders carry over a restart")
	events := a2.ok(ntwire.MethodCancelOrder, ntwire.OrderRef{Account: acc, OrderID: "gtc-1"}, nil)
	require.NotEmpty(t, events)
	consecutive(t, 1, events)
}

// Stop closes NinjaTrader; Resume starts it again as a new session.
func TestStopResume(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, welcome := connect(t, f.s)
	addr := f.s.Addr()
	f.s.Stop()
	f.s.Stop()
	require.Equal(t, []ntwire.Message{{Type: ntwire.TypeBye, Reason: ntwire.ByePlatformClosing}}, a.closed())
	require.NoFileExists(t, f.s.DiscoveryPath())
	_, err := net.Dial("tcp", addr)
	require.Error(t, err, "the fake no longer listens")

	// Events while NinjaTrader is closed belong to no session.
	_, err = f.market.SubmitOrder(context.Background(), bridge.OrderRequest{Account: acc, Instrument: es,
		Action: "Buy", OrderType: "Market", Quantity: 1, OrderID: "m-1"})
	require.NoError(t, err)
	f.s.Flush()

	require.NoError(t, f.s.Resume())
	require.NoError(t, f.s.Resume())
	require.FileExists(t, f.s.DiscoveryPath())
	require.Zero(t, f.s.LastSeq())
	_, welcome2 := connect(t, f.s)
	require.NotEqual(t, welcome.SessionID, welcome2.SessionID)
}

// Drop cuts the connection without a bye; the session goes on.
func TestDrop(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, welcome := connect(t, f.s)
	a.ok(ntwire.MethodSnapshot, nil, nil)
	f.s.Drop()
	require.Empty(t, a.closed(), "no bye")

	_, err := f.market.SubmitOrder(context.Background(), bridge.OrderRequest{Account: acc, Instrument: es,
		Action: "Buy", OrderType: "Market", Quantity: 1, OrderID: "m-1"})
	require.NoError(t, err)
	f.s.Flush()
	seq := f.s.LastSeq()
	require.NotZero(t, seq)

	a2, welcome2 := connect(t, f.s)
	require.Equal(t, welcome.SessionID, welcome2.SessionID)
	require.Equal(t, 2, f.s.Connections())
	var snap ntwire.Snapshot
	a2.ok(ntwire.MethodSnapshot, nil, &snap)
	require.Equal(t, seq, snap.Seq)
	require.Len(t, snap.Orders, 1)
}

func TestPings(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(o *ntfake.Options) {
		o.PingAfter = 50 * time.Millisecond
		o.DeadAfter = 400 * time.Millisecond
	})
	a, _ := connect(t, f.s)

	a.send(ntwire.Message{Type: ntwire.TypePing, ID: 77})
	for {
		m := a.read()
		if m.Type == ntwire.TypePong {
			require.Equal(t, uint64(77), m.ID)
			break
		}
		require.Equal(t, ntwire.TypePing, m.Type)
	}

	// The fake pings a quiet agent; an agent that answers stays
	// connected well past DeadAfter.
	until := time.Now().Add(time.Second)
	pings := 0
	for time.Now().Before(until) {
		m := a.read()
		require.Equal(t, ntwire.TypePing, m.Type)
		require.NotZero(t, m.ID)
		pings++
		a.send(ntwire.Message{Type: ntwire.TypePong, ID: m.ID})
	}
	require.Greater(t, pings, 5)

	// An agent that sends nothing is dropped after DeadAfter.
	silent := time.Now()
	require.Empty(t, a.closed())
	require.GreaterOrEqual(t, time.Since(silent), 300*time.Millisecond)
	require.Eventually(t, func() bool { return welcomes(f.s) }, waitFor, tick, "a new agent is accepted")
}

// Unknown message types and malformed lines after the handshake are
// ignored.
func TestIgnoresUnknown(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, _ := connect(t, f.s)
	a.send(ntwire.Message{Type: "gossip"})
	a.sendRaw("not json")
	a.send(ntwire.Message{Type: ntwire.TypePong, ID: 3})
	a.ok(ntwire.MethodSnapshot, nil, nil)
}

// Close sends bye addon_stopping and removes the discovery file.
func TestClose(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, _ := connect(t, f.s)
	pending := dial(t, f.s.Addr()) // in its handshake
	require.NoError(t, f.s.Close())
	require.Equal(t, []ntwire.Message{{Type: ntwire.TypeBye, Reason: ntwire.ByeAddonStopping}}, a.closed())
	require.Empty(t, pending.closed())
	require.NoFileExists(t, f.s.DiscoveryPath())
}

func TestConnectionStatus(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, _ := connect(t, f.s)
	a.ok(ntwire.MethodSnapshot, nil, nil)
	require.ErrorIs(t, f.s.SetConnectionStatus("Nope", "Disconnected"), ntfake.ErrUnknownConnection)

	base := f.s.LastSeq()
	require.NoError(t, f.s.SetConnectionStatus(feed, "ConnectionLost"))
	events := a.eventsUntil(f.s.LastSeq())
	consecutive(t, base+1, events)
	require.Equal(t, []string{ntwire.KindConnection, ntwire.KindAccount, ntwire.KindAccount}, kinds(events))
	var c protocol.Connection
	strict(t, events[0].Data, &c)
	require.Equal(t, protocol.Connection{Name: feed, Status: "ConnectionLost", Accounts: []string{acc, "Sim102"}}, c)
	var ac protocol.Account
	strict(t, events[1].Data, &ac)
	require.Equal(t, "ConnectionLost", ac.ConnectionStatus)

	e := a.fails(ntwire.MethodSubmitOrder, ntwire.SubmitOrderParams{Account: acc, Instrument: es,
		Action: "Buy", OrderType: "Market", Quantity: 1, OrderID: "m-1"})
	require.Equal(t, ntwire.CodeNotConnected, e.Code)
	e = a.fails(ntwire.MethodFlatten, ntwire.FlattenParams{Account: "Sim102", Instrument: es})
	require.Equal(t, ntwire.CodeNotConnected, e.Code)
	var snap ntwire.Snapshot
	a.ok(ntwire.MethodSnapshot, nil, &snap)
	require.Equal(t, "ConnectionLost", snap.Connections[0].Status)
	require.Equal(t, "ConnectionLost", snap.Accounts[1].ConnectionStatus)

	// An account event of the simulator carries the status too.
	_, err := f.market.SubmitOrder(context.Background(), bridge.OrderRequest{Account: acc, Instrument: es,
		Action: "Buy", OrderType: "Market", Quantity: 1, OrderID: "direct-1"})
	require.NoError(t, err)
	f.s.Flush()
	for _, e := range a.eventsUntil(f.s.LastSeq()) {
		if e.Kind == ntwire.KindAccount {
			strict(t, e.Data, &ac)
			require.Equal(t, "ConnectionLost", ac.ConnectionStatus)
		}
	}

	require.NoError(t, f.s.SetConnectionStatus(feed, "Connected"))
	a.ok(ntwire.MethodSubmitOrder, ntwire.SubmitOrderParams{Account: acc, Instrument: es,
		Action: "Buy", OrderType: "Market", Quantity: 1, OrderID: "m-1"}, nil)
	a.ok(ntwire.MethodSnapshot, nil, &snap)
	require.Equal(t, "Connected", snap.Connections[0].Status)
	require.Equal(t, "Connected", snap.Accounts[0].ConnectionStatus)
}

// A request that arrives after the simulator closed answers not_connected.
func TestMarketClosed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, _ := connect(t, f.s)
	require.NoError(t, f.market.Close())
	e := a.fails(ntwire.MethodQuote, ntwire.InstrumentParams{Instrument: es})
	require.Equal(t, ntwire.CodeNotConnected, e.Code)
	e = a.fails(ntwire.MethodSnapshot, nil)
	require.Equal(t, ntwire.CodeNotConnected, e.Code)
}
