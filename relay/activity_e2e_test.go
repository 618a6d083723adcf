package relay_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/activity"
	"tradebridge/relay/events"
)

// The activity log end to end: an entry published on the relay's spine
// (as the producers publish theirs) is recorded once per Ref, read over
// HTTP and streamed to the user's socket; an agent that connects and
// leaves is agent.connected then agent.disconnected; another user sees
// none of it.
func TestActivityEndToEnd(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	alice, bob := s.Users["alice"], s.Users["bob"]
	ws := s.openStream(t, "alice")
	ws.next("status")
	ws.send(`{"action":"subscribeActivity","id":"a"}`)
	ws.next("activitySubscribed")

	entry := protocol.ActivityEntry{At: simStart, Kind: protocol.ActivityConfigChanged,
		Source:  protocol.ActivitySource{Kind: protocol.SourceAPI, ID: "tok1", Name: "ops"},
		Summary: "Monitor mon_1 changed", Detail: json.RawMessage(`{"resource":"monitor","id":"mon_1","op":"update"}`)}
	for range 2 {
		s.Relay().Events().Publish(events.Activity(alice.UserID, "test:config-1", entry))
	}
	f := ws.next("activity")
	ev := f["event"].(map[string]any)
	require.Equal(t, protocol.ActivityConfigChanged, ev["kind"])
	streamedID := ev["id"].(string)

	read := func(token, query string) activity.Page {
		t.Helper()
		r := s.Do("GET", "/v1/api/activity"+query, token, "")
		require.Equal(t, 200, r.Status, string(r.Raw))
		var p activity.Page
		require.NoError(t, json.Unmarshal(r.Data, &p))
		return p
	}
	p := read(alice.APIToken, "?kind=config.changed")
	require.Len(t, p.Events, 1, "recorded once per Ref")
	require.Equal(t, streamedID, p.Events[0].ID, "the socket and the route show one entry")
	require.Equal(t, simStart, p.Events[0].At)
	require.JSONEq(t, `{"resource":"monitor","id":"mon_1","op":"update"}`, string(p.Events[0].Detail))

	ra := s.StartAgent("alice")
	connected := ws.next("activity")["event"].(map[string]any)
	require.Equal(t, protocol.ActivityAgentConnected, connected["kind"])
	require.Equal(t, "agent", connected["source"].(map[string]any)["kind"])
	ra.Close()
	disconnected := ws.next("activity")["event"].(map[string]any)
	require.Equal(t, protocol.ActivityAgentDisconnected, disconnected["kind"])
	require.Equal(t, "agent_closed", disconnected["detail"].(map[string]any)["reason"])

	p = read(alice.APIToken, "?limit=2")
	require.Len(t, p.Events, 2)
	require.Equal(t, []string{protocol.ActivityAgentDisconnected, protocol.ActivityAgentConnected}, []string{p.Events[0].Kind, p.Events[1].Kind})
	require.NotNil(t, p.Next)
	p = read(alice.APIToken, "?before="+*p.Next)
	require.Len(t, p.Events, 1)
	require.Equal(t, streamedID, p.Events[0].ID)
	require.Nil(t, p.Next)

	require.Empty(t, read(bob.APIToken, "").Events, "another user's log is empty")
	r := s.Do("GET", "/v1/api/activity", s.Users["carol"].APIToken, "")
	require.Equal(t, 403, r.Status)
	require.Equal(t, "plan_required", r.Error)
}
