package winsvc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The service manager starts the agent with `run --service` and nothing
// else (never a token), automatically, delayed, and restarts it.
func TestConfig(t *testing.T) {
	t.Parallel()
	c := Config("/opt/tradebridge/agent")
	require.Equal(t, "TradeBridgeAgent", c.Name)
	require.Equal(t, "TradeBridge Agent", c.DisplayName)
	require.NotEmpty(t, c.Description)
	require.Equal(t, "/opt/tradebridge/agent", c.Executable)
	require.Equal(t, []string{"run", "--service"}, c.Arguments)
	require.Empty(t, c.Dependencies, "on Windows these are service names")
	require.Empty(t, c.UserName, "LocalSystem on Windows, root elsewhere")

	c.Arguments[0] = "changed"
	require.Equal(t, []string{"run", "--service"}, ServiceArguments, "Config hands out a copy")

	for _, tc := range []struct {
		key  string
		want any
	}{
		{"StartType", "automatic"},
		{"DelayedAutoStart", true},
		{"OnFailure", "restart"},
		{"OnFailureDelayDuration", "5s"},
		{"OnFailureResetPeriod", 86400},
		{"Restart", "always"},
		{"RunAtLoad", true},
		{"KeepAlive", true},
		{"SystemdScript", systemdScript},
	} {
		require.Equal(t, tc.want, c.Option[tc.key], tc.key)
	}
	d, err := time.ParseDuration(c.Option["OnFailureDelayDuration"].(string))
	require.NoError(t, err, "kardianos parses it as a duration")
	require.Equal(t, RecoveryActions[0].Delay, d)
}

// Windows restarts the service after each failure with increasing delays,
// and forgets the failures after a day.
func TestRecoveryActions(t *testing.T) {
	t.Parallel()
	want := []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute}
	require.Len(t, RecoveryActions, len(want))
	for i, tc := range want {
		require.Equal(t, tc, RecoveryActions[i].Delay, "failure %d", i+1)
		if i > 0 {
			require.Greater(t, RecoveryActions[i].Delay, RecoveryActions[i-1].Delay)
		}
	}
	require.Equal(t, 24*time.Hour, RecoveryResetPeriod)
	require.Greater(t, RecoveryResetPeriod, RecoveryActions[len(RecoveryActions)-1].Delay)
}

// The machine's places are absolute and distinct.
func TestMachinePaths(t *testing.T) {
	t.Parallel()
	p := MachinePaths()
	seen := map[string]bool{}
	for _, path := range []string{p.ConfigFile, p.LogDir, p.DataDir} {
		require.NotEmpty(t, path)
		require.False(t, seen[path])
		seen[path] = true
	}
}
