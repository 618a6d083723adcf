package ninjatrader

import (
	"context"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// ATI is the fallback for when the add-on cannot be reached but
// NinjaTrader's Automated Trading Interface is on: the order commands its
// order instruction files support, and the state its outgoing files tell.
// Package ati implements it.
type ATI interface {
	Connections(ctx context.Context) ([]protocol.Connection, error)
	Positions(ctx context.Context, account string) ([]protocol.Position, error)
	Orders(ctx context.Context, account string) ([]protocol.Order, error)
	SubmitOrder(ctx context.Context, req bridge.OrderRequest) (protocol.Order, error)
	CancelOrder(ctx context.Context, account, orderID string) (protocol.Order, error)
	ChangeOrder(ctx context.Context, req bridge.ChangeRequest) (protocol.Order, error)
	Flatten(ctx context.Context, account, instrument string) error
	Events(ctx context.Context) <-chan bridge.Event
}

// ReasonNeedsAddon is the Code of the error of a call the ATI files cannot
// serve while the add-on is unreachable.
const ReasonNeedsAddon = "needs_addon"

// viaATI reports whether calls go to the ATI fallback now.
func (p *Platform) viaATI() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sess == nil && p.opts.ATI != nil
}

// forwardATI publishes the ATI fallback's events while the add-on is
// unreachable, until ctx ends.
func (p *Platform) forwardATI(ctx context.Context) {
	for ev := range p.opts.ATI.Events(ctx) {
		if p.viaATI() && !ev.Lost {
			p.feed.Publish(ev)
		}
	}
}
