package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/broker"
	"tradebridge/relay/errcode"
	"tradebridge/relay/events"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/sealed"
	"tradebridge/relay/store"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/bridgetest"
	"tradebridge/trading/bridge/sim"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitFor bounds the waits of these tests.
const waitFor = testkit.Long

// simMarkets hands each user's link the same simulated market: the
// platform of a link is the simulator itself, so the manager's wiring
// (dispatcher, operations, engines, store) is tested apart from the
// Tradovate platform (tested over its fake in package tradovate).
type simMarkets struct {
	mu      sync.Mutex
	clock   *sim.ManualClock
	markets map[string]*sim.Platform
	built   int
}

func (s *simMarkets) newPlatform(_ context.Context, c broker.PlatformConfig) (broker.Platform, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.built++
	if p := s.markets[c.Link.UserID]; p != nil {
		return unclosable{p}, nil
	}
	p, err := sim.New(sim.Options{Clock: s.clock})
	if err != nil {
		return nil, err
	}
	s.markets[c.Link.UserID] = p
	return unclosable{p}, nil
}

// unclosable keeps the simulator open when a manager closes its
// platform, so that a second manager (a relay restart) sees the same
// market.
type unclosable struct{ *sim.Platform }

func (unclosable) Close() error { return nil }

type fixture struct {
	store   *store.SQLite
	keys    *sealed.Keyring
	markets *simMarkets
	configs *configs
}

type configs struct {
	mu      sync.Mutex
	cfg     map[string]protocol.Config
	reports chan string
}

func (c *configs) get(_ context.Context, userID string) (protocol.Config, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cfg[userID], nil
}

func (c *configs) set(userID string, cfg protocol.Config) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cfg[userID] = cfg
}

// Publish takes the engines' reports (the links' activity log entries
// are activity_test.go's).
func (c *configs) Publish(e events.Event) {
	if e.Type != events.TypeBroker {
		return
	}
	select {
	case c.reports <- e.Agent.Kind + " " + string(e.Agent.Data):
	default:
	}
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	keys, err := sealed.Generate("test")
	require.NoError(t, err)
	for _, u := range []string{"alice", "bob"} {
		require.NoError(t, st.CreateUser(context.Background(), store.User{ID: u, Name: u, Plan: "pro", CreatedAt: time.Now()}))
	}
	f := &fixture{store: st, keys: keys,
		markets: &simMarkets{clock: sim.NewManualClock(bridgetest.Start), markets: map[string]*sim.Platform{}},
		configs: &configs{cfg: map[string]protocol.Config{}, reports: make(chan string, 64)}}
	t.Cleanup(func() {
		for _, p := range f.markets.markets {
			_ = p.Close()
		}
	})
	return f
}

func (f *fixture) manager(t *testing.T) *broker.Manager {
	t.Helper()
	m, err := broker.New(broker.Options{Store: f.store, Keys: f.keys, NewPlatform: f.markets.newPlatform,
		Config: f.configs.get, Events: f.configs, Now: f.markets.clock.Now, EngineTick: 10 * time.Millisecond,
		Login: func(context.Context, string, broker.Secrets) (broker.Session, error) {
			return broker.Session{AccessToken: "tok", Expires: time.Now().Add(time.Hour)}, nil
		}})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

func apiKey() broker.Secrets {
	return broker.Secrets{Username: "trader", Password: "pw", AppID: "app", AppVersion: "1.0", CID: 7, Sec: "sec"}
}

func call(t *testing.T, m *broker.Manager, user, fn, requestID string, args any) (json.RawMessage, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	return m.Call(ctx, user, fn, requestID, raw)
}

func TestCallWithoutLinkIsNotLinked(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := f.manager(t)
	_, err := call(t, m, "alice", protocol.FnListAccounts, "", nil)
	var he *httpapi.Error
	require.ErrorAs(t, err, &he)
	require.Equal(t, http.StatusConflict, he.Status)
	require.Equal(t, errcode.TradovateNotLinked, he.Code)
	linked, accounts, err := m.Linked(context.Background(), "alice")
	require.NoError(t, err)
	require.False(t, linked)
	require.Empty(t, accounts)
}

func TestLinkedLoginTradesThroughTheOperations(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := f.manager(t)
	_, err := m.Link(context.Background(), "alice", broker.EnvDemo, broker.MethodAPIKey, apiKey())
	require.NoError(t, err)

	raw, err := call(t, m, "alice", protocol.FnPlaceOrder, "req-1", map[string]any{"account": "Sim101", "action": "Buy",
		"instrument": "ES 12-26", "orderType": "Market", "quantity": 2, "timeInForce": "Day", "strategyTag": "bot-a"})
	require.NoError(t, err)
	var placed protocol.Order
	require.NoError(t, json.Unmarshal(raw, &placed))

	// The same request id answers the first outcome and places nothing.
	again, err := call(t, m, "alice", protocol.FnPlaceOrder, "req-1", map[string]any{"account": "Sim101", "action": "Buy",
		"instrument": "ES 12-26", "orderType": "Market", "quantity": 2, "timeInForce": "Day", "strategyTag": "bot-a"})
	require.NoError(t, err)
	require.JSONEq(t, string(raw), string(again))
	require.Equal(t, 2, position(t, f, "alice"))

	// An account the login does not carry.
	_, err = call(t, m, "alice", protocol.FnGetAccount, "", map[string]any{"account": "Nope"})
	var he *httpapi.Error
	require.ErrorAs(t, err, &he)
	require.Equal(t, errcode.AccountIdentityUnresolved, he.Code)
	require.Equal(t, http.StatusConflict, he.Status)

	// The accounts are kept for the Management API.
	require.Eventually(t, func() bool {
		linked, accounts, err := m.Linked(context.Background(), "alice")
		return err == nil && linked && len(accounts) > 0
	}, waitFor, 10*time.Millisecond)
}

func position(t *testing.T, f *fixture, user string) int {
	t.Helper()
	f.markets.mu.Lock()
	p := f.markets.markets[user]
	f.markets.mu.Unlock()
	ps, err := p.Positions(context.Background(), "Sim101")
	if !assert.NoError(t, err) { // no require: Eventually's conditions call it
		return math.MinInt
	}
	n := 0
	for _, x := range ps {
		if x.Instrument == "ES 12-26" {
			n = x.Quantity
			if x.MarketPosition == protocol.MarketPositionShort {
				n = -n
			}
		}
	}
	return n
}

func TestWriteOutcomesAndTagsSurviveARestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m1 := f.manager(t)
	_, err := m1.Link(context.Background(), "alice", broker.EnvDemo, broker.MethodAPIKey, apiKey())
	require.NoError(t, err)
	args := map[string]any{"account": "Sim101", "action": "Buy", "instrument": "ES 12-26", "orderType": "Market",
		"quantity": 1, "timeInForce": "Day", "strategyTag": "bot-a"}
	first, err := call(t, m1, "alice", protocol.FnPlaceOrder, "req-restart", args)
	require.NoError(t, err)
	require.NoError(t, m1.Close())

	// A new manager over the same store: the journal answers the repeat.
	m2 := f.manager(t)
	again, err := call(t, m2, "alice", protocol.FnPlaceOrder, "req-restart", args)
	require.NoError(t, err)
	require.JSONEq(t, string(first), string(again))
	require.Equal(t, 1, position(t, f, "alice"), "the repeat placed nothing")

	// The tag's ownership was kept: another tag may not close bot-a's share.
	_, err = call(t, m2, "alice", protocol.FnClosePosition, "req-close", map[string]any{"account": "Sim101",
		"instrument": "ES 12-26", "strategyTag": "bot-b"})
	var pe *protocol.Error
	require.ErrorAs(t, err, &pe)
	require.NotEqual(t, "", pe.Code)
	require.Equal(t, 1, position(t, f, "alice"))
}

func TestKillSwitchFlattensTheBrokerAccounts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := f.manager(t)
	_, err := m.Link(context.Background(), "alice", broker.EnvDemo, broker.MethodAPIKey, apiKey())
	require.NoError(t, err)
	_, err = call(t, m, "alice", protocol.FnPlaceOrder, "req-k1", map[string]any{"account": "Sim101", "action": "Buy",
		"instrument": "ES 12-26", "orderType": "Market", "quantity": 3, "timeInForce": "Day"})
	require.NoError(t, err)
	require.Equal(t, 3, position(t, f, "alice"))

	f.configs.set("alice", protocol.Config{Controls: protocol.Controls{KillSwitch: true, FlattenOnKill: true}})
	m.ConfigChanged("alice")
	require.Eventually(t, func() bool { return position(t, f, "alice") == 0 }, waitFor, 10*time.Millisecond)
	// The engines' activity report is published as an agent's would be.
	var entry protocol.ActivityEntry
	deadline := time.After(waitFor)
	for entry.Kind == "" {
		select {
		case r := <-f.configs.reports:
			if raw, ok := strings.CutPrefix(r, protocol.EventActivity+" "); ok {
				require.NoError(t, json.Unmarshal([]byte(raw), &entry))
			}
		case <-deadline:
			t.Fatal("no activity report published")
		}
	}
	require.Equal(t, protocol.ActivityKillSwitchChanged, entry.Kind)
	require.Len(t, entry.ID, 32)
	require.Contains(t, string(entry.Detail), `"enabled":true`)

	// New entries are refused while the kill switch is on.
	_, err = call(t, m, "alice", protocol.FnPlaceOrder, "req-k2", map[string]any{"account": "Sim101", "action": "Buy",
		"instrument": "ES 12-26", "orderType": "Market", "quantity": 1, "timeInForce": "Day"})
	var pe *protocol.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, protocol.CodeTradingBlocked, pe.Code)
}

func TestUnlinkStopsAndForgets(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := f.manager(t)
	_, err := m.Link(context.Background(), "bob", broker.EnvLive, broker.MethodAPIKey, apiKey())
	require.NoError(t, err)
	_, err = call(t, m, "bob", protocol.FnListAccounts, "", nil)
	require.NoError(t, err)
	had, err := m.Unlink(context.Background(), "bob", protocol.ActivitySource{Kind: protocol.SourceAPI})
	require.NoError(t, err)
	require.True(t, had)
	_, err = call(t, m, "bob", protocol.FnListAccounts, "", nil)
	var he *httpapi.Error
	require.ErrorAs(t, err, &he)
	require.Equal(t, errcode.TradovateNotLinked, he.Code)
	st, err := m.Status(context.Background(), "bob")
	require.NoError(t, err)
	require.False(t, st.Linked)
}

func TestRunStartsTheStoredLinks(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m1 := f.manager(t)
	_, err := m1.Link(context.Background(), "alice", broker.EnvDemo, broker.MethodAPIKey, apiKey())
	require.NoError(t, err)
	require.NoError(t, m1.Close())
	f.markets.mu.Lock()
	before := f.markets.built
	f.markets.mu.Unlock()

	m2 := f.manager(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m2.Run(ctx) }()
	require.Eventually(t, func() bool {
		f.markets.mu.Lock()
		defer f.markets.mu.Unlock()
		return f.markets.built > before
	}, waitFor, 10*time.Millisecond, "Run starts the link without any call")
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(waitFor):
		t.Fatal("Run did not return")
	}
}

var _ = errors.Is
var _ bridge.Platform = unclosable{}

// The news lockout runs on broker accounts: inside an event's window with
// action flatten, the broker account is flattened and new entries are
// refused.
func TestNewsLockoutOnBrokerAccounts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := f.manager(t)
	_, err := m.Link(context.Background(), "alice", broker.EnvDemo, broker.MethodAPIKey, apiKey())
	require.NoError(t, err)
	_, err = call(t, m, "alice", protocol.FnPlaceOrder, "req-n1", map[string]any{"account": "Sim101", "action": "Buy",
		"instrument": "ES 12-26", "orderType": "Market", "quantity": 2, "timeInForce": "Day"})
	require.NoError(t, err)
	require.Equal(t, 2, position(t, f, "alice"))

	f.configs.set("alice", protocol.Config{NewsLockout: protocol.NewsLockout{Enabled: true, MinutesBefore: 5, MinutesAfter: 5,
		Action: protocol.NewsFlatten, Events: []protocol.NewsEvent{{At: f.markets.clock.Now().Add(2 * time.Minute), Title: "CPI", Impact: "high"}}}})
	m.ConfigChanged("alice")
	require.Eventually(t, func() bool { return position(t, f, "alice") == 0 }, waitFor, 10*time.Millisecond)
	_, err = call(t, m, "alice", protocol.FnPlaceOrder, "req-n2", map[string]any{"account": "Sim101", "action": "Buy",
		"instrument": "ES 12-26", "orderType": "Market", "quantity": 1, "timeInForce": "Day"})
	var pe *protocol.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, protocol.CodeTradingBlocked, pe.Code)
}

// A call of the broker family bypasses the monitor's trading windows when
// its context's protocol.CallOptions ask it to, and an entry placed with
// exits gets them from the broker family's exits engine.
func TestBypassWindowsAndExitsOnBrokerAccounts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := f.manager(t)
	_, err := m.Link(context.Background(), "alice", broker.EnvDemo, broker.MethodAPIKey, apiKey())
	require.NoError(t, err)
	// 10:30 in New York, outside a master window of 14:00–16:00.
	f.configs.set("alice", protocol.Config{Version: 1, Monitors: []protocol.Monitor{{Account: "Sim101", Active: true,
		State: protocol.MonitorActive, OnTrip: protocol.OnTripNone,
		MasterWindow:   protocol.Window{Days: []string{"mon", "tue", "wed", "thu", "fri"}, Start: "14:00", End: "16:00"},
		TradingWindows: []protocol.MonitorWindow{}}}})
	m.ConfigChanged("alice")
	limit := map[string]any{"account": "Sim101", "action": "Buy", "instrument": "ES 12-26", "orderType": "Limit",
		"limitPrice": 5000, "quantity": 1, "timeInForce": "Day"}
	require.Eventually(t, func() bool {
		_, err := call(t, m, "alice", protocol.FnPlaceOrder, "", limit)
		var pe *protocol.Error
		return errors.As(err, &pe) && pe.Code == protocol.CodeTradingBlocked
	}, waitFor, 10*time.Millisecond, "the monitor refuses entries outside its window")

	args, err := json.Marshal(map[string]any{"account": "Sim101", "action": "Buy", "instrument": "ES 12-26",
		"orderType": "Market", "quantity": 2, "timeInForce": "Day",
		"exits": map[string]any{"stopLoss": map[string]any{"offset": map[string]any{"unit": "ticks", "value": 8}},
			"takeProfit": map[string]any{"offset": map[string]any{"unit": "points", "value": 4}}}})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(protocol.WithCallOptions(context.Background(), protocol.CallOptions{BypassWindows: true}), waitFor)
	defer cancel()
	raw, err := m.Call(ctx, "alice", protocol.FnPlaceOrder, "req-bypass", args)
	require.NoError(t, err, "bypassing the windows")
	var placed protocol.PlaceResult
	require.NoError(t, json.Unmarshal(raw, &placed))
	require.Equal(t, 2, position(t, f, "alice"))

	var entry protocol.ActivityEntry
	deadline := time.After(waitFor)
	for entry.Kind != protocol.ActivityExitsPlaced {
		select {
		case r := <-f.configs.reports:
			if raw, ok := strings.CutPrefix(r, protocol.EventActivity+" "); ok {
				require.NoError(t, json.Unmarshal([]byte(raw), &entry))
			}
		case <-deadline:
			t.Fatal("no exits.placed report published")
		}
	}
	var d struct {
		EntryOrderID string   `json:"entryOrderId"`
		OrderIDs     []string `json:"orderIds"`
		Quantity     int      `json:"quantity"`
	}
	require.NoError(t, json.Unmarshal(entry.Detail, &d))
	require.Equal(t, placed.OrderID, d.EntryOrderID)
	require.Len(t, d.OrderIDs, 2)
	require.Equal(t, 2, d.Quantity)
}

// The broker family's monitors run the agent's monitor engine, rules and
// all: a broker account's minimum-profit drawdown arms when the session
// high reaches its trigger, trips at its floor (flattening, reporting the
// stop with its reason), and the restart check judges it against the same
// high.
func TestMonitorMinimumProfitDrawdownOnBrokerAccounts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := f.manager(t)
	_, err := m.Link(context.Background(), "alice", broker.EnvDemo, broker.MethodAPIKey, apiKey())
	require.NoError(t, err)
	f.markets.mu.Lock()
	market := f.markets.markets["alice"]
	f.markets.mu.Unlock()
	move := func(last float64) {
		t.Helper()
		require.NoError(t, market.SetPrice("ES 12-26", last))
		require.NoError(t, market.Step(context.Background()))
	}
	move(6000)

	mon := protocol.Monitor{Account: "Sim101", Active: true, State: protocol.MonitorActive, OnTrip: protocol.OnTripFlatten,
		IncludeUnrealized: true, MinimumProfitDrawdown: protocol.ProfitFloor{Enabled: true, Trigger: 1500, Floor: 500},
		MasterWindow: protocol.Window{Days: []string{}}, TradingWindows: []protocol.MonitorWindow{}}
	f.configs.set("alice", protocol.Config{Version: 1, Monitors: []protocol.Monitor{mon}})
	m.ConfigChanged("alice")
	_, err = call(t, m, "alice", protocol.FnPlaceOrder, "req-mpd", map[string]any{"account": "Sim101", "action": "Buy",
		"instrument": "ES 12-26", "orderType": "Market", "quantity": 2, "timeInForce": "Day"})
	require.NoError(t, err, "the monitor runs and lets entries through")
	require.Equal(t, 2, position(t, f, "alice"))

	move(6020) // about +1950 open: armed
	// The engine follows the account's events as they come: it must have
	// seen the high before the price falls back.
	require.Eventually(t, func() bool {
		st := m.MonitorStatus("alice")
		return len(st) == 1 && st[0].SessionHigh >= 1500
	}, waitFor, time.Millisecond, "the monitor saw the high")
	move(6010) // about +950: above the floor
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	v, err := m.CheckMonitorRestart(ctx, "alice", mon)
	require.NoError(t, err)
	require.Equal(t, protocol.RestartVerdict{}, v, "above the floor nothing trips")
	require.Equal(t, 2, position(t, f, "alice"))

	move(6005) // about +450: at or below the floor
	require.Eventually(t, func() bool { return position(t, f, "alice") == 0 }, waitFor, 10*time.Millisecond,
		"the trip flattens the broker account")
	var state protocol.MonitorState
	deadline := time.After(waitFor)
	for state.State == "" {
		select {
		case r := <-f.configs.reports:
			if raw, ok := strings.CutPrefix(r, protocol.EventMonitorState+" "); ok {
				require.NoError(t, json.Unmarshal([]byte(raw), &state))
			}
		case <-deadline:
			t.Fatal("no monitor state report published")
		}
	}
	require.Equal(t, protocol.MonitorState{Account: "Sim101", State: protocol.MonitorStopped, Reason: "minimumProfitDrawdown",
		At: state.At}, state)

	// The restart check: the high stays, so the floor stays armed.
	v, err = m.CheckMonitorRestart(ctx, "alice", mon)
	require.NoError(t, err)
	require.Equal(t, protocol.RestartVerdict{WouldRetrip: true, Reason: "minimumProfitDrawdown"}, v)
	lower := mon
	lower.MinimumProfitDrawdown.Floor = 100
	v, err = m.CheckMonitorRestart(ctx, "alice", lower)
	require.NoError(t, err)
	require.Equal(t, protocol.RestartVerdict{}, v, "a floor below the P&L lets the monitor restart")
}
