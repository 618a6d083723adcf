package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// yamux frame header fields (github.com/hashicorp/yamux spec.md): version
// u8, type u8, flags u16, stream id u32, length u32, big-endian. Only data
// frames are followed by a body, of length bytes.
const (
	yamuxTypeWindowUpdate = 1
	yamuxTypePing         = 2
	yamuxTypeGoAway       = 3

	yamuxFlagSYN = 1
	yamuxFlagRST = 8

	// initialStreamWindow is the send window of a new stream before the
	// peer's first window update: yamux's fixed initial window, which
	// every yamux peer starts from whatever its MaxStreamWindowSize.
	initialStreamWindow = 256 << 10
)

// Errors a Guard reports. Read fails with a *GuardError wrapping one of
// them.
var (
	// ErrPeerStream: the peer opened more streams than Guard.MaxPeerStreams.
	ErrPeerStream = errors.New("transport: the peer opened a stream it may not open")
	// ErrPingFlood: the peer pinged faster than Guard allows.
	ErrPingFlood = errors.New("transport: the peer pings too often")
)

// Guard is what a Conn accepts from its peer beyond what yamux checks.
// Conn checks it on the yamux frame headers it reads, before yamux sees
// them: the header that breaks it never reaches the session (not even
// its last byte), Read fails with a *GuardError from then on, and Close
// sends the peer the reason. A peer cannot make yamux allocate anything
// for a stream it was not allowed to open.
//
// The zero value checks nothing.
type Guard struct {
	// MaxPeerStreams is how many streams the peer may open (frames with
	// the SYN flag) over the connection's life. Zero means no limit.
	MaxPeerStreams int
	// PingBurst and PingInterval bound the pings the peer sends: PingBurst
	// at once, then one per PingInterval (default 1 s). Each ping costs
	// yamux a goroutine until its answer is written, so a flood of them
	// while the peer does not read would pile goroutines up. Zero
	// PingBurst means no limit.
	PingBurst    int
	PingInterval time.Duration
}

// GuardError reports a frame that broke a Conn's Guard.
type GuardError struct {
	// Err is ErrPeerStream or ErrPingFlood.
	Err error
	// StreamID is the stream the offending frame named (0 for pings).
	StreamID uint32
}

func (e *GuardError) Error() string {
	if e.StreamID != 0 {
		return fmt.Sprintf("%v (stream %d)", e.Err, e.StreamID)
	}
	return e.Err.Error()
}

func (e *GuardError) Unwrap() error { return e.Err }

// Reason is what the peer reads in the WebSocket close frame.
func (e *GuardError) Reason() string {
	switch e.Err {
	case ErrPeerStream:
		return "the peer opened a stream it may not open"
	case ErrPingFlood:
		return "the peer pings too often"
	}
	return "tunnel protocol error"
}

// guard parses the yamux frame headers of both directions of a Conn: it
// enforces the Guard on what is read, and keeps the send window of each
// stream this end opened, as yamux keeps it, so that a writer can wait
// until a frame fits whole (WaitSendWindow).
type guard struct {
	cfg Guard

	// Owned by the reading goroutine (yamux's receive loop).
	hdr         [yamuxHeaderSize]byte
	have        int    // header bytes collected
	body        uint32 // body bytes of the current data frame still to skip
	broken      bool   // not yamux: stop parsing, yamux fails on it by itself
	peerStreams int
	pingTokens  float64
	pingAt      time.Time

	violation atomic.Pointer[GuardError]

	wmu     sync.Mutex
	windows map[uint32]*sendWindow // streams this end opened
}

// sendWindow is one stream's send window as yamux keeps it: uint32
// arithmetic, so a peer's update that wraps it around lowers it in both.
type sendWindow struct {
	credit uint32
	wake   chan struct{} // signalled when credit grows
}

func newGuard(g Guard) *guard {
	if g.MaxPeerStreams < 0 {
		g.MaxPeerStreams = 0
	}
	if g.PingBurst < 0 {
		g.PingBurst = 0
	}
	if g.PingBurst > 0 && g.PingInterval <= 0 {
		g.PingInterval = time.Second
	}
	return &guard{cfg: g, pingTokens: float64(g.PingBurst), windows: make(map[uint32]*sendWindow)}
}

// read reads from r into p and checks what it read. The bytes before the
// last byte of an offending header are returned; the next call fails.
func (g *guard) read(r io.Reader, p []byte) (int, error) {
	if v := g.violation.Load(); v != nil {
		return 0, v
	}
	n, err := r.Read(p)
	if n > 0 {
		if k, v := g.inspect(p[:n]); v != nil {
			g.violation.Store(v)
			if k > 0 {
				return k, nil
			}
			return 0, v
		}
	}
	return n, err
}

// inspect walks the frames in b, which continues what was read before.
// On a violation it returns the offset of the offending header's last
// byte, which the caller must not deliver.
func (g *guard) inspect(b []byte) (int, *GuardError) {
	for i := 0; i < len(b) && !g.broken; {
		if g.body > 0 {
			skip := min(uint32(len(b)-i), g.body)
			i += int(skip)
			g.body -= skip
			continue
		}
		take := min(yamuxHeaderSize-g.have, len(b)-i)
		copy(g.hdr[g.have:], b[i:i+take])
		g.have += take
		i += take
		if g.have < yamuxHeaderSize {
			break
		}
		g.have = 0
		if v := g.header(g.hdr[:]); v != nil {
			return i - 1, v
		}
	}
	return len(b), nil
}

// header checks one complete inbound header.
func (g *guard) header(h []byte) *GuardError {
	version, typ := h[0], h[1]
	flags := binary.BigEndian.Uint16(h[2:4])
	id := binary.BigEndian.Uint32(h[4:8])
	length := binary.BigEndian.Uint32(h[8:12])
	if version != 0 || typ > yamuxTypeGoAway {
		g.broken = true // yamux refuses it and ends the session
		return nil
	}
	switch typ {
	case yamuxTypeData, yamuxTypeWindowUpdate:
		if typ == yamuxTypeData {
			g.body = length
		}
		if flags&yamuxFlagSYN != 0 {
			g.peerStreams++
			if g.cfg.MaxPeerStreams > 0 && g.peerStreams > g.cfg.MaxPeerStreams {
				return &GuardError{Err: ErrPeerStream, StreamID: id}
			}
		}
		if typ == yamuxTypeWindowUpdate && length > 0 {
			g.grant(id, length)
		}
	case yamuxTypePing:
		if flags&yamuxFlagSYN != 0 && g.cfg.PingBurst > 0 {
			now := time.Now()
			if !g.pingAt.IsZero() {
				g.pingTokens += float64(now.Sub(g.pingAt)) / float64(g.cfg.PingInterval)
				g.pingTokens = min(g.pingTokens, float64(g.cfg.PingBurst))
			}
			g.pingAt = now
			if g.pingTokens < 1 {
				return &GuardError{Err: ErrPingFlood}
			}
			g.pingTokens--
		}
	}
	return nil
}

// wrote accounts for a header this end writes: a SYN starts tracking the
// stream's send window, a data frame spends it.
func (g *guard) wrote(h []byte) {
	typ := h[1]
	flags := binary.BigEndian.Uint16(h[2:4])
	id := binary.BigEndian.Uint32(h[4:8])
	length := binary.BigEndian.Uint32(h[8:12])
	if typ != yamuxTypeData && typ != yamuxTypeWindowUpdate {
		return
	}
	g.wmu.Lock()
	defer g.wmu.Unlock()
	w := g.windows[id]
	if flags&yamuxFlagSYN != 0 && w == nil {
		w = &sendWindow{credit: initialStreamWindow, wake: make(chan struct{}, 1)}
		g.windows[id] = w
	}
	if w != nil && typ == yamuxTypeData {
		w.credit -= length
	}
}

// grant adds a window update of the peer to a stream this end opened.
func (g *guard) grant(id, delta uint32) {
	g.wmu.Lock()
	defer g.wmu.Unlock()
	if w := g.windows[id]; w != nil {
		w.credit += delta
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// wait waits until stream id's send window holds n bytes.
func (g *guard) wait(ctx context.Context, closed <-chan struct{}, id uint32, n int) error {
	need := uint32(min(max(n, 0), initialStreamWindow))
	for {
		g.wmu.Lock()
		w := g.windows[id]
		if w == nil || w.credit >= need {
			g.wmu.Unlock()
			return nil
		}
		wake := w.wake
		g.wmu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		case <-closed:
			return net.ErrClosed
		}
	}
}

func (g *guard) forget(id uint32) {
	g.wmu.Lock()
	delete(g.windows, id)
	g.wmu.Unlock()
}

// SetGuard makes c check what its peer sends against g and keep the send
// windows of the streams this end opens (WaitSendWindow). Call it before
// the session starts.
func (c *Conn) SetGuard(g Guard) { c.guard = newGuard(g) }

// GuardErr returns the *GuardError that ended reading, or nil.
func (c *Conn) GuardErr() error {
	if c.guard == nil {
		return nil
	}
	if v := c.guard.violation.Load(); v != nil {
		return v
	}
	return nil
}

// WaitSendWindow waits until the send window of stream id, a stream this
// end opened, can take n bytes at once, so that a write of n bytes is not
// split at the end of the window and left half sent. It returns ctx.Err()
// when ctx ends first, and net.ErrClosed when the connection closes. A
// write larger than yamux's initial window (256 KiB) waits for that much
// only, and may be split. Without SetGuard, or for a stream c does not
// know, it returns at once.
func (c *Conn) WaitSendWindow(ctx context.Context, id uint32, n int) error {
	if c.guard == nil {
		return nil
	}
	return c.guard.wait(ctx, c.closed, id, n)
}

// ForgetStream stops keeping the send window of stream id. The owner of a
// stream calls it once the stream is done.
func (c *Conn) ForgetStream(id uint32) {
	if c.guard != nil {
		c.guard.forget(id)
	}
}
