package sim_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
)

// esOrder is a Gtc order of Sim101 in the ES front month.
func esOrder(action, typ string, qty int, limit, stop float64) bridge.OrderRequest {
	return bridge.OrderRequest{Account: "Sim101", Instrument: "ES", Action: action, OrderType: typ,
		Quantity: qty, LimitPrice: limit, StopPrice: stop, TimeInForce: "Gtc"}
}

// orderByID returns the account's order with the id, as Orders lists it.
func orderByID(t *testing.T, p *sim.Platform, account, id string) protocol.Order {
	t.Helper()
	os, err := p.Orders(ctx, account)
	require.NoError(t, err)
	for _, o := range os {
		if o.OrderID == id {
			return o
		}
	}
	t.Fatalf("order %s is not listed", id)
	return protocol.Order{}
}

// fills returns the account's executions of one order as "qty@price".
func fills(t *testing.T, p *sim.Platform, account, id string) []string {
	t.Helper()
	execs, err := p.Executions(ctx, account)
	require.NoError(t, err)
	out := []string{}
	for _, e := range execs {
		if e.OrderID == id {
			out = append(out, fmt.Sprintf("%d@%v", e.Quantity, e.Price))
		}
	}
	return out
}

// watch returns a reader of the platform's events, ended with the test.
func watch(t *testing.T, p *sim.Platform) <-chan bridge.Event {
	t.Helper()
	c, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return p.Events(c)
}

// drain returns the events already published. Every call publishes its
// events before it returns, so nothing is missed.
func drain(ch <-chan bridge.Event) []bridge.Event {
	var out []bridge.Event
	for {
		select {
		case ev := <-ch:
			out = append(out, ev)
		default:
			return out
		}
	}
}

// describe writes events compactly: "order sim-1 Filled 2/2",
// "execution sim-1 2@6000.25", "position Long 2", "account".
func describe(evs []bridge.Event) []string {
	out := make([]string, 0, len(evs))
	for _, ev := range evs {
		switch ev.Kind {
		case bridge.EventOrder:
			o := ev.Order
			out = append(out, fmt.Sprintf("order %s %s %d/%d", o.OrderID, o.OrderState, o.Filled, o.Quantity))
		case bridge.EventExecution:
			out = append(out, fmt.Sprintf("execution %s %d@%v", ev.Execution.OrderID, ev.Execution.Quantity, ev.Execution.Price))
		case bridge.EventPosition:
			out = append(out, fmt.Sprintf("position %s %d", ev.Position.MarketPosition, ev.Position.Quantity))
		case bridge.EventAccount:
			out = append(out, "account")
		default:
			out = append(out, string(ev.Kind))
		}
	}
	return out
}

func TestOrderMatching(t *testing.T) {
	// The market starts at bid 6000, ask 6000.25. SetPrice(x) puts the bid
	// at x and the ask one tick above.
	for _, tc := range []struct {
		name   string
		req    bridge.OrderRequest
		prices []float64
		state  string
		avg    float64
	}{
		{"buy market", esOrder("Buy", "Market", 1, 0, 0), nil, "Filled", 6000.25},
		{"sell market", esOrder("Sell", "Market", 1, 0, 0), nil, "Filled", 6000},

		{"buy limit touched", esOrder("Buy", "Limit", 1, 5995, 0), []float64{5994.75}, "Filled", 5995},
		{"buy limit gapped through", esOrder("Buy", "Limit", 1, 5995, 0), []float64{5990}, "Filled", 5990.25},
		{"buy limit never reached", esOrder("Buy", "Limit", 1, 5995, 0), []float64{5995, 5996}, "Working", 0},
		{"sell limit touched", esOrder("Sell", "Limit", 1, 6005, 0), []float64{6005}, "Filled", 6005},
		{"sell limit gapped through", esOrder("Sell", "Limit", 1, 6005, 0), []float64{6010}, "Filled", 6010},
		{"sell limit never reached", esOrder("Sell", "Limit", 1, 6005, 0), []float64{6004.75}, "Working", 0},
		{"buy limit marketable", esOrder("Buy", "Limit", 1, 6001, 0), nil, "Filled", 6000.25},
		{"sell limit marketable", esOrder("Sell", "Limit", 1, 5999, 0), nil, "Filled", 6000},

		{"buy stop touched", esOrder("Buy", "StopMarket", 1, 0, 6005), []float64{6004.75}, "Filled", 6005},
		{"buy stop gapped through", esOrder("Buy", "StopMarket", 1, 0, 6005), []float64{6010}, "Filled", 6010.25},
		{"buy stop never reached", esOrder("Buy", "StopMarket", 1, 0, 6005), []float64{6004.5}, "Accepted", 0},
		{"sell stop touched", esOrder("Sell", "StopMarket", 1, 0, 5995), []float64{5995}, "Filled", 5995},
		{"sell stop gapped through", esOrder("Sell", "StopMarket", 1, 0, 5995), []float64{5990}, "Filled", 5990},
		{"sell stop never reached", esOrder("Sell", "StopMarket", 1, 0, 5995), []float64{5995.25}, "Accepted", 0},

		{"buy stop limit touched", esOrder("Buy", "StopLimit", 1, 6006, 6005), []float64{6004.75}, "Filled", 6005},
		{"buy stop limit gapped past its limit", esOrder("Buy", "StopLimit", 1, 6006, 6005), []float64{6010}, "Working", 0},
		{"buy stop limit gapped, then back", esOrder("Buy", "StopLimit", 1, 6006, 6005), []float64{6010, 6005.5}, "Filled", 6005.75},
		{"buy stop limit never reached", esOrder("Buy", "StopLimit", 1, 6006, 6005), []float64{6004.5}, "Accepted", 0},
		{"sell stop limit touched", esOrder("Sell", "StopLimit", 1, 5994, 5995), []float64{5995}, "Filled", 5995},
		{"sell stop limit gapped past its limit", esOrder("Sell", "StopLimit", 1, 5994, 5995), []float64{5990}, "Working", 0},
		{"sell stop limit gapped, then back", esOrder("Sell", "StopLimit", 1, 5994, 5995), []float64{5990, 5994.5}, "Filled", 5994.5},
		{"sell stop limit never reached", esOrder("Sell", "StopLimit", 1, 5994, 5995), []float64{5995.25}, "Accepted", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newSim(t, sim.Options{})
			require.NoError(t, p.SetPrice("ES", 6000))
			o := submit(t, p, tc.req)
			for _, price := range tc.prices {
				require.NoError(t, p.SetPrice("ES", price))
			}
			got := orderByID(t, p, "Sim101", o.OrderID)
			require.Equal(t, tc.state, got.OrderState)
			require.Equal(t, tc.avg, got.AverageFillPrice)
			_, open := position(t, p, "Sim101", "ES 12-26")
			if tc.state == "Filled" {
				require.Equal(t, 1, got.Filled)
				require.True(t, open)
			} else {
				require.Zero(t, got.Filled)
				require.False(t, open)
			}
		})
	}
}

func TestPartialFills(t *testing.T) {
	type step struct {
		price float64 // SetPrice, a new market update
		state string
		fills []string
		avg   float64
	}
	for _, tc := range []struct {
		name  string
		req   bridge.OrderRequest
		state string // at submission
		fills []string
		avg   float64
		steps []step
	}{
		{name: "market buy walks the book", req: esOrder("Buy", "Market", 5, 0, 0), state: "Filled",
			fills: []string{"2@6000.25", "2@6000.5", "1@6000.75"}, avg: 6000.45}, // 30002.25 / 5
		{name: "market sell walks the book", req: esOrder("Sell", "Market", 5, 0, 0), state: "Filled",
			fills: []string{"2@6000", "2@5999.75", "1@5999.5"}, avg: 5999.8}, // 29999 / 5
		{name: "market within the depth", req: esOrder("Buy", "Market", 2, 0, 0), state: "Filled",
			fills: []string{"2@6000.25"}, avg: 6000.25},
		{name: "marketable limit takes the levels up to its limit", req: esOrder("Buy", "Limit", 5, 6000.5, 0),
			state: "PartFilled", fills: []string{"2@6000.25", "2@6000.5"}, avg: 6000.375,
			steps: []step{{6000, "Filled", []string{"2@6000.25", "2@6000.5", "1@6000.25"}, 6000.35}}},
		{name: "marketable sell limit", req: esOrder("Sell", "Limit", 6, 5999.75, 0),
			state: "PartFilled", fills: []string{"2@6000", "2@5999.75"}, avg: 5999.875,
			steps: []step{
				{5999.5, "PartFilled", []string{"2@6000", "2@5999.75"}, 5999.875}, // bid below the limit
				{5999.75, "Filled", []string{"2@6000", "2@5999.75", "2@5999.75"}, 5999.83333333},
			}},
		{name: "resting limit takes the depth once per update", req: esOrder("Buy", "Limit", 5, 5995, 0),
			state: "Working",
			steps: []step{
				{5994.75, "PartFilled", []string{"2@5995"}, 5995},
				{5994.75, "PartFilled", []string{"2@5995", "2@5995"}, 5995},
				{5990, "Filled", []string{"2@5995", "2@5995", "1@5990.25"}, 5994.05},
			}},
		{name: "stop market walks once triggered", req: esOrder("Sell", "StopMarket", 3, 0, 5995),
			state: "Accepted",
			steps: []step{{5995, "Filled", []string{"2@5995", "1@5994.75"}, 5994.91666667}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newSim(t, sim.Options{BookDepth: 2})
			require.NoError(t, p.SetPrice("ES", 6000))
			o := submit(t, p, tc.req)
			require.Equal(t, tc.state, o.OrderState)
			if tc.fills == nil {
				tc.fills = []string{}
			}
			require.Equal(t, tc.fills, fills(t, p, "Sim101", o.OrderID))
			require.InDelta(t, tc.avg, o.AverageFillPrice, 1e-6)
			for i, s := range tc.steps {
				require.NoError(t, p.SetPrice("ES", s.price))
				// Reading does not update the market: no more depth.
				orderByID(t, p, "Sim101", o.OrderID)
				got := orderByID(t, p, "Sim101", o.OrderID)
				require.Equal(t, s.state, got.OrderState, "step %d", i)
				require.Equal(t, s.fills, fills(t, p, "Sim101", o.OrderID), "step %d", i)
				require.InDelta(t, s.avg, got.AverageFillPrice, 1e-6, "step %d", i)
				filled := 0
				for _, f := range s.fills {
					var q int
					_, err := fmt.Sscanf(f, "%d@", &q)
					require.NoError(t, err)
					filled += q
				}
				require.Equal(t, filled, got.Filled, "step %d", i)
			}
		})
	}

	t.Run("a market update by the clock refreshes the depth", func(t *testing.T) {
		p, clock := newSim(t, sim.Options{BookDepth: 1})
		require.NoError(t, p.SetPrice("ES", 6000))
		// 6000.25 to 6100 is 400 levels; the limit stays marketable.
		o := submit(t, p, esOrder("Buy", "Limit", 1000, 6100, 0))
		require.Equal(t, "PartFilled", o.OrderState)
		require.Equal(t, 400, o.Filled)
		require.Equal(t, 400, orderByID(t, p, "Sim101", o.OrderID).Filled, "no update, no depth")
		clock.Advance(time.Second)
		require.Equal(t, 401, orderByID(t, p, "Sim101", o.OrderID).Filled)
		clock.Advance(time.Second)
		require.Equal(t, 402, orderByID(t, p, "Sim101", o.OrderID).Filled)
	})

	t.Run("a huge market order is bounded", func(t *testing.T) {
		p, _ := newSim(t, sim.Options{BookDepth: 1})
		require.NoError(t, p.SetPrice("ES", 6000))
		o := submit(t, p, esOrder("Buy", "Market", 5000, 0, 0))
		require.Equal(t, "Filled", o.OrderState)
		f := fills(t, p, "Sim101", o.OrderID)
		require.Len(t, f, 1000)
		require.Equal(t, "4001@6250", f[999], "the last level takes the rest")
	})

	t.Run("zero depth is unlimited", func(t *testing.T) {
		p, _ := newSim(t, sim.Options{})
		require.NoError(t, p.SetPrice("ES", 6000))
		o := submit(t, p, esOrder("Buy", "Market", 500, 0, 0))
		require.Equal(t, []string{"500@6000.25"}, fills(t, p, "Sim101", o.OrderID))
	})

	_, err := sim.New(sim.Options{BookDepth: -1})
	require.Error(t, err)
}

func TestOCO(t *testing.T) {
	for _, tc := range []struct {
		name  string
		depth int
		price float64
		want  map[string]string // order name → state
	}{
		{"target fills, stop and entry cancelled", 0, 6010,
			map[string]string{"target": "Filled", "stop": "Cancelled", "entry": "Cancelled", "other": "Working", "elsewhere": "Working"}},
		{"stop fills, target cancelled", 0, 5990,
			map[string]string{"target": "Cancelled", "stop": "Filled", "entry": "Cancelled", "other": "Working", "elsewhere": "Working"}},
		{"a partial fill cancels the others", 1, 6010,
			map[string]string{"target": "PartFilled", "stop": "Cancelled", "entry": "Cancelled", "other": "Working", "elsewhere": "Working"}},
		{"nothing reached", 0, 6000,
			map[string]string{"target": "Working", "stop": "Accepted", "entry": "Working", "other": "Working", "elsewhere": "Working"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newSim(t, sim.Options{BookDepth: tc.depth})
			require.NoError(t, p.SetPrice("ES", 6000))
			submit(t, p, esOrder("Buy", "Market", 3, 0, 0))
			ids := map[string]string{}
			place := func(name string, req bridge.OrderRequest) {
				req.Name = name
				ids[name] = submit(t, p, req).OrderID
			}
			oco := func(r bridge.OrderRequest, id string) bridge.OrderRequest { r.Oco = id; return r }
			place("target", oco(esOrder("Sell", "Limit", 3, 6010, 0), "g1"))
			place("stop", oco(esOrder("Sell", "StopMarket", 3, 0, 5990), "g1"))
			place("entry", oco(esOrder("Buy", "Limit", 1, 5980, 0), "g1"))
			place("other", oco(esOrder("Buy", "Limit", 1, 5970, 0), "g2"))
			other := oco(esOrder("Buy", "Limit", 1, 5970, 0), "g1")
			other.Account = "Sim102"
			other.Name = "elsewhere"
			o := submit(t, p, other)
			ch := watch(t, p)
			require.NoError(t, p.SetPrice("ES", tc.price))
			evs := drain(ch)
			for name, state := range tc.want {
				if name == "elsewhere" {
					require.Equal(t, state, orderByID(t, p, "Sim102", o.OrderID).OrderState, name)
					continue
				}
				require.Equal(t, state, orderByID(t, p, "Sim101", ids[name]).OrderState, name)
			}
			cancelled := 0
			for _, ev := range evs {
				if ev.Kind == bridge.EventOrder && ev.Order.OrderState == "Cancelled" {
					cancelled++
				}
			}
			want := 0
			for _, s := range tc.want {
				if s == "Cancelled" {
					want++
				}
			}
			require.Equal(t, want, cancelled, "one event per cancelled order")
		})
	}
}

func TestCancelOrder(t *testing.T) {
	p, _ := newSim(t, sim.Options{BookDepth: 1})
	require.NoError(t, p.SetPrice("ES", 6000))
	working := submit(t, p, esOrder("Buy", "Limit", 1, 5990, 0))
	stop := submit(t, p, esOrder("Buy", "StopMarket", 1, 0, 6010))
	part := submit(t, p, esOrder("Buy", "Limit", 3, 6000.25, 0))
	require.Equal(t, "PartFilled", part.OrderState)
	filled := submit(t, p, esOrder("Buy", "Market", 1, 0, 0))
	other := submit(t, p, market("Sim102", "ES", "Buy", 1))

	ch := watch(t, p)
	for _, tc := range []struct {
		name, account, id string
		state             string // after; "" for an error
		filled            int
		reason            string
		notFound          bool
	}{
		{name: "working limit", account: "Sim101", id: working.OrderID, state: "Cancelled"},
		{name: "accepted stop", account: "Sim101", id: stop.OrderID, state: "Cancelled"},
		{name: "part filled keeps its fill", account: "Sim101", id: part.OrderID, state: "Cancelled", filled: 1},
		{name: "filled", account: "Sim101", id: filled.OrderID, reason: "order is already filled"},
		{name: "already cancelled", account: "Sim101", id: working.OrderID, reason: "order is already cancelled"},
		{name: "unknown id", account: "Sim101", id: "nope", notFound: true},
		{name: "another account's order", account: "Sim101", id: other.OrderID, notFound: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.CancelOrder(ctx, tc.account, tc.id)
			switch {
			case tc.notFound:
				require.ErrorIs(t, err, bridge.ErrOrderNotFound)
				require.NotContains(t, err.Error(), tc.id, "errors do not repeat the caller's input")
			case tc.reason != "":
				var re *bridge.RejectError
				require.ErrorAs(t, err, &re)
				require.Equal(t, tc.reason, re.Reason)
			default:
				require.NoError(t, err)
				require.Equal(t, tc.state, got.OrderState)
				require.Equal(t, tc.filled, got.Filled)
				require.Equal(t, got, orderByID(t, p, tc.account, tc.id))
			}
		})
	}
	require.Equal(t, []string{
		"order " + working.OrderID + " Cancelled 0/1",
		"order " + stop.OrderID + " Cancelled 0/1",
		"order " + part.OrderID + " Cancelled 1/3",
	}, describe(drain(ch)), "one event per cancel; refusals publish nothing")

	require.NoError(t, p.SetPrice("ES", 5980))
	require.Equal(t, "Cancelled", orderByID(t, p, "Sim101", working.OrderID).OrderState, "a cancelled order never fills")
	_, err := p.CancelOrder(ctx, "Nope", working.OrderID)
	require.ErrorIs(t, err, bridge.ErrAccountNotFound)
}

func TestChangeOrder(t *testing.T) {
	type result struct {
		state         string
		qty, filled   int
		limit, stop   float64
		fills         []string
		reason        string
		notFound      bool
		positionAfter int
	}
	for _, tc := range []struct {
		name   string
		depth  int
		req    bridge.OrderRequest
		change bridge.ChangeRequest
		want   result
	}{
		{name: "limit price", req: esOrder("Buy", "Limit", 2, 5990, 0), change: bridge.ChangeRequest{LimitPrice: 5992.5},
			want: result{state: "Working", qty: 2, limit: 5992.5, fills: []string{}}},
		{name: "quantity", req: esOrder("Buy", "Limit", 2, 5990, 0), change: bridge.ChangeRequest{Quantity: 5},
			want: result{state: "Working", qty: 5, limit: 5990, fills: []string{}}},
		{name: "becomes marketable and fills", req: esOrder("Buy", "Limit", 2, 5990, 0), change: bridge.ChangeRequest{LimitPrice: 6001},
			want: result{state: "Filled", qty: 2, filled: 2, limit: 6001, fills: []string{"2@6000.25"}, positionAfter: 2}},
		{name: "becomes marketable, walks up to the limit", depth: 1, req: esOrder("Buy", "Limit", 3, 5990, 0),
			change: bridge.ChangeRequest{LimitPrice: 6000.5},
			want:   result{state: "PartFilled", qty: 3, filled: 2, limit: 6000.5, fills: []string{"1@6000.25", "1@6000.5"}, positionAfter: 2}},
		{name: "sell limit becomes marketable", req: esOrder("Sell", "Limit", 1, 6010, 0), change: bridge.ChangeRequest{LimitPrice: 5999},
			want: result{state: "Filled", qty: 1, filled: 1, limit: 5999, fills: []string{"1@6000"}, positionAfter: -1}},
		{name: "stop price", req: esOrder("Sell", "StopMarket", 1, 0, 5990), change: bridge.ChangeRequest{StopPrice: 5995},
			want: result{state: "Accepted", qty: 1, stop: 5995, fills: []string{}}},
		{name: "stop limit both prices", req: esOrder("Buy", "StopLimit", 1, 6011, 6010), change: bridge.ChangeRequest{StopPrice: 6020, LimitPrice: 6021},
			want: result{state: "Accepted", qty: 1, stop: 6020, limit: 6021, fills: []string{}}},
		{name: "nothing to change", req: esOrder("Buy", "Limit", 1, 5990, 0), change: bridge.ChangeRequest{},
			want: result{state: "Working", qty: 1, limit: 5990, fills: []string{}}},

		{name: "sell stop through the market", req: esOrder("Sell", "StopMarket", 1, 0, 5990), change: bridge.ChangeRequest{StopPrice: 6000},
			want: result{reason: "sell stop price must be below the market"}},
		{name: "buy stop through the market", req: esOrder("Buy", "StopMarket", 1, 0, 6010), change: bridge.ChangeRequest{StopPrice: 6000.25},
			want: result{reason: "buy stop price must be above the market"}},
		{name: "off-tick limit", req: esOrder("Buy", "Limit", 1, 5990, 0), change: bridge.ChangeRequest{LimitPrice: 5990.1},
			want: result{reason: "limit price must be a multiple of the tick size 0.25"}},
		{name: "negative limit", req: esOrder("Buy", "Limit", 1, 5990, 0), change: bridge.ChangeRequest{LimitPrice: -1},
			want: result{reason: "limit price must be positive"}},
		{name: "negative quantity", req: esOrder("Buy", "Limit", 1, 5990, 0), change: bridge.ChangeRequest{Quantity: -1},
			want: result{reason: "quantity must be at least 1"}},
		{name: "limit on a stop market", req: esOrder("Buy", "StopMarket", 1, 0, 6010), change: bridge.ChangeRequest{LimitPrice: 6011},
			want: result{reason: "order type has no limit price"}},
		{name: "stop on a limit", req: esOrder("Buy", "Limit", 1, 5990, 0), change: bridge.ChangeRequest{StopPrice: 5980},
			want: result{reason: "order type has no stop price"}},
		{name: "filled order", req: esOrder("Buy", "Market", 1, 0, 0), change: bridge.ChangeRequest{Quantity: 2},
			want: result{reason: "order is already filled"}},
		{name: "below what has filled", depth: 1, req: esOrder("Buy", "Limit", 3, 6000.5, 0), change: bridge.ChangeRequest{Quantity: 1},
			want: result{reason: "quantity must be more than the filled quantity"}},
		{name: "equal to what has filled", depth: 1, req: esOrder("Buy", "Limit", 3, 6000.5, 0), change: bridge.ChangeRequest{Quantity: 2},
			want: result{reason: "quantity must be more than the filled quantity"}},
		{name: "above what has filled", depth: 1, req: esOrder("Buy", "Limit", 3, 6000.5, 0), change: bridge.ChangeRequest{Quantity: 4},
			want: result{state: "PartFilled", qty: 4, filled: 2, limit: 6000.5, fills: []string{"1@6000.25", "1@6000.5"}, positionAfter: 2}},
		{name: "unknown order", req: esOrder("Buy", "Limit", 1, 5990, 0), change: bridge.ChangeRequest{OrderID: "nope", LimitPrice: 5991},
			want: result{notFound: true}},
		{name: "another account", req: esOrder("Buy", "Limit", 1, 5990, 0), change: bridge.ChangeRequest{Account: "Sim102", LimitPrice: 5991},
			want: result{notFound: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newSim(t, sim.Options{BookDepth: tc.depth})
			require.NoError(t, p.SetPrice("ES", 6000))
			o := submit(t, p, tc.req)
			before := orderByID(t, p, "Sim101", o.OrderID)
			ch := watch(t, p)
			req := tc.change
			if req.Account == "" {
				req.Account = "Sim101"
			}
			if req.OrderID == "" {
				req.OrderID = o.OrderID
			}
			got, err := p.ChangeOrder(ctx, req)
			after := orderByID(t, p, "Sim101", o.OrderID)
			switch {
			case tc.want.notFound:
				require.ErrorIs(t, err, bridge.ErrOrderNotFound)
				require.Equal(t, before, after)
				require.Empty(t, drain(ch))
				return
			case tc.want.reason != "":
				var re *bridge.RejectError
				require.ErrorAs(t, err, &re)
				require.Equal(t, tc.want.reason, re.Reason)
				require.Equal(t, before, after, "a refused change changes nothing")
				require.Empty(t, drain(ch), "a refused change publishes nothing")
				return
			}
			require.NoError(t, err)
			require.Equal(t, after, got)
			require.Equal(t, tc.want.state, got.OrderState)
			require.Equal(t, tc.want.qty, got.Quantity)
			require.Equal(t, tc.want.filled, got.Filled)
			require.Equal(t, tc.want.limit, got.LimitPrice)
			require.Equal(t, tc.want.stop, got.StopPrice)
			require.Equal(t, tc.want.fills, fills(t, p, "Sim101", o.OrderID))
			pos, _ := position(t, p, "Sim101", "ES 12-26")
			signed := pos.Quantity
			if pos.MarketPosition == "Short" {
				signed = -signed
			}
			require.Equal(t, tc.want.positionAfter, signed)
			evs := drain(ch)
			if tc.change == (bridge.ChangeRequest{}) {
				require.Empty(t, evs, "no change, no event")
			} else {
				require.NotEmpty(t, evs)
				require.Equal(t, bridge.EventOrder, evs[0].Kind, "the change is published first")
			}
		})
	}
}

func TestFlatten(t *testing.T) {
	setup := func(t *testing.T) (*sim.Platform, map[string]string) {
		p, _ := newSim(t, sim.Options{})
		require.NoError(t, p.SetPrice("ES", 6000))
		require.NoError(t, p.SetPrice("NQ", 21000))
		ids := map[string]string{}
		submit(t, p, market("Sim101", "ES", "Buy", 3))
		submit(t, p, market("Sim101", "NQ", "Sell", 2))
		submit(t, p, market("Sim102", "ES", "Buy", 1))
		ids["esTarget"] = submit(t, p, esOrder("Sell", "Limit", 3, 6010, 0)).OrderID
		ids["esStop"] = submit(t, p, esOrder("Sell", "StopMarket", 3, 0, 5990)).OrderID
		nq := esOrder("Buy", "Limit", 2, 20990, 0)
		nq.Instrument = "NQ"
		ids["nqBid"] = submit(t, p, nq).OrderID
		cl := esOrder("Buy", "Limit", 1, 60, 0)
		cl.Instrument = "CL"
		ids["clBid"] = submit(t, p, cl).OrderID // an order without a position
		other := esOrder("Sell", "Limit", 1, 6010, 0)
		other.Account = "Sim102"
		ids["otherAccount"] = submit(t, p, other).OrderID
		return p, ids
	}
	openPositions := func(t *testing.T, p *sim.Platform, account string) map[string]int {
		ps, err := p.Positions(ctx, account)
		require.NoError(t, err)
		out := map[string]int{}
		for _, pos := range ps {
			out[pos.Instrument] = pos.Quantity
			if pos.MarketPosition == "Short" {
				out[pos.Instrument] = -pos.Quantity
			}
		}
		return out
	}

	t.Run("one instrument", func(t *testing.T) {
		p, ids := setup(t)
		ch := watch(t, p)
		require.NoError(t, p.Flatten(ctx, "Sim101", "es"))
		require.Equal(t, map[string]int{"NQ 12-26": -2}, openPositions(t, p, "Sim101"))
		require.Equal(t, map[string]int{"ES 12-26": 1}, openPositions(t, p, "Sim102"))
		for name, state := range map[string]string{"esTarget": "Cancelled", "esStop": "Cancelled", "nqBid": "Working", "clBid": "Working"} {
			require.Equal(t, state, orderByID(t, p, "Sim101", ids[name]).OrderState, name)
		}
		require.Equal(t, "Working", orderByID(t, p, "Sim102", ids["otherAccount"]).OrderState)
		evs := describe(drain(ch))
		require.Equal(t, []string{
			"order " + ids["esTarget"] + " Cancelled 0/3",
			"order " + ids["esStop"] + " Cancelled 0/3",
			"order sim-9 Submitted 0/3",
			"order sim-9 Working 0/3",
			"order sim-9 Filled 3/3",
			"execution sim-9 3@6000",
			"position Flat 0",
			"account",
			"account", // Sim102's ES position, marked at the price the close traded at
		}, evs, "orders are cancelled before the position closes")
		os, err := p.Orders(ctx, "Sim101")
		require.NoError(t, err)
		last := os[len(os)-1]
		require.Equal(t, "Close", last.Name)
		require.Equal(t, "Sell", last.OrderAction)
		require.Equal(t, "Market", last.OrderType)
	})

	t.Run("every instrument", func(t *testing.T) {
		p, ids := setup(t)
		require.NoError(t, p.Flatten(ctx, "Sim101", ""))
		require.Empty(t, openPositions(t, p, "Sim101"))
		for _, name := range []string{"esTarget", "esStop", "nqBid", "clBid"} {
			require.Equal(t, "Cancelled", orderByID(t, p, "Sim101", ids[name]).OrderState, name)
		}
		require.Equal(t, map[string]int{"ES 12-26": 1}, openPositions(t, p, "Sim102"))
		a, err := p.Account(ctx, "Sim101")
		require.NoError(t, err)
		require.Zero(t, a.Item.UnrealizedProfitLoss)
	})

	t.Run("nothing to do", func(t *testing.T) {
		p, _ := newSim(t, sim.Options{})
		ch := watch(t, p)
		require.NoError(t, p.Flatten(ctx, "Sim101", "ES"))
		require.NoError(t, p.Flatten(ctx, "Sim101", ""))
		require.Empty(t, drain(ch))
	})

	t.Run("errors", func(t *testing.T) {
		p, _ := newSim(t, sim.Options{})
		require.ErrorIs(t, p.Flatten(ctx, "Nope", "ES"), bridge.ErrAccountNotFound)
		require.ErrorIs(t, p.Flatten(ctx, "Sim101", "ZZTOP"), bridge.ErrInstrumentUnknown)
	})
}

func TestFillEvents(t *testing.T) {
	p, _ := newSim(t, sim.Options{})
	require.NoError(t, p.SetPrice("ES", 6000))
	submit(t, p, market("Sim101", "ES", "Buy", 1))
	ch := watch(t, p)
	other := watch(t, p)

	o := submit(t, p, market("Sim101", "ES", "Buy", 2))
	evs := drain(ch)
	require.Equal(t, []string{
		"order " + o.OrderID + " Submitted 0/2",
		"order " + o.OrderID + " Working 0/2",
		"order " + o.OrderID + " Filled 2/2",
		"execution " + o.OrderID + " 2@6000.25",
		"position Long 3",
		"account",
	}, describe(evs))
	for i, ev := range evs {
		require.Equal(t, evs[0].Seq+uint64(i), ev.Seq, "sequence numbers follow each other")
	}
	require.Equal(t, evs, drain(other), "every reader sees the same stream")
	require.Equal(t, protocol.Execution{ID: "sim-exec-2", OrderID: o.OrderID, Account: "Sim101", Instrument: "ES 12-26",
		MarketPosition: "Long", Quantity: 2, Price: 6000.25, Commission: 1.24,
		Time: "2026-10-05T14:30:00.000Z", Epoch: start.UnixMilli()}, *evs[3].Execution)
	require.Equal(t, 6000.25, evs[4].Position.AveragePrice)
	require.Equal(t, -1.86, evs[5].Account.Item.RealizedProfitLoss)
	require.Equal(t, o, *evs[2].Order)

	// Going flat reports a Flat position; a resting order reports its state.
	submit(t, p, market("Sim101", "ES", "Sell", 3))
	evs = drain(ch)
	require.Equal(t, "position Flat 0", describe(evs)[4])
	require.Equal(t, "ES 12-26", evs[4].Position.Instrument)
	stop := submit(t, p, esOrder("Sell", "StopMarket", 1, 0, 5990))
	require.Equal(t, []string{"order " + stop.OrderID + " Submitted 0/1", "order " + stop.OrderID + " Accepted 0/1"},
		describe(drain(ch)))

	// A refused order publishes nothing.
	_, err := p.SubmitOrder(ctx, esOrder("Buy", "Limit", 1, 0, 0))
	require.Error(t, err)
	require.Empty(t, drain(ch))

	// A stop limit that triggers reports Working before it fills.
	sl := submit(t, p, esOrder("Buy", "StopLimit", 1, 6011, 6010))
	drain(ch)
	require.NoError(t, p.SetPrice("ES", 6010))
	require.Equal(t, []string{
		"order " + sl.OrderID + " Working 0/1",
		"order " + sl.OrderID + " Filled 1/1",
		"execution " + sl.OrderID + " 1@6010.25",
		"position Long 1",
		"account",
	}, describe(drain(ch)))
}

// weekendClosed is the refusal of a trade on Saturday 10 October 2026: the
// market reopens Sunday at 18:00 EDT, 22:00 UTC.
const weekendClosed = "market is closed; it reopens Sunday 11 Oct 2026 at 18:00 New York time (2026-10-11 22:00 UTC)"

// A closed market says when it reopens, in New York time and UTC: after the
// weekend, after the daily break, and in winter (EST) as in summer (EDT).
func TestMarketClosedSaysWhenItReopens(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		now  time.Time
		want string
	}{
		{"Saturday, summer time", time.Date(2026, 10, 10, 16, 0, 0, 0, time.UTC), weekendClosed},
		{"Friday after the close, winter time", time.Date(2026, 11, 20, 22, 30, 0, 0, time.UTC),
			"market is closed; it reopens Sunday 22 Nov 2026 at 18:00 New York time (2026-11-22 23:00 UTC)"},
		{"daily break, Wednesday", time.Date(2026, 11, 18, 22, 15, 0, 0, time.UTC),
			"market is closed; it reopens Wednesday 18 Nov 2026 at 18:00 New York time (2026-11-18 23:00 UTC)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, clock := newSim(t, sim.Options{})
			require.NoError(t, p.SetPrice("ES", 6000))
			clock.Set(tc.now)
			_, err := p.SubmitOrder(ctx, esOrder("Buy", "Market", 1, 0, 0))
			var re *bridge.RejectError
			require.ErrorAs(t, err, &re)
			require.Equal(t, tc.want, re.Reason)
		})
	}
}

func TestMarketClosed(t *testing.T) {
	p, clock := newSim(t, sim.Options{})
	require.NoError(t, p.SetPrice("ES", 6000))
	// Saturday 10 October 2026, noon in New York.
	clock.Set(time.Date(2026, 10, 10, 16, 0, 0, 0, time.UTC))
	if info, err := p.Instrument(ctx, "ES"); err != nil || info.MarketOpen {
		t.Skip("the simulator has no trading hours yet")
	}
	require.NoError(t, p.SetPrice("ES", 6000))
	for _, req := range []bridge.OrderRequest{
		esOrder("Buy", "Market", 1, 0, 0),
		esOrder("Sell", "Market", 1, 0, 0),
		esOrder("Buy", "Limit", 1, 6001, 0),
		esOrder("Sell", "Limit", 1, 5999, 0),
	} {
		_, err := p.SubmitOrder(ctx, req)
		var re *bridge.RejectError
		require.ErrorAs(t, err, &re, "%+v", req)
		require.Equal(t, weekendClosed, re.Reason)
	}
	bid := submit(t, p, esOrder("Buy", "Limit", 1, 5990, 0))
	stop := submit(t, p, esOrder("Sell", "StopMarket", 1, 0, 5980))
	_, err := p.ChangeOrder(ctx, bridge.ChangeRequest{Account: "Sim101", OrderID: bid.OrderID, LimitPrice: 6001})
	var re *bridge.RejectError
	require.ErrorAs(t, err, &re)
	require.Equal(t, weekendClosed, re.Reason)

	require.NoError(t, p.SetPrice("ES", 5970)) // through both, but closed
	require.Equal(t, "Working", orderByID(t, p, "Sim101", bid.OrderID).OrderState)
	require.Equal(t, "Accepted", orderByID(t, p, "Sim101", stop.OrderID).OrderState)

	clock.Set(time.Date(2026, 10, 11, 22, 0, 0, 0, time.UTC)) // Sunday 18:00 EDT: open
	require.NoError(t, p.SetPrice("ES", 5970))
	require.Equal(t, "Filled", orderByID(t, p, "Sim101", bid.OrderID).OrderState)
	require.Equal(t, "Filled", orderByID(t, p, "Sim101", stop.OrderID).OrderState)
}

func TestConcurrentCallsAndEvents(t *testing.T) {
	p, clock := newSim(t, sim.Options{BookDepth: 2})
	require.NoError(t, p.SetPrice("ES", 6000))
	c, cancel := context.WithCancel(context.Background())
	ch := p.Events(c)
	var wg sync.WaitGroup
	wg.Add(1)
	received := 0
	go func() {
		defer wg.Done()
		for range ch {
			received++
		}
	}()
	var calls sync.WaitGroup
	for i := 0; i < 40; i++ {
		calls.Add(1)
		go func() {
			defer calls.Done()
			if i%8 == 0 {
				clock.Advance(time.Second)
			}
			o, err := p.SubmitOrder(ctx, esOrder([]string{"Buy", "Sell"}[i%2], "Limit", 3, []float64{5990, 6010}[i%2], 0))
			if err != nil {
				t.Error(err)
				return
			}
			switch i % 4 {
			case 0:
				_, err = p.CancelOrder(ctx, "Sim101", o.OrderID)
			case 1:
				_, err = p.ChangeOrder(ctx, bridge.ChangeRequest{Account: "Sim101", OrderID: o.OrderID, Quantity: 4})
			case 2:
				err = p.Flatten(ctx, "Sim101", "ES")
			default:
				_, err = p.Watermarks(ctx, "Sim101")
			}
			var re *bridge.RejectError
			if err != nil && !errors.As(err, &re) {
				t.Error(err)
			}
		}()
	}
	calls.Wait()
	cancel()
	wg.Wait()
	require.Positive(t, received)
}

// A price move that changes an account's unrealized P&L publishes the
// account, once per move; an account without a position in the moving
// market is not published.
func TestPriceMovePublishesAccount(t *testing.T) {
	t.Parallel()
	p, _ := newSim(t, sim.Options{})
	require.NoError(t, p.SetPrice("ES", 6000))
	submit(t, p, market("Sim101", "ES", "Buy", 2))
	ch := watch(t, p)
	require.NoError(t, p.SetPrice("ES", 6010))
	_, err := p.Accounts(ctx) // any call brings the market up to date
	require.NoError(t, err)
	evs := drain(ch)
	var accounts []bridge.Event
	for _, ev := range evs {
		if ev.Kind == bridge.EventAccount {
			accounts = append(accounts, ev)
		}
	}
	require.Len(t, accounts, 1, "one account moved: %v", describe(evs))
	require.Equal(t, "Sim101", accounts[0].Account.Name)
	require.Positive(t, accounts[0].Account.Item.UnrealizedProfitLoss)
	_, err = p.Accounts(ctx)
	require.NoError(t, err)
	require.Empty(t, drain(ch), "no move, no event")
}
