package agent_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"tradebridge/agent"
	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/ninjatrader"
	"tradebridge/trading/bridge/ninjatrader/ntfake"
	"tradebridge/trading/bridge/sim"
)

// hungPlatform never answers Connections before its caller gives up, and
// is no bridge.StatusReporter.
type hungPlatform struct{ bridge.Platform }

func (hungPlatform) Connections(ctx context.Context) ([]protocol.Connection, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func newAgent(t *testing.T, p bridge.Platform) *agent.Agent {
	t.Helper()
	a, err := agent.New(agent.Options{RelayURL: "http://127.0.0.1:1", Token: "tb_agent_test", Platform: p, Logger: zap.NewNop()})
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	return a
}

// A platform that hangs does not hang the diagnostics: they say the
// platform did not answer.
func TestDiagnosticsOfAHungPlatform(t *testing.T) {
	t.Parallel()
	s, err := sim.New(sim.Options{})
	require.NoError(t, err)
	defer s.Close()
	a := newAgent(t, hungPlatform{s})
	start := time.Now()
	d := a.Diagnostics(context.Background())
	require.Less(t, time.Since(start), 5*time.Second)
	require.Equal(t, "sim", d.Bridge.Kind)
	require.False(t, d.Bridge.Reachable)
	require.Equal(t, "the platform did not list its connections in time", d.Bridge.Detail)
	require.NotNil(t, d.Bridge.Connections, "an empty list, not null")
	require.NotNil(t, d.Errors, "an empty list without a recorder")
	require.False(t, d.Tunnel.Connected)
	require.Equal(t, "sim", d.Config.Platform, "the platform's kind when the configuration names none")
}

// The NinjaTrader bridge tells whether the add-on answers, with its and
// NinjaTrader's versions, or why it does not.
func TestDiagnosticsOfNinjaTrader(t *testing.T) {
	t.Parallel()
	t.Run("add-on reachable", func(t *testing.T) {
		t.Parallel()
		market, err := sim.New(sim.Options{})
		require.NoError(t, err)
		defer market.Close()
		pair := ntfake.NewPair(t, market, time.Now)
		pair.Run(t)
		d := newAgent(t, pair.Bridge).Diagnostics(context.Background())
		require.Equal(t, ninjatrader.Kind, d.Bridge.Kind)
		require.True(t, d.Bridge.Reachable)
		require.Equal(t, "connected to the NinjaTrader add-on "+ntfake.DefaultAddonVersion+
			" in NinjaTrader "+ntfake.DefaultPlatformVersion, d.Bridge.Detail)
		require.NotEmpty(t, d.Bridge.Connections)
		require.Contains(t, d.Bridge.Connections[0].Accounts, "Sim101")
	})
	t.Run("add-on not reached", func(t *testing.T) {
		t.Parallel()
		p, err := ninjatrader.New(ninjatrader.Options{DiscoveryFile: filepath.Join(t.TempDir(), "none.json"),
			NinjaTraderDir: t.TempDir()})
		require.NoError(t, err)
		defer p.Close()
		d := newAgent(t, p).Diagnostics(context.Background())
		require.False(t, d.Bridge.Reachable)
		require.Equal(t, "the agent has not connected to NinjaTrader yet (not_started)", d.Bridge.Detail)
		require.Empty(t, d.Bridge.Connections)
	})
}
