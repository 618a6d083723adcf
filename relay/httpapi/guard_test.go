package httpapi_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/relay/httpapi"
)

// The Guard counts running handlers: Wait returns once they all did, and
// a stopped Guard answers 503 shutting_down without running the handler.
func TestGuardStopAndWait(t *testing.T) {
	t.Parallel()
	g, err := httpapi.NewGuard(httpapi.GuardOptions{})
	require.NoError(t, err)
	entered, release := make(chan struct{}), make(chan struct{})
	h := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(entered)
		<-release
		httpapi.Write(w, http.StatusOK, nil)
	}))
	done := make(chan int, 1)
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		done <- rec.Code
	}()
	<-entered
	require.Equal(t, 1, g.Running())
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, g.Wait(ctx), context.DeadlineExceeded, "a handler still runs")

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code, "stopped: new requests are refused")
	require.Contains(t, rec.Body.String(), `"error":"shutting_down"`)

	close(release)
	require.Equal(t, http.StatusOK, <-done)
	require.NoError(t, g.Wait(context.Background()))
	require.Zero(t, g.Running())

	_, err = httpapi.NewGuard(httpapi.GuardOptions{BodyTimeout: -1})
	require.Error(t, err)
}

// A handler that the server's shutdown left with nothing to say is not
// sent as an empty 200.
func TestGuardAnswersForAHandlerCutShort(t *testing.T) {
	t.Parallel()
	g, err := httpapi.NewGuard(httpapi.GuardOptions{})
	require.NoError(t, err)
	h := g.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	ctx, stop := context.WithCancelCause(context.Background())
	stop(httpapi.ErrShuttingDown)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/", nil).WithContext(ctx))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Contains(t, rec.Body.String(), `"error":"shutting_down"`)

	// A caller that left is another matter: nobody hears the answer.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/", nil).WithContext(ctx))
	require.Empty(t, rec.Body.String())
}

// Connection: close goes with an answer sent before the body was read to
// its end, never with one after it, nor with a body-less request.
func TestGuardClosesWhenTheBodyIsUnread(t *testing.T) {
	t.Parallel()
	g, err := httpapi.NewGuard(httpapi.GuardOptions{})
	require.NoError(t, err)
	for _, tc := range []struct {
		name      string
		body      io.Reader
		read      bool
		wantClose bool
	}{
		{"no body", nil, false, false},
		{"body read", strings.NewReader(`{"a":1}`), true, false},
		{"body unread", strings.NewReader(`{"a":1}`), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.read {
					_, _ = io.Copy(io.Discard, r.Body)
				}
				httpapi.Write(w, http.StatusOK, nil)
			}))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("POST", "/", tc.body))
			require.Equal(t, tc.wantClose, rec.Header().Get("Connection") == "close")
		})
	}
}

// Connections over a client address's cap are answered 429 and closed;
// a slot frees when a connection closes.
func TestLimitListener(t *testing.T) {
	t.Parallel()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := 0
	ln, err := httpapi.LimitListener(inner, httpapi.LimitOptions{MaxPerAddr: 2, OnRefuse: func() { refused++ }})
	require.NoError(t, err)
	defer ln.Close()
	_, err = httpapi.LimitListener(inner, httpapi.LimitOptions{MaxPerAddr: -1})
	require.Error(t, err)

	accepted := make(chan net.Conn, 4)
	go func() {
		defer close(accepted)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	refusedNow := func() {
		t.Helper()
		c := dial()
		require.NoError(t, c.SetReadDeadline(time.Now().Add(testkit.Medium)))
		b, err := io.ReadAll(c)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(b), "HTTP/1.1 429 "), string(b))
		require.Contains(t, string(b), `"policy":"connections"`)
	}
	dial()
	dial()
	first, second := <-accepted, <-accepted
	refusedNow()

	require.NoError(t, first.Close())
	_ = first.Close() // a second Close frees nothing more
	dial()
	third := <-accepted
	refusedNow()

	require.NoError(t, second.Close())
	require.NoError(t, third.Close())
	require.NoError(t, ln.Close())
	for range accepted {
	}
	require.Equal(t, 2, refused)
}
