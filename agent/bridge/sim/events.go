package sim

import (
	"context"

	"tradebridge/agent/bridge"
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
