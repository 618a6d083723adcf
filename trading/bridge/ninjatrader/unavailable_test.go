package ninjatrader_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/ninjatrader"
	"tradebridge/trading/bridge/ninjatrader/ntwire"
)

// waitFor is how long a test waits for the bridge to notice a change.
const waitFor = testkit.Medium

// runBridge starts p's connection loop for the test's duration.
func runBridge(t *testing.T, p *ninjatrader.Platform) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		p.Close()
	})
}

// requireReason waits until calls fail with the reason code.
func requireReason(t *testing.T, p *ninjatrader.Platform, code string) {
	t.Helper()
	require.Eventually(t, func() bool { return p.Status().Code == code }, waitFor, 5*time.Millisecond,
		"status %+v", p.Status())
	_, err := p.Positions(context.Background(), "Sim101")
	var ue *bridge.UnavailableError
	require.ErrorAs(t, err, &ue)
	require.Equal(t, code, ue.Code)
	require.NotEmpty(t, ue.Reason)
	require.ErrorIs(t, err, bridge.ErrNotConnected)
	conns, err := p.Connections(context.Background())
	require.NoError(t, err, "the agent still connects to the relay while the platform is down")
	require.Empty(t, conns)
}

func newBridge(t *testing.T, opts ninjatrader.Options) *ninjatrader.Platform {
	t.Helper()
	opts.MinBackoff, opts.MaxBackoff = time.Millisecond, 20*time.Millisecond
	p, err := ninjatrader.New(opts)
	require.NoError(t, err)
	return p
}

func TestWhyUnavailable(t *testing.T) {
	t.Parallel()
	t.Run("before Run", func(t *testing.T) {
		t.Parallel()
		p := newBridge(t, ninjatrader.Options{DiscoveryFile: filepath.Join(t.TempDir(), "none.json")})
		defer p.Close()
		_, err := p.Accounts(context.Background())
		var ue *bridge.UnavailableError
		require.ErrorAs(t, err, &ue)
		require.Equal(t, ninjatrader.ReasonNotStarted, ue.Code)
	})
	t.Run("add-on not installed", func(t *testing.T) {
		t.Parallel()
		nt := t.TempDir() // NinjaTrader's folder, without the add-on's source
		p := newBridge(t, ninjatrader.Options{DiscoveryFile: filepath.Join(t.TempDir(), "none.json"), NinjaTraderDir: nt})
		runBridge(t, p)
		requireReason(t, p, ninjatrader.ReasonNotInstalled)
	})
	t.Run("NinjaTrader not running", func(t *testing.T) {
		t.Parallel()
		nt := t.TempDir()
		src := filepath.Join(nt, "bin", "Custom", "AddOns", "TradeBridgeAddOn.cs")
		require.NoError(t, os.MkdirAll(filepath.Dir(src), 0o755))
		require.NoError(t, os.WriteFile(src, []byte("// the add-on"), 0o644))
		p := newBridge(t, ninjatrader.Options{DiscoveryFile: filepath.Join(t.TempDir(), "none.json"), NinjaTraderDir: nt})
		runBridge(t, p)
		requireReason(t, p, ninjatrader.ReasonNotRunning)
	})
	t.Run("NinjaTrader closed without removing its file", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close() // nobody listens there now
		file := writeDiscovery(t, ntwire.Discovery{Version: 1, Port: port, Secret: "s3cret"})
		p := newBridge(t, ninjatrader.Options{DiscoveryFile: file})
		runBridge(t, p)
		requireReason(t, p, ninjatrader.ReasonClosed)
	})
	t.Run("discovery file unreadable", func(t *testing.T) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), ntwire.DiscoveryFileName)
		require.NoError(t, os.WriteFile(file, []byte("{not json"), 0o600))
		p := newBridge(t, ninjatrader.Options{DiscoveryFile: file})
		runBridge(t, p)
		requireReason(t, p, ninjatrader.ReasonDiscoveryInvalid)
	})
	for _, tc := range []struct{ refusal, code string }{
		{ntwire.RefusedBadSecret, ninjatrader.ReasonWrongSecret},
		{ntwire.RefusedVersionUnsupported, ninjatrader.ReasonVersion},
		{ntwire.RefusedBusy, ninjatrader.ReasonBusy},
	} {
		t.Run("refused "+tc.refusal, func(t *testing.T) {
			t.Parallel()
			port := refuser(t, tc.refusal)
			p := newBridge(t, ninjatrader.Options{DiscoveryFile: writeDiscovery(t, ntwire.Discovery{Version: 1, Port: port, Secret: "s3cret"})})
			runBridge(t, p)
			requireReason(t, p, tc.code)
		})
	}
}

// The ops layer turns the reason into the trader's sentence.
func TestUnavailableReachesTheCaller(t *testing.T) {
	t.Parallel()
	p := newBridge(t, ninjatrader.Options{DiscoveryFile: filepath.Join(t.TempDir(), "none.json"), NinjaTraderDir: t.TempDir()})
	runBridge(t, p)
	requireReason(t, p, ninjatrader.ReasonNotInstalled)
	_, err := p.SubmitOrder(context.Background(), bridge.OrderRequest{Account: "Sim101", Instrument: "ES",
		Action: protocol.ActionBuy, OrderType: protocol.OrderTypeMarket, Quantity: 1})
	var ue *bridge.UnavailableError
	require.ErrorAs(t, err, &ue)
	require.Contains(t, ue.Reason, "Tools > Import > NinjaScript Add-On")
}

func writeDiscovery(t *testing.T, d ntwire.Discovery) string {
	t.Helper()
	if d.PID == 0 {
		d.PID = os.Getpid() // the listener is this process's, as NinjaTrader's is the add-on's
	}
	b, err := json.Marshal(d)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), ntwire.DiscoveryFileName)
	require.NoError(t, os.WriteFile(file, b, 0o600))
	return file
}

// refuser is an add-on that refuses every hello with code.
func refuser(t *testing.T, code string) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			m, err := ntwire.NewReader(c).Read()
			if err == nil && m.Type == ntwire.TypeHello {
				_ = ntwire.NewWriter(c).Write(ntwire.Message{Type: ntwire.TypeRefused, Code: code, Text: "refused"})
			}
			c.Close()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return ln.Addr().(*net.TCPAddr).Port
}
