// Package support serves the support staff's one route,
//
//	GET /v1/support/users/{userId}/agent
//
// which answers, for a user the caller's support token is granted, the
// user's agent as the relay sees it now (connected or not, its session,
// version, platform and connections), the agent's latest diagnostics
// (protocol.Diagnostics) and its connection history of the last 30 days.
//
// Only support tokens (auth.KindSupport) pass its door (Door), and a
// support token passes no other door. A user the token is not granted and
// a user that does not exist get the same 404 not_found: a support token
// cannot tell them apart. Each read is written to the relay's log as
// "support read" (logger "support") with the token's id and the staff
// member's name, the user and the result; never the token.
//
// The diagnostics come, in order of preference, from the connected agent
// asked now (FnDiagnostics, protocol version 5 and later, within
// Options.DiagnosticsTimeout: "live"), from the ones it sent when it
// connected (EventDiagnostics: "connect"), from the latest stored on any
// of its sessions ("stored"), or there are none ("none").
package support

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/admit"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/store"
)

// Path is the route's pattern.
const Path = "/v1/support/users/{userId}/agent"

// Sources of the diagnostics (Answer.DiagnosticsSource).
const (
	SourceLive    = "live"
	SourceConnect = "connect"
	SourceStored  = "stored"
	SourceNone    = "none"
)

// Defaults of Options.
const (
	DefaultDiagnosticsTimeout = 3 * time.Second
	DefaultRetention          = 30 * 24 * time.Hour
	DefaultHistoryLimit       = 500
)

// DefaultBudget is the per-token budget of the support route: a person
// reading, not a bot.
var DefaultBudget = budget.Policy{Name: "support", Rate: 60, Period: time.Minute, Burst: 10}

// Door is the support route's admission policy (see package admit): the
// client address's budget, a support token (any other kind is 401), at
// most DoorInFlight reads in flight per token, and the token's budget.
// New fills in the budgets.
var Door = admit.Door{
	Name:               "support",
	Kind:               auth.KindSupport,
	InFlight:           DoorInFlight,
	MissingTokenDetail: "a support token is required in the Authorization header",
	InvalidTokenDetail: "the support token is missing, malformed or revoked",
}

// DoorInFlight bounds one support token's reads running at once.
const DoorInFlight = 2

// Hub is what the route reads of the live tunnels; *hub.Hub implements
// it.
type Hub interface {
	Info(userID string) (agentcall.Info, bool)
	Call(ctx context.Context, userID, fn, requestID string, args json.RawMessage) (json.RawMessage, error)
}

// Store is what the route reads of the store; store.Store implements it.
type Store interface {
	User(ctx context.Context, id string) (store.User, error)
	AgentSessions(ctx context.Context, userID string, since time.Time, limit int) ([]store.AgentSession, error)
	LatestAgentDiagnostics(ctx context.Context, userID string) (store.StoredDiagnostics, error)
}

// Options configure a Server.
type Options struct {
	// Hub reaches the agents. Required.
	Hub Hub
	// Store holds the users and the connection history. Required.
	Store Store
	// Admit admits the requests (Door); the relay passes the one
	// Admitter of every door. Required.
	Admit *admit.Admitter
	// IPBudget is the per-client-address budget checked before the
	// token; nil means none.
	IPBudget *budget.Limiter
	// Budget is the per-token budget; the zero value means
	// DefaultBudget.
	Budget budget.Policy
	// Budgets keeps Budget where every relay node sees it (a
	// *budget.Redis); nil means this node's memory.
	Budgets budget.Backend
	// Logger receives the audit lines; the server logs as "support". Nil
	// means no logging.
	Logger *zap.Logger
	// DiagnosticsTimeout bounds asking a connected agent for its
	// diagnostics. Default DefaultDiagnosticsTimeout (3 s).
	DiagnosticsTimeout time.Duration
	// Retention is how far back the history goes. Default
	// DefaultRetention (30 days).
	Retention time.Duration
	// HistoryLimit bounds the history's entries. Default
	// DefaultHistoryLimit.
	HistoryLimit int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Server serves the support route. It starts no goroutines.
type Server struct {
	opts Options
	log  *zap.Logger
	door admit.Door
}

// New returns a Server.
func New(opts Options) (*Server, error) {
	if opts.Hub == nil || opts.Store == nil || opts.Admit == nil {
		return nil, errors.New("support: Options.Hub, Options.Store and Options.Admit are required")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Budget == (budget.Policy{}) {
		opts.Budget = DefaultBudget
	}
	if opts.DiagnosticsTimeout <= 0 {
		opts.DiagnosticsTimeout = DefaultDiagnosticsTimeout
	}
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	if opts.HistoryLimit <= 0 {
		opts.HistoryLimit = DefaultHistoryLimit
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	b, err := budget.New(budget.Options{Policy: opts.Budget, Backend: opts.Budgets})
	if err != nil {
		return nil, err
	}
	door := Door
	door.IP = opts.IPBudget
	door.Budgets = []*budget.Limiter{b}
	return &Server{opts: opts, log: opts.Logger.Named("support"), door: door}, nil
}

// Mux is where Register adds the route.
type Mux interface {
	Handle(pattern string, handler http.Handler)
}

// Register adds GET Path to mux.
func (s *Server) Register(mux Mux) { mux.Handle("GET "+Path, s) }

// Answer is the route's data.
type Answer struct {
	UserID    string `json:"userId"`
	Connected bool   `json:"connected"`
	// Agent is the live tunnel; nil when the agent is not connected.
	Agent *Agent `json:"agent"`
	// Diagnostics are the agent's latest, from DiagnosticsSource, as the
	// relay received them at DiagnosticsAt; nil when none.
	Diagnostics       *protocol.Diagnostics `json:"diagnostics"`
	DiagnosticsAt     *time.Time            `json:"diagnosticsAt"`
	DiagnosticsSource string                `json:"diagnosticsSource"`
	// History is the connection history, newest first.
	History []Entry `json:"history"`
}

// Agent is a connected agent's tunnel.
type Agent struct {
	SessionID       string                `json:"sessionId"`
	ConnectedAt     time.Time             `json:"connectedAt"`
	AgentVersion    string                `json:"agentVersion"`
	ProtocolVersion int                   `json:"protocolVersion"`
	Platform        string                `json:"platform"`
	Connections     []protocol.Connection `json:"connections"`
}

// Entry is one entry of the connection history: a session, or a refused
// handshake (no sessionId, disconnectedAt = connectedAt).
type Entry struct {
	SessionID   string    `json:"sessionId"`
	ConnectedAt time.Time `json:"connectedAt"`
	// DisconnectedAt is nil while the session is live.
	DisconnectedAt  *time.Time `json:"disconnectedAt"`
	Reason          string     `json:"reason"`
	AgentVersion    string     `json:"agentVersion"`
	ProtocolVersion int        `json:"protocolVersion"`
	Platform        string     `json:"platform"`
	RemoteAddr      string     `json:"remoteAddr"`
}

// notFound is the one answer for a user that does not exist and one the
// token is not granted.
var notFound = httpapi.Error{Code: errcode.NotFound, Detail: "no such user, or not one this support token may read"}

// Results of the audit line.
const (
	resultOK          = "ok"
	resultNotFound    = "not_found"
	resultUnavailable = "storage_unavailable"
)

// ServeHTTP answers GET Path.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ad, ok := s.opts.Admit.Admit(w, r, &s.door)
	if !ok {
		return
	}
	defer ad.Done()
	if e := httpapi.RejectBody(r); e != nil {
		httpapi.WriteError(w, e.Status, *e)
		return
	}
	p := ad.Principal
	userID := r.PathValue("userId")
	ans, result, e := s.answer(r.Context(), p, userID)
	fields := []zap.Field{zap.String("supportToken", auth.TokenID(p.TokenHash)), zap.String("supportName", p.UserName),
		zap.String("user", loggable(userID)), zap.String("result", result)}
	if e != nil {
		s.log.Info("support read", fields...)
		httpapi.WriteError(w, e.Status, *e)
		return
	}
	s.log.Info("support read", append(fields, zap.String("diagnosticsSource", ans.DiagnosticsSource))...)
	httpapi.Write(w, http.StatusOK, ans)
}

// answer reads what the route answers about userID for p.
func (s *Server) answer(ctx context.Context, p auth.Principal, userID string) (*Answer, string, *httpapi.Error) {
	// The user is looked up whether or not the token is granted, so that
	// both refusals cost the same.
	_, err := s.opts.Store.User(ctx, userID)
	switch {
	case errors.Is(err, store.ErrNotFound) || (err == nil && !p.Granted(userID)):
		e := notFound
		e.Status = http.StatusNotFound
		return nil, resultNotFound, &e
	case err != nil:
		s.log.Warn("support read: reading the user", zap.Error(err))
		return nil, resultUnavailable, unavailable()
	}
	ans, err := s.Read(ctx, userID)
	if err != nil {
		s.log.Warn("support read: reading the store", zap.Error(err))
		return nil, resultUnavailable, unavailable()
	}
	return ans, resultOK, nil
}

// Read reads userID's agent as the relay sees it now, its latest
// diagnostics and its connection history: what the support route answers
// for a user its token is granted, and what the dashboard shows a user of
// their own agent (one function, two doors; each door admits its caller
// and decides whose agent it may read). The error is the store's failure.
func (s *Server) Read(ctx context.Context, userID string) (*Answer, error) {
	ans := &Answer{UserID: userID, DiagnosticsSource: SourceNone, History: []Entry{}}
	info, connected := s.opts.Hub.Info(userID)
	if connected {
		ans.Connected = true
		conns := info.Hello.Connections
		if conns == nil {
			conns = []protocol.Connection{}
		}
		ans.Agent = &Agent{SessionID: info.SessionID, ConnectedAt: info.ConnectedAt.UTC(), AgentVersion: info.Hello.AgentVersion,
			ProtocolVersion: info.Hello.ProtocolVersion, Platform: info.Hello.Platform, Connections: conns}
		if info.Hello.ProtocolVersion >= protocol.DiagnosticsProtocolVersion {
			if d, ok := s.live(ctx, userID); ok {
				ans.setDiagnostics(d, s.opts.Now(), SourceLive)
			}
		}
		if ans.Diagnostics == nil && info.Diagnostics != nil {
			d := *info.Diagnostics
			ans.setDiagnostics(&d, info.DiagnosticsAt, SourceConnect)
		}
	}
	if ans.Diagnostics == nil {
		sd, err := s.opts.Store.LatestAgentDiagnostics(ctx, userID)
		switch {
		case err == nil:
			var d protocol.Diagnostics
			if json.Unmarshal(sd.JSON, &d) == nil {
				ans.setDiagnostics(&d, sd.At, SourceStored)
			}
		case !errors.Is(err, store.ErrNotFound):
			return nil, fmt.Errorf("reading the stored diagnostics: %w", err)
		}
	}
	sessions, err := s.opts.Store.AgentSessions(ctx, userID, s.opts.Now().Add(-s.opts.Retention), s.opts.HistoryLimit)
	if err != nil {
		return nil, fmt.Errorf("reading the connection history: %w", err)
	}
	for _, a := range sessions {
		e := Entry{SessionID: a.SessionID, ConnectedAt: a.ConnectedAt.UTC(), Reason: a.Reason, AgentVersion: a.AgentVersion,
			ProtocolVersion: a.ProtocolVersion, Platform: a.Platform, RemoteAddr: a.RemoteAddr}
		if !a.DisconnectedAt.IsZero() {
			at := a.DisconnectedAt.UTC()
			e.DisconnectedAt = &at
		}
		ans.History = append(ans.History, e)
	}
	return ans, nil
}

// live asks the connected agent for fresh diagnostics.
func (s *Server) live(ctx context.Context, userID string) (*protocol.Diagnostics, bool) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.DiagnosticsTimeout)
	defer cancel()
	out, err := s.opts.Hub.Call(ctx, userID, protocol.FnDiagnostics, "", nil)
	if err != nil {
		s.log.Debug("support read: the agent did not answer its diagnostics", zap.Error(err))
		return nil, false
	}
	var d protocol.Diagnostics
	if err := json.Unmarshal(out, &d); err != nil {
		s.log.Debug("support read: the agent's diagnostics are malformed", zap.Error(err))
		return nil, false
	}
	if len(d.Errors) > protocol.MaxDiagnosticErrors {
		d.Errors = d.Errors[:protocol.MaxDiagnosticErrors]
	}
	return &d, true
}

func (a *Answer) setDiagnostics(d *protocol.Diagnostics, at time.Time, source string) {
	at = at.UTC()
	a.Diagnostics, a.DiagnosticsAt, a.DiagnosticsSource = d, &at, source
}

func unavailable() *httpapi.Error {
	return &httpapi.Error{Status: http.StatusServiceUnavailable, Code: errcode.StorageUnavailable,
		Detail: "the relay cannot read its store right now; retry shortly", RetryAfter: 5}
}

// userIDShape is what the audit line logs of a user id: anything else
// (a token pasted by mistake, bytes meant for a log) is logged as
// "(malformed)".
var userIDShape = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func loggable(userID string) string {
	if !userIDShape.MatchString(userID) || len(userID) > 3 && userID[:3] == "tb_" {
		return "(malformed)"
	}
	return userID
}
