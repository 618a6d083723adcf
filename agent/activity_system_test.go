package agent_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/systemtest"
	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/events"
)

// A monitor that trips on the agent's simulator reaches the relay as the
// agent's activity report: a TypeAgent event of kind activity, whose
// entry holds the trip's limit and the orders of its flatten.
func TestMonitorTripReachesTheRelayAsActivity(t *testing.T) {
	t.Parallel()
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
	require.True(t, e.At.Equal(systemtest.SimStart), "at the engine's clock: %s", e.At)
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
