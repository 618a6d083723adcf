package ninjatrader_test

import (
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/trading/bridge/ninjatrader"
	"tradebridge/trading/bridge/ninjatrader/ntfake"
	"tradebridge/trading/bridge/sim"
)

// portOwner is a PortOwner whose answers the test sets.
type portOwner struct {
	pid int  // the process listening on any port; 0: nobody
	nt  bool // whether it is NinjaTrader
}

func (o portOwner) ListensOn(pid, _ int) (bool, error) {
	if o.pid == 0 {
		return false, ninjatrader.ErrNoListener
	}
	return pid == o.pid, nil
}

func (o portOwner) IsNinjaTrader(int) (bool, error) { return o.nt, nil }

// sessions is a SessionScanner of fixed processes; every file is owned
// by owner.
type sessions struct {
	procs []ninjatrader.TraderProcess
	owner string
}

func (s sessions) NinjaTraderProcesses() ([]ninjatrader.TraderProcess, error) { return s.procs, nil }

func (s sessions) FileOwner(path string) (string, error) {
	if _, err := os.Stat(path); err != nil {
		return "", fs.ErrNotExist
	}
	return s.owner, nil
}

func (sessions) Trusted(string) bool { return false }

// startFake starts a fake add-on over a simulator; userDataDir goes into
// its discovery file.
func startFake(t *testing.T, userDataDir string) *ntfake.Server {
	t.Helper()
	market, err := sim.New(sim.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { market.Close() })
	fake, err := ntfake.Start(ntfake.Options{Market: market, Dir: t.TempDir(), UserDataDir: userDataDir})
	require.NoError(t, err)
	t.Cleanup(func() { fake.Close() })
	return fake
}

// The bridge connects to the add-on only when the process its discovery
// file names listens on the port and is NinjaTrader; otherwise it says
// why and never connects.
func TestPortOwnerChecked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		owner   portOwner
		connect bool
		code    string
	}{
		{"NinjaTrader listens", portOwner{pid: os.Getpid(), nt: true}, true, ""},
		{"another process listens", portOwner{pid: os.Getpid() + 1, nt: true}, false, ninjatrader.ReasonPortOwner},
		{"the process is not NinjaTrader", portOwner{pid: os.Getpid(), nt: false}, false, ninjatrader.ReasonPortOwner},
		{"nothing listens", portOwner{}, false, ninjatrader.ReasonClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := startFake(t, "")
			p := newBridge(t, ninjatrader.Options{DiscoveryFile: fake.DiscoveryPath(), PortOwner: tc.owner})
			runBridge(t, p)
			if tc.connect {
				require.Eventually(t, func() bool { return p.Status().Connected }, waitFor, 5*time.Millisecond)
				return
			}
			requireReason(t, p, tc.code)
			time.Sleep(50 * time.Millisecond) // a few more attempts
			require.Zero(t, fake.Connections(), "the bridge never connects")
		})
	}
}

// An explicit port and secret skip the check only when they come from
// the administrators' settings.
func TestOverrideTrusted(t *testing.T) {
	t.Parallel()
	for _, trusted := range []bool{false, true} {
		fake := startFake(t, "")
		_, port, err := net.SplitHostPort(fake.Addr())
		require.NoError(t, err)
		n, err := strconv.Atoi(port)
		require.NoError(t, err)
		p := newBridge(t, ninjatrader.Options{DiscoveryFile: filepath.Join(t.TempDir(), "none.json"),
			Port: n, Secret: fake.Secret(), OverrideTrusted: trusted, PortOwner: portOwner{pid: os.Getpid() + 1}})
		runBridge(t, p)
		if trusted {
			require.Eventually(t, func() bool { return p.Status().Connected }, waitFor, 5*time.Millisecond)
		} else {
			requireReason(t, p, ninjatrader.ReasonPortOwner)
		}
	}
}

// The service finds the discovery file of the one trader whose
// NinjaTrader runs, checks its owner, and learns NinjaTrader's folder
// from it.
func TestSessionsDiscovery(t *testing.T) {
	t.Parallel()
	const alice, bob = "S-1-5-21-1-2-3-1001", "S-1-5-21-1-2-3-1002"
	ntDir := t.TempDir() // the trader's NinjaTrader folder, without the add-on's source

	t.Run("one trader", func(t *testing.T) {
		t.Parallel()
		fake := startFake(t, ntDir)
		p := newBridge(t, ninjatrader.Options{Sessions: sessions{owner: alice, procs: []ninjatrader.TraderProcess{
			{PID: os.Getpid(), User: alice, DiscoveryFile: fake.DiscoveryPath()}}}})
		runBridge(t, p)
		require.Eventually(t, func() bool { return p.Status().Connected }, waitFor, 5*time.Millisecond)
		fake.Stop() // NinjaTrader closed: the file is gone; the folder it named has no add-on
		requireReason(t, p, ninjatrader.ReasonNotInstalled)
	})
	t.Run("the file is another user's", func(t *testing.T) {
		t.Parallel()
		fake := startFake(t, ntDir)
		p := newBridge(t, ninjatrader.Options{Sessions: sessions{owner: bob, procs: []ninjatrader.TraderProcess{
			{PID: os.Getpid(), User: alice, DiscoveryFile: fake.DiscoveryPath()}}}})
		runBridge(t, p)
		requireReason(t, p, ninjatrader.ReasonDiscoveryUntrusted)
		require.Zero(t, fake.Connections())
	})
	t.Run("two traders", func(t *testing.T) {
		t.Parallel()
		fake := startFake(t, ntDir)
		p := newBridge(t, ninjatrader.Options{Sessions: sessions{owner: alice, procs: []ninjatrader.TraderProcess{
			{PID: os.Getpid(), User: alice, DiscoveryFile: fake.DiscoveryPath()},
			{PID: 1, User: bob, DiscoveryFile: fake.DiscoveryPath()}}}})
		runBridge(t, p)
		requireReason(t, p, ninjatrader.ReasonSeveralTraders)
		require.Contains(t, p.Status().Reason, "2 users'")
		require.Zero(t, fake.Connections())
	})
	t.Run("no NinjaTrader", func(t *testing.T) {
		t.Parallel()
		p := newBridge(t, ninjatrader.Options{Sessions: sessions{}})
		runBridge(t, p)
		requireReason(t, p, ninjatrader.ReasonNotRunning)
	})
}
