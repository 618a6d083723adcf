package broker_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/admit"
	"tradebridge/relay/auth"
	"tradebridge/relay/auth/authtest"
	"tradebridge/relay/broker"
	"tradebridge/relay/events/eventstest"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/bridge/tradovate"
	"tradebridge/trading/bridge/tradovate/tradovatefake"
)

// A link made and removed over HTTP is broker.linked and broker.unlinked,
// source api with the token's id; a DELETE with nothing linked records
// nothing, nor does a link the broker refused.
func TestLinkRoutesRecorded(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var log eventstest.Collector
	refuse := false
	var mu sync.Mutex
	m, err := broker.New(broker.Options{Store: f.store, Keys: f.keys, NewPlatform: f.markets.newPlatform, Events: &log,
		Now: f.markets.clock.Now, Login: func(context.Context, string, broker.Secrets) (broker.Session, error) {
			mu.Lock()
			defer mu.Unlock()
			if refuse {
				return broker.Session{}, broker.ErrLoginRefused
			}
			return broker.Session{AccessToken: "tok", Expires: time.Now().Add(time.Hour)}, nil
		}})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	fa := authtest.New(map[string]auth.Principal{"tb_api_alice": {UserID: "alice", Plan: auth.PlanPro, Kind: auth.KindAPI, TokenHash: "0123456789abcdef"}})
	adm, err := admit.New(admit.Options{Auth: fa})
	require.NoError(t, err)
	mux := http.NewServeMux()
	m.Register(mux, adm, &admit.Door{Name: "tv", Kind: auth.KindAPI})
	do := func(method, body string) int {
		r := httptest.NewRequest(method, broker.LinkPath, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer tb_api_alice")
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		return w.Code
	}
	link := `{"env":"demo","username":"trader","password":"pw","appId":"app","appVersion":"1.0","cid":7,"sec":"sec"}`

	mu.Lock()
	refuse = true
	mu.Unlock()
	require.Equal(t, http.StatusBadRequest, do(http.MethodPost, link))
	require.Equal(t, http.StatusOK, do(http.MethodDelete, ""))
	mu.Lock()
	refuse = false
	mu.Unlock()
	require.Equal(t, http.StatusOK, do(http.MethodPost, link))
	require.Equal(t, http.StatusOK, do(http.MethodDelete, ""))

	evs := log.WaitActivity(t, 2)
	src := protocol.ActivitySource{Kind: protocol.SourceAPI, ID: "0123456789ab"}
	linked, unlinked := evs[0], evs[1]
	assert.Equal(t, "alice", linked.UserID)
	assert.Equal(t, protocol.ActivityBrokerLinked, linked.Activity.Kind)
	assert.Equal(t, src, linked.Activity.Source)
	assert.Equal(t, map[string]any{"env": "demo", "method": "apikey"}, eventstest.Detail(t, linked.Activity))
	assert.NotContains(t, string(linked.Activity.Detail), "pw")
	assert.NotContains(t, linked.Activity.Summary, "trader")
	assert.Equal(t, protocol.ActivityBrokerUnlinked, unlinked.Activity.Kind)
	assert.Equal(t, src, unlinked.Activity.Source)
	assert.Equal(t, "alice", unlinked.UserID)
}

// A link made by the OAuth callback, which comes without a token, is
// broker.linked in the name of whoever started it: the API token.
func TestOAuthLinkRecorded(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fake := oauthFake(t, f)
	var log eventstest.Collector
	m, err := broker.New(broker.Options{Store: f.store, Keys: f.keys, NewPlatform: f.markets.newPlatform, Events: &log,
		Now: f.markets.clock.Now, Endpoints: fake.Endpoints(),
		OAuth: tradovate.OAuthClient{ID: tradovatefake.DefaultOAuthClientID, Secret: tradovatefake.DefaultOAuthClientSecret,
			RedirectURL: "https://relay.example/v1/tv/oauth/callback"}})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	w := callback(t, m, startOAuth(t, m, "bob"), fake.IssueCode())
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	ev := log.WaitActivity(t, 1)[0]
	assert.Equal(t, "bob", ev.UserID)
	assert.Equal(t, protocol.ActivityBrokerLinked, ev.Activity.Kind)
	assert.Equal(t, protocol.ActivitySource{Kind: protocol.SourceAPI, ID: "0123456789ab"}, ev.Activity.Source)
	assert.Equal(t, "oauth", eventstest.Detail(t, ev.Activity)["method"])
}

// brokerFake is a Tradovate fake for the links' sessions.
func brokerFake(t *testing.T, f *fixture) *tradovatefake.Server {
	t.Helper()
	market, err := sim.New(sim.Options{Clock: f.markets.clock})
	require.NoError(t, err)
	t.Cleanup(func() { market.Close() })
	fake, err := tradovatefake.Start(tradovatefake.Options{Market: market})
	require.NoError(t, err)
	t.Cleanup(func() { fake.Close() })
	return fake
}

// tradovateManager is a Manager whose links run the Tradovate platform
// against fake.
func tradovateManager(t *testing.T, f *fixture, fake *tradovatefake.Server, log *eventstest.Collector) *broker.Manager {
	t.Helper()
	m, err := broker.New(broker.Options{Store: f.store, Keys: f.keys, Events: log, Endpoints: fake.Endpoints(),
		Now: f.markets.clock.Now, ReadyTimeout: time.Second})
	require.NoError(t, err)
	return m
}

// A linked login the broker refuses when the relay signs in is one
// broker.loginFailed entry, whatever the calls that meet the refusal; a
// restarted instance names the same ref (the log keeps one). A captcha
// is a login failure too.
func TestLoginFailedRecordedOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fake := brokerFake(t, f)
	var log eventstest.Collector
	m := tradovateManager(t, f, fake, &log)
	s := broker.Secrets{Username: tradovatefake.DefaultName, Password: "wrong", AppID: tradovatefake.DefaultAppID, AppVersion: "1.0",
		CID: tradovatefake.DefaultCID, Sec: tradovatefake.DefaultSec}
	_, err := m.Link(context.Background(), "alice", broker.EnvDemo, broker.MethodAPIKey, s)
	require.NoError(t, err)
	ev := log.WaitActivity(t, 1)[0]
	assert.Equal(t, "alice", ev.UserID)
	assert.Equal(t, protocol.ActivityBrokerLoginFailed, ev.Activity.Kind)
	assert.Equal(t, protocol.ActivitySource{Kind: protocol.SourceBroker}, ev.Activity.Source)
	assert.Equal(t, map[string]any{"error": "login_failed", "env": "demo", "reason": "credentials"}, eventstest.Detail(t, ev.Activity))
	assert.Equal(t, "Tradovate login failed: Tradovate refused the username or password; link the account again", ev.Activity.Summary)
	assert.NotContains(t, ev.Activity.Summary, tradovatefake.DefaultName)
	require.NotEmpty(t, ev.Ref)
	for range 3 {
		_, err := call(t, m, "alice", protocol.FnListAccounts, "", nil)
		require.Error(t, err)
	}
	assert.Equal(t, 1, len(log.Activity()), "the calls that meet the refusal record nothing more")
	m.Close()

	again := tradovateManager(t, f, fake, &log)
	t.Cleanup(func() { again.Close() })
	_, _ = call(t, again, "alice", protocol.FnListAccounts, "", nil)
	evs := log.WaitActivity(t, 2)
	assert.Equal(t, ev.Ref, evs[1].Ref, "the same failure of the same link")

	fake.Captcha(true)
	s.Password = tradovatefake.DefaultPassword
	_, err = again.Link(context.Background(), "alice", broker.EnvDemo, broker.MethodAPIKey, s)
	require.NoError(t, err)
	evs = log.WaitActivity(t, 3)
	assert.Equal(t, protocol.ActivityBrokerLoginFailed, evs[2].Activity.Kind)
	assert.Equal(t, "captcha_required", eventstest.Detail(t, evs[2].Activity)["error"])
	assert.NotEqual(t, ev.Ref, evs[2].Ref, "another link")
}

// An OAuth link whose session expired, with nothing to renew it, is
// broker.tokenExpired.
func TestTokenExpiredRecorded(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fake := brokerFake(t, f)
	var log eventstest.Collector
	m := tradovateManager(t, f, fake, &log)
	t.Cleanup(func() { m.Close() })
	_, err := m.Link(context.Background(), "bob", broker.EnvDemo, broker.MethodOAuth,
		broker.Secrets{AccessToken: "tok-secret-xyz", Expires: time.Now().Add(-time.Minute)})
	require.NoError(t, err)
	ev := log.WaitActivity(t, 1)[0]
	assert.Equal(t, protocol.ActivityBrokerTokenExpired, ev.Activity.Kind)
	assert.Equal(t, map[string]any{"error": "token_expired", "env": "demo"}, eventstest.Detail(t, ev.Activity))
	assert.NotContains(t, string(ev.Activity.Detail)+ev.Activity.Summary, "tok-secret-xyz")
}

// A captcha is a wait, not the end of the link: its broker.loginFailed
// entry and the link's state say when the relay tries again by itself.
func TestCaptchaRecordedWithRetryTime(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fake := brokerFake(t, f)
	fake.Captcha(true)
	var log eventstest.Collector
	m := tradovateManager(t, f, fake, &log)
	t.Cleanup(func() { m.Close() })
	s := broker.Secrets{Username: tradovatefake.DefaultName, Password: tradovatefake.DefaultPassword, AppID: tradovatefake.DefaultAppID,
		AppVersion: "1.0", CID: tradovatefake.DefaultCID, Sec: tradovatefake.DefaultSec}
	before := time.Now()
	_, err := m.Link(context.Background(), "alice", broker.EnvDemo, broker.MethodAPIKey, s)
	require.NoError(t, err)
	ev := log.WaitActivity(t, 1)[0]
	assert.Equal(t, protocol.ActivityBrokerLoginFailed, ev.Activity.Kind)
	d := eventstest.Detail(t, ev.Activity)
	assert.Equal(t, "captcha_required", d["error"])
	require.IsType(t, "", d["retryAt"], "the entry says when the relay tries again")
	retry, err := time.Parse(time.RFC3339, d["retryAt"].(string))
	require.NoError(t, err)
	assert.WithinDuration(t, before.Add(tradovate.CaptchaPause), retry, time.Minute)
	assert.Contains(t, ev.Activity.Summary, "tries again")

	st, err := m.Status(context.Background(), "alice")
	require.NoError(t, err)
	assert.Equal(t, tradovate.StateCaptchaRequired, st.Session)
	require.NotNil(t, st.RetryAt, "the link's state says when the relay tries again")
	assert.WithinDuration(t, retry, *st.RetryAt, time.Second)
	for range 3 {
		_, _ = call(t, m, "alice", protocol.FnListAccounts, "", nil)
	}
	assert.Len(t, log.Activity(), 1, "recorded once")
	assert.Equal(t, 1, fake.Requests("auth/accesstokenrequest"), "no login is tried during the wait")
}

// Every link of a node, and the login that links one, goes through the
// node's one address budget: Tradovate counts its limits and penalty
// tickets per client address, whatever the login.
func TestLinksShareTheNodeAddressBudget(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fake := brokerFake(t, f)
	budget := tradovate.NewAddressBudget(tradovate.BudgetOptions{})
	m, err := broker.New(broker.Options{Store: f.store, Keys: f.keys, Endpoints: fake.Endpoints(),
		Now: f.markets.clock.Now, ReadyTimeout: 5 * time.Second, AddressBudget: budget})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	s := broker.Secrets{Username: tradovatefake.DefaultName, Password: tradovatefake.DefaultPassword,
		AppID: tradovatefake.DefaultAppID, AppVersion: "1.0", CID: tradovatefake.DefaultCID, Sec: tradovatefake.DefaultSec}
	for _, user := range []string{"alice", "bob"} {
		_, err := m.Link(context.Background(), user, broker.EnvDemo, broker.MethodAPIKey, s)
		require.NoError(t, err)
		_, err = call(t, m, user, protocol.FnListAccounts, "", nil)
		require.NoError(t, err)
	}
	st := budget.Stats()
	sent := fake.Requests("auth/accesstokenrequest") + fake.Requests("account/list") + fake.Requests("authorize") +
		fake.Requests("user/syncrequest")
	require.GreaterOrEqual(t, fake.Requests("auth/accesstokenrequest"), 2, "both links logged in")
	assert.GreaterOrEqual(t, st.Reads+st.Writes, sent, "every request of both links went through the budget")
}
