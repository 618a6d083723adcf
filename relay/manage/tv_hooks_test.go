package manage

import (
	"encoding/json"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/auth"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// brokerCp returns a broker copier from leader to followers, with the id.
func brokerCp(id, leader string, followers ...string) BrokerCopier {
	return BrokerCopier{Copier: cpCopier(id, leader, followers...)}
}

// brokerSnap returns a linked snapshot whose broker login carries the
// accounts A…D, with the broker copiers, broker monitors on the monitored
// accounts, and the desktop copiers and monitors given.
func brokerSnap(monitored []string, copiers []BrokerCopier, desktop ...protocol.Copier) *Snapshot {
	s := &Snapshot{BrokerLinked: true, BrokerAccounts: []string{"A", "B", "C", "D"}, BrokerCopiers: copiers, Copiers: desktop}
	for _, a := range monitored {
		s.BrokerMonitors = append(s.BrokerMonitors, BrokerMonitor{Monitor: protocol.Monitor{Account: a}})
	}
	return s
}

// The broker kinds are the desktop kinds' declarations with their own names
// and paths, no agent, and copyMode not applicable.
func TestBrokerKindDeclarations(t *testing.T) {
	t.Parallel()
	c := brokerCopierKind
	require.Equal(t, "tv-copier", c.Name)
	require.Equal(t, "tv/copiers", c.Path)
	require.False(t, c.NeedsAgent)
	require.Equal(t, copierKind.ReadOnly, c.ReadOnly)
	require.Equal(t, copierKind.Required, c.Required)
	require.Empty(t, c.Immutable)
	require.Equal(t, maxCopiers, c.MaxCount)
	require.Empty(t, c.Actions)
	require.Equal(t, []string{"copyMode"}, brokerCopierNotApplicable)
	v := brokerCp("tvc_1", "A", "B")
	require.Same(t, &v.Meta, c.Meta(&v))

	m := brokerMonitorKind
	require.Equal(t, "tv-monitor", m.Name)
	require.Equal(t, "tv/monitors", m.Path)
	require.False(t, m.NeedsAgent)
	require.Equal(t, monitorKind.ReadOnly, m.ReadOnly)
	require.Equal(t, monitorKind.Immutable, m.Immutable)
	require.Equal(t, monitorKind.Required, m.Required)
	require.Equal(t, []string{"restart"}, m.actionNames())
	require.Empty(t, brokerMonitorNotApplicable)
	require.Equal(t, monitorKind.Default(), m.Default().Monitor)

	require.Equal(t, "copier", kindFeature(c.Name))
	require.Equal(t, "monitor", kindFeature(m.Name))
	require.Equal(t, "controls", kindFeature(controlsKind.Name))
	require.True(t, isCopierKind(c.Name))
	require.True(t, isCopierKind(copierKind.Name))
	require.False(t, isCopierKind(m.Name))
}

// A BrokerCopier's JSON is a copier's without copyMode (stored, shown and
// defaulted), and its body fields are the copier's; a BrokerMonitor's JSON is
// a monitor's.
func TestBrokerJSON(t *testing.T) {
	t.Parallel()
	cp, err := toDoc(cpCopier("cop_1", "A", "B"))
	require.NoError(t, err)
	brokerDoc, err := toDoc(brokerCp("cop_1", "A", "B"))
	require.NoError(t, err)
	require.Contains(t, cp, "copyMode")
	delete(cp, "copyMode")
	require.Equal(t, cp, brokerDoc)
	def, err := toDoc(brokerCopierKind.Default())
	require.NoError(t, err)
	require.NotContains(t, def, "copyMode")
	require.ElementsMatch(t, slices.Collect(maps.Keys(jsonFields(reflect.TypeFor[protocol.Copier]()))),
		slices.Collect(maps.Keys(jsonFields(reflect.TypeFor[BrokerCopier]()))), "the body fields are the copier's")

	mon, err := toDoc(monValid())
	require.NoError(t, err)
	tvm, err := toDoc(BrokerMonitor{Monitor: monValid()})
	require.NoError(t, err)
	require.Equal(t, mon, tvm)

	var back BrokerCopier
	b, err := json.Marshal(brokerCp("tvc_1", "A", "B"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, "A", back.Leader)
	require.Nil(t, back.CopyMode)
}

// brokerView shows the broker resources in the place of the desktop ones, copying
// executions, and changes nothing of the snapshot.
func TestBrokerView(t *testing.T) {
	t.Parallel()
	s := brokerSnap([]string{"B"}, []BrokerCopier{brokerCp("tvc_1", "A", "B")}, cpCopier("cop_1", "C", "D"))
	s.Monitors = []protocol.Monitor{{Account: "D"}}
	v := brokerView(s)
	require.Len(t, v.Copiers, 1)
	require.Equal(t, "tvc_1", v.Copiers[0].ID)
	require.Equal(t, protocol.CopyModeExecution, v.Copiers[0].CopyMode)
	require.Len(t, v.Monitors, 1)
	require.Equal(t, "B", v.Monitors[0].Account)
	require.Equal(t, protocol.CopyModeOrder, s.BrokerCopiers[0].Copier.CopyMode, "the snapshot is not changed")
	require.Equal(t, "cop_1", s.Copiers[0].ID)
	require.Equal(t, "D", s.Monitors[0].Account)
	require.Nil(t, brokerView(nil))
}

// The broker copier's hooks: copyMode not applicable (whatever its value,
// alone or with other fields), accounts of the broker login, and every
// conflict judged among the broker copiers only.
func TestBrokerCopierHooks(t *testing.T) {
	t.Parallel()
	k := brokerCopierKind
	sent := func(body string) map[string]json.RawMessage {
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(body), &m))
		return m
	}
	old := brokerCp("tvc_1", "A", "B")
	for _, body := range []string{`{"copyMode":"execution"}`, `{"copyMode":null}`, `{"active":true,"copyMode":"order"}`} {
		for _, op := range []Op{OpCreate, OpPatch} {
			c := &Change[BrokerCopier]{Op: op, Sent: sent(body), Snap: brokerSnap(nil, nil), Family: FamilyBroker}
			if op == OpPatch {
				c.Old = &old
			}
			cpRequireErr(t, k.Guard(c), errcode.FieldNotApplicable, []httpapi.FieldError{cpFE("copyMode", errcode.FieldNotApplicable)})
		}
	}
	require.Nil(t, k.Guard(&Change[BrokerCopier]{Op: OpPatch, Old: &old, Sent: sent(`{"active":true}`)}))
	require.Nil(t, k.Guard(&Change[BrokerCopier]{Op: OpDelete, Old: &old}))

	check := func(v BrokerCopier, s *Snapshot) *httpapi.Error {
		c := &Change[BrokerCopier]{Op: OpCreate, New: &v, Snap: s, Now: time.Now()}
		if e := k.Validate(c); e != nil {
			return e
		}
		return k.Check(c)
	}
	desktopBA := cpCopier("cop_9", "B", "A")
	for _, tc := range []struct {
		name   string
		v      BrokerCopier
		snap   *Snapshot
		code   string
		fields []httpapi.FieldError
	}{
		{"valid", brokerCp("", "A", "B"), brokerSnap(nil, nil), "", nil},
		{"platform accounts are not the login's", brokerCp("", "A", "X"), brokerSnap(nil, nil),
			errcode.AccountIdentityUnresolved, []httpapi.FieldError{cpFE("followers.0.account", errcode.AccountIdentityUnresolved)}},
		{"unlinked", brokerCp("", "A", "B"), &Snapshot{BrokerAccounts: []string{"A", "B"}},
			errcode.AccountIdentityUnresolved, []httpapi.FieldError{
				cpFE("leader", errcode.AccountIdentityUnresolved), cpFE("followers.0.account", errcode.AccountIdentityUnresolved)}},
		{"no cycle with a desktop copier", brokerCp("", "A", "B"), brokerSnap(nil, nil, desktopBA), "", nil},
		{"cycle among tv copiers", brokerCp("", "A", "B"), brokerSnap(nil, []BrokerCopier{brokerCp("tvc_9", "B", "A")}),
			errcode.CopierCycle, []httpapi.FieldError{cpFE("followers.0.account", errcode.CopierCycle)}},
		{"duplicate among tv copiers", brokerCp("", "A", "B"), brokerSnap(nil, []BrokerCopier{brokerCp("tvc_9", "A", "B")}),
			errcode.DuplicateCopier, []httpapi.FieldError{cpFE("followers.0.account", errcode.DuplicateCopier)}},
		{"no duplicate of a desktop copier", brokerCp("", "A", "B"), brokerSnap(nil, nil, cpCopier("cop_9", "A", "B")), "", nil},
		{"copy modes never conflict", brokerCp("", "A", "B"), brokerSnap(nil, []BrokerCopier{brokerCp("tvc_9", "C", "B")}), "", nil},
		{"tandem needs a tv monitor", cpBroker(brokerCp("", "A", "B", "C"), func(v *protocol.Copier) { v.Tandem = true }),
			func() *Snapshot {
				s := brokerSnap([]string{"B"}, nil)
				s.Monitors = []protocol.Monitor{{Account: "C"}}
				return s
			}(),
			errcode.TandemRequiresMonitor, []httpapi.FieldError{cpFE("followers.1.account", errcode.TandemRequiresMonitor)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cpRequireErr(t, check(tc.v, tc.snap), tc.code, tc.fields)
		})
	}
}

// cpBroker returns v changed by fn on its copier.
func cpBroker(v BrokerCopier, fn func(*protocol.Copier)) BrokerCopier {
	fn(&v.Copier)
	return v
}

// The broker monitor's hooks: accounts of the broker login, one monitor per
// account among the broker monitors, tandem_dependency from broker copiers only,
// and the state table as on desktop.
func TestBrokerMonitorHooks(t *testing.T) {
	t.Parallel()
	k := brokerMonitorKind
	create := func(acct string, s *Snapshot) *httpapi.Error {
		v := BrokerMonitor{Monitor: monValid()}
		v.Account = acct
		return k.Check(&Change[BrokerMonitor]{Op: OpCreate, New: &v, Snap: s})
	}
	s := brokerSnap([]string{"B"}, nil)
	s.Connections = []protocol.Connection{{Accounts: []string{"X"}}}
	s.Monitors = []protocol.Monitor{{Account: "A"}}
	require.Nil(t, create("A", s), "a desktop monitor of the account does not count")
	require.Equal(t, errcode.AlreadyExists, create("B", s).Code)
	e := create("X", s)
	cpRequireErr(t, e, errcode.AccountIdentityUnresolved, []httpapi.FieldError{cpFE("account", errcode.AccountIdentityUnresolved)})

	tandem := cpBroker(brokerCp("tvc_1", "A", "B"), func(v *protocol.Copier) { v.Tandem = true })
	old := BrokerMonitor{Monitor: monValid()}
	old.Account = "B"
	del := func(s *Snapshot) *httpapi.Error {
		o := old
		return k.Check(&Change[BrokerMonitor]{Op: OpDelete, Old: &o, Snap: s})
	}
	require.Equal(t, errcode.TandemDependency, del(brokerSnap([]string{"B"}, []BrokerCopier{tandem})).Code)
	desktopTandem := cpWith(cpCopier("cop_1", "A", "B"), func(v *protocol.Copier) { v.Tandem = true })
	require.Nil(t, del(brokerSnap([]string{"B"}, nil, desktopTandem)), "a desktop Tandem copier does not hold a tv monitor")

	stopped := BrokerMonitor{Monitor: monStopped(time.Now())}
	c := &Change[BrokerMonitor]{Op: OpPatch, Old: &stopped, Sent: map[string]json.RawMessage{"active": json.RawMessage(`true`)},
		Snap: brokerSnap(nil, nil), Now: time.Now()}
	require.Equal(t, errcode.MonitorStoppedUseRestart, k.Guard(c).Code)
	every := map[string]json.RawMessage{}
	for name := range jsonFields(reflect.TypeFor[BrokerMonitor]()) {
		every[name] = json.RawMessage(`null`)
	}
	active := BrokerMonitor{Monitor: monValid()}
	require.Nil(t, k.Guard(&Change[BrokerMonitor]{Op: OpPatch, Old: &active, Sent: every, Snap: brokerSnap(nil, nil), Now: time.Now()}),
		"no monitor field is refused as not applicable")
}

// The broker routes are the broker kinds', in family tv; a broker copier's exact
// {"active": false} is the stop fast path; a plan withholding copiers
// withholds them in both families.
func TestBrokerRoutes(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		"GET tv/copiers": brokerCopierName, "POST tv/copiers": brokerCopierName, "GET tv/copiers/{id}": brokerCopierName,
		"PATCH tv/copiers/{id}": brokerCopierName, "DELETE tv/copiers/{id}": brokerCopierName,
		"GET tv/monitors": brokerMonitorName, "POST tv/monitors": brokerMonitorName, "GET tv/monitors/{id}": brokerMonitorName,
		"PATCH tv/monitors/{id}": brokerMonitorName, "DELETE tv/monitors/{id}": brokerMonitorName,
		"POST tv/monitors/{id}/restart": brokerMonitorName,
	}
	got := map[string]string{}
	var patchBroker *route
	for _, rt := range routes() {
		if rt.family != FamilyBroker {
			require.NotContains(t, []string{brokerCopierName, brokerMonitorName}, nameOf(rt))
			continue
		}
		got[rt.method+" "+rt.path] = rt.kind.name()
		if rt.op == routePatch && rt.kind.name() == brokerCopierName {
			patchBroker = rt
		}
	}
	require.Equal(t, want, got)
	require.Equal(t, classStop, classify(patchBroker, input{body: []byte(`{"active":false}`)}))
	require.Equal(t, classChange, classify(patchBroker, input{body: []byte(`{"active":false,"copyMode":"order"}`)}))

	e := newEnv(t, nil)
	p := auth.Principal{UserID: "u9", Plan: auth.PlanElite, Withheld: []string{"copier"}}
	require.Equal(t, errcode.PlanRequired, e.s.gate(patchBroker, p).Code)
	require.Equal(t, http.StatusForbidden, e.s.gate(patchBroker, p).Status)
}

// nameOf returns the route's kind's name, "" for the budgets.
func nameOf(rt *route) string {
	if rt.kind == nil {
		return ""
	}
	return rt.kind.name()
}
