package broker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/broker"
	"tradebridge/relay/events"
	"tradebridge/relay/events/eventstest"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/bridge/tradovate/tradovatefake"
)

// A Tradovate login without the market-data entitlement: the broker
// refuses the quotes of the open position. The link's status names the
// instrument, the account's unrealized P&L is unknown (not 0), and the
// loss monitor counting it neither trips nor passes for safe: it reports
// itself blind to the relay and the activity log.
func TestMonitorBlindWithoutMarketData(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	market, err := sim.New(sim.Options{Clock: f.markets.clock})
	require.NoError(t, err)
	t.Cleanup(func() { market.Close() })
	require.NoError(t, market.SetPrice("ES 12-26", 6000))
	fake, err := tradovatefake.Start(tradovatefake.Options{Market: market})
	require.NoError(t, err)
	t.Cleanup(func() { fake.Close() })
	fake.RefuseQuotes("Market data subscription is required")

	mon := protocol.Monitor{Account: "Sim101", Active: true, State: protocol.MonitorActive, OnTrip: protocol.OnTripFlatten,
		IncludeUnrealized: true, LossLimit: protocol.Limit{Enabled: true, Amount: 300},
		MasterWindow: protocol.Window{Days: []string{}}, TradingWindows: []protocol.MonitorWindow{}}
	f.configs.set("alice", protocol.Config{Version: 1, Monitors: []protocol.Monitor{mon}})
	var log eventstest.Collector
	m, err := broker.New(broker.Options{Store: f.store, Keys: f.keys, Events: &log, Endpoints: fake.Endpoints(),
		Config: f.configs.get, Now: f.markets.clock.Now, EngineTick: 10 * time.Millisecond, ReadyTimeout: time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	_, err = m.Link(context.Background(), "alice", broker.EnvDemo, broker.MethodAPIKey, broker.Secrets{
		Username: tradovatefake.DefaultName, Password: tradovatefake.DefaultPassword, AppID: tradovatefake.DefaultAppID,
		AppVersion: "1.0", CID: tradovatefake.DefaultCID, Sec: tradovatefake.DefaultSec})
	require.NoError(t, err)

	_, err = call(t, m, "alice", protocol.FnPlaceOrder, "req-md", map[string]any{"account": "Sim101", "action": "Buy",
		"instrument": "ES 12-26", "orderType": "Market", "quantity": 1, "timeInForce": "Day"})
	require.NoError(t, err)
	require.NoError(t, market.SetPrice("ES 12-26", 5990)) // a loss past the limit, which nobody can price
	require.NoError(t, market.Step(context.Background()))

	require.Eventually(t, func() bool {
		st, err := m.Status(context.Background(), "alice")
		return err == nil && len(st.MarketDataRefused) == 1 && st.MarketDataRefused[0] == "ES 12-26"
	}, waitFor, 10*time.Millisecond, "the link's status names the refused instrument")
	require.Eventually(t, func() bool { return len(log.Entries(protocol.ActivityBrokerMarketDataRefused)) == 1 },
		waitFor, 10*time.Millisecond, "the refusal is in the activity log")
	refused := log.Entries(protocol.ActivityBrokerMarketDataRefused)[0]
	require.Equal(t, protocol.ActivitySource{Kind: protocol.SourceBroker}, refused.Source)
	require.Equal(t, map[string]any{"instrument": "ES 12-26", "env": "demo", "reason": "refused"},
		eventstest.Detail(t, refused))
	require.Contains(t, refused.Summary, "real-time market-data subscription")
	raw, err := call(t, m, "alice", protocol.FnGetAccount, "", map[string]any{"account": "Sim101"})
	require.NoError(t, err)
	var acct protocol.Account
	require.NoError(t, json.Unmarshal(raw, &acct))
	require.True(t, acct.Item.UnrealizedUnknown, "unknown, not 0")

	var blind protocol.MonitorState
	var entry protocol.ActivityEntry
	require.Eventually(t, func() bool {
		// Time passes, past the grace of a new position's first quote
		// however late the engine saw the price go unknown.
		f.markets.clock.Advance(5 * time.Second)
		for _, e := range log.All() {
			if e.Type != events.TypeBroker || e.UserID != "alice" {
				continue
			}
			switch e.Agent.Kind {
			case protocol.EventMonitorState:
				_ = json.Unmarshal(e.Agent.Data, &blind) // no require: Eventually's condition runs apart
			case protocol.EventActivity:
				var a protocol.ActivityEntry
				if json.Unmarshal(e.Agent.Data, &a) == nil && a.Kind == protocol.ActivityMonitorBlind {
					entry = a
				}
			}
		}
		return blind.Blind && entry.Kind != ""
	}, waitFor, 10*time.Millisecond, "the monitor reports itself blind")
	require.Equal(t, protocol.MonitorActive, blind.State, "blind, not stopped on a made-up figure")
	require.Equal(t, "Sim101", entry.Account)
	require.Contains(t, entry.Summary, "blind")

	raw, err = call(t, m, "alice", protocol.FnListPositions, "", map[string]any{"account": "Sim101"})
	require.NoError(t, err)
	var ps []protocol.Position
	require.NoError(t, json.Unmarshal(raw, &ps))
	require.Len(t, ps, 1, "nothing flattened")
	require.True(t, ps[0].UnrealizedUnknown)
}
