package hub_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/hub"
)

// Evict ends only the named session while it is the user's live tunnel:
// its end is recorded as replaced, the agent is told so (and comes back
// on a session of its own), and the spine hears the user gone.
func TestEvict(t *testing.T) {
	t.Parallel()
	log := &sessionLog{}
	status := &statusLog{}
	e := newEnvWith(t, func(o *hub.Options) {
		o.Events = spine{session: log.record, status: status.record}
	})
	status.h = e.hub
	e.startAgent("agent-a", "A")
	e.startAgent("agent-b", "B")
	info := e.waitConnected("usr_a")
	infoB := e.waitConnected("usr_b")

	for _, tc := range []struct {
		name, user, session string
	}{
		{"unknown user", "usr_c", info.SessionID},
		{"other session", "usr_a", "tun_000000000000000000000000"},
		{"other user's session", "usr_a", infoB.SessionID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.False(t, e.hub.Evict(tc.user, tc.session))
		})
	}
	require.True(t, e.hub.Connected("usr_a"))

	require.True(t, e.hub.Evict("usr_a", info.SessionID))
	end := log.wait(t, agentcall.SessionEnded, info.SessionID)
	require.Equal(t, agentcall.ReasonReplaced, end.Reason)
	require.Eventually(t, func() bool {
		for _, ev := range status.all() {
			if ev == "usr_a:false:true" {
				return true
			}
		}
		return false
	}, testkit.Medium, time.Millisecond, "the spine hears the evicted user gone: %v", status.all())
	require.False(t, e.hub.Evict("usr_a", info.SessionID), "the session is over")

	// The agent was told it was replaced; it retries later, on a new
	// session, which the old session's id no longer evicts.
	newer := e.waitConnected("usr_a")
	require.NotEqual(t, info.SessionID, newer.SessionID)
	require.False(t, e.hub.Evict("usr_a", info.SessionID))
	require.True(t, e.hub.Connected("usr_a"))
	require.True(t, e.hub.Connected("usr_b"), "another user's tunnel is untouched")
}
