package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/yamux"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"tradebridge/agent/tunnel"
	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/auth"
	"tradebridge/relay/auth/authtest"
	"tradebridge/relay/errcode"
	"tradebridge/relay/hub"
	"tradebridge/transport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echoHandler answers every call with the function name, its arguments and
// the agent's name, so a test can see which agent served it.
type echoHandler struct {
	name  string
	calls atomic.Int64
	block chan struct{} // when set, Fn "Block" waits on it or ctx
}

func (h *echoHandler) Handle(ctx context.Context, req *protocol.Request) (json.RawMessage, *protocol.Error) {
	h.calls.Add(1)
	switch req.Fn {
	case "Block":
		select {
		case <-h.block:
		case <-ctx.Done():
			return nil, protocol.NewError(protocol.CodeCancelled, "cancelled")
		}
	case "Fail":
		return nil, protocol.NewError(protocol.CodeNoPosition, "no position")
	case "Options":
		out, _ := json.Marshal(map[string]any{"bypassWindows": req.BypassWindows})
		return out, nil
	case protocol.FnApplyConfig:
		var cfg protocol.Config
		_ = json.Unmarshal(req.Args, &cfg)
		out, _ := json.Marshal(protocol.ConfigApplied{Version: cfg.Version})
		return out, nil
	}
	out, _ := json.Marshal(map[string]any{"agent": h.name, "fn": req.Fn, "args": req.Args})
	return out, nil
}

type env struct {
	t    testing.TB
	hub  *hub.Hub
	srv  *httptest.Server
	auth *authtest.Auth
}

func newEnv(t testing.TB) *env { return newEnvWith(t, nil) }

// newEnvWith is newEnv with a hub whose options tweak may change.
func newEnvWith(t testing.TB, tweak func(*hub.Options)) *env {
	fa := authtest.New(map[string]auth.Principal{
		"agent-a": {UserID: "usr_a", Plan: auth.PlanPro, Kind: auth.KindAgent},
		"agent-b": {UserID: "usr_b", Plan: auth.PlanPro, Kind: auth.KindAgent},
		"api-a":   {UserID: "usr_a", Plan: auth.PlanPro, Kind: auth.KindAPI},
	})
	opts := hub.Options{Auth: fa, Logger: zaptest.NewLogger(t), HandshakeTimeout: 500 * time.Millisecond, ReverifyInterval: 50 * time.Millisecond}
	if tweak != nil {
		tweak(&opts)
	}
	h, err := hub.New(opts)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("GET "+protocol.ConnectPath, h)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		h.Close()
		srv.Close()
	})
	return &env{t: t, hub: h, srv: srv, auth: fa}
}

// killableDialer records the agent's TCP connections so a test can cut them
// the way a killed process or a dead network would.
type killableDialer struct {
	mu    sync.Mutex
	conns []net.Conn
	held  chan struct{} // while set, dials wait for it to close
}

func (k *killableDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	k.mu.Lock()
	held := k.held
	k.mu.Unlock()
	if held != nil {
		select {
		case <-held:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err == nil {
		k.mu.Lock()
		k.conns = append(k.conns, c)
		k.mu.Unlock()
	}
	return c, err
}

func (k *killableDialer) kill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, c := range k.conns {
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
	}
	k.conns = nil
}

// killAndHold is kill, with the agent's redials held until the returned
// release is called.
func (k *killableDialer) killAndHold() (release func()) {
	held := make(chan struct{})
	k.mu.Lock()
	k.held = held
	k.mu.Unlock()
	k.kill()
	return func() {
		k.mu.Lock()
		k.held = nil
		k.mu.Unlock()
		close(held)
	}
}

type agentUnderTest struct {
	client  *tunnel.Client
	handler *echoHandler
	dialer  *killableDialer
	done    chan struct{}
}

func (e *env) startAgent(token, name string) *agentUnderTest {
	e.t.Helper()
	return e.startAgentWith(token, name, nil)
}

// startAgentWith is startAgent with options tweak may change.
func (e *env) startAgentWith(token, name string, tweak func(*tunnel.Options)) *agentUnderTest {
	e.t.Helper()
	kd := &killableDialer{}
	h := &echoHandler{name: name, block: make(chan struct{})}
	opts := tunnel.Options{
		RelayURL: e.srv.URL,
		Token:    token,
		Hello: func(context.Context) (protocol.Hello, error) {
			return protocol.Hello{AgentVersion: "test", Platform: "fake",
				Connections: []protocol.Connection{{Name: "Fake", Status: "Connected", Accounts: []string{"A1"}}}}, nil
		},
		Handler:     h,
		Logger:      zaptest.NewLogger(e.t).Named(name),
		BackoffBase: 20 * time.Millisecond,
		BackoffCap:  200 * time.Millisecond,
		HTTPClient:  &http.Client{Transport: &http.Transport{DialContext: kd.DialContext}},
	}
	if tweak != nil {
		tweak(&opts)
	}
	c, err := tunnel.New(opts)
	require.NoError(e.t, err)
	a := &agentUnderTest{client: c, handler: h, dialer: kd, done: make(chan struct{})}
	go func() {
		defer close(a.done)
		_ = c.Run(context.Background())
	}()
	e.t.Cleanup(a.stop)
	return a
}

func (a *agentUnderTest) stop() {
	a.client.Close()
	<-a.done
}

func (e *env) waitConnected(userID string) agentcall.Info {
	e.t.Helper()
	require.Eventually(e.t, func() bool { return e.hub.Connected(userID) }, testkit.Medium, 5*time.Millisecond)
	info, _ := e.hub.Info(userID)
	return info
}

func call(t testing.TB, h *hub.Hub, user, fn string, timeout time.Duration) (json.RawMessage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return h.Call(ctx, user, fn, "", json.RawMessage(`{"x":1}`))
}

func TestRoundTripAndHandshake(t *testing.T) {
	e := newEnv(t)
	e.startAgent("agent-a", "A")
	info := e.waitConnected("usr_a")
	require.Equal(t, "fake", info.Hello.Platform)
	require.Equal(t, protocol.ProtocolVersion, info.Hello.ProtocolVersion)
	require.Equal(t, []string{"A1"}, info.Hello.Connections[0].Accounts)

	out, err := call(t, e.hub, "usr_a", "Echo", time.Second)
	require.NoError(t, err)
	require.JSONEq(t, `{"agent":"A","fn":"Echo","args":{"x":1}}`, string(out))

	_, err = call(t, e.hub, "usr_a", "Fail", time.Second)
	require.ErrorIs(t, err, &protocol.Error{Code: protocol.CodeNoPosition})

	// GetBars rides a stream of its own.
	out, err = call(t, e.hub, "usr_a", protocol.FnGetBars, time.Second)
	require.NoError(t, err)
	require.Contains(t, string(out), protocol.FnGetBars)
}

// The call's protocol.CallOptions travel in the Request.
func TestCallOptionsReachTheAgent(t *testing.T) {
	e := newEnv(t)
	e.startAgent("agent-a", "A")
	e.waitConnected("usr_a")
	for _, bypass := range []bool{true, false} {
		ctx, cancel := context.WithTimeout(protocol.WithCallOptions(context.Background(), protocol.CallOptions{BypassWindows: bypass}), time.Second)
		out, err := e.hub.Call(ctx, "usr_a", "Options", "", json.RawMessage(`{}`))
		cancel()
		require.NoError(t, err)
		require.JSONEq(t, fmt.Sprintf(`{"bypassWindows":%t}`, bypass), string(out))
	}
}

func TestConcurrentCalls(t *testing.T) {
	e := newEnv(t)
	e.startAgent("agent-a", "A")
	e.waitConnected("usr_a")
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))
			ctx, cancel := context.WithTimeout(context.Background(), testkit.Medium)
			defer cancel()
			out, err := e.hub.Call(ctx, "usr_a", "Echo", "", args)
			if err != nil {
				errs <- err
				return
			}
			var got struct {
				Args struct{ I int } `json:"args"`
			}
			if err := json.Unmarshal(out, &got); err != nil || got.Args.I != i {
				errs <- fmt.Errorf("call %d got reply %s", i, out)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// A call for a user with no agent fails at once: it does not wait for
// the call's timeout (Long) for an agent to connect.
func TestNoAgentFailsAtOnce(t *testing.T) {
	e := newEnv(t)
	start := time.Now()
	_, err := call(t, e.hub, "usr_a", "Echo", testkit.Long)
	require.ErrorIs(t, err, agentcall.ErrNotConnected)
	require.Less(t, time.Since(start), testkit.Medium, "the call did not wait for an agent")
}

func TestAgentKilledMidCall(t *testing.T) {
	e := newEnv(t)
	a := e.startAgent("agent-a", "A")
	first := e.waitConnected("usr_a")
	errc := make(chan error, 1)
	go func() {
		_, err := call(t, e.hub, "usr_a", "Block", testkit.Long)
		errc <- err
	}()
	require.Eventually(t, func() bool { return a.handler.calls.Load() == 1 }, testkit.Medium, time.Millisecond)
	start := time.Now()
	a.dialer.kill()
	select {
	case err := <-errc:
		require.ErrorIs(t, err, agentcall.ErrConnectionLost)
		// Well before the call's own 10 s deadline.
		require.Less(t, time.Since(start), 5*time.Second)
	case <-time.After(testkit.Long):
		t.Fatal("the caller hung after the agent died")
	}
	close(a.handler.block)
	// The agent comes back by itself, on a new session.
	require.Eventually(t, func() bool {
		info, ok := e.hub.Info("usr_a")
		return ok && info.SessionID != first.SessionID
	}, testkit.Medium, 5*time.Millisecond)
	_, err := call(t, e.hub, "usr_a", "Echo", testkit.Medium)
	require.NoError(t, err)
}

func TestDeadlineAndCancel(t *testing.T) {
	e := newEnv(t)
	a := e.startAgent("agent-a", "A")
	e.waitConnected("usr_a")
	start := time.Now()
	_, err := call(t, e.hub, "usr_a", "Block", 100*time.Millisecond)
	require.ErrorIs(t, err, agentcall.ErrTimeout)
	require.Less(t, time.Since(start), time.Second)
	// The relay's Cancel (or the request's own deadline) ends the agent's work.
	require.Eventually(t, func() bool { return a.handler.calls.Load() == 1 }, testkit.Medium, time.Millisecond)
	out, err := call(t, e.hub, "usr_a", "Echo", time.Second)
	require.NoError(t, err)
	require.Contains(t, string(out), "Echo")
}

func TestNewerConnectionReplacesOlder(t *testing.T) {
	e := newEnv(t)
	first := e.startAgent("agent-a", "first")
	info1 := e.waitConnected("usr_a")
	second := e.startAgent("agent-a", "second")
	require.Eventually(t, func() bool {
		info, ok := e.hub.Info("usr_a")
		return ok && info.SessionID != info1.SessionID
	}, testkit.Medium, 5*time.Millisecond)
	// The first agent was told it was replaced and waits before retrying
	// (at least half the backoff cap), so the second one serves calls.
	require.Eventually(t, func() bool { return !first.client.Connected() }, testkit.Medium, 5*time.Millisecond)
	out, err := call(t, e.hub, "usr_a", "Echo", time.Second)
	require.NoError(t, err)
	require.Contains(t, string(out), `"agent":"second"`)
	require.True(t, second.client.Connected())
}

func TestUsersAreIsolated(t *testing.T) {
	e := newEnv(t)
	a := e.startAgent("agent-a", "A")
	b := e.startAgent("agent-b", "B")
	e.waitConnected("usr_a")
	e.waitConnected("usr_b")
	for range 20 {
		out, err := call(t, e.hub, "usr_a", "Echo", time.Second)
		require.NoError(t, err)
		require.Contains(t, string(out), `"agent":"A"`)
	}
	require.Equal(t, int64(20), a.handler.calls.Load())
	require.Equal(t, int64(0), b.handler.calls.Load())
	// An API token is not an agent token.
	e.startAgent("api-a", "impostor")
	time.Sleep(100 * time.Millisecond)
	out, err := call(t, e.hub, "usr_a", "Echo", time.Second)
	require.NoError(t, err)
	require.Contains(t, string(out), `"agent":"A"`)
}

func TestRevokedTokenEndsTunnel(t *testing.T) {
	e := newEnv(t)
	a := e.startAgent("agent-a", "A")
	e.waitConnected("usr_a")
	e.auth.Revoke("agent-a")
	require.Eventually(t, func() bool { return !e.hub.Connected("usr_a") && !a.client.Connected() }, testkit.Medium, 5*time.Millisecond)
}

// dialRaw opens a tunnel WebSocket by hand, as a misbehaving agent would.
func dialRaw(t *testing.T, e *env, token string, subprotocols ...string) (*websocket.Conn, *http.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Medium)
	defer cancel()
	url := "ws" + strings.TrimPrefix(e.srv.URL, "http") + protocol.ConnectPath
	return websocket.Dial(ctx, url, &websocket.DialOptions{
		HTTPHeader:   http.Header{"Authorization": []string{"Bearer " + token}},
		Subprotocols: subprotocols,
	})
}

func TestRefusedBeforeUpgrade(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name, token, sub string
		status           int
		code             string
	}{
		{"bad token", "nope", protocol.Subprotocol(1), http.StatusUnauthorized, errcode.Unauthorized},
		{"api token", "api-a", protocol.Subprotocol(1), http.StatusUnauthorized, errcode.Unauthorized},
		{"future version", "agent-a", protocol.Subprotocol(99), http.StatusBadRequest, errcode.ProtocolVersionUnsupported},
		{"no subprotocol", "agent-a", "", http.StatusBadRequest, errcode.ProtocolVersionUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var subs []string
			if tc.sub != "" {
				subs = []string{tc.sub}
			}
			_, resp, err := dialRaw(t, e, tc.token, subs...)
			require.Error(t, err)
			require.NotNil(t, resp)
			require.Equal(t, tc.status, resp.StatusCode)
			var body struct {
				Success bool   `json:"success"`
				Error   string `json:"error"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
			resp.Body.Close()
			require.False(t, body.Success)
			require.Equal(t, tc.code, body.Error)
		})
	}
}

// closeCode reads from ws until it closes and returns the close code.
func closeCode(t *testing.T, ws *websocket.Conn) websocket.StatusCode {
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Medium)
	defer cancel()
	for {
		if _, _, err := ws.Read(ctx); err != nil {
			return websocket.CloseStatus(err)
		}
	}
}

func TestMisbehavingAgentsAreClosed(t *testing.T) {
	e := newEnv(t)
	e.startAgent("agent-b", "B")
	e.waitConnected("usr_b")

	t.Run("garbage", func(t *testing.T) {
		ws, _, err := dialRaw(t, e, "agent-a", protocol.Subprotocol(1))
		require.NoError(t, err)
		defer ws.CloseNow()
		require.NoError(t, ws.Write(context.Background(), websocket.MessageBinary, []byte("GET / HTTP/1.1\r\n\r\n garbage")))
		require.Equal(t, websocket.StatusCode(protocol.CloseProtocolError), closeCode(t, ws))
	})
	t.Run("no hello", func(t *testing.T) {
		ws, _, err := dialRaw(t, e, "agent-a", protocol.Subprotocol(1))
		require.NoError(t, err)
		defer ws.CloseNow()
		require.Equal(t, websocket.StatusCode(protocol.CloseBadHandshake), closeCode(t, ws))
	})
	t.Run("oversized frame", func(t *testing.T) {
		// A well-formed yamux session whose first frame announces a
		// payload larger than the protocol allows.
		ws, _, err := dialRaw(t, e, "agent-a", protocol.Subprotocol(1))
		require.NoError(t, err)
		defer ws.CloseNow()
		code := rawYamuxHello(t, ws, []byte{0x7f, 0xff, 0xff, 0xff, byte(protocol.TypeHello)})
		require.Equal(t, websocket.StatusCode(protocol.CloseBadHandshake), code)
	})
	t.Run("wrong first frame", func(t *testing.T) {
		ws, _, err := dialRaw(t, e, "agent-a", protocol.Subprotocol(1))
		require.NoError(t, err)
		defer ws.CloseNow()
		code := rawYamuxHello(t, ws, append([]byte{0, 0, 0, 2, byte(protocol.TypeRequest)}, '{', '}'))
		require.Equal(t, websocket.StatusCode(protocol.CloseBadHandshake), code)
	})
	t.Run("text message", func(t *testing.T) {
		ws, _, err := dialRaw(t, e, "agent-a", protocol.Subprotocol(1))
		require.NoError(t, err)
		defer ws.CloseNow()
		require.NoError(t, ws.Write(context.Background(), websocket.MessageText, []byte("hello")))
		code := closeCode(t, ws)
		require.NotEqual(t, websocket.StatusNormalClosure, code)
	})

	// The relay stays healthy: the well-behaved agent still answers, and a
	// new one connects.
	out, err := call(t, e.hub, "usr_b", "Echo", time.Second)
	require.NoError(t, err)
	require.Contains(t, string(out), `"agent":"B"`)
	e.startAgent("agent-a", "A")
	e.waitConnected("usr_a")
}

// rawYamuxHello opens yamux stream 1 by hand (SYN + data) carrying frame, and
// returns the close code the relay answers with.
func rawYamuxHello(t *testing.T, ws *websocket.Conn, frame []byte) websocket.StatusCode {
	hdr := make([]byte, 12)
	hdr[0] = 0 // version
	hdr[1] = 0 // data
	hdr[3] = 1 // flags: SYN
	hdr[7] = 1 // stream id 1
	hdr[11] = byte(len(frame))
	msg := append(hdr, frame...)
	require.NoError(t, ws.Write(context.Background(), websocket.MessageBinary, msg))
	return closeCode(t, ws)
}

func TestCloseEndsTunnels(t *testing.T) {
	e := newEnv(t)
	a := e.startAgent("agent-a", "A")
	e.waitConnected("usr_a")
	require.NoError(t, e.hub.Close())
	require.NoError(t, e.hub.Close()) // idempotent
	require.Eventually(t, func() bool { return !a.client.Connected() }, testkit.Medium, 5*time.Millisecond)
	_, err := call(t, e.hub, "usr_a", "Echo", time.Second)
	require.True(t, errors.Is(err, agentcall.ErrNotConnected) || errors.Is(err, agentcall.ErrClosed), "%v", err)
}

func TestOversizedFrameAfterHandshake(t *testing.T) {
	e := newEnv(t)
	ws, _, err := dialRaw(t, e, "agent-a", protocol.Subprotocol(1))
	require.NoError(t, err)
	conn := transport.NewConn(context.Background(), ws)
	sess, err := yamux.Client(conn, transport.YamuxConfig(zaptest.NewLogger(t)))
	require.NoError(t, err)
	defer sess.Close()
	control, err := sess.OpenStream()
	require.NoError(t, err)
	require.NoError(t, protocol.NewWriter(control).WriteFrame(protocol.TypeHello, protocol.Hello{ProtocolVersion: 1, Platform: "raw"}))
	typ, _, err := protocol.NewReader(control, 0).ReadFrame()
	require.NoError(t, err)
	require.Equal(t, protocol.TypeWelcome, typ)
	e.waitConnected("usr_a")

	// 16 MiB announced. The relay may close the tunnel before yamux's
	// Write returns, which then reports the session's shutdown: the close
	// status below is what counts.
	_, _ = control.Write([]byte{0x01, 0x00, 0x00, 0x00, byte(protocol.TypeEvent)})
	<-sess.CloseChan()
	require.Eventually(t, func() bool { return conn.CloseStatus() != -1 }, testkit.Medium, time.Millisecond)
	require.Equal(t, protocol.CloseFrameTooLarge, conn.CloseStatus())
	require.Eventually(t, func() bool { return !e.hub.Connected("usr_a") }, testkit.Medium, 5*time.Millisecond)
}

// BenchmarkCall measures a call through the tunnel alone (no HTTP), the part
// of BenchmarkRoundTrip in package relay that the tunnel adds.
func BenchmarkCall(b *testing.B) {
	e := newEnv(b)
	e.startAgent("agent-a", "A")
	e.waitConnected("usr_a")
	for b.Loop() {
		if _, err := call(b, e.hub, "usr_a", "Echo", testkit.Medium); err != nil {
			b.Fatal(err)
		}
	}
}
