package agent

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/ops"
)

// testStart is a Wednesday at 10:00 New York time: the market is open.
var testStart = time.Date(2026, 11, 18, 15, 0, 0, 0, time.UTC)

// newTestAgent builds an agent over a fresh simulator on a manual clock,
// with state st (nil: a new memory state). It is not run.
func newTestAgent(t *testing.T, st State) (*Agent, *sim.Platform) {
	t.Helper()
	clock := sim.NewManualClock(testStart)
	p, err := sim.New(sim.Options{Clock: clock})
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	if st == nil {
		st = newMemState()
	}
	a, err := New(Options{RelayURL: "http://127.0.0.1:1", Token: "t", Platform: p, State: st, Ops: ops.Options{Now: clock.Now}})
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	return a, p
}

func call(a *Agent, fn, args string) (json.RawMessage, *protocol.Error) {
	return a.stack.Dispatcher.Handle(context.Background(), &protocol.Request{Fn: fn, Args: json.RawMessage(args)})
}

// Every function of the protocol, public and internal, is registered.
func TestEveryFunctionRegistered(t *testing.T) {
	t.Parallel()
	a, _ := newTestAgent(t, nil)
	for _, f := range append(protocol.Functions, protocol.InternalFunctions...) {
		require.Contains(t, a.stack.Dispatcher.Functions(), f.Name)
	}
}

// ApplyConfig applies a newer configuration whole and saves it first: an
// agent built over the same state runs it before the relay is reached.
func TestApplyConfig(t *testing.T) {
	t.Parallel()
	st := newMemState()
	a, _ := newTestAgent(t, st)
	for _, step := range []struct {
		name, args string
		want       string
		code       string
	}{
		{"the first push", `{"version":3,"copiers":[{"id":"c1","active":false,"leader":"Sim101"}],"controls":{"blockAllSignals":true}}`, `{"version":3}`, ""},
		{"a repeat", `{"version":3,"copiers":[]}`, `{"version":3}`, ""},
		{"a late push answers the newer version", `{"version":2,"copiers":[]}`, `{"version":3}`, ""},
		{"unknown fields are ignored", `{"version":4,"copiers":[{"id":"c2","active":false,"leader":"Sim101"}],"fromTheFuture":1}`, `{"version":4}`, ""},
		{"no version", `{"copiers":[]}`, "", protocol.CodeInvalidArgument},
		{"a version of the wrong type", `{"version":"5"}`, "", protocol.CodeInvalidArgument},
		{"not an object", `[5]`, "", protocol.CodeInvalidArgument},
	} {
		res, perr := call(a, protocol.FnApplyConfig, step.args)
		if step.code != "" {
			require.NotNil(t, perr, step.name)
			require.Equal(t, step.code, perr.Code, step.name)
			continue
		}
		require.Nil(t, perr, step.name)
		require.JSONEq(t, step.want, string(res), step.name)
	}
	cur := a.Config().Current()
	require.Equal(t, int64(4), cur.Version)
	require.Len(t, cur.Copiers, 1)
	require.Equal(t, "c2", cur.Copiers[0].ID)
	require.False(t, cur.Controls.BlockAllSignals, "the whole configuration was replaced")

	again, _ := newTestAgent(t, st)
	require.Equal(t, int64(4), again.Config().Version(), "the saved configuration runs after a restart")
}

// The restart check is the monitor engine's, and places nothing.
func TestCheckMonitorRestartDispatch(t *testing.T) {
	t.Parallel()
	a, _ := newTestAgent(t, nil)
	for _, tc := range []struct {
		name, args string
		want       string
		code       string
	}{
		{"nothing reached", `{"monitor":{"account":"Sim101","active":true,"lossLimit":{"enabled":true,"amount":150},"masterWindow":{"days":[]}}}`,
			`{"wouldRetrip":false}`, ""},
		{"a profit target already reached", `{"monitor":{"account":"Sim101","active":true,"profitTarget":{"enabled":true,"amount":0},"masterWindow":{"days":[]}}}`,
			`{"wouldRetrip":true,"reason":"profitTarget"}`, ""},
		{"an unknown account", `{"monitor":{"account":"A9","lossLimit":{"enabled":true,"amount":1}}}`, "", protocol.CodeAccountNotFound},
		{"no account", `{"monitor":{}}`, "", protocol.CodeMissingFields},
		{"a limit of the wrong type", `{"monitor":{"account":"Sim101","lossLimit":{"enabled":"yes"}}}`, "", protocol.CodeInvalidArgument},
	} {
		res, perr := call(a, protocol.FnCheckMonitorRestart, tc.args)
		if tc.code != "" {
			require.NotNil(t, perr, tc.name)
			require.Equal(t, tc.code, perr.Code, tc.name)
			continue
		}
		require.Nil(t, perr, tc.name)
		require.JSONEq(t, tc.want, string(res), tc.name)
	}
}

// EngineStatus reports the configuration's version and the engines.
func TestEngineStatus(t *testing.T) {
	t.Parallel()
	a, _ := newTestAgent(t, nil)
	_, perr := call(a, protocol.FnApplyConfig, `{"version":2,"controls":{"killSwitch":true}}`)
	require.Nil(t, perr)
	res, perr := call(a, protocol.FnEngineStatus, ``)
	require.Nil(t, perr)
	var st protocol.EngineStatus
	require.NoError(t, json.Unmarshal(res, &st))
	require.Equal(t, int64(2), st.ConfigVersion)
	require.True(t, st.Controls.KillSwitch)
	require.NotNil(t, st.Copiers)
	require.NotNil(t, st.Monitors)
}

// The gate refuses an order that opens while the kill switch is on, with
// the rule named, and lets one that reduces through.
func TestGateThroughTheDispatcher(t *testing.T) {
	t.Parallel()
	a, _ := newTestAgent(t, nil)
	place := func(action string, qty int) (json.RawMessage, *protocol.Error) {
		b, _ := json.Marshal(map[string]any{"account": "Sim101", "action": action, "instrument": "ES 12-26",
			"orderType": "Market", "quantity": qty, "timeInForce": "Day"})
		return call(a, protocol.FnPlaceOrder, string(b))
	}
	_, perr := place("Buy", 2)
	require.Nil(t, perr)
	_, perr = call(a, protocol.FnApplyConfig, `{"version":1,"controls":{"killSwitch":true}}`)
	require.Nil(t, perr)
	_, perr = place("Buy", 1)
	require.NotNil(t, perr)
	require.Equal(t, protocol.CodeTradingBlocked, perr.Code)
	require.Contains(t, perr.Detail, "(rule: killSwitch)")
	_, perr = place("Sell", 3)
	require.NotNil(t, perr, "selling through the position opens a short")
	_, perr = place("Sell", 1)
	require.Nil(t, perr, "reducing passes")
}

// A configuration that turns the kill switch on with flattenOnKill is
// flattened before ApplyConfig answers (the agent is not even running its
// engines here); one that only keeps it on does not flatten again.
func TestApplyConfigFlattensBeforeAnswering(t *testing.T) {
	t.Parallel()
	a, p := newTestAgent(t, nil)
	place := func(account string) {
		b, _ := json.Marshal(map[string]any{"account": account, "action": "Buy", "instrument": "ES 12-26",
			"orderType": "Market", "quantity": 2, "timeInForce": "Day"})
		_, perr := call(a, protocol.FnPlaceOrder, string(b))
		require.Nil(t, perr)
	}
	place("Sim101")
	place("Sim102")
	_, perr := call(a, protocol.FnApplyConfig, `{"version":1,"controls":{"killSwitch":true,"flattenOnKill":true}}`)
	require.Nil(t, perr)
	for _, account := range []string{"Sim101", "Sim102"} {
		ps, err := p.Positions(t.Context(), account)
		require.NoError(t, err)
		require.Empty(t, ps, account)
	}

	// A later configuration that keeps the switch on does not flatten: a
	// position taken by hand meanwhile stays.
	_, err := p.SubmitOrder(t.Context(), bridge.OrderRequest{Account: "Sim101", Instrument: "ES 12-26", Action: "Buy",
		OrderType: "Market", Quantity: 1, TimeInForce: "Day"})
	require.NoError(t, err)
	_, perr = call(a, protocol.FnApplyConfig, `{"version":2,"controls":{"killSwitch":true,"flattenOnKill":true}}`)
	require.Nil(t, perr)
	ps, err := p.Positions(t.Context(), "Sim101")
	require.NoError(t, err)
	require.Len(t, ps, 1)
}

// Close stops everything Run started (the platform's loop, the event
// forwarding, the engines, the reports, the tunnel's redials) and waits
// for it: nothing the agent started outlives Close.
func TestCloseWaitsForEverything(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	clock := sim.NewManualClock(testStart)
	p, err := sim.New(sim.Options{Clock: clock})
	require.NoError(t, err)
	defer p.Close()
	a, err := New(Options{RelayURL: "http://127.0.0.1:1", Token: "t", Platform: p, Ops: ops.Options{Now: clock.Now},
		EngineTick: time.Millisecond})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- a.Run(context.Background()) }()
	_, perr := call(a, protocol.FnApplyConfig, `{"version":1,"monitors":[{"account":"Sim101","active":true,"state":"active","masterWindow":{"days":[]}}]}`)
	require.Nil(t, perr)
	require.Eventually(t, func() bool { return len(a.stack.Monitors.Status()) == 1 }, testkit.Medium, time.Millisecond)
	require.NoError(t, a.Close())
	select {
	case <-done:
	default:
		t.Fatal("Run still running after Close returned")
	}
	require.NoError(t, a.Close(), "Close is idempotent")
}
