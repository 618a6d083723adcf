// Package bridge defines the primitives the agent needs from a trading
// platform. Each platform (the simulator in bridge/sim, NinjaTrader later)
// implements only these primitives; every operation a caller can ask for
// (reverse, cancel-and-bracket, close by percent, …) is written once in
// agent/ops on top of them, so it behaves the same on every platform.
package bridge

import (
	"context"
	"errors"

	"tradebridge/protocol"
)

// Platform is a connected trading platform. Implementations are safe for
// concurrent use. Records use the wire shapes of package protocol.
type Platform interface {
	// Kind names the platform for the tunnel handshake: "sim", "ninjatrader".
	Kind() string
	// Connections lists the platform's connections and their accounts.
	Connections(ctx context.Context) ([]protocol.Connection, error)
	// Accounts lists every account with its current values.
	Accounts(ctx context.Context) ([]protocol.Account, error)
	// Account returns one account; ErrAccountNotFound if there is none.
	Account(ctx context.Context, name string) (protocol.Account, error)
	// Positions lists the account's open positions.
	Positions(ctx context.Context, account string) ([]protocol.Position, error)
	// SubmitOrder submits an order and returns it as the platform first
	// reports it (a market order may already be Filled).
	SubmitOrder(ctx context.Context, req OrderRequest) (protocol.Order, error)
	// Close releases the platform. It is idempotent.
	Close() error
}

// OrderRequest is an order to submit. Enumerated fields use the platform
// spellings of package protocol (Buy, Market, Day, …); prices are zero when
// the order type has none.
type OrderRequest struct {
	Account     string
	Instrument  string
	Action      string
	OrderType   string
	Quantity    int
	LimitPrice  float64
	StopPrice   float64
	TimeInForce string
	// Oco joins the order to an OCO group: when one order of the group
	// fills, the platform cancels the others.
	Oco string
	// OrderID is our own id for the order; the platform generates one when
	// it is empty.
	OrderID string
	// Name is the order's signal name as the platform shows it.
	Name        string
	StrategyTag string
}

// Errors every platform reports with these sentinels (wrapped with detail).
var (
	ErrAccountNotFound   = errors.New("bridge: account not found")
	ErrInstrumentUnknown = errors.New("bridge: unknown instrument")
	ErrOrderNotFound     = errors.New("bridge: order not found")
	ErrNotConnected      = errors.New("bridge: platform not connected")
)

// RejectError reports an order the platform refused, with its reason.
type RejectError struct {
	Reason string
}

func (e *RejectError) Error() string { return "bridge: order rejected: " + e.Reason }
