package sim

import (
	"context"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// eventBuffer is how many events a reader of Events may fall behind before
// it is told it lost some.
const eventBuffer = 4096

// Events implements bridge.Platform. Events are published with p.mu held,
// in the order the simulator makes its changes, so every reader sees the
// same order. A reader whose buffer is full loses events, and gets an Event
// with Lost set as soon as there is room again.
func (p *Platform) Events(ctx context.Context) <-chan bridge.Event {
	return p.events.Subscribe(ctx)
}

// emit publishes ev to every reader, with p.mu held. It never blocks.
func (p *Platform) emit(ev bridge.Event) { p.events.Publish(ev) }

// The emit helpers below copy a record into a new event, with p.mu held.
// With no reader they only count the event, so an unwatched simulator
// allocates nothing for its events.

// emitOrder publishes the order as it stands.
func (p *Platform) emitOrder(o *order) {
	p.events.PublishFunc(func() bridge.Event {
		rec := o.rec
		return bridge.Event{Kind: bridge.EventOrder, Order: &rec}
	})
}

// emitExecution publishes a fill.
func (p *Platform) emitExecution(e protocol.Execution) {
	p.events.PublishFunc(func() bridge.Event { return bridge.Event{Kind: bridge.EventExecution, Execution: &e} })
}

// emitPosition publishes the account's position in c after a change; a
// position that went flat is reported Flat with quantity 0.
func (p *Platform) emitPosition(a *account, c contract) {
	p.events.PublishFunc(func() bridge.Event {
		m := p.markets[c.Name]
		var rec protocol.Position
		if pos := a.positions[c.Name]; pos != nil {
			rec = pos.record(a.name, m)
		} else {
			rec = flatRecord(a.name, c, m)
		}
		return bridge.Event{Kind: bridge.EventPosition, Position: &rec}
	})
}

// emitAccount publishes the account's current values.
func (p *Platform) emitAccount(a *account) {
	p.events.PublishFunc(func() bridge.Event {
		rec := p.accountRecord(a)
		a.unrealSent = rec.Item.UnrealizedProfitLoss
		return bridge.Event{Kind: bridge.EventAccount, Account: &rec}
	})
}
