package winsvc

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows/svc/mgr"
)

// Every recovery action is a restart after its delay.
func TestRecoveryActionsForTheServiceManager(t *testing.T) {
	t.Parallel()
	got := recoveryActions()
	require.Len(t, got, len(RecoveryActions))
	for i, a := range got {
		require.Equal(t, mgr.ServiceRestart, a.Type)
		require.Equal(t, RecoveryActions[i].Delay, a.Delay)
	}
	require.Contains(t, MachinePaths().ConfigFile, `\TradeBridge\Agent\config.json`)
}
