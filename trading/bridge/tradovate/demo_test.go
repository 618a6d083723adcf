package tradovate_test

import (
	"context"
	"math"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// Environment of the opt-in test against Tradovate's demo environment.
// It runs only when TB_TRADOVATE_DEMO_USERNAME is set, with the other
// credentials beside it; TB_TRADOVATE_DEMO_TRADE=1 also places orders far
// from the market and cancels them: a limit order, a bracket
// (order/placeoso) and a sell trailing stop. TB_TRADOVATE_DEMO_SYNC_USERS=1
// syncs with the example clients' body instead of the documented one.
// With TB_TRADOVATE_DEMO_OAUTH_CODE (a fresh authorization code) and the
// OAuth client beside it, the code is exchanged as ExchangeOAuthCode does.
const (
	envDemoUsername   = "TB_TRADOVATE_DEMO_USERNAME"
	envDemoPassword   = "TB_TRADOVATE_DEMO_PASSWORD"
	envDemoAppID      = "TB_TRADOVATE_DEMO_APP_ID"
	envDemoAppVersion = "TB_TRADOVATE_DEMO_APP_VERSION"
	envDemoCID        = "TB_TRADOVATE_DEMO_CID"
	envDemoSec        = "TB_TRADOVATE_DEMO_SEC"
	envDemoDeviceID   = "TB_TRADOVATE_DEMO_DEVICE_ID"
	envDemoTrade      = "TB_TRADOVATE_DEMO_TRADE"
	envDemoSyncUsers  = "TB_TRADOVATE_DEMO_SYNC_USERS"
	envDemoOAuthCode  = "TB_TRADOVATE_DEMO_OAUTH_CODE"
	envDemoOAuthID    = "TB_TRADOVATE_DEMO_OAUTH_CLIENT_ID"
	envDemoOAuthSec   = "TB_TRADOVATE_DEMO_OAUTH_CLIENT_SECRET"
	envDemoOAuthRedir = "TB_TRADOVATE_DEMO_OAUTH_REDIRECT_URI"
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
	p, err := tradovate.New(tradovate.Options{Session: sess, SyncUsers: os.Getenv(envDemoSyncUsers) == "1"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = sess.Run(ctx) }()
	go func() { defer wg.Done(); _ = p.Run(ctx) }()
	defer func() { cancel(); p.Close(); wg.Wait() }()

	// The user/syncrequest body: the default is the partner
	// documentation's (splitResponses, entityTypes, no users).
	require.Eventually(t, func() bool { return p.Status().Connected }, time.Minute, 100*time.Millisecond,
		"the platform syncs with the demo environment (if only %s=1 syncs, the documented body is refused)", envDemoSyncUsers)
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
	demoClOrdID(t, sess, o.OrderID)
	demoBracket(t, p, acct, info, q.Last)
	demoTrailingStop(t, p, acct, info, q.Last)
}

// demoClOrdID checks that the broker echoes our id as the clOrdId of the
// placement's command: the order whose version's text is ours has a
// command carrying it.
func demoClOrdID(t *testing.T, sess *tradovate.Session, ours string) {
	t.Helper()
	var versions []tradovatewire.OrderVersion
	require.NoError(t, sess.Do(t.Context(), http.MethodGet, "/orderVersion/list", "", nil, &versions))
	broker := int64(0)
	for _, v := range versions {
		if v.Text == ours {
			broker = v.OrderID
		}
	}
	require.NotZero(t, broker, "the order's version carries our id as its text")
	var commands []struct {
		ClOrdID     string `json:"clOrdId"`
		CommandType string `json:"commandType"`
	}
	require.NoError(t, sess.Do(t.Context(), http.MethodGet, "/command/deps", "masterid="+strconv.FormatInt(broker, 10), nil, &commands))
	var echoed []string
	for _, c := range commands {
		echoed = append(echoed, c.ClOrdID)
	}
	t.Logf("demo: the order's commands carry clOrdIds %q", echoed)
	require.Contains(t, echoed, ours, "the broker echoes clOrdId on the placement's command")
}

// demoBracket places an entry far below the market with its stop and
// target in one order/placeoso request, then cancels the entry: the exits
// are held until a fill, so none works.
func demoBracket(t *testing.T, p *tradovate.Platform, acct string, info protocol.InstrumentInfo, last float64) {
	t.Helper()
	at := func(f float64) float64 { return math.Round(last*f/info.TickSize) * info.TickSize }
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
	entry := bridge.OrderRequest{Account: acct, Instrument: info.Instrument, Action: protocol.ActionBuy,
		OrderType: protocol.OrderTypeLimit, Quantity: 1, LimitPrice: at(0.8), TimeInForce: protocol.TimeInForceDay,
		OrderID: "tb-demo-oso-" + stamp}
	stop := bridge.OrderRequest{Account: acct, Instrument: info.Instrument, Action: protocol.ActionSell,
		OrderType: protocol.OrderTypeStopMarket, Quantity: 1, StopPrice: at(0.75), TimeInForce: protocol.TimeInForceGtc,
		Oco: "tb-demo-" + stamp, OrderID: "tb-demo-sl-" + stamp}
	target := bridge.OrderRequest{Account: acct, Instrument: info.Instrument, Action: protocol.ActionSell,
		OrderType: protocol.OrderTypeLimit, Quantity: 1, LimitPrice: at(0.85), TimeInForce: protocol.TimeInForceGtc,
		Oco: "tb-demo-" + stamp, OrderID: "tb-demo-tp-" + stamp}
	got, err := p.SubmitBracket(t.Context(), entry, stop, target)
	require.NoError(t, err, "order/placeoso with bracket1 and bracket2 is accepted")
	require.Len(t, got, 3)
	t.Logf("demo: placeoso entry %s, exits %s %s", got[0].OrderState, got[1].OrderState, got[2].OrderState)
	_, err = p.CancelOrder(t.Context(), acct, entry.OrderID)
	require.NoError(t, err)
}

// demoTrailingStop checks the sign of pegDifference: a sell trailing stop
// far below the market, sent with a negative pegDifference, is accepted.
func demoTrailingStop(t *testing.T, p *tradovate.Platform, acct string, info protocol.InstrumentInfo, last float64) {
	t.Helper()
	distance := math.Round(last*0.2/info.TickSize) * info.TickSize
	o, err := p.SubmitOrder(t.Context(), bridge.OrderRequest{Account: acct, Instrument: info.Instrument, Action: protocol.ActionSell,
		OrderType: protocol.OrderTypeTrailingStop, Quantity: 1, TrailDistance: distance, TimeInForce: protocol.TimeInForceDay,
		OrderID: "tb-demo-trail-" + strconv.FormatInt(time.Now().UnixNano(), 36)})
	require.NoError(t, err, "a sell trailing stop with a negative pegDifference is accepted")
	t.Logf("demo: sell trailing stop at %v (trail %v)", o.StopPrice, distance)
	require.Less(t, o.StopPrice, last, "a sell trailing stop stands below the market")
	_, err = p.CancelOrder(t.Context(), acct, o.OrderID)
	require.NoError(t, err)
}

// TestDemoOAuthExchange exchanges a fresh authorization code of the demo
// environment as the relay does: POST {REST}/auth/oauthtoken with a JSON
// body (grant_type authorization_code, client_id, client_secret,
// redirect_uri, code), then GET /auth/me. It runs only with a code: the
// code comes from a browser, through the OAuth client's authorization
// page.
func TestDemoOAuthExchange(t *testing.T) {
	code := os.Getenv(envDemoOAuthCode)
	if code == "" {
		t.Skipf("set %s (a fresh code of the demo environment) with %s, %s and %s to check the OAuth exchange",
			envDemoOAuthCode, envDemoOAuthID, envDemoOAuthSec, envDemoOAuthRedir)
	}
	tok, err := tradovate.ExchangeOAuthCode(t.Context(), tradovate.OAuthExchange{Env: tradovate.EnvDemo,
		Endpoints: tradovate.DefaultEndpoints(), Code: code, Client: tradovate.OAuthClient{ID: os.Getenv(envDemoOAuthID),
			Secret: os.Getenv(envDemoOAuthSec), RedirectURL: os.Getenv(envDemoOAuthRedir)}})
	require.NoError(t, err, "the documented JSON exchange is accepted")
	require.NotZero(t, tok.UserID)
	t.Logf("demo: the OAuth token lasts until %s", tok.Expires.Format(time.RFC3339))
}
