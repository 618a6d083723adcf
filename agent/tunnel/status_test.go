package tunnel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/yamux"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/transport"
)

const testToken = "tb_agent_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"

// nopHandler answers every call with null.
type nopHandler struct{}

func (nopHandler) Handle(context.Context, *protocol.Request) (json.RawMessage, *protocol.Error) {
	return nil, nil
}

// statusRelay is a fake relay: it refuses the tunnel with refuse (an
// HTTP status) when set, and otherwise welcomes each connection with the
// session id s-<n> and its clock ahead of the test's by ahead; a send on
// drop ends the connection with close code 4006 (shutting down).
type statusRelay struct {
	url   string
	drop  chan struct{}
	conns atomic.Int32
}

func newStatusRelay(t *testing.T, ctx context.Context, refuse int, ahead time.Duration) *statusRelay {
	t.Helper()
	r := &statusRelay{drop: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if refuse != 0 {
			http.Error(w, "no", refuse)
			return
		}
		ws, err := websocket.Accept(w, req, &websocket.AcceptOptions{
			Subprotocols:    []string{protocol.Subprotocol(protocol.ProtocolVersion)},
			CompressionMode: websocket.CompressionDisabled,
		})
		if err != nil {
			return
		}
		conn := transport.NewConn(ctx, ws)
		sess, err := yamux.Server(conn, transport.YamuxConfig(zap.NewNop()))
		if err != nil {
			return
		}
		defer sess.Close()
		control, err := sess.AcceptStream()
		if err != nil {
			return
		}
		if typ, _, err := protocol.NewReader(control, 0).ReadFrame(); err != nil || typ != protocol.TypeHello {
			return
		}
		n := r.conns.Add(1)
		if protocol.NewWriter(control).WriteFrame(protocol.TypeWelcome, protocol.Welcome{
			ProtocolVersion: protocol.ProtocolVersion, SessionID: fmt.Sprintf("s-%d", n),
			ServerTime: time.Now().Add(ahead).UnixMilli()}) != nil {
			return
		}
		select {
		case <-ctx.Done():
			conn.CloseWith(int(websocket.StatusNormalClosure), "")
		case <-r.drop:
			conn.CloseWith(protocol.CloseShuttingDown, "shutting down")
		}
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

// runClient runs a Client against url until the test ends.
func runClient(t *testing.T, ctx context.Context, url string) *Client {
	t.Helper()
	c, err := New(Options{RelayURL: url, Token: testToken, Handler: nopHandler{},
		Hello:       func(context.Context) (protocol.Hello, error) { return protocol.Hello{Platform: "sim"}, nil },
		BackoffBase: 10 * time.Millisecond, BackoffCap: 60 * time.Millisecond, PingEvery: 20 * time.Millisecond})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		c.Close()
		<-done
	})
	return c
}

// waitStatus waits until the Client's status satisfies ok.
func waitStatus(t *testing.T, c *Client, what string, ok func(protocol.TunnelDiagnostic) bool) protocol.TunnelDiagnostic {
	t.Helper()
	deadline := time.Now().Add(testkit.Long)
	for {
		st := c.Status()
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: status %+v", what, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The status names the session and since when, the round trip measured
// right after the handshake and again and again, the relay's clock skew,
// and after a reconnect how many there were and why the last connection
// ended.
func TestStatusOfAConnection(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	relay := newStatusRelay(t, ctx, 0, 3*time.Second)
	before := time.Now()
	c := runClient(t, ctx, relay.url)

	st := waitStatus(t, c, "the first connection", func(st protocol.TunnelDiagnostic) bool { return st.Connected })
	require.Equal(t, "s-1", st.SessionID)
	require.NotNil(t, st.ConnectedAt)
	require.WithinRange(t, *st.ConnectedAt, before, time.Now())
	require.Positive(t, st.RTTMillis, "the round trip is measured right after the handshake")
	require.InDelta(t, 3000, st.ClockSkewMillis, 500, "the relay's clock is 3 s ahead")
	require.Zero(t, st.Reconnects)
	require.Empty(t, st.LastError)

	first := st.RTTMillis
	waitStatus(t, c, "a new round trip", func(st protocol.TunnelDiagnostic) bool { return st.RTTMillis != first })

	relay.drop <- struct{}{}
	st = waitStatus(t, c, "the second connection", func(st protocol.TunnelDiagnostic) bool { return st.SessionID == "s-2" })
	require.True(t, st.Connected)
	require.Equal(t, 1, st.Reconnects)
	require.Equal(t, "the relay shut down", st.LastError)
}

// A refused token is why the connection failed; the status never holds
// the token.
func TestStatusOfARefusal(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	relay := newStatusRelay(t, ctx, http.StatusUnauthorized, 0)
	c := runClient(t, ctx, relay.url)
	st := waitStatus(t, c, "the refusal", func(st protocol.TunnelDiagnostic) bool { return st.LastError != "" })
	require.False(t, st.Connected)
	require.Equal(t, "the relay refused the agent token", st.LastError)
	require.Nil(t, st.ConnectedAt)
	require.Zero(t, st.RTTMillis)

	c.setLastError("dial: GET with Bearer " + testToken + " failed")
	require.NotContains(t, c.Status().LastError, testToken)
}

func TestEndSentence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		code int
		want string
	}{
		{ErrUnauthorized, -1, "the relay refused the agent token"},
		{ErrVersionUnsupported, -1, "the relay does not support this agent's protocol version"},
		{nil, protocol.CloseVersionUnsupported, "the relay does not support this agent's protocol version"},
		{nil, protocol.CloseReplaced, "another agent connected with the same account and replaced this one"},
		{nil, protocol.CloseRevoked, "the agent token was revoked"},
		{errors.New("tunnel: relay answered HTTP 502"), -1, "connecting failed: relay answered HTTP 502"},
		{nil, protocol.CloseShuttingDown, "the relay shut down"},
		{nil, protocol.CloseProtocolError, "the relay closed the tunnel (4005 protocol_error)"},
		{nil, 1001, "the relay closed the tunnel (1001)"},
		{nil, -1, "the connection to the relay was lost"},
	} {
		require.Equal(t, tc.want, endSentence(tc.err, tc.code), "%v %d", tc.err, tc.code)
	}
}

func TestClockSkew(t *testing.T) {
	t.Parallel()
	sent := time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)
	read := sent.Add(100 * time.Millisecond)
	for _, tc := range []struct {
		server int64
		want   int64
	}{
		{0, 0}, // a relay older than protocol 5 sends no time
		{sent.Add(50 * time.Millisecond).UnixMilli(), 0},
		{sent.Add(50*time.Millisecond + 2*time.Second).UnixMilli(), 2000},
		{sent.Add(50*time.Millisecond - 90*time.Second).UnixMilli(), -90000},
	} {
		require.Equal(t, tc.want, clockSkew(tc.server, sent, read))
	}
}
