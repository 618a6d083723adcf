package copier

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
)

// follower is one follower of a compiled copier.
type follower struct {
	account string
	ratio   float64
	inverse bool
}

// copierCfg is a copier of the configuration, ready to copy with.
type copierCfg struct {
	id        string
	leader    string
	followers []follower
	// roots are the leader roots copied; nil means all.
	roots map[string]bool
	// repl maps a leader root to the follower root.
	repl      map[string]string
	mode      string
	tandem    bool
	autoSync  bool
	syncEvery time.Duration
}

func (c *copierCfg) hasFollower(account string) bool {
	return slices.ContainsFunc(c.followers, func(f follower) bool { return f.account == account })
}

// run is one copier as the engine runs it.
type run struct {
	cfg    copierCfg
	active bool
	e      *Engine
	// recent are the latest copy outcomes, newest last.
	recent []protocol.CopyOutcome
	// unaligned are the followers auto-sync could not align.
	unaligned map[syncKey]*syncIssue
	nextSync  time.Time
	// skipped are leader orders not to copy (placed while the copier was
	// off, or too old to catch up with), with when they were skipped.
	skipped map[string]time.Time
}

func (r *run) halted() bool {
	_, ok := r.e.halts[r.cfg.id]
	return ok
}

// copying reports whether the copier copies now, with e.mu held.
func (r *run) copying() bool { return r.active && !r.halted() }

func (r *run) sortedIssues() []syncKey {
	keys := make([]syncKey, 0, len(r.unaligned))
	for k := range r.unaligned {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b syncKey) int {
		if c := strings.Compare(a.follower, b.follower); c != 0 {
			return c
		}
		return strings.Compare(a.instrument, b.instrument)
	})
	return keys
}

// compile turns a configured copier into a copierCfg.
func compile(c *protocol.Copier) copierCfg {
	def := c.Sizing.Ratio
	if def <= 0 || math.IsNaN(def) || math.IsInf(def, 0) {
		def = 1
	}
	out := copierCfg{id: c.ID, leader: c.Leader, mode: c.CopyMode, tandem: c.Tandem, autoSync: c.AutoSync,
		syncEvery: max(time.Duration(c.AutoSyncSeconds)*time.Second, minAutoSync)}
	if out.mode != protocol.CopyModeExecution {
		out.mode = protocol.CopyModeOrder
	}
	for _, f := range c.Followers {
		if f.Account == "" || f.Account == c.Leader {
			continue
		}
		r := def
		if f.Sizing != nil && f.Sizing.Ratio > 0 && !math.IsInf(f.Sizing.Ratio, 0) {
			r = f.Sizing.Ratio
		}
		out.followers = append(out.followers, follower{account: f.Account, ratio: r, inverse: f.Inverse})
	}
	if len(c.Instruments) > 0 {
		out.roots = make(map[string]bool, len(c.Instruments))
		for _, root := range c.Instruments {
			out.roots[protocol.NormalizeInstrument(root)] = true
		}
	}
	if len(c.SymbolReplacements) > 0 {
		out.repl = make(map[string]string, len(c.SymbolReplacements))
		for _, s := range c.SymbolReplacements {
			out.repl[protocol.NormalizeInstrument(s.From)] = protocol.NormalizeInstrument(s.To)
		}
	}
	return out
}

// applyConfig applies cfg, taking e.mu.
func (e *Engine) applyConfig(cfg *protocol.Config) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.applyConfigLocked(cfg)
}

// applyConfigLocked makes cfg's copiers the ones the engine runs, with e.mu
// held. A copier the configuration shows inactive loses its halt (the
// trader restarts a halted copier by turning it off and on); one absent
// from it stops and is forgotten. A nil cfg (none applied yet) runs none.
func (e *Engine) applyConfigLocked(cfg *protocol.Config) {
	if cfg == nil || cfg.Version == e.version && e.version != 0 {
		return
	}
	e.version = cfg.Version
	now := e.now()
	seen := make(map[string]bool, len(cfg.Copiers))
	byLeader := make(map[string][]*run)
	for i := range cfg.Copiers {
		c := &cfg.Copiers[i]
		if c.ID == "" || seen[c.ID] {
			continue
		}
		seen[c.ID] = true
		r := e.copiers[c.ID]
		if r == nil {
			r = &run{e: e, unaligned: make(map[syncKey]*syncIssue), skipped: make(map[string]time.Time)}
			e.copiers[c.ID] = r
		}
		wasSyncing := r.active && r.cfg.autoSync
		r.cfg = compile(c)
		r.active = c.Active
		if !c.Active {
			if _, ok := e.halts[c.ID]; ok {
				e.clearHaltLocked(c.ID)
				e.log.Info("halt cleared: copier turned off", zap.String("copier", c.ID))
				e.report(protocol.CopierState{ID: c.ID, State: protocol.CopierRunning, At: e.stamp()})
			}
			clear(r.unaligned)
		}
		if r.active && r.cfg.autoSync && !wasSyncing {
			r.nextSync = now.Add(r.cfg.syncEvery)
		}
		byLeader[r.cfg.leader] = append(byLeader[r.cfg.leader], r)
	}
	for id := range e.copiers {
		if !seen[id] {
			delete(e.copiers, id)
			if _, ok := e.halts[id]; ok {
				e.clearHaltLocked(id)
			}
		}
	}
	e.byLeader = byLeader
}

// loadHalts reads the persisted halts.
func (e *Engine) loadHalts() error {
	m, err := e.opts.Store.Load(bucketHalts)
	if err != nil {
		return fmt.Errorf("copier: load halts: %w", err)
	}
	for id, v := range m {
		var h halt
		if err := json.Unmarshal(v, &h); err != nil {
			e.log.Error("unreadable halt ignored", zap.String("copier", id), zap.Error(err))
			continue
		}
		e.halts[id] = h
	}
	return nil
}

// haltLocked halts r with reason, with e.mu held: persisted, reported,
// nothing copied until the trader turns the copier off and on.
func (e *Engine) haltLocked(r *run, reason string) {
	id := r.cfg.id
	if _, ok := e.halts[id]; ok {
		return
	}
	h := halt{Reason: reason, At: e.stamp()}
	e.halts[id] = h
	if b, err := json.Marshal(h); err == nil {
		if err := e.opts.Store.Put(bucketHalts, id, b); err != nil {
			e.log.Error("halt not persisted", zap.String("copier", id), zap.Error(err))
		}
	}
	e.log.Warn("copier halted", zap.String("copier", id), zap.String("reason", reason))
	e.report(protocol.CopierState{ID: id, State: protocol.CopierHalted, Reason: reason, At: h.At})
	e.reportHalt(r, h)
}

// clearHaltLocked forgets a halt, with e.mu held.
func (e *Engine) clearHaltLocked(id string) {
	delete(e.halts, id)
	if err := e.opts.Store.Delete(bucketHalts, id); err != nil {
		e.log.Error("halt not deleted", zap.String("copier", id), zap.Error(err))
	}
}

// outcomeLocked records a copy that did not go as asked, stamped now (the
// wall clock's), with e.mu held.
func (e *Engine) outcomeLocked(r *run, o protocol.CopyOutcome) {
	o.At = e.stamp()
	if len(r.recent) >= maxRecent {
		r.recent = slices.Delete(r.recent, 0, len(r.recent)-maxRecent+1)
	}
	r.recent = append(r.recent, o)
	lvl := e.log.Warn
	if o.Outcome == protocol.CopyFailed {
		lvl = e.log.Error
	}
	lvl("copy not placed as asked", zap.String("copier", r.cfg.id), zap.String("follower", o.Follower),
		zap.String("instrument", o.Instrument), zap.String("leaderOrderId", o.LeaderOrderID),
		zap.Int("quantity", o.Quantity), zap.String("outcome", o.Outcome), zap.String("reason", o.Reason))
}

// monitorStates reads the monitor state of each follower of a tandem
// copier (nil for other copiers). It runs without e.mu: the monitor
// engine may call MonitorChanged while it holds its own lock.
func (e *Engine) monitorStates(cfg *copierCfg) []string {
	if !cfg.tandem {
		return nil
	}
	st := make([]string, len(cfg.followers))
	if e.opts.Monitors != nil {
		for i, f := range cfg.followers {
			st[i] = e.opts.Monitors.MonitorState(f.account)
		}
	}
	return st
}

// tandemOK judges a tandem copier's followers' monitor states (read by
// monitorStates) at copy time, with e.mu held. A stopped monitor halts
// the copier; any other state but active refuses the copy. It returns ""
// when copying may go on, else why not.
func (e *Engine) tandemOK(r *run, states []string) string {
	if !r.cfg.tandem {
		return ""
	}
	for i, f := range r.cfg.followers {
		st := ""
		if i < len(states) {
			st = states[i]
		}
		switch st {
		case protocol.MonitorActive:
		case protocol.MonitorStopped:
			e.haltLocked(r, "the monitor of follower "+f.account+" stopped")
			return "the copier is halted"
		case "":
			return "tandem: follower " + f.account + " has no monitor"
		default:
			return "tandem: the monitor of follower " + f.account + " is " + st
		}
	}
	return ""
}
