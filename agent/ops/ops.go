// Package ops implements the agent's RPC functions on top of the platform
// primitives of package bridge. Every operation is written here once, so it
// behaves the same on the simulator and on NinjaTrader; argument checking
// happens here too, before anything reaches the platform.
package ops

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"tradebridge/agent/bridge"
	"tradebridge/protocol"
)

// Ops runs operations against one platform.
type Ops struct {
	p bridge.Platform
}

// New returns Ops over p.
func New(p bridge.Platform) (*Ops, error) {
	if p == nil {
		return nil, errors.New("ops: a platform is required")
	}
	return &Ops{p: p}, nil
}

// ListAccounts returns every account.
func (o *Ops) ListAccounts(ctx context.Context) ([]protocol.Account, error) {
	accts, err := o.p.Accounts(ctx)
	return accts, wireError(err)
}

// GetAccount returns one account.
func (o *Ops) GetAccount(ctx context.Context, args protocol.AccountArgs) (protocol.Account, error) {
	if err := requireAccount(args.Account); err != nil {
		return protocol.Account{}, err
	}
	a, err := o.p.Account(ctx, args.Account)
	return a, wireError(err)
}

// ListPositions returns the account's open positions.
func (o *Ops) ListPositions(ctx context.Context, args protocol.AccountArgs) ([]protocol.Position, error) {
	if err := requireAccount(args.Account); err != nil {
		return nil, err
	}
	ps, err := o.p.Positions(ctx, args.Account)
	if err != nil {
		return nil, wireError(err)
	}
	if ps == nil {
		ps = []protocol.Position{}
	}
	return ps, nil
}

// PlaceOrder checks and submits one order.
func (o *Ops) PlaceOrder(ctx context.Context, args protocol.PlaceOrderArgs) (protocol.OrderResult, error) {
	req, err := orderRequest(args)
	if err != nil {
		return protocol.OrderResult{}, err
	}
	order, err := o.p.SubmitOrder(ctx, req)
	if err != nil {
		return protocol.OrderResult{}, wireError(err)
	}
	return protocol.OrderResult{OrderID: order.OrderID, Order: order}, nil
}

// orderRequest validates PlaceOrder arguments into a platform order.
func orderRequest(a protocol.PlaceOrderArgs) (bridge.OrderRequest, error) {
	var missing []string
	for _, f := range []struct{ name, v string }{
		{"account", a.Account}, {"action", a.Action}, {"instrument", a.Instrument},
		{"orderType", a.OrderType}, {"timeInForce", a.TimeInForce},
	} {
		if strings.TrimSpace(f.v) == "" {
			missing = append(missing, f.name)
		}
	}
	if a.Quantity == 0 {
		missing = append(missing, "quantity")
	}
	if len(missing) > 0 {
		return bridge.OrderRequest{}, protocol.NewError(protocol.CodeMissingFields, "missing required fields: "+strings.Join(missing, ", "))
	}
	action, ok := protocol.NormalizeAction(a.Action)
	if !ok {
		return bridge.OrderRequest{}, invalid("action must be Buy or Sell")
	}
	orderType, ok := protocol.NormalizeOrderType(a.OrderType)
	if !ok {
		return bridge.OrderRequest{}, invalid("orderType must be Market, Limit, StopMarket or StopLimit")
	}
	tif, ok := protocol.NormalizeTimeInForce(a.TimeInForce)
	if !ok {
		return bridge.OrderRequest{}, invalid("timeInForce must be Day or Gtc")
	}
	if a.Quantity < 0 || a.Quantity > 10_000 {
		return bridge.OrderRequest{}, invalid("quantity must be between 1 and 10000")
	}
	req := bridge.OrderRequest{
		Account: a.Account, Instrument: a.Instrument, Action: action, OrderType: orderType,
		Quantity: a.Quantity, TimeInForce: tif, Oco: a.OcoID, OrderID: a.OrderID,
		StrategyTag: a.StrategyTag,
	}
	needLimit := orderType == protocol.OrderTypeLimit || orderType == protocol.OrderTypeStopLimit
	needStop := orderType == protocol.OrderTypeStopMarket || orderType == protocol.OrderTypeStopLimit
	var err error
	if req.LimitPrice, err = price("limitPrice", a.LimitPrice, needLimit); err != nil {
		return bridge.OrderRequest{}, err
	}
	if req.StopPrice, err = price("stopPrice", a.StopPrice, needStop); err != nil {
		return bridge.OrderRequest{}, err
	}
	return req, nil
}

// price checks an optional price: required when the order type uses it,
// ignored (zero) when it does not.
func price(name string, p *float64, required bool) (float64, error) {
	if !required {
		return 0, nil
	}
	if p == nil {
		return 0, protocol.NewError(protocol.CodeMissingFields, "missing required fields: "+name)
	}
	if math.IsNaN(*p) || math.IsInf(*p, 0) || *p <= 0 || *p > 1e9 {
		return 0, invalid(name + " must be a positive price")
	}
	return *p, nil
}

func requireAccount(account string) error {
	if strings.TrimSpace(account) == "" {
		return protocol.NewError(protocol.CodeMissingFields, "missing required fields: account")
	}
	return nil
}

func invalid(detail string) error { return protocol.NewError(protocol.CodeInvalidArgument, detail) }

// wireError turns a platform error into the wire error the caller sees.
func wireError(err error) error {
	if err == nil {
		return nil
	}
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe
	}
	var re *bridge.RejectError
	switch {
	case errors.As(err, &re):
		return protocol.NewError(protocol.CodeOrderRejected, re.Reason)
	case errors.Is(err, bridge.ErrAccountNotFound):
		return protocol.NewError(protocol.CodeAccountNotFound, "no such account on the platform")
	case errors.Is(err, bridge.ErrInstrumentUnknown):
		return protocol.NewError(protocol.CodeInvalidInstrument, "the instrument is unknown, not a contract month, or expired")
	case errors.Is(err, bridge.ErrOrderNotFound):
		return protocol.NewError(protocol.CodeOrderNotFound, "no such order on the account")
	case errors.Is(err, bridge.ErrNotConnected):
		return protocol.NewError(protocol.CodePlatformUnavailable, "the trading platform is not connected to the agent")
	case errors.Is(err, context.DeadlineExceeded):
		return protocol.NewError(protocol.CodeDeadlineExceeded, "the platform did not answer in time")
	case errors.Is(err, context.Canceled):
		return protocol.NewError(protocol.CodeCancelled, "the call was cancelled")
	}
	return fmt.Errorf("ops: %w", err)
}
