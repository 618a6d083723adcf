package ninjatrader_test

import (
	"net"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/trading/bridge/ninjatrader"
)

// On Windows the port's owner comes from GetExtendedTcpTable, on a real
// listener (run on a Windows machine).
func TestWindowsPortOwner(t *testing.T) {
	t.Parallel()
	owner := ninjatrader.DefaultPortOwner()
	for _, addr := range []string{"127.0.0.1:0", "[::]:0"} {
		ln, err := net.Listen("tcp", addr)
		require.NoError(t, err)
		port := ln.Addr().(*net.TCPAddr).Port
		owns, err := owner.ListensOn(os.Getpid(), port)
		require.NoError(t, err, addr)
		require.True(t, owns, addr)
		owns, err = owner.ListensOn(os.Getpid()+4, port)
		require.NoError(t, err)
		require.False(t, owns)
		ln.Close()
		_, err = owner.ListensOn(os.Getpid(), port)
		require.ErrorIs(t, err, ninjatrader.ErrNoListener)
	}
	nt, err := owner.IsNinjaTrader(os.Getpid())
	require.NoError(t, err)
	require.False(t, nt, "the test binary is not NinjaTrader.exe")

	procs, err := ninjatrader.WindowsSessions{}.NinjaTraderProcesses()
	require.NoError(t, err)
	t.Logf("%d NinjaTrader processes", len(procs))
}
