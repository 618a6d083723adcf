package account

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/crypto/argon2"

	"tradebridge/relay/alerts"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/store"
)

// Budgets of the Service, by the client's address or the account tried.
var (
	// SignInIP bounds sign-ins from one address: 10 a minute, burst 10.
	SignInIP = budget.Policy{Name: "signin-ip", Rate: 10, Period: time.Minute, Burst: 10}
	// SignInAccount bounds sign-ins to one email, known or not: 5 a
	// minute, burst 10.
	SignInAccount = budget.Policy{Name: "signin-account", Rate: 5, Period: time.Minute, Burst: 10}
	// SignUpIP bounds sign-ups from one address: 5 an hour.
	SignUpIP = budget.Policy{Name: "signup-ip", Rate: 5, Period: time.Hour, Burst: 5}
	// ResetIP bounds reset requests from one address: 5 an hour.
	ResetIP = budget.Policy{Name: "reset-ip", Rate: 5, Period: time.Hour, Burst: 5}
)

// Defaults of Options.
const (
	DefaultSessionLifetime = 30 * 24 * time.Hour
	DefaultSessionIdle     = auth.DefaultSessionIdle
	DefaultResetTTL        = time.Hour
)

// Options configure a Service.
type Options struct {
	// Store keeps the users, sessions and reset links. Required.
	Store store.Store
	// Signup is relay serve --signup; "" is SignupClosed.
	Signup Signup
	// SMTP sends the password-reset links (relay serve --smtp-url,
	// --smtp-from); without it RequestReset is ErrResetUnavailable.
	SMTP alerts.SMTP
	// Budgets keeps the sign-in, sign-up and reset budgets where every
	// relay node sees them; nil keeps them in memory.
	Budgets budget.Backend
	// SessionLifetime is a session's absolute lifetime. Default 30 days.
	SessionLifetime time.Duration
	// SessionIdle is how long a session may go unused; the relay's
	// auth.Authenticator must be given the same. Default 7 days.
	SessionIdle time.Duration
	// ResetTTL is how long a reset link is accepted. Default 1 hour.
	ResetTTL time.Duration
	// Argon2 are the parameters of new password hashes. Zero fields are
	// DefaultArgon2's.
	Argon2 Argon2Params
	// MaxHashing bounds the passwords hashed at once (sign-ins, sign-ups,
	// resets; each holds Argon2.Memory while it runs), so that a burst of
	// sign-ins from many addresses waits its turn instead of taking the
	// relay's memory. Default DefaultMaxHashing.
	MaxHashing int
	// Now is the clock (sessions, links and the budgets); nil means
	// time.Now.
	Now func() time.Time
	// Logger; nil means none.
	Logger *zap.Logger
}

// Service keeps the traders' accounts. It is safe for concurrent use.
// Its only goroutines send reset mails; Close waits for them.
type Service struct {
	opts Options
	log  *zap.Logger
	// kdf is argon2.IDKey; tests count its calls.
	kdf func(password, salt []byte, time, memory uint32, threads uint8, keyLen uint32) []byte
	// dummy is a hash of no one's password, verified in place of a
	// missing one so that every refused sign-in costs the same.
	dummy string

	signInIP, signInAccount, signUpIP, resetIP *budget.Limiter
	// hashing holds a place per password being hashed (Options.MaxHashing).
	hashing chan struct{}

	// mailCtx ends at Close; mails are the reset mails being sent, which
	// start only while closed is false (under mu).
	mailCtx  context.Context
	stopMail context.CancelFunc
	mu       sync.Mutex
	closed   bool
	mails    sync.WaitGroup
}

// New returns a Service.
func New(opts Options) (*Service, error) {
	if opts.Store == nil {
		return nil, errors.New("account: Options.Store is required")
	}
	switch opts.Signup {
	case "":
		opts.Signup = SignupClosed
	case SignupClosed, SignupOpen:
	default:
		return nil, fmt.Errorf("account: sign-up must be %s or %s", SignupOpen, SignupClosed)
	}
	if err := opts.SMTP.Check(); err != nil {
		return nil, err
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&opts.SessionLifetime, DefaultSessionLifetime)
	def(&opts.SessionIdle, DefaultSessionIdle)
	def(&opts.ResetTTL, DefaultResetTTL)
	if opts.Argon2.Memory == 0 {
		opts.Argon2.Memory = DefaultArgon2.Memory
	}
	if opts.Argon2.Time == 0 {
		opts.Argon2.Time = DefaultArgon2.Time
	}
	if opts.Argon2.Threads == 0 {
		opts.Argon2.Threads = DefaultArgon2.Threads
	}
	if opts.Argon2.Memory < 8*uint32(opts.Argon2.Threads) || opts.Argon2.Memory > maxMemory || opts.Argon2.Time > maxTime ||
		opts.Argon2.Threads > maxThreads {
		return nil, errors.New("account: Options.Argon2 is out of bounds")
	}
	if opts.MaxHashing < 0 {
		return nil, errors.New("account: Options.MaxHashing must not be negative")
	}
	if opts.MaxHashing == 0 {
		opts.MaxHashing = DefaultMaxHashing
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	s := &Service{opts: opts, log: opts.Logger, kdf: argon2.IDKey, hashing: make(chan struct{}, opts.MaxHashing)}
	clock := func() int64 { return opts.Now().UnixNano() }
	for _, l := range []struct {
		into **budget.Limiter
		p    budget.Policy
	}{{&s.signInIP, SignInIP}, {&s.signInAccount, SignInAccount}, {&s.signUpIP, SignUpIP}, {&s.resetIP, ResetIP}} {
		var err error
		if *l.into, err = budget.New(budget.Options{Policy: l.p, Backend: opts.Budgets, Now: clock}); err != nil {
			return nil, fmt.Errorf("account: budget %s: %w", l.p.Name, err)
		}
	}
	// The dummy costs what a hash of these parameters costs to verify;
	// no password hashes to its zero key.
	p := opts.Argon2
	s.dummy = fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.Memory, p.Time, p.Threads,
		base64.RawStdEncoding.EncodeToString(make([]byte, saltLen)), base64.RawStdEncoding.EncodeToString(make([]byte, keyLen)))
	s.mailCtx, s.stopMail = context.WithCancel(context.Background())
	return s, nil
}

// Close stops the reset mails being sent and waits for them. It is
// idempotent.
func (s *Service) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stopMail()
	s.mails.Wait()
}

// Signup returns the sign-up mode.
func (s *Service) Signup() Signup { return s.opts.Signup }

// ResetByEmail reports whether RequestReset sends links (an SMTP server
// is configured).
func (s *Service) ResetByEmail() bool { return s.opts.SMTP.Enabled() }

// now is the clock, to the store's millisecond.
func (s *Service) now() time.Time { return s.opts.Now().UTC().Truncate(time.Millisecond) }

// charge charges one attempt to the key's budget of l.
func charge(l *budget.Limiter, key string) error {
	if d := l.Allow(key); !d.Allowed {
		return &LimitedError{Policy: l.Policy().Name, RetryAfter: d.RetryAfter}
	}
	return nil
}

// CheckEmail returns the email as it is stored (trimmed, lowercased), or
// ErrInvalidEmail when it is not one plain address.
func CheckEmail(email string) (string, error) { return validEmail(email) }

// validEmail returns the normalized email, or ErrInvalidEmail.
func validEmail(email string) (string, error) {
	e := store.NormalizeEmail(email)
	if e == "" || !alerts.ValidEmail(e) {
		return "", ErrInvalidEmail
	}
	return e, nil
}

// SignUp makes a user of the email and password (named after the email's
// local part, on the free plan) and signs it in. ErrSignupClosed,
// ErrInvalidEmail, ErrWeakPassword, *LimitedError ("signup-ip", charged
// for every well-formed attempt), ErrEmailTaken.
func (s *Service) SignUp(ctx context.Context, email, password, clientAddr string) (Session, error) {
	if s.opts.Signup != SignupOpen {
		return Session{}, ErrSignupClosed
	}
	e, err := validEmail(email)
	if err != nil {
		return Session{}, err
	}
	if err := checkPassword(password); err != nil {
		return Session{}, err
	}
	if err := charge(s.signUpIP, clientAddr); err != nil {
		return Session{}, err
	}
	hash, err := s.hash(password)
	if err != nil {
		return Session{}, err
	}
	id, err := auth.NewUserID()
	if err != nil {
		return Session{}, err
	}
	name, _, _ := strings.Cut(e, "@")
	if len(name) > auth.MaxUserName {
		name = strings.ToValidUTF8(name[:auth.MaxUserName], "")
	}
	now := s.now()
	err = s.opts.Store.CreateUser(ctx, store.User{ID: id, Name: name, Plan: string(auth.PlanFree), CreatedAt: now,
		Email: e, PasswordHash: hash})
	if errors.Is(err, store.ErrConflict) {
		if _, lerr := s.opts.Store.UserByEmail(ctx, e); lerr == nil {
			return Session{}, ErrEmailTaken
		}
	}
	if err != nil {
		return Session{}, fmt.Errorf("account: sign up: %w", err)
	}
	s.log.Info("user signed up", zap.String("user", id))
	return s.newSession(ctx, id)
}

// SignIn checks the email and password and makes a new session.
// ErrBadCredentials, the same answer after the same work, whatever was
// wrong; *LimitedError ("signin-ip" by clientAddr, then "signin-account"
// by the email), charged before the password is checked.
func (s *Service) SignIn(ctx context.Context, email, password, clientAddr string) (Session, error) {
	e := store.NormalizeEmail(email)
	if err := charge(s.signInIP, clientAddr); err != nil {
		return Session{}, err
	}
	if err := charge(s.signInAccount, e); err != nil {
		return Session{}, err
	}
	var u store.User
	var err error
	if alerts.ValidEmail(e) {
		u, err = s.opts.Store.UserByEmail(ctx, e)
	} else {
		err = store.ErrNotFound
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return Session{}, fmt.Errorf("account: sign in: %w", err)
	}
	hash := u.PasswordHash
	if err != nil || hash == "" {
		hash = s.dummy
	}
	ok := s.Verify(hash, password)
	if err != nil || u.PasswordHash == "" || u.Disabled || !ok {
		return Session{}, ErrBadCredentials
	}
	return s.newSession(ctx, u.ID)
}

// newSession makes and stores a session of the user.
func (s *Service) newSession(ctx context.Context, userID string) (Session, error) {
	tok, err := auth.NewToken(auth.KindSession)
	if err != nil {
		return Session{}, err
	}
	now := s.now()
	ss := store.Session{Hash: auth.Hash(tok), UserID: userID, CreatedAt: now, LastSeenAt: now, Expires: now.Add(s.opts.SessionLifetime)}
	if err := s.opts.Store.CreateSession(ctx, ss); err != nil {
		return Session{}, fmt.Errorf("account: make a session: %w", err)
	}
	return Session{Token: tok, UserID: userID, CreatedAt: now, Expires: ss.Expires}, nil
}

// SignOut ends the session whose secret is token; an unknown or malformed
// one is no error.
func (s *Service) SignOut(ctx context.Context, token string) error {
	if k, ok := auth.ParseKind(token); !ok || k != auth.KindSession {
		return nil
	}
	if err := s.opts.Store.DeleteSession(ctx, auth.Hash(token)); err != nil {
		return fmt.Errorf("account: sign out: %w", err)
	}
	return nil
}

// SignOutEverywhere ends every session of the user and returns how many.
func (s *Service) SignOutEverywhere(ctx context.Context, userID string) (int, error) {
	n, err := s.opts.Store.DeleteUserSessions(ctx, userID)
	if err != nil {
		return 0, fmt.Errorf("account: sign out everywhere: %w", err)
	}
	return n, nil
}

// SetPassword sets the user's password and ends every session of the
// user. ErrWeakPassword; store.ErrNotFound when there is no such user.
func (s *Service) SetPassword(ctx context.Context, userID, password string) error {
	hash, err := s.Hash(password)
	if err != nil {
		return err
	}
	if err := s.opts.Store.SetUserPassword(ctx, userID, hash); err != nil {
		return fmt.Errorf("account: set password: %w", err)
	}
	if _, err := s.SignOutEverywhere(ctx, userID); err != nil {
		return err
	}
	return nil
}

// SetEmail sets the user's email. ErrInvalidEmail, ErrEmailTaken;
// store.ErrNotFound when there is no such user.
func (s *Service) SetEmail(ctx context.Context, userID, email string) error {
	e, err := validEmail(email)
	if err != nil {
		return err
	}
	err = s.opts.Store.SetUserEmail(ctx, userID, e)
	switch {
	case errors.Is(err, store.ErrConflict):
		return ErrEmailTaken
	case err != nil:
		return fmt.Errorf("account: set email: %w", err)
	}
	return nil
}

// PruneSessions forgets the sessions past their absolute lifetime or idle
// longer than SessionIdle, and returns how many (the relay's janitor).
func (s *Service) PruneSessions(ctx context.Context) (int, error) {
	now := s.now()
	return s.opts.Store.PruneSessions(ctx, now, now.Add(-s.opts.SessionIdle))
}

// resetTokenLen is the length of a reset link's token: 32 random bytes
// in unpadded base64url.
var resetTokenLen = base64.RawURLEncoding.EncodedLen(32)

// RequestReset mails a reset link, linkBase + "/app/reset/" + a one-time
// token valid for ResetTTL, to the user of the email, if there is one
// (enabled, with that email). It answers the same for every well-formed
// email, known or not, and sends the mail in the background so that its
// timing does not tell either. ErrResetUnavailable without SMTP (or
// once the Service is closed),
// ErrInvalidEmail, *LimitedError ("reset-ip").
func (s *Service) RequestReset(ctx context.Context, email, clientAddr, linkBase string) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if !s.opts.SMTP.Enabled() || closed {
		return ErrResetUnavailable
	}
	e, err := validEmail(email)
	if err != nil {
		return err
	}
	if err := charge(s.resetIP, clientAddr); err != nil {
		return err
	}
	u, err := s.opts.Store.UserByEmail(ctx, e)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("account: request a reset: %w", err)
	case u.Disabled:
		return nil
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Errorf("account: random: %w", err)
	}
	tok := base64.RawURLEncoding.EncodeToString(b[:])
	now := s.now()
	err = s.opts.Store.PutPasswordReset(ctx, store.PasswordReset{Hash: auth.Hash(tok), UserID: u.ID, CreatedAt: now,
		Expires: now.Add(s.opts.ResetTTL)})
	if err != nil {
		return fmt.Errorf("account: request a reset: %w", err)
	}
	link := strings.TrimSuffix(linkBase, "/") + "/app/reset/" + tok
	text := "Someone, hopefully you, asked to reset the password of your tradebridge account.\n\n" +
		"To choose a new password, open this link within " + spell(s.opts.ResetTTL) + ":\n\n" + link + "\n\n" +
		"It works once. If you did not ask, ignore this email: your password stays as it is.\n"
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrResetUnavailable
	}
	s.mails.Add(1)
	go func() {
		defer s.mails.Done()
		ctx, cancel := context.WithTimeout(s.mailCtx, alerts.SendTimeout)
		defer cancel()
		if err := s.opts.SMTP.Send(ctx, u.Email, "Reset your tradebridge password", text); err != nil {
			s.log.Warn("sending a password-reset mail failed", zap.String("user", u.ID), zap.Error(err))
			return
		}
		s.log.Info("password-reset mail sent", zap.String("user", u.ID))
	}()
	return nil
}

// Reset sets a new password with a reset link's token, ends every other
// session of the user and signs in. ErrWeakPassword (the link is kept),
// ErrResetInvalid for a token that is wrong, expired or used, or of a
// disabled user.
func (s *Service) Reset(ctx context.Context, token, password string) (Session, error) {
	if err := checkPassword(password); err != nil {
		return Session{}, err
	}
	if len(token) != resetTokenLen {
		return Session{}, ErrResetInvalid
	}
	if _, err := base64.RawURLEncoding.DecodeString(token); err != nil {
		return Session{}, ErrResetInvalid
	}
	userID, err := s.opts.Store.TakePasswordReset(ctx, auth.Hash(token), s.now())
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Session{}, ErrResetInvalid
	case err != nil:
		return Session{}, fmt.Errorf("account: reset: %w", err)
	}
	u, err := s.opts.Store.User(ctx, userID)
	if err != nil {
		return Session{}, fmt.Errorf("account: reset: %w", err)
	}
	if u.Disabled {
		return Session{}, ErrResetInvalid
	}
	if err := s.SetPassword(ctx, userID, password); err != nil {
		return Session{}, err
	}
	s.log.Info("password reset", zap.String("user", userID))
	return s.newSession(ctx, userID)
}

// spell words a duration for a person: "1 hour", "30 minutes".
func spell(d time.Duration) string {
	n, unit := int64(d/time.Minute), "minute"
	if d >= time.Hour && d%time.Hour == 0 {
		n, unit = int64(d/time.Hour), "hour"
	}
	if n != 1 {
		unit += "s"
	}
	return fmt.Sprintf("%d %s", n, unit)
}
