package agent_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"tradebridge/agent"
	"tradebridge/agent/agentstore"
	"tradebridge/agent/tunnel"
	"tradebridge/internal/systemtest"
	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/events"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/engine/enginetest"
)

// A monitor that trips on the agent's simulator reaches the relay as the
// agent's activity report: a TypeAgent event of kind activity, whose
// entry holds the trip's limit and the orders of its flatten, stamped
// with the real time while the simulator's clock is elsewhere.
func TestMonitorTripReachesTheRelayAsActivity(t *testing.T) {
	t.Parallel()
	start := time.Now()
	s := systemtest.New(t)
	reports := make(chan protocol.Event, 16)
	require.NoError(t, s.Relay().Events().Subscribe(events.Subscription{Name: "test.activity",
		Types: []events.Type{events.TypeAgent}, Handle: func(ev events.Event) {
			if ev.Agent.Kind != protocol.EventActivity {
				return
			}
			select {
			case reports <- ev.Agent:
			default:
			}
		}}))
	s.StartAgent("bob")
	tok := s.Users["bob"].APIToken

	r := s.Do(http.MethodPost, "/v1/api/accounts/Sim101/orders/place", tok,
		`{"action":"Buy","instrument":"ES 12-26","orderType":"Market","quantity":2,"timeInForce":"Day"}`,
		"Content-Type", "application/json")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	// The simulator's clock stands on a Wednesday at 10:00 New York time:
	// a master window from 11:00 trips the monitor at once.
	r = s.Do(http.MethodPost, "/v1/api/manage/desktop/monitors", tok,
		`{"account":"Sim101","onTrip":"flatten","masterWindow":{"days":["wed"],"start":"11:00","end":"12:00"}}`,
		"Content-Type", "application/json")
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	var m protocol.Monitor
	require.NoError(t, json.Unmarshal(r.Data, &m))

	var ev protocol.Event
	select {
	case ev = <-reports:
	case <-time.After(testkit.Long):
		t.Fatal("no activity report reached the relay")
	}
	var e protocol.ActivityEntry
	require.NoError(t, json.Unmarshal(ev.Data, &e))
	require.Regexp(t, `^[0-9a-f]{32}$`, e.ID, "the agent's report id")
	require.Equal(t, protocol.ActivityMonitorTripped, e.Kind)
	require.Equal(t, "Sim101", e.Account)
	require.Equal(t, protocol.ActivitySource{Kind: protocol.SourceMonitor, ID: m.ID}, e.Source)
	enginetest.RequireRealTime(t, start, e.At, "stamped with the real time, not the simulator's")
	var d struct {
		Limit   string `json:"limit"`
		OnTrip  string `json:"onTrip"`
		Flatten struct {
			OrderIDs []string `json:"orderIds"`
			Error    string   `json:"error"`
		} `json:"flatten"`
	}
	require.NoError(t, json.Unmarshal(e.Detail, &d))
	require.Equal(t, "masterWindow", d.Limit)
	require.Equal(t, protocol.OnTripFlatten, d.OnTrip)
	require.Len(t, d.Flatten.OrderIDs, 1, "the position closed")
	require.Empty(t, d.Flatten.Error)
}

// nextActivity waits for the agent's next EventActivity on a tunnel and
// returns its entry; false when none came within.
func nextActivity(t *testing.T, events <-chan protocol.Event, within time.Duration) (protocol.ActivityEntry, bool) {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case ev := <-events:
			if ev.Kind != protocol.EventActivity {
				continue
			}
			var e protocol.ActivityEntry
			require.NoError(t, json.Unmarshal(ev.Data, &e))
			return e, true
		case <-timeout:
			return protocol.ActivityEntry{}, false
		}
	}
}

// An engine's report goes over the real tunnel as EventActivity, again
// with the same id after the tunnel is replaced, and never to a relay
// that welcomes the agent with protocol version 5.
func TestActivityOverTheTunnel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		welcome int
	}{{"relay of this version", 0}, {"relay of version 5", 5}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			url, ends := fakeRelayWelcoming(t, ctx, tc.welcome)
			p, err := sim.New(sim.Options{})
			require.NoError(t, err)
			defer p.Close()
			a, err := agent.New(agent.Options{RelayURL: url, Token: "tb_agent_test", Platform: p, Logger: zap.NewNop(),
				EngineTick: 10 * time.Millisecond,
				Tunnel:     tunnel.Options{BackoffBase: 20 * time.Millisecond, BackoffCap: 100 * time.Millisecond}})
			require.NoError(t, err)
			defer run(ctx, cancel, a)()

			end := accept(t, ends)
			s, err := end.sess.OpenStream()
			require.NoError(t, err)
			defer s.Close()
			resp := rpc(t, s, 1, protocol.FnApplyConfig, protocol.Config{Version: 1, Controls: protocol.Controls{KillSwitch: true}})
			require.Nil(t, resp.Error)

			if tc.welcome != 0 {
				_, got := nextActivity(t, end.events, 500*time.Millisecond)
				require.False(t, got, "a version 5 relay is sent no activity")
				return
			}
			first, ok := nextActivity(t, end.events, testkit.Long)
			require.True(t, ok, "the kill switch applied is reported")
			require.Equal(t, protocol.ActivityKillSwitchChanged, first.Kind)
			require.JSONEq(t, `{"enabled":true}`, string(first.Detail))

			end.sess.Close() // the link drops; the agent connects again
			again := accept(t, ends)
			resent, ok := nextActivity(t, again.events, testkit.Long)
			require.True(t, ok, "the kept report is sent after the connect")
			require.Equal(t, first.ID, resent.ID, "with its id, which the relay records once")
		})
	}
}

// A report made while the relay is out of reach is kept in the agent's
// state file and sent, with its id, by the next run of the agent once it
// connects.
func TestActivityMadeOfflineSurvivesARestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), agentstore.DefaultFileName)
	p, err := sim.New(sim.Options{})
	require.NoError(t, err)
	defer p.Close()

	// The first run: the saved configuration turns the kill switch on,
	// and no relay answers.
	st, err := agentstore.Open(agentstore.Options{Path: path})
	require.NoError(t, err)
	require.NoError(t, st.SaveConfig(&protocol.Config{Version: 1, Controls: protocol.Controls{KillSwitch: true}}))
	ctx, cancel := context.WithCancel(context.Background())
	a, err := agent.New(agent.Options{RelayURL: "http://127.0.0.1:1", Token: "tb_agent_test", Platform: p,
		Logger: zap.NewNop(), State: st, EngineTick: 10 * time.Millisecond})
	require.NoError(t, err)
	stop := run(ctx, cancel, a)
	var kept map[string][]byte
	require.Eventually(t, func() bool {
		kept, err = st.Load(agent.OutboxBucket)
		return err == nil && len(kept) == 1
	}, testkit.Long, testkit.Tick, "the report is kept in the state file")
	stop()
	require.NoError(t, st.Close())
	var id string
	for k := range kept {
		id = k
	}

	// The next run reaches a relay.
	st, err = agentstore.Open(agentstore.Options{Path: path})
	require.NoError(t, err)
	defer st.Close()
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	url, ends := fakeRelay(t, ctx)
	a, err = agent.New(agent.Options{RelayURL: url, Token: "tb_agent_test", Platform: p, Logger: zap.NewNop(),
		State: st, EngineTick: 10 * time.Millisecond})
	require.NoError(t, err)
	defer run(ctx, cancel, a)()
	end := accept(t, ends)
	deadline := time.After(testkit.Long)
	for {
		e, ok := nextActivity(t, end.events, testkit.Long)
		require.True(t, ok, "the kept report reaches the relay")
		if e.ID == id {
			require.Equal(t, protocol.ActivityKillSwitchChanged, e.Kind)
			return
		}
		select {
		case <-deadline:
			t.Fatal("the kept report did not reach the relay")
		default:
		}
	}
}
