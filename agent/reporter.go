package agent

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/engine"
)

// reporter carries the engines' state changes and activity reports to the
// relay (engine.Reporter). It keeps the latest state of each monitor and
// copier, and the activity reports in an outbox (bounded, kept in the
// agent's state); its run loop sends the changed states and the new
// reports while the tunnel is up, and every one of them again after each
// connect, so the relay's record catches up with whatever happened while
// the link was down. Activity reports go only to a relay of
// protocol.ActivityProtocolVersion or later. Reporting never blocks an
// engine.
type reporter struct {
	log    *zap.Logger
	tunnel interface {
		Connected() bool
		SendEvent(kind string, data any) error
		RelayProtocolVersion() int
	}
	kick chan struct{}

	mu       sync.Mutex
	monitors map[string]protocol.MonitorState // by account
	copiers  map[string]protocol.CopierState  // by copier id
	dirtyM   map[string]bool
	dirtyC   map[string]bool
	// conns is the platform's connection list as it last changed (nil
	// until it changes: the Hello carried it), sent when connsDirty.
	conns      []protocol.Connection
	connsDirty bool
	// activity is the outbox of activity reports.
	activity outbox
	// persistMu serializes the outbox's Store writes (flush, and the last
	// one when run stops).
	persistMu sync.Mutex
}

// newReporter returns a reporter whose outbox keeps the reports in store
// (nil: in memory only), loading those a previous run kept.
func newReporter(log *zap.Logger, store engine.Store) *reporter {
	r := &reporter{
		log:      log.Named("reports"),
		kick:     make(chan struct{}, 1),
		monitors: make(map[string]protocol.MonitorState),
		copiers:  make(map[string]protocol.CopierState),
		dirtyM:   make(map[string]bool),
		dirtyC:   make(map[string]bool),
		activity: outbox{store: store, now: time.Now, maxAge: outboxMaxAge, maxCount: outboxMaxCount},
	}
	r.activity.load(r.log)
	r.activity.trim()
	return r
}

// ReportActivity implements engine.Reporter: the report is kept in the
// outbox and sent by the run loop.
func (r *reporter) ReportActivity(e protocol.ActivityEntry) {
	r.mu.Lock()
	r.activity.add(e)
	r.mu.Unlock()
	r.wake()
}

// ReportMonitor implements engine.Reporter.
func (r *reporter) ReportMonitor(s protocol.MonitorState) {
	r.mu.Lock()
	r.monitors[s.Account], r.dirtyM[s.Account] = s, true
	r.mu.Unlock()
	r.wake()
}

// ReportCopier implements engine.Reporter.
func (r *reporter) ReportCopier(s protocol.CopierState) {
	r.mu.Lock()
	r.copiers[s.ID], r.dirtyC[s.ID] = s, true
	r.mu.Unlock()
	r.wake()
}

// ReportConnections records the platform's connections after a change,
// for the relay.
func (r *reporter) ReportConnections(conns []protocol.Connection) {
	r.mu.Lock()
	r.conns, r.connsDirty = conns, true
	r.mu.Unlock()
	r.wake()
}

// resendAll marks every state for sending (the tunnel connected).
func (r *reporter) resendAll() {
	r.mu.Lock()
	for k := range r.monitors {
		r.dirtyM[k] = true
	}
	for k := range r.copiers {
		r.dirtyC[k] = true
	}
	r.connsDirty = r.conns != nil
	r.activity.resend()
	r.mu.Unlock()
	r.wake()
}

func (r *reporter) wake() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// run sends the changed states when woken, until ctx ends.
func (r *reporter) run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			r.persist() // the reports made since the last flush
			return nil
		case <-r.kick:
			r.flush()
		}
	}
}

// flush keeps the new activity reports in the Store, then sends the
// changed states and the reports not sent yet; one that cannot be sent
// stays marked and goes on the next connect.
func (r *reporter) flush() {
	r.persist()
	if r.tunnel == nil || !r.tunnel.Connected() {
		return
	}
	r.sendActivity()
	r.mu.Lock()
	var ms []protocol.MonitorState
	var cs []protocol.CopierState
	for k := range r.dirtyM {
		ms = append(ms, r.monitors[k])
	}
	for k := range r.dirtyC {
		cs = append(cs, r.copiers[k])
	}
	clear(r.dirtyM)
	clear(r.dirtyC)
	conns, sendConns := r.conns, r.connsDirty
	r.connsDirty = false
	r.mu.Unlock()
	if sendConns {
		if err := r.tunnel.SendEvent(protocol.EventConnections, conns); err != nil {
			r.remark(func() { r.connsDirty = true })
		}
	}
	for _, s := range ms {
		if err := r.tunnel.SendEvent(protocol.EventMonitorState, s); err != nil {
			r.remark(func() { r.dirtyM[s.Account] = true })
		}
	}
	for _, s := range cs {
		if err := r.tunnel.SendEvent(protocol.EventCopierState, s); err != nil {
			r.remark(func() { r.dirtyC[s.ID] = true })
		}
	}
}

func (r *reporter) remark(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f()
}

// persist writes the outbox's new reports to the Store and deletes the
// dropped ones.
func (r *reporter) persist() {
	r.persistMu.Lock()
	defer r.persistMu.Unlock()
	r.mu.Lock()
	r.activity.trim()
	ob := &r.activity
	var fresh []*outgoing
	var recs [][]byte
	for _, g := range ob.kept {
		if g.persisted {
			continue
		}
		b, err := json.Marshal(g)
		if err != nil {
			continue // not for a struct of strings, times and raw JSON
		}
		g.persisted = true // set now: a trim meanwhile deletes it after the Put below
		fresh, recs = append(fresh, g), append(recs, b)
	}
	deletes := ob.deletes
	ob.deletes = nil
	dropped := ob.dropped
	ob.dropped = 0
	r.mu.Unlock()
	if dropped > 0 {
		r.log.Warn("activity reports dropped before they reached the relay: the outbox is full or they are too old",
			zap.Int("dropped", dropped), zap.Int("maxReports", ob.maxCount), zap.Duration("maxAge", ob.maxAge))
	}
	if ob.store == nil {
		return
	}
	for i, g := range fresh {
		if err := ob.store.Put(OutboxBucket, g.Entry.ID, recs[i]); err != nil {
			r.log.Warn("an activity report is not kept across a restart", zap.String("kind", g.Entry.Kind), zap.Error(err))
		}
	}
	for _, id := range deletes {
		if err := ob.store.Delete(OutboxBucket, id); err != nil {
			r.log.Warn("a dropped activity report is still kept", zap.Error(err))
		}
	}
}

// sendActivity sends the outbox's reports not sent on this connection, to
// a relay that records them.
func (r *reporter) sendActivity() {
	if r.tunnel.RelayProtocolVersion() < protocol.ActivityProtocolVersion {
		return
	}
	r.mu.Lock()
	var todo []*outgoing
	for _, g := range r.activity.kept {
		if !g.sent {
			g.sent = true
			todo = append(todo, g)
		}
	}
	r.mu.Unlock()
	for i, g := range todo {
		if err := r.tunnel.SendEvent(protocol.EventActivity, g.Entry); err != nil {
			r.mu.Lock()
			for _, h := range todo[i:] {
				h.sent = false // sent after the next connect
			}
			r.mu.Unlock()
			return
		}
	}
}
