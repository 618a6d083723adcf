package sim

// TEMPORARY scaffold while issue 3 is built: each method below is replaced
// by its implementation in its own file, and this file is deleted. It must
// not survive the issue.

import (
	"context"
	"errors"
	"time"

	"tradebridge/agent/bridge"
	"tradebridge/protocol"
)

var errUnimplemented = errors.New("sim: not implemented yet")

func (p *Platform) Watermarks(ctx context.Context, account string) (protocol.Watermarks, error) {
	return protocol.Watermarks{}, errUnimplemented
}

func (p *Platform) CancelOrder(ctx context.Context, account, orderID string) (protocol.Order, error) {
	return protocol.Order{}, errUnimplemented
}

func (p *Platform) ChangeOrder(ctx context.Context, req bridge.ChangeRequest) (protocol.Order, error) {
	return protocol.Order{}, errUnimplemented
}

func (p *Platform) Flatten(ctx context.Context, account, instrument string) error {
	return errUnimplemented
}

func (p *Platform) Instrument(ctx context.Context, instrument string) (protocol.InstrumentInfo, error) {
	return protocol.InstrumentInfo{}, errUnimplemented
}

func (p *Platform) Subscribe(ctx context.Context, instruments []string) error {
	return errUnimplemented
}

func (p *Platform) Unsubscribe(ctx context.Context, instruments []string) error {
	return errUnimplemented
}

func (p *Platform) Bars(ctx context.Context, req bridge.BarsRequest) (protocol.Bars, error) {
	return protocol.Bars{}, errUnimplemented
}

func (p *Platform) AtmTemplates(ctx context.Context) ([]protocol.AtmTemplate, error) {
	return nil, errUnimplemented
}

func (p *Platform) Strategies(ctx context.Context, account string) ([]protocol.Strategy, error) {
	return nil, errUnimplemented
}

func (p *Platform) StartStrategy(ctx context.Context, req bridge.StrategyRequest) (protocol.Strategy, error) {
	return protocol.Strategy{}, errUnimplemented
}

func (p *Platform) SetStrategyState(ctx context.Context, account, id string, action bridge.StrategyAction) (protocol.Strategy, error) {
	return protocol.Strategy{}, errUnimplemented
}

// cancelLocked cancels a non-terminal order with p.mu held (SIM-A).
func (p *Platform) cancelLocked(now time.Time, o *order) error { return errUnimplemented }

// flattenLocked cancels the account's working orders in the contract and
// closes its position at the market, with p.mu held (SIM-A).
func (p *Platform) flattenLocked(now time.Time, a *account, c contract) error {
	return errUnimplemented
}
