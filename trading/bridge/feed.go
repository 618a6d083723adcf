package bridge

import (
	"context"
	"sync"
)

// DefaultFeedBuffer is how many events a reader of a Feed may fall behind
// before it is told it lost some.
const DefaultFeedBuffer = 4096

// Feed fans a platform's events out to the readers of Platform.Events. It
// numbers events (Seq one more per event), never blocks a publisher, and
// tells a reader that fell behind by sending it an Event with Lost set as
// soon as it has room again. The zero value is not usable; use NewFeed.
type Feed struct {
	mu     sync.Mutex
	buffer int
	seq    uint64
	subs   map[*feedReader]struct{}
	closed bool
}

type feedReader struct {
	ch   chan Event
	lost bool
}

// NewFeed returns a Feed whose readers buffer up to buffer events
// (DefaultFeedBuffer when buffer is 0 or less).
func NewFeed(buffer int) *Feed {
	if buffer <= 0 {
		buffer = DefaultFeedBuffer
	}
	return &Feed{buffer: buffer, subs: make(map[*feedReader]struct{})}
}

// Subscribe returns a new reader's stream, closed when ctx ends or the
// Feed closes.
func (f *Feed) Subscribe(ctx context.Context) <-chan Event {
	out := make(chan Event, f.buffer)
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		close(out)
		return out
	}
	r := &feedReader{ch: out}
	f.subs[r] = struct{}{}
	f.mu.Unlock()
	context.AfterFunc(ctx, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if _, ok := f.subs[r]; ok {
			delete(f.subs, r)
			close(r.ch)
		}
	})
	return out
}

// Publish numbers ev and sends it to every reader. It never blocks.
func (f *Feed) Publish(ev Event) { f.PublishFunc(func() Event { return ev }) }

// PublishFunc numbers an event and, when the Feed has readers, builds it
// with build and sends it to every reader: a platform nobody watches
// counts its events without building them. build runs with the Feed's
// lock held and must not call the Feed. It never blocks.
func (f *Feed) PublishFunc(build func() Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	f.seq++
	if len(f.subs) == 0 {
		return
	}
	ev := build()
	ev.Seq = f.seq
	for r := range f.subs {
		if r.lost {
			select {
			case r.ch <- Event{Seq: ev.Seq, Lost: true}:
				r.lost = false
			default:
				continue
			}
		}
		select {
		case r.ch <- ev:
		default:
			r.lost = true
		}
	}
}

// Readers reports how many readers the Feed has.
func (f *Feed) Readers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs)
}

// Close ends every reader's stream; later Publish calls do nothing and
// later readers get a closed stream. It is idempotent.
func (f *Feed) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for r := range f.subs {
		delete(f.subs, r)
		close(r.ch)
	}
}
