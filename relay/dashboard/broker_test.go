package dashboard_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/admit"
	"tradebridge/relay/auth"
	"tradebridge/relay/broker"
	"tradebridge/relay/dashboard"
	"tradebridge/relay/errcode"
	"tradebridge/relay/events/eventstest"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/sealed"
	"tradebridge/relay/store"
	"tradebridge/trading/bridge/bridgetest"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/bridge/tradovate"
	"tradebridge/trading/bridge/tradovate/tradovatefake"
)

// The API-key credentials the broker pages' tests send: the login
// accepts rightPassword only.
const (
	rightPassword = "right-horse-password"
	wrongPassword = "hunter2-wrong-password"
	apiSecret     = "s3cr3t-api-sec"
)

// brokerEnv is a dashboard over a real broker family: the broker's
// Manager on a store of its own, its links' platforms simulators, its
// logins checked by a script (rightPassword only), its OAuth link
// against the Tradovate fake (when oauth).
type brokerEnv struct {
	*env
	m      *broker.Manager
	store  *store.SQLite
	fake   *tradovatefake.Server
	log    *eventstest.Collector
	mu     sync.Mutex
	logins int
}

// signedIn is a link's platform, a simulator, whose login tells it is
// signed in and connected, as a Tradovate platform's does.
type signedIn struct{ *sim.Platform }

func (signedIn) LinkState() broker.LinkState { return broker.LinkState{Session: "ok", Connected: true} }

// newBrokerEnv starts it. bob's plan, as the broker family's door sees
// it, lacks the broker family.
func newBrokerEnv(t *testing.T, oauth bool) *brokerEnv {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	for _, id := range []string{aliceID, bobID} {
		require.NoError(t, st.CreateUser(ctx, store.User{ID: id, Name: id, Plan: "pro", CreatedAt: time.Now()}))
	}
	keys, err := sealed.Generate("test")
	require.NoError(t, err)
	clock := sim.NewManualClock(bridgetest.Start)
	be := &brokerEnv{store: st, log: &eventstest.Collector{}}
	opts := broker.Options{Store: st, Keys: keys, Events: be.log, Now: clock.Now,
		NewPlatform: func(context.Context, broker.PlatformConfig) (broker.Platform, error) {
			p, err := sim.New(sim.Options{Clock: clock})
			if err != nil {
				return nil, err
			}
			return signedIn{p}, nil
		},
		Login: func(_ context.Context, _ string, s broker.Secrets) (broker.Session, error) {
			be.mu.Lock()
			be.logins++
			be.mu.Unlock()
			if s.Password != rightPassword {
				return broker.Session{}, fmt.Errorf("%w: %w", broker.ErrLoginRefused,
					&tradovate.LoginError{Kind: "credentials", Reason: "Tradovate refused the username or password"})
			}
			return broker.Session{AccessToken: "session", Expires: time.Now().Add(time.Hour)}, nil
		}}
	if oauth {
		market, err := sim.New(sim.Options{Clock: clock})
		require.NoError(t, err)
		t.Cleanup(func() { market.Close() })
		be.fake, err = tradovatefake.Start(tradovatefake.Options{Market: market})
		require.NoError(t, err)
		t.Cleanup(func() { be.fake.Close() })
		opts.Endpoints = be.fake.Endpoints()
		opts.OAuth = tradovate.OAuthClient{ID: tradovatefake.DefaultOAuthClientID, Secret: tradovatefake.DefaultOAuthClientSecret,
			RedirectURL: "https://relay.example" + broker.OAuthCallbackPath}
	}
	be.m, err = broker.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { be.m.Close() })
	door := &admit.Door{Name: "tv", Gate: func(_ *http.Request, p auth.Principal) *httpapi.Error {
		if p.UserID == bobID {
			return &httpapi.Error{Status: http.StatusForbidden, Code: errcode.PlanRequired, Detail: "the broker family is not in the plan"}
		}
		return nil
	}}
	be.env = newEnv(t, func(o *dashboard.Options) { o.Broker, o.BrokerDoor = be.m, door })
	return be
}

func (be *brokerEnv) loginCount() int {
	be.mu.Lock()
	defer be.mu.Unlock()
	return be.logins
}

// linked reports whether the user has a link stored.
func (be *brokerEnv) linked(userID string) bool {
	be.t.Helper()
	st, err := be.m.Status(context.Background(), userID)
	require.NoError(be.t, err)
	return st.Linked
}

// apiKeyForm is the API-key form as a trader fills it in.
func apiKeyForm(csrf, password string) url.Values {
	return url.Values{"csrf": {csrf}, "env": {"demo"}, "username": {"trader-name"}, "password": {password},
		"appId": {"my-app"}, "appVersion": {"1.0"}, "cid": {"1234"}, "sec": {apiSecret}}
}

// noSecrets fails the test when the page holds a secret sent.
func noSecrets(t *testing.T, body string) {
	t.Helper()
	for _, s := range []string{rightPassword, wrongPassword, apiSecret} {
		require.NotContains(t, body, s, "a secret is written back to the page")
	}
}

// The broker page of a user with nothing linked: the state, the two
// OAuth buttons (the page's forms may lead to the broker's authorization
// page, and nowhere else), the API-key form named after the API's
// fields, its secrets as password inputs; without the OAuth client the
// buttons are gone and the page says so.
func TestBrokerPage(t *testing.T) {
	t.Parallel()
	be := newBrokerEnv(t, true)
	cookie, _ := be.signIn(aliceEmail)
	r := be.do(http.MethodGet, "/app/broker", cookie, nil)
	require.Equal(t, http.StatusOK, r.StatusCode)
	require.Contains(t, r.Body, `id="broker-link" data-state="unlinked"`)
	require.Contains(t, r.Body, `<a href="/app/broker" aria-current="page">Broker</a>`)
	require.Contains(t, r.Body, `name="env" value="demo">Link demo</button>`)
	require.Contains(t, r.Body, `name="env" value="live">Link live</button>`)
	for _, name := range []string{"username", "appId", "appVersion", "cid"} {
		require.Contains(t, r.Body, fmt.Sprintf(`name=%q`, name), name)
	}
	require.Contains(t, r.Body, `<select id="link-env" name="env"`)
	require.Contains(t, r.Body, `name="password" type="password"`)
	require.Contains(t, r.Body, `name="sec" type="password"`)
	require.NotContains(t, r.Body, "Unlink", "nothing to unlink")
	u, err := url.Parse(be.fake.OAuthAuthorizeURL())
	require.NoError(t, err)
	fakeOrigin := "http://" + u.Host
	require.Contains(t, r.Header.Get("Content-Security-Policy"), "form-action 'self' "+fakeOrigin+";")
	require.Contains(t, r.Header.Get("Content-Security-Policy"), "script-src 'self';", "the rest of the policy holds")
	home := be.do(http.MethodGet, "/app", cookie, nil)
	require.Contains(t, home.Header.Get("Content-Security-Policy"), "form-action 'self';", "other pages lead nowhere else")

	noOAuth := newBrokerEnv(t, false)
	cookie, _ = noOAuth.signIn(aliceEmail)
	r = noOAuth.do(http.MethodGet, "/app/broker", cookie, nil)
	require.Equal(t, http.StatusOK, r.StatusCode)
	require.NotContains(t, r.Body, "Link demo")
	require.NotContains(t, r.Body, "Link live")
	require.Contains(t, r.Body, `id="oauth-off"`)
	require.Contains(t, r.Header.Get("Content-Security-Policy"), "form-action 'self';")
}

// The API-key form: each refusal is said in words, next to the fields it
// names, the form keeps what it may show again but never the password or
// the secret, and nothing is linked; the broker is asked only once the
// fields are right. A link made is the trader's (the dashboard and the
// session in the activity log) and shows on the page, without a secret.
func TestBrokerAPIKeyForm(t *testing.T) {
	t.Parallel()
	be := newBrokerEnv(t, false)
	cookie, csrf := be.signIn(aliceEmail)
	for _, tc := range []struct {
		name   string
		edit   func(url.Values)
		status int
		error  string   // in #form-error
		fields []string // marked next to their input
		logins int
	}{
		{"wrong password", func(f url.Values) { f.Set("password", wrongPassword) }, http.StatusBadRequest,
			"Tradovate refused the username or password. Nothing was linked.", []string{"password"}, 1},
		{"missing secrets", func(f url.Values) { f.Set("password", ""); f.Del("sec") }, http.StatusBadRequest,
			"fill in the fields marked below", []string{"password", "sec"}, 0},
		{"cid not a number", func(f url.Values) { f.Set("cid", "12ab") }, http.StatusBadRequest,
			"fill in the fields marked below", []string{"cid"}, 0},
		{"unknown env", func(f url.Values) { f.Set("env", "paper") }, http.StatusBadRequest,
			"choose demo or live", []string{"env"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := be.loginCount()
			form := apiKeyForm(csrf, rightPassword)
			tc.edit(form)
			r := be.post("/app/broker/link", cookie, form)
			require.Equal(t, tc.status, r.StatusCode, r.Body)
			require.Contains(t, r.Body, `id="form-error" role="alert"`)
			require.Contains(t, r.Body, tc.error)
			for _, f := range tc.fields {
				require.Contains(t, r.Body, fmt.Sprintf(`id="err-%s"`, f), f)
				require.Contains(t, r.Body, fmt.Sprintf(`aria-describedby="err-%s"`, f), f)
			}
			noSecrets(t, r.Body)
			require.Contains(t, r.Body, `value="trader-name"`, "the username is kept")
			require.Equal(t, tc.logins, be.loginCount()-before)
			require.False(t, be.linked(aliceID), "nothing was linked")
		})
	}
	require.Empty(t, be.log.Activity(), "a refused link records nothing")

	r := be.post("/app/broker/link", cookie, apiKeyForm(csrf, rightPassword))
	require.Equal(t, http.StatusSeeOther, r.StatusCode, r.Body)
	require.Equal(t, "/app/broker?link=ok", r.Header.Get("Location"))
	link, err := be.m.Links().Get(context.Background(), aliceID)
	require.NoError(t, err)
	require.Equal(t, broker.MethodAPIKey, link.Method)
	require.Equal(t, rightPassword, link.Secrets.Password, "sealed in the store")
	require.Equal(t, apiSecret, link.Secrets.Sec)
	require.Equal(t, 1234, link.Secrets.CID)

	page := be.do(http.MethodGet, "/app/broker?link=ok", cookie, nil)
	require.Equal(t, http.StatusOK, page.StatusCode)
	require.Contains(t, page.Body, `id="broker-result" role="status">Your Tradovate login is linked.`)
	require.Contains(t, page.Body, `id="broker-env" data-env="demo"`)
	require.Contains(t, page.Body, `id="broker-method" data-method="apikey"`)
	require.Contains(t, page.Body, ">Unlink</button>")
	require.Contains(t, page.Body, `<details id="broker-relink">`, "linking another login is folded away")
	require.Contains(t, page.Body, `href="/app/manage/tv/copiers"`)
	require.Contains(t, page.Body, `href="/app/manage/tv/monitors"`)
	noSecrets(t, page.Body)
	require.NotContains(t, page.Body, "trader-name", "the form starts empty again")

	ev := be.log.WaitActivity(t, 1)[0]
	assert.Equal(t, aliceID, ev.UserID)
	assert.Equal(t, protocol.ActivityBrokerLinked, ev.Activity.Kind)
	assert.Equal(t, protocol.ActivitySource{Kind: protocol.SourceDashboard, ID: auth.TokenID(auth.Hash(cookie))}, ev.Activity.Source)
}

// Every form of the broker page needs the session's CSRF token: without
// it nothing is linked, started or unlinked, and the broker is not asked.
func TestBrokerCSRF(t *testing.T) {
	t.Parallel()
	be := newBrokerEnv(t, true)
	cookie, csrf := be.signIn(aliceEmail)
	_, bobCSRF := be.signIn(bobEmail)
	for _, tc := range []struct {
		name, path string
		form       url.Values
		header     []string
	}{
		{"link without a token", "/app/broker/link", apiKeyForm("", rightPassword), nil},
		{"link with another session's token", "/app/broker/link", apiKeyForm(bobCSRF, rightPassword), nil},
		{"link from another site", "/app/broker/link", apiKeyForm(csrf, rightPassword), []string{"Origin", "https://evil.example"}},
		{"OAuth without a token", "/app/broker/oauth", url.Values{"env": {"demo"}}, nil},
		{"unlink without a token", "/app/broker/unlink", url.Values{"confirm": {"yes"}}, nil},
	} {
		r := be.do(http.MethodPost, tc.path, cookie, tc.form, tc.header...)
		require.Equal(t, http.StatusForbidden, r.StatusCode, tc.name)
		noSecrets(t, r.Body)
	}
	require.Zero(t, be.loginCount(), "the broker was not asked")
	require.False(t, be.linked(aliceID))

	require.Equal(t, http.StatusSeeOther, be.post("/app/broker/link", cookie, apiKeyForm(csrf, rightPassword)).StatusCode)
	r := be.do(http.MethodPost, "/app/broker/unlink", cookie, url.Values{"confirm": {"yes"}})
	require.Equal(t, http.StatusForbidden, r.StatusCode)
	require.True(t, be.linked(aliceID), "still linked")
}

// One user's link is theirs alone: another user's page, fragment and
// Unlink see and touch nothing of it.
func TestBrokerLinkIsTheUsers(t *testing.T) {
	t.Parallel()
	be := newBrokerEnv(t, false)
	alice, aliceCSRF := be.signIn(aliceEmail)
	require.Equal(t, http.StatusSeeOther, be.post("/app/broker/link", alice, apiKeyForm(aliceCSRF, rightPassword)).StatusCode)
	require.Eventually(t, func() bool {
		return strings.Contains(be.do(http.MethodGet, "/app/broker/status", alice, nil).Body, "<li>Sim101</li>")
	}, testkit.Long, testkit.Tick, "alice's accounts show once her login is connected")

	bob, bobCSRF := be.signIn(bobEmail)
	for _, path := range []string{"/app/broker", "/app/broker/status", "/app"} {
		r := be.do(http.MethodGet, path, bob, nil)
		require.Equal(t, http.StatusOK, r.StatusCode, path)
		require.Contains(t, r.Body, `data-state="unlinked"`, path)
		require.NotContains(t, r.Body, "Sim101", path)
	}
	r := be.post("/app/broker/unlink", bob, url.Values{"csrf": {bobCSRF}, "confirm": {"yes"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	require.Equal(t, "/app/broker?link=none", r.Header.Get("Location"))
	require.True(t, be.linked(aliceID), "bob's Unlink leaves alice's link")

	page := be.do(http.MethodGet, "/app/broker", alice, nil)
	require.Contains(t, page.Body, `id="broker-link" data-state="linked"`)
	home := be.do(http.MethodGet, "/app", alice, nil)
	require.Contains(t, home.Body, `id="broker-link" data-state="linked"`, "the home page tells the same state")
}

// Unlink asks for a confirmation the page carries without script; it is
// recorded in the session's name. A user whose plan lacks the broker
// family sees why and may not link, but may still unlink.
func TestBrokerUnlinkAndPlan(t *testing.T) {
	t.Parallel()
	be := newBrokerEnv(t, true)
	cookie, csrf := be.signIn(aliceEmail)
	require.Equal(t, http.StatusSeeOther, be.post("/app/broker/link", cookie, apiKeyForm(csrf, rightPassword)).StatusCode)

	r := be.post("/app/broker/unlink", cookie, url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusBadRequest, r.StatusCode)
	require.Contains(t, r.Body, `id="form-error" role="alert"`)
	require.Contains(t, r.Body, `id="err-confirm"`)
	require.True(t, be.linked(aliceID), "not without the confirmation")

	r = be.post("/app/broker/unlink", cookie, url.Values{"csrf": {csrf}, "confirm": {"yes"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	require.Equal(t, "/app/broker?link=unlinked", r.Header.Get("Location"))
	require.False(t, be.linked(aliceID))
	evs := be.log.WaitActivity(t, 2)
	assert.Equal(t, protocol.ActivityBrokerUnlinked, evs[1].Activity.Kind)
	assert.Equal(t, protocol.ActivitySource{Kind: protocol.SourceDashboard, ID: auth.TokenID(auth.Hash(cookie))}, evs[1].Activity.Source)

	bob, bobCSRF := be.signIn(bobEmail)
	page := be.do(http.MethodGet, "/app/broker", bob, nil)
	require.Contains(t, page.Body, `id="broker-plan"`)
	require.NotContains(t, page.Body, "Link demo")
	require.NotContains(t, page.Body, `action="/app/broker/link"`)
	logins := be.loginCount()
	for _, tc := range []struct {
		path string
		form url.Values
	}{
		{"/app/broker/link", apiKeyForm(bobCSRF, rightPassword)},
		{"/app/broker/oauth", url.Values{"csrf": {bobCSRF}, "env": {"demo"}}},
	} {
		r := be.post(tc.path, bob, tc.form)
		require.Equal(t, http.StatusForbidden, r.StatusCode, tc.path)
		require.Contains(t, r.Body, "Your plan does not include the broker family", tc.path)
		noSecrets(t, r.Body)
	}
	require.Equal(t, logins, be.loginCount())
	require.False(t, be.linked(bobID))

	// Linked before the plan changed: unlinking stays possible.
	_, err := be.m.Link(context.Background(), bobID, broker.EnvDemo, broker.MethodAPIKey,
		broker.Secrets{Username: "u", Password: rightPassword, AppID: "a", AppVersion: "1", CID: 1, Sec: apiSecret})
	require.NoError(t, err)
	page = be.do(http.MethodGet, "/app/broker", bob, nil)
	require.Contains(t, page.Body, ">Unlink</button>")
	r = be.post("/app/broker/unlink", bob, url.Values{"csrf": {bobCSRF}, "confirm": {"yes"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	require.False(t, be.linked(bobID))
}

// "Link demo" and "Link live" start an OAuth link in the session's name
// and send the browser to the broker's authorization page; the result
// the callback sends back is said in fixed words, whatever the query
// holds.
func TestBrokerOAuthStart(t *testing.T) {
	t.Parallel()
	be := newBrokerEnv(t, true)
	cookie, csrf := be.signIn(aliceEmail)
	r := be.post("/app/broker/oauth", cookie, url.Values{"csrf": {csrf}, "env": {"live"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, r.Body)
	to, err := url.Parse(r.Header.Get("Location"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(to.String(), be.fake.OAuthAuthorizeURL()+"?"), to.String())
	state := to.Query().Get("state")
	require.NotEmpty(t, state)
	sum := sha256.Sum256([]byte(state)) // the store keeps a state by its hash
	st, err := be.store.TakeOAuthState(context.Background(), hex.EncodeToString(sum[:]), time.Now())
	require.NoError(t, err)
	require.Equal(t, aliceID, st.UserID)
	require.Equal(t, broker.EnvLive, st.Env)
	require.Equal(t, protocol.SourceDashboard, st.SourceKind)
	require.Equal(t, auth.TokenID(auth.Hash(cookie)), st.SourceID, "bound to the session that started it")

	r = be.post("/app/broker/oauth", cookie, url.Values{"csrf": {csrf}, "env": {"paper"}})
	require.Equal(t, http.StatusBadRequest, r.StatusCode)
	require.Contains(t, r.Body, `id="form-error" role="alert"`)
	noOAuth := newBrokerEnv(t, false)
	c2, csrf2 := noOAuth.signIn(aliceEmail)
	r = noOAuth.post("/app/broker/oauth", c2, url.Values{"csrf": {csrf2}, "env": {"demo"}})
	require.Equal(t, http.StatusNotFound, r.StatusCode)

	for _, tc := range []struct {
		query, want, sel string
	}{
		{"link=ok", "Your Tradovate login is linked.", `id="broker-result"`},
		{"link=failed&reason=denied", "Tradovate did not grant access. Nothing was linked.", `id="form-error"`},
		{"link=failed&reason=session", "another browser session", `id="form-error"`},
		{"link=failed&reason=" + url.QueryEscape("<script>x</script>"), "The relay could not finish the link.", `id="form-error"`},
		{"link=" + url.QueryEscape("<b>made up</b>"), "", ""},
	} {
		r := be.do(http.MethodGet, "/app/broker?"+tc.query, cookie, nil)
		require.Equal(t, http.StatusOK, r.StatusCode, tc.query)
		require.Contains(t, r.Body, tc.want, tc.query)
		if tc.sel != "" {
			require.Contains(t, r.Body, tc.sel, tc.query)
		} else {
			require.NotContains(t, r.Body, `id="broker-result"`, tc.query)
			require.NotContains(t, r.Body, `id="form-error"`, tc.query)
		}
		require.NotContains(t, r.Body, "<script>x", tc.query)
		require.NotContains(t, r.Body, "made up", tc.query)
	}
}

// The link's state alone, for the page's script: a fragment to a
// session, 401 JSON without one.
func TestBrokerStatusFragment(t *testing.T) {
	t.Parallel()
	be := newBrokerEnv(t, false)
	cookie, _ := be.signIn(aliceEmail)
	r := be.do(http.MethodGet, "/app/broker/status", cookie, nil)
	require.Equal(t, http.StatusOK, r.StatusCode)
	require.Contains(t, r.Header.Get("Content-Type"), "text/html")
	require.Contains(t, r.Body, `id="broker-link" data-state="unlinked"`)
	require.NotContains(t, r.Body, "<html")
	r = be.do(http.MethodGet, "/app/broker/status", "", nil)
	require.Equal(t, http.StatusUnauthorized, r.StatusCode)
	require.Contains(t, r.Header.Get("Content-Type"), "application/json")
}

// A dashboard with the broker family needs its door.
func TestBrokerNeedsItsDoor(t *testing.T) {
	t.Parallel()
	_, err := dashboard.New(dashboard.Options{Accounts: &fakeAccounts{}, Admit: &admit.Admitter{}, Tokens: &fakeTokens{},
		Pairing: &fakePairing{}, Hub: fakeHub{}, Agent: fakeAgent{}, Manage: &fakeManage{}, Activity: fakeActivity{},
		Broker: &broker.Manager{}})
	require.ErrorContains(t, err, "BrokerDoor")
}
