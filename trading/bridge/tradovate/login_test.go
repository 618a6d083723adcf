package tradovate_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/trading/bridge/bridgetest"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/bridge/tradovate"
	"tradebridge/trading/bridge/tradovate/tradovatefake"
	"tradebridge/trading/bridge/tradovate/tradovatetest"
)

// authFake starts a fake Tradovate on the driven clock whose tokens live
// life (the default lifetime when 0).
func authFake(t *testing.T, c *testkit.Clock, life time.Duration) *tradovatefake.Server {
	t.Helper()
	so := sim.Options{}
	bridgetest.UseManualClock(&so)
	market, err := sim.New(so)
	require.NoError(t, err)
	t.Cleanup(func() { _ = market.Close() })
	fake, err := tradovatefake.Start(tradovatefake.Options{Market: market, Now: c.Now, TokenLifetime: life})
	require.NoError(t, err)
	t.Cleanup(func() { _ = fake.Close() })
	return fake
}

// fakeSession is a session of the fake's login on the driven clock.
func fakeSession(t *testing.T, fake *tradovatefake.Server, c *testkit.Clock, edit func(*tradovate.SessionOptions)) *tradovate.Session {
	t.Helper()
	return clockedSession(t, fake.Endpoints(), &tradovate.Credentials{Name: tradovatefake.DefaultName,
		Password: tradovatefake.DefaultPassword, AppID: tradovatefake.DefaultAppID, AppVersion: "1.0",
		CID: tradovatefake.DefaultCID, Sec: tradovatefake.DefaultSec}, c, edit)
}

// runSession runs s until the test ends.
func runSession(t *testing.T, s *tradovate.Session) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// drive advances the clock by step, n times, each time once the session
// waits on it.
func drive(t *testing.T, c *testkit.Clock, step time.Duration, n int) {
	t.Helper()
	for range n {
		c.AwaitWaiters(t, 1)
		c.Advance(step)
	}
}

func TestShortTokensRenewCalmly(t *testing.T) {
	t.Parallel()
	c := newClock()
	fake := authFake(t, c, 5*time.Second)
	s := fakeSession(t, fake, c, nil)
	runSession(t, s)
	require.Eventually(t, func() bool { return s.Status().Logins == 1 }, testkit.Medium, time.Millisecond)

	drive(t, c, 500*time.Millisecond, 30) // 15 s of 5-second tokens
	c.AwaitWaiters(t, 1)
	assert.Equal(t, 1, fake.Logins(), "one login")
	assert.LessOrEqual(t, fake.Renewals(), 6, "renewed about every half life, not as fast as it can")
	assert.GreaterOrEqual(t, fake.Renewals(), 4, "but renewed")
	assert.Zero(t, fake.ExpiredTokenUses(), "never sent an expired token")
	tok, err := s.Token(t.Context())
	require.NoError(t, err)
	assert.True(t, fake.Live(tok.AccessToken))
}

func TestRenewalPenaltyTicketWaitsPTime(t *testing.T) {
	t.Parallel()
	c := newClock()
	fake := authFake(t, c, 0)
	s := fakeSession(t, fake, c, nil)
	runSession(t, s)
	require.Eventually(t, func() bool { return s.Status().Logins == 1 }, testkit.Medium, time.Millisecond)
	fake.PenalizeNext("auth/renewaccesstoken", 1, 2*time.Minute)

	// Up to the renewal, RenewBefore ahead of the expiry.
	c.AwaitWaiters(t, 1)
	c.Advance(tradovatefake.DefaultTokenLifetime - tradovate.DefaultRenewBefore)
	require.Eventually(t, func() bool { return fake.Requests("auth/renewaccesstoken") == 1 }, testkit.Medium, time.Millisecond)
	drive(t, c, 10*time.Second, 11) // 110 s: p-time is not over
	assert.Equal(t, 1, fake.Requests("auth/renewaccesstoken"), "nothing resent before p-time")
	drive(t, c, 10*time.Second, 2)
	require.Eventually(t, func() bool { return s.Status().Renewals == 1 }, testkit.Medium, time.Millisecond)
	assert.Equal(t, 2, fake.Requests("auth/renewaccesstoken"))
	assert.Equal(t, 1, fake.Logins(), "a ticket is no reason to log in again")
	assert.Equal(t, 1, fake.Tickets("auth/renewaccesstoken"))
}

func TestUnauthorizedRequestRenewsFirst(t *testing.T) {
	t.Parallel()
	c := newClock()
	fake := authFake(t, c, 0)
	s := fakeSession(t, fake, c, nil)
	_, err := s.Token(t.Context())
	require.NoError(t, err)
	fake.Unauthorize(1)
	require.NoError(t, s.Do(t.Context(), http.MethodGet, "/account/list", "", nil, nil))
	assert.Equal(t, 1, fake.Logins(), "a 401 on a live token is no reason for a new session")
	assert.Equal(t, 1, fake.Renewals(), "the token is renewed instead")
	assert.Equal(t, 2, fake.Requests("account/list"))

	// A broker that keeps answering 401 gets one more login, never a loop.
	fake.Unauthorize(100)
	err = s.Do(t.Context(), http.MethodGet, "/account/list", "", nil, nil)
	require.Error(t, err)
	err = s.Do(t.Context(), http.MethodGet, "/account/list", "", nil, nil)
	require.Error(t, err)
	assert.LessOrEqual(t, fake.Logins(), 2)
}

func TestRenewalWithoutMDTokenKeepsMDValid(t *testing.T) {
	t.Parallel()
	c := newClock()
	fake := authFake(t, c, 5*time.Second)
	fake.RenewWithoutMD(true)
	s := fakeSession(t, fake, c, nil)
	runSession(t, s)
	require.Eventually(t, func() bool { return s.Status().Logins == 1 }, testkit.Medium, time.Millisecond)
	for range 30 {
		c.AwaitWaiters(t, 1)
		tok, err := s.Token(t.Context())
		require.NoError(t, err)
		require.True(t, fake.Live(tok.MDAccessToken), "the market-data token handed out is live at %s", c.Now())
		c.Advance(500 * time.Millisecond)
	}
	assert.LessOrEqual(t, fake.Logins(), 4, "at most a login per token life")
	assert.Zero(t, fake.ExpiredTokenUses())
}

func TestCaptchaWaitsAndResumes(t *testing.T) {
	t.Parallel()
	c := newClock()
	fake := authFake(t, c, 0)
	fake.Captcha(true)
	var mu sync.Mutex
	var states []string
	s := fakeSession(t, fake, c, func(o *tradovate.SessionOptions) {
		o.OnState = func(state string, _ error) { mu.Lock(); states = append(states, state); mu.Unlock() }
	})
	start := c.Now()
	_, err := s.Token(t.Context())
	requireUnavailable(t, err, tradovate.CodeCaptchaRequired)
	st := s.Status()
	assert.Equal(t, tradovate.StateCaptchaRequired, st.State)
	assert.Equal(t, start.Add(tradovate.CaptchaPause), st.Until, "the link says when it retries")
	_, err = s.Token(t.Context())
	requireUnavailable(t, err, tradovate.CodeCaptchaRequired)
	assert.Equal(t, 1, fake.Requests("auth/accesstokenrequest"), "nothing sent during the wait")

	runSession(t, s)
	drive(t, c, 10*time.Minute, 5)
	assert.Equal(t, 1, fake.Requests("auth/accesstokenrequest"), "nothing sent during the wait")
	fake.Captcha(false) // the human check was passed meanwhile
	c.AwaitWaiters(t, 1)
	c.Advance(10 * time.Minute)
	require.Eventually(t, func() bool { return s.Status().State == tradovate.StateOK }, testkit.Medium, time.Millisecond)
	assert.Equal(t, 1, fake.Logins(), "resumed by itself after the wait")
	mu.Lock()
	assert.Equal(t, []string{tradovate.StateLoggingIn, tradovate.StateCaptchaRequired, tradovate.StateLoggingIn, tradovate.StateOK}, states)
	mu.Unlock()
}

// A refused password still needs the user: the session never retries it.
func TestRefusedPasswordStaysStopped(t *testing.T) {
	t.Parallel()
	c := newClock()
	fake := authFake(t, c, 0)
	s := fakeSession(t, fake, c, func(o *tradovate.SessionOptions) { o.Credentials.Password = "wrong" })
	_, err := s.Token(t.Context())
	var le *tradovate.LoginError
	require.True(t, errors.As(err, &le))
	runSession(t, s)
	drive(t, c, time.Hour, 3)
	assert.Equal(t, 1, fake.Requests("auth/accesstokenrequest"))
	assert.Equal(t, tradovate.StateLoginFailed, s.Status().State)
}

func TestAddressBudgetSpreadsLoginsOfANode(t *testing.T) {
	t.Parallel()
	c := newClock()
	fake := authFake(t, c, 0)
	// One relay node after an outage longer than a token's life: every
	// link logs in at once, from one address.
	budget := tradovate.NewAddressBudget(tradovate.BudgetOptions{Now: c.Now, After: c.After})
	const links = 12
	errs := make(chan error, links)
	for range links {
		s := fakeSession(t, fake, c, func(o *tradovate.SessionOptions) { o.Budget = budget })
		go func() { _, err := s.Token(context.Background()); errs <- err }()
	}
	var mu sync.Mutex
	var got []error
	ended := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }
	for i := 0; ended() < links; i++ {
		require.Less(t, i, 100, "the logins never ended")
		require.Eventually(t, func() bool {
			for {
				select {
				case err := <-errs:
					mu.Lock()
					got = append(got, err)
					mu.Unlock()
					continue
				default:
				}
				// Each link not done waits its turn, none is on the wire.
				return c.Waiters() == links-ended()
			}
		}, testkit.Medium, time.Millisecond)
		if ended() < links {
			c.Advance(5 * time.Second)
		}
	}
	for _, err := range got {
		require.NoError(t, err)
	}
	assert.Equal(t, links, fake.Logins())
	assert.Zero(t, fake.AuthTickets(), "the logins stayed within the broker's authentication limit")
	assert.Equal(t, links, fake.Requests("auth/accesstokenrequest"), "no login sent twice")
}

// A user-data socket whose authorize is refused renews the token; it does
// not log in again (a new session may end the user's other sessions).
func TestSocketRefusalRenewsFirst(t *testing.T) {
	t.Parallel()
	market, err := sim.New(sim.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = market.Close() })
	pr := tradovatetest.NewPair(t, market, tradovatetest.PairOptions{})
	_, err = pr.Session.Token(t.Context())
	require.NoError(t, err)
	pr.Fake.Unauthorize(1)
	pr.Run(t)
	assert.Equal(t, 1, pr.Fake.Logins(), "one login")
	assert.Equal(t, 1, pr.Fake.Renewals(), "the refused token was renewed")
	assert.GreaterOrEqual(t, pr.Fake.Requests("websocket"), 2)
}

// HTTP 423 on a login is the broker's lock-out after failed logins: an
// hour without logins, as a captcha.
func TestLoginLockedWaitsAnHour(t *testing.T) {
	t.Parallel()
	b, c := newBroker(t), newClock()
	b.handle("/auth/accesstokenrequest", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusLocked) })
	s := session(t, b, c, nil)
	_, err := s.Token(t.Context())
	requireUnavailable(t, err, tradovate.CodeCaptchaRequired)
	var ce *tradovate.CaptchaError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, c.Now().Add(tradovate.CaptchaPause), ce.RetryAt)
	_, err = s.Token(t.Context())
	requireUnavailable(t, err, tradovate.CodeCaptchaRequired)
	assert.Len(t, b.requestsTo("/auth/accesstokenrequest"), 1, "nothing sent during the hour")
}

// A penalty ticket answered to one login holds the other logins of the
// node's address budget for its p-time: the broker's tickets are per
// address.
func TestLoginTicketHoldsTheNodesLogins(t *testing.T) {
	t.Parallel()
	c := newClock()
	fake := authFake(t, c, 0)
	budget := tradovate.NewAddressBudget(tradovate.BudgetOptions{Now: c.Now, After: c.After})
	a := fakeSession(t, fake, c, func(o *tradovate.SessionOptions) { o.Budget = budget })
	b := fakeSession(t, fake, c, func(o *tradovate.SessionOptions) { o.Budget = budget })
	fake.PenaltyTicket(1, 30*time.Second)
	errs := make(chan error, 2)
	go func() { _, err := a.Token(context.Background()); errs <- err }()
	c.AwaitWaiters(t, 1) // a waits p-time
	go func() { _, err := b.Token(context.Background()); errs <- err }()
	c.AwaitWaiters(t, 2) // b waits for the held endpoint
	assert.Equal(t, 1, fake.Requests("auth/accesstokenrequest"), "no login during another's p-time")
	c.Advance(30 * time.Second)
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	assert.Equal(t, 2, fake.Logins())
	assert.Equal(t, 1, fake.AuthTickets())
}
