package stream

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/events"
)

func activityEntry(n int, summary string) protocol.ActivityEntry {
	return protocol.ActivityEntry{ID: "act_" + strconv.Itoa(n), At: testkit.Epoch, Kind: protocol.ActivityOrderPlaced, Account: "Sim101",
		Source: protocol.ActivitySource{Kind: protocol.SourceAPI, ID: "tok1"}, Summary: summary, Detail: json.RawMessage(`{"fn":"PlaceOrder"}`)}
}

// A socket subscribed to the activity gets its user's entries, once each
// and in order, after the reply, from this node and others; another
// user's socket and an unsubscribed socket get none; none follows the
// unsubscribed reply.
func TestActivitySubscription(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.dial(tokA)
	a2 := e.dial(tokA2)
	b := e.dial(tokB)
	for _, c := range []*client{a, b} {
		c.send(map[string]any{"action": "subscribeActivity", "id": "s1"})
		f := c.read()
		require.Equal(t, "activitySubscribed", f["type"])
		require.Equal(t, "s1", f["id"])
	}
	a.send(map[string]any{"action": "subscribeActivity"})
	require.Equal(t, "activitySubscribed", a.read()["type"], "idempotent")

	e.srv.Handle(events.Event{Type: events.TypeRecorded, UserID: userA, Activity: activityEntry(1, "one")})
	e.srv.Handle(events.Event{Type: events.TypeRecorded, UserID: userA, Activity: activityEntry(2, "two"), Remote: true})
	e.srv.Handle(events.Event{Type: events.TypeRecorded, UserID: userB, Activity: activityEntry(3, "theirs")})
	for i, want := range []string{"act_1", "act_2"} {
		f := a.read()
		require.Equal(t, "activity", f["type"], i)
		ev := f["event"].(map[string]any)
		require.Equal(t, want, ev["id"])
		require.Equal(t, "2026-11-02T15:00:00Z", ev["at"])
		require.Equal(t, map[string]any{"kind": "api", "id": "tok1"}, ev["source"])
		require.Equal(t, map[string]any{"fn": "PlaceOrder"}, ev["detail"])
		require.NotContains(t, f, "dropped")
	}
	f := b.read()
	require.Equal(t, "act_3", f["event"].(map[string]any)["id"], "only its user's")

	a.send(map[string]any{"action": "unsubscribeActivity", "id": 7})
	want := map[string]any{"seq": a.seq + 1, "type": "activityUnsubscribed", "id": float64(7)}
	require.Equal(t, want, a.read())
	e.srv.HandleRecorded(userA, activityEntry(4, "after"))
	a.send(map[string]any{"action": "ping"})
	require.Equal(t, "pong", a.read()["type"], "no entry after the unsubscribed reply")
	a2.send(map[string]any{"action": "ping"})
	require.Equal(t, "pong", a2.read()["type"], "a socket that did not subscribe gets none")

	a.send(map[string]any{"action": "subscribeActivity", "extra": 1})
	f = a.read()
	require.Equal(t, "error", f["type"])
	require.Equal(t, "invalid_frame", f["error"])
	require.Equal(t, int64(3), e.srv.Stats().Activity)
}

// A socket whose writer falls behind drops the entries beyond its queue
// and says so in dropped; it never blocks the publisher.
func TestActivityQueueIsBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.MaxActivityQueue = 4 })
	a := e.dial(tokA)
	a.send(map[string]any{"action": "subscribeActivity"})
	require.Equal(t, "activitySubscribed", a.read()["type"])
	var sk *socket
	require.Eventually(t, func() bool {
		e.srv.mu.RLock()
		defer e.srv.mu.RUnlock()
		u := e.srv.users[userA]
		if subs := u.actSubs.Load(); subs != nil && len(*subs) == 1 {
			sk = (*subs)[0]
			return true
		}
		return false
	}, testkit.Medium, testkit.Tick)
	// Hold the socket's queue (as a writer busy with a slow client
	// would) while 10 entries arrive.
	sk.mu.Lock()
	sk.actHold = true
	sk.mu.Unlock()
	for i := range 10 {
		e.srv.HandleRecorded(userA, activityEntry(i+1, "n"))
	}
	sk.releaseActivity()
	var got []string
	var dropped float64
	for len(got) < 4 {
		f := a.readType("activity")
		got = append(got, f["event"].(map[string]any)["id"].(string))
		if d, ok := f["dropped"].(float64); ok {
			dropped = d
		}
	}
	require.Equal(t, []string{"act_1", "act_2", "act_3", "act_4"}, got[:4])
	require.Equal(t, float64(6), dropped)
	require.Equal(t, int64(6), e.srv.Stats().ActivityDropped)
}
