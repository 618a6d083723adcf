package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/yamux"
	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/auth"
	"tradebridge/relay/events"
	"tradebridge/transport"
)

// Tunnel tunables that are not options.
const (
	// controlMaxFrame is the largest frame the control stream takes
	// (Hello and events).
	controlMaxFrame = 64 << 10
	// readerBuffer is the read buffer of the relay's frame readers: small,
	// because yamux buffers what arrives already, and every idle tunnel
	// holds two (its control and rpc streams').
	readerBuffer = 1 << 10
	// cancelTimeout bounds the write of a Cancel frame: one that cannot
	// be sent in time is dropped (the agent's own deadline ends the call).
	cancelTimeout = time.Second
	// Agents ping every transport.KeepAliveInterval; a burst of
	// agentPingBurst, then one per agentPingInterval, is far more than
	// an honest agent sends.
	agentPingBurst    = 10
	agentPingInterval = time.Second
	// cancelQueue is how many Cancel frames may wait to be sent per
	// stream; more are dropped (the agent's own deadline ends those
	// calls).
	cancelQueue = 32
)

// agentConn is one live tunnel.
type agentConn struct {
	hub         *Hub
	log         *zap.Logger
	userID      string
	token       string // to re-verify; never logged
	sessionID   string
	connectedAt time.Time
	remoteAddr  string

	// helloMu guards hello, whose Connections EventConnections replaces,
	// and the latest diagnostics (EventDiagnostics) and their time.
	helloMu sync.Mutex
	hello   protocol.Hello
	diag    *protocol.Diagnostics
	diagAt  time.Time

	// started is closed once the session's start is reported (after its
	// Welcome): its diagnostics are reported only after it.
	started chan struct{}
	// diagReported is when diagnostics were last published as a history
	// entry (only the events goroutine touches it).
	diagReported time.Time

	conn *transport.Conn
	sess *yamux.Session
	rpc  *rpcStream

	// ready is closed once Options.Prepare is over: Call waits for it.
	ready chan struct{}
	// applied is the highest configuration version the agent
	// acknowledged on this tunnel (Info.ConfigApplied).
	applied atomic.Int64

	closeOnce sync.Once
	done      chan struct{} // closed when the tunnel is finished
	// why, closeCode and closeText are the first close's: the history's
	// reason (when its closer named one), the code and the reason sent.
	// Set once by closeOnce.
	why       string
	closeCode int
	closeText string

	// streamCalls holds a token per stream of its own (GetBars) open,
	// until the agent has closed its end too.
	streamCalls chan struct{}
	// mu guards ending, readers and stopped; wg counts the goroutines
	// that finish streams of their own, which serveTunnel waits for once
	// ending is set.
	mu      sync.Mutex
	ending  bool
	wg      sync.WaitGroup
	readers map[*readStream]struct{} // the streams the relay reads
	stopped bool                     // stopReads ran: reads end at once
}

// serveTunnel runs an upgraded tunnel until it ends. It owns every goroutine
// of the tunnel and returns only after they exit. Its goroutine reads the
// agent's events while the tunnel lives: what it does besides is in
// methods of their own, so that the stack an idle tunnel holds stays small.
func (h *Hub) serveTunnel(ws *websocket.Conn, p auth.Principal, token string, version int, remoteAddr string) {
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	c := h.newAgentConn(ctx, ws, p, token, remoteAddr)
	defer c.close(int(websocket.StatusNormalClosure), "")

	sess, err := yamux.Server(c.conn, transport.YamuxConfig(c.log))
	if err != nil {
		c.log.Error("starting yamux", zap.Error(err))
		return
	}
	c.sess = sess

	control, err := c.handshake(version)
	if err != nil {
		c.handshakeFailed(err, version)
		return
	}
	defer control.Close()

	rpcStream, err := sess.OpenStream()
	if err != nil {
		c.log.Info("opening rpc stream", zap.Error(err))
		c.closeAs(agentcall.ReasonConnectionLost, int(websocket.StatusNormalClosure), "")
		c.reportRefused(version)
		return
	}
	c.rpc = newRPCStream(c, rpcStream, true)
	c.connectedAt = time.Now()

	c.rpc.start()
	defer c.rpc.wait()

	started := c.begin(control, version)
	if started {
		// This goroutine reads the agent's events until the control
		// stream ends: an idle tunnel holds as few goroutines (and
		// stacks) as it can.
		c.readEvents(control)
		select {
		case <-sess.CloseChan():
		case <-c.done:
		default:
			// The agent closed its control stream alone.
			c.close(int(websocket.StatusNormalClosure), "")
		}
	}
	select {
	case <-sess.CloseChan():
		c.sessionClosed()
	case <-c.done:
	}
	c.end(started, version)
}

// newAgentConn returns the tunnel of an upgraded WebSocket, its
// transport's close and Guard set.
func (h *Hub) newAgentConn(ctx context.Context, ws *websocket.Conn, p auth.Principal, token, remoteAddr string) *agentConn {
	c := &agentConn{
		hub:        h,
		userID:     p.UserID,
		token:      token,
		sessionID:  newSessionID(),
		remoteAddr: remoteAddr,
		conn:       transport.NewConn(ctx, ws),
		done:       make(chan struct{}),
		started:    make(chan struct{}),
		ready:      make(chan struct{}),

		streamCalls: make(chan struct{}, h.opts.MaxStreamCalls),
	}
	c.log = h.log.With(zap.String("user", p.UserID), zap.String("session", c.sessionID))
	// Every deliberate close goes through c.close with its own code; yamux
	// closes the connection by itself only on bytes that are not yamux or a
	// missed keepalive.
	c.conn.SetDefaultClose(protocol.CloseProtocolError, "tunnel protocol error or keepalive timeout")
	// The agent opens one stream, the control stream; yamux never sees
	// the SYN of another, so it buffers nothing for it.
	c.conn.SetGuard(transport.Guard{MaxPeerStreams: 1, PingBurst: agentPingBurst, PingInterval: agentPingInterval})
	c.conn.SetOnClose(c.stopReads)
	return c
}

// pastDeadline is the read deadline of a stream whose reads must end.
var pastDeadline = time.Unix(1, 0)

// readStream is a yamux stream the relay reads. Once stopped, its reads
// end at once (yamux.ErrTimeout), whatever deadline its reader sets.
//
// When a yamux session ends, a read that waits on one of its streams
// spins on the CPU until the session has closed its connection
// (hashicorp/yamux v0.1.2, Stream.Read), which the WebSocket's close
// handshake may make last seconds; thousands of tunnels ending at once
// (a relay's shutdown, or an overloaded machine's missed keepalives) would
// spin as many goroutines. The transport's Close, which yamux calls
// first, stops the tunnel's reads (stopReads).
type readStream struct {
	*yamux.Stream
	mu      sync.Mutex
	stopped bool
}

// SetReadDeadline sets the stream's read deadline, in the past once the
// stream is stopped.
func (s *readStream) SetReadDeadline(t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		t = pastDeadline
	}
	return s.Stream.SetReadDeadline(t)
}

func (s *readStream) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	_ = s.Stream.SetReadDeadline(pastDeadline)
}

// track returns s as a stream the relay reads, stopped already when the
// tunnel's reads are.
func (c *agentConn) track(s *yamux.Stream) *readStream {
	rs := &readStream{Stream: s}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		rs.stop()
		return rs
	}
	if c.readers == nil {
		c.readers = make(map[*readStream]struct{})
	}
	c.readers[rs] = struct{}{}
	return rs
}

// untrack forgets a stream the relay no longer reads.
func (c *agentConn) untrack(rs *readStream) {
	c.mu.Lock()
	delete(c.readers, rs)
	c.mu.Unlock()
}

// stopReads ends every read of the tunnel's streams, now and later: the
// session is ending.
func (c *agentConn) stopReads() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	for rs := range c.readers {
		rs.stop()
	}
}

// readsStopped reports whether stopReads ran: a read that fails then
// fails because the session ended.
func (c *agentConn) readsStopped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopped
}

// handshakeFailed closes a tunnel whose handshake failed with err, with
// the code that says why, and reports the refusal.
func (c *agentConn) handshakeFailed(err error, version int) {
	var ce *closeError
	if gerr := c.conn.GuardErr(); gerr != nil {
		c.log.Warn("agent broke the tunnel's rules; closing tunnel", zap.Error(gerr))
		c.close(protocol.CloseProtocolError, guardReason(gerr))
	} else if errors.As(err, &ce) {
		c.log.Info("handshake refused", zap.String("reason", protocol.CloseReason(ce.code)), zap.Error(ce.err))
		c.close(ce.code, ce.reason)
	} else {
		// yamux gave up on the connection (bytes that are not yamux,
		// or the agent went away); it may not have closed it yet.
		c.log.Info("handshake failed", zap.Error(err))
		why := ""
		if c.conn.CloseStatus() >= 0 {
			why = agentcall.ReasonAgentClosed
		}
		c.closeAs(why, protocol.CloseProtocolError, "tunnel protocol error")
	}
	c.reportRefused(version)
}

// begin registers the tunnel, writes the Welcome and reports the
// session's start. It reports whether the session started; if not, the
// tunnel is closed.
func (c *agentConn) begin(control net.Conn, version int) bool {
	if err := c.hub.register(c); err != nil {
		c.close(protocol.CloseShuttingDown, "relay shutting down")
		return false
	}
	if err := c.welcome(control, version); err != nil {
		c.log.Info("handshake failed", zap.Error(err))
		c.close(protocol.CloseProtocolError, "tunnel protocol error")
		return false
	}
	hello := c.helloNow()
	c.log.Info("agent connected",
		zap.String("agentVersion", hello.AgentVersion),
		zap.String("platform", hello.Platform),
		zap.Int("connections", len(hello.Connections)))
	c.hub.report(agentcall.SessionEvent{Kind: agentcall.SessionStarted, UserID: c.userID, SessionID: c.sessionID, At: c.connectedAt,
		AgentVersion: hello.AgentVersion, ProtocolVersion: version, Platform: hello.Platform, RemoteAddr: c.remoteAddr})
	close(c.started)
	c.prepare()
	return true
}

// prepare runs Options.Prepare on a goroutine of the tunnel, and lets the
// other calls through (closes ready) once it is over.
func (c *agentConn) prepare() {
	h := c.hub
	if h.opts.Prepare == nil || !c.hold() {
		close(c.ready)
		return
	}
	go func() {
		defer c.wg.Done()
		defer close(c.ready)
		ctx, cancel := context.WithTimeout(h.ctx, h.opts.PrepareTimeout)
		defer cancel()
		h.opts.Prepare(ctx, c.userID, c.info(), func(ctx context.Context, fn string, args json.RawMessage) (json.RawMessage, error) {
			return c.call(ctx, protocol.Request{Fn: fn, Args: args})
		})
	}()
}

// info returns what Info tells of the tunnel.
func (c *agentConn) info() agentcall.Info {
	info := agentcall.Info{SessionID: c.sessionID, ConnectedAt: c.connectedAt, RemoteAddr: c.remoteAddr,
		ConfigApplied: c.applied.Load()}
	c.helloMu.Lock()
	info.Hello, info.Diagnostics, info.DiagnosticsAt = c.hello, c.diag, c.diagAt
	c.helloMu.Unlock()
	return info
}

// call sends req on the tunnel and waits for its answer; it notes the
// configuration version an FnApplyConfig answer acknowledges.
func (c *agentConn) call(ctx context.Context, req protocol.Request) (json.RawMessage, error) {
	var res json.RawMessage
	var err error
	if dedicatedStream(req.Fn) {
		res, err = c.callOnOwnStream(ctx, req)
	} else {
		res, err = c.rpc.call(ctx, req)
	}
	if err == nil && req.Fn == protocol.FnApplyConfig {
		var ack protocol.ConfigApplied
		if json.Unmarshal(res, &ack) == nil {
			for {
				cur := c.applied.Load()
				if ack.Version <= cur || c.applied.CompareAndSwap(cur, ack.Version) {
					break
				}
			}
		}
	}
	return res, err
}

// sessionClosed closes the tunnel after yamux ended the session on its
// own (the agent went away, sent bytes that are not yamux, broke the
// transport's Guard, or stopped answering pings). The transport sends the
// same code and reason when yamux gets there first.
func (c *agentConn) sessionClosed() {
	if gerr := c.conn.GuardErr(); gerr != nil {
		c.log.Warn("agent broke the tunnel's rules; closing tunnel", zap.Error(gerr))
		c.close(protocol.CloseProtocolError, guardReason(gerr))
	} else if c.conn.CloseStatus() == -1 {
		c.closeAs(agentcall.ReasonConnectionLost, protocol.CloseProtocolError, "tunnel protocol error or keepalive timeout")
	}
}

// end unregisters the closed tunnel, waits for its streams of their own,
// and reports the session's end (or, when it never started, the refusal).
func (c *agentConn) end(started bool, version int) {
	c.hub.unregister(c)
	c.close(int(websocket.StatusNormalClosure), "")
	c.sess.Close()
	c.mu.Lock()
	c.ending = true
	c.mu.Unlock()
	c.wg.Wait()
	reason := c.endReason()
	c.log.Info("agent disconnected", zap.Int("closeStatus", c.conn.CloseStatus()), zap.String("reason", reason))
	if started {
		c.hub.report(agentcall.SessionEvent{Kind: agentcall.SessionEnded, UserID: c.userID, SessionID: c.sessionID, At: time.Now(), Reason: reason})
	} else {
		c.reportRefused(version)
	}
}

// reportRefused reports a tunnel that ended before its session started,
// with what its Hello said if it was read.
func (c *agentConn) reportRefused(version int) {
	hello := c.helloNow()
	if hello.ProtocolVersion != 0 {
		version = hello.ProtocolVersion
	}
	c.hub.report(agentcall.SessionEvent{Kind: agentcall.SessionRefused, UserID: c.userID, At: time.Now(), Reason: c.endReason(),
		AgentVersion: hello.AgentVersion, ProtocolVersion: version, Platform: hello.Platform, RemoteAddr: c.remoteAddr})
}

// closeError is a handshake failure with the close code to send.
type closeError struct {
	code   int
	reason string
	err    error
}

func (e *closeError) Error() string { return e.reason + ": " + e.err.Error() }

// handshake waits for the agent's first stream and its Hello, and answers
// Welcome. It returns the control stream, which then carries events.
func (c *agentConn) handshake(version int) (net.Conn, error) {
	timeout := c.hub.opts.HandshakeTimeout
	type accepted struct {
		s   net.Conn
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		s, err := c.sess.AcceptStream()
		ch <- accepted{s, err}
	}()
	var control net.Conn
	select {
	case a := <-ch:
		if a.err != nil {
			return nil, fmt.Errorf("accepting control stream: %w", a.err)
		}
		control = c.track(a.s.(*yamux.Stream))
	case <-time.After(timeout):
		// close sends the code before it ends the session, which ends
		// AcceptStream.
		c.close(protocol.CloseBadHandshake, "no hello in time")
		if a := <-ch; a.err == nil {
			a.s.Close()
		}
		return nil, &closeError{protocol.CloseBadHandshake, "no hello in time", errors.New("timeout")}
	}
	_ = control.SetReadDeadline(time.Now().Add(timeout))
	fr := protocol.NewReaderSize(control, controlMaxFrame, readerBuffer)
	t, payload, err := fr.ReadFrame()
	if err != nil {
		control.Close()
		return nil, &closeError{protocol.CloseBadHandshake, "bad hello", err}
	}
	var hello protocol.Hello
	if t != protocol.TypeHello {
		control.Close()
		return nil, &closeError{protocol.CloseBadHandshake, "first frame must be hello", fmt.Errorf("got %s", t)}
	}
	if err := protocol.Decode(payload, &hello); err != nil {
		control.Close()
		return nil, &closeError{protocol.CloseBadHandshake, "bad hello", err}
	}
	c.hello = hello // for the history, also of a refusal
	if hello.ProtocolVersion != version {
		control.Close()
		return nil, &closeError{protocol.CloseVersionUnsupported, "hello version differs from negotiated subprotocol",
			fmt.Errorf("hello %d, subprotocol %d", hello.ProtocolVersion, version)}
	}
	_ = control.SetReadDeadline(time.Time{})
	fr.SetFrameTimeout(c.hub.opts.FrameTimeout)
	c.hello = hello
	fc := &framedConn{Conn: control, r: fr, s: control.(*readStream).Stream}
	fc.s.Shrink() // the Hello's buffer
	return fc, nil
}

// guardReason is the close reason of a Guard violation: the one the
// transport sends when yamux closes the connection first.
func guardReason(err error) string {
	var ge *transport.GuardError
	if errors.As(err, &ge) {
		return ge.Reason()
	}
	return "tunnel protocol error"
}

// welcome completes the handshake. It is sent only once the tunnel is
// registered, so an agent that has read Welcome can be called at once.
func (c *agentConn) welcome(control net.Conn, version int) error {
	w := protocol.NewWriter(control)
	// ServerTime is read as late as possible: the agent estimates its
	// clock's skew from it.
	welcome := protocol.Welcome{ProtocolVersion: version, SessionID: c.sessionID, ServerTime: time.Now().UnixMilli()}
	if err := w.WriteFrame(protocol.TypeWelcome, welcome); err != nil {
		return fmt.Errorf("writing welcome: %w", err)
	}
	return nil
}

// framedConn keeps the frame reader (and its buffered bytes) of a stream.
type framedConn struct {
	net.Conn
	r *protocol.Reader
	s *yamux.Stream
}

// The goroutines that read the tunnel's streams wait in ReadFrame most of
// their lives, and the runtime keeps a waiting goroutine's stack at four
// times what it uses at least: their loops call ReadFrame from a frame as
// small as they can and handle what it returns in a method of its own
// (event, response). Each handled frame lets the stream's yamux receive
// buffer go (yamux.Stream.Shrink) once it is empty: yamux would keep it,
// as large as the most the agent ever sent unread, for the stream's life.

// readEvents reads the agent's events from the control stream until it
// ends or the tunnel closes. A malformed frame ends the tunnel; an agent
// that sends faster than Options.EventBytesPerSecond is read more slowly.
// The end of the stream or of the session is left to the caller, which
// tells them apart.
func (c *agentConn) readEvents(control net.Conn) {
	fc := control.(*framedConn)
	pace := &eventPacer{bytes: newPacer(c.hub.opts.EventBytesPerSecond), count: newPacer(c.hub.opts.EventsPerSecond)}
	for {
		t, payload, err := fc.r.ReadFrame()
		if !c.event(fc, pace, t, payload, err) {
			return
		}
	}
}

// event handles what one ReadFrame of the control stream returned, and
// reports whether to read on.
func (c *agentConn) event(fc *framedConn, pace *eventPacer, t protocol.Type, payload []byte, err error) bool {
	if err != nil {
		if protocolFault(err) {
			c.failProtocol(err)
		}
		return false
	}
	defer fc.s.Shrink()
	if !pace.take(len(payload)+EventOverhead, c.done) {
		return false
	}
	if t != protocol.TypeEvent {
		c.close(protocol.CloseProtocolError, "unexpected frame on control stream")
		return false
	}
	var ev protocol.Event
	if err := protocol.Decode(payload, &ev); err != nil {
		c.close(protocol.CloseProtocolError, "malformed event")
		return false
	}
	if ev.Kind == protocol.EventDiagnostics {
		return c.diagnostics(ev.Data)
	}
	if ev.Kind == protocol.EventConnections {
		var conns []protocol.Connection
		if err := json.Unmarshal(ev.Data, &conns); err != nil {
			c.close(protocol.CloseProtocolError, "malformed event")
			return false
		}
		c.setConnections(conns)
	}
	c.hub.publish(events.Agent(c.userID, ev))
	return true
}

// diagnostics takes an EventDiagnostics: the tunnel keeps the latest, and
// the spine learns it once the session's start is reported. Its size is
// the control stream's frame bound (64 KiB); data that is not a
// protocol.Diagnostics ends the tunnel as any malformed event does. It
// reports false when the tunnel is ending.
func (c *agentConn) diagnostics(data json.RawMessage) bool {
	var d protocol.Diagnostics
	if err := json.Unmarshal(data, &d); err != nil {
		c.close(protocol.CloseProtocolError, "malformed event")
		return false
	}
	at := time.Now()
	enc, err := c.setDiagnostics(&d, at)
	if err != nil {
		c.close(protocol.CloseProtocolError, "malformed event")
		return false
	}
	// An agent sends events only after the Welcome; one that does not
	// wait for it waits here.
	select {
	case <-c.started:
	case <-c.done:
		return false
	}
	// The tunnel keeps every one (Info); the history takes at most one
	// per DiagnosticsHistoryEvery, so that an agent's flood of them
	// costs the store and the other users' history entries nothing.
	if !c.diagReported.IsZero() && at.Sub(c.diagReported) < c.hub.opts.DiagnosticsHistoryEvery {
		return true
	}
	c.diagReported = at
	c.hub.report(agentcall.SessionEvent{Kind: agentcall.SessionDiagnostics, UserID: c.userID, SessionID: c.sessionID, At: at, Diagnostics: enc})
	return true
}

// setConnections records the platform's connections as the agent last
// reported them.
func (c *agentConn) setConnections(conns []protocol.Connection) {
	if conns == nil {
		conns = []protocol.Connection{}
	}
	c.helloMu.Lock()
	c.hello.Connections = conns
	c.helloMu.Unlock()
}

// helloNow returns the agent's Hello with the connections it reported
// last.
func (c *agentConn) helloNow() protocol.Hello {
	c.helloMu.Lock()
	defer c.helloMu.Unlock()
	return c.hello
}

// eventPacer paces a tunnel's events by bytes and by count.
type eventPacer struct{ bytes, count *pacer }

// take charges one event of n bytes and waits while either budget is
// overdrawn. It returns false if done closed meanwhile.
func (p *eventPacer) take(n int, done <-chan struct{}) bool {
	return p.count.take(1, done) && p.bytes.take(n, done)
}

// pacer is a budget (of bytes, or of events) that makes its reader wait: take returns once
// the budget has room again.
type pacer struct {
	rate  float64 // bytes per second, and the burst
	debt  float64 // bytes taken beyond the budget (negative: room)
	since time.Time
}

func newPacer(bytesPerSecond int) *pacer {
	return &pacer{rate: float64(bytesPerSecond), debt: -float64(bytesPerSecond), since: time.Now()}
}

// take charges n bytes and waits while the budget is overdrawn. It
// returns false if done closed meanwhile.
func (p *pacer) take(n int, done <-chan struct{}) bool {
	now := time.Now()
	p.debt = max(p.debt-now.Sub(p.since).Seconds()*p.rate, -p.rate)
	p.since = now
	p.debt += float64(n)
	if p.debt <= 0 {
		return true
	}
	t := time.NewTimer(time.Duration(p.debt / p.rate * float64(time.Second)))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}

// protocolFault reports whether a read error is the agent's fault: a
// frame too large, malformed or not finished in time.
func protocolFault(err error) bool {
	return errors.Is(err, protocol.ErrFrameTooLarge) || errors.Is(err, protocol.ErrMalformedFrame) ||
		errors.Is(err, protocol.ErrFrameTimeout)
}

// failProtocol ends the tunnel after a read error, with a close code that
// says what went wrong when it was the agent's fault.
func (c *agentConn) failProtocol(err error) {
	if c.readsStopped() {
		// The session ended under the read (stopReads).
		c.close(int(websocket.StatusNormalClosure), "")
		return
	}
	switch {
	case errors.Is(err, protocol.ErrFrameTooLarge):
		c.log.Warn("agent sent an oversized frame; closing tunnel")
		c.close(protocol.CloseFrameTooLarge, "frame too large")
	case errors.Is(err, protocol.ErrMalformedFrame):
		c.log.Warn("agent sent a malformed frame; closing tunnel", zap.Error(err))
		c.close(protocol.CloseProtocolError, "malformed frame")
	case errors.Is(err, protocol.ErrFrameTimeout):
		c.log.Warn("agent did not finish a frame in time; closing tunnel", zap.Duration("frameTimeout", c.hub.opts.FrameTimeout))
		c.close(protocol.CloseProtocolError, "frame not completed in time")
	default: // the stream or session ended
		c.close(int(websocket.StatusNormalClosure), "")
	}
}

// close ends the tunnel with a WebSocket close code. Only the first call
// chooses the code.
func (c *agentConn) close(code int, reason string) { c.closeAs("", code, reason) }

// closeAs is close naming the history's reason why the tunnel ended; ""
// lets endReason find it from the code. When the agent broke the
// transport's Guard, that is the reason (protocol_error, with the Guard's
// close code and reason), whoever closes first: the Guard records its
// verdict before the session ends, so every close that follows the
// session's end sees it.
func (c *agentConn) closeAs(why string, code int, reason string) {
	if gerr := c.conn.GuardErr(); gerr != nil {
		why, code, reason = agentcall.ReasonProtocolError, protocol.CloseProtocolError, guardReason(gerr)
	}
	c.closeOnce.Do(func() {
		c.why, c.closeCode, c.closeText = why, code, reason
		close(c.done)
		if c.sess != nil {
			// Tell the peer why before yamux tears the connection down.
			_ = c.conn.CloseWith(code, reason)
			c.sess.Close()
		} else {
			_ = c.conn.CloseWith(code, reason)
		}
	})
}

// hold counts a goroutine the tunnel waits for before serveTunnel returns;
// it reports false once the tunnel is ending.
func (c *agentConn) hold() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ending {
		return false
	}
	c.wg.Add(1)
	return true
}

// callOnOwnStream runs one call on a stream of its own, for replies large
// enough to hold up the shared stream. At most Options.MaxStreamCalls such
// streams are open per tunnel; a caller waits for its turn until its
// deadline. The call returns as soon as its reply arrives or its deadline
// passes; the stream is finished in the background, and keeps its turn
// until the agent has closed its end too (or yamux gave up on it after
// StreamCloseTimeout), so that the streams the relay buffers for stay
// bounded.
func (c *agentConn) callOnOwnStream(ctx context.Context, req protocol.Request) ([]byte, error) {
	if !c.hold() {
		return nil, agentcall.ErrConnectionLost
	}
	select {
	case c.streamCalls <- struct{}{}:
	case <-ctx.Done():
		c.wg.Done()
		return nil, ctxError(ctx)
	case <-c.done:
		c.wg.Done()
		return nil, agentcall.ErrConnectionLost
	}
	s, err := c.sess.OpenStream()
	if err != nil {
		<-c.streamCalls
		c.wg.Done()
		return nil, agentcall.ErrConnectionLost
	}
	rs := newRPCStream(c, s, false)
	rs.start()
	out, err := rs.call(ctx, req)
	go func() {
		defer c.wg.Done()
		s.Close()
		rs.wait()
		c.untrack(rs.in)
		c.conn.ForgetStream(s.StreamID())
		<-c.streamCalls
	}()
	return out, err
}

// ctxError is the error of a call whose context ended before it was sent.
func ctxError(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return agentcall.ErrTimeout
	}
	return ctx.Err()
}

// errEncode reports a frame the relay could not encode; nothing was sent.
var errEncode = errors.New("hub: cannot encode")

// errOutOfSync is why a tunnel ends when a frame was only partly written
// by its deadline: the stream cannot carry another frame.
const errOutOfSync = "a request could not be sent to the agent in time"

// frameWriter writes the relay's frames to one stream: one frame at a
// time, each whole or not at all by its deadline.
//
// A writer takes its turn (a channel, so waiting for it respects the
// caller's context), then waits until the stream's send window can take
// the whole frame (transport.Conn.WaitSendWindow), then writes with the
// caller's deadline. An agent that stops reading (the real agent does at
// its concurrency limit) therefore makes later calls wait and fail by
// their own deadline with nothing sent, and its tunnel stays. A write that
// put part of a frame on the wire by its deadline leaves the stream out of
// sync: the caller reports partial and the tunnel ends.
type frameWriter struct {
	s    net.Conn
	turn chan struct{} // holds a token while a frame is being written
	// window waits until n bytes fit the stream's send window.
	window func(ctx context.Context, n int) error
	buf    []byte // owned by the turn's holder
}

func newFrameWriter(s net.Conn, window func(ctx context.Context, n int) error) *frameWriter {
	return &frameWriter{s: s, turn: make(chan struct{}, 1), window: window}
}

// write writes the frame encode returns, of type t, by ctx's deadline.
// encode runs after the turn is taken, and again if waiting for the window
// took time, so that a Request's TimeoutMs counts from when it is sent; it
// must not grow the frame when called again. partial reports a frame of
// which a part was written: the stream is out of sync. An error without
// partial means nothing was written: ctx's error (its turn or the window
// did not come in time), a write timeout (yamux's, at ctx's deadline), an
// encoding error, or the stream's end.
func (w *frameWriter) write(ctx context.Context, t protocol.Type, encode func() ([]byte, error)) (partial bool, err error) {
	select {
	case w.turn <- struct{}{}:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	defer func() { <-w.turn }()
	frame, err := w.frame(t, encode)
	if err != nil {
		return false, err
	}
	start := time.Now()
	if err := w.window(ctx, len(frame)); err != nil {
		return false, err
	}
	if time.Since(start) > time.Millisecond {
		if frame, err = w.frame(t, encode); err != nil {
			return false, err
		}
	}
	deadline, _ := ctx.Deadline()
	if err := w.s.SetWriteDeadline(deadline); err != nil {
		return false, err
	}
	n, err := w.s.Write(frame)
	if cap(frame) <= 64<<10 {
		w.buf = frame[:0] // keep a modest buffer for the next frame
	}
	return err != nil && n > 0, err
}

func (w *frameWriter) frame(t protocol.Type, encode func() ([]byte, error)) ([]byte, error) {
	payload, err := encode()
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", errEncode, t, err)
	}
	return protocol.AppendFrame(w.buf[:0], t, payload)
}

// rpcStream multiplexes calls over one yamux stream by correlation id.
type rpcStream struct {
	c      *agentConn
	s      *yamux.Stream
	in     *readStream // s, as readLoop reads it
	w      *frameWriter
	shared bool // the tunnel's long-lived stream: its end ends the tunnel
	nextID atomic.Uint64

	cancels chan uint64 // ids of abandoned calls, written by cancelLoop
	stop    chan struct{}
	wg      sync.WaitGroup

	// cmu guards cancelling (a cancelLoop runs) and stopped (the stream
	// ended: no cancelLoop starts any more).
	cmu        sync.Mutex
	cancelling bool
	stopped    bool

	mu      sync.Mutex
	pending map[uint64]chan *protocol.Response
	dead    bool
}

func newRPCStream(c *agentConn, s *yamux.Stream, shared bool) *rpcStream {
	id := s.StreamID()
	return &rpcStream{
		c: c, s: s, in: c.track(s), shared: shared,
		w: newFrameWriter(s, func(ctx context.Context, n int) error {
			return c.conn.WaitSendWindow(ctx, id, n)
		}),
		cancels: make(chan uint64, cancelQueue),
		stop:    make(chan struct{}),
		pending: make(map[uint64]chan *protocol.Response),
	}
}

// start runs the stream's reader; wait waits for it and for the Cancel
// frames being sent.
func (r *rpcStream) start() {
	r.wg.Add(1)
	go func() { defer r.wg.Done(); r.readLoop() }()
}

func (r *rpcStream) wait() { r.wg.Wait() }

// cancel queues a Cancel frame for the abandoned call id, and starts a
// cancelLoop to send it unless one runs. A Cancel that finds the queue
// full is dropped.
func (r *rpcStream) cancel(id uint64) {
	select {
	case r.cancels <- id:
	default:
		return
	}
	r.cmu.Lock()
	defer r.cmu.Unlock()
	if r.cancelling || r.stopped {
		return
	}
	r.cancelling = true
	r.wg.Add(1)
	go func() { defer r.wg.Done(); r.cancelLoop() }()
}

// cancelLoop sends the queued Cancel frames of abandoned calls, so a
// caller never waits on a slow write to give up, and returns once the
// queue is empty (an idle tunnel runs none). A Cancel that cannot be sent
// within cancelTimeout is dropped: the agent's own deadline
// (Request.TimeoutMs) ends the call anyway. When the stream ends or
// falls out of sync, it returns with cancelling still set: no loop starts
// again.
func (r *rpcStream) cancelLoop() {
	for {
		select {
		case id := <-r.cancels:
			ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
			partial, err := r.w.write(ctx, protocol.TypeCancel, func() ([]byte, error) {
				return json.Marshal(protocol.Cancel{ID: id})
			})
			cancel()
			switch {
			case partial:
				r.c.log.Info("agent did not take a cancel in time; closing tunnel")
				r.c.close(int(websocket.StatusNormalClosure), errOutOfSync)
				return
			case err != nil && !timedOut(err):
				return // the stream ended
			}
		case <-r.stop:
			return
		default:
			// cancel queues before it looks at cancelling: a Cancel
			// queued after this look finds cancelling false and starts
			// the next loop.
			r.cmu.Lock()
			if len(r.cancels) == 0 {
				r.cancelling = false
				r.cmu.Unlock()
				return
			}
			r.cmu.Unlock()
		}
	}
}

// timedOut reports whether a write failed for want of time: its context
// ended, or yamux's write deadline passed.
func timedOut(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

var respChanPool = sync.Pool{New: func() any { return make(chan *protocol.Response, 1) }}

func (r *rpcStream) call(ctx context.Context, req protocol.Request) ([]byte, error) {
	deadline, _ := ctx.Deadline()
	if time.Until(deadline) <= 0 {
		return nil, agentcall.ErrTimeout
	}
	req.ID = r.nextID.Add(1)

	ch := respChanPool.Get().(chan *protocol.Response)
	r.mu.Lock()
	if r.dead {
		r.mu.Unlock()
		respChanPool.Put(ch)
		return nil, agentcall.ErrConnectionLost
	}
	r.pending[req.ID] = ch
	r.mu.Unlock()

	partial, err := r.w.write(ctx, protocol.TypeRequest, func() ([]byte, error) {
		timeout := time.Until(deadline)
		if timeout <= 0 {
			return nil, context.DeadlineExceeded
		}
		// Round up, so the agent's deadline (measured from when it reads
		// the request) never passes before ours.
		req.TimeoutMs = int64((timeout + time.Millisecond - 1) / time.Millisecond)
		return json.Marshal(&req)
	})
	if err != nil {
		if !r.forget(req.ID) {
			// The stream died meanwhile and failAll answered; take it.
			<-ch
		}
		respChanPool.Put(ch)
		switch {
		case partial:
			// The stream is out of sync: the agent never read this
			// request whole, and no other frame can follow it.
			r.c.log.Info("agent did not take a request in time; closing tunnel", zap.String("fn", req.Fn))
			r.c.close(int(websocket.StatusNormalClosure), errOutOfSync)
			return nil, agentcall.ErrTimeout
		case errors.Is(err, context.Canceled):
			return nil, err
		case timedOut(err):
			// Nothing was sent: only this call fails.
			return nil, agentcall.ErrTimeout
		case errors.Is(err, protocol.ErrFrameTooLarge) || errors.Is(err, errEncode):
			return nil, err
		}
		return nil, agentcall.ErrConnectionLost
	}
	select {
	case resp := <-ch:
		respChanPool.Put(ch)
		return result(ctx, resp)
	case <-ctx.Done():
		if r.forget(req.ID) {
			// Best effort: the agent stops work nobody waits for, and
			// its own deadline covers a Cancel that is dropped.
			r.cancel(req.ID)
			return nil, ctxError(ctx)
		}
		// The reply raced the deadline and won; use it.
		resp := <-ch
		respChanPool.Put(ch)
		return result(ctx, resp)
	}
}

// result turns a response into the call's outcome. An agent that gave up
// because the deadline passed reports agentcall.ErrTimeout, as the relay would have.
func result(ctx context.Context, resp *protocol.Response) ([]byte, error) {
	switch {
	case resp == nil:
		return nil, agentcall.ErrConnectionLost
	case resp.Error == nil:
		return resp.Result, nil
	case resp.Error.Code == protocol.CodeCancelled || resp.Error.Code == protocol.CodeDeadlineExceeded:
		// The clock, not ctx.Err: the agent's timer may fire and its reply
		// arrive before our own timer has run.
		if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
			return nil, agentcall.ErrTimeout
		}
	}
	return nil, resp.Error
}

// forget removes id from the pending calls and reports whether it was there.
func (r *rpcStream) forget(id uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.pending[id]; !ok {
		return false
	}
	delete(r.pending, id)
	return true
}

// readLoop delivers responses until the stream ends, then fails every call
// still waiting.
func (r *rpcStream) readLoop() {
	defer r.failAll()
	fr := r.reader()
	for {
		t, payload, err := fr.ReadFrame()
		if !r.response(t, payload, err) {
			return
		}
	}
}

// reader returns the stream's frame reader. It is not inlined, so that
// readLoop's frame stays small.
//
//go:noinline
func (r *rpcStream) reader() *protocol.Reader {
	fr := protocol.NewReaderSize(r.in, 0, readerBuffer)
	fr.SetFrameTimeout(r.c.hub.opts.FrameTimeout)
	return fr
}

// response delivers what one ReadFrame returned to the call waiting for
// it, and reports whether to read on.
func (r *rpcStream) response(t protocol.Type, payload []byte, err error) bool {
	if err != nil {
		if r.shared || protocolFault(err) {
			r.c.failProtocol(err)
		}
		return false
	}
	if t != protocol.TypeResponse {
		r.c.close(protocol.CloseProtocolError, "unexpected frame on rpc stream")
		return false
	}
	resp := new(protocol.Response)
	if err := protocol.Decode(payload, resp); err != nil {
		r.c.close(protocol.CloseProtocolError, "malformed response")
		return false
	}
	r.mu.Lock()
	ch, ok := r.pending[resp.ID]
	delete(r.pending, resp.ID)
	r.mu.Unlock()
	if ok {
		ch <- resp
	}
	r.s.Shrink()
	return true
}

func (r *rpcStream) failAll() {
	r.cmu.Lock()
	r.stopped = true
	r.cmu.Unlock()
	close(r.stop)
	r.mu.Lock()
	r.dead = true
	pending := r.pending
	r.pending = map[uint64]chan *protocol.Response{}
	r.mu.Unlock()
	for _, ch := range pending {
		ch <- nil
	}
}
