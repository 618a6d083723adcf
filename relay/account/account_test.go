package account

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/crypto/argon2"

	"tradebridge/internal/testkit"
	"tradebridge/relay/alerts"
	"tradebridge/relay/alerts/smtptest"
	"tradebridge/relay/auth"
	"tradebridge/relay/store"
	"tradebridge/relay/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// small are the argon2 parameters of the tests.
var small = Argon2Params{Memory: 64, Time: 1, Threads: 1}

const goodPassword = "correct horse battery"

// rig is a Service over a fresh store, with a fake clock and a count of
// the argon2 computations.
type rig struct {
	s     *Service
	st    store.Store
	clock *testkit.Clock
	kdfs  atomic.Int32
	logs  *observer.ObservedLogs
	authn *auth.Authenticator
}

func newRig(t testing.TB, edit func(*Options)) *rig {
	t.Helper()
	r := &rig{st: storetest.Open(t, "sqlite"), clock: testkit.NewClock(testkit.Epoch)}
	core, logs := observer.New(zap.DebugLevel)
	r.logs = logs
	opts := Options{Store: r.st, Signup: SignupOpen, Argon2: small, Now: r.clock.Now, Logger: zap.New(core)}
	if edit != nil {
		edit(&opts)
	}
	s, err := New(opts)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	s.kdf = func(password, salt []byte, time, memory uint32, threads uint8, keyLen uint32) []byte {
		r.kdfs.Add(1)
		return argon2.IDKey(password, salt, time, memory, threads, keyLen)
	}
	r.s = s
	r.authn, err = auth.New(auth.Options{Store: r.st, SessionIdle: s.opts.SessionIdle, Now: r.clock.Now})
	require.NoError(t, err)
	return r
}

// user makes a user with the email and password through the store.
func (r *rig) user(t testing.TB, email, password string) string {
	t.Helper()
	id, err := auth.NewUserID()
	require.NoError(t, err)
	u := store.User{ID: id, Name: "u", Plan: "pro", CreatedAt: testkit.Epoch, Email: email}
	if password != "" {
		u.PasswordHash, err = r.s.Hash(password)
		require.NoError(t, err)
	}
	require.NoError(t, r.st.CreateUser(context.Background(), u))
	return id
}

// authOK reports whether the session's token authenticates.
func (r *rig) authOK(t *testing.T, token string) bool {
	t.Helper()
	_, err := r.authn.Authenticate(context.Background(), token, auth.KindSession)
	if err != nil {
		require.ErrorIs(t, err, auth.ErrUnauthorized)
	}
	return err == nil
}

func TestHashAndVerify(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	h, err := r.s.Hash(goodPassword)
	require.NoError(t, err)
	require.Regexp(t, regexp.MustCompile(`^\$argon2id\$v=19\$m=64,t=1,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`), h)
	h2, err := r.s.Hash(goodPassword)
	require.NoError(t, err)
	require.NotEqual(t, h, h2, "a fresh salt each time")
	require.True(t, r.s.Verify(h, goodPassword))
	require.False(t, r.s.Verify(h, goodPassword+" "), "not trimmed, exact")
	require.False(t, r.s.Verify(h, ""))

	// The dummy a refused sign-in verifies costs what a real hash does.
	p, _, _, err := parseHash(r.s.dummy)
	require.NoError(t, err)
	require.Equal(t, small, p)

	// A hash keeps its parameters: a service of other defaults verifies it.
	other := newRig(t, func(o *Options) { o.Argon2 = Argon2Params{Memory: 128, Time: 2, Threads: 1} })
	require.True(t, other.s.Verify(h, goodPassword))

	for _, bad := range []string{"", "$argon2i$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5a2V5",
		strings.Replace(h, "v=19", "v=18", 1), strings.Replace(h, "m=64", "m=99999999", 1),
		strings.Replace(h, "t=1", "t=0", 1), h + "$x", "plain text"} {
		require.False(t, r.s.Verify(bad, goodPassword), bad)
	}
	for _, tc := range []struct {
		password string
		err      error
	}{
		{"short", ErrWeakPassword},
		{strings.Repeat("x", MinPassword-1), ErrWeakPassword},
		{strings.Repeat("x", MinPassword), nil},
		{strings.Repeat("é", MaxPassword), nil},
		{strings.Repeat("é", MaxPassword+1), ErrWeakPassword},
		{"\xff\xfe invalid utf-8", ErrWeakPassword},
	} {
		_, err := r.s.Hash(tc.password)
		require.ErrorIs(t, err, tc.err, "%.20q", tc.password)
	}
}

func TestNewOptions(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, "sqlite")
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"no store", Options{}},
		{"bad signup", Options{Store: st, Signup: "maybe"}},
		{"bad smtp", Options{Store: st, SMTP: alerts.SMTP{URL: "smtp://x"}}},
		{"huge argon2", Options{Store: st, Argon2: Argon2Params{Memory: 1 << 30}}},
	} {
		_, err := New(tc.opts)
		require.Error(t, err, tc.name)
	}
	s, err := New(Options{Store: st, Argon2: small})
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, SignupClosed, s.Signup(), "closed by default")
	require.False(t, s.ResetByEmail())
	require.Equal(t, DefaultSessionLifetime, s.opts.SessionLifetime)
	require.Equal(t, 7*24*time.Hour, s.opts.SessionIdle)
	require.Equal(t, time.Hour, s.opts.ResetTTL)
}

func TestSignUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, nil)
	r.user(t, "taken@example.com", goodPassword)
	for _, tc := range []struct {
		name, email, password string
		err                   error
	}{
		{"not an email", "nope", goodPassword, ErrInvalidEmail},
		{"display name", "Bob <bob@example.com>", goodPassword, ErrInvalidEmail},
		{"empty", "  ", goodPassword, ErrInvalidEmail},
		{"weak", "new@example.com", "short", ErrWeakPassword},
		{"taken, in another case", " Taken@EXAMPLE.com", goodPassword, ErrEmailTaken},
	} {
		_, err := r.s.SignUp(ctx, tc.email, tc.password, "10.0.0.1")
		require.ErrorIs(t, err, tc.err, tc.name)
	}

	sess, err := r.s.SignUp(ctx, "New.Trader@Example.com", goodPassword, "10.0.0.2")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(sess.Token, "tb_session_"))
	require.Equal(t, testkit.Epoch.Add(DefaultSessionLifetime), sess.Expires)
	u, err := r.st.User(ctx, sess.UserID)
	require.NoError(t, err)
	require.Equal(t, "new.trader", u.Name, "the email's local part")
	require.Equal(t, "new.trader@example.com", u.Email)
	require.Equal(t, "free", u.Plan)
	require.True(t, r.s.Verify(u.PasswordHash, goodPassword))
	p, err := r.authn.Authenticate(ctx, sess.Token, auth.KindSession)
	require.NoError(t, err)
	require.Equal(t, sess.UserID, p.UserID)
	require.Equal(t, auth.PlanFree, p.Plan)
	ts, err := r.st.ListTokens(ctx, sess.UserID)
	require.NoError(t, err)
	require.Empty(t, ts, "no token the trader never saw")

	// The budget: 5 an hour per address; the taken email's attempt
	// counted, the malformed ones not.
	for i := range 4 {
		_, err := r.s.SignUp(ctx, "u"+string(rune('a'+i))+"@example.com", goodPassword, "10.0.0.1")
		require.NoError(t, err, i)
	}
	_, err = r.s.SignUp(ctx, "late@example.com", goodPassword, "10.0.0.1")
	var le *LimitedError
	require.ErrorAs(t, err, &le)
	require.Equal(t, "signup-ip", le.Policy)
	require.Positive(t, le.RetryAfter)
	_, err = r.s.SignUp(ctx, "other@example.com", goodPassword, "10.0.0.3")
	require.NoError(t, err, "another address")
	r.clock.Advance(le.RetryAfter)
	_, err = r.s.SignUp(ctx, "late@example.com", goodPassword, "10.0.0.1")
	require.NoError(t, err, "after the wait")

	closed := newRig(t, func(o *Options) { o.Signup = SignupClosed })
	_, err = closed.s.SignUp(ctx, "x@example.com", goodPassword, "10.0.0.1")
	require.ErrorIs(t, err, ErrSignupClosed)
}

// Every refused sign-in answers ErrBadCredentials after exactly one argon2
// computation, as a wrong password does; a right one makes a new session.
func TestSignInSameAnswerSameWork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, nil)
	r.user(t, "alice@example.com", goodPassword)
	r.user(t, "nopass@example.com", "")
	disabled := r.user(t, "disabled@example.com", goodPassword)
	require.NoError(t, r.st.SetUserDisabled(ctx, disabled, true))
	corrupt := r.user(t, "corrupt@example.com", "")
	require.NoError(t, r.st.SetUserPassword(ctx, corrupt, "$argon2id$garbage"))

	for i, tc := range []struct {
		name, email, password string
		kdfs                  int32
	}{
		{"wrong password", "alice@example.com", "wrong password!", 1},
		{"unknown email", "nobody@example.com", goodPassword, 1},
		{"no password", "nopass@example.com", goodPassword, 1},
		{"disabled", "disabled@example.com", goodPassword, 1},
		{"not an email", "alice", goodPassword, 1},
		{"empty password", "alice@example.com", "", 1},
		{"corrupt hash", "corrupt@example.com", goodPassword, 0},
	} {
		before := r.kdfs.Load()
		_, err := r.s.SignIn(ctx, tc.email, tc.password, "10.0.1."+string(rune('0'+i)))
		require.ErrorIs(t, err, ErrBadCredentials, tc.name)
		require.Equal(t, ErrBadCredentials.Error(), err.Error(), "the same words: %s", tc.name)
		if tc.name != "corrupt hash" {
			require.Equal(t, tc.kdfs, r.kdfs.Load()-before, "one argon2 computation: %s", tc.name)
		}
	}

	a, err := r.s.SignIn(ctx, "  ALICE@example.com ", goodPassword, "10.0.2.1")
	require.NoError(t, err)
	b, err := r.s.SignIn(ctx, "alice@example.com", goodPassword, "10.0.2.1")
	require.NoError(t, err)
	require.NotEqual(t, a.Token, b.Token, "every sign-in makes a new session")
	require.True(t, r.authOK(t, a.Token))
	require.True(t, r.authOK(t, b.Token))
	for _, e := range r.logs.All() {
		require.NotContains(t, e.Message+" "+strings.Join(fieldValues(e), " "), goodPassword)
		require.NotContains(t, strings.Join(fieldValues(e), " "), a.Token)
	}
}

func fieldValues(e observer.LoggedEntry) []string {
	var out []string
	for k, v := range e.ContextMap() {
		out = append(out, k+"="+strings.TrimSpace(strings.ReplaceAll(toString(v), "\n", " ")))
	}
	return out
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if err, ok := v.(error); ok {
		return err.Error()
	}
	return ""
}

// Sign-ins are bounded per address (10 a minute, burst 10) and per
// account (5 a minute, burst 10, known email or not), both charged
// before the password is checked.
func TestSignInBudgets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, nil)
	r.user(t, "alice@example.com", goodPassword)

	// Per address: 10 attempts at different accounts, then refused
	// without any argon2 work.
	for i := range 10 {
		_, err := r.s.SignIn(ctx, "user"+string(rune('a'+i))+"@example.com", "wrong password!", "10.0.0.1")
		require.ErrorIs(t, err, ErrBadCredentials, i)
	}
	before := r.kdfs.Load()
	_, err := r.s.SignIn(ctx, "alice@example.com", goodPassword, "10.0.0.1")
	var le *LimitedError
	require.ErrorAs(t, err, &le)
	require.Equal(t, "signin-ip", le.Policy)
	require.Equal(t, before, r.kdfs.Load(), "refused before the password is checked")
	r.clock.Advance(le.RetryAfter)
	_, err = r.s.SignIn(ctx, "alice@example.com", goodPassword, "10.0.0.1")
	require.NoError(t, err, "after the wait")

	// Per account: 10 attempts from 10 addresses, then refused from an
	// eleventh, for a known and an unknown email alike.
	for _, email := range []string{"ALICE@example.com", "ghost@example.com"} {
		for i := range 10 {
			_, err := r.s.SignIn(ctx, email, "wrong password!", "10.1."+email[:1]+"."+string(rune('0'+i)))
			if i == 0 && email[0] == 'A' {
				// alice's success above charged her once already.
				require.ErrorIs(t, err, ErrBadCredentials)
				continue
			}
			if errors.As(err, &le) {
				require.Equal(t, 9, i, "alice: her success counted")
				break
			}
			require.ErrorIs(t, err, ErrBadCredentials, "%s %d", email, i)
		}
		_, err = r.s.SignIn(ctx, email, goodPassword, "10.2.0.1")
		require.ErrorAs(t, err, &le, email)
		require.Equal(t, "signin-account", le.Policy, email)
	}
	// 5 a minute: 12 s later one more attempt is admitted.
	r.clock.Advance(12 * time.Second)
	_, err = r.s.SignIn(ctx, "alice@example.com", goodPassword, "10.2.0.2")
	require.NoError(t, err)
}

// A session lives until its absolute expiry or an idle spell too long;
// signing out ends it at once; signing out everywhere and a new password
// end all of the user's.
func TestSessionLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, func(o *Options) { o.SessionLifetime = 10 * time.Hour; o.SessionIdle = 3 * time.Hour })
	alice := r.user(t, "alice@example.com", goodPassword)
	bob := r.user(t, "bob@example.com", goodPassword)
	signIn := func(email string) Session {
		s, err := r.s.SignIn(ctx, email, goodPassword, "10.0.0.1")
		require.NoError(t, err)
		return s
	}

	// Absolute: busy every 2 hours, refused at 10 hours.
	a := signIn("alice@example.com")
	for range 4 {
		r.clock.Advance(2 * time.Hour)
		require.True(t, r.authOK(t, a.Token))
	}
	r.clock.Advance(2 * time.Hour)
	require.False(t, r.authOK(t, a.Token), "past its absolute lifetime")

	// Idle.
	a = signIn("alice@example.com")
	r.clock.Advance(3*time.Hour + time.Millisecond)
	require.False(t, r.authOK(t, a.Token), "idle too long")
	n, err := r.s.PruneSessions(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n, "the expired and the idle one")

	// Sign-out: this session only, at once.
	a1, a2, b1 := signIn("alice@example.com"), signIn("alice@example.com"), signIn("bob@example.com")
	require.NoError(t, r.s.SignOut(ctx, a1.Token))
	require.NoError(t, r.s.SignOut(ctx, a1.Token), "twice is no error")
	require.NoError(t, r.s.SignOut(ctx, "garbage"))
	require.False(t, r.authOK(t, a1.Token))
	require.True(t, r.authOK(t, a2.Token))

	// Everywhere: all of alice's, none of bob's.
	a3 := signIn("alice@example.com")
	n, err = r.s.SignOutEverywhere(ctx, alice)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.False(t, r.authOK(t, a2.Token))
	require.False(t, r.authOK(t, a3.Token))
	require.True(t, r.authOK(t, b1.Token))

	// A new password ends every session; the old password is refused.
	b2 := signIn("bob@example.com")
	require.ErrorIs(t, r.s.SetPassword(ctx, bob, "short"), ErrWeakPassword)
	require.True(t, r.authOK(t, b2.Token), "a refused change ends nothing")
	require.NoError(t, r.s.SetPassword(ctx, bob, "a new password, long"))
	require.False(t, r.authOK(t, b1.Token))
	require.False(t, r.authOK(t, b2.Token))
	_, err = r.s.SignIn(ctx, "bob@example.com", goodPassword, "10.0.0.2")
	require.ErrorIs(t, err, ErrBadCredentials)
	_, err = r.s.SignIn(ctx, "bob@example.com", "a new password, long", "10.0.0.2")
	require.NoError(t, err)
	require.ErrorIs(t, r.s.SetPassword(ctx, "usr_nobody", goodPassword), store.ErrNotFound)

	// A disabled user's session is refused, and so is the sign-in.
	a4 := signIn("alice@example.com")
	require.NoError(t, r.st.SetUserDisabled(ctx, alice, true))
	require.False(t, r.authOK(t, a4.Token))
	_, err = r.s.SignIn(ctx, "alice@example.com", goodPassword, "10.0.0.3")
	require.ErrorIs(t, err, ErrBadCredentials)
}

func TestSetEmail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, nil)
	alice := r.user(t, "alice@example.com", goodPassword)
	r.user(t, "bob@example.com", goodPassword)
	for _, tc := range []struct {
		user, email string
		err         error
	}{
		{alice, "not an email", ErrInvalidEmail},
		{alice, "", ErrInvalidEmail},
		{alice, "BOB@example.com", ErrEmailTaken},
		{"usr_nobody", "x@example.com", store.ErrNotFound},
		{alice, "Alice@New.example", nil},
	} {
		require.ErrorIs(t, r.s.SetEmail(ctx, tc.user, tc.email), tc.err, tc.email)
	}
	_, err := r.s.SignIn(ctx, "alice@new.example", goodPassword, "10.0.0.1")
	require.NoError(t, err)
}

// A reset link is mailed to a known user only, answers the same for any
// email, sets the password once, ends every other session and signs in.
func TestPasswordReset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mail := smtptest.Start(t)
	r := newRig(t, func(o *Options) { o.SMTP = mail.SMTP("relay@relay.example"); o.ResetTTL = 30 * time.Minute })
	require.True(t, r.s.ResetByEmail())
	alice := r.user(t, "alice@example.com", goodPassword)
	old, err := r.s.SignIn(ctx, "alice@example.com", goodPassword, "10.0.0.1")
	require.NoError(t, err)

	require.ErrorIs(t, r.s.RequestReset(ctx, "nope", "10.0.0.1", "https://relay.example"), ErrInvalidEmail)
	require.NoError(t, r.s.RequestReset(ctx, "nobody@example.com", "10.0.0.1", "https://relay.example"), "no enumeration")
	require.NoError(t, r.s.RequestReset(ctx, "ALICE@example.com", "10.0.0.1", "https://relay.example/"))
	m := mail.Next(t, testkit.Medium)
	require.Equal(t, "alice@example.com", m.To)
	require.True(t, m.TLS)
	require.Contains(t, string(m.Data), "Subject: Reset your tradebridge password")
	link := regexp.MustCompile(`https://relay\.example/app/reset/([A-Za-z0-9_-]{43})\r\n`).FindStringSubmatch(string(m.Data))
	require.NotNil(t, link, string(m.Data))
	token := link[1]
	require.Contains(t, string(m.Data), "within 30 minutes")
	r.s.Close() // every mail sent: none more for nobody@
	require.ErrorIs(t, r.s.RequestReset(ctx, "alice@example.com", "10.0.0.9", "https://relay.example"), ErrResetUnavailable,
		"no mail once closed")
	require.Len(t, mail.Messages(), 1, "no mail for an unknown email")
	for _, e := range r.logs.All() {
		require.NotContains(t, strings.Join(fieldValues(e), " ")+e.Message, token)
	}

	_, err = r.s.Reset(ctx, token, "short")
	require.ErrorIs(t, err, ErrWeakPassword)
	for _, bad := range []string{"", "x", strings.Repeat("A", 43), token + "A"} {
		_, err = r.s.Reset(ctx, bad, "a new password, long")
		require.ErrorIs(t, err, ErrResetInvalid, bad)
	}
	sess, err := r.s.Reset(ctx, token, "a new password, long")
	require.NoError(t, err, "the weak password's refusal kept the link")
	require.Equal(t, alice, sess.UserID)
	require.True(t, r.authOK(t, sess.Token))
	require.False(t, r.authOK(t, old.Token), "every other session ended")
	_, err = r.s.Reset(ctx, token, "another password, long")
	require.ErrorIs(t, err, ErrResetInvalid, "used once")
	_, err = r.s.SignIn(ctx, "alice@example.com", "a new password, long", "10.0.0.2")
	require.NoError(t, err)
}

// A link expires after ResetTTL; a disabled user's link resets nothing;
// reset requests are bounded per address; without SMTP there are none.
func TestPasswordResetRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mail := smtptest.Start(t)
	r := newRig(t, func(o *Options) { o.SMTP = mail.SMTP("relay@relay.example") })
	r.user(t, "alice@example.com", goodPassword)
	carol := r.user(t, "carol@example.com", goodPassword)
	tokenOf := func() string {
		m := mail.Next(t, testkit.Medium)
		return regexp.MustCompile(`/app/reset/([A-Za-z0-9_-]{43})`).FindStringSubmatch(string(m.Data))[1]
	}

	require.NoError(t, r.s.RequestReset(ctx, "alice@example.com", "10.0.0.1", "https://relay.example"))
	tok := tokenOf()
	r.clock.Advance(time.Hour + time.Millisecond)
	_, err := r.s.Reset(ctx, tok, "a new password, long")
	require.ErrorIs(t, err, ErrResetInvalid, "expired")

	require.NoError(t, r.s.RequestReset(ctx, "carol@example.com", "10.0.0.1", "https://relay.example"))
	tok = tokenOf()
	require.NoError(t, r.st.SetUserDisabled(ctx, carol, true))
	_, err = r.s.Reset(ctx, tok, "a new password, long")
	require.ErrorIs(t, err, ErrResetInvalid, "disabled")

	// 5 an hour: alice's is an hour old, carol's counts; 4 more.
	for range 4 {
		require.NoError(t, r.s.RequestReset(ctx, "nobody@example.com", "10.0.0.1", "https://relay.example"))
	}
	err = r.s.RequestReset(ctx, "alice@example.com", "10.0.0.1", "https://relay.example")
	var le *LimitedError
	require.ErrorAs(t, err, &le)
	require.Equal(t, "reset-ip", le.Policy)
	require.NoError(t, r.s.RequestReset(ctx, "nobody@example.com", "10.0.0.2", "https://relay.example"), "another address")

	none := newRig(t, nil)
	require.ErrorIs(t, none.s.RequestReset(ctx, "alice@example.com", "10.0.0.1", "https://relay.example"), ErrResetUnavailable)
}

// At most Options.MaxHashing passwords are hashed at once, however many
// sign-ins arrive together.
func TestHashingIsBounded(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(o *Options) { o.MaxHashing = 2 })
	var running, most atomic.Int32
	release := make(chan struct{})
	r.s.kdf = func(password, salt []byte, time, memory uint32, threads uint8, keyLen uint32) []byte {
		n := running.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		<-release
		running.Add(-1)
		return argon2.IDKey(password, salt, time, memory, threads, keyLen)
	}
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() { r.s.Verify(r.s.dummy, fmt.Sprint("password-", i)) })
	}
	require.Eventually(t, func() bool { return running.Load() == 2 }, testkit.Long, testkit.Tick)
	close(release)
	wg.Wait()
	require.Equal(t, int32(2), most.Load(), "two at a time, never more")
}
