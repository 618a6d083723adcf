package tradovate

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// userProps hands p a props event as its user socket would.
func userProps(t *testing.T, p *Platform, entityType string, entity any) {
	t.Helper()
	m, err := tradovatewire.Event(tradovatewire.EventProps, map[string]any{"entityType": entityType,
		"eventType": tradovatewire.EventCreated, "entity": entity})
	require.NoError(t, err)
	p.onUserEvent(m)
}

// An order published under the broker's id (its version's text is not
// ours) is published again under our id once the placement's command
// echoes our id as its clOrdId; a command echoing the id of a refused
// placement leaves its order unshown.
func TestCommandBindsAnOrderAlreadyPublished(t *testing.T) {
	t.Parallel()
	ts := tradovatewire.FormatTime(at)
	p := synced(t, tradovatewire.SyncResponse{Accounts: []tradovatewire.Account{{ID: 1, Name: "DEMO1", Active: true}}})
	require.NoError(t, p.ids.reserve("ours-1", orderRecord{Account: "DEMO1", Name: "Entry", At: at}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs := p.Events(ctx)

	userProps(t, p, tradovatewire.EntityOrder, tradovatewire.Order{ID: 11, AccountID: 1, ContractID: 3001, Timestamp: ts,
		Action: tradovatewire.ActionBuy, OrdStatus: tradovatewire.StatusWorking})
	userProps(t, p, tradovatewire.EntityOrderVersion, tradovatewire.OrderVersion{ID: 21, OrderID: 11, OrderQty: 1,
		OrderType: tradovatewire.OrderTypeLimit, Price: 5990, TimeInForce: tradovatewire.TIFDay, Text: "changed"})
	os, err := p.Orders(ctx, "DEMO1")
	require.NoError(t, err)
	require.Len(t, os, 1)
	require.Equal(t, "11", os[0].OrderID, "not known as ours yet")

	userProps(t, p, tradovatewire.EntityCommand, tradovatewire.Command{ID: 31, OrderID: 11, Timestamp: ts, ClOrdID: "ours-1",
		CommandType: tradovatewire.CommandNew, CommandStatus: tradovatewire.CommandAtExecution})
	os, err = p.Orders(ctx, "DEMO1")
	require.NoError(t, err)
	require.Len(t, os, 1)
	assert.Equal(t, "ours-1", os[0].OrderID)
	assert.Equal(t, "Entry", os[0].Name)
	var last bridge.Event
	for len(evs) > 0 {
		last = <-evs
	}
	require.NotNil(t, last.Order, "the order is published again")
	assert.Equal(t, "ours-1", last.Order.OrderID)

	// A placement the broker refused: the order its command names is not
	// ours to show.
	p.mu.Lock()
	p.failed["ours-2"] = true
	p.mu.Unlock()
	userProps(t, p, tradovatewire.EntityCommand, tradovatewire.Command{ID: 32, OrderID: 12, Timestamp: ts, ClOrdID: "ours-2",
		CommandType: tradovatewire.CommandNew, CommandStatus: tradovatewire.CommandRiskRejected})
	userProps(t, p, tradovatewire.EntityOrder, tradovatewire.Order{ID: 12, AccountID: 1, ContractID: 3001, Timestamp: ts,
		Action: tradovatewire.ActionBuy, OrdStatus: tradovatewire.StatusRejected})
	userProps(t, p, tradovatewire.EntityOrderVersion, tradovatewire.OrderVersion{ID: 22, OrderID: 12, OrderQty: 1,
		OrderType: tradovatewire.OrderTypeMarket, TimeInForce: tradovatewire.TIFDay})
	os, err = p.Orders(ctx, "DEMO1")
	require.NoError(t, err)
	require.Len(t, os, 1)
	assert.Equal(t, "ours-1", os[0].OrderID)

	// The command of a placement in flight binds its order; the broker
	// then refuses the placement: the order is not shown either.
	require.NoError(t, p.ids.reserve("ours-3", orderRecord{Account: "DEMO1", At: at}))
	p.startPlacing()
	userProps(t, p, tradovatewire.EntityCommand, tradovatewire.Command{ID: 33, OrderID: 13, Timestamp: ts, ClOrdID: "ours-3",
		CommandType: tradovatewire.CommandNew, CommandStatus: tradovatewire.CommandRiskRejected})
	userProps(t, p, tradovatewire.EntityOrder, tradovatewire.Order{ID: 13, AccountID: 1, ContractID: 3001, Timestamp: ts,
		Action: tradovatewire.ActionBuy, OrdStatus: tradovatewire.StatusRejected})
	userProps(t, p, tradovatewire.EntityOrderVersion, tradovatewire.OrderVersion{ID: 23, OrderID: 13, OrderQty: 1,
		OrderType: tradovatewire.OrderTypeMarket, TimeInForce: tradovatewire.TIFDay})
	p.ids.release("ours-3")
	p.donePlacing("ours-3")
	os, err = p.Orders(ctx, "DEMO1")
	require.NoError(t, err)
	require.Len(t, os, 1)
	assert.Equal(t, "ours-1", os[0].OrderID)
}
