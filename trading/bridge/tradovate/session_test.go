package tradovate_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

const lifetime = 80 * time.Minute

// requireUnavailable checks that err is the *bridge.UnavailableError of a
// code, matching ErrNotConnected.
func requireUnavailable(t *testing.T, err error, code string) {
	t.Helper()
	require.ErrorIs(t, err, bridge.ErrNotConnected)
	var ue *bridge.UnavailableError
	require.ErrorAs(t, err, &ue)
	require.Equal(t, code, ue.Code)
	require.NotEmpty(t, ue.Reason)
}

func TestLogin(t *testing.T) {
	t.Parallel()
	b, c := newBroker(t), newClock()
	b.handle("/auth/accesstokenrequest", tokenAnswer(t, "accesstokenrequest_ok.json", func() time.Time { return c.Now().Add(lifetime) }))
	var got []tradovate.Token
	s := session(t, b, c, func(o *tradovate.SessionOptions) { o.OnToken = func(tok tradovate.Token) { got = append(got, tok) } })

	tok, err := s.Token(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "tok-demo-1", tok.AccessToken)
	assert.Equal(t, "md-tok-demo-1", tok.MDAccessToken)
	assert.Equal(t, int64(2441), tok.UserID)
	assert.Equal(t, c.Now().Add(lifetime), tok.Expires)
	assert.Equal(t, []tradovate.Token{tok}, got, "OnToken hears of the login")

	reqs := b.requestsTo("/auth/accesstokenrequest")
	require.Len(t, reqs, 1)
	assert.Equal(t, map[string]any{"name": "demo-trader", "password": "s3cret-pass", "appId": "tradebridge",
		"appVersion": "1.0", "cid": 77.0, "sec": "api-secret-x"}, reqs[0].Body)

	again, err := s.Token(t.Context())
	require.NoError(t, err)
	assert.Equal(t, tok, again)
	assert.Len(t, b.requestsTo("/auth/accesstokenrequest"), 1, "no second login while the token is valid")
	st := s.Status()
	assert.Equal(t, tradovate.StateOK, st.State)
	assert.Equal(t, 1, st.Logins)
	assert.Equal(t, tok.Expires, st.Expires)
}

func TestSavedTokenIsUsedWithoutLogin(t *testing.T) {
	t.Parallel()
	b, c := newBroker(t), newClock()
	b.handle("/account/list", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(recordedRaw(t, "account_list.json")) })
	saved := tradovate.Token{AccessToken: "saved-tok", MDAccessToken: "saved-md", Expires: c.Now().Add(time.Hour), UserID: 2441}
	s := session(t, b, c, func(o *tradovate.SessionOptions) { o.Token = saved })

	var accounts []tradovatewire.Account
	require.NoError(t, s.Do(t.Context(), http.MethodGet, "/account/list", "", nil, &accounts))
	require.Len(t, accounts, 1)
	assert.Equal(t, "DEMO700101", accounts[0].Name)
	assert.Empty(t, b.requestsTo("/auth/accesstokenrequest"))
	assert.Equal(t, "Bearer saved-tok", b.requestsTo("/account/list")[0].Auth)

	// An expired saved token is not used: the session logs in.
	b2 := newBroker(t)
	b2.handle("/auth/accesstokenrequest", tokenAnswer(t, "accesstokenrequest_ok.json", func() time.Time { return c.Now().Add(lifetime) }))
	saved.Expires = c.Now()
	s2 := session(t, b2, c, func(o *tradovate.SessionOptions) { o.Token = saved })
	tok, err := s2.Token(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "tok-demo-1", tok.AccessToken)
}

func TestLoginRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, errorText, kind string
	}{
		{"bad password", "Incorrect username or password. Please try again.", "credentials"},
		{"bad key", "The app is not registered (cid/sec).", "api_key"},
		{"other", "Something odd happened to demo-trader.", "refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, c := newBroker(t), newClock()
			b.handle("/auth/accesstokenrequest", func(w http.ResponseWriter, _ *http.Request) {
				writeJSON(w, map[string]string{"errorText": tt.errorText})
			})
			s := session(t, b, c, nil)
			_, err := s.Token(t.Context())
			var le *tradovate.LoginError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, tt.kind, le.Kind)
			requireUnavailable(t, err, tradovate.CodeLoginFailed)
			assert.NotContains(t, err.Error(), tt.errorText, "the broker's text is never passed on")
			assert.NotContains(t, err.Error(), "demo-trader")
			assert.Equal(t, tradovate.StateLoginFailed, s.Status().State)

			_, err = s.Token(t.Context())
			require.ErrorAs(t, err, &le)
			assert.Len(t, b.requestsTo("/auth/accesstokenrequest"), 1, "a refused login is not tried again")
		})
	}
	// The recorded shape decodes as a refusal.
	var res tradovatewire.AccessTokenResponse
	raw := recordedRaw(t, "accesstokenrequest_error.json")
	require.NoError(t, json.Unmarshal(raw, &res))
	assert.NotEmpty(t, res.ErrorText)
	assert.Empty(t, res.AccessToken)
}

func TestRenewalBeforeExpiry(t *testing.T) {
	t.Parallel()
	b, c := newBroker(t), newClock()
	b.handle("/auth/renewaccesstoken", tokenAnswer(t, "renewaccesstoken_ok.json", func() time.Time { return c.Now().Add(lifetime) }))
	var mu sync.Mutex
	var got []tradovate.Token
	start := c.Now()
	s := session(t, b, c, func(o *tradovate.SessionOptions) {
		o.Token = tradovate.Token{AccessToken: "saved-tok", MDAccessToken: "saved-md", Expires: start.Add(lifetime), UserID: 2441}
		o.OnToken = func(tok tradovate.Token) { mu.Lock(); got = append(got, tok); mu.Unlock() }
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	c.AwaitWaiters(t, 1)
	c.Advance(lifetime - tradovate.DefaultRenewBefore - time.Minute)
	c.AwaitWaiters(t, 1)
	assert.Empty(t, b.requestsTo("/auth/renewaccesstoken"), "not renewed before RenewBefore")

	c.Advance(time.Minute) // RenewBefore ahead of expiry
	require.Eventually(t, func() bool { return s.Status().Renewals == 1 }, testkit.Medium, time.Millisecond)
	renew := b.requestsTo("/auth/renewaccesstoken")
	require.Len(t, renew, 1)
	assert.Equal(t, "Bearer saved-tok", renew[0].Auth)
	assert.Empty(t, b.requestsTo("/auth/accesstokenrequest"), "a renewal is never a new login")
	mu.Lock()
	require.Len(t, got, 1)
	assert.Equal(t, "tok-demo-2", got[0].AccessToken)
	assert.Equal(t, c.Now().Add(lifetime), got[0].Expires)
	assert.Equal(t, int64(2441), got[0].UserID)
	mu.Unlock()
	tok, err := s.Token(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "tok-demo-2", tok.AccessToken)

	// The next renewal comes RenewBefore ahead of the new expiry.
	c.AwaitWaiters(t, 1)
	c.Advance(lifetime - tradovate.DefaultRenewBefore)
	require.Eventually(t, func() bool { return s.Status().Renewals == 2 }, testkit.Medium, time.Millisecond)
	assert.Empty(t, b.requestsTo("/auth/accesstokenrequest"))
}

func TestRenewalRefusedLogsInAgain(t *testing.T) {
	t.Parallel()
	b, c := newBroker(t), newClock()
	b.handle("/auth/renewaccesstoken", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) })
	b.handle("/auth/accesstokenrequest", tokenAnswer(t, "accesstokenrequest_ok.json", func() time.Time { return c.Now().Add(lifetime) }))
	s := session(t, b, c, func(o *tradovate.SessionOptions) {
		o.Token = tradovate.Token{AccessToken: "saved-tok", Expires: c.Now().Add(10 * time.Minute), UserID: 2441}
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, func() bool { return s.Status().Logins == 1 }, testkit.Medium, time.Millisecond)
	assert.Len(t, b.requestsTo("/auth/renewaccesstoken"), 1)

	// Without credentials (an OAuth link) a refused renewal ends the
	// session until it is linked again.
	b2 := newBroker(t)
	b2.handle("/auth/renewaccesstoken", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) })
	s2 := session(t, b2, c, func(o *tradovate.SessionOptions) {
		o.Credentials = nil
		o.Token = tradovate.Token{AccessToken: "oauth-tok", Expires: c.Now().Add(10 * time.Minute), UserID: 2441}
	})
	ctx2, cancel2 := context.WithCancel(t.Context())
	done2 := make(chan struct{})
	go func() { defer close(done2); _ = s2.Run(ctx2) }()
	t.Cleanup(func() { cancel2(); <-done2 })
	require.Eventually(t, func() bool { return s2.Status().State == tradovate.StateLoginFailed }, testkit.Medium, time.Millisecond)
	_, err := s2.Token(t.Context())
	requireUnavailable(t, err, tradovate.CodeLoginFailed)
}

func TestPenaltyTicket(t *testing.T) {
	t.Parallel()
	b, c := newBroker(t), newClock()
	var calls atomic.Int32
	ok := tokenAnswer(t, "accesstokenrequest_ok.json", func() time.Time { return c.Now().Add(lifetime) })
	b.handle("/auth/accesstokenrequest", func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			writeJSON(w, recorded(t, "accesstokenrequest_pticket.json"))
			return
		}
		ok(w, r)
	})
	s := session(t, b, c, nil)
	type result struct {
		tok tradovate.Token
		err error
	}
	res := make(chan result, 1)
	go func() { tok, err := s.Token(context.Background()); res <- result{tok, err} }()

	c.AwaitWaiters(t, 1) // waiting p-time
	assert.Len(t, b.requestsTo("/auth/accesstokenrequest"), 1, "nothing resent before p-time")
	c.Advance(14 * time.Second)
	assert.Len(t, b.requestsTo("/auth/accesstokenrequest"), 1)
	c.Advance(time.Second)
	r := <-res
	require.NoError(t, r.err)
	assert.Equal(t, "tok-demo-1", r.tok.AccessToken)
	reqs := b.requestsTo("/auth/accesstokenrequest")
	require.Len(t, reqs, 2)
	assert.NotContains(t, reqs[0].Body, "p-ticket")
	assert.Equal(t, "9d4f0b6c2a1e", reqs[1].Body["p-ticket"], "resent with the ticket")
	assert.Equal(t, "demo-trader", reqs[1].Body["name"], "the same body")
}

func TestCaptchaStops(t *testing.T) {
	t.Parallel()
	b, c := newBroker(t), newClock()
	b.handle("/auth/accesstokenrequest", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, recorded(t, "accesstokenrequest_captcha.json"))
	})
	s := session(t, b, c, nil)
	_, err := s.Token(t.Context())
	requireUnavailable(t, err, tradovate.CodeCaptchaRequired)
	assert.Equal(t, tradovate.StateCaptchaRequired, s.Status().State)
	err = s.Do(t.Context(), http.MethodGet, "/account/list", "", nil, nil)
	requireUnavailable(t, err, tradovate.CodeCaptchaRequired)
	assert.Len(t, b.requestsTo("/auth/accesstokenrequest"), 1, "never loops on a captcha")
	assert.Zero(t, c.Waiters(), "no p-time wait")
}

func TestRateLimitedForAnHour(t *testing.T) {
	t.Parallel()
	b, c := newBroker(t), newClock()
	var limited atomic.Bool
	limited.Store(true)
	b.handle("/account/list", func(w http.ResponseWriter, _ *http.Request) {
		if limited.Load() {
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		_, _ = w.Write(recordedRaw(t, "account_list.json"))
	})
	s := session(t, b, c, func(o *tradovate.SessionOptions) {
		o.Token = tradovate.Token{AccessToken: "saved-tok", Expires: c.Now().Add(3 * time.Hour), UserID: 2441}
	})
	err := s.Do(t.Context(), http.MethodGet, "/account/list", "", nil, nil)
	requireUnavailable(t, err, tradovate.CodeRateLimited)
	st := s.Status()
	assert.Equal(t, tradovate.StateRateLimited, st.State)
	assert.Equal(t, c.Now().Add(time.Hour), st.Until)
	limited.Store(false)

	for _, wait := range []time.Duration{0, 30 * time.Minute, 29*time.Minute + 59*time.Second} {
		c.Advance(wait)
		err = s.Do(t.Context(), http.MethodGet, "/account/list", "", nil, nil)
		requireUnavailable(t, err, tradovate.CodeRateLimited)
		assert.Len(t, b.requestsTo("/account/list"), 1, "no request during the hour")
	}
	c.Advance(time.Second)
	require.NoError(t, s.Do(t.Context(), http.MethodGet, "/account/list", "", nil, nil))
	assert.Len(t, b.requestsTo("/account/list"), 2)
	assert.Equal(t, tradovate.StateOK, s.Status().State)
}

func TestPacerSharesOneBudget(t *testing.T) {
	t.Parallel()
	b, c := newBroker(t), newClock()
	b.handle("/account/list", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(recordedRaw(t, "account_list.json")) })
	s := session(t, b, c, func(o *tradovate.SessionOptions) {
		o.Token = tradovate.Token{AccessToken: "saved-tok", Expires: c.Now().Add(3 * time.Hour), UserID: 2441}
		o.Rate, o.Burst = 2, 3
	})
	const callers = 7
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.Do(context.Background(), http.MethodGet, "/account/list", "", nil, nil)
		}()
	}
	c.AwaitWaiters(t, callers-3) // the rest waits for the clock
	require.Eventually(t, func() bool { return len(b.requestsTo("/account/list")) == 3 }, testkit.Medium, time.Millisecond,
		"the burst passes")
	c.Advance(time.Second) // two more tokens
	require.Eventually(t, func() bool { return len(b.requestsTo("/account/list")) == 5 }, testkit.Medium, time.Millisecond)
	c.Advance(time.Second)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Len(t, b.requestsTo("/account/list"), callers)
}

// The hourly budget holds a busy login under the broker's hourly limit:
// once its burst (a sixth of PerHour) is spent, requests come at
// PerHour/3600 a second, however roomy the short budget.
func TestPacerHourlyBudget(t *testing.T) {
	t.Parallel()
	b, c := newBroker(t), newClock()
	b.handle("/account/list", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(recordedRaw(t, "account_list.json")) })
	s := session(t, b, c, func(o *tradovate.SessionOptions) {
		o.Token = tradovate.Token{AccessToken: "saved-tok", Expires: c.Now().Add(3 * time.Hour), UserID: 2441}
		o.Rate, o.Burst, o.PerHour = 1000, 1000, 36 // 6 at once, then one every 100 s
	})
	for range 6 {
		require.NoError(t, s.Do(t.Context(), http.MethodGet, "/account/list", "", nil, nil))
	}
	done := make(chan error, 1)
	go func() { done <- s.Do(context.Background(), http.MethodGet, "/account/list", "", nil, nil) }()
	c.AwaitWaiters(t, 1)
	assert.Len(t, b.requestsTo("/account/list"), 6, "the seventh waits for the hourly budget")
	c.Advance(100 * time.Second)
	require.NoError(t, <-done)
	assert.Len(t, b.requestsTo("/account/list"), 7)
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	b, c := newBroker(t), newClock()
	b.srv.Close()
	s := session(t, b, c, nil)
	_, err := s.Token(t.Context())
	requireUnavailable(t, err, tradovate.CodeBrokerUnreachable)
	assert.NotContains(t, err.Error(), "127.0.0.1", "no addresses in errors")
	assert.Equal(t, tradovate.StateUnreachable, s.Status().State)
}

func TestBrokenExchange(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, method, path string
		handler            http.HandlerFunc
		outcomeUnknown     bool
	}{
		{"order write cut", http.MethodPost, "/order/placeorder", cut, true},
		{"order write 502", http.MethodPost, "/order/placeorder", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
		}, true},
		{"order write garbled", http.MethodPost, "/order/placeorder", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"orderId":`))
		}, true},
		{"read cut", http.MethodGet, "/order/list", cut, false},
		{"read 503", http.MethodGet, "/order/list", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, c := newBroker(t), newClock()
			b.handle(tt.path, tt.handler)
			s := session(t, b, c, func(o *tradovate.SessionOptions) {
				o.Token = tradovate.Token{AccessToken: "saved-tok", Expires: c.Now().Add(time.Hour), UserID: 2441}
			})
			var out tradovatewire.PlaceOrderResponse
			err := s.Do(t.Context(), tt.method, tt.path, "", map[string]any{"accountId": 1}, &out)
			if tt.outcomeUnknown {
				require.ErrorIs(t, err, bridge.ErrOutcomeUnknown)
				assert.False(t, errors.Is(err, bridge.ErrNotConnected))
			} else {
				requireUnavailable(t, err, tradovate.CodeBrokerUnreachable)
			}
			assert.Len(t, b.requestsTo(tt.path), 1, "never resent")
		})
	}
}

func TestUnauthorizedRequestLogsInOnce(t *testing.T) {
	t.Parallel()
	b, c := newBroker(t), newClock()
	b.handle("/auth/accesstokenrequest", tokenAnswer(t, "accesstokenrequest_ok.json", func() time.Time { return c.Now().Add(lifetime) }))
	// A revoked token: its renewal is refused too.
	b.handle("/auth/renewaccesstoken", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) })
	b.handle("/account/list", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok-demo-1" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write(recordedRaw(t, "account_list.json"))
	})
	s := session(t, b, c, func(o *tradovate.SessionOptions) {
		o.Token = tradovate.Token{AccessToken: "revoked-tok", Expires: c.Now().Add(time.Hour), UserID: 2441}
	})
	require.NoError(t, s.Do(t.Context(), http.MethodGet, "/account/list", "", nil, nil))
	assert.Len(t, b.requestsTo("/auth/accesstokenrequest"), 1)
	assert.Len(t, b.requestsTo("/account/list"), 2)
	assert.Len(t, b.requestsTo("/auth/renewaccesstoken"), 1, "renewed first")
}

func TestExchangeOAuthCode(t *testing.T) {
	t.Parallel()
	b, c := newBroker(t), newClock()
	b.handle("/auth/oauthtoken", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, recorded(t, "oauthtoken_ok.json")) })
	b.handle("/auth/me", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, recorded(t, "me_ok.json")) })
	client := tradovate.OAuthClient{ID: "client-1", Secret: "client-secret", RedirectURL: "https://relay.example/cb"}
	tok, err := tradovate.ExchangeOAuthCode(t.Context(), tradovate.OAuthExchange{Env: tradovate.EnvDemo,
		Endpoints: b.endpoints(), Client: client, Code: "code-123", Now: c.Now})
	require.NoError(t, err)
	assert.Equal(t, tradovate.Token{AccessToken: "oauth-tok-1", MDAccessToken: "oauth-tok-1",
		Expires: c.Now().Add(4800 * time.Second), UserID: 2441}, tok)
	req := b.requestsTo("/auth/oauthtoken")[0]
	assert.Equal(t, map[string]any{"grant_type": "authorization_code", "client_id": "client-1",
		"client_secret": "client-secret", "redirect_uri": "https://relay.example/cb", "code": "code-123"}, req.Body)
	assert.Equal(t, "Bearer oauth-tok-1", b.requestsTo("/auth/me")[0].Auth)

	b.handle("/auth/oauthtoken", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, map[string]string{"error": "invalid_grant", "error_description": "code code-bad is unknown"})
	})
	_, err = tradovate.ExchangeOAuthCode(t.Context(), tradovate.OAuthExchange{Env: tradovate.EnvDemo,
		Endpoints: b.endpoints(), Client: client, Code: "code-bad"})
	var le *tradovate.LoginError
	require.ErrorAs(t, err, &le)
	assert.NotContains(t, err.Error(), "code-bad")
}

func TestNewSessionValidates(t *testing.T) {
	t.Parallel()
	good := tradovate.SessionOptions{Env: tradovate.EnvDemo, Endpoints: tradovate.DefaultEndpoints(), Credentials: credentials}
	for name, edit := range map[string]func(*tradovate.SessionOptions){
		"env":       func(o *tradovate.SessionOptions) { o.Env = "paper" },
		"endpoints": func(o *tradovate.SessionOptions) { o.Endpoints.DemoREST = "ftp://x" },
		"no login":  func(o *tradovate.SessionOptions) { o.Credentials = nil },
	} {
		o := good
		edit(&o)
		_, err := tradovate.NewSession(o)
		assert.Error(t, err, name)
	}
	s, err := tradovate.NewSession(good)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	require.Error(t, s.Run(t.Context()), "a closed session does not run")
}

// OnState hears each new state in order, with the refusal that holds
// until the login is linked again: a refused login, a captcha; an OAuth
// session whose token expired stops at login_failed with the oauth
// refusal.
func TestOnState(t *testing.T) {
	t.Parallel()
	type change struct {
		state string
		err   error
	}
	run := func(t *testing.T, answer any, tweak func(*tradovate.SessionOptions)) []change {
		t.Helper()
		b, c := newBroker(t), newClock()
		b.handle("/auth/accesstokenrequest", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, answer) })
		var mu sync.Mutex
		var got []change
		s := session(t, b, c, func(o *tradovate.SessionOptions) {
			o.OnState = func(state string, err error) {
				mu.Lock()
				got = append(got, change{state, err})
				mu.Unlock()
			}
			if tweak != nil {
				tweak(o)
			}
		})
		_, _ = s.Token(t.Context())
		_, _ = s.Token(t.Context())
		mu.Lock()
		defer mu.Unlock()
		return append([]change(nil), got...)
	}

	got := run(t, map[string]string{"errorText": "Incorrect username or password."}, nil)
	require.Len(t, got, 2, "a refused login is heard once")
	assert.Equal(t, tradovate.StateLoggingIn, got[0].state)
	assert.NoError(t, got[0].err)
	assert.Equal(t, tradovate.StateLoginFailed, got[1].state)
	var le *tradovate.LoginError
	require.ErrorAs(t, got[1].err, &le)
	assert.Equal(t, "credentials", le.Kind)

	got = run(t, recorded(t, "accesstokenrequest_captcha.json"), nil)
	require.Len(t, got, 2)
	assert.Equal(t, tradovate.StateCaptchaRequired, got[1].state)
	requireUnavailable(t, got[1].err, tradovate.CodeCaptchaRequired)

	got = run(t, nil, func(o *tradovate.SessionOptions) {
		o.Credentials = nil
		o.Token = tradovate.Token{AccessToken: "expired", Expires: time.Unix(1, 0)}
	})
	require.Len(t, got, 1)
	assert.Equal(t, tradovate.StateLoginFailed, got[0].state)
	require.ErrorAs(t, got[0].err, &le)
	assert.Equal(t, "oauth", le.Kind)
}
