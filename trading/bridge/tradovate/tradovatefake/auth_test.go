package tradovatefake_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/trading/bridge/tradovate"
	"tradebridge/trading/bridge/tradovate/tradovatefake"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

func TestStartRefusesBadOptions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, tc := range []struct {
		name string
		opts tradovatefake.Options
	}{
		{"no market", tradovatefake.Options{}},
		{"negative lifetime", tradovatefake.Options{Market: f.market, TokenLifetime: -time.Second}},
		{"negative heartbeat", tradovatefake.Options{Market: f.market, Heartbeat: -time.Second}},
		{"negative cid", tradovatefake.Options{Market: f.market, CID: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := tradovatefake.Start(tc.opts)
			require.Error(t, err)
			require.Nil(t, s)
		})
	}
}

func TestLogin(t *testing.T) {
	t.Parallel()
	wrong := credentials()
	wrong.Password = "not-it"
	for _, tc := range []struct {
		name      string
		failFirst int
		req       tradovatewire.AccessTokenRequest
		ok        bool
	}{
		{"the configured credentials", 0, credentials(), true},
		{"a wrong password", 0, wrong, false},
		{"FailLogins refuses good credentials", 1, credentials(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.fake.FailLogins(tc.failFirst)
			var resp tradovatewire.AccessTokenResponse
			require.Equal(t, http.StatusOK, f.call(http.MethodPost, "/auth/accesstokenrequest", "", tc.req, &resp),
				"a refused login is HTTP 200 too")
			if !tc.ok {
				require.Empty(t, resp.AccessToken)
				require.NotEmpty(t, resp.ErrorText)
				require.Zero(t, f.fake.Logins())
				return
			}
			require.NotEmpty(t, resp.AccessToken)
			require.NotEmpty(t, resp.MDAccessToken)
			require.NotEqual(t, resp.AccessToken, resp.MDAccessToken)
			require.Equal(t, tradovatefake.UserID, resp.UserID)
			require.Equal(t, tradovatefake.DefaultName, resp.Name)
			exp, ok := resp.Expires()
			require.True(t, ok, resp.ExpirationTime)
			require.Equal(t, f.auth.Now().Add(tradovatefake.DefaultTokenLifetime), exp)
			require.Equal(t, 1, f.fake.Logins())
		})
	}
}

func TestFailLoginsCountsDown(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.fake.FailLogins(2)
	for range 2 {
		var resp tradovatewire.AccessTokenResponse
		f.call(http.MethodPost, "/auth/accesstokenrequest", "", credentials(), &resp)
		require.NotEmpty(t, resp.ErrorText)
	}
	f.login()
	require.Equal(t, 1, f.fake.Logins())
	require.Equal(t, 3, f.fake.Requests("auth/accesstokenrequest"))
}

func TestPenaltyTicket(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.fake.PenaltyTicket(1, 14500*time.Millisecond)
	var first tradovatewire.AccessTokenResponse
	f.call(http.MethodPost, "/auth/accesstokenrequest", "", credentials(), &first)
	require.NotEmpty(t, first.PTicket)
	require.Equal(t, 15, first.PTime, "whole seconds, rounded up")
	require.False(t, first.PCaptcha)
	require.Empty(t, first.AccessToken)

	// Resent too early: the same ticket, with the time that remains.
	f.auth.Advance(10 * time.Second)
	again := credentials()
	again.PTicket = first.PTicket
	var early tradovatewire.AccessTokenResponse
	f.call(http.MethodPost, "/auth/accesstokenrequest", "", again, &early)
	require.Equal(t, first.PTicket, early.PTicket)
	require.Equal(t, 5, early.PTime)
	require.Empty(t, early.AccessToken)

	f.auth.Advance(5 * time.Second)
	var ok tradovatewire.AccessTokenResponse
	f.call(http.MethodPost, "/auth/accesstokenrequest", "", again, &ok)
	require.NotEmpty(t, ok.AccessToken)
	require.Equal(t, 1, f.fake.Logins())

	// The ticket is good once; the penalty was used up.
	var after tradovatewire.AccessTokenResponse
	f.call(http.MethodPost, "/auth/accesstokenrequest", "", credentials(), &after)
	require.NotEmpty(t, after.AccessToken)
}

func TestCaptcha(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.fake.Captcha(true)
	var first tradovatewire.AccessTokenResponse
	f.call(http.MethodPost, "/auth/accesstokenrequest", "", credentials(), &first)
	require.True(t, first.PCaptcha)
	require.NotEmpty(t, first.PTicket)
	require.Empty(t, first.AccessToken)

	f.auth.Advance(time.Hour)
	again := credentials()
	again.PTicket = first.PTicket
	var second tradovatewire.AccessTokenResponse
	f.call(http.MethodPost, "/auth/accesstokenrequest", "", again, &second)
	require.True(t, second.PCaptcha, "no ticket gets past a captcha")
	require.Empty(t, second.AccessToken)

	f.fake.Captcha(false)
	f.login()
}

func TestRenewal(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	first := f.login()
	f.auth.Advance(60 * time.Minute)
	var renewed tradovatewire.AccessTokenResponse
	require.Equal(t, http.StatusOK, f.call(http.MethodGet, "/auth/renewaccesstoken", first.AccessToken, nil, &renewed))
	require.NotEmpty(t, renewed.AccessToken)
	require.NotEqual(t, first.AccessToken, renewed.AccessToken)
	exp, ok := renewed.Expires()
	require.True(t, ok)
	require.Equal(t, f.auth.Now().Add(tradovatefake.DefaultTokenLifetime), exp)
	require.Equal(t, 1, f.fake.Renewals())
	require.Equal(t, 1, f.fake.Logins(), "a renewal is no login")

	require.Equal(t, http.StatusOK, f.call(http.MethodGet, "/account/list", first.AccessToken, nil, nil),
		"the old token lasts until it expires")
	f.auth.Advance(21 * time.Minute)
	require.Equal(t, http.StatusUnauthorized, f.call(http.MethodGet, "/account/list", first.AccessToken, nil, nil))
	require.Equal(t, http.StatusUnauthorized, f.call(http.MethodGet, "/auth/renewaccesstoken", first.AccessToken, nil, nil))
	require.Equal(t, http.StatusOK, f.call(http.MethodPost, "/auth/renewAccessToken", renewed.AccessToken, nil, nil),
		"POST and any casing are accepted")
	require.Equal(t, 2, f.fake.Renewals())
}

func TestBearerRequired(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	resp := f.login()
	for _, tc := range []struct {
		name, token string
		status      int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"an unknown token", "nope", http.StatusUnauthorized},
		{"the market-data token", resp.MDAccessToken, http.StatusUnauthorized},
		{"the access token", resp.AccessToken, http.StatusOK},
	} {
		status, body := f.raw(http.MethodGet, "/account/list", tc.token, nil)
		require.Equal(t, tc.status, status, tc.name)
		if tc.status == http.StatusUnauthorized {
			require.JSONEq(t, `{"errorText":"Access is denied"}`, string(body), tc.name)
		}
	}
}

func TestMe(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	var me struct {
		UserID int64  `json:"userId"`
		Name   string `json:"name"`
	}
	require.Equal(t, http.StatusOK, f.get("/auth/me", &me))
	require.Equal(t, tradovatefake.UserID, me.UserID)
	require.Equal(t, tradovatefake.DefaultName, me.Name)
}

func TestOAuth(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const redirect = "https://relay.example/oauth/tradovate"
	client := newClient(t)
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	page := func(clientID string) *http.Response {
		q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect}, "state": {"s-1"}}
		resp, err := client.Get(f.fake.OAuthAuthorizeURL() + "?" + q.Encode())
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		return resp
	}
	require.Equal(t, http.StatusBadRequest, page("someone-else").StatusCode)
	resp := page(tradovatefake.DefaultOAuthClientID)
	require.Equal(t, http.StatusFound, resp.StatusCode)
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, "relay.example", loc.Host)
	require.Equal(t, "s-1", loc.Query().Get("state"))
	code := loc.Query().Get("code")
	require.NotEmpty(t, code)

	exchange := tradovatewire.OAuthTokenRequest{GrantType: "authorization_code", ClientID: tradovatefake.DefaultOAuthClientID,
		ClientSecret: tradovatefake.DefaultOAuthClientSecret, RedirectURI: redirect, Code: code}
	for _, tc := range []struct {
		name  string
		edit  func(*tradovatewire.OAuthTokenRequest)
		error string
	}{
		{"a wrong secret", func(r *tradovatewire.OAuthTokenRequest) { r.ClientSecret = "x" }, "invalid_client"},
		{"another redirect_uri", func(r *tradovatewire.OAuthTokenRequest) { r.RedirectURI = "https://evil.example/" }, "invalid_grant"},
		{"another grant", func(r *tradovatewire.OAuthTokenRequest) { r.GrantType = "password" }, "unsupported_grant_type"},
		{"an unknown code", func(r *tradovatewire.OAuthTokenRequest) { r.Code = "made-up" }, "invalid_grant"},
	} {
		req := exchange
		tc.edit(&req)
		var out tradovatewire.OAuthTokenResponse
		require.Equal(t, http.StatusBadRequest, f.call(http.MethodPost, "/auth/oauthtoken", "", req, &out), tc.name)
		require.Equal(t, tc.error, out.Error, tc.name)
		require.Empty(t, out.AccessToken, tc.name)
	}

	var tok tradovatewire.OAuthTokenResponse
	require.Equal(t, http.StatusOK, f.call(http.MethodPost, "/auth/oauthtoken", "", exchange, &tok))
	require.NotEmpty(t, tok.AccessToken)
	require.Equal(t, "Bearer", tok.TokenType)
	require.Equal(t, int(tradovatefake.DefaultTokenLifetime/time.Second), tok.ExpiresIn)
	require.Equal(t, http.StatusOK, f.call(http.MethodGet, "/account/list", tok.AccessToken, nil, nil))

	var again tradovatewire.OAuthTokenResponse
	require.Equal(t, http.StatusBadRequest, f.call(http.MethodPost, "/auth/oauthtoken", "", exchange, &again))
	require.Equal(t, "invalid_grant", again.Error, "a code is good once")

	// IssueCode: a code without the page, for any redirect_uri; the OAuth
	// token opens the market-data socket too.
	exchange.Code, exchange.RedirectURI = f.fake.IssueCode(), "https://other.example/cb"
	require.Equal(t, http.StatusOK, f.call(http.MethodPost, "/auth/oauthtoken", "", exchange, &tok))
	w := f.dial(f.fake.MDURL())
	w.authorize(tok.AccessToken, http.StatusOK)
}

func TestEndpointsPointAtTheFake(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	e := f.fake.Endpoints()
	require.NoError(t, e.Validate())
	for _, env := range []tradovate.Env{tradovate.EnvDemo, tradovate.EnvLive} {
		require.Equal(t, f.fake.RESTURL(), e.REST(env))
		require.Equal(t, f.fake.MDURL(), e.MD(env))
		require.Equal(t, f.fake.UserSocketURL(), e.UserSocket(env), "the user socket is on the REST host")
	}
	require.Equal(t, f.fake.OAuthAuthorizeURL(), e.OAuthAuthorize)
}
