// Package transport carries the tunnel's yamux session over a WebSocket. The
// agent (dialing) and the relay (accepting) both build their session with
// it, so the two ends agree on message types, size limits, keepalives and
// the write coalescing that keeps a round trip cheap.
//
// Each yamux frame travels as exactly one binary WebSocket message: yamux
// writes a data frame's 12-byte header and its body in two calls, and Conn
// joins them, which halves the per-frame cost on the wire.
//
// The end that does not trust its peer (the relay) sets a Guard: Conn then
// parses the yamux frame headers in both directions, refuses streams and
// pings beyond the Guard before yamux sees them, and keeps each stream's
// send window as yamux does, so that a writer can wait until a frame fits
// whole (WaitSendWindow) instead of leaving it half sent.
package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/yamux"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Tunables of the session. Both ends use the same values.
const (
	// KeepAliveInterval is how often each end pings the other.
	KeepAliveInterval = 5 * time.Second
	// WriteTimeout bounds a ping's answer and any single write: with
	// KeepAliveInterval it makes a dead peer noticed within 12 s.
	WriteTimeout = 7 * time.Second
	// StreamWindow is the per-stream receive window, and so the largest
	// yamux data frame either end sends.
	StreamWindow = 1 << 20
	// MaxMessage is the WebSocket read limit: the largest yamux frame plus
	// its header, with room to spare.
	MaxMessage = StreamWindow + 64<<10
)

const (
	yamuxHeaderSize = 12
	yamuxTypeData   = 0
)

// YamuxConfig returns the yamux configuration both ends use, logging through
// logger.
func YamuxConfig(logger *zap.Logger) *yamux.Config {
	cfg := yamux.DefaultConfig()
	// The relay opens at most 1+hub.Options.MaxStreamCalls streams and
	// accepts one; each slot of the backlog costs both ends 8 bytes per
	// tunnel, idle or not.
	cfg.AcceptBacklog = 64
	cfg.EnableKeepAlive = true
	cfg.KeepAliveInterval = KeepAliveInterval
	cfg.ConnectionWriteTimeout = WriteTimeout
	cfg.MaxStreamWindowSize = StreamWindow
	cfg.StreamOpenTimeout = 10 * time.Second
	cfg.StreamCloseTimeout = 30 * time.Second
	cfg.LogOutput = nil
	cfg.Logger = &yamuxLogger{log: logger.Named("yamux")}
	return cfg
}

// yamuxLogger turns yamux's "[ERR] yamux: …" lines into leveled zap
// entries. A line whose error is a normal end of the connection
// (NormalClose: the peer or the owner closed it), a WebSocket close with
// an application's code (4000–4999: the tunnel's own close codes, which
// the end that closes logs with its reason) or a Guard violation (the
// owner logs it) is debug level, so a clean shutdown logs nothing that
// reads like an error; real failures keep yamux's level ([ERR]
// error, [WARN] warn). yamux logs some lines once per frame ("frame for
// missing stream", "discarding data"), which a peer can send by the
// million: at most logBurst lines at info level or above are written per
// logWindow, and the next window starts with the count of those dropped.
type yamuxLogger struct {
	log *zap.Logger

	mu          sync.Mutex
	windowStart time.Time
	lines       int
	dropped     int
}

const (
	logBurst  = 20
	logWindow = 10 * time.Second
)

func (l *yamuxLogger) Print(v ...any)                 { l.emit(fmt.Sprint(v...), v) }
func (l *yamuxLogger) Println(v ...any)               { l.emit(fmt.Sprintln(v...), v) }
func (l *yamuxLogger) Printf(format string, v ...any) { l.emit(fmt.Sprintf(format, v...), v) }

// yamuxLevels are the level prefixes of yamux's log lines.
var yamuxLevels = []struct {
	prefix string
	level  zapcore.Level
}{{"[ERR] ", zap.ErrorLevel}, {"[WARN] ", zap.WarnLevel}, {"[INFO] ", zap.InfoLevel}, {"[DEBUG] ", zap.DebugLevel}}

func (l *yamuxLogger) emit(msg string, args []any) {
	msg = strings.TrimSpace(msg)
	level := zap.InfoLevel
	for _, p := range yamuxLevels {
		if strings.HasPrefix(msg, p.prefix) {
			msg, level = msg[len(p.prefix):], p.level
			break
		}
	}
	msg = strings.TrimPrefix(msg, "yamux: ")
	for _, a := range args {
		var ge *GuardError
		if err, ok := a.(error); ok && (NormalClose(err) || applicationClose(err) || errors.As(err, &ge)) {
			level = zap.DebugLevel
		}
	}
	ce := l.log.Check(level, msg)
	if ce == nil {
		return
	}
	if level >= zap.InfoLevel && !l.admit() {
		return
	}
	ce.Write()
}

// admit reports whether one more line at info level or above may be
// written in this window, and writes the count of the lines the last
// window dropped.
func (l *yamuxLogger) admit() bool {
	l.mu.Lock()
	now := time.Now()
	var dropped int
	if now.Sub(l.windowStart) >= logWindow {
		dropped = l.dropped
		l.windowStart, l.lines, l.dropped = now, 0, 0
	}
	ok := l.lines < logBurst
	if ok {
		l.lines++
	} else {
		l.dropped++
	}
	l.mu.Unlock()
	if dropped > 0 {
		l.log.Warn("log lines dropped", zap.Int("dropped", dropped), zap.Duration("window", logWindow))
	}
	return ok
}

// applicationClose reports whether err is a WebSocket close with an
// application's code (RFC 6455 §7.4.2: 4000–4999).
func applicationClose(err error) bool {
	code := websocket.CloseStatus(err)
	return code >= 4000 && code <= 4999
}

// NormalClose reports whether err is how a connection ends when one side
// closes it on purpose: end of input, a connection already closed, the
// owner's context ended, yamux's session shut down, or a WebSocket close
// with 1000 (normal closure) or 1001 (going away).
func NormalClose(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, context.Canceled),
		errors.Is(err, yamux.ErrSessionShutdown):
		return true
	}
	switch websocket.CloseStatus(err) {
	case websocket.StatusNormalClosure, websocket.StatusGoingAway:
		return true
	}
	return false
}

// Conn is a WebSocket seen as a byte stream for yamux: the binary
// messages read one after another, each write a message. It records why
// the WebSocket closed, so the owner can tell a replaced connection from
// a network failure.
//
// It reads and writes as websocket.NetConn does (a close with 1000 or
// 1001 reads as io.EOF; a message that is not binary ends reading, with
// 1003), without NetConn's deadlines: each of NetConn's reads and writes
// registers a context.AfterFunc, which would cost every message of every
// tunnel an allocation and a lock. The context of NewConn ends the
// connection instead, once.
type Conn struct {
	ws *websocket.Conn
	in messages // owned by the reading goroutine (yamux's receive loop)
	// stopCtx stops watching NewConn's context.
	stopCtx func() bool

	wmu    sync.Mutex
	hdr    [yamuxHeaderSize]byte // a yamux data header waiting for its body
	hasHdr bool

	emu     sync.Mutex
	readErr error

	closeCode   websocket.StatusCode
	closeReason string

	closed    chan struct{} // closed once reading failed or the owner closed c
	closeOnce sync.Once

	guard *guard // set by SetGuard, else nil

	onClose func() // set by SetOnClose, else nil
}

// NewConn wraps ws. The read limit is set to MaxMessage; ctx bounds the
// connection's life: when it ends, the WebSocket is closed at once,
// without a close handshake.
func NewConn(ctx context.Context, ws *websocket.Conn) *Conn {
	ws.SetReadLimit(MaxMessage)
	c := &Conn{ws: ws, in: messages{ws: ws}, closeCode: websocket.StatusNormalClosure, closed: make(chan struct{})}
	c.stopCtx = context.AfterFunc(ctx, func() { _ = ws.CloseNow() })
	return c
}

// ErrNoDeadline is what Conn's deadline methods return: yamux bounds its
// writes and keepalives itself, and NewConn's context ends the connection.
var ErrNoDeadline = errors.New("transport: a Conn has no deadlines")

// Conn is a net.Conn, so that it can stand where one is expected; its
// addresses are placeholders and it has no deadlines.
var _ net.Conn = (*Conn)(nil)

// LocalAddr implements net.Conn with a placeholder address.
func (c *Conn) LocalAddr() net.Addr { return wsAddr{} }

// RemoteAddr implements net.Conn with a placeholder address.
func (c *Conn) RemoteAddr() net.Addr { return wsAddr{} }

// SetDeadline implements net.Conn: it returns ErrNoDeadline.
func (c *Conn) SetDeadline(time.Time) error { return ErrNoDeadline }

// SetReadDeadline implements net.Conn: it returns ErrNoDeadline.
func (c *Conn) SetReadDeadline(time.Time) error { return ErrNoDeadline }

// SetWriteDeadline implements net.Conn: it returns ErrNoDeadline.
func (c *Conn) SetWriteDeadline(time.Time) error { return ErrNoDeadline }

type wsAddr struct{}

func (wsAddr) Network() string { return "websocket" }
func (wsAddr) String() string  { return "websocket/unknown-addr" }

// messages reads a WebSocket's binary messages as one byte stream.
type messages struct {
	ws  *websocket.Conn
	r   io.Reader // the message being read, or nil
	eof bool      // the peer closed with 1000 or 1001
}

func (m *messages) Read(p []byte) (int, error) {
	for {
		if m.eof {
			return 0, io.EOF
		}
		if m.r == nil {
			typ, r, err := m.ws.Reader(context.Background())
			if err != nil {
				switch websocket.CloseStatus(err) {
				case websocket.StatusNormalClosure, websocket.StatusGoingAway:
					m.eof = true
					return 0, io.EOF
				}
				return 0, err
			}
			if typ != websocket.MessageBinary {
				err := fmt.Errorf("transport: unexpected %v message", typ)
				_ = m.ws.Close(websocket.StatusUnsupportedData, err.Error())
				return 0, err
			}
			m.r = r
		}
		n, err := m.r.Read(p)
		if err == io.EOF {
			m.r = nil
			if n == 0 {
				continue
			}
			err = nil
		}
		return n, err
	}
}

// maxPooledMessage is the largest message buffer kept in messagePool.
const maxPooledMessage = 64 << 10

// messagePool holds the buffers in which Write joins a data frame's
// header and body. A Conn holds none between writes, so that an idle
// tunnel costs the relay no write buffer.
var messagePool = sync.Pool{New: func() any { return new([]byte) }}

// SetDefaultClose sets the close code and reason that Close sends. yamux
// calls Close when it ends the session by itself (bytes that are not yamux,
// a missed keepalive), so the owner sets here what that means to the peer,
// and closes deliberately with CloseWith. Call it before the session starts.
func (c *Conn) SetDefaultClose(code int, reason string) {
	c.closeCode = websocket.StatusCode(code)
	c.closeReason = reason
}

// SetOnClose sets a function that Close calls first, before the
// WebSocket's close handshake (which may wait seconds for an unresponsive
// peer). yamux calls Close when its session ends, after it told the
// session's streams and before it ends them: a read waiting on a stream
// meanwhile spins (hashicorp/yamux v0.1.2), so the owner ends its streams'
// reads in f (a read deadline in the past). Call it before the session
// starts.
func (c *Conn) SetOnClose(f func()) { c.onClose = f }

// Close implements io.Closer, sending the code set by SetDefaultClose
// (normal closure unless set). When the peer broke the Guard, the reason
// says how.
func (c *Conn) Close() error {
	if c.onClose != nil {
		c.onClose()
	}
	reason := c.closeReason
	var ge *GuardError
	if errors.As(c.GuardErr(), &ge) {
		reason = ge.Reason()
	}
	return c.CloseWith(int(c.closeCode), reason)
}

// Write implements io.Writer: each write is a WebSocket message, but a
// yamux data-frame header is held back and sent with the body that
// follows it as one message.
func (c *Conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.hasHdr {
		c.hasHdr = false
		buf := messagePool.Get().(*[]byte)
		msg := append(append((*buf)[:0], c.hdr[:]...), p...)
		err := c.write(msg)
		if cap(msg) <= maxPooledMessage {
			*buf = msg[:0]
			messagePool.Put(buf)
		}
		if err != nil {
			return 0, err
		}
		return len(p), nil
	}
	if len(p) != yamuxHeaderSize {
		return c.writeAll(p)
	}
	// yamux writes every header in a Write of its own.
	if c.guard != nil {
		c.guard.wrote(p)
	}
	if p[1] == yamuxTypeData && binary.BigEndian.Uint32(p[8:12]) > 0 {
		copy(c.hdr[:], p)
		c.hasHdr = true
		return len(p), nil
	}
	return c.writeAll(p)
}

func (c *Conn) write(msg []byte) error {
	return c.ws.Write(context.Background(), websocket.MessageBinary, msg)
}

func (c *Conn) writeAll(p []byte) (int, error) {
	if err := c.write(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Read implements io.Reader and remembers the error that ended reading.
// With a Guard, a frame that breaks it ends reading with a *GuardError.
func (c *Conn) Read(p []byte) (int, error) {
	var n int
	var err error
	if c.guard != nil {
		n, err = c.guard.read(&c.in, p)
	} else {
		n, err = c.in.Read(p)
	}
	if err != nil {
		c.emu.Lock()
		if c.readErr == nil {
			c.readErr = err
		}
		c.emu.Unlock()
		c.markClosed()
	}
	return n, err
}

func (c *Conn) markClosed() { c.closeOnce.Do(func() { close(c.closed) }) }

// CloseWith closes the WebSocket with a status code and reason the peer can
// read. It is safe to call more than once; later calls have no effect on the
// wire.
func (c *Conn) CloseWith(code int, reason string) error {
	c.markClosed()
	err := c.ws.Close(websocket.StatusCode(code), reason)
	c.stopCtx()
	return err
}

// CloseStatus returns the WebSocket close code the peer sent, or -1 when the
// connection ended without one (network failure, or still open).
func (c *Conn) CloseStatus() int {
	c.emu.Lock()
	defer c.emu.Unlock()
	if c.readErr == nil {
		return -1
	}
	if errors.Is(c.readErr, io.EOF) {
		return int(websocket.StatusNormalClosure)
	}
	return int(websocket.CloseStatus(c.readErr))
}

// CloseReason returns the reason of the WebSocket close the peer sent, or
// "" (none, or still open).
func (c *Conn) CloseReason() string {
	c.emu.Lock()
	defer c.emu.Unlock()
	var ce websocket.CloseError
	if errors.As(c.readErr, &ce) {
		return ce.Reason
	}
	return ""
}
