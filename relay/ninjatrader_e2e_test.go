package relay_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/trading/bridge/ninjatrader"
)

// connectionNames reads the connections the relay shows for the user.
func (s *system) connectionNames(token string) []string {
	s.T.Helper()
	names, ok := s.shownConnections(token)
	require.True(s.T, ok, "the connection settings could not be read")
	return names
}

// shownConnections is connectionNames for conditions: false when the
// connection settings could not be read.
func (s *system) shownConnections(token string) ([]string, bool) {
	r, err := s.Request("GET", "/v1/api/manage/desktop/connection-settings", token, "")
	if err != nil || r.Status != http.StatusOK {
		return nil, false
	}
	var v struct {
		Connections []protocol.ConnectionSetting `json:"connections"`
	}
	if json.Unmarshal(r.Data, &v) != nil {
		return nil, false
	}
	names := []string{}
	for _, c := range v.Connections {
		names = append(names, c.Name)
	}
	return names, true
}

// NinjaTrader closes and comes back while the agent stays connected to the
// relay: trading calls answer 408 platform_unavailable saying why, the
// relay's view of the platform's connections follows (empty, then back),
// and trading resumes by itself.
func TestNinjaTraderClosesAndReturns(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	ra := s.StartAgentOn("bob", ninjatrader.Kind, nil) // the Management API needs bob's elite plan
	tok := s.Users["bob"].APIToken
	require.NotEmpty(t, s.connectionNames(tok), "the add-on's connections are shown")
	require.Equal(t, http.StatusOK, s.Do("GET", "/v1/api/accounts/Sim101/positions", tok, "").Status)

	ra.Pair.Fake.Stop() // NinjaTrader closes: bye, the discovery file is removed
	require.Eventually(t, func() bool { names, ok := s.shownConnections(tok); return ok && len(names) == 0 }, testkit.Medium, testkit.Tick,
		"the relay learns the platform's connections are gone")
	r := s.Do("GET", "/v1/api/accounts/Sim101/positions", tok, "")
	require.Equal(t, http.StatusRequestTimeout, r.Status, string(r.Raw))
	require.Contains(t, string(r.Raw), "platform_unavailable")
	require.Contains(t, string(r.Raw), "NinjaTrader", "the detail says why")
	require.True(t, ra.Agent.Connected(), "the agent stays connected to the relay")

	require.NoError(t, ra.Pair.Fake.Resume()) // NinjaTrader starts again: new port, new secret
	ra.Pair.WaitConnected(t)
	require.Eventually(t, func() bool { names, ok := s.shownConnections(tok); return ok && len(names) > 0 }, testkit.Medium, testkit.Tick)
	r = s.placeMarket(tok, "Sim101", "Buy", 1)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
}
