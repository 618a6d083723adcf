package relay_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/admit"
	"tradebridge/relay/auth"
	"tradebridge/relay/errcode"
)

// A read-scoped API token reads on every door and is refused every write
// with 403 insufficient_scope, its challenge and nothing done; a trade
// token passes the same requests as before.
func TestReadScopedTokens(t *testing.T) {
	t.Parallel()
	s := newBrokerSystem(t)
	s.StartAgent("alice")
	read := s.ScopedToken("alice", auth.ScopeRead)
	trade := s.ScopedToken("alice", auth.ScopeTrade)
	const acct = "/v1/api/accounts/Sim101"
	bars := `{"instrument":"ES 12-26","periodType":"minute","period":5,"limit":3}`

	tests := []struct {
		name, method, path, body string
		readStatus               int // the read token's answer; 403 is insufficient_scope
	}{
		{"accounts", "GET", "/v1/api/accounts", "", http.StatusOK},
		{"orders", "GET", acct + "/orders", "", http.StatusOK},
		{"bars, a read by POST", "POST", "/v1/api/market/bars", bars, http.StatusOK},
		{"activity", "GET", "/v1/api/activity", "", http.StatusOK},
		{"webhook settings", "GET", "/v1/api/webhook", "", http.StatusOK},
		{"webhook history", "GET", "/v1/api/webhook/alerts", "", http.StatusOK},
		{"place", "POST", acct + "/orders/place", marketBuy, http.StatusForbidden},
		{"flatten, a write whichever function it picks", "POST", "/v1/api/positions/flatten", `{}`, http.StatusForbidden},
		{"cancel all", "POST", "/v1/api/orders/cancelall", "", http.StatusForbidden},
	}
	for _, tc := range tests {
		r := s.Do(tc.method, tc.path, read, tc.body)
		require.Equal(t, tc.readStatus, r.Status, "%s: %s", tc.name, r.Raw)
		if tc.readStatus != http.StatusForbidden {
			require.Empty(t, r.Header.Get("WWW-Authenticate"), tc.name)
			continue
		}
		require.Equal(t, errcode.InsufficientScope, r.Error, tc.name)
		require.Equal(t, admit.ScopeChallenge(auth.ScopeTrade), r.Header.Get("WWW-Authenticate"), tc.name)
	}
	require.Zero(t, orderCount(t, s, trade), "the read token's refused writes placed nothing")

	// The broker family, answers checked against its OpenAPI document: the
	// link is a write; once the trade token linked, the read token reads
	// through it and places nothing.
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "link", `{"env":"demo"}`},
		{"DELETE", "link", ""},
		{"POST", "accounts/Sim101/orders/place", placeBody("Buy", 1)},
	} {
		r := s.broker(tc.method, tc.path, read, tc.body)
		require.Equal(t, http.StatusForbidden, r.Status, "%s %s: %s", tc.method, tc.path, r.Raw)
		require.Equal(t, errcode.InsufficientScope, r.Error)
	}
	require.Equal(t, http.StatusOK, s.link(trade).Status)
	r := s.broker("GET", "accounts", read, "")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	_, ok := s.brokerPosition(read, "Sim101")
	require.True(t, ok)
	require.Equal(t, http.StatusForbidden, s.broker("POST", "accounts/Sim101/orders/place", read, placeBody("Buy", 1)).Status)
	require.Equal(t, http.StatusOK, s.broker("POST", "accounts/Sim101/orders/place", trade, placeBody("Buy", 1)).Status)

	// The stream socket: opening it is a read; an rpc write is refused,
	// an rpc read runs.
	w := s.openStreamWith(t, read)
	w.next("status")
	w.send(`{"action":"rpc","id":"p","api":"PlaceOrder","args":{"account":"Sim101","action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day"}}`)
	f := w.reply()
	require.Equal(t, false, f["success"])
	require.Equal(t, errcode.InsufficientScope, f["error"])
	require.Contains(t, f["detail"], "needs the trade scope")
	w.send(`{"action":"rpc","id":"f","api":"FlattenEverything","args":{}}`)
	require.Equal(t, errcode.InsufficientScope, w.reply()["error"])
	w.send(`{"action":"rpc","id":"l","api":"ListAccounts","args":{}}`)
	f = w.reply()
	require.Equal(t, true, f["success"], f)
	require.Zero(t, orderCount(t, s, trade), "the socket's refused writes placed nothing")

	// The trade token does all of it.
	for _, tc := range tests {
		r := s.Do(tc.method, tc.path, trade, tc.body)
		require.Equal(t, http.StatusOK, r.Status, "%s: %s", tc.name, r.Raw)
	}
	n := orderCount(t, s, trade)
	require.Positive(t, n)
	w = s.openStreamWith(t, trade)
	w.next("status")
	w.send(`{"action":"rpc","id":"p","api":"PlaceOrder","args":{"account":"Sim101","action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day"}}`)
	require.Equal(t, true, w.reply()["success"])
	require.Equal(t, n+1, orderCount(t, s, trade))
	require.Equal(t, http.StatusOK, s.Do("POST", acct+"/orders/place", s.Users["alice"].APIToken, marketBuy).Status,
		"a token issued before scopes trades")
}

// An elite user's read token reads the Management API and changes
// nothing through it; a trade token changes.
func TestReadScopedManagement(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	ra := s.StartAgent("bob")
	read := s.ScopedToken("bob", auth.ScopeRead)
	trade := s.ScopedToken("bob", auth.ScopeTrade)
	const monitors = "/v1/api/manage/desktop/monitors"
	const monitor = `{"account":"Sim101","lossLimit":{"enabled":true,"amount":500}}`
	for _, path := range []string{"/v1/api/manage", "/v1/api/manage/alerts", "/v1/api/manage/controls", monitors} {
		r := s.Do("GET", path, read, "")
		require.Equal(t, http.StatusOK, r.Status, "%s: %s", path, r.Raw)
	}
	for _, tc := range []struct{ method, path, body string }{
		{"POST", monitors, monitor},
		{"POST", "/v1/api/manage/alerts", `{"kind":"webhook","url":"https://example.com/hook","events":["monitor.tripped"]}`},
		{"PATCH", "/v1/api/manage/controls", `{"flattenOnKill":true}`},
		{"PUT", "/v1/api/manage/controls/kill-switch", `{"enabled":true}`},
	} {
		r := s.Do(tc.method, tc.path, read, tc.body, "Content-Type", "application/json")
		require.Equal(t, http.StatusForbidden, r.Status, "%s %s: %s", tc.method, tc.path, r.Raw)
		require.Equal(t, errcode.InsufficientScope, r.Error)
		require.Equal(t, admit.ScopeChallenge(auth.ScopeTrade), r.Header.Get("WWW-Authenticate"))
	}
	cfg := ra.Agent.Config().Current()
	require.True(t, cfg == nil || len(cfg.Monitors) == 0 && !cfg.Controls.KillSwitch && !cfg.Controls.FlattenOnKill,
		"the refused writes changed nothing")

	r := s.Do("POST", monitors, trade, monitor, "Content-Type", "application/json")
	require.Equal(t, http.StatusCreated, r.Status, "a trade token changes: %s", r.Raw)
	require.Len(t, ra.Agent.Config().Current().Monitors, 1)
}

// orderCount is how many orders account Sim101 holds, read with token.
func orderCount(t *testing.T, s *brokerSystem, token string) int {
	t.Helper()
	r := s.Do("GET", "/v1/api/accounts/Sim101/orders?activeOnly=false", token, "")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	var got struct {
		Orders []protocol.Order `json:"orders"`
	}
	require.NoError(t, json.Unmarshal(r.Data, &got))
	return len(got.Orders)
}
