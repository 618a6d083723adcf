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

// tvCp returns a tv copier from leader to followers, with the id.
func tvCp(id, leader string, followers ...string) TVCopier {
	return TVCopier{Copier: cpCopier(id, leader, followers...)}
}

// tvSnap returns a linked snapshot whose broker login carries the
// accounts A…D, with the tv copiers, tv monitors on the monitored
// accounts, and the desktop copiers and monitors given.
func tvSnap(monitored []string, copiers []TVCopier, desktop ...protocol.Copier) *Snapshot {
	s := &Snapshot{BrokerLinked: true, BrokerAccounts: []string{"A", "B", "C", "D"}, TVCopiers: copiers, Copiers: desktop}
	for _, a := range monitored {
		s.TVMonitors = append(s.TVMonitors, TVMonitor{Monitor: protocol.Monitor{Account: a}})
	}
	return s
}

// The tv kinds are the desktop kinds' declarations with their own names
// and paths, no agent, and copyMode not applicable.
func TestTVKindDeclarations(t *testing.T) {
	t.Parallel()
	c := tvCopierKind
	require.Equal(t, "tv-copier", c.Name)
	require.Equal(t, "tv/copiers", c.Path)
	require.False(t, c.NeedsAgent)
	require.Equal(t, copierKind.ReadOnly, c.ReadOnly)
	require.Equal(t, copierKind.Required, c.Required)
	require.Empty(t, c.Immutable)
	require.Equal(t, maxCopiers, c.MaxCount)
	require.Empty(t, c.Actions)
	require.Equal(t, []string{"copyMode"}, tvCopierNotApplicable)
	v := tvCp("tvc_1", "A", "B")
	require.Same(t, &v.Meta, c.Meta(&v))

	m := tvMonitorKind
	require.Equal(t, "tv-monitor", m.Name)
	require.Equal(t, "tv/monitors", m.Path)
	require.False(t, m.NeedsAgent)
	require.Equal(t, monitorKind.ReadOnly, m.ReadOnly)
	require.Equal(t, monitorKind.Immutable, m.Immutable)
	require.Equal(t, monitorKind.Required, m.Required)
	require.Equal(t, []string{"restart"}, m.actionNames())
	require.Empty(t, tvMonitorNotApplicable)
	require.Equal(t, monitorKind.Default(), m.Default().Monitor)

	require.Equal(t, "copier", kindFeature(c.Name))
	require.Equal(t, "monitor", kindFeature(m.Name))
	require.Equal(t, "controls", kindFeature(controlsKind.Name))
	require.True(t, isCopierKind(c.Name))
	require.True(t, isCopierKind(copierKind.Name))
	require.False(t, isCopierKind(m.Name))
}

// A TVCopier's JSON is a copier's without copyMode (stored, shown and
// defaulted), and its body fields are the copier's; a TVMonitor's JSON is
// a monitor's.
func TestTVJSON(t *testing.T) {
	t.Parallel()
	cp, err := toDoc(cpCopier("cop_1", "A", "B"))
	require.NoError(t, err)
	tv, err := toDoc(tvCp("cop_1", "A", "B"))
	require.NoError(t, err)
	require.Contains(t, cp, "copyMode")
	delete(cp, "copyMode")
	require.Equal(t, cp, tv)
	def, err := toDoc(tvCopierKind.Default())
	require.NoError(t, err)
	require.NotContains(t, def, "copyMode")
	require.ElementsMatch(t, slices.Collect(maps.Keys(jsonFields(reflect.TypeFor[protocol.Copier]()))),
		slices.Collect(maps.Keys(jsonFields(reflect.TypeFor[TVCopier]()))), "the body fields are the copier's")

	mon, err := toDoc(monValid())
	require.NoError(t, err)
	tvm, err := toDoc(TVMonitor{Monitor: monValid()})
	require.NoError(t, err)
	require.Equal(t, mon, tvm)

	var back TVCopier
	b, err := json.Marshal(tvCp("tvc_1", "A", "B"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, "A", back.Leader)
	require.Nil(t, back.CopyMode)
}

// tvView shows the tv resources in the place of the desktop ones, copying
// executions, and changes nothing of the snapshot.
func TestTVView(t *testing.T) {
	t.Parallel()
	s := tvSnap([]string{"B"}, []TVCopier{tvCp("tvc_1", "A", "B")}, cpCopier("cop_1", "C", "D"))
	s.Monitors = []protocol.Monitor{{Account: "D"}}
	v := tvView(s)
	require.Len(t, v.Copiers, 1)
	require.Equal(t, "tvc_1", v.Copiers[0].ID)
	require.Equal(t, protocol.CopyModeExecution, v.Copiers[0].CopyMode)
	require.Len(t, v.Monitors, 1)
	require.Equal(t, "B", v.Monitors[0].Account)
	require.Equal(t, protocol.CopyModeOrder, s.TVCopiers[0].Copier.CopyMode, "the snapshot is not changed")
	require.Equal(t, "cop_1", s.Copiers[0].ID)
	require.Equal(t, "D", s.Monitors[0].Account)
	require.Nil(t, tvView(nil))
}

// The tv copier's hooks: copyMode not applicable (whatever its value,
// alone or with other fields), accounts of the broker login, and every
// conflict judged among the tv copiers only.
func TestTVCopierHooks(t *testing.T) {
	t.Parallel()
	k := tvCopierKind
	sent := func(body string) map[string]json.RawMessage {
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(body), &m))
		return m
	}
	old := tvCp("tvc_1", "A", "B")
	for _, body := range []string{`{"copyMode":"execution"}`, `{"copyMode":null}`, `{"active":true,"copyMode":"order"}`} {
		for _, op := range []Op{OpCreate, OpPatch} {
			c := &Change[TVCopier]{Op: op, Sent: sent(body), Snap: tvSnap(nil, nil), Family: FamilyTV}
			if op == OpPatch {
				c.Old = &old
			}
			cpRequireErr(t, k.Guard(c), errcode.FieldNotApplicable, []httpapi.FieldError{cpFE("copyMode", errcode.FieldNotApplicable)})
		}
	}
	require.Nil(t, k.Guard(&Change[TVCopier]{Op: OpPatch, Old: &old, Sent: sent(`{"active":true}`)}))
	require.Nil(t, k.Guard(&Change[TVCopier]{Op: OpDelete, Old: &old}))

	check := func(v TVCopier, s *Snapshot) *httpapi.Error {
		c := &Change[TVCopier]{Op: OpCreate, New: &v, Snap: s, Now: time.Now()}
		if e := k.Validate(c); e != nil {
			return e
		}
		return k.Check(c)
	}
	desktopBA := cpCopier("cop_9", "B", "A")
	for _, tc := range []struct {
		name   string
		v      TVCopier
		snap   *Snapshot
		code   string
		fields []httpapi.FieldError
	}{
		{"valid", tvCp("", "A", "B"), tvSnap(nil, nil), "", nil},
		{"platform accounts are not the login's", tvCp("", "A", "X"), tvSnap(nil, nil),
			errcode.AccountIdentityUnresolved, []httpapi.FieldError{cpFE("followers.0.account", errcode.AccountIdentityUnresolved)}},
		{"unlinked", tvCp("", "A", "B"), &Snapshot{BrokerAccounts: []string{"A", "B"}},
			errcode.AccountIdentityUnresolved, []httpapi.FieldError{
				cpFE("leader", errcode.AccountIdentityUnresolved), cpFE("followers.0.account", errcode.AccountIdentityUnresolved)}},
		{"no cycle with a desktop copier", tvCp("", "A", "B"), tvSnap(nil, nil, desktopBA), "", nil},
		{"cycle among tv copiers", tvCp("", "A", "B"), tvSnap(nil, []TVCopier{tvCp("tvc_9", "B", "A")}),
			errcode.CopierCycle, []httpapi.FieldError{cpFE("followers.0.account", errcode.CopierCycle)}},
		{"duplicate among tv copiers", tvCp("", "A", "B"), tvSnap(nil, []TVCopier{tvCp("tvc_9", "A", "B")}),
			errcode.DuplicateCopier, []httpapi.FieldError{cpFE("followers.0.account", errcode.DuplicateCopier)}},
		{"no duplicate of a desktop copier", tvCp("", "A", "B"), tvSnap(nil, nil, cpCopier("cop_9", "A", "B")), "", nil},
		{"copy modes never conflict", tvCp("", "A", "B"), tvSnap(nil, []TVCopier{tvCp("tvc_9", "C", "B")}), "", nil},
		{"tandem needs a tv monitor", cpTV(tvCp("", "A", "B", "C"), func(v *protocol.Copier) { v.Tandem = true }),
			func() *Snapshot {
				s := tvSnap([]string{"B"}, nil)
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

// cpTV returns v changed by fn on its copier.
func cpTV(v TVCopier, fn func(*protocol.Copier)) TVCopier {
	fn(&v.Copier)
	return v
}

// The tv monitor's hooks: accounts of the broker login, one monitor per
// account among the tv monitors, tandem_dependency from tv copiers only,
// and the state table as on desktop.
func TestTVMonitorHooks(t *testing.T) {
	t.Parallel()
	k := tvMonitorKind
	create := func(acct string, s *Snapshot) *httpapi.Error {
		v := TVMonitor{Monitor: monValid()}
		v.Account = acct
		return k.Check(&Change[TVMonitor]{Op: OpCreate, New: &v, Snap: s})
	}
	s := tvSnap([]string{"B"}, nil)
	s.Connections = []protocol.Connection{{Accounts: []string{"X"}}}
	s.Monitors = []protocol.Monitor{{Account: "A"}}
	require.Nil(t, create("A", s), "a desktop monitor of the account does not count")
	require.Equal(t, errcode.AlreadyExists, create("B", s).Code)
	e := create("X", s)
	cpRequireErr(t, e, errcode.AccountIdentityUnresolved, []httpapi.FieldError{cpFE("account", errcode.AccountIdentityUnresolved)})

	tandem := cpTV(tvCp("tvc_1", "A", "B"), func(v *protocol.Copier) { v.Tandem = true })
	old := TVMonitor{Monitor: monValid()}
	old.Account = "B"
	del := func(s *Snapshot) *httpapi.Error {
		o := old
		return k.Check(&Change[TVMonitor]{Op: OpDelete, Old: &o, Snap: s})
	}
	require.Equal(t, errcode.TandemDependency, del(tvSnap([]string{"B"}, []TVCopier{tandem})).Code)
	desktopTandem := cpWith(cpCopier("cop_1", "A", "B"), func(v *protocol.Copier) { v.Tandem = true })
	require.Nil(t, del(tvSnap([]string{"B"}, nil, desktopTandem)), "a desktop Tandem copier does not hold a tv monitor")

	stopped := TVMonitor{Monitor: monStopped(time.Now())}
	c := &Change[TVMonitor]{Op: OpPatch, Old: &stopped, Sent: map[string]json.RawMessage{"active": json.RawMessage(`true`)},
		Snap: tvSnap(nil, nil), Now: time.Now()}
	require.Equal(t, errcode.MonitorStoppedUseRestart, k.Guard(c).Code)
	every := map[string]json.RawMessage{}
	for name := range jsonFields(reflect.TypeFor[TVMonitor]()) {
		every[name] = json.RawMessage(`null`)
	}
	active := TVMonitor{Monitor: monValid()}
	require.Nil(t, k.Guard(&Change[TVMonitor]{Op: OpPatch, Old: &active, Sent: every, Snap: tvSnap(nil, nil), Now: time.Now()}),
		"no monitor field is refused as not applicable")
}

// The tv routes are the tv kinds', in family tv; a tv copier's exact
// {"active": false} is the stop fast path; a plan withholding copiers
// withholds them in both families.
func TestTVRoutes(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		"GET tv/copiers": tvCopierName, "POST tv/copiers": tvCopierName, "GET tv/copiers/{id}": tvCopierName,
		"PATCH tv/copiers/{id}": tvCopierName, "DELETE tv/copiers/{id}": tvCopierName,
		"GET tv/monitors": tvMonitorName, "POST tv/monitors": tvMonitorName, "GET tv/monitors/{id}": tvMonitorName,
		"PATCH tv/monitors/{id}": tvMonitorName, "DELETE tv/monitors/{id}": tvMonitorName,
		"POST tv/monitors/{id}/restart": tvMonitorName,
	}
	got := map[string]string{}
	var patchTV *route
	for _, rt := range routes() {
		if rt.family != FamilyTV {
			require.NotContains(t, []string{tvCopierName, tvMonitorName}, nameOf(rt))
			continue
		}
		got[rt.method+" "+rt.path] = rt.kind.name()
		if rt.op == routePatch && rt.kind.name() == tvCopierName {
			patchTV = rt
		}
	}
	require.Equal(t, want, got)
	require.Equal(t, classStop, classify(patchTV, input{body: []byte(`{"active":false}`)}))
	require.Equal(t, classChange, classify(patchTV, input{body: []byte(`{"active":false,"copyMode":"order"}`)}))

	e := newEnv(t, nil)
	p := auth.Principal{UserID: "u9", Plan: auth.PlanElite, Withheld: []string{"copier"}}
	require.Equal(t, errcode.PlanRequired, e.s.gate(patchTV, p).Code)
	require.Equal(t, http.StatusForbidden, e.s.gate(patchTV, p).Status)
}

// nameOf returns the route's kind's name, "" for the budgets.
func nameOf(rt *route) string {
	if rt.kind == nil {
		return ""
	}
	return rt.kind.name()
}
