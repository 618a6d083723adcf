package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"tradebridge/trading/bridge/tradovate"
)

// tradovateSessionPlatform is a link's Tradovate platform with its session: Run keeps
// both going, Close stops both.
type tradovateSessionPlatform struct {
	*tradovate.Platform
	sess *tradovate.Session
	once sync.Once
}

// Run keeps the session's token renewed and the platform's sockets up
// until ctx ends.
func (p *tradovateSessionPlatform) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = p.sess.Run(ctx)
	}()
	err := p.Platform.Run(ctx)
	wg.Wait()
	return err
}

// Close closes the platform, then the session.
func (p *tradovateSessionPlatform) Close() error {
	var err error
	p.once.Do(func() {
		err = p.Platform.Close()
		_ = p.sess.Close()
	})
	return err
}

// readyPoll is how often Ready looks at a connecting platform.
const readyPoll = 10 * time.Millisecond

// Ready returns once the platform is connected, or knows why it cannot
// be (the broker unreachable, the login refused, …), or ctx ends: a call
// made while the first connection is under way waits for it rather than
// being refused for being early.
func (p *tradovateSessionPlatform) Ready(ctx context.Context) error {
	for {
		st := p.Platform.Status()
		if st.Connected || (st.Code != tradovate.CodeNotStarted && st.Code != tradovate.CodeConnecting) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(readyPoll):
		}
	}
}

// LinkState tells the login's state for Status.
func (p *tradovateSessionPlatform) LinkState() LinkState {
	st := p.Platform.Status()
	return LinkState{Session: st.Session.State, TokenExpires: st.Session.Expires, RetryAt: st.Session.Until, Connected: st.Connected,
		MarketData: st.MarketData, MarketDataRefused: st.MarketDataRefused}
}

// credentials returns the API-key credentials of s, nil when s holds
// none (an OAuth link).
func credentials(s Secrets) *tradovate.Credentials {
	if s.Username == "" {
		return nil
	}
	return &tradovate.Credentials{Name: s.Username, Password: s.Password, AppID: s.AppID, AppVersion: s.AppVersion,
		CID: s.CID, Sec: s.Sec, DeviceID: s.DeviceID}
}

// tradovatePlatform is Options.NewPlatform's default: a session with the
// link's credentials and saved token, and the platform over it.
func (m *Manager) tradovatePlatform(_ context.Context, c PlatformConfig) (Platform, error) {
	s := c.Link.Secrets
	sess, err := tradovate.NewSession(tradovate.SessionOptions{
		Env: tradovate.Env(c.Link.Env), Endpoints: m.opts.Endpoints, Credentials: credentials(s),
		Token: tradovate.Token{AccessToken: s.AccessToken, MDAccessToken: s.MDAccessToken, Expires: s.Expires, UserID: s.BrokerUserID},
		OnToken: func(t tradovate.Token) {
			ctx, cancel := context.WithTimeout(context.Background(), stateTimeout)
			defer cancel()
			exp := t.Expires
			if !t.MDExpires.IsZero() && t.MDExpires.Before(exp) {
				exp = t.MDExpires // the saved pair is good while both are
			}
			if err := c.SaveSession(ctx, Session{AccessToken: t.AccessToken, MDAccessToken: t.MDAccessToken, Expires: exp, BrokerUserID: t.UserID}); err != nil {
				c.Logger.Warn("keeping the renewed session; a relay restart will log in again", zap.Error(err))
			}
		},
		OnState:    c.OnSessionState,
		HTTPClient: m.opts.HTTPClient, Logger: c.Logger, Rate: m.opts.Rate, Burst: m.opts.Burst, PerHour: m.opts.PerHour,
		Budget: m.opts.AddressBudget,
	})
	if err != nil {
		return nil, err
	}
	p, err := tradovate.New(tradovate.Options{Session: sess, Persist: c.State, Logger: c.Logger, Now: m.opts.Now,
		OnQuotesRefused: c.OnQuotesRefused})
	if err != nil {
		_ = sess.Close()
		return nil, err
	}
	return &tradovateSessionPlatform{Platform: p, sess: sess}, nil
}

// tradovateLogin is Options.Login's default: one login with the
// credentials, whose token the link keeps.
func (m *Manager) tradovateLogin(ctx context.Context, env string, s Secrets) (Session, error) {
	sess, err := tradovate.NewSession(tradovate.SessionOptions{Env: tradovate.Env(env), Endpoints: m.opts.Endpoints,
		Credentials: credentials(s), HTTPClient: m.opts.HTTPClient, Logger: m.log,
		Budget: m.opts.AddressBudget})
	if err != nil {
		return Session{}, err
	}
	defer sess.Close()
	t, err := sess.Token(ctx)
	if err != nil {
		return Session{}, loginError(err)
	}
	return Session{AccessToken: t.AccessToken, MDAccessToken: t.MDAccessToken, Expires: t.Expires, BrokerUserID: t.UserID}, nil
}

// exchangeCode exchanges an OAuth code for the link's session.
func (m *Manager) exchangeCode(ctx context.Context, env, code string) (Session, error) {
	t, err := tradovate.ExchangeOAuthCode(ctx, tradovate.OAuthExchange{Env: tradovate.Env(env), Endpoints: m.opts.Endpoints,
		Client: m.opts.OAuth, Code: code, HTTPClient: m.opts.HTTPClient})
	if err != nil {
		return Session{}, loginError(err)
	}
	return Session{AccessToken: t.AccessToken, MDAccessToken: t.MDAccessToken, Expires: t.Expires, BrokerUserID: t.UserID}, nil
}

// loginError marks refused credentials (or a refused code) as
// ErrLoginRefused, keeping the broker's fixed reason
// (*tradovate.LoginError); a captcha, the broker's rate limit or an
// unreachable broker stay as they are (a *bridge.UnavailableError with
// the reason, or the network's error).
func loginError(err error) error {
	var le *tradovate.LoginError
	if errors.As(err, &le) {
		return fmt.Errorf("%w: %w", ErrLoginRefused, err)
	}
	return err
}
