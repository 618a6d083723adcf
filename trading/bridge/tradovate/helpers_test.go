package tradovate_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/trading/bridge/tradovate"
)

// newClock is the tests' driven clock: After's channels fire when
// Advance reaches them.
func newClock() *testkit.Clock {
	return testkit.NewClock(time.Date(2026, 11, 25, 13, 40, 0, 0, time.UTC))
}

// recorded reads a testdata file (a shape from the broker's documentation).
func recorded(t testing.TB, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

// recordedRaw reads a testdata file as it is.
func recordedRaw(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

// broker is a scripted Tradovate: handlers by path under /v1, and a record
// of the requests it got.
type broker struct {
	srv *httptest.Server

	mu       sync.Mutex
	handlers map[string]http.HandlerFunc
	requests []request
}

// request is one request the broker got.
type request struct {
	Method, Path, Query, Auth string
	Body                      map[string]any
}

func newBroker(t *testing.T) *broker {
	t.Helper()
	b := &broker{handlers: make(map[string]http.HandlerFunc)}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		path := r.URL.Path[len("/v1"):]
		b.mu.Lock()
		b.requests = append(b.requests, request{Method: r.Method, Path: path, Query: r.URL.RawQuery,
			Auth: r.Header.Get("Authorization"), Body: m})
		h := b.handlers[path]
		b.mu.Unlock()
		if h == nil {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		h(w, r)
	}))
	t.Cleanup(b.srv.Close)
	return b
}

// handle sets the handler of a path.
func (b *broker) handle(path string, h http.HandlerFunc) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.handlers[path] = h
}

// requestsTo returns the requests to a path.
func (b *broker) requestsTo(path string) []request {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []request
	for _, r := range b.requests {
		if r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

func (b *broker) endpoints() tradovate.Endpoints {
	return tradovate.Endpoints{DemoREST: b.srv.URL + "/v1", LiveREST: b.srv.URL + "/v1",
		DemoMD: "ws://127.0.0.1:1/v1/websocket", LiveMD: "ws://127.0.0.1:1/v1/websocket",
		OAuthAuthorize: b.srv.URL + "/oauth"}
}

// writeJSON answers v as JSON.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// tokenAnswer answers a recorded token shape expiring at exp.
func tokenAnswer(t testing.TB, name string, exp func() time.Time) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		m := recorded(t, name)
		m["expirationTime"] = exp().UTC().Format(time.RFC3339)
		writeJSON(w, m)
	}
}

// cut answers nothing: the connection is closed once the request is read.
func cut(w http.ResponseWriter, _ *http.Request) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("no hijacker")
	}
	conn, _, err := hj.Hijack()
	if err == nil {
		_ = conn.(*net.TCPConn).SetLinger(0)
		_ = conn.Close()
	}
}

// credentials are the API-key login of the tests.
var credentials = &tradovate.Credentials{Name: "demo-trader", Password: "s3cret-pass", AppID: "tradebridge",
	AppVersion: "1.0", CID: 77, Sec: "api-secret-x"}

// session makes a session on the scripted broker with the driven clock.
func session(t *testing.T, b *broker, c *testkit.Clock, edit func(*tradovate.SessionOptions)) *tradovate.Session {
	t.Helper()
	return clockedSession(t, b.endpoints(), credentials, c, edit)
}

// clockedSession makes a session of the login on endpoints with the
// driven clock; edit, when set, edits its options first.
func clockedSession(t *testing.T, endpoints tradovate.Endpoints, login *tradovate.Credentials, c *testkit.Clock,
	edit func(*tradovate.SessionOptions)) *tradovate.Session {
	t.Helper()
	opts := tradovate.SessionOptions{Env: tradovate.EnvDemo, Endpoints: endpoints, Credentials: login,
		Now: c.Now, After: c.After}
	if edit != nil {
		edit(&opts)
	}
	s, err := tradovate.NewSession(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}
