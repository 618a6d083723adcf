package transport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/yamux"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"tradebridge/internal/testkit"
	"tradebridge/transport"
)

// A tunnel that one end closes on purpose, as the agent does when it shuts
// down (or the relay when it stops), logs nothing at warn level or above on
// either end: yamux's "[ERR] … Failed to read header: … EOF" is debug.
func TestNormalCloseLogsNoError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		close func(ctx context.CancelFunc, s *yamux.Session, c *transport.Conn)
	}{
		{"session close, then normal closure", func(cancel context.CancelFunc, s *yamux.Session, c *transport.Conn) {
			s.Close()
			_ = c.CloseWith(int(websocket.StatusNormalClosure), "")
		}},
		{"context ends first", func(cancel context.CancelFunc, s *yamux.Session, c *transport.Conn) {
			cancel()
			s.Close()
			_ = c.CloseWith(int(websocket.StatusNormalClosure), "")
		}},
		{"going away", func(cancel context.CancelFunc, s *yamux.Session, c *transport.Conn) {
			_ = c.CloseWith(int(websocket.StatusGoingAway), "shutting down")
			s.Close()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			core, logs := observer.New(zapcore.DebugLevel)
			log := zap.New(core)
			serverDone := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer close(serverDone)
				ws, err := websocket.Accept(w, r, nil)
				if err != nil {
					return
				}
				conn := transport.NewConn(r.Context(), ws)
				defer conn.CloseWith(int(websocket.StatusNormalClosure), "")
				sess, err := yamux.Server(conn, transport.YamuxConfig(log.Named("relay")))
				if err != nil {
					return
				}
				defer sess.Close()
				s, err := sess.AcceptStream()
				if err != nil {
					return
				}
				_, _ = io.Copy(s, s) // echo until the session ends
				<-sess.CloseChan()
			}))
			defer srv.Close()

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ws, _, err := websocket.Dial(ctx, "ws"+srv.URL[len("http"):], nil)
			require.NoError(t, err)
			conn := transport.NewConn(ctx, ws)
			sess, err := yamux.Client(conn, transport.YamuxConfig(log.Named("agent")))
			require.NoError(t, err)
			s, err := sess.OpenStream()
			require.NoError(t, err)
			_, err = s.Write([]byte("ping"))
			require.NoError(t, err)
			buf := make([]byte, 4)
			_, err = io.ReadFull(s, buf)
			require.NoError(t, err)

			tc.close(cancel, sess, conn)
			select {
			case <-serverDone:
			case <-time.After(testkit.Medium):
				t.Fatal("the server end did not notice the close")
			}
			time.Sleep(50 * time.Millisecond) // let both receive loops log
			for _, e := range logs.All() {
				require.Less(t, e.Level, zapcore.WarnLevel, "%s: %s", e.LoggerName, e.Message)
				require.NotContains(t, e.Message, "[ERR]", "%s: nothing reads like an error", e.LoggerName)
				if strings.HasSuffix(e.LoggerName, "yamux") {
					require.Equal(t, zapcore.DebugLevel, e.Level, "%s: %s", e.LoggerName, e.Message)
				}
			}
		})
	}
}

// yamux's own failures keep their level; only a normal close is debug.
func TestYamuxLogLevels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		format string
		arg    any
		level  zapcore.Level
		msg    string
	}{
		{"EOF", "[ERR] yamux: Failed to read header: %v", io.EOF, zapcore.DebugLevel, "Failed to read header: EOF"},
		{"wrapped EOF", "[ERR] yamux: Failed to read header: %v", fmt.Errorf("failed to get reader: %w", io.EOF), zapcore.DebugLevel, ""},
		{"closed connection", "[ERR] yamux: Failed to write header: %v", fmt.Errorf("write: %w", net.ErrClosed), zapcore.DebugLevel, ""},
		{"context canceled", "[ERR] yamux: Failed to read header: %v", fmt.Errorf("failed to read: %w", context.Canceled), zapcore.DebugLevel, ""},
		{"websocket 1000", "[ERR] yamux: Failed to read header: %v", websocket.CloseError{Code: websocket.StatusNormalClosure}, zapcore.DebugLevel, ""},
		{"websocket 1001", "[ERR] yamux: Failed to read header: %v", fmt.Errorf("x: %w", websocket.CloseError{Code: websocket.StatusGoingAway}), zapcore.DebugLevel, ""},
		{"the tunnel's own close code", "[ERR] yamux: Failed to read header: %v", fmt.Errorf("x: %w", websocket.CloseError{Code: 4006, Reason: "relay shutting down"}), zapcore.DebugLevel, ""},
		{"websocket 1011 is a failure", "[ERR] yamux: Failed to read header: %v", websocket.CloseError{Code: websocket.StatusInternalError}, zapcore.ErrorLevel, ""},
		{"a real failure", "[ERR] yamux: Failed to read header: %v", errors.New("connection reset"), zapcore.ErrorLevel, "Failed to read header: connection reset"},
		{"unexpected EOF is a failure", "[ERR] yamux: Failed to read header: %v", io.ErrUnexpectedEOF, zapcore.ErrorLevel, ""},
		{"keepalive timeout", "[ERR] yamux: keepalive failed: %v", yamux.ErrTimeout, zapcore.ErrorLevel, ""},
		{"warning", "[WARN] yamux: frame for missing stream: %v", "hdr", zapcore.WarnLevel, "frame for missing stream: hdr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			core, logs := observer.New(zapcore.DebugLevel)
			transport.YamuxConfig(zap.New(core)).Logger.Printf(tc.format, tc.arg)
			require.Equal(t, 1, logs.Len())
			e := logs.All()[0]
			require.Equal(t, tc.level, e.Level)
			require.Equal(t, "yamux", e.LoggerName)
			if tc.msg != "" {
				require.Equal(t, tc.msg, e.Message)
			}
		})
	}
}

// Close calls the function SetOnClose set before it waits for the peer's
// answer to the WebSocket close, which a peer that does not read never
// sends.
func TestOnCloseRunsBeforeTheCloseHandshake(t *testing.T) {
	t.Parallel()
	accepted := make(chan *websocket.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ws, err := websocket.Accept(w, r, nil); err == nil {
			accepted <- ws
		}
	}))
	defer srv.Close()
	peer, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	require.NoError(t, err)
	defer peer.CloseNow() // it never reads: no answer to the close
	conn := transport.NewConn(context.Background(), <-accepted)
	called := make(chan struct{})
	conn.SetOnClose(func() { close(called) })
	closed := make(chan struct{})
	go func() { defer close(closed); _ = conn.Close() }()
	select {
	case <-called:
	case <-time.After(testkit.Long):
		t.Fatal("Close did not call the function")
	}
	select {
	case <-closed:
		t.Fatal("Close returned before the close handshake ended; the test proves nothing")
	default:
	}
	peer.CloseNow() // ends the handshake
	<-closed
}
