package bridgetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// eventChecks cover the Events stream.
func eventChecks() []check {
	return []check{
		{name: "Events/a fill: order, execution, position, account", run: func(t *testing.T, h Harness) {
			s := watch(t, h)
			o, err := h.Platform.SubmitOrder(t.Context(), marketOrder(acct, protocol.ActionBuy, 2))
			require.NoError(t, err)
			got := readFill(t, s, o.OrderID, protocol.MarketPositionLong)
			states := orderStates(got.all, o.OrderID)
			require.Equal(t, protocol.OrderStateSubmitted, states[0], "the order is first reported Submitted")
			require.Equal(t, protocol.OrderStateFilled, states[len(states)-1])
			require.Equal(t, 2, got.order.Filled)
			require.Equal(t, esAsk, got.order.AverageFillPrice)
			require.Equal(t, o.OrderID, got.execution.OrderID)
			require.Equal(t, 2, got.execution.Quantity)
			require.Equal(t, esAsk, got.execution.Price)
			require.Equal(t, acct, got.position.Account)
			require.Equal(t, 2, got.position.Quantity)
			require.Equal(t, esAsk, got.position.AveragePrice)
			require.Equal(t, acct, got.account.Name)
			// A broker reports the cash of a fill apart from it (Tradovate's
			// cash balance follows the fill and the position), and a quote
			// in between moves the account's open P&L: the account events
			// after the position reach the fill's cash, one of them first.
			account := got.account
			for cents(startingCash-2*commission) != account.Item.CashValue {
				evs := s.until(func(ev bridge.Event) bool { return ev.Kind == bridge.EventAccount && ev.Account.Name == acct })
				account = *evs[len(evs)-1].Account
			}
		}},
		{name: "Events/a position gone flat is reported Flat", run: func(t *testing.T, h Harness) {
			submit(t, h, marketOrder(acct, protocol.ActionSell, 1))
			s := watch(t, h)
			o, err := h.Platform.SubmitOrder(t.Context(), marketOrder(acct, protocol.ActionBuy, 1))
			require.NoError(t, err)
			got := readFill(t, s, o.OrderID, protocol.MarketPositionFlat)
			require.Equal(t, acct, got.position.Account)
			require.Equal(t, es, got.position.Instrument)
			require.Zero(t, got.position.Quantity)
		}},
		{name: "Events/resting orders: accepted, working, cancelled, changed", run: func(t *testing.T, h Harness) {
			s := watch(t, h)
			lim, err := h.Platform.SubmitOrder(t.Context(), limitOrder(acct, protocol.ActionBuy, 1, 5990))
			require.NoError(t, err)
			evs := s.until(isOrder(lim.OrderID, protocol.OrderStateWorking))
			require.Equal(t, []string{protocol.OrderStateSubmitted, protocol.OrderStateWorking}, orderStates(evs, lim.OrderID))
			stp, err := h.Platform.SubmitOrder(t.Context(), stopOrder(acct, protocol.ActionSell, 1, 5980))
			require.NoError(t, err)
			evs = s.until(isOrder(stp.OrderID, protocol.OrderStateAccepted))
			require.Equal(t, []string{protocol.OrderStateSubmitted, protocol.OrderStateAccepted}, orderStates(evs, stp.OrderID))

			_, err = h.Platform.ChangeOrder(t.Context(), bridge.ChangeRequest{Account: acct, OrderID: lim.OrderID, LimitPrice: 5985})
			require.NoError(t, err)
			ev := s.until(func(ev bridge.Event) bool {
				return ev.Kind == bridge.EventOrder && ev.Order.OrderID == lim.OrderID && ev.Order.LimitPrice == 5985
			})
			require.Equal(t, protocol.OrderStateWorking, ev[len(ev)-1].Order.OrderState)

			_, err = h.Platform.CancelOrder(t.Context(), acct, stp.OrderID)
			require.NoError(t, err)
			s.until(isOrder(stp.OrderID, protocol.OrderStateCancelled))
		}},
		{name: "Events/a resting order filled by the market", run: func(t *testing.T, h Harness) {
			lim := submit(t, h, limitOrder(acct, protocol.ActionSell, 1, 6010))
			s := watch(t, h)
			setPrice(t, h, es, 6010)
			got := readFill(t, s, lim.OrderID, protocol.MarketPositionShort)
			require.Equal(t, 6010.0, got.execution.Price)
			require.Equal(t, 1, got.position.Quantity)
		}},
		{name: "Events/account values follow the market", run: func(t *testing.T, h Harness) {
			submit(t, h, marketOrder(acct, protocol.ActionBuy, 1))
			s := watch(t, h)
			setPrice(t, h, es, 6010)
			evs := s.until(func(ev bridge.Event) bool {
				return ev.Kind == bridge.EventAccount && ev.Account.Name == acct &&
					ev.Account.Item.UnrealizedProfitLoss == (6010-esAsk)*50
			})
			require.NotEmpty(t, evs)
		}},
		{name: "Events/strategies", needs: CapStrategies, run: func(t *testing.T, h Harness) {
			s := watch(t, h)
			st, err := h.Platform.StartStrategy(t.Context(), bridge.StrategyRequest{Account: acct, Class: maCross,
				Instrument: es, Mode: protocol.StrategyModeDisabled})
			require.NoError(t, err)
			evs := s.until(func(ev bridge.Event) bool { return ev.Kind == bridge.EventStrategy && ev.Strategy.ID == st.ID })
			require.Equal(t, protocol.StrategyStateDisabled, evs[len(evs)-1].Strategy.State)
			_, err = h.Platform.SetStrategyState(t.Context(), acct, st.ID, bridge.StrategyEnable)
			require.NoError(t, err)
			evs = s.until(func(ev bridge.Event) bool { return ev.Kind == bridge.EventStrategy && ev.Strategy.ID == st.ID })
			require.Equal(t, protocol.StrategyStateEnabled, evs[len(evs)-1].Strategy.State)
		}},
		{name: "Events/refused orders publish nothing", run: func(t *testing.T, h Harness) {
			s := watch(t, h)
			_, err := h.Platform.SubmitOrder(t.Context(), marketOrder(acct, protocol.ActionBuy, 0))
			requireReject(t, err)
			_, err = h.Platform.SubmitOrder(t.Context(), stopOrder(acct, protocol.ActionBuy, 1, 5990))
			requireReject(t, err)
			o := submit(t, h, marketOrder(acct, protocol.ActionBuy, 1))
			ev := s.next()
			require.True(t, isOrder(o.OrderID, protocol.OrderStateSubmitted)(ev),
				"the first event is the accepted order's, got %s", ev.Kind)
		}},
		{name: "Events/every stream sees the same sequence", run: func(t *testing.T, h Harness) {
			a, b := watch(t, h), watch(t, h)
			o := submit(t, h, marketOrder(acct, protocol.ActionBuy, 1))
			done := isPosition(acct, es, protocol.MarketPositionLong)
			evA, evB := a.until(done), b.until(done)
			require.Equal(t, evA, evB)
			require.Contains(t, orderStates(evA, o.OrderID), protocol.OrderStateFilled)
		}},
		{name: "Events/a stream ends when its ctx ends", run: func(t *testing.T, h Harness) {
			ctx, cancel := context.WithCancel(t.Context())
			s := &stream{t: t, ch: h.Platform.Events(ctx)}
			other := watch(t, h)
			cancel()
			s.ended()
			o := submit(t, h, marketOrder(acct, protocol.ActionBuy, 1))
			other.until(isOrder(o.OrderID, protocol.OrderStateFilled))
		}},
		{name: "Events/streams end when the platform closes", run: func(t *testing.T, h Harness) {
			s := watch(t, h)
			require.NoError(t, h.Platform.Close())
			s.ended()
		}},
	}
}

// fill is what the stream told of one fill.
type fill struct {
	all       []bridge.Event
	order     protocol.Order
	execution protocol.Execution
	position  protocol.Position
	account   protocol.Account
}

// readFill reads a stream until it has told of an order's fill: the order
// Filled, its execution, the account's position in ES in the direction
// given, and then the account. The execution comes before the position
// and the account.
func readFill(t *testing.T, s *stream, orderID, marketPosition string) fill {
	t.Helper()
	var f fill
	var order, exec, pos, acc int = -1, -1, -1, -1
	f.all = s.until(func(ev bridge.Event) bool {
		switch {
		case isOrder(orderID, protocol.OrderStateFilled)(ev):
			f.order, order = *ev.Order, int(ev.Seq)
		case ev.Kind == bridge.EventExecution && ev.Execution.OrderID == orderID:
			f.execution, exec = *ev.Execution, int(ev.Seq)
		case exec >= 0 && isPosition(acct, es, marketPosition)(ev):
			f.position, pos = *ev.Position, int(ev.Seq)
		case pos >= 0 && ev.Kind == bridge.EventAccount && ev.Account.Name == acct:
			f.account, acc = *ev.Account, int(ev.Seq)
		}
		return order >= 0 && exec >= 0 && pos >= 0 && acc >= 0
	})
	return f
}

// closeChecks cover Close, and calls whose ctx already ended.
func closeChecks() []check {
	return []check{
		{name: "Calls/a ctx already ended is refused and does nothing", run: func(t *testing.T, h Harness) {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			_, err := h.Platform.SubmitOrder(ctx, marketOrder(acct, protocol.ActionBuy, 1))
			require.ErrorIs(t, err, context.Canceled)
			require.ErrorIs(t, h.Platform.Flatten(ctx, acct, es), context.Canceled)
			_, err = h.Platform.StartStrategy(ctx, bridge.StrategyRequest{Account: acct, Class: maCross, Instrument: es})
			if h.lacks(CapStrategies) {
				requireOneOf(t, err, context.Canceled, bridge.ErrNotSupported)
			} else {
				require.ErrorIs(t, err, context.Canceled)
			}
			_, err = h.Platform.Accounts(ctx)
			require.ErrorIs(t, err, context.Canceled)
			requireNotRecorded(t, h, acct)
			if !h.lacks(CapStrategies) {
				require.Empty(t, strategiesOf(t, h, acct))
			}
		}},
		// A primitive the platform lacks may answer ErrNotSupported after
		// Close as before it (and AtmTemplates, without CapATM, its empty
		// list).
		{name: "Close/idempotent; afterwards calls fail with ErrNotConnected", run: func(t *testing.T, h Harness) {
			require.NoError(t, h.Platform.Close())
			require.NoError(t, h.Platform.Close())
			ctx := t.Context()
			p := h.Platform
			lacked := map[string]Capability{"Bars": CapBars, "AtmTemplates": CapATM,
				"Strategies": CapStrategies, "StartStrategy": CapStrategies, "SetStrategyState": CapStrategies}
			for name, call := range map[string]func() error{
				"Connections": func() error { _, err := p.Connections(ctx); return err },
				"Accounts":    func() error { _, err := p.Accounts(ctx); return err },
				"Account":     func() error { _, err := p.Account(ctx, acct); return err },
				"Watermarks":  func() error { _, err := p.Watermarks(ctx, acct); return err },
				"Positions":   func() error { _, err := p.Positions(ctx, acct); return err },
				"Orders":      func() error { _, err := p.Orders(ctx, acct); return err },
				"Executions":  func() error { _, err := p.Executions(ctx, acct); return err },
				"SubmitOrder": func() error {
					_, err := p.SubmitOrder(ctx, marketOrder(acct, protocol.ActionBuy, 1))
					return err
				},
				"CancelOrder": func() error { _, err := p.CancelOrder(ctx, acct, "x"); return err },
				"ChangeOrder": func() error {
					_, err := p.ChangeOrder(ctx, bridge.ChangeRequest{Account: acct, OrderID: "x", Quantity: 2})
					return err
				},
				"Flatten":     func() error { return p.Flatten(ctx, acct, es) },
				"Instrument":  func() error { _, err := p.Instrument(ctx, es); return err },
				"Quote":       func() error { _, err := p.Quote(ctx, es); return err },
				"Subscribe":   func() error { return p.Subscribe(ctx, []string{es}) },
				"Unsubscribe": func() error { return p.Unsubscribe(ctx, []string{es}) },
				"Bars": func() error {
					_, err := p.Bars(ctx, bridge.BarsRequest{Instrument: es, PeriodType: protocol.PeriodMinute})
					return err
				},
				"AtmTemplates": func() error { _, err := p.AtmTemplates(ctx); return err },
				"Strategies":   func() error { _, err := p.Strategies(ctx, acct); return err },
				"StartStrategy": func() error {
					_, err := p.StartStrategy(ctx, bridge.StrategyRequest{Account: acct, Class: maCross, Instrument: es})
					return err
				},
				"SetStrategyState": func() error {
					_, err := p.SetStrategyState(ctx, acct, "x", bridge.StrategyEnable)
					return err
				},
			} {
				err := call()
				switch c, ok := lacked[name]; {
				case ok && h.lacks(c) && c == CapATM && err == nil:
					// An empty list, as before Close.
				case ok && h.lacks(c):
					requireOneOf(t, err, bridge.ErrNotConnected, bridge.ErrNotSupported)
				default:
					require.ErrorIs(t, err, bridge.ErrNotConnected, name)
				}
			}
			s := watch(t, h)
			s.ended() // a stream opened after Close is closed
		}},
	}
}
