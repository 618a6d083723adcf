package hub

import (
	"context"
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
	"tradebridge/relay/auth"
	"tradebridge/transport"
)

// agentConn is one live tunnel.
type agentConn struct {
	hub         *Hub
	log         *zap.Logger
	userID      string
	token       string // to re-verify; never logged
	sessionID   string
	hello       protocol.Hello
	connectedAt time.Time

	conn *transport.Conn
	sess *yamux.Session
	rpc  *rpcStream

	closeOnce sync.Once
	done      chan struct{} // closed when the tunnel is finished
}

// serveTunnel runs an upgraded tunnel until it ends. It owns every goroutine
// of the tunnel and returns only after they exit.
func (h *Hub) serveTunnel(ws *websocket.Conn, p auth.Principal, token string, version int) {
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	c := &agentConn{
		hub:       h,
		userID:    p.UserID,
		token:     token,
		sessionID: newSessionID(),
		conn:      transport.NewConn(ctx, ws),
		done:      make(chan struct{}),
	}
	c.log = h.log.With(zap.String("user", p.UserID), zap.String("session", c.sessionID))
	// Every deliberate close goes through c.close with its own code; yamux
	// closes the connection by itself only on bytes that are not yamux or a
	// missed keepalive.
	c.conn.SetDefaultClose(protocol.CloseProtocolError, "tunnel protocol error or keepalive timeout")
	defer c.close(int(websocket.StatusNormalClosure), "")

	sess, err := yamux.Server(c.conn, transport.YamuxConfig(c.log))
	if err != nil {
		c.log.Error("starting yamux", zap.Error(err))
		return
	}
	c.sess = sess

	control, err := c.handshake(version)
	if err != nil {
		var ce *closeError
		if errors.As(err, &ce) {
			c.log.Info("handshake refused", zap.String("reason", protocol.CloseReason(ce.code)), zap.Error(ce.err))
			c.close(ce.code, ce.reason)
		} else {
			// yamux gave up on the connection (bytes that are not yamux,
			// or the agent went away); it may not have closed it yet.
			c.log.Info("handshake failed", zap.Error(err))
			c.close(protocol.CloseProtocolError, "tunnel protocol error")
		}
		return
	}
	defer control.Close()

	rpcStream, err := sess.OpenStream()
	if err != nil {
		c.log.Info("opening rpc stream", zap.Error(err))
		return
	}
	c.rpc = newRPCStream(c, rpcStream, true)
	c.connectedAt = time.Now()

	c.rpc.start()
	defer c.rpc.wait()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); c.readEvents(control) }()
	go func() { defer wg.Done(); c.refuseStreams() }()

	if err := h.register(c); err != nil {
		c.close(protocol.CloseShuttingDown, "relay shutting down")
	} else if err := c.welcome(control, version); err != nil {
		c.log.Info("handshake failed", zap.Error(err))
		c.close(protocol.CloseProtocolError, "tunnel protocol error")
	} else {
		c.log.Info("agent connected",
			zap.String("agentVersion", c.hello.AgentVersion),
			zap.String("platform", c.hello.Platform),
			zap.Int("connections", len(c.hello.Connections)))
	}

	select {
	case <-sess.CloseChan():
		// yamux ended the session on its own (the agent went away, sent
		// bytes that are not yamux, or stopped answering pings). The
		// transport sends the same code when yamux gets there first.
		if c.conn.CloseStatus() == -1 {
			c.close(protocol.CloseProtocolError, "tunnel protocol error or keepalive timeout")
		}
	case <-c.done:
	}
	h.unregister(c)
	c.close(int(websocket.StatusNormalClosure), "")
	sess.Close()
	wg.Wait()
	c.log.Info("agent disconnected", zap.Int("closeStatus", c.conn.CloseStatus()))
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
		control = a.s
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
	fr := protocol.NewReader(control, 64<<10)
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
	if hello.ProtocolVersion != version {
		control.Close()
		return nil, &closeError{protocol.CloseVersionUnsupported, "hello version differs from negotiated subprotocol",
			fmt.Errorf("hello %d, subprotocol %d", hello.ProtocolVersion, version)}
	}
	_ = control.SetReadDeadline(time.Time{})
	c.hello = hello
	return &framedConn{Conn: control, r: fr}, nil
}

// welcome completes the handshake. It is sent only once the tunnel is
// registered, so an agent that has read Welcome can be called at once.
func (c *agentConn) welcome(control net.Conn, version int) error {
	w := protocol.NewWriter(control)
	if err := w.WriteFrame(protocol.TypeWelcome, protocol.Welcome{ProtocolVersion: version, SessionID: c.sessionID}); err != nil {
		return fmt.Errorf("writing welcome: %w", err)
	}
	return nil
}

// framedConn keeps the frame reader (and its buffered bytes) of a stream.
type framedConn struct {
	net.Conn
	r *protocol.Reader
}

// readEvents reads the agent's events from the control stream until it
// closes. A malformed frame ends the tunnel.
func (c *agentConn) readEvents(control net.Conn) {
	fr := control.(*framedConn).r
	for {
		t, payload, err := fr.ReadFrame()
		if err != nil {
			c.failProtocol(err)
			return
		}
		if t != protocol.TypeEvent {
			c.close(protocol.CloseProtocolError, "unexpected frame on control stream")
			return
		}
		var ev protocol.Event
		if err := protocol.Decode(payload, &ev); err != nil {
			c.close(protocol.CloseProtocolError, "malformed event")
			return
		}
		if fn := c.hub.opts.OnEvent; fn != nil {
			fn(Event{UserID: c.userID, Event: ev})
		}
	}
}

// refuseStreams closes streams the agent opens after the handshake: in
// this protocol version only the relay opens them.
func (c *agentConn) refuseStreams() {
	for {
		s, err := c.sess.AcceptStream()
		if err != nil {
			return
		}
		c.log.Warn("agent opened an unexpected stream; closing it")
		s.Close()
	}
}

// failProtocol ends the tunnel after a read error, with a close code that
// says what went wrong when it was the agent's fault.
func (c *agentConn) failProtocol(err error) {
	switch {
	case errors.Is(err, protocol.ErrFrameTooLarge):
		c.log.Warn("agent sent an oversized frame; closing tunnel")
		c.close(protocol.CloseFrameTooLarge, "frame too large")
	case errors.Is(err, protocol.ErrMalformedFrame):
		c.log.Warn("agent sent a malformed frame; closing tunnel", zap.Error(err))
		c.close(protocol.CloseProtocolError, "malformed frame")
	default: // the stream or session ended
		c.close(int(websocket.StatusNormalClosure), "")
	}
}

// close ends the tunnel with a WebSocket close code. Only the first call
// chooses the code.
func (c *agentConn) close(code int, reason string) {
	c.closeOnce.Do(func() {
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

// callOnOwnStream runs one call on a stream of its own, for replies large
// enough to hold up the shared stream.
func (c *agentConn) callOnOwnStream(ctx context.Context, req protocol.Request) ([]byte, error) {
	s, err := c.sess.OpenStream()
	if err != nil {
		return nil, ErrConnectionLost
	}
	rs := newRPCStream(c, s, false)
	rs.start()
	defer func() {
		s.Close()
		rs.wait()
	}()
	return rs.call(ctx, req)
}

// rpcStream multiplexes calls over one yamux stream by correlation id.
type rpcStream struct {
	c      *agentConn
	s      net.Conn
	w      *protocol.Writer
	shared bool // the tunnel's long-lived stream: its end ends the tunnel
	nextID atomic.Uint64

	cancels chan uint64 // ids of abandoned calls, written by cancelLoop
	stop    chan struct{}
	wg      sync.WaitGroup

	mu      sync.Mutex
	pending map[uint64]chan *protocol.Response
	dead    bool
}

func newRPCStream(c *agentConn, s net.Conn, shared bool) *rpcStream {
	return &rpcStream{
		c: c, s: s, w: protocol.NewWriter(s), shared: shared,
		cancels: make(chan uint64, 256),
		stop:    make(chan struct{}),
		pending: make(map[uint64]chan *protocol.Response),
	}
}

// start runs the stream's reader and canceller; wait waits for both.
func (r *rpcStream) start() {
	r.wg.Add(2)
	go func() { defer r.wg.Done(); r.readLoop() }()
	go func() { defer r.wg.Done(); r.cancelLoop() }()
}

func (r *rpcStream) wait() { r.wg.Wait() }

// cancelLoop sends Cancel frames for abandoned calls, so a caller never
// waits on a slow write to give up.
func (r *rpcStream) cancelLoop() {
	for {
		select {
		case id := <-r.cancels:
			if err := r.w.WriteFrame(protocol.TypeCancel, protocol.Cancel{ID: id}); err != nil {
				return
			}
		case <-r.stop:
			return
		}
	}
}

var respChanPool = sync.Pool{New: func() any { return make(chan *protocol.Response, 1) }}

func (r *rpcStream) call(ctx context.Context, req protocol.Request) ([]byte, error) {
	deadline, _ := ctx.Deadline()
	timeout := time.Until(deadline)
	if timeout <= 0 {
		return nil, ErrTimeout
	}
	req.ID = r.nextID.Add(1)
	// Round up, so the agent's deadline (measured from when it reads the
	// request) never passes before ours.
	req.TimeoutMs = int64((timeout + time.Millisecond - 1) / time.Millisecond)

	ch := respChanPool.Get().(chan *protocol.Response)
	r.mu.Lock()
	if r.dead {
		r.mu.Unlock()
		respChanPool.Put(ch)
		return nil, ErrConnectionLost
	}
	r.pending[req.ID] = ch
	r.mu.Unlock()

	if err := r.w.WriteFrame(protocol.TypeRequest, &req); err != nil {
		r.forget(req.ID)
		// A failed write may have put part of the frame on the wire.
		r.c.close(int(websocket.StatusNormalClosure), "")
		return nil, ErrConnectionLost
	}
	select {
	case resp := <-ch:
		respChanPool.Put(ch)
		return result(ctx, resp)
	case <-ctx.Done():
		if r.forget(req.ID) {
			// Best effort: the agent stops work nobody waits for, and
			// its own deadline covers a Cancel that is dropped.
			select {
			case r.cancels <- req.ID:
			default:
			}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, ErrTimeout
			}
			return nil, ctx.Err()
		}
		// The reply raced the deadline and won; use it.
		resp := <-ch
		respChanPool.Put(ch)
		return result(ctx, resp)
	}
}

// result turns a response into the call's outcome. An agent that gave up
// because the deadline passed reports ErrTimeout, as the relay would have.
func result(ctx context.Context, resp *protocol.Response) ([]byte, error) {
	switch {
	case resp == nil:
		return nil, ErrConnectionLost
	case resp.Error == nil:
		return resp.Result, nil
	case resp.Error.Code == protocol.CodeCancelled || resp.Error.Code == protocol.CodeDeadlineExceeded:
		// The clock, not ctx.Err: the agent's timer may fire and its reply
		// arrive before our own timer has run.
		if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
			return nil, ErrTimeout
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
	fr := protocol.NewReader(r.s, 0)
	defer r.failAll()
	for {
		t, payload, err := fr.ReadFrame()
		if err != nil {
			if r.shared || errors.Is(err, protocol.ErrFrameTooLarge) || errors.Is(err, protocol.ErrMalformedFrame) {
				r.c.failProtocol(err)
			}
			return
		}
		if t != protocol.TypeResponse {
			r.c.close(protocol.CloseProtocolError, "unexpected frame on rpc stream")
			return
		}
		resp := new(protocol.Response)
		if err := protocol.Decode(payload, resp); err != nil {
			r.c.close(protocol.CloseProtocolError, "malformed response")
			return
		}
		r.mu.Lock()
		ch, ok := r.pending[resp.ID]
		delete(r.pending, resp.ID)
		r.mu.Unlock()
		if ok {
			ch <- resp
		}
	}
}

func (r *rpcStream) failAll() {
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
