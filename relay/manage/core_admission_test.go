package manage

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/budget"
	"tradebridge/relay/errcode"
)

// A valid id of each kind that names nothing.
const (
	noCopier = "cop_00000000000000000000"
	noGroup  = "grp_00000000000000000000"
)

// hold starts n PATCHes of controls by token that block in the store
// until the returned function is called; it waits until they are in
// flight. The function returns their answers.
func (e *env) hold(t *testing.T, user, token string, n int) func() []resp {
	t.Helper()
	gate := make(chan struct{})
	e.store.gate, e.store.gateUser = gate, user
	out := make(chan resp, n)
	for range n {
		go func() { out <- e.do(http.MethodPatch, "/controls", token, `{"blockAllSignals":true}`) }()
	}
	require.Eventually(t, func() bool { return e.s.opts.Admitter.InFlight(DoorName, user) == n },
		5*time.Second, time.Millisecond)
	return func() []resp {
		close(gate)
		var rs []resp
		for range n {
			rs = append(rs, <-out)
		}
		return rs
	}
}

// The order of the admission checks: each row sets up its refusal and
// every later one; the earliest answers.
func TestAdmissionOrder(t *testing.T) {
	t.Parallel()
	tinyIP := func(o *Options) {
		l, err := budget.New(budget.Options{Policy: budget.Policy{Name: "ip", Rate: 1, Period: time.Hour, Burst: 1}})
		if err != nil {
			panic(err)
		}
		o.IPBudget = l
	}
	for _, tc := range []struct {
		name    string
		mod     func(*Options)
		setup   func(t *testing.T, e *env)
		method  string
		path    string
		token   string
		body    string
		headers []string
		status  int
		code    string
		policy  string
	}{
		{name: "ip before the token", mod: tinyIP,
			setup:  func(t *testing.T, e *env) { e.do(http.MethodGet, "", "", "") },
			method: http.MethodGet, path: "", token: "", status: 429, code: errcode.RateLimited, policy: "ip"},
		{name: "token before the plan", method: http.MethodGet, path: "/controls", token: "",
			status: 401, code: errcode.Unauthorized},
		{name: "unknown token", method: http.MethodGet, path: "/controls", token: "tb_api_nobody",
			status: 401, code: errcode.Unauthorized},
		{name: "token store down", method: http.MethodGet, path: "/controls", token: tokStoreFail,
			status: 503, code: errcode.StorageUnavailable},
		{name: "plan before the gate",
			setup:  func(_ *testing.T, e *env) { _ = e.s.Modes().Set(ModeState{Management: ModeUnavailable}) },
			method: http.MethodGet, path: "/controls", token: tokPro, status: 403, code: errcode.EliteRequired},
		{name: "not available before the modes",
			setup:  func(_ *testing.T, e *env) { _ = e.s.Modes().Set(ModeState{Management: ModeUnavailable}) },
			method: http.MethodGet, path: "/controls", token: tokClosed, status: 403, code: errcode.NotAvailable},
		{name: "withheld family before the modes",
			setup:  func(_ *testing.T, e *env) { _ = e.s.Modes().Set(ModeState{Management: ModeUnavailable}) },
			method: http.MethodGet, path: "/desktop/copiers", token: tokNoDesktop, status: 403, code: errcode.PlanRequired},
		{name: "withheld kind", method: http.MethodPut, path: "/controls/kill-switch", token: tokNoControl,
			body: `{"enabled":true}`, status: 403, code: errcode.PlanRequired},
		{name: "withheld family spares the others", method: http.MethodGet, path: "/controls", token: tokNoDesktop,
			status: 200},
		{name: "unavailable before in-flight",
			setup: func(t *testing.T, e *env) {
				release := e.hold(t, "u1", tokElite, 2)
				t.Cleanup(func() { release() })
				_ = e.s.Modes().Set(ModeState{Management: ModeUnavailable})
			},
			method: http.MethodGet, path: "", token: tokElite, status: 503, code: errcode.ManagementUnavailable},
		{name: "read only refuses changes",
			setup:  func(_ *testing.T, e *env) { _ = e.s.Modes().Set(ModeState{Management: ModeReadOnly}) },
			method: http.MethodPatch, path: "/controls", token: tokElite, body: `{"x":1}`, status: 503, code: errcode.ManagementReadOnly},
		{name: "read only refuses the kill switch",
			setup:  func(_ *testing.T, e *env) { _ = e.s.Modes().Set(ModeState{Management: ModeReadOnly}) },
			method: http.MethodPut, path: "/controls/kill-switch", token: tokElite, body: `{"enabled":true}`, status: 503, code: errcode.ManagementReadOnly},
		{name: "read only serves reads",
			setup:  func(_ *testing.T, e *env) { _ = e.s.Modes().Set(ModeState{Management: ModeReadOnly}) },
			method: http.MethodGet, path: "/controls", token: tokElite, status: 200},
		{name: "family unavailable",
			setup: func(_ *testing.T, e *env) {
				_ = e.s.Modes().Set(ModeState{Families: map[string]string{FamilyDesktop: ModeUnavailable}})
			},
			method: http.MethodGet, path: "/desktop/account-groups", token: tokElite, status: 503, code: errcode.FamilyUnavailable},
		{name: "family unavailable spares the rest",
			setup: func(_ *testing.T, e *env) {
				_ = e.s.Modes().Set(ModeState{Families: map[string]string{FamilyDesktop: ModeUnavailable}})
			},
			method: http.MethodGet, path: "/news-lockout", token: tokElite, status: 200},
		{name: "in-flight before the token budget",
			setup: func(t *testing.T, e *env) {
				e.tick = 0
				for range 30 {
					e.do(http.MethodGet, "/desktop/copiers/bad", tokElite, "")
				}
				// Another token of the same user fills its in-flight places.
				release := e.hold(t, "u1", tokEliteB, 2)
				t.Cleanup(func() { release() })
			},
			method: http.MethodGet, path: "/desktop/copiers/bad", token: tokElite, status: 429, code: errcode.TooManyConcurrentRequests},
		{name: "token budget before the path",
			setup: func(_ *testing.T, e *env) {
				e.tick = 0
				for range 30 {
					e.do(http.MethodGet, "/desktop/copiers/bad", tokElite, "")
				}
			},
			method: http.MethodGet, path: "/desktop/copiers/bad", token: tokElite, status: 429, code: errcode.RateLimited, policy: "token"},
		{name: "path before busy",
			setup:  func(_ *testing.T, e *env) { _ = e.s.Modes().Set(ModeState{Management: ModeBusy}) },
			method: http.MethodGet, path: "/desktop/copiers/COP_1", token: tokElite, status: 400, code: errcode.InvalidPath},
		{name: "busy before the budgets",
			setup: func(_ *testing.T, e *env) {
				e.tick = 0
				for range 20 {
					e.do(http.MethodGet, "", tokElite, "")
				}
				_ = e.s.Modes().Set(ModeState{Management: ModeBusy})
			},
			method: http.MethodGet, path: "", token: tokElite, status: 503, code: errcode.ManagementBusy},
		{name: "budgets before the query",
			setup: func(_ *testing.T, e *env) {
				e.tick = 0
				for range 20 {
					e.do(http.MethodGet, "", tokElite, "")
				}
			},
			method: http.MethodGet, path: "?x=1", token: tokElite, status: 429, code: errcode.RateLimited, policy: "read"},
		{name: "budgets before the body", setup: func(_ *testing.T, e *env) {
			e.tick = 0
			for range 5 {
				e.do(http.MethodPost, "/desktop/account-groups", tokElite, `{`)
			}
		},
			method: http.MethodPost, path: "/desktop/account-groups", token: tokElite, body: "{", status: 429, code: errcode.RateLimited, policy: "write"},
		{name: "query before the body", method: http.MethodPatch, path: "/controls?a=1", token: tokElite, body: "{",
			status: 400, code: errcode.UnknownParameter},
		{name: "repeated query", method: http.MethodGet, path: "/controls?a=1&a=2", token: tokElite,
			status: 400, code: errcode.UnknownParameter},
		{name: "content type before the JSON", method: http.MethodPatch, path: "/controls", token: tokElite, body: "{",
			headers: []string{"Content-Type", "text/plain"}, status: 415, code: errcode.UnsupportedContentType},
		{name: "body on a GET", method: http.MethodGet, path: "/controls", token: tokElite, body: "{}",
			status: 400, code: errcode.UnexpectedBody},
		{name: "body on a DELETE", method: http.MethodDelete, path: "/desktop/account-groups/" + noGroup, token: tokElite, body: "{}",
			status: 400, code: errcode.UnexpectedBody},
		{name: "invalid JSON before the kind's rules", method: http.MethodPatch, path: "/desktop/account-groups/" + noGroup,
			token: tokElite, body: `{"a":1,"a":2}`, status: 400, code: errcode.InvalidJSON},
		{name: "the kind's rules last", method: http.MethodPatch, path: "/desktop/account-groups/" + noGroup,
			token: tokElite, body: `{"a":1}`, status: 404, code: errcode.NotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tc.mod)
			if tc.setup != nil {
				tc.setup(t, e)
			}
			r := e.do(tc.method, tc.path, tc.token, tc.body, tc.headers...)
			require.Equal(t, tc.status, r.Code, string(r.Body))
			b := r.body(t)
			require.Equal(t, tc.code, b.Error)
			require.Equal(t, tc.policy, b.Policy)
			if r.Code == http.StatusTooManyRequests || b.Error == errcode.ManagementBusy {
				require.Positive(t, b.RetryAfter)
				require.Equal(t, strconv.Itoa(b.RetryAfter), r.Header.Get("Retry-After"))
			}
		})
	}
}

// budgetCase exhausts one budget from full and checks its refusal, its
// refill and that every attempt counted.
type budgetCase struct {
	name   string
	policy string
	// n requests of req are admitted from a full budget; the next is
	// refused naming policy; after refill one more is admitted.
	n      int
	req    func(e *env, i int) resp
	refill time.Duration
}

// Every budget: its burst, its refusal (429 rate_limited, policy,
// Retry-After, retryAfter), its continuous refill on the driven clock.
func TestBudgets(t *testing.T) {
	t.Parallel()
	// The token budget (30) is per token; the stop budget (60) is the
	// user's: three tokens reach it.
	stop := func(e *env, i int) resp {
		return e.do(http.MethodPatch, "/desktop/copiers/"+noCopier, []string{tokElite, tokEliteB, tokEliteC}[i%3], `{ "active" : false }`)
	}
	for _, tc := range []budgetCase{
		{name: "token", policy: "token", n: 30, refill: time.Minute / 120,
			req: func(e *env, _ int) resp { return e.do(http.MethodGet, "/desktop/copiers/bad", tokElite, "") }},
		{name: "read", policy: "read", n: 20, refill: time.Second,
			req: func(e *env, _ int) resp { return e.do(http.MethodGet, "/controls", tokElite, "") }},
		{name: "write: creates cost 2", policy: "write", n: 5, refill: 6 * time.Second,
			req: func(e *env, i int) resp {
				return e.do(http.MethodPost, "/desktop/account-groups", tokElite, groupBody("G"+strconv.Itoa(i)))
			}},
		{name: "write: deletes cost 2", policy: "write", n: 5, refill: 6 * time.Second,
			req: func(e *env, i int) resp {
				return e.do(http.MethodDelete, "/desktop/account-groups/grp_0000000000000000000"+strconv.Itoa(i), tokElite, "")
			}},
		{name: "write: patches cost 1", policy: "write", n: 10, refill: 3 * time.Second,
			req: func(e *env, i int) resp {
				return e.do(http.MethodPatch, "/desktop/account-groups/grp_000000000000000000"+strconv.Itoa(10+i), tokElite, `{}`)
			}},
		{name: "resource", policy: "resource", n: 3, refill: 10 * time.Second,
			req: func(e *env, _ int) resp {
				return e.do(http.MethodPatch, "/controls", tokElite, `{"flattenOnKill":true}`)
			}},
		{name: "stop", policy: "stop", n: 60, refill: time.Second / 2, req: stop},
		{name: "kill", policy: "kill", n: 5, refill: 6 * time.Second,
			req: func(e *env, i int) resp {
				return e.do(http.MethodPut, "/controls/kill-switch", tokElite, `{"enabled":`+strconv.FormatBool(i%2 == 0)+`}`)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			e.tick = 0
			for i := range tc.n {
				r := tc.req(e, i)
				require.NotEqual(t, http.StatusTooManyRequests, r.Code, "request %d: %s", i, r.Body)
			}
			r := tc.req(e, tc.n)
			require.Equal(t, http.StatusTooManyRequests, r.Code, string(r.Body))
			b := r.body(t)
			require.Equal(t, errcode.RateLimited, b.Error)
			require.Equal(t, tc.policy, b.Policy)
			require.Positive(t, b.RetryAfter)
			require.Equal(t, strconv.Itoa(b.RetryAfter), r.Header.Get("Retry-After"))
			e.clock.Advance(tc.refill - time.Millisecond)
			require.Equal(t, http.StatusTooManyRequests, tc.req(e, tc.n+1).Code, "not refilled yet")
			e.clock.Advance(time.Millisecond)
			require.NotEqual(t, http.StatusTooManyRequests, tc.req(e, tc.n+2).Code, "refilled continuously")
			require.Equal(t, http.StatusTooManyRequests, tc.req(e, tc.n+3).Code, "by one request")
		})
	}
}

// Every attempt counts: refused changes and changes that change nothing
// use the budgets as any other.
func TestEveryAttemptCounts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.tick = 0
	for range 5 {
		r := e.do(http.MethodPost, "/desktop/account-groups", tokElite, `{"nonsense":true}`)
		require.Equal(t, http.StatusUnprocessableEntity, r.Code)
	}
	r := e.do(http.MethodPost, "/desktop/account-groups", tokElite, groupBody("Fine"))
	require.Equal(t, http.StatusTooManyRequests, r.Code)
	require.Equal(t, "write", r.body(t).Policy)

	e.clock.Advance(time.Hour)
	for range 3 {
		r := e.do(http.MethodPatch, "/news-lockout", tokElite, `{}`)
		require.Equal(t, http.StatusOK, r.Code, string(r.Body))
		require.False(t, *r.body(t).Changed)
	}
	r = e.do(http.MethodPatch, "/news-lockout", tokElite, `{}`)
	require.Equal(t, http.StatusTooManyRequests, r.Code)
	require.Equal(t, "resource", r.body(t).Policy)

	e.clock.Advance(time.Hour)
	for range 20 {
		require.Equal(t, http.StatusNotFound, e.do(http.MethodGet, "/desktop/account-groups/"+noGroup, tokElite, "").Code)
	}
	require.Equal(t, "read", e.do(http.MethodGet, "/controls", tokElite, "").body(t).Policy, "404s count")
}

// The resource budget is per resource: another resource, or another
// user's, has its own.
func TestResourceBudgetPerResource(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	a := e.createGroup(tokElite, "A")
	b := e.createGroup(tokElite, "B")
	e.tick = 0
	for range 3 {
		require.Equal(t, http.StatusOK, e.do(http.MethodPatch, "/desktop/account-groups/"+a, tokElite, `{}`).Code)
	}
	require.Equal(t, "resource", e.do(http.MethodPatch, "/desktop/account-groups/"+a, tokElite, `{}`).body(t).Policy)
	require.Equal(t, http.StatusOK, e.do(http.MethodPatch, "/desktop/account-groups/"+b, tokElite, `{}`).Code)
	require.Equal(t, http.StatusOK, e.do(http.MethodPatch, "/controls", tokElite, `{}`).Code)
	require.Equal(t, http.StatusNotFound, e.do(http.MethodPatch, "/desktop/account-groups/"+a, tokElite2, `{}`).Code,
		"another user's budget is full")
}

// The in-flight limit: two requests of a user at once; the third is 429
// too_many_concurrent_requests with Retry-After 1; another user is not
// held back; when one ends, the next is admitted.
func TestInFlightLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	release := e.hold(t, "u1", tokElite, 2)
	r := e.do(http.MethodGet, "/controls", tokElite, "")
	require.Equal(t, http.StatusTooManyRequests, r.Code)
	b := r.body(t)
	require.Equal(t, errcode.TooManyConcurrentRequests, b.Error)
	require.Equal(t, 1, b.RetryAfter)
	require.Equal(t, "1", r.Header.Get("Retry-After"))
	require.Equal(t, http.StatusOK, e.do(http.MethodGet, "/controls", tokElite2, "").Code)
	rs := release()
	require.Equal(t, http.StatusOK, rs[0].Code, string(rs[0].Body))
	require.Equal(t, http.StatusOK, rs[1].Code, string(rs[1].Body))
	require.Equal(t, http.StatusOK, e.do(http.MethodGet, "/controls", tokElite, "").Code)
}

// GET /v1/api/manage answers the budgets.
func TestLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.do(http.MethodGet, "", tokElite, "")
	require.Equal(t, http.StatusOK, r.Code)
	require.JSONEq(t, `{"success":true,"data":{"limits":{
		"token":{"perMinute":120,"burst":30},"read":{"perMinute":60,"burst":20},
		"write":{"perMinute":20,"burst":10},"resource":{"perMinute":6,"burst":3},
		"stop":{"perMinute":120,"burst":60},"kill":{"perMinute":10,"burst":5},
		"inFlight":{"max":2}}}}`, string(r.Body))
}

// stoppableCopier stores an active copier of u1 and returns its id.
func (e *env) stoppableCopier(t *testing.T) string {
	t.Helper()
	id := newID(copierKind.Name)
	body := `{"id":"` + id + `","createdAt":"2026-11-01T00:00:00Z","updatedAt":"2026-11-01T00:00:00Z","active":true,
		"leader":"Sim101","followers":[{"account":"Sim102","inverse":false}],"sizing":{"ratio":1},"instruments":[],
		"symbolReplacements":[],"copyMode":"order","tandem":false,"autoSync":false,"autoSyncSeconds":0,"state":"running"}`
	_, err := e.store.WriteResources(t.Context(), "u1", true, storeWrite(copierKind.Name, id, body, 0))
	require.NoError(t, err)
	return id
}

// The stop fast path: a copier PATCH of exactly {"active": false} passes
// under load (mode busy), costs the stop budget only, and turns the
// copier off; any other field makes it a normal change.
func TestStopFastPath(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	id := e.stoppableCopier(t)
	require.NoError(t, e.s.Modes().Set(ModeState{Management: ModeBusy}))
	e.tick = 0
	r := e.do(http.MethodPatch, "/desktop/copiers/"+id, tokElite, `{"active":true,"tandem":false}`)
	require.Equal(t, errcode.ManagementBusy, r.code(t), "a normal change is shed")
	require.Equal(t, BusyRetryAfter, r.body(t).RetryAfter)
	r = e.do(http.MethodPatch, "/desktop/copiers/"+id, tokElite, "{\n \"active\" :\tfalse }")
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	require.True(t, *r.body(t).Changed)
	var c struct {
		Active bool   `json:"active"`
		State  string `json:"state"`
	}
	r.data(t, &c)
	require.False(t, c.Active)
	pushes := e.hub.pushes("u1")
	require.NotEmpty(t, pushes)
	require.False(t, pushes[len(pushes)-1].Copiers[0].Active, "pushed")
	for i := range 59 {
		tok := []string{tokEliteB, tokEliteC}[i%2]
		require.Equal(t, http.StatusOK, e.do(http.MethodPatch, "/desktop/copiers/"+id, tok, `{"active":false}`).Code)
	}
	require.Equal(t, "stop", e.do(http.MethodPatch, "/desktop/copiers/"+id, tokElite, `{"active":false}`).body(t).Policy)
	// Neither write nor resource was charged.
	require.NoError(t, e.s.Modes().Set(ModeState{}))
	for range 3 {
		r := e.do(http.MethodPatch, "/desktop/copiers/"+id, tokElite, `{"active":false,"tandem":false}`)
		require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	}
	require.Equal(t, "resource", e.do(http.MethodPatch, "/desktop/copiers/"+id, tokElite, `{"active":false,"tandem":false}`).body(t).Policy)
	require.Equal(t, http.StatusCreated, e.do(http.MethodPost, "/desktop/account-groups", tokElite, groupBody("W")).Code)
}

// classify: only a copier's PATCH of exactly {"active": false} is stop.
func TestClassifyStop(t *testing.T) {
	t.Parallel()
	var patchCopier, patchMonitor *route
	for _, rt := range routes() {
		if rt.op == routePatch && rt.path == "desktop/copiers/{id}" {
			patchCopier = rt
		}
		if rt.op == routePatch && rt.path == "desktop/monitors/{id}" {
			patchMonitor = rt
		}
	}
	for _, tc := range []struct {
		rt   *route
		body string
		want class
	}{
		{patchCopier, `{"active":false}`, classStop},
		{patchCopier, " {\"active\":false} \n", classStop},
		{patchCopier, `{"active":true}`, classChange},
		{patchCopier, `{"active":0}`, classChange},
		{patchCopier, `{"active":false,"tandem":false}`, classChange},
		{patchCopier, `{}`, classChange},
		{patchCopier, `[{"active":false}]`, classChange},
		{patchMonitor, `{"active":false}`, classChange},
	} {
		require.Equal(t, tc.want, classify(tc.rt, input{body: []byte(tc.body)}), tc.body)
	}
}

// The kill switch: PUT {"enabled": bool} both ways, under load too, on
// its own budget; its body is exactly that; PATCH /controls cannot change
// it.
func TestKillSwitch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	require.NoError(t, e.s.Modes().Set(ModeState{Management: ModeBusy}))
	r := e.do(http.MethodPut, "/controls/kill-switch", tokElite, `{"enabled":true}`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	var c struct {
		KillSwitch bool `json:"killSwitch"`
	}
	r.data(t, &c)
	require.True(t, c.KillSwitch)
	require.True(t, *r.body(t).Changed)
	pushes := e.hub.pushes("u1")
	require.True(t, pushes[len(pushes)-1].Controls.KillSwitch)
	require.Equal(t, `"1"`, r.Header.Get("ETag"))
	r = e.do(http.MethodPut, "/controls/kill-switch", tokElite, `{"enabled":true}`)
	require.False(t, *r.body(t).Changed)
	require.NoError(t, e.s.Modes().Set(ModeState{}))

	for _, tc := range []struct {
		body   string
		fields []map[string]any
	}{
		{`{}`, []map[string]any{{"path": "enabled", "code": errcode.FieldCodeRequired}}},
		{`{"enabled":"yes"}`, []map[string]any{{"path": "enabled", "code": errcode.FieldCodeWrongType}}},
		{`{"enabled":null}`, []map[string]any{{"path": "enabled", "code": errcode.FieldCodeWrongType}}},
		{`{"enabled":false,"flattenOnKill":"yes"}`, []map[string]any{{"path": "flattenOnKill", "code": errcode.FieldCodeWrongType}}},
		{`{"enabled":false,"blockAllSignals":true}`, []map[string]any{{"path": "blockAllSignals", "code": errcode.FieldCodeUnknownField}}},
		{`[true]`, []map[string]any{{"path": "", "code": errcode.FieldCodeWrongType}}},
	} {
		r := e.do(http.MethodPut, "/controls/kill-switch", tokElite, tc.body)
		require.Equal(t, http.StatusUnprocessableEntity, r.Code, tc.body)
		require.Equal(t, errcode.ValidationFailed, r.code(t))
		require.Equal(t, tc.fields, r.body(t).Fields, tc.body)
	}
	r = e.do(http.MethodPatch, "/controls", tokElite, `{"killSwitch":false}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.Code)
	require.Equal(t, errcode.UseKillSwitchEndpoint, r.code(t))
	r = e.do(http.MethodPatch, "/controls", tokElite, `{"killSwitch":true,"flattenOnKill":true}`)
	require.Equal(t, http.StatusOK, r.Code, "an equal killSwitch is ignored")
	r = e.do(http.MethodPut, "/controls/kill-switch", tokElite, `{"enabled":false}`)
	require.Equal(t, http.StatusOK, r.Code)
	r.data(t, &c)
	require.False(t, c.KillSwitch)
}

// Load shedding past BusyThreshold requests at once, for all users:
// 503 management_busy with retryAfter, except the kill switch and stop.
func TestBusyThreshold(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.BusyThreshold = 1 })
	release := e.hold(t, "u1", tokElite, 1)
	r := e.do(http.MethodGet, "/controls", tokElite2, "")
	require.Equal(t, http.StatusServiceUnavailable, r.Code)
	b := r.body(t)
	require.Equal(t, errcode.ManagementBusy, b.Error)
	require.Equal(t, BusyRetryAfter, b.RetryAfter)
	require.Equal(t, strconv.Itoa(BusyRetryAfter), r.Header.Get("Retry-After"))
	r = e.do(http.MethodPut, "/controls/kill-switch", tokElite2, `{"enabled":true}`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	r = e.do(http.MethodPatch, "/desktop/copiers/"+noCopier, tokElite2, `{"active":false}`)
	require.Equal(t, http.StatusNotFound, r.Code, "stop passes, to find no copier")
	release()
	require.Equal(t, http.StatusOK, e.do(http.MethodGet, "/controls", tokElite2, "").Code)
}

// The service modes on the operator's route: GET, PUT (replacing), and
// refusals of unknown modes.
func TestModesHandler(t *testing.T) {
	t.Parallel()
	m, err := NewModes(ModeState{Management: ModeReadOnly})
	require.NoError(t, err)
	h := ModesHandler(m)
	e := &env{t: t, mux: http.NewServeMux()}
	e.mux.Handle(OperatorModesPath, h)
	do := func(method, body string) resp {
		return e.doRaw(method, OperatorModesPath, body)
	}
	r := do(http.MethodGet, "")
	require.JSONEq(t, `{"success":true,"data":{"management":"read_only","families":{"desktop":"normal","tv":"normal"}}}`, string(r.Body))
	r = do(http.MethodPut, `{"management":"busy","families":{"tv":"unavailable"}}`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	require.JSONEq(t, `{"success":true,"data":{"management":"busy","families":{"desktop":"normal","tv":"unavailable"}}}`, string(r.Body))
	require.Equal(t, ModeBusy, m.Get().Management)
	for _, body := range []string{`{"management":"off"}`, `{"families":{"web":"unavailable"}}`,
		`{"families":{"tv":"busy"}}`, `{"mode":"normal"}`} {
		r = do(http.MethodPut, body)
		require.Equal(t, http.StatusUnprocessableEntity, r.Code, body)
	}
	require.Equal(t, ModeBusy, m.Get().Management, "a refused PUT changes nothing")
	r = do(http.MethodPut, `{}`)
	require.Equal(t, http.StatusOK, r.Code)
	require.Equal(t, ModeState{Management: ModeNormal, Families: map[string]string{"desktop": ModeNormal, "tv": ModeNormal}}, m.Get())
	require.Equal(t, http.StatusMethodNotAllowed, do(http.MethodPost, `{}`).Code)

	fams, err := ParseFamilies("desktop, tv")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"desktop": ModeUnavailable, "tv": ModeUnavailable}, fams)
	_, err = ParseFamilies("desktop,web")
	require.Error(t, err)
}

// doRaw sends a request to e.mux at path, without the management prefix.
func (e *env) doRaw(method, path, body string) resp {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r := httptest.NewRequest(method, "http://relay"+path, rd)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	e.mux.ServeHTTP(w, r)
	return resp{Code: w.Code, Header: w.Header(), Body: w.Body.Bytes()}
}

// The body's transport rules: size, content type, encoding.
func TestBodyTransport(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	big := `{"flattenOnKill":true,"pad":"` + strings.Repeat("x", MaxBodyBytes) + `"}`
	for _, tc := range []struct {
		name    string
		body    string
		headers []string
		status  int
		code    string
	}{
		{"too large", big, nil, 413, errcode.BodyTooLarge},
		{"text", `{}`, []string{"Content-Type", "text/plain"}, 415, errcode.UnsupportedContentType},
		{"latin1", `{}`, []string{"Content-Type", "application/json; charset=latin1"}, 415, errcode.UnsupportedContentType},
		{"utf-8 charset", `{}`, []string{"Content-Type", "application/json; charset=UTF-8"}, 200, ""},
		{"gzip", `{}`, []string{"Content-Encoding", "gzip"}, 415, errcode.UnsupportedContentType},
		{"no type", `{}`, []string{"Content-Type", ""}, 415, errcode.UnsupportedContentType},
		{"empty", ``, []string{"Content-Type", "application/json"}, 400, errcode.InvalidJSON},
		{"NaN", `{"flattenOnKill":NaN}`, nil, 400, errcode.InvalidJSON},
		{"deep", strings.Repeat(`{"a":`, 40) + "1" + strings.Repeat("}", 40), nil, 400, errcode.InvalidJSON},
		{"trailing", `{} {}`, nil, 400, errcode.InvalidJSON},
		{"nested duplicate", `{"x":{"a":1,"a":1}}`, nil, 400, errcode.InvalidJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodPatch, "/controls", tokElite, tc.body, tc.headers...)
			require.Equal(t, tc.status, r.Code, string(r.Body))
			if tc.code != "" {
				require.Equal(t, tc.code, r.code(t))
			}
			require.NotContains(t, string(r.Body), "xxxx", "never repeats the body")
		})
	}
}
