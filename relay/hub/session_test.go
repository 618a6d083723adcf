package hub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/yamux"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/hub"
	"tradebridge/transport"
)

// sessionLog records the history entries and the agents' events the hub
// publishes.
type sessionLog struct {
	mu     sync.Mutex
	events []agentcall.SessionEvent
	kinds  []string // the agents' events' kinds
}

func (l *sessionLog) record(e agentcall.SessionEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *sessionLog) onEvent(e protocol.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.kinds = append(l.kinds, e.Kind)
}

func (l *sessionLog) all() []agentcall.SessionEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]agentcall.SessionEvent(nil), l.events...)
}

// wait returns the first entry of the kind for the session (any session
// when sessionID is ""), waiting for it.
func (l *sessionLog) wait(t *testing.T, kind agentcall.SessionKind, sessionID string) agentcall.SessionEvent {
	t.Helper()
	var found agentcall.SessionEvent
	require.Eventually(t, func() bool {
		for _, e := range l.all() {
			if e.Kind == kind && (sessionID == "" || e.SessionID == sessionID) {
				found = e
				return true
			}
		}
		return false
	}, testkit.Medium, 5*time.Millisecond, "no %s entry for %q in %v", kind, sessionID, l.all())
	return found
}

func newSessionEnv(t *testing.T) (*env, *sessionLog) {
	log := &sessionLog{}
	e := newEnvWith(t, func(o *hub.Options) {
		o.Events = spine{session: log.record, event: log.onEvent}
		o.HandshakeTimeout = 300 * time.Millisecond
	})
	return e, log
}

// Every way a session ends is recorded with its reason, after its start,
// and the start carries the agent's Hello and address.
func TestSessionHistoryReasons(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reason string
		end    func(e *env, a *agentUnderTest)
	}{
		{agentcall.ReasonAgentClosed, func(_ *env, a *agentUnderTest) { a.stop() }},
		{agentcall.ReasonConnectionLost, func(_ *env, a *agentUnderTest) { a.dialer.kill() }},
		{agentcall.ReasonRevoked, func(e *env, _ *agentUnderTest) { e.auth.Revoke("agent-a") }},
		{agentcall.ReasonShuttingDown, func(e *env, _ *agentUnderTest) { e.hub.Close() }},
		{agentcall.ReasonReplaced, func(e *env, _ *agentUnderTest) { e.startAgent("agent-a", "second") }},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			t.Parallel()
			e, log := newSessionEnv(t)
			before := time.Now()
			a := e.startAgent("agent-a", "A")
			info := e.waitConnected("usr_a")
			start := log.wait(t, agentcall.SessionStarted, info.SessionID)
			require.Equal(t, agentcall.SessionEvent{Kind: agentcall.SessionStarted, UserID: "usr_a", SessionID: info.SessionID,
				At: info.ConnectedAt, AgentVersion: "test", ProtocolVersion: protocol.ProtocolVersion, Platform: "fake",
				RemoteAddr: "127.0.0.1"}, start)
			require.False(t, start.At.Before(before))
			require.Equal(t, "127.0.0.1", info.RemoteAddr)

			tc.end(e, a)
			end := log.wait(t, agentcall.SessionEnded, info.SessionID)
			require.Equal(t, tc.reason, end.Reason)
			require.Equal(t, "usr_a", end.UserID)
			require.False(t, end.At.Before(start.At))
			var order []string
			for _, ev := range log.all() {
				if ev.SessionID == info.SessionID {
					order = append(order, string(ev.Kind))
				}
			}
			require.Equal(t, []string{"started", "ended"}, order, "one start, one end, in order")
			if tc.reason == agentcall.ReasonReplaced {
				newer := e.waitConnected("usr_a")
				require.NotEqual(t, info.SessionID, newer.SessionID)
				log.wait(t, agentcall.SessionStarted, newer.SessionID)
			}
		})
	}
}

// A connect refused before any session began is recorded with no session:
// a version the relay does not speak (before or after the upgrade), no
// Hello in time.
func TestRefusedHandshakesAreRecorded(t *testing.T) {
	t.Parallel()
	e, log := newSessionEnv(t)

	// Before the upgrade: no version of ours.
	_, resp, err := dialRaw(t, e, "agent-a", protocol.Subprotocol(99))
	require.Error(t, err)
	resp.Body.Close()
	got := log.wait(t, agentcall.SessionRefused, "")
	require.Equal(t, agentcall.ReasonVersionUnsupported, got.Reason)
	require.Equal(t, 99, got.ProtocolVersion, "the version the agent offered")
	require.Equal(t, "usr_a", got.UserID)
	require.Empty(t, got.SessionID)
	require.Equal(t, "127.0.0.1", got.RemoteAddr)

	// An invalid token is no user's: nothing is recorded.
	_, resp, err = dialRaw(t, e, "nope", protocol.Subprotocol(99))
	require.Error(t, err)
	resp.Body.Close()

	// After the upgrade: no Hello.
	ws, _, err := dialRaw(t, e, "agent-a", protocol.Subprotocol(protocol.ProtocolVersion))
	require.NoError(t, err)
	require.Equal(t, websocket.StatusCode(protocol.CloseBadHandshake), closeCode(t, ws))
	ws.CloseNow()
	require.Eventually(t, func() bool { return len(log.all()) == 2 }, testkit.Medium, 5*time.Millisecond, "%v", log.all())

	// A Hello of another version than the subprotocol's.
	ws, _, err = dialRaw(t, e, "agent-a", protocol.Subprotocol(protocol.ProtocolVersion))
	require.NoError(t, err)
	conn := transport.NewConn(context.Background(), ws)
	sess, err := yamux.Client(conn, transport.YamuxConfig(zaptest.NewLogger(t)))
	require.NoError(t, err)
	control, err := sess.OpenStream()
	require.NoError(t, err)
	// The relay may end the session as soon as it has read the Hello,
	// before the write returns: the refusal below is what counts.
	_ = protocol.NewWriter(control).WriteFrame(protocol.TypeHello,
		protocol.Hello{ProtocolVersion: 1, AgentVersion: "0.9.0", Platform: "sim"})
	<-sess.CloseChan()
	require.Eventually(t, func() bool { return conn.CloseStatus() != -1 }, testkit.Medium, time.Millisecond)
	require.Equal(t, protocol.CloseVersionUnsupported, conn.CloseStatus())

	require.Eventually(t, func() bool { return len(log.all()) == 3 }, testkit.Medium, 5*time.Millisecond, "%v", log.all())
	var reasons []string
	for _, ev := range log.all() {
		require.Equal(t, agentcall.SessionRefused, ev.Kind)
		require.Empty(t, ev.SessionID)
		reasons = append(reasons, ev.Reason)
	}
	require.Equal(t, []string{agentcall.ReasonVersionUnsupported, agentcall.ReasonBadHandshake, agentcall.ReasonVersionUnsupported}, reasons)
	last := log.all()[2]
	require.Equal(t, "0.9.0", last.AgentVersion, "what the Hello said is kept")
	require.Equal(t, 1, last.ProtocolVersion)
	require.Equal(t, "sim", last.Platform)
	require.False(t, e.hub.Connected("usr_a"))
}

// The Welcome carries the relay's clock.
func TestWelcomeCarriesServerTime(t *testing.T) {
	t.Parallel()
	e, _ := newSessionEnv(t)
	ws, _, err := dialRaw(t, e, "agent-a", protocol.Subprotocol(protocol.ProtocolVersion))
	require.NoError(t, err)
	conn := transport.NewConn(context.Background(), ws)
	sess, err := yamux.Client(conn, transport.YamuxConfig(zaptest.NewLogger(t)))
	require.NoError(t, err)
	defer sess.Close()
	control, err := sess.OpenStream()
	require.NoError(t, err)
	before := time.Now().UnixMilli()
	require.NoError(t, protocol.NewWriter(control).WriteFrame(protocol.TypeHello, protocol.Hello{ProtocolVersion: protocol.ProtocolVersion, Platform: "raw"}))
	typ, payload, err := protocol.NewReader(control, 0).ReadFrame()
	require.NoError(t, err)
	after := time.Now().UnixMilli()
	require.Equal(t, protocol.TypeWelcome, typ)
	var w protocol.Welcome
	require.NoError(t, protocol.Decode(payload, &w))
	require.NotEmpty(t, w.SessionID)
	require.GreaterOrEqual(t, w.ServerTime, before)
	require.LessOrEqual(t, w.ServerTime, after)
}

func diagnosticsEvent(t *testing.T, seq uint64, d any) protocol.Event {
	t.Helper()
	data, err := json.Marshal(d)
	require.NoError(t, err)
	return protocol.Event{Seq: seq, Kind: protocol.EventDiagnostics, Data: data}
}

// EventDiagnostics is kept for the live tunnel and published as a history
// entry after the session's start, re-encoded and bounded; it is not
// published as an agent's event.
func TestDiagnosticsEventIsKept(t *testing.T) {
	t.Parallel()
	e, log := newSessionEnv(t)
	a := dialAgent(t, e, "agent-a")
	info := e.waitConnected("usr_a")
	require.Nil(t, info.Diagnostics)

	d := protocol.Diagnostics{AgentVersion: "1.2.3", OS: "windows/amd64", Bridge: protocol.BridgeDiagnostic{Kind: "sim", Reachable: true,
		Connections: []protocol.Connection{{Name: "Sim", Status: "Connected", Accounts: []string{"Sim101"}}}}}
	for i := range protocol.MaxDiagnosticErrors + 10 {
		d.Errors = append(d.Errors, protocol.ErrorCount{Level: "warn", Message: fmt.Sprintf("m%d", i), Count: 1})
	}
	raw := map[string]any{"agentVersion": "1.2.3", "os": "windows/amd64", "secret": "not in the contract",
		"bridge": d.Bridge, "errors": d.Errors}
	w := protocol.NewWriter(a.control)
	require.NoError(t, w.WriteFrame(protocol.TypeEvent, diagnosticsEvent(t, 1, raw)))
	require.NoError(t, w.WriteFrame(protocol.TypeEvent, protocol.Event{Seq: 2, Kind: protocol.EventOrder, Data: json.RawMessage(`{}`)}))

	got := log.wait(t, agentcall.SessionDiagnostics, info.SessionID)
	require.NotContains(t, string(got.Diagnostics), "secret", "only the contract's fields are kept")
	var back protocol.Diagnostics
	require.NoError(t, json.Unmarshal(got.Diagnostics, &back))
	require.Len(t, back.Errors, protocol.MaxDiagnosticErrors)
	require.Equal(t, "1.2.3", back.AgentVersion)
	require.Equal(t, d.Bridge, back.Bridge)

	info, ok := e.hub.Info("usr_a")
	require.True(t, ok)
	require.NotNil(t, info.Diagnostics)
	require.Equal(t, back, *info.Diagnostics)
	require.Equal(t, got.At, info.DiagnosticsAt)

	require.Eventually(t, func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		return len(log.kinds) == 1
	}, testkit.Medium, 5*time.Millisecond)
	log.mu.Lock()
	require.Equal(t, []string{protocol.EventOrder}, log.kinds, "diagnostics are history entries only")
	log.mu.Unlock()
	var order []agentcall.SessionKind
	for _, ev := range log.all() {
		order = append(order, ev.Kind)
	}
	require.Equal(t, []agentcall.SessionKind{agentcall.SessionStarted, agentcall.SessionDiagnostics}, order)
}

// Diagnostics that are not a protocol.Diagnostics end the tunnel as any
// malformed event does.
func TestMalformedDiagnosticsEndTheTunnel(t *testing.T) {
	t.Parallel()
	e, log := newSessionEnv(t)
	a := dialAgent(t, e, "agent-a")
	info := e.waitConnected("usr_a")
	require.NoError(t, protocol.NewWriter(a.control).WriteFrame(protocol.TypeEvent,
		protocol.Event{Seq: 1, Kind: protocol.EventDiagnostics, Data: json.RawMessage(`{"errors":"` + strings.Repeat("x", 10) + `"}`)}))
	<-a.sess.CloseChan()
	// The session may end on a failed write before the close frame is
	// read.
	require.Eventually(t, func() bool { return a.conn.CloseStatus() != -1 }, testkit.Medium, time.Millisecond)
	require.Equal(t, protocol.CloseProtocolError, a.conn.CloseStatus())
	end := log.wait(t, agentcall.SessionEnded, info.SessionID)
	require.Equal(t, agentcall.ReasonProtocolError, end.Reason)
	for _, ev := range log.all() {
		require.NotEqual(t, agentcall.SessionDiagnostics, ev.Kind)
	}
}

// An oversized frame ends the session with its own reason.
func TestOversizedFrameIsTheReason(t *testing.T) {
	t.Parallel()
	e, log := newSessionEnv(t)
	a := dialAgent(t, e, "agent-a")
	info := e.waitConnected("usr_a")
	_, _ = a.control.Write([]byte{0x01, 0x00, 0x00, 0x00, byte(protocol.TypeEvent)}) // 16 MiB announced
	end := log.wait(t, agentcall.SessionEnded, info.SessionID)
	require.Equal(t, agentcall.ReasonFrameTooLarge, end.Reason)
}

// A flood of diagnostics costs the history one entry per
// DiagnosticsHistoryEvery: the live tunnel keeps the latest.
func TestDiagnosticsFloodReachesTheHistoryOnce(t *testing.T) {
	t.Parallel()
	e, log := newSessionEnv(t)
	a := dialAgent(t, e, "agent-a")
	info := e.waitConnected("usr_a")
	w := protocol.NewWriter(a.control)
	const n = 200
	for i := range n {
		require.NoError(t, w.WriteFrame(protocol.TypeEvent, diagnosticsEvent(t, uint64(i+1), protocol.Diagnostics{AgentVersion: fmt.Sprint("v", i)})))
	}
	require.Eventually(t, func() bool {
		info, _ := e.hub.Info("usr_a")
		return info.Diagnostics != nil && info.Diagnostics.AgentVersion == fmt.Sprint("v", n-1)
	}, testkit.Medium, 5*time.Millisecond, "the tunnel keeps the latest")
	first := log.wait(t, agentcall.SessionDiagnostics, info.SessionID)
	require.Contains(t, string(first.Diagnostics), `"v0"`)
	var entries int
	for _, ev := range log.all() {
		if ev.Kind == agentcall.SessionDiagnostics {
			entries++
		}
	}
	require.Equal(t, 1, entries)
}

// An agent that opens a stream it may not open (the transport's Guard)
// ends its session with protocol_error every time, whichever of the
// session's goroutines notices the end first: the Guard's verdict is the
// reason, never connection_lost.
func TestForbiddenStreamIsAlwaysAProtocolError(t *testing.T) {
	t.Parallel()
	e, log := newSessionEnv(t)
	for i := range 20 {
		a := dialAgent(t, e, "agent-a")
		info := e.waitConnected("usr_a")
		log.wait(t, agentcall.SessionStarted, info.SessionID)
		if st, err := a.sess.OpenStream(); err == nil {
			_, _ = st.Write([]byte("x"))
		}
		end := log.wait(t, agentcall.SessionEnded, info.SessionID)
		require.Equal(t, agentcall.ReasonProtocolError, end.Reason, "try %d", i)
		<-a.sess.CloseChan()
		require.Eventually(t, func() bool { return a.conn.CloseStatus() != -1 }, testkit.Medium, time.Millisecond)
		require.Equal(t, protocol.CloseProtocolError, a.conn.CloseStatus(), "try %d", i)
	}
}
