// Package events is the relay's event spine: the one fan-out between what
// happens for a user and everything in the relay that reacts to it.
//
// Producers publish typed Events: the tunnels (relay/hub) the events and
// statuses of the users' agents and the entries of the tunnels' history;
// the link to the other relay nodes (relay/cluster) what their agents
// send that this node asked for; the broker family (relay/broker) the
// states its engines report. Consumers subscribe: the stream sockets
// (relay/stream), the Management API's configuration push and state store
// (relay/manage), the forwarding to other nodes (relay/cluster) and the
// connection history (relay/connhistory). relay.New builds one Bus first
// and wires every producer and consumer to it.
//
// A consumer subscribes in one of two ways:
//
//   - Subscribe: its Handle runs in the publisher's goroutine, in the
//     order the events are published, before later subscribers' — for
//     consumers that only route in memory and never block (a stream
//     socket's quote slot, the cluster's subjects). Statuses reach them
//     in the order of the changes, for all users.
//   - SubscribeQueued: its Handle runs on goroutines of the Bus, fed by a
//     bounded queue per user, taken round-robin across users — for
//     consumers that write to the store or to the network. One user's
//     events are handled in the order they were published.
//
// # Fairness
//
// One user's flood never delays or drops another user's events: each
// user's events wait in their own queue (QueuedSubscription.QueueSize),
// and the workers take one event of each waiting user in turn, so a
// user's event waits behind at most one event of each other user. A full
// queue drops the event it cannot take (the newest), for that user only;
// drops are counted per subscriber (Metrics.EventsDropped, and Stats),
// and logged at most once per Options.WarnInterval per subscriber with
// the count since the last warning. The queues of one subscriber hold at
// most QueuedSubscription.MaxBytes of event data in all. Producers bound
// what one source may publish (relay/hub paces each tunnel's events by
// count and by bytes).
package events

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"tradebridge/internal/lifecycle"
	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
)

// Type is what an Event reports.
type Type uint8

// Types of Event.
const (
	// TypeAgent: an event a user's agent sent (Event.Agent): orders,
	// executions, positions, accounts, quotes, strategies, monitor and
	// copier states, the platform's connections. The agent's diagnostics
	// are a TypeSession of kind agentcall.SessionDiagnostics instead.
	TypeAgent Type = iota + 1
	// TypeStatus: the user's agent connected or left (Event.Connected).
	TypeStatus
	// TypeSession: an entry of the tunnels' history (Event.Session).
	TypeSession
	// TypeBroker: a state the broker family's engines report about a
	// broker-family resource (Event.Agent, of kind
	// protocol.EventMonitorState or protocol.EventCopierState).
	TypeBroker
	// TypeActivity: an entry for the user's activity log (Event.Activity,
	// its ID not yet given; Event.Ref), published by whoever did or
	// decided it: the trading doors, the Management API, the broker
	// family's links, the budgets. The activity log (relay/activity)
	// records it.
	TypeActivity
	// TypeRecorded: an entry the activity log stored (Event.Activity with
	// its ID), once: the stream sockets' activity subscriptions and the
	// alerts take it from here.
	TypeRecorded

	numTypes = iota + 1
)

var typeNames = [numTypes]string{"", "agent", "status", "session", "broker", "activity", "recorded"}

// String returns the type's name, as metrics label it.
func (t Type) String() string {
	if int(t) < len(typeNames) && t != 0 {
		return typeNames[t]
	}
	return "unknown"
}

// Event is one thing that happened for a user.
type Event struct {
	Type   Type
	UserID string
	// Remote marks an event of another relay node's agent, forwarded by
	// relay/cluster: it was already handled on its node, and only the
	// subscribers that ask for remote events (Subscription.Remote) see
	// it.
	Remote bool
	// Agent is the agent's event (TypeAgent) or the broker engines'
	// report (TypeBroker).
	Agent protocol.Event
	// Connected is the agent's new status (TypeStatus).
	Connected bool
	// Session is the history entry (TypeSession).
	Session agentcall.SessionEvent
	// Activity is the activity log's entry (TypeActivity, TypeRecorded).
	Activity protocol.ActivityEntry
	// Ref, when set, names a TypeActivity entry for the log, which
	// records one entry per user and Ref: a report the agent sent again
	// after a reconnect, an outcome two nodes both saw. "" records every
	// event.
	Ref string
	// Build, when set on a TypeActivity event, makes its Activity and Ref
	// where they are needed rather than in the publisher's goroutine: a
	// trading door publishes what it ran, and the activity log's worker
	// builds the entry (Built). ok is false when there is nothing to
	// record. BuildSize is what the builder holds, for the queues' bounds.
	Build     func() (entry protocol.ActivityEntry, ref string, ok bool)
	BuildSize int
}

// Built runs e's Build, if it has one, into its Activity and Ref, and
// reports whether e holds an entry to record.
func (e *Event) Built() bool {
	if e.Build == nil {
		return true
	}
	entry, ref, ok := e.Build()
	e.Build, e.BuildSize = nil, 0
	if !ok {
		return false
	}
	e.Activity, e.Ref = entry, ref
	return true
}

// Deferred returns the TypeActivity event of userID whose entry build
// makes, later and elsewhere (Event.Build); size is what build holds.
func Deferred(userID string, size int, build func() (protocol.ActivityEntry, string, bool)) Event {
	return Event{Type: TypeActivity, UserID: userID, Build: build, BuildSize: size}
}

// Activity returns the TypeActivity event of an entry for userID's log.
func Activity(userID, ref string, e protocol.ActivityEntry) Event {
	return Event{Type: TypeActivity, UserID: userID, Activity: e, Ref: ref}
}

// Agent returns a TypeAgent event of userID.
func Agent(userID string, ev protocol.Event) Event {
	return Event{Type: TypeAgent, UserID: userID, Agent: ev}
}

// Status returns a TypeStatus event of userID.
func Status(userID string, connected bool) Event {
	return Event{Type: TypeStatus, UserID: userID, Connected: connected}
}

// Session returns the TypeSession event of a history entry.
func Session(s agentcall.SessionEvent) Event {
	return Event{Type: TypeSession, UserID: s.UserID, Session: s}
}

// size is what an event counts against QueuedSubscription.MaxBytes.
func (e *Event) size() int {
	return eventOverhead + len(e.UserID) + len(e.Agent.Data) + len(e.Session.Diagnostics) +
		len(e.Activity.Summary) + len(e.Activity.Detail) + len(e.Ref) + e.BuildSize
}

// eventOverhead is what an event costs in a queue besides its data.
const eventOverhead = 256

// Publisher takes events; *Bus implements it, and PublishFunc adapts a
// function (tests).
type Publisher interface {
	// Publish hands e to the subscribers. It never blocks on a
	// consumer.
	Publish(e Event)
}

// PublishFunc adapts a function to a Publisher.
type PublishFunc func(Event)

// Publish calls f(e).
func (f PublishFunc) Publish(e Event) { f(e) }

// Metrics counts what the Bus drops; *metrics.Metrics implements it. All
// methods must be safe for concurrent use.
type Metrics interface {
	// EventsDropped counts n events a subscriber's queue could not take.
	EventsDropped(subscriber string, n int)
}

// Options configure a Bus.
type Options struct {
	Logger *zap.Logger
	// Metrics may be nil.
	Metrics Metrics
	// WarnInterval is the least time between two warnings of one
	// subscriber's drops. Default 1 minute.
	WarnInterval time.Duration
}

// DefaultWarnInterval is the default of Options.WarnInterval.
const DefaultWarnInterval = time.Minute

// Subscription is a consumer that handles events in the publisher's
// goroutine.
type Subscription struct {
	// Name names the consumer in logs and metrics. Required, unique.
	Name string
	// Types are the types it takes. Required.
	Types []Type
	// Remote: it also takes the events other relay nodes forwarded.
	Remote bool
	// Handle takes an event. It must not block, and may publish.
	Handle func(Event)
}

// QueuedSubscription is a consumer whose events wait in a bounded queue
// per user for the Bus's goroutines.
type QueuedSubscription struct {
	// Name names the consumer in logs and metrics. Required, unique.
	Name string
	// Types are the types it takes. Required.
	Types []Type
	// Kinds, when set, keeps the TypeAgent and TypeBroker events of other
	// kinds (protocol.EventX) out of the queue; events of other types are
	// queued whatever their kind.
	Kinds []string
	// Remote: it also takes the events other relay nodes forwarded.
	Remote bool
	// Handle takes an event; ctx ends when the Bus closes. One user's
	// events are handled one at a time, in order.
	Handle func(ctx context.Context, e Event)
	// QueueSize bounds each user's waiting events. Default
	// DefaultQueueSize.
	QueueSize int
	// MaxBytes bounds the event data waiting in all the users' queues
	// (each event counts its data and 256 bytes). Default
	// DefaultMaxBytes.
	MaxBytes int
	// Workers is how many goroutines handle events (each of a different
	// user at a time). Default 1.
	Workers int
}

// Defaults of QueuedSubscription.
const (
	DefaultQueueSize = 256
	DefaultMaxBytes  = 64 << 20
)

// Errors of Subscribe and SubscribeQueued.
var (
	// ErrClosed: the Bus is closed.
	ErrClosed = errors.New("events: bus closed")
	// ErrInvalidSubscription: a subscription without a name, a type or
	// a handler, or with a name already taken.
	ErrInvalidSubscription = errors.New("events: invalid subscription")
)

// Stats are a subscriber's running totals.
type Stats struct {
	// Handled counts the events handed to the subscriber's Handle.
	Handled int64
	// Dropped counts the events its queues could not take.
	Dropped int64
}

// Bus is the spine. Create it with New; it is safe for concurrent use.
type Bus struct {
	opts Options
	log  *zap.Logger
	// group owns the queued subscribers' workers.
	group lifecycle.Group

	// routes holds, per type, who takes its events; replaced whole on
	// every subscription, so that Publish reads it without a lock.
	routes atomic.Pointer[routeTable]

	mu     sync.Mutex // subscriptions, closed
	names  map[string]bool
	queues []*queue
	closed bool
}

// route is one subscriber of a type.
type route struct {
	remote bool
	handle func(Event) // a Subscription's
	queue  *queue      // a QueuedSubscription's
}

type routeTable [numTypes][]route

// New returns a Bus.
func New(opts Options) (*Bus, error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.WarnInterval < 0 {
		return nil, errors.New("events: Options.WarnInterval must not be negative")
	}
	if opts.WarnInterval == 0 {
		opts.WarnInterval = DefaultWarnInterval
	}
	b := &Bus{opts: opts, log: opts.Logger.Named("events"), names: map[string]bool{}}
	b.routes.Store(&routeTable{})
	return b, nil
}

// Subscribe adds a consumer that handles events in the publisher's
// goroutine, after the consumers subscribed before it.
func (b *Bus) Subscribe(s Subscription) error {
	if s.Handle == nil {
		return ErrInvalidSubscription
	}
	return b.add(s.Name, s.Types, route{remote: s.Remote, handle: s.Handle})
}

// SubscribeQueued adds a consumer whose events wait in per-user queues
// for the Bus's goroutines, which start now and end at Close.
func (b *Bus) SubscribeQueued(s QueuedSubscription) error {
	if s.Handle == nil || s.QueueSize < 0 || s.MaxBytes < 0 || s.Workers < 0 {
		return ErrInvalidSubscription
	}
	if s.QueueSize == 0 {
		s.QueueSize = DefaultQueueSize
	}
	if s.MaxBytes == 0 {
		s.MaxBytes = DefaultMaxBytes
	}
	if s.Workers == 0 {
		s.Workers = 1
	}
	q := &queue{bus: b, sub: s, users: map[string]*userQueue{}}
	q.ready.init()
	q.cond = sync.NewCond(&q.mu)
	if len(s.Kinds) > 0 {
		q.kinds = make(map[string]bool, len(s.Kinds))
		for _, k := range s.Kinds {
			q.kinds[k] = true
		}
	}
	if err := b.add(s.Name, s.Types, route{remote: s.Remote, queue: q}); err != nil {
		return err
	}
	return nil
}

// add registers a subscriber of types under name, and starts a queued
// one's workers.
func (b *Bus) add(name string, types []Type, r route) error {
	if name == "" || len(types) == 0 {
		return ErrInvalidSubscription
	}
	for _, t := range types {
		if t == 0 || int(t) >= numTypes {
			return ErrInvalidSubscription
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	if b.names[name] {
		return ErrInvalidSubscription
	}
	b.names[name] = true
	next := *b.routes.Load()
	for _, t := range types {
		next[t] = append(slices.Clip(next[t]), r)
	}
	b.routes.Store(&next)
	if q := r.queue; q != nil {
		b.queues = append(b.queues, q)
		for range q.sub.Workers {
			b.group.Go(q.work)
		}
	}
	return nil
}

// Publish hands e to its type's subscribers: the direct ones in the order
// they subscribed, and a queue to each queued one. It never blocks on a
// consumer; after Close it drops e.
func (b *Bus) Publish(e Event) {
	if int(e.Type) >= numTypes {
		return
	}
	for _, r := range b.routes.Load()[e.Type] {
		if e.Remote && !r.remote {
			continue
		}
		if r.handle != nil {
			r.handle(e)
		} else {
			r.queue.offer(e)
		}
	}
}

// Stats returns the running totals of the subscriber named name (zero for
// a direct subscriber, which the Bus does not count).
func (b *Bus) Stats(name string) Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, q := range b.queues {
		if q.sub.Name == name {
			return Stats{Handled: q.handled.Load(), Dropped: q.dropped.Load()}
		}
	}
	return Stats{}
}

// Drain waits until the queued subscribers have handled every event
// waiting for them, those their handlers publish meanwhile included, or
// until ctx ends (it then returns ctx's error). The relay drains the spine
// at shutdown, once its producers have stopped and before Close, so that
// what they published last (the tunnels' ends) is still recorded.
func (b *Bus) Drain(ctx context.Context) error {
	t := time.NewTicker(drainPoll)
	defer t.Stop()
	for !b.idle() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// drainPoll is how often Drain looks at the queues.
const drainPoll = 5 * time.Millisecond

// idle reports whether no queued subscriber has an event waiting or
// being handled.
func (b *Bus) idle() bool {
	b.mu.Lock()
	qs := b.queues
	b.mu.Unlock()
	for _, q := range qs {
		q.mu.Lock()
		n := len(q.users)
		q.mu.Unlock()
		if n > 0 {
			return false
		}
	}
	return true
}

// Close stops the queued subscribers' goroutines, dropping what still
// waits, and waits for them to return (a Handle under way ends first: its
// ctx is done). Later events are dropped. It is idempotent.
func (b *Bus) Close() {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		b.group.Stop()
		for _, q := range b.queues {
			q.close()
		}
		b.routes.Store(&routeTable{})
	}
	b.mu.Unlock()
	b.group.Wait()
}
