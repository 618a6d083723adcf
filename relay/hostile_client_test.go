package relay_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay"
	"tradebridge/relay/budget"
)

// The hostile-client harness: clients that send bodies slowly or never,
// hold many sockets from one address, play games with headers, or never
// read their answers. Each test asserts the attacker's fate (answered and
// closed within the relay's documented bounds, see package relay) and that
// an honest user of the same relay is served meanwhile.

// Bounds of these tests' relays: the relay's limits, made small so that a
// test waiting for them is quick.
const (
	hostileHeaderTimeout = time.Second
	hostileBodyTimeout   = 400 * time.Millisecond
	hostileGrace         = 200 * time.Millisecond
	hostileWriteTimeout  = 2 * time.Second
	hostileIdleTimeout   = 2 * time.Second
	// hostileSlack covers scheduling on a busy machine (two cores shared,
	// the race detector).
	hostileSlack = 1500 * time.Millisecond
	// honestBound is how long an honest call may take while attackers
	// are at work.
	honestBound = 2 * time.Second
)

// hostileSystem is a system whose relay has the hostile tests' bounds;
// more may change its options further.
func hostileSystem(t *testing.T, more ...func(*relay.Options)) *system {
	t.Helper()
	return newSystemWith(t, func(o *relay.Options) {
		o.ReadHeaderTimeout = hostileHeaderTimeout
		o.BodyTimeout = hostileBodyTimeout
		o.UnreadBodyGrace = hostileGrace
		o.WriteTimeout = hostileWriteTimeout
		o.IdleTimeout = hostileIdleTimeout
		for _, f := range more {
			f(o)
		}
	})
}

// rawConn is an attacker's TCP connection to the relay.
type rawConn struct {
	c  net.Conn
	br *bufio.Reader
}

// dialRaw opens a TCP connection to addr from the local address from
// ("" for any).
func dialRaw(t *testing.T, addr, from string) (*rawConn, error) {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{c: c, br: bufio.NewReader(c)}, nil
}

// mustDialRaw is dialRaw for the test's goroutine.
func mustDialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	rc, err := dialRaw(t, addr, "")
	require.NoError(t, err)
	return rc
}

// head is a request's line and headers, the token (when not "") as a
// bearer Authorization header, then the headers given, then the blank line.
func head(method, path, token string, headers ...string) string {
	var b strings.Builder
	b.WriteString(method + " " + path + " HTTP/1.1\r\nHost: relay\r\n")
	if token != "" {
		b.WriteString("Authorization: Bearer " + token + "\r\n")
	}
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

func (rc *rawConn) write(s string) error {
	_ = rc.c.SetWriteDeadline(time.Now().Add(testkit.Medium))
	_, err := io.WriteString(rc.c, s)
	return err
}

// response reads one response within d.
func (rc *rawConn) response(d time.Duration) (*http.Response, string, error) {
	_ = rc.c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		return nil, "", fmt.Errorf("no response within %v: %w", d, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", fmt.Errorf("reading the response's body: %w", err)
	}
	return resp, string(body), nil
}

// closedWithin reports nil when the relay closes the connection within d
// (whatever it sends before), else an error.
func (rc *rawConn) closedWithin(d time.Duration) error {
	_ = rc.c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, rc.br)
	switch {
	case err == nil, errors.Is(err, syscall.ECONNRESET):
		return nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("the connection is still open after %v", d)
	}
	return err
}

// refusedAndClosed checks an attacker's fate: an answer of status within
// answerWithin, carrying Connection: close, and the connection closed
// within closeWithin of the answer.
func refusedAndClosed(rc *rawConn, status int, answerWithin, closeWithin time.Duration) error {
	start := time.Now()
	resp, body, err := rc.response(answerWithin)
	if err != nil {
		return err
	}
	if resp.StatusCode != status {
		return fmt.Errorf("status %d, want %d: %s", resp.StatusCode, status, body)
	}
	if !resp.Close {
		return fmt.Errorf("the answer (after %v) does not close the connection", time.Since(start))
	}
	return rc.closedWithin(closeWithin)
}

// honestCall is an honest user's call, from address from ("" for any):
// alice lists her accounts. It reports an error unless she is answered 200
// within honestBound.
func (s *system) honestCall(from string) error {
	req, err := s.NewRequest("GET", "/v1/api/accounts", s.Users["alice"].APIToken, "")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), honestBound)
	defer cancel()
	client := s.Client
	if from != "" {
		tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}).DialContext}
		defer tr.CloseIdleConnections()
		client = &http.Client{Transport: tr}
	}
	start := time.Now()
	resp, err := client.Do(req.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("honest call: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("honest call: status %d after %v", resp.StatusCode, time.Since(start))
	}
	return nil
}

// honestServed fails t unless the honest user is served.
func (s *system) honestServed(t *testing.T) {
	t.Helper()
	require.NoError(t, s.honestCall(""))
}

const placePath = "/v1/api/accounts/Sim101/orders/place"

// A request that announces a body and never sends it, to a route that
// refuses it before reading it, is answered at once with Connection:
// close, and its connection is closed within UnreadBodyGrace: net/http
// on its own reads the rest of the body, with no deadline, before it
// sends the answer, which would hold the connection for free for as long
// as the client liked.
func TestHostileBodyNeverSent(t *testing.T) {
	s := hostileSystem(t)
	s.StartAgent("alice")
	carol := s.Users["carol"].APIToken
	for _, tc := range []struct {
		name, method, path, token string
		status                    int
	}{
		{"no token", "POST", placePath, "", http.StatusUnauthorized},
		{"unknown token", "POST", placePath, "tb_api_" + strings.Repeat("Z", 43), http.StatusUnauthorized},
		{"free plan", "POST", placePath, carol, http.StatusForbidden},
		{"health", "GET", "/healthz", "", http.StatusOK},
		{"unknown path", "POST", "/v1/api/nothing", "", http.StatusNotFound},
		{"wrong method", "PUT", "/v1/api/accounts", "", http.StatusMethodNotAllowed},
		{"stream socket without upgrade", "GET", "/ws/stream", "", http.StatusUpgradeRequired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := mustDialRaw(t, s.Addr)
			require.NoError(t, rc.write(head(tc.method, tc.path, tc.token, "Content-Type: application/json", "Content-Length: 100")))
			require.NoError(t, refusedAndClosed(rc, tc.status, hostileSlack, hostileGrace+hostileSlack))
			s.honestServed(t)
		})
	}
}

// The same on a relay whose per-address budget is used up: the 429 does
// not wait for the body either.
func TestHostileBodyNeverSentOverBudget(t *testing.T) {
	t.Parallel()
	s := hostileSystem(t, func(o *relay.Options) {
		o.IPBudget = budget.Policy{Name: "ip", Rate: 1, Period: time.Hour, Burst: 2}
	})
	s.StartAgent("alice") // the agent's connect spends one of 127.0.0.1's two
	require.NoError(t, s.honestCall("127.0.0.2"))
	// 127.0.0.1 spends the rest of its budget, then sends a body it never
	// finishes.
	require.Equal(t, http.StatusUnauthorized, s.Do("GET", "/v1/api/accounts", "", "").Status)
	rc := mustDialRaw(t, s.Addr)
	require.NoError(t, rc.write(head("POST", placePath, "", "Content-Type: application/json", "Content-Length: 100")))
	require.NoError(t, refusedAndClosed(rc, http.StatusTooManyRequests, hostileSlack, hostileGrace+hostileSlack))
}

// Hundreds of connections that announce a body and send nothing are all
// answered and closed within the bound, and the honest user is served
// while they are open.
func TestHostileManySilentBodies(t *testing.T) {
	t.Parallel()
	s := hostileSystem(t, func(o *relay.Options) { o.MaxConnsPerAddr = -1 })
	s.StartAgent("alice")
	const attackers = 300
	conns := make([]*rawConn, 0, attackers)
	for range attackers {
		rc := mustDialRaw(t, s.Addr)
		require.NoError(t, rc.write(head("POST", placePath, "", "Content-Type: application/json", "Content-Length: 100")))
		conns = append(conns, rc)
	}
	s.honestServed(t)
	errs := make(chan error, attackers)
	var wg sync.WaitGroup
	for _, rc := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- refusedAndClosed(rc, http.StatusUnauthorized, 2*hostileSlack, hostileGrace+2*hostileSlack)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	s.honestServed(t)
}

// A body that trickles in (a byte every 100 ms) with a valid token is cut
// at BodyTimeout: 408 body_timeout, the connection closed, nothing placed.
func TestHostileSlowBody(t *testing.T) {
	t.Parallel()
	s := hostileSystem(t)
	ra := s.StartAgent("alice")
	rc := mustDialRaw(t, s.Addr)
	start := time.Now()
	require.NoError(t, rc.write("POST "+placePath+" HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer "+s.Users["alice"].APIToken+
		"\r\nContent-Type: application/json\r\nContent-Length: "+fmt.Sprint(len(marketBuy))+"\r\n\r\n"))
	stop := make(chan struct{})
	trickled := make(chan struct{})
	go func() {
		defer close(trickled)
		for i := range len(marketBuy) - 1 {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if rc.write(marketBuy[i:i+1]) != nil {
				return
			}
		}
	}()
	defer func() { close(stop); <-trickled }()
	resp, body, err := rc.response(hostileBodyTimeout + hostileSlack)
	require.NoError(t, err)
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode, body)
	require.Contains(t, body, `"error":"body_timeout"`)
	require.Less(t, time.Since(start), hostileBodyTimeout+hostileSlack)
	require.True(t, resp.Close, "the rest of the body is not waited for")
	require.NoError(t, rc.closedWithin(hostileGrace+hostileSlack))
	s.honestServed(t)
	orders, err := ra.Sim.Orders(context.Background(), "Sim101")
	require.NoError(t, err)
	require.Empty(t, orders)
}

// A chunked body that never ends: refused at once without a token, cut at
// BodyTimeout with one (also on a route that takes no body and only looks
// for its first byte: that byte is not awaited for ever).
func TestHostileChunkedBodyNeverEnds(t *testing.T) {
	s := hostileSystem(t)
	s.StartAgent("alice")
	tok := s.Users["alice"].APIToken
	for _, tc := range []struct {
		name, method, path, token, sent string
		status                          int
		code                            string
	}{
		{"no token", "POST", placePath, "", "5\r\n{\"act\r\n", http.StatusUnauthorized, "unauthorized"},
		{"read route, no chunk", "GET", "/v1/api/accounts", tok, "", http.StatusBadRequest, "unexpected_body"},
		{"write route, a chunk", "POST", placePath, tok, "5\r\n{\"act\r\n", http.StatusRequestTimeout, "body_timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := mustDialRaw(t, s.Addr)
			require.NoError(t, rc.write(head(tc.method, tc.path, tc.token, "Content-Type: application/json", "Transfer-Encoding: chunked")+tc.sent))
			resp, body, err := rc.response(hostileBodyTimeout + hostileSlack)
			require.NoError(t, err)
			require.Equal(t, tc.status, resp.StatusCode, body)
			require.Contains(t, body, `"error":"`+tc.code+`"`)
			require.True(t, resp.Close)
			require.NoError(t, rc.closedWithin(hostileGrace+hostileSlack))
			s.honestServed(t)
		})
	}
}

// Headers sent a byte at a time and never finished are cut at
// ReadHeaderTimeout; headers over 64 KiB are refused with 431.
func TestHostileHeaders(t *testing.T) {
	s := hostileSystem(t)
	s.StartAgent("alice")
	t.Run("slow", func(t *testing.T) {
		t.Parallel()
		rc := mustDialRaw(t, s.Addr)
		start := time.Now()
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			if rc.write("GET /healthz HTTP/1.1\r\nHost: relay\r\nX-Slow: ") != nil {
				return
			}
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				if rc.write("a") != nil {
					return
				}
			}
		}()
		defer func() { close(stop); <-done }()
		require.NoError(t, rc.closedWithin(hostileHeaderTimeout+hostileSlack))
		require.Less(t, time.Since(start), hostileHeaderTimeout+hostileSlack)
		s.honestServed(t)
	})
	t.Run("oversized", func(t *testing.T) {
		t.Parallel()
		rc := mustDialRaw(t, s.Addr)
		require.NoError(t, rc.write("GET /healthz HTTP/1.1\r\nHost: relay\r\nX-Big: "+strings.Repeat("b", 70<<10)+"\r\n\r\n"))
		resp, _, err := rc.response(hostileSlack)
		require.NoError(t, err)
		require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
		require.NoError(t, rc.closedWithin(hostileGrace+hostileSlack))
		s.honestServed(t)
	})
	t.Run("silent", func(t *testing.T) {
		t.Parallel()
		rc := mustDialRaw(t, s.Addr)
		require.NoError(t, rc.closedWithin(hostileHeaderTimeout+hostileSlack), "a connection that sends nothing")
	})
}

// Two Authorization headers are refused on every door, whichever of them
// is valid, with 401 unauthorized and a detail that says what to do
// without repeating either value: letting the first win would disagree
// with a proxy that reads the last.
func TestHostileTwoAuthorizationHeaders(t *testing.T) {
	s := hostileSystem(t)
	s.StartAgent("alice")
	api := "Bearer " + s.Users["alice"].APIToken
	agent := "Bearer " + s.Users["bob"].AgentToken
	other := "Bearer tb_api_" + strings.Repeat("Q", 43)
	upgrade := "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	for _, tc := range []struct {
		name, path, extra string
		values            [2]string
	}{
		{"trading, valid first", "/v1/api/accounts", "", [2]string{api, other}},
		{"trading, valid last", "/v1/api/accounts", "", [2]string{other, api}},
		{"trading, twice the same", "/v1/api/accounts", "", [2]string{api, api}},
		{"stream socket", "/ws/stream", upgrade, [2]string{api, other}},
		{"agent tunnel", "/v1/agent/connect", upgrade + "Sec-WebSocket-Protocol: " + protocol.Subprotocol(protocol.ProtocolVersion) + "\r\n", [2]string{agent, other}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := mustDialRaw(t, s.Addr)
			require.NoError(t, rc.write("GET "+tc.path+" HTTP/1.1\r\nHost: relay\r\n"+tc.extra+
				"Authorization: "+tc.values[0]+"\r\nAuthorization: "+tc.values[1]+"\r\n\r\n"))
			resp, body, err := rc.response(hostileSlack)
			require.NoError(t, err)
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode, body)
			require.Contains(t, body, `"error":"unauthorized"`)
			require.Contains(t, body, "exactly one Authorization header")
			require.NotContains(t, body, "tb_")
			require.NotContains(t, body, strings.Repeat("Q", 8))
		})
	}
	s.honestServed(t)
}

// "Bearer" and the token are separated by one space: a valid token after
// two is a malformed header on every door, 401 unauthorized, and the same
// request with one space is admitted.
func TestHostileBearerWithTwoSpaces(t *testing.T) {
	s := hostileSystem(t)
	s.StartAgent("alice")
	api := s.Users["alice"].APIToken
	elite := s.Users["bob"].APIToken
	agent := s.Users["bob"].AgentToken
	upgrade := "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	mcpBody := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	mcp := "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: " + strconv.Itoa(len(mcpBody)) + "\r\n"
	for _, tc := range []struct {
		name, method, path, extra, token, body string
		admitted                               int
	}{
		{"trading", "GET", "/v1/api/accounts", "", api, "", http.StatusOK},
		{"management", "GET", "/v1/api/manage/desktop/copiers", "", elite, "", http.StatusOK},
		{"stream socket", "GET", "/ws/stream", upgrade, api, "", http.StatusSwitchingProtocols},
		{"agent tunnel", "GET", "/v1/agent/connect", upgrade + "Sec-WebSocket-Protocol: " + protocol.Subprotocol(protocol.ProtocolVersion) + "\r\n", agent, "", http.StatusSwitchingProtocols},
		{"mcp", "POST", "/mcp", mcp, api, mcpBody, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, sep := range []string{"  ", " "} {
				rc := mustDialRaw(t, s.Addr)
				require.NoError(t, rc.write(tc.method+" "+tc.path+" HTTP/1.1\r\nHost: relay\r\n"+tc.extra+
					"Authorization: Bearer"+sep+tc.token+"\r\n\r\n"+tc.body))
				resp, body, err := rc.response(hostileSlack)
				require.NoError(t, err)
				if sep == " " {
					require.Equal(t, tc.admitted, resp.StatusCode, "one space is admitted: %s", body)
					continue
				}
				require.Equal(t, http.StatusUnauthorized, resp.StatusCode, body)
				require.Contains(t, body, `"error":"unauthorized"`)
				require.NotContains(t, body, "tb_")
			}
		})
	}
	s.honestServed(t)
}

// One address holds at most MaxConnsPerAddr connections: the next is
// answered 429 rate_limited (policy connections) and closed; another
// address is served meanwhile, and a slot freed is usable again.
func TestHostileConnectionsPerAddress(t *testing.T) {
	t.Parallel()
	const limit = 8
	s := hostileSystem(t, func(o *relay.Options) { o.MaxConnsPerAddr = limit })
	s.StartAgent("alice")
	s.Client.CloseIdleConnections()
	held := make([]*rawConn, 0, limit-1)
	// The agent's tunnel holds one connection of 127.0.0.1.
	for range limit - 1 {
		rc, err := dialRaw(t, s.Addr, "127.0.0.1")
		require.NoError(t, err)
		// Each holds a keep-alive connection after one request.
		require.NoError(t, rc.write(head("GET", "/healthz", "")))
		resp, _, err := rc.response(hostileSlack)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		held = append(held, rc)
	}
	over, err := dialRaw(t, s.Addr, "127.0.0.1")
	require.NoError(t, err)
	require.NoError(t, over.write(head("GET", "/healthz", "")))
	resp, body, err := over.response(hostileSlack)
	require.NoError(t, err)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, body)
	require.Contains(t, body, `"policy":"connections"`)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	require.NoError(t, over.closedWithin(hostileSlack))

	require.NoError(t, s.honestCall("127.0.0.2"), "another address is served")

	held[0].c.Close()
	require.Eventually(t, func() bool { return s.honestCall("127.0.0.1") == nil }, testkit.Medium, 20*time.Millisecond,
		"a freed slot is usable again")
}

// A client that never reads its answers loses its connection at
// WriteTimeout instead of holding a handler for ever.
func TestHostileClientNeverReads(t *testing.T) {
	t.Parallel()
	s := hostileSystem(t)
	s.StartAgent("alice")
	rc := mustDialRaw(t, s.Addr)
	// The OpenAPI document is large (700 kB): ask for it more often than
	// the sockets' buffers hold (a few MB), read nothing.
	const asks = 64
	require.NoError(t, rc.write(strings.Repeat("GET /v1/api/openapi.json HTTP/1.1\r\nHost: relay\r\n\r\n", asks)))
	time.Sleep(hostileWriteTimeout + hostileSlack)
	s.honestServed(t)
	// What was buffered before the relay gave up is there; then the
	// connection ends.
	n := 0
	for {
		resp, _, err := rc.response(hostileSlack)
		if err != nil {
			break
		}
		require.Equal(t, http.StatusOK, resp.StatusCode)
		n++
	}
	require.Less(t, n, asks, "the relay stopped writing to a client that does not read")
	require.NoError(t, rc.closedWithin(hostileSlack))
}

// /metrics is not public: the API listener answers it 404 not_found like
// any unknown path; the operator's listener serves it, with /healthz and
// /readyz.
func TestOperatorListener(t *testing.T) {
	t.Parallel()
	var operator string
	s := newSystemWith(t, func(o *relay.Options) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		o.OperatorListener = ln
		operator = "http://" + ln.Addr().String()
	})
	s.StartAgent("alice")
	tok := s.Users["alice"].APIToken
	require.Equal(t, http.StatusOK, s.Do("GET", "/v1/api/accounts", tok, "").Status)

	r := s.Do("GET", "/metrics", "", "")
	require.Equal(t, http.StatusNotFound, r.Status)
	require.Equal(t, "not_found", r.Error)
	require.Equal(t, http.StatusOK, s.Do("GET", "/healthz", "", "").Status)
	require.Equal(t, http.StatusOK, s.Do("GET", "/readyz", "", "").Status)

	get := func(path string) (int, string) {
		resp, err := s.Client.Get(operator + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	status, metrics := get("/metrics")
	require.Equal(t, http.StatusOK, status)
	for _, want := range []string{
		"relay_agents_connected 1",
		"relay_tunnel_connects_total 1",
		`relay_http_requests_total{code="200",route="GET /v1/api/accounts"}`,
		`relay_http_request_duration_seconds_bucket{route="GET /v1/api/accounts"`,
		"relay_connections_refused_total 0",
	} {
		require.Contains(t, metrics, want)
	}
	status, _ = get("/healthz")
	require.Equal(t, http.StatusOK, status)
	status, _ = get("/readyz")
	require.Equal(t, http.StatusOK, status)
	status, body := get("/v1/api/accounts")
	require.Equal(t, http.StatusNotFound, status, "the operator's listener serves no API")
	require.Contains(t, body, "not_found")
}

// The agent's door checks the per-address budget before the token, like
// every other door: an address that tries random agent tokens is refused
// 429 once its budget is spent, before any token is looked up, while
// another address is still heard.
func TestHostileAgentTokensOverBudget(t *testing.T) {
	t.Parallel()
	s := hostileSystem(t, func(o *relay.Options) {
		o.IPBudget = budget.Policy{Name: "ip", Rate: 1, Period: time.Hour, Burst: 3}
	})
	connect := func(from string) response {
		rc, err := dialRaw(t, s.Addr, from)
		require.NoError(t, err)
		tok := "tb_agent_" + strings.Repeat("Q", 43)
		require.NoError(t, rc.write(head("GET", protocol.ConnectPath, tok)))
		resp, body, err := rc.response(hostileSlack)
		require.NoError(t, err)
		return response{Status: resp.StatusCode, Header: resp.Header, Raw: []byte(body)}
	}
	for range 3 {
		require.Equal(t, http.StatusUnauthorized, connect("").Status)
	}
	r := connect("")
	require.Equal(t, http.StatusTooManyRequests, r.Status, string(r.Raw))
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	require.Contains(t, string(r.Raw), `"policy":"ip"`)
	require.Equal(t, http.StatusUnauthorized, connect("127.0.0.2").Status, "another address has its own budget")
}
