package cluster

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
)

// An origin's share of the agent's answer holds its own names only.
func TestShareOf(t *testing.T) {
	t.Parallel()
	withResolved := protocol.SubscriptionsResult{
		Instruments: []string{"ES 12-26", "NQ 12-26", "CL 01-27"},
		Unknown:     []string{"XYZ"},
		Resolved:    map[string]string{"ES": "ES 12-26", "ESZ6": "ES 12-26", "NQ 12-26": "NQ 12-26", "CL": "CL 01-27"},
	}
	// An agent that reports no mapping: the stream resolves the names by
	// its rules, from the contracts they may resolve to.
	bare := protocol.SubscriptionsResult{
		Instruments: []string{"ES 12-26", "ES 03-27", "NQ 12-26", "CL 01-27", "EURUSD"},
		Unknown:     []string{"xyz"},
	}
	for _, tc := range []struct {
		name  string
		r     protocol.SubscriptionsResult
		names []string
		want  protocol.SubscriptionsResult
	}{
		{"resolved", withResolved, []string{"ES", "XYZ"}, protocol.SubscriptionsResult{
			Instruments: []string{"ES 12-26"}, Unknown: []string{"XYZ"}, Resolved: map[string]string{"ES": "ES 12-26"}}},
		{"resolved, two names one contract", withResolved, []string{"ES", "ESZ6", "NQ 12-26"}, protocol.SubscriptionsResult{
			Instruments: []string{"ES 12-26", "NQ 12-26"},
			Resolved:    map[string]string{"ES": "ES 12-26", "ESZ6": "ES 12-26", "NQ 12-26": "NQ 12-26"}}},
		{"resolved, none", withResolved, nil, protocol.SubscriptionsResult{Instruments: []string{}, Resolved: map[string]string{}}},
		{"bare root", bare, []string{"ES"}, protocol.SubscriptionsResult{Instruments: []string{"ES 12-26", "ES 03-27"}}},
		{"bare month code", bare, []string{"CLF7"}, protocol.SubscriptionsResult{Instruments: []string{"CL 01-27"}}},
		{"bare contract and other", bare, []string{"NQ 12-26", "EURUSD", "XYZ"}, protocol.SubscriptionsResult{
			Instruments: []string{"NQ 12-26", "EURUSD"}, Unknown: []string{"XYZ"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, shareOf(tc.r, tc.names))
		})
	}
}

func TestSubjectTokens(t *testing.T) {
	t.Parallel()
	s := subjects{prefix: "tb.x"}
	for _, user := range []string{"usr_1", "a.b", "*", ">", "with space", "ü", "a\x00b"} {
		subj := s.agent(user)
		require.Regexp(t, `^tb\.x\.agent\.[A-Za-z0-9_-]+$`, subj, user)
		require.Regexp(t, `^tb\.x\.quote\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$`, s.quote(user, "ES 12-26"), user)
	}
	require.NotEqual(t, s.agent("a"), s.agent("b"))
}

// ErrBusDown is an agent not connected (408) on this node, and travels
// as one.
func TestBusDownIsNotConnected(t *testing.T) {
	t.Parallel()
	require.ErrorIs(t, ErrBusDown, agentcall.ErrNotConnected)
	w := encodeError(fmt.Errorf("forwarding: %w", ErrBusDown))
	require.Equal(t, errNotConnected, w.Kind)
	require.Equal(t, agentcall.ErrNotConnected, w.decode())
}

// What the nodes send each other keeps "&" as written: an activity
// detail forwarded to another node's sockets arrives without \u0026.
func TestWireKeepsAmpersands(t *testing.T) {
	t.Parallel()
	raw := string(mustJSON(protocol.ActivityEntry{Summary: "S&P <ES>", Detail: []byte(`{"note":"a&b"}`)}))
	require.Contains(t, raw, `"S&P <ES>"`)
	require.Contains(t, raw, `"a&b"`)
	require.NotContains(t, raw, `\u0026`)
}
