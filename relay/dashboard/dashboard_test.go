package dashboard_test

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/account"
	"tradebridge/relay/auth"
	"tradebridge/relay/dashboard"
	"tradebridge/relay/errcode"
)

// Signing in sets a fresh session cookie and goes home; a wrong password
// and an unknown email get one and the same answer.
func TestSignIn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.post("/app/signin", "", url.Values{"email": {aliceEmail}, "password": {password}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	require.Equal(t, "/app", r.Header.Get("Location"))
	c := sessionCookie(r)
	require.NotNil(t, c)
	require.True(t, c.HttpOnly)
	require.Equal(t, http.SameSiteLaxMode, c.SameSite)
	require.False(t, c.Secure, "plain HTTP to 127.0.0.1 is a local demo")
	require.Equal(t, "/", c.Path)

	home := e.do(http.MethodGet, "/app", c.Value, nil)
	require.Equal(t, http.StatusOK, home.StatusCode)
	m := csrfMeta.FindStringSubmatch(home.Body)
	require.Len(t, m, 2)
	require.Equal(t, account.CSRFToken(c.Value), m[1])

	wrong := e.post("/app/signin", "", url.Values{"email": {aliceEmail}, "password": {"not the password"}})
	unknown := e.post("/app/signin", "", url.Values{"email": {"nobody@example.com"}, "password": {password}})
	require.Equal(t, http.StatusUnauthorized, wrong.StatusCode)
	require.Equal(t, wrong.StatusCode, unknown.StatusCode)
	require.Equal(t, wrong.Body, unknown.Body)
	require.Contains(t, wrong.Body, `id="form-error" role="alert"`)
	require.NotContains(t, wrong.Body, "not the password")
	require.Nil(t, sessionCookie(wrong))

	limited := e.post("/app/signin", "", url.Values{"email": {"limited@example.com"}, "password": {password}})
	require.Equal(t, http.StatusTooManyRequests, limited.StatusCode)
	require.Equal(t, "30", limited.Header.Get("Retry-After"))
}

// Without a session a page goes to the sign-in form, and what the script
// fetches is 401 JSON.
func TestNoSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, path := range []string{"/app", "/app/tokens", "/app/pair", "/app/activity"} {
		r := e.do(http.MethodGet, path, "", nil)
		require.Equal(t, http.StatusSeeOther, r.StatusCode, path)
		require.Equal(t, "/app/signin", r.Header.Get("Location"), path)
	}
	// An unknown session: the same, and the cookie is dropped.
	r := e.do(http.MethodGet, "/app", "tb_session_"+strings.Repeat("x", 43), nil)
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	require.Equal(t, "/app/signin", r.Header.Get("Location"))
	require.Equal(t, -1, sessionCookie(r).MaxAge)

	r = e.do(http.MethodGet, "/app/status", "", nil)
	require.Equal(t, http.StatusUnauthorized, r.StatusCode)
	require.Contains(t, r.Header.Get("Content-Type"), "application/json")
	require.Contains(t, r.Body, `"error":"unauthorized"`)
	r = e.do(http.MethodPost, "/app/kill-switch", "", url.Values{"enabled": {"true"}}, "Accept", "application/json")
	require.Equal(t, http.StatusUnauthorized, r.StatusCode)

	r = e.do(http.MethodGet, "/", "", nil)
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	require.Equal(t, "/app", r.Header.Get("Location"))
}

// A state-changing request needs the session's CSRF token; a form posted
// from another site is refused before anything runs.
func TestCSRF(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cookie, csrf := e.signIn(aliceEmail)
	_, otherCSRF := e.signIn(bobEmail)

	for _, tc := range []struct {
		name   string
		form   url.Values
		header []string
		want   int
	}{
		{"no token", url.Values{"name": {"bot"}}, nil, http.StatusForbidden},
		{"another session's token", url.Values{"name": {"bot"}, "csrf": {otherCSRF}}, nil, http.StatusForbidden},
		{"a token of another site's page", url.Values{"name": {"bot"}, "csrf": {csrf}}, []string{"Origin", "https://evil.example"}, http.StatusForbidden},
		{"the header", url.Values{"name": {"bot"}}, []string{"X-CSRF-Token", csrf}, http.StatusOK},
		{"the field", url.Values{"name": {"bot"}, "csrf": {csrf}}, nil, http.StatusOK},
	} {
		r := e.do(http.MethodPost, "/app/tokens", cookie, tc.form, tc.header...)
		require.Equal(t, tc.want, r.StatusCode, tc.name)
	}
	issued := len(e.tokens.tokens[aliceID])
	require.Equal(t, 2, issued, "only the two accepted requests made tokens")

	r := e.do(http.MethodPost, "/app/kill-switch", cookie, url.Values{"enabled": {"true"}}, "Accept", "application/json")
	require.Equal(t, http.StatusForbidden, r.StatusCode)
	require.Contains(t, r.Body, errcode.CSRFTokenInvalid)
	require.Empty(t, e.manage.puts())

	// Sign-in before there is a session: the dashboard's own origin only.
	for _, h := range [][]string{
		{"Origin", "https://evil.example"},
		{"Origin", "null"},
		{"Sec-Fetch-Site", "cross-site"},
		{},
	} {
		r := e.do(http.MethodPost, "/app/signin", "", url.Values{"email": {aliceEmail}, "password": {password}}, h...)
		require.Equal(t, http.StatusForbidden, r.StatusCode, "%v", h)
		require.Nil(t, sessionCookie(r))
	}
	r = e.do(http.MethodPost, "/app/signin", "", url.Values{"email": {aliceEmail}, "password": {password}}, "Sec-Fetch-Site", "same-origin")
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
}

// A session cookie planted before sign-in is worth nothing after: sign-in
// makes a new session and ends the one the request carried.
func TestSessionFixation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	planted, _ := e.signIn(bobEmail)
	r := e.post("/app/signin", planted, url.Values{"email": {aliceEmail}, "password": {password}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	fresh := sessionCookie(r)
	require.NotNil(t, fresh)
	require.NotEqual(t, planted, fresh.Value)
	require.Contains(t, e.accounts.signedOut, planted)
	require.Equal(t, http.StatusSeeOther, e.do(http.MethodGet, "/app", planted, nil).StatusCode)
	require.Equal(t, http.StatusOK, e.do(http.MethodGet, "/app", fresh.Value, nil).StatusCode)
}

// The cookie is Secure but for plain HTTP to the local machine, and
// __Host- prefixed over TLS.
func TestCookieFlags(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mux := e.mux
	for _, tc := range []struct {
		host       string
		tls        bool
		name       string
		wantSecure bool
	}{
		{"127.0.0.1:8080", false, dashboard.CookieName, false},
		{"localhost:8080", false, dashboard.CookieName, false},
		{"[::1]:8080", false, dashboard.CookieName, false},
		{"relay.example.com", false, dashboard.CookieName, true},
		{"relay.example.com", true, dashboard.SecureCookieName, true},
	} {
		req := httptest.NewRequest(http.MethodPost, "/app/signin", strings.NewReader(url.Values{"email": {aliceEmail}, "password": {password}}.Encode()))
		req.Host = tc.host
		scheme := "http://"
		if tc.tls {
			req.TLS = &tls.ConnectionState{}
			scheme = "https://"
		}
		req.Header.Set("Origin", scheme+tc.host)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, req)
		require.Equal(t, http.StatusSeeOther, w.Code, tc.host)
		cs := w.Result().Cookies()
		require.Len(t, cs, 1)
		require.Equal(t, tc.name, cs[0].Name, tc.host)
		require.Equal(t, tc.wantSecure, cs[0].Secure, tc.host)
		require.True(t, cs[0].HttpOnly)
		require.Equal(t, http.SameSiteLaxMode, cs[0].SameSite)
	}
}

// Every answer carries the CSP and the other headers; the assets are
// cached for long under their content's hash.
func TestHeaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cookie, _ := e.signIn(aliceEmail)
	home := e.do(http.MethodGet, "/app", cookie, nil)
	assets := regexp.MustCompile(`/app/assets/app\.(?:js|css)\?v=[0-9a-f]{12}`).FindAllString(home.Body, -1)
	require.Len(t, assets, 2, home.Body)
	for _, path := range append([]string{"/", "/app", "/app/signin", "/app/signup", "/app/reset", "/app/tokens", "/app/pair",
		"/app/activity", "/app/status"}, assets...) {
		for _, c := range []string{"", cookie} {
			r := e.do(http.MethodGet, path, c, nil)
			h := r.Header
			require.Equal(t, "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "+
				"form-action 'self'; frame-ancestors 'none'; base-uri 'none'", h.Get("Content-Security-Policy"), path)
			require.Equal(t, "nosniff", h.Get("X-Content-Type-Options"), path)
			require.Equal(t, "same-origin", h.Get("Referrer-Policy"), path)
			if strings.HasPrefix(path, "/app/assets/") {
				require.Equal(t, http.StatusOK, r.StatusCode)
				require.Equal(t, "public, max-age=31536000, immutable", h.Get("Cache-Control"))
			} else {
				require.Equal(t, "no-store", h.Get("Cache-Control"), path)
			}
		}
	}
	// No inline script or style in any page.
	for _, path := range []string{"/app", "/app/tokens", "/app/pair", "/app/activity"} {
		b := e.do(http.MethodGet, path, cookie, nil).Body
		require.NotRegexp(t, `<script(?:\s[^>]*)?>[^<]`, b, path)
		require.NotContains(t, b, "<style", path)
		require.NotContains(t, b, " style=", path)
		require.NotContains(t, b, " onclick=", path)
	}
}

// One user's tokens are never another's: another user's token id is 404,
// as a missing one.
func TestTokensAreTheUsersOwn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice, aliceCSRF := e.signIn(aliceEmail)
	bob, bobCSRF := e.signIn(bobEmail)

	r := e.post("/app/tokens", alice, url.Values{"name": {"my bot"}, "profile": {"compatible"}, "csrf": {aliceCSRF}})
	require.Equal(t, http.StatusOK, r.StatusCode)
	shown := regexp.MustCompile(`<code id="new-token-value">(tb_api_[A-Za-z0-9_-]+)</code>`).FindStringSubmatch(r.Body)
	require.Len(t, shown, 2, "the new token is shown once, with a Copy button")
	require.Contains(t, r.Body, `id="new-token"`)
	require.Contains(t, r.Body, `data-copy="#new-token-value"`)
	id := e.tokens.tokens[aliceID][0].info.ID
	require.Contains(t, r.Body, `data-token-id="`+id+`"`)
	// Shown once: the list does not show it again.
	require.NotContains(t, e.do(http.MethodGet, "/app/tokens", alice, nil).Body, shown[1])

	require.NotContains(t, e.do(http.MethodGet, "/app/tokens", bob, nil).Body, id)
	for _, tid := range []string{id, "0123456789ab", "not-an-id"} {
		r = e.post("/app/tokens/"+tid+"/revoke", bob, url.Values{"csrf": {bobCSRF}})
		require.Equal(t, http.StatusNotFound, r.StatusCode, tid)
	}
	require.Empty(t, e.tokens.tokens[aliceID][0].info.RevokedAt)

	r = e.post("/app/tokens/"+id+"/revoke", alice, url.Values{"csrf": {aliceCSRF}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	require.NotEmpty(t, e.tokens.tokens[aliceID][0].info.RevokedAt)

	for _, tc := range []struct{ name, profile string }{
		{"", "standard"},
		{strings.Repeat("n", 65), "standard"},
		{"tab\there", "standard"},
		{"ok", "fancy"},
	} {
		r = e.post("/app/tokens", alice, url.Values{"name": {tc.name}, "profile": {tc.profile}, "csrf": {aliceCSRF}})
		require.Equal(t, http.StatusBadRequest, r.StatusCode, tc.name)
		require.Contains(t, r.Body, `id="form-error" role="alert"`)
	}
	require.Len(t, e.tokens.tokens[aliceID], 1)
}

// The new-token form's scope: trade when the form sends none, read when
// chosen, anything else refused with the form refilled; the list shows
// each token's scope.
func TestTokenScopeForm(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice, csrf := e.signIn(aliceEmail)
	form := e.do(http.MethodGet, "/app/tokens", alice, nil).Body
	require.Regexp(t, `<select id="token-scope" name="scope">\s*<option value="trade" selected>Trade \(read and place orders\)</option>\s*<option value="read">Read only</option>`, form)

	for _, tc := range []struct {
		name, scope string
		want        auth.Scope
	}{{"default", "", auth.ScopeTrade}, {"trader", "trade", auth.ScopeTrade}, {"assistant", "read", auth.ScopeRead}} {
		r := e.post("/app/tokens", alice, url.Values{"name": {tc.name}, "scope": {tc.scope}, "csrf": {csrf}})
		require.Equal(t, http.StatusOK, r.StatusCode, tc.name)
		ts := e.tokens.tokens[aliceID]
		require.Equal(t, tc.want, ts[len(ts)-1].info.Scope, tc.name)
		require.Regexp(t, `data-token-id="`+ts[len(ts)-1].info.ID+`">\s*<td>`+tc.name+`</td><td>api</td><td>standard</td><td class="scope">`+string(tc.want)+`</td>`, r.Body)
	}
	r := e.post("/app/tokens", alice, url.Values{"name": {"admin"}, "scope": {"admin"}, "csrf": {csrf}})
	require.Equal(t, http.StatusBadRequest, r.StatusCode)
	require.Contains(t, r.Body, "The scope is trade or read.")
	require.Len(t, e.tokens.tokens[aliceID], 3, "the refused form made no token")
	r = e.post("/app/tokens", alice, url.Values{"name": {""}, "scope": {"read"}, "csrf": {csrf}})
	require.Equal(t, http.StatusBadRequest, r.StatusCode)
	require.Contains(t, r.Body, `<option value="read" selected>Read only</option>`, "a refused form keeps the scope chosen")
}

// A value the user supplied is shown as text, never as markup.
func TestMarkupIsText(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice, csrf := e.signIn(aliceEmail)
	// A token's name, in the list.
	r := e.post("/app/tokens", alice, url.Values{"name": {`<script>alert("x")</script>`}, "csrf": {csrf}})
	require.Equal(t, http.StatusOK, r.StatusCode)
	list := e.do(http.MethodGet, "/app/tokens", alice, nil).Body
	require.NotContains(t, list, `<script>alert`)
	require.Contains(t, list, `&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;`)
	// A refused name is shown again in the form, escaped.
	r = e.post("/app/tokens", alice, url.Values{"name": {"<script>alert(1)</script>"}, "profile": {"fancy"}, "csrf": {csrf}})
	require.Equal(t, http.StatusBadRequest, r.StatusCode)
	require.NotContains(t, r.Body, "<script>alert(1)</script>")
	require.Contains(t, r.Body, "&lt;script&gt;alert(1)&lt;/script&gt;")
	// An activity entry's summary, as an agent wrote it.
	b := e.do(http.MethodGet, "/app/activity", alice, nil).Body
	require.NotContains(t, b, "<b>x</b>")
	require.Contains(t, b, "&lt;b&gt;x&lt;/b&gt;")
}

// The home page shows the agent, its accounts, positions, working orders
// and history; the status section alone is what the script fetches.
func TestHome(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice, _ := e.signIn(aliceEmail)
	for _, path := range []string{"/app", "/app/status"} {
		b := e.do(http.MethodGet, path, alice, nil).Body
		require.Contains(t, b, `id="agent-status" data-state="online"`, path)
		require.Contains(t, b, `<dd id="agent-platform">Simulator</dd>`, path)
		require.Contains(t, b, `<dd id="agent-version">1.2.3</dd>`, path)
		require.Contains(t, b, `<dd id="agent-rtt">12 ms</dd>`, path)
		require.Contains(t, b, `<dd id="agent-last-disconnect">connection_lost</dd>`, path)
		require.Regexp(t, `<tr data-account="Sim101">.*<td class="cash num" data-label="Cash">100000.00</td><td class="realized num" data-label="Realized">12.50</td><td class="unrealized num" data-label="Unrealized">-3.25</td>`, b)
		require.Contains(t, b, `data-account="Sim101" data-instrument="ES 12-26"`)
		require.Contains(t, b, `data-order-id="ord-1"`)
		require.NotContains(t, b, `data-order-id="ord-2"`, "a filled order is not working")
		require.Contains(t, b, `<table id="history" class="stacked">`)
	}
	home := e.do(http.MethodGet, "/app", alice, nil).Body
	require.Contains(t, home, `<button id="kill-switch" type="submit" data-state="off"`)
	require.NotContains(t, e.do(http.MethodGet, "/app/status", alice, nil).Body, "<html")

	bob, _ := e.signIn(bobEmail)
	b := e.do(http.MethodGet, "/app", bob, nil).Body
	require.Contains(t, b, `id="agent-status" data-state="offline"`)
	require.Contains(t, b, `<dd id="agent-since">2026-11-27 10:00:00 UTC</dd>`)
}

// The kill switch runs the Management API's route with the session's
// user and the dashboard as its source, and answers a fetch in JSON.
func TestKillSwitch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice, aliceCSRF := e.signIn(aliceEmail)
	bob, bobCSRF := e.signIn(bobEmail)

	r := e.post("/app/kill-switch", alice, url.Values{"enabled": {"true"}, "csrf": {aliceCSRF}}, "Accept", "application/json")
	require.Equal(t, http.StatusOK, r.StatusCode, r.Body)
	var ans struct {
		Success    bool
		KillSwitch bool
		Applied    bool
		Data       struct{ KillSwitch, Applied bool }
	}
	require.NoError(t, json.Unmarshal([]byte(r.Body), &ans))
	require.True(t, ans.KillSwitch)
	require.True(t, ans.Applied)
	require.Equal(t, ans.KillSwitch, ans.Data.KillSwitch)
	puts := e.manage.puts()
	require.Len(t, puts, 1)
	require.Equal(t, "controls/kill-switch", puts[0].Path)
	require.Equal(t, aliceID, puts[0].P.UserID)
	require.Equal(t, protocol.SourceDashboard, puts[0].Src.Kind)
	require.Regexp(t, `^[0-9a-f]{12}$`, puts[0].Src.ID, "the session's id, never its secret")
	require.JSONEq(t, `{"enabled":true,"flattenOnKill":true}`, puts[0].Body, "turning it on flattens")
	require.Contains(t, e.do(http.MethodGet, "/app", alice, nil).Body, `data-state="on"`)

	// Bob's PC is off: recorded, not applied.
	r = e.post("/app/kill-switch", bob, url.Values{"enabled": {"true"}, "csrf": {bobCSRF}}, "Accept", "application/json")
	require.Equal(t, http.StatusOK, r.StatusCode)
	require.NoError(t, json.Unmarshal([]byte(r.Body), &ans))
	require.True(t, ans.KillSwitch)
	require.False(t, ans.Applied)

	// Without script: 303 back to the page.
	r = e.post("/app/kill-switch", alice, url.Values{"enabled": {"false"}, "csrf": {aliceCSRF}}, "Referer", e.url+"/app/tokens")
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	require.Equal(t, "/app/tokens", r.Header.Get("Location"))
	r = e.post("/app/kill-switch", alice, url.Values{"enabled": {"maybe"}, "csrf": {aliceCSRF}})
	require.Equal(t, http.StatusBadRequest, r.StatusCode)
}

// "Add a PC" mints a code for the session's user and shows the command.
func TestPair(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice, csrf := e.signIn(aliceEmail)
	r := e.post("/app/pair", alice, url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusOK, r.StatusCode)
	m := regexp.MustCompile(`<output id="pair-code">([A-Z0-9]{4}-[A-Z0-9]{4})</output>`).FindStringSubmatch(r.Body)
	require.Len(t, m, 2, r.Body)
	require.Contains(t, r.Body, `<code id="pair-command">agent pair `+m[1]+` --relay `+e.url+`</code>`)
	require.Len(t, e.pairing.codes, 1)
	require.Equal(t, aliceID, e.pairing.codes[0].UserID)
}

// The activity page takes the route's filters and pages.
func TestActivityPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice, _ := e.signIn(aliceEmail)
	b := e.do(http.MethodGet, "/app/activity", alice, nil).Body
	require.Equal(t, 3, strings.Count(b, `<li data-kind=`))
	require.Contains(t, b, `data-live="on"`)
	b = e.do(http.MethodGet, "/app/activity?kind=order.placed&account=", alice, nil).Body
	require.Equal(t, 2, strings.Count(b, `<li data-kind="order.placed">`))
	b = e.do(http.MethodGet, "/app/activity?account=Sim102", alice, nil).Body
	require.Equal(t, 1, strings.Count(b, `<li data-kind=`))
	b = e.do(http.MethodGet, "/app/activity?limit=1", alice, nil).Body
	require.Contains(t, b, `href="/app/activity?before=act_3"`)
	b = e.do(http.MethodGet, "/app/activity?before=act_3", alice, nil).Body
	require.Equal(t, 2, strings.Count(b, `<li data-kind=`))
	require.Contains(t, b, `data-live="off"`)
	r := e.do(http.MethodGet, "/app/activity?kind=nonsense", alice, nil)
	require.Equal(t, http.StatusBadRequest, r.StatusCode)
	require.Contains(t, r.Body, `id="form-error"`)

	bob, _ := e.signIn(bobEmail)
	require.Contains(t, e.do(http.MethodGet, "/app/activity", bob, nil).Body, "Nothing yet.")
}

// Sign-up is open or closed; signing out ends the session.
func TestSignUpAndOut(t *testing.T) {
	t.Parallel()
	closed := newEnv(t, func(o *dashboard.Options) { o.Signup = account.SignupClosed })
	require.Equal(t, http.StatusNotFound, closed.do(http.MethodGet, "/app/signup", "", nil).StatusCode)
	r := closed.post("/app/signup", "", url.Values{"email": {"carol@example.com"}, "password": {password}})
	require.Equal(t, http.StatusNotFound, r.StatusCode)
	require.NotContains(t, closed.do(http.MethodGet, "/app/signin", "", nil).Body, `href="/app/signup"`)

	e := newEnv(t)
	require.Contains(t, e.do(http.MethodGet, "/app/signin", "", nil).Body, `href="/app/signup"`)
	r = e.post("/app/signup", "", url.Values{"email": {aliceEmail}, "password": {password}})
	require.Equal(t, http.StatusConflict, r.StatusCode)
	r = e.post("/app/signup", "", url.Values{"email": {"carol@example.com"}, "password": {"short"}})
	require.Equal(t, http.StatusBadRequest, r.StatusCode)
	r = e.post("/app/signup", "", url.Values{"email": {"carol@example.com"}, "password": {password}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	carol := sessionCookie(r).Value
	require.Equal(t, http.StatusOK, e.do(http.MethodGet, "/app", carol, nil).StatusCode)

	r = e.post("/app/signout", carol, url.Values{"csrf": {account.CSRFToken(carol)}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	require.Equal(t, "/app/signin", r.Header.Get("Location"))
	require.Equal(t, -1, sessionCookie(r).MaxAge)
	require.Equal(t, http.StatusSeeOther, e.do(http.MethodGet, "/app", carol, nil).StatusCode)

	a1, _ := e.signIn(aliceEmail)
	a2, csrf2 := e.signIn(aliceEmail)
	r = e.post("/app/signout-everywhere", a2, url.Values{"csrf": {csrf2}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	require.Equal(t, http.StatusSeeOther, e.do(http.MethodGet, "/app", a1, nil).StatusCode)
}

// Password reset: by email when the relay sends mail (the same page
// whatever the email), else the operator.
func TestReset(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	require.Contains(t, e.do(http.MethodGet, "/app/reset", "", nil).Body, "relay users password")

	m := newEnv(t, func(o *dashboard.Options) { o.EmailReset = true })
	require.Contains(t, m.do(http.MethodGet, "/app/reset", "", nil).Body, `name="email"`)
	known := m.post("/app/reset", "", url.Values{"email": {aliceEmail}})
	unknown := m.post("/app/reset", "", url.Values{"email": {"nobody@example.com"}})
	require.Equal(t, http.StatusOK, known.StatusCode)
	require.Equal(t, known.Body, unknown.Body)
	require.Equal(t, []string{aliceEmail + " " + m.url + "/app/reset/", "nobody@example.com " + m.url + "/app/reset/"}, m.accounts.resets)

	r := m.post("/app/reset/bad-link", "", url.Values{"password": {password}})
	require.Equal(t, http.StatusBadRequest, r.StatusCode)
	r = m.post("/app/reset/good-reset", "", url.Values{"password": {password}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	require.NotNil(t, sessionCookie(r))
}
