package agent_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/yamux"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"tradebridge/agent"
	"tradebridge/agent/bridge"
	"tradebridge/agent/bridge/sim"
	"tradebridge/agent/ops"
	"tradebridge/agent/tunnel"
	"tradebridge/protocol"
	"tradebridge/transport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// tunnelEnd is the relay's end of one agent tunnel, as a minimal fake
// relay accepts it: the subprotocol the agent offered, its Hello, and a
// stream to send requests on.
type tunnelEnd struct {
	subprotocol string
	hello       protocol.Hello
	sess        *yamux.Session
}

// fakeRelay accepts agent tunnels on /v1/agent/connect and hands each to
// the test; the tunnel lasts until the test's context ends.
func fakeRelay(t *testing.T, ctx context.Context) (string, <-chan tunnelEnd) {
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
		typ, payload, err := protocol.NewReader(control, 0).ReadFrame()
		if err != nil || typ != protocol.TypeHello {
			return
		}
		end := tunnelEnd{subprotocol: ws.Subprotocol(), sess: sess}
		if protocol.Decode(payload, &end.hello) != nil {
			return
		}
		if protocol.NewWriter(control).WriteFrame(protocol.TypeWelcome,
			protocol.Welcome{ProtocolVersion: end.hello.ProtocolVersion, SessionID: "s-test"}) != nil {
			return
		}
		ends <- end
		<-ctx.Done()
	}))
	t.Cleanup(srv.Close)
	return srv.URL, ends
}

// rpc sends one request on a stream of the tunnel and reads its response.
func rpc(t *testing.T, s net.Conn, id uint64, fn string, args any) *protocol.Response {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	require.NoError(t, protocol.NewWriter(s).WriteFrame(protocol.TypeRequest, protocol.Request{ID: id, Fn: fn, Args: raw}))
	require.NoError(t, s.SetReadDeadline(time.Now().Add(10*time.Second)))
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
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		a.Close()
		<-done
	}()

	var end tunnelEnd
	select {
	case end = <-ends:
	case <-time.After(10 * time.Second):
		t.Fatal("the agent did not connect")
	}
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
