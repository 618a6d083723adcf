package relay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"tradebridge/internal/testkit"
	"tradebridge/relay/auth"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
)

// wsClient is a bot author's stream socket.
type wsClient struct {
	t      *testing.T
	c      *websocket.Conn
	frames chan map[string]any
	// readErr is the error that ended the reads, set before frames is
	// closed.
	readErr error
}

func (s *system) openStream(t *testing.T, user string) *wsClient {
	t.Helper()
	return s.openStreamWith(t, s.Users[user].APIToken)
}

// openStreamWith opens a stream socket with an API token.
func (s *system) openStreamWith(t *testing.T, token string) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Medium)
	defer cancel()
	h := http.Header{}
	h.Set("Authorization", "Bearer "+token)
	c, _, err := websocket.Dial(ctx, "ws://"+s.Addr+"/ws/stream", &websocket.DialOptions{HTTPHeader: h})
	require.NoError(t, err)
	w := &wsClient{t: t, c: c, frames: make(chan map[string]any, 1024)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(w.frames)
		for {
			_, data, err := c.Read(context.Background())
			if err != nil {
				w.readErr = err
				return
			}
			var m map[string]any
			if json.Unmarshal(data, &m) == nil {
				w.frames <- m
			}
		}
	}()
	t.Cleanup(func() {
		c.Close(websocket.StatusNormalClosure, "")
		<-done
	})
	return w
}

func (w *wsClient) send(frame string) {
	w.t.Helper()
	require.NoError(w.t, w.c.Write(context.Background(), websocket.MessageText, []byte(frame)))
}

// next returns the next frame of the type, skipping others.
func (w *wsClient) next(typ string) map[string]any {
	w.t.Helper()
	deadline := time.After(testkit.Long)
	for {
		select {
		case f, ok := <-w.frames:
			require.True(w.t, ok, "the socket closed while waiting for %s", typ)
			if f["type"] == typ {
				return f
			}
		case <-deadline:
			w.t.Fatalf("no %s frame", typ)
		}
	}
}

// reply returns the next RPC reply: the next frame without a type, as a
// client that dispatches on the presence of type tells replies from
// events.
func (w *wsClient) reply() map[string]any {
	w.t.Helper()
	deadline := time.After(testkit.Long)
	for {
		select {
		case f, ok := <-w.frames:
			require.True(w.t, ok, "the socket closed while waiting for an rpc reply")
			if _, typed := f["type"]; !typed {
				return f
			}
		case <-deadline:
			w.t.Fatalf("no rpc reply")
		}
	}
}

// closeStatus waits for the socket to end, skipping frames, and returns
// the close code the relay sent (-1 when none).
func (w *wsClient) closeStatus() websocket.StatusCode {
	w.t.Helper()
	deadline := time.After(testkit.Long)
	for {
		select {
		case _, ok := <-w.frames:
			if !ok {
				return websocket.CloseStatus(w.readErr)
			}
		case <-deadline:
			w.t.Fatalf("the socket did not close")
		}
	}
}

// quiet reports whether no frame of the type arrives within d.
func (w *wsClient) quiet(typ string, d time.Duration) bool {
	deadline := time.After(d)
	for {
		select {
		case f, ok := <-w.frames:
			if !ok {
				return true
			}
			if f["type"] == typ {
				return false
			}
		case <-deadline:
			return true
		}
	}
}

// The stream API through the real relay, tunnel, agent and simulator.
func TestStreamEndToEnd(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	alice := s.StartAgent("alice")
	bob := s.StartAgent("bob")

	w := s.openStream(t, "alice")
	st := w.next("status")
	require.Equal(t, true, st["agentConnected"])

	w.send(`{"action":"ping"}`)
	w.next("pong")

	// RPC over the socket reaches alice's agent, places through her
	// simulator only.
	w.send(`{"action":"rpc","id":"p1","api":"PlaceOrder","args":{"account":"Sim101","action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day"}}`)
	r := w.reply()
	require.Equal(t, "p1", r["id"])
	require.Equal(t, true, r["success"], r)
	require.NotEmpty(t, r["orderId"])
	ps, err := alice.Sim.Positions(t.Context(), "Sim101")
	require.NoError(t, err)
	require.Len(t, ps, 1)
	ps, err = bob.Sim.Positions(t.Context(), "Sim101")
	require.NoError(t, err)
	require.Empty(t, ps)
	w.send(`{"action":"rpc","id":"p2","api":"ReversePosition","args":{"account":"Sim102","instrument":"ES","action":"Buy","quantity":1,"orderType":"Market","timeInForce":"Day"}}`)
	r = w.reply()
	require.Equal(t, false, r["success"])
	require.Equal(t, "no_position", r["error"])

	// Market data: a root resolves to the front month; quotes of that
	// contract only, and only from alice's own agent.
	wb := s.openStream(t, "bob")
	wb.next("status")
	wb.send(`{"action":"subscribe","instruments":["ES"]}`)
	wb.next("subscribed")
	w.send(`{"action":"subscribe","instruments":["ES"]}`)
	sub := w.next("subscribed")
	require.Equal(t, []any{"ES 12-26"}, sub["instruments"])
	require.NoError(t, alice.Sim.SetPrice("NQ 12-26", 21000)) // not subscribed
	require.NoError(t, alice.Sim.SetPrice("ES 12-26", 6123.25))
	// The simulator's quote of the moment of subscribing may come first.
	for seen := false; !seen; {
		md := w.next("marketData")
		for _, q := range md["quotes"].([]any) {
			require.Equal(t, "ES 12-26", q.(map[string]any)["instrument"])
			seen = seen || q.(map[string]any)["last"] == 6123.25
		}
	}
	for {
		// Bob's socket may have his own simulator's first quote; never
		// alice's price.
		select {
		case f := <-wb.frames:
			if f["type"] == "marketData" {
				for _, q := range f["quotes"].([]any) {
					require.NotEqual(t, 6123.25, q.(map[string]any)["last"], "bob never sees alice's market")
				}
			}
			continue
		case <-time.After(300 * time.Millisecond):
		}
		break
	}

	// P&L streaming at the requested interval.
	w.send(`{"action":"streamPnl","enabled":true,"interval":250}`)
	ack := w.next("pnlStreaming")
	require.Equal(t, 250.0, ack["interval"])
	first := w.next("pnlUpdate")
	accounts := first["accounts"].([]any)
	require.Len(t, accounts, 2)
	require.Equal(t, "Sim101", accounts[0].(map[string]any)["account"])
	require.Len(t, accounts[0].(map[string]any)["positions"], 1)
	w.next("pnlUpdate")
	w.send(`{"action":"streamPnl","enabled":false}`)
	w.next("pnlStreaming")

	// Unsubscribe stops the quotes.
	w.send(`{"action":"unsubscribe","instruments":["ES"]}`)
	w.next("unsubscribed")
	require.NoError(t, alice.Sim.SetPrice("ES 12-26", 6130))
	require.True(t, w.quiet("marketData", 300*time.Millisecond))

	// Garbage gets an error frame and the socket stays open.
	w.send(`{"action":"dance"}`)
	require.NotEmpty(t, w.next("error")["error"])
	w.send(`{"action":"ping"}`)
	w.next("pong")
}

// A revoked API token stops trading on its open socket as soon as HTTP
// refuses it (the token cache's 2 s), not at the socket's periodic
// re-verification 30 s later: the next PlaceOrder is refused
// unauthorized, reaches no agent, and the socket closes with 1008.
func TestStreamRevokedTokenStopsTradingWithinTheHTTPBound(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	alice := s.StartAgent("alice")
	tok := s.Users["alice"].APIToken
	w := s.openStreamWith(t, tok)
	require.Equal(t, true, w.next("status")["agentConnected"])
	const place = `{"action":"rpc","id":"%s","api":"PlaceOrder","args":{"account":"Sim101","action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day"}}`
	w.send(fmt.Sprintf(place, "before"))
	require.Equal(t, true, w.reply()["success"])

	start := time.Now()
	require.NoError(t, auth.RevokeToken(context.Background(), s.Store, tok, time.Now()))
	require.Eventually(t, func() bool {
		return s.DoAsync("GET", "/v1/api/accounts", tok, "").Status == http.StatusUnauthorized
	}, testkit.Medium, 20*time.Millisecond, "HTTP refuses the revoked token")
	w.send(fmt.Sprintf(place, "after"))
	r := w.reply()
	require.Equal(t, "after", r["id"])
	require.Equal(t, false, r["success"])
	require.Equal(t, "unauthorized", r["error"])
	require.Equal(t, websocket.StatusPolicyViolation, w.closeStatus())
	require.Less(t, time.Since(start), testkit.Medium, "far below the 30 s re-verification")
	ps, err := alice.Sim.Positions(t.Context(), "Sim101")
	require.NoError(t, err)
	require.Len(t, ps, 1)
	require.Equal(t, 1, ps[0].Quantity, "only the order placed before the revocation was placed")
}

// The agent goes away and comes back: the socket is told, RPCs fail with
// addon_disconnected meanwhile, and quotes resume by themselves.
func TestStreamSurvivesAgentRestart(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	alice := s.StartAgent("alice")
	w := s.openStream(t, "alice")
	require.Equal(t, true, w.next("status")["agentConnected"])
	w.send(`{"action":"subscribe","instruments":["ES 12-26"]}`)
	w.next("subscribed")

	alice.Stop()
	require.Equal(t, false, w.next("status")["agentConnected"])
	w.send(`{"action":"rpc","id":"x","api":"ListAccounts","args":{}}`)
	r := w.reply()
	require.Equal(t, "addon_disconnected", r["error"])

	again := s.StartAgent("alice") // a new agent process, a new simulator
	require.Equal(t, true, w.next("status")["agentConnected"])
	// The price moves between two marks on every try: a move made before
	// the new agent subscribed is lost, and a platform (NinjaTrader's
	// market data) reports a price only when it changes.
	marks := []float64{6200.5, 6200.75}
	try := 0
	require.Eventually(t, func() bool {
		try++
		_ = again.Sim.SetPrice("ES 12-26", marks[try%2])
		select {
		case f := <-w.frames:
			if f["type"] == "marketData" {
				for _, q := range f["quotes"].([]any) {
					if last := q.(map[string]any)["last"]; last == marks[0] || last == marks[1] {
						return true
					}
				}
			}
		case <-time.After(50 * time.Millisecond):
		}
		return false
	}, testkit.Long, time.Millisecond, "quotes resume after the agent reconnects")
}

// A client written for the spec's socket dispatches on the presence of
// type: its RPC replies come without one, shaped in its token's profile.
func TestStreamRepliesInTheTokensProfile(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.StartAgent("alice")
	for _, tc := range []struct {
		token  string
		compat bool
	}{{s.Users["alice"].APIToken, false}, {s.CompatibleToken("alice"), true}} {
		w := s.openStreamWith(t, tc.token)
		w.next("status")
		w.send(`{"action":"rpc","id":"p","api":"PlaceOrder","args":{"account":"Sim101","action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day"}}`)
		r := w.reply()
		require.NotContains(t, r, "type")
		require.Equal(t, "p", r["id"])
		require.Equal(t, true, r["success"], r)
		require.NotEmpty(t, r["orderId"], "the order id is at the top level in both profiles")
		w.send(`{"action":"rpc","id":"l","api":"ListPositions","args":{"account":"Sim101"}}`)
		r = w.reply()
		require.NotContains(t, r, "type")
		members := r
		if !tc.compat {
			require.ElementsMatch(t, []string{"seq", "id", "success", "data"}, keysOf(r))
			members = r["data"].(map[string]any)
		} else {
			require.ElementsMatch(t, []string{"seq", "id", "success", "positions", "count"}, keysOf(r))
		}
		require.NotEmpty(t, members["positions"])
		require.EqualValues(t, len(members["positions"].([]any)), members["count"])
		w.send(`{"action":"rpc","id":"bad","api":"ReversePosition","args":{"account":"Sim102","instrument":"ES","action":"Buy","quantity":1,"orderType":"Market","timeInForce":"Day"}}`)
		r = w.reply()
		require.NotContains(t, r, "type", "failed replies have no type either")
		require.Equal(t, "bad", r["id"])
		require.Equal(t, "no_position", r["error"])
	}
}

// The budget is one per user across HTTP and the socket.
func TestStreamSharesTheTradingBudget(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	// Refilled once an hour: the test counts calls, not time.
	s.Budget.Name, s.Budget.Rate, s.Budget.Period, s.Budget.Burst = "trading", 1, time.Hour, 20
	s.Restart()
	s.StartAgent("alice")
	tok := s.Users["alice"].APIToken
	w := s.openStream(t, "alice") // opening costs one
	w.next("status")
	for range 9 {
		require.Equal(t, http.StatusOK, s.Do("GET", "/v1/api/accounts", tok, "").Status)
	}
	for i := range 10 {
		w.send(`{"action":"rpc","id":` + strings.Repeat("1", i+1) + `,"api":"ListAccounts","args":{}}`)
		require.Equal(t, true, w.reply()["success"])
	}
	w.send(`{"action":"rpc","id":"over","api":"ListAccounts","args":{}}`)
	r := w.reply()
	require.Equal(t, "rate_limited", r["error"])
	require.Equal(t, http.StatusTooManyRequests, s.Do("GET", "/v1/api/accounts", tok, "").Status)
}

// BenchmarkStreamRPC compares a call over the stream socket with the same
// call over HTTP, interleaved, through the real relay, tunnel and agent; it
// reports the medians and ws-p50-ratio (socket / HTTP).
func BenchmarkStreamRPC(b *testing.B) {
	s := newSystem(b)
	s.StartAgent("alice")
	tok := s.Users["alice"].APIToken
	ctx := context.Background()
	h := http.Header{}
	h.Set("Authorization", "Bearer "+tok)
	c, _, err := websocket.Dial(ctx, "ws://"+s.Addr+"/ws/stream", &websocket.DialOptions{HTTPHeader: h})
	require.NoError(b, err)
	defer c.CloseNow()
	_, _, err = c.Read(ctx) // status
	require.NoError(b, err)
	frame := []byte(`{"action":"rpc","id":1,"api":"ListPositions","args":{"account":"Sim101"}}`)
	viaSocket := func() time.Duration {
		start := time.Now()
		if err := c.Write(ctx, websocket.MessageText, frame); err != nil {
			b.Fatal(err)
		}
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if !strings.Contains(string(data), `"type":`) {
				return time.Since(start)
			}
		}
	}
	viaHTTP := func() time.Duration {
		req, _ := http.NewRequest("GET", s.Base+"/v1/api/accounts/Sim101/positions", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		start := time.Now()
		resp, err := s.Client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return time.Since(start)
	}
	for range 200 {
		viaSocket()
		viaHTTP()
	}
	ws := make([]time.Duration, 0, b.N)
	hp := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		ws = append(ws, viaSocket())
		hp = append(hp, viaHTTP())
	}
	b.StopTimer()
	reportLatency(b, "ws", ws)
	reportLatency(b, "http", hp)
	b.ReportMetric(float64(pct(ws, 50))/float64(pct(hp, 50)), "ws-p50-ratio")
}

// A relay shutting down closes stream sockets with 1001 (going away).
func TestShutdownClosesStreams(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.StartAgent("alice")
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Medium)
	defer cancel()
	h := http.Header{}
	h.Set("Authorization", "Bearer "+s.Users["alice"].APIToken)
	c, _, err := websocket.Dial(ctx, "ws://"+s.Addr+"/ws/stream", &websocket.DialOptions{HTTPHeader: h})
	require.NoError(t, err)
	defer c.CloseNow()
	_, _, err = c.Read(ctx) // status
	require.NoError(t, err)
	s.Restart() // stops the relay, then starts a new one on the address
	for {
		if _, _, err = c.Read(ctx); err != nil {
			break
		}
	}
	require.Equal(t, websocket.StatusGoingAway, websocket.CloseStatus(err))
}
