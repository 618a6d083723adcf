// Package connhistory writes the agents' connection history to the
// store: the tunnels' starts, diagnostics and ends, and the refused
// handshakes, as package hub publishes them on the event spine
// (relay/events, TypeSession), so that support staff can read them
// (package relay/support).
//
// The hub must never wait for the store: Record queues an entry and
// returns at once; a full queue drops the entry, counts it and warns.
// One goroutine (Run) writes the queue in order. At its start it closes
// the sessions a previous run left open (reason relay_stopped, at the
// start's time: a relay that crashed could not record their ends) and
// forgets the entries older than the retention (30 days); then it does so
// again every hour.
//
// The relay runs on one node: a session left open is one of this node's
// previous run. Relays sharing one store would need a node column to
// tell theirs apart.
package connhistory

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"tradebridge/relay/agentcall"
	"tradebridge/relay/store"
)

// Store is the part of store.Store the writer uses.
type Store interface {
	AddAgentSession(ctx context.Context, s store.AgentSession) error
	EndAgentSession(ctx context.Context, sessionID string, at time.Time, reason string) error
	SetAgentSessionDiagnostics(ctx context.Context, sessionID string, diagnostics []byte, at time.Time) error
	CloseOpenAgentSessions(ctx context.Context, node string, at time.Time, reason string) (int, error)
	PruneAgentSessions(ctx context.Context, before time.Time) (int, error)
}

// Defaults of Options.
const (
	DefaultRetention  = 30 * 24 * time.Hour
	DefaultPruneEvery = time.Hour
	DefaultQueueSize  = 4096
)

// Options configure a Writer.
type Options struct {
	// Store is where the history is written. Required.
	Store Store
	// Logger receives store failures and dropped entries; the writer
	// logs as "history". Nil means no logging.
	Logger *zap.Logger
	// Node names this relay node: its sessions are recorded with it, and
	// at start only the sessions this node left open are closed. "" on a
	// relay that runs alone.
	Node string
	// Retention is how long an entry is kept after it ended. Default
	// DefaultRetention (30 days).
	Retention time.Duration
	// PruneEvery is how often older entries are forgotten. Default
	// DefaultPruneEvery (an hour).
	PruneEvery time.Duration
	// QueueSize bounds the entries waiting to be written. Default
	// DefaultQueueSize.
	QueueSize int
	// Now is the clock of the start and the pruning; nil means time.Now.
	Now func() time.Time
}

// ErrRunning refuses a second Run of a Writer while one runs, or after
// Close.
var ErrRunning = errors.New("history: the writer runs already or is closed")

// writeTimeout bounds one write to the store.
const writeTimeout = 10 * time.Second

// Writer writes the history. Record never blocks; Run writes.
type Writer struct {
	opts  Options
	log   *zap.Logger
	queue chan agentcall.SessionEvent

	dropped  atomic.Int64 // entries dropped since the start
	reported int64        // dropped already warned about; Run's alone

	mu      sync.Mutex
	running bool
	closed  bool
	stop    chan struct{} // closed by Close
	done    chan struct{} // closed when a Run returns
}

// New returns a Writer; Run starts writing.
func New(opts Options) (*Writer, error) {
	if opts.Store == nil {
		return nil, errors.New("history: Options.Store is required")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Retention < 0 || opts.PruneEvery < 0 || opts.QueueSize < 0 {
		return nil, errors.New("history: Options.Retention, PruneEvery and QueueSize must not be negative")
	}
	if opts.Retention == 0 {
		opts.Retention = DefaultRetention
	}
	if opts.PruneEvery == 0 {
		opts.PruneEvery = DefaultPruneEvery
	}
	if opts.QueueSize == 0 {
		opts.QueueSize = DefaultQueueSize
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Writer{opts: opts, log: opts.Logger.Named("history"), queue: make(chan agentcall.SessionEvent, opts.QueueSize),
		stop: make(chan struct{}), done: make(chan struct{})}, nil
}

// Record queues ev to be written (the relay subscribes it to the spine's
// history entries). It never
// blocks: when the queue is full the entry is dropped and counted (Run
// warns with the count).
func (w *Writer) Record(ev agentcall.SessionEvent) {
	select {
	case w.queue <- ev:
	default:
		w.dropped.Add(1)
	}
}

// Dropped returns how many entries were dropped because the queue was
// full.
func (w *Writer) Dropped() int64 { return w.dropped.Load() }

// Run closes the sessions a previous run left open, prunes, and then
// writes what Record queues, pruning every PruneEvery, until ctx ends or
// Close is called; it then writes what is queued already and returns nil.
// A Writer runs once: ErrRunning if it runs already or was closed.
func (w *Writer) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.running || w.closed {
		w.mu.Unlock()
		return ErrRunning
	}
	w.running = true
	w.mu.Unlock()
	defer close(w.done)

	// The store's work is bounded by writeTimeout, not by ctx: what was
	// recorded before ctx ended is written all the same.
	sctx := context.WithoutCancel(ctx)
	w.start(sctx, w.opts.Now())
	t := time.NewTicker(w.opts.PruneEvery)
	defer t.Stop()
	for {
		select {
		case ev := <-w.queue:
			w.write(sctx, ev)
		case <-t.C:
			w.prune(sctx)
			w.warnDropped()
		case <-ctx.Done():
			w.drain(sctx)
			return nil
		case <-w.stop:
			w.drain(sctx)
			return nil
		}
	}
}

// Close stops Run, once it has written what is queued, and waits for it.
// It is idempotent; Record after Close drops.
func (w *Writer) Close() error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.stop)
	}
	running := w.running
	w.mu.Unlock()
	if running {
		<-w.done
	}
	return nil
}

// start closes the sessions a previous run left open and prunes.
func (w *Writer) start(ctx context.Context, at time.Time) {
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	n, err := w.opts.Store.CloseOpenAgentSessions(wctx, w.opts.Node, at, agentcall.ReasonRelayStopped)
	switch {
	case err != nil:
		w.log.Warn("closing the sessions a previous run left open", zap.Error(err))
	case n > 0:
		w.log.Info("closed the sessions a previous run left open", zap.Int("count", n))
	}
	w.prune(ctx)
}

// prune forgets the entries that ended before the retention.
func (w *Writer) prune(ctx context.Context) {
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	n, err := w.opts.Store.PruneAgentSessions(wctx, w.opts.Now().Add(-w.opts.Retention))
	switch {
	case err != nil:
		w.log.Warn("pruning the connection history", zap.Error(err))
	case n > 0:
		w.log.Debug("pruned the connection history", zap.Int("count", n))
	}
}

// drain writes what is queued, within writeTimeout in all: what a store
// that does not answer leaves is dropped.
func (w *Writer) drain(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	for {
		select {
		case ev := <-w.queue:
			if ctx.Err() != nil {
				w.dropped.Add(1)
				continue
			}
			w.write(ctx, ev)
		default:
			w.warnDropped()
			return
		}
	}
}

// warnDropped warns once about the entries dropped since it last did.
func (w *Writer) warnDropped() {
	n := w.dropped.Load()
	if n == w.reported {
		return
	}
	w.log.Warn("connection history entries dropped: the queue was full",
		zap.Int64("dropped", n-w.reported), zap.Int64("droppedSinceStart", n))
	w.reported = n
}

// write writes one entry.
func (w *Writer) write(ctx context.Context, ev agentcall.SessionEvent) {
	w.warnDropped()
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	var err error
	switch ev.Kind {
	case agentcall.SessionStarted, agentcall.SessionRefused:
		s := store.AgentSession{SessionID: ev.SessionID, UserID: ev.UserID, ConnectedAt: ev.At,
			AgentVersion: ev.AgentVersion, ProtocolVersion: ev.ProtocolVersion, Platform: ev.Platform, RemoteAddr: ev.RemoteAddr, Node: w.opts.Node}
		if ev.Kind == agentcall.SessionRefused {
			s.SessionID, s.DisconnectedAt, s.Reason = "", ev.At, ev.Reason
		}
		err = w.opts.Store.AddAgentSession(wctx, s)
	case agentcall.SessionDiagnostics:
		err = w.opts.Store.SetAgentSessionDiagnostics(wctx, ev.SessionID, ev.Diagnostics, ev.At)
	case agentcall.SessionEnded:
		err = w.opts.Store.EndAgentSession(wctx, ev.SessionID, ev.At, ev.Reason)
	default:
		return
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		// Its start was dropped or failed to be written.
		w.log.Debug("connection history entry of an unrecorded session", zap.String("kind", string(ev.Kind)))
	case err != nil:
		w.log.Warn("writing the connection history", zap.String("kind", string(ev.Kind)), zap.Error(err))
	}
}
