package events

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// queue holds a queued subscriber's waiting events: a bounded FIFO per
// user, and the users with events to handle in the order they are served
// (ready). A user is in ready at most once, and not while a worker
// handles one of its events, so that one user's events are handled one at
// a time and in order, and every waiting user is served once per turn.
type queue struct {
	bus   *Bus
	sub   QueuedSubscription
	kinds map[string]bool // nil: every kind

	mu     sync.Mutex
	cond   *sync.Cond
	users  map[string]*userQueue // users with waiting or running events
	ready  userRing
	bytes  int
	closed bool

	handled atomic.Int64
	dropped atomic.Int64
	// warned is when drops were last logged; unwarned counts the drops
	// since. Under mu.
	warned   time.Time
	unwarned int64
}

// userQueue is one user's waiting events.
type userQueue struct {
	id      string
	events  []Event // FIFO: events[head:]
	head    int
	running bool // a worker handles one of its events
	ready   bool // in queue.ready
}

func (u *userQueue) len() int { return len(u.events) - u.head }

// offer queues e for its user, or drops it when the user's queue or the
// subscriber's bytes are full.
func (q *queue) offer(e Event) {
	if q.kinds != nil && (e.Type == TypeAgent || e.Type == TypeBroker) && !q.kinds[e.Agent.Kind] {
		return
	}
	n := e.size()
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	u := q.users[e.UserID]
	if (u != nil && u.len() >= q.sub.QueueSize) || q.bytes+n > q.sub.MaxBytes {
		q.drop(e.UserID)
		q.mu.Unlock()
		return
	}
	if u == nil {
		u = &userQueue{id: e.UserID}
		q.users[e.UserID] = u
	}
	if u.head > 0 && len(u.events) == cap(u.events) {
		// Reuse the space of the handled events before growing.
		u.events = append(u.events[:0], u.events[u.head:]...)
		u.head = 0
	}
	u.events = append(u.events, e)
	q.bytes += n
	if !u.running && !u.ready {
		u.ready = true
		q.ready.push(u)
		q.cond.Signal()
	}
	q.mu.Unlock()
}

// drop counts an event the queue could not take, and warns at most once
// per WarnInterval. Under mu.
func (q *queue) drop(userID string) {
	q.dropped.Add(1)
	if m := q.bus.opts.Metrics; m != nil {
		m.EventsDropped(q.sub.Name, 1)
	}
	q.unwarned++
	now := time.Now()
	if now.Sub(q.warned) < q.bus.opts.WarnInterval {
		return
	}
	q.bus.log.Warn("events dropped: a user's queue is full", zap.String("subscriber", q.sub.Name),
		zap.String("user", userID), zap.Int64("dropped", q.unwarned), zap.Duration("since", now.Sub(q.warned)))
	q.warned, q.unwarned = now, 0
}

// work handles events until ctx ends or the queue closes.
func (q *queue) work(ctx context.Context) {
	for {
		q.mu.Lock()
		for q.ready.len() == 0 && !q.closed {
			q.cond.Wait()
		}
		if q.closed {
			q.mu.Unlock()
			return
		}
		u := q.ready.pop()
		u.ready, u.running = false, true
		e := u.events[u.head]
		u.events[u.head] = Event{}
		u.head++
		q.bytes -= e.size()
		q.mu.Unlock()

		q.sub.Handle(ctx, e)
		q.handled.Add(1)

		q.mu.Lock()
		u.running = false
		switch {
		case u.len() > 0:
			u.ready = true
			q.ready.push(u)
			q.cond.Signal()
		default:
			delete(q.users, u.id)
		}
		q.mu.Unlock()
	}
}

// close ends the workers and drops what waits.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.users = map[string]*userQueue{}
	q.ready.init()
	q.bytes = 0
	q.cond.Broadcast()
	q.mu.Unlock()
}

// userRing is a FIFO of users, in a ring buffer that grows.
type userRing struct {
	buf        []*userQueue
	head, size int
}

func (r *userRing) init() { *r = userRing{buf: make([]*userQueue, 16)} }

func (r *userRing) len() int { return r.size }

func (r *userRing) push(u *userQueue) {
	if r.size == len(r.buf) {
		next := make([]*userQueue, 2*len(r.buf))
		for i := range r.size {
			next[i] = r.buf[(r.head+i)%len(r.buf)]
		}
		r.buf, r.head = next, 0
	}
	r.buf[(r.head+r.size)%len(r.buf)] = u
	r.size++
}

func (r *userRing) pop() *userQueue {
	u := r.buf[r.head]
	r.buf[r.head] = nil
	r.head = (r.head + 1) % len(r.buf)
	r.size--
	return u
}
