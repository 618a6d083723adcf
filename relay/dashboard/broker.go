package dashboard

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"tradebridge/relay/auth"
	"tradebridge/relay/broker"
	"tradebridge/relay/httpapi"
)

// The broker page (/app/broker): the link of the user's Tradovate login
// (its state, its accounts), linking one through the broker's OAuth page
// ("Link demo", "Link live") or by API-key credentials, and unlinking
// it. Everything is the broker family's own methods (broker.Manager's
// LinkAPIKey, StartOAuth, Unlink, Status) called in process with the
// session's user and source; who may link is the broker family's door's
// plan and gate (Options.BrokerDoor). Secrets go from the form to the
// broker's sealed store and are never written back to a page.

// BrokerPath is the broker page; the OAuth callback sends a person's
// browser back here (broker.OAuthReturnPath).
const BrokerPath = "/app/broker"

// brokerView is the broker page's data.
type brokerView struct {
	// Status is the link's state (the live fragment's data).
	Status brokerStatusView
	// Offered: the relay runs the broker family.
	Offered bool
	// Permitted: the user's plan includes the broker family (linking);
	// unlinking is always allowed.
	Permitted bool
	// OAuth: the relay offers the OAuth link ("Link demo", "Link live").
	OAuth bool
	// Result is the sentence of a finished action (?link=ok, unlinked,
	// none), shown as a status message; a failure is the page's Error.
	Result string
	// Form refills the API-key form after a refusal: never its secrets.
	Form apiKeyForm
	// Fields are the refusals of the form's fields, by input name.
	Fields map[string]string
	// ConfirmError is the refusal of an unlink without the confirmation.
	ConfirmError string
}

// apiKeyForm is what the API-key form sent that may be shown again.
type apiKeyForm struct {
	Env, Username, AppID, AppVersion, CID string
}

// brokerStatusView is the link's state, the fragment GET
// /app/broker/status serves.
type brokerStatusView struct {
	// State is #broker-link's data-state (linkState).
	State string
	// Sentence says the state in words.
	Sentence string
	Linked   bool
	Env      string
	Method   string
	Since    time.Time
	// Session is the login's session state (ok, connecting, …), and
	// SessionWords it in words.
	Session      string
	SessionWords string
	RetryAt      time.Time
	Connected    bool
	Accounts     []string
	// Problem says the state could not be read.
	Problem string
}

// linkState is #broker-link's data-state, on the home page and the
// broker page: "unlinked", "linked" (the login's session is up), else the
// session's state ("connecting", "login_failed", …).
func linkState(st broker.Status) string {
	switch {
	case !st.Linked:
		return "unlinked"
	case st.Connected:
		return "linked"
	}
	return st.Session
}

// sessionWords says a login's session state in words.
func sessionWords(st broker.Status) string {
	switch st.Session {
	case "ok":
		return "Signed in"
	case "connecting":
		return "Connecting…"
	case "logging_in":
		return "Signing in…"
	case "login_failed":
		return "Tradovate refused the login: link it again"
	case "captcha_required":
		return "Tradovate asks for a human check: the relay tries again after an hour (signing in once on Tradovate's site helps)"
	case "rate_limited":
		return "Held back by Tradovate's rate limit"
	case "unreachable":
		return "Tradovate cannot be reached; the relay keeps trying"
	}
	return st.Session
}

// readBrokerStatus reads the user's link for the page.
func (s *Server) readBrokerStatus(ctx context.Context, userID string) brokerStatusView {
	st, err := s.opts.Broker.Status(ctx, userID)
	if err != nil {
		s.log.Warn("reading the broker link", zap.Error(err))
		return brokerStatusView{State: "unknown", Sentence: "The relay cannot read the link right now.", Problem: "unreadable"}
	}
	v := brokerStatusView{State: linkState(st), Linked: st.Linked, Env: st.Env, Method: st.Method, Session: st.Session,
		SessionWords: sessionWords(st), Connected: st.Connected, Accounts: st.Accounts}
	if st.LinkedAt != nil {
		v.Since = *st.LinkedAt
	}
	if st.RetryAt != nil {
		v.RetryAt = *st.RetryAt
	}
	switch v.State {
	case "unlinked":
		v.Sentence = "No Tradovate login is linked."
	case "linked":
		v.Sentence = "Linked and connected."
	case "":
		v.Sentence = "Linked."
	default:
		v.Sentence = "Linked: " + strings.ToLower(v.SessionWords[:1]) + v.SessionWords[1:]
		if !strings.HasSuffix(v.Sentence, "…") {
			v.Sentence += "."
		}
	}
	return v
}

// linkResults are the sentences of ?link= on the broker page: the
// result of the OAuth callback (ok) and of the page's own forms.
var linkResults = map[string]string{
	"ok":       "Your Tradovate login is linked.",
	"unlinked": "Your Tradovate login is unlinked. Orders and positions at Tradovate were not touched.",
	"none":     "No Tradovate login was linked.",
}

// oauthFailures are the sentences of ?link=failed&reason=… (the OAuth
// callback's fixed codes, broker.OAuthFailure).
var oauthFailures = map[string]string{
	broker.OAuthExpired:     "The link with Tradovate took too long or was already used. Nothing was linked: press Link demo or Link live again.",
	broker.OAuthSession:     "The link came back in another browser session than the one that started it. Nothing was linked: start it again from this page.",
	broker.OAuthDenied:      "Tradovate did not grant access. Nothing was linked.",
	broker.OAuthRefused:     "Tradovate refused the link. Nothing was linked: try again.",
	broker.OAuthUnavailable: "Tradovate could not be reached. Nothing was linked: try again shortly.",
}

// linkFailed is the sentence of a failed OAuth link whose reason is none
// of oauthFailures' (the relay's store, or a reason made up).
const linkFailed = "The relay could not finish the link. Nothing was linked: try again shortly."

// brokerPage serves GET /app/broker, with the result of the action that
// led there (?link=ok|unlinked|none, ?link=failed&reason=CODE); the
// query's values are looked up, never shown.
func (s *Server) brokerPage(w http.ResponseWriter, r *http.Request, sess *session) {
	bv := &brokerView{}
	errText := ""
	q := r.URL.Query()
	switch link := q.Get("link"); link {
	case "failed":
		errText = linkFailed
		if msg, ok := oauthFailures[q.Get("reason")]; ok {
			errText = msg
		}
	default:
		bv.Result = linkResults[link]
	}
	s.renderBroker(w, r, sess, http.StatusOK, bv, errText)
}

// renderBroker shows the broker page with the user's link. Its
// Content-Security-Policy lets the page's forms lead to the broker's
// authorization page ("Link demo" answers a redirect there).
func (s *Server) renderBroker(w http.ResponseWriter, r *http.Request, sess *session, status int, bv *brokerView, errText string) {
	if s.opts.Broker != nil {
		bv.Offered = true
		bv.Status = s.readBrokerStatus(r.Context(), sess.p.UserID)
		bv.Permitted = s.brokerPermits(r, sess) == nil
		origin := s.opts.Broker.OAuthOrigin()
		bv.OAuth = origin != ""
		if bv.OAuth {
			w.Header().Set("Content-Security-Policy", cspFormTo(origin))
		}
	}
	if bv.Form.AppVersion == "" {
		bv.Form.AppVersion = "1.0"
	}
	v := &view{Title: "Broker", Nav: "broker", Error: errText, Data: bv}
	s.signedView(r, sess, v)
	s.render(w, status, "broker", v)
}

// webOrigin is an origin a Content-Security-Policy source may name.
var webOrigin = regexp.MustCompile(`^https?://[A-Za-z0-9.\-]+(:[0-9]+)?$|^https?://\[[0-9A-Fa-f:.]+\](:[0-9]+)?$`)

// cspFormTo is the dashboard's Content-Security-Policy with origin added
// to form-action: the relay's own broker endpoint, from its
// configuration, never from a request.
func cspFormTo(origin string) string {
	if !webOrigin.MatchString(origin) {
		return csp
	}
	return strings.Replace(csp, "form-action 'self'", "form-action 'self' "+origin, 1)
}

// brokerPermits asks the broker family's door whether the session's user
// may link a login (its plan and gate): nil, or its refusal.
func (s *Server) brokerPermits(r *http.Request, sess *session) *httpapi.Error {
	if s.opts.BrokerDoor == nil {
		return nil
	}
	return s.opts.BrokerDoor.Permits(r, sess.p)
}

// brokerStatus serves GET /app/broker/status: the link's state alone (an
// HTML fragment), which the page fetches again while the login connects.
func (s *Server) brokerStatus(w http.ResponseWriter, r *http.Request, sess *session) {
	if s.opts.Broker == nil {
		httpapi.WriteError(w, http.StatusNotFound, httpapi.Error{Detail: "this relay does not run the broker family"})
		return
	}
	var buf bytes.Buffer
	if err := s.pages.byName["broker"].ExecuteTemplate(&buf, "broker-status", s.readBrokerStatus(r.Context(), sess.p.UserID)); err != nil {
		s.log.Error("rendering the broker link", zap.Error(err))
		httpapi.WriteError(w, http.StatusInternalServerError, httpapi.Error{Detail: "the link could not be shown"})
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

// brokerRefused shows the broker page with a refusal: 404 when the relay
// does not run the broker family, 403 when the plan does not include it.
// It reports whether it answered.
func (s *Server) brokerRefused(w http.ResponseWriter, r *http.Request, sess *session, needPlan bool) bool {
	if s.opts.Broker == nil {
		s.renderBroker(w, r, sess, http.StatusNotFound, &brokerView{}, "This relay does not run the broker family.")
		return true
	}
	if needPlan && s.brokerPermits(r, sess) != nil {
		s.renderBroker(w, r, sess, http.StatusForbidden, &brokerView{}, planSentence)
		return true
	}
	return false
}

// planSentence says the user's plan does not include linking a broker.
const planSentence = "Your plan does not include the broker family: linking a Tradovate login needs the Pro plan."

// apiKeyFieldWords are the refusals of the API-key form's fields.
var apiKeyFieldWords = map[string]string{
	"env":        "Choose demo or live.",
	"username":   "Enter your Tradovate username.",
	"password":   "Enter your Tradovate password.",
	"appId":      "Enter the app id of your API key.",
	"appVersion": "Enter the app version of your API key (1.0 when unsure).",
	"cid":        "Enter the cid of your API key: a whole number.",
	"sec":        "Enter the secret (sec) of your API key.",
}

// brokerLink serves POST /app/broker/link: the API-key form (env,
// username, password, appId, appVersion, cid, sec, the fields of POST
// /v1/api/tv/link), linked by broker.Manager.LinkAPIKey in the session's
// name; 303 to the broker page on success. A refusal shows the form again
// with the refusal in words, next to the fields it names, without the
// password and the secret.
func (s *Server) brokerLink(w http.ResponseWriter, r *http.Request, sess *session) {
	if s.brokerRefused(w, r, sess, true) {
		return
	}
	f := r.PostForm
	form := apiKeyForm{Env: f.Get("env"), Username: f.Get("username"), AppID: f.Get("appId"), AppVersion: f.Get("appVersion"),
		CID: strings.TrimSpace(f.Get("cid"))}
	// A cid that is no whole number is sent as none: the broker family
	// refuses it as it refuses a missing one.
	cid, _ := strconv.Atoi(form.CID)
	secrets := broker.Secrets{Username: form.Username, Password: f.Get("password"), AppID: form.AppID, AppVersion: form.AppVersion,
		CID: cid, Sec: f.Get("sec")}
	err := s.opts.Broker.LinkAPIKey(r.Context(), sess.p.UserID, form.Env, secrets, sess.src)
	if err == nil {
		http.Redirect(w, r, BrokerPath+"?link=ok", http.StatusSeeOther)
		return
	}
	bv := &brokerView{Form: form, Fields: map[string]string{}}
	status, msg := http.StatusBadRequest, ""
	var ve *broker.ValidationError
	var re *broker.RefusedError
	var ue *broker.UnavailableError
	switch {
	case errors.Is(err, broker.ErrUnknownEnv):
		bv.Fields["env"] = apiKeyFieldWords["env"]
		msg = "The login was not linked: choose demo or live."
	case errors.As(err, &ve):
		msg = "The login was not linked: fill in the fields marked below."
		for _, name := range ve.Fields {
			if words, ok := apiKeyFieldWords[name]; ok {
				bv.Fields[name] = words
			} else {
				msg = "The login was not linked: a field is too long or invalid."
			}
		}
	case errors.As(err, &re):
		msg = re.Reason + ". Nothing was linked."
		switch re.Kind {
		case "credentials":
			bv.Fields["password"] = re.Reason + "."
		case "api_key":
			bv.Fields["sec"] = re.Reason + "."
		}
	case errors.As(err, &ue):
		status, msg = http.StatusServiceUnavailable, "Tradovate could not be reached to check the login. Nothing was linked: try again shortly."
		if ue.Reason != "" {
			msg = "Tradovate could not check the login: " + ue.Reason + ". Nothing was linked: try again later."
		}
	default:
		s.log.Warn("linking a broker login", zap.Error(err))
		status, msg = http.StatusServiceUnavailable, "The relay could not store the link. Nothing was linked: try again shortly."
	}
	s.renderBroker(w, r, sess, status, bv, msg)
}

// brokerOAuth serves POST /app/broker/oauth (env=demo|live, the buttons
// "Link demo" and "Link live"): broker.Manager.StartOAuth in the
// session's name, then 303 to the broker's authorization page, which
// sends the browser back to the relay's callback and on to this page.
func (s *Server) brokerOAuth(w http.ResponseWriter, r *http.Request, sess *session) {
	if s.brokerRefused(w, r, sess, true) {
		return
	}
	u, _, err := s.opts.Broker.StartOAuth(r.Context(), sess.p.UserID, r.PostForm.Get("env"), sess.src)
	switch {
	case err == nil:
		w.Header().Set("Referrer-Policy", "no-referrer")
		http.Redirect(w, r, u, http.StatusSeeOther)
	case errors.Is(err, broker.ErrOAuthOff):
		s.renderBroker(w, r, sess, http.StatusNotFound, &brokerView{}, "This relay does not offer linking through Tradovate's sign-in page: link with your API key instead.")
	case errors.Is(err, broker.ErrUnknownEnv):
		s.renderBroker(w, r, sess, http.StatusBadRequest, &brokerView{}, "Choose demo or live.")
	default:
		s.log.Warn("starting an OAuth link", zap.Error(err))
		s.renderBroker(w, r, sess, http.StatusServiceUnavailable, &brokerView{}, "The relay cannot start the link right now. Try again shortly.")
	}
}

// brokerUnlink serves POST /app/broker/unlink: with the box "Yes, unlink"
// ticked (confirm=yes), broker.Manager.Unlink in the session's name, then
// 303 to the broker page; any plan may unlink.
func (s *Server) brokerUnlink(w http.ResponseWriter, r *http.Request, sess *session) {
	if s.brokerRefused(w, r, sess, false) {
		return
	}
	if r.PostForm.Get("confirm") != "yes" {
		s.renderBroker(w, r, sess, http.StatusBadRequest, &brokerView{ConfirmError: "Tick “Yes, unlink” to confirm."},
			"The login was not unlinked: confirm it first.")
		return
	}
	had, err := s.opts.Broker.Unlink(r.Context(), sess.p.UserID, sess.src)
	if err != nil {
		s.log.Warn("unlinking a broker login", zap.Error(err))
		s.renderBroker(w, r, sess, http.StatusServiceUnavailable, &brokerView{}, "The relay cannot unlink the login right now. Try again shortly.")
		return
	}
	result := "unlinked"
	if !had {
		result = "none"
	}
	http.Redirect(w, r, BrokerPath+"?link="+result, http.StatusSeeOther)
}

// SessionID returns the id of the dashboard session the request's cookie
// carries (SessionToken), as the activity log names sessions: the first
// 12 hex digits of its hash; "" for none. The broker family's OAuth
// callback ends a link started here only in the browser session that
// started it (broker.Options.BrowserSession).
func SessionID(r *http.Request) string {
	tok := SessionToken(r)
	if tok == "" {
		return ""
	}
	return auth.TokenID(auth.Hash(tok))
}
