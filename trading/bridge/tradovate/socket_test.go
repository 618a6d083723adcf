package tradovate_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate"
	"tradebridge/trading/bridge/tradovate/tradovatefake"
	"tradebridge/trading/bridge/tradovate/tradovatetest"
)

// quiet is how long the tests watch for a redial that must not come: many
// times the pair's largest reconnect backoff (50 ms).
const quiet = 300 * time.Millisecond

// sessionClock drives a pair's session clock (its waits included) from
// the wall clock's present.
func sessionClock() (*testkit.Clock, func(*tradovate.SessionOptions)) {
	c := testkit.NewClock(time.Now())
	return c, func(o *tradovate.SessionOptions) { o.Now, o.After = c.Now, c.After }
}

func TestSocketRateLimitHoldsTheUserSocket(t *testing.T) {
	t.Parallel()
	clock, edit := sessionClock()
	pr := pair(t, tradovatetest.PairOptions{Session: edit})
	dials, syncs := pr.Fake.Requests("websocket"), pr.Fake.Requests("user/syncrequest")

	pr.Fake.SocketRateLimit("user/syncrequest", 1)
	pr.Fake.DropSockets()
	require.Eventually(t, func() bool { return pr.Platform.Status().Code == tradovate.CodeRateLimited },
		testkit.Medium, time.Millisecond, "the platform says why it waits")
	assert.Equal(t, tradovate.StateRateLimited, pr.Session.Status().State)
	require.Never(t, func() bool { return pr.Fake.Requests("websocket") > dials+1 }, quiet, 5*time.Millisecond,
		"nothing is sent during the broker's hour")
	assert.Equal(t, syncs+1, pr.Fake.Requests("user/syncrequest"))

	clock.Advance(tradovate.RateLimitPause + time.Second)
	pr.WaitConnected(t)
	assert.Equal(t, syncs+2, pr.Fake.Requests("user/syncrequest"))
}

func TestSocketRateLimitHoldsQuoteSubscriptions(t *testing.T) {
	t.Parallel()
	_, edit := sessionClock()
	pr := pair(t, tradovatetest.PairOptions{Session: edit})
	pr.Fake.SocketRateLimit("md/subscribequote", 1)
	for range 3 {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		_, _ = pr.Platform.Quote(ctx, es)
		cancel()
	}
	require.Never(t, func() bool { return pr.Fake.Requests("md/subscribequote") > 1 }, quiet, 5*time.Millisecond,
		"no subscription is sent again during the broker's hour")
	assert.Equal(t, tradovate.StateRateLimited, pr.Session.Status().State)
}

func TestShutdownEventSlowsTheRedial(t *testing.T) {
	t.Parallel()
	clock, edit := sessionClock()
	pr := pair(t, tradovatetest.PairOptions{Session: edit})
	dials := pr.Fake.Requests("websocket")

	pr.Fake.ShutdownSockets(tradovatefake.ShutdownConnectionQuota)
	require.Eventually(t, func() bool { return !pr.Platform.Status().Connected }, testkit.Medium, time.Millisecond)
	require.Never(t, func() bool { return pr.Fake.Requests("websocket") > dials }, quiet, 5*time.Millisecond,
		"no redial right after the broker's connection quota")
	st := pr.Platform.Status()
	assert.Equal(t, tradovate.CodeConnecting, st.Code)
	assert.Contains(t, st.Reason, "too many connections")

	clock.Advance(10 * time.Minute)
	pr.WaitConnected(t)
}

func TestIdleClientKeepsItsSocket(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{
		Fake: func(o *tradovatefake.Options) {
			o.Heartbeat, o.ClientSilence = 50*time.Millisecond, 300*time.Millisecond
		},
		Platform: func(o *tradovate.Options) { o.SocketDeadAfter = 400 * time.Millisecond },
	})
	dials := pr.Fake.Requests("websocket")
	require.Never(t, func() bool { return pr.Fake.Requests("websocket") > dials }, time.Second, 10*time.Millisecond,
		"an idle client's heartbeats keep its socket")
	assert.True(t, pr.Platform.Status().Connected)
}

func TestSlowContractLookupKeepsTheSocket(t *testing.T) {
	t.Parallel()
	const nq = "NQ 12-26"
	pr := pair(t, tradovatetest.PairOptions{
		Fake:     func(o *tradovatefake.Options) { o.Heartbeat = 50 * time.Millisecond },
		Platform: func(o *tradovate.Options) { o.SocketDeadAfter = 400 * time.Millisecond },
	})
	dials, syncs := pr.Fake.Requests("websocket"), pr.Fake.Requests("user/syncrequest")
	pr.Fake.WithholdContracts(true)
	pr.Fake.SlowContractItem(3 * time.Second) // beyond SocketDeadAfter and a heartbeat period

	require.NoError(t, pr.Market.SetPrice(nq, 21000))
	_, err := pr.Market.SubmitOrder(t.Context(), bridge.OrderRequest{Account: acct, Instrument: nq,
		Action: protocol.ActionBuy, OrderType: protocol.OrderTypeLimit, Quantity: 1, LimitPrice: 20000,
		TimeInForce: protocol.TimeInForceGtc})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		os, err := pr.Platform.Orders(t.Context(), acct)
		return err == nil && len(os) == 1 && os[0].Instrument == nq
	}, testkit.Medium, 5*time.Millisecond, "the order shows once its contract is known")
	assert.Equal(t, dials, pr.Fake.Requests("websocket"), "the socket stayed up")
	assert.Equal(t, syncs, pr.Fake.Requests("user/syncrequest"), "no resync")
	assert.Equal(t, 1, pr.Fake.Requests("contract/item"))
}
