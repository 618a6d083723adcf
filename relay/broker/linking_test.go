package broker_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"tradebridge/protocol"
	"tradebridge/relay/broker"
	"tradebridge/relay/events/eventstest"
	"tradebridge/relay/store"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate"
	"tradebridge/trading/bridge/tradovate/tradovatefake"
)

// dashboardSource is the source of what a dashboard session does.
var dashboardSource = protocol.ActivitySource{Kind: protocol.SourceDashboard, ID: "5e55104aa1ce"}

// scriptedLogin is an Options.Login whose answer the test sets, and
// which counts its calls.
type scriptedLogin struct {
	mu    sync.Mutex
	err   error
	calls int
	got   broker.Secrets
}

func (l *scriptedLogin) login(_ context.Context, _ string, s broker.Secrets) (broker.Session, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	l.got = s
	if l.err != nil {
		return broker.Session{}, l.err
	}
	return broker.Session{AccessToken: "session-token", Expires: time.Now().Add(time.Hour)}, nil
}

func (l *scriptedLogin) set(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.err, l.calls = err, 0
}

func (l *scriptedLogin) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

// failingLinks is the store with its writes of links failing.
type failingLinks struct {
	*store.SQLite
}

func (failingLinks) PutBrokerLink(context.Context, store.BrokerLink) error {
	return errors.New("disk I/O error")
}

// LinkAPIKey, the work of POST /v1/api/tv/link and of the dashboard's
// API-key form: each refusal is its own error for the caller to put in
// words, names no value sent, stores and records nothing; a link is
// recorded in the caller's name.
func TestLinkAPIKey(t *testing.T) {
	t.Parallel()
	const password, sec = "hunter2-password", "s3cr3t-sec"
	good := broker.Secrets{Username: "trader", Password: password, AppID: "app", AppVersion: "1.0", CID: 7, Sec: sec}
	for _, tc := range []struct {
		name   string
		env    string
		edit   func(*broker.Secrets)
		login  error
		store  bool // the store fails the link's write
		check  func(t *testing.T, err error)
		logins int
	}{
		{name: "unknown env", env: "paper", check: func(t *testing.T, err error) {
			require.ErrorIs(t, err, broker.ErrUnknownEnv)
		}},
		{name: "missing fields", env: broker.EnvDemo, edit: func(s *broker.Secrets) { s.Password, s.CID, s.Sec = "", 0, "" },
			check: func(t *testing.T, err error) {
				var ve *broker.ValidationError
				require.ErrorAs(t, err, &ve)
				require.Equal(t, []string{"password", "cid", "sec"}, ve.Fields)
			}},
		{name: "refused by the broker", env: broker.EnvDemo, logins: 1,
			login: errors.Join(broker.ErrLoginRefused, &tradovate.LoginError{Kind: "api_key", Reason: "Tradovate refused the API key (cid and secret) or the application name"}),
			check: func(t *testing.T, err error) {
				var re *broker.RefusedError
				require.ErrorAs(t, err, &re)
				require.ErrorIs(t, err, broker.ErrLoginRefused)
				require.Equal(t, "api_key", re.Kind)
				require.Equal(t, "Tradovate refused the API key (cid and secret) or the application name", re.Reason)
			}},
		{name: "refused without a reason", env: broker.EnvLive, logins: 1, login: broker.ErrLoginRefused,
			check: func(t *testing.T, err error) {
				var re *broker.RefusedError
				require.ErrorAs(t, err, &re)
				require.Equal(t, "the broker refused the credentials", re.Reason)
			}},
		{name: "a captcha", env: broker.EnvDemo, logins: 1,
			login: &bridge.UnavailableError{Code: tradovate.CodeCaptchaRequired, Reason: "Tradovate asks for a human check on this login"},
			check: func(t *testing.T, err error) {
				var ue *broker.UnavailableError
				require.ErrorAs(t, err, &ue)
				require.ErrorIs(t, err, broker.ErrBrokerUnavailable)
				require.False(t, errors.Is(err, broker.ErrLoginRefused))
				require.Equal(t, "Tradovate asks for a human check on this login", ue.Reason)
			}},
		{name: "unreachable", env: broker.EnvDemo, logins: 1, login: errors.New("dial tcp 10.0.0.1:443: connection refused"),
			check: func(t *testing.T, err error) {
				var ue *broker.UnavailableError
				require.ErrorAs(t, err, &ue)
				require.Empty(t, ue.Reason)
			}},
		{name: "the store fails", env: broker.EnvDemo, logins: 1, store: true,
			check: func(t *testing.T, err error) {
				require.ErrorIs(t, err, broker.ErrStorage)
				require.False(t, errors.Is(err, broker.ErrBrokerUnavailable))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			var log eventstest.Collector
			login := &scriptedLogin{}
			login.set(tc.login)
			var db broker.Store = f.store
			if tc.store {
				db = failingLinks{f.store}
			}
			core, logs := observer.New(zapcore.DebugLevel)
			m, err := broker.New(broker.Options{Store: db, Keys: f.keys, NewPlatform: f.markets.newPlatform, Events: &log,
				Now: f.markets.clock.Now, Login: login.login, Logger: zap.New(core)})
			require.NoError(t, err)
			t.Cleanup(func() { m.Close() })
			s := good
			if tc.edit != nil {
				tc.edit(&s)
			}
			err = m.LinkAPIKey(context.Background(), "alice", tc.env, s, dashboardSource)
			require.Error(t, err)
			tc.check(t, err)
			require.NotContains(t, err.Error(), password)
			require.NotContains(t, err.Error(), sec)
			require.Equal(t, tc.logins, login.count(), "the broker is asked only once the fields are right")
			st, err := m.Status(context.Background(), "alice")
			require.NoError(t, err)
			require.False(t, st.Linked, "nothing was linked")
			require.Empty(t, log.Activity(), "nothing was recorded")
			for _, e := range logs.All() {
				line := fmt.Sprint(e.Message, e.ContextMap())
				require.NotContains(t, line, password, "a log line holds the password")
				require.NotContains(t, line, sec, "a log line holds the secret")
			}
		})
	}

	t.Run("linked", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		var log eventstest.Collector
		login := &scriptedLogin{}
		m, err := broker.New(broker.Options{Store: f.store, Keys: f.keys, NewPlatform: f.markets.newPlatform, Events: &log,
			Now: f.markets.clock.Now, Login: login.login})
		require.NoError(t, err)
		t.Cleanup(func() { m.Close() })
		s := good
		s.AccessToken = "ignored" // only the API-key fields are taken
		require.NoError(t, m.LinkAPIKey(context.Background(), "alice", broker.EnvLive, s, dashboardSource))
		require.Equal(t, 1, login.count())
		require.Empty(t, login.got.AccessToken)
		require.NotEmpty(t, login.got.DeviceID, "a device id is made for the login")

		link, err := m.Links().Get(context.Background(), "alice")
		require.NoError(t, err)
		require.Equal(t, broker.MethodAPIKey, link.Method)
		require.Equal(t, broker.EnvLive, link.Env)
		require.Equal(t, password, link.Secrets.Password, "sealed and stored")
		require.Equal(t, "session-token", link.Secrets.AccessToken, "the session of the check is kept")

		ev := log.WaitActivity(t, 1)[0]
		assert.Equal(t, "alice", ev.UserID)
		assert.Equal(t, protocol.ActivityBrokerLinked, ev.Activity.Kind)
		assert.Equal(t, dashboardSource, ev.Activity.Source, "in the caller's name")
		assert.Equal(t, map[string]any{"env": "live", "method": "apikey"}, eventstest.Detail(t, ev.Activity))

		// Linking the same login again keeps its device id.
		device := link.Secrets.DeviceID
		require.NoError(t, m.LinkAPIKey(context.Background(), "alice", broker.EnvLive, good, dashboardSource))
		require.Equal(t, device, login.got.DeviceID)

		had, err := m.Unlink(context.Background(), "alice", dashboardSource)
		require.NoError(t, err)
		require.True(t, had)
		had, err = m.Unlink(context.Background(), "alice", dashboardSource)
		require.NoError(t, err)
		require.False(t, had)
		evs := log.WaitActivity(t, 3)
		assert.Equal(t, protocol.ActivityBrokerUnlinked, evs[2].Activity.Kind)
		assert.Equal(t, dashboardSource, evs[2].Activity.Source)
		time.Sleep(50 * time.Millisecond)
		assert.Len(t, log.Activity(), 3, "an unlink with nothing linked records nothing")
	})
}

// StartOAuth, the work of POST /v1/api/tv/link/oauth and of the
// dashboard's "Link demo" and "Link live": the broker's authorization
// page with a one-time state, kept with who started it.
func TestStartOAuth(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fake := oauthFake(t, f)
	off := f.manager(t)
	_, _, err := off.StartOAuth(context.Background(), "alice", broker.EnvDemo, dashboardSource)
	require.ErrorIs(t, err, broker.ErrOAuthOff)
	require.False(t, off.OAuthOffered())
	require.Empty(t, off.OAuthOrigin())

	m := f.oauthNode(t, fake, nil, "")
	require.True(t, m.OAuthOffered())
	fakeURL, err := url.Parse(fake.OAuthAuthorizeURL())
	require.NoError(t, err)
	require.Equal(t, "http://"+fakeURL.Host, m.OAuthOrigin())

	_, _, err = m.StartOAuth(context.Background(), "alice", "paper", dashboardSource)
	require.ErrorIs(t, err, broker.ErrUnknownEnv)
	_, _, err = m.StartOAuth(context.Background(), "nobody", broker.EnvDemo, dashboardSource)
	require.ErrorIs(t, err, broker.ErrStorage, "a user the store does not know")

	before := time.Now()
	raw, expires, err := m.StartOAuth(context.Background(), "alice", broker.EnvLive, dashboardSource)
	require.NoError(t, err)
	require.WithinDuration(t, before.Add(10*time.Minute), expires, 5*time.Second)
	u, err := url.Parse(raw)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(raw, fake.OAuthAuthorizeURL()+"?"), raw)
	q := u.Query()
	require.Equal(t, tradovatefake.DefaultOAuthClientID, q.Get("client_id"))
	require.Equal(t, "https://relay.example/v1/tv/oauth/callback", q.Get("redirect_uri"))
	require.Equal(t, "code", q.Get("response_type"))
	st, err := f.store.TakeOAuthState(context.Background(), broker.OAuthStateHash(q.Get("state")), time.Now())
	require.NoError(t, err)
	require.Equal(t, store.OAuthState{Hash: broker.OAuthStateHash(q.Get("state")), UserID: "alice", Env: broker.EnvLive,
		Expires: st.Expires, SourceKind: protocol.SourceDashboard, SourceID: dashboardSource.ID}, st)
}

// browserCallback brings a browser back to m's callback: the query, the
// Accept header, and the dashboard session's id its cookie carries
// (sessionCookie, read by the manager's BrowserSession).
func browserCallback(m *broker.Manager, query url.Values, accept, session string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, broker.OAuthCallbackPath+"?"+query.Encode(), nil)
	if accept != "" {
		r.Header.Set("Accept", accept)
	}
	if session != "" {
		r.AddCookie(&http.Cookie{Name: sessionCookie, Value: session})
	}
	w := httptest.NewRecorder()
	m.ServeOAuthCallback(w, r)
	return w
}

// sessionCookie carries the dashboard session's id in these tests.
const sessionCookie = "test_session"

// cookieSession is the tests' Options.BrowserSession.
func cookieSession(r *http.Request) string {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return ""
	}
	return c.Value
}

// browserAccept is what a browser's navigation sends.
const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

// The OAuth callback sends a person's browser back to the dashboard's
// broker page, saying how the link went in a fixed code (never what the
// broker sent); an API client keeps the JSON answers.
func TestOAuthCallbackReturnsToTheDashboard(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fake := oauthFake(t, f)
	m := f.oauthNode(t, fake, nil, "")
	for _, tc := range []struct {
		name   string
		query  func() url.Values
		accept string
		status int
		to     string // Location, for a browser
		body   string // in the JSON answer
		linked bool
	}{
		{name: "browser, linked", query: func() url.Values {
			return url.Values{"state": {startOAuth(t, m, "alice")}, "code": {fake.IssueCode()}}
		}, accept: browserAccept, status: http.StatusSeeOther, to: "/app/broker?link=ok", linked: true},
		{name: "browser, unknown state", query: func() url.Values {
			return url.Values{"state": {"feedface"}, "code": {fake.IssueCode()}}
		}, accept: browserAccept, status: http.StatusSeeOther, to: "/app/broker?link=failed&reason=expired"},
		{name: "browser, access not granted", query: func() url.Values {
			return url.Values{"state": {startOAuth(t, m, "alice")}, "error": {"access_denied"}, "error_description": {"<b>the broker's words</b>"}}
		}, accept: browserAccept, status: http.StatusSeeOther, to: "/app/broker?link=failed&reason=denied"},
		{name: "browser, code refused", query: func() url.Values {
			return url.Values{"state": {startOAuth(t, m, "alice")}, "code": {"made-up-code"}}
		}, accept: browserAccept, status: http.StatusSeeOther, to: "/app/broker?link=failed&reason=refused"},
		{name: "API, linked", query: func() url.Values {
			return url.Values{"state": {startOAuth(t, m, "alice")}, "code": {fake.IssueCode()}}
		}, accept: "application/json", status: http.StatusOK, body: `"linked":true`, linked: true},
		{name: "API without Accept, linked", query: func() url.Values {
			return url.Values{"state": {startOAuth(t, m, "alice")}, "code": {fake.IssueCode()}}
		}, status: http.StatusOK, body: `"method":"oauth"`, linked: true},
		{name: "API, unknown state", query: func() url.Values {
			return url.Values{"state": {"feedface"}, "code": {fake.IssueCode()}}
		}, status: http.StatusBadRequest, body: `"error":"invalid_argument"`},
		{name: "API, code refused", query: func() url.Values {
			return url.Values{"state": {startOAuth(t, m, "alice")}, "code": {"made-up-code"}}
		}, accept: "application/json", status: http.StatusBadRequest, body: `"error":"broker_login_failed"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Unlink(context.Background(), "alice", dashboardSource)
			require.NoError(t, err)
			q := tc.query()
			w := browserCallback(m, q, tc.accept, "")
			require.Equal(t, tc.status, w.Code, w.Body.String())
			if tc.to != "" {
				require.Equal(t, tc.to, w.Header().Get("Location"))
				require.Equal(t, "no-referrer", w.Header().Get("Referrer-Policy"))
			} else {
				require.Contains(t, w.Header().Get("Content-Type"), "application/json")
				require.Contains(t, w.Body.String(), tc.body)
			}
			for _, v := range q {
				for _, sent := range v {
					require.NotContains(t, w.Header().Get("Location"), url.QueryEscape(sent), "nothing the broker sent is echoed")
					require.NotContains(t, w.Body.String(), sent, "nothing the broker sent is echoed")
				}
			}
			st, err := m.Status(context.Background(), "alice")
			require.NoError(t, err)
			require.Equal(t, tc.linked, st.Linked)
		})
	}
}

// An OAuth link started in the dashboard ends only in the browser
// session that started it: a grant brought back by another browser (a
// victim lured to someone's authorization link) links nothing and uses
// the state up; the link is recorded in the session's name.
func TestOAuthFromTheDashboardEndsInItsSession(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fake := oauthFake(t, f)
	var log eventstest.Collector
	newNode := func(browserSession func(*http.Request) string) *broker.Manager {
		m, err := broker.New(broker.Options{Store: f.store, Keys: f.keys, NewPlatform: f.markets.newPlatform, Events: &log,
			Now: f.markets.clock.Now, Endpoints: fake.Endpoints(), BrowserSession: browserSession,
			OAuth: tradovate.OAuthClient{ID: tradovatefake.DefaultOAuthClientID, Secret: tradovatefake.DefaultOAuthClientSecret,
				RedirectURL: "https://relay.example/v1/tv/oauth/callback"}})
		require.NoError(t, err)
		t.Cleanup(func() { m.Close() })
		return m
	}
	m := newNode(cookieSession)
	start := func(m *broker.Manager) string {
		raw, _, err := m.StartOAuth(context.Background(), "alice", broker.EnvDemo, dashboardSource)
		require.NoError(t, err)
		u, err := url.Parse(raw)
		require.NoError(t, err)
		return u.Query().Get("state")
	}

	for _, tc := range []struct {
		name    string
		session string
	}{
		{"another session", "0123456789ab"},
		{"no session", ""},
	} {
		state := start(m)
		w := browserCallback(m, url.Values{"state": {state}, "code": {fake.IssueCode()}}, browserAccept, tc.session)
		require.Equal(t, "/app/broker?link=failed&reason=session", w.Header().Get("Location"), tc.name)
		w = browserCallback(m, url.Values{"state": {state}, "code": {fake.IssueCode()}}, browserAccept, dashboardSource.ID)
		require.Equal(t, "/app/broker?link=failed&reason=expired", w.Header().Get("Location"), "%s: the state is used up", tc.name)
		w = browserCallback(m, url.Values{"state": {start(m)}, "code": {fake.IssueCode()}}, "application/json", tc.session)
		require.Equal(t, http.StatusBadRequest, w.Code, tc.name)
		require.Contains(t, w.Body.String(), "another browser session")
	}
	w := browserCallback(newNode(nil), url.Values{"state": {start(m)}, "code": {fake.IssueCode()}}, browserAccept, dashboardSource.ID)
	require.Equal(t, "/app/broker?link=failed&reason=session", w.Header().Get("Location"), "a relay that cannot read the session ends none")
	st, err := m.Status(context.Background(), "alice")
	require.NoError(t, err)
	require.False(t, st.Linked)
	require.Empty(t, log.Activity())

	w = browserCallback(m, url.Values{"state": {start(m)}, "code": {fake.IssueCode()}}, browserAccept, dashboardSource.ID)
	require.Equal(t, "/app/broker?link=ok", w.Header().Get("Location"))
	ev := log.WaitActivity(t, 1)[0]
	assert.Equal(t, protocol.ActivityBrokerLinked, ev.Activity.Kind)
	assert.Equal(t, dashboardSource, ev.Activity.Source, "in the name of the session that started it")
	assert.Equal(t, map[string]any{"env": "demo", "method": "oauth"}, eventstest.Detail(t, ev.Activity))
}

// OAuthFailure names each of the callback's errors by a fixed code.
func TestOAuthFailure(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{broker.ErrOAuthUnknown, broker.OAuthExpired},
		{broker.ErrOAuthSession, broker.OAuthSession},
		{broker.ErrOAuthDenied, broker.OAuthDenied},
		{&broker.RefusedError{Kind: "oauth", Reason: "Tradovate refused the authorization code"}, broker.OAuthRefused},
		{&broker.UnavailableError{Err: errors.New("timeout")}, broker.OAuthUnavailable},
		{errors.Join(broker.ErrStorage, errors.New("disk")), broker.OAuthStorage},
		{&broker.ValidationError{Fields: []string{"accessToken"}}, broker.OAuthStorage},
	} {
		assert.Equal(t, tc.want, broker.OAuthFailure(tc.err), "%v", tc.err)
	}
}
