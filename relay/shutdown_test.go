package relay_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"

	"tradebridge/agent"
	"tradebridge/internal/testkit"
	"tradebridge/relay"
)

// shutdownTimeout is the graceful part of these tests' shutdowns.
const shutdownTimeout = 300 * time.Millisecond

// A relay stopped while a keyed write waits on an agent that does not
// answer cuts the write short once ShutdownTimeout passed: its caller is
// answered 503 outcome_unknown, the outcome is recorded as unknown before
// Serve returns (nil: the shutdown was asked for), and after the restart
// the same key learns the first outcome: not 409 request_in_progress (a
// record left running), not a second order.
func TestShutdownCutsAWaitingWriteShort(t *testing.T) {
	t.Parallel()
	s := newSystemWith(t, func(o *relay.Options) { o.ShutdownTimeout = shutdownTimeout })
	gate := &gatedPlatform{entered: make(chan struct{}), release: make(chan struct{})}
	ra := s.StartAgentWith("alice", func(o *agent.Options) {
		gate.Platform = o.Platform
		o.Platform = gate
		o.Tunnel.BackoffBase = 5 * time.Millisecond
		o.Tunnel.BackoffCap = 50 * time.Millisecond
	})
	released := false
	release := func() {
		if !released {
			released = true
			close(gate.release)
		}
	}
	t.Cleanup(release) // before the agent stops
	tok := s.Users["alice"].APIToken
	const key = "cut-short-1"

	first := make(chan response, 1)
	go func() { first <- s.DoAsync("POST", placePath, tok, marketBuy, "Idempotency-Key", key) }()
	select {
	case <-gate.entered:
	case <-time.After(testkit.Medium):
		t.Fatal("the order never reached the platform")
	}

	start := time.Now()
	s.Restart() // Serve returned nil, then a new relay starts on the same store
	require.Less(t, time.Since(start), 2*shutdownTimeout+hostileSlack, "Serve returned soon after the timeout")
	r := <-first
	require.Equal(t, http.StatusServiceUnavailable, r.Status, string(r.Raw))
	require.Equal(t, "outcome_unknown", r.Error)
	require.NotEmpty(t, s.Logs.FilterLevelExact(zapcore.WarnLevel).FilterMessageSnippet("cutting them short").All())

	release()
	var retry response
	require.Eventually(t, func() bool {
		retry = s.DoAsync("POST", placePath, tok, marketBuy, "Idempotency-Key", key)
		return retry.Status != http.StatusRequestTimeout // the agent is back
	}, testkit.Long, 20*time.Millisecond)
	require.Equal(t, http.StatusOK, retry.Status, string(retry.Raw))
	require.NotEmpty(t, retry.OrderID)
	again := s.Do("POST", placePath, tok, marketBuy, "Idempotency-Key", key)
	require.Equal(t, http.StatusOK, again.Status)
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.Equal(t, retry.OrderID, again.OrderID)

	orders, err := ra.Sim.Orders(context.Background(), "Sim101")
	require.NoError(t, err)
	require.Len(t, orders, 1, "one order for the key")
	require.EqualValues(t, 1, gate.submits.Load())
}

// Requests that are not waiting on an agent are cut short too: a body
// that never arrives (with a valid token), a stream socket, a tunnel.
// Serve returns nil soon after ShutdownTimeout, with every handler ended.
func TestShutdownPastTheTimeoutReturnsNil(t *testing.T) {
	t.Parallel()
	s := newSystemWith(t, func(o *relay.Options) { o.ShutdownTimeout = shutdownTimeout })
	s.StartAgent("alice")
	w := s.openStream(t, "alice")
	require.Equal(t, true, w.next("status")["agentConnected"])
	rc := mustDialRaw(t, s.Addr)
	require.NoError(t, rc.write("POST "+placePath+" HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer "+s.Users["alice"].APIToken+
		"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"))
	time.Sleep(50 * time.Millisecond) // the handler waits for the body

	start := time.Now()
	s.Restart()
	require.Less(t, time.Since(start), 3*shutdownTimeout+hostileSlack)
	require.NoError(t, rc.closedWithin(hostileSlack))
	require.Eventually(t, func() bool { return s.honestCall("") == nil }, testkit.Long, 20*time.Millisecond,
		"the new relay serves once the agent is back")
}
