package sim

import (
	"context"

	"tradebridge/agent/bridge"
	"tradebridge/protocol"
)

// eventBuffer is how many events a reader of Events may fall behind before
// it is told it lost some.
const eventBuffer = 4096

// subscriber is one reader of Events.
type subscriber struct {
	ch   chan bridge.Event
	lost bool // events were dropped; send a Lost marker before the next one
}

// Events implements bridge.Platform. Events are published with p.mu held,
// in the order the simulator makes its changes, so every reader sees the
// same order. A reader whose buffer is full loses events, and gets an Event
// with Lost set as soon as there is room again.
func (p *Platform) Events(ctx context.Context) <-chan bridge.Event {
	out := make(chan bridge.Event, eventBuffer)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		close(out)
		return out
	}
	s := &subscriber{ch: out}
	p.subscribers[s] = struct{}{}
	p.mu.Unlock()
	context.AfterFunc(ctx, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if _, ok := p.subscribers[s]; ok {
			delete(p.subscribers, s)
			close(s.ch)
		}
	})
	return out
}

// emit publishes ev to every reader, with p.mu held. It never blocks.
func (p *Platform) emit(ev bridge.Event) {
	p.eventSeq++
	ev.Seq = p.eventSeq
	for s := range p.subscribers {
		if s.lost {
			select {
			case s.ch <- bridge.Event{Seq: ev.Seq, Lost: true}:
				s.lost = false
			default:
				continue
			}
		}
		select {
		case s.ch <- ev:
		default:
			s.lost = true
		}
	}
}

// closeSubscribers ends every reader's stream, with p.mu held, when the
// platform closes.
func (p *Platform) closeSubscribers() {
	for s := range p.subscribers {
		delete(p.subscribers, s)
		close(s.ch)
	}
}

// The emit helpers below copy a record into a new event, with p.mu held.
// With no reader they only count the event, so an unwatched simulator
// allocates nothing for its events.

// emitOrder publishes the order as it stands.
func (p *Platform) emitOrder(o *order) {
	if len(p.subscribers) == 0 {
		p.eventSeq++
		return
	}
	rec := o.rec
	p.emit(bridge.Event{Kind: bridge.EventOrder, Order: &rec})
}

// emitExecution publishes a fill.
func (p *Platform) emitExecution(e protocol.Execution) {
	if len(p.subscribers) == 0 {
		p.eventSeq++
		return
	}
	p.emit(bridge.Event{Kind: bridge.EventExecution, Execution: &e})
}

// emitPosition publishes the account's position in c after a change; a
// position that went flat is reported Flat with quantity 0.
func (p *Platform) emitPosition(a *account, c contract) {
	if len(p.subscribers) == 0 {
		p.eventSeq++
		return
	}
	m := p.markets[c.Name]
	var rec protocol.Position
	if pos := a.positions[c.Name]; pos != nil {
		rec = pos.record(a.name, m)
	} else {
		rec = flatRecord(a.name, c, m)
	}
	p.emit(bridge.Event{Kind: bridge.EventPosition, Position: &rec})
}

// emitAccount publishes the account's current values.
func (p *Platform) emitAccount(a *account) {
	if len(p.subscribers) == 0 {
		p.eventSeq++
		return
	}
	rec := p.accountRecord(a)
	a.unrealSent = rec.Item.UnrealizedProfitLoss
	p.emit(bridge.Event{Kind: bridge.EventAccount, Account: &rec})
}
