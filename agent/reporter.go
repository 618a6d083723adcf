package agent

import (
	"context"
	"sync"

	"go.uber.org/zap"

	"tradebridge/protocol"
)

// reporter carries the engines' state changes to the relay
// (engine.Reporter). It keeps the latest state of each monitor and copier;
// its run loop sends the changed ones while the tunnel is up, and every one
// of them again after each connect, so the relay's record catches up with
// whatever happened while the link was down. Reporting never blocks an
// engine.
type reporter struct {
	log    *zap.Logger
	tunnel interface {
		Connected() bool
		SendEvent(kind string, data any) error
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
}

func newReporter(log *zap.Logger) *reporter {
	return &reporter{
		log:      log.Named("reports"),
		kick:     make(chan struct{}, 1),
		monitors: make(map[string]protocol.MonitorState),
		copiers:  make(map[string]protocol.CopierState),
		dirtyM:   make(map[string]bool),
		dirtyC:   make(map[string]bool),
	}
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
			return nil
		case <-r.kick:
			r.flush()
		}
	}
}

// flush sends the changed states; one that cannot be sent stays marked and
// goes on the next connect.
func (r *reporter) flush() {
	if r.tunnel == nil || !r.tunnel.Connected() {
		return
	}
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
