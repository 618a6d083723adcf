package manage

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/errcode"
	"tradebridge/relay/events"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/store"
)

// The agent's side of management: the configuration pushed after every
// change and on every connect, the restart check, and the states the
// agent reports.

// orEmpty returns s, or an empty slice for nil (so the JSON holds []).
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// configOf returns the user's whole configuration as the agent takes it.
func configOf(st *state) protocol.Config {
	s := &st.snap
	return protocol.Config{
		Version:            s.ConfigVersion,
		Copiers:            orEmpty(s.Copiers),
		Monitors:           orEmpty(s.Monitors),
		AtmTemplates:       orEmpty(s.Templates),
		Controls:           s.Controls,
		NewsLockout:        s.NewsLockout,
		ConnectionSettings: s.ConnectionSettings,
	}
}

// agentReady refuses a change that needs the agent when the user's agent
// is not connected (409 addon_disconnected) or too old to take the
// configuration (409 addon_version_unsupported).
func (s *Server) agentReady(userID string) *httpapi.Error {
	info, ok := s.opts.Hub.Info(userID)
	if !ok {
		return refuse(errcode.AddonDisconnected, "the change needs the trading add-on connected: start the agent next to the platform")
	}
	if info.Hello.ProtocolVersion < protocol.ConfigProtocolVersion {
		return refuse(errcode.AddonVersionUnsupported, "the change needs a newer trading add-on: update the agent")
	}
	return nil
}

// agentRuns reports whether the user's agent acknowledged, on its live
// tunnel, configuration version version or a newer one.
func (s *Server) agentRuns(userID string, version int64) bool {
	info, ok := s.opts.Hub.Info(userID)
	return ok && info.ConfigApplied >= version
}

// outcomeUnknown is the 503 of a change stored but not acknowledged by
// the agent.
func outcomeUnknown() *httpapi.Error {
	return &httpapi.Error{Status: http.StatusServiceUnavailable, Code: errcode.OutcomeUnknown,
		Detail: "the add-on did not confirm the change; it may or may not be in force: read the resource before retrying"}
}

// push sends cfg to the user's agent (protocol.FnApplyConfig) and waits
// for its ack within AckTimeout: 503 outcome_unknown when none comes, the
// tunnel drops or the agent fails.
func (s *Server) push(ctx context.Context, userID string, cfg protocol.Config) *httpapi.Error {
	args, err := json.Marshal(cfg)
	if err != nil {
		return internal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.AckTimeout)
	defer cancel()
	res, err := s.opts.Hub.Call(ctx, userID, protocol.FnApplyConfig, "", args)
	if err != nil {
		s.log.Info("configuration push not acknowledged", zap.Int64("version", cfg.Version), zap.Error(err))
		return outcomeUnknown()
	}
	var applied protocol.ConfigApplied
	if err := json.Unmarshal(res, &applied); err != nil || applied.Version < cfg.Version {
		s.log.Warn("the agent acknowledged another configuration", zap.Int64("version", cfg.Version), zap.Int64("applied", applied.Version))
		return outcomeUnknown()
	}
	return nil
}

// agentLink is the user's agent as a kind's action asks it.
type agentLink struct {
	s      *Server
	ctx    context.Context
	userID string
}

// CheckMonitorRestart asks the agent whether m would stop again at once.
func (a *agentLink) CheckMonitorRestart(m protocol.Monitor) (protocol.RestartVerdict, *httpapi.Error) {
	var v protocol.RestartVerdict
	if e := a.s.agentReady(a.userID); e != nil {
		return v, e
	}
	args, err := json.Marshal(protocol.RestartCheck{Monitor: m})
	if err != nil {
		return v, internal(err)
	}
	ctx, cancel := context.WithTimeout(a.ctx, a.s.opts.AckTimeout)
	defer cancel()
	res, err := a.s.opts.Hub.Call(ctx, a.userID, protocol.FnCheckMonitorRestart, "", args)
	if err != nil {
		return v, agentError(err)
	}
	if err := json.Unmarshal(res, &v); err != nil {
		return v, &httpapi.Error{Status: http.StatusInternalServerError, Code: errcode.InternalError,
			Detail: "the add-on answered with a result the relay cannot read"}
	}
	return v, nil
}

// agentError maps a failed call that changes nothing.
func agentError(err error) *httpapi.Error {
	var pe *protocol.Error
	switch {
	case errors.As(err, &pe):
		status := errcode.Status(pe.Code)
		if status == 0 {
			status = http.StatusInternalServerError
		}
		return &httpapi.Error{Status: status, Code: pe.Code, Detail: pe.Detail}
	case errors.Is(err, agentcall.ErrNotConnected), errors.Is(err, agentcall.ErrConnectionLost):
		return refuse(errcode.AddonDisconnected, "the trading add-on is not connected: start the agent next to the platform")
	case errors.Is(err, agentcall.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return &httpapi.Error{Status: http.StatusGatewayTimeout, Code: errcode.DeadlineExceeded, Detail: "the add-on did not answer in time"}
	}
	return &httpapi.Error{Status: http.StatusInternalServerError, Code: errcode.InternalError, Detail: "the relay failed to reach the add-on"}
}

// HandleStatus learns that a user's agent connected or left (a status on
// the event spine, to which the relay subscribes it directly). On every
// connect it pushes the user's current configuration, on a goroutine of
// the Server (Close waits for it); a connect during a push makes it run
// once more. It never blocks. (HandleEvent records the agent's
// connections on connect, in order with the agent's events.)
func (s *Server) HandleStatus(userID string, connected bool) {
	if !connected {
		return
	}
	s.pmu.Lock()
	defer s.pmu.Unlock()
	if s.closed {
		return
	}
	if _, running := s.pushing[userID]; running {
		s.pushing[userID] = true
		return
	}
	s.pushing[userID] = false
	s.group.Go(func(context.Context) {
		for {
			s.reconnectPush(userID)
			s.pmu.Lock()
			if again := s.pushing[userID]; again && !s.closed {
				s.pushing[userID] = false
				s.pmu.Unlock()
				continue
			}
			delete(s.pushing, userID)
			s.pmu.Unlock()
			return
		}
	})
}

// reconnectPush pushes the user's configuration to the live agent, under
// the user's write lock.
func (s *Server) reconnectPush(userID string) {
	ctx := s.ctx
	info, ok := s.opts.Hub.Info(userID)
	if !ok {
		return
	}
	if info.Hello.ProtocolVersion < protocol.ConfigProtocolVersion {
		return
	}
	unlock, err := s.locks.Lock(ctx, userID)
	if err != nil {
		return
	}
	defer unlock()
	st, err := s.load(ctx, userID)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("loading management state for a push", zap.Error(err))
		}
		return
	}
	if st.snap.ConfigVersion == 0 || s.agentRuns(userID, st.snap.ConfigVersion) {
		return // nothing was ever configured, or PrepareTunnel pushed it
	}
	_ = s.push(ctx, userID, configOf(st))
}

// PrepareTunnel pushes the user's stored configuration to a new tunnel
// before any other call reaches it (the hub's Options.Prepare): an agent
// that was offline when its kill switch was turned on applies it, and
// flattens, before it serves anything else. It takes no write lock: a
// change under way waits for the tunnel, and the agent ignores a
// configuration older than the one it runs. It returns when ctx ends;
// HandleStatus pushes again when this push was not acknowledged.
func (s *Server) PrepareTunnel(ctx context.Context, userID string, info agentcall.Info, call func(context.Context, string, json.RawMessage) (json.RawMessage, error)) {
	if info.Hello.ProtocolVersion < protocol.ConfigProtocolVersion {
		return
	}
	st, err := s.load(ctx, userID)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("loading management state for a new tunnel", zap.Error(err))
		}
		return
	}
	if st.snap.ConfigVersion == 0 {
		return
	}
	args, err := json.Marshal(configOf(st))
	if err != nil {
		return
	}
	if _, err := call(ctx, protocol.FnApplyConfig, args); err != nil {
		s.log.Info("configuration push on connect not acknowledged", zap.Int64("version", st.snap.ConfigVersion), zap.Error(err))
	}
}

// KillSwitches returns the reader of a user's stored kill switch and the
// configuration version it is stored in (relay/killswitch's Lookup).
func KillSwitches(st Store, log *zap.Logger) func(ctx context.Context, userID string) (bool, int64, error) {
	if log == nil {
		log = zap.NewNop()
	}
	ss := newStoredState(st, log.Named("manage"))
	return func(ctx context.Context, userID string) (bool, int64, error) {
		state, _, err := ss.read(ctx, userID)
		if err != nil {
			return false, 0, err
		}
		return state.snap.Controls.KillSwitch, state.snap.ConfigVersion, nil
	}
}

// HandleEvent stores a state reported on the event spine (the relay
// subscribes it with a queue per user, so one user's reports never hold up
// another's, and each user's are stored in the order they happened): the
// platform's connections of an agent that connects (events.TypeStatus,
// those its tunnel holds then) and that it reports (events.TypeAgent), the
// states of the agent's monitors and copiers (events.TypeAgent), and the
// broker engines' states of broker monitors and copiers
// (events.TypeBroker). Other events are ignored. It returns once the state
// is stored, or storing it failed (logged).
func (s *Server) HandleEvent(e events.Event) {
	if !reported(e) {
		return
	}
	if e.Type == events.TypeStatus {
		s.recordConnections(e.UserID)
		return
	}
	if err := s.storeReport(e); err != nil && s.ctx.Err() == nil {
		s.log.Warn("storing a reported state", zap.String("user", e.UserID), zap.String("kind", e.Agent.Kind), zap.Error(err))
	}
}

// ReportedKinds are the kinds of the agents' events HandleEvent stores.
var ReportedKinds = []string{protocol.EventMonitorState, protocol.EventCopierState, protocol.EventConnections}

// reported reports whether HandleEvent stores e.
func reported(e events.Event) bool {
	switch e.Type {
	case events.TypeStatus:
		return e.Connected && !e.Remote
	case events.TypeAgent:
		return slices.Contains(ReportedKinds, e.Agent.Kind)
	case events.TypeBroker:
		return e.Agent.Kind == protocol.EventMonitorState || e.Agent.Kind == protocol.EventCopierState
	}
	return false
}

// recordConnections stores the platform's connections of the user's live
// tunnel, for when the agent is offline.
func (s *Server) recordConnections(userID string) {
	info, ok := s.opts.Hub.Info(userID)
	if !ok {
		return
	}
	conns, err := json.Marshal(orEmpty(info.Hello.Connections))
	if err == nil {
		err = s.opts.Store.SetConnections(s.ctx, userID, conns)
	}
	if err != nil && s.ctx.Err() == nil {
		s.log.Warn("recording the agent's connections", zap.String("user", userID), zap.Error(err))
	}
}

// reportRetries bounds the attempts to store a report that meets
// concurrent writes.
const reportRetries = 3

// storeReport stores one reported state on its resource: a new version,
// no new configuration version and no push (the agent reported it).
func (s *Server) storeReport(e events.Event) error {
	if e.Type == events.TypeAgent && e.Agent.Kind == protocol.EventConnections {
		// The hub already holds them for the live tunnel; the store keeps
		// them for when the agent is offline.
		conns := []protocol.Connection{}
		if err := json.Unmarshal(e.Agent.Data, &conns); err != nil {
			return err
		}
		b, err := json.Marshal(orEmpty(conns))
		if err != nil {
			return err
		}
		return s.opts.Store.SetConnections(s.ctx, e.UserID, b)
	}
	var err error
	for range reportRetries {
		if err = s.storeReportOnce(e); !errors.Is(err, store.ErrVersionConflict) {
			return err
		}
	}
	return err
}

// storeReportOnce does not take the user's write lock: a change waiting
// for its agent's ack holds it for up to AckTimeout, and one user's slow
// agent must not delay another user's reports. The store's conditional
// write keeps the two apart instead: whichever writes second meets a
// version conflict (the change answers 409 concurrent_modification; the
// report is loaded and stored again).
func (s *Server) storeReportOnce(e events.Event) error {
	ctx := s.ctx
	st, err := s.load(ctx, e.UserID)
	if err != nil {
		return err
	}
	now := s.now()
	var kind, id string
	var before, after any
	switch e.Agent.Kind {
	case protocol.EventMonitorState:
		var rep protocol.MonitorState
		if err := json.Unmarshal(e.Agent.Data, &rep); err != nil {
			return err
		}
		if e.Type == events.TypeBroker {
			m := st.snap.brokerMonitorOf(rep.Account)
			if m == nil {
				return nil // deleted since
			}
			n := *m
			reportMonitor(&n.Monitor, rep, now)
			if brokerMonitorKind.Derive != nil {
				brokerMonitorKind.Derive(&n, &st.snap)
			}
			kind, id, before, after = brokerMonitorKind.Name, n.ID, *m, &n
			break
		}
		m := st.snap.MonitorOf(rep.Account)
		if m == nil {
			return nil // deleted since
		}
		n := *m
		reportMonitor(&n, rep, now)
		if monitorKind.Derive != nil {
			monitorKind.Derive(&n, &st.snap)
		}
		kind, id, before, after = monitorKind.Name, n.ID, *m, &n
	case protocol.EventCopierState:
		var rep protocol.CopierState
		if err := json.Unmarshal(e.Agent.Data, &rep); err != nil {
			return err
		}
		if e.Type == events.TypeBroker {
			c, ok := brokerCopierKind.find(&st.snap, rep.ID)
			if !ok {
				return nil
			}
			n := *c
			reportCopier(&n.Copier, rep, now)
			if brokerCopierKind.Derive != nil {
				brokerCopierKind.Derive(&n, &st.snap)
			}
			kind, id, before, after = brokerCopierKind.Name, n.ID, *c, &n
			break
		}
		c, ok := copierKind.find(&st.snap, rep.ID)
		if !ok {
			return nil
		}
		n := *c
		reportCopier(&n, rep, now)
		if copierKind.Derive != nil {
			copierKind.Derive(&n, &st.snap)
		}
		kind, id, before, after = copierKind.Name, n.ID, *c, &n
	default:
		return nil
	}
	if same(before, after) {
		return nil
	}
	body, err := json.Marshal(after)
	if err != nil {
		return err
	}
	_, err = s.opts.Store.WriteResources(ctx, e.UserID, false,
		store.ResourceWrite{Kind: kind, ID: id, Body: body, Version: st.version(kind, id), At: now})
	return err
}

// reportMonitor applies a reported monitor state to n.
func reportMonitor(n *protocol.Monitor, rep protocol.MonitorState, now time.Time) {
	if rep.State == protocol.MonitorStopped {
		at := rep.At.UTC()
		n.State, n.StoppedReason, n.StoppedAt = protocol.MonitorStopped, rep.Reason, &at
		n.Blind = false
	} else {
		n.State, n.StoppedReason, n.StoppedAt = protocol.MonitorActive, "", nil
		n.Blind = rep.Blind
	}
	n.UpdatedAt = now
}

// reportCopier applies a reported copier state to n.
func reportCopier(n *protocol.Copier, rep protocol.CopierState, now time.Time) {
	if rep.State == protocol.CopierHalted {
		at := rep.At.UTC()
		n.HaltedReason, n.HaltedAt = rep.Reason, &at
		if n.HaltedReason == "" {
			n.HaltedReason = protocol.CopierHalted
		}
	} else {
		n.HaltedReason, n.HaltedAt = "", nil
	}
	n.UpdatedAt = now
}

// same reports whether a resource and its reported change are equal but
// for updatedAt.
func same(before, after any) bool {
	a, err1 := toDoc(before)
	b, err2 := toDoc(after)
	if err1 != nil || err2 != nil {
		return false
	}
	delete(a, "updatedAt")
	delete(b, "updatedAt")
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
