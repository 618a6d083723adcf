package relay_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"tradebridge/internal/systemtest"
	"tradebridge/internal/testkit"
	"tradebridge/relay"
	"tradebridge/relay/account"
	"tradebridge/relay/dashboard"
	"tradebridge/relay/errcode"
)

// dashSystem is a relay whose traders sign in to the dashboard (sign-up
// open, passwords hashed cheaply: the tests sign in often under the race
// detector).
func dashSystem(t *testing.T) *system {
	t.Helper()
	return newSystemWith(t, func(o *relay.Options) {
		o.Account.Signup = account.SignupOpen
		o.Account.Argon2 = account.Argon2Params{Memory: 1024, Time: 1, Threads: 1}
	})
}

// dashPassword is every test user's dashboard password.
const dashPassword = "a password for the tests"

// dashSignIn gives the test user an email and a password and signs in:
// the session cookie's value.
func (s *system) dashSignIn(user string) string {
	s.T.Helper()
	ctx := context.Background()
	id := s.Users[user].UserID
	email := user + "@example.com"
	require.NoError(s.T, s.Relay().Account().SetEmail(ctx, id, email))
	require.NoError(s.T, s.Relay().Account().SetPassword(ctx, id, dashPassword))
	r := s.dash(http.MethodPost, "/app/signin", "", url.Values{"email": {email}, "password": {dashPassword}})
	require.Equal(s.T, http.StatusSeeOther, r.StatusCode)
	for _, c := range r.Cookies() {
		if c.Name == dashboard.CookieName {
			return c.Value
		}
	}
	s.T.Fatal("no session cookie")
	return ""
}

// dashAnswer is an answer of the dashboard, its body read.
type dashAnswer struct {
	*http.Response
	Body string
}

// dash sends a dashboard request from the dashboard's own origin, with the
// session cookie (none when empty) and a form (none when nil), following
// no redirect; a POST carries the session's CSRF token.
func (s *system) dash(method, path, cookie string, form url.Values, header ...string) dashAnswer {
	s.T.Helper()
	body := ""
	if form != nil {
		if cookie != "" {
			form.Set("csrf", account.CSRFToken(cookie))
		}
		body = form.Encode()
	}
	req, err := s.NewRequest(method, path, "", body, append([]string{"Origin", s.Base}, header...)...)
	require.NoError(s.T, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: dashboard.CookieName, Value: cookie})
	}
	c := &http.Client{Transport: s.Client.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	require.NoError(s.T, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(s.T, err)
	return dashAnswer{Response: res, Body: string(b)}
}

// The dashboard through the real relay: the status of a real agent on
// the simulator, tokens that are the user's own, the kill switch through
// the Management API, and the stream's session door.
func TestDashboardEndToEnd(t *testing.T) {
	t.Parallel()
	s := dashSystem(t)
	ra := s.StartAgent("alice")
	alice := s.dashSignIn("alice")
	bob := s.dashSignIn("bob")

	r := s.dash(http.MethodGet, "/", "", nil)
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	require.Equal(t, "/app", r.Header.Get("Location"))

	home := s.dash(http.MethodGet, "/app", alice, nil)
	require.Equal(t, http.StatusOK, home.StatusCode)
	require.Contains(t, home.Body, `id="agent-status" data-state="online"`)
	platform := map[string]string{"sim": "Simulator", "ninjatrader": "NinjaTrader 8"}[systemtest.PlatformUnderTest]
	require.Contains(t, home.Body, `<dd id="agent-platform">`+platform+`</dd>`)
	require.Contains(t, home.Body, `<tr data-account="Sim101">`)
	require.Contains(t, s.dash(http.MethodGet, "/app", bob, nil).Body, `id="agent-status" data-state="offline"`)

	// A named token of alice's, which bob cannot revoke.
	r = s.dash(http.MethodPost, "/app/tokens", alice, url.Values{"name": {"<b>bot</b>"}, "profile": {"compatible"}})
	require.Equal(t, http.StatusOK, r.StatusCode)
	tok := regexp.MustCompile(`<code id="new-token-value">(tb_api_[A-Za-z0-9_-]+)</code>`).FindStringSubmatch(r.Body)
	require.Len(t, tok, 2)
	require.Contains(t, r.Body, "&lt;b&gt;bot&lt;/b&gt;")
	require.Equal(t, http.StatusOK, s.Do(http.MethodGet, "/v1/api/accounts", tok[1], "").Status, "the new token works")
	id := regexp.MustCompile(`data-token-id="([0-9a-f]{12})"`).FindAllStringSubmatch(r.Body, -1)
	require.NotEmpty(t, id)
	newID := id[len(id)-1][1]
	require.NotContains(t, s.dash(http.MethodGet, "/app/tokens", bob, nil).Body, newID)
	require.Equal(t, http.StatusNotFound, s.dash(http.MethodPost, "/app/tokens/"+newID+"/revoke", bob, url.Values{}).StatusCode)
	require.Equal(t, http.StatusOK, s.Do(http.MethodGet, "/v1/api/accounts", tok[1], "").Status)
	require.Equal(t, http.StatusSeeOther, s.dash(http.MethodPost, "/app/tokens/"+newID+"/revoke", alice, url.Values{}).StatusCode)
	require.Eventually(t, func() bool {
		return s.Do(http.MethodGet, "/v1/api/accounts", tok[1], "").Status == http.StatusUnauthorized
	}, testkit.Medium, testkit.Tick)

	// The kill switch, on a pro plan, through the Management API.
	r = s.dash(http.MethodPost, "/app/kill-switch", alice, url.Values{"enabled": {"true"}}, "Accept", "application/json")
	require.Equal(t, http.StatusOK, r.StatusCode, r.Body)
	require.Contains(t, r.Body, `"killSwitch":true`)
	require.Eventually(t, func() bool {
		c := ra.Agent.Config().Current()
		return c != nil && c.Controls.KillSwitch
	}, testkit.Medium, testkit.Tick)
	require.Contains(t, s.dash(http.MethodGet, "/app", alice, nil).Body, `id="kill-switch" type="submit" data-state="on"`)
	r = s.dash(http.MethodPost, "/app/kill-switch", alice, url.Values{"enabled": {"false"}}, "Accept", "application/json")
	require.Equal(t, http.StatusOK, r.StatusCode, r.Body)

	// Add a PC: a code for alice, and the command with the relay's URL.
	r = s.dash(http.MethodPost, "/app/pair", alice, url.Values{})
	require.Regexp(t, `<code id="pair-command">agent pair [A-Z0-9]{4}-[A-Z0-9]{4} --relay `+regexp.QuoteMeta(s.Base)+`</code>`, r.Body)

	// The stream socket, with the session cookie from the dashboard's own
	// origin: read-only.
	wsURL := "ws" + strings.TrimPrefix(s.Base, "http") + "/ws/stream"
	dial := func(origin string) (*websocket.Conn, int) {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Medium)
		defer cancel()
		h := http.Header{"Cookie": {dashboard.CookieName + "=" + alice}, "Origin": {origin}}
		ws, res, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: h})
		if res != nil && res.Body != nil {
			res.Body.Close()
		}
		if err != nil {
			return nil, res.StatusCode
		}
		t.Cleanup(func() { ws.CloseNow() })
		return ws, http.StatusSwitchingProtocols
	}
	_, status := dial("https://evil.example")
	require.Equal(t, http.StatusForbidden, status)
	ws, status := dial(s.Base)
	require.Equal(t, http.StatusSwitchingProtocols, status)
	read := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Medium)
		defer cancel()
		_, b, err := ws.Read(ctx)
		require.NoError(t, err)
		return string(b)
	}
	write := func(frame string) {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Medium)
		defer cancel()
		require.NoError(t, ws.Write(ctx, websocket.MessageText, []byte(frame)))
	}
	require.Contains(t, read(), `"agentConnected":true`)
	write(`{"action":"rpc","id":"p","api":"PlaceOrder","args":{"account":"Sim101","action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day"}}`)
	require.Contains(t, read(), `"error":"`+errcode.ReadOnlySocket+`"`)
	write(`{"action":"subscribeActivity"}`)
	require.Contains(t, read(), `"activitySubscribed"`)

	// Signing out ends the socket's session too, and the pages'.
	require.Equal(t, http.StatusSeeOther, s.dash(http.MethodPost, "/app/signout", alice, url.Values{}).StatusCode)
	require.Equal(t, http.StatusSeeOther, s.dash(http.MethodGet, "/app", alice, nil).StatusCode)
	positions := s.Do(http.MethodGet, "/v1/api/accounts/Sim101/positions", s.Users["alice"].APIToken, "")
	require.Equal(t, http.StatusOK, positions.Status)
	require.Contains(t, string(positions.Data), `"count":0`, "the read-only socket placed nothing")
}

// Sign-in attempts are budgeted: past the budget the dashboard answers
// 429 with Retry-After and a sentence, the same for a known and an
// unknown email, and a right password does not get through either.
func TestDashboardSignInBudget(t *testing.T) {
	t.Parallel()
	s := dashSystem(t)
	s.dashSignIn("alice")
	limited := 0
	for i := range 20 {
		email := "alice@example.com"
		if i%2 == 1 {
			email = "nobody@example.com"
		}
		r := s.dash(http.MethodPost, "/app/signin", "", url.Values{"email": {email}, "password": {"not the password"}})
		switch r.StatusCode {
		case http.StatusUnauthorized:
			require.Zero(t, limited, "a refusal for the budget is not followed by a verdict")
		case http.StatusTooManyRequests:
			limited++
			require.NotEmpty(t, r.Header.Get("Retry-After"))
			require.Contains(t, r.Body, `id="form-error" role="alert"`)
		default:
			t.Fatalf("attempt %d: %d", i, r.StatusCode)
		}
	}
	require.Greater(t, limited, 0)
	r := s.dash(http.MethodPost, "/app/signin", "", url.Values{"email": {"alice@example.com"}, "password": {dashPassword}})
	require.Equal(t, http.StatusTooManyRequests, r.StatusCode)
	require.Empty(t, r.Cookies())
}
