package pairing

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/admit"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/store"
)

// Budget is the per-client-address budget of POST /v1/agent/pair, on top
// of the relay's per-address budget: a trader types a code or two, a
// guesser is held to 10 a minute (and the codes' 31^8 make a guess
// hopeless within a code's 10 minutes).
var Budget = budget.Policy{Name: "pair", Rate: 10, Period: time.Minute, Burst: 10}

// Results of an attempt, the label of relay_agent_pair_attempts_total.
const (
	ResultPaired      = "paired"
	ResultInvalid     = "invalid"
	ResultRateLimited = "rate_limited"
	ResultBadRequest  = "bad_request"
	ResultUnavailable = "unavailable"
)

// TokenDoor is the admission policy of DELETE /v1/agent/token (see
// package admit): the client address's budget (filled in by New), then an
// agent token.
var TokenDoor = admit.Door{
	Name:               "agent-token",
	Kind:               auth.KindAgent,
	MissingTokenDetail: "an agent token is required",
	InvalidTokenDetail: "the agent token is missing, malformed or revoked",
}

// Metrics counts the attempts; *metrics.Metrics implements it.
type Metrics interface {
	PairAttempt(result string)
}

// Options configure a Server.
type Options struct {
	// Store keeps the codes and tokens. Required.
	Store Store
	// Admit admits DELETE /v1/agent/token (TokenDoor); the relay passes
	// the one Admitter of every door. Required.
	Admit *admit.Admitter
	// IPBudget is the relay's per-client-address budget, charged first
	// on both routes; nil means none.
	IPBudget *budget.Limiter
	// Budget is the pairing route's own per-address budget; the zero
	// value means Budget.
	Budget budget.Policy
	// Budgets keeps Budget where every relay node sees it (a
	// *budget.Redis); nil means this node's memory.
	Budgets budget.Backend
	// Metrics may be nil.
	Metrics Metrics
	// Logger receives the attempts; the server logs as "pairing". Nil
	// means no logging.
	Logger *zap.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Server serves the pairing routes. It starts no goroutines.
type Server struct {
	opts   Options
	log    *zap.Logger
	budget *budget.Limiter
	door   admit.Door
}

// New returns a Server.
func New(opts Options) (*Server, error) {
	if opts.Store == nil || opts.Admit == nil {
		return nil, errors.New("pairing: Options.Store and Options.Admit are required")
	}
	if opts.Budget == (budget.Policy{}) {
		opts.Budget = Budget
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	b, err := budget.New(budget.Options{Policy: opts.Budget, Backend: opts.Budgets})
	if err != nil {
		return nil, err
	}
	door := TokenDoor
	door.IP = opts.IPBudget
	return &Server{opts: opts, log: opts.Logger.Named("pairing"), budget: b, door: door}, nil
}

// Mux is where Register adds the routes.
type Mux interface {
	HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request))
}

// Register adds POST protocol.PairPath and DELETE protocol.AgentTokenPath
// to mux.
func (s *Server) Register(mux Mux) {
	mux.HandleFunc("POST "+protocol.PairPath, s.pair)
	mux.HandleFunc("DELETE "+protocol.AgentTokenPath, s.revoke)
}

// invalid is the one answer for every refused code.
var invalid = httpapi.Error{Code: errcode.PairingCodeInvalid,
	Detail: "the pairing code is wrong, expired or already used; get a new one (codes are 8 letters and digits, shown XXXX-XXXX, valid 10 minutes, once)"}

// pair answers POST protocol.PairPath.
func (s *Server) pair(w http.ResponseWriter, r *http.Request) {
	addr := httpapi.ClientAddr(r)
	for _, l := range []*budget.Limiter{s.opts.IPBudget, s.budget} {
		if l == nil {
			continue
		}
		if d := l.Allow(addr); !d.Allowed {
			s.count(ResultRateLimited)
			s.log.Warn("pairing attempt refused: budget used up", zap.String("addr", addr), zap.String("policy", l.Policy().Name))
			httpapi.WriteRateLimited(w, l.Policy(), d)
			return
		}
	}
	code, e := readCode(w, r)
	if e != nil {
		s.count(ResultBadRequest)
		s.log.Warn("pairing attempt refused: malformed request", zap.String("addr", addr), zap.String("error", e.Code))
		httpapi.WriteError(w, e.Status, *e)
		return
	}
	res, err := Exchange(r.Context(), s.opts.Store, code, s.opts.Now())
	switch {
	case errors.Is(err, ErrInvalidCode):
		s.count(ResultInvalid)
		s.log.Warn("pairing attempt refused: invalid code", zap.String("addr", addr))
		httpapi.WriteError(w, http.StatusUnauthorized, invalid)
		return
	case err != nil:
		s.count(ResultUnavailable)
		s.log.Error("pairing attempt failed", zap.String("addr", addr), zap.Error(err))
		httpapi.WriteError(w, http.StatusServiceUnavailable, httpapi.Error{Code: errcode.StorageUnavailable,
			Detail: "the relay could not check the code; try again shortly", RetryAfter: 5})
		return
	}
	s.count(ResultPaired)
	s.log.Info("agent paired", zap.String("addr", addr), zap.String("user", res.UserID),
		zap.String("token", auth.TokenID(auth.Hash(res.Token))))
	httpapi.Write(w, http.StatusOK, res)
}

// readCode reads the body strictly: a JSON object whose one member is
// code, a string.
func readCode(w http.ResponseWriter, r *http.Request) (string, *httpapi.Error) {
	var body map[string]json.RawMessage
	if e := httpapi.ReadJSON(w, r, &body, httpapi.ReadOptions{MaxBytes: 1 << 10}); e != nil {
		return "", e
	}
	var unknown []httpapi.FieldError
	for _, k := range slices.Sorted(maps.Keys(body)) {
		if k != "code" {
			unknown = append(unknown, httpapi.FieldError{Path: httpapi.SafePath(k), Code: errcode.FieldCodeUnknownField})
		}
	}
	if len(unknown) > 0 {
		return "", &httpapi.Error{Status: http.StatusBadRequest, Code: errcode.InvalidArgument,
			Detail: "the body has a field this route does not take (named in fields when it looks like a field name); it takes code", Fields: unknown}
	}
	raw, ok := body["code"]
	if !ok {
		return "", &httpapi.Error{Status: http.StatusBadRequest, Code: errcode.MissingRequiredFields,
			Detail: "code is required", Fields: []httpapi.FieldError{{Path: "code", Code: errcode.FieldCodeRequired}}}
	}
	var code string
	if err := json.Unmarshal(raw, &code); err != nil {
		return "", &httpapi.Error{Status: http.StatusBadRequest, Code: errcode.InvalidField,
			Detail: "code must be a string", Fields: []httpapi.FieldError{{Path: "code", Code: errcode.FieldCodeWrongType}}}
	}
	return code, nil
}

// revoke answers DELETE protocol.AgentTokenPath.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
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
	err := s.opts.Store.RevokeToken(r.Context(), p.TokenHash, s.opts.Now())
	switch {
	case errors.Is(err, store.ErrNotFound):
		httpapi.WriteError(w, http.StatusUnauthorized, httpapi.Error{Code: errcode.Unauthorized, Detail: s.door.InvalidTokenDetail})
		return
	case err != nil:
		s.log.Error("revoking an agent token", zap.String("user", p.UserID), zap.Error(err))
		httpapi.WriteError(w, http.StatusServiceUnavailable, httpapi.Error{Code: errcode.StorageUnavailable,
			Detail: "the relay could not revoke the token; try again shortly", RetryAfter: 5})
		return
	}
	s.log.Info("agent token revoked by its agent", zap.String("addr", httpapi.ClientAddr(r)), zap.String("user", p.UserID),
		zap.String("token", auth.TokenID(p.TokenHash)))
	httpapi.WriteNoContent(w)
}

func (s *Server) count(result string) {
	if s.opts.Metrics != nil {
		s.opts.Metrics.PairAttempt(result)
	}
}
