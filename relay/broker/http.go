package broker

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"

	"tradebridge/relay/admit"
	"tradebridge/relay/auth"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/store"
)

// Paths of the link routes.
const (
	LinkPath          = "/v1/api/tv/link"
	LinkOAuthPath     = "/v1/api/tv/link/oauth"
	StatusPath        = "/v1/api/tv/status"
	OAuthCallbackPath = "/v1/tv/oauth/callback"
)

// Mux is where Register adds routes; *http.ServeMux implements it.
type Mux interface {
	Handle(pattern string, handler http.Handler)
}

// Register adds the link routes to mux, admitted through adm with door d
// (the broker family's trading door: an API token, the pro plan, the broker
// feature, the trading budget): POST and DELETE LinkPath, GET StatusPath,
// POST LinkOAuthPath, and the OAuth callback, which a browser reaches
// without a token and which the one-time state of LinkOAuthPath admits.
func (m *Manager) Register(mux Mux, adm *admit.Admitter, d *admit.Door) {
	admitted := func(h func(w http.ResponseWriter, r *http.Request, p auth.Principal)) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ad, ok := adm.Admit(w, r, d)
			if !ok {
				return
			}
			defer ad.Done()
			h(w, r, ad.Principal)
		})
	}
	mux.Handle("POST "+LinkPath, admitted(m.serveLink))
	mux.Handle("DELETE "+LinkPath, admitted(m.serveUnlink))
	mux.Handle("GET "+StatusPath, admitted(m.serveStatus))
	mux.Handle("POST "+LinkOAuthPath, admitted(m.serveOAuthStart))
	mux.Handle("GET "+OAuthCallbackPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// No token comes with the browser: the per-address budget is the
		// only admission before the one-time state is looked up.
		if !httpapi.AllowAddress(w, r, d.IP) {
			return
		}
		m.serveOAuthCallback(w, r)
	}))
}

// linkBody is the body of POST LinkPath: API-key credentials.
type linkBody struct {
	Env        string `json:"env"`
	Username   string `json:"username"`
	Password   string `json:"password"`
	AppID      string `json:"appId"`
	AppVersion string `json:"appVersion"`
	CID        int    `json:"cid"`
	Sec        string `json:"sec"`
	DeviceID   string `json:"deviceId"`
}

// linkFields are linkBody's fields; required ones first.
var (
	linkRequired = []string{"env", "username", "password", "appId", "appVersion", "cid", "sec"}
	linkOptional = []string{"deviceId"}
)

// readObject reads a JSON object body whose keys are among required and
// optional, every required one present, into dst: 400 invalid_field
// naming unknown fields, 400 missing_required_fields naming missing ones.
func readObject(w http.ResponseWriter, r *http.Request, dst any, required, optional []string) *httpapi.Error {
	var raw map[string]json.RawMessage
	if e := httpapi.ReadJSON(w, r, &raw, httpapi.ReadOptions{}); e != nil {
		return e
	}
	var fields []httpapi.FieldError
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(required, k) && !slices.Contains(optional, k) {
			fields = append(fields, httpapi.FieldError{Path: httpapi.SafePath(k), Code: errcode.FieldCodeUnknownField})
		}
	}
	if fields != nil {
		return &httpapi.Error{Status: http.StatusBadRequest, Code: errcode.InvalidField, Detail: "the body has fields this route does not take", Fields: fields}
	}
	for _, k := range required {
		if _, ok := raw[k]; !ok {
			fields = append(fields, httpapi.FieldError{Path: k, Code: errcode.FieldCodeRequired})
		}
	}
	if fields != nil {
		return &httpapi.Error{Status: http.StatusBadRequest, Code: errcode.MissingRequiredFields, Detail: "required fields are missing", Fields: fields}
	}
	b, _ := json.Marshal(raw)
	if err := json.Unmarshal(b, dst); err != nil {
		var te *json.UnmarshalTypeError
		path, detail := "", "a field has a value of the wrong type"
		if errors.As(err, &te) {
			path = httpapi.SafePath(te.Field)
			if s := httpapi.Shape(te.Type); s != "" && path != "" {
				detail += ": " + path + " wants " + s
			}
		}
		return &httpapi.Error{Status: http.StatusBadRequest, Code: errcode.InvalidField, Detail: detail,
			Fields: []httpapi.FieldError{{Path: path, Code: errcode.FieldCodeWrongType}}}
	}
	return nil
}

// envError is the 400 of an env that is neither demo nor live.
func envError() *httpapi.Error {
	return &httpapi.Error{Status: http.StatusBadRequest, Code: errcode.InvalidArgument, Detail: "env is demo or live",
		Fields: []httpapi.FieldError{{Path: "env", Code: errcode.FieldCodeNotAllowed, Pattern: "^(demo|live)$"}}}
}

// serveLink links API-key credentials (LinkAPIKey, in the token's
// name): they are checked with the broker (a login, whose session is
// kept), sealed and stored, and the link's instance starts. Nothing is
// stored when the broker refuses them.
func (m *Manager) serveLink(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	var b linkBody
	if e := readObject(w, r, &b, linkRequired, linkOptional); e != nil {
		httpapi.WriteError(w, e.Status, *e)
		return
	}
	s := Secrets{Username: b.Username, Password: b.Password, AppID: b.AppID, AppVersion: b.AppVersion,
		CID: b.CID, Sec: b.Sec, DeviceID: b.DeviceID}
	if err := m.LinkAPIKey(r.Context(), p.UserID, b.Env, s, apiSource(p)); err != nil {
		writeLinkError(w, err)
		return
	}
	m.writeStatus(w, r.Context(), p.UserID, nil)
}

// writeLinkError answers a failed link: 400 invalid_argument for an
// unknown env, 400 missing_required_fields naming the fields, 400
// broker_login_failed with the broker's fixed reason, 503
// broker_unavailable, 503 storage_unavailable.
func writeLinkError(w http.ResponseWriter, err error) {
	var ve *ValidationError
	var re *RefusedError
	var ue *UnavailableError
	switch {
	case errors.Is(err, ErrUnknownEnv):
		e := envError()
		httpapi.WriteError(w, e.Status, *e)
	case errors.As(err, &ve):
		fields := make([]httpapi.FieldError, 0, len(ve.Fields))
		for _, f := range ve.Fields {
			fields = append(fields, httpapi.FieldError{Path: f, Code: errcode.FieldCodeRequired})
		}
		httpapi.WriteError(w, http.StatusBadRequest, httpapi.Error{Code: errcode.MissingRequiredFields, Detail: "required fields are missing or empty", Fields: fields})
	case errors.As(err, &re):
		httpapi.WriteError(w, http.StatusBadRequest, httpapi.Error{Code: errcode.BrokerLoginFailed,
			Detail: re.Reason + "; nothing was linked"}) // a fixed sentence naming what was refused
	case errors.As(err, &ue) && ue.Reason != "":
		httpapi.WriteError(w, http.StatusServiceUnavailable, httpapi.Error{Code: errcode.BrokerUnavailable,
			Detail: "the broker is unavailable: " + ue.Reason + "; nothing was linked"})
	case errors.Is(err, ErrBrokerUnavailable):
		httpapi.WriteError(w, http.StatusServiceUnavailable, httpapi.Error{Code: errcode.BrokerUnavailable,
			Detail: "the broker could not be reached to check the credentials; nothing was linked"})
	case errors.Is(err, ErrStorage):
		httpapi.WriteError(w, http.StatusServiceUnavailable, httpapi.Error{Code: errcode.StorageUnavailable,
			Detail: "the link could not be stored; nothing was linked: retry shortly"})
	default:
		httpapi.WriteError(w, http.StatusInternalServerError, httpapi.Error{Code: errcode.InternalError,
			Detail: "the link failed; nothing was linked"})
	}
}

// serveUnlink deletes the user's link and everything its operations
// remembered (Unlink, in the token's name); the broker resources of the
// Management API are kept.
func (m *Manager) serveUnlink(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	if e := httpapi.RejectBody(r); e != nil {
		httpapi.WriteError(w, e.Status, *e)
		return
	}
	had, err := m.Unlink(context.WithoutCancel(r.Context()), p.UserID, apiSource(p))
	if err != nil {
		httpapi.WriteError(w, http.StatusServiceUnavailable, httpapi.Error{Code: errcode.StorageUnavailable, Detail: "the link could not be deleted; retry shortly"})
		return
	}
	httpapi.WriteWithTop(w, http.StatusOK, map[string]any{"linked": false}, map[string]any{"changed": had})
}

// serveStatus answers the link's state.
func (m *Manager) serveStatus(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	if e := httpapi.RejectBody(r); e != nil {
		httpapi.WriteError(w, e.Status, *e)
		return
	}
	if len(r.URL.Query()) > 0 {
		httpapi.WriteError(w, http.StatusBadRequest, httpapi.Error{Code: errcode.UnknownParameter, Detail: "this route takes no query parameters"})
		return
	}
	m.writeStatus(w, r.Context(), p.UserID, nil)
}

// writeStatus answers the user's link status.
func (m *Manager) writeStatus(w http.ResponseWriter, ctx context.Context, userID string, top map[string]any) {
	st, err := m.Status(ctx, userID)
	if err != nil {
		httpapi.WriteError(w, http.StatusServiceUnavailable, httpapi.Error{Code: errcode.StorageUnavailable, Detail: "the link could not be read; retry shortly"})
		return
	}
	httpapi.WriteWithTop(w, http.StatusOK, st, top)
}

// Status is the state of a user's broker link, as GET /v1/api/tv/status
// answers it. It never holds a secret.
type Status struct {
	Linked   bool       `json:"linked"`
	Env      string     `json:"env,omitempty"`
	Method   string     `json:"method,omitempty"`
	LinkedAt *time.Time `json:"linkedAt,omitempty"`
	// Session is the login's state: ok, connecting, logging_in,
	// login_failed, captcha_required, rate_limited, unreachable.
	Session string `json:"session,omitempty"`
	// TokenExpires is when the login's token expires (it is renewed
	// before).
	TokenExpires *time.Time `json:"tokenExpires,omitempty"`
	// RetryAt is when a rate-limited login, or one waiting after a
	// captcha, calls the broker again.
	RetryAt *time.Time `json:"retryAt,omitempty"`
	// Connected reports whether the user-data socket is up.
	Connected bool `json:"connected"`
	// Accounts are the login's accounts as last seen.
	Accounts []string `json:"accounts"`
	// MarketData reports whether the market-data socket is up (it is
	// open while an open position or a quote subscription needs it);
	// absent when it is not.
	MarketData bool `json:"marketData,omitempty"`
	// MarketDataRefused names the instruments whose quotes the broker
	// refuses (no market-data entitlement, or delayed data only): the
	// positions in them have no price, their unrealized P&L is unknown.
	MarketDataRefused []string `json:"marketDataRefused,omitempty"`
}

// LinkState is what a link's platform tells of its login, for Status.
type LinkState struct {
	Session      string
	TokenExpires time.Time
	RetryAt      time.Time
	Connected    bool
	// MarketData and MarketDataRefused are Status's.
	MarketData        bool
	MarketDataRefused []string
}

// stater is a platform that tells its login's state.
type stater interface {
	LinkState() LinkState
}

// Status returns the state of the user's link.
func (m *Manager) Status(ctx context.Context, userID string) (Status, error) {
	linked, accounts, err := m.Linked(ctx, userID)
	if err != nil {
		return Status{}, err
	}
	if !linked {
		return Status{Accounts: []string{}}, nil
	}
	link, err := m.links.Get(ctx, userID)
	if err != nil {
		if errors.Is(err, ErrNotLinked) {
			return Status{Accounts: []string{}}, nil
		}
		return Status{}, err
	}
	at := link.LinkedAt.UTC()
	st := Status{Linked: true, Env: link.Env, Method: link.Method, LinkedAt: &at, Session: "connecting", Accounts: accounts}
	if ls, ok := m.liveState(ctx, userID); ok {
		if ls.Known {
			st.Session, st.Connected = ls.Session, ls.Connected
			st.MarketData, st.MarketDataRefused = ls.MarketData, ls.MarketDataRefused
			if !ls.TokenExpires.IsZero() {
				t := ls.TokenExpires.UTC()
				st.TokenExpires = &t
			}
			if !ls.RetryAt.IsZero() {
				t := ls.RetryAt.UTC()
				st.RetryAt = &t
			}
		}
		if len(ls.Accounts) > 0 {
			st.Accounts = ls.Accounts
		}
	}
	return st, nil
}

// liveState returns what the user's running instance tells of its login:
// the instance on this node, or with a Router the one on the node
// running it (started here when none runs). False when none runs or it
// cannot be asked: the link's state is then "connecting".
func (m *Manager) liveState(ctx context.Context, userID string) (liveState, bool) {
	if in := m.running(userID); in != nil {
		return in.liveState(ctx), true
	}
	if m.opts.Router == nil {
		return liveState{}, false
	}
	raw, err := m.routed(ctx, userID, fnLinkState, "", nil)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, ErrNotLinked) {
			m.log.Debug("asking the relay node running a broker link for its state", zap.String("user", userID), zap.Error(err))
		}
		return liveState{}, false
	}
	var ls liveState
	if err := json.Unmarshal(raw, &ls); err != nil {
		m.log.Warn("reading a broker link's state from the relay node running it", zap.String("user", userID), zap.Error(err))
		return liveState{}, false
	}
	return ls, true
}

// newDeviceID returns a fresh device id for a link: the broker ties a
// login's sessions to it, so it stays the same for the link's life.
func newDeviceID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ---- OAuth ----

// oauthStateTTL is how long an OAuth link may take, from its start to the
// broker sending the user back.
const oauthStateTTL = 10 * time.Minute

// maxOAuthStatesPerUser bounds a user's OAuth links under way: the newest
// are kept, an older one answers "unknown or expired". The store keeps
// them, so the broker's callback may reach any relay node; with every
// user's few, and only users that exist (a user of the pro plan starts a
// link, with an API token within the trading budget or in the dashboard
// within its budget), they need no bound of their own.
const maxOAuthStatesPerUser = 4

// maxOAuthStateLen bounds the state a callback brings: a longer one is
// none the relay made, and is not even hashed.
const maxOAuthStateLen = 256

// newOAuthState returns a fresh one-time state, and the hash the store
// keeps it by (the store never holds a state's text).
func newOAuthState() (state, hash string) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	state = hex.EncodeToString(b[:])
	return state, oauthStateHash(state)
}

// oauthStateHash is the hex SHA-256 of a state's text.
func oauthStateHash(state string) string {
	h := sha256.Sum256([]byte(state))
	return hex.EncodeToString(h[:])
}

// serveOAuthStart starts an OAuth link (StartOAuth, in the token's
// name): it answers the broker's authorization page, with a one-time
// state, for the caller to send the user's browser to.
func (m *Manager) serveOAuthStart(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	if !m.OAuthOffered() {
		writeOAuthOff(w)
		return
	}
	var b struct {
		Env string `json:"env"`
	}
	if e := readObject(w, r, &b, []string{"env"}, nil); e != nil {
		httpapi.WriteError(w, e.Status, *e)
		return
	}
	u, expires, err := m.StartOAuth(r.Context(), p.UserID, b.Env, apiSource(p))
	switch {
	case err == nil:
		httpapi.Write(w, http.StatusOK, map[string]any{"authorizeUrl": u, "expiresAt": expires})
	case errors.Is(err, ErrUnknownEnv):
		e := envError()
		httpapi.WriteError(w, e.Status, *e)
	case errors.Is(err, ErrOAuthOff):
		writeOAuthOff(w)
	case errors.Is(err, ErrStorage):
		httpapi.WriteError(w, http.StatusServiceUnavailable, httpapi.Error{Code: errcode.StorageUnavailable,
			Detail: "the link could not be started; retry shortly"})
	default:
		m.log.Error("starting an OAuth link", zap.Error(err))
		httpapi.WriteError(w, http.StatusInternalServerError, httpapi.Error{Code: errcode.InternalError, Detail: "the relay's OAuth address is invalid"})
	}
}

// writeOAuthOff answers a relay without an OAuth client: 404.
func writeOAuthOff(w http.ResponseWriter) {
	httpapi.WriteError(w, http.StatusNotFound, httpapi.Error{Code: errcode.NotFound, Detail: "this relay does not offer the OAuth link; link API-key credentials instead"})
}

// serveOAuthCallback ends an OAuth link (finishOAuth): the broker sent
// the user's browser back with a code, exchanged here for a session that
// is sealed and stored. A request that asks for a page (its Accept names
// text/html: a person's browser) is sent on to the dashboard's broker
// page, 303 OAuthReturnPath?link=ok or ?link=failed&reason=<a fixed
// code>; others get JSON: 200 {"linked":true,"env","method"}, or the
// refusal. A callback that repeats state or code is refused as a bad
// state is (ErrOAuthUnknown: 400, or ?link=failed&reason=expired), and
// takes no state: which of the values counts would depend on who reads
// the address.
func (m *Manager) serveOAuthCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	session := ""
	if m.opts.BrowserSession != nil {
		session = m.opts.BrowserSession(r)
	}
	var st store.OAuthState
	err := ErrOAuthUnknown
	if len(q["state"]) <= 1 && len(q["code"]) <= 1 {
		st, err = m.finishOAuth(r.Context(), q.Get("state"), q.Get("code"), session)
	}
	if wantsPage(r) {
		to := OAuthReturnPath + "?link=ok"
		if err != nil {
			to = OAuthReturnPath + "?" + url.Values{"link": {"failed"}, "reason": {OAuthFailure(err)}}.Encode()
		}
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("Referrer-Policy", "no-referrer") // the broker's code stays out of the next page's Referer
		http.Redirect(w, r, to, http.StatusSeeOther)
		return
	}
	switch {
	case err == nil:
		httpapi.Write(w, http.StatusOK, map[string]any{"linked": true, "env": st.Env, "method": MethodOAuth})
	case errors.Is(err, ErrOAuthUnknown):
		httpapi.WriteError(w, http.StatusBadRequest, httpapi.Error{Code: errcode.InvalidArgument, Detail: "the link request is unknown or expired; start the link again"})
	case errors.Is(err, ErrOAuthSession):
		httpapi.WriteError(w, http.StatusBadRequest, httpapi.Error{Code: errcode.InvalidArgument,
			Detail: "the link was started in another browser session; start it again from the dashboard in this browser"})
	case errors.Is(err, ErrOAuthDenied):
		httpapi.WriteError(w, http.StatusBadRequest, httpapi.Error{Code: errcode.BrokerLoginFailed, Detail: "the broker did not grant access; nothing was linked"})
	case errors.Is(err, ErrStorage) && st.UserID == "":
		httpapi.WriteError(w, http.StatusServiceUnavailable, httpapi.Error{Code: errcode.StorageUnavailable,
			Detail: "the link request could not be read; retry shortly"})
	default:
		writeLinkError(w, err)
	}
}

// wantsPage reports a request of a person's browser: its Accept names
// text/html.
func wantsPage(r *http.Request) bool {
	return strings.Contains(strings.ToLower(r.Header.Get("Accept")), "text/html")
}
