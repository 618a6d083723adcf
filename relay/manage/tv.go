package manage

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// The tv family: copiers and monitors of the accounts of the user's linked
// broker login (DESIGN.md, "Management API": the family tv mirrors desktop
// for broker-linked accounts where a resource applies to them).
//
// The tv kinds are the desktop kinds' hooks, wrapped (tvHook): a change of
// a tv resource is handed to the desktop hook as a change of the desktop
// type, sharing its memory (a hook's normalization lands on the tv
// resource), with Family "tv" and a view of the snapshot (tvView) in which
// the user's tv copiers and tv monitors stand in the place of the desktop
// ones. So cycles, duplicates, Auto-Sync and follower conflicts are judged
// among the tv copiers only, a tv copier's Tandem needs a tv monitor on
// every follower, and a tv monitor's tandem_dependency comes from the tv
// copiers only; desktop and tv resources never meet. The hooks that look
// accounts up ask the family (Change.Family): on tv the accounts are the
// linked login's (Snapshot.BrokerAccounts) and an unknown one is 409
// account_identity_unresolved rather than 404 account_not_found.
//
// The differences from desktop:
//   - stored under their own kind names ("tv-copier", "tv-monitor"), so
//     their ids ("tvc_…", "tvm_…"), ETags, resource budgets and lists are
//     their own;
//   - NeedsAgent is false: the broker family's engines run in the relay
//     and read their configuration from the relay's store; nothing is
//     pushed to the agent, and a change needs no agent connected;
//   - fields that do not exist for the broker are refused whatever their
//     value, on create and on PATCH (422 field_not_applicable, one field
//     error per field): a tv copier copies executions only, so it has no
//     copyMode (tvCopierNotApplicable); every monitor field applies to a
//     broker account (tvMonitorNotApplicable is empty);
//   - a tv monitor's restart is judged by the broker engines
//     (BrokerMonitors), never by the user's agent.
//
// Every tv route answers 409 tradovate_not_linked, after admission and
// before the body's rules, while the user has no broker login linked
// (Server.tvLinked).

// TVCopier is a copier of the tv family: a leader account of the linked
// broker login whose executions are copied to follower accounts of the
// same login. It has every field of protocol.Copier but copyMode: the
// relay sees the broker's fills on the login's user-data socket and
// copies each fill as a market order; it does not mirror working orders
// across broker accounts (the login's request pacer could not keep up
// with every order change). Its JSON, stored and shown, has no copyMode;
// the embedded Copier.CopyMode is not part of it and means nothing (the
// rules see "execution").
type TVCopier struct {
	protocol.Copier
	// CopyMode hides protocol.Copier's copyMode from the JSON: it is
	// always nil, so it is never written, and a body that sends
	// copyMode is refused (422 field_not_applicable) before it is read.
	CopyMode *struct{} `json:"copyMode,omitempty"`
}

// TVMonitor is a monitor of the tv family: one per account of the linked
// broker login, with every field of protocol.Monitor (each applies to a
// broker account: the relay runs the agent's monitor engine on the
// login's user-data socket).
type TVMonitor struct {
	protocol.Monitor
}

// Names of the tv kinds.
const (
	tvCopierName  = "tv-copier"
	tvMonitorName = "tv-monitor"
)

// tvCopierNotApplicable are the tv copier's fields that do not exist for
// the broker: copyMode (executions only).
var tvCopierNotApplicable = []string{"copyMode"}

// tvMonitorNotApplicable are the tv monitor's fields that do not exist for
// the broker: none. P&L limits, trailing drawdown, the windows, closing
// only, blocked signals (orders of the tv trading API), the locks,
// auto-flatten and the action on a trip are all carried out by the
// relay's engine on the broker account.
var tvMonitorNotApplicable = []string{}

// tvCopierKind is the copier kind of the tv family (tv/copiers): the
// copier kind's rules over TVCopier.
var tvCopierKind = &Kind[TVCopier]{
	Name:       tvCopierName,
	Path:       FamilyTV + "/copiers",
	Singleton:  false,
	ReadOnly:   copierKind.ReadOnly,
	Immutable:  copierKind.Immutable,
	Required:   copierKind.Required,
	NeedsAgent: false,
	MaxCount:   copierKind.MaxCount,
	LimitCode:  copierKind.LimitCode,
	Default:    func() TVCopier { return TVCopier{Copier: tvCopierOf(copierKind.Default())} },
	Meta:       func(v *TVCopier) *protocol.Meta { return &v.Meta },
	Derive:     tvDerive(copierKind.Derive, tvCopierDesktop),
	Guard:      tvGuard(tvCopierNotApplicable, copierKind.Guard, tvCopierDesktop),
	Validate:   tvHook(copierKind.Validate, tvCopierDesktop),
	Check:      tvHook(copierKind.Check, tvCopierDesktop),
	Actions:    tvActions(copierKind.Actions, tvCopierDesktop),
}

// tvMonitorKind is the monitor kind of the tv family (tv/monitors): the
// monitor kind's rules over TVMonitor, its restart judged by the broker
// engines.
var tvMonitorKind = &Kind[TVMonitor]{
	Name:       tvMonitorName,
	Path:       FamilyTV + "/monitors",
	Singleton:  false,
	ReadOnly:   monitorKind.ReadOnly,
	Immutable:  monitorKind.Immutable,
	Required:   monitorKind.Required,
	NeedsAgent: false,
	MaxCount:   monitorKind.MaxCount,
	LimitCode:  monitorKind.LimitCode,
	Default:    func() TVMonitor { return TVMonitor{Monitor: monitorKind.Default()} },
	Meta:       func(v *TVMonitor) *protocol.Meta { return &v.Meta },
	Derive:     tvDerive(monitorKind.Derive, tvMonitorDesktop),
	Guard:      tvGuard(tvMonitorNotApplicable, monitorKind.Guard, tvMonitorDesktop),
	Validate:   tvHook(monitorKind.Validate, tvMonitorDesktop),
	Check:      tvHook(monitorKind.Check, tvMonitorDesktop),
	Actions:    tvActions(monitorKind.Actions, tvMonitorDesktop),
}

// The tv kinds are kindOps.
var (
	_ kindOps = tvCopierKind
	_ kindOps = tvMonitorKind
)

// isCopierKind reports whether the kind is a copier kind of either family
// (the stop fast path).
func isCopierKind(name string) bool { return name == copierKind.Name || name == tvCopierKind.Name }

// kindFeature returns the plan feature (auth.Features) of a kind: the
// kind's name, the desktop kind's for a tv kind (withholding "copier"
// withholds the copiers of both families).
func kindFeature(name string) string {
	switch name {
	case tvCopierKind.Name:
		return copierKind.Name
	case tvMonitorKind.Name:
		return monitorKind.Name
	}
	return name
}

// tvCopierOf returns a copier as a tv copier's rules see it: copying
// executions.
func tvCopierOf(c protocol.Copier) protocol.Copier {
	c.CopyMode = protocol.CopyModeExecution
	return c
}

// tvCopierDesktop returns the desktop copier inside v, copying executions,
// for the desktop hooks to judge and change in place.
func tvCopierDesktop(v *TVCopier) *protocol.Copier {
	v.Copier.CopyMode = protocol.CopyModeExecution
	return &v.Copier
}

// tvMonitorDesktop returns the desktop monitor inside v.
func tvMonitorDesktop(v *TVMonitor) *protocol.Monitor { return &v.Monitor }

// HasBrokerAccount reports whether the user's linked broker login carries
// the account.
func (s *Snapshot) HasBrokerAccount(account string) bool {
	if s == nil || !s.BrokerLinked {
		return false
	}
	for _, a := range s.BrokerAccounts {
		if a == account {
			return true
		}
	}
	return false
}

// tvAccountDetail is the detail of 409 account_identity_unresolved: a tv
// change names an account the linked broker login does not carry.
const tvAccountDetail = "an account is not one of the linked broker login's accounts"

// tvView returns the snapshot as the desktop hooks judge a change of the
// tv family in it: the user's tv copiers and tv monitors in the place of
// the desktop ones, the rest (accounts, controls, broker link) as is. The
// snapshot itself is not changed.
func tvView(s *Snapshot) *Snapshot {
	if s == nil {
		return nil
	}
	v := *s
	v.Copiers = make([]protocol.Copier, len(s.TVCopiers))
	for i := range s.TVCopiers {
		v.Copiers[i] = tvCopierOf(s.TVCopiers[i].Copier)
	}
	v.Monitors = make([]protocol.Monitor, len(s.TVMonitors))
	for i := range s.TVMonitors {
		v.Monitors[i] = s.TVMonitors[i].Monitor
	}
	return &v
}

// desktopChange returns the change c of a tv resource as the desktop
// hooks take it: the same operation, body and time, Old and New turned
// into the desktop resources they hold by conv (sharing their memory),
// Family "tv", and the snapshot's tv view.
func desktopChange[T, D any](c *Change[T], conv func(*T) *D) *Change[D] {
	d := &Change[D]{Op: c.Op, Action: c.Action, Sent: c.Sent, Snap: tvView(c.Snap), Now: c.Now, Family: FamilyTV}
	if c.Old != nil {
		d.Old = conv(c.Old)
	}
	if c.New != nil {
		d.New = conv(c.New)
	}
	return d
}

// tvHook wraps a desktop Guard, Validate or Check for the tv kind whose
// resources conv turns into desktop ones; nil stays nil.
func tvHook[T, D any](hook func(*Change[D]) *httpapi.Error, conv func(*T) *D) func(*Change[T]) *httpapi.Error {
	if hook == nil {
		return nil
	}
	return func(c *Change[T]) *httpapi.Error { return hook(desktopChange(c, conv)) }
}

// tvGuard is a tv kind's Guard: 422 field_not_applicable for each of the
// fields notApplicable the body sends, whatever their value, then the
// desktop kind's Guard (wrapped).
func tvGuard[T, D any](notApplicable []string, hook func(*Change[D]) *httpapi.Error, conv func(*T) *D) func(*Change[T]) *httpapi.Error {
	inner := tvHook(hook, conv)
	return func(c *Change[T]) *httpapi.Error {
		if e := refuseNotApplicable(c.Sent, notApplicable); e != nil {
			return e
		}
		if inner == nil {
			return nil
		}
		return inner(c)
	}
}

// refuseNotApplicable returns 422 field_not_applicable listing each of
// the fields the body sent, or nil.
func refuseNotApplicable(sent map[string]json.RawMessage, fields []string) *httpapi.Error {
	var f []httpapi.FieldError
	for _, name := range fields {
		if _, ok := sent[name]; ok {
			f = append(f, httpapi.FieldError{Path: name, Code: errcode.FieldNotApplicable})
		}
	}
	if len(f) == 0 {
		return nil
	}
	return refuse(errcode.FieldNotApplicable,
		"the body sets fields that do not exist for the broker's accounts; fields lists them", f...)
}

// tvDerive wraps a desktop Derive. The snapshot is passed as is: the
// desktop kinds derive a resource's fields from the resource alone.
func tvDerive[T, D any](hook func(*D, *Snapshot), conv func(*T) *D) func(*T, *Snapshot) {
	if hook == nil {
		return nil
	}
	return func(v *T, s *Snapshot) { hook(conv(v), s) }
}

// tvActions wraps a desktop kind's actions; the server gives a tv
// action the broker engines as its Agent (brokerAgent).
func tvActions[T, D any](actions map[string]func(*Change[D], Agent) *httpapi.Error, conv func(*T) *D) map[string]func(*Change[T], Agent) *httpapi.Error {
	if actions == nil {
		return nil
	}
	out := make(map[string]func(*Change[T], Agent) *httpapi.Error, len(actions))
	for name, fn := range actions {
		out[name] = func(c *Change[T], ag Agent) *httpapi.Error { return fn(desktopChange(c, conv), ag) }
	}
	return out
}

// BrokerMonitors is what the broker family's engines add to BrokerLinks
// once they run the tv monitors in the relay (the broker issue): the
// judgement of a restart, as the agent's protocol.FnCheckMonitorRestart
// for a desktop monitor. A BrokerLinks without it cannot restart a tv
// monitor (500 internal_error; until its engines exist no tv monitor
// stops, so a restart is 409 monitor_not_stopped first).
type BrokerMonitors interface {
	// CheckMonitorRestart reports whether the user's tv monitor m,
	// restarted, would stop again at once.
	CheckMonitorRestart(ctx context.Context, userID string, m protocol.Monitor) (protocol.RestartVerdict, error)
}

// brokerAgent is the Agent of the tv family's actions: the relay's broker
// engines (Options.BrokerLinks as BrokerMonitors), never the user's
// agent.
type brokerAgent struct {
	s      *Server
	ctx    context.Context
	userID string
}

// CheckMonitorRestart asks the broker engines whether m would stop again
// at once, within AckTimeout.
func (b *brokerAgent) CheckMonitorRestart(m protocol.Monitor) (protocol.RestartVerdict, *httpapi.Error) {
	bm, ok := b.s.opts.BrokerLinks.(BrokerMonitors)
	if !ok {
		return protocol.RestartVerdict{}, &httpapi.Error{Status: http.StatusInternalServerError, Code: errcode.InternalError,
			Detail: "the relay cannot judge a restart of a broker account's monitor"}
	}
	ctx, cancel := context.WithTimeout(b.ctx, b.s.opts.AckTimeout)
	defer cancel()
	v, err := bm.CheckMonitorRestart(ctx, b.userID, m)
	switch {
	case err == nil:
		return v, nil
	case errors.Is(err, context.DeadlineExceeded):
		return v, &httpapi.Error{Status: http.StatusGatewayTimeout, Code: errcode.DeadlineExceeded,
			Detail: "the broker engine did not answer in time"}
	}
	b.s.log.Warn("judging a broker monitor's restart", zap.Error(err))
	return v, &httpapi.Error{Status: http.StatusInternalServerError, Code: errcode.InternalError,
		Detail: "the relay failed to judge the restart"}
}

// tradovateNotLinked is the 409 of a tv route while the user has no broker
// login linked.
func tradovateNotLinked() *httpapi.Error {
	return refuse(errcode.TradovateNotLinked, "link a broker login before managing its accounts")
}

// tvLinked admits a request of the tv family once admission passed: 409
// tradovate_not_linked until the user links a broker login, 503
// storage_unavailable when the link cannot be read. The change re-reads
// the link with the user's state, under the user's write lock.
func (s *Server) tvLinked(ctx context.Context, userID string) *httpapi.Error {
	if s.opts.BrokerLinks == nil {
		return tradovateNotLinked()
	}
	linked, _, err := s.opts.BrokerLinks.Linked(ctx, userID)
	if err != nil {
		s.log.Warn("reading a broker link", zap.Error(err))
		return storageUnavailable()
	}
	if !linked {
		return tradovateNotLinked()
	}
	return nil
}

// tvMonitorOf returns the user's tv monitor of the account, or nil.
func (s *Snapshot) tvMonitorOf(account string) *TVMonitor {
	for i := range s.TVMonitors {
		if s.TVMonitors[i].Account == account {
			return &s.TVMonitors[i]
		}
	}
	return nil
}

// BrokerEngines is what the broker family's engines add to BrokerLinks to
// follow the configuration they run: the Server calls ConfigChanged after
// every stored change of a resource they read (tv copiers, tv monitors,
// the controls, the news lockout), and the engines read it again with
// BrokerConfig. ConfigChanged must not block.
type BrokerEngines interface {
	ConfigChanged(userID string)
}

// brokerKinds are the kinds whose changes the broker engines follow.
var brokerKinds = map[string]bool{
	tvCopierName:      true,
	tvMonitorName:     true,
	controlsKind.Name: true,
	newsKind.Name:     true,
}

// brokerConfigChanged tells the broker engines, when there are any, that
// the user's configuration changed.
func (s *Server) brokerConfigChanged(userID string) {
	if be, ok := s.opts.BrokerLinks.(BrokerEngines); ok {
		be.ConfigChanged(userID)
	}
}

// BrokerConfigs returns the reader of the configuration the broker
// engines run for a user, over the store alone (the broker family is
// built before the Management API, which reads the broker's links): the
// tv copiers (copying executions) and tv monitors, with the user's
// controls and news lockout, which apply to every account of both
// families. Its Version is the store's version of the user's management
// state; the engines number what they apply themselves.
func BrokerConfigs(st Store, log *zap.Logger) func(ctx context.Context, userID string) (protocol.Config, error) {
	if log == nil {
		log = zap.NewNop()
	}
	return newStoredState(st, log.Named("manage")).brokerConfig
}

func (s *storedState) brokerConfig(ctx context.Context, userID string) (protocol.Config, error) {
	st, _, err := s.read(ctx, userID)
	if err != nil {
		return protocol.Config{}, err
	}
	complete(st)
	snap := &st.snap
	cfg := protocol.Config{
		Version:     snap.ConfigVersion,
		Copiers:     make([]protocol.Copier, 0, len(snap.TVCopiers)),
		Monitors:    make([]protocol.Monitor, 0, len(snap.TVMonitors)),
		Controls:    snap.Controls,
		NewsLockout: snap.NewsLockout,
	}
	for _, c := range snap.TVCopiers {
		cfg.Copiers = append(cfg.Copiers, tvCopierOf(c.Copier))
	}
	for _, m := range snap.TVMonitors {
		cfg.Monitors = append(cfg.Monitors, m.Monitor)
	}
	cfg.AtmTemplates = []protocol.ManagedAtmTemplate{}
	return cfg, nil
}
