package tradovate

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/futures"
	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

var at = time.Date(2026, 10, 5, 14, 30, 0, 0, time.UTC)

// synced returns a platform whose mirror is a sync answer, without any
// connection.
func synced(t *testing.T, snap tradovatewire.SyncResponse) *Platform {
	t.Helper()
	s, err := NewSession(SessionOptions{Env: EnvDemo, Endpoints: DefaultEndpoints(),
		Token: Token{AccessToken: "x", Expires: at.Add(time.Hour)}, Now: func() time.Time { return at }})
	require.NoError(t, err)
	p, err := New(Options{Session: s, Now: func() time.Time { return at }})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close(); _ = s.Close() })
	p.contracts.add(tradovatewire.Contract{ID: 3001, Name: "ESZ6"})
	p.applySnapshot(42, snap, &socket{})
	return p
}

func TestMirrorFromSync(t *testing.T) {
	t.Parallel()
	ts := tradovatewire.FormatTime(at)
	p := synced(t, tradovatewire.SyncResponse{
		Accounts: []tradovatewire.Account{{ID: 1, Name: "DEMO1", Active: true}, {ID: 2, Name: "DEMO2", Active: true}},
		CashBalances: []tradovatewire.CashBalance{{ID: 9, AccountID: 1, Amount: 50000, RealizedPnL: -26.24,
			TradeDate: tradeDateOf(at)}},
		Orders: []tradovatewire.Order{{ID: 11, AccountID: 1, ContractID: 3001, Timestamp: ts, Action: "Buy", OrdStatus: "Filled"},
			{ID: 12, AccountID: 1, ContractID: 3001, Timestamp: ts, Action: "Sell", OrdStatus: "Filled"}},
		OrderVersions: []tradovatewire.OrderVersion{{ID: 21, OrderID: 11, OrderQty: 2, OrderType: "Market", TimeInForce: "Day"},
			{ID: 22, OrderID: 12, OrderQty: 2, OrderType: "Market", TimeInForce: "Day"}},
		Fills: []tradovatewire.Fill{{ID: 31, OrderID: 11, ContractID: 3001, Timestamp: ts, Action: "Buy", Qty: 2, Price: 6000.25, Active: true},
			{ID: 32, OrderID: 12, ContractID: 3001, Timestamp: ts, Action: "Sell", Qty: 2, Price: 6000, Active: true}},
		FillFees:  []tradovatewire.FillFee{{ID: 31, Commission: 1.24}, {ID: 32, Commission: 1.0, ExchangeFee: 0.24}},
		Positions: []tradovatewire.Position{{ID: 41, AccountID: 1, ContractID: 3001, NetPos: 0, Bought: 2, Sold: 2}},
	})
	ctx := context.Background()
	ps, err := p.Positions(ctx, "DEMO1")
	require.NoError(t, err)
	assert.Empty(t, ps, "a netPos 0 row is no position")

	exs, err := p.Executions(ctx, "DEMO1")
	require.NoError(t, err)
	require.Len(t, exs, 2)
	assert.Equal(t, protocol.Execution{ID: "31", OrderID: "11", Account: "DEMO1", Instrument: "ES 12-26",
		MarketPosition: protocol.MarketPositionLong, Quantity: 2, Price: 6000.25, Commission: 1.24,
		Time: protocol.FormatTime(at), Epoch: at.UnixMilli()}, exs[0])
	assert.Equal(t, 1.24, exs[1].Commission, "every fee counts")

	a, err := p.Account(ctx, "DEMO1")
	require.NoError(t, err)
	assert.Equal(t, protocol.AccountItem{CashValue: 50000, NetLiquidation: 50000, BuyingPower: 50000,
		RealizedProfitLoss: -26.24, GrossRealizedProfitLoss: -23.76, Commission: 2.48}, a.Item)
	assert.Equal(t, "Tradovate demo", a.Connection)

	os, err := p.Orders(ctx, "DEMO1")
	require.NoError(t, err)
	require.Len(t, os, 2)
	assert.Equal(t, protocol.OrderStateFilled, os[0].OrderState)
	assert.Equal(t, 2, os[0].Filled)
	assert.Equal(t, 6000.25, os[0].AverageFillPrice)

	cs, err := p.Connections(ctx)
	require.NoError(t, err)
	assert.Equal(t, []protocol.Connection{{Name: "Tradovate demo", Status: "Connected", Accounts: []string{"DEMO1", "DEMO2"}}}, cs)

	_, err = p.Account(ctx, "demo1")
	require.ErrorIs(t, err, bridge.ErrAccountNotFound)
}

func TestStateOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status, typ string
		triggered   bool
		qty, filled int
		want        string
	}{
		{"PendingNew", "Limit", false, 1, 0, protocol.OrderStateSubmitted},
		{"Working", "Limit", false, 1, 0, protocol.OrderStateWorking},
		{"Working", "Limit", false, 3, 1, protocol.OrderStatePartFilled},
		{"Working", "Stop", false, 1, 0, protocol.OrderStateAccepted},
		{"Working", "StopLimit", false, 1, 0, protocol.OrderStateAccepted},
		{"Working", "StopLimit", true, 1, 0, protocol.OrderStateWorking},
		{"Working", "TrailingStop", false, 1, 0, protocol.OrderStateAccepted},
		{"Working", "TrailingStopLimit", false, 1, 0, protocol.OrderStateAccepted},
		{"Working", "TrailingStopLimit", true, 1, 0, protocol.OrderStateWorking},
		{"Working", "TrailingStop", false, 2, 1, protocol.OrderStatePartFilled},
		{"Filled", "Market", false, 2, 1, protocol.OrderStatePartFilled},
		{"Filled", "Market", false, 2, 0, protocol.OrderStateWorking},
		{"Filled", "Market", false, 2, 2, protocol.OrderStateFilled},
		{"Completed", "Limit", false, 2, 1, protocol.OrderStateCancelled},
		{"Canceled", "Limit", false, 2, 1, protocol.OrderStateCancelled},
		{"Expired", "Limit", false, 1, 0, protocol.OrderStateCancelled},
		{"Rejected", "Limit", false, 1, 0, protocol.OrderStateRejected},
		{"PendingCancel", "Limit", false, 1, 0, protocol.OrderStateCancelPending},
		{"PendingReplace", "Limit", false, 1, 0, protocol.OrderStateChangePending},
		{"Mystery", "Limit", false, 1, 0, protocol.OrderStateUnknown},
	}
	for _, tt := range tests {
		os := &orderState{o: tradovatewire.Order{OrdStatus: tt.status}, v: tradovatewire.OrderVersion{OrderQty: tt.qty},
			typ: tt.typ, triggered: tt.triggered}
		assert.Equal(t, tt.want, stateOf(os, tt.filled), "%+v", tt)
	}
}

func TestContractNames(t *testing.T) {
	t.Parallel()
	now := at
	for _, tt := range []struct{ symbol, name string }{
		{"ESZ6", "ES 12-26"},
		{"ESH7", "ES 03-27"},
		{"ESZ5", "ES 12-25"}, // expired: the nearest year back
		{"CLX6", "CL 11-26"},
		{"QQZ6", "QQ 12-26"},
		{"oddname", "oddname"},
	} {
		name, _ := ourName(tt.symbol, now)
		assert.Equal(t, tt.name, name, tt.symbol)
	}
	c, err := futures.Resolve("ES", now)
	require.NoError(t, err)
	assert.Equal(t, "ESZ6", brokerSymbol(c))
}

func TestValidOrderID(t *testing.T) {
	t.Parallel()
	for id, ok := range map[string]bool{"a": true, "client-id.1": true, "x:y_z": true, "": false,
		"has space": false, "semi;colon": false, string(make([]byte, 65)): false} {
		assert.Equal(t, ok, validOrderID(id), "%q", id)
	}
}
