package dashboard

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/account"
	"tradebridge/relay/activity"
	"tradebridge/relay/admit"
	"tradebridge/relay/auth"
	"tradebridge/relay/broker"
	"tradebridge/relay/budget"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/pairing"
	"tradebridge/relay/profile"
	"tradebridge/relay/support"
)

// Accounts is what the dashboard asks of the traders' accounts;
// *account.Service implements it. Its errors are account's.
type Accounts interface {
	SignUp(ctx context.Context, email, password, clientAddr string) (account.Session, error)
	SignIn(ctx context.Context, email, password, clientAddr string) (account.Session, error)
	SignOut(ctx context.Context, token string) error
	SignOutEverywhere(ctx context.Context, userID string) (int, error)
	RequestReset(ctx context.Context, email, clientAddr, linkBase string) error
	Reset(ctx context.Context, token, password string) (account.Session, error)
}

// Tokens lists, issues and revokes a user's tokens (relay/auth over the
// store; StoreTokens).
type Tokens interface {
	// List describes the user's tokens, oldest first.
	List(ctx context.Context, userID string) ([]auth.TokenInfo, error)
	// Issue issues a named API token with a response profile and a
	// scope.
	Issue(ctx context.Context, userID, name string, prof profile.Profile, scope auth.Scope) (string, error)
	// Revoke revokes the user's token with the id (auth.TokenID);
	// store.ErrNotFound when the user has none with it.
	Revoke(ctx context.Context, userID, id string) error
}

// Hub calls the user's agent (its P&L and orders); *hub.Hub (or the
// cluster) implements it. What the relay knows of the tunnel comes from
// AgentView.
type Hub interface {
	Call(ctx context.Context, userID, fn, requestID string, args json.RawMessage) (json.RawMessage, error)
}

// Broker is the broker family's link of a user's Tradovate login;
// *broker.Manager implements it. The broker page calls its methods in
// process with the session's user and source (see broker.Manager for
// their errors).
type Broker interface {
	Status(ctx context.Context, userID string) (broker.Status, error)
	// OAuthOrigin is the origin of the broker's authorization page; ""
	// when the relay offers no OAuth link.
	OAuthOrigin() string
	// LinkAPIKey checks API-key credentials with the broker, seals and
	// stores them.
	LinkAPIKey(ctx context.Context, userID, env string, s broker.Secrets, src protocol.ActivitySource) error
	// StartOAuth answers the broker's authorization page for an OAuth
	// link.
	StartOAuth(ctx context.Context, userID, env string, src protocol.ActivitySource) (authorizeURL string, expires time.Time, err error)
	// Unlink deletes the link, reporting whether there was one.
	Unlink(ctx context.Context, userID string, src protocol.ActivitySource) (bool, error)
}

// Manage runs the Management API's routes in process;
// *manage.Server implements it.
type Manage interface {
	Invoke(ctx context.Context, p auth.Principal, src protocol.ActivitySource, method, path string, body []byte) (int, []byte)
	// InvokeIf is Invoke with If-Match (the ETag an editor showed; ""
	// for none): the editors' saves.
	InvokeIf(ctx context.Context, p auth.Principal, src protocol.ActivitySource, method, path, ifMatch string, body []byte) (int, []byte)
}

// AgentView reads a user's agent, diagnostics and connection history, as
// the support route does; *support.Server implements it.
type AgentView interface {
	Read(ctx context.Context, userID string) (*support.Answer, error)
}

// Policy is the per-user budget of the dashboard's signed-in requests: a
// person clicking and a page refreshing its status, not a bot.
var Policy = budget.Policy{Name: "dashboard", Rate: 300, Period: time.Minute, Burst: 100}

// Door is the dashboard's admission policy (see package admit): the
// client address's budget, a session of kind auth.KindSession from the
// cookie (SessionToken), every plan, then the user's dashboard budget
// (Policy). New fills in the budgets.
var Door = admit.Door{
	Name:               "dashboard",
	Kind:               auth.KindSession,
	Token:              func(r *http.Request) (string, *httpapi.Error) { return SessionToken(r), nil },
	Source:             protocol.SourceDashboard,
	MissingTokenDetail: "sign in to the dashboard first",
	InvalidTokenDetail: "the dashboard session is missing, expired or signed out; sign in again",
}

// Options configure a Server.
type Options struct {
	// Accounts signs users up, in and out. Required.
	Accounts Accounts
	// Admit admits the signed-in requests (Door); the relay passes the
	// one Admitter of every door. Required.
	Admit *admit.Admitter
	// IPBudget is the relay's per-client-address budget, charged first on
	// every route (the only budget of the pages without a session); nil
	// means none.
	IPBudget *budget.Limiter
	// Budget is the per-user budget of the signed-in requests; the zero
	// value means Policy.
	Budget budget.Policy
	// Budgets keeps Budget where every relay node sees it; nil means this
	// node's memory.
	Budgets budget.Backend
	// Tokens lists, issues and revokes the user's tokens. Required.
	Tokens Tokens
	// Pairing keeps the pairing codes "Add a PC" mints. Required.
	Pairing pairing.Store
	// Hub reaches the user's agent (accounts, P&L, orders). Required.
	Hub Hub
	// Agent reads the agent's status and connection history. Required.
	Agent AgentView
	// Broker tells the broker family's link; nil shows none.
	Broker Broker
	// BrokerDoor is the broker family's door (tradeapi's, its budgets
	// filled in): its plan and gate rule who may link a login from the
	// broker page (admit.Door.Permits). Required with Broker.
	BrokerDoor *admit.Door
	// Manage runs the kill switch. Required.
	Manage Manage
	// Activity reads the activity log. Required.
	Activity activity.Reader
	// Signup is relay serve --signup: whether the sign-up page is open.
	// Default account.SignupClosed.
	Signup account.Signup
	// EmailReset reports that password resets go by email (relay serve
	// --smtp-url); else the reset page says to ask the operator.
	EmailReset bool
	// CallTimeout bounds each read of the agent for the status. Default
	// 5 s.
	CallTimeout time.Duration
	// Logger receives the store's and the agent's failures; the server
	// logs as "dashboard". Nil means no logging.
	Logger *zap.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	// Webhook is the user's TradingView webhook (the TradingView page:
	// URL and key, Rotate key, the message builder, Try it, the alert
	// history); nil serves no such page.
	Webhook Webhook
}

// Server serves the dashboard. It starts no goroutines.
type Server struct {
	opts  Options
	log   *zap.Logger
	door  admit.Door
	pages *pages
	// editors are the Management API's editors (editor.go).
	editors []*editor
}

// New returns a Server.
func New(opts Options) (*Server, error) {
	if opts.Accounts == nil || opts.Admit == nil || opts.Tokens == nil || opts.Pairing == nil || opts.Hub == nil ||
		opts.Agent == nil || opts.Manage == nil || opts.Activity == nil {
		return nil, errors.New("dashboard: Options.Accounts, Admit, Tokens, Pairing, Hub, Agent, Manage and Activity are required")
	}
	if opts.Broker != nil && opts.BrokerDoor == nil {
		return nil, errors.New("dashboard: Options.BrokerDoor is required with Options.Broker")
	}
	switch opts.Signup {
	case "":
		opts.Signup = account.SignupClosed
	case account.SignupClosed, account.SignupOpen:
	default:
		return nil, errors.New("dashboard: Options.Signup must be open or closed")
	}
	if opts.Budget == (budget.Policy{}) {
		opts.Budget = Policy
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	b, err := budget.New(budget.Options{Policy: opts.Budget, Backend: opts.Budgets})
	if err != nil {
		return nil, err
	}
	p, err := loadPages()
	if err != nil {
		return nil, err
	}
	door := Door
	door.IP = opts.IPBudget
	door.Budgets = []*budget.Limiter{b}
	eds, err := buildEditors()
	if err != nil {
		return nil, err
	}
	return &Server{opts: opts, log: opts.Logger.Named("dashboard"), door: door, pages: p, editors: eds}, nil
}

// Mux is where Register adds the routes.
type Mux interface {
	HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request))
}

// Register adds the dashboard's routes (see the package documentation)
// to mux.
func (s *Server) Register(mux Mux) {
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		setHeaders(w)
		http.Redirect(w, r, "/app", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /app", s.page(s.home))
	mux.HandleFunc("GET /app/status", s.fetch(s.status))
	mux.HandleFunc("GET /app/signin", s.public(s.signinForm))
	mux.HandleFunc("POST /app/signin", s.public(s.signin))
	mux.HandleFunc("GET /app/signup", s.public(s.signupForm))
	mux.HandleFunc("POST /app/signup", s.public(s.signup))
	mux.HandleFunc("POST /app/signout", s.page(s.signout))
	mux.HandleFunc("POST /app/signout-everywhere", s.page(s.signoutEverywhere))
	mux.HandleFunc("GET /app/reset", s.public(s.resetForm))
	mux.HandleFunc("POST /app/reset", s.public(s.reset))
	mux.HandleFunc("GET /app/reset/{token}", s.public(s.newPasswordForm))
	mux.HandleFunc("POST /app/reset/{token}", s.public(s.newPassword))
	mux.HandleFunc("GET /app/pair", s.page(s.pairForm))
	mux.HandleFunc("POST /app/pair", s.page(s.pair))
	mux.HandleFunc("GET /app/tokens", s.page(s.tokens))
	mux.HandleFunc("POST /app/tokens", s.page(s.newToken))
	mux.HandleFunc("POST /app/tokens/{id}/revoke", s.page(s.revokeToken))
	mux.HandleFunc("GET /app/activity", s.page(s.activity))
	mux.HandleFunc("POST /app/kill-switch", s.page(s.killSwitch))
	mux.HandleFunc("GET /app/assets/{name}", s.asset)
	// The broker link.
	mux.HandleFunc("GET "+BrokerPath, s.page(s.brokerPage))
	mux.HandleFunc("GET /app/broker/status", s.fetch(s.brokerStatus))
	mux.HandleFunc("POST /app/broker/link", s.page(s.brokerLink))
	mux.HandleFunc("POST /app/broker/oauth", s.page(s.brokerOAuth))
	mux.HandleFunc("POST /app/broker/unlink", s.page(s.brokerUnlink))
	// The Management API's editors under /app/manage.
	s.registerEditors(mux)

	// The TradingView page.
	mux.HandleFunc("GET /app/webhook", s.page(s.webhookPage))
	mux.HandleFunc("GET /app/webhook/message", s.fetch(s.webhookMessage))
	mux.HandleFunc("GET /app/webhook/alerts", s.fetch(s.webhookAlerts))
	mux.HandleFunc("POST /app/webhook/try", s.page(s.webhookTry))
	mux.HandleFunc("POST /app/webhook/rotate", s.page(s.webhookRotate))
}

// Cookie names of the session: the __Host- prefix over TLS (the browser
// then keeps it to this host, Secure, Path=/), the plain name over HTTP.
const (
	CookieName       = "tb_session"
	SecureCookieName = "__Host-tb_session"
)

// SessionToken returns the session the request's cookie carries, "" when
// none: over TLS only the __Host- cookie counts (a cookie set by another
// host of the domain cannot stand in for it), over HTTP only the plain
// one. The stream's session door reads the socket's session with it.
func SessionToken(r *http.Request) string {
	name := CookieName
	if r.TLS != nil {
		name = SecureCookieName
	}
	c, err := r.Cookie(name)
	if err != nil {
		return ""
	}
	if k, ok := auth.ParseKind(c.Value); !ok || k != auth.KindSession {
		return ""
	}
	return c.Value
}

// secureCookie reports whether the session cookie is Secure: always, but
// for plain HTTP to 127.0.0.1, ::1 or localhost (a local demo).
func secureCookie(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	return !(host == "127.0.0.1" || host == "::1" || strings.EqualFold(host, "localhost"))
}

// setSession sets the session cookie.
func (s *Server) setSession(w http.ResponseWriter, r *http.Request, sess account.Session) {
	name := CookieName
	if r.TLS != nil {
		name = SecureCookieName
	}
	maxAge := int(sess.Expires.Sub(s.opts.Now()) / time.Second)
	if maxAge <= 0 {
		maxAge = -1
	}
	http.SetCookie(w, &http.Cookie{Name: name, Value: sess.Token, Path: "/", MaxAge: maxAge, HttpOnly: true,
		Secure: secureCookie(r), SameSite: http.SameSiteLaxMode})
}

// clearSession removes the session cookie.
func clearSession(w http.ResponseWriter, r *http.Request) {
	name := CookieName
	if r.TLS != nil {
		name = SecureCookieName
	}
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		Secure: secureCookie(r), SameSite: http.SameSiteLaxMode})
}

// csp is every answer's Content-Security-Policy.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// setHeaders sets the headers every answer of the dashboard carries.
func setHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
}

// session is a signed-in request's session.
type session struct {
	p     auth.Principal
	token string
	// csrf is the session's CSRF token (account.CSRFToken).
	csrf string
	// src names the session in the activity log: the dashboard and the
	// session's id.
	src protocol.ActivitySource
}

// maxForm bounds a form's body.
const maxForm = 16 << 10

// public serves a page without a session: the address's budget, and for a
// POST the dashboard's own origin and a form body.
func (s *Server) public(h func(http.ResponseWriter, *http.Request)) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		setHeaders(w)
		if !httpapi.AllowAddress(w, r, s.opts.IPBudget) {
			return
		}
		if r.Method == http.MethodPost {
			if !sameSite(r) {
				s.forbidden(w, r, nil, errcode.OriginNotAllowed, "This form must be sent from the dashboard's own pages.")
				return
			}
			if !s.parseForm(w, r, nil) {
				return
			}
		}
		h(w, r)
	}
}

// page serves a signed-in page: admitted by Door, a missing or refused
// session is 303 to the sign-in page (401 JSON to a fetch); a POST must
// carry the session's CSRF token.
func (s *Server) page(h func(http.ResponseWriter, *http.Request, *session)) func(http.ResponseWriter, *http.Request) {
	return s.signedIn(false, h)
}

// fetch serves what the pages' script fetches: as page, but a missing or
// refused session is always 401 JSON.
func (s *Server) fetch(h func(http.ResponseWriter, *http.Request, *session)) func(http.ResponseWriter, *http.Request) {
	return s.signedIn(true, h)
}

func (s *Server) signedIn(fetch bool, h func(http.ResponseWriter, *http.Request, *session)) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		setHeaders(w)
		asJSON := fetch || wantsJSON(r)
		cw := &capture{header: w.Header().Clone()}
		ad, ok := s.opts.Admit.Admit(cw, r, &s.door)
		if !ok {
			if cw.status == http.StatusUnauthorized && !asJSON {
				if SessionToken(r) != "" {
					clearSession(w, r)
				}
				http.Redirect(w, r, "/app/signin", http.StatusSeeOther)
				return
			}
			cw.copyTo(w)
			return
		}
		defer ad.Done()
		token := SessionToken(r)
		sess := &session{p: ad.Principal, token: token, csrf: account.CSRFToken(token),
			src: protocol.ActivitySource{Kind: protocol.SourceDashboard, ID: auth.TokenID(ad.Principal.TokenHash)}}
		if r.Method == http.MethodPost {
			if origin := r.Header.Get("Origin"); origin != "" && !httpapi.SameOrigin(r) {
				s.forbidden(w, r, sess, errcode.OriginNotAllowed, "This form must be sent from the dashboard's own pages.")
				return
			}
			if !s.parseForm(w, r, sess) {
				return
			}
			sent := r.Header.Get("X-CSRF-Token")
			if sent == "" {
				sent = r.PostForm.Get("csrf")
			}
			if subtle.ConstantTimeCompare([]byte(sent), []byte(sess.csrf)) != 1 {
				s.forbidden(w, r, sess, errcode.CSRFTokenInvalid, "The form expired or was not sent from this session's page. Reload the page and try again.")
				return
			}
		} else if e := httpapi.RejectBody(r); e != nil {
			httpapi.WriteError(w, e.Status, *e)
			return
		}
		h(w, r, sess)
	}
}

// sameSite reports whether a POST without a session comes from the
// dashboard's own pages: its Origin, else the browser's Sec-Fetch-Site.
func sameSite(r *http.Request) bool {
	if r.Header.Get("Origin") != "" {
		return httpapi.SameOrigin(r)
	}
	return r.Header.Get("Sec-Fetch-Site") == "same-origin"
}

// wantsJSON reports a request of the pages' script (fetch), which asks
// for JSON.
func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}

// parseForm reads a POST's form body (application/x-www-form-urlencoded,
// at most maxForm bytes).
func (s *Server) parseForm(w http.ResponseWriter, r *http.Request, sess *session) bool {
	ct := r.Header.Get("Content-Type")
	if ct != "" && !strings.HasPrefix(strings.ToLower(ct), "application/x-www-form-urlencoded") {
		httpapi.WriteError(w, http.StatusUnsupportedMediaType, httpapi.Error{Code: errcode.UnsupportedContentType,
			Detail: "the dashboard's forms are sent as application/x-www-form-urlencoded"})
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			httpapi.WriteError(w, http.StatusRequestEntityTooLarge, httpapi.Error{Code: errcode.BodyTooLarge, Detail: "the form is too large"})
			return false
		}
		httpapi.WriteError(w, http.StatusBadRequest, httpapi.Error{Code: errcode.InvalidArgument, Detail: "the form could not be read"})
		return false
	}
	return true
}

// forbidden answers 403: JSON to a fetch, else a page saying why.
func (s *Server) forbidden(w http.ResponseWriter, r *http.Request, sess *session, code, message string) {
	if wantsJSON(r) {
		httpapi.WriteError(w, http.StatusForbidden, httpapi.Error{Code: code, Detail: message})
		return
	}
	s.renderError(w, r, sess, http.StatusForbidden, message)
}

// capture keeps what admission answered, so that a page's refused
// session becomes a redirect to the sign-in page.
type capture struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (c *capture) Header() http.Header { return c.header }

func (c *capture) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
}

func (c *capture) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	return c.body.Write(p)
}

// copyTo writes what was captured to w.
func (c *capture) copyTo(w http.ResponseWriter) {
	h := w.Header()
	for k, v := range c.header {
		h[k] = v
	}
	if c.status == 0 {
		c.status = http.StatusOK
	}
	w.WriteHeader(c.status)
	_, _ = w.Write(c.body.Bytes())
}

// origin is the dashboard's own origin as the request names it: the
// scheme of its connection (https over TLS) and its Host.
func origin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
