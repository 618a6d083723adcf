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

// The broker family: copiers and monitors of the accounts of the user's linked
// broker login (DESIGN.md, "Management API": the family tv mirrors desktop
// for broker-linked accounts where a resource applies to them).
//
// The broker kinds are the desktop kinds' hooks, wrapped (brokerHook): a change of
// a broker resource is handed to the desktop hook as a change of the desktop
// type, sharing its memory (a hook's normalization lands on the broker
// resource), with Family "tv" and a view of the snapshot (brokerView) in which
// the user's broker copiers and broker monitors stand in the place of the desktop
// ones. So cycles, duplicates, Auto-Sync and follower conflicts are judged
// among the broker copiers only, a broker copier's Tandem needs a broker monitor on
// every follower, and a broker monitor's tandem_dependency comes from the broker
// copiers only; desktop and broker resources never meet. The hooks that look
// accounts up ask the family (Change.Family): in the broker family the accounts are the
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
//     error per field): a broker copier copies executions only, so it has no
//     copyMode (brokerCopierNotApplicable); every monitor field applies to a
//     broker account (brokerMonitorNotApplicable is empty);
//   - a broker monitor's restart is judged by the broker engines
//     (BrokerMonitors), never by the user's agent.
//
// Every broker route answers 409 tradovate_not_linked, after admission and
// before the body's rules, while the user has no broker login linked
// (Server.brokerLinked).

// BrokerCopier is a copier of the broker family: a leader account of the linked
// broker login whose executions are copied to follower accounts of the
// same login. It has every field of protocol.Copier but copyMode: the
// relay sees the broker's fills on the login's user-data socket and
// copies each fill as a market order; it does not mirror working orders
// across broker accounts (the login's request pacer could not keep up
// with every order change). Its JSON, stored and shown, has no copyMode;
// the embedded Copier.CopyMode is not part of it and means nothing (the
// rules see "execution").
type BrokerCopier struct {
	protocol.Copier
	// CopyMode hides protocol.Copier's copyMode from the JSON: it is
	// always nil, so it is never written, and a body that sends
	// copyMode is refused (422 field_not_applicable) before it is read.
	CopyMode *struct{} `json:"copyMode,omitempty"`
}

// BrokerMonitor is a monitor of the broker family: one per account of the linked
// broker login, with every field of protocol.Monitor (each applies to a
// broker account: the relay runs the agent's monitor engine on the
// login's user-data socket).
type BrokerMonitor struct {
	protocol.Monitor
}

// Names of the broker kinds.
const (
	brokerCopierName  = "tv-copier"
	brokerMonitorName = "tv-monitor"
)

// brokerCopierNotApplicable are the broker copier's fields that do not exist for
// the broker: copyMode (executions only).
var brokerCopierNotApplicable = []string{"copyMode"}

// brokerMonitorNotApplicable are the broker monitor's fields that do not exist for
// the broker: none. P&L limits, trailing drawdown, the windows, closing
// only, blocked signals (orders of the broker trading API), the locks,
// auto-flatten and the action on a trip are all carried out by the
// relay's engine on the broker account.
var brokerMonitorNotApplicable = []string{}

// brokerCopierKind is the copier kind of the broker family (tv/copiers): the
// copier kind's rules over BrokerCopier.
var brokerCopierKind = &Kind[BrokerCopier]{
	Name:       brokerCopierName,
	Path:       FamilyBroker + "/copiers",
	Singleton:  false,
	ReadOnly:   copierKind.ReadOnly,
	Immutable:  copierKind.Immutable,
	Required:   copierKind.Required,
	NeedsAgent: false,
	MaxCount:   copierKind.MaxCount,
	LimitCode:  copierKind.LimitCode,
	Default:    func() BrokerCopier { return BrokerCopier{Copier: brokerCopierOf(copierKind.Default())} },
	Meta:       func(v *BrokerCopier) *protocol.Meta { return &v.Meta },
	Derive:     brokerDerive(copierKind.Derive, brokerCopierDesktop),
	Guard:      brokerGuard(brokerCopierNotApplicable, copierKind.Guard, brokerCopierDesktop),
	Validate:   brokerHook(copierKind.Validate, brokerCopierDesktop),
	Check:      brokerHook(copierKind.Check, brokerCopierDesktop),
	Actions:    brokerActions(copierKind.Actions, brokerCopierDesktop),
}

// brokerMonitorKind is the monitor kind of the broker family (tv/monitors): the
// monitor kind's rules over BrokerMonitor, its restart judged by the broker
// engines.
var brokerMonitorKind = &Kind[BrokerMonitor]{
	Name:       brokerMonitorName,
	Path:       FamilyBroker + "/monitors",
	Singleton:  false,
	ReadOnly:   monitorKind.ReadOnly,
	Immutable:  monitorKind.Immutable,
	Required:   monitorKind.Required,
	NeedsAgent: false,
	MaxCount:   monitorKind.MaxCount,
	LimitCode:  monitorKind.LimitCode,
	Default:    func() BrokerMonitor { return BrokerMonitor{Monitor: monitorKind.Default()} },
	Meta:       func(v *BrokerMonitor) *protocol.Meta { return &v.Meta },
	Derive:     brokerDerive(monitorKind.Derive, brokerMonitorDesktop),
	Guard:      brokerGuard(brokerMonitorNotApplicable, monitorKind.Guard, brokerMonitorDesktop),
	Validate:   brokerHook(monitorKind.Validate, brokerMonitorDesktop),
	Check:      brokerHook(monitorKind.Check, brokerMonitorDesktop),
	Actions:    brokerActions(monitorKind.Actions, brokerMonitorDesktop),
}

// The broker kinds are kindOps.
var (
	_ kindOps = brokerCopierKind
	_ kindOps = brokerMonitorKind
)

// isCopierKind reports whether the kind is a copier kind of either family
// (the stop fast path).
func isCopierKind(name string) bool { return name == copierKind.Name || name == brokerCopierKind.Name }

// kindFeature returns the plan feature (auth.Features) of a kind: the
// kind's name, the desktop kind's for a broker kind (withholding "copier"
// withholds the copiers of both families).
func kindFeature(name string) string {
	switch name {
	case brokerCopierKind.Name:
		return copierKind.Name
	case brokerMonitorKind.Name:
		return monitorKind.Name
	}
	return name
}

// brokerCopierOf returns a copier as a broker copier's rules see it: copying
// executions.
func brokerCopierOf(c protocol.Copier) protocol.Copier {
	c.CopyMode = protocol.CopyModeExecution
	return c
}

// brokerCopierDesktop returns the desktop copier inside v, copying executions,
// for the desktop hooks to judge and change in place.
func brokerCopierDesktop(v *BrokerCopier) *protocol.Copier {
	v.Copier.CopyMode = protocol.CopyModeExecution
	return &v.Copier
}

// brokerMonitorDesktop returns the desktop monitor inside v.
func brokerMonitorDesktop(v *BrokerMonitor) *protocol.Monitor { return &v.Monitor }

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

// brokerAccountDetail is the detail of 409 account_identity_unresolved: a broker
// change names an account the linked broker login does not carry.
const brokerAccountDetail = "an account is not one of the linked broker login's accounts"

// brokerView returns the snapshot as the desktop hooks judge a change of the
// broker family in it: the user's broker copiers and broker monitors in the place of
// the desktop ones, the rest (accounts, controls, broker link) as is. The
// snapshot itself is not changed.
func brokerView(s *Snapshot) *Snapshot {
	if s == nil {
		return nil
	}
	v := *s
	v.Copiers = make([]protocol.Copier, len(s.BrokerCopiers))
	for i := range s.BrokerCopiers {
		v.Copiers[i] = brokerCopierOf(s.BrokerCopiers[i].Copier)
	}
	v.Monitors = make([]protocol.Monitor, len(s.BrokerMonitors))
	for i := range s.BrokerMonitors {
		v.Monitors[i] = s.BrokerMonitors[i].Monitor
	}
	return &v
}

// desktopChange returns the change c of a broker resource as the desktop
// hooks take it: the same operation, body and time, Old and New turned
// into the desktop resources they hold by conv (sharing their memory),
// Family "tv", and the snapshot's tv view.
func desktopChange[T, D any](c *Change[T], conv func(*T) *D) *Change[D] {
	d := &Change[D]{Op: c.Op, Action: c.Action, Sent: c.Sent, Snap: brokerView(c.Snap), Now: c.Now, Family: FamilyBroker}
	if c.Old != nil {
		d.Old = conv(c.Old)
	}
	if c.New != nil {
		d.New = conv(c.New)
	}
	return d
}

// brokerHook wraps a desktop Guard, Validate or Check for the broker kind whose
// resources conv turns into desktop ones; nil stays nil.
func brokerHook[T, D any](hook func(*Change[D]) *httpapi.Error, conv func(*T) *D) func(*Change[T]) *httpapi.Error {
	if hook == nil {
		return nil
	}
	return func(c *Change[T]) *httpapi.Error { return hook(desktopChange(c, conv)) }
}

// brokerGuard is a broker kind's Guard: 422 field_not_applicable for each of the
// fields notApplicable the body sends, whatever their value, then the
// desktop kind's Guard (wrapped).
func brokerGuard[T, D any](notApplicable []string, hook func(*Change[D]) *httpapi.Error, conv func(*T) *D) func(*Change[T]) *httpapi.Error {
	inner := brokerHook(hook, conv)
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

// brokerDerive wraps a desktop Derive. The snapshot is passed as is: the
// desktop kinds derive a resource's fields from the resource alone.
func brokerDerive[T, D any](hook func(*D, *Snapshot), conv func(*T) *D) func(*T, *Snapshot) {
	if hook == nil {
		return nil
	}
	return func(v *T, s *Snapshot) { hook(conv(v), s) }
}

// brokerActions wraps a desktop kind's actions; the server gives a broker
// action the broker engines as its Agent (brokerAgent).
func brokerActions[T, D any](actions map[string]func(*Change[D], Agent) *httpapi.Error, conv func(*T) *D) map[string]func(*Change[T], Agent) *httpapi.Error {
	if actions == nil {
		return nil
	}
	out := make(map[string]func(*Change[T], Agent) *httpapi.Error, len(actions))
	for name, fn := range actions {
		out[name] = func(c *Change[T], ag Agent) *httpapi.Error { return fn(desktopChange(c, conv), ag) }
	}
	return out
}

// BrokerMonitors is what the broker family's engines, which run the
// broker monitors in the relay (relay/broker's Manager), add to
// BrokerLinks: the judgement of a restart, as the agent's
// protocol.FnCheckMonitorRestart for a desktop monitor. A BrokerLinks
// without it cannot restart a broker monitor (500 internal_error).
type BrokerMonitors interface {
	// CheckMonitorRestart reports whether the user's broker monitor m,
	// restarted, would stop again at once.
	CheckMonitorRestart(ctx context.Context, userID string, m protocol.Monitor) (protocol.RestartVerdict, error)
}

// brokerAgent is the Agent of the broker family's actions: the relay's broker
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

// tradovateNotLinked is the 409 of a broker route while the user has no broker
// login linked.
func tradovateNotLinked() *httpapi.Error {
	return refuse(errcode.TradovateNotLinked, "link a broker login before managing its accounts")
}

// brokerLinked admits a request of the broker family once admission passed: 409
// tradovate_not_linked until the user links a broker login, 503
// storage_unavailable when the link cannot be read. The change re-reads
// the link with the user's state, under the user's write lock.
func (s *Server) brokerLinked(ctx context.Context, userID string) *httpapi.Error {
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

// brokerMonitorOf returns the user's broker monitor of the account, or nil.
func (s *Snapshot) brokerMonitorOf(account string) *BrokerMonitor {
	for i := range s.BrokerMonitors {
		if s.BrokerMonitors[i].Account == account {
			return &s.BrokerMonitors[i]
		}
	}
	return nil
}

// BrokerEngines is what the broker family's engines add to BrokerLinks to
// follow the configuration they run: the Server calls ConfigChanged after
// every stored change of a resource they read (broker copiers, broker monitors,
// the controls, the news lockout), and the engines read it again with
// BrokerConfig. ConfigChanged must not block.
type BrokerEngines interface {
	ConfigChanged(userID string)
}

// brokerKinds are the kinds whose changes the broker engines follow.
var brokerKinds = map[string]bool{
	brokerCopierName:  true,
	brokerMonitorName: true,
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
		Copiers:     make([]protocol.Copier, 0, len(snap.BrokerCopiers)),
		Monitors:    make([]protocol.Monitor, 0, len(snap.BrokerMonitors)),
		Controls:    snap.Controls,
		NewsLockout: snap.NewsLockout,
	}
	for _, c := range snap.BrokerCopiers {
		cfg.Copiers = append(cfg.Copiers, brokerCopierOf(c.Copier))
	}
	for _, m := range snap.BrokerMonitors {
		cfg.Monitors = append(cfg.Monitors, m.Monitor)
	}
	cfg.AtmTemplates = []protocol.ManagedAtmTemplate{}
	return cfg, nil
}
