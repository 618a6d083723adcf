package transport_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/transport"
)

// clientFrame is a masked binary WebSocket frame, as a client sends it.
func clientFrame(payload []byte) []byte {
	f := []byte{0x82}
	switch n := len(payload); {
	case n < 126:
		f = append(f, 0x80|byte(n))
	case n <= 0xffff:
		f = append(f, 0x80|126)
		f = binary.BigEndian.AppendUint16(f, uint16(n))
	default:
		f = append(f, 0x80|127)
		f = binary.BigEndian.AppendUint64(f, uint64(n))
	}
	mask := []byte{1, 2, 3, 4}
	f = append(f, mask...)
	for i, b := range payload {
		f = append(f, b^mask[i%4])
	}
	return f
}

// readServerFrame reads one unmasked frame and returns its payload.
func readServerFrame(t *testing.T, r *bufio.Reader) []byte {
	t.Helper()
	var h [2]byte
	_, err := io.ReadFull(r, h[:])
	require.NoError(t, err)
	require.Equal(t, byte(0x82), h[0], "a final binary frame")
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var l [2]byte
		_, err = io.ReadFull(r, l[:])
		n = uint64(binary.BigEndian.Uint16(l[:]))
	case 127:
		var l [8]byte
		_, err = io.ReadFull(r, l[:])
		n = binary.BigEndian.Uint64(l[:])
	}
	require.NoError(t, err)
	p := make([]byte, n)
	_, err = io.ReadFull(r, p)
	require.NoError(t, err)
	return p
}

// Accept upgrades with its small buffers and loses none of the bytes a
// client sent right behind its upgrade request (which net/http read
// ahead), whatever their size; messages larger than the buffers cross
// both ways whole.
func TestAcceptKeepsBytesReadAhead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		size int
	}{
		{"small", 10},
		{"larger than the buffers", 3 * transport.AcceptBufferSize},
		{"larger than net/http's read-ahead", 40 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ws, err := transport.Accept(w, r, nil)
				if err != nil {
					return
				}
				defer ws.CloseNow()
				ws.SetReadLimit(1 << 20)
				ctx := context.Background()
				for {
					typ, p, err := ws.Read(ctx)
					if err != nil {
						return
					}
					if err := ws.Write(ctx, typ, p); err != nil {
						return
					}
				}
			}))
			defer srv.Close()

			conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
			require.NoError(t, err)
			defer conn.Close()
			require.NoError(t, conn.SetDeadline(time.Now().Add(testkit.Long)))
			first := bytes.Repeat([]byte("a"), tc.size)
			second := bytes.Repeat([]byte("b"), tc.size)
			req := "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
				"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
			// The request and two messages in one write: the server reads
			// some of the messages with the request.
			_, err = conn.Write(append(append([]byte(req), clientFrame(first)...), clientFrame(second)...))
			require.NoError(t, err)

			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			require.NoError(t, err)
			require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
			require.Equal(t, first, readServerFrame(t, br))
			require.Equal(t, second, readServerFrame(t, br))
		})
	}
}

// A tunnel's WebSocket through Accept carries messages of every size
// both ways, as websocket.Accept's does.
func TestAcceptRoundTrip(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := transport.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ws.SetReadLimit(1 << 20)
		ctx := context.Background()
		for {
			typ, p, err := ws.Read(ctx)
			if err != nil {
				return
			}
			if err := ws.Write(ctx, typ, p); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	require.NoError(t, err)
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	for _, size := range []int{0, 1, transport.AcceptBufferSize - 20, transport.AcceptBufferSize, 5 * transport.AcceptBufferSize, 512 << 10} {
		msg := bytes.Repeat([]byte{byte(size)}, size)
		require.NoError(t, c.Write(ctx, websocket.MessageBinary, msg))
		_, got, err := c.Read(ctx)
		require.NoError(t, err)
		require.Equal(t, msg, got, "size %d", size)
	}
}
