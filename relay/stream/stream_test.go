package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/metrics"
	"tradebridge/relay/store"
	"tradebridge/relay/tradeapi"
)

func httpGet(t *testing.T, rawURL string, header http.Header) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest("GET", rawURL, nil)
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

var upgradeHeaders = http.Header{
	"Connection": {"Upgrade"}, "Upgrade": {"websocket"},
	"Sec-Websocket-Version": {"13"}, "Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="},
}

func withAuth(h http.Header, token string) http.Header {
	return withAuthHeader(h, "Bearer "+token)
}

func withAuthHeader(h http.Header, value string) http.Header {
	out := h.Clone()
	out.Set("Authorization", value)
	return out
}

func TestUpgradeIsAdmittedBeforeItHappens(t *testing.T) {
	e := newEnv(t)
	base := e.http.URL + Path
	cases := []struct {
		name   string
		url    string
		header http.Header
		status int
		code   string
	}{
		{"no token", base, upgradeHeaders, 401, "unauthorized"},
		{"bad token", base, withAuth(upgradeHeaders, "tb_api_nope"), 401, "unauthorized"},
		{"bad query token", base + "?token=tb_api_nope", upgradeHeaders, 401, "unauthorized"},
		// A header that is sent is the credential, even when it is not
		// a bearer token and the query string holds a good one.
		{"malformed header, good query token", base + "?token=" + tokA, withAuthHeader(upgradeHeaders, "Basic x"), 401, "unauthorized"},
		{"free plan", base, withAuth(upgradeHeaders, tokFree), 403, "plan_required"},
		{"not an upgrade", base, http.Header{"Authorization": {"Bearer " + tokA}}, 426, "upgrade_required"},
		{"other query parameter", base + "?token=" + tokA + "&x=1", upgradeHeaders, 400, "unknown_parameter"},
		{"repeated token", base + "?token=" + tokA + "&token=" + tokA, upgradeHeaders, 400, "unknown_parameter"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := httpGet(t, c.url, c.header)
			require.Equal(t, c.status, status)
			require.Equal(t, false, body["success"])
			require.Equal(t, c.code, body["error"])
		})
	}
	// The query form, for browsers.
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Medium)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, e.url+"?token="+url.QueryEscape(tokA), nil)
	require.NoError(t, err)
	c := &client{t: t, ws: ws}
	require.Equal(t, "status", c.read()["type"])
	c.send(map[string]any{"action": "ping"})
	require.Equal(t, "pong", c.read()["type"])
	ws.Close(websocket.StatusNormalClosure, "")
}

func TestPingAndMalformedFramesKeepTheSocketOpen(t *testing.T) {
	e := newEnv(t)
	c := e.dial(tokA)
	c.send(map[string]any{"action": "ping", "id": "p1"})
	f := c.read()
	require.Equal(t, "pong", f["type"])
	require.Equal(t, "p1", f["id"])
	c.send(map[string]any{"action": "ping", "id": 7})
	require.Equal(t, float64(7), c.read()["id"])

	for _, tc := range []struct{ raw, code string }{
		{`not json`, "invalid_json"},
		{`{"action":"ping","action":"ping"}`, "invalid_json"},
		{`[1,2]`, "invalid_frame"},
		{`{"id":"x"}`, "invalid_frame"},
		{`{"action":"dance"}`, "unknown_action"},
		{`{"action":"ping","extra":1}`, "invalid_frame"},
		{`{"action":"ping","id":{"a":1}}`, "invalid_frame"},
		{`{"action":"subscribe","instruments":"ES"}`, "invalid_frame"},
		{`{"action":"subscribe","instruments":["ES 13-26"]}`, "invalid_instrument"},
		{`{"action":"subscribe","instruments":[]}`, "invalid_argument"},
		{`{"action":"streamPnl","interval":1000}`, "invalid_frame"},
		{`{"action":"rpc","api":"ListAccounts"}`, "invalid_frame"},
	} {
		c.sendRaw(tc.raw)
		f := c.read()
		require.Equal(t, "error", f["type"], tc.raw)
		require.Equal(t, tc.code, f["error"], tc.raw)
		require.NotEmpty(t, f["detail"])
		require.NotContains(t, f["detail"], "dance")
		c.send(map[string]any{"action": "ping"}) // resets the run of bad frames
		require.Equal(t, "pong", c.read()["type"])
		e.clock.Advance(10 * time.Second) // and they are spread out
	}
	// The id of a refused frame comes back.
	c.sendRaw(`{"action":"dance","id":"d1"}`)
	f = c.read()
	require.Equal(t, "d1", f["id"])
	// A binary message is not a frame.
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Medium)
	defer cancel()
	require.NoError(t, c.ws.Write(ctx, websocket.MessageBinary, []byte(`{"action":"ping"}`)))
	require.Equal(t, "invalid_json", c.read()["error"])
}

func TestGarbageClosesWith1008(t *testing.T) {
	e := newEnv(t)
	t.Run("in a row", func(t *testing.T) {
		c := e.dial(tokA)
		for range 10 {
			c.sendRaw(`{{{`)
		}
		for range 10 {
			require.Equal(t, "invalid_json", c.read()["error"])
		}
		ce := c.closeError()
		require.Equal(t, websocket.StatusPolicyViolation, ce.Code)
		require.Contains(t, ce.Reason, "malformed")
	})
	t.Run("within a minute", func(t *testing.T) {
		c := e.dial(tokA)
		for range 9 {
			c.sendRaw(`{"action":"nope"}`)
			require.Equal(t, "unknown_action", c.read()["error"])
			c.send(map[string]any{"action": "ping"})
			require.Equal(t, "pong", c.read()["type"])
		}
		c.sendRaw(`{"action":"nope"}`)
		require.Equal(t, "unknown_action", c.read()["error"])
		require.Equal(t, websocket.StatusPolicyViolation, c.closeCode())
	})
	t.Run("spread out is fine", func(t *testing.T) {
		c := e.dial(tokA)
		for range 12 {
			c.sendRaw(`{"action":"nope"}`)
			require.Equal(t, "unknown_action", c.read()["error"])
			c.send(map[string]any{"action": "ping"})
			require.Equal(t, "pong", c.read()["type"])
			e.clock.Advance(10 * time.Second)
		}
	})
}

func TestFrameOverReadLimitCloses1009(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.ReadLimit = 1024 })
	c := e.dial(tokA)
	c.sendRaw(`{"action":"ping","id":"` + strings.Repeat("x", 2000) + `"}`)
	require.Equal(t, websocket.StatusMessageTooBig, c.closeCode())
}

func TestRPC(t *testing.T) {
	e := newEnv(t)
	c := e.dial(tokA)

	// A write without a key gets a fresh request id; path parameters and
	// body fields travel together; orderId is lifted as on HTTP. The reply
	// has no type.
	c.send(map[string]any{"action": "rpc", "id": "w1", "api": "PlaceOrder", "args": map[string]any{
		"account": "Sim101", "action": "buy", "instrument": "ES 12-26", "orderType": "market", "quantity": 1, "timeInForce": "day"}})
	f := c.read()
	require.NotContains(t, f, "type")
	require.NotContains(t, f, "replayed")
	require.Equal(t, "w1", f["id"])
	require.Equal(t, true, f["success"])
	require.Equal(t, "o-1", f["orderId"])
	data := f["data"].(map[string]any)
	require.Equal(t, "PlaceOrder", data["fn"])
	args := data["args"].(map[string]any)
	require.Equal(t, "Sim101", args["account"])
	require.Equal(t, "Buy", args["action"]) // normalized as on HTTP
	require.Equal(t, "Market", args["orderType"])
	calls := e.up.callsOf(protocol.FnPlaceOrder)
	require.Len(t, calls, 1)
	require.True(t, strings.HasPrefix(calls[0].RequestID, "rly:"))
	require.Equal(t, userA, calls[0].User)

	// idempotencyKey and orderId name the write as on HTTP.
	c.send(map[string]any{"action": "rpc", "id": "w2", "api": "CancelAllOrders", "args": map[string]any{"idempotencyKey": "k-1"}})
	require.Equal(t, true, c.read()["success"])
	c.send(map[string]any{"action": "rpc", "id": "w3", "api": "PlaceOrder", "args": map[string]any{
		"account": "Sim101", "action": "Sell", "instrument": "ES", "orderType": "Limit", "limitPrice": 5000.25, "quantity": 2, "timeInForce": "Gtc", "orderId": "my-1"}})
	require.Equal(t, true, c.read()["success"])
	c.send(map[string]any{"action": "rpc", "id": "r1", "api": "ListOrders", "args": map[string]any{"account": "Sim101", "activeOnly": "false"}})
	f = c.read()
	require.Equal(t, true, f["success"])
	orders := f["data"].(map[string]any)["orders"].([]any) // a list is named
	require.Len(t, orders, 1)
	args = orders[0].(map[string]any)["args"].(map[string]any)
	require.Equal(t, false, args["activeOnly"])
	require.Equal(t, float64(320), args["lookbackTime"]) // the HTTP default
	require.Equal(t, "idem:key:k-1", e.up.callsOf(protocol.FnCancelAllOrders)[0].RequestID)
	require.Equal(t, "idem:order:my-1", e.up.callsOf(protocol.FnPlaceOrder)[1].RequestID)
	require.Equal(t, "", e.up.callsOf(protocol.FnListOrders)[0].RequestID)
	var sent map[string]any
	require.NoError(t, json.Unmarshal(e.up.callsOf(protocol.FnCancelAllOrders)[0].Args, &sent))
	require.NotContains(t, sent, "idempotencyKey")

	// Refusals.
	for _, tc := range []struct {
		frame map[string]any
		code  string
	}{
		{map[string]any{"action": "rpc", "id": 1, "api": "NoSuchThing"}, "unknown_function"},
		{map[string]any{"action": "rpc", "id": 2, "api": protocol.FnGetPnl}, "unknown_function"},
		{map[string]any{"action": "rpc", "id": 3, "api": protocol.FnSetSubscriptions, "args": map[string]any{"instruments": []string{"ES"}}}, "unknown_function"},
		{map[string]any{"action": "rpc", "id": 4, "api": "GetAccount"}, "missing_required_fields"},
		{map[string]any{"action": "rpc", "id": 5, "api": "GetAccount", "args": []int{1}}, "invalid_argument"},
		{map[string]any{"action": "rpc", "id": 6, "api": "GetAccount", "args": map[string]any{"account": "Sim101", "bogus": 1}}, "invalid_argument"},
		{map[string]any{"action": "rpc", "id": 7, "api": "PlaceOrder", "args": map[string]any{"account": "Sim101", "action": "Hold", "instrument": "ES", "orderType": "Market", "quantity": 1, "timeInForce": "Day"}}, "invalid_argument"},
		{map[string]any{"action": "rpc", "id": 8, "api": "FlattenEverything", "args": map[string]any{"account": "x"}}, "invalid_argument"},
		{map[string]any{"action": "rpc", "id": 9, "api": "GetQuote"}, "missing_required_fields"},
	} {
		c.send(tc.frame)
		f := c.read()
		require.NotContains(t, f, "type", tc.frame)
		require.Equal(t, tc.frame["id"], int(f["id"].(float64)))
		require.Equal(t, false, f["success"])
		require.Equal(t, tc.code, f["error"], tc.frame)
	}
	// GetQuote's refusal names instrument and root, not the account of the
	// other route.
	c.send(map[string]any{"action": "rpc", "id": "q", "api": "GetQuote"})
	f = c.read()
	require.Contains(t, fmt.Sprint(f["fields"]), "root")
	require.NotContains(t, fmt.Sprint(f["fields"]), "account")

	// The agent's errors pass through; a lost agent is addon_disconnected.
	e.up.mu.Lock()
	e.up.onCall = func(context.Context, upCall) (json.RawMessage, error) {
		return nil, protocol.NewError(protocol.CodeNoPosition, "no position in ES 12-26")
	}
	e.up.mu.Unlock()
	c.send(map[string]any{"action": "rpc", "id": "x", "api": "Reverse", "args": map[string]any{"account": "Sim101", "instrument": "ES"}})
	f = c.read()
	require.Equal(t, "no_position", f["error"])
	require.Equal(t, "no position in ES 12-26", f["detail"])
	e.up.setConnected(userA, false)
	c.send(map[string]any{"action": "rpc", "id": "y", "api": "ListAccounts"})
	f = c.readReply()
	require.Equal(t, "y", f["id"])
	require.Equal(t, "addon_disconnected", f["error"])
}

func TestRPCsRunConcurrentlyAndCorrelate(t *testing.T) {
	const n = 50
	e := newEnv(t, func(o *Options) { o.MaxInFlight = 64 })
	var arrived atomic.Int32
	all := make(chan struct{})
	e.up.onCall = func(ctx context.Context, c upCall) (json.RawMessage, error) {
		if arrived.Add(1) == n {
			close(all)
		}
		// Every call waits until all 50 run at once, then they finish in
		// random order.
		select {
		case <-all:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		time.Sleep(time.Duration(rand.IntN(5)) * time.Millisecond)
		return json.Marshal(map[string]any{"echo": c.Args})
	}
	c := e.dial(tokA)
	for i := range n {
		c.send(map[string]any{"action": "rpc", "id": fmt.Sprintf("c%d", i), "api": "GetAccount", "args": map[string]any{"account": fmt.Sprintf("A%d", i)}})
	}
	seen := map[string]bool{}
	for range n {
		f := c.read()
		require.NotContains(t, f, "type")
		require.Equal(t, true, f["success"], f)
		id := f["id"].(string)
		acct := f["data"].(map[string]any)["echo"].(map[string]any)["account"].(string)
		require.Equal(t, "c"+strings.TrimPrefix(acct, "A"), id)
		require.False(t, seen[id])
		seen[id] = true
	}
	require.Len(t, seen, n)
}

func TestRPCsInFlightAreBounded(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	e.up.onCall = func(ctx context.Context, c upCall) (json.RawMessage, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return json.RawMessage(`[]`), nil // ListAccounts' record is an array
	}
	c := e.dial(tokA)
	for i := range 16 {
		c.send(map[string]any{"action": "rpc", "id": i, "api": "ListAccounts"})
	}
	require.Eventually(t, func() bool { return len(e.up.callsOf(protocol.FnListAccounts)) == 16 }, testkit.Medium, time.Millisecond)
	for i := 16; i < 20; i++ {
		c.send(map[string]any{"action": "rpc", "id": i, "api": "ListAccounts"})
		f := c.read()
		require.Equal(t, float64(i), f["id"])
		require.Equal(t, "too_many_concurrent_requests", f["error"])
	}
	close(release)
	for range 16 {
		require.Equal(t, true, c.read()["success"])
	}
}

// fakeCaller is the HTTP API's agent in the budget test.
type fakeCaller struct{}

func (fakeCaller) Call(context.Context, string, string, string, json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(`[]`), nil
}

type noIdempotency struct{}

func (noIdempotency) ClaimIdempotent(context.Context, store.Idempotent, time.Time, time.Time) (store.Idempotent, bool, error) {
	return store.Idempotent{}, true, nil
}
func (noIdempotency) FinishIdempotent(context.Context, store.Idempotent) error { return nil }

func TestBudgetIsSharedWithHTTP(t *testing.T) {
	var now atomic.Int64 // the budget's clock stands still
	shared, err := budget.New(budget.Options{Policy: budget.Policy{Name: "trading", Rate: 60, Period: time.Minute, Burst: 4}, Now: now.Load})
	require.NoError(t, err)
	e := newEnv(t, func(o *Options) { o.Budget = shared })
	a, err := tradeapi.New(tradeapi.Options{Caller: fakeCaller{}, Auth: e.auth, Idempotency: noIdempotency{}, Budget: shared})
	require.NoError(t, err)
	mux := http.NewServeMux()
	a.Register(mux)
	hs := httptest.NewServer(mux)
	defer hs.Close()
	get := func() int {
		status, _ := httpGet(t, hs.URL+"/v1/api/accounts", http.Header{"Authorization": {"Bearer " + tokA}})
		return status
	}

	c := e.dial(tokA) // 1: the upgrade
	require.Equal(t, 200, get())
	c.send(map[string]any{"action": "rpc", "id": "a", "api": "ListAccounts"}) // 3
	require.Equal(t, true, c.read()["success"])
	require.Equal(t, 200, get()) // 4
	c.send(map[string]any{"action": "rpc", "id": "b", "api": "ListAccounts"})
	f := c.read()
	require.Equal(t, "rate_limited", f["error"])
	require.Equal(t, "trading", f["policy"])
	require.GreaterOrEqual(t, f["retryAfter"], float64(1))
	require.Equal(t, 429, get())
	// Another user's budget is untouched.
	cb := e.dial(tokB)
	cb.send(map[string]any{"action": "rpc", "id": "c", "api": "ListAccounts"})
	require.Equal(t, true, cb.read()["success"])
	// Refilled, both transports work again.
	now.Add(int64(2 * time.Second))
	c.send(map[string]any{"action": "rpc", "id": "d", "api": "ListAccounts"})
	require.Equal(t, true, c.read()["success"])
	require.Equal(t, 200, get())
	// And a socket upgrade is refused when the budget is empty.
	status, body := httpGet(t, e.http.URL+Path, withAuth(upgradeHeaders, tokA))
	require.Equal(t, 429, status)
	require.Equal(t, "rate_limited", body["error"])
}

func TestSubscriptionBudget(t *testing.T) {
	var now atomic.Int64
	subs, err := budget.New(budget.Options{Policy: SubscriptionPolicy, Now: now.Load})
	require.NoError(t, err)
	e := newEnv(t, func(o *Options) { o.SubscriptionBudget = subs })
	c := e.dial(tokA)
	c2 := e.dial(tokA2) // the same user: one budget
	for i := range 10 {
		cl := c
		if i%2 == 1 {
			cl = c2
		}
		cl.send(map[string]any{"action": "subscribe", "instruments": []string{"ES"}})
		require.Equal(t, "subscribed", cl.read()["type"])
	}
	c.send(map[string]any{"action": "unsubscribe", "instruments": []string{"ES"}})
	f := c.read()
	require.Equal(t, "rate_limited", f["error"])
	require.Equal(t, "subscriptions", f["policy"])
	require.Equal(t, float64(3), f["retryAfter"])
}

func TestSubscribeDeliversOnlySubscribedQuotes(t *testing.T) {
	e := newEnv(t)
	c := e.dial(tokA)
	c.send(map[string]any{"action": "subscribe", "id": "s", "instruments": []string{"ES", "nq 12-26", "XX", "ESZ6"}})
	f := c.read()
	require.Equal(t, "subscribed", f["type"])
	require.Equal(t, "s", f["id"])
	require.Equal(t, []any{"ES 12-26", "NQ 12-26"}, f["instruments"])
	require.Equal(t, []any{"XX"}, f["unknown"])
	set, _ := e.up.lastSet(userA)
	require.Equal(t, []string{"ES", "ESZ6", "NQ 12-26", "XX"}, set)

	e.srv.HandleEvent(userA, quoteEvent("ES 12-26", 5000))
	e.srv.HandleEvent(userA, quoteEvent("CL 12-26", 70))
	e.srv.HandleEvent(userA, quoteEvent("NQ 12-26", 21000))
	got := map[string]map[string]any{}
	for len(got) < 2 {
		f := c.read()
		require.Equal(t, "marketData", f["type"])
		for k, v := range quotesOf(f) {
			got[k] = v
		}
	}
	require.Equal(t, 5000.0, got["ES 12-26"]["bid"])
	require.Equal(t, 21000.0, got["NQ 12-26"]["bid"])
	require.NotContains(t, got, "CL 12-26")
	require.Equal(t, "2026-11-02T15:00:00Z", got["ES 12-26"]["quoteTimeUtc"])

	// Unsubscribing ES (by the name asked, or by contract) stops it.
	c.send(map[string]any{"action": "unsubscribe", "instruments": []string{"ES", "ESZ6"}})
	f = c.read()
	require.Equal(t, "unsubscribed", f["type"])
	require.Equal(t, []any{"ES 12-26"}, f["instruments"])
	require.Eventually(t, func() bool {
		set, _ := e.up.lastSet(userA)
		return fmt.Sprint(set) == "[NQ 12-26 XX]" || fmt.Sprint(set) == "[NQ 12-26]"
	}, testkit.Medium, time.Millisecond)
	e.srv.HandleEvent(userA, quoteEvent("ES 12-26", 5001))
	e.srv.HandleEvent(userA, quoteEvent("NQ 12-26", 21001))
	f = c.read()
	require.Equal(t, "marketData", f["type"])
	q := quotesOf(f)
	require.NotContains(t, q, "ES 12-26")
	require.Equal(t, 21001.0, q["NQ 12-26"]["bid"])

	// Unknown events and other users' events reach nobody.
	e.srv.HandleEvent(userA, protocol.Event{Kind: protocol.EventOrder, Data: json.RawMessage(`{}`)})
	e.srv.HandleEvent(userA, protocol.Event{Kind: protocol.EventQuote, Data: json.RawMessage(`"junk"`)})
	e.srv.HandleEvent("usr_nobody", quoteEvent("NQ 12-26", 1))
	require.Equal(t, int64(1), e.srv.Stats().BadQuotes)
	c.send(map[string]any{"action": "ping"})
	require.Equal(t, "pong", c.read()["type"])
}

func TestInstrumentLimit(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxInstruments = 3 })
	c := e.dial(tokA)
	c.send(map[string]any{"action": "subscribe", "instruments": []string{"ES", "NQ"}})
	require.Equal(t, "subscribed", c.read()["type"])
	c.send(map[string]any{"action": "subscribe", "instruments": []string{"CL", "GC"}})
	f := c.read()
	require.Equal(t, "too_many_instruments", f["error"])
	c.send(map[string]any{"action": "subscribe", "instruments": []string{"ES", "CL"}}) // ES again is not new
	require.Equal(t, []any{"ES 12-26", "CL 12-26"}, c.read()["instruments"])
	c.send(map[string]any{"action": "subscribe", "instruments": []string{"A", "B", "C", "D"}})
	require.Equal(t, "invalid_argument", c.read()["error"])
}

func TestUnionGoesUpstreamAndEmptiesWhenTheLastSocketLeaves(t *testing.T) {
	e := newEnv(t)
	c1 := e.dial(tokA)
	c2 := e.dial(tokA2)
	c1.send(map[string]any{"action": "subscribe", "instruments": []string{"ES"}})
	require.Equal(t, "subscribed", c1.read()["type"])
	c2.send(map[string]any{"action": "subscribe", "instruments": []string{"NQ", "ES"}})
	require.Equal(t, []any{"NQ 12-26", "ES 12-26"}, c2.read()["instruments"])
	set, n := e.up.lastSet(userA)
	require.Equal(t, []string{"ES", "NQ"}, set)
	require.Equal(t, 2, n)

	// ES stays in the union while c2 holds it: nothing is sent.
	c1.send(map[string]any{"action": "unsubscribe", "instruments": []string{"ES"}})
	require.Equal(t, "unsubscribed", c1.read()["type"])
	c1.send(map[string]any{"action": "ping"})
	require.Equal(t, "pong", c1.read()["type"])
	_, n = e.up.lastSet(userA)
	require.Equal(t, 2, n)
	// Both get ES quotes only where subscribed.
	e.srv.HandleEvent(userA, quoteEvent("ES 12-26", 1))
	require.Contains(t, quotesOf(c2.readType("marketData")), "ES 12-26")

	// A subscription another socket already made needs no call.
	c1.send(map[string]any{"action": "subscribe", "instruments": []string{"NQ"}})
	require.Equal(t, []any{"NQ 12-26"}, c1.read()["instruments"])
	_, n = e.up.lastSet(userA)
	require.Equal(t, 2, n)

	require.NoError(t, c2.ws.Close(websocket.StatusNormalClosure, ""))
	require.Eventually(t, func() bool {
		set, _ := e.up.lastSet(userA)
		return fmt.Sprint(set) == "[NQ]"
	}, testkit.Medium, time.Millisecond)
	require.NoError(t, c1.ws.Close(websocket.StatusNormalClosure, ""))
	require.Eventually(t, func() bool {
		set, _ := e.up.lastSet(userA)
		return set != nil && len(set) == 0
	}, testkit.Medium, time.Millisecond)
	require.Eventually(t, func() bool { return e.srv.userCount() == 0 }, testkit.Medium, time.Millisecond)
	require.Eventually(t, func() bool { return e.srv.Stats().Sockets == 0 }, testkit.Medium, time.Millisecond)
}

func TestPnlStreamingKeepsEachSocketsInterval(t *testing.T) {
	e := newEnv(t)
	slow := e.dial(tokA)
	fast := e.dial(tokA2)
	other := e.dial(tokB)

	// Out of range or fractional: refused, nothing changes.
	for _, iv := range []any{100, 60001, 1.5, "1000"} {
		slow.send(map[string]any{"action": "streamPnl", "enabled": true, "interval": iv})
		f := slow.read()
		require.Equal(t, "error", f["type"], iv)
		require.Contains(t, []any{"invalid_argument", "invalid_frame"}, f["error"])
	}
	require.Empty(t, e.up.callsOf(protocol.FnGetPnl))

	slow.send(map[string]any{"action": "streamPnl", "enabled": true})
	f := slow.read()
	require.Equal(t, map[string]any{"seq": f["seq"], "type": "pnlStreaming", "enabled": true, "interval": 1000.0}, f)
	first := slow.readType("pnlUpdate") // at once: a poll
	require.Equal(t, "acct-usr_a", first["accounts"].([]any)[0].(map[string]any)["account"])
	require.Len(t, e.up.callsOf(protocol.FnGetPnl), 1)

	fast.send(map[string]any{"action": "streamPnl", "enabled": true, "interval": 250})
	require.Equal(t, 250.0, fast.read()["interval"])
	f = fast.readType("pnlUpdate") // the fresh snapshot, no new poll
	require.Equal(t, first["epoch"], f["epoch"])
	require.Len(t, e.up.callsOf(protocol.FnGetPnl), 1)

	// The user is polled every 250 ms; slow gets every fourth.
	var slowFrames int
	for i := 1; i <= 8; i++ {
		e.clock.Advance(250 * time.Millisecond)
		require.Eventually(t, func() bool { return len(e.up.callsOf(protocol.FnGetPnl)) == 1+i }, testkit.Medium, time.Millisecond)
		f := fast.readType("pnlUpdate")
		require.Equal(t, "acct-usr_a", f["accounts"].([]any)[0].(map[string]any)["account"])
		if i%4 == 0 {
			f := slow.readType("pnlUpdate")
			require.Greater(t, f["epoch"], first["epoch"])
			slowFrames++
		}
	}
	require.Equal(t, 2, slowFrames)
	slow.send(map[string]any{"action": "ping"})
	require.Equal(t, "pong", slow.read()["type"], "slow got more than every fourth update")

	// Only the streaming sockets' user is polled; the other user's socket
	// hears nothing.
	for _, c := range e.up.callsOf(protocol.FnGetPnl) {
		require.Equal(t, userA, c.User)
	}
	other.send(map[string]any{"action": "ping"})
	require.Equal(t, "pong", other.read()["type"])

	// Off: the reply, then nothing; the last one off stops polling.
	fast.send(map[string]any{"action": "streamPnl", "enabled": false})
	require.Equal(t, false, fast.readType("pnlStreaming")["enabled"])
	slow.send(map[string]any{"action": "streamPnl", "enabled": false, "interval": 5000})
	f = slow.read()
	require.Equal(t, false, f["enabled"])
	require.Equal(t, 5000.0, f["interval"])
	calls := len(e.up.callsOf(protocol.FnGetPnl))
	e.clock.Advance(10 * time.Second)
	fast.send(map[string]any{"action": "ping"})
	require.Equal(t, "pong", fast.readType("pong")["type"])
	require.Len(t, e.up.callsOf(protocol.FnGetPnl), calls)
}

func TestSlowConsumerIsConflatedAndDoesNotHoldOthersBack(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.WriteTimeout = time.Minute })
	// Small socket buffers so the never-reading client blocks the
	// relay's writer after a few frames.
	e.http.Close()
	mux := http.NewServeMux()
	mux.Handle("GET "+Path, e.srv)
	hs := httptest.NewUnstartedServer(mux)
	hs.Listener = smallBufListener{hs.Listener}
	hs.Start()
	defer hs.Close()
	e.url = "ws" + strings.TrimPrefix(hs.URL, "http") + Path

	instruments := []string{"ES", "NQ", "CL", "GC", "YM"}
	fast := e.dial(tokA)
	slow := e.dial(tokA2)
	for _, c := range []*client{fast, slow} {
		c.send(map[string]any{"action": "subscribe", "instruments": instruments})
		require.Equal(t, "subscribed", c.read()["type"])
	}
	const events = 20000
	last := map[string]float64{}
	start := time.Now()
	for i := range events {
		in := instruments[i%len(instruments)] + " 12-26"
		bid := float64(i)
		// Long enough quotes that the slow socket's buffers fill fast.
		e.srv.HandleEvent(userA, quoteEvent(in, bid))
		last[in] = bid
	}
	injected := time.Since(start)
	t.Logf("injected %d quote events in %v", events, injected)

	// The fast client gets the last quote of every instrument, while the
	// slow one reads nothing.
	seen := map[string]float64{}
	for {
		f := fast.readType("marketData")
		for k, q := range quotesOf(f) {
			seen[k] = q["bid"].(float64)
		}
		done := true
		for k, v := range last {
			if seen[k] != v {
				done = false
			}
		}
		if done {
			break
		}
	}
	// The relay holds at most one quote per instrument for the slow socket.
	socks := e.srv.userRoutes(userA, "ES 12-26")
	require.Len(t, socks, 2)
	var slowConflated int64
	for _, sk := range socks {
		sk.mu.Lock()
		require.LessOrEqual(t, len(sk.mdQueue), len(instruments))
		require.LessOrEqual(t, len(sk.md), len(instruments))
		if sk.conflated > slowConflated {
			slowConflated = sk.conflated
		}
		sk.mu.Unlock()
	}
	require.Greater(t, slowConflated, int64(events/2), "the slow socket should have conflated most quotes")

	// When it reads at last, the slow client gets the latest quotes and
	// learns how many it missed.
	seen = map[string]float64{}
	var dropped float64
	for {
		f := slow.readType("marketData")
		for k, q := range quotesOf(f) {
			seen[k] = q["bid"].(float64)
		}
		if d, ok := f["dropped"].(float64); ok {
			require.GreaterOrEqual(t, d, dropped)
			dropped = d
		}
		done := true
		for k, v := range last {
			if seen[k] != v {
				done = false
			}
		}
		if done {
			break
		}
	}
	require.Greater(t, dropped, float64(events/2))
	st := e.srv.Stats()
	require.Greater(t, st.Conflated, int64(events/2))
	t.Logf("stats: %+v", st)
}

func TestUsersNeverSeeEachOthersData(t *testing.T) {
	e := newEnv(t)
	a := e.dial(tokA)
	b := e.dial(tokB)
	for _, c := range []*client{a, b} {
		c.send(map[string]any{"action": "subscribe", "instruments": []string{"ES"}})
		require.Equal(t, []any{"ES 12-26"}, c.read()["instruments"])
		c.send(map[string]any{"action": "streamPnl", "enabled": true, "interval": 250})
		require.Equal(t, "pnlStreaming", c.read()["type"])
	}
	for i := range 200 {
		e.srv.HandleEvent(userA, quoteEvent("ES 12-26", 1000+float64(i)))
		e.srv.HandleEvent(userB, quoteEvent("ES 12-26", 2000+float64(i)))
	}
	// Every user's P&L is polled at least four times more. A tick that
	// finds the user's last poll still running skips it (as the server
	// means to), so the clock moves on until the polls are done.
	polls := func(user string) int {
		n := 0
		for _, c := range e.up.callsOf(protocol.FnGetPnl) {
			if c.User == user {
				n++
			}
		}
		return n
	}
	require.Eventually(t, func() bool {
		if polls(userA) >= 5 && polls(userB) >= 5 {
			return true
		}
		e.clock.Advance(250 * time.Millisecond)
		return false
	}, testkit.Medium, 5*time.Millisecond)
	check := func(c *client, user string, lo float64) {
		gotLast, pnls := false, 0
		for !gotLast || pnls < 3 {
			f := c.read()
			switch f["type"] {
			case "marketData":
				for _, q := range quotesOf(f) {
					bid := q["bid"].(float64)
					require.True(t, bid >= lo && bid < lo+1000, "user %s got bid %v", user, bid)
					gotLast = gotLast || bid == lo+199
				}
			case "pnlUpdate":
				for _, acct := range f["accounts"].([]any) {
					require.Equal(t, "acct-"+user, acct.(map[string]any)["account"])
				}
				pnls++
			}
		}
	}
	check(a, userA, 1000)
	check(b, userB, 2000)
	// RPCs reach the caller's own agent.
	accountsUser := func(f map[string]any) any {
		return f["data"].(map[string]any)["accounts"].([]any)[0].(map[string]any)["user"]
	}
	a.send(map[string]any{"action": "rpc", "id": 1, "api": "ListAccounts"})
	require.Equal(t, userA, accountsUser(a.readReply()))
	b.send(map[string]any{"action": "rpc", "id": 1, "api": "ListAccounts"})
	require.Equal(t, userB, accountsUser(b.readReply()))
}

func TestSocketLimitPerUser(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxSocketsPerUser = 2 })
	c1 := e.dial(tokA)
	e.dial(tokA2)
	extra := e.dialNoStatus(tokA)
	ce := extra.closeError()
	require.Equal(t, websocket.StatusPolicyViolation, ce.Code)
	require.Contains(t, ce.Reason, "too many sockets")
	e.dial(tokB) // another user is not affected
	require.NoError(t, c1.ws.Close(websocket.StatusNormalClosure, ""))
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Medium)
		defer cancel()
		ws, _, err := websocket.Dial(ctx, e.url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tokA}}})
		if err != nil {
			return false
		}
		defer ws.CloseNow()
		_, data, err := ws.Read(ctx)
		return err == nil && bytes.Contains(data, []byte(`"status"`))
	}, testkit.Medium, testkit.Tick)
}

func TestAgentDisconnectAndReconnect(t *testing.T) {
	e := newEnv(t)
	e.up.setConnected(userA, false)
	c := e.dialNoStatus(tokA)
	f := c.read()
	require.Equal(t, "status", f["type"])
	require.Equal(t, false, f["agentConnected"])
	c.send(map[string]any{"action": "subscribe", "instruments": []string{"ES"}})
	require.Equal(t, "addon_disconnected", c.read()["error"])
	c.send(map[string]any{"action": "rpc", "id": 1, "api": "ListAccounts"})
	require.Equal(t, "addon_disconnected", c.read()["error"])

	e.up.setConnected(userA, true)
	e.srv.HandleStatus(userA, true)
	f = c.read()
	require.Equal(t, "status", f["type"])
	require.Equal(t, true, f["agentConnected"])
	c.send(map[string]any{"action": "subscribe", "instruments": []string{"ES"}})
	require.Equal(t, "subscribed", c.read()["type"])
	_, n := e.up.lastSet(userA)

	e.up.setConnected(userA, false)
	e.srv.HandleStatus(userA, false)
	f = c.read()
	require.Equal(t, false, f["agentConnected"])
	require.Contains(t, f["detail"], "not connected")
	// Unsubscribing works while the agent is away; it learns on return.
	c.send(map[string]any{"action": "subscribe", "instruments": []string{"NQ"}})
	require.Equal(t, "addon_disconnected", c.read()["error"])

	e.up.setConnected(userA, true)
	e.srv.HandleStatus(userA, true)
	require.Equal(t, true, c.read()["agentConnected"])
	require.Eventually(t, func() bool {
		set, m := e.up.lastSet(userA)
		return m == n+1 && fmt.Sprint(set) == "[ES]"
	}, testkit.Medium, time.Millisecond)
	e.srv.HandleEvent(userA, quoteEvent("ES 12-26", 42))
	require.Equal(t, 42.0, quotesOf(c.readType("marketData"))["ES 12-26"]["bid"])
}

// Subscriptions the agent could not take when it connected (its platform
// not ready yet) are sent again when the platform's connections change,
// and, without such news, a second later.
func TestSubscriptionsSentAgainOncePlatformIsReady(t *testing.T) {
	t.Parallel()
	for _, viaEvent := range []bool{true, false} {
		e := newEnv(t)
		e.up.setConnected(userA, false)
		c := e.dialNoStatus(tokA)
		require.Equal(t, false, c.read()["agentConnected"])
		e.up.setConnected(userA, true)
		e.srv.HandleStatus(userA, true)
		require.Equal(t, true, c.read()["agentConnected"])
		c.send(map[string]any{"action": "subscribe", "instruments": []string{"ES"}})
		require.Equal(t, "subscribed", c.read()["type"])
		_, n := e.up.lastSet(userA)

		// The agent comes back; its platform is not ready.
		e.up.setSubsErr(&protocol.Error{Code: protocol.CodePlatformUnavailable, Detail: "NinjaTrader is not running"})
		e.up.setConnected(userA, false)
		e.srv.HandleStatus(userA, false)
		require.Equal(t, false, c.read()["agentConnected"])
		e.up.setConnected(userA, true)
		e.srv.HandleStatus(userA, true)
		require.Equal(t, true, c.read()["agentConnected"])
		require.Eventually(t, func() bool { return e.up.failedSets() > 0 }, testkit.Medium, time.Millisecond)
		_, m := e.up.lastSet(userA)
		require.Equal(t, n, m, "refused")

		e.up.setSubsErr(nil)
		if viaEvent {
			e.srv.HandleEvent(userA, protocol.Event{Kind: protocol.EventConnections, Data: json.RawMessage(`[]`)})
		}
		require.Eventually(t, func() bool {
			set, m := e.up.lastSet(userA)
			return m == n+1 && fmt.Sprint(set) == "[ES]"
		}, testkit.Medium, time.Millisecond, "sent again (via the connections event: %v)", viaEvent)
	}
}

func TestRevokedTokenClosesSocket(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.ReverifyInterval = 20 * time.Millisecond })
	c := e.dial(tokA)
	e.auth.Revoke(tokA)
	ce := c.closeError()
	require.Equal(t, websocket.StatusPolicyViolation, ce.Code)
	require.Contains(t, ce.Reason, "revoked")
}

// A revoked token or a downgraded plan stops acting at the socket's next
// rpc or subscription frame, long before the periodic re-verification:
// the frame is answered with the HTTP door's code, runs nothing, and the
// socket closes with 1008. A store that cannot say refuses the frame
// alone.
func TestFramesThatActRecheckTheToken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		frame  map[string]any
		change func(e *env)
		code   string
		closed bool
	}{
		{"revoked before PlaceOrder", rpcFrame("p", "PlaceOrder", placeArgs()), func(e *env) { e.auth.Revoke(tokA) }, errcode.Unauthorized, true},
		{"revoked before a read", rpcFrame("p", "ListAccounts", nil), func(e *env) { e.auth.Revoke(tokA) }, errcode.Unauthorized, true},
		{"revoked before subscribe", map[string]any{"action": "subscribe", "id": "p", "instruments": []string{"ES"}},
			func(e *env) { e.auth.Revoke(tokA) }, errcode.Unauthorized, true},
		{"plan downgraded", rpcFrame("p", "PlaceOrder", placeArgs()), func(e *env) {
			e.auth.Add(tokA, auth.Principal{UserID: userA, Plan: auth.PlanFree, Kind: auth.KindAPI})
		}, errcode.PlanRequired, true},
		{"store unavailable", rpcFrame("p", "PlaceOrder", placeArgs()), func(e *env) {
			e.auth.Fail(tokA, auth.ErrStoreUnavailable)
		}, errcode.StorageUnavailable, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, func(o *Options) { o.ReverifyInterval = time.Hour })
			c := e.dial(tokA)
			tc.change(e)
			start := time.Now()
			c.send(tc.frame)
			f := c.read()
			require.Equal(t, "p", f["id"])
			require.Equal(t, tc.code, f["error"], f)
			require.Empty(t, e.up.callsOf("PlaceOrder"), "a refused frame runs nothing")
			require.Empty(t, e.up.callsOf("ListAccounts"), "a refused frame runs nothing")
			require.Empty(t, e.up.callsOf("SetSubscriptions"), "a refused frame runs nothing")
			if !tc.closed {
				c.send(map[string]any{"action": "ping"})
				require.Equal(t, "pong", c.read()["type"])
				return
			}
			ce := c.closeError()
			require.Equal(t, websocket.StatusPolicyViolation, ce.Code)
			require.Less(t, time.Since(start), testkit.Medium, "closed at once, not at the hourly re-verification")
		})
	}
}

// A dashboard session's socket checks its session every
// SessionReverifyInterval, however long the API sockets' interval is: a
// signed-out session ends its socket within it.
func TestSignedOutSessionEndsItsSocketSoon(t *testing.T) {
	t.Parallel()
	e := newSessionEnv(t, func(o *Options) {
		o.ReverifyInterval = time.Hour
		o.SessionReverifyInterval = 50 * time.Millisecond
	})
	self := "http://" + e.http.Listener.Addr().String()
	c, status := e.dialSession(sessFree, self, nil)
	require.Equal(t, http.StatusSwitchingProtocols, status)
	require.Equal(t, "status", c.read()["type"])
	e.auth.Revoke(sessFree)
	ce := c.closeError()
	require.Equal(t, websocket.StatusPolicyViolation, ce.Code)
	require.Contains(t, ce.Reason, "session")
}

func TestCloseSends1001AndRefusesNewSockets(t *testing.T) {
	e := newEnv(t)
	c := e.dial(tokA)
	c.send(map[string]any{"action": "subscribe", "instruments": []string{"ES"}})
	require.Equal(t, "subscribed", c.read()["type"])
	slowCall := make(chan struct{})
	e.up.onCall = func(ctx context.Context, _ upCall) (json.RawMessage, error) {
		close(slowCall)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	c.send(map[string]any{"action": "rpc", "id": 1, "api": "ListAccounts"})
	<-slowCall
	// The client reads, as clients do, so it answers the close handshake.
	code := make(chan websocket.StatusCode, 1)
	go func() {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), testkit.Medium)
			_, _, err := c.ws.Read(ctx)
			cancel()
			if err != nil {
				code <- websocket.CloseStatus(err)
				return
			}
		}
	}()
	start := time.Now()
	require.NoError(t, e.srv.Close())
	require.Less(t, time.Since(start), time.Second)
	require.Equal(t, websocket.StatusGoingAway, <-code)
	require.NoError(t, e.srv.Close()) // idempotent
	status, body := httpGet(t, e.http.URL+Path, withAuth(upgradeHeaders, tokA))
	require.Equal(t, 503, status)
	require.Equal(t, "shutting_down", body["error"])
}

func TestTokenInQueryIsNeverLogged(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core)
	e := newEnv(t, func(o *Options) { o.Logger = log })
	e.up.onCall = func(context.Context, upCall) (json.RawMessage, error) {
		return nil, io.ErrUnexpectedEOF // an unexpected failure, logged
	}
	// The relay's own stack: metrics middleware, a mux, and an http.Server
	// whose error log is the same logger.
	m := metrics.New()
	mux := http.NewServeMux()
	mux.Handle("GET "+Path, e.srv)
	hs := httptest.NewUnstartedServer(m.Middleware(mux))
	hs.Config.ErrorLog = zap.NewStdLog(log)
	hs.Start()
	defer hs.Close()
	wsURL := "ws" + strings.TrimPrefix(hs.URL, "http") + Path

	ctx, cancel := context.WithTimeout(context.Background(), testkit.Medium)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, wsURL+"?token="+tokA, nil)
	require.NoError(t, err)
	c := &client{t: t, ws: ws}
	c.read()
	c.send(map[string]any{"action": "rpc", "id": 1, "api": "ListAccounts"})
	require.Equal(t, "internal_error", c.read()["error"])
	c.sendRaw("garbage " + tokA)
	c.read()
	ws.Close(websocket.StatusNormalClosure, "")
	e.auth.Revoke(tokA2)
	for _, q := range []string{"?token=" + tokA2, "?token=" + tokB + "&x=" + tokB} {
		_, _, err := websocket.Dial(ctx, wsURL+q, nil)
		require.Error(t, err)
	}
	require.Eventually(t, func() bool { return e.srv.Stats().Sockets == 0 }, testkit.Medium, time.Millisecond)

	var all bytes.Buffer
	for _, l := range append(logs.All(), e.logs.All()...) {
		all.WriteString(l.Message)
		for k, v := range l.ContextMap() {
			all.WriteString(k)
			b, _ := json.Marshal(v)
			all.Write(b)
		}
	}
	require.Contains(t, all.String(), "stream call failed") // the logs were written
	for _, tok := range []string{tokA, tokA2, tokB} {
		require.NotContains(t, all.String(), tok)
		require.NotContains(t, all.String(), tok[len("tb_api_"):])
	}
}

func TestTakeTokenScrubsTheRequest(t *testing.T) {
	r := httptest.NewRequest("GET", "/ws/stream?token=secret-token", nil)
	tok, e := takeToken(r)
	require.Nil(t, e)
	require.Equal(t, "secret-token", tok)
	require.Empty(t, r.URL.RawQuery)
	require.Equal(t, "/ws/stream", r.RequestURI)
	require.NotContains(t, r.URL.String(), "secret")
	// The header wins.
	r = httptest.NewRequest("GET", "/ws/stream?token=q", nil)
	r.Header.Set("Authorization", "Bearer h")
	tok, _ = takeToken(r)
	require.Equal(t, "h", tok)
}

func TestOptions(t *testing.T) {
	l, err := budget.New(budget.Options{Policy: budget.Trading})
	require.NoError(t, err)
	_, err = New(Options{})
	require.Error(t, err)
	_, err = New(Options{Auth: newFakeAuth(), Upstream: &fakeUpstream{}})
	require.Error(t, err, "the shared budget is required")
	_, err = New(Options{Auth: newFakeAuth(), Upstream: &fakeUpstream{}, Budget: l})
	require.Error(t, err, "the shared idempotency store is required")
	_, err = New(Options{Auth: newFakeAuth(), Upstream: &fakeUpstream{}, Budget: l, Idempotency: noIdempotency{}, MaxInFlight: -1})
	require.Error(t, err)
	_, err = New(Options{Auth: newFakeAuth(), Upstream: &fakeUpstream{}, Budget: l, Idempotency: noIdempotency{}, WriteTimeout: -time.Second})
	require.Error(t, err)
	s, err := New(Options{Auth: newFakeAuth(), Upstream: &fakeUpstream{}, Budget: l, Idempotency: noIdempotency{}})
	require.NoError(t, err)
	require.Equal(t, 5, s.opts.MaxSocketsPerUser)
	require.Equal(t, 50, s.opts.MaxInstruments)
	require.Equal(t, 16, s.opts.MaxInFlight)
	require.Equal(t, int64(64<<10), s.opts.ReadLimit)
	require.Equal(t, SubscriptionPolicy, s.opts.SubscriptionBudget.Policy())
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
}

func TestResolveNames(t *testing.T) {
	res := protocol.SubscriptionsResult{Instruments: []string{"ES 12-26", "ES 03-27", "NQ 12-26", "CL 01-27", "es 12-26"}, Unknown: []string{"XX"}}
	m, unknown := resolveNames([]string{"ES", "ES 03-27", "ESH7", "ESZ26", "NQ", "CL", "XX", "GC", "NQ 06-27"}, res)
	require.Equal(t, map[string]string{
		"ES": "ES 12-26", "ES 03-27": "ES 03-27", "ESH7": "ES 03-27", "ESZ26": "ES 12-26",
		"NQ": "NQ 12-26", "CL": "CL 01-27",
	}, m)
	require.Equal(t, map[string]bool{"XX": true, "GC": true, "NQ 06-27": true}, unknown)
	// After a roll the root follows the agent, even when the old contract
	// is also asked for by name.
	m, _ = resolveNames([]string{"ES", "ES 12-26"}, protocol.SubscriptionsResult{Instruments: []string{"ES 12-26", "ES 03-27"}})
	require.Equal(t, "ES 03-27", m["ES"])
	require.Equal(t, "ES 12-26", m["ES 12-26"])
	// A root and its front month named: one contract.
	m, _ = resolveNames([]string{"ES", "ES 12-26"}, protocol.SubscriptionsResult{Instruments: []string{"ES 12-26"}})
	require.Equal(t, "ES 12-26", m["ES"])
}

// The relay's Metrics satisfies the stream's interface.
var _ Metrics = (*metrics.Metrics)(nil)

// A subscribe sent at once, before the client read anything, is never
// lost: the socket joins its user before its first frame is read.
func TestSubscribeRightAfterUpgrade(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxSocketsPerUser = 50 })
	var cs []*client
	for range 40 {
		c := e.dialNoStatus(tokA)
		c.send(map[string]any{"action": "subscribe", "instruments": []string{"ES"}})
		cs = append(cs, c)
	}
	for _, c := range cs {
		require.Equal(t, []any{"ES 12-26"}, c.readType("subscribed")["instruments"])
	}
	require.Len(t, e.srv.userRoutes(userA, "ES 12-26"), 40)
}

// A client that stops reading is dropped after WriteTimeout; the others
// go on.
func TestClientThatStopsReadingIsDropped(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.WriteTimeout = 300 * time.Millisecond })
	e.http.Close()
	mux := http.NewServeMux()
	mux.Handle("GET "+Path, e.srv)
	hs := httptest.NewUnstartedServer(mux)
	hs.Listener = smallBufListener{hs.Listener}
	hs.Start()
	defer hs.Close()
	e.url = "ws" + strings.TrimPrefix(hs.URL, "http") + Path

	fast := e.dial(tokA)
	stuck := e.dial(tokA2)
	for _, c := range []*client{fast, stuck} {
		c.send(map[string]any{"action": "subscribe", "instruments": []string{"ES", "NQ"}})
		require.Equal(t, "subscribed", c.read()["type"])
	}
	// The fast client reads all along, until its pong.
	fastDone := make(chan error, 1)
	go func() {
		for {
			f, err := fast.readErr(testkit.Long)
			if err != nil || f["type"] == "pong" {
				fastDone <- err
				return
			}
		}
	}()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			e.srv.HandleEvent(userA, quoteEvent([]string{"ES 12-26", "NQ 12-26"}[i%2], float64(i)))
			if i%100 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	require.Eventually(t, func() bool { return e.srv.Stats().Sockets == 1 }, testkit.Long, 10*time.Millisecond)
	close(stop)
	<-done
	fast.send(map[string]any{"action": "ping"})
	require.NoError(t, <-fastDone)
	require.Equal(t, int64(1), e.srv.Stats().Sockets)
	_, err := stuck.readErr(testkit.Medium)
	for err == nil {
		_, err = stuck.readErr(testkit.Medium)
	}
}

// The subscribed reply carries the latest quote of each contract, even one
// the agent published before its answer reached the relay; it is not sent
// again as marketData, and later quotes follow as marketData.
func TestSubscribedReplyCarriesLatestQuotes(t *testing.T) {
	e := newEnv(t)
	published := map[string]bool{} // as the simulator: a contract's first subscription
	e.up.onSubscribed = func(user string, contracts []string) {
		for _, c := range contracts {
			if !published[c] {
				published[c] = true
				e.srv.HandleEvent(user, quoteEvent(c, 6000.25))
			}
		}
	}
	c := e.dial(tokA)
	c.send(map[string]any{"action": "subscribe", "instruments": []string{"ES"}})
	f := c.read()
	require.Equal(t, "subscribed", f["type"])
	qs := f["quotes"].([]any)
	require.Len(t, qs, 1)
	require.Equal(t, "ES 12-26", qs[0].(map[string]any)["instrument"])
	require.Equal(t, 6000.25, qs[0].(map[string]any)["bid"])
	e.srv.HandleEvent(userA, quoteEvent("ES 12-26", 6123.25))
	f = c.read()
	require.Equal(t, "marketData", f["type"])
	require.Equal(t, 6123.25, quotesOf(f)["ES 12-26"]["bid"])

	// A second socket joining a contract already streamed gets its
	// current quote at once, with no call to the agent.
	_, n := e.up.lastSet(userA)
	c2 := e.dial(tokA2)
	c2.send(map[string]any{"action": "subscribe", "instruments": []string{"ES 12-26", "NQ"}})
	f = c2.read()
	require.Equal(t, []any{"ES 12-26", "NQ 12-26"}, f["instruments"])
	got := map[string]float64{}
	for _, q := range f["quotes"].([]any) {
		got[q.(map[string]any)["instrument"].(string)] = q.(map[string]any)["bid"].(float64)
	}
	require.Equal(t, map[string]float64{"ES 12-26": 6123.25, "NQ 12-26": 6000.25}, got)
	_, m := e.up.lastSet(userA)
	require.Equal(t, n+1, m) // NQ was new
	c2.send(map[string]any{"action": "ping"})
	require.Equal(t, "pong", c2.read()["type"], "the snapshot is not repeated as marketData")
}

// An agent that reports its own mapping is taken at its word, also where
// the fallback rules would guess ("ES" next to "ES 12-26").
func TestResolveNamesFromAgent(t *testing.T) {
	mapping, unknown := resolveNames([]string{"ES", "ES 12-26", "XX"}, protocol.SubscriptionsResult{
		Instruments: []string{"ES 12-26"},
		Unknown:     []string{"XX"},
		Resolved:    map[string]string{"ES": "ES 12-26", "ES 12-26": "ES 12-26"},
	})
	require.Equal(t, map[string]string{"ES": "ES 12-26", "ES 12-26": "ES 12-26"}, mapping)
	require.Equal(t, map[string]bool{"XX": true}, unknown)
}

// A frame's detail keeps "&" as written: frames are encoded without
// encoding/json's HTML escaping.
func TestFramesKeepAmpersands(t *testing.T) {
	t.Parallel()
	for _, rpc := range []bool{false, true} {
		raw := string((&frameError{code: "invalid_argument", detail: "S&P <ES>"}).encode(json.RawMessage(`1`), rpc))
		require.Contains(t, raw, `"S&P <ES>"`)
		require.NotContains(t, raw, `\u0026`)
	}
}

// A streamPnl interval out of range names the bound it crossed: the
// minimum below it, the maximum above it.
func TestStreamPnlIntervalNamesTheBoundCrossed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		interval string
		want     httpapi.FieldError
	}{
		{"249", httpapi.FieldError{Path: "interval", Code: errcode.FieldCodeGreaterThanEqual, Limit: int64(250)}},
		{"0", httpapi.FieldError{Path: "interval", Code: errcode.FieldCodeGreaterThanEqual, Limit: int64(250)}},
		{"60001", httpapi.FieldError{Path: "interval", Code: errcode.FieldCodeLessThanEqual, Limit: int64(60000)}},
	} {
		t.Run(tc.interval, func(t *testing.T) {
			t.Parallel()
			fr, e := parseFrame([]byte(`{"action":"streamPnl","enabled":true,"interval":` + tc.interval + `}`))
			require.Nil(t, e)
			_, _, e = parseStreamPnl(fr)
			require.NotNil(t, e)
			require.Equal(t, errcode.InvalidArgument, e.code)
			require.Equal(t, "interval must be 250 to 60000 milliseconds", e.detail)
			require.Equal(t, []httpapi.FieldError{tc.want}, e.fields)
		})
	}
}
