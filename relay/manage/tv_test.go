package manage

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
)

// brokerAccounts are the accounts of u1's linked broker login in the broker tests:
// TV1…TV3 are the broker's only, Sim101 and Sim102 are also on u1's
// platform connection (the same accounts reached by both families), Sim103
// is on the platform only.
var brokerAccounts = []string{"TV1", "TV2", "TV3", "Sim101", "Sim102"}

// brokerLinks is a BrokerLinks: linked users and their accounts, an error to
// fail with, and a script of answers (one per call, linked or not) that
// overrides users while it lasts.
type brokerLinks struct {
	mu     sync.Mutex
	users  map[string][]string
	err    error
	script []bool
	calls  int
	// changed counts ConfigChanged by user (BrokerEngines).
	changed map[string]int
}

// ConfigChanged implements BrokerEngines.
func (l *brokerLinks) ConfigChanged(userID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changed == nil {
		l.changed = map[string]int{}
	}
	l.changed[userID]++
}

// changes returns how often the user's broker engines were told of a
// change.
func (l *brokerLinks) changes(userID string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed[userID]
}

// newBrokerLinks returns links with u1 linked to brokerAccounts.
func newBrokerLinks() *brokerLinks {
	return &brokerLinks{users: map[string][]string{"u1": brokerAccounts}}
}

func (l *brokerLinks) Linked(_ context.Context, userID string) (bool, []string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	if l.err != nil {
		return false, nil, l.err
	}
	accounts, ok := l.users[userID]
	if len(l.script) > 0 {
		ok = l.script[0]
		l.script = l.script[1:]
	}
	if !ok {
		return false, nil, nil
	}
	return true, slices.Clone(accounts), nil
}

// set links the user to accounts, or unlinks the user (nil).
func (l *brokerLinks) set(userID string, accounts []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if accounts == nil {
		delete(l.users, userID)
		return
	}
	l.users[userID] = accounts
}

// fail makes Linked fail with err (nil: answer again).
func (l *brokerLinks) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.err = err
}

// brokerEngine is a BrokerLinks whose engines judge broker monitors' restarts
// (BrokerMonitors): verdict, or err; seen records the monitors asked
// about.
type brokerEngine struct {
	*brokerLinks
	mu      sync.Mutex
	verdict protocol.RestartVerdict
	err     error
	seen    []protocol.Monitor
}

func (g *brokerEngine) CheckMonitorRestart(ctx context.Context, _ string, m protocol.Monitor) (protocol.RestartVerdict, error) {
	g.mu.Lock()
	g.seen = append(g.seen, m)
	v, err := g.verdict, g.err
	g.mu.Unlock()
	if errors.Is(err, context.DeadlineExceeded) {
		<-ctx.Done()
		return v, ctx.Err()
	}
	return v, err
}

// newBrokerEnv returns an env whose u1 is linked to brokerAccounts.
func newBrokerEnv(t *testing.T) (*env, *brokerLinks) {
	t.Helper()
	links := newBrokerLinks()
	return newEnv(t, func(o *Options) { o.BrokerLinks = links }), links
}

// brokerCopierBody is a broker copier's create body.
func brokerCopierBody(leader string, followers ...string) string {
	fs := make([]string, len(followers))
	for i, f := range followers {
		fs[i] = `{"account":"` + f + `"}`
	}
	return `{"leader":"` + leader + `","followers":[` + strings.Join(fs, ",") + `]}`
}

// create POSTs body to the collection at path and returns the new id; it
// requires 201.
func (e *env) create(path, body string) string {
	e.t.Helper()
	r := e.do(http.MethodPost, path, tokElite, body)
	require.Equal(e.t, http.StatusCreated, r.Code, string(r.Body))
	var m protocol.Meta
	r.data(e.t, &m)
	return m.ID
}

// dataKeys returns the top-level keys of an answer's data object.
func dataKeys(t *testing.T, r resp) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	r.data(t, &m)
	return m
}

// callsOf counts the calls the fake hub received for the user.

// configVersion returns the user's stored configuration version.
func (f *fakeStore) configVersion(user string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.user(user).cfg
}

// requireFields requires the refusal's code and its fields as path and
// code pairs, in order.
func requireFields(t *testing.T, r resp, status int, code string, fields ...string) {
	t.Helper()
	require.Equal(t, status, r.Code, string(r.Body))
	b := r.body(t)
	require.Equal(t, code, b.Error)
	var got []string
	for _, f := range b.Fields {
		got = append(got, f["path"].(string), f["code"].(string))
	}
	require.Equal(t, fields, got, string(r.Body))
}

// A broker copier's life: create (201, a tvc_ id, stored under its own kind,
// no copyMode anywhere), read, list, patch with ETags, a GET body sent
// back (changed:false), a stale If-Match (412), delete.
func TestBrokerCopierLifecycle(t *testing.T) {
	t.Parallel()
	e, _ := newBrokerEnv(t)
	r := e.do(http.MethodPost, "/tv/copiers", tokElite, brokerCopierBody("TV1", "TV2", "Sim101"))
	require.Equal(t, http.StatusCreated, r.Code, string(r.Body))
	require.Equal(t, `"1"`, r.Header.Get("ETag"))
	require.True(t, *r.body(t).Changed)
	keys := dataKeys(t, r)
	require.NotContains(t, keys, "copyMode")
	require.Contains(t, keys, "autoSync")
	var c BrokerCopier
	r.data(t, &c)
	require.Regexp(t, `^tvc_[0-9a-f]{20}$`, c.ID)
	require.Equal(t, protocol.CopierOff, c.State)
	require.Equal(t, e.now, c.CreatedAt)
	id := c.ID

	st, ok := e.store.stored("u1", brokerCopierKind.Name, id)
	require.True(t, ok)
	require.NotContains(t, string(st.Body), "copyMode")
	_, ok = e.store.stored("u1", copierKind.Name, id)
	require.False(t, ok)

	r = e.do(http.MethodGet, "/tv/copiers/"+id, tokElite, "")
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	require.Equal(t, `"1"`, r.Header.Get("ETag"))
	require.NotContains(t, dataKeys(t, r), "copyMode")
	got := r.body(t).Data

	r = e.do(http.MethodGet, "/tv/copiers", tokElite, "")
	require.Equal(t, http.StatusOK, r.Code)
	var list []map[string]any
	r.data(t, &list)
	require.Len(t, list, 1)
	require.Equal(t, id, list[0]["id"])
	require.NotContains(t, list[0], "copyMode")

	writes := e.store.writeCount()
	r = e.do(http.MethodPatch, "/tv/copiers/"+id, tokElite, string(got))
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	require.False(t, *r.body(t).Changed, "a GET body sent back changes nothing")
	require.Equal(t, writes, e.store.writeCount())

	r = e.do(http.MethodPatch, "/tv/copiers/"+id, tokElite, `{"active":true,"instruments":["es"]}`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	require.Equal(t, `"2"`, r.Header.Get("ETag"))
	r.data(t, &c)
	require.Equal(t, protocol.CopierRunning, c.State)
	require.Equal(t, []string{"ES"}, c.Instruments, "normalized by the copier's rules")

	r = e.do(http.MethodPatch, "/tv/copiers/"+id, tokElite, `{"sizing":{"ratio":2}}`, "If-Match", `"1"`)
	require.Equal(t, http.StatusPreconditionFailed, r.Code)
	require.Equal(t, errcode.PreconditionFailed, r.code(t))
	require.Equal(t, `"2"`, r.body(t).Meta["etag"])
	r = e.do(http.MethodPatch, "/tv/copiers/"+id, tokElite, `{"sizing":{"ratio":2}}`, "If-Match", `"2"`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	r = e.do(http.MethodPatch, "/tv/copiers/"+id, tokElite, `{"sizing":{"ratio":0.3}}`)
	requireFields(t, r, http.StatusUnprocessableEntity, errcode.ValidationFailed, "sizing.ratio", errcode.FieldCodeRatioNotAStep)
	r = e.do(http.MethodPatch, "/tv/copiers/"+id, tokElite, `{"state":"halted"}`)
	require.Equal(t, errcode.FieldReadOnly, r.code(t))

	r = e.do(http.MethodDelete, "/tv/copiers/"+id, tokElite, "")
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	require.JSONEq(t, `{"success":true,"data":{"id":"`+id+`","deleted":true},"changed":true}`, string(r.Body))
	require.Equal(t, http.StatusNotFound, e.do(http.MethodGet, "/tv/copiers/"+id, tokElite, "").Code)
	_, ok = e.store.stored("u1", brokerCopierKind.Name, id)
	require.False(t, ok)
}

// A broker monitor's life: one per broker account, the desktop monitor's
// rules (immutable account, state table), read back unchanged, deleted.
func TestBrokerMonitorLifecycle(t *testing.T) {
	t.Parallel()
	e, _ := newBrokerEnv(t)
	r := e.do(http.MethodPost, "/tv/monitors", tokElite, `{"account":"TV1","lossLimit":{"enabled":true,"amount":500}}`)
	require.Equal(t, http.StatusCreated, r.Code, string(r.Body))
	var m BrokerMonitor
	r.data(t, &m)
	require.Regexp(t, `^tvm_[0-9a-f]{20}$`, m.ID)
	require.Equal(t, protocol.MonitorActive, m.State)
	require.Equal(t, 500.0, m.LossLimit.Amount)
	id := m.ID
	_, ok := e.store.stored("u1", brokerMonitorKind.Name, id)
	require.True(t, ok)

	r = e.do(http.MethodPost, "/tv/monitors", tokElite, `{"account":"TV1"}`)
	require.Equal(t, http.StatusConflict, r.Code)
	require.Equal(t, errcode.AlreadyExists, r.code(t))

	r = e.do(http.MethodGet, "/tv/monitors/"+id, tokElite, "")
	require.Equal(t, http.StatusOK, r.Code)
	got := r.body(t).Data
	r = e.do(http.MethodPatch, "/tv/monitors/"+id, tokElite, string(got))
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	require.False(t, *r.body(t).Changed)

	r = e.do(http.MethodPatch, "/tv/monitors/"+id, tokElite, `{"account":"TV2"}`)
	requireFields(t, r, http.StatusUnprocessableEntity, errcode.ImmutableField, "account", errcode.ImmutableField)
	r = e.do(http.MethodPatch, "/tv/monitors/"+id, tokElite, `{"tradingWindows":[{"enabled":true,"days":[],"start":"09:30","end":"09:30"}]}`)
	requireFields(t, r, http.StatusUnprocessableEntity, errcode.ValidationFailed, "tradingWindows.0", errcode.FieldCodeEmptyWindow)

	r = e.do(http.MethodPatch, "/tv/monitors/"+id, tokElite, `{"active":false}`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	r.data(t, &m)
	require.Equal(t, protocol.MonitorPaused, m.State)
	require.Equal(t, `"2"`, r.Header.Get("ETag"))

	r = e.do(http.MethodPost, "/tv/monitors/"+id+"/restart", tokElite, "")
	require.Equal(t, http.StatusConflict, r.Code)
	require.Equal(t, errcode.MonitorNotStopped, r.code(t))

	r = e.do(http.MethodGet, "/tv/monitors", tokElite, "")
	var list []BrokerMonitor
	r.data(t, &list)
	require.Len(t, list, 1)

	r = e.do(http.MethodDelete, "/tv/monitors/"+id, tokElite, "")
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	require.Equal(t, http.StatusNotFound, e.do(http.MethodGet, "/tv/monitors/"+id, tokElite, "").Code)
}

// An account the linked login does not carry is 409
// account_identity_unresolved with a field per account (not 404
// account_not_found); the desktop family keeps 404 for the broker's
// accounts. Nothing is stored and no account is echoed.
func TestBrokerAccountIdentityUnresolved(t *testing.T) {
	t.Parallel()
	e, links := newBrokerEnv(t)
	cp := e.create("/tv/copiers", brokerCopierBody("TV1", "TV2"))
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code                     string
		fields                   []string
	}{
		{"copier leader and follower", http.MethodPost, "/tv/copiers", brokerCopierBody("Sim103", "TV2", "Nowhere9"),
			http.StatusConflict, errcode.AccountIdentityUnresolved,
			[]string{"leader", errcode.AccountIdentityUnresolved, "followers.1.account", errcode.AccountIdentityUnresolved}},
		{"copier patch", http.MethodPatch, "/tv/copiers/" + cp, `{"followers":[{"account":"TV3"},{"account":"Nowhere9"}]}`,
			http.StatusConflict, errcode.AccountIdentityUnresolved,
			[]string{"followers.1.account", errcode.AccountIdentityUnresolved}},
		{"monitor", http.MethodPost, "/tv/monitors", `{"account":"Nowhere9"}`,
			http.StatusConflict, errcode.AccountIdentityUnresolved, []string{"account", errcode.AccountIdentityUnresolved}},
		{"monitor of a platform account", http.MethodPost, "/tv/monitors", `{"account":"Sim103"}`,
			http.StatusConflict, errcode.AccountIdentityUnresolved, []string{"account", errcode.AccountIdentityUnresolved}},
		{"desktop monitor of a broker account", http.MethodPost, "/desktop/monitors", `{"account":"TV1"}`,
			http.StatusNotFound, errcode.AccountNotFound, []string{"account", errcode.AccountNotFound}},
		{"desktop copier of broker accounts", http.MethodPost, "/desktop/copiers", `{"leader":"TV1","followers":[{"account":"Sim101"}]}`,
			http.StatusNotFound, errcode.AccountNotFound, []string{"leader", errcode.AccountNotFound}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			writes := e.store.writeCount()
			r := e.do(tc.method, tc.path, tokElite, tc.body)
			requireFields(t, r, tc.status, tc.code, tc.fields...)
			require.NotContains(t, string(r.Body), "Nowhere9")
			if tc.code == errcode.AccountIdentityUnresolved {
				// A desktop account_not_found lists the user's own
				// platform accounts, Sim103 among them.
				require.NotContains(t, string(r.Body), "Sim103")
			}
			require.Equal(t, writes, e.store.writeCount(), "nothing stored")
		})
	}
	// Stopping a broker copier whose accounts left the login still works;
	// turning it on again is judged in full.
	require.Equal(t, http.StatusOK, e.do(http.MethodPatch, "/tv/copiers/"+cp, tokElite, `{"active":true}`).Code)
	links.set("u1", []string{"TV3"})
	r := e.do(http.MethodPatch, "/tv/copiers/"+cp, tokElite, `{"active":false}`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	r = e.do(http.MethodPatch, "/tv/copiers/"+cp, tokElite, `{"active":true}`)
	requireFields(t, r, http.StatusConflict, errcode.AccountIdentityUnresolved,
		"leader", errcode.AccountIdentityUnresolved, "followers.0.account", errcode.AccountIdentityUnresolved)
}

// copyMode does not exist for a broker copier: sent on create or PATCH,
// whatever its value, it is 422 field_not_applicable with the one field;
// nothing is stored. Desktop copiers keep it. Every monitor field applies
// to a broker account.
func TestBrokerFieldNotApplicable(t *testing.T) {
	t.Parallel()
	e, _ := newBrokerEnv(t)
	id := e.create("/tv/copiers", brokerCopierBody("TV1", "TV2"))
	for _, v := range []string{`"execution"`, `"order"`, `null`, `""`, `7`, `{}`} {
		t.Run(v, func(t *testing.T) {
			writes := e.store.writeCount()
			r := e.do(http.MethodPost, "/tv/copiers", tokElite, `{"leader":"TV2","followers":[{"account":"TV3"}],"copyMode":`+v+`}`)
			requireFields(t, r, http.StatusUnprocessableEntity, errcode.FieldNotApplicable, "copyMode", errcode.FieldNotApplicable)
			r = e.do(http.MethodPatch, "/tv/copiers/"+id, tokElite, `{"copyMode":`+v+`}`)
			requireFields(t, r, http.StatusUnprocessableEntity, errcode.FieldNotApplicable, "copyMode", errcode.FieldNotApplicable)
			r = e.do(http.MethodPatch, "/tv/copiers/"+id, tokElite, `{"active":true,"copyMode":`+v+`}`)
			requireFields(t, r, http.StatusUnprocessableEntity, errcode.FieldNotApplicable, "copyMode", errcode.FieldNotApplicable)
			require.Equal(t, writes, e.store.writeCount(), "nothing stored")
		})
	}
	st, _ := e.store.stored("u1", brokerCopierKind.Name, id)
	require.Equal(t, int64(1), st.Version)
	r := e.do(http.MethodGet, "/tv/copiers", tokElite, "")
	var list []BrokerCopier
	r.data(t, &list)
	require.Len(t, list, 1)

	r = e.do(http.MethodPost, "/desktop/copiers", tokElite, `{"leader":"Sim101","followers":[{"account":"Sim102"}],"copyMode":"execution"}`)
	require.Equal(t, http.StatusCreated, r.Code, string(r.Body))
	require.Equal(t, `"execution"`, string(dataKeys(t, r)["copyMode"]))

	full := `{"account":"TV2","active":true,"profitTarget":{"enabled":true,"amount":900},"lossLimit":{"enabled":true,"amount":400},
		"includeUnrealized":false,"includeCommission":true,"trailingDrawdown":{"enabled":true,"amount":300},
		"minimumProfitDrawdown":{"enabled":true,"trigger":600,"floor":100},
		"masterWindow":{"days":["mon","tue"],"start":"08:00","end":"16:00"},
		"tradingWindows":[{"enabled":true,"days":["mon"],"start":"09:30","end":"11:00"}],
		"closingOnly":false,"closingOnlyAfter":"15:30","blockSignals":true,"switchesLocked":true,"monitorLock":true,
		"autoFlattenAt":"15:55","onTrip":"none"}`
	r = e.do(http.MethodPost, "/tv/monitors", tokElite, full)
	require.Equal(t, http.StatusCreated, r.Code, "every monitor field applies to a broker account: %s", r.Body)
	var tvm BrokerMonitor
	r.data(t, &tvm)
	require.Equal(t, protocol.ProfitFloor{Enabled: true, Trigger: 600, Floor: 100}, tvm.MinimumProfitDrawdown)
	r = e.do(http.MethodPatch, "/tv/monitors/"+tvm.ID, tokElite, `{"minimumProfitDrawdown":{"floor":600}}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.Code, "the monitor's rules judge a broker monitor: %s", r.Body)
	require.Equal(t, []map[string]any{{"path": "minimumProfitDrawdown.floor", "code": "out_of_range", "limit": 600.0}},
		r.body(t).Fields)
}

// Until a broker login is linked every broker route answers 409
// tradovate_not_linked: after admission and the budgets, before the query
// and body rules. Linked, the routes work; unlinked again, they refuse
// while the resources stay. A link that cannot be read is 503
// storage_unavailable; a link gone between admission and the change is
// refused under the user's lock.
func TestBrokerNotLinked(t *testing.T) {
	t.Parallel()
	e, links := newBrokerEnv(t)
	links.set("u1", nil)
	brokerID := "tvc_00000000000000000000"
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodGet, "/tv/copiers", ""},
		{http.MethodPost, "/tv/copiers", brokerCopierBody("TV1", "TV2")},
		{http.MethodPost, "/tv/copiers", `{"copyMode":"order"}`},
		{http.MethodGet, "/tv/copiers/" + brokerID, ""},
		{http.MethodPatch, "/tv/copiers/" + brokerID, `{"active":false}`},
		{http.MethodDelete, "/tv/copiers/" + brokerID, ""},
		{http.MethodGet, "/tv/monitors", ""},
		{http.MethodPost, "/tv/monitors", `{"account":"TV1"}`},
		{http.MethodPatch, "/tv/monitors/tvm_00000000000000000000", `{"active":true}`},
		{http.MethodDelete, "/tv/monitors/tvm_00000000000000000000", ""},
		{http.MethodPost, "/tv/monitors/tvm_00000000000000000000/restart", ""},
		{http.MethodGet, "/tv/copiers?x=1", ""},
		{http.MethodGet, "/tv/copiers", "{}"},
		{http.MethodPost, "/tv/copiers", `{"leader":`},
	} {
		r := e.do(tc.method, tc.path, tokElite, tc.body)
		require.Equal(t, http.StatusConflict, r.Code, "%s %s: %s", tc.method, tc.path, r.Body)
		require.Equal(t, errcode.TradovateNotLinked, r.code(t))
	}
	require.Equal(t, errcode.EliteRequired, e.do(http.MethodGet, "/tv/copiers", tokPro, "").code(t))
	require.Equal(t, errcode.InvalidPath, e.do(http.MethodGet, "/tv/copiers/cop_x", tokElite, "").code(t))
	require.Equal(t, http.StatusOK, e.do(http.MethodGet, "/desktop/copiers", tokElite, "").Code, "desktop needs no link")

	links.set("u1", brokerAccounts)
	id := e.create("/tv/copiers", brokerCopierBody("TV1", "TV2"))
	links.set("u1", nil)
	require.Equal(t, errcode.TradovateNotLinked, e.do(http.MethodGet, "/tv/copiers/"+id, tokElite, "").code(t))
	require.Equal(t, errcode.TradovateNotLinked, e.do(http.MethodPatch, "/tv/copiers/"+id, tokElite, `{"active":true}`).code(t))
	links.set("u1", brokerAccounts)
	require.Equal(t, http.StatusOK, e.do(http.MethodGet, "/tv/copiers/"+id, tokElite, "").Code, "kept while unlinked")

	links.fail(errFake)
	r := e.do(http.MethodGet, "/tv/copiers", tokElite, "")
	require.Equal(t, http.StatusServiceUnavailable, r.Code)
	require.Equal(t, errcode.StorageUnavailable, r.code(t))
	links.fail(nil)

	// Linked when admitted, gone when the change loads the user's state.
	links.mu.Lock()
	links.script = []bool{true, false}
	links.mu.Unlock()
	writes := e.store.writeCount()
	r = e.do(http.MethodPatch, "/tv/copiers/"+id, tokElite, `{"active":true}`)
	require.Equal(t, http.StatusConflict, r.Code, string(r.Body))
	require.Equal(t, errcode.TradovateNotLinked, r.code(t))
	require.Equal(t, writes, e.store.writeCount())

	// The refusal is charged like any attempt: the read budget (burst
	// 20) runs out.
	links.set("u1", nil)
	e.tick = 0
	e.clock.Advance(time.Hour)
	for range 20 {
		require.Equal(t, errcode.TradovateNotLinked, e.do(http.MethodGet, "/tv/monitors", tokElite, "").code(t))
	}
	r = e.do(http.MethodGet, "/tv/monitors", tokElite, "")
	require.Equal(t, errcode.RateLimited, r.code(t))
	require.Equal(t, "read", r.body(t).Policy)
}

// Desktop and broker resources are apart: own lists and ids (an id of one
// family is 404 on the other's routes), conflicts judged within the
// family (a broker copier meets no desktop copier in cycles or duplicates, a
// broker Tandem needs broker monitors and makes broker monitors its dependency), and
// the configuration pushed to the agent holds only the desktop ones.
func TestBrokerAndDesktopApart(t *testing.T) {
	t.Parallel()
	e, _ := newBrokerEnv(t)
	d1 := e.create("/desktop/copiers", `{"leader":"Sim101","followers":[{"account":"Sim102"}]}`)
	t1 := e.create("/tv/copiers", brokerCopierBody("Sim101", "Sim102"))

	r := e.do(http.MethodPost, "/tv/copiers", tokElite, brokerCopierBody("Sim102", "Sim101"))
	requireFields(t, r, http.StatusConflict, errcode.CopierCycle, "followers.0.account", errcode.CopierCycle)
	r = e.do(http.MethodPost, "/tv/copiers", tokElite, brokerCopierBody("Sim101", "Sim102"))
	requireFields(t, r, http.StatusConflict, errcode.DuplicateCopier, "followers.0.account", errcode.DuplicateCopier)
	r = e.do(http.MethodPost, "/tv/copiers", tokElite, `{"leader":"TV3","followers":[{"account":"Sim102"}],"autoSync":true,"autoSyncSeconds":5}`)
	requireFields(t, r, http.StatusConflict, errcode.FollowerConflict, "followers.0.account", errcode.FollowerConflict)
	t3 := e.create("/tv/copiers", brokerCopierBody("TV3", "Sim102"))
	r = e.do(http.MethodPost, "/desktop/copiers", tokElite, `{"leader":"Sim102","followers":[{"account":"Sim101"}]}`)
	require.Equal(t, errcode.CopierCycle, r.code(t), "the desktop cycle is the desktop copiers'")

	for _, tc := range []struct {
		path string
		want []string
	}{{"/desktop/copiers", []string{d1}}, {"/tv/copiers", []string{t1, t3}}} {
		var list []protocol.Meta
		e.do(http.MethodGet, tc.path, tokElite, "").data(t, &list)
		var ids []string
		for _, m := range list {
			ids = append(ids, m.ID)
		}
		require.ElementsMatch(t, tc.want, ids, tc.path)
	}
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodGet, "/desktop/copiers/" + t1, ""},
		{http.MethodPatch, "/desktop/copiers/" + t1, `{"active":false}`},
		{http.MethodDelete, "/desktop/copiers/" + t1, ""},
		{http.MethodGet, "/tv/copiers/" + d1, ""},
		{http.MethodPatch, "/tv/copiers/" + d1, `{"active":true}`},
		{http.MethodDelete, "/tv/copiers/" + d1, ""},
	} {
		r := e.do(tc.method, tc.path, tokElite, tc.body)
		require.Equal(t, http.StatusNotFound, r.Code, tc.method+" "+tc.path)
		require.Equal(t, errcode.NotFound, r.code(t))
	}

	// Monitors: one per account per family.
	dm := e.create("/desktop/monitors", `{"account":"Sim102"}`)
	r = e.do(http.MethodPost, "/tv/copiers", tokElite, `{"leader":"TV1","followers":[{"account":"Sim102"},{"account":"TV2"}],"tandem":true}`)
	requireFields(t, r, http.StatusConflict, errcode.TandemRequiresMonitor,
		"followers.0.account", errcode.TandemRequiresMonitor, "followers.1.account", errcode.TandemRequiresMonitor)
	tm := e.create("/tv/monitors", `{"account":"Sim102"}`)
	e.create("/tv/monitors", `{"account":"TV2"}`)
	e.create("/tv/copiers", `{"leader":"TV1","followers":[{"account":"Sim102"},{"account":"TV2"}],"tandem":true}`)
	r = e.do(http.MethodPatch, "/tv/monitors/"+tm, tokElite, `{"active":false}`)
	require.Equal(t, errcode.TandemDependency, r.code(t))
	r = e.do(http.MethodDelete, "/tv/monitors/"+tm, tokElite, "")
	require.Equal(t, http.StatusConflict, r.Code)
	require.Equal(t, errcode.TandemDependency, r.code(t))
	r = e.do(http.MethodDelete, "/desktop/monitors/"+dm, tokElite, "")
	require.Equal(t, http.StatusOK, r.Code, "no desktop copier depends on it: %s", r.Body)

	pushes := e.hub.pushes("u1")
	require.NotEmpty(t, pushes)
	last := pushes[len(pushes)-1]
	require.Len(t, last.Copiers, 1)
	require.Equal(t, d1, last.Copiers[0].ID)
	require.Empty(t, last.Monitors)
}

// A broker change needs no agent and pushes nothing: with the agent gone,
// broker resources are created, changed and deleted; the hub is never called
// and the configuration version does not move. A desktop change still
// needs the agent.
func TestBrokerNeedsNoAgent(t *testing.T) {
	t.Parallel()
	e, links := newBrokerEnv(t)
	e.hub.disconnect("u1")
	mon := e.create("/tv/monitors", `{"account":"TV2"}`)
	cp := e.create("/tv/copiers", brokerCopierBody("TV1", "TV2"))
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodPatch, "/tv/copiers/" + cp, `{"active":true,"tandem":true}`},
		{http.MethodPatch, "/tv/copiers/" + cp, `{"active":false}`},
		{http.MethodPatch, "/tv/monitors/" + mon, `{"blockSignals":true}`},
		{http.MethodDelete, "/tv/copiers/" + cp, ""},
		{http.MethodDelete, "/tv/monitors/" + mon, ""},
	} {
		r := e.do(tc.method, tc.path, tokElite, tc.body)
		require.Equal(t, http.StatusOK, r.Code, "%s %s: %s", tc.method, tc.path, r.Body)
	}
	require.Zero(t, e.hub.callsOf("u1"), "nothing is pushed to the agent")
	require.Zero(t, e.store.configVersion("u1"), "the agent's configuration did not change")
	require.Equal(t, 7, links.changes("u1"), "the broker engines heard of every tv change")

	// The controls with the agent offline and a broker login linked: the
	// broker engines act on them at once; the agent gets them (a new
	// configuration version) when it connects.
	r := e.do(http.MethodPatch, "/controls", tokElite, `{"flattenOnKill":true}`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	require.Equal(t, 8, links.changes("u1"))
	require.Equal(t, int64(1), e.store.configVersion("u1"))
	require.Zero(t, e.hub.callsOf("u1"))

	// Without a broker login they still need the agent.
	links.set("u1", nil)
	r = e.do(http.MethodPatch, "/controls", tokElite, `{"flattenOnKill":false}`)
	require.Equal(t, errcode.AddonDisconnected, r.code(t))
	links.set("u1", brokerAccounts)

	// Connected, a broker change still pushes nothing.
	e.hub.connect("u1", protocol.ProtocolVersion)
	e.create("/tv/monitors", `{"account":"TV3"}`)
	require.Empty(t, e.hub.pushes("u1"))
}

// Service modes and budgets on the broker family: family tv unavailable turns
// off only broker routes (before the link); read_only keeps broker reads; busy
// sheds broker requests but a broker copier's stop; a broker resource has its own
// resource budget.
func TestBrokerModesAndBudgets(t *testing.T) {
	t.Parallel()
	e, links := newBrokerEnv(t)
	id := e.create("/tv/copiers", brokerCopierBody("TV1", "TV2"))

	require.NoError(t, e.s.Modes().Set(ModeState{Families: map[string]string{FamilyBroker: ModeUnavailable}}))
	r := e.do(http.MethodGet, "/tv/copiers", tokElite, "")
	require.Equal(t, http.StatusServiceUnavailable, r.Code)
	require.Equal(t, errcode.FamilyUnavailable, r.code(t))
	require.Equal(t, http.StatusOK, e.do(http.MethodGet, "/desktop/copiers", tokElite, "").Code)
	links.set("u1", nil)
	require.Equal(t, errcode.FamilyUnavailable, e.do(http.MethodGet, "/tv/monitors", tokElite, "").code(t))
	links.set("u1", brokerAccounts)

	require.NoError(t, e.s.Modes().Set(ModeState{Management: ModeReadOnly}))
	require.Equal(t, http.StatusOK, e.do(http.MethodGet, "/tv/copiers/"+id, tokElite, "").Code)
	require.Equal(t, errcode.ManagementReadOnly, e.do(http.MethodPatch, "/tv/copiers/"+id, tokElite, `{"active":true}`).code(t))

	require.NoError(t, e.s.Modes().Set(ModeState{Management: ModeBusy}))
	require.Equal(t, errcode.ManagementBusy, e.do(http.MethodGet, "/tv/copiers", tokElite, "").code(t))
	r = e.do(http.MethodPatch, "/tv/copiers/"+id, tokElite, `{"active":false}`)
	require.Equal(t, http.StatusOK, r.Code, "a tv copier's stop passes under load: %s", r.Body)

	require.NoError(t, e.s.Modes().Set(ModeState{}))
	other := e.create("/tv/copiers", brokerCopierBody("TV2", "TV3"))
	e.tick = 0
	e.clock.Advance(time.Hour)
	for range 3 {
		r = e.do(http.MethodPatch, "/tv/copiers/"+id, tokElite, `{"active":false,"tandem":false}`)
		require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	}
	r = e.do(http.MethodPatch, "/tv/copiers/"+id, tokElite, `{"active":false,"tandem":false}`)
	require.Equal(t, http.StatusTooManyRequests, r.Code)
	require.Equal(t, "resource", r.body(t).Policy)
	require.Equal(t, http.StatusOK, e.do(http.MethodPatch, "/tv/copiers/"+other, tokElite, `{"tandem":false}`).Code)
	require.Equal(t, http.StatusOK, e.do(http.MethodPatch, "/tv/copiers/"+id, tokElite, `{"active":false}`).Code,
		"a stop costs the stop budget, not the resource's")
}

// A broker monitor's restart is judged by the broker engines, never by the
// agent: would_retrip, a late engine (504), no engine (500), a restart
// that resumes the monitor; the state table holds as on desktop.
func TestBrokerMonitorRestart(t *testing.T) {
	t.Parallel()
	engine := &brokerEngine{brokerLinks: newBrokerLinks()}
	e := newEnv(t, func(o *Options) { o.BrokerLinks = engine; o.AckTimeout = 20 * time.Millisecond })
	e.hub.disconnect("u1")
	id := newID(brokerMonitorKind.Name)
	_, err := e.store.WriteResources(t.Context(), "u1", false,
		storeWrite(brokerMonitorKind.Name, id, monitorJSON(id, "TV1", protocol.MonitorStopped), 0))
	require.NoError(t, err)
	path := "/tv/monitors/" + id + "/restart"

	r := e.do(http.MethodPatch, "/tv/monitors/"+id, tokElite, `{"active":true}`)
	require.Equal(t, errcode.MonitorStoppedUseRestart, r.code(t))

	engine.mu.Lock()
	engine.verdict = protocol.RestartVerdict{WouldRetrip: true, Reason: "lossLimit"}
	engine.mu.Unlock()
	r = e.do(http.MethodPost, path, tokElite, "")
	require.Equal(t, http.StatusConflict, r.Code, string(r.Body))
	require.Equal(t, errcode.WouldRetrip, r.code(t))

	engine.mu.Lock()
	engine.verdict, engine.err = protocol.RestartVerdict{}, context.DeadlineExceeded
	engine.mu.Unlock()
	r = e.do(http.MethodPost, path, tokElite, "")
	require.Equal(t, http.StatusGatewayTimeout, r.Code, string(r.Body))
	require.Equal(t, errcode.DeadlineExceeded, r.code(t))

	engine.mu.Lock()
	engine.err = nil
	engine.mu.Unlock()
	r = e.do(http.MethodPost, path, tokElite, "")
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	var m BrokerMonitor
	r.data(t, &m)
	require.Equal(t, protocol.MonitorActive, m.State)
	require.Nil(t, m.StoppedAt)
	engine.mu.Lock()
	require.Len(t, engine.seen, 3)
	require.Equal(t, "TV1", engine.seen[2].Account)
	require.True(t, engine.seen[2].Active)
	engine.mu.Unlock()
	require.Equal(t, errcode.MonitorNotStopped, e.do(http.MethodPost, path, tokElite, "").code(t))
	require.Zero(t, e.hub.callsOf("u1"))

	// BrokerLinks without engines cannot judge a restart.
	plain, _ := newBrokerEnv(t)
	_, err = plain.store.WriteResources(t.Context(), "u1", false,
		storeWrite(brokerMonitorKind.Name, id, monitorJSON(id, "TV1", protocol.MonitorStopped), 0))
	require.NoError(t, err)
	r = plain.do(http.MethodPost, path, tokElite, "")
	require.Equal(t, http.StatusInternalServerError, r.Code, string(r.Body))
	require.Equal(t, errcode.InternalError, r.code(t))
	require.Zero(t, plain.hub.callsOf("u1"), "the agent is never asked")
}
