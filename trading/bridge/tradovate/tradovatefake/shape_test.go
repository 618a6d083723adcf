package tradovatefake_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/trading/bridge/tradovate/tradovatefake"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// TestAnswersHaveTheDocumentedShapes holds the fake's answers to the
// shapes recorded from the broker's documentation (testdata/shapes): the
// same keys with the same JSON types, but for the documented keys the fake
// leaves out (listed per file, as paths: "key", "[].key", "d.quotes[].key").
func TestAnswersHaveTheDocumentedShapes(t *testing.T) {
	t.Parallel()
	got := fakeAnswers(t)
	files, err := filepath.Glob(filepath.Join("testdata", "shapes", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var names []string
	for _, file := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(file), ".json"))
	}
	var answered []string
	for name := range got {
		answered = append(answered, name)
	}
	sort.Strings(answered)
	require.Equal(t, names, answered, "every recorded shape is checked, and every answer has one")

	for _, tc := range []struct {
		name     string
		leftOut  []string // documented keys the fake does not write
		optional []string // keys the fake writes only sometimes
	}{
		{"account_list", []string{"[].archived", "[].readonly"}, nil},
		{"auth_accesstokenrequest", []string{"errorText", "passwordExpirationTime", "hasLive", "hasSimPlus"}, nil},
		{"auth_accesstokenrequest_penalty", nil, nil},
		{"auth_accesstokenrequest_refused", nil, nil},
		{"auth_me", []string{"errorText", "organizationName", "currentAccountPlan", "currentMDSubs",
			"currentBalance", "activePlugins"}, nil},
		{"auth_oauthtoken", []string{"refresh_token", "refresh_token_expires_in"}, nil},
		{"auth_oauthtoken_error", nil, nil},
		{"auth_renewaccesstoken", []string{"errorText", "passwordExpirationTime", "hasLive", "hasSimPlus"}, nil},
		{"cashBalance_getcashbalancesnapshot", []string{"errorText"}, nil},
		{"contract_find", nil, nil},
		{"contract_item", nil, nil},
		{"fill_list", nil, nil},
		{"orderVersion_list", []string{"[].limitIfTouchedPrice", "[].maxShow", "[].expireTime"},
			[]string{"[].price", "[].stopPrice", "[].pegDifference", "[].text"}},
		{"order_cancelorder", nil, nil},
		{"order_cancelorder_failed", []string{"commandId"}, nil},
		{"order_liquidateposition", nil, nil},
		{"order_list", []string{"[].spreadDefinitionId", "[].executionProviderId", "[].parentId", "[].linkedId"},
			[]string{"[].ocoId"}},
		{"order_modifyorder", nil, nil},
		{"order_placeoco", nil, nil},
		{"order_placeorder", nil, nil},
		{"order_placeorder_failed", []string{"orderId"}, nil},
		{"position_list", []string{"[].prevPrice"}, []string{"[].netPrice"}},
		{"ws_authorize", nil, nil},
		{"ws_md_quote", []string{"d.quotes[].entries.OpenInterest", "d.quotes[].entries.SettlementPrice",
			"d.quotes[].entries.Trade.size"}, nil},
		{"ws_props_order", nil, nil},
		{"ws_syncrequest", []string{"users[].organizationId", "accounts[].archived", "cashBalances[].archived",
			"positions[].archived", "accountRiskStatuses", "marginSnapshots", "userAccountAutoLiqs", "currencies",
			"fillPairs", "contractMaturities", "products", "exchanges", "orderStrategies",
			"fillFees", "fillFees[].clearingFee", "fillFees[].clearingCurrencyId", "fillFees[].exchangeFee",
			"fillFees[].exchangeCurrencyId", "fillFees[].nfaFee", "fillFees[].nfaCurrencyId", "fillFees[].brokerageFee",
			"fillFees[].brokerageCurrencyId", "fillFees[].ipFee", "fillFees[].ipCurrencyId",
			"fillFees[].commissionCurrencyId", "fillFees[].orderRoutingFee", "fillFees[].orderRoutingCurrencyId"},
			[]string{"positions[].netPrice", "orders[].ocoId", "orderVersions[].price", "orderVersions[].stopPrice",
				"orderVersions[].pegDifference", "orderVersions[].text", "commands"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "shapes", tc.name+".json"))
			require.NoError(t, err)
			var want any
			require.NoError(t, json.Unmarshal(b, &want))
			answer, ok := got[tc.name]
			require.True(t, ok, "no answer recorded")
			var have any
			require.NoError(t, json.Unmarshal(answer, &have), "%s", answer)
			sh := shapeCheck{t: t, leftOut: set(tc.leftOut), optional: set(tc.optional), seen: map[string]bool{}}
			sh.compare("", want, have)
			for _, p := range tc.leftOut {
				require.False(t, sh.seen[p], "%s is listed as left out but the fake writes it", p)
			}
			for _, p := range tc.optional {
				require.True(t, sh.seen[p], "%s is listed as optional but no answer had it", p)
			}
		})
	}
}

func set(ps []string) map[string]bool {
	m := make(map[string]bool, len(ps))
	for _, p := range ps {
		m[p] = true
	}
	return m
}

// shapeCheck compares a recorded shape with an answer.
type shapeCheck struct {
	t                 *testing.T
	leftOut, optional map[string]bool
	seen              map[string]bool // paths present in the answer
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "?"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// compare checks have against want at path. An array's elements are each
// compared with the recorded array's first element.
func (sh *shapeCheck) compare(path string, want, have any) {
	sh.t.Helper()
	sh.seen[path] = true
	require.Equal(sh.t, jsonType(want), jsonType(have), "type of %q", path)
	switch w := want.(type) {
	case map[string]any:
		h := have.(map[string]any)
		for k, wv := range w {
			p := join(path, k)
			hv, ok := h[k]
			if !ok {
				require.True(sh.t, sh.leftOut[p] || sh.optional[p], "documented key %q is missing", p)
				continue
			}
			sh.compare(p, wv, hv)
		}
		for k := range h {
			_, ok := w[k]
			require.True(sh.t, ok, "key %q is not in the documented shape", join(path, k))
		}
	case []any:
		h := have.([]any)
		if len(w) == 0 {
			return
		}
		require.NotEmpty(sh.t, h, "the answer's %q is empty: nothing to compare", path)
		for _, hv := range h {
			sh.compare(path+"[]", w[0], hv)
		}
	}
}

// fakeAnswers drives the fake through a session that produces every
// answer of testdata/shapes, and returns their raw JSON by file name.
func fakeAnswers(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	f := newFixture(t)
	out := make(map[string]json.RawMessage)
	rec := func(name string, status int, body []byte) {
		t.Helper()
		require.Less(t, status, 500, "%s: %s", name, body)
		out[name] = body
	}
	call := func(name, method, path, token string, body any) {
		t.Helper()
		status, b := f.raw(method, path, token, body)
		rec(name, status, b)
	}

	// Sessions.
	f.fake.FailLogins(1)
	call("auth_accesstokenrequest_refused", http.MethodPost, "/auth/accesstokenrequest", "", credentials())
	f.fake.PenaltyTicket(1, 0)
	call("auth_accesstokenrequest_penalty", http.MethodPost, "/auth/accesstokenrequest", "", credentials())
	call("auth_accesstokenrequest", http.MethodPost, "/auth/accesstokenrequest", "", credentials())
	var tok tradovatewire.AccessTokenResponse
	require.NoError(t, json.Unmarshal(out["auth_accesstokenrequest"], &tok))
	f.token, f.md = tok.AccessToken, tok.MDAccessToken
	call("auth_renewaccesstoken", http.MethodGet, "/auth/renewaccesstoken", f.token, nil)
	call("auth_me", http.MethodGet, "/auth/me", f.token, nil)
	exchange := tradovatewire.OAuthTokenRequest{GrantType: "authorization_code", ClientID: tradovatefake.DefaultOAuthClientID,
		ClientSecret: tradovatefake.DefaultOAuthClientSecret, RedirectURI: "https://relay.example/cb", Code: f.fake.IssueCode()}
	call("auth_oauthtoken", http.MethodPost, "/auth/oauthtoken", "", exchange)
	call("auth_oauthtoken_error", http.MethodPost, "/auth/oauthtoken", "", exchange) // the code is used

	// A socket that follows everything, then trading: a long position, a
	// working OCO pair (ocoId), a working stop limit (price and stopPrice),
	// a working trailing stop (pegDifference), a flat contract (netPos 0
	// and no netPrice).
	w := f.dial(f.fake.UserSocketURL())
	w.send(tradovatewire.FormatRequest(tradovatewire.Authorize(f.token)))
	auth := w.message()
	out["ws_authorize"] = mustJSON(t, auth)
	sync := w.request("user/syncrequest", "", []byte(`{"users":[`+itoa(tradovatefake.UserID)+`]}`))
	require.Equal(t, http.StatusOK, sync.S)

	acct := f.accountID("Sim101")
	call("order_placeorder", http.MethodPost, "/order/placeorder", f.token, f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeMarket, 2, 0, 0))
	order := w.propsUntil(func(p propsEvent) bool { return p.EntityType == tradovatewire.EntityOrder })
	out["ws_props_order"] = mustJSON(t, map[string]any{"e": tradovatewire.EventProps, "d": order[len(order)-1].PropsEvent})
	oco := tradovatewire.PlaceOCORequest{
		PlaceOrderRequest: f.order(tradovatewire.ActionSell, tradovatewire.OrderTypeLimit, 2, 6010, 0),
		Other:             tradovatewire.OtherOrder{Action: tradovatewire.ActionSell, OrderType: tradovatewire.OrderTypeStop, StopPrice: 5990},
	}
	oco.Text = "target"
	call("order_placeoco", http.MethodPost, "/order/placeoco", f.token, oco)
	stopLimit := f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeStopLimit, 1, 6012, 6010)
	stopLimitID := f.place(stopLimit)
	f.fake.RejectNext("MaxPosLimitReached")
	call("order_placeorder_failed", http.MethodPost, "/order/placeorder", f.token, stopLimit)
	call("order_modifyorder", http.MethodPost, "/order/modifyorder", f.token,
		tradovatewire.ModifyOrderRequest{IsAutomated: true, OrderID: stopLimitID, OrderQty: 2, OrderType: tradovatewire.OrderTypeStopLimit, Price: 6013, StopPrice: 6011})
	call("order_cancelorder", http.MethodPost, "/order/cancelorder", f.token, tradovatewire.CancelOrderRequest{IsAutomated: true, OrderID: stopLimitID})
	call("order_cancelorder_failed", http.MethodPost, "/order/cancelorder", f.token, tradovatewire.CancelOrderRequest{IsAutomated: true, OrderID: stopLimitID})

	// A working trailing stop (pegDifference), started from the market.
	trailing := f.order(tradovatewire.ActionSell, tradovatewire.OrderTypeTrailingStop, 1, 0, 0)
	trailing.PegDifference = -4
	f.place(trailing)

	nq := tradovatewire.PlaceOrderRequest{IsAutomated: true, AccountID: acct, Action: tradovatewire.ActionBuy, Symbol: "NQZ6", OrderQty: 1, OrderType: tradovatewire.OrderTypeMarket}
	f.place(nq)
	var nqContract tradovatewire.Contract
	require.Equal(t, http.StatusOK, f.get("/contract/find?name=NQZ6", &nqContract))
	call("order_liquidateposition", http.MethodPost, "/order/liquidateposition", f.token,
		tradovatewire.LiquidatePositionRequest{IsAutomated: true, AccountID: acct, ContractID: nqContract.ID})

	// Lists and items.
	call("account_list", http.MethodGet, "/account/list", f.token, nil)
	call("cashBalance_getcashbalancesnapshot", http.MethodPost, "/cashBalance/getcashbalancesnapshot", f.token,
		tradovatewire.CashBalanceSnapshotRequest{AccountID: acct})
	call("position_list", http.MethodGet, "/position/list", f.token, nil)
	call("order_list", http.MethodGet, "/order/list", f.token, nil)
	call("orderVersion_list", http.MethodGet, "/orderVersion/list", f.token, nil)
	call("fill_list", http.MethodGet, "/fill/list", f.token, nil)
	call("contract_find", http.MethodGet, "/contract/find?name="+esTradovate, f.token, nil)
	call("contract_item", http.MethodGet, "/contract/item?id="+itoa(nqContract.ID), f.token, nil)

	// The whole state, synced on a new socket, and a quote.
	w2, _ := f.userSocket()
	m := w2.request("user/syncrequest", "", []byte(`{"users":[`+itoa(tradovatefake.UserID)+`]}`))
	out["ws_syncrequest"] = m.D
	md := f.dial(f.fake.MDURL())
	md.authorize(f.md, http.StatusOK)
	require.Equal(t, http.StatusOK, md.request("md/subscribequote", "", symbolBody(esTradovate)).S)
	for {
		m := md.message()
		if m.E == tradovatewire.EventMD {
			out["ws_md_quote"] = mustJSON(t, m)
			break
		}
	}
	return out
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
