package manage

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/errcode"
	"tradebridge/relay/events"
)

// A change of a kind the agent acts on needs the agent connected (409
// addon_disconnected) with the configuration protocol (409
// addon_version_unsupported); nothing is stored. A kind of the relay
// alone (account groups) needs no agent and pushes nothing. The kill
// switch is the exception: see TestKillSwitchOffline.
func TestAgentNeeded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctlID := singletonID("u1", controlsKind.Name)

	e.hub.disconnect("u1")
	r := e.do(http.MethodPatch, "/controls", tokElite, `{"flattenOnKill":true}`)
	require.Equal(t, http.StatusConflict, r.Code, string(r.Body))
	require.Equal(t, errcode.AddonDisconnected, r.code(t))
	_, ok := e.store.stored("u1", controlsKind.Name, ctlID)
	require.False(t, ok, "nothing stored")

	r = e.do(http.MethodPost, "/desktop/account-groups", tokElite, `{"name":"Offline","destination":"desktop","accounts":[]}`)
	require.Equal(t, http.StatusCreated, r.Code, "groups live in the relay only")
	require.Empty(t, e.hub.pushes("u1"))

	e.hub.connect("u1", protocol.ConfigProtocolVersion-1)
	r = e.do(http.MethodPatch, "/controls", tokElite, `{"flattenOnKill":true}`)
	require.Equal(t, http.StatusConflict, r.Code)
	require.Equal(t, errcode.AddonVersionUnsupported, r.code(t))
	_, ok = e.store.stored("u1", controlsKind.Name, ctlID)
	require.False(t, ok, "nothing stored")

	e.hub.connect("u1", protocol.ConfigProtocolVersion)
	r = e.do(http.MethodPatch, "/controls", tokElite, `{"flattenOnKill":true}`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	pushes := e.hub.pushes("u1")
	require.Len(t, pushes, 1)
	require.Equal(t, int64(1), pushes[0].Version)
	require.True(t, pushes[0].Controls.FlattenOnKill)
	require.Equal(t, ctlID, pushes[0].Controls.ID)
	require.NotNil(t, pushes[0].Copiers)
}

// An ack that never comes (or a failed push) is 503 outcome_unknown; the
// change is stored.
func TestOutcomeUnknown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		call func(ctx context.Context, user, fn string, args json.RawMessage) (json.RawMessage, error)
	}{
		{"no ack", func(ctx context.Context, _, _ string, _ json.RawMessage) (json.RawMessage, error) {
			<-ctx.Done()
			return nil, agentcall.ErrTimeout
		}},
		{"tunnel lost", func(context.Context, string, string, json.RawMessage) (json.RawMessage, error) {
			return nil, agentcall.ErrConnectionLost
		}},
		{"agent error", func(context.Context, string, string, json.RawMessage) (json.RawMessage, error) {
			return nil, &protocol.Error{Code: protocol.CodeInternal, Detail: "boom"}
		}},
		{"older version applied", func(context.Context, string, string, json.RawMessage) (json.RawMessage, error) {
			return json.Marshal(protocol.ConfigApplied{Version: 0})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, func(o *Options) { o.AckTimeout = 20 * time.Millisecond })
			e.hub.setCall(tc.call)
			r := e.do(http.MethodPatch, "/controls", tokElite, `{"blockAllSignals":true}`)
			require.Equal(t, http.StatusServiceUnavailable, r.Code, string(r.Body))
			require.Equal(t, errcode.OutcomeUnknown, r.code(t))
			require.NotContains(t, string(r.Body), "boom")
			res, ok := e.store.stored("u1", controlsKind.Name, singletonID("u1", controlsKind.Name))
			require.True(t, ok, "stored before the push")
			require.Equal(t, int64(1), res.Version)
		})
	}
}

// monitorJSON is a stored monitor of account acct.
func monitorJSON(id, acct, state string) string {
	stopped := ""
	if state == protocol.MonitorStopped {
		stopped = `,"stoppedReason":"lossLimit","stoppedAt":"2026-11-02T14:00:00Z"`
	}
	return `{"id":"` + id + `","createdAt":"2026-11-01T00:00:00Z","updatedAt":"2026-11-01T00:00:00Z","account":"` + acct +
		`","active":true,"state":"` + state + `"` + stopped + `,"profitTarget":{"enabled":false,"amount":0},
		"lossLimit":{"enabled":true,"amount":500},"includeUnrealized":true,"includeCommission":false,
		"trailingDrawdown":{"enabled":false,"amount":0},"masterWindow":{"days":[],"start":"","end":""},
		"tradingWindows":[],"closingOnly":false,"closingOnlyAfter":"","blockSignals":false,"switchesLocked":false,
		"monitorLock":false,"autoFlattenAt":"","onTrip":"flatten"}`
}

// A monitor's restart: write 2 + resource 1; the agent's verdict decides
// (409 would_retrip), the agent's absence is addon_disconnected; a
// restart stores the monitor active and pushes it.
func TestMonitorRestartOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.AckTimeout = 20 * time.Millisecond })
	id := newID(monitorKind.Name)
	_, err := e.store.WriteResources(t.Context(), "u1", true, storeWrite(monitorKind.Name, id, monitorJSON(id, "Sim101", protocol.MonitorStopped), 0))
	require.NoError(t, err)
	path := "/desktop/monitors/" + id + "/restart"

	e.hub.setCall(func(_ context.Context, _, fn string, args json.RawMessage) (json.RawMessage, error) {
		if fn == protocol.FnCheckMonitorRestart {
			return json.Marshal(protocol.RestartVerdict{WouldRetrip: true, Reason: "lossLimit"})
		}
		return ack(fn, args)
	})
	r := e.do(http.MethodPost, path, tokElite, "")
	require.Equal(t, http.StatusConflict, r.Code, string(r.Body))
	require.Equal(t, errcode.WouldRetrip, r.code(t))

	e.hub.setCall(func(ctx context.Context, _, _ string, _ json.RawMessage) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, agentcall.ErrTimeout
	})
	r = e.do(http.MethodPost, path, tokElite, "")
	require.Equal(t, http.StatusGatewayTimeout, r.Code)
	require.Equal(t, errcode.DeadlineExceeded, r.code(t))

	e.hub.disconnect("u1")
	r = e.do(http.MethodPost, path, tokElite, "")
	require.Equal(t, errcode.AddonDisconnected, r.code(t))

	e.hub.connect("u1", protocol.ProtocolVersion)
	e.hub.setCall(nil)
	r = e.do(http.MethodPost, path, tokElite, `{"x":1}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.Code, "a restart takes no fields")
	r = e.do(http.MethodPost, path, tokElite, `{}`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	var m protocol.Monitor
	r.data(t, &m)
	require.Equal(t, protocol.MonitorActive, m.State)
	require.Nil(t, m.StoppedAt)
	pushes := e.hub.pushes("u1")
	require.Equal(t, protocol.MonitorActive, pushes[len(pushes)-1].Monitors[0].State)

	r = e.do(http.MethodPost, path, tokElite, "")
	require.Equal(t, errcode.MonitorNotStopped, r.code(t))

	// Costs: write 2, resource 1.
	e.tick = 0
	e.clock.Advance(time.Hour)
	for range 3 {
		e.do(http.MethodPost, path, tokElite, "")
	}
	require.Equal(t, "resource", e.do(http.MethodPost, path, tokElite, "").body(t).Policy)
	e.clock.Advance(time.Hour)
	for i := range 5 {
		e.do(http.MethodPost, "/desktop/monitors/mon_0000000000000000000"+string(rune('0'+i))+"/restart", tokElite, "")
	}
	require.Equal(t, "write", e.do(http.MethodPost, path, tokElite, "").body(t).Policy)
}

// On every connect the relay records the agent's connections (HandleEvent,
// in order with its reports) and pushes the current configuration
// (HandleStatus); an agent without the configuration protocol gets its
// connections recorded only. Reads while the agent is offline use the
// recorded connections.
func TestReconnectPush(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	require.Equal(t, http.StatusOK, e.do(http.MethodPatch, "/controls", tokElite, `{"flattenOnKill":true}`).Code)
	require.Len(t, e.hub.pushes("u1"), 1)

	e.s.HandleStatus("u1", true)
	e.s.HandleEvent(events.Status("u1", true))
	require.Eventually(t, func() bool { return len(e.hub.pushes("u1")) == 2 }, testkit.Medium, time.Millisecond)
	p := e.hub.pushes("u1")[1]
	require.Equal(t, int64(1), p.Version)
	require.True(t, p.Controls.FlattenOnKill)
	e.store.mu.Lock()
	conns := e.store.user("u1").conns
	e.store.mu.Unlock()
	require.JSONEq(t, `[{"name":"Sim","status":"connected","accounts":["Sim101","Sim102","Sim103"]}]`, string(conns))

	e.s.HandleStatus("u1", false)
	e.s.HandleStatus("u2", true) // nothing configured: connections only
	e.s.HandleEvent(events.Status("u2", true))
	require.Eventually(t, func() bool {
		e.store.mu.Lock()
		defer e.store.mu.Unlock()
		return e.store.user("u2").conns != nil
	}, testkit.Medium, time.Millisecond)
	require.Empty(t, e.hub.pushes("u2"))

	e.hub.disconnect("u1")
	st, err := e.s.load(t.Context(), "u1")
	require.NoError(t, err)
	require.False(t, st.snap.AgentConnected)
	require.Equal(t, simConnections, st.snap.Connections)
}

// Reported states are stored on their resources, with a new version but
// no new configuration version and no push.
func TestReportedStates(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	mid := newID(monitorKind.Name)
	_, err := e.store.WriteResources(t.Context(), "u1", true, storeWrite(monitorKind.Name, mid, monitorJSON(mid, "Sim101", protocol.MonitorActive), 0))
	require.NoError(t, err)
	cid := e.stoppableCopier(t)
	at := time.Date(2026, 11, 2, 14, 30, 0, 0, time.UTC)
	event := func(kind string, data any) events.Event {
		b, err := json.Marshal(data)
		require.NoError(t, err)
		return events.Agent("u1", protocol.Event{Kind: kind, Data: b})
	}
	monitorAt := func(version int64) protocol.Monitor {
		var m protocol.Monitor
		require.Eventually(t, func() bool {
			r, _ := e.store.stored("u1", monitorKind.Name, mid)
			if r.Version != version {
				return false
			}
			return assert.NoError(t, json.Unmarshal(r.Body, &m))
		}, testkit.Medium, time.Millisecond)
		return m
	}
	e.s.HandleEvent(event(protocol.EventQuote, map[string]any{}))
	e.s.HandleEvent(event(protocol.EventMonitorState, protocol.MonitorState{Account: "Sim101", State: protocol.MonitorStopped, Reason: "lossLimit", At: at}))
	m := monitorAt(2)
	require.Equal(t, protocol.MonitorStopped, m.State)
	require.Equal(t, "lossLimit", m.StoppedReason)
	require.Equal(t, at, *m.StoppedAt)

	r := e.do(http.MethodGet, "/desktop/monitors/"+mid, tokElite, "")
	require.Equal(t, `"2"`, r.Header.Get("ETag"))

	e.s.HandleEvent(event(protocol.EventMonitorState, protocol.MonitorState{Account: "Sim101", State: protocol.MonitorActive, At: at}))
	m = monitorAt(3)
	require.Equal(t, protocol.MonitorActive, m.State)
	require.Nil(t, m.StoppedAt)

	// A monitor that cannot see its P&L says so, and sees again.
	e.s.HandleEvent(event(protocol.EventMonitorState, protocol.MonitorState{Account: "Sim101", State: protocol.MonitorActive, Blind: true, At: at}))
	m = monitorAt(4)
	require.Equal(t, protocol.MonitorActive, m.State)
	require.True(t, m.Blind)
	r = e.do(http.MethodGet, "/desktop/monitors/"+mid, tokElite, "")
	var doc map[string]any
	r.data(t, &doc)
	require.Equal(t, true, doc["blind"])
	e.s.HandleEvent(event(protocol.EventMonitorState, protocol.MonitorState{Account: "Sim101", State: protocol.MonitorActive, At: at}))
	m = monitorAt(5)
	require.False(t, m.Blind)
	r = e.do(http.MethodGet, "/desktop/monitors/"+mid, tokElite, "")
	doc = nil
	r.data(t, &doc)
	require.NotContains(t, doc, "blind", "absent when it sees")

	e.s.HandleEvent(event(protocol.EventCopierState, protocol.CopierState{ID: cid, State: protocol.CopierHalted, Reason: "tandem", At: at}))
	require.Eventually(t, func() bool {
		r, _ := e.store.stored("u1", copierKind.Name, cid)
		return r.Version == 2
	}, testkit.Medium, time.Millisecond)
	r = e.do(http.MethodGet, "/desktop/copiers/"+cid, tokElite, "")
	var c protocol.Copier
	r.data(t, &c)
	require.Equal(t, "tandem", c.HaltedReason)
	require.Equal(t, protocol.CopierHalted, c.State)

	e.store.mu.Lock()
	cfg := e.store.user("u1").cfg
	e.store.mu.Unlock()
	require.Equal(t, int64(2), cfg, "reports bump no configuration version")
	require.Empty(t, e.hub.pushes("u1"), "reports are not pushed back")
}

// The broker family answers 409 tradovate_not_linked once admitted, until a
// broker login is linked; then its routes work (tv_test.go).
func TestBrokerFamily(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodGet, "/tv/copiers", ""},
		{http.MethodPost, "/tv/monitors", `{}`},
		{http.MethodPatch, "/tv/copiers/" + noCopier, `{"active":false}`},
		{http.MethodPost, "/tv/monitors/mon_00000000000000000000/restart", ""},
	} {
		r := e.do(tc.method, tc.path, tokElite, tc.body)
		require.Equal(t, http.StatusConflict, r.Code, tc.path)
		require.Equal(t, errcode.TradovateNotLinked, r.code(t))
	}
	require.Equal(t, errcode.EliteRequired, e.do(http.MethodGet, "/tv/copiers", tokPro, "").code(t))
	require.Equal(t, errcode.InvalidPath, e.do(http.MethodGet, "/tv/copiers/x", tokElite, "").code(t))

	linked := newEnv(t, func(o *Options) { o.BrokerLinks = fakeLinks{} })
	r := linked.do(http.MethodGet, "/tv/copiers", tokElite, "")
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
}

type fakeLinks struct{}

func (fakeLinks) Linked(context.Context, string) (bool, []string, error) {
	return true, []string{"TV1"}, nil
}

// fakeKills records what the Management API tells the kill switch's gate.
type fakeKills struct {
	mu  sync.Mutex
	set []killSet
}

type killSet struct {
	user    string
	on      bool
	version int64
}

func (f *fakeKills) Set(userID string, on bool, version int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.set = append(f.set, killSet{userID, on, version})
}

func (f *fakeKills) all() []killSet {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.set)
}

// The kill switch is accepted in both directions while the agent is
// offline, or connected too old for the configuration: stored, the
// configuration version bumped, the gate told, answered applied false,
// pushed nothing. Connected, it is pushed and answered applied true; a
// push the agent does not acknowledge is still stored and answered
// applied false. flattenOnKill rides along when sent.
func TestKillSwitchOffline(t *testing.T) {
	t.Parallel()
	kills := &fakeKills{}
	e := newEnv(t, func(o *Options) { o.KillSwitch = kills })
	ctlID := singletonID("u1", controlsKind.Name)
	controls := func() protocol.Controls {
		t.Helper()
		b, ok := e.store.stored("u1", controlsKind.Name, ctlID)
		require.True(t, ok)
		var c protocol.Controls
		require.NoError(t, json.Unmarshal(b.Body, &c))
		return c
	}

	e.hub.disconnect("u1")
	r := e.do(http.MethodPut, "/controls/kill-switch", tokElite, `{"enabled":true,"flattenOnKill":true}`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	b := r.body(t)
	require.True(t, *b.Changed)
	require.False(t, *b.Applied)
	require.True(t, controls().KillSwitch)
	require.True(t, controls().FlattenOnKill)
	require.Empty(t, e.hub.pushes("u1"))
	require.Equal(t, []killSet{{"u1", true, 1}}, kills.all())

	r = e.do(http.MethodPut, "/controls/kill-switch", tokElite, `{"enabled":true}`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	require.False(t, *r.body(t).Changed)
	require.False(t, *r.body(t).Applied)

	e.hub.connect("u1", protocol.ConfigProtocolVersion-1)
	r = e.do(http.MethodPut, "/controls/kill-switch", tokElite, `{"enabled":false}`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	require.False(t, *r.body(t).Applied)
	require.False(t, controls().KillSwitch)
	require.True(t, controls().FlattenOnKill, "kept when not sent")
	require.Empty(t, e.hub.pushes("u1"))
	require.Equal(t, killSet{"u1", false, 2}, kills.all()[1])

	r = e.do(http.MethodPatch, "/controls", tokElite, `{"blockAllSignals":true}`)
	require.Equal(t, errcode.AddonVersionUnsupported, r.code(t), "other controls still need the agent")

	e.hub.connect("u1", protocol.ConfigProtocolVersion)
	r = e.do(http.MethodPut, "/controls/kill-switch", tokElite, `{"enabled":true,"flattenOnKill":false}`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	require.True(t, *r.body(t).Applied)
	pushes := e.hub.pushes("u1")
	require.Len(t, pushes, 1)
	require.True(t, pushes[0].Controls.KillSwitch)
	require.False(t, pushes[0].Controls.FlattenOnKill)
	require.Equal(t, int64(3), pushes[0].Version)

	e.hub.setCall(func(context.Context, string, string, json.RawMessage) (json.RawMessage, error) {
		return nil, agentcall.ErrConnectionLost
	})
	r = e.do(http.MethodPut, "/controls/kill-switch", tokElite, `{"enabled":false}`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	require.False(t, *r.body(t).Applied, "stored, not acknowledged")
	require.False(t, controls().KillSwitch)
	require.Equal(t, killSet{"u1", false, 4}, kills.all()[3])
}

// PrepareTunnel pushes the stored configuration on the new tunnel's call
// alone; nothing when nothing was configured or the agent is too old.
func TestPrepareTunnel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	var got []protocol.Config
	call := func(_ context.Context, fn string, args json.RawMessage) (json.RawMessage, error) {
		require.Equal(t, protocol.FnApplyConfig, fn)
		var cfg protocol.Config
		require.NoError(t, json.Unmarshal(args, &cfg))
		got = append(got, cfg)
		return json.RawMessage(`{"version":1}`), nil
	}
	info := agentcall.Info{Hello: protocol.Hello{ProtocolVersion: protocol.ConfigProtocolVersion}}
	e.s.PrepareTunnel(ctx, "u1", info, call)
	require.Empty(t, got, "nothing configured")

	e.hub.disconnect("u1")
	r := e.do(http.MethodPut, "/controls/kill-switch", tokElite, `{"enabled":true,"flattenOnKill":true}`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	old := agentcall.Info{Hello: protocol.Hello{ProtocolVersion: protocol.ConfigProtocolVersion - 1}}
	e.s.PrepareTunnel(ctx, "u1", old, call)
	require.Empty(t, got, "too old for the configuration")
	e.s.PrepareTunnel(ctx, "u1", info, call)
	require.Len(t, got, 1)
	require.Equal(t, int64(1), got[0].Version)
	require.True(t, got[0].Controls.KillSwitch)
	require.True(t, got[0].Controls.FlattenOnKill)

	on, version, err := KillSwitches(e.store, nil)(ctx, "u1")
	require.NoError(t, err)
	require.True(t, on)
	require.Equal(t, int64(1), version)
	on, version, err = KillSwitches(e.store, nil)(ctx, "u2")
	require.NoError(t, err)
	require.False(t, on)
	require.Zero(t, version)
}
