// Package account keeps the traders' accounts for the dashboard (package
// relay/dashboard): a user's email and password, sign-up, sign-in with its
// budgets, the dashboard's server-side sessions, and password resets. It
// sits between the dashboard's door and the store: the dashboard never
// reads a password or a session row itself.
//
// # Passwords
//
// A password is 10 to 256 characters (any Unicode; not trimmed) and is
// stored as an argon2id hash in the PHC string form
// ($argon2id$v=19$m=…,t=…,p=…$salt$hash), with golang.org/x/crypto/argon2
// (Argon2id, RFC 9106's second recommended option: m=64 MiB, t=3, p=2
// is the default; tests lower it with Options.Argon2). A sign-in for an
// email with no user, or no password, runs the same hash on a dummy, so
// that the answer and its timing are the same as for a wrong password.
//
// # Sessions
//
// A session is a token of kind auth.KindSession ("tb_session_" and 32
// random bytes in base64url), stored as its SHA-256 only, with its user,
// when it was created, when it was last seen and its absolute expiry.
// It is checked by auth.Authenticator like every other kind of token,
// never cached (a sign-out holds at once on every node): unknown,
// past its absolute lifetime (Options.SessionLifetime, 30 days), idle
// longer than Options.SessionIdle (7 days), or of a disabled user is
// ErrUnauthorized. The last-seen time is written at most once a minute.
// A sign-in always makes a new session (rotation: the dashboard deletes
// the one its request carried), and SignOutEverywhere deletes them all.
//
// The session's CSRF token is CSRFToken(session): derived from the
// session's secret, so nothing more is stored and it changes with the
// session.
package account

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"time"
)

// Errors of the Service. The dashboard maps each to one message; none
// says whether an email has an account, except ErrEmailTaken on sign-up
// (which the per-address sign-up budget bounds).
var (
	// ErrBadCredentials refuses a sign-in: unknown email, no password
	// set, wrong password or disabled user, never saying which.
	ErrBadCredentials = errors.New("account: the email or password is wrong")
	// ErrSignupClosed refuses a sign-up when relay serve --signup closed.
	ErrSignupClosed = errors.New("account: sign-up is closed")
	// ErrEmailTaken refuses a sign-up or an email change to an email
	// another user has.
	ErrEmailTaken = errors.New("account: the email is taken")
	// ErrInvalidEmail refuses an email that is not one (alerts.ValidEmail).
	ErrInvalidEmail = errors.New("account: not an email address")
	// ErrWeakPassword refuses a password shorter than MinPassword or
	// longer than MaxPassword.
	ErrWeakPassword = errors.New("account: the password must be 10 to 256 characters")
	// ErrResetUnavailable: no SMTP server is configured, so the operator
	// resets passwords (relay users password).
	ErrResetUnavailable = errors.New("account: password reset by email is not available")
	// ErrResetInvalid refuses a reset link that is wrong, expired or used.
	ErrResetInvalid = errors.New("account: the reset link is wrong, expired or already used")
)

// LimitedError refuses a sign-in, sign-up or reset request over one of
// its budgets; RetryAfter is how long to wait.
type LimitedError struct {
	// Policy names the budget: "signin-ip", "signin-account", "signup-ip"
	// or "reset-ip".
	Policy     string
	RetryAfter time.Duration
}

func (e *LimitedError) Error() string {
	return fmt.Sprintf("account: too many attempts (%s); retry after %s", e.Policy, e.RetryAfter.Round(time.Second))
}

// Password bounds.
const (
	MinPassword = 10
	MaxPassword = 256
)

// Signup is relay serve --signup.
type Signup string

// Sign-up modes.
const (
	// SignupClosed (the default): operators create users (relay users add).
	SignupClosed Signup = "closed"
	// SignupOpen: anyone may sign up, on the free plan.
	SignupOpen Signup = "open"
)

// Session is a dashboard session.
type Session struct {
	// Token is the session's secret, the cookie's value: shown to the
	// browser once, at sign-in, never stored or logged.
	Token     string
	UserID    string
	CreatedAt time.Time
	Expires   time.Time
}

// CSRFToken is the CSRF token of the session whose secret is token: the
// unpadded base64url SHA-256 of "csrf\x00" and the token. A form or fetch
// that changes state sends it (form field csrf, or header X-CSRF-Token);
// the dashboard compares it in constant time.
func CSRFToken(token string) string {
	sum := sha256.Sum256([]byte("csrf\x00" + token))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
