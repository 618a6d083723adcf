package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/account"
	"tradebridge/relay/activity"
	"tradebridge/relay/auth"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/pairing"
	"tradebridge/relay/profile"
	"tradebridge/relay/store"
	"tradebridge/relay/tradecall"
)

// signedView fills the parts of a signed-in page's view that every page
// has: the session's CSRF token and the kill switch's state.
func (s *Server) signedView(r *http.Request, sess *session, v *view) {
	v.SignedIn, v.CSRF, v.Kill = true, sess.csrf, s.killState(r.Context(), sess)
}

// killState reads the kill switch through the Management API (GET
// controls): "on" or "off"; "off" when it cannot be read.
func (s *Server) killState(ctx context.Context, sess *session) string {
	status, body := s.opts.Manage.Invoke(ctx, sess.p, sess.src, http.MethodGet, "controls", nil)
	if status != http.StatusOK {
		s.log.Debug("reading the kill switch", zap.Int("status", status))
		return "off"
	}
	var ans struct {
		Data struct {
			KillSwitch bool `json:"killSwitch"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &ans) == nil && ans.Data.KillSwitch {
		return "on"
	}
	return "off"
}

// ---- Signing in, up and out ----

// signinForm serves GET /app/signin.
func (s *Server) signinForm(w http.ResponseWriter, _ *http.Request) {
	s.render(w, http.StatusOK, "signin", &view{Title: "Sign in", Signup: s.opts.Signup == account.SignupOpen})
}

// signin serves POST /app/signin: the same answer for an unknown email and
// a wrong password (account.ErrBadCredentials).
func (s *Server) signin(w http.ResponseWriter, r *http.Request) {
	sess, err := s.opts.Accounts.SignIn(r.Context(), r.PostForm.Get("email"), r.PostForm.Get("password"), httpapi.ClientAddr(r))
	if err != nil {
		status, msg := s.accountError(w, err, "sign you in")
		s.render(w, status, "signin", &view{Title: "Sign in", Error: msg, Signup: s.opts.Signup == account.SignupOpen})
		return
	}
	s.startSession(w, r, sess)
}

// startSession ends the session the request carried (a new one is made at
// every sign-in: a cookie planted before it is worth nothing after), sets
// the new one's cookie and goes home.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, sess account.Session) {
	if old := SessionToken(r); old != "" {
		if err := s.opts.Accounts.SignOut(r.Context(), old); err != nil {
			s.log.Warn("ending the session a sign-in replaced", zap.Error(err))
		}
	}
	s.setSession(w, r, sess)
	http.Redirect(w, r, "/app", http.StatusSeeOther)
}

// accountError maps an error of Accounts to a status and one sentence,
// setting Retry-After for a budget's refusal; doing names what failed
// ("sign you in").
func (s *Server) accountError(w http.ResponseWriter, err error, doing string) (int, string) {
	var limited *account.LimitedError
	switch {
	case errors.Is(err, account.ErrBadCredentials):
		return http.StatusUnauthorized, "The email or password is wrong."
	case errors.Is(err, account.ErrSignupClosed):
		return http.StatusNotFound, "Sign-up is closed: ask the operator of this relay for an account."
	case errors.Is(err, account.ErrEmailTaken):
		return http.StatusConflict, "This email already has an account. Sign in, or reset its password."
	case errors.Is(err, account.ErrInvalidEmail):
		return http.StatusBadRequest, "That is not an email address."
	case errors.Is(err, account.ErrWeakPassword):
		return http.StatusBadRequest, "The password must be 10 to 256 characters."
	case errors.Is(err, account.ErrResetInvalid):
		return http.StatusBadRequest, "This reset link is wrong, expired or already used. Ask for a new one."
	case errors.As(err, &limited):
		secs := max(1, int((limited.RetryAfter+time.Second-1)/time.Second))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		return http.StatusTooManyRequests, "Too many attempts. Try again in " + strconv.Itoa(secs) + " seconds."
	}
	s.log.Warn("accounts failed", zap.String("doing", doing), zap.Error(err))
	return http.StatusServiceUnavailable, "The relay cannot " + doing + " right now. Try again shortly."
}

// signupForm serves GET /app/signup: the form, or 404 saying sign-up is
// closed.
func (s *Server) signupForm(w http.ResponseWriter, _ *http.Request) {
	if s.opts.Signup != account.SignupOpen {
		s.render(w, http.StatusNotFound, "signup-closed", &view{Title: "Sign-up is closed"})
		return
	}
	s.render(w, http.StatusOK, "signup", &view{Title: "Sign up"})
}

// signup serves POST /app/signup: a new user on the free plan, signed in.
func (s *Server) signup(w http.ResponseWriter, r *http.Request) {
	if s.opts.Signup != account.SignupOpen {
		s.render(w, http.StatusNotFound, "signup-closed", &view{Title: "Sign-up is closed"})
		return
	}
	sess, err := s.opts.Accounts.SignUp(r.Context(), r.PostForm.Get("email"), r.PostForm.Get("password"), httpapi.ClientAddr(r))
	if err != nil {
		status, msg := s.accountError(w, err, "sign you up")
		if status == http.StatusNotFound {
			s.render(w, status, "signup-closed", &view{Title: "Sign-up is closed"})
			return
		}
		s.render(w, status, "signup", &view{Title: "Sign up", Error: msg})
		return
	}
	s.startSession(w, r, sess)
}

// signout serves POST /app/signout.
func (s *Server) signout(w http.ResponseWriter, r *http.Request, sess *session) {
	if err := s.opts.Accounts.SignOut(r.Context(), sess.token); err != nil {
		s.log.Warn("signing out", zap.Error(err))
		s.renderError(w, r, sess, http.StatusServiceUnavailable, "The relay cannot sign you out right now. Try again shortly.")
		return
	}
	clearSession(w, r)
	http.Redirect(w, r, "/app/signin", http.StatusSeeOther)
}

// signoutEverywhere serves POST /app/signout-everywhere.
func (s *Server) signoutEverywhere(w http.ResponseWriter, r *http.Request, sess *session) {
	if _, err := s.opts.Accounts.SignOutEverywhere(r.Context(), sess.p.UserID); err != nil {
		s.log.Warn("signing out everywhere", zap.Error(err))
		s.renderError(w, r, sess, http.StatusServiceUnavailable, "The relay cannot sign you out right now. Try again shortly.")
		return
	}
	clearSession(w, r)
	http.Redirect(w, r, "/app/signin", http.StatusSeeOther)
}

// resetView is the reset pages' data.
type resetView struct {
	// Email: resets go by email; else the page says to ask the operator.
	Email bool
	// Token is the reset link's token, for the new password form.
	Token string
}

// resetForm serves GET /app/reset.
func (s *Server) resetForm(w http.ResponseWriter, _ *http.Request) {
	s.render(w, http.StatusOK, "reset", &view{Title: "Reset your password", Data: resetView{Email: s.opts.EmailReset}})
}

// reset serves POST /app/reset: the same page whatever the email.
func (s *Server) reset(w http.ResponseWriter, r *http.Request) {
	err := s.opts.Accounts.RequestReset(r.Context(), r.PostForm.Get("email"), httpapi.ClientAddr(r), origin(r)+"/app/reset/")
	switch {
	case errors.Is(err, account.ErrResetUnavailable):
		s.render(w, http.StatusOK, "reset", &view{Title: "Reset your password", Data: resetView{}})
		return
	case err != nil && !errors.Is(err, account.ErrInvalidEmail):
		status, msg := s.accountError(w, err, "send a reset link")
		s.render(w, status, "reset", &view{Title: "Reset your password", Error: msg, Data: resetView{Email: s.opts.EmailReset}})
		return
	}
	s.render(w, http.StatusOK, "reset-sent", &view{Title: "Check your email"})
}

// newPasswordForm serves GET /app/reset/{token}.
func (s *Server) newPasswordForm(w http.ResponseWriter, r *http.Request) {
	s.render(w, http.StatusOK, "new-password", &view{Title: "Choose a new password", Data: resetView{Token: r.PathValue("token")}})
}

// newPassword serves POST /app/reset/{token}: sets the password and signs
// in.
func (s *Server) newPassword(w http.ResponseWriter, r *http.Request) {
	token := r.PathValue("token")
	sess, err := s.opts.Accounts.Reset(r.Context(), token, r.PostForm.Get("password"))
	if err != nil {
		status, msg := s.accountError(w, err, "set the password")
		s.render(w, status, "new-password", &view{Title: "Choose a new password", Error: msg, Data: resetView{Token: token}})
		return
	}
	s.startSession(w, r, sess)
}

// ---- Home ----

// home serves GET /app.
func (s *Server) home(w http.ResponseWriter, r *http.Request, sess *session) {
	v := &view{Title: "Home", Nav: "home", Data: s.readStatus(r.Context(), sess.p.UserID)}
	s.signedView(r, sess, v)
	s.render(w, http.StatusOK, "home", v)
}

// status serves GET /app/status: the home page's status section alone.
func (s *Server) status(w http.ResponseWriter, r *http.Request, sess *session) {
	var buf bytes.Buffer
	if err := s.pages.status.Execute(&buf, s.readStatus(r.Context(), sess.p.UserID)); err != nil {
		s.log.Error("rendering the status", zap.Error(err))
		httpapi.WriteError(w, http.StatusInternalServerError, httpapi.Error{Detail: "the status could not be shown"})
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

// ---- Add a PC ----

// pairView is the pairing page's data: the code minted, if any.
type pairView struct {
	Code    string
	Expires time.Time
	Command string
}

// pairForm serves GET /app/pair.
func (s *Server) pairForm(w http.ResponseWriter, r *http.Request, sess *session) {
	v := &view{Title: "Add a PC", Nav: "pair", Data: pairView{}}
	s.signedView(r, sess, v)
	s.render(w, http.StatusOK, "pair", v)
}

// pair serves POST /app/pair: mints a code and shows it with the command
// that uses it.
func (s *Server) pair(w http.ResponseWriter, r *http.Request, sess *session) {
	c, err := pairing.Mint(r.Context(), s.opts.Pairing, sess.p.UserID, s.opts.Now())
	if err != nil {
		s.log.Warn("minting a pairing code", zap.Error(err))
		s.renderError(w, r, sess, http.StatusServiceUnavailable, "The relay cannot make a code right now. Try again shortly.")
		return
	}
	v := &view{Title: "Add a PC", Nav: "pair", Data: pairView{Code: c.Code, Expires: c.ExpiresAt,
		Command: "agent pair " + c.Code + " --relay " + origin(r)}}
	s.signedView(r, sess, v)
	s.render(w, http.StatusOK, "pair", v)
}

// ---- Tokens ----

// MaxTokenName bounds a token's name, in characters.
const MaxTokenName = 64

// tokensView is the tokens page's data.
type tokensView struct {
	Tokens []tokenRow
	// New is the token made just now, shown once.
	New string
	// Name, Profile and Scope refill the form after a refusal.
	Name, Profile, Scope string
}

// tokenRow is one token of the list.
type tokenRow struct {
	ID, Kind, Name, Profile, Scope string
	Created, Revoked               string
}

// tokens serves GET /app/tokens.
func (s *Server) tokens(w http.ResponseWriter, r *http.Request, sess *session) {
	s.renderTokens(w, r, sess, http.StatusOK, tokensView{}, "")
}

// renderTokens shows the tokens page with the user's tokens.
func (s *Server) renderTokens(w http.ResponseWriter, r *http.Request, sess *session, status int, tv tokensView, formErr string) {
	list, err := s.opts.Tokens.List(r.Context(), sess.p.UserID)
	if err != nil {
		s.log.Warn("listing tokens", zap.Error(err))
		s.renderError(w, r, sess, http.StatusServiceUnavailable, "The relay cannot list your tokens right now. Try again shortly.")
		return
	}
	for _, t := range list {
		tv.Tokens = append(tv.Tokens, tokenRow{ID: t.ID, Kind: string(t.Kind), Name: tokenName(t), Profile: t.Profile,
			Scope: string(t.Scope), Created: shownTime(t.CreatedAt), Revoked: shownTime(t.RevokedAt)})
	}
	v := &view{Title: "Tokens", Nav: "tokens", Error: formErr, Data: tv}
	s.signedView(r, sess, v)
	s.render(w, status, "tokens", v)
}

// newToken serves POST /app/tokens: a named API token with its response
// profile and scope (trade when the form sends none), shown once.
func (s *Server) newToken(w http.ResponseWriter, r *http.Request, sess *session) {
	name := strings.TrimSpace(r.PostForm.Get("name"))
	prof := r.PostForm.Get("profile")
	if prof == "" {
		prof = string(profile.Standard)
	}
	scope := r.PostForm.Get("scope")
	if scope == "" {
		scope = string(auth.ScopeTrade)
	}
	tv := tokensView{Name: name, Profile: prof, Scope: scope}
	if !validTokenName(name) {
		s.renderTokens(w, r, sess, http.StatusBadRequest, tv, "A token's name is 1 to 64 characters, without control characters.")
		return
	}
	p, err := profile.Parse(prof)
	if err != nil || (p != profile.Standard && p != profile.Compatible) {
		s.renderTokens(w, r, sess, http.StatusBadRequest, tv, "The response profile is standard or compatible.")
		return
	}
	sc, err := auth.ParseScope(scope)
	if err != nil {
		s.renderTokens(w, r, sess, http.StatusBadRequest, tv, "The scope is trade or read.")
		return
	}
	tok, err := s.opts.Tokens.Issue(r.Context(), sess.p.UserID, name, p, sc)
	if err != nil {
		s.log.Warn("issuing a token", zap.Error(err))
		s.renderError(w, r, sess, http.StatusServiceUnavailable, "The relay cannot make a token right now. Try again shortly.")
		return
	}
	s.renderTokens(w, r, sess, http.StatusOK, tokensView{New: tok}, "")
}

// shownTime shows an RFC 3339 time of relay/auth as the pages show
// times; "" stays "".
func shownTime(s string) string {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return s
	}
	return when(t)
}

// validTokenName reports a token name of 1 to MaxTokenName characters of
// valid UTF-8 with no control characters.
func validTokenName(name string) bool {
	n := utf8.RuneCountInString(name)
	return n >= 1 && n <= MaxTokenName && utf8.ValidString(name) &&
		strings.IndexFunc(name, unicode.IsControl) < 0
}

// tokenIDShape is a token's id: the first 12 hex digits of its hash.
var tokenIDShape = regexp.MustCompile(`^[0-9a-f]{12}$`)

// revokeToken serves POST /app/tokens/{id}/revoke: 404 for an id that is
// none of the user's tokens.
func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request, sess *session) {
	id := r.PathValue("id")
	err := store.ErrNotFound
	if tokenIDShape.MatchString(id) {
		err = s.opts.Tokens.Revoke(r.Context(), sess.p.UserID, id)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		s.renderError(w, r, sess, http.StatusNotFound, "You have no such token.")
		return
	case err != nil:
		s.log.Warn("revoking a token", zap.Error(err))
		s.renderError(w, r, sess, http.StatusServiceUnavailable, "The relay cannot revoke the token right now. Try again shortly.")
		return
	}
	http.Redirect(w, r, "/app/tokens", http.StatusSeeOther)
}

// ---- Activity ----

// activityView is the activity page's data.
type activityView struct {
	Events []protocol.ActivityEntry
	// Next is the next page's URL; "" on the last page.
	Next string
	// Kind and Account are the filters.
	Kind, Account string
	// First: the newest page, to which live entries are added.
	First bool
	Kinds []string
}

// activity serves GET /app/activity: the log with the route's filters
// (kind, account; before pages), newest first.
func (s *Server) activity(w http.ResponseWriter, r *http.Request, sess *session) {
	// The form sends its empty filters; the route's parameters are absent
	// instead.
	q := r.URL.Query()
	for k, vs := range q {
		if len(vs) == 1 && strings.TrimSpace(vs[0]) == "" {
			delete(q, k)
		}
	}
	r.URL.RawQuery = q.Encode()
	av := activityView{Kind: q.Get("kind"), Account: q.Get("account"), First: q.Get("before") == "", Kinds: protocol.ActivityKinds}
	v := &view{Title: "Activity", Nav: "activity", Data: &av}
	s.signedView(r, sess, v)
	args, e := tradecall.ParseHTTP(w, r, &activity.Endpoint)
	var aq store.ActivityQuery
	if e == nil {
		aq, e = activity.Query(args)
	}
	if e != nil {
		v.Error = "The filters are not valid: " + e.Detail
		s.render(w, http.StatusBadRequest, "activity", v)
		return
	}
	page, err := activity.ReadPage(r.Context(), s.opts.Activity, sess.p.UserID, aq)
	if err != nil {
		s.log.Warn("reading the activity log", zap.Error(err))
		s.renderError(w, r, sess, http.StatusServiceUnavailable, "The relay cannot read your activity right now. Try again shortly.")
		return
	}
	av.Events = page.Events
	if page.Next != nil {
		nq := url.Values{"before": {*page.Next}}
		if av.Kind != "" {
			nq.Set("kind", av.Kind)
		}
		if av.Account != "" {
			nq.Set("account", av.Account)
		}
		av.Next = "/app/activity?" + nq.Encode()
	}
	s.render(w, http.StatusOK, "activity", v)
}

// ---- The kill switch ----

// killAnswer is POST /app/kill-switch's answer to a fetch.
type killAnswer struct {
	KillSwitch bool `json:"killSwitch"`
	// Applied: the PC applied it; false when it was recorded and waits
	// for the PC to connect.
	Applied bool `json:"applied"`
}

// killSwitch serves POST /app/kill-switch: the Management API's PUT
// controls/kill-switch, in process, with the session's user (its rules
// and its kill budget), on every plan.
func (s *Server) killSwitch(w http.ResponseWriter, r *http.Request, sess *session) {
	var enabled bool
	switch r.PostForm.Get("enabled") {
	case "true":
		enabled = true
	case "false":
	default:
		s.killRefused(w, r, sess, http.StatusBadRequest, nil, "Say whether to turn the kill switch on or off.")
		return
	}
	body, _ := json.Marshal(killBody(enabled))
	status, answer := s.opts.Manage.Invoke(r.Context(), sess.p, sess.src, http.MethodPut, "controls/kill-switch", body)
	if status != http.StatusOK {
		var e struct {
			Detail string `json:"detail"`
		}
		_ = json.Unmarshal(answer, &e)
		s.killRefused(w, r, sess, status, answer, "The kill switch was not changed: "+e.Detail)
		return
	}
	ans := killAnswer{KillSwitch: enabled, Applied: true}
	var out struct {
		Data struct {
			KillSwitch *bool `json:"killSwitch"`
		} `json:"data"`
		Applied *bool `json:"applied"`
	}
	if json.Unmarshal(answer, &out) == nil {
		if out.Data.KillSwitch != nil {
			ans.KillSwitch = *out.Data.KillSwitch
		}
		if out.Applied != nil {
			ans.Applied = *out.Applied
		}
	}
	if wantsJSON(r) {
		httpapi.WriteWithTop(w, http.StatusOK, ans, map[string]any{"killSwitch": ans.KillSwitch, "applied": ans.Applied})
		return
	}
	http.Redirect(w, r, back(r), http.StatusSeeOther)
}

// killBody is the Management API's kill switch body: turning it on
// flattens every account too.
func killBody(enabled bool) map[string]bool {
	if enabled {
		return map[string]bool{"enabled": true, "flattenOnKill": true}
	}
	return map[string]bool{"enabled": false}
}

// killRefused answers a refused kill switch: the Management API's error
// to a fetch (answer, when it gave one), else a page saying why.
func (s *Server) killRefused(w http.ResponseWriter, r *http.Request, sess *session, status int, answer []byte, message string) {
	if wantsJSON(r) {
		if answer != nil {
			httpapi.WriteRaw(w, status, answer)
			return
		}
		httpapi.WriteError(w, status, httpapi.Error{Code: errcode.InvalidArgument, Detail: message})
		return
	}
	s.renderError(w, r, sess, status, message)
}

// back is where a form posted without script returns: the dashboard page
// it came from (its Referer, same origin), else home.
func back(r *http.Request) string {
	ref, err := url.Parse(r.Referer())
	if err != nil || ref.Host != r.Host || !strings.HasPrefix(ref.Path, "/app") || strings.HasPrefix(ref.Path, "/app/assets") {
		return "/app"
	}
	if ref.RawQuery != "" {
		return ref.Path + "?" + ref.RawQuery
	}
	return ref.Path
}
