package transport

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"

	"github.com/coder/websocket"
)

// AcceptBufferSize is the size of the read buffer and of the write buffer
// of a WebSocket that Accept upgrades, instead of net/http's 4 KiB each.
// An idle tunnel holds both for its life, and yamux buffers what it reads
// already; a message larger than a buffer is read and written past it.
const AcceptBufferSize = 1 << 10

// Accept is websocket.Accept with read and write buffers of
// AcceptBufferSize bytes: the relay holds one WebSocket per agent, most of
// them idle.
func Accept(w http.ResponseWriter, r *http.Request, opts *websocket.AcceptOptions) (*websocket.Conn, error) {
	return websocket.Accept(smallBuffers{w}, r, opts)
}

// smallBuffers hands websocket.Accept the hijacked connection with
// buffers of AcceptBufferSize. The bytes net/http read ahead are in the new
// reader's buffer, not behind it: websocket.Accept keeps what is buffered
// and reads the connection itself from then on.
type smallBuffers struct{ http.ResponseWriter }

func (w smallBuffers) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w smallBuffers) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	if err := brw.Writer.Flush(); err != nil {
		conn.Close()
		return nil, nil, err
	}
	br := bufio.NewReaderSize(conn, AcceptBufferSize)
	if n := brw.Reader.Buffered(); n > 0 {
		ahead, _ := brw.Reader.Peek(n)
		br = bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(ahead)), conn), max(AcceptBufferSize, n))
		if _, err := br.Peek(n); err != nil { // the bytes read ahead, and nothing of conn
			conn.Close()
			return nil, nil, err
		}
	}
	return conn, bufio.NewReadWriter(br, bufio.NewWriterSize(conn, AcceptBufferSize)), nil
}
