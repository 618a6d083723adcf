// Package admit runs the relay's request admission, the same steps in the
// same order for every door (the trading routes, the stream socket's
// upgrade, the agents' tunnel, the Management API):
//
//  1. the client address's budget (429 rate_limited, policy "ip"), before
//     any token is looked at, so that guessing tokens costs no look-ups;
//  2. the token of the door's kind (401 unauthorized; 503
//     storage_unavailable when the store cannot say);
//  3. the plan (403 with the door's code);
//  4. the door's own gate, if any (service modes, not_available);
//  5. the scope of an API token (403 insufficient_scope with a
//     WWW-Authenticate challenge naming the scope needed): what the
//     request needs is the door's Scope, by default read for GET, HEAD
//     and OPTIONS and trade for every other method;
//  6. the user's requests in flight through the door (429
//     too_many_concurrent_requests);
//  7. the door's budgets, charged in order to the user (429 rate_limited
//     naming the budget).
//
// A request refused before step 6 holds no in-flight place and is
// charged to none of the user's budgets.
//
// A door is a policy value (Door), not a copy of the steps: each door's
// package defines its Door once, next to its handler, and every request
// goes through Admitter.Admit. The body is read only after admission.
//
// An Admitter starts no goroutines; admission costs a few map look-ups
// under sharded locks and, with the token cached, no I/O.
//
// On several relay nodes, the in-flight places are leases kept by a
// budget.Backend (Redis, Options.Leases) with the budgets: a user's limit
// holds across nodes, and a stopped node's leases lapse after LeaseTTL.
// Then the lease and the door's budgets are one call to the backend, and
// Admission.Done one more; when the backend does not answer, the node
// counts and charges in its own memory, with the same limits.
package admit

import (
	"context"
	"errors"
	"hash/maphash"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// Authenticator checks tokens; *auth.Authenticator implements it.
type Authenticator interface {
	Authenticate(ctx context.Context, token string, want auth.Kind) (auth.Principal, error)
}

// Options configure an Admitter.
type Options struct {
	// Auth checks tokens. Required.
	Auth Authenticator
	// Logger receives the store failures met while checking tokens. Nil
	// means no logging.
	Logger *zap.Logger
	// Leases, when set, keeps the in-flight places as leases every relay
	// node sees (a *budget.Redis), so that a user's in-flight limit holds
	// across nodes. Nil means the Admitter's memory. When the door's
	// budgets are kept by the same backend, the lease and the budgets are
	// one call.
	Leases budget.Backend
	// LeaseTTL is how long a lease is held when it is never released (its
	// node stopped mid-request): a little over the longest a request may
	// run. Default DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Refusals, when set, is told of every request of an API token
	// refused for one of its user's budgets (429 rate_limited) by Admit
	// and Charge, and by the doors that charge budgets themselves
	// (Admitter.Refused): the activity log records them aggregated
	// (relay/activity's Refusals). The per-address budget's refusals are
	// no user's and are not told; nor are other kinds of token's
	// (agents, support staff).
	Refusals Refusals
}

// Refusals counts the requests refused for a user's budget;
// relay/activity's Refusals implements it. Refused must not block.
type Refusals interface {
	Refused(userID string, source protocol.ActivitySource, policy string)
}

// DefaultLeaseTTL is Options.LeaseTTL's default: 90 s, a little over the
// longest a request may run (the relay's 60 s WriteTimeout, which bounds
// the agent's 30 s and the body's 10 s).
const DefaultLeaseTTL = 90 * time.Second

// DefaultIPPolicy is the per-address budget every door charges first:
// generous enough for several bots behind one address, low enough that a
// flood of bad tokens never reaches the token store.
var DefaultIPPolicy = budget.Policy{Name: "ip", Rate: 1200, Period: time.Minute, Burst: 300}

// Door is a door's policy: a value, not a copy of the steps. The zero
// values of the optional fields turn their step off.
type Door struct {
	// Name names the door in logs and metrics ("trading", "stream",
	// "tunnel", "manage", "tv"), and keeps its in-flight counts apart
	// from other doors'.
	Name string
	// Kind is the kind of token the door accepts.
	Kind auth.Kind
	// Plan is the least plan admitted; "" admits every plan.
	Plan auth.Plan
	// PlanCode is the 403 code of a plan below Plan
	// (errcode.PlanRequired, errcode.EliteRequired), and PlanDetail its
	// sentence.
	PlanCode   string
	PlanDetail string
	// MissingTokenDetail is the sentence of the 401 answered when no
	// token was sent, and InvalidTokenDetail of the one answered when the
	// token is refused. Defaults: "a token is required in the
	// Authorization header" and "the token is missing, malformed or
	// revoked".
	MissingTokenDetail string
	InvalidTokenDetail string
	// Token, when set, reads the request's token (or refuses the request
	// before any token is looked at, with the error it returns). Nil
	// means the Authorization: Bearer header (auth.BearerToken).
	Token func(r *http.Request) (string, *httpapi.Error)
	// Scope, when set, is the scope an API token needs for the request
	// (RequireScope); nil means MethodScope. Other kinds of token are kept
	// to their doors by their kind and pass (auth.Principal.Allows).
	Scope func(r *http.Request) auth.Scope
	// IP is the per-client-address budget (key httpapi.ClientAddr),
	// checked before the token; nil means none.
	IP *budget.Limiter
	// Gate, when set, runs after the plan; a non-nil error refuses the
	// request with it (service modes, not_available).
	Gate func(r *http.Request, p auth.Principal) *httpapi.Error
	// InFlight bounds the requests of one user running at once through
	// this door (until Admission.Done); 0 means no limit.
	InFlight int
	// Budgets are charged in order, one each, keyed by the user id. The
	// first one's state is written as the RateLimit-Policy and RateLimit
	// headers of an admitted request when RateLimitHeaders is set.
	Budgets          []*budget.Limiter
	RateLimitHeaders bool
	// Source is the kind of source the activity log names for the
	// door's requests (protocol.SourceStream for the stream socket);
	// "" means protocol.SourceAPI.
	Source string
	// SourceID, when set, names the source's id in the activity log (the
	// TradingView webhook's id); nil means the token's id
	// (auth.TokenID).
	SourceID func(p auth.Principal) string
}

// Admitter admits requests at every door. It is safe for concurrent use.
type Admitter struct {
	auth     Authenticator
	refusals Refusals // nil: none told
	log      *zap.Logger
	leases   budget.Backend // nil: inflight alone
	leaseTTL time.Duration
	seed     maphash.Seed
	// inflight counts requests in flight by door and user: the leases
	// in memory, without a backend or while it does not answer.
	inflight [inflightShards]inflightShard
}

const inflightShards = 64

type inflightKey struct{ door, user string }

type inflightShard struct {
	mu sync.Mutex
	n  map[inflightKey]int
	_  [48]byte // keep shards on separate cache lines
}

// New returns an Admitter.
func New(opts Options) (*Admitter, error) {
	if opts.Auth == nil {
		return nil, errors.New("admit: Options.Auth is required")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.LeaseTTL < 0 {
		return nil, errors.New("admit: Options.LeaseTTL must not be negative")
	}
	if opts.LeaseTTL == 0 {
		opts.LeaseTTL = DefaultLeaseTTL
	}
	a := &Admitter{auth: opts.Auth, log: opts.Logger.Named("admit"), leases: opts.Leases, leaseTTL: opts.LeaseTTL,
		seed: maphash.MakeSeed(), refusals: opts.Refusals}
	for i := range a.inflight {
		a.inflight[i].n = make(map[inflightKey]int)
	}
	return a, nil
}

// Admission is an admitted request. Call Done when the request is over, to
// release its place among the user's requests in flight.
type Admission struct {
	// Principal is the caller the token names.
	Principal auth.Principal

	a     *Admitter
	key   inflightKey   // the place in memory, when lease is nil
	lease *budget.Lease // the place in the backend
	held  atomic.Bool
}

// Done releases the request's in-flight place (with a backend, one call;
// a lease it fails to release lapses after the TTL). It is idempotent and
// safe on a nil Admission.
func (ad *Admission) Done() {
	if ad == nil || !ad.held.CompareAndSwap(true, false) {
		return
	}
	if ad.lease != nil {
		// The backend warns when it does not answer.
		_ = ad.a.leases.Release(context.Background(), ad.lease)
		return
	}
	ad.a.release(ad.key)
}

// Admit runs, in order: the per-address budget (429 rate_limited, policy
// "ip"), the token of d.Kind (401 unauthorized; 503 storage_unavailable
// with retryAfter 5 when the store fails), the plan (403 d.PlanCode),
// d.Gate, the token's scope (403 insufficient_scope, RequireScope, with
// the WWW-Authenticate header ScopeChallenge), the in-flight limit (429
// too_many_concurrent_requests with Retry-After: 1 and retryAfter 1),
// then d.Budgets (429 rate_limited naming the budget,
// httpapi.WriteRateLimited). On refusal it has written
// the answer and returns ok false, holding no in-flight place; otherwise
// the caller must call Done on the Admission when the request is over.
//
// With Options.Leases, the in-flight place is a lease, taken in one call
// with d.Budgets when they are kept by the same backend.
func (a *Admitter) Admit(w http.ResponseWriter, r *http.Request, d *Door) (*Admission, bool) {
	if !httpapi.AllowAddress(w, r, d.IP) {
		return nil, false
	}
	var token string
	if d.Token != nil {
		t, e := d.Token(r)
		if e != nil {
			httpapi.WriteError(w, e.Status, *e)
			return nil, false
		}
		token = t
	} else {
		token, _ = auth.BearerToken(r.Header)
	}
	p, e, err := a.verify(r.Context(), d, token)
	if e != nil {
		if err != nil {
			a.log.Error("authenticating request", zap.String("door", d.Name), zap.Error(err))
		}
		httpapi.WriteError(w, e.Status, *e)
		return nil, false
	}
	if d.Gate != nil {
		if e := d.Gate(r, p); e != nil {
			httpapi.WriteError(w, e.Status, *e)
			return nil, false
		}
	}
	if !allowScope(w, r, d, p) {
		return nil, false
	}
	ad := &Admission{Principal: p, a: a}
	if a.leases != nil && (d.InFlight > 0 || len(d.Budgets) > 1 && a.sharesBudgets(d)) {
		return a.admitShared(r.Context(), w, d, ad)
	}
	return a.admitLocal(w, d, ad)
}

// admitLocal runs the in-flight limit in memory, then the door's budgets.
func (a *Admitter) admitLocal(w http.ResponseWriter, d *Door, ad *Admission) (*Admission, bool) {
	if d.InFlight > 0 {
		ad.key = inflightKey{door: d.Name, user: ad.Principal.UserID}
		if !a.acquire(ad.key, d.InFlight) {
			writeTooMany(w, d)
			return nil, false
		}
		ad.held.Store(true)
	}
	return a.chargeDoor(w, d, ad)
}

// chargeDoor charges d.Budgets one by one, after the in-flight limit.
func (a *Admitter) chargeDoor(w http.ResponseWriter, d *Door, ad *Admission) (*Admission, bool) {
	for i, b := range d.Budgets {
		dec := b.Allow(ad.Principal.UserID)
		if !dec.Allowed {
			ad.Done()
			httpapi.WriteRateLimited(w, b.Policy(), dec)
			a.Refused(ad.Principal, d, b.Policy().Name)
			return nil, false
		}
		if i == 0 && d.RateLimitHeaders {
			setRateLimitHeaders(w, b.Policy(), dec)
		}
	}
	return ad, true
}

// admitShared takes the in-flight lease from the backend, with the door's
// budgets in the same call when the backend keeps them all. When the
// backend does not answer, the node decides alone (admitLocal).
func (a *Admitter) admitShared(ctx context.Context, w http.ResponseWriter, d *Door, ad *Admission) (*Admission, bool) {
	var lease *budget.Lease
	if d.InFlight > 0 {
		lease = &budget.Lease{Key: d.Name + ":" + ad.Principal.UserID, Limit: d.InFlight, TTL: a.leaseTTL}
	}
	var charges []budget.Charge
	if a.sharesBudgets(d) {
		charges = make([]budget.Charge, len(d.Budgets))
		for i, b := range d.Budgets {
			charges[i] = budget.Charge{Limiter: b, Key: ad.Principal.UserID, Cost: 1}
		}
	}
	dec := make([]budget.Decision, len(charges))
	res, err := a.leases.Admit(ctx, lease, charges, dec)
	if err != nil {
		return a.admitLocal(w, d, ad)
	}
	if res.LeaseRefused {
		writeTooMany(w, d)
		return nil, false
	}
	if res.Refused >= 0 {
		httpapi.WriteRateLimited(w, d.Budgets[res.Refused].Policy(), dec[res.Refused])
		a.Refused(ad.Principal, d, d.Budgets[res.Refused].Policy().Name)
		return nil, false
	}
	if lease != nil {
		ad.lease = lease
		ad.held.Store(true)
	}
	if charges == nil {
		return a.chargeDoor(w, d, ad)
	}
	if d.RateLimitHeaders && len(dec) > 0 {
		setRateLimitHeaders(w, d.Budgets[0].Policy(), dec[0])
	}
	return ad, true
}

// sharesBudgets reports whether the Admitter's backend keeps every budget
// of d.
func (a *Admitter) sharesBudgets(d *Door) bool {
	for _, b := range d.Budgets {
		if b.Backend() != a.leases {
			return false
		}
	}
	return len(d.Budgets) > 0
}

// writeTooMany answers 429 too_many_concurrent_requests.
func writeTooMany(w http.ResponseWriter, d *Door) {
	httpapi.WriteError(w, http.StatusTooManyRequests, httpapi.Error{Code: errcode.TooManyConcurrentRequests,
		Detail: "this user already runs " + strconv.Itoa(d.InFlight) + " requests at once here; wait for one to finish", RetryAfter: 1})
}

// setRateLimitHeaders writes an admitted request's RateLimit-Policy and
// RateLimit headers.
func setRateLimitHeaders(w http.ResponseWriter, pol budget.Policy, dec budget.Decision) {
	h := w.Header()
	h.Set("RateLimit-Policy", pol.PolicyHeader())
	h.Set("RateLimit", pol.Header(dec))
}

// Charge is one more budget charged for one request (the Management API's
// read, write, resource, stop and kill budgets).
type Charge struct {
	Budget *budget.Limiter
	// Key is the budget's key; "" means the user id.
	Key string
	// Cost is what the request costs; 0 means 1.
	Cost int
}

// Charge charges each of charges in order, to p's user unless a charge
// names its key. At the first refusal it writes 429 rate_limited naming
// that budget's policy and returns false; the budgets charged before the
// refusal stay charged (every attempt counts). A charge with a nil Budget
// is skipped. When the budgets are kept by one backend, that is one call
// to it.
func (a *Admitter) Charge(w http.ResponseWriter, p auth.Principal, charges ...Charge) bool {
	for _, c := range charges {
		if c.Budget != nil && c.Budget.Backend() != nil {
			return a.chargeShared(w, p, charges)
		}
	}
	for _, c := range charges {
		if c.Budget == nil {
			continue
		}
		key, cost := c.Key, c.Cost
		if key == "" {
			key = p.UserID
		}
		if cost <= 0 {
			cost = 1
		}
		if dec := c.Budget.AllowN(key, cost); !dec.Allowed {
			httpapi.WriteRateLimited(w, c.Budget.Policy(), dec)
			a.Refused(p, nil, c.Budget.Policy().Name)
			return false
		}
	}
	return true
}

// chargeShared is Charge with budgets kept by a backend (budget.AllowAll).
func (a *Admitter) chargeShared(w http.ResponseWriter, p auth.Principal, charges []Charge) bool {
	cs := make([]budget.Charge, 0, len(charges))
	for _, c := range charges {
		if c.Budget == nil {
			continue
		}
		key := c.Key
		if key == "" {
			key = p.UserID
		}
		cs = append(cs, budget.Charge{Limiter: c.Budget, Key: key, Cost: c.Cost})
	}
	dec := make([]budget.Decision, len(cs))
	if i := budget.AllowAll(context.Background(), cs, dec); i >= 0 {
		httpapi.WriteRateLimited(w, cs[i].Limiter.Policy(), dec[i])
		a.Refused(p, nil, cs[i].Limiter.Policy().Name)
		return false
	}
	return true
}

// Refused tells Options.Refusals of a request of p refused for the
// budget named policy at door d (nil: a door of source api): Admit and
// Charge call it for the refusals they answer, and a door that charges a
// budget itself (the stream socket's frames) for its own. Only API
// tokens' refusals are told.
func (a *Admitter) Refused(p auth.Principal, d *Door, policy string) {
	if a.refusals == nil || p.Kind != auth.KindAPI {
		return
	}
	src := protocol.ActivitySource{Kind: protocol.SourceAPI, ID: auth.TokenID(p.TokenHash)}
	if d != nil && d.Source != "" {
		src.Kind = d.Source
	}
	if d != nil && d.SourceID != nil {
		src.ID = d.SourceID(p)
	}
	a.refusals.Refused(p.UserID, src, policy)
}

// Verify checks token against d's kind and plan, without HTTP: the
// periodic re-verification of a stream socket or a tunnel. The error, when
// not nil, is the answer Admit would have given: 401 unauthorized, 403
// d.PlanCode, or 503 storage_unavailable when the token could not be
// checked (which says nothing about the token).
func (a *Admitter) Verify(ctx context.Context, d *Door, token string) (auth.Principal, *httpapi.Error) {
	p, e, _ := a.verify(ctx, d, token)
	return p, e
}

// verify is Verify; err is the store's failure behind a 503.
func (a *Admitter) verify(ctx context.Context, d *Door, token string) (auth.Principal, *httpapi.Error, error) {
	if token == "" {
		detail := d.MissingTokenDetail
		if detail == "" {
			detail = "a token is required in the Authorization header"
		}
		return auth.Principal{}, &httpapi.Error{Status: http.StatusUnauthorized, Code: errcode.Unauthorized, Detail: detail}, nil
	}
	p, err := a.auth.Authenticate(ctx, token, d.Kind)
	if err != nil {
		if errors.Is(err, auth.ErrUnauthorized) {
			detail := d.InvalidTokenDetail
			if detail == "" {
				detail = "the token is missing, malformed or revoked"
			}
			return auth.Principal{}, &httpapi.Error{Status: http.StatusUnauthorized, Code: errcode.Unauthorized, Detail: detail}, nil
		}
		return auth.Principal{}, &httpapi.Error{Status: http.StatusServiceUnavailable, Code: errcode.StorageUnavailable,
			Detail: "the relay cannot check tokens right now; retry shortly", RetryAfter: 5}, err
	}
	if e := d.planError(p); e != nil {
		return auth.Principal{}, e, nil
	}
	return p, nil, nil
}

func (a *Admitter) shard(k inflightKey) *inflightShard {
	return &a.inflight[maphash.String(a.seed, k.user)%inflightShards]
}

// acquire counts one more request of k unless limit are in flight.
func (a *Admitter) acquire(k inflightKey, limit int) bool {
	s := a.shard(k)
	s.mu.Lock()
	n := s.n[k]
	ok := n < limit
	if ok {
		s.n[k] = n + 1
	}
	s.mu.Unlock()
	return ok
}

// release counts one request of k fewer.
func (a *Admitter) release(k inflightKey) {
	s := a.shard(k)
	s.mu.Lock()
	if n := s.n[k] - 1; n > 0 {
		s.n[k] = n
	} else {
		delete(s.n, k)
	}
	s.mu.Unlock()
}

// InFlight returns how many requests of userID run through the door named
// door, for tests and metrics: with a backend, the leases every node holds
// there plus the places this node counted while the backend did not
// answer.
func (a *Admitter) InFlight(door, userID string) int {
	k := inflightKey{door: door, user: userID}
	s := a.shard(k)
	s.mu.Lock()
	n := s.n[k]
	s.mu.Unlock()
	if a.leases != nil {
		if m, err := a.leases.Leases(context.Background(), door+":"+userID); err == nil {
			n += m
		}
	}
	return n
}
