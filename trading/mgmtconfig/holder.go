// Package mgmtconfig keeps the management configuration the relay pushed
// to the agent (protocol.FnApplyConfig): the copiers, monitors, controls,
// news lockout and the rest, as one versioned protocol.Config. It only
// holds the configuration; the engines that act on it read it with
// Current.
package mgmtconfig

import (
	"sync"
	"sync/atomic"

	"tradebridge/protocol"
)

// Holder holds the configuration the agent runs. The zero value holds
// none (version 0) and is ready to use. It is safe for concurrent use.
type Holder struct {
	mu      sync.Mutex // orders Apply calls; guards changed
	cur     atomic.Pointer[protocol.Config]
	changed chan struct{} // closed by the next Apply that changes cur
}

// Apply makes cfg the configuration the agent runs, whole and at once,
// when its Version is above the current one; a repeated or late push (a
// Version not above the current one) changes nothing. It returns the
// version the agent runs afterwards. Apply takes cfg over: the caller must
// not change it afterwards.
func (h *Holder) Apply(cfg *protocol.Config) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if cur := h.cur.Load(); cur != nil && cfg.Version <= cur.Version {
		return cur.Version
	}
	if cfg.Version <= 0 {
		return 0 // nothing applied yet, and nothing to apply
	}
	h.cur.Store(cfg)
	if h.changed != nil {
		close(h.changed)
		h.changed = nil
	}
	return cfg.Version
}

// Watch returns the configuration the agent runs (nil before the first
// Apply) and a channel that is closed when a newer one is applied. The
// engines wait on it, so a push (the kill switch) takes effect at once.
func (h *Holder) Watch() (*protocol.Config, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.changed == nil {
		h.changed = make(chan struct{})
	}
	return h.cur.Load(), h.changed
}

// Current returns the configuration the agent runs, or nil before the
// first Apply. It is shared: callers must not change it.
func (h *Holder) Current() *protocol.Config { return h.cur.Load() }

// Version is the version of the configuration the agent runs; 0 before
// the first Apply.
func (h *Holder) Version() int64 {
	if c := h.cur.Load(); c != nil {
		return c.Version
	}
	return 0
}
