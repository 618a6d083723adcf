package protocol

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Type identifies the kind of a frame. The values are part of the wire
// format and never change meaning; new kinds take new numbers.
type Type uint8

// Frame types.
const (
	// TypeHello is the agent's first frame, on the first stream it opens.
	TypeHello Type = 1
	// TypeWelcome is the relay's answer to an accepted Hello.
	TypeWelcome Type = 2
	// TypeRequest calls an RPC function on the agent.
	TypeRequest Type = 3
	// TypeResponse carries the result or error of one Request.
	TypeResponse Type = 4
	// TypeCancel abandons a Request that is still running.
	TypeCancel Type = 5
	// TypeEvent carries an unsolicited update from the agent.
	TypeEvent Type = 6
)

// String returns the type's name, for logs.
func (t Type) String() string {
	switch t {
	case TypeHello:
		return "hello"
	case TypeWelcome:
		return "welcome"
	case TypeRequest:
		return "request"
	case TypeResponse:
		return "response"
	case TypeCancel:
		return "cancel"
	case TypeEvent:
		return "event"
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// Known reports whether t is a frame type of this protocol version.
func (t Type) Known() bool { return t >= TypeHello && t <= TypeEvent }

// HeaderSize is the size of a frame header: a big-endian uint32 payload
// length followed by the one-byte Type.
const HeaderSize = 5

// MaxFrameSize is the largest payload a peer may send. A larger length in a
// header is a protocol violation: the receiver closes the connection.
const MaxFrameSize = 4 << 20

// ErrFrameTooLarge reports a frame whose announced payload exceeds MaxFrameSize.
var ErrFrameTooLarge = errors.New("protocol: frame exceeds maximum size")

// ErrFrameTimeout reports a frame that did not arrive whole within the
// Reader's frame timeout once its first byte had arrived (see
// Reader.SetFrameTimeout).
var ErrFrameTimeout = errors.New("protocol: frame not completed in time")

// ErrMalformedFrame reports a frame that is not valid for its type: an
// unknown type or a payload that is not the JSON object the type requires.
var ErrMalformedFrame = errors.New("protocol: malformed frame")

// AppendFrame appends a frame of type t with the given JSON payload to dst.
func AppendFrame(dst []byte, t Type, payload []byte) ([]byte, error) {
	if len(payload) > MaxFrameSize {
		return dst, ErrFrameTooLarge
	}
	var h [HeaderSize]byte
	binary.BigEndian.PutUint32(h[:4], uint32(len(payload)))
	h[4] = byte(t)
	dst = append(dst, h[:]...)
	return append(dst, payload...), nil
}

// Writer writes frames to an underlying stream. Each frame reaches the
// stream in a single Write call, so concurrent writers never interleave.
// It is safe for concurrent use.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

// NewWriter returns a Writer that writes frames to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Marshal is json.Marshal without encoding/json's HTML escaping: the
// tunnel's payloads (and the results and error details they carry to the
// relay's callers) keep "&", "<" and ">" as written rather than as
// \u0026, \u003c and \u003e.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// WriteFrame marshals v as JSON (Marshal) and writes it as one frame of
// type t.
func (fw *Writer) WriteFrame(t Type, v any) error {
	payload, err := Marshal(v)
	if err != nil {
		return fmt.Errorf("protocol: encode %s: %w", t, err)
	}
	return fw.WriteRaw(t, payload)
}

// WriteRaw writes payload, which must already be a JSON object, as one frame
// of type t.
func (fw *Writer) WriteRaw(t Type, payload []byte) error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	buf, err := AppendFrame(fw.buf[:0], t, payload)
	if err != nil {
		return err
	}
	_, err = fw.w.Write(buf)
	if cap(buf) <= 64<<10 {
		fw.buf = buf // keep a modest buffer for the next frame
	}
	return err
}

// ReaderBufferSize is the size of a Reader's read buffer, which it holds
// besides the payload of the largest frame read so far.
const ReaderBufferSize = 16 << 10

// Reader reads frames from an underlying stream. It is not safe for
// concurrent use.
type Reader struct {
	src io.Reader
	r   *bufio.Reader
	max int
	buf []byte

	// Set by SetFrameTimeout.
	dl      deadliner
	timeout time.Duration
	armed   bool // a frame deadline is set on dl
}

// deadliner is a stream with read deadlines, such as a net.Conn.
type deadliner interface {
	SetReadDeadline(time.Time) error
}

// NewReader returns a Reader of frames from r that refuses payloads larger
// than max bytes (MaxFrameSize when max is 0 or larger than MaxFrameSize).
func NewReader(r io.Reader, max int) *Reader {
	return NewReaderSize(r, max, ReaderBufferSize)
}

// NewReaderSize is NewReader with a read buffer of size bytes instead of
// ReaderBufferSize (16 at least). A small buffer suits a stream that
// buffers what it receives already (a yamux stream) and waits most of its
// life: the relay holds one such Reader per stream of every tunnel.
// Frames larger than the buffer are read past it, straight into the
// payload.
func NewReaderSize(r io.Reader, max, size int) *Reader {
	if max <= 0 || max > MaxFrameSize {
		max = MaxFrameSize
	}
	return &Reader{src: r, r: bufio.NewReaderSize(r, size), max: max}
}

// SetFrameTimeout bounds the time a frame takes to arrive: once its first
// byte has arrived, the rest must follow within d, else ReadFrame fails
// with ErrFrameTimeout (the stream is then out of sync). Between frames
// there is no deadline. It needs a stream with read deadlines
// (SetReadDeadline, as net.Conn has), which the Reader then owns: nobody
// else may set them. d <= 0, or a stream without deadlines, turns the
// bound off.
func (fr *Reader) SetFrameTimeout(d time.Duration) {
	dl, ok := fr.src.(deadliner)
	if !ok || d <= 0 {
		fr.dl, fr.timeout = nil, 0
		return
	}
	fr.dl, fr.timeout = dl, d
}

// begin waits, without a deadline, for the next frame's first byte, and
// then sets the frame's deadline unless the whole frame is buffered.
func (fr *Reader) begin() error {
	if fr.armed {
		fr.armed = false
		if err := fr.dl.SetReadDeadline(time.Time{}); err != nil {
			return err
		}
	}
	if _, err := fr.r.Peek(1); err != nil {
		return err
	}
	if fr.r.Buffered() >= HeaderSize {
		h, _ := fr.r.Peek(HeaderSize) // buffered: does not read
		if n := binary.BigEndian.Uint32(h[:4]); uint64(fr.r.Buffered()) >= HeaderSize+uint64(n) {
			return nil // the whole frame is here
		}
	}
	fr.armed = true
	return fr.dl.SetReadDeadline(time.Now().Add(fr.timeout))
}

// failed reports a read error, as ErrFrameTimeout when the frame's
// deadline passed.
func (fr *Reader) failed(err error) error {
	if fr.armed && isTimeout(err) {
		return fmt.Errorf("%w: %w", ErrFrameTimeout, err)
	}
	return err
}

func isTimeout(err error) bool {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

// ReadFrame reads the next frame. The returned payload is valid until the
// next call. An oversized length yields ErrFrameTooLarge, an unknown type
// ErrMalformedFrame, and a frame that takes longer than the frame timeout
// ErrFrameTimeout; the stream is then out of sync and must be closed.
func (fr *Reader) ReadFrame() (Type, []byte, error) {
	if fr.dl != nil {
		if err := fr.begin(); err != nil {
			return 0, nil, err
		}
	}
	var h [HeaderSize]byte
	if _, err := io.ReadFull(fr.r, h[:]); err != nil {
		return 0, nil, fr.failed(err)
	}
	n := binary.BigEndian.Uint32(h[:4])
	t := Type(h[4])
	if n > uint32(fr.max) {
		return t, nil, ErrFrameTooLarge
	}
	if !t.Known() {
		return t, nil, fmt.Errorf("%w: unknown type %d", ErrMalformedFrame, uint8(t))
	}
	if cap(fr.buf) < int(n) {
		fr.buf = make([]byte, n)
	}
	p := fr.buf[:n]
	if _, err := io.ReadFull(fr.r, p); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return t, nil, fr.failed(err)
	}
	return t, p, nil
}

// Decode unmarshals a frame payload into v, reporting ErrMalformedFrame when
// it is not the expected JSON.
func Decode(payload []byte, v any) error {
	if err := json.Unmarshal(payload, v); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformedFrame, err)
	}
	return nil
}
