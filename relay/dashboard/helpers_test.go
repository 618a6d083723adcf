package dashboard_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/account"
	"tradebridge/relay/admit"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/agentcall/agentcalltest"
	"tradebridge/relay/auth"
	"tradebridge/relay/auth/authtest"
	"tradebridge/relay/dashboard"
	"tradebridge/relay/events"
	"tradebridge/relay/manage"
	"tradebridge/relay/profile"
	"tradebridge/relay/store"
	"tradebridge/relay/store/storetest"
	"tradebridge/relay/support"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The tests' users: email, password, id.
const (
	aliceEmail = "alice@example.com"
	bobEmail   = "bob@example.com"
	password   = "correct horse battery"
	aliceID    = "usr_alice"
	bobID      = "usr_bob"
)

// fakeAccounts signs the tests' users in; its sessions are checked by
// the fake authenticator, as the real Service's are by auth.
type fakeAccounts struct {
	auth *authtest.Auth
	mu   sync.Mutex
	// users by email: id.
	users map[string]string
	// sessions by token: user id.
	sessions  map[string]string
	signedOut []string
	resets    []string
	// plans are the users' plans; free when not set.
	plans map[string]auth.Plan
	// withheld are the features withheld from the users' plans, and
	// closed the users whose Management API is closed.
	withheld map[string][]string
	closed   map[string]bool
}

func newSessionToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return "tb_session_" + base64.RawURLEncoding.EncodeToString(b[:])
}

func (f *fakeAccounts) session(userID string) account.Session {
	tok := newSessionToken()
	f.mu.Lock()
	f.sessions[tok] = userID
	plan, withheld, closed := f.plans[userID], f.withheld[userID], f.closed[userID]
	f.mu.Unlock()
	if plan == "" {
		plan = auth.PlanFree
	}
	f.auth.Add(tok, auth.Principal{UserID: userID, UserName: userID, Plan: plan, Kind: auth.KindSession, TokenHash: auth.Hash(tok),
		Withheld: withheld, ManagementClosed: closed})
	return account.Session{Token: tok, UserID: userID, CreatedAt: time.Now(), Expires: time.Now().Add(24 * time.Hour)}
}

func (f *fakeAccounts) SignUp(_ context.Context, email, pw, _ string) (account.Session, error) {
	if !strings.Contains(email, "@") {
		return account.Session{}, account.ErrInvalidEmail
	}
	if len(pw) < account.MinPassword {
		return account.Session{}, account.ErrWeakPassword
	}
	f.mu.Lock()
	if _, ok := f.users[email]; ok {
		f.mu.Unlock()
		return account.Session{}, account.ErrEmailTaken
	}
	id := "usr_" + strings.Split(email, "@")[0]
	f.users[email] = id
	f.mu.Unlock()
	return f.session(id), nil
}

func (f *fakeAccounts) SignIn(_ context.Context, email, pw, _ string) (account.Session, error) {
	f.mu.Lock()
	id, ok := f.users[email]
	f.mu.Unlock()
	if email == "limited@example.com" {
		return account.Session{}, &account.LimitedError{Policy: "signin-account", RetryAfter: 30 * time.Second}
	}
	if !ok || pw != password {
		return account.Session{}, account.ErrBadCredentials
	}
	return f.session(id), nil
}

func (f *fakeAccounts) SignOut(_ context.Context, token string) error {
	f.mu.Lock()
	delete(f.sessions, token)
	f.signedOut = append(f.signedOut, token)
	f.mu.Unlock()
	f.auth.Revoke(token)
	return nil
}

func (f *fakeAccounts) SignOutEverywhere(_ context.Context, userID string) (int, error) {
	f.mu.Lock()
	var toks []string
	for t, u := range f.sessions {
		if u == userID {
			toks = append(toks, t)
			delete(f.sessions, t)
		}
	}
	f.mu.Unlock()
	for _, t := range toks {
		f.auth.Revoke(t)
	}
	return len(toks), nil
}

func (f *fakeAccounts) RequestReset(_ context.Context, email, _, linkBase string) error {
	f.mu.Lock()
	f.resets = append(f.resets, email+" "+linkBase)
	f.mu.Unlock()
	return nil
}

func (f *fakeAccounts) Reset(_ context.Context, token, _ string) (account.Session, error) {
	if token != "good-reset" {
		return account.Session{}, account.ErrResetInvalid
	}
	return f.session(aliceID), nil
}

// fakeTokens keeps the users' tokens in memory.
type fakeTokens struct {
	mu     sync.Mutex
	tokens map[string][]fakeToken // by user
}

type fakeToken struct {
	info  auth.TokenInfo
	name  string
	token string
}

func (f *fakeTokens) List(_ context.Context, userID string) ([]auth.TokenInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []auth.TokenInfo
	for _, t := range f.tokens[userID] {
		out = append(out, t.info)
	}
	return out, nil
}

func (f *fakeTokens) Issue(_ context.Context, userID, name string, prof profile.Profile, scope auth.Scope) (string, error) {
	tok := "tb_api_" + strings.TrimPrefix(newSessionToken(), "tb_session_")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokens[userID] = append(f.tokens[userID], fakeToken{
		info: auth.TokenInfo{ID: auth.TokenID(auth.Hash(tok)), Kind: auth.KindAPI, Name: name, Profile: string(prof),
			Scope: scope, CreatedAt: time.Now().UTC().Format(time.RFC3339)},
		name: name, token: tok})
	return tok, nil
}

func (f *fakeTokens) Revoke(_ context.Context, userID, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, t := range f.tokens[userID] {
		if t.info.ID == id {
			f.tokens[userID][i].info.RevokedAt = time.Now().UTC().Format(time.RFC3339)
			return nil
		}
	}
	return store.ErrNotFound
}

// fakeHub is alice's agent, online, with one account and one position.
type fakeHub struct{}

func (fakeHub) Call(_ context.Context, userID, fn, _ string, _ json.RawMessage) (json.RawMessage, error) {
	if userID != aliceID {
		return nil, agentcall.ErrNotConnected
	}
	switch fn {
	case protocol.FnGetPnl:
		return json.Marshal(protocol.PnlSnapshot{Accounts: []protocol.PnlAccount{{Account: "Sim101", CashValue: 100000, RealizedProfitLoss: 12.5,
			UnrealizedProfitLoss: -3.25, Positions: []protocol.Position{{Account: "Sim101", Instrument: "ES 12-26", MarketPosition: "Long", Quantity: 2}}}}})
	case protocol.FnGetAllOrders:
		return json.Marshal([]protocol.Order{{OrderID: "ord-1", Account: "Sim101", Instrument: "ES 12-26", OrderState: "Working", Quantity: 1},
			{OrderID: "ord-2", Account: "Sim101", Instrument: "ES 12-26", OrderState: "Filled", Quantity: 1}})
	case protocol.FnEngineStatus:
		return json.Marshal(protocol.EngineStatus{Monitors: []protocol.MonitorStatus{{Account: "Sim101", State: protocol.MonitorActive,
			SessionPnl: -12.5, SessionHigh: 30}}})
	}
	return nil, agentcall.ErrNotConnected
}

// fakeAgent is the support view of alice's agent: online on the
// simulator; bob's is offline.
type fakeAgent struct{}

func (fakeAgent) Read(_ context.Context, userID string) (*support.Answer, error) {
	ended := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	hist := []support.Entry{{SessionID: "s1", ConnectedAt: ended.Add(-time.Hour), DisconnectedAt: &ended, Reason: "connection_lost", Platform: "sim"}}
	if userID != aliceID {
		return &support.Answer{UserID: userID, History: hist}, nil
	}
	return &support.Answer{UserID: userID, Connected: true,
		Agent: &support.Agent{SessionID: "s2", ConnectedAt: ended.Add(time.Hour), AgentVersion: "1.2.3", Platform: "sim",
			Connections: []protocol.Connection{{Name: "Sim", Status: "Connected", Accounts: []string{"Sim101"}}}},
		Diagnostics: &protocol.Diagnostics{Tunnel: protocol.TunnelDiagnostic{RTTMillis: 12}},
		History:     hist}, nil
}

// fakeManage records the Management API calls and keeps the kill switch.
type fakeManage struct {
	mu    sync.Mutex
	calls []manageCall
	kill  map[string]bool
}

type manageCall struct {
	P            auth.Principal
	Src          protocol.ActivitySource
	Method, Path string
	Body         string
}

func (f *fakeManage) Invoke(_ context.Context, p auth.Principal, src protocol.ActivitySource, method, path string, body []byte) (int, []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, manageCall{P: p, Src: src, Method: method, Path: path, Body: string(body)})
	switch method + " " + path {
	case "GET controls":
		b, _ := json.Marshal(map[string]any{"success": true, "data": map[string]any{"killSwitch": f.kill[p.UserID]}})
		return http.StatusOK, b
	case "PUT controls/kill-switch":
		var in struct {
			Enabled bool `json:"enabled"`
		}
		_ = json.Unmarshal(body, &in)
		f.kill[p.UserID] = in.Enabled
		b, _ := json.Marshal(map[string]any{"success": true, "data": map[string]any{"killSwitch": in.Enabled}, "applied": p.UserID == aliceID})
		return http.StatusOK, b
	}
	return http.StatusNotFound, []byte(`{"success":false,"error":"not_found"}`)
}

func (f *fakeManage) InvokeIf(ctx context.Context, p auth.Principal, src protocol.ActivitySource, method, path, _ string, body []byte) (int, []byte) {
	return f.Invoke(ctx, p, src, method, path, body)
}

func (f *fakeManage) puts() []manageCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []manageCall
	for _, c := range f.calls {
		if c.Method == http.MethodPut {
			out = append(out, c)
		}
	}
	return out
}

// fakeActivity is alice's log: three entries.
type fakeActivity struct{}

func (fakeActivity) ListActivity(_ context.Context, userID string, q store.ActivityQuery) ([]store.ActivityRecord, error) {
	if userID != aliceID {
		return nil, nil
	}
	all := []store.ActivityRecord{
		{Seq: 3, At: time.Now(), Kind: "order.placed", Account: "Sim101", SourceKind: "api", Summary: "Buy 1 ES <b>x</b>"},
		{Seq: 2, At: time.Now(), Kind: "controls.killSwitch", SourceKind: "dashboard", Summary: "Kill switch on"},
		{Seq: 1, At: time.Now(), Kind: "order.placed", Account: "Sim102", SourceKind: "api", Summary: "Sell 1 NQ"},
	}
	var out []store.ActivityRecord
	for _, r := range all {
		if (q.Account != "" && r.Account != q.Account) || (q.Before != 0 && r.Seq >= q.Before) ||
			(len(q.Kinds) > 0 && !contains(q.Kinds, r.Kind)) {
			continue
		}
		out = append(out, r)
		if len(out) == q.Limit {
			break
		}
	}
	return out, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// fakePairing keeps the minted codes.
type fakePairing struct {
	mu    sync.Mutex
	codes []store.PairingCode
}

func (f *fakePairing) PutPairingCode(_ context.Context, c store.PairingCode, _ int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.codes = append(f.codes, c)
	return nil
}

func (f *fakePairing) RedeemPairingCode(context.Context, string, time.Time, store.Token) (store.PairingCode, error) {
	return store.PairingCode{}, store.ErrNotFound
}

func (f *fakePairing) RevokeToken(context.Context, string, time.Time) error { return nil }

// env is a dashboard over the fakes, served by httptest.
type env struct {
	t        *testing.T
	accounts *fakeAccounts
	tokens   *fakeTokens
	manage   *fakeManage
	pairing  *fakePairing
	srv      *httptest.Server
	mux      *http.ServeMux
	url      string
}

func newEnv(t *testing.T, tweak ...func(*dashboard.Options)) *env {
	t.Helper()
	fa := authtest.New(map[string]auth.Principal{})
	e := &env{t: t,
		accounts: &fakeAccounts{auth: fa, users: map[string]string{aliceEmail: aliceID, bobEmail: bobID}, sessions: map[string]string{}},
		tokens:   &fakeTokens{tokens: map[string][]fakeToken{}},
		manage:   &fakeManage{kill: map[string]bool{}},
		pairing:  &fakePairing{},
	}
	adm, err := admit.New(admit.Options{Auth: fa})
	require.NoError(t, err)
	opts := dashboard.Options{Accounts: e.accounts, Admit: adm, Tokens: e.tokens, Pairing: e.pairing, Hub: fakeHub{},
		Agent: fakeAgent{}, Manage: e.manage, Activity: fakeActivity{}, Signup: account.SignupOpen}
	for _, f := range tweak {
		f(&opts)
	}
	d, err := dashboard.New(opts)
	require.NoError(t, err)
	e.mux = http.NewServeMux()
	d.Register(e.mux)
	e.srv = httptest.NewServer(e.mux)
	t.Cleanup(e.srv.Close)
	e.url = e.srv.URL
	return e
}

// resp is an answer, its body read.
type resp struct {
	*http.Response
	Body string
}

// do sends a request without following redirects. cookie is the session
// cookie's value ("" for none); form, when not nil, is the body; header
// pairs follow.
func (e *env) do(method, path, cookie string, form url.Values, header ...string) resp {
	e.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, e.url+path, body)
	require.NoError(e.t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: dashboard.CookieName, Value: cookie})
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	return resp{Response: res, Body: string(b)}
}

// post sends a form from the dashboard's own origin.
func (e *env) post(path, cookie string, form url.Values, header ...string) resp {
	e.t.Helper()
	return e.do(http.MethodPost, path, cookie, form, append([]string{"Origin", e.url}, header...)...)
}

// sessionCookie returns the session cookie an answer set.
func sessionCookie(r resp) *http.Cookie {
	for _, c := range r.Cookies() {
		if c.Name == dashboard.CookieName {
			return c
		}
	}
	return nil
}

// signIn signs the user in and returns the session's cookie value and
// CSRF token.
func (e *env) signIn(email string) (string, string) {
	e.t.Helper()
	r := e.post("/app/signin", "", url.Values{"email": {email}, "password": {password}})
	require.Equal(e.t, http.StatusSeeOther, r.StatusCode, r.Body)
	c := sessionCookie(r)
	require.NotNil(e.t, c)
	return c.Value, account.CSRFToken(c.Value)
}

var csrfMeta = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`)

// ---- A real Management API behind the editors ----

// simAccounts are the accounts of alice's simulator connection in the
// editors' tests.
var simAccounts = []string{"Sim101", "Sim102", "Sim103"}

// agentWith is fakeAgent with alice's connections replaced.
type agentWith struct {
	fakeAgent
	conns []protocol.Connection
}

func (a agentWith) Read(ctx context.Context, userID string) (*support.Answer, error) {
	ans, err := a.fakeAgent.Read(ctx, userID)
	if err == nil && ans.Agent != nil {
		ans.Agent.Connections = a.conns
	}
	return ans, err
}

// manageEnv is an env whose Manage is the relay's Management API over a
// SQLite store, with alice on the elite plan and her agent connected
// (simAccounts), acknowledging every configuration pushed.
type manageEnv struct {
	*env
	api   *manage.Server
	hub   *agentcalltest.Agents
	store store.Store
	// clock drives the Management API's budgets.
	clock *testkit.Clock
	// retrip makes the agent answer that a restarted monitor would stop
	// again at once.
	retrip *atomic.Bool
}

// newManageEnv returns a manageEnv; tweak changes the dashboard's
// options.
func newManageEnv(t *testing.T, tweak ...func(*dashboard.Options)) *manageEnv {
	t.Helper()
	return newManageEnvWith(t, nil, tweak...)
}

// newManageEnvWith is newManageEnv whose Management API's options mtweak
// changes (nil: none).
func newManageEnvWith(t *testing.T, mtweak func(*manage.Options), tweak ...func(*dashboard.Options)) *manageEnv {
	t.Helper()
	st := storetest.Open(t, "sqlite")
	ctx := context.Background()
	for _, u := range []store.User{{ID: aliceID, Name: "alice", Plan: string(auth.PlanElite)}, {ID: bobID, Name: "bob", Plan: string(auth.PlanFree)}} {
		u.CreatedAt = time.Now()
		require.NoError(t, st.CreateUser(ctx, u))
	}
	conns := []protocol.Connection{{Name: "Sim", Status: "Connected", Accounts: simAccounts}}
	retrip := new(atomic.Bool)
	hub := agentcalltest.New(func(_ context.Context, _, fn, _ string, args json.RawMessage) (json.RawMessage, error) {
		switch fn {
		case protocol.FnApplyConfig:
			var cfg protocol.Config
			if err := json.Unmarshal(args, &cfg); err != nil {
				return nil, err
			}
			return json.Marshal(protocol.ConfigApplied{Version: cfg.Version})
		case protocol.FnCheckMonitorRestart:
			if retrip.Load() {
				return json.Marshal(protocol.RestartVerdict{WouldRetrip: true, Reason: "lossLimit"})
			}
			return json.Marshal(protocol.RestartVerdict{})
		}
		return json.RawMessage(`{}`), nil
	})
	hub.Connect(aliceID, agentcall.Info{SessionID: "s-alice", Hello: protocol.Hello{ProtocolVersion: protocol.ProtocolVersion, Connections: conns}})
	clock := testkit.NewClock(time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC))
	adm, err := admit.New(admit.Options{Auth: authtest.New(map[string]auth.Principal{})})
	require.NoError(t, err)
	mopts := manage.Options{Store: st, Hub: hub, Admitter: adm, Now: clock.UnixNano, AckTimeout: testkit.Medium}
	if mtweak != nil {
		mtweak(&mopts)
	}
	api, err := manage.New(mopts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = api.Close() })
	me := &manageEnv{api: api, hub: hub, store: st, clock: clock, retrip: retrip}
	me.env = newEnv(t, append([]func(*dashboard.Options){func(o *dashboard.Options) {
		o.Manage = api
		o.Agent = agentWith{conns: conns}
	}}, tweak...)...)
	me.accounts.mu.Lock()
	me.accounts.plans = map[string]auth.Plan{aliceID: auth.PlanElite}
	me.accounts.mu.Unlock()
	return me
}

// apiGet reads a Management API resource as alice: its data and ETag.
func (m *manageEnv) apiGet(path string) (map[string]any, string) {
	m.t.Helper()
	status, body := m.api.Invoke(context.Background(), auth.Principal{UserID: aliceID, Plan: auth.PlanElite}, protocol.ActivitySource{Kind: "test"}, http.MethodGet, path, nil)
	require.Equal(m.t, http.StatusOK, status, "%s", body)
	var ans struct {
		Data map[string]any `json:"data"`
		Meta struct {
			ETag string `json:"etag"`
		} `json:"meta"`
	}
	require.NoError(m.t, json.Unmarshal(body, &ans), "%s", body)
	return ans.Data, ans.Meta.ETag
}

// apiList lists a Management API collection as alice.
func (m *manageEnv) apiList(path string) []map[string]any {
	m.t.Helper()
	status, body := m.api.Invoke(context.Background(), auth.Principal{UserID: aliceID, Plan: auth.PlanElite}, protocol.ActivitySource{Kind: "test"}, http.MethodGet, path, nil)
	require.Equal(m.t, http.StatusOK, status, "%s", body)
	var ans struct {
		Data []map[string]any `json:"data"`
	}
	require.NoError(m.t, json.Unmarshal(body, &ans), "%s", body)
	return ans.Data
}

// apiDo runs a Management API change as alice and returns its status and
// body.
func (m *manageEnv) apiDo(method, path, body string) (int, string) {
	m.t.Helper()
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	status, out := m.api.Invoke(context.Background(), auth.Principal{UserID: aliceID, Plan: auth.PlanElite}, protocol.ActivitySource{Kind: "test"}, method, path, b)
	return status, string(out)
}

// refill moves the Management API's budgets' clock a minute on: every
// budget full again.
func (m *manageEnv) refill() { m.clock.Advance(time.Minute) }

// inputValue returns the value attribute of the input named name in a
// page ("" when none).
func inputValue(page, name string) string {
	re := regexp.MustCompile(`<input[^>]*name="` + regexp.QuoteMeta(name) + `"[^>]*value="([^"]*)"`)
	if m := re.FindStringSubmatch(page); m != nil {
		return html.UnescapeString(m[1])
	}
	return ""
}

// report makes alice's agent report a state of the account's monitor, as
// the relay's event spine hands it to the Management API, and waits until
// it is stored.
func (m *manageEnv) report(monitorPath string, st protocol.MonitorState) {
	m.t.Helper()
	data, err := json.Marshal(st)
	require.NoError(m.t, err)
	m.api.HandleEvent(events.Event{Type: events.TypeAgent, UserID: aliceID,
		Agent: protocol.Event{Kind: protocol.EventMonitorState, Data: data}})
	got, _ := m.apiGet(monitorPath)
	require.Equal(m.t, st.State, got["state"])
}
