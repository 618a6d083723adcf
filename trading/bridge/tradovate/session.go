package tradovate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"tradebridge/internal/backoff"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// Defaults of SessionOptions.
const (
	// DefaultRenewBefore is how long before its expiry a token is renewed.
	DefaultRenewBefore = 15 * time.Minute
	// DefaultRate and DefaultBurst are the request pacer's budget: 10
	// requests a second, with bursts of 20. The broker allows far more
	// per second, but only 5,000 an hour and a minute; a login that
	// follows several hundred orders and quotes stays well under that,
	// and a runaway caller is slowed long before the broker's one-hour
	// lock-out (HTTP 429) would stop every call of the login.
	DefaultRate  = 10.0
	DefaultBurst = 20
	// DefaultPerHour is the pacer's hourly budget: 3,600 requests an hour
	// (one a second on average, 600 at once), so that at most 4,200 reach
	// the broker in any hour, under its documented 5,000.
	DefaultPerHour = 3600
	// DefaultRequestTimeout bounds one REST exchange.
	DefaultRequestTimeout = 10 * time.Second
	// RateLimitPause is how long the broker refuses requests after an
	// HTTP 429; the session sends nothing meanwhile.
	RateLimitPause = time.Hour
	// CaptchaPause is how long a login the broker asked a captcha of waits
	// before it is tried again (or p-time, when longer): the broker asks
	// clients to stop for an hour; a human may pass the check on
	// Tradovate's site meanwhile.
	CaptchaPause = time.Hour
	// minRenewGap is the first wait after a renewal that did not extend
	// the token's expiry; it doubles up to RenewBefore.
	minRenewGap = time.Minute
	// reviveGap is how long after a 401 the session answers the next 401
	// as it comes, instead of renewing (or logging in) again.
	reviveGap = time.Minute
	// MaxPenaltyTickets bounds how many penalty tickets one request (a
	// login as any other) honours before it gives up.
	MaxPenaltyTickets = 3
	// maxBody bounds a REST answer.
	maxBody = 32 << 20
)

// Session states (Status.State).
const (
	StateOK              = "ok"
	StateLoggingIn       = "logging_in"
	StateCaptchaRequired = "captcha_required"
	StateRateLimited     = "rate_limited"
	StateLoginFailed     = "login_failed"
	StateUnreachable     = "unreachable"
)

// Codes of the *bridge.UnavailableError a session answers while it cannot
// reach the broker.
const (
	CodeBrokerUnreachable = "broker_unreachable"
	CodeCaptchaRequired   = "captcha_required"
	CodeRateLimited       = "rate_limited"
	CodeLoginFailed       = "login_failed"
)

// unavailableReasons are the fixed sentences of the codes.
var unavailableReasons = map[string]string{
	CodeBrokerUnreachable: "Tradovate cannot be reached right now; the relay keeps trying",
	CodeCaptchaRequired: "Tradovate asks for a human check on this login: the relay waits an hour and tries again " +
		"(logging in once on Tradovate's site meanwhile helps)",
	CodeRateLimited: "Tradovate refused requests from this login for an hour because too many were sent; " +
		"the relay sends nothing until the hour is over",
	CodeLoginFailed: "Tradovate refused the linked login; link the account again",
}

func unavailable(code string) *bridge.UnavailableError {
	return &bridge.UnavailableError{Code: code, Reason: unavailableReasons[code]}
}

// Credentials are an API-key login's: the user's name and password and
// the API key (CID and Sec) registered for the application.
type Credentials struct {
	Name, Password    string
	AppID, AppVersion string
	CID               int
	Sec               string
	DeviceID          string
}

// Token is an access token of a login, as the broker issued it. The relay
// keeps it (sealed) so that a restart reuses a token still valid instead
// of logging in again.
type Token struct {
	AccessToken string
	// MDAccessToken authorizes the market-data socket.
	MDAccessToken string
	Expires       time.Time
	// MDExpires is when MDAccessToken expires when it is not Expires (a
	// renewal that brought no market-data token keeps the previous one);
	// zero means Expires.
	MDExpires time.Time
	// UserID is the broker's id of the user.
	UserID int64
}

// validAt reports whether the token, and its market-data token, can
// still be used at now.
func (t Token) validAt(now time.Time) bool {
	return t.AccessToken != "" && now.Before(t.Expires) && (t.MDExpires.IsZero() || now.Before(t.MDExpires))
}

// SessionOptions configures a Session.
type SessionOptions struct {
	Env       Env
	Endpoints Endpoints
	// Credentials, when set, let the session log in (API key). Without
	// them the session lives on Token (an OAuth link) and renews it; once
	// it is lost the login must be linked again.
	Credentials *Credentials
	// Token is a saved token; it is used while it is valid.
	Token Token
	// OnToken is called after every login and renewal with the new token
	// (the relay stores it). It must not call the Session.
	OnToken func(Token)
	// OnState, when set, is called with each new state of the session
	// (Status.State) and, for a refusal that holds until the login is
	// linked again (StateLoginFailed, StateCaptchaRequired), its error (a
	// *LoginError or the captcha's *bridge.UnavailableError); nil
	// otherwise. It is called under the session's lock, in the order of
	// the changes: it must not block nor call the Session.
	OnState func(state string, err error)
	// HTTPClient makes the REST calls and dials the sockets;
	// http.DefaultClient when nil.
	HTTPClient *http.Client
	// Now and After are the session's clock (tests drive them); time.Now
	// and time.After when nil.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
	// RenewBefore is how long before expiry the token is renewed.
	RenewBefore time.Duration
	// RequestTimeout bounds one REST exchange.
	RequestTimeout time.Duration
	// Rate (requests a second) and Burst are the request pacer's budget,
	// shared by every request of the login; PerHour bounds its requests in
	// an hour (a sixth of it may come at once).
	Rate    float64
	Burst   int
	PerHour int
	// Budget, when set, is the request budget of the relay node's
	// outbound address, shared by every session of the node: every REST
	// and socket request of the session also goes through it, and the
	// penalty tickets the broker gives (per address) hold every session's
	// requests of that endpoint. Nil gives the session a budget of its
	// own.
	Budget *AddressBudget
	// Logger logs state changes; never tokens or passwords.
	Logger *zap.Logger
}

// Session is one linked login: its token, kept renewed, and the pacer
// every request of the login goes through. Create it with NewSession; Run
// keeps the token renewed; Close stops it. Its methods are safe for
// concurrent use.
type Session struct {
	opts  SessionOptions
	log   *zap.Logger
	rest  string
	pacer *pacer

	loginMu sync.Mutex // one login at a time

	mu     sync.Mutex
	token  Token
	state  string
	until  time.Time // end of the rate limit, or of a captcha's wait
	sticky error     // why no login will be tried again (refused)
	held   error     // a captcha's *CaptchaError: no login before until
	kick   chan struct{}
	logins int
	renews int

	// obtained is when the token was received (zero for a saved one);
	// renewAfter is when a renewal may be sent again after a ticket or
	// a renewal that did not extend the expiry, renewGap that wait.
	obtained   time.Time
	renewAfter time.Time
	renewGap   time.Duration
	revived    time.Time // the last 401 that led to a renewal

	run bridge.RunGuard // Run's books; its Done is closed by Close
}

// NewSession returns a Session; nothing is sent until a call needs the
// broker or Run starts.
func NewSession(opts SessionOptions) (*Session, error) {
	if !opts.Env.Valid() {
		return nil, errors.New("tradovate: SessionOptions.Env must be demo or live")
	}
	if err := opts.Endpoints.Validate(); err != nil {
		return nil, err
	}
	if opts.Credentials == nil && opts.Token.AccessToken == "" {
		return nil, errors.New("tradovate: a session needs credentials or a token")
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = http.DefaultClient
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.After == nil {
		opts.After = time.After
	}
	if opts.RenewBefore <= 0 {
		opts.RenewBefore = DefaultRenewBefore
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.Rate <= 0 {
		opts.Rate = DefaultRate
	}
	if opts.Burst <= 0 {
		opts.Burst = DefaultBurst
	}
	if opts.PerHour <= 0 {
		opts.PerHour = DefaultPerHour
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Budget == nil {
		opts.Budget = NewAddressBudget(BudgetOptions{Now: opts.Now, After: opts.After})
	}
	s := &Session{
		opts:  opts,
		log:   opts.Logger.Named("tradovate").With(zap.String("env", string(opts.Env))),
		rest:  strings.TrimSuffix(opts.Endpoints.REST(opts.Env), "/"),
		pacer: newPacer(opts.Rate, opts.Burst, opts.PerHour, opts.Now, opts.After),
		token: opts.Token,
		state: StateOK,
		kick:  make(chan struct{}, 1),
	}
	if !s.token.validAt(opts.Now()) {
		s.token = Token{}
	}
	return s, nil
}

// Status is a session's state, for diagnostics and the relay's answers.
type Status struct {
	Env   Env    `json:"env"`
	State string `json:"state"`
	// Until is when a rate limit, or a captcha's wait, ends: the session
	// tries again then by itself.
	Until time.Time `json:"until,omitzero"`
	// Expires is when the current token expires (zero without one).
	Expires time.Time `json:"expires,omitzero"`
	// Logins and Renewals count the session's successful logins and
	// renewals.
	Logins   int `json:"logins"`
	Renewals int `json:"renewals"`
}

// Status returns the session's state.
func (s *Session) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Env: s.opts.Env, State: s.state, Logins: s.logins, Renewals: s.renews}
	if s.state == StateRateLimited || (s.state == StateCaptchaRequired && s.held != nil) {
		st.Until = s.until
	}
	if s.token.AccessToken != "" {
		st.Expires = s.token.Expires
	}
	return st
}

// Env returns the session's environment.
func (s *Session) Env() Env { return s.opts.Env }

// Endpoints returns the session's broker addresses.
func (s *Session) Endpoints() Endpoints { return s.opts.Endpoints }

// HTTPClient returns the client the session calls the broker with.
func (s *Session) HTTPClient() *http.Client { return s.opts.HTTPClient }

// setState records a state, logging changes.
func (s *Session) setStateLocked(state string) {
	if s.state == state {
		return
	}
	s.log.Info("tradovate: session state", zap.String("state", state))
	s.state = state
	if s.opts.OnState != nil {
		var err error
		switch state {
		case StateLoginFailed:
			err = s.sticky
		case StateCaptchaRequired:
			err = s.held
		}
		s.opts.OnState(state, err)
	}
}

func (s *Session) setState(state string) {
	s.mu.Lock()
	s.setStateLocked(state)
	s.mu.Unlock()
}

// refusal returns why no request may be sent now, or nil.
func (s *Session) refusal() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run.Closed() {
		return unavailable(CodeBrokerUnreachable)
	}
	if s.state == StateRateLimited {
		if s.opts.Now().Before(s.until) {
			return unavailable(CodeRateLimited)
		}
		s.setStateLocked(StateOK)
	}
	if s.state == StateCaptchaRequired && s.held != nil && s.opts.Now().Before(s.until) {
		return s.held
	}
	return s.sticky
}

// rateLimited starts the hour without requests.
func (s *Session) rateLimited() error {
	s.mu.Lock()
	s.until = s.opts.Now().Add(RateLimitPause)
	s.setStateLocked(StateRateLimited)
	s.mu.Unlock()
	s.log.Warn("tradovate: the broker answered 429; no request is sent for an hour")
	return unavailable(CodeRateLimited)
}

// Token returns a valid token, logging in when there is none (and the
// session can).
func (s *Session) Token(ctx context.Context) (Token, error) {
	if tok, ok, err := s.validToken(); ok || err != nil {
		return tok, err
	}
	return s.login(ctx)
}

// validToken returns the session's token and true when it is valid now,
// or why no request may be sent (refusal).
func (s *Session) validToken() (Token, bool, error) {
	if err := s.refusal(); err != nil {
		return Token{}, false, err
	}
	s.mu.Lock()
	tok := s.token
	s.mu.Unlock()
	if !tok.validAt(s.opts.Now()) {
		return Token{}, false, nil
	}
	return tok, true, nil
}

// CaptchaError reports a login the broker asked a captcha of: no login is
// tried before RetryAt, then the session tries again by itself. It
// unwraps to the captcha_required *bridge.UnavailableError.
type CaptchaError struct {
	RetryAt time.Time
}

func (e *CaptchaError) Error() string {
	return "tradovate: the broker asks for a captcha; the login is tried again at " + e.RetryAt.UTC().Format(time.RFC3339)
}

// Unwrap returns the captcha_required UnavailableError.
func (e *CaptchaError) Unwrap() error { return unavailable(CodeCaptchaRequired) }

// dropToken forgets a token the broker refused, unless it was already
// replaced.
func (s *Session) dropToken(tok Token) {
	s.mu.Lock()
	if s.token.AccessToken == tok.AccessToken {
		s.token = Token{}
	}
	s.mu.Unlock()
	s.poke()
}

// revive answers a 401 to tok: a token already replaced is used as it
// is; otherwise the token is renewed, and only a token the renewal
// refuses too is dropped for a new login (a new session may end the
// user's other sessions). Within reviveGap of the last one, a 401 is
// answered as it is: no renewal, no login, never a loop.
func (s *Session) revive(ctx context.Context, tok Token) error {
	now := s.opts.Now()
	s.mu.Lock()
	if s.token.AccessToken != tok.AccessToken {
		s.mu.Unlock()
		return nil
	}
	if !s.revived.IsZero() && now.Sub(s.revived) < reviveGap {
		s.mu.Unlock()
		return &HTTPError{Status: http.StatusUnauthorized}
	}
	s.revived = now
	s.mu.Unlock()
	err := s.renew(ctx)
	if errors.Is(err, errRenewRefused) {
		s.log.Info("tradovate: the broker refused the token and its renewal; logging in again")
		return nil // dropped: the next call logs in
	}
	return err
}

func (s *Session) poke() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// LoginError reports a login the broker refused. Reason is a fixed
// sentence (the broker's text is never passed on: it may repeat the
// login's name). It unwraps to the *bridge.UnavailableError the platform
// answers meanwhile.
type LoginError struct {
	// Kind names the refusal: "credentials", "api_key", "locked",
	// "refused", "oauth".
	Kind   string
	Reason string
}

func (e *LoginError) Error() string { return "tradovate: login refused: " + e.Reason }

// Unwrap returns the login_failed UnavailableError.
func (e *LoginError) Unwrap() error { return unavailable(CodeLoginFailed) }

// loginError classifies the broker's errorText, by its words, into a
// fixed sentence.
func loginError(text string) *LoginError {
	words := make(map[string]bool)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return r < 'a' || r > 'z' }) {
		words[w] = true
	}
	has := func(ws ...string) bool {
		for _, w := range ws {
			if words[w] {
				return true
			}
		}
		return false
	}
	switch {
	case has("password", "username", "credentials", "login"):
		return &LoginError{Kind: "credentials", Reason: "Tradovate refused the username or password"}
	case has("app", "appid", "application", "cid", "sec", "secret", "key", "api"):
		return &LoginError{Kind: "api_key", Reason: "Tradovate refused the API key (cid and secret) or the application name"}
	case has("locked", "lock", "suspended", "disabled", "blocked"):
		return &LoginError{Kind: "locked", Reason: "Tradovate reports the login as locked or disabled"}
	}
	return &LoginError{Kind: "refused", Reason: "Tradovate refused the login"}
}

// login logs in with the credentials, once at a time: a caller that waited
// for another's login uses its token.
func (s *Session) login(ctx context.Context) (Token, error) {
	s.loginMu.Lock()
	defer s.loginMu.Unlock()
	if tok, ok, err := s.validToken(); ok || err != nil {
		return tok, err
	}
	if s.opts.Credentials == nil {
		s.mu.Lock()
		s.sticky = &LoginError{Kind: "oauth", Reason: "the linked Tradovate session expired; link the account again"}
		s.setStateLocked(StateLoginFailed)
		err := s.sticky
		s.mu.Unlock()
		return Token{}, err
	}
	s.setState(StateLoggingIn)
	c := s.opts.Credentials
	req := tradovatewire.AccessTokenRequest{Name: c.Name, Password: c.Password, AppID: c.AppID,
		AppVersion: c.AppVersion, CID: c.CID, Sec: c.Sec, DeviceID: c.DeviceID}
	var res tradovatewire.AccessTokenResponse
	err := s.send(ctx, http.MethodPost, "/auth/accesstokenrequest", "", req, &res, false)
	var he *HTTPError
	switch {
	case errors.Is(err, errCaptcha), errors.As(err, &he) && he.Status == http.StatusLocked:
		// A captcha ticket, or the broker's answer to repeated failed
		// logins (HTTP 423): a captcha and an hour without logins.
		return Token{}, s.holdCaptcha(CaptchaPause)
	case err != nil:
		s.settleFailure(err)
		return Token{}, err
	case res.ErrorText != "" || res.AccessToken == "":
		le := loginError(res.ErrorText)
		return Token{}, s.stick(StateLoginFailed, le, "tradovate: the broker refused the login")
	}
	tok, err := s.tokenOf(res, Token{})
	if err != nil {
		s.setState(StateUnreachable)
		return Token{}, err
	}
	s.mu.Lock()
	s.logins++
	s.mu.Unlock()
	s.newToken(tok, true)
	s.log.Info("tradovate: logged in", zap.Time("expires", tok.Expires))
	return tok, nil
}

// stick records a refusal that holds until the login is linked again.
func (s *Session) stick(state string, err error, msg string) error {
	s.mu.Lock()
	s.sticky = err
	s.token = Token{}
	s.setStateLocked(state)
	s.mu.Unlock()
	s.log.Warn(msg)
	return err
}

// holdCaptcha records a captcha: no login for wait, then the session
// tries again by itself.
func (s *Session) holdCaptcha(wait time.Duration) error {
	s.mu.Lock()
	until := s.opts.Now().Add(wait)
	err := &CaptchaError{RetryAt: until}
	s.held, s.until = err, until
	s.token = Token{}
	s.setStateLocked(StateCaptchaRequired)
	s.mu.Unlock()
	s.log.Warn("tradovate: the broker asks for a captcha; no login until the wait is over", zap.Time("retryAt", until))
	return err
}

// settleFailure records the state a failed exchange leaves.
func (s *Session) settleFailure(err error) {
	var ue *bridge.UnavailableError
	if errors.As(err, &ue) && ue.Code == CodeBrokerUnreachable {
		s.setState(StateUnreachable)
	}
}

// tokenOf makes a Token of a login or renewal answer; old supplies what
// a renewal leaves out.
func (s *Session) tokenOf(res tradovatewire.AccessTokenResponse, old Token) (Token, error) {
	exp, ok := res.Expires()
	if res.AccessToken == "" || !ok {
		return Token{}, fmt.Errorf("tradovate: the broker's token answer lacks a token or its expiry: %w",
			unavailable(CodeBrokerUnreachable))
	}
	tok := Token{AccessToken: res.AccessToken, MDAccessToken: res.MDAccessToken, Expires: exp, UserID: res.UserID}
	if tok.MDAccessToken == "" && old.MDAccessToken != "" {
		// A renewal without a market-data token: the previous one is
		// kept while it lasts; once it expires the token is no longer
		// valid and the session logs in again for a new one.
		tok.MDAccessToken = old.MDAccessToken
		tok.MDExpires = old.Expires
		if !old.MDExpires.IsZero() {
			tok.MDExpires = old.MDExpires
		}
		if !tok.MDExpires.Before(tok.Expires) {
			tok.MDExpires = time.Time{}
		}
	}
	if tok.MDAccessToken == "" {
		tok.MDAccessToken = tok.AccessToken
	}
	if tok.UserID == 0 {
		tok.UserID = old.UserID
	}
	return tok, nil
}

// newToken installs a token and reports it; poke wakes Run (after a
// login, not after Run's own renewal).
func (s *Session) newToken(tok Token, poke bool) {
	s.mu.Lock()
	s.token = tok
	s.obtained = s.opts.Now()
	s.held = nil
	s.setStateLocked(StateOK)
	s.mu.Unlock()
	if s.opts.OnToken != nil {
		s.opts.OnToken(tok)
	}
	if poke {
		s.poke()
	}
}

// errRenewRefused reports a renewal the broker refused (401).
var errRenewRefused = errors.New("tradovate: the broker refused to renew the token")

// renew renews the current token.
func (s *Session) renew(ctx context.Context) error {
	s.mu.Lock()
	old := s.token
	s.mu.Unlock()
	if old.AccessToken == "" {
		return nil
	}
	var res tradovatewire.AccessTokenResponse
	err := s.sendWith(ctx, old.AccessToken, http.MethodGet, "/auth/renewaccesstoken", "", nil, &res, false)
	var he *HTTPError
	switch {
	case errors.As(err, &he) && he.Status == http.StatusUnauthorized:
		s.dropToken(old)
		return errRenewRefused
	case err != nil:
		s.settleFailure(err)
		return err
	case res.ErrorText != "":
		s.dropToken(old)
		return errRenewRefused
	}
	tok, err := s.tokenOf(res, old)
	if err != nil {
		return err
	}
	if tok.UserID == 0 {
		tok.UserID = old.UserID
	}
	s.mu.Lock()
	s.renews++
	if tok.Expires.After(old.Expires) {
		s.renewGap, s.renewAfter = 0, time.Time{}
	} else {
		// The renewal did not extend the expiry: renewing sooner would
		// not either. Wait, longer each time; the token may expire
		// meanwhile, and the session logs in again then.
		s.renewGap = min(max(2*s.renewGap, minRenewGap), s.opts.RenewBefore)
		s.renewAfter = s.opts.Now().Add(s.renewGap)
	}
	s.mu.Unlock()
	s.newToken(tok, false)
	s.log.Info("tradovate: token renewed", zap.Time("expires", tok.Expires))
	return nil
}

// Run keeps the token valid until ctx ends or the session closes: it logs
// in when there is no token (and it can), and renews the token
// RenewBefore its expiry. A renewal the broker refuses leads to a new
// login when the session has credentials. It returns nil when it stops,
// and an error when it is already running (bridge.ErrRunning) or the
// session is closed (bridge.ErrClosed).
func (s *Session) Run(ctx context.Context) error {
	ctx, end, err := s.run.Begin(ctx)
	if err != nil {
		return fmt.Errorf("tradovate: session: %w", err)
	}
	defer end()
	// After a failure it waits 1 s plus a random time below a ceiling
	// that starts at 1 s and doubles up to 1 min.
	retry := backoff.Backoff{Min: time.Second, Max: time.Minute, Floor: time.Second}
	for {
		wait, failed := s.step(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if failed {
			wait = retry.Next()
		} else {
			retry.Reset()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.kick:
		case <-s.opts.After(wait):
		}
	}
}

// idleWait is how long Run sleeps when nothing is due.
const idleWait = time.Hour

// step does what is due now and says how long to wait for the next, and
// whether it failed (to back off).
func (s *Session) step(ctx context.Context) (time.Duration, bool) {
	now := s.opts.Now()
	s.mu.Lock()
	tok, state, until, sticky, held := s.token, s.state, s.until, s.sticky, s.held
	obtained, renewAfter := s.obtained, s.renewAfter
	s.mu.Unlock()
	switch {
	case sticky != nil:
		return idleWait, false
	case state == StateRateLimited && now.Before(until):
		return until.Sub(now), false
	case state == StateCaptchaRequired && held != nil && now.Before(until):
		return until.Sub(now), false
	case !tok.validAt(now):
		if _, err := s.login(ctx); err != nil {
			return 0, true
		}
		return 0, false
	}
	// Renew RenewBefore ahead of the expiry, but not before half the
	// token's life (a short-lived token would renew without end), nor
	// before a ticket's p-time or the wait after a renewal that did not
	// extend the expiry.
	renewAt := tok.Expires.Add(-s.opts.RenewBefore)
	if !obtained.IsZero() {
		renewAt = latest(renewAt, obtained.Add(tok.Expires.Sub(obtained)/2))
	}
	renewAt = latest(renewAt, renewAfter)
	if !tok.MDExpires.IsZero() && tok.MDExpires.Before(renewAt) {
		renewAt = tok.MDExpires // a new login is due then
	}
	if now.Before(renewAt) {
		return renewAt.Sub(now), false
	}
	if err := s.renew(ctx); err != nil {
		if errors.Is(err, errRenewRefused) {
			return 0, false // log in again, or give up
		}
		return 0, true
	}
	return 0, false
}

// Close stops Run and refuses later calls. It is idempotent.
func (s *Session) Close() error {
	s.run.Close()
	return nil
}

// HTTPError reports an HTTP status the broker answered that the session
// does not turn into another error. The body is never included.
type HTTPError struct {
	Status int
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("tradovate: the broker answered HTTP %d", e.Status)
}

// writePaths are the order requests: once one was sent, an exchange that
// breaks before the answer may have acted.
var writePaths = map[string]bool{
	"/order/placeorder": true, "/order/placeoco": true, "/order/placeoso": true, "/order/cancelorder": true,
	"/order/modifyorder": true, "/order/liquidateposition": true,
}

// Do sends a REST request with the login's token, paced, and decodes the
// JSON answer into out (when not nil). path is under the REST base
// ("/order/placeorder"), query a raw URL query. The order requests
// (placeorder, placeoco, cancelorder, modifyorder, liquidateposition) are
// writes: once one was sent, an exchange that breaks before the answer is
// bridge.ErrOutcomeUnknown and is never resent. While the broker cannot
// be used, Do answers a *bridge.UnavailableError.
func (s *Session) Do(ctx context.Context, method, path, query string, body, out any) error {
	write := writePaths[strings.ToLower(path)]
	for attempt := 0; ; attempt++ {
		tok, err := s.Token(ctx)
		if err != nil {
			return err
		}
		err = s.sendWith(ctx, tok.AccessToken, method, path, query, body, out, write)
		var he *HTTPError
		if errors.As(err, &he) && he.Status == http.StatusUnauthorized && attempt == 0 {
			// The broker did not take the token: nothing was done.
			if rerr := s.revive(ctx, tok); rerr != nil {
				return err
			}
			continue
		}
		if err != nil {
			s.settleFailure(err)
		} else {
			s.mu.Lock()
			if s.state == StateUnreachable {
				s.setStateLocked(StateOK)
			}
			s.mu.Unlock()
		}
		return err
	}
}

// send makes an exchange without a token (the auth calls).
func (s *Session) send(ctx context.Context, method, path, query string, body, out any, write bool) error {
	return s.sendWith(ctx, "", method, path, query, body, out, write)
}

// sendWith makes one paced exchange. A penalty ticket the broker answers
// instead (on any endpoint) is honoured here: the request was not
// handled, so it is sent again, the same, with the ticket, once p-time
// passed; when ctx cannot wait that long, or the tickets do not end, it
// fails with a rate_limited *bridge.UnavailableError (nothing was done).
// A captcha ticket is errCaptcha.
func (s *Session) sendWith(ctx context.Context, token, method, path, query string, body, out any, write bool) error {
	ticket := ""
	for tickets := 0; ; tickets++ {
		if err := s.refusal(); err != nil {
			return err
		}
		if err := s.pace(ctx, path, write, ticket != ""); err != nil {
			return err
		}
		if err := s.refusal(); err != nil { // a 429 may have come meanwhile
			return err
		}
		b, q := withTicket(body, query, ticket)
		rctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
		err := exchange(rctx, s.opts.HTTPClient, s.rest+path, q, method, token, b, out, write, s.rateLimited)
		cancel()
		var pt *penaltyTicket
		if !errors.As(err, &pt) {
			return err
		}
		if err := s.penalized(ctx, path, pt, tickets); err != nil {
			return err
		}
		ticket = pt.ticket
	}
}

// pace waits for the login's pacer and for the address's budget.
func (s *Session) pace(ctx context.Context, endpoint string, write, ticketed bool) error {
	if err := s.pacer.wait(ctx, s.run.Done()); err != nil {
		return err
	}
	err := s.opts.Budget.Wait(ctx, s.run.Done(), endpoint, write, ticketed)
	switch {
	case errors.Is(err, errBudgetStopped):
		return unavailable(CodeBrokerUnreachable)
	case errors.Is(err, errEndpointHeld):
		return fmt.Errorf("%w: %w", err, penaltyUnavailable())
	}
	return err
}

// paceSocket paces a socket request (its endpoint: "authorize",
// "user/syncrequest", "md/subscribequote", "order/item").
func (s *Session) paceSocket(ctx context.Context, endpoint string) error {
	return s.pace(ctx, endpoint, false, false)
}

// socketTicket reads a socket reply for a penalty ticket. The request
// was not handled: it fails (never an empty answer taken for the state),
// and the endpoint is held for the node until p-time passed, so that the
// owner's next attempt waits for it. The ticket is not resent over the
// socket: the documentation shows resends for REST only.
func (s *Session) socketTicket(endpoint string, data json.RawMessage) error {
	pt, ok := ticketOf(data)
	if !ok {
		return nil
	}
	if err := s.holdFor(endpoint, pt); err != nil {
		return err
	}
	s.log.Info("tradovate: penalty ticket on the socket; the request waits before it is sent again",
		zap.String("endpoint", endpoint), zap.Duration("wait", pt.wait))
	return fmt.Errorf("tradovate: a penalty ticket of %s on %s: %w", pt.wait, endpoint, penaltyUnavailable())
}

// errCaptcha reports a penalty ticket with p-captcha: a human check the
// relay cannot answer.
var errCaptcha = errors.New("tradovate: the broker asks for a captcha")

// penaltyTicket is a penalty ticket the broker answered (HTTP 200, a body
// with p-ticket and p-time, maybe p-captcha) instead of handling the
// request.
type penaltyTicket struct {
	ticket  string
	wait    time.Duration
	captcha bool
}

func (p *penaltyTicket) Error() string {
	return fmt.Sprintf("tradovate: the broker answered a penalty ticket (wait %s)", p.wait)
}

// holdFor holds endpoint's requests of the whole address for a ticket's
// p-time, tickets being per address; a captcha ticket holds it for
// CaptchaPause (the documentation says to wait about an hour for its
// count to clear) and is errCaptcha.
func (s *Session) holdFor(endpoint string, pt *penaltyTicket) error {
	if pt.captcha {
		s.opts.Budget.hold(endpoint, s.opts.Now().Add(CaptchaPause))
		s.log.Warn("tradovate: the broker asks for a captcha", zap.String("endpoint", endpoint))
		return fmt.Errorf("%w: %w", errCaptcha, unavailable(CodeCaptchaRequired))
	}
	s.opts.Budget.hold(endpoint, s.opts.Now().Add(pt.wait))
	return nil
}

// penaltyUnavailable is the error of a request whose penalty ticket could
// not be honoured: the broker did not handle it.
func penaltyUnavailable() *bridge.UnavailableError {
	return &bridge.UnavailableError{Code: CodeRateLimited,
		Reason: "Tradovate asked the relay to wait before sending this request again (a penalty ticket) " +
			"longer than the request could wait; nothing was done, try again shortly"}
}

// penalized waits out a penalty ticket, holding the endpoint's requests
// of the whole address meanwhile, or says why the request gives up.
func (s *Session) penalized(ctx context.Context, path string, pt *penaltyTicket, tickets int) error {
	if err := s.holdFor(path, pt); err != nil {
		return err
	}
	if tickets >= MaxPenaltyTickets {
		s.log.Warn("tradovate: penalty tickets did not end", zap.String("endpoint", path))
		return fmt.Errorf("tradovate: %d penalty tickets in a row: %w", tickets+1, penaltyUnavailable())
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < pt.wait {
		s.log.Info("tradovate: penalty ticket longer than the request can wait",
			zap.String("endpoint", path), zap.Duration("wait", pt.wait))
		return fmt.Errorf("tradovate: a penalty ticket of %s: %w", pt.wait, penaltyUnavailable())
	}
	s.log.Info("tradovate: penalty ticket; waiting before sending again",
		zap.String("endpoint", path), zap.Duration("wait", pt.wait))
	select {
	case <-ctx.Done():
		return fmt.Errorf("tradovate: a penalty ticket of %s: %w", pt.wait, penaltyUnavailable())
	case <-s.run.Done():
		return unavailable(CodeBrokerUnreachable)
	case <-s.opts.After(pt.wait):
		return nil
	}
}

// withTicket returns the request to send again with a penalty ticket:
// the same body with a "p-ticket" field added, or, for a request without
// a body, the query with a p-ticket parameter.
func withTicket(body any, query, ticket string) (any, string) {
	if ticket == "" {
		return body, query
	}
	if body != nil {
		var m map[string]json.RawMessage
		if b, err := json.Marshal(body); err == nil && json.Unmarshal(b, &m) == nil && m != nil {
			t, _ := json.Marshal(ticket)
			m["p-ticket"] = t
			return m, query
		}
	}
	q := url.Values{"p-ticket": {ticket}}.Encode()
	if query != "" {
		q = query + "&" + q
	}
	return body, q
}

// ticketOf reads a penalty ticket out of an answer.
func ticketOf(raw []byte) (*penaltyTicket, bool) {
	if !bytes.Contains(raw, []byte(`"p-ticket"`)) {
		return nil, false
	}
	var t struct {
		Ticket  string  `json:"p-ticket"`
		Time    float64 `json:"p-time"`
		Captcha bool    `json:"p-captcha"`
	}
	if json.Unmarshal(raw, &t) != nil || (t.Ticket == "" && !t.Captcha) {
		return nil, false
	}
	return &penaltyTicket{ticket: t.Ticket, wait: time.Duration(max(t.Time, 0) * float64(time.Second)),
		captcha: t.Captcha}, true
}

// exchange makes one HTTP exchange with the broker.
func exchange(ctx context.Context, client *http.Client, url, query, method, token string, body, out any,
	write bool, on429 func() error) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("tradovate: encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	if query != "" {
		url += "?" + query
	}
	var sent bool
	var sentMu sync.Mutex
	trace := &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
		sentMu.Lock()
		sent = sent || i.Err == nil
		sentMu.Unlock()
	}}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), method, url, rd)
	if err != nil {
		return fmt.Errorf("tradovate: build request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	wasSent := func() bool {
		sentMu.Lock()
		defer sentMu.Unlock()
		return sent
	}
	broken := func(err error) error {
		if write && wasSent() {
			return fmt.Errorf("tradovate: the link broke after an order request was sent: %w", bridge.ErrOutcomeUnknown)
		}
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return ctx.Err()
		}
		return fmt.Errorf("tradovate: %s: %w", netReason(err), unavailable(CodeBrokerUnreachable))
	}
	resp, err := client.Do(req)
	if err != nil {
		return broken(err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		if on429 != nil {
			return on429()
		}
		return unavailable(CodeRateLimited)
	case resp.StatusCode >= 500:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		if write {
			return fmt.Errorf("tradovate: the broker failed while handling an order request (HTTP %d): %w",
				resp.StatusCode, bridge.ErrOutcomeUnknown)
		}
		return fmt.Errorf("tradovate: the broker answered HTTP %d: %w", resp.StatusCode, unavailable(CodeBrokerUnreachable))
	case resp.StatusCode != http.StatusOK:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return &HTTPError{Status: resp.StatusCode}
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return broken(err)
	}
	if pt, ok := ticketOf(raw); ok {
		return pt // not handled: the caller waits and sends it again
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		if write {
			return fmt.Errorf("tradovate: the broker's answer to an order request does not decode: %w", bridge.ErrOutcomeUnknown)
		}
		return fmt.Errorf("tradovate: the broker's answer does not decode: %w", unavailable(CodeBrokerUnreachable))
	}
	return nil
}

// netReason names a transport failure without its addresses.
func netReason(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "the broker did not answer in time"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "the broker closed the connection"
	}
	return "the broker cannot be reached"
}

// OAuthExchange is an OAuth authorization code to exchange for a token.
type OAuthExchange struct {
	Env       Env
	Endpoints Endpoints
	Client    OAuthClient
	Code      string
	// HTTPClient and Now default to http.DefaultClient and time.Now.
	HTTPClient *http.Client
	Now        func() time.Time
}

// ExchangeOAuthCode exchanges an OAuth authorization code for a token
// (POST /auth/oauthtoken), and asks the broker whose it is (GET
// /auth/me). The market-data socket takes the same token. A code the
// broker refuses is a *LoginError.
func ExchangeOAuthCode(ctx context.Context, x OAuthExchange) (Token, error) {
	if !x.Env.Valid() {
		return Token{}, errors.New("tradovate: OAuthExchange.Env must be demo or live")
	}
	if x.Client.ID == "" {
		return Token{}, errors.New("tradovate: no OAuth client is configured")
	}
	if x.HTTPClient == nil {
		x.HTTPClient = http.DefaultClient
	}
	if x.Now == nil {
		x.Now = time.Now
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
	defer cancel()
	rest := strings.TrimSuffix(x.Endpoints.REST(x.Env), "/")
	var res tradovatewire.OAuthTokenResponse
	err := exchange(ctx, x.HTTPClient, rest+"/auth/oauthtoken", "", http.MethodPost, "", tradovatewire.OAuthTokenRequest{
		GrantType: "authorization_code", ClientID: x.Client.ID, ClientSecret: x.Client.Secret,
		RedirectURI: x.Client.RedirectURL, Code: x.Code,
	}, &res, false, nil)
	var he *HTTPError
	if errors.As(err, &he) && he.Status < 500 {
		return Token{}, &LoginError{Kind: "oauth", Reason: "Tradovate refused the authorization code"}
	}
	if err != nil {
		return Token{}, err
	}
	if res.Error != "" || res.AccessToken == "" {
		return Token{}, &LoginError{Kind: "oauth", Reason: "Tradovate refused the authorization code"}
	}
	tok := Token{AccessToken: res.AccessToken, MDAccessToken: res.AccessToken,
		Expires: x.Now().Add(time.Duration(res.ExpiresIn) * time.Second)}
	if res.ExpiresIn <= 0 {
		tok.Expires = x.Now().Add(80 * time.Minute)
	}
	var me tradovatewire.MeResponse
	if err := exchange(ctx, x.HTTPClient, rest+"/auth/me", "", http.MethodGet, tok.AccessToken, nil, &me, false, nil); err != nil {
		return Token{}, err
	}
	if me.UserID == 0 {
		return Token{}, &LoginError{Kind: "oauth", Reason: "Tradovate did not say whose the authorization is"}
	}
	tok.UserID = me.UserID
	return tok, nil
}

// pacer is the request budget of a login: token buckets that a request
// takes one token from each of, a short one (rate requests a second,
// bursts of burst) and an hourly one (perHour requests an hour, bursts of
// a sixth of that), so that a busy login slows down before the broker's
// hourly limit locks it out for an hour. A caller that finds a bucket
// empty reserves the next token and waits for it, so callers are served
// in the order they came.
type pacer struct {
	mu      sync.Mutex
	buckets [2]bucket
	now     func() time.Time
	after   func(time.Duration) <-chan time.Time
}

// bucket is one token bucket of a pacer.
type bucket struct {
	rate, burst, tokens float64
	last                time.Time
}

// take refills the bucket to now, takes a token and returns how long the
// caller must wait for it.
func (b *bucket) take(now time.Time) time.Duration {
	if now.After(b.last) {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
	}
	b.tokens--
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.rate * float64(time.Second))
}

func newPacer(rate float64, burst, perHour int, now func() time.Time, after func(time.Duration) <-chan time.Time) *pacer {
	t := now()
	hourBurst := max(1, float64(perHour)/6)
	return &pacer{buckets: [2]bucket{
		{rate: rate, burst: float64(burst), tokens: float64(burst), last: t},
		{rate: float64(perHour) / 3600, burst: hourBurst, tokens: hourBurst, last: t},
	}, now: now, after: after}
}

// wait takes a token of every bucket, waiting for the last one to come
// when a bucket is empty.
func (p *pacer) wait(ctx context.Context, stop <-chan struct{}) error {
	p.mu.Lock()
	now := p.now()
	var d time.Duration
	for i := range p.buckets {
		d = max(d, p.buckets[i].take(now))
	}
	p.mu.Unlock()
	if d <= 0 {
		return nil
	}
	select {
	case <-p.after(d):
		return nil
	case <-ctx.Done():
		p.mu.Lock()
		for i := range p.buckets {
			p.buckets[i].tokens++ // give the reservation back
		}
		p.mu.Unlock()
		return ctx.Err()
	case <-stop:
		return unavailable(CodeBrokerUnreachable)
	}
}

// latest returns the latest of ts.
func latest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}
