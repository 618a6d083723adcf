package broker

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/url"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/store"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate"
)

// Linking a login is one method per action, called by the link routes
// (with the API token's source) and by the dashboard (in process, with
// the session's user and source): LinkAPIKey, StartOAuth, Unlink, and
// the OAuth callback's finishOAuth. Their errors are the sentinels and
// types below, which the routes answer as codes and the dashboard puts in
// words; none holds what the caller or the broker sent.

// Errors of the link's methods.
var (
	// ErrUnknownEnv: the environment is neither EnvDemo nor EnvLive.
	ErrUnknownEnv = errors.New("broker: env is demo or live")
	// ErrLoginRefused: the broker refused the credentials (or the OAuth
	// code). Options.Login returns it, wrapped, when the broker refused
	// the credentials; the link's methods return a *RefusedError, which
	// matches it.
	ErrLoginRefused = errors.New("broker: the broker refused the credentials")
	// ErrBrokerUnavailable: the broker could not be asked (unreachable, a
	// captcha, its rate limit); an *UnavailableError matches it.
	ErrBrokerUnavailable = errors.New("broker: the broker could not be asked")
	// ErrOAuthOff: this relay has no OAuth client: the OAuth link is not
	// offered.
	ErrOAuthOff = errors.New("broker: this relay does not offer the OAuth link")
	// ErrOAuthUnknown: the OAuth callback's state is unknown, used or
	// expired.
	ErrOAuthUnknown = errors.New("broker: the OAuth link is unknown or expired")
	// ErrOAuthDenied: the broker sent the browser back without a code
	// (the user did not grant access).
	ErrOAuthDenied = errors.New("broker: the broker did not grant access")
	// ErrOAuthSession: an OAuth link started in the dashboard came back in
	// a browser without the session that started it.
	ErrOAuthSession = errors.New("broker: the OAuth link came back in another browser session")
	// ErrStorage: the relay's store failed; nothing was linked (or
	// unlinked).
	ErrStorage = errors.New("broker: the relay's store failed")
)

// RefusedError reports credentials (or an OAuth code) the broker
// refused. It matches ErrLoginRefused.
type RefusedError struct {
	// Kind names the refusal (tradovate.LoginError's Kind:
	// "credentials", "api_key", "locked", "refused", "oauth").
	Kind string
	// Reason is a fixed sentence naming what was refused, never the
	// broker's text.
	Reason string
}

func (e *RefusedError) Error() string { return "broker: " + e.Reason }

// Is matches ErrLoginRefused.
func (e *RefusedError) Is(target error) bool { return target == ErrLoginRefused }

// UnavailableError reports a broker that could not be asked to check a
// link. It matches ErrBrokerUnavailable.
type UnavailableError struct {
	// Reason is the relay's fixed sentence of why (a captcha, the
	// broker's rate limit, …); "" when the broker could not be reached.
	Reason string
	// Err is the failure, for the logs.
	Err error
}

func (e *UnavailableError) Error() string {
	if e.Reason != "" {
		return "broker: the broker is unavailable: " + e.Reason
	}
	return "broker: the broker could not be reached"
}

// Unwrap returns the failure.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Is matches ErrBrokerUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrBrokerUnavailable }

// linkTimeout bounds a link's login (or code exchange) and its storing.
const linkTimeout = 30 * time.Second

// linkRefusal maps a failed login or code exchange to a *RefusedError or
// an *UnavailableError.
func linkRefusal(err error) error {
	var le *tradovate.LoginError
	if errors.As(err, &le) {
		return &RefusedError{Kind: le.Kind, Reason: le.Reason}
	}
	var re *RefusedError
	if errors.As(err, &re) {
		return re
	}
	if errors.Is(err, ErrLoginRefused) {
		return &RefusedError{Kind: "refused", Reason: "the broker refused the credentials"}
	}
	var ue *bridge.UnavailableError
	if errors.As(err, &ue) {
		return &UnavailableError{Reason: ue.Reason, Err: err}
	}
	return &UnavailableError{Err: err}
}

// storeFailure maps a failed Link: a *ValidationError as it is, anything
// else ErrStorage.
func storeFailure(err error) error {
	var ve *ValidationError
	if errors.As(err, &ve) {
		return ve
	}
	return fmt.Errorf("%w: %w", ErrStorage, err)
}

// LinkAPIKey links the user's login by its API-key credentials (the
// API-key fields of s: Username, Password, AppID, AppVersion, CID, Sec
// and, optionally, DeviceID; the rest is ignored). They are checked by
// one login with the broker, whose session the link keeps, then sealed
// and stored; the link's instance starts and broker.linked is recorded
// in src's name. Nothing is stored when it fails: ErrUnknownEnv, a
// *ValidationError naming the fields missing or invalid, a *RefusedError
// when the broker refused them, an *UnavailableError when it could not
// be asked, an error matching ErrStorage when the link could not be
// stored. Once the login started it runs to its end (within 30 s)
// whether or not ctx ends: a login the broker accepted is kept.
func (m *Manager) LinkAPIKey(ctx context.Context, userID, env string, s Secrets, src protocol.ActivitySource) error {
	if env != EnvDemo && env != EnvLive {
		return ErrUnknownEnv
	}
	s = Secrets{Username: s.Username, Password: s.Password, AppID: s.AppID, AppVersion: s.AppVersion,
		CID: s.CID, Sec: s.Sec, DeviceID: s.DeviceID}
	if err := s.validateAPIKey(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), linkTimeout)
	defer cancel()
	if s.DeviceID == "" {
		// The broker ties a login's sessions to its device: linking the
		// same login again keeps it.
		if old, err := m.links.Get(ctx, userID); err == nil && old.Env == env && old.Secrets.Username == s.Username && old.Secrets.DeviceID != "" {
			s.DeviceID = old.Secrets.DeviceID
		} else {
			s.DeviceID = newDeviceID()
		}
	}
	sess, err := m.opts.Login(ctx, env, s)
	if err != nil {
		// The login's own error, for the logs: the broker's address or a
		// fixed reason, never a credential (the login sends them in its
		// body).
		m.log.Info("a broker link was refused", zap.String("user", userID), zap.String("env", env), zap.Error(err))
		return linkRefusal(err)
	}
	s.AccessToken, s.MDAccessToken, s.Expires, s.BrokerUserID = sess.AccessToken, sess.MDAccessToken, sess.Expires, sess.BrokerUserID
	if _, err := m.Link(ctx, userID, env, MethodAPIKey, s); err != nil {
		m.log.Warn("storing a broker link", zap.String("user", userID), zap.Error(err))
		return storeFailure(err)
	}
	m.log.Info("broker login linked", zap.String("user", userID), zap.String("env", env), zap.String("method", MethodAPIKey))
	m.record(userID, "", linkedEntry(env, MethodAPIKey, src))
	return nil
}

// OAuthOffered reports whether this relay offers the OAuth link (it has
// an OAuth client of the broker's).
func (m *Manager) OAuthOffered() bool { return m.opts.OAuth.ID != "" }

// OAuthOrigin returns the origin (scheme://host) of the broker's
// authorization page, where StartOAuth sends the user's browser: the
// dashboard's broker page allows its forms to lead there. "" when the
// OAuth link is not offered.
func (m *Manager) OAuthOrigin() string {
	if !m.OAuthOffered() {
		return ""
	}
	u, err := url.Parse(m.opts.Endpoints.OAuthAuthorize)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// StartOAuth starts an OAuth link of the user's login in env: it keeps a
// one-time state in the store (by its hash), bound to the user, env and
// src, and returns the broker's authorization page to send the user's
// browser to, with the state, and until when the link may be ended. The
// broker sends the browser back to the OAuth callback, which ends the
// link; a link started from the dashboard (src of kind
// protocol.SourceDashboard) ends only in a browser that still carries
// the session src names. Errors: ErrOAuthOff, ErrUnknownEnv, an error
// matching ErrStorage.
func (m *Manager) StartOAuth(ctx context.Context, userID, env string, src protocol.ActivitySource) (authorizeURL string, expires time.Time, err error) {
	if !m.OAuthOffered() {
		return "", time.Time{}, ErrOAuthOff
	}
	if env != EnvDemo && env != EnvLive {
		return "", time.Time{}, ErrUnknownEnv
	}
	u, err := url.Parse(m.opts.Endpoints.OAuthAuthorize)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("broker: the OAuth authorization address: %w", err)
	}
	now := time.Now()
	expires = now.Add(oauthStateTTL)
	state, hash := newOAuthState()
	err = m.opts.Store.PutOAuthState(ctx, store.OAuthState{Hash: hash, UserID: userID, Env: env, Expires: expires,
		SourceKind: src.Kind, SourceID: src.ID}, maxOAuthStatesPerUser)
	if err != nil {
		m.log.Warn("storing an OAuth link under way", zap.String("user", userID), zap.Error(err))
		return "", time.Time{}, fmt.Errorf("%w: %w", ErrStorage, err)
	}
	q := u.Query()
	q.Set("response_type", "code")
	q.Set("client_id", m.opts.OAuth.ID)
	q.Set("redirect_uri", m.opts.OAuth.RedirectURL)
	q.Set("state", state)
	u.RawQuery = q.Encode()
	return u.String(), expires.UTC(), nil
}

// finishOAuth ends an OAuth link: the broker sent the browser back with
// the state and a code (none when access was not granted); session is
// the id of the dashboard session the browser carries ("" for none). The
// state is taken (good once) and the code exchanged for a session that
// is sealed and stored; broker.linked is recorded in the name of whoever
// started the link. It returns the state taken. Errors: ErrOAuthUnknown,
// ErrOAuthSession, ErrOAuthDenied, a *RefusedError, an
// *UnavailableError, a *ValidationError, an error matching ErrStorage.
func (m *Manager) finishOAuth(ctx context.Context, state, code, session string) (store.OAuthState, error) {
	if !m.OAuthOffered() || state == "" || len(state) > maxOAuthStateLen {
		return store.OAuthState{}, ErrOAuthUnknown
	}
	st, err := m.opts.Store.TakeOAuthState(ctx, oauthStateHash(state), time.Now())
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.OAuthState{}, ErrOAuthUnknown
	case err != nil:
		m.log.Warn("reading an OAuth link under way", zap.Error(err))
		return store.OAuthState{}, fmt.Errorf("%w: %w", ErrStorage, err)
	}
	if st.SourceKind == protocol.SourceDashboard && (session == "" || subtle.ConstantTimeCompare([]byte(session), []byte(st.SourceID)) != 1) {
		// Another browser than the one that started it: someone else's
		// link (started in their session) must not end with this
		// browser's grant at the broker.
		m.log.Info("an OAuth link came back in another browser session", zap.String("user", st.UserID))
		return st, ErrOAuthSession
	}
	if code == "" {
		return st, ErrOAuthDenied
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), linkTimeout)
	defer cancel()
	sess, err := m.exchangeCode(ctx, st.Env, code)
	if err != nil {
		m.log.Info("an OAuth link was refused", zap.String("user", st.UserID), zap.Error(err))
		return st, linkRefusal(err)
	}
	s := Secrets{AccessToken: sess.AccessToken, MDAccessToken: sess.MDAccessToken, Expires: sess.Expires, BrokerUserID: sess.BrokerUserID, DeviceID: newDeviceID()}
	if _, err := m.Link(ctx, st.UserID, st.Env, MethodOAuth, s); err != nil {
		m.log.Warn("storing an OAuth link", zap.String("user", st.UserID), zap.Error(err))
		return st, storeFailure(err)
	}
	m.log.Info("broker login linked", zap.String("user", st.UserID), zap.String("env", st.Env), zap.String("method", MethodOAuth))
	m.record(st.UserID, "", linkedEntry(st.Env, MethodOAuth, oauthSource(st)))
	return st, nil
}

// oauthSource is the source of an OAuth link's broker.linked: whoever
// started it, or the broker for a state stored without one.
func oauthSource(st store.OAuthState) protocol.ActivitySource {
	if st.SourceKind == "" {
		return brokerSource
	}
	return protocol.ActivitySource{Kind: st.SourceKind, ID: st.SourceID}
}

// Reasons of a failed OAuth link, as the callback names them to the
// dashboard (OAuthReturnPath?link=failed&reason=…): fixed codes, never
// what the broker sent.
const (
	// OAuthExpired: the link was unknown, used or expired: start again.
	OAuthExpired = "expired"
	// OAuthSession: the link came back in another browser session than
	// the one that started it.
	OAuthSession = "session"
	// OAuthDenied: the user did not grant access at the broker.
	OAuthDenied = "denied"
	// OAuthRefused: the broker refused the authorization code.
	OAuthRefused = "refused"
	// OAuthUnavailable: the broker could not be reached.
	OAuthUnavailable = "unavailable"
	// OAuthStorage: the relay could not read or store the link.
	OAuthStorage = "storage"
)

// OAuthFailure returns the reason (OAuthExpired, …) of an error of the
// OAuth callback.
func OAuthFailure(err error) string {
	switch {
	case errors.Is(err, ErrOAuthUnknown):
		return OAuthExpired
	case errors.Is(err, ErrOAuthSession):
		return OAuthSession
	case errors.Is(err, ErrOAuthDenied):
		return OAuthDenied
	case errors.Is(err, ErrLoginRefused):
		return OAuthRefused
	case errors.Is(err, ErrBrokerUnavailable):
		return OAuthUnavailable
	}
	return OAuthStorage
}

// OAuthReturnPath is where the OAuth callback sends a person's browser
// back (a request whose Accept names text/html): the dashboard's broker
// page (package relay/dashboard), with ?link=ok or
// ?link=failed&reason=<OAuthFailure>.
const OAuthReturnPath = "/app/broker"
