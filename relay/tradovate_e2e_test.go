package relay_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay"
	"tradebridge/relay/broker"
	"tradebridge/relay/errcode"
	"tradebridge/relay/tradeapi"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/bridge/tradovate/tradovatefake"
)

// brokerSystem is a relay whose broker family calls a fake Tradovate
// server over a simulator (its market), on the relay tests' Wednesday
// morning clock.
type brokerSystem struct {
	*system
	fake   *tradovatefake.Server
	market *sim.Platform
	clock  *sim.ManualClock
	// contract, in tests (not benchmarks), is the broker family's OpenAPI
	// document: every call of broker is validated against it.
	contract *contract
	tt       *testing.T
}

func newBrokerSystem(t testing.TB, tweaks ...func(*relay.Options)) *brokerSystem {
	t.Helper()
	clock := sim.NewManualClock(simStart)
	market, err := sim.New(sim.Options{Seed: 1, Clock: clock})
	require.NoError(t, err)
	t.Cleanup(func() { market.Close() })
	fake, err := tradovatefake.Start(tradovatefake.Options{Market: market})
	require.NoError(t, err)
	t.Cleanup(func() { fake.Close() })
	s := newSystemWith(t, func(o *relay.Options) {
		o.Broker.Endpoints = fake.Endpoints()
		o.Broker.Now = clock.Now
		o.Broker.Ops.Now = clock.Now
		o.Broker.EngineTick = 10 * time.Millisecond
		for _, tw := range tweaks {
			tw(o)
		}
	})
	bs := &brokerSystem{system: s, fake: fake, market: market, clock: clock}
	if tt, ok := t.(*testing.T); ok {
		c := loadContract(tt, s, tradeapi.BrokerOpenAPIPath)
		bs.contract, bs.tt = &c, tt
	}
	return bs
}

// broker calls a route of the broker family.
func (s *brokerSystem) broker(method, path, token, body string, header ...string) response {
	s.T.Helper()
	if body != "" {
		header = append(header, "Content-Type", jsonBody)
	}
	if s.contract == nil {
		return s.Do(method, "/v1/api/tv/"+path, token, body, header...)
	}
	// Validated against the broker family's OpenAPI document: the
	// request (when it succeeds), and the status, headers and body of
	// every answer.
	ex := s.contract.check(s.tt, s.system, token, method, "/v1/api/tv/"+path, body, header...)
	r := response{Status: ex.status, Raw: ex.raw}
	require.NoError(s.T, json.Unmarshal(ex.raw, &r), string(ex.raw))
	return r
}

// link links the fake's login for user's token.
func (s *brokerSystem) link(token string) response {
	s.T.Helper()
	b, err := json.Marshal(map[string]any{"env": "demo", "username": tradovatefake.DefaultName, "password": tradovatefake.DefaultPassword,
		"appId": tradovatefake.DefaultAppID, "appVersion": "1.0", "cid": tradovatefake.DefaultCID, "sec": tradovatefake.DefaultSec})
	require.NoError(s.T, err)
	return s.broker(http.MethodPost, "link", token, string(b))
}

// brokerPosition returns the account's signed ES position through the broker
// family; false when it could not be read.
func (s *brokerSystem) brokerPosition(token, account string) (int, bool) {
	return s.positionAt("/v1/api/tv/accounts/"+account+"/positions", token)
}

func placeBody(action string, qty int) string {
	b, _ := json.Marshal(map[string]any{"action": action, "instrument": "ES 12-26", "orderType": "Market",
		"quantity": qty, "timeInForce": "Day"})
	return string(b)
}

// The broker family end to end: not linked, a refused link, a link, reads
// in the desktop shapes, a keyed order placed once however often it is
// sent, an account the login does not carry, cancel and bracket as the
// broker's OCO, flatten as the broker's liquidation, an unreachable
// broker, and unlinking.
func TestBrokerFamilyEndToEnd(t *testing.T) {
	t.Parallel()
	s := newBrokerSystem(t)
	tok := s.Users["alice"].APIToken

	r := s.broker(http.MethodGet, "accounts", tok, "")
	require.Equal(t, http.StatusConflict, r.Status, string(r.Raw))
	require.Equal(t, errcode.TradovateNotLinked, r.Error)

	// Refused credentials store nothing and do not echo.
	s.fake.FailLogins(1)
	r = s.link(tok)
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Raw))
	require.Equal(t, errcode.BrokerLoginFailed, r.Error)
	require.Contains(t, r.Detail, "Tradovate refused", "the detail says what the broker refused, in a fixed sentence")
	require.NotContains(t, string(r.Raw), tradovatefake.DefaultPassword)
	r = s.broker(http.MethodGet, "status", tok, "")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.JSONEq(t, `{"linked":false,"connected":false,"accounts":[]}`, string(r.Data))

	r = s.link(tok)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	var st broker.Status
	require.NoError(t, json.Unmarshal(r.Data, &st))
	require.True(t, st.Linked)
	require.Equal(t, "demo", st.Env)
	require.NotContains(t, string(r.Raw), tradovatefake.DefaultPassword)
	require.NotContains(t, string(r.Raw), tradovatefake.DefaultSec)

	r = s.broker(http.MethodGet, "accounts", tok, "")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Contains(t, string(r.Data), `"Sim101"`)

	// One keyed order, sent three times, is one broker order.
	before := s.fake.OrdersPlaced()
	for range 3 {
		r = s.broker(http.MethodPost, "accounts/Sim101/orders/place", tok, placeBody("Buy", 2), "Idempotency-Key", "tv-key-1")
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	}
	require.Equal(t, before+1, s.fake.OrdersPlaced())
	require.Eventually(t, func() bool { n, ok := s.brokerPosition(tok, "Sim101"); return ok && n == 2 }, engineWait, 10*time.Millisecond)

	r = s.broker(http.MethodGet, "accounts/Nope/positions", tok, "")
	require.Equal(t, http.StatusConflict, r.Status, string(r.Raw))
	require.Equal(t, errcode.AccountIdentityUnresolved, r.Error)

	// The desktop-only routes are not the broker's.
	r = s.Do(http.MethodGet, "/v1/api/tv/accounts/Sim101/strategies", tok, "") // not in the document either
	require.Equal(t, http.StatusNotFound, r.Status, string(r.Raw))

	// Cancel and bracket is one OCO pair at the broker.
	r = s.broker(http.MethodPost, "accounts/Sim101/orders/cancel_and_bracket", tok,
		`{"instrument":"ES 12-26","action":"Buy","quantity":2,"takeProfit":6100,"stopLoss":5900}`)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, 1, s.fake.Requests("/order/placeoco"))

	// Flatten is the broker's liquidation: the bracket goes with it.
	r = s.broker(http.MethodPost, "accounts/Sim101/positions/flatten", tok, `{"instrument":"ES 12-26"}`)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Eventually(t, func() bool { n, ok := s.brokerPosition(tok, "Sim101"); return ok && n == 0 }, engineWait, 10*time.Millisecond)
	require.Positive(t, s.fake.Requests("/order/liquidateposition"))

	// A broker rejection is a 400 with the broker's reason as the code.
	s.fake.RejectNext("MaxPosLimitReached")
	r = s.broker(http.MethodPost, "accounts/Sim101/orders/place", tok, placeBody("Buy", 1))
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Raw))
	require.Equal(t, "tradovate_max_pos_limit_reached", r.Error)

	// An unreachable broker is 503 broker_unavailable.
	s.fake.Unreachable(true)
	require.Eventually(t, func() bool { // no s.broker here: it fails the test, which a condition must not
		r, err := s.Request(http.MethodPost, "/v1/api/tv/accounts/Sim101/orders/place", tok, placeBody("Buy", 1), "Content-Type", jsonBody)
		return err == nil && r.Status == http.StatusServiceUnavailable
	}, engineWait, 20*time.Millisecond)
	r = s.broker(http.MethodPost, "accounts/Sim101/orders/place", tok, placeBody("Buy", 1))
	require.Equal(t, http.StatusServiceUnavailable, r.Status, string(r.Raw))
	require.Equal(t, errcode.BrokerUnavailable, r.Error)
	s.fake.Unreachable(false)

	r = s.broker(http.MethodDelete, "link", tok, "")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = s.broker(http.MethodGet, "accounts", tok, "")
	require.Equal(t, errcode.TradovateNotLinked, r.Error, string(r.Raw))
}

// The Management API's broker family runs in the relay on the broker's
// events: a broker monitor that trips is stopped in the store and blocks
// entries on its broker account, and the kill switch flattens the broker
// accounts too.
func TestBrokerEnginesThroughTheRelay(t *testing.T) {
	t.Parallel()
	s := newBrokerSystem(t)
	tok := s.Users["bob"].APIToken
	r := s.link(tok)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	r = s.broker(http.MethodPost, "accounts/Sim102/orders/place", tok, placeBody("Buy", 2))
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Eventually(t, func() bool { n, ok := s.brokerPosition(tok, "Sim102"); return ok && n == 2 }, engineWait, 10*time.Millisecond)

	// The master window starts at 11:00; the clock stands at 10:00.
	r = s.manage(http.MethodPost, "tv/monitors", tok,
		`{"account":"Sim101","masterWindow":{"days":["wed"],"start":"11:00","end":"12:00"}}`)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	var m protocol.Monitor
	require.NoError(t, json.Unmarshal(r.Data, &m))
	require.Eventually(t, func() bool {
		r, err := s.Request(http.MethodGet, "/v1/api/manage/tv/monitors/"+m.ID, tok, "")
		return err == nil && r.Status == http.StatusOK && json.Unmarshal(r.Data, &m) == nil && m.State == protocol.MonitorStopped
	}, engineWait, 10*time.Millisecond, "the relay's engine tripped the tv monitor and stored it")
	require.Equal(t, "masterWindow", m.StoppedReason)

	r = s.broker(http.MethodPost, "accounts/Sim101/orders/place", tok, placeBody("Buy", 1))
	require.Equal(t, protocol.CodeTradingBlocked, r.Error, string(r.Raw))
	r = s.manage(http.MethodPost, "tv/monitors/"+m.ID+"/restart", tok, "")
	require.Equal(t, http.StatusConflict, r.Status, string(r.Raw))
	require.Equal(t, "would_retrip", r.Error)

	// The kill switch flattens the broker accounts and refuses entries.
	r = s.manage(http.MethodPatch, "controls", tok, `{"flattenOnKill":true}`)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = s.manage(http.MethodPut, "controls/kill-switch", tok, `{"enabled":true}`)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Eventually(t, func() bool { n, ok := s.brokerPosition(tok, "Sim102"); return ok && n == 0 }, engineWait, 10*time.Millisecond,
		"flattenOnKill flattens the broker accounts")
	r = s.broker(http.MethodPost, "accounts/Sim102/orders/place", tok, placeBody("Buy", 1))
	require.Equal(t, protocol.CodeTradingBlocked, r.Error, string(r.Raw))
}

// The link route's refusals: a field it does not take, a missing one, an
// unknown environment. None repeats what was sent, and nothing is stored.
func TestBrokerLinkRefusals(t *testing.T) {
	t.Parallel()
	s := newBrokerSystem(t)
	tok := s.Users["alice"].APIToken
	for _, tc := range []struct {
		name, body, code string
	}{
		{"unknown field", `{"env":"demo","username":"u","password":"hunter2-secret","appId":"a","appVersion":"1","cid":1,"sec":"s3cr3t-sec","extra":1}`, errcode.InvalidField},
		{"missing fields", `{"env":"demo","username":"u","password":"hunter2-secret"}`, errcode.MissingRequiredFields},
		{"unknown env", `{"env":"paper","username":"u","password":"hunter2-secret","appId":"a","appVersion":"1","cid":1,"sec":"s3cr3t-sec"}`, errcode.InvalidArgument},
		{"empty password", `{"env":"demo","username":"u","password":"","appId":"a","appVersion":"1","cid":1,"sec":"s3cr3t-sec"}`, errcode.MissingRequiredFields},
		{"cid not a number", `{"env":"demo","username":"u","password":"hunter2-secret","appId":"a","appVersion":"1","cid":"x","sec":"s3cr3t-sec"}`, errcode.InvalidField},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.broker(http.MethodPost, "link", tok, tc.body)
			require.Equal(t, http.StatusBadRequest, r.Status, string(r.Raw))
			require.Equal(t, tc.code, r.Error, string(r.Raw))
			require.NotContains(t, string(r.Raw), "hunter2-secret")
			require.NotContains(t, string(r.Raw), "s3cr3t-sec")
		})
	}
	r := s.broker(http.MethodGet, "status", tok, "")
	require.Contains(t, string(r.Data), `"linked":false`)
	require.Zero(t, s.fake.Logins(), "nothing reached the broker")
}

// The OAuth link: the relay answers the broker's authorization page with
// a one-time state; the broker sends the browser back to the relay's
// callback with a code, which the relay exchanges for a token. A state
// is good once.
func TestBrokerOAuthLink(t *testing.T) {
	t.Parallel()
	var callback string
	s := newBrokerSystem(t, func(o *relay.Options) {
		o.Broker.OAuth.ID, o.Broker.OAuth.Secret = tradovatefake.DefaultOAuthClientID, tradovatefake.DefaultOAuthClientSecret
		o.Broker.OAuth.RedirectURL = callback
	})
	// The callback is the relay's own address, known once it listens.
	callback = s.Base + broker.OAuthCallbackPath
	s.Restart()
	tok := s.Users["alice"].APIToken

	r := s.broker(http.MethodPost, "link/oauth", tok, `{"env":"demo"}`)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	var start struct {
		AuthorizeURL string `json:"authorizeUrl"`
	}
	require.NoError(t, json.Unmarshal(r.Data, &start))
	require.Contains(t, start.AuthorizeURL, "state=")

	// The browser: the broker's page redirects to the relay's callback.
	resp, err := http.Get(start.AuthorizeURL)
	require.NoError(t, err)
	body := readAll(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, `"linked":true`)
	require.Equal(t, 0, s.fake.Logins(), "an OAuth link needs no password login")

	r = s.broker(http.MethodGet, "status", tok, "")
	require.Contains(t, string(r.Data), `"method":"oauth"`)
	r = s.broker(http.MethodGet, "accounts", tok, "")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	// The same callback again: the state was used.
	resp, err = http.Get(resp.Request.URL.String())
	require.NoError(t, err)
	body = readAll(t, resp)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}
