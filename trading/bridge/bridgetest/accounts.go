package bridgetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// accountChecks cover the platform's identity, accounts, positions, orders,
// executions and watermarks.
func accountChecks() []check {
	return []check{
		{name: "Kind/named", run: func(t *testing.T, h Harness) {
			require.NotEmpty(t, h.Platform.Kind())
		}},
		{name: "Connections/list the accounts", run: func(t *testing.T, h Harness) {
			cs, err := h.Platform.Connections(t.Context())
			require.NoError(t, err)
			require.NotEmpty(t, cs)
			var names []string
			for _, c := range cs {
				require.NotEmpty(t, c.Name)
				require.NotEmpty(t, c.Status)
				names = append(names, c.Accounts...)
			}
			require.Equal(t, []string{acct, acct2}, names)
		}},
		{name: "Accounts/every account with its values", run: func(t *testing.T, h Harness) {
			as, err := h.Platform.Accounts(t.Context())
			require.NoError(t, err)
			require.Len(t, as, 2)
			for i, name := range []string{acct, acct2} {
				a := as[i]
				require.Equal(t, name, a.Name)
				require.Equal(t, startingCash, a.Item.CashValue)
				require.Equal(t, startingCash, a.Item.NetLiquidation)
				require.Zero(t, a.Item.RealizedProfitLoss)
				require.Zero(t, a.Item.UnrealizedProfitLoss)
				require.Zero(t, a.Item.Commission)
			}
		}},
		{name: "Account/one account", run: func(t *testing.T, h Harness) {
			as, err := h.Platform.Accounts(t.Context())
			require.NoError(t, err)
			a := accountOf(t, h, acct2)
			require.Equal(t, as[1], a)
		}},
		{name: "Account/unknown is ErrAccountNotFound", run: func(t *testing.T, h Harness) {
			_, err := h.Platform.Account(t.Context(), "NoSuchAcct")
			requireIs(t, err, bridge.ErrAccountNotFound, "NoSuchAcct")
			_, err = h.Platform.Account(t.Context(), "sim101")
			requireIs(t, err, bridge.ErrAccountNotFound, "sim101")
		}},
		{name: "Account/values after a round turn", run: func(t *testing.T, h Harness) {
			submit(t, h, marketOrder(acct, protocol.ActionBuy, 2))  // at the ask
			submit(t, h, marketOrder(acct, protocol.ActionSell, 2)) // at the bid
			a := accountOf(t, h, acct)
			gross := (esBid - esAsk) * 2 * 50
			require.Equal(t, gross, a.Item.GrossRealizedProfitLoss)
			require.Equal(t, cents(4*commission), a.Item.Commission)
			require.Equal(t, cents(gross-4*commission), a.Item.RealizedProfitLoss)
			require.Equal(t, cents(startingCash+gross-4*commission), a.Item.CashValue)
			require.Equal(t, a.Item.CashValue, a.Item.NetLiquidation)
			require.Zero(t, a.Item.UnrealizedProfitLoss)
			require.Equal(t, startingCash, accountOf(t, h, acct2).Item.CashValue, "other accounts are untouched")
		}},
		{name: "Positions/open positions", run: func(t *testing.T, h Harness) {
			require.Empty(t, positionsOf(t, h, acct))
			submit(t, h, marketOrder(acct, protocol.ActionBuy, 2))
			ps := positionsOf(t, h, acct)
			require.Len(t, ps, 1)
			p := ps[0]
			require.Equal(t, acct, p.Account)
			require.Equal(t, es, p.Instrument, "the full contract name")
			require.Equal(t, protocol.MarketPositionLong, p.MarketPosition)
			require.Equal(t, 2, p.Quantity)
			require.Equal(t, esAsk, p.AveragePrice)
			require.Empty(t, positionsOf(t, h, acct2))

			setPrice(t, h, es, 6010)
			p = positionsOf(t, h, acct)[0]
			require.Equal(t, 6010.0, p.MarketPrice)
			require.Equal(t, (6010-esAsk)*2*50, p.UnrealizedProfitLoss)
		}},
		{name: "Positions/short", run: func(t *testing.T, h Harness) {
			submit(t, h, marketOrder(acct, protocol.ActionSell, 3))
			ps := positionsOf(t, h, acct)
			require.Len(t, ps, 1)
			require.Equal(t, protocol.MarketPositionShort, ps[0].MarketPosition)
			require.Equal(t, 3, ps[0].Quantity)
			require.Equal(t, esBid, ps[0].AveragePrice)
		}},
		{name: "Positions/never list flat positions", run: func(t *testing.T, h Harness) {
			submit(t, h, marketOrder(acct, protocol.ActionBuy, 2))
			submit(t, h, marketOrder(acct, protocol.ActionSell, 2))
			require.Empty(t, positionsOf(t, h, acct))
		}},
		{name: "Positions/unknown account", run: func(t *testing.T, h Harness) {
			_, err := h.Platform.Positions(t.Context(), "NoSuchAcct")
			requireIs(t, err, bridge.ErrAccountNotFound, "NoSuchAcct")
		}},
		{name: "Orders/oldest first, terminal included", run: func(t *testing.T, h Harness) {
			lim := submit(t, h, limitOrder(acct, protocol.ActionBuy, 1, 5990))
			mkt := submit(t, h, marketOrder(acct, protocol.ActionBuy, 1))
			stp := submit(t, h, stopOrder(acct, protocol.ActionSell, 1, 5980))
			_, err := h.Platform.CancelOrder(t.Context(), acct, lim.OrderID)
			require.NoError(t, err)
			os := ordersOf(t, h, acct)
			require.Len(t, os, 3)
			require.Equal(t, []string{lim.OrderID, mkt.OrderID, stp.OrderID},
				[]string{os[0].OrderID, os[1].OrderID, os[2].OrderID})
			require.Equal(t, []string{protocol.OrderStateCancelled, protocol.OrderStateFilled, protocol.OrderStateAccepted},
				[]string{os[0].OrderState, os[1].OrderState, os[2].OrderState})
			for _, o := range os {
				require.Equal(t, acct, o.Account)
				require.Equal(t, es, o.Instrument)
			}
			require.Empty(t, ordersOf(t, h, acct2), "orders are per account")
		}},
		{name: "Orders/unknown account", run: func(t *testing.T, h Harness) {
			_, err := h.Platform.Orders(t.Context(), "NoSuchAcct")
			requireIs(t, err, bridge.ErrAccountNotFound, "NoSuchAcct")
		}},
		{name: "Executions/the session's fills, oldest first", run: func(t *testing.T, h Harness) {
			buy := submit(t, h, marketOrder(acct, protocol.ActionBuy, 2))
			sell := submit(t, h, marketOrder(acct, protocol.ActionSell, 1))
			exs, err := h.Platform.Executions(t.Context(), acct)
			require.NoError(t, err)
			require.Len(t, exs, 2)
			for i, want := range []struct {
				order, side string
				qty         int
				price       float64
			}{
				{buy.OrderID, protocol.MarketPositionLong, 2, esAsk},
				{sell.OrderID, protocol.MarketPositionShort, 1, esBid},
			} {
				e := exs[i]
				require.NotEmpty(t, e.ID)
				require.Equal(t, want.order, e.OrderID)
				require.Equal(t, acct, e.Account)
				require.Equal(t, es, e.Instrument)
				require.Equal(t, want.side, e.MarketPosition)
				require.Equal(t, want.qty, e.Quantity)
				require.Equal(t, want.price, e.Price)
				require.Equal(t, cents(float64(want.qty)*commission), e.Commission)
				require.NotEmpty(t, e.Time)
				require.Equal(t, Start.UnixMilli(), e.Epoch, "fill times come from the market's clock")
			}
			require.NotEqual(t, exs[0].ID, exs[1].ID)
			other, err := h.Platform.Executions(t.Context(), acct2)
			require.NoError(t, err)
			require.Empty(t, other)
			_, err = h.Platform.Executions(t.Context(), "NoSuchAcct")
			requireIs(t, err, bridge.ErrAccountNotFound, "NoSuchAcct")
		}},
		{name: "Watermarks/follow the session", run: func(t *testing.T, h Harness) {
			w, err := h.Platform.Watermarks(t.Context(), acct)
			require.NoError(t, err)
			require.Equal(t, acct, w.Account)
			require.Equal(t, protocol.WatermarkValues{NetLiqHigh: startingCash, NetLiqLow: startingCash}, w.Watermarks)
			require.Equal(t, protocol.WatermarkStats{NetLiq: startingCash}, w.Stats)
			require.Equal(t, "2026-10-04T22:00:00.000Z", w.SessionStart, "the session opened Sunday 18:00 New York time")

			submit(t, h, marketOrder(acct, protocol.ActionBuy, 1)) // at 6000.25
			setPrice(t, h, es, 6010)                               // +487.50
			setPrice(t, h, es, 5990)                               // -512.50
			w, err = h.Platform.Watermarks(t.Context(), acct)
			require.NoError(t, err)
			up, down := (6010-esAsk)*50, (5990-esAsk)*50
			require.Equal(t, protocol.WatermarkValues{
				PnlHigh: cents(up - commission), PnlLow: cents(down - commission),
				NetLiqHigh: cents(startingCash + up - commission), NetLiqLow: cents(startingCash + down - commission),
				UnrealHigh: up, UnrealLow: down,
			}, w.Watermarks)
			require.Equal(t, protocol.WatermarkStats{
				Pnl: cents(down - commission), Realized: -commission, Unrealized: down, Total: cents(down - commission),
				NetLiq: cents(startingCash + down - commission), PosCount: 1, Commission: commission,
			}, w.Stats)
			_, err = h.Platform.Watermarks(t.Context(), "NoSuchAcct")
			requireIs(t, err, bridge.ErrAccountNotFound, "NoSuchAcct")
		}},
	}
}
