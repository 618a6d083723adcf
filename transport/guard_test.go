package transport_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/yamux"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"tradebridge/internal/testkit"
	"tradebridge/transport"
)

// session is one end of a yamux session over a WebSocket.
type session struct {
	conn *transport.Conn
	sess *yamux.Session
}

// pair connects a guarded server end (the relay's role) and a client end.
func pair(t *testing.T, g transport.Guard) (server, client session) {
	t.Helper()
	got := make(chan session, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		conn := transport.NewConn(context.Background(), ws)
		conn.SetDefaultClose(4005, "default")
		conn.SetGuard(g)
		sess, err := yamux.Server(conn, transport.YamuxConfig(zaptest.NewLogger(t).Named("server")))
		if err != nil {
			return
		}
		got <- session{conn, sess}
	}))
	t.Cleanup(srv.Close)
	ws, _, err := websocket.Dial(context.Background(), "ws"+srv.URL[len("http"):], nil)
	require.NoError(t, err)
	client.conn = transport.NewConn(context.Background(), ws)
	client.sess, err = yamux.Client(client.conn, transport.YamuxConfig(zaptest.NewLogger(t).Named("client")))
	require.NoError(t, err)
	server = <-got
	t.Cleanup(func() {
		client.sess.Close()
		server.sess.Close()
		<-server.sess.CloseChan()
	})
	return server, client
}

// A stream beyond Guard.MaxPeerStreams ends the session before yamux
// takes it: the server never accepts it, and the peer reads why.
func TestGuardRefusesPeerStreams(t *testing.T) {
	t.Parallel()
	server, client := pair(t, transport.Guard{MaxPeerStreams: 1})
	first, err := client.sess.OpenStream()
	require.NoError(t, err)
	_, err = first.Write([]byte("hello"))
	require.NoError(t, err)
	accepted, err := server.sess.AcceptStream()
	require.NoError(t, err)
	buf := make([]byte, 5)
	_, err = io.ReadFull(accepted, buf)
	require.NoError(t, err)

	// The stream's opening frame alone is what the guard refuses: the
	// session may already be closed when OpenStream returns.
	if second, err := client.sess.OpenStream(); err == nil {
		_, _ = second.Write(make([]byte, 128<<10))
	}
	_, err = server.sess.AcceptStream()
	require.Error(t, err, "the second stream is never accepted")
	var ge *transport.GuardError
	require.True(t, errors.As(server.conn.GuardErr(), &ge))
	require.ErrorIs(t, ge, transport.ErrPeerStream)
	require.Equal(t, uint32(3), ge.StreamID)

	<-client.sess.CloseChan()
	require.Eventually(t, func() bool { return client.conn.CloseStatus() != -1 }, testkit.Medium, time.Millisecond)
	require.Equal(t, 4005, client.conn.CloseStatus(), "the owner's default code")
	require.Equal(t, ge.Reason(), client.conn.CloseReason())
}

// WaitSendWindow tells when a frame fits the peer's window whole, as yamux
// counts it: a peer that does not read takes its window (1 MiB) and no
// more.
func TestWaitSendWindow(t *testing.T) {
	t.Parallel()
	server, client := pair(t, transport.Guard{})
	s, err := server.sess.OpenStream()
	require.NoError(t, err)
	_, err = s.Write([]byte{1})
	require.NoError(t, err)
	peer, err := client.sess.AcceptStream()
	require.NoError(t, err)

	const chunk = 64 << 10
	wait := func(n int) error {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		return server.conn.WaitSendWindow(ctx, s.StreamID(), n)
	}
	sent := 1
	for sent+chunk <= transport.StreamWindow {
		require.NoError(t, wait(chunk), "after %d bytes", sent)
		_ = s.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
		n, err := s.Write(make([]byte, chunk))
		require.NoError(t, err, "a write that fits does not wait")
		sent += n
	}
	left := transport.StreamWindow - sent
	require.NoError(t, wait(left))
	require.ErrorIs(t, wait(left+1), context.DeadlineExceeded)

	// The peer reads: its window update lets the writer go.
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Medium)
		defer cancel()
		errc <- server.conn.WaitSendWindow(ctx, s.StreamID(), chunk)
	}()
	_, err = io.ReadFull(peer, make([]byte, 600<<10))
	require.NoError(t, err)
	require.NoError(t, <-errc)

	server.conn.ForgetStream(s.StreamID())
	require.NoError(t, wait(transport.StreamWindow), "a stream it does not keep does not wait")
}

// yamux's per-frame log lines ("frame for missing stream") are capped, so
// a peer cannot flood the logs.
func TestYamuxLogLinesAreCapped(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.DebugLevel)
	l := transport.YamuxConfig(zap.New(core)).Logger
	for range 1000 {
		l.Printf("[WARN] yamux: frame for missing stream: %v", "hdr")
	}
	require.Equal(t, 20, logs.Len())
	for range 10 {
		l.Printf("[ERR] yamux: Failed to read header: %v", io.EOF) // debug: not capped
	}
	require.Equal(t, 30, logs.Len())
}
