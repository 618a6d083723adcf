package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func hdr(typ uint8, flags uint16, id, length uint32) []byte {
	b := make([]byte, yamuxHeaderSize)
	b[1] = typ
	binary.BigEndian.PutUint16(b[2:4], flags)
	binary.BigEndian.PutUint32(b[4:8], id)
	binary.BigEndian.PutUint32(b[8:12], length)
	return b
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// chunked reads its data n bytes at a time.
type chunked struct {
	data []byte
	n    int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	k := min(c.n, len(p), len(c.data))
	copy(p, c.data[:k])
	c.data = c.data[k:]
	return k, nil
}

// The guard parses the frames of the byte stream however it is cut, and
// stops the header that breaks it before its last byte reaches yamux.
func TestGuardParsesFrames(t *testing.T) {
	t.Parallel()
	// A body that looks like a SYN header must not count.
	fakeSYN := hdr(yamuxTypeData, yamuxFlagSYN, 99, 0)
	open1 := hdr(yamuxTypeWindowUpdate, yamuxFlagSYN, 1, 0)
	data1 := cat(hdr(yamuxTypeData, 0, 1, uint32(len(fakeSYN))), fakeSYN)
	ping := hdr(yamuxTypePing, yamuxFlagSYN, 0, 7)
	pong := hdr(yamuxTypePing, 2, 0, 7) // ACK: an answer, not a ping
	open3 := cat(hdr(yamuxTypeData, yamuxFlagSYN, 3, 4), []byte("abcd"))
	for _, tc := range []struct {
		name      string
		guard     Guard
		stream    []byte
		delivered int   // bytes yamux may see
		want      error // nil: none
	}{
		{"one stream allowed", Guard{MaxPeerStreams: 1}, cat(open1, data1, ping, pong), len(open1) + len(data1) + 2*yamuxHeaderSize, nil},
		{"a second stream", Guard{MaxPeerStreams: 1}, cat(open1, data1, open3), len(open1) + len(data1) + yamuxHeaderSize - 1, ErrPeerStream},
		{"no limit", Guard{}, cat(open1, open3, open3), 3*yamuxHeaderSize + 8, nil},
		{"pings within the burst", Guard{PingBurst: 3}, cat(ping, ping, ping, pong, pong), 5 * yamuxHeaderSize, nil},
		{"a ping flood", Guard{PingBurst: 3}, cat(ping, ping, ping, ping, ping), 4*yamuxHeaderSize - 1, ErrPingFlood},
		{"not yamux", Guard{MaxPeerStreams: 1}, cat([]byte("GET / HTTP/1.1\r\n\r\n"), open3, open3), 18 + 2*16, nil},
	} {
		for _, n := range []int{1, 5, 12, 13, 4096} {
			t.Run(fmt.Sprintf("%s/chunks of %d", tc.name, n), func(t *testing.T) {
				t.Parallel()
				g := newGuard(tc.guard)
				src := &chunked{data: tc.stream, n: n}
				var got []byte
				var err error
				buf := make([]byte, 64)
				for {
					var k int
					k, err = g.read(src, buf)
					got = append(got, buf[:k]...)
					if err != nil {
						break
					}
				}
				require.Equal(t, tc.stream[:tc.delivered], got, "chunks of %d", n)
				if tc.want == nil {
					require.ErrorIs(t, err, io.EOF)
					return
				}
				var ge *GuardError
				require.True(t, errors.As(err, &ge), "%v", err)
				require.ErrorIs(t, err, tc.want)
				_, again := g.read(src, buf)
				require.Equal(t, err, again, "reading stays failed")
			})
		}
	}
}

// Pings come back into the budget over time.
func TestGuardPingBudgetRefills(t *testing.T) {
	t.Parallel()
	g := newGuard(Guard{PingBurst: 2, PingInterval: 20 * time.Millisecond})
	ping := hdr(yamuxTypePing, yamuxFlagSYN, 0, 1)
	for range 5 {
		for range 2 {
			require.Nil(t, g.header(ping))
		}
		time.Sleep(45 * time.Millisecond)
	}
	require.Nil(t, g.header(ping))
	require.Nil(t, g.header(ping))
	require.NotNil(t, g.header(ping))
}

// The send window of a stream this end opened follows yamux's arithmetic:
// 256 KiB to start, plus the peer's updates, minus the data sent, modulo
// 2^32.
func TestGuardSendWindow(t *testing.T) {
	t.Parallel()
	g := newGuard(Guard{})
	g.wrote(hdr(yamuxTypeWindowUpdate, yamuxFlagSYN, 2, 768<<10)) // our SYN (our receive window)
	require.Equal(t, uint32(initialStreamWindow), g.windows[2].credit)
	g.header(hdr(yamuxTypeWindowUpdate, 2, 2, 768<<10)) // the peer's ACK
	require.Equal(t, uint32(1<<20), g.windows[2].credit)
	g.wrote(hdr(yamuxTypeData, 0, 2, 1000))
	require.Equal(t, uint32(1<<20-1000), g.windows[2].credit)
	g.header(hdr(yamuxTypeWindowUpdate, 0, 2, 1<<32-(1<<20-1000))) // taken back
	require.Zero(t, g.windows[2].credit)
	g.header(hdr(yamuxTypeWindowUpdate, 0, 4, 1000)) // not ours
	require.NotContains(t, g.windows, uint32(4))
	g.forget(2)
	require.Empty(t, g.windows)
}
