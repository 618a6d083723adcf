package broker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The OAuth links under way are bounded: a user's newest few are kept,
// a state is good once and until it expires.
func TestOAuthStates(t *testing.T) {
	t.Parallel()
	var o oauthStates
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var states []string
	for i := range maxOAuthStatesPerUser + 2 {
		s, err := o.add("u1", EnvDemo, now.Add(time.Duration(i)*time.Second))
		require.NoError(t, err)
		states = append(states, s)
	}
	other, err := o.add("u2", EnvLive, now)
	require.NoError(t, err)
	later := now.Add(time.Minute)
	_, ok := o.take(states[0], later)
	require.False(t, ok, "the user's oldest are forgotten beyond the bound")
	_, ok = o.take(states[1], later)
	require.False(t, ok)
	st, ok := o.take(states[len(states)-1], later)
	require.True(t, ok)
	require.Equal(t, "u1", st.userID)
	_, ok = o.take(states[len(states)-1], later)
	require.False(t, ok, "a state is good once")
	_, ok = o.take(other, now.Add(oauthStateTTL+time.Second))
	require.False(t, ok, "an expired state is refused")
}
