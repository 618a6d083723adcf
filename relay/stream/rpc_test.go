package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/errcode"
	"tradebridge/relay/tradeapi"
)

// tradingAgent answers like the agent: ListPositions with an array of
// positions, GetWatermarks and GetAccount with objects, Reverse with
// no_position, and each write with a new order id (o-1, o-2, …), so that
// a replayed answer is told from a second run.
type tradingAgent struct {
	mu     sync.Mutex
	placed int
	failW  func(n int) error // when set, the error of the nth write (1-based)
}

func (a *tradingAgent) call(_ context.Context, c upCall) (json.RawMessage, error) {
	switch c.Fn {
	case protocol.FnListPositions:
		return json.Marshal([]protocol.Position{{Account: "Sim101", Instrument: "ES 12-26", MarketPosition: "Long", Quantity: 2, AveragePrice: 6000}})
	case protocol.FnGetWatermarks:
		return json.Marshal(protocol.Watermarks{Account: "Sim101"})
	case protocol.FnReverse:
		return nil, protocol.NewError(protocol.CodeNoPosition, "no position in ES 12-26")
	}
	if f, _ := protocol.LookupFunction(c.Fn); f.Write {
		a.mu.Lock()
		a.placed++
		n := a.placed
		fail := a.failW
		a.mu.Unlock()
		if fail != nil {
			if err := fail(n); err != nil {
				return nil, err
			}
		}
		return json.Marshal(map[string]any{"orderId": fmt.Sprintf("o-%d", n), "status": "Working"})
	}
	return echoRecord(c)
}

func newTradingEnv(t *testing.T) (*env, *tradingAgent) {
	e := newEnv(t)
	ag := &tradingAgent{}
	e.up.mu.Lock()
	e.up.onCall = ag.call
	e.up.mu.Unlock()
	return e, ag
}

func placeArgs(extra ...any) map[string]any {
	m := map[string]any{"account": "Sim101", "action": "Buy", "instrument": "ES", "orderType": "Market", "quantity": 1, "timeInForce": "Day"}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	return m
}

func rpcFrame(id any, fn string, args map[string]any) map[string]any {
	f := map[string]any{"action": "rpc", "id": id, "api": fn}
	if args != nil {
		f["args"] = args
	}
	return f
}

// A client that tells replies from events by the presence of type (as the
// specification says) gets every rpc reply, success or failure, and every
// event, interleaved.
func TestRPCRepliesCarryNoType(t *testing.T) {
	t.Parallel()
	e, _ := newTradingEnv(t)
	c := e.dial(tokA)
	c.send(map[string]any{"action": "subscribe", "instruments": []string{"ES"}})
	frames := []map[string]any{
		rpcFrame("ok", "ListPositions", map[string]any{"account": "Sim101"}),
		rpcFrame("write", "PlaceOrder", placeArgs("idempotencyKey", "k-1")),
		rpcFrame("replay", "PlaceOrder", placeArgs("idempotencyKey", "k-1")),
		rpcFrame("reused", "PlaceOrder", placeArgs("idempotencyKey", "k-1", "quantity", 3)),
		rpcFrame("agentErr", "Reverse", map[string]any{"account": "Sim101", "instrument": "ES"}),
		rpcFrame("badArgs", "GetAccount", nil),
		rpcFrame("noSuch", "NoSuchThing", nil),
		{"action": "rpc", "id": "noApi"},
	}
	wantSuccess := map[string]bool{"ok": true, "write": true, "replay": true}
	replies := map[string]map[string]any{}
	events := map[string]int{}
	// dispatch reads frames as such a client does until cond holds.
	dispatch := func(cond func() bool) {
		for !cond() {
			f := c.read()
			if typ, typed := f["type"]; typed {
				events[typ.(string)]++
				continue
			}
			id := f["id"].(string)
			require.NotContains(t, replies, id, "one reply per frame")
			replies[id] = f
		}
	}
	for i, f := range frames {
		c.send(f)
		e.srv.HandleEvent(userA, quoteEvent("ES 12-26", 5000+float64(i)))
		if i == 1 {
			// The replay must find the first write recorded.
			dispatch(func() bool { return replies["write"] != nil })
		}
	}
	c.send(map[string]any{"action": "ping", "id": "p"})
	dispatch(func() bool { return len(replies) == len(frames) && events["pong"] == 1 })
	require.Positive(t, events["subscribed"])
	for id, f := range replies {
		require.NotContains(t, f, "type", id)
		require.Equal(t, wantSuccess[id], f["success"], "%s: %v", id, f)
	}
	require.Equal(t, true, replies["replay"]["replayed"])
	require.Equal(t, errcode.IdempotencyKeyReused, replies["reused"]["error"])
	require.Equal(t, "no_position", replies["agentErr"]["error"])
	require.Equal(t, "missing_required_fields", replies["badArgs"]["error"])
	require.Equal(t, errcode.UnknownFunction, replies["noSuch"]["error"])
	require.Equal(t, errcode.InvalidFrame, replies["noApi"]["error"])
}

// Replies are rendered in the profile of the socket's token: standard
// wraps data, compatible puts its members at the top level. Errors read
// the same in both.
func TestRPCRepliesFollowTheTokensProfile(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, token, fn string
		args            map[string]any
		top, notTop     []string
		data            []string // members of data, when the reply has it
	}{
		{"standard list", tokA, "ListPositions", map[string]any{"account": "Sim101"}, []string{"data"}, []string{"positions", "count"}, []string{"positions", "count"}},
		{"compatible list", tokAC, "ListPositions", map[string]any{"account": "Sim101"}, []string{"positions", "count"}, []string{"data"}, nil},
		{"standard write", tokA, "PlaceOrder", placeArgs(), []string{"data", "orderId"}, nil, []string{"orderId", "status"}},
		{"compatible write", tokAC, "PlaceOrder", placeArgs(), []string{"orderId", "status"}, []string{"data"}, nil},
		{"compatible wrapped", tokAC, "GetWatermarks", map[string]any{"account": "Sim101"}, []string{"data"}, []string{"watermarks"}, []string{"watermarks"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, _ := newTradingEnv(t)
			c := e.dial(tc.token)
			c.send(rpcFrame(1, tc.fn, tc.args))
			f := c.readReply()
			require.Equal(t, true, f["success"], f)
			require.NotContains(t, f, "type")
			for _, k := range tc.top {
				require.Contains(t, f, k)
			}
			for _, k := range tc.notTop {
				require.NotContains(t, f, k)
			}
			for _, k := range tc.data {
				require.Contains(t, f["data"], k)
			}
			if tc.fn == "ListPositions" {
				count := f["count"]
				if d, ok := f["data"].(map[string]any); ok {
					count = d["count"]
				}
				require.Equal(t, 1.0, count)
			}
			// A failure is the same in both profiles.
			c.send(rpcFrame(2, "Reverse", map[string]any{"account": "Sim101", "instrument": "ES"}))
			f = c.readReply()
			require.Equal(t, map[string]any{"seq": f["seq"], "id": 2.0, "success": false, "error": "no_position", "detail": "no position in ES 12-26"}, f)
		})
	}
}

// A keyed write over the socket is recorded in the store: a repeat is
// answered with the first outcome (replayed) and runs nothing, whether the
// key is idempotencyKey or orderId, and whether the outcome was a success
// or the agent's refusal. Nothing of the fake agent remembers request ids:
// only the store can answer the repeat.
func TestKeyedWriteRepliesFromTheStore(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		fn        string
		args      map[string]any
		requestID string
		other     map[string]any // another request under the same key
		code      string         // the recorded failure; "" for a success
	}{
		{"idempotencyKey", "PlaceOrder", placeArgs("idempotencyKey", "k-1"), "idem:key:k-1", placeArgs("idempotencyKey", "k-1", "action", "Sell"), ""},
		{"orderId", "PlaceOrder", placeArgs("orderId", "my-1"), "idem:order:my-1", placeArgs("orderId", "my-1", "quantity", 2), ""},
		{"agent refusal", "Reverse", map[string]any{"account": "Sim101", "instrument": "ES", "idempotencyKey": "k-r"}, "idem:key:k-r",
			map[string]any{"account": "Sim102", "instrument": "ES", "idempotencyKey": "k-r"}, "no_position"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, _ := newTradingEnv(t)
			c := e.dial(tokA)
			c.send(rpcFrame("a", tc.fn, tc.args))
			first := c.readReply()
			require.NotContains(t, first, "replayed")
			c.send(rpcFrame("b", tc.fn, tc.args))
			again := c.readReply()
			require.Equal(t, "b", again["id"])
			require.Equal(t, true, again["replayed"], again)
			for _, k := range []string{"success", "data", "orderId", "error", "detail"} {
				require.Equal(t, first[k], again[k], k)
			}
			if tc.code == "" {
				require.Equal(t, true, first["success"], first)
				require.Equal(t, "o-1", again["orderId"])
			} else {
				require.Equal(t, tc.code, again["error"])
			}
			calls := e.up.callsOf(tc.fn)
			require.Len(t, calls, 1, "the repeat ran nothing")
			require.Equal(t, tc.requestID, calls[0].RequestID)

			// Another request under the same key is refused; nothing runs.
			c.send(rpcFrame("c", tc.fn, tc.other))
			f := c.readReply()
			require.Equal(t, false, f["success"])
			require.Equal(t, errcode.IdempotencyKeyReused, f["error"])
			require.NotContains(t, f, "type")
			require.Len(t, e.up.callsOf(tc.fn), 1)

			// The same key of another user is another key.
			cb := e.dial(tokB)
			cb.send(rpcFrame("d", tc.fn, tc.args))
			require.NotContains(t, cb.readReply(), "replayed")
			require.Len(t, e.up.callsOf(tc.fn), 2)
		})
	}
}

// The record holds the agent's result, not a rendered reply: a replay is
// rendered in the profile of the socket that asks.
func TestKeyedWriteReplayIsRenderedForTheAskingProfile(t *testing.T) {
	t.Parallel()
	e, _ := newTradingEnv(t)
	std := e.dial(tokA)
	std.send(rpcFrame(1, "PlaceOrder", placeArgs("idempotencyKey", "k-p")))
	f := std.readReply()
	require.Contains(t, f, "data")
	compat := e.dial(tokAC)
	compat.send(rpcFrame(2, "PlaceOrder", placeArgs("idempotencyKey", "k-p")))
	f = compat.readReply()
	require.NotContains(t, f, "data")
	require.Equal(t, "o-1", f["orderId"])
	require.Equal(t, true, f["replayed"])
	require.Len(t, e.up.callsOf(protocol.FnPlaceOrder), 1)
}

// An outcome the relay could not learn is not recorded as the answer: the
// retry runs again under the same request id (the agent answers it from
// its memory), and its outcome is the one recorded.
func TestKeyedWriteWithUnknownOutcomeRunsAgain(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		err  error
		code string
	}{
		{"tunnel dropped", agentcall.ErrConnectionLost, errcode.OutcomeUnknown},
		{"agent away", agentcall.ErrNotConnected, errcode.AddonDisconnected},
		{"agent still runs it", protocol.NewError(protocol.CodeRequestInProgress, "a write with this request id is still running"), errcode.RequestInProgress},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, ag := newTradingEnv(t)
			ag.failW = func(n int) error {
				if n == 1 {
					return tc.err
				}
				return nil
			}
			c := e.dial(tokA)
			c.send(rpcFrame(1, "PlaceOrder", placeArgs("idempotencyKey", "k-u")))
			f := c.readReply()
			require.Equal(t, tc.code, f["error"])
			c.send(rpcFrame(2, "PlaceOrder", placeArgs("idempotencyKey", "k-u")))
			f = c.readReply()
			require.Equal(t, true, f["success"], f)
			require.NotContains(t, f, "replayed")
			require.Equal(t, "o-2", f["orderId"])
			c.send(rpcFrame(3, "PlaceOrder", placeArgs("idempotencyKey", "k-u")))
			f = c.readReply()
			require.Equal(t, true, f["replayed"])
			require.Equal(t, "o-2", f["orderId"])
			calls := e.up.callsOf(protocol.FnPlaceOrder)
			require.Len(t, calls, 2)
			for _, call := range calls {
				require.Equal(t, "idem:key:k-u", call.RequestID)
			}
		})
	}
}

// A repeat while the first runs is request_in_progress, on another socket
// or the same.
func TestKeyedWriteRepeatWhileRunningIsInProgress(t *testing.T) {
	t.Parallel()
	e, ag := newTradingEnv(t)
	release := make(chan struct{})
	var started atomic.Int32
	ag.failW = func(int) error {
		started.Add(1)
		<-release
		return nil
	}
	c := e.dial(tokA)
	c.send(rpcFrame(1, "PlaceOrder", placeArgs("orderId", "o-run")))
	require.Eventually(t, func() bool { return started.Load() == 1 }, testkit.Medium, time.Millisecond)
	other := e.dial(tokA2)
	other.send(rpcFrame(2, "PlaceOrder", placeArgs("orderId", "o-run")))
	f := other.readReply()
	require.Equal(t, errcode.RequestInProgress, f["error"])
	require.Equal(t, 1.0, f["retryAfter"])
	require.NotContains(t, f, "type")
	close(release)
	f = c.readReply()
	require.Equal(t, true, f["success"], f)
	other.send(rpcFrame(3, "PlaceOrder", placeArgs("orderId", "o-run")))
	f = other.readReply()
	require.Equal(t, true, f["replayed"])
	require.Equal(t, "o-1", f["orderId"])
	require.Len(t, e.up.callsOf(protocol.FnPlaceOrder), 1)
}

// One store, one rule, whichever door: a key first used over the socket
// replays over HTTP, and the other way round; another request under the
// key is refused on HTTP too.
func TestKeyedWriteIsOneRuleOnBothDoors(t *testing.T) {
	t.Parallel()
	e, _ := newTradingEnv(t)
	a, err := tradeapi.New(tradeapi.Options{Caller: e.up, Auth: e.auth, Idempotency: e.store})
	require.NoError(t, err)
	mux := http.NewServeMux()
	a.Register(mux)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	post := func(path, body string, header ...string) (int, http.Header, map[string]any) {
		t.Helper()
		req, err := http.NewRequest("POST", hs.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tokA)
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := hs.Client().Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m), string(raw))
		return res.StatusCode, res.Header, m
	}
	const place = "/v1/api/accounts/Sim101/orders/place"
	const body = `{"action":"buy","instrument":"ES","orderType":"MARKET","quantity":1,"timeInForce":"day"}`
	c := e.dial(tokA)

	// Socket first, then HTTP (the casing differs; the typed request is
	// the same).
	c.send(rpcFrame(1, "PlaceOrder", placeArgs("idempotencyKey", "k-x")))
	f := c.readReply()
	require.Equal(t, "o-1", f["orderId"])
	status, h, m := post(place, body, tradeapi.IdempotencyKeyHeader, "k-x")
	require.Equal(t, 200, status, m)
	require.Equal(t, "true", h.Get(tradeapi.ReplayedHeader))
	require.Equal(t, "o-1", m["orderId"])
	status, _, m = post(place, strings.Replace(body, `"quantity":1`, `"quantity":5`, 1), tradeapi.IdempotencyKeyHeader, "k-x")
	require.Equal(t, 422, status)
	require.Equal(t, errcode.IdempotencyKeyReused, m["error"])

	// HTTP first, then the socket; orderId is a key on both.
	withID := strings.Replace(body, `{`, `{"orderId":"mine-7",`, 1)
	status, h, m = post(place, withID)
	require.Equal(t, 200, status, m)
	require.Empty(t, h.Get(tradeapi.ReplayedHeader))
	require.Equal(t, "o-2", m["orderId"])
	c.send(rpcFrame(2, "PlaceOrder", placeArgs("orderId", "mine-7")))
	f = c.readReply()
	require.Equal(t, true, f["replayed"], f)
	require.Equal(t, "o-2", f["orderId"])

	// A write with no body (FlattenEverything) too.
	status, _, _ = post("/v1/api/positions/flatten", "", tradeapi.IdempotencyKeyHeader, "k-flat")
	require.Equal(t, 200, status)
	c.send(rpcFrame(3, "FlattenEverything", map[string]any{"idempotencyKey": "k-flat"}))
	require.Equal(t, true, c.readReply()["replayed"])

	require.Len(t, e.up.callsOf(protocol.FnPlaceOrder), 2)
	require.Len(t, e.up.callsOf(protocol.FnFlattenEverything), 1)
}
