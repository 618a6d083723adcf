package ops

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// trailer is a platform with trailing orders over the simulator, which has
// none: it places a trailing order as a plain stop (or stop-limit) at its
// starting stop, records the request, and reports the order with its
// trailing type and distance. The stop does not move: the operations'
// tests only need what reaches the platform and what it answers.
type trailer struct {
	bridge.Platform
	mu       sync.Mutex
	requests []bridge.OrderRequest
	trailing map[string]float64 // order id → distance
}

func (p *trailer) SubmitOrder(ctx context.Context, req bridge.OrderRequest) (protocol.Order, error) {
	if !protocol.TrailingOrderType(req.OrderType) {
		return p.Platform.SubmitOrder(ctx, req)
	}
	p.mu.Lock()
	p.requests = append(p.requests, req)
	p.mu.Unlock()
	plain := req
	plain.TrailDistance = 0
	plain.OrderType = protocol.OrderTypeStopMarket
	if req.OrderType == protocol.OrderTypeTrailingStopLimit {
		plain.OrderType = protocol.OrderTypeStopLimit
	}
	if plain.StopPrice == 0 {
		q, err := p.Platform.Quote(ctx, req.Instrument)
		if err != nil {
			return protocol.Order{}, err
		}
		plain.StopPrice = q.Ask + req.TrailDistance
		if req.Action == protocol.ActionSell {
			plain.StopPrice = q.Bid - req.TrailDistance
		}
	}
	o, err := p.Platform.SubmitOrder(ctx, plain)
	if err != nil {
		return o, err
	}
	p.mu.Lock()
	if p.trailing == nil {
		p.trailing = map[string]float64{}
	}
	p.trailing[o.OrderID] = req.TrailDistance
	p.mu.Unlock()
	return p.dress(o), nil
}

func (p *trailer) Orders(ctx context.Context, account string) ([]protocol.Order, error) {
	os, err := p.Platform.Orders(ctx, account)
	for i := range os {
		os[i] = p.dress(os[i])
	}
	return os, err
}

// dress gives an order placed as a trailing one its trailing type.
func (p *trailer) dress(o protocol.Order) protocol.Order {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.trailing[o.OrderID]
	if !ok {
		return o
	}
	o.TrailDistance = d
	o.OrderType = protocol.OrderTypeTrailingStop
	if o.LimitPrice != 0 {
		o.OrderType = protocol.OrderTypeTrailingStopLimit
	}
	return o
}

// Requests returns the trailing orders that reached the platform.
func (p *trailer) Requests() []bridge.OrderRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]bridge.OrderRequest(nil), p.requests...)
}

// newTrailingFixture is a fixture whose platform has trailing orders.
func newTrailingFixture(t *testing.T) (*fixture, *trailer) {
	t.Helper()
	var tr *trailer
	f := newFixture(t, func(o *Options) {
		tr = &trailer{Platform: o.Platform}
		o.Platform = tr
	})
	return f, tr
}

func trailingArgs(typ string, distance float64) protocol.PlaceOrderArgs {
	return protocol.PlaceOrderArgs{Account: "Sim101", Action: "sell", Instrument: "ES", OrderType: typ,
		Quantity: 1, TimeInForce: "gtc", TrailDistance: ptr(distance)}
}

// A trailing order needs its distance and, for TrailingStopLimit, both
// prices; a distance is refused on any other type, and must be a positive
// multiple of the tick. Refusals name the field, never the value, and
// nothing reaches the platform.
func TestTrailingOrdersRefuseBadInput(t *testing.T) {
	t.Parallel()
	f, tr := newTrailingFixture(t)
	for _, tc := range []struct {
		name  string
		args  protocol.PlaceOrderArgs
		code  string
		names string // what the detail must name
	}{
		{"no distance", func() protocol.PlaceOrderArgs {
			a := trailingArgs("trailingStop", 0)
			a.TrailDistance = nil
			return a
		}(), protocol.CodeMissingFields, "trailDistance"},
		{"stop limit without prices", trailingArgs("TrailingStopLimit", 4), protocol.CodeMissingFields, "limitPrice, stopPrice"},
		{"stop limit without anything", func() protocol.PlaceOrderArgs {
			a := trailingArgs("TRAILINGSTOPLIMIT", 0)
			a.TrailDistance = nil
			return a
		}(), protocol.CodeMissingFields, "limitPrice, stopPrice, trailDistance"},
		{"distance on a market order", trailingArgs("Market", 4), protocol.CodeInvalidArgument, "trailDistance"},
		{"distance on a stop", func() protocol.PlaceOrderArgs {
			a := trailingArgs("StopMarket", 4)
			a.StopPrice = ptr(5990.0)
			return a
		}(), protocol.CodeInvalidArgument, "trailDistance"},
		{"zero distance", trailingArgs("TrailingStop", 0), protocol.CodeInvalidArgument, "trailDistance"},
		{"negative distance", trailingArgs("TrailingStop", -4.75), protocol.CodeInvalidArgument, "trailDistance"},
		{"huge distance", trailingArgs("TrailingStop", 4.75e12), protocol.CodeInvalidArgument, "trailDistance"},
		{"off-tick distance", trailingArgs("TrailingStop", 4.1), protocol.CodeInvalidArgument, "trailDistance"},
		{"off-tick starting stop", func() protocol.PlaceOrderArgs {
			a := trailingArgs("TrailingStop", 4)
			a.StopPrice = ptr(5990.13)
			return a
		}(), protocol.CodeInvalidArgument, "stopPrice"},
		{"negative starting stop", func() protocol.PlaceOrderArgs {
			a := trailingArgs("TrailingStop", 4)
			a.StopPrice = ptr(-5990.13)
			return a
		}(), protocol.CodeInvalidArgument, "stopPrice"},
		{"off-tick limit", func() protocol.PlaceOrderArgs {
			a := trailingArgs("TrailingStopLimit", 4)
			a.StopPrice, a.LimitPrice = ptr(5990.0), ptr(5989.13)
			return a
		}(), protocol.CodeInvalidArgument, "limitPrice"},
		{"unknown type", trailingArgs("TrailingStopMarket", 4), protocol.CodeInvalidArgument, "TrailingStop or TrailingStopLimit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.rec.Writes()
			_, err := f.ops.PlaceOrder(bg, tc.args)
			requireCode(t, err, tc.code, "4.75", "4.1", "5990.13", "5989.13", "TrailingStopMarket")
			require.Contains(t, err.Error(), tc.names)
			require.Equal(t, before, f.rec.Writes(), "nothing was placed")
		})
	}
	require.Empty(t, tr.Requests())
}

// A valid trailing order reaches the platform in its spelling, the
// instrument resolved, with its distance and the prices it has: a
// TrailingStop's stop only when one was sent.
func TestTrailingOrdersReachThePlatform(t *testing.T) {
	t.Parallel()
	f, tr := newTrailingFixture(t)
	res, err := f.ops.PlaceOrder(bg, trailingArgs("trailingstop", 4))
	require.NoError(t, err)
	require.Equal(t, protocol.OrderTypeTrailingStop, res.Order.OrderType)
	require.Equal(t, 4.0, res.Order.TrailDistance)
	m := shape(t, res.Order)
	require.Equal(t, 4.0, m["trailDistance"], "the record carries the distance")

	withStop := trailingArgs("TrailingStop", 2.5)
	withStop.Action, withStop.StopPrice, withStop.LimitPrice = "Buy", ptr(6002.0), ptr(6100.0)
	_, err = f.ops.PlaceOrder(bg, withStop)
	require.NoError(t, err)

	tsl := trailingArgs("TrailingStopLimit", 1.25)
	tsl.StopPrice, tsl.LimitPrice = ptr(5995.0), ptr(5994.0)
	flat, err := f.ops.FlatPlace(bg, tsl)
	require.NoError(t, err)
	require.Equal(t, protocol.OrderTypeTrailingStopLimit, flat.Order.OrderType)

	got := tr.Requests()
	require.Len(t, got, 3)
	for i, want := range []bridge.OrderRequest{
		{Account: "Sim101", Instrument: es, Action: protocol.ActionSell, OrderType: protocol.OrderTypeTrailingStop,
			Quantity: 1, TrailDistance: 4, TimeInForce: protocol.TimeInForceGtc},
		{Account: "Sim101", Instrument: es, Action: protocol.ActionBuy, OrderType: protocol.OrderTypeTrailingStop,
			Quantity: 1, StopPrice: 6002, TrailDistance: 2.5, TimeInForce: protocol.TimeInForceGtc},
		{Account: "Sim101", Instrument: es, Action: protocol.ActionSell, OrderType: protocol.OrderTypeTrailingStopLimit,
			Quantity: 1, StopPrice: 5995, LimitPrice: 5994, TrailDistance: 1.25, TimeInForce: protocol.TimeInForceGtc},
	} {
		require.Equal(t, want, got[i], "request %d", i)
	}

	// ReversePosition places a trailing order once the old position is
	// closed.
	f.market("Sim102", protocol.ActionBuy, 1)
	rev := protocol.ReversePositionArgs{Account: "Sim102", Instrument: "ES", Action: "Sell", Quantity: 1,
		OrderType: "TrailingStop", TimeInForce: "Day", TrailDistance: ptr(3.0)}
	_, err = f.ops.ReversePosition(bg, rev)
	require.NoError(t, err)
	got = tr.Requests()
	require.Len(t, got, 4)
	require.Equal(t, 3.0, got[3].TrailDistance)
	require.Equal(t, "Sim102", got[3].Account)
}

// Only a trailing order's quantity changes: its prices follow the market.
func TestTrailingOrderChange(t *testing.T) {
	t.Parallel()
	f, _ := newTrailingFixture(t)
	res, err := f.ops.PlaceOrder(bg, trailingArgs("TrailingStop", 4))
	require.NoError(t, err)
	for _, args := range []protocol.ChangeOrderArgs{
		{Account: "Sim101", OrderID: res.OrderID, StopPrice: ptr(5990.0)},
		{Account: "Sim101", OrderID: res.OrderID, LimitPrice: ptr(5990.0), Quantity: ptr(2)},
	} {
		before := f.rec.Writes()
		_, err := f.ops.ChangeOrder(bg, args)
		requireCode(t, err, protocol.CodeInvalidArgument, "5990")
		require.Contains(t, err.Error(), "only its quantity")
		require.Equal(t, before, f.rec.Writes(), "nothing was changed")
	}
	changed, err := f.ops.ChangeOrder(bg, protocol.ChangeOrderArgs{Account: "Sim101", OrderID: res.OrderID, Quantity: ptr(2)})
	require.NoError(t, err)
	require.Equal(t, 2, changed.Order.Quantity)
}

// On a platform without trailing orders (the simulator, NinjaTrader), a
// valid trailing order is not_supported: the detail says what to do
// instead, and nothing is placed.
func TestTrailingOrdersNotSupported(t *testing.T) {
	onEachPlatform(t, func(t *testing.T, newFixture fixtureMaker) {
		t.Parallel()
		f := newFixture(t)
		for _, typ := range []string{protocol.OrderTypeTrailingStop, protocol.OrderTypeTrailingStopLimit} {
			a := trailingArgs(typ, 4.75)
			a.StopPrice, a.LimitPrice = ptr(5990.25), ptr(5989.25)
			_, err := f.ops.PlaceOrder(bg, a)
			requireCode(t, err, protocol.CodeNotSupported, "4.75", "5990.25", "5989.25")
			require.True(t, strings.Contains(err.Error(), "trailing"), "the detail names what is missing: %v", err)
			require.Empty(t, f.working("Sim101"))
			require.Zero(t, f.position("Sim101"))
		}
	})
}
