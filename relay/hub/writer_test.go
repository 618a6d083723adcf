package hub

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/yamux"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/transport"
)

// fakeStream takes the first n bytes written (all when n < 0), then fails
// with err.
type fakeStream struct {
	net.Conn // only Write and SetWriteDeadline are used
	n        int
	err      error
	wrote    []byte
	deadline time.Time
}

func (f *fakeStream) Write(p []byte) (int, error) {
	if f.n < 0 {
		f.wrote = append(f.wrote, p...)
		return len(p), nil
	}
	k := min(f.n, len(p))
	f.wrote = append(f.wrote, p[:k]...)
	f.n -= k
	return k, f.err
}

func (f *fakeStream) SetWriteDeadline(t time.Time) error { f.deadline = t; return nil }

func roomy(context.Context, int) error { return nil }

// A frame is written whole by the caller's deadline, or the writer says
// whether a part of it went out.
func TestFrameWriterOutcomes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		n        int
		err      error
		window   func(ctx context.Context, n int) error
		partial  bool
		timedOut bool
		wantErr  error
	}{
		{name: "whole", n: -1, window: roomy},
		{name: "nothing by the deadline", n: 0, err: yamux.ErrTimeout, window: roomy, timedOut: true},
		{name: "part by the deadline", n: 3, err: yamux.ErrTimeout, window: roomy, partial: true, timedOut: true},
		{name: "stream closed", n: 0, err: yamux.ErrStreamClosed, window: roomy, wantErr: yamux.ErrStreamClosed},
		{name: "no room in the window in time", n: -1, window: func(ctx context.Context, _ int) error {
			<-ctx.Done()
			return ctx.Err()
		}, timedOut: true, wantErr: context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fs := &fakeStream{n: tc.n, err: tc.err}
			w := newFrameWriter(fs, tc.window)
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			partial, err := w.write(ctx, protocol.TypeCancel, func() ([]byte, error) { return []byte(`{"id":7}`), nil })
			require.Equal(t, tc.partial, partial)
			require.Equal(t, tc.timedOut, err != nil && timedOut(err), "%v", err)
			if tc.err == nil && tc.wantErr == nil {
				require.NoError(t, err)
				require.Equal(t, append([]byte{0, 0, 0, 8, byte(protocol.TypeCancel)}, `{"id":7}`...), fs.wrote)
				dl, _ := ctx.Deadline()
				require.Equal(t, dl, fs.deadline, "the write has the caller's deadline")
			}
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
			}
			if tc.window != nil && tc.wantErr == context.DeadlineExceeded {
				require.Empty(t, fs.wrote, "nothing is written without room for the whole frame")
			}
		})
	}
}

// Waiting for the writer's turn respects the caller's context.
func TestFrameWriterTurnRespectsContext(t *testing.T) {
	t.Parallel()
	fs := &fakeStream{n: -1}
	w := newFrameWriter(fs, roomy)
	w.turn <- struct{}{} // a writer holds the turn
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	partial, err := w.write(ctx, protocol.TypeCancel, func() ([]byte, error) { return []byte(`{}`), nil })
	require.False(t, partial)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), time.Second)
	require.Empty(t, fs.wrote)
}

// A frame that waited for the window is encoded again, so that a request's
// TimeoutMs counts from when it is sent.
func TestFrameWriterEncodesAfterWaiting(t *testing.T) {
	t.Parallel()
	fs := &fakeStream{n: -1}
	w := newFrameWriter(fs, func(context.Context, int) error { time.Sleep(5 * time.Millisecond); return nil })
	calls := 0
	_, err := w.write(context.Background(), protocol.TypeCancel, func() ([]byte, error) {
		calls++
		return json.Marshal(map[string]int{"call": calls})
	})
	require.NoError(t, err)
	require.Equal(t, 2, calls)
	require.Contains(t, string(fs.wrote), `{"call":2}`)
}

// tunnelPair is a tunnel's transport whose peer reads what the relay
// closes it with.
func tunnelPair(t *testing.T) (*transport.Conn, <-chan websocket.CloseError) {
	t.Helper()
	accepted := make(chan *websocket.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		accepted <- ws
	}))
	t.Cleanup(srv.Close)
	peer, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	require.NoError(t, err)
	closed := make(chan websocket.CloseError, 1)
	go func() {
		for {
			if _, _, err := peer.Read(context.Background()); err != nil {
				var ce websocket.CloseError
				errors.As(err, &ce)
				closed <- ce
				return
			}
		}
	}()
	conn := transport.NewConn(context.Background(), <-accepted)
	t.Cleanup(func() {
		_ = conn.CloseWith(int(websocket.StatusNormalClosure), "")
		peer.CloseNow()
	})
	return conn, closed
}

// A request write that timed out with part of the frame sent ends the
// tunnel (normal closure, with the reason); one that sent nothing fails
// only its call, and the tunnel stays.
func TestCallWriteTimeouts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		n       int
		err     error
		want    error
		endsTun bool
	}{
		{"nothing sent", 0, yamux.ErrTimeout, agentcall.ErrTimeout, false},
		{"part sent", 10, yamux.ErrTimeout, agentcall.ErrTimeout, true},
		{"stream gone", 0, yamux.ErrStreamClosed, agentcall.ErrConnectionLost, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			conn, closed := tunnelPair(t)
			c := &agentConn{hub: &Hub{opts: Options{FrameTimeout: time.Second}}, log: zaptest.NewLogger(t), conn: conn, done: make(chan struct{})}
			r := &rpcStream{c: c, w: newFrameWriter(&fakeStream{n: tc.n, err: tc.err}, roomy),
				cancels: make(chan uint64, 1), stop: make(chan struct{}), pending: make(map[uint64]chan *protocol.Response)}
			ctx, cancel := context.WithTimeout(context.Background(), testkit.Medium)
			defer cancel()
			_, err := r.call(ctx, protocol.Request{Fn: "Echo"})
			require.ErrorIs(t, err, tc.want)
			require.Empty(t, r.pending)
			require.Empty(t, r.cancels, "no Cancel for a request that was not sent")
			select {
			case <-c.done:
				require.True(t, tc.endsTun, "the tunnel ended")
				ce := <-closed
				require.Equal(t, websocket.StatusNormalClosure, ce.Code)
				require.Equal(t, errOutOfSync, ce.Reason)
			default:
				require.False(t, tc.endsTun, "the tunnel stayed")
			}
		})
	}
}

// The event pacer lets a second's worth through at once, then makes its
// reader wait, and lets go when the tunnel ends.
func TestPacer(t *testing.T) {
	t.Parallel()
	const rate = 1 << 20
	p := newPacer(rate)
	start := time.Now()
	require.True(t, p.take(rate, nil))
	require.Less(t, time.Since(start), 50*time.Millisecond, "the burst passes at once")
	require.True(t, p.take(rate/4, nil))
	took := time.Since(start)
	require.GreaterOrEqual(t, took, 200*time.Millisecond)
	require.Less(t, took, time.Second)

	done := make(chan struct{})
	close(done)
	start = time.Now()
	require.False(t, p.take(10*rate, done))
	require.Less(t, time.Since(start), 50*time.Millisecond)
}

// The bound of the documentation, with the default options.
func TestTunnelMemoryBound(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	got := Options{}.TunnelMemoryBound()
	require.Equal(t, int64(6*2*mib+5*(1<<10+8*mib)+(1<<10+3*(64<<10))+(mib+64<<10)+64<<10+12<<10), got)
	require.InDelta(t, 53.4, float64(got)/mib, 0.1)
	require.Less(t, Options{MaxStreamCalls: 1}.TunnelMemoryBound(), got)
}

// A Cancel that cannot be sent within cancelTimeout is dropped and the
// next one goes out; one left half sent ends the tunnel.
func TestCancelLoopNeverBlocks(t *testing.T) {
	t.Parallel()
	t.Run("dropped", func(t *testing.T) {
		t.Parallel()
		conn, _ := tunnelPair(t)
		c := &agentConn{hub: &Hub{}, log: zaptest.NewLogger(t), conn: conn, done: make(chan struct{})}
		fs := &fakeStream{n: -1}
		first := true
		window := func(ctx context.Context, _ int) error {
			if first {
				first = false
				<-ctx.Done() // no room for the first Cancel
				return ctx.Err()
			}
			return nil
		}
		r := &rpcStream{c: c, w: newFrameWriter(fs, window), cancels: make(chan uint64, 2), stop: make(chan struct{})}
		r.cancels <- 1
		r.cancels <- 2
		start := time.Now()
		done := make(chan struct{})
		go func() { defer close(done); r.cancelLoop() }()
		deadline := time.After(cancelTimeout + 2*time.Second)
		for {
			if len(r.cancels) == 0 && time.Since(start) >= cancelTimeout {
				break
			}
			select {
			case <-deadline:
				t.Fatal("the cancel loop is stuck")
			case <-time.After(10 * time.Millisecond):
			}
		}
		close(r.stop)
		<-done
		require.Equal(t, append([]byte{0, 0, 0, 8, byte(protocol.TypeCancel)}, `{"id":2}`...), fs.wrote, "the first was dropped, the second sent")
		select {
		case <-c.done:
			t.Fatal("a dropped Cancel ended the tunnel")
		default:
		}
	})
	t.Run("half sent", func(t *testing.T) {
		t.Parallel()
		conn, closed := tunnelPair(t)
		c := &agentConn{hub: &Hub{}, log: zaptest.NewLogger(t), conn: conn, done: make(chan struct{})}
		r := &rpcStream{c: c, w: newFrameWriter(&fakeStream{n: 4, err: yamux.ErrTimeout}, roomy), cancels: make(chan uint64, 1), stop: make(chan struct{})}
		r.cancels <- 1
		r.cancelLoop() // returns once the tunnel is closed
		<-c.done
		ce := <-closed
		require.Equal(t, websocket.StatusNormalClosure, ce.Code)
		require.Equal(t, errOutOfSync, ce.Reason)
	})
}
