package ops

import (
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
)

func limit(amount float64) protocol.Limit { return protocol.Limit{Enabled: true, Amount: amount} }

func TestRestartVerdict(t *testing.T) {
	t.Parallel()
	// Realized -400 before commission, 25 of commission, -80 open.
	item := protocol.AccountItem{GrossRealizedProfitLoss: -400, Commission: 25, UnrealizedProfitLoss: -80,
		RealizedProfitLoss: -425}
	up := protocol.AccountItem{GrossRealizedProfitLoss: 900, Commission: 30, UnrealizedProfitLoss: 150, RealizedProfitLoss: 870}
	for _, tc := range []struct {
		name   string
		m      protocol.Monitor
		item   protocol.AccountItem
		retrip bool
		reason string
	}{
		{"no limit enabled", protocol.Monitor{LossLimit: protocol.Limit{Amount: 100}, ProfitTarget: protocol.Limit{Amount: 100}}, item, false, ""},
		{"loss limit beyond the realized loss", protocol.Monitor{LossLimit: limit(500)}, item, false, ""},
		{"loss limit exactly at the realized loss", protocol.Monitor{LossLimit: limit(400)}, item, true, reasonLossLimit},
		{"loss limit within the realized loss", protocol.Monitor{LossLimit: limit(300)}, item, true, reasonLossLimit},
		{"unrealized counts when included", protocol.Monitor{LossLimit: limit(450), IncludeUnrealized: true}, item, true, reasonLossLimit},
		{"unrealized ignored otherwise", protocol.Monitor{LossLimit: limit(450)}, item, false, ""},
		{"commission counts when included", protocol.Monitor{LossLimit: limit(425), IncludeCommission: true}, item, true, reasonLossLimit},
		{"commission ignored otherwise", protocol.Monitor{LossLimit: limit(425)}, item, false, ""},
		{"both included", protocol.Monitor{LossLimit: limit(505), IncludeUnrealized: true, IncludeCommission: true}, item, true, reasonLossLimit},
		{"both included, a cent short", protocol.Monitor{LossLimit: limit(505.01), IncludeUnrealized: true, IncludeCommission: true}, item, false, ""},
		{"a profit target is not reached by a loss", protocol.Monitor{ProfitTarget: limit(1)}, item, false, ""},
		{"profit target beyond the profit", protocol.Monitor{ProfitTarget: limit(1000)}, up, false, ""},
		{"profit target exactly at the profit", protocol.Monitor{ProfitTarget: limit(900)}, up, true, reasonProfitTarget},
		{"profit target reached with unrealized", protocol.Monitor{ProfitTarget: limit(1000), IncludeUnrealized: true}, up, true, reasonProfitTarget},
		{"profit target missed with commission", protocol.Monitor{ProfitTarget: limit(900), IncludeCommission: true}, up, false, ""},
		{"a loss limit is not reached by a profit", protocol.Monitor{LossLimit: limit(1)}, up, false, ""},
		{"the loss limit is judged first", protocol.Monitor{LossLimit: limit(100), ProfitTarget: limit(-1000)}, item, true, reasonLossLimit},
		{"trailing drawdown is not judged yet", protocol.Monitor{TrailingDrawdown: limit(1)}, item, false, ""},
		{"cents are exact", protocol.Monitor{LossLimit: limit(0.3)},
			protocol.AccountItem{GrossRealizedProfitLoss: -0.1 - 0.2}, true, reasonLossLimit},
		{"a flat session", protocol.Monitor{LossLimit: limit(100), ProfitTarget: limit(100), IncludeUnrealized: true, IncludeCommission: true},
			protocol.AccountItem{}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := restartVerdict(tc.m, tc.item)
			require.Equal(t, protocol.RestartVerdict{WouldRetrip: tc.retrip, Reason: tc.reason}, got)
		})
	}
}

// CheckMonitorRestart reads the account's values from the platform.
func TestCheckMonitorRestart(t *testing.T) {
	f := newFixture(t)
	buy := protocol.PlaceOrderArgs{Account: "Sim101", Action: "Buy", Instrument: "ES", OrderType: "Market", Quantity: 2, TimeInForce: "Day"}
	_, err := f.ops.PlaceOrder(bg, buy)
	require.NoError(t, err)
	require.NoError(t, f.sim.SetPrice(es, 5990))
	sell := buy
	sell.Action, sell.Quantity = "Sell", 1
	_, err = f.ops.PlaceOrder(bg, sell)
	require.NoError(t, err)
	require.NoError(t, f.sim.SetPrice(es, 5980))

	acct, err := f.sim.Account(bg, "Sim101")
	require.NoError(t, err)
	realized, open, commission := acct.Item.GrossRealizedProfitLoss, acct.Item.UnrealizedProfitLoss, acct.Item.Commission
	require.Negative(t, realized, "one contract closed at a loss")
	require.Negative(t, open, "one contract open at a loss")
	require.Positive(t, commission)

	for _, tc := range []struct {
		name   string
		m      protocol.Monitor
		retrip bool
		reason string
	}{
		{"loss limit at the realized loss", protocol.Monitor{LossLimit: limit(-realized)}, true, reasonLossLimit},
		{"loss limit beyond the realized loss", protocol.Monitor{LossLimit: limit(-realized + 0.01)}, false, ""},
		{"loss limit beyond it, reached with unrealized", protocol.Monitor{LossLimit: limit(-realized + 0.01), IncludeUnrealized: true}, true, reasonLossLimit},
		{"loss limit beyond it, reached with commission", protocol.Monitor{LossLimit: limit(-realized + 0.01), IncludeCommission: true}, true, reasonLossLimit},
		{"a new limit beyond everything", protocol.Monitor{LossLimit: limit(-(realized + open - commission) + 0.01), IncludeUnrealized: true, IncludeCommission: true}, false, ""},
		{"profit target", protocol.Monitor{ProfitTarget: limit(100)}, false, ""},
	} {
		tc.m.Account = "Sim101"
		got, err := f.ops.CheckMonitorRestart(bg, protocol.RestartCheck{Monitor: tc.m})
		require.NoError(t, err, tc.name)
		require.Equal(t, protocol.RestartVerdict{WouldRetrip: tc.retrip, Reason: tc.reason}, got, tc.name)
	}

	for _, tc := range []struct {
		account, code string
	}{
		{"", protocol.CodeMissingFields},
		{"NoSuchAccount", protocol.CodeAccountNotFound},
		{"bad\x00name", protocol.CodeInvalidArgument},
	} {
		_, err := f.ops.CheckMonitorRestart(bg, protocol.RestartCheck{Monitor: protocol.Monitor{Account: tc.account, LossLimit: limit(1)}})
		var pe *protocol.Error
		require.ErrorAs(t, err, &pe, tc.account)
		require.Equal(t, tc.code, pe.Code, tc.account)
		require.NotContains(t, pe.Detail, "NoSuchAccount", "the account sent is never echoed")
	}
	require.Equal(t, []string{"submit Buy Market", "submit Sell Market"}, f.rec.Writes(), "the check changes nothing")
}
