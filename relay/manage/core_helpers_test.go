package manage

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/admit"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/agentcall/agentcalltest"
	"tradebridge/relay/auth"
	"tradebridge/relay/auth/authtest"
	"tradebridge/relay/budget"
	"tradebridge/relay/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Tokens of the test users (newFakeAuth).
const (
	tokElite     = "tb_api_elite"     // user u1, elite
	tokEliteB    = "tb_api_eliteb"    // user u1 again, another token
	tokEliteC    = "tb_api_elitec"    // user u1 again, a third token
	tokElite2    = "tb_api_elite2"    // user u2, elite
	tokPro       = "tb_api_pro"       // user u3, pro
	tokClosed    = "tb_api_closed"    // user u4, elite, management closed
	tokNoDesktop = "tb_api_nodesktop" // user u5, elite, desktop withheld
	tokNoControl = "tb_api_nocontrol" // user u6, elite, controls withheld
	tokStoreFail = "tb_api_storefail" // the token store fails
)

// principals are the test users' tokens, which the admitter's
// authenticator knows (newFakeAuth).
var principals = map[string]auth.Principal{
	tokElite:     {UserID: "u1", Plan: auth.PlanElite, Kind: auth.KindAPI, TokenHash: "ha"},
	tokEliteB:    {UserID: "u1", Plan: auth.PlanElite, Kind: auth.KindAPI, TokenHash: "hb"},
	tokEliteC:    {UserID: "u1", Plan: auth.PlanElite, Kind: auth.KindAPI, TokenHash: "hc"},
	tokElite2:    {UserID: "u2", Plan: auth.PlanElite, Kind: auth.KindAPI},
	tokPro:       {UserID: "u3", Plan: auth.PlanPro, Kind: auth.KindAPI},
	tokClosed:    {UserID: "u4", Plan: auth.PlanElite, Kind: auth.KindAPI, ManagementClosed: true},
	tokNoDesktop: {UserID: "u5", Plan: auth.PlanElite, Kind: auth.KindAPI, Withheld: []string{"desktop"}},
	tokNoControl: {UserID: "u6", Plan: auth.PlanElite, Kind: auth.KindAPI, Withheld: []string{"controls"}},
}

// newFakeAuth is the admitter's authenticator over principals, whose
// store fails for tokStoreFail.
func newFakeAuth() *authtest.Auth {
	fa := authtest.New(principals)
	fa.Fail(tokStoreFail, errors.New("store down"))
	return fa
}

// fakeStore is an in-memory Store; failRead and failWrite make it fail,
// conflicts makes the next writes report a version conflict.
type fakeStore struct {
	mu        sync.Mutex
	users     map[string]*fakeUser
	failRead  error
	failWrite error
	conflicts int
	writes    int
	// gate, when set, is received from before each write of gateUser is
	// applied.
	gate     chan struct{}
	gateUser string
}

type fakeUser struct {
	cfg   int64
	res   map[resKey]store.Resource
	conns []byte
}

func newFakeStore() *fakeStore { return &fakeStore{users: map[string]*fakeUser{}} }

func (f *fakeStore) user(id string) *fakeUser {
	u := f.users[id]
	if u == nil {
		u = &fakeUser{res: map[resKey]store.Resource{}}
		f.users[id] = u
	}
	return u
}

func (f *fakeStore) ManagedState(_ context.Context, userID string) (store.ManagedState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failRead != nil {
		return store.ManagedState{}, f.failRead
	}
	u := f.user(userID)
	ms := store.ManagedState{ConfigVersion: u.cfg, Connections: u.conns}
	for _, r := range u.res {
		r.Body = slices.Clone(r.Body)
		ms.Resources = append(ms.Resources, r)
	}
	slices.SortFunc(ms.Resources, func(a, b store.Resource) int {
		if c := strings.Compare(a.Kind, b.Kind); c != 0 {
			return c
		}
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return ms, nil
}

func (f *fakeStore) WriteResources(_ context.Context, userID string, bump bool, writes ...store.ResourceWrite) (int64, error) {
	if f.gate != nil && userID == f.gateUser {
		<-f.gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failWrite != nil {
		return 0, f.failWrite
	}
	if f.conflicts > 0 {
		f.conflicts--
		return 0, store.ErrVersionConflict
	}
	u := f.user(userID)
	for _, w := range writes {
		if u.res[resKey{w.Kind, w.ID}].Version != w.Version {
			return 0, store.ErrVersionConflict
		}
	}
	for _, w := range writes {
		k := resKey{w.Kind, w.ID}
		if w.Body == nil {
			delete(u.res, k)
			continue
		}
		r := u.res[k]
		if r.Version == 0 {
			r = store.Resource{UserID: userID, Kind: w.Kind, ID: w.ID, CreatedAt: w.At}
		}
		r.Version++
		r.Body = slices.Clone(w.Body)
		r.UpdatedAt = w.At
		u.res[k] = r
	}
	if bump {
		u.cfg++
	}
	f.writes++
	return u.cfg, nil
}

func (f *fakeStore) SetConnections(_ context.Context, userID string, connections []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failWrite != nil {
		return f.failWrite
	}
	f.user(userID).conns = slices.Clone(connections)
	return nil
}

// stored returns the stored resource, or false.
func (f *fakeStore) stored(userID, kind, id string) (store.Resource, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.user(userID).res[resKey{kind, id}]
	return r, ok
}

func (f *fakeStore) writeCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

// fakeCall is one call the fake hub received.
// fakeHub is the agents' hub (the relay's one fake of the agents):
// connected agents report simConnections; setCall, when set, answers
// calls (default: ApplyConfig is acknowledged, restarts would not
// retrip).
type fakeHub struct{ *agentcalltest.Agents }

// simConnections are the platform connections of the test agents.
var simConnections = []protocol.Connection{{Name: "Sim", Status: "connected", Accounts: []string{"Sim101", "Sim102", "Sim103"}}}

func newFakeHub(users ...string) *fakeHub {
	h := &fakeHub{agentcalltest.New(nil)}
	h.setCall(nil)
	for _, u := range users {
		h.connect(u, protocol.ProtocolVersion)
	}
	return h
}

// setCall makes call answer the agents' calls; nil restores ack.
func (h *fakeHub) setCall(call func(ctx context.Context, user, fn string, args json.RawMessage) (json.RawMessage, error)) {
	h.SetAnswer(func(ctx context.Context, user, fn, _ string, args json.RawMessage) (json.RawMessage, error) {
		if call != nil {
			return call(ctx, user, fn, args)
		}
		return ack(fn, args)
	})
}

func (h *fakeHub) connect(user string, version int) {
	h.Connect(user, agentcall.Info{SessionID: "s-" + user, Hello: protocol.Hello{ProtocolVersion: version, Connections: simConnections}})
}

func (h *fakeHub) disconnect(user string) { h.Disconnect(user) }

// pushes returns the configurations pushed to user.
func (h *fakeHub) pushes(user string) []protocol.Config { return h.Pushes(user) }

// callsOf counts the calls that reached user's agent.
func (h *fakeHub) callsOf(user string) int { return len(h.Calls(user)) }

// ack is the default agent: it applies every configuration.
func ack(fn string, args json.RawMessage) (json.RawMessage, error) {
	switch fn {
	case protocol.FnApplyConfig:
		var cfg protocol.Config
		if err := json.Unmarshal(args, &cfg); err != nil {
			return nil, err
		}
		return json.Marshal(protocol.ConfigApplied{Version: cfg.Version})
	case protocol.FnCheckMonitorRestart:
		return json.Marshal(protocol.RestartVerdict{})
	}
	return nil, errors.New("unknown function")
}

// env is a Server with fakes, its routes on a ServeMux.
type env struct {
	t     testing.TB
	s     *Server
	mux   *http.ServeMux
	store *fakeStore
	hub   *fakeHub
	clock *testkit.Clock // drives the budgets
	ip    *budget.Limiter
	// now is the wall clock of changes.
	now time.Time
	// tick advances the budgets' clock before each request (a minute by
	// default: budgets full every time); budget tests set it to 0.
	tick time.Duration
}

// newEnv returns an env; mod, when set, changes the Options first.
func newEnv(t testing.TB, mod func(*Options)) *env {
	t.Helper()
	e := &env{t: t, store: newFakeStore(), hub: newFakeHub("u1", "u2", "u4", "u5", "u6"), clock: testkit.NewClock(time.Time{}),
		now: time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC), tick: time.Minute}
	ip, err := budget.New(budget.Options{Policy: admit.DefaultIPPolicy, Now: e.clock.UnixNano})
	require.NoError(t, err)
	e.ip = ip
	adm, err := admit.New(admit.Options{Auth: newFakeAuth()})
	require.NoError(t, err)
	opts := Options{Store: e.store, Hub: e.hub, Admitter: adm, IPBudget: ip, Now: e.clock.UnixNano,
		Clock: func() time.Time { return e.now }, AckTimeout: time.Second}
	if mod != nil {
		mod(&opts)
	}
	s, err := New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	e.s = s
	e.mux = http.NewServeMux()
	s.Register(e.mux)
	return e
}

// resp is a recorded answer.
type resp struct {
	Code   int
	Header http.Header
	Body   []byte
}

// errBody is an answer's body: the error object, or a success's data
// and changed.
type errBody struct {
	Success    bool              `json:"success"`
	Error      string            `json:"error"`
	Detail     string            `json:"detail"`
	Fields     []map[string]any  `json:"fields"`
	RetryAfter int               `json:"retryAfter"`
	Policy     string            `json:"policy"`
	Meta       map[string]string `json:"meta"`
	Data       json.RawMessage   `json:"data"`
	Changed    *bool             `json:"changed"`
	Applied    *bool             `json:"applied"`
}

func (r resp) body(t testing.TB) errBody {
	t.Helper()
	var b errBody
	require.NoError(t, json.Unmarshal(r.Body, &b), string(r.Body))
	return b
}

// code returns the answer's error code ("" for a success).
func (r resp) code(t testing.TB) string { return r.body(t).Error }

// data decodes the answer's data into v.
func (r resp) data(t testing.TB, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(r.body(t).Data, v), string(r.Body))
}

// do sends a request; headers are name, value pairs. A body is sent
// with Content-Type: application/json unless the headers name one.
func (e *env) do(method, path, token, body string, headers ...string) resp {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r := httptest.NewRequest(method, "http://relay"+Prefix+path, rd)
	r.RemoteAddr = "192.0.2.1:1234"
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			r.Header.Del(headers[i])
			continue
		}
		r.Header.Set(headers[i], headers[i+1])
	}
	e.clock.Advance(e.tick)
	w := httptest.NewRecorder()
	e.mux.ServeHTTP(w, r)
	return resp{Code: w.Code, Header: w.Header(), Body: w.Body.Bytes()}
}

// groupBody is a valid account group's create body.
func groupBody(name string) string {
	return `{"name":"` + name + `","destination":"desktop","accounts":["Sim101"]}`
}

// createGroup creates an account group of the token's user and returns
// its id.
func (e *env) createGroup(token, name string) string {
	e.t.Helper()
	r := e.do(http.MethodPost, "/desktop/account-groups", token, groupBody(name))
	require.Equal(e.t, http.StatusCreated, r.Code, string(r.Body))
	var g protocol.AccountGroup
	r.data(e.t, &g)
	return g.ID
}

// storeWrite is a ResourceWrite of a JSON body.
func storeWrite(kind, id, body string, version int64) store.ResourceWrite {
	return store.ResourceWrite{Kind: kind, ID: id, Body: []byte(body), Version: version,
		At: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
}
