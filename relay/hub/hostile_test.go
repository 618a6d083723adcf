package hub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/yamux"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"tradebridge/agent/tunnel"
	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/auth/authtest"
	"tradebridge/relay/budget"
	"tradebridge/relay/errcode"
	"tradebridge/relay/hub"
	"tradebridge/transport"
)

// deadlineSlack is how late past its deadline a call may return.
const deadlineSlack = time.Second

// The connect door checks the client address's budget before the token:
// guessing tokens from one address costs no look-ups past the budget, and
// is answered as the trading API answers an exhausted budget.
func TestConnectChecksAddressBudgetFirst(t *testing.T) {
	t.Parallel()
	perIP, err := budget.New(budget.Options{Policy: budget.Policy{Name: "ip", Rate: 1, Period: time.Minute, Burst: 3}})
	require.NoError(t, err)
	e := newEnvWith(t, func(o *hub.Options) { o.IPBudget = perIP })
	for i := range 10 {
		_, resp, err := dialRaw(t, e, fmt.Sprintf("tb_agent_guess%d", i), protocol.Subprotocol(protocol.ProtocolVersion))
		require.Error(t, err)
		require.NotNil(t, resp)
		var body struct {
			Error      string `json:"error"`
			Policy     string `json:"policy"`
			RetryAfter int    `json:"retryAfter"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		resp.Body.Close()
		if i < 3 {
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			continue
		}
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		require.Equal(t, errcode.RateLimited, body.Error)
		require.Equal(t, "ip", body.Policy)
		require.Positive(t, body.RetryAfter)
		require.NotEmpty(t, resp.Header.Get("Retry-After"))
		require.NotEmpty(t, resp.Header.Get("RateLimit-Policy"))
		require.NotEmpty(t, resp.Header.Get("RateLimit"))
	}
	require.EqualValues(t, 3, e.auth.Calls(), "no token look-up past the budget")
}

// An honest agent at its concurrency limit stops reading requests. Calls
// then wait for room in the stream's window and fail by their own
// deadline with nothing sent; the tunnel, and the calls it runs, stay.
func TestSaturatedAgentKeepsItsTunnel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.startAgentWith("agent-a", "A", func(o *tunnel.Options) { o.MaxConcurrent = 1 })
	info := e.waitConnected("usr_a")

	running := make(chan error, 1)
	go func() {
		_, err := call(t, e.hub, "usr_a", "Block", 30*time.Second)
		running <- err
	}()
	require.Eventually(t, func() bool { return a.handler.calls.Load() == 1 }, testkit.Medium, time.Millisecond)

	// 40 requests of 60 KB: more than the stream's 1 MiB window.
	const calls, timeout = 40, 500 * time.Millisecond
	args := json.RawMessage(`{"pad":"` + strings.Repeat("x", 60_000) + `"}`)
	type outcome struct {
		err  error
		took time.Duration
	}
	var wg sync.WaitGroup
	outcomes := make(chan outcome, calls)
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			_, err := e.hub.Call(ctx, "usr_a", "Echo", "", args)
			outcomes <- outcome{err, time.Since(start)}
		}()
	}
	wg.Wait()
	close(outcomes)
	for o := range outcomes {
		require.ErrorIs(t, o.err, agentcall.ErrTimeout)
		require.Less(t, o.took, timeout+deadlineSlack, "a call waited past its deadline")
	}

	now, ok := e.hub.Info("usr_a")
	require.True(t, ok)
	require.Equal(t, info.SessionID, now.SessionID, "the tunnel stayed")
	close(a.handler.block)
	require.NoError(t, <-running, "the running call was not lost")
	out, err := call(t, e.hub, "usr_a", "Echo", testkit.Long)
	require.NoError(t, err)
	require.Contains(t, string(out), "Echo")
	now, _ = e.hub.Info("usr_a")
	require.Equal(t, info.SessionID, now.SessionID)
}

// barsHandler answers GetBars once released, counting the calls that run
// at once.
type barsHandler struct {
	release chan struct{}
	running atomic.Int64
	most    atomic.Int64
}

func (h *barsHandler) Handle(ctx context.Context, req *protocol.Request) (json.RawMessage, *protocol.Error) {
	if req.Fn != protocol.FnGetBars {
		return json.RawMessage(`{}`), nil
	}
	n := h.running.Add(1)
	defer h.running.Add(-1)
	for {
		m := h.most.Load()
		if n <= m || h.most.CompareAndSwap(m, n) {
			break
		}
	}
	select {
	case <-h.release:
		return json.RawMessage(`{"bars":[]}`), nil
	case <-ctx.Done():
		return nil, protocol.NewError(protocol.CodeCancelled, "cancelled")
	}
}

// Calls on streams of their own (GetBars) run MaxStreamCalls at a time per
// tunnel; another waits its turn until its deadline, and the calls on the
// shared stream are not held up.
func TestStreamCallsAreCapped(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, func(o *hub.Options) { o.MaxStreamCalls = 2 })
	bh := &barsHandler{release: make(chan struct{})}
	e.startAgentWith("agent-a", "A", func(o *tunnel.Options) { o.Handler = bh })
	e.waitConnected("usr_a")

	results := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := call(t, e.hub, "usr_a", protocol.FnGetBars, testkit.Long)
			results <- err
		}()
	}
	require.Eventually(t, func() bool { return bh.running.Load() == 2 }, testkit.Medium, time.Millisecond)
	start := time.Now()
	_, err := call(t, e.hub, "usr_a", protocol.FnGetBars, 300*time.Millisecond)
	require.ErrorIs(t, err, agentcall.ErrTimeout)
	require.Less(t, time.Since(start), 300*time.Millisecond+deadlineSlack)
	_, err = call(t, e.hub, "usr_a", "Echo", time.Second)
	require.NoError(t, err, "the shared stream is not held up")

	close(bh.release)
	for range 2 {
		require.NoError(t, <-results)
	}
	_, err = call(t, e.hub, "usr_a", protocol.FnGetBars, testkit.Medium)
	require.NoError(t, err)
	require.EqualValues(t, 2, bh.most.Load(), "never more than MaxStreamCalls at once")
}

// rawAgent is an agent that speaks yamux itself, to do what the real agent
// never does.
type rawAgent struct {
	conn    *transport.Conn
	sess    *yamux.Session
	control net.Conn
	opened  chan net.Conn // streams the relay opened
}

func dialAgent(t *testing.T, e *env, token string) *rawAgent {
	t.Helper()
	ws, _, err := dialRaw(t, e, token, protocol.Subprotocol(protocol.ProtocolVersion))
	require.NoError(t, err)
	a := &rawAgent{conn: transport.NewConn(context.Background(), ws), opened: make(chan net.Conn, 16)}
	a.sess, err = yamux.Client(a.conn, transport.YamuxConfig(zaptest.NewLogger(t)))
	require.NoError(t, err)
	done := make(chan struct{})
	t.Cleanup(func() {
		a.sess.Close()
		_ = a.conn.CloseWith(int(websocket.StatusNormalClosure), "")
		<-done
	})
	a.control, err = a.sess.OpenStream()
	require.NoError(t, err)
	require.NoError(t, protocol.NewWriter(a.control).WriteFrame(protocol.TypeHello, protocol.Hello{ProtocolVersion: protocol.ProtocolVersion, Platform: "raw"}))
	typ, _, err := protocol.NewReader(a.control, 0).ReadFrame()
	require.NoError(t, err)
	require.Equal(t, protocol.TypeWelcome, typ)
	go func() {
		defer close(done)
		for {
			s, err := a.sess.AcceptStream()
			if err != nil {
				return
			}
			a.opened <- s
		}
	}()
	return a
}

// next returns the next stream the relay opens.
func (a *rawAgent) next(t *testing.T) net.Conn {
	t.Helper()
	select {
	case s := <-a.opened:
		return s
	case <-time.After(testkit.Medium):
		t.Fatal("the relay opened no stream")
		return nil
	}
}

// answer reads one request from s and answers it with result.
func answer(t *testing.T, s net.Conn, result string) {
	t.Helper()
	typ, payload, err := protocol.NewReader(s, 0).ReadFrame()
	require.NoError(t, err)
	require.Equal(t, protocol.TypeRequest, typ)
	var req protocol.Request
	require.NoError(t, protocol.Decode(payload, &req))
	require.NoError(t, protocol.NewWriter(s).WriteFrame(protocol.TypeResponse, protocol.Response{ID: req.ID, Result: json.RawMessage(result)}))
}

// A call on a stream of its own returns with its reply, even when the
// agent never closes its end of the stream; the stream keeps its turn
// until then, so such streams stay bounded.
func TestOwnStreamCallDoesNotWaitForTheAgentsClose(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, func(o *hub.Options) { o.MaxStreamCalls = 1 })
	a := dialAgent(t, e, "agent-a")
	a.next(t) // the shared rpc stream
	e.waitConnected("usr_a")

	got := make(chan error, 1)
	start := time.Now()
	go func() {
		out, err := call(t, e.hub, "usr_a", protocol.FnGetBars, testkit.Medium)
		if err == nil && string(out) != `{"bars":[]}` {
			err = fmt.Errorf("reply %s", out)
		}
		got <- err
	}()
	answer(t, a.next(t), `{"bars":[]}`) // and never close the stream
	select {
	case err := <-got:
		require.NoError(t, err)
		require.Less(t, time.Since(start), 2*time.Second)
	case <-time.After(testkit.Medium):
		t.Fatal("the call waited for the agent to close its stream")
	}

	// The open stream holds the only turn: another call waits and fails
	// by its deadline, and opens no stream.
	_, err := call(t, e.hub, "usr_a", protocol.FnGetBars, 200*time.Millisecond)
	require.ErrorIs(t, err, agentcall.ErrTimeout)
	select {
	case <-a.opened:
		t.Fatal("a stream beyond MaxStreamCalls was opened")
	default:
	}
}

// A reply on a stream of its own that starts and never finishes ends the
// tunnel once the frame timeout passes, as on the shared stream.
func TestDrippedFrameEndsTunnel(t *testing.T) {
	t.Parallel()
	const frameTimeout = 300 * time.Millisecond
	e := newEnvWith(t, func(o *hub.Options) { o.FrameTimeout = frameTimeout })
	a := dialAgent(t, e, "agent-a")
	a.next(t)
	e.waitConnected("usr_a")
	go func() { _, _ = call(t, e.hub, "usr_a", protocol.FnGetBars, testkit.Long) }()
	s := a.next(t)
	_, _, err := protocol.NewReader(s, 0).ReadFrame()
	require.NoError(t, err)
	start := time.Now()
	_, err = s.Write([]byte{0, 0x10, 0, 0, byte(protocol.TypeResponse), '{'})
	require.NoError(t, err)
	go func() {
		for {
			time.Sleep(50 * time.Millisecond)
			if _, err := s.Write([]byte{' '}); err != nil {
				return
			}
		}
	}()
	select {
	case <-a.sess.CloseChan():
	case <-time.After(frameTimeout + 5*time.Second):
		t.Fatal("a dripped frame kept the tunnel up")
	}
	require.GreaterOrEqual(t, time.Since(start), frameTimeout)
	require.Eventually(t, func() bool { return a.conn.CloseStatus() != -1 }, testkit.Medium, time.Millisecond)
	require.Equal(t, protocol.CloseProtocolError, a.conn.CloseStatus())
	require.Equal(t, "frame not completed in time", a.conn.CloseReason())
}

// A second stream from the agent ends its tunnel with a protocol error
// before yamux buffers any of it.
func TestAgentOpenedStreamEndsTunnel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.startAgent("agent-b", "B")
	e.waitConnected("usr_b")
	a := dialAgent(t, e, "agent-a")
	e.waitConnected("usr_a")
	// The relay may end the session on the stream's first frame, before
	// OpenStream returns: the close below is what counts.
	if s, err := a.sess.OpenStream(); err == nil {
		_, _ = s.Write(make([]byte, 64<<10))
	}
	select {
	case <-a.sess.CloseChan():
	case <-time.After(testkit.Medium):
		t.Fatal("the tunnel stayed up")
	}
	require.Eventually(t, func() bool { return a.conn.CloseStatus() != -1 }, testkit.Medium, time.Millisecond)
	require.Equal(t, protocol.CloseProtocolError, a.conn.CloseStatus())
	require.Contains(t, a.conn.CloseReason(), "stream")
	require.Eventually(t, func() bool { return !e.hub.Connected("usr_a") }, testkit.Medium, time.Millisecond)
	out, err := call(t, e.hub, "usr_b", "Echo", time.Second)
	require.NoError(t, err)
	require.Contains(t, string(out), `"agent":"B"`)
	require.True(t, b.client.Connected())
}

// inOrder counts the agent's events the hub publishes in order (Seq 1,
// 2, …), and when the last one arrived.
type inOrder struct {
	got  atomic.Int64
	last atomic.Int64 // unix nanos
}

func (o *inOrder) spine() spine {
	return spine{event: func(ev protocol.Event) {
		if ev.Seq == uint64(o.got.Load()+1) {
			o.got.Add(1)
		}
		o.last.Store(time.Now().UnixNano())
	}}
}

// An agent that sends events faster than EventBytesPerSecond is read more
// slowly, never closed: every event arrives, in order, and the tunnel
// stays.
func TestEventFloodIsPacedNotClosed(t *testing.T) {
	t.Parallel()
	const rate, events, size = 256 << 10, 24, 32 << 10
	var seen inOrder
	e := newEnvWith(t, func(o *hub.Options) {
		o.EventBytesPerSecond = rate
		o.Events = seen.spine()
	})
	a := dialAgent(t, e, "agent-a")
	e.waitConnected("usr_a")
	w := protocol.NewWriter(a.control)
	data := json.RawMessage(`"` + strings.Repeat("x", size) + `"`)
	start := time.Now()
	for i := range events {
		require.NoError(t, w.WriteFrame(protocol.TypeEvent, protocol.Event{Seq: uint64(i + 1), Kind: "test", Data: data}))
	}
	require.Eventually(t, func() bool { return seen.got.Load() == events }, testkit.Long, 10*time.Millisecond)
	took := time.Unix(0, seen.last.Load()).Sub(start)
	// Past the first second's worth, the rest at the rate.
	want := time.Duration(float64(events*(size+hub.EventOverhead)-rate) / rate * float64(time.Second))
	require.GreaterOrEqual(t, took, want*9/10)
	require.True(t, e.hub.Connected("usr_a"))
	select {
	case <-a.sess.CloseChan():
		t.Fatal("the tunnel was closed")
	default:
	}
}

// A flood of tiny events is paced by count, whatever their bytes: past the
// first second's worth, the rest arrive at EventsPerSecond, and the tunnel
// stays.
func TestTinyEventFloodIsPacedByCount(t *testing.T) {
	t.Parallel()
	const rate, events = 200, 500
	var seen inOrder
	e := newEnvWith(t, func(o *hub.Options) {
		o.EventsPerSecond = rate
		o.Events = seen.spine()
	})
	a := dialAgent(t, e, "agent-a")
	e.waitConnected("usr_a")
	w := protocol.NewWriter(a.control)
	start := time.Now()
	for i := range events {
		require.NoError(t, w.WriteFrame(protocol.TypeEvent, protocol.Event{Seq: uint64(i + 1), Kind: protocol.EventConnections, Data: json.RawMessage(`[]`)}))
	}
	require.Eventually(t, func() bool { return seen.got.Load() == events }, testkit.Long, 10*time.Millisecond)
	took := time.Unix(0, seen.last.Load()).Sub(start)
	want := time.Duration(float64(events-rate) / rate * float64(time.Second))
	require.GreaterOrEqual(t, took, want*9/10)
	require.True(t, e.hub.Connected("usr_a"))
}

// Options that would let an agent's largest event wait more than a second
// are refused.
func TestEventBudgetBelowOneEventIsRefused(t *testing.T) {
	t.Parallel()
	_, err := hub.New(hub.Options{Auth: authtest.New(nil), EventBytesPerSecond: 1000})
	require.ErrorContains(t, err, "EventBytesPerSecond")
	h, err := hub.New(hub.Options{Auth: authtest.New(nil)})
	require.NoError(t, err)
	require.NoError(t, h.Close())
}
