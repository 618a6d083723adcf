package tradovate_test

import (
	"context"
	"math"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate"
)

// Environment of the opt-in test against Tradovate's demo environment.
// It runs only when TB_TRADOVATE_DEMO_USERNAME is set, with the other
// credentials beside it; TB_TRADOVATE_DEMO_TRADE=1 also places one
// limit order far from the market and cancels it.
const (
	envDemoUsername   = "TB_TRADOVATE_DEMO_USERNAME"
	envDemoPassword   = "TB_TRADOVATE_DEMO_PASSWORD"
	envDemoAppID      = "TB_TRADOVATE_DEMO_APP_ID"
	envDemoAppVersion = "TB_TRADOVATE_DEMO_APP_VERSION"
	envDemoCID        = "TB_TRADOVATE_DEMO_CID"
	envDemoSec        = "TB_TRADOVATE_DEMO_SEC"
	envDemoDeviceID   = "TB_TRADOVATE_DEMO_DEVICE_ID"
	envDemoTrade      = "TB_TRADOVATE_DEMO_TRADE"
)

// TestDemoEnvironment logs in to the broker's demo environment with the
// credentials of the environment, syncs, and reads through the Platform
// what the broker family serves: accounts, positions, orders and a
// contract. It never runs in CI unless an operator gives credentials.
func TestDemoEnvironment(t *testing.T) {
	name := os.Getenv(envDemoUsername)
	if name == "" {
		t.Skipf("set %s (and %s, %s, %s, %s, %s) to run against Tradovate's demo environment",
			envDemoUsername, envDemoPassword, envDemoAppID, envDemoAppVersion, envDemoCID, envDemoSec)
	}
	cid, err := strconv.Atoi(os.Getenv(envDemoCID))
	require.NoError(t, err, "%s must be a number", envDemoCID)
	device := os.Getenv(envDemoDeviceID)
	if device == "" {
		device = "tradebridge-demo-test"
	}
	sess, err := tradovate.NewSession(tradovate.SessionOptions{Env: tradovate.EnvDemo, Endpoints: tradovate.DefaultEndpoints(),
		Credentials: &tradovate.Credentials{Name: name, Password: os.Getenv(envDemoPassword), AppID: os.Getenv(envDemoAppID),
			AppVersion: os.Getenv(envDemoAppVersion), CID: cid, Sec: os.Getenv(envDemoSec), DeviceID: device}})
	require.NoError(t, err)
	defer sess.Close()
	p, err := tradovate.New(tradovate.Options{Session: sess})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = sess.Run(ctx) }()
	go func() { defer wg.Done(); _ = p.Run(ctx) }()
	defer func() { cancel(); p.Close(); wg.Wait() }()

	require.Eventually(t, func() bool { return p.Status().Connected }, time.Minute, 100*time.Millisecond,
		"the platform syncs with the demo environment")
	accounts, err := p.Accounts(t.Context())
	require.NoError(t, err)
	require.NotEmpty(t, accounts, "the demo login has accounts")
	acct := accounts[0].Name
	_, err = p.Positions(t.Context(), acct)
	require.NoError(t, err)
	_, err = p.Orders(t.Context(), acct)
	require.NoError(t, err)
	info, err := p.Instrument(t.Context(), "MES")
	require.NoError(t, err)
	t.Logf("demo login: %d accounts; MES front month %s", len(accounts), info.Instrument)

	if os.Getenv(envDemoTrade) != "1" {
		return
	}
	q, err := p.Quote(t.Context(), info.Instrument)
	require.NoError(t, err)
	limit := math.Round(q.Last*0.8/info.TickSize) * info.TickSize // far below the market: never fills
	o, err := p.SubmitOrder(t.Context(), bridge.OrderRequest{Account: acct, Instrument: info.Instrument, Action: protocol.ActionBuy,
		OrderType: protocol.OrderTypeLimit, Quantity: 1, LimitPrice: limit, TimeInForce: protocol.TimeInForceDay,
		OrderID: "tb-demo-" + strconv.FormatInt(time.Now().UnixNano(), 36)})
	require.NoError(t, err)
	c, err := p.CancelOrder(t.Context(), acct, o.OrderID)
	require.NoError(t, err)
	require.Contains(t, []string{protocol.OrderStateCancelled, protocol.OrderStateCancelPending, protocol.OrderStateCancelSubmitted}, c.OrderState)
}
