package systemtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/relay"
	"tradebridge/relay/broker"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/bridge/tradovate"
	"tradebridge/trading/bridge/tradovate/tradovatefake"
)

// Tradovate is the broker a System's broker family links logins with:
// the Tradovate fake (tradovatefake) over a simulator of its own, on a
// clock standing at SimStart (the market open), with its OAuth client.
type Tradovate struct {
	Fake   *tradovatefake.Server
	Market *sim.Platform
	Clock  *sim.ManualClock
}

// StartTradovate starts the fake for t; it stops at t's cleanup.
func StartTradovate(t testing.TB) *Tradovate {
	t.Helper()
	clock := sim.NewManualClock(SimStart)
	market, err := sim.New(sim.Options{Seed: 1, Clock: clock})
	require.NoError(t, err)
	t.Cleanup(func() { market.Close() })
	fake, err := tradovatefake.Start(tradovatefake.Options{Market: market})
	require.NoError(t, err)
	t.Cleanup(func() { fake.Close() })
	return &Tradovate{Fake: fake, Market: market, Clock: clock}
}

// Configure points the relay's broker family at the fake, on its clock,
// with the fake's OAuth client whose redirect address is callback (the
// relay's OAuth callback, an absolute URL).
func (tv *Tradovate) Configure(o *relay.Options, callback string) {
	o.Broker.Endpoints = tv.Fake.Endpoints()
	o.Broker.Now = tv.Clock.Now
	o.Broker.Ops.Now = tv.Clock.Now
	o.Broker.EngineTick = 10 * time.Millisecond
	o.Broker.OAuth = tradovate.OAuthClient{ID: tradovatefake.DefaultOAuthClientID, Secret: tradovatefake.DefaultOAuthClientSecret,
		RedirectURL: callback}
}

// NewSystem is NewWith with the relay's broker family linking logins
// with tv (Configure), its OAuth callback the relay's own address: a
// browser that starts an OAuth link comes back to this relay.
func (tv *Tradovate) NewSystem(t testing.TB, tweak func(*relay.Options)) *System {
	t.Helper()
	var s *System
	s = prepare(t, func(o *relay.Options) {
		tv.Configure(o, s.Base+broker.OAuthCallbackPath) // Base is set before each start
		if tweak != nil {
			tweak(o)
		}
	})
	s.Start()
	return s
}
