package tradovate_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/bridgetest"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/bridge/tradovate"
	"tradebridge/trading/bridge/tradovate/tradovatetest"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

const (
	acct = "Sim101"
	es   = "ES 12-26"
)

// pair starts a market at ES 6000 and a running pair over it.
func pair(t testing.TB, opts tradovatetest.PairOptions) *tradovatetest.Pair {
	pr, _ := pairClock(t, opts)
	return pr
}

// pairClock is pair, with the market's clock.
func pairClock(t testing.TB, opts tradovatetest.PairOptions) (*tradovatetest.Pair, *sim.ManualClock) {
	t.Helper()
	so := sim.Options{}
	bridgetest.UseManualClock(&so)
	market, err := sim.New(so)
	require.NoError(t, err)
	t.Cleanup(func() { _ = market.Close() })
	require.NoError(t, market.SetPrice(es, 6000))
	if opts.Now == nil {
		opts.Now = so.Clock.Now
	}
	pr := tradovatetest.NewPair(t, market, opts)
	pr.Run(t)
	pr.Settle(t)
	return pr, so.Clock.(*sim.ManualClock)
}

func limit(action string, price float64) bridge.OrderRequest {
	return bridge.OrderRequest{Account: acct, Instrument: es, Action: action, OrderType: protocol.OrderTypeLimit,
		Quantity: 1, LimitPrice: price, TimeInForce: protocol.TimeInForceGtc}
}

// memStore is a Persist in memory that tests can share between
// platforms.
type memStore struct {
	mu sync.Mutex
	m  map[string]map[string][]byte
}

func (s *memStore) Put(bucket, key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]map[string][]byte{}
	}
	if s.m[bucket] == nil {
		s.m[bucket] = map[string][]byte{}
	}
	s.m[bucket][key] = value
	return nil
}

func (s *memStore) Delete(bucket, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m[bucket], key)
	return nil
}

func (s *memStore) Load(bucket string) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]byte{}
	for k, v := range s.m[bucket] {
		out[k] = v
	}
	return out, nil
}

func (s *memStore) keys(bucket string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.m[bucket] {
		out = append(out, k)
	}
	return out
}

func TestBrokerRejectionCodes(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	for _, reason := range []string{"MaxPosLimitReached", "TradingLocked", "SomethingNew"} {
		pr.Fake.RejectNext(reason)
		req := limit(protocol.ActionBuy, 5990)
		req.OrderID = "rej-" + reason
		_, err := pr.Platform.SubmitOrder(t.Context(), req)
		var re *bridge.RejectError
		require.ErrorAs(t, err, &re, reason)
		assert.Equal(t, tradovatewire.RejectCode(reason), re.Code)
		assert.Equal(t, tradovatewire.RejectSentence(reason), re.Reason)
		assert.NotContains(t, err.Error(), req.OrderID)
		// A refused id may be used again.
		o, err := pr.Platform.SubmitOrder(t.Context(), req)
		require.NoError(t, err)
		assert.Equal(t, req.OrderID, o.OrderID)
		_, err = pr.Platform.CancelOrder(t.Context(), acct, o.OrderID)
		require.NoError(t, err)
	}
	assert.Equal(t, "tradovate_max_pos_limit_reached", tradovatewire.RejectCode("MaxPosLimitReached"))
}

func TestOutcomeUnknownThenFound(t *testing.T) {
	t.Parallel()
	store := &memStore{}
	pr := pair(t, tradovatetest.PairOptions{Persist: store})
	pr.Fake.BreakNextOrderReply()
	req := limit(protocol.ActionBuy, 5990)
	req.OrderID, req.Name = "maybe-1", "Entry"
	_, err := pr.Platform.SubmitOrder(t.Context(), req)
	require.ErrorIs(t, err, bridge.ErrOutcomeUnknown)
	assert.Equal(t, 1, pr.Fake.OrdersPlaced(), "sent once, never resent")

	pr.Settle(t)
	os, err := pr.Platform.Orders(t.Context(), acct)
	require.NoError(t, err)
	require.Len(t, os, 1)
	assert.Equal(t, "maybe-1", os[0].OrderID, "the order shows up under our id")
	assert.Equal(t, "Entry", os[0].Name)
	assert.Equal(t, protocol.OrderStateWorking, os[0].OrderState)
	_, err = pr.Platform.SubmitOrder(t.Context(), req)
	var re *bridge.RejectError
	require.ErrorAs(t, err, &re, "the id stays taken")
	c, err := pr.Platform.CancelOrder(t.Context(), acct, "maybe-1")
	require.NoError(t, err)
	assert.Equal(t, protocol.OrderStateCancelled, c.OrderState)
}

func TestOrderIDsSurviveARestart(t *testing.T) {
	t.Parallel()
	store := &memStore{}
	pr, clock := pairClock(t, tradovatetest.PairOptions{Persist: store})
	req := limit(protocol.ActionBuy, 5990)
	req.OrderID, req.Name, req.StrategyTag = "keep-1", "Entry", "bot-7"
	o, err := pr.Platform.SubmitOrder(t.Context(), req)
	require.NoError(t, err)
	assert.Equal(t, []string{"keep-1"}, store.keys(tradovate.OrdersBucket))
	require.NoError(t, pr.Platform.Close())

	// A new platform of the same login, on the same store.
	p2, err := tradovate.New(tradovate.Options{Session: pr.Session, Persist: store, Now: clock.Now})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p2.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p2.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, func() bool { return p2.Status().Connected }, testkit.Medium, time.Millisecond)
	os, err := p2.Orders(t.Context(), acct)
	require.NoError(t, err)
	require.Len(t, os, 1)
	assert.Equal(t, o, os[0], "the same id, name and tag")
}

func TestSubmitOCO(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	_, err := pr.Platform.SubmitOrder(t.Context(), bridge.OrderRequest{Account: acct, Instrument: es,
		Action: protocol.ActionBuy, OrderType: protocol.OrderTypeMarket, Quantity: 1})
	require.NoError(t, err)
	tp := limit(protocol.ActionSell, 6010)
	sl := bridge.OrderRequest{Account: acct, Instrument: es, Action: protocol.ActionSell,
		OrderType: protocol.OrderTypeStopMarket, Quantity: 1, StopPrice: 5990, TimeInForce: protocol.TimeInForceGtc}
	tp.OrderID, sl.OrderID, tp.Oco, sl.Oco = "tp-1", "sl-1", "grp-9", "grp-9"
	a, b, err := pr.Platform.SubmitOCO(t.Context(), tp, sl)
	require.NoError(t, err)
	assert.Equal(t, "tp-1", a.OrderID)
	assert.Equal(t, "sl-1", b.OrderID)
	assert.Equal(t, "grp-9", a.Oco)
	assert.Equal(t, "grp-9", b.Oco)
	assert.Equal(t, protocol.OrderStateWorking, a.OrderState)
	assert.Equal(t, protocol.OrderStateAccepted, b.OrderState)

	require.NoError(t, pr.Market.SetPrice(es, 6010))
	pr.Settle(t)
	os, err := pr.Platform.Orders(t.Context(), acct)
	require.NoError(t, err)
	states := map[string]string{}
	for _, o := range os {
		states[o.OrderID] = o.OrderState
	}
	assert.Equal(t, protocol.OrderStateFilled, states["tp-1"])
	assert.Equal(t, protocol.OrderStateCancelled, states["sl-1"], "the broker cancels the other")

	// A pair must share account, instrument and quantity.
	other := limit(protocol.ActionSell, 6020)
	other.Quantity = 2
	_, _, err = pr.Platform.SubmitOCO(t.Context(), limit(protocol.ActionSell, 6030), other)
	var rq *bridge.RequestError
	require.ErrorAs(t, err, &rq)
	// And SubmitOrder with an OCO id is not supported.
	tp.OrderID = "tp-2"
	_, err = pr.Platform.SubmitOrder(t.Context(), tp)
	require.ErrorIs(t, err, bridge.ErrNotSupported)
}

func TestReconnectResyncs(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	o, err := pr.Platform.SubmitOrder(t.Context(), limit(protocol.ActionBuy, 5990))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	evs := pr.Platform.Events(ctx)

	pr.Fake.Unreachable(true)
	require.Eventually(t, func() bool { return !pr.Platform.Status().Connected }, testkit.Medium, time.Millisecond)
	_, err = pr.Platform.Orders(t.Context(), acct)
	require.ErrorIs(t, err, bridge.ErrNotConnected, "no stale reads while disconnected")
	cs, err := pr.Platform.Connections(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "Disconnected", cs[0].Status)
	require.NoError(t, pr.Market.SetPrice(es, 5989.75)) // fills the order meanwhile
	pr.Fake.Unreachable(false)
	pr.WaitConnected(t)

	var filled, disconnected, connected bool
	timeout := time.After(testkit.Medium)
	for !filled || !connected {
		select {
		case ev := <-evs:
			switch {
			case ev.Kind == bridge.EventConnections && ev.Connections[0].Status == "Disconnected":
				disconnected = true
			case ev.Kind == bridge.EventConnections && ev.Connections[0].Status == "Connected":
				connected = disconnected
			case ev.Kind == bridge.EventOrder && ev.Order.OrderID == o.OrderID && ev.Order.OrderState == protocol.OrderStateFilled:
				filled = true
			}
		case <-timeout:
			t.Fatalf("after the reconnect: filled %v, disconnected %v, connected %v", filled, disconnected, connected)
		}
	}
	ps, err := pr.Platform.Positions(t.Context(), acct)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	assert.Equal(t, 1, ps[0].Quantity)
}

func TestCallsWhileUnreachable(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	pr.Fake.Unreachable(true)
	require.Eventually(t, func() bool { return !pr.Platform.Status().Connected }, testkit.Medium, time.Millisecond)
	_, err := pr.Platform.SubmitOrder(t.Context(), limit(protocol.ActionBuy, 5990))
	require.ErrorIs(t, err, bridge.ErrNotConnected)
	var ue *bridge.UnavailableError
	require.ErrorAs(t, err, &ue)
	assert.NotEmpty(t, ue.Reason)
	assert.Zero(t, pr.Fake.OrdersPlaced())
	st := pr.Platform.Status()
	assert.False(t, st.Connected)
	assert.NotEmpty(t, st.Code)
}

func TestNotSupportedSentences(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	_, err := pr.Platform.Bars(t.Context(), bridge.BarsRequest{Instrument: es, PeriodType: protocol.PeriodMinute})
	var ns *bridge.NotSupportedError
	require.ErrorAs(t, err, &ns)
	assert.Equal(t, "bars", ns.What)
	assert.NotEmpty(t, ns.Reason)
	_, err = pr.Platform.Strategies(t.Context(), acct)
	require.ErrorAs(t, err, &ns)
	assert.Equal(t, "strategies", ns.What)
	ts, err := pr.Platform.AtmTemplates(t.Context())
	require.NoError(t, err)
	assert.Empty(t, ts)
	assert.True(t, errors.Is(err, nil))
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	_, err := tradovate.New(tradovate.Options{})
	require.Error(t, err)
	s, err := tradovate.NewSession(tradovate.SessionOptions{Env: tradovate.EnvDemo,
		Endpoints: tradovate.DefaultEndpoints(), Credentials: credentials})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	_, err = tradovate.New(tradovate.Options{Session: s, MinBackoff: time.Second, MaxBackoff: time.Millisecond})
	require.Error(t, err)
	p, err := tradovate.New(tradovate.Options{Session: s})
	require.NoError(t, err)
	assert.Equal(t, "tradovate", p.Kind())
	_, err = p.Accounts(t.Context())
	require.ErrorIs(t, err, bridge.ErrNotConnected, "before Run")
	require.NoError(t, p.Close())
	require.Error(t, p.Run(t.Context()), "a closed platform does not run")
}
