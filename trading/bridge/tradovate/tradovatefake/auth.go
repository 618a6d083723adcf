package tradovatefake

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"

	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// Sentences of refusals, as the broker writes them.
const (
	textBadCredentials = "Incorrect username or password. Please try again."
	textAccessDenied   = "Access is denied"
	textNotFound       = "Not found"
)

// captchaWait is the p-time of a captcha ticket: a client must not wait
// for it anyway.
const captchaWait = 15

// tokenKind says what a token opens.
type tokenKind int

const (
	// kindAccess opens REST and the user-data socket.
	kindAccess tokenKind = iota + 1
	// kindMD opens the market-data socket.
	kindMD
	// kindOAuth is an OAuth access token: REST and both sockets.
	kindOAuth
)

type tokenInfo struct {
	kind    tokenKind
	expires time.Time
}

// ticket is a penalty ticket the fake issued.
type ticket struct {
	ripe    time.Time // when a resend is accepted
	captcha bool
}

// oauthCode is a code of the OAuth flow, good once.
type oauthCode struct {
	redirect string // the redirect_uri it was issued for; empty from IssueCode
}

// authState is the fake's sessions and knobs, guarded by Server.mu.
type authState struct {
	tokens  map[string]tokenInfo
	tickets map[string]ticket
	codes   map[string]oauthCode

	failLogins  int
	penalties   int
	penaltyWait time.Duration
	captcha     bool
	rejectNext  string

	// loginTimes are the times of the logins of the last minute, all
	// from one address (the fake serves 127.0.0.1 only); authPerMinute
	// bounds them (0: no bound).
	loginTimes    []time.Time
	authPerMinute int
	// issued counts the penalty tickets answered, on any endpoint.
	issued int
	// renewNoMD leaves mdAccessToken out of renewal answers.
	renewNoMD bool
	// unauthorize REST requests answer 401 whatever their token.
	unauthorize int
	// expiredUses counts requests and authorizations made with a token
	// the fake issued that had expired.
	expiredUses int
}

// DefaultAuthPerMinute is how many access token requests one address may
// send in a minute before the fake answers penalty tickets: the broker's
// documented authentication limit.
const DefaultAuthPerMinute = 10

// authBackoff is the p-time of a ticket for too many logins: the
// documented back-off of accesstokenrequest.
const authBackoff = 15 * time.Second

func (a *authState) init() {
	a.tokens = make(map[string]tokenInfo)
	a.tickets = make(map[string]ticket)
	a.codes = make(map[string]oauthCode)
	a.authPerMinute = DefaultAuthPerMinute
}

// randomToken returns a fresh unguessable string.
func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// valid reports whether token is a live token that opens what kinds
// allows. Server.mu is held.
func (s *Server) validLocked(token string, kinds ...tokenKind) bool {
	t, ok := s.auth.tokens[token]
	if ok && !s.opts.Now().Before(t.expires) {
		s.auth.expiredUses++
	}
	if !ok || !s.opts.Now().Before(t.expires) {
		return false
	}
	for _, k := range kinds {
		if t.kind == k {
			return true
		}
	}
	return false
}

// validToken is validLocked with Server.mu taken.
func (s *Server) validToken(token string, kinds ...tokenKind) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.validLocked(token, kinds...)
}

// bearer returns the request's bearer token.
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "Bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// authed wraps a REST handler that needs a live access token (an access
// or OAuth token): without one it answers 401.
func (s *Server) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.validToken(bearer(r), kindAccess, kindOAuth) || s.takeUnauthorize() {
			writeJSON(w, http.StatusUnauthorized, errorBody{ErrorText: textAccessDenied})
			return
		}
		h(w, r)
	}
}

// takeUnauthorize reports whether a request is to answer 401 by
// Unauthorize.
func (s *Server) takeUnauthorize() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.auth.unauthorize > 0 {
		s.auth.unauthorize--
		return true
	}
	return false
}

// issueLocked makes a new access token and market-data token. Server.mu
// is held.
func (s *Server) issueLocked() tradovatewire.AccessTokenResponse {
	exp := s.opts.Now().Add(s.opts.TokenLifetime)
	access, md := randomToken(), randomToken()
	s.auth.tokens[access] = tokenInfo{kind: kindAccess, expires: exp}
	s.auth.tokens[md] = tokenInfo{kind: kindMD, expires: exp}
	return tradovatewire.AccessTokenResponse{
		AccessToken:    access,
		MDAccessToken:  md,
		ExpirationTime: tradovatewire.FormatTime(exp),
		UserStatus:     userStatus,
		UserID:         UserID,
		Name:           s.opts.Name,
	}
}

// penaltyBody is a penalty ticket answer, p-time always written.
type penaltyBody struct {
	PTicket  string `json:"p-ticket"`
	PTime    int    `json:"p-time"`
	PCaptcha bool   `json:"p-captcha"`
}

// errorBody is a refusal with the broker's errorText.
type errorBody struct {
	ErrorText string `json:"errorText"`
}

// accessTokenRequest answers POST /auth/accesstokenrequest: a penalty
// ticket (captcha, or PenaltyTicket), a refusal (FailLogins, wrong
// credentials) or tokens, all with HTTP 200.
func (s *Server) accessTokenRequest(w http.ResponseWriter, r *http.Request) {
	var req tradovatewire.AccessTokenRequest
	if !readJSON(w, r, &req) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	if s.auth.captcha {
		id := randomToken()
		s.auth.tickets[id] = ticket{captcha: true}
		s.auth.issued++
		writeJSON(w, http.StatusOK, penaltyBody{PTicket: id, PTime: captchaWait, PCaptcha: true})
		return
	}
	t, ticketed := s.auth.tickets[req.PTicket]
	kept := s.auth.loginTimes[:0]
	for _, at := range s.auth.loginTimes {
		if now.Sub(at) < time.Minute {
			kept = append(kept, at)
		}
	}
	s.auth.loginTimes = append(kept, now)
	switch {
	case !ticketed && s.auth.authPerMinute > 0 && len(s.auth.loginTimes) > s.auth.authPerMinute:
		// Too many logins from this address: a ticket, as the broker
		// answers its novel operations.
		id := randomToken()
		s.auth.tickets[id] = ticket{ripe: now.Add(authBackoff)}
		s.auth.issued++
		writeJSON(w, http.StatusOK, penaltyBody{PTicket: id, PTime: seconds(authBackoff)})
		return
	case ticketed && !t.captcha && now.Before(t.ripe):
		writeJSON(w, http.StatusOK, penaltyBody{PTicket: req.PTicket, PTime: seconds(t.ripe.Sub(now))})
		return
	case ticketed && !t.captcha:
		delete(s.auth.tickets, req.PTicket)
	case s.auth.penalties > 0:
		s.auth.penalties--
		id := randomToken()
		s.auth.tickets[id] = ticket{ripe: now.Add(s.auth.penaltyWait)}
		s.auth.issued++
		writeJSON(w, http.StatusOK, penaltyBody{PTicket: id, PTime: seconds(s.auth.penaltyWait)})
		return
	}
	if s.auth.failLogins > 0 {
		s.auth.failLogins--
		writeJSON(w, http.StatusOK, errorBody{ErrorText: textBadCredentials})
		return
	}
	if !s.credentialsMatch(req) {
		s.log.Info("login refused: wrong credentials")
		writeJSON(w, http.StatusOK, errorBody{ErrorText: textBadCredentials})
		return
	}
	resp := s.issueLocked()
	s.logins.Add(1)
	s.log.Info("login", zap.Int64("userId", UserID))
	writeJSON(w, http.StatusOK, resp)
}

// seconds is d in whole seconds, rounded up.
func seconds(d time.Duration) int { return int(math.Ceil(d.Seconds())) }

// credentialsMatch compares a login with the configured credentials, the
// secrets in constant time.
func (s *Server) credentialsMatch(req tradovatewire.AccessTokenRequest) bool {
	eq := func(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
	ok := eq(req.Name, s.opts.Name)
	ok = eq(req.Password, s.opts.Password) && ok
	ok = eq(req.Sec, s.opts.Sec) && ok
	return ok && req.AppID == s.opts.AppID && req.CID == s.opts.CID
}

// renewAccessToken answers /auth/renewaccesstoken: new tokens for a live
// access token, 401 otherwise. The old tokens stay valid until they
// expire.
func (s *Server) renewAccessToken(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.validLocked(bearer(r), kindAccess, kindOAuth) {
		writeJSON(w, http.StatusUnauthorized, errorBody{ErrorText: textAccessDenied})
		return
	}
	resp := s.issueLocked()
	if s.auth.renewNoMD {
		resp.MDAccessToken = ""
	}
	s.renewals.Add(1)
	writeJSON(w, http.StatusOK, resp)
}

// meBody answers /auth/me.
type meBody struct {
	UserID        int64  `json:"userId"`
	Name          string `json:"name"`
	FullName      string `json:"fullName"`
	Email         string `json:"email"`
	EmailVerified bool   `json:"emailVerified"`
	IsTrial       bool   `json:"isTrial"`
}

// me answers GET /auth/me.
func (s *Server) me(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, meBody{UserID: UserID, Name: s.opts.Name, FullName: "Fake Trader",
		Email: s.email(), EmailVerified: true})
}

func (s *Server) email() string { return s.opts.Name + "@example.com" }

// IssueCode returns a fresh OAuth authorization code, good once at
// /auth/oauthtoken with any redirect_uri, as if a user had granted access
// on the authorize page.
func (s *Server) IssueCode() string {
	code := randomToken()
	s.mu.Lock()
	s.auth.codes[code] = oauthCode{}
	s.mu.Unlock()
	return code
}

// oauthAuthorize is the authorize page: for the configured client id and
// an absolute redirect_uri it redirects (302) there at once with a code
// and the state it was given, as if the user had granted access.
func (s *Server) oauthAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	switch {
	case q.Get("client_id") != s.opts.OAuthClientID:
		http.Error(w, "unknown client", http.StatusBadRequest)
		return
	case err != nil || !redirect.IsAbs():
		http.Error(w, "redirect_uri must be an absolute URL", http.StatusBadRequest)
		return
	case q.Get("response_type") != "" && q.Get("response_type") != "code":
		http.Error(w, "response_type must be code", http.StatusBadRequest)
		return
	}
	code := randomToken()
	s.mu.Lock()
	s.auth.codes[code] = oauthCode{redirect: redirect.String()}
	s.mu.Unlock()
	v := redirect.Query()
	v.Set("code", code)
	if st := q.Get("state"); st != "" {
		v.Set("state", st)
	}
	redirect.RawQuery = v.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

// oauthToken answers POST /auth/oauthtoken: an access token for a code
// the fake issued (once), the configured client and, for a code of the
// authorize page, the same redirect_uri; otherwise HTTP 400 with error and
// error_description, as OAuth 2.0 answers.
func (s *Server) oauthToken(w http.ResponseWriter, r *http.Request) {
	var req tradovatewire.OAuthTokenRequest
	if !readJSON(w, r, &req) {
		return
	}
	fail := func(code, desc string) {
		writeJSON(w, http.StatusBadRequest, tradovatewire.OAuthTokenResponse{Error: code, ErrorDescription: desc})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, known := s.auth.codes[req.Code]
	switch {
	case req.GrantType != "authorization_code":
		fail("unsupported_grant_type", "Only the authorization_code grant is supported.")
		return
	case subtle.ConstantTimeCompare([]byte(req.ClientID), []byte(s.opts.OAuthClientID)) != 1 ||
		subtle.ConstantTimeCompare([]byte(req.ClientSecret), []byte(s.opts.OAuthClientSecret)) != 1:
		fail("invalid_client", "The client is unknown or its secret is wrong.")
		return
	case !known || (c.redirect != "" && c.redirect != req.RedirectURI):
		fail("invalid_grant", "The code is unknown, used or was issued for another redirect_uri.")
		return
	}
	delete(s.auth.codes, req.Code)
	token := randomToken()
	s.auth.tokens[token] = tokenInfo{kind: kindOAuth, expires: s.opts.Now().Add(s.opts.TokenLifetime)}
	writeJSON(w, http.StatusOK, tradovatewire.OAuthTokenResponse{AccessToken: token, TokenType: "Bearer",
		ExpiresIn: int(s.opts.TokenLifetime / time.Second)})
}
