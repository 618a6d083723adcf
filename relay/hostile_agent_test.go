package relay_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/yamux"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay"
	"tradebridge/relay/hub"
	"tradebridge/relay/store"
	"tradebridge/transport"
)

// The relay under hostile agents: an agent that holds a real agent token
// and breaks the tunnel's rules. Each attack ends the attacker's tunnel (or
// only its own calls) within a bound, holds the relay's memory to the
// documented bound, and leaves an honest user on the same relay served.

// Bounds of the attacks' outcomes.
const (
	// attackEnds bounds the time from an attack to the end of the
	// attacker's tunnel.
	attackEnds = 5 * time.Second
	// honestWithin bounds an honest user's call during an attack.
	honestWithin = 3 * time.Second
	// honestEvery is how often the honest user calls during an attack.
	honestEvery = 50 * time.Millisecond
	// heapSlack is what the test process itself may add to the heap
	// besides the relay's bound (test goroutines, logs, GC timing).
	heapSlack = 16 << 20
)

// hostileAgent speaks yamux itself over the tunnel, with a real agent
// token and the subprotocol, so it can do what the real agent never does.
type hostileAgent struct {
	t       *testing.T
	conn    *transport.Conn
	gate    *frameGate
	sess    *yamux.Session
	control net.Conn
	events  *protocol.Writer
	opened  chan net.Conn // streams the relay opened, in order
	wg      sync.WaitGroup
}

// hostileOptions shape a hostileAgent.
type hostileOptions struct {
	// reply, when set, runs for each request on the relay's streams (in
	// a goroutine of its own); nil leaves those streams unread.
	reply func(st net.Conn, w *protocol.Writer, req protocol.Request)
	// window, when set, is the agent's receive window per stream
	// (yamux's MaxStreamWindowSize).
	window uint32
}

// answerEmpty answers every request with an empty object, as a fast agent
// would.
func answerEmpty(_ net.Conn, w *protocol.Writer, req protocol.Request) {
	_ = w.WriteFrame(protocol.TypeResponse, protocol.Response{ID: req.ID, Result: json.RawMessage(`{}`)})
}

// dialHostile connects user's hostile agent and completes the handshake.
func (s *system) dialHostile(t *testing.T, user string, o hostileOptions) *hostileAgent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Medium)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+s.Addr+protocol.ConnectPath, &websocket.DialOptions{
		HTTPHeader:      http.Header{"Authorization": []string{"Bearer " + s.Users[user].AgentToken}},
		Subprotocols:    []string{protocol.Subprotocol(protocol.ProtocolVersion)},
		CompressionMode: websocket.CompressionDisabled,
	})
	require.NoError(t, err)
	h := &hostileAgent{t: t, conn: transport.NewConn(context.Background(), ws), opened: make(chan net.Conn, 64)}
	h.gate = &frameGate{Conn: h.conn}
	cfg := transport.YamuxConfig(zap.NewNop())
	if o.window != 0 {
		cfg.MaxStreamWindowSize = o.window
	}
	h.sess, err = yamux.Client(h.gate, cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		h.sess.Close()
		_ = h.conn.CloseWith(int(websocket.StatusNormalClosure), "")
		h.wg.Wait()
	})
	h.control, err = h.sess.OpenStream()
	require.NoError(t, err)
	require.NoError(t, protocol.NewWriter(h.control).WriteFrame(protocol.TypeHello, protocol.Hello{
		ProtocolVersion: protocol.ProtocolVersion, AgentVersion: "hostile", Platform: "sim"}))
	_ = h.control.SetReadDeadline(time.Now().Add(testkit.Medium))
	typ, _, err := protocol.NewReader(h.control, 0).ReadFrame()
	require.NoError(t, err)
	require.Equal(t, protocol.TypeWelcome, typ)
	_ = h.control.SetReadDeadline(time.Time{})
	h.events = protocol.NewWriter(h.control)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		for {
			st, err := h.sess.AcceptStream()
			if err != nil {
				return
			}
			select {
			case h.opened <- st:
			default:
			}
			if o.reply != nil {
				h.wg.Add(1)
				go func() { defer h.wg.Done(); h.serve(st, o.reply) }()
			}
		}
	}()
	return h
}

// serve reads the requests of one relay stream and hands them to reply.
func (h *hostileAgent) serve(st net.Conn, reply func(net.Conn, *protocol.Writer, protocol.Request)) {
	fr := protocol.NewReader(st, 0)
	w := protocol.NewWriter(st)
	for {
		t, payload, err := fr.ReadFrame()
		if err != nil {
			return
		}
		var req protocol.Request
		if t != protocol.TypeRequest || protocol.Decode(payload, &req) != nil {
			continue
		}
		h.wg.Add(1)
		go func() { defer h.wg.Done(); reply(st, w, req) }()
	}
}

// rpcStream returns the first stream the relay opened: the shared rpc
// stream.
func (h *hostileAgent) rpcStream() net.Conn {
	h.t.Helper()
	select {
	case st := <-h.opened:
		return st
	case <-time.After(testkit.Medium):
		h.t.Fatal("the relay opened no rpc stream")
		return nil
	}
}

// inject writes raw yamux frames between the session's own.
func (h *hostileAgent) inject(frames ...[]byte) error {
	var b []byte
	for _, f := range frames {
		b = append(b, f...)
	}
	return h.gate.inject(b)
}

// waitClosed waits for the relay to end the tunnel and returns the close
// code and reason it sent; code is -1 when it did not within d.
func (h *hostileAgent) waitClosed(d time.Duration) (int, string) {
	select {
	case <-h.sess.CloseChan():
	case <-time.After(d):
		return -1, ""
	}
	// yamux may notice the end before the transport has recorded it.
	deadline := time.Now().Add(testkit.Medium)
	for h.conn.CloseStatus() == -1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	return h.conn.CloseStatus(), h.conn.CloseReason()
}

// yamuxFrame encodes a yamux frame header followed by body.
func yamuxFrame(typ uint8, flags uint16, id, length uint32, body []byte) []byte {
	b := make([]byte, 12, 12+len(body))
	b[1] = typ
	binary.BigEndian.PutUint16(b[2:4], flags)
	binary.BigEndian.PutUint32(b[4:8], id)
	binary.BigEndian.PutUint32(b[8:12], length)
	return append(b, body...)
}

// frameGate sits between yamux and the transport and keeps each frame of
// the session whole (a data header and its body), so that inject can put
// raw frames between them.
type frameGate struct {
	net.Conn
	mu   sync.Mutex
	body bool // a data header went out; its body is next (mu is held)
}

func (g *frameGate) Write(p []byte) (int, error) {
	if !g.body {
		g.mu.Lock()
	}
	n, err := g.Conn.Write(p)
	if !g.body && err == nil && len(p) == 12 && p[1] == 0 && binary.BigEndian.Uint32(p[8:12]) > 0 {
		g.body = true // hold the turn until the body
		return n, err
	}
	g.body = false
	g.mu.Unlock()
	return n, err
}

func (g *frameGate) inject(b []byte) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, err := g.Conn.Write(b)
	return err
}

// requireServed checks that alice, an honest user with her own agent, is
// answered within honestWithin.
func (s *system) requireServed(t *testing.T) {
	t.Helper()
	start := time.Now()
	r, err := s.Request("GET", "/v1/api/accounts", s.Users["alice"].APIToken, "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Less(t, time.Since(start), honestWithin, "an honest user waited during the attack")
}

// honest runs alice's calls in the background for the length of a test
// and checks, at the end, that each was answered in time.
type honest struct {
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	slowest time.Duration
	calls   int
	err     error
}

func (s *system) honestDuring(t *testing.T) *honest {
	h := &honest{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		for {
			start := time.Now()
			r, err := s.Request("GET", "/v1/api/accounts", s.Users["alice"].APIToken, "")
			took := time.Since(start)
			if err == nil && r.Status != http.StatusOK {
				err = fmt.Errorf("alice got %d: %s", r.Status, r.Raw)
			}
			h.mu.Lock()
			h.slowest = max(h.slowest, took)
			h.calls++
			if err != nil && h.err == nil {
				h.err = err
			}
			h.mu.Unlock()
			select {
			case <-h.stop:
				return
			case <-time.After(honestEvery):
			}
		}
	}()
	t.Cleanup(func() { h.finish() })
	return h
}

func (h *honest) finish() {
	select {
	case <-h.stop:
	default:
		close(h.stop)
	}
	<-h.done
}

// check stops the calls and requires that all were answered in time.
func (h *honest) check(t *testing.T) {
	t.Helper()
	h.finish()
	h.mu.Lock()
	defer h.mu.Unlock()
	require.NoError(t, h.err)
	require.Positive(t, h.calls)
	require.Less(t, h.slowest, honestWithin, "an honest user waited during the attack")
}

// liveHeap is the heap in use by live objects, after a collection.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// warnings counts the relay's log entries at warn level or above about
// user's tunnels.
func (s *system) warnings(user string) int {
	n := 0
	for _, e := range s.Logs.All() {
		if e.Level >= zapcore.WarnLevel && e.ContextMap()["user"] == s.Users[user].UserID {
			n++
		}
	}
	return n
}

// An agent may open one stream, the control stream. Opening more is a
// protocol error that ends its tunnel before anything of the new stream
// is buffered: 3,000 streams of 256 KiB each once took the relay's heap
// from 21 MB to 1.8 GB. Not parallel: it measures the heap.
func TestHostileAgentOpensStreams(t *testing.T) {
	s := newSystem(t)
	s.StartAgent("alice")
	s.requireServed(t)
	before := liveHeap()

	h := s.dialHostile(t, "bob", hostileOptions{reply: answerEmpty})
	alice := s.honestDuring(t)
	const streams, size = 3000, 256 << 10
	data := make([]byte, size)
	start := time.Now()
	sent := 0 // streams opened and filled before the relay closed the tunnel
	for ; sent < streams; sent++ {
		st, err := h.sess.OpenStream()
		if err != nil {
			break
		}
		if _, err := st.Write(data); err != nil {
			break
		}
	}
	grown := liveHeap() - before
	code, reason := h.waitClosed(attackEnds)
	t.Logf("%d streams of %d KiB sent in %v; relay heap grew %d MiB; closed %d %q", sent, size>>10, time.Since(start), grown>>20, code, reason)

	require.Equal(t, protocol.CloseProtocolError, code, "the relay ends the tunnel with a protocol error")
	require.Contains(t, reason, "stream")
	require.Less(t, time.Since(start), attackEnds)
	require.Less(t, grown, hub.Options{}.TunnelMemoryBound()+heapSlack, "the relay's heap stays within the tunnel bound")
	require.LessOrEqual(t, s.warnings("bob"), 1, "the violation is logged once, not once per stream")
	alice.check(t)
	s.requireServed(t)
}

// A flood of events, each about the largest frame the control stream
// takes, costs the relay no more than the control stream's share of the
// tunnel's bound: quotes of 60 KB with made-up instruments once kept about
// 100 MB alive in the stream server's quote cache (1,024 contracts of
// them; the brief's 4,000 events in 10 s reached 290 MB of heap, garbage
// included). Not parallel: it measures the heap.
func TestHostileAgentFloodsEvents(t *testing.T) {
	s := newSystemWith(t, func(o *relay.Options) {
		// As fast as the relay reads: the flood measures memory, not the
		// event budget.
		o.Hub.EventBytesPerSecond = 1 << 30
	})
	s.StartAgent("alice")
	h := s.dialHostile(t, "bob", hostileOptions{reply: answerEmpty})
	wb := s.openStream(t, "bob") // bob's sockets make the relay keep his quotes
	require.Equal(t, true, wb.next("status")["agentConnected"])
	s.requireServed(t)
	before := liveHeap()

	alice := s.honestDuring(t)
	const events, size = 1500, 60_000 // more contracts than the cache keeps
	pad := strings.Repeat("A", size/2)
	start := time.Now()
	var frame []byte
	for i := range events {
		// Encoded by hand: the attacker's JSON encoder would be the
		// slowest part of the test.
		payload := fmt.Appendf(nil, `{"seq":%d,"kind":"quote","data":{"instrument":"X%d%s","bid":1,"ask":2,"last":1.5,"quoteTimeUtc":"%s"}}`, i+1, i, pad, pad)
		frame, _ = protocol.AppendFrame(frame[:0], protocol.TypeEvent, payload)
		_, err := h.control.Write(frame)
		require.NoError(t, err)
	}
	time.Sleep(200 * time.Millisecond) // the last window's worth of events
	grown := liveHeap() - before
	t.Logf("%d events of %d KB in %v; relay heap grew %d MiB", events, size/1000, time.Since(start), grown>>20)

	require.Less(t, grown, int64(eventFloodBound+heapSlack), "the relay's heap stays within the control stream's bound")
	code, _ := h.waitClosed(0)
	require.Equal(t, -1, code, "quotes the relay cannot use are dropped; the tunnel stays")
	alice.check(t)
}

// eventFloodBound is what a flood of events can make the relay hold: the
// control stream's share of the tunnel bound (its yamux buffer, frame
// reader and decoded event) and the user's quote cache (docs/_h1.md).
const eventFloodBound = 2*transport.StreamWindow + 3*(64<<10) + 1024*(1<<10+64)

// An agent that stops reading: the relay's calls must still end by their
// deadline. The agent takes back the window it granted on the rpc stream
// (yamux adds window updates modulo 2^32), as if it had stopped reading
// after a full window, so the relay's first request cannot be sent. Each
// call fails by its deadline with nothing written, and the tunnel stays:
// an honest agent that is merely saturated keeps its running calls.
func TestHostileAgentStopsReading(t *testing.T) {
	t.Parallel()
	const callTimeout = time.Second
	s := newSystemWith(t, func(o *relay.Options) { o.Stream.CallTimeout = callTimeout })
	s.StartAgent("alice")
	h := s.dialHostile(t, "bob", hostileOptions{window: 256 << 10})
	rpc := h.rpcStream()
	require.NoError(t, h.inject(yamuxFrame(1, 0, rpc.(*yamux.Stream).StreamID(), 1<<32-256<<10, nil)))
	alice := s.honestDuring(t)

	wb := s.openStream(t, "bob")
	wb.next("status")
	const calls = 5
	start := time.Now()
	for i := range calls {
		wb.send(fmt.Sprintf(`{"action":"rpc","id":"c%d","api":"ListAccounts","args":{}}`, i))
	}
	for range calls {
		r := wb.reply()
		require.Equal(t, "deadline_exceeded", r["error"], r)
	}
	took := time.Since(start)
	require.Less(t, took, callTimeout+2*time.Second, "every call ended by its deadline")

	code, _ := h.waitClosed(0)
	require.Equal(t, -1, code, "nothing was written, so the tunnel stays")
	alice.check(t)
}

// A reply that starts and never finishes: a frame header announcing the
// largest frame, then one byte every 100 ms. Heartbeats pass, but the
// frame must arrive within the frame timeout, else the tunnel ends.
func TestHostileAgentDripsAReply(t *testing.T) {
	t.Parallel()
	const frameTimeout = time.Second
	s := newSystemWith(t, func(o *relay.Options) { o.Hub.FrameTimeout = frameTimeout })
	s.StartAgent("alice")
	dripStarted := make(chan time.Time, 1)
	h := s.dialHostile(t, "bob", hostileOptions{reply: func(st net.Conn, _ *protocol.Writer, req protocol.Request) {
		var hdr [protocol.HeaderSize]byte
		binary.BigEndian.PutUint32(hdr[:4], protocol.MaxFrameSize)
		hdr[4] = byte(protocol.TypeResponse)
		if _, err := st.Write(hdr[:]); err != nil {
			return
		}
		select {
		case dripStarted <- time.Now():
		default:
		}
		for {
			time.Sleep(100 * time.Millisecond)
			if _, err := st.Write([]byte{' '}); err != nil {
				return
			}
		}
	}})
	alice := s.honestDuring(t)

	errc := make(chan response, 1)
	go func() { errc <- s.DoAsync("GET", "/v1/api/accounts", s.Users["bob"].APIToken, "") }()
	var started time.Time
	select {
	case started = <-dripStarted:
	case <-time.After(attackEnds):
		t.Fatal("the relay sent no request")
	}
	code, reason := h.waitClosed(frameTimeout + attackEnds)
	took := time.Since(started)
	require.Equal(t, protocol.CloseProtocolError, code)
	require.Contains(t, reason, "frame")
	require.GreaterOrEqual(t, took, frameTimeout-100*time.Millisecond, "the frame had its time")
	require.Less(t, took, frameTimeout+2*time.Second)
	r := <-errc
	require.Equal(t, http.StatusRequestTimeout, r.Status, string(r.Raw))
	require.Equal(t, "addon_disconnected", r.Error)
	alice.check(t)
}

// A flood of pings: each costs yamux a goroutine until its answer is
// written, so a peer that pings without reading would pile them up.
func TestHostileAgentFloodsPings(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.StartAgent("alice")
	h := s.dialHostile(t, "bob", hostileOptions{reply: answerEmpty})
	alice := s.honestDuring(t)
	var pings []byte
	for i := range 10_000 {
		pings = append(pings, yamuxFrame(2, 1, 0, uint32(i), nil)...)
	}
	start := time.Now()
	require.NoError(t, h.inject(pings))
	code, reason := h.waitClosed(attackEnds)
	require.Equal(t, protocol.CloseProtocolError, code)
	require.Contains(t, reason, "ping")
	require.Less(t, time.Since(start), attackEnds)
	alice.check(t)
}

// Oversized and malformed frames end the attacker's tunnel with the code
// that says why, and nobody else's.
func TestHostileAgentSendsBadFrames(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.StartAgent("alice")
	alice := s.honestDuring(t)
	for _, tc := range []struct {
		name   string
		attack func(h *hostileAgent) error
		code   int
	}{
		{"oversized event", func(h *hostileAgent) error {
			_, err := h.control.Write([]byte{0x01, 0, 0, 0, byte(protocol.TypeEvent)})
			return err
		}, protocol.CloseFrameTooLarge},
		{"malformed event", func(h *hostileAgent) error {
			_, err := h.control.Write(append([]byte{0, 0, 0, 3, byte(protocol.TypeEvent)}, "{x}"...))
			return err
		}, protocol.CloseProtocolError},
		{"reply on the control stream", func(h *hostileAgent) error {
			return h.events.WriteFrame(protocol.TypeResponse, protocol.Response{ID: 1, Result: json.RawMessage(`{}`)})
		}, protocol.CloseProtocolError},
		{"unknown frame type on the rpc stream", func(h *hostileAgent) error {
			_, err := h.rpcStream().Write([]byte{0, 0, 0, 2, 99, '{', '}'})
			return err
		}, protocol.CloseProtocolError},
		{"oversized reply", func(h *hostileAgent) error {
			_, err := h.rpcStream().Write([]byte{0x7f, 0, 0, 0, byte(protocol.TypeResponse)})
			return err
		}, protocol.CloseFrameTooLarge},
		{"not yamux", func(h *hostileAgent) error {
			return h.inject([]byte("GET / HTTP/1.1\r\n\r\n"))
		}, protocol.CloseProtocolError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := s.dialHostile(t, "bob", hostileOptions{})
			if err := tc.attack(h); err != nil && !errors.Is(err, yamux.ErrSessionShutdown) {
				require.NoError(t, err)
			}
			code, _ := h.waitClosed(attackEnds)
			require.Equal(t, tc.code, code)
		})
	}
	alice.check(t)
}

// An agent that answers a write without the ids it always carries
// (PlaceOrder without orderId, CancelAndBracket without orderIds, a write
// answered with something other than an object) is answered 500
// internal_error, as a read's record of the wrong shape is, and a keyed
// write's malformed answer is never recorded: its retry asks the agent
// again instead of replaying a success nobody can act on.
func TestHostileAgentAnswersWritesWithoutIDs(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	var mu sync.Mutex
	asked := map[string]int{} // request ids of the writes, by fn
	good := false             // answer properly from now on
	h := s.dialHostile(t, "bob", hostileOptions{reply: func(_ net.Conn, w *protocol.Writer, req protocol.Request) {
		mu.Lock()
		asked[req.Fn]++
		ok := good
		mu.Unlock()
		result := json.RawMessage(`{"status":"Working"}`)
		switch {
		case ok:
			result = json.RawMessage(`{"orderId":"o-1","order":{"orderId":"o-1"}}`)
		case req.Fn == protocol.FnCancelAndBracket:
			result = json.RawMessage(`{"placed":true,"orderIds":[]}`)
		case req.Fn == protocol.FnCancelOrder:
			result = json.RawMessage(`["o-1"]`)
		}
		_ = w.WriteFrame(protocol.TypeResponse, protocol.Response{ID: req.ID, Result: result})
	}})
	_ = h
	tok := s.Users["bob"].APIToken
	const place = `{"action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day"}`
	for _, tc := range []struct {
		name, path, body string
		header           []string
	}{
		{"PlaceOrder, keyed", "/v1/api/accounts/Sim101/orders/place", place, []string{"Idempotency-Key", "k-1"}},
		{"PlaceOrder, keyed by orderId", "/v1/api/accounts/Sim101/orders/place", strings.Replace(place, `{`, `{"orderId":"mine-1",`, 1), nil},
		{"PlaceOrder", "/v1/api/accounts/Sim101/orders/place", place, nil},
		{"CancelAndBracket", "/v1/api/accounts/Sim101/orders/cancel_and_bracket", `{"instrument":"ES","action":"Buy","quantity":1,"stopLoss":5990}`, nil},
		{"CancelOrder", "/v1/api/accounts/Sim101/orders/o-1/cancel", "", nil},
	} {
		r := s.Do("POST", tc.path, tok, tc.body, tc.header...)
		require.Equal(t, http.StatusInternalServerError, r.Status, "%s: %s", tc.name, r.Raw)
		require.Equal(t, "internal_error", r.Error, tc.name)
		require.Contains(t, r.Detail, "may have run", tc.name)
	}
	// The TradingView webhook's write is checked as the routes' are: its
	// result is failed, never executed without an order.
	wh := s.webhookOf("bob")
	wr := wh.send(placeES)
	require.Equal(t, http.StatusInternalServerError, wr.Status, "%s", wr.Raw)
	require.Equal(t, "internal_error", wr.Error)
	require.Contains(t, wr.Detail, "may have run")
	require.Equal(t, store.WebhookFailed, wh.waitStatus(wh.answer(wr).AlertID, store.WebhookFailed).Status)
	mu.Lock()
	before := asked[protocol.FnPlaceOrder]
	good = true
	mu.Unlock()
	for _, header := range [][]string{{"Idempotency-Key", "k-1"}, nil} {
		body := place
		if header == nil {
			body = strings.Replace(place, `{`, `{"orderId":"mine-1",`, 1)
		}
		r := s.Do("POST", "/v1/api/accounts/Sim101/orders/place", tok, body, header...)
		require.Equal(t, http.StatusOK, r.Status, "the retry asks the agent again: %s", r.Raw)
		require.Empty(t, r.Header.Get("Idempotent-Replayed"), "nothing was recorded to replay")
		require.Equal(t, "o-1", r.OrderID)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, before+2, asked[protocol.FnPlaceOrder], "each retry reached the agent")
}
