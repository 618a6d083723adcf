package tradeapi_test

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/events"
	"tradebridge/relay/events/eventstest"
	"tradebridge/relay/tradeapi"
)

const placeBody = `{"action":"buy","instrument":"ES 12-26","orderType":"market","quantity":2,"timeInForce":"day"}`

// Every trading write over HTTP is one activity log entry once answered,
// source api with the token's id: placed, refused (trading_blocked with
// its rule), replayed; a keyed write and its replay are two entries, the
// second order.replayed. Reads and requests refused for bad input are not
// recorded.
func TestHTTPWritesRecorded(t *testing.T) {
	t.Parallel()
	var pub eventstest.Collector
	e := newEnv(t, func(o *tradeapi.Options) { o.Events = &pub })

	r := e.do("GET", "/v1/api/accounts/Sim101/orders", "tb_api_pro", "")
	require.Equal(t, http.StatusOK, r.Status)
	r = e.do("POST", "/v1/api/accounts/Sim101/orders/place", "tb_api_pro", `{"action":"hold"}`)
	require.Equal(t, http.StatusBadRequest, r.Status)

	r = e.do("POST", "/v1/api/accounts/Sim101/orders/place", "tb_api_pro", placeBody)
	require.Equal(t, http.StatusOK, r.Status)
	evs := pub.WaitActivity(t, 1)
	placed := evs[0]
	assert.Equal(t, events.TypeActivity, placed.Type)
	assert.Equal(t, "usr_pro", placed.UserID)
	assert.Empty(t, placed.Ref, "an unkeyed write has no ref")
	assert.Equal(t, protocol.ActivityOrderPlaced, placed.Activity.Kind)
	assert.Equal(t, "Sim101", placed.Activity.Account)
	assert.Equal(t, protocol.SourceAPI, placed.Activity.Source.Kind)
	assert.Equal(t, "Bought 2 ES 12-26 at market on Sim101 — order o-1", placed.Activity.Summary)
	d := eventstest.Detail(t, placed.Activity)
	assert.Equal(t, "desktop", d["family"])
	assert.Equal(t, []any{"o-1"}, d["orderIds"])

	e.agent.mu.Lock()
	e.agent.reply = func(c call) (json.RawMessage, error) {
		return nil, protocol.NewError(protocol.CodeTradingBlocked, "the kill switch is on (rule: killSwitch)")
	}
	e.agent.mu.Unlock()
	r = e.do("POST", "/v1/api/accounts/Sim101/orders/place", "tb_api_pro", placeBody)
	require.Equal(t, http.StatusBadRequest, r.Status)
	blocked := pub.WaitActivity(t, 2)[1]
	assert.Equal(t, protocol.ActivityTradingBlocked, blocked.Activity.Kind)
	assert.Equal(t, "killSwitch", eventstest.Detail(t, blocked.Activity)["rule"])
	assert.Equal(t, "PlaceOrder on Sim101 refused: trading_blocked (killSwitch)", blocked.Activity.Summary)

	e.agent.mu.Lock()
	e.agent.reply = nil
	e.agent.mu.Unlock()
	for range 2 {
		r = e.do("POST", "/v1/api/accounts/Sim101/orders/place", "tb_api_pro", placeBody, "Idempotency-Key", "k-7")
		require.Equal(t, http.StatusOK, r.Status)
	}
	evs = pub.WaitActivity(t, 4)
	assert.Equal(t, protocol.ActivityOrderPlaced, evs[2].Activity.Kind)
	assert.NotEmpty(t, evs[2].Ref, "a keyed write's own outcome has a ref")
	assert.Equal(t, "k-7", eventstest.Detail(t, evs[2].Activity)["idempotencyKey"])
	assert.Equal(t, protocol.ActivityOrderReplayed, evs[3].Activity.Kind)
	assert.Empty(t, evs[3].Ref)
	assert.Equal(t, "k-7", eventstest.Detail(t, evs[3].Activity)["idempotencyKey"])
	assert.Equal(t, []any{"o-1"}, eventstest.Detail(t, evs[3].Activity)["orderIds"])

	r = e.do("POST", "/v1/api/accounts/Sim101/orders/place", "tb_api_pro", `{"action":"buy"}`, "Idempotency-Key", "k-7")
	require.Equal(t, http.StatusBadRequest, r.Status)
	r = e.do("POST", "/v1/api/accounts/Sim101/positions/flatten", "tb_api_pro", `{}`, "Idempotency-Key", "k-7")
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, "the key reused for another request")
	r = e.do("GET", "/v1/api/positions", "tb_api_pro", "")
	require.Equal(t, http.StatusOK, r.Status)
	r = e.do("POST", "/v1/api/accounts/Sim101/orders/77/cancel", "tb_api_pro", "")
	require.Equal(t, http.StatusOK, r.Status)
	evs = pub.WaitActivity(t, 5)
	assert.Equal(t, protocol.ActivityOrderChanged, evs[4].Activity.Kind, "only the cancel after the replay")
	assert.Equal(t, "CancelOrder 77 on Sim101", evs[4].Activity.Summary)
}

// The broker family's writes are recorded by the same code, with
// detail.family tv; the broker's own refusal is the error.
func TestBrokerWritesRecorded(t *testing.T) {
	t.Parallel()
	var pub eventstest.Collector
	e := newEnv(t, func(o *tradeapi.Options) {
		o.Family = tradeapi.FamilyBroker
		o.Events = &pub
	})
	r := e.do("POST", "/v1/api/tv/accounts/DEMO1/orders/place", "tb_api_pro", placeBody)
	require.Equal(t, http.StatusOK, r.Status)
	ev := pub.WaitActivity(t, 1)[0]
	assert.Equal(t, protocol.ActivityOrderPlaced, ev.Activity.Kind)
	assert.Equal(t, "tv", eventstest.Detail(t, ev.Activity)["family"])
	assert.Equal(t, "DEMO1", ev.Activity.Account)
}

// A keyed write whose outcome was unknown runs again on its retry; both
// runs name the same ref, so the activity log records the write once.
func TestHTTPKeyedRerunNotDoubled(t *testing.T) {
	t.Parallel()
	var pub eventstest.Collector
	e := newEnv(t, func(o *tradeapi.Options) { o.Events = &pub })
	var calls atomic.Int32
	e.agent.mu.Lock()
	e.agent.reply = func(c call) (json.RawMessage, error) {
		if calls.Add(1) == 1 {
			return nil, agentcall.ErrConnectionLost
		}
		return json.RawMessage(`{"orderId":"o-9"}`), nil
	}
	e.agent.mu.Unlock()
	r := e.do("POST", "/v1/api/accounts/Sim101/orders/place", "tb_api_pro", placeBody, "Idempotency-Key", "k-u")
	require.Equal(t, http.StatusServiceUnavailable, r.Status)
	r = e.do("POST", "/v1/api/accounts/Sim101/orders/place", "tb_api_pro", placeBody, "Idempotency-Key", "k-u")
	require.Equal(t, http.StatusOK, r.Status)
	evs := pub.WaitActivity(t, 2)
	assert.Equal(t, protocol.ActivityOrderRefused, evs[0].Activity.Kind)
	assert.Equal(t, "outcome_unknown", eventstest.Detail(t, evs[0].Activity)["error"])
	assert.Equal(t, protocol.ActivityOrderPlaced, evs[1].Activity.Kind)
	require.NotEmpty(t, evs[0].Ref)
	assert.Equal(t, evs[0].Ref, evs[1].Ref)
}
