package support_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"tradebridge/protocol"
	"tradebridge/relay/admit"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/agentcall/agentcalltest"
	"tradebridge/relay/auth"
	"tradebridge/relay/auth/authtest"
	"tradebridge/relay/budget"
	"tradebridge/relay/store"
	"tradebridge/relay/support"
)

// The tests serve the route over httptest servers; none may outlive its
// test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)

// fakeHub is the users' live tunnels (the relay's one fake of the
// agents), whose agents answer the diagnostics call only.
type fakeHub struct{ *agentcalltest.Agents }

// set connects userID's agent with info, answering with reply.
func (h *fakeHub) set(userID string, info agentcall.Info, reply func() (json.RawMessage, error)) {
	h.SetAnswer(func(ctx context.Context, _, fn, requestID string, args json.RawMessage) (json.RawMessage, error) {
		if fn != protocol.FnDiagnostics || requestID != "" || args != nil {
			return nil, errors.New("unexpected call")
		}
		if _, ok := ctx.Deadline(); !ok {
			return nil, errors.New("no deadline")
		}
		return reply()
	})
	h.Connect(userID, info)
}

// calls counts the calls that reached an agent.
func (h *fakeHub) calls() int32 { return int32(len(h.Calls(""))) }

// fakeStore holds users, sessions and stored diagnostics.
type fakeStore struct {
	mu       sync.Mutex
	users    map[string]bool
	sessions []store.AgentSession
	stored   *store.StoredDiagnostics
	fail     bool
	since    time.Time
}

func (s *fakeStore) update(fn func(s *fakeStore)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s)
}

func (s *fakeStore) User(_ context.Context, id string) (store.User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return store.User{}, errors.New("disk on fire")
	}
	if !s.users[id] {
		return store.User{}, store.ErrNotFound
	}
	return store.User{ID: id}, nil
}

func (s *fakeStore) AgentSessions(_ context.Context, _ string, since time.Time, limit int) ([]store.AgentSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.since = since
	return s.sessions[:min(limit, len(s.sessions))], nil
}

func (s *fakeStore) LatestAgentDiagnostics(context.Context, string) (store.StoredDiagnostics, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stored == nil {
		return store.StoredDiagnostics{}, store.ErrNotFound
	}
	return *s.stored, nil
}

type env struct {
	hub   *fakeHub
	store *fakeStore
	logs  *observer.ObservedLogs
	srv   *httptest.Server
}

const (
	staffToken = "support-tok"
	otherStaff = "support-other"
	apiToken   = "api-tok"
)

func newEnv(t *testing.T, tweak func(*support.Options)) *env {
	t.Helper()
	a, err := admit.New(admit.Options{Auth: authtest.New(map[string]auth.Principal{
		staffToken: {UserID: "support:aaaaaaaaaaaa", UserName: "Sam", Kind: auth.KindSupport, TokenHash: strings.Repeat("a", 64),
			Grants: []string{"usr_alice", "usr_gone"}},
		otherStaff: {UserID: "support:bbbbbbbbbbbb", UserName: "Sue", Kind: auth.KindSupport, TokenHash: strings.Repeat("b", 64),
			Grants: []string{"usr_bob"}},
		apiToken: {UserID: "usr_alice", Kind: auth.KindAPI, Plan: auth.PlanElite},
	})})
	require.NoError(t, err)
	core, logs := observer.New(zapcore.DebugLevel)
	e := &env{
		hub:   &fakeHub{agentcalltest.New(nil)},
		store: &fakeStore{users: map[string]bool{"usr_alice": true, "usr_bob": true}},
		logs:  logs,
	}
	opts := support.Options{Hub: e.hub, Store: e.store, Admit: a, Logger: zap.New(core), Now: func() time.Time { return t0 }}
	if tweak != nil {
		tweak(&opts)
	}
	s, err := support.New(opts)
	require.NoError(t, err)
	mux := http.NewServeMux()
	s.Register(mux)
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

type reply struct {
	status int
	Data   json.RawMessage `json:"data"`
	Error  string          `json:"error"`
	Detail string          `json:"detail"`
}

func (e *env) get(t *testing.T, token, user string, body string) reply {
	t.Helper()
	var rd *strings.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest("GET", e.srv.URL+"/v1/support/users/"+user+"/agent", nil)
	if rd != nil {
		req, err = http.NewRequest("GET", e.srv.URL+"/v1/support/users/"+user+"/agent", rd)
	}
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var r reply
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
	r.status = resp.StatusCode
	return r
}

func (e *env) answer(t *testing.T, user string) support.Answer {
	t.Helper()
	r := e.get(t, staffToken, user, "")
	require.Equal(t, http.StatusOK, r.status, "%s %s", r.Error, r.Detail)
	var a support.Answer
	require.NoError(t, json.Unmarshal(r.Data, &a))
	return a
}

func diag(version string) protocol.Diagnostics {
	return protocol.Diagnostics{AgentVersion: version, Bridge: protocol.BridgeDiagnostic{Kind: "sim"}, Errors: []protocol.ErrorCount{}}
}

func liveInfo(version int, fromEvent *protocol.Diagnostics) agentcall.Info {
	return agentcall.Info{SessionID: "tun_1", ConnectedAt: t0.Add(-time.Hour), RemoteAddr: "192.0.2.7",
		Hello: protocol.Hello{ProtocolVersion: version, AgentVersion: "1.2.3", Platform: "sim",
			Connections: []protocol.Connection{{Name: "Sim", Status: "Connected", Accounts: []string{"Sim101"}}}},
		Diagnostics: fromEvent, DiagnosticsAt: t0.Add(-59 * time.Minute)}
}

// The diagnostics come from the agent now, else from its connect, else
// from the store, else there are none; an agent older than protocol 5 is
// not asked.
func TestDiagnosticsSources(t *testing.T) {
	t.Parallel()
	fromEvent := diag("event")
	stored := store.StoredDiagnostics{SessionID: "tun_0", JSON: []byte(`{"agentVersion":"stored"}`), At: t0.Add(-48 * time.Hour)}
	live := func() (json.RawMessage, error) { return json.Marshal(diag("live")) }
	failing := func() (json.RawMessage, error) { return nil, agentcall.ErrTimeout }
	for _, tc := range []struct {
		name      string
		info      *agentcall.Info
		reply     func() (json.RawMessage, error)
		stored    *store.StoredDiagnostics
		source    string
		version   string
		at        time.Time
		wantCalls int32
	}{
		{"live", ptr(liveInfo(5, &fromEvent)), live, &stored, support.SourceLive, "live", t0, 1},
		{"agent does not answer", ptr(liveInfo(5, &fromEvent)), failing, &stored, support.SourceConnect, "event", t0.Add(-59 * time.Minute), 1},
		{"malformed answer", ptr(liveInfo(5, &fromEvent)), func() (json.RawMessage, error) { return json.RawMessage(`[1]`), nil }, &stored,
			support.SourceConnect, "event", t0.Add(-59 * time.Minute), 1},
		{"no event, no answer", ptr(liveInfo(5, nil)), failing, &stored, support.SourceStored, "stored", t0.Add(-48 * time.Hour), 1},
		{"protocol 4 agent", ptr(liveInfo(4, nil)), live, &stored, support.SourceStored, "stored", t0.Add(-48 * time.Hour), 0},
		{"offline", nil, live, &stored, support.SourceStored, "stored", t0.Add(-48 * time.Hour), 0},
		{"nothing", nil, live, nil, support.SourceNone, "", time.Time{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			if tc.info != nil {
				e.hub.set("usr_alice", *tc.info, tc.reply)
			}
			e.store.update(func(s *fakeStore) { s.stored = tc.stored })
			a := e.answer(t, "usr_alice")
			require.Equal(t, tc.source, a.DiagnosticsSource)
			require.Equal(t, tc.wantCalls, e.hub.calls())
			if tc.version == "" {
				require.Nil(t, a.Diagnostics)
				require.Nil(t, a.DiagnosticsAt)
				return
			}
			require.Equal(t, tc.version, a.Diagnostics.AgentVersion)
			require.Equal(t, tc.at, *a.DiagnosticsAt)
		})
	}
}

func ptr[T any](v T) *T { return &v }

// The answer describes the live tunnel and the history, newest first, of
// the retention's window.
func TestAnswerShape(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *support.Options) { o.HistoryLimit = 2 })
	e.hub.set("usr_alice", liveInfo(5, nil), func() (json.RawMessage, error) { return json.Marshal(diag("live")) })
	e.store.update(func(s *fakeStore) { s.sessions = sessions })
	a := e.answer(t, "usr_alice")
	r := e.get(t, staffToken, "usr_alice", "")
	require.Equal(t, http.StatusOK, r.status)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(r.Data, &raw))
	for _, k := range []string{"userId", "connected", "agent", "diagnostics", "diagnosticsAt", "diagnosticsSource", "history"} {
		require.Contains(t, raw, k)
	}
	require.True(t, a.Connected)
	require.Equal(t, &support.Agent{SessionID: "tun_1", ConnectedAt: t0.Add(-time.Hour), AgentVersion: "1.2.3", ProtocolVersion: 5,
		Platform: "sim", Connections: []protocol.Connection{{Name: "Sim", Status: "Connected", Accounts: []string{"Sim101"}}}}, a.Agent)
	require.Len(t, a.History, 2, "HistoryLimit")
	require.Equal(t, "tun_1", a.History[0].SessionID)
	require.Nil(t, a.History[0].DisconnectedAt, "live")
	require.Empty(t, a.History[1].SessionID, "a refused handshake")
	require.Equal(t, agentcall.ReasonVersionUnsupported, a.History[1].Reason)
	e.store.update(func(s *fakeStore) { require.Equal(t, t0.Add(-support.DefaultRetention), s.since, "30 days") })
	require.Equal(t, "192.0.2.7", a.History[0].RemoteAddr)
}

var sessions = []store.AgentSession{
	{SessionID: "tun_1", UserID: "usr_alice", ConnectedAt: t0.Add(-time.Hour), AgentVersion: "1.2.3", ProtocolVersion: 5, Platform: "sim", RemoteAddr: "192.0.2.7"},
	{UserID: "usr_alice", ConnectedAt: t0.Add(-2 * time.Hour), DisconnectedAt: t0.Add(-2 * time.Hour), Reason: agentcall.ReasonVersionUnsupported, ProtocolVersion: 9},
	{SessionID: "tun_0", UserID: "usr_alice", ConnectedAt: t0.Add(-3 * time.Hour), DisconnectedAt: t0.Add(-2 * time.Hour), Reason: agentcall.ReasonReplaced},
}

// Refusals: other kinds of token, a user not granted or missing (the same
// 404), a body, the store down, the token's budget; each read is audited.
func TestRefusalsAndAudit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *support.Options) {
		o.Budget = budget.Policy{Name: "support", Rate: 1, Period: time.Hour, Burst: 6}
	})
	for _, tok := range []string{"", apiToken, "nope"} {
		r := e.get(t, tok, "usr_alice", "")
		require.Equal(t, http.StatusUnauthorized, r.status)
		require.Equal(t, "unauthorized", r.Error)
	}
	notGranted := e.get(t, staffToken, "usr_bob", "")
	missing := e.get(t, staffToken, "usr_gone", "")
	for _, r := range []reply{notGranted, missing} {
		require.Equal(t, http.StatusNotFound, r.status)
		require.Equal(t, "not_found", r.Error)
	}
	require.Equal(t, notGranted.Detail, missing.Detail, "missing and not granted look the same")
	r := e.get(t, staffToken, "usr_alice", `{"a":1}`)
	require.Equal(t, http.StatusBadRequest, r.status)
	require.Equal(t, "unexpected_body", r.Error)
	r = e.get(t, staffToken, "tb_api_"+strings.Repeat("A", 43), "")
	require.Equal(t, http.StatusNotFound, r.status)
	require.NotContains(t, r.Detail, "tb_api_", "errors never echo the caller's input")

	e.store.update(func(s *fakeStore) { s.fail = true })
	r = e.get(t, staffToken, "usr_alice", "")
	require.Equal(t, http.StatusServiceUnavailable, r.status)
	require.Equal(t, "storage_unavailable", r.Error)
	e.store.update(func(s *fakeStore) { s.fail = false })
	require.Equal(t, http.StatusOK, e.get(t, staffToken, "usr_alice", "").status)
	r = e.get(t, staffToken, "usr_alice", "")
	require.Equal(t, http.StatusTooManyRequests, r.status, "the token's budget")
	require.Equal(t, "rate_limited", r.Error)
	// Another support token has a budget of its own.
	require.Equal(t, http.StatusOK, e.get(t, otherStaff, "usr_bob", "").status)

	var lines []string
	for _, l := range e.logs.FilterMessage("support read").All() {
		require.Equal(t, "support", l.LoggerName)
		m := l.ContextMap()
		lines = append(lines, m["supportName"].(string)+" "+m["supportToken"].(string)+" "+m["user"].(string)+" "+m["result"].(string))
	}
	require.Equal(t, []string{
		"Sam aaaaaaaaaaaa usr_bob not_found",
		"Sam aaaaaaaaaaaa usr_gone not_found",
		"Sam aaaaaaaaaaaa (malformed) not_found",
		"Sam aaaaaaaaaaaa usr_alice storage_unavailable",
		"Sam aaaaaaaaaaaa usr_alice ok",
		"Sue bbbbbbbbbbbb usr_bob ok",
	}, lines)
}
