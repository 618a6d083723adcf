package relay_test

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"tradebridge/agent"
	"tradebridge/agent/tunnel"
	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/auth"
	"tradebridge/relay/hub"
	"tradebridge/relay/store"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/ops"
)

// rpcStart is a Monday in October 2026, 10:30 in New York: the market is
// open and ES 12-26 is the front month.
var rpcStart = time.Date(2026, time.October, 5, 14, 30, 0, 0, time.UTC)

// rpcRig is a real relay on a loopback port and a real agent on a
// simulator with a manual clock, holding the relay so that tests can call
// its hub directly (most trading routes are not HTTP routes yet).
type rpcRig struct {
	t     testing.TB
	st    *store.SQLite
	user  auth.Credentials
	addr  string
	relay *relay.Relay
	stop  func()

	clock *sim.ManualClock
	sim   *sim.Platform
	agent *agent.Agent
	done  chan struct{}
	seq   atomic.Int64 // request ids of writes
}

// newRPCRig starts the relay and an agent whose platform is wrap(sim)
// (the simulator itself when wrap is nil).
func newRPCRig(t testing.TB, wrap func(*sim.Platform) bridge.Platform) *rpcRig {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	user, err := auth.CreateUser(context.Background(), st, "dana", auth.PlanPro, time.Now())
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r := &rpcRig{t: t, st: st, user: user, addr: ln.Addr().String()}
	r.serve(ln)

	r.clock = sim.NewManualClock(rpcStart)
	r.sim, err = sim.New(sim.Options{Clock: r.clock})
	require.NoError(t, err)
	require.NoError(t, r.sim.SetPrice("ES 12-26", 6000))
	var p bridge.Platform = r.sim
	if wrap != nil {
		p = wrap(r.sim)
	}
	r.agent, err = agent.New(agent.Options{
		RelayURL: "http://" + r.addr, Token: user.AgentToken, Platform: p, Logger: zap.NewNop(),
		Tunnel: tunnel.Options{BackoffBase: 20 * time.Millisecond, BackoffCap: 200 * time.Millisecond},
		// The operations' waits return at once: no test sleeps.
		Ops: ops.Options{Now: r.clock.Now, Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }},
	})
	require.NoError(t, err)
	r.done = make(chan struct{})
	go func() {
		defer close(r.done)
		_ = r.agent.Run(context.Background())
	}()
	t.Cleanup(func() {
		r.agent.Close()
		<-r.done
		r.stop()
		r.sim.Close()
		st.Close()
	})
	r.waitConnected()
	return r
}

func (r *rpcRig) serve(ln net.Listener) {
	rl, err := relay.New(relay.Options{Store: r.st, Logger: zap.NewNop()})
	require.NoError(r.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rl.Serve(ctx, ln) }()
	r.relay = rl
	r.stop = func() {
		cancel()
		require.NoError(r.t, <-done)
	}
}

// restart stops the relay, which ends the tunnel, and starts a new one on
// the same address. The agent, and its dispatcher, live on.
func (r *rpcRig) restart() {
	r.stop()
	var ln net.Listener
	require.Eventually(r.t, func() bool {
		var err error
		ln, err = net.Listen("tcp", r.addr)
		return err == nil
	}, testkit.Medium, 5*time.Millisecond)
	r.serve(ln)
}

func (r *rpcRig) hub() *hub.Hub { return r.relay.Hub() }

func (r *rpcRig) waitConnected() {
	require.Eventually(r.t, func() bool { return r.hub().Connected(r.user.UserID) }, testkit.Long, 5*time.Millisecond)
}

// call runs fn through the relay's hub and returns the raw result.
func (r *rpcRig) call(fn, requestID string, args any) (json.RawMessage, error) {
	r.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil { // no require: goroutines call it
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Long)
	defer cancel()
	return r.hub().Call(ctx, r.user.UserID, fn, requestID, raw)
}

// must runs fn and decodes its result into out.
func (r *rpcRig) must(fn string, args any, out any) json.RawMessage {
	r.t.Helper()
	requestID := ""
	if f, _ := protocol.LookupFunction(fn); f.Write {
		requestID = "rq-" + strconv.FormatInt(r.seq.Add(1), 10)
	}
	raw, err := r.call(fn, requestID, args)
	require.NoError(r.t, err, fn)
	if out != nil {
		require.NoError(r.t, json.Unmarshal(raw, out), fn+": "+string(raw))
	}
	return raw
}

// keys decodes a JSON object and checks it has every key.
func requireKeys(t *testing.T, raw json.RawMessage, keys ...string) {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m), string(raw))
	for _, k := range keys {
		require.Contains(t, m, k, string(raw))
	}
}

// Every RPC function, through a real relay and a real agent on the
// simulator, on a happy path, with the shape of its result.
func TestEveryFunctionThroughTheRelay(t *testing.T) {
	t.Parallel()
	r := newRPCRig(t, nil)
	called := map[string]bool{}
	do := func(fn string, args any, out any) json.RawMessage {
		called[fn] = true
		return r.must(fn, args, out)
	}
	type obj = map[string]any
	acct := obj{"account": "Sim101"}

	// Accounts.
	var accounts []protocol.Account
	do(protocol.FnListAccounts, nil, &accounts)
	require.Len(t, accounts, 2)
	raw := do(protocol.FnGetAccountSummary, nil, nil)
	requireKeys(t, raw, "accounts", "time", "epoch")
	var summary protocol.AccountSummary
	require.NoError(t, json.Unmarshal(raw, &summary))
	require.Len(t, summary.Accounts, 2)
	raw = do(protocol.FnGetAccount, acct, nil)
	requireKeys(t, raw, "name", "displayName", "provider", "connection", "connectionStatus", "denomination", "status", "item")
	raw = do(protocol.FnGetWatermarks, acct, nil)
	requireKeys(t, raw, "account", "watermarks", "stats")

	// Orders and positions.
	var placed protocol.PlaceResult
	raw = do(protocol.FnPlaceOrder, obj{"account": "Sim101", "action": "BUY", "instrument": "ES", "orderType": "Market",
		"quantity": 2, "timeInForce": "Day", "strategyTag": "rpc-bot"}, &placed)
	requireKeys(t, raw, "orderId", "order")
	require.Equal(t, protocol.OrderStateFilled, placed.Order.OrderState)
	first := placed.OrderID

	var pos protocol.Position
	raw = do(protocol.FnGetPosition, obj{"account": "Sim101", "instrument": "ES"}, &pos)
	requireKeys(t, raw, "account", "instrument", "instrumentType", "marketPosition", "quantity", "averagePrice", "marketPrice", "unrealizedProfitLoss", "tag")
	require.Equal(t, protocol.MarketPositionLong, pos.MarketPosition)
	require.Equal(t, 2, pos.Quantity)
	require.Equal(t, "rpc-bot", pos.Tag)
	var positions []protocol.Position
	do(protocol.FnListPositions, acct, &positions)
	require.Len(t, positions, 1)

	do(protocol.FnPlaceOrder, obj{"account": "Sim101", "action": "Buy", "instrument": "ES 12-26", "orderType": "Limit",
		"limitPrice": 5900, "quantity": 1, "timeInForce": "Gtc"}, &placed)
	limit := placed.OrderID
	var orders []protocol.Order
	raw = do(protocol.FnListOrders, obj{"account": "Sim101", "activeOnly": true}, &orders)
	require.Len(t, orders, 1)
	require.Equal(t, limit, orders[0].OrderID)
	var one []map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &one))
	for _, k := range []string{"orderId", "account", "instrument", "name", "orderAction", "orderType", "orderState", "quantity", "filled", "averageFillPrice", "limitPrice", "stopPrice", "timeInForce", "time", "epoch"} {
		require.Contains(t, one[0], k)
	}
	var order protocol.Order
	do(protocol.FnGetOrder, obj{"account": "Sim101", "orderId": limit}, &order)
	require.Equal(t, protocol.OrderStateWorking, order.OrderState)
	var changed protocol.OrderResult
	raw = do(protocol.FnChangeOrder, obj{"account": "Sim101", "orderId": limit, "quantity": 3}, &changed)
	requireKeys(t, raw, "orderId", "order")
	require.Equal(t, 3, changed.Order.Quantity)
	var cancelled protocol.OrderResult
	do(protocol.FnCancelOrder, obj{"account": "Sim101", "orderId": limit}, &cancelled)
	require.Equal(t, protocol.OrderStateCancelled, cancelled.Order.OrderState)

	var execs []protocol.Execution
	raw = do(protocol.FnListExecutions, obj{"account": "Sim101", "lookbackTime": 900}, &execs)
	require.Len(t, execs, 1)
	var ex []map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &ex))
	for _, k := range []string{"id", "orderId", "account", "instrument", "name", "marketPosition", "quantity", "price", "commission", "time", "epoch"} {
		require.Contains(t, ex[0], k)
	}
	do(protocol.FnGetExecutionsByOrderID, obj{"orderId": first}, &execs)
	require.Len(t, execs, 1)
	require.Equal(t, first, execs[0].OrderID)
	do(protocol.FnGetAllPositions, obj{"includeFlat": true}, &positions)
	require.Len(t, positions, 1)
	do(protocol.FnGetAllOrders, obj{"activeOnly": false, "lookbackTime": 900}, &orders)
	require.Len(t, orders, 2)

	// Market data.
	raw = do(protocol.FnGetQuote, obj{"account": "Sim101", "instrument": "ES", "showRollover": true}, nil)
	requireKeys(t, raw, "instrument", "bid", "ask", "last", "tickSize", "pointValue", "tickValue", "quoteTimeUtc", "epoch", "rollover")
	raw = do(protocol.FnMarketInfo, obj{"root": "ES"}, nil)
	requireKeys(t, raw, "instrument", "root", "tickSize", "pointValue", "tickValue", "expiry", "nextInstrument", "tradingHours")
	var templates []protocol.AtmTemplate
	do(protocol.FnGetAtmTemplates, nil, &templates)
	require.NotEmpty(t, templates)
	r.clock.Advance(5 * time.Minute)
	require.NoError(t, r.sim.SetPrice("ES 12-26", 6000))
	raw = do(protocol.FnGetBars, obj{"instrument": "ES", "period_type": "minute", "period": 1, "limit": 10}, nil)
	requireKeys(t, raw, "instrument", "periodType", "period", "count", "bars")

	// Strategies.
	var strat protocol.Strategy
	raw = do(protocol.FnStartStrategy, obj{"account": "Sim102", "strategy_class": "SampleMACrossOver", "instrument": "NQ",
		"mode": "Disabled", "period_type": "minute", "period": "5", "parameters": obj{"Fast": 5, "Slow": 20}}, &strat)
	requireKeys(t, raw, "id", "strategyId", "strategyClass", "account", "instrument", "state", "enabled", "terminal")
	require.Equal(t, 5, strat.Period)
	var strategies []protocol.Strategy
	do(protocol.FnListStrategies, obj{"account": "Sim102"}, &strategies)
	require.Len(t, strategies, 1)
	do(protocol.FnGetStrategy, obj{"account": "Sim102", "id": strat.ID}, &strat)
	do(protocol.FnEnableStrategy, obj{"account": "Sim102", "id": strat.ID}, &strat)
	require.True(t, strat.Enabled)
	do(protocol.FnDisableStrategy, obj{"account": "Sim102", "id": strat.ID}, &strat)
	require.False(t, strat.Enabled)
	do(protocol.FnCloseStrategy, obj{"account": "Sim102", "id": strat.ID}, &strat)
	require.True(t, strat.Terminal)
	do(protocol.FnListAllStrategies, obj{"includeTerminal": true}, &strategies)
	require.Len(t, strategies, 1)

	// Position operations. Sim101 holds ES +2 (owned by rpc-bot).
	var res protocol.PlaceResult
	do(protocol.FnClosePosition, obj{"account": "Sim101", "instrument": "ES", "quantity": 1, "strategyTag": "rpc-bot"}, &res)
	require.Equal(t, 1, res.Order.Quantity)
	raw = do(protocol.FnReverse, obj{"account": "Sim101", "instrument": "ES", "strategyTag": "rpc-bot"}, &res)
	requireKeys(t, raw, "orderId")
	require.Equal(t, protocol.ActionSell, res.Order.OrderAction)
	raw = do(protocol.FnReversePosition, obj{"account": "Sim101", "instrument": "ES", "action": "Buy", "quantity": 2,
		"orderType": "Market", "timeInForce": "Gtc", "strategyTag": "rpc-bot"}, &res)
	requireKeys(t, raw, "orderId", "closeOrderIds")
	require.Equal(t, protocol.ActionBuy, res.Order.OrderAction)
	do(protocol.FnFlatPlace, obj{"account": "Sim101", "instrument": "ES", "action": "Sell", "quantity": 1,
		"orderType": "Market", "timeInForce": "Day", "strategyTag": "rpc-bot"}, &res)
	do(protocol.FnGetPosition, obj{"account": "Sim101", "instrument": "ES"}, &pos)
	require.Equal(t, protocol.MarketPositionShort, pos.MarketPosition)
	require.Equal(t, 1, pos.Quantity)

	var bracket protocol.BracketResult
	raw = do(protocol.FnCancelAndBracket, obj{"account": "Sim101", "instrument": "ES", "action": "Sell", "quantity": 1,
		"takeProfit": 5990, "stopLoss": 6010}, &bracket)
	requireKeys(t, raw, "orderIds", "ocoId", "cancelledOrderIds")
	require.Len(t, bracket.OrderIDs, 2)

	var cancelRes protocol.CancelResult
	raw = do(protocol.FnCancelOrders, obj{"account": "Sim101", "instrument": "ES"}, &cancelRes)
	requireKeys(t, raw, "cancelledOrderIds")
	require.ElementsMatch(t, bracket.OrderIDs, cancelRes.CancelledOrderIDs)
	do(protocol.FnPlaceOrder, obj{"account": "Sim102", "action": "Buy", "instrument": "ES", "orderType": "Limit",
		"limitPrice": 5900, "quantity": 1, "timeInForce": "Gtc"}, &placed)
	var replaced protocol.PlaceResult
	raw = do(protocol.FnCancelReplace, obj{"account": "Sim102", "cancelOrderId": placed.OrderID, "action": "Buy", "instrument": "ES",
		"orderType": "Limit", "limitPrice": 5890, "quantity": 1, "timeInForce": "Gtc"}, &replaced)
	requireKeys(t, raw, "orderId", "cancelledOrderIds")
	require.Equal(t, []string{placed.OrderID}, replaced.CancelledOrderIDs)
	do(protocol.FnCancelAllOrders, nil, &cancelRes)
	require.Equal(t, []string{replaced.OrderID}, cancelRes.CancelledOrderIDs)

	var flat protocol.FlattenResult
	raw = do(protocol.FnFlatten, obj{"account": "Sim101", "instrument": "ES", "cancelOrders": true}, &flat)
	requireKeys(t, raw, "positions", "orderIds", "cancelledOrderIds")
	require.Len(t, flat.Positions, 1)
	do(protocol.FnPlaceOrder, obj{"account": "Sim102", "action": "Sell", "instrument": "CL", "orderType": "Market",
		"quantity": 1, "timeInForce": "Day"}, &placed)
	do(protocol.FnFlattenEverything, nil, &flat)
	require.Len(t, flat.Positions, 1)
	var all []protocol.Position
	do(protocol.FnGetAllPositions, nil, &all)
	require.Empty(t, all)

	for _, f := range protocol.Functions {
		require.True(t, called[f.Name], "%s was not called", f.Name)
	}

	// An error crosses the tunnel as a wire error, detail without input.
	_, err := r.call(protocol.FnReversePosition, "rq-none", obj{"account": "Sim101", "instrument": "ES", "action": "Buy",
		"quantity": 1, "orderType": "Market", "timeInForce": "Gtc"})
	var pe *protocol.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, protocol.CodeNoPosition, pe.Code)
	_, err = r.call(protocol.FnGetPosition, "", obj{"account": "Sim101", "instrument": "QQQQ"})
	require.ErrorAs(t, err, &pe)
	require.Equal(t, protocol.CodeInvalidInstrument, pe.Code)
	require.NotContains(t, pe.Detail, "QQQQ")
}

// gatedPlatform holds the first SubmitOrder until release is closed,
// telling entered when it arrives.
type gatedPlatform struct {
	bridge.Platform
	once    sync.Once
	entered chan struct{}
	release chan struct{}
	submits atomic.Int64
}

func (g *gatedPlatform) SubmitOrder(ctx context.Context, req bridge.OrderRequest) (protocol.Order, error) {
	g.submits.Add(1)
	g.once.Do(func() {
		close(g.entered)
		<-g.release
	})
	return g.Platform.SubmitOrder(ctx, req)
}

// A write whose tunnel drops while it runs is not lost and not repeated:
// retried with the same request id after the agent reconnected to a new
// relay, it returns the first outcome, and the simulator holds exactly one
// order.
func TestWriteExactlyOnceAcrossReconnect(t *testing.T) {
	t.Parallel()
	gate := &gatedPlatform{entered: make(chan struct{}), release: make(chan struct{})}
	r := newRPCRig(t, func(p *sim.Platform) bridge.Platform {
		gate.Platform = p
		return gate
	})
	args := map[string]any{"account": "Sim101", "action": "Buy", "instrument": "ES", "orderType": "Market",
		"quantity": 1, "timeInForce": "Day"}

	firstErr := make(chan error, 1)
	go func() {
		_, err := r.call(protocol.FnPlaceOrder, "once-1", args)
		firstErr <- err
	}()
	<-gate.entered
	// The tunnel drops while the order is being placed: the caller learns
	// the outcome is unknown.
	r.restart()
	require.ErrorIs(t, <-firstErr, agentcall.ErrConnectionLost)
	close(gate.release)
	r.waitConnected()

	// Retries (the first may still be finishing: a retry then waits for
	// its outcome) all return the same order.
	var results []protocol.PlaceResult
	for range 3 {
		raw, err := r.call(protocol.FnPlaceOrder, "once-1", args)
		require.NoError(t, err)
		var res protocol.PlaceResult
		require.NoError(t, json.Unmarshal(raw, &res))
		require.NotEmpty(t, res.OrderID)
		results = append(results, res)
	}
	for _, res := range results {
		require.Equal(t, results[0].OrderID, res.OrderID)
	}

	// Once more across a second reconnect.
	r.restart()
	r.waitConnected()
	raw, err := r.call(protocol.FnPlaceOrder, "once-1", args)
	require.NoError(t, err)
	var again protocol.PlaceResult
	require.NoError(t, json.Unmarshal(raw, &again))
	require.Equal(t, results[0].OrderID, again.OrderID)

	orders, err := r.sim.Orders(context.Background(), "Sim101")
	require.NoError(t, err)
	require.Len(t, orders, 1, "exactly one order on the platform")
	require.Equal(t, int64(1), gate.submits.Load())
	ps, err := r.sim.Positions(context.Background(), "Sim101")
	require.NoError(t, err)
	require.Len(t, ps, 1)
	require.Equal(t, 1, ps[0].Quantity)

	// A new request id is a new order.
	_, err = r.call(protocol.FnPlaceOrder, "once-2", args)
	require.NoError(t, err)
	orders, err = r.sim.Orders(context.Background(), "Sim101")
	require.NoError(t, err)
	require.Len(t, orders, 2)
}
