package agent_test

import (
	"cmp"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/yamux"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"tradebridge/agent"
	"tradebridge/agent/diag"
	"tradebridge/agent/tunnel"
	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/ops"
	"tradebridge/transport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// tunnelEnd is the relay's end of one agent tunnel, as a minimal fake
// relay accepts it: the subprotocol the agent offered, its Hello, a
// session to open request streams on, and the events the agent sent
// after the Welcome.
type tunnelEnd struct {
	subprotocol string
	hello       protocol.Hello
	sess        *yamux.Session
	events      <-chan protocol.Event
}

// fakeRelay accepts agent tunnels on /v1/agent/connect and hands each to
// the test; the tunnel lasts until the test's context ends.
func fakeRelay(t *testing.T, ctx context.Context) (string, <-chan tunnelEnd) {
	t.Helper()
	return fakeRelayWelcoming(t, ctx, 0)
}

// fakeRelayWelcoming is fakeRelay whose Welcome names version (an older
// relay's), or the agent's own when 0.
func fakeRelayWelcoming(t *testing.T, ctx context.Context, version int) (string, <-chan tunnelEnd) {
	t.Helper()
	ends := make(chan tunnelEnd, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != protocol.ConnectPath {
			http.NotFound(w, r)
			return
		}
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{
			Subprotocols:    []string{protocol.Subprotocol(protocol.ProtocolVersion)},
			CompressionMode: websocket.CompressionDisabled,
		})
		if err != nil {
			return
		}
		conn := transport.NewConn(ctx, ws)
		defer conn.CloseWith(int(websocket.StatusNormalClosure), "")
		sess, err := yamux.Server(conn, transport.YamuxConfig(zap.NewNop()))
		if err != nil {
			return
		}
		defer sess.Close()
		control, err := sess.AcceptStream()
		if err != nil {
			return
		}
		fr := protocol.NewReader(control, 0)
		typ, payload, err := fr.ReadFrame()
		if err != nil || typ != protocol.TypeHello {
			return
		}
		events := make(chan protocol.Event, 64)
		end := tunnelEnd{subprotocol: ws.Subprotocol(), sess: sess, events: events}
		if protocol.Decode(payload, &end.hello) != nil {
			return
		}
		welcome := cmp.Or(version, end.hello.ProtocolVersion)
		if protocol.NewWriter(control).WriteFrame(protocol.TypeWelcome, protocol.Welcome{
			ProtocolVersion: welcome, SessionID: "s-test", ServerTime: time.Now().UnixMilli()}) != nil {
			return
		}
		ends <- end
		for {
			typ, payload, err := fr.ReadFrame()
			if err != nil {
				break
			}
			var ev protocol.Event
			if typ != protocol.TypeEvent || protocol.Decode(payload, &ev) != nil {
				break
			}
			select {
			case events <- ev:
			default: // the test does not read them
			}
		}
		<-ctx.Done()
	}))
	t.Cleanup(srv.Close)
	return srv.URL, ends
}

// run runs a until stop, which ends ctx (cancel), closes a and waits for
// its Run; stop may be called again.
func run(ctx context.Context, cancel context.CancelFunc, a *agent.Agent) (stop func()) {
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			a.Close()
			<-done
		})
	}
}

// accept waits for the agent's tunnel at fakeRelay.
func accept(t *testing.T, ends <-chan tunnelEnd) tunnelEnd {
	t.Helper()
	select {
	case end := <-ends:
		return end
	case <-time.After(testkit.Long):
		t.Fatal("the agent did not connect")
	}
	return tunnelEnd{}
}

// rpc sends one request on a stream of the tunnel and reads its response.
func rpc(t *testing.T, s net.Conn, id uint64, fn string, args any) *protocol.Response {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	require.NoError(t, protocol.NewWriter(s).WriteFrame(protocol.TypeRequest, protocol.Request{ID: id, Fn: fn, Args: raw}))
	require.NoError(t, s.SetReadDeadline(time.Now().Add(testkit.Long)))
	typ, payload, err := protocol.NewReader(s, 0).ReadFrame()
	require.NoError(t, err)
	require.Equal(t, protocol.TypeResponse, typ)
	var resp protocol.Response
	require.NoError(t, protocol.Decode(payload, &resp))
	require.Equal(t, id, resp.ID)
	return &resp
}

// The agent announces protocol version 2 and serves the management
// functions over the real tunnel.
func TestManagementOverTheTunnel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, ends := fakeRelay(t, ctx)

	clock := sim.NewManualClock(time.Date(2026, time.October, 5, 14, 30, 0, 0, time.UTC))
	p, err := sim.New(sim.Options{Clock: clock})
	require.NoError(t, err)
	defer p.Close()
	require.NoError(t, p.SetPrice("ES 12-26", 6000))
	a, err := agent.New(agent.Options{
		RelayURL: url, Token: "tb_agent_test", Platform: p, Logger: zap.NewNop(),
		Tunnel: tunnel.Options{BackoffBase: 20 * time.Millisecond, BackoffCap: 100 * time.Millisecond},
		Ops:    ops.Options{Now: clock.Now, Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }},
	})
	require.NoError(t, err)
	defer run(ctx, cancel, a)()

	end := accept(t, ends)
	require.Equal(t, protocol.ProtocolVersion, end.hello.ProtocolVersion, "the hello announces the version this build speaks")
	require.Equal(t, protocol.Subprotocol(protocol.ProtocolVersion), end.subprotocol, "so does the WebSocket subprotocol")
	require.Equal(t, "sim", end.hello.Platform)

	s, err := end.sess.OpenStream()
	require.NoError(t, err)
	defer s.Close()

	// The whole configuration, applied by its version.
	push := protocol.Config{Version: 7,
		Monitors: []protocol.Monitor{{Meta: protocol.Meta{ID: "m1"}, Account: "Sim101", Active: true, State: protocol.MonitorActive,
			LossLimit: protocol.Limit{Enabled: true, Amount: 500}}},
		Controls: protocol.Controls{BlockAllSignals: true}}
	resp := rpc(t, s, 1, protocol.FnApplyConfig, push)
	require.Nil(t, resp.Error)
	require.JSONEq(t, `{"version":7}`, string(resp.Result))
	resp = rpc(t, s, 2, protocol.FnApplyConfig, protocol.Config{Version: 6})
	require.Nil(t, resp.Error)
	require.JSONEq(t, `{"version":7}`, string(resp.Result), "a late push changes nothing")
	cur := a.Config().Current()
	require.Equal(t, int64(7), cur.Version)
	require.True(t, cur.Controls.BlockAllSignals)
	require.Len(t, cur.Monitors, 1)

	// A session loss of 2 ES contracts by 10 points.
	order := bridge.OrderRequest{Account: "Sim101", Instrument: "ES 12-26", Action: protocol.ActionBuy,
		OrderType: protocol.OrderTypeMarket, Quantity: 2, TimeInForce: protocol.TimeInForceDay}
	_, err = p.SubmitOrder(ctx, order)
	require.NoError(t, err)
	require.NoError(t, p.SetPrice("ES 12-26", 5990))
	order.Action = protocol.ActionSell
	_, err = p.SubmitOrder(ctx, order)
	require.NoError(t, err)
	acct, err := p.Account(ctx, "Sim101")
	require.NoError(t, err)
	loss := -acct.Item.GrossRealizedProfitLoss
	require.Positive(t, loss)

	check := func(amount float64) protocol.RestartCheck {
		return protocol.RestartCheck{Monitor: protocol.Monitor{Account: "Sim101", LossLimit: protocol.Limit{Enabled: true, Amount: amount}}}
	}
	resp = rpc(t, s, 3, protocol.FnCheckMonitorRestart, check(loss))
	require.Nil(t, resp.Error)
	require.JSONEq(t, `{"wouldRetrip":true,"reason":"lossLimit"}`, string(resp.Result))
	resp = rpc(t, s, 4, protocol.FnCheckMonitorRestart, check(loss+100))
	require.Nil(t, resp.Error)
	require.JSONEq(t, `{"wouldRetrip":false}`, string(resp.Result))
	bad := check(1)
	bad.Monitor.Account = "Nobody"
	resp = rpc(t, s, 5, protocol.FnCheckMonitorRestart, bad)
	require.NotNil(t, resp.Error)
	require.Equal(t, protocol.CodeAccountNotFound, resp.Error.Code)
}

// nextDiagnostics waits for the agent's next EventDiagnostics.
func nextDiagnostics(t *testing.T, events <-chan protocol.Event, within time.Duration) (protocol.Diagnostics, bool) {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case ev := <-events:
			if ev.Kind != protocol.EventDiagnostics {
				continue
			}
			var d protocol.Diagnostics
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			return d, true
		case <-timeout:
			return protocol.Diagnostics{}, false
		}
	}
}

// The agent sends its diagnostics once after the Welcome, answers
// FnDiagnostics with fresh ones (the platform's kind and connections, the
// tunnel, a recorded error without its fields), keeps the snapshot file
// while it runs and writes it once more when it stops.
func TestDiagnosticsOverTheTunnel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, ends := fakeRelay(t, ctx)

	p, err := sim.New(sim.Options{})
	require.NoError(t, err)
	defer p.Close()
	rec := diag.NewRecorder()
	log := zap.New(rec.Core())
	snapshot := filepath.Join(t.TempDir(), diag.SnapshotName)
	cfg := protocol.DiagnosticConfig{RelayURL: url, Platform: "sim", TokenID: "0123456789ab"}
	a, err := agent.New(agent.Options{
		RelayURL: url, Token: "tb_agent_test", Platform: p, Logger: log,
		Tunnel: tunnel.Options{BackoffBase: 20 * time.Millisecond, BackoffCap: 100 * time.Millisecond},
		Diagnostics: agent.DiagnosticsOptions{Recorder: rec, Config: cfg, Service: true,
			SnapshotFile: snapshot, SnapshotEvery: 20 * time.Millisecond},
	})
	require.NoError(t, err)
	log.Error("the platform refused an order", zap.String("account", "hunter2-account"))

	stop := run(ctx, cancel, a)
	defer stop()

	end := accept(t, ends)

	check := func(d protocol.Diagnostics) {
		t.Helper()
		require.Equal(t, agent.Version, d.AgentVersion)
		require.NotEmpty(t, d.OS)
		require.True(t, d.Service)
		require.Equal(t, cfg, d.Config)
		require.False(t, d.StartedAt.After(d.At))
		require.True(t, d.Tunnel.Connected)
		require.Equal(t, "s-test", d.Tunnel.SessionID)
		require.NotNil(t, d.Tunnel.ConnectedAt)
		require.Positive(t, d.Tunnel.RTTMillis)
		require.InDelta(t, 0, d.Tunnel.ClockSkewMillis, 1000, "the fake relay shares the test's clock")
		require.Equal(t, "sim", d.Bridge.Kind)
		require.True(t, d.Bridge.Reachable)
		require.Equal(t, "embedded simulator", d.Bridge.Detail)
		require.NotEmpty(t, d.Bridge.Connections)
		require.Contains(t, d.Bridge.Connections[0].Accounts, "Sim101")
		require.Len(t, d.Errors, 1)
		require.Equal(t, "error", d.Errors[0].Level)
		require.Equal(t, "the platform refused an order", d.Errors[0].Message)
		require.Equal(t, 1, d.Errors[0].Count)
	}
	ev, ok := nextDiagnostics(t, end.events, 10*time.Second)
	require.True(t, ok, "the agent sends its diagnostics after the Welcome")
	check(ev)
	_, again := nextDiagnostics(t, end.events, 200*time.Millisecond)
	require.False(t, again, "once per connection, not with every snapshot")

	s, err := end.sess.OpenStream()
	require.NoError(t, err)
	defer s.Close()
	resp := rpc(t, s, 1, protocol.FnDiagnostics, nil)
	require.Nil(t, resp.Error)
	require.NotContains(t, string(resp.Result), "hunter2", "a log entry's fields are never kept")
	var fresh protocol.Diagnostics
	require.NoError(t, json.Unmarshal(resp.Result, &fresh))
	check(fresh)
	require.True(t, fresh.At.After(ev.At), "FnDiagnostics collects them afresh")

	require.Eventually(t, func() bool {
		d, _, err := diag.ReadSnapshot(snapshot)
		return err == nil && d.Tunnel.Connected
	}, testkit.Long, testkit.Tick, "the snapshot is written while the agent runs")

	stop()
	d, _, err := diag.ReadSnapshot(snapshot)
	require.NoError(t, err)
	require.False(t, d.Tunnel.Connected, "the last snapshot is written once the agent stopped")
	require.Equal(t, "sim", d.Bridge.Kind)
	require.Equal(t, cfg, d.Config)
	require.NoError(t, err)
	entries, err := os.ReadDir(filepath.Dir(snapshot))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left behind")
}

// lateConnections is a platform that connects between the agent's
// handshake and its subscription to the platform's events: the handshake
// reads no connections, and the event that would say so goes to nobody.
// Its Events waits for that first read before subscribing.
type lateConnections struct {
	bridge.Platform
	read chan struct{} // closed by the first Connections
	once sync.Once
}

func (p *lateConnections) Connections(ctx context.Context) ([]protocol.Connection, error) {
	first := false
	p.once.Do(func() { first = true; close(p.read) })
	if first {
		return []protocol.Connection{}, nil
	}
	return p.Platform.Connections(ctx)
}

func (p *lateConnections) Events(ctx context.Context) <-chan bridge.Event {
	select {
	case <-p.read:
	case <-ctx.Done():
	}
	return p.Platform.Events(ctx)
}

// The relay learns the platform's connections even when the platform
// connected after the handshake and before the agent listened to it.
func TestConnectionsOfAPlatformThatConnectedMeanwhile(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, ends := fakeRelay(t, ctx)
	s, err := sim.New(sim.Options{})
	require.NoError(t, err)
	defer s.Close()
	p := &lateConnections{Platform: s, read: make(chan struct{})}
	a, err := agent.New(agent.Options{RelayURL: url, Token: "tb_agent_test", Platform: p, Logger: zap.NewNop()})
	require.NoError(t, err)
	defer run(ctx, cancel, a)()

	end := accept(t, ends)
	require.Empty(t, end.hello.Connections, "the handshake saw none")
	deadline := time.After(testkit.Medium)
	for {
		select {
		case ev := <-end.events:
			if ev.Kind != protocol.EventConnections {
				continue
			}
			var conns []protocol.Connection
			require.NoError(t, json.Unmarshal(ev.Data, &conns))
			require.NotEmpty(t, conns)
			return
		case <-deadline:
			t.Fatal("the agent never told the relay its platform's connections")
		}
	}
}
