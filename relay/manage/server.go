package manage

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"tradebridge/internal/lifecycle"
	"tradebridge/relay/admit"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/alerts"
	"tradebridge/relay/apischema"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/errcode"
	"tradebridge/relay/events"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/keylock"
	"tradebridge/relay/sealed"
	"tradebridge/relay/store"
)

// Store is what the Management API needs of the relay's store;
// *store.SQLite implements it.
type Store interface {
	// ManagedState returns all of a user's management state.
	ManagedState(ctx context.Context, userID string) (store.ManagedState, error)
	// WriteResources applies conditional writes all or nothing
	// (store.ErrVersionConflict when a version does not match).
	WriteResources(ctx context.Context, userID string, bumpConfig bool, writes ...store.ResourceWrite) (int64, error)
	// SetConnections records the agent's platform connections.
	SetConnections(ctx context.Context, userID string, connections []byte) error
}

// Hub is what the Management API needs of the agents' tunnels; *hub.Hub
// implements it.
type Hub interface {
	// Info returns the handshake of the user's live tunnel.
	Info(userID string) (agentcall.Info, bool)
	// Call runs an RPC function on the user's agent.
	Call(ctx context.Context, userID, fn, requestID string, args json.RawMessage) (json.RawMessage, error)
}

// BrokerLinks tells whether users linked a broker login (the broker
// family); relay/broker's Manager implements it, and, as the engines that
// run the broker family's monitors, BrokerMonitors (a broker monitor's
// restart) too.
type BrokerLinks interface {
	// Linked reports whether the user linked a broker login, and the
	// accounts of that login.
	Linked(ctx context.Context, userID string) (linked bool, accounts []string, err error)
}

// Options configure a Server.
type Options struct {
	// Store keeps the resources. Required.
	Store Store
	// Hub reaches the users' agents. Required.
	Hub Hub
	// Admitter admits requests (the relay's one admission). Required.
	Admitter *admit.Admitter
	// IPBudget is the relay's per-client-address budget, shared by every
	// door; nil means none.
	IPBudget *budget.Limiter
	// Budgets keeps the Management API's budgets where every relay node
	// sees them (a *budget.Redis); nil means this node's memory.
	Budgets budget.Backend
	// BrokerLinks tells which users linked a broker login; nil means none
	// did.
	BrokerLinks BrokerLinks
	// Modes are the live service modes; nil means a new, normal Modes.
	Modes *Modes
	// Logger may be nil.
	Logger *zap.Logger
	// Now is the budgets' clock in nanoseconds (budget.Options.Now); nil
	// means the monotonic clock. Tests drive refills with it.
	Now func() int64
	// Clock gives the time of changes (createdAt, updatedAt, the monitor
	// rules); nil means time.Now.
	Clock func() time.Time
	// AckTimeout bounds the wait for the agent's ack of a pushed
	// configuration (and its answer to a restart check). Default 10 s.
	AckTimeout time.Duration
	// BusyThreshold is how many management requests may run at once, for
	// all users, before more are shed with 503 management_busy. Default
	// DefaultBusyThreshold.
	BusyThreshold int
	// BodyTimeout bounds the time to receive a body. Default 10 s.
	BodyTimeout time.Duration
	// Events is where each change stored is published as a
	// config.changed activity log entry (see WithSource); the relay
	// passes its event spine. Nil records nothing.
	Events events.Publisher
	// Keys seal the secrets of alert destinations at rest (the broker's
	// key ring); nil refuses destinations that have secrets.
	Keys *sealed.Keyring
	// Alerts queues the alert destinations' tests; nil answers their test
	// with 503.
	Alerts Alerts
	// AlertsAllowPrivate lets alert webhooks on loopback and private
	// addresses, over plain http too (relay serve --alerts-allow-private).
	AlertsAllowPrivate bool
	// EmailEnabled reports that the operator configured an SMTP server;
	// false refuses email destinations (409 email_unavailable).
	EmailEnabled bool
	// KillSwitch learns each user's stored kill switch after every change
	// of the user's kill switch (relay/killswitch's Gate, which refuses
	// entries while the agent has not applied it); nil tells no one.
	KillSwitch KillSwitchCache
}

// KillSwitchCache keeps the users' stored kill switches;
// *killswitch.Gate implements it.
type KillSwitchCache interface {
	// Set records the user's stored switch, on or off, stored in
	// configuration version version.
	Set(userID string, on bool, version int64)
}

// Defaults of Options.
const (
	DefaultAckTimeout    = 10 * time.Second
	DefaultBusyThreshold = 64
)

// Server serves the Management API: its routes (Register), the push of
// users' configurations to their agents when they connect
// (HandleStatus), and the states agents and the broker engines report
// (HandleEvent); the relay subscribes the last two to its event spine.
// Create it with New and Close it after the spine stops calling it.
type Server struct {
	opts    Options
	log     *zap.Logger
	env     Env // what the kinds' hooks use of the relay, from opts
	modes   *Modes
	budgets *budgets
	stored  *storedState
	routes  []*route
	// locks are the users' write locks: one change of a user at a time,
	// from loading the state to the end of the push.
	locks keylock.Locks
	// running counts the management requests being served, for load
	// shedding.
	running atomic.Int64

	// group owns the reconnect pushes; ctx is its context, which ends
	// at Close.
	group lifecycle.Group
	ctx   context.Context

	pmu     sync.Mutex
	closed  bool
	pushing map[string]bool // users whose reconnect push runs; true: run it again
}

// New returns a Server.
func New(opts Options) (*Server, error) {
	if opts.Store == nil || opts.Hub == nil || opts.Admitter == nil {
		return nil, errors.New("manage: Options.Store, Hub and Admitter are required")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.AckTimeout <= 0 {
		opts.AckTimeout = DefaultAckTimeout
	}
	if opts.BusyThreshold <= 0 {
		opts.BusyThreshold = DefaultBusyThreshold
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = httpapi.DefaultTimeout
	}
	if opts.Modes == nil {
		opts.Modes = &Modes{}
	}
	b, err := newBudgets(opts.Now, opts.Budgets)
	if err != nil {
		return nil, err
	}
	log := opts.Logger.Named("manage")
	s := &Server{
		opts:    opts,
		log:     log,
		modes:   opts.Modes,
		budgets: b,
		stored:  newStoredState(opts.Store, log),
		pushing: map[string]bool{},
		env: Env{Keys: opts.Keys, Alerts: opts.Alerts, AlertsAllowPrivate: opts.AlertsAllowPrivate,
			EmailEnabled: opts.EmailEnabled},
	}
	for _, rt := range routes() {
		rt.door = s.door(rt)
		s.routes = append(s.routes, rt)
	}
	s.ctx = s.group.Context()
	return s, nil
}

// Modes returns the server's live service modes.
func (s *Server) Modes() *Modes { return s.modes }

// Close stops the server's goroutines (the reconnect pushes) and waits for
// them; a reported state being stored is cut short. It is idempotent.
func (s *Server) Close() error {
	s.pmu.Lock()
	s.closed = true
	s.pmu.Unlock()
	s.group.Close()
	return nil
}

// Mux is where Register adds the routes; *http.ServeMux implements it.
type Mux interface {
	Handle(pattern string, handler http.Handler)
}

// Register adds the Management API's routes to mux, and its OpenAPI
// document (OpenAPIPath, served without a token). The relay answers
// 404 for other paths under Prefix and 405 with Allow for other methods.
func (s *Server) Register(mux Mux) {
	for _, rt := range s.routes {
		mux.Handle(rt.pattern(), s.handler(rt))
	}
	mux.Handle("GET "+OpenAPIPath, apischema.ServeDocument(func() any { return OpenAPI() }))
}

// now returns the time of a change, to the millisecond, in UTC.
func (s *Server) now() time.Time { return s.opts.Clock().UTC().Truncate(time.Millisecond) }

// writeErr answers e. The items of fields carry path, code, and limit or
// pattern, as the spec's error object has them: the values an enumerated
// field takes are written as a pattern ("^(order|execution)$").
func writeErr(w http.ResponseWriter, e *httpapi.Error) {
	if len(e.Fields) > 0 {
		out := *e
		out.Fields = make([]httpapi.FieldError, len(e.Fields))
		for i, f := range e.Fields {
			if len(f.Allowed) > 0 {
				if f.Pattern == "" {
					f.Pattern = allowedPattern(f.Allowed)
				}
				f.Allowed = nil
			}
			out.Fields[i] = f
		}
		e = &out
	}
	httpapi.WriteError(w, e.Status, *e)
}

// allowedPattern is the regular expression that matches exactly the
// allowed values.
func allowedPattern(allowed []string) string {
	q := make([]string, len(allowed))
	for i, a := range allowed {
		q[i] = regexp.QuoteMeta(a)
	}
	return "^(" + strings.Join(q, "|") + ")$"
}

// handler serves one route: admission (see admission.go), then the route.
func (s *Server) handler(rt *route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := s.admitRequest(w, r, rt)
		if !ok {
			return
		}
		defer a.done()
		s.serveAdmitted(w, r, rt, a)
	})
}

// serveAdmitted serves a request on rt once admitted: the broker link of
// a route of the broker family, the query, the body's refusal, then the
// read or the change.
func (s *Server) serveAdmitted(w http.ResponseWriter, r *http.Request, rt *route, a admitted) {
	if rt.family == FamilyBroker {
		if e := s.brokerLinked(r.Context(), a.p.UserID); e != nil {
			writeErr(w, e)
			return
		}
	}
	if r.URL.RawQuery != "" {
		writeErr(w, &httpapi.Error{Status: http.StatusBadRequest, Code: errcode.UnknownParameter,
			Detail: "management routes take no query parameters"})
		return
	}
	if a.in.err != nil {
		writeErr(w, a.in.err)
		return
	}
	switch rt.op {
	case routeLimits:
		httpapi.Write(w, http.StatusOK, currentLimits())
	case routeList, routeGet:
		s.read(w, r, rt, a.p.UserID, a.id)
	default:
		s.change(w, r, rt, a.p, a.id, a.in.body)
	}
}

// admitted is a request that passed admission.
type admitted struct {
	p  auth.Principal
	id string
	in input
	// done ends the request's admission (its in-flight place, the
	// running count).
	done func()
}

// admitRequest admits a request on rt (admission.go, steps 1 to 6): on
// refusal it has answered and returns false; otherwise the caller calls
// done when the request is over.
func (s *Server) admitRequest(w http.ResponseWriter, r *http.Request, rt *route) (admitted, bool) {
	ad, ok := s.opts.Admitter.Admit(w, r, rt.door)
	if !ok {
		return admitted{}, false
	}
	s.running.Add(1)
	a := admitted{p: ad.Principal, done: func() {
		s.running.Add(-1)
		ad.Done()
	}}
	if !s.opts.Admitter.Charge(w, a.p, admit.Charge{Budget: s.budgets.token, Key: tokenKey(a.p)}) {
		a.done()
		return admitted{}, false
	}
	if rt.hasID() {
		if a.id = r.PathValue("id"); !validID(a.id) {
			a.done()
			writeErr(w, &httpapi.Error{Status: http.StatusBadRequest, Code: errcode.InvalidPath,
				Detail: "the id in the path is not a resource id"})
			return admitted{}, false
		}
	}
	a.in = s.readInput(w, r, rt)
	cl := classify(rt, a.in)
	if cl != classStop && cl != classKill {
		if e := s.busy(); e != nil {
			a.done()
			writeErr(w, e)
			return admitted{}, false
		}
	}
	if !s.opts.Admitter.Charge(w, a.p, s.charges(a.p.UserID, rt, cl, a.id)...) {
		a.done()
		return admitted{}, false
	}
	return a, true
}

// storageUnavailable is the 503 of a store that failed: nothing was
// applied.
func storageUnavailable() *httpapi.Error {
	return &httpapi.Error{Status: http.StatusServiceUnavailable, Code: errcode.StorageUnavailable,
		Detail: "the change could not be saved; nothing was applied; retry shortly"}
}

// read answers a list or one resource.
func (s *Server) read(w http.ResponseWriter, r *http.Request, rt *route, userID, id string) {
	st, err := s.load(r.Context(), userID)
	if err != nil {
		s.log.Warn("loading management state", zap.Error(err))
		writeErr(w, &httpapi.Error{Status: http.StatusServiceUnavailable, Code: errcode.StorageUnavailable,
			Detail: "the store cannot be read right now; retry shortly"})
		return
	}
	if rt.op == routeList {
		httpapi.Write(w, http.StatusOK, rt.kind.list(st))
		return
	}
	if rt.kind.singleton() {
		id = singletonID(userID, rt.kind.name())
	}
	v, ok := rt.kind.show(st, id)
	if !ok {
		writeErr(w, notFound())
		return
	}
	writeResource(w, http.StatusOK, v, st.version(rt.kind.name(), id), nil)
}

// writeResource answers one resource with its ETag (header and
// meta.etag), and changed when not nil.
func writeResource(w http.ResponseWriter, status int, v any, version int64, changed *bool) {
	top := map[string]any{}
	if changed != nil {
		top["changed"] = *changed
	}
	writeResourceTop(w, status, v, version, top)
}

// writeResourceTop answers one resource with its ETag and the members of
// top beside data and meta.
func writeResourceTop(w http.ResponseWriter, status int, v any, version int64, top map[string]any) {
	tag := etagOf(version)
	w.Header().Set("ETag", tag)
	top["meta"] = map[string]string{"etag": tag}
	httpapi.WriteWithTop(w, status, v, top)
}

// Deleted is the data of a DELETE's answer.
type Deleted struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

// change runs a create, PATCH, PUT, DELETE, action or kill switch under
// the user's write lock: load, judge (the kind's rules), check the agent,
// store, push, answer.
func (s *Server) change(w http.ResponseWriter, r *http.Request, rt *route, p auth.Principal, id string, body []byte) {
	userID := p.UserID
	ci := &changeIn{id: id, body: body, header: r.Header, family: rt.family, action: rt.action, env: &s.env}
	switch rt.op {
	case routeCreate:
		ci.op = OpCreate
	case routePatch:
		ci.op = OpPatch
	case routePut:
		ci.op = OpPut
	case routeDelete:
		ci.op = OpDelete
	case routeAction:
		ci.op = OpAction
		if e := emptyObject(body); e != nil {
			writeErr(w, e)
			return
		}
	case routeKill:
		b, e := killBody(body)
		if e != nil {
			writeErr(w, e)
			return
		}
		ci.op, ci.body, ci.direct = OpPut, b, true
	}
	ctx := r.Context()
	unlock, err := s.locks.Lock(ctx, userID)
	if err != nil {
		// The caller left while waiting its turn.
		return
	}
	defer unlock()
	st, err := s.load(ctx, userID)
	if err != nil {
		s.log.Warn("loading management state", zap.Error(err))
		writeErr(w, storageUnavailable())
		return
	}
	// From here the change is carried out whether or not the caller
	// stays: it is stored and pushed, or neither.
	ctx = context.WithoutCancel(ctx)
	ci.st, ci.now = st, s.now()
	if rt.family == FamilyBroker {
		// The link may have gone since the request was admitted.
		if !st.snap.BrokerLinked {
			writeErr(w, tradovateNotLinked())
			return
		}
		ci.agent = &brokerAgent{s: s, ctx: ctx, userID: userID}
	} else {
		ci.agent = &agentLink{s: s, ctx: ctx, userID: userID}
	}
	k := rt.kind
	out, e := k.change(ci)
	if e != nil {
		writeErr(w, e)
		return
	}
	status := http.StatusOK
	if out.created {
		status = http.StatusCreated
	}
	if out.answer != nil {
		httpapi.Write(w, cmp.Or(out.status, http.StatusOK), out.answer)
		return
	}
	if !out.changed {
		if rt.op == routeKill {
			writeResourceTop(w, status, out.value, out.version, map[string]any{"changed": false, "applied": s.agentRuns(userID, st.snap.ConfigVersion)})
			return
		}
		changed := false
		writeResource(w, status, out.value, out.version, &changed)
		return
	}
	// A change the agent must act on needs it connected, unless the
	// user's broker engines act on it too (the controls and the news
	// lockout with a broker login linked): then it is stored, run by the
	// broker engines at once, and pushed to the agent when it connects.
	// The kill switch is stored whatever the agent's state, in both
	// directions: the relay refuses the user's entries until the agent
	// applies it (relay/killswitch), which it does on connect.
	agentOnline := true
	if k.needsAgent() {
		if e := s.agentReady(userID); e != nil {
			offlineOK := rt.op == routeKill ||
				(e.Code == errcode.AddonDisconnected && brokerKinds[k.name()] && st.snap.BrokerLinked)
			if !offlineOK {
				writeErr(w, e)
				return
			}
			agentOnline = false
		}
	}
	cv, err := s.opts.Store.WriteResources(ctx, userID, k.needsAgent(),
		store.ResourceWrite{Kind: k.name(), ID: out.id, Body: out.body, Version: out.version, At: ci.now})
	switch {
	case errors.Is(err, store.ErrVersionConflict):
		writeErr(w, &httpapi.Error{Status: http.StatusConflict, Code: errcode.ConcurrentModification,
			Detail: "another change to this resource was made at the same time; retry after a second", RetryAfter: 1})
		return
	case err != nil:
		s.log.Warn("storing a management change", zap.Error(err))
		writeErr(w, storageUnavailable())
		return
	}
	// Stored: recorded in the activity log once pushed (changelog.go),
	// whatever the push's outcome.
	defer s.recordChange(r.Context(), p, rt, ci, out)
	out.commit()
	st.snap.ConfigVersion = cv
	if brokerKinds[k.name()] {
		s.brokerConfigChanged(userID)
	}
	if k.name() == alerts.ResourceKind && s.opts.Alerts != nil {
		s.opts.Alerts.Changed(userID)
	}
	if rt.op == routeKill && s.opts.KillSwitch != nil {
		s.opts.KillSwitch.Set(userID, st.snap.Controls.KillSwitch, cv)
	}
	applied := false
	if k.needsAgent() && agentOnline {
		e := s.push(ctx, userID, configOf(st))
		switch {
		case e == nil:
			applied = true
		case rt.op != routeKill:
			writeErr(w, e)
			return
		}
		// A kill switch the agent did not acknowledge is in force in
		// the relay all the same: answered as not applied yet.
	}
	changed := true
	if rt.op == routeKill {
		writeResourceTop(w, status, out.value, out.version+1, map[string]any{"changed": true, "applied": applied})
		return
	}
	if out.deleted {
		httpapi.WriteWithTop(w, status, Deleted{ID: out.id, Deleted: true}, map[string]any{"changed": true})
		return
	}
	writeResource(w, status, out.value, out.version+1, &changed)
}

// emptyObject accepts an action's body: none, or an empty JSON object.
func emptyObject(body []byte) *httpapi.Error {
	if body == nil {
		return nil
	}
	doc, err := decodeBody(body)
	if err != nil {
		return &httpapi.Error{Status: http.StatusBadRequest, Code: errcode.InvalidJSON, Detail: "the body is not valid JSON"}
	}
	var fe fieldErrs
	m, ok := doc.(map[string]any)
	if !ok {
		fe.add("", errcode.FieldCodeWrongType)
	}
	for _, k := range sortedKeys(m) {
		fe.add(httpapi.SafePath(k), errcode.FieldCodeUnknownField)
	}
	return fe.err()
}

// killBody reads PUT controls/kill-switch's body, {"enabled": bool} with
// an optional "flattenOnKill": bool, into the controls change it makes:
// {"killSwitch": bool} (with "flattenOnKill" when sent).
func killBody(body []byte) ([]byte, *httpapi.Error) {
	var fe fieldErrs
	doc, err := decodeBody(body)
	if err != nil {
		return nil, &httpapi.Error{Status: http.StatusBadRequest, Code: errcode.InvalidJSON, Detail: "the body is not valid JSON"}
	}
	m, ok := doc.(map[string]any)
	if !ok {
		fe.add("", errcode.FieldCodeWrongType)
		return nil, fe.err()
	}
	enabled, ok := m["enabled"]
	switch {
	case !ok:
		fe.add("enabled", errcode.FieldCodeRequired)
	default:
		if _, isBool := enabled.(bool); !isBool {
			fe.add("enabled", errcode.FieldCodeWrongType)
		}
	}
	flatten, withFlatten := m["flattenOnKill"]
	if _, isBool := flatten.(bool); withFlatten && !isBool {
		fe.add("flattenOnKill", errcode.FieldCodeWrongType)
	}
	for _, k := range sortedKeys(m) {
		if k != "enabled" && k != "flattenOnKill" {
			fe.add(httpapi.SafePath(k), errcode.FieldCodeUnknownField)
		}
	}
	if e := fe.err(); e != nil {
		return nil, e
	}
	change := map[string]bool{"killSwitch": enabled.(bool)}
	if withFlatten {
		change["flattenOnKill"] = flatten.(bool)
	}
	b, _ := json.Marshal(change)
	return b, nil
}
