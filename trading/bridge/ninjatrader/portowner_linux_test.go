package ninjatrader_test

import (
	"errors"
	"net"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/trading/bridge/ninjatrader"
)

// On Linux the port's owner is read from /proc, on a real listener.
func TestProcPortOwner(t *testing.T) {
	t.Parallel()
	owner := ninjatrader.DefaultPortOwner()
	require.NotNil(t, owner)
	for _, network := range []string{"tcp4", "tcp6"} {
		addr := "127.0.0.1:0"
		if network == "tcp6" {
			addr = "[::]:0"
		}
		ln, err := net.Listen(network, addr)
		if err != nil {
			t.Logf("%s: %v", network, err)
			continue
		}
		port := ln.Addr().(*net.TCPAddr).Port
		owns, err := owner.ListensOn(os.Getpid(), port)
		require.NoError(t, err, network)
		require.True(t, owns, network)
		if os.Geteuid() == 0 { // another process's descriptors are root's to read
			owns, err = owner.ListensOn(1, port)
			require.NoError(t, err)
			require.False(t, owns, "init does not listen there")
		}
		ln.Close()
		_, err = owner.ListensOn(os.Getpid(), port)
		require.True(t, errors.Is(err, ninjatrader.ErrNoListener), "%s: %v", network, err)
	}
	nt, err := owner.IsNinjaTrader(os.Getpid())
	require.NoError(t, err)
	require.True(t, nt, "no process name is required on Linux")
	nt, err = ninjatrader.ProcPortOwner{Root: "/proc", Name: "NinjaTrader.exe"}.IsNinjaTrader(os.Getpid())
	require.NoError(t, err)
	require.False(t, nt)

	// A listener on another address than loopback or any is not the add-on's.
	ln, err := net.Listen("tcp4", "127.0.0.2:0")
	if err == nil {
		defer ln.Close()
		_, err = owner.ListensOn(os.Getpid(), ln.Addr().(*net.TCPAddr).Port)
		require.ErrorIs(t, err, ninjatrader.ErrNoListener)
	}
}
