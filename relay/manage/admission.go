package manage

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"tradebridge/relay/admit"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// Admission of management requests.
//
// Every management request goes, in this order, through:
//
//  1. admit.Admitter.Admit with the door of its route: the relay's
//     per-address budget, the API token (401 unauthorized), the plan (403
//     elite_required), the gate (403 not_available when management is
//     closed for the user, 403 plan_required when the route's family or
//     kind is withheld from the user's plan, 503 management_unavailable,
//     family_unavailable or, for a change, management_read_only by the
//     service modes), the token's scope (403 insufficient_scope: a read
//     token reads, every method but GET needs a trade token) and the
//     in-flight limit (2 per user, 429
//     too_many_concurrent_requests); then the token budget, keyed by the
//     token (the spec's "every request made with the token");
//  2. the path (400 invalid_path for an id not of IDPattern);
//  3. the body, read whole (at most 64 KiB within BodyTimeout); its
//     refusals (413, 408, 415, 400) are decided here and answered at step 7,
//     after the budgets, so that they count;
//  4. the classification: the stop fast path (PATCH of a copier with a
//     body of exactly {"active": false}), the kill switch, or a read, a
//     change, a create, a delete, an action;
//  5. load shedding (503 management_busy with retryAfter), except for stop
//     and kill: when the mode is busy, or more than BusyThreshold
//     management requests run at once;
//  6. the budgets of the class (429 rate_limited naming the policy);
//  7. the query (400 unknown_parameter: no route takes a parameter), the
//     body's refusals, then the strict JSON rules and the kind's.

// Budgets of the Management API (the spec's "Management API budgets").
// None of them is the trading budget.
var (
	TokenPolicy    = budget.Policy{Name: "token", Rate: 120, Period: time.Minute, Burst: 30}
	ReadPolicy     = budget.Policy{Name: "read", Rate: 60, Period: time.Minute, Burst: 20}
	WritePolicy    = budget.Policy{Name: "write", Rate: 20, Period: time.Minute, Burst: 10}
	ResourcePolicy = budget.Policy{Name: "resource", Rate: 6, Period: time.Minute, Burst: 3}
	StopPolicy     = budget.Policy{Name: "stop", Rate: 120, Period: time.Minute, Burst: 60}
	KillPolicy     = budget.Policy{Name: "kill", Rate: 10, Period: time.Minute, Burst: 5}
)

// MaxInFlight is how many management requests of one user run at once.
const MaxInFlight = 2

// MaxBodyBytes bounds a management request's body.
const MaxBodyBytes = 64 << 10

// DoorName names the Management API's door in admission (its in-flight
// counts are its own).
const DoorName = "manage"

// BusyRetryAfter is the retryAfter, in seconds, of 503 management_busy.
const BusyRetryAfter = 2

// budgets are the Management API's limiters.
type budgets struct {
	token, read, write, resource, stop, kill *budget.Limiter
}

// newBudgets builds the limiters on clock now (nil: the monotonic clock),
// kept by backend (nil: in memory).
func newBudgets(now func() int64, backend budget.Backend) (*budgets, error) {
	var b budgets
	for _, x := range []struct {
		l   **budget.Limiter
		pol budget.Policy
	}{{&b.token, TokenPolicy}, {&b.read, ReadPolicy}, {&b.write, WritePolicy}, {&b.resource, ResourcePolicy}, {&b.stop, StopPolicy}, {&b.kill, KillPolicy}} {
		l, err := budget.New(budget.Options{Policy: x.pol, Now: now, Backend: backend})
		if err != nil {
			return nil, err
		}
		*x.l = l
	}
	return &b, nil
}

// RateLimit is one budget in GET /v1/api/manage's limits.
type RateLimit struct {
	PerMinute int `json:"perMinute"`
	Burst     int `json:"burst"`
}

// InFlightLimit is how many management requests of a user run at once.
type InFlightLimit struct {
	Max int `json:"max"`
}

// BudgetLimits are the Management API's budgets, by policy.
type BudgetLimits struct {
	Token    RateLimit     `json:"token"`
	Read     RateLimit     `json:"read"`
	Write    RateLimit     `json:"write"`
	Resource RateLimit     `json:"resource"`
	Stop     RateLimit     `json:"stop"`
	Kill     RateLimit     `json:"kill"`
	InFlight InFlightLimit `json:"inFlight"`
}

// Limits is the data of GET /v1/api/manage.
type Limits struct {
	Limits BudgetLimits `json:"limits"`
}

// perMinute converts a policy to its per-minute rate and burst.
func perMinute(p budget.Policy) RateLimit {
	return RateLimit{PerMinute: int(int64(p.Rate) * int64(time.Minute) / int64(p.Period)), Burst: p.Burst}
}

// currentLimits returns the budgets as GET /v1/api/manage shows them.
func currentLimits() Limits {
	var l Limits
	l.Limits.Token = perMinute(TokenPolicy)
	l.Limits.Read = perMinute(ReadPolicy)
	l.Limits.Write = perMinute(WritePolicy)
	l.Limits.Resource = perMinute(ResourcePolicy)
	l.Limits.Stop = perMinute(StopPolicy)
	l.Limits.Kill = perMinute(KillPolicy)
	l.Limits.InFlight.Max = MaxInFlight
	return l
}

// door returns the admission policy of a route.
func (s *Server) door(rt *route) *admit.Door {
	return &admit.Door{
		Name:               DoorName,
		Kind:               auth.KindAPI,
		Plan:               auth.PlanElite,
		PlanCode:           errcode.EliteRequired,
		PlanDetail:         "the Management API needs the elite plan",
		MissingTokenDetail: "an API token is required in the Authorization header",
		InvalidTokenDetail: "the API token is missing, malformed or revoked",
		IP:                 s.opts.IPBudget,
		Gate:               func(_ *http.Request, p auth.Principal) *httpapi.Error { return s.gate(rt, p) },
		InFlight:           MaxInFlight,
	}
}

// tokenKey is the token budget's key: the token (its stored hash), since
// the budget is of "every request made with the token"; the user when the
// principal names no token.
func tokenKey(p auth.Principal) string {
	if p.TokenHash != "" {
		return "t:" + p.TokenHash
	}
	return "u:" + p.UserID
}

// gate is the door's gate: management closed for the user, a feature
// withheld from the plan, then the service modes.
func (s *Server) gate(rt *route, p auth.Principal) *httpapi.Error {
	if p.ManagementClosed {
		return &httpapi.Error{Status: http.StatusForbidden, Code: errcode.NotAvailable,
			Detail: "the Management API is not open for this account"}
	}
	if (rt.family != "" && p.Withholds(rt.family)) || (rt.kind != nil && p.Withholds(kindFeature(rt.kind.name()))) {
		return &httpapi.Error{Status: http.StatusForbidden, Code: errcode.PlanRequired,
			Detail: "the account's plan does not include this feature"}
	}
	return s.modes.gate(rt.family, rt.change())
}

// class is what a request costs and whether it may pass under load.
type class int

// Classes of requests.
const (
	classRead   class = iota // GET: read 1
	classChange              // PATCH, PUT: write 1 + resource 1
	classCreate              // POST on a collection: write 2
	classDelete              // DELETE: write 2 + resource 1
	classAction              // a monitor's restart: write 2 + resource 1
	classStop                // a copier's stop fast path: stop 1
	classKill                // the kill switch: kill 1
)

// input is a request's body as read before the budgets.
type input struct {
	// body is the body when it is valid JSON (an object, or another value
	// that the kind's rules refuse); nil when none was sent.
	body []byte
	// err is the body's refusal, answered after the budgets.
	err *httpapi.Error
}

// noBody reports a request that sent no body.
func noBody(r *http.Request) bool {
	return r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0
}

// readInput reads the request's body: none for GET and DELETE (400
// unexpected_body otherwise), optional for an action, else one strict
// JSON value (httpapi.ReadJSON: 415, 413, 408, 400 invalid_json). A valid
// value that is not an object is kept: the kind's rules answer it (422
// validation_failed, wrong_type at "").
func (s *Server) readInput(w http.ResponseWriter, r *http.Request, rt *route) input {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodDelete:
		return input{err: httpapi.RejectBody(r)}
	}
	if rt.op == routeAction && noBody(r) {
		return input{}
	}
	var raw json.RawMessage
	if e := httpapi.ReadJSON(w, r, &raw, httpapi.ReadOptions{MaxBytes: MaxBodyBytes, Timeout: s.opts.BodyTimeout, AnyValue: true}); e != nil {
		return input{err: e}
	}
	return input{body: raw}
}

// stopBody reports a body of exactly {"active": false}.
func stopBody(body []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil || len(m) != 1 {
		return false
	}
	v, ok := m["active"]
	return ok && bytes.Equal(bytes.TrimSpace(v), []byte("false"))
}

// classify returns the class of a request on rt with input in.
func classify(rt *route, in input) class {
	switch rt.op {
	case routeLimits, routeList, routeGet:
		return classRead
	case routeCreate:
		return classCreate
	case routeDelete:
		return classDelete
	case routeAction:
		return classAction
	case routeKill:
		return classKill
	case routePatch:
		if isCopierKind(rt.kind.name()) && in.err == nil && stopBody(in.body) {
			return classStop
		}
	}
	return classChange
}

// busy returns 503 management_busy when the service sheds load: the mode
// is busy, or more than BusyThreshold management requests run at once.
func (s *Server) busy() *httpapi.Error {
	if s.modes.management() == ModeBusy || s.running.Load() > int64(s.opts.BusyThreshold) {
		return &httpapi.Error{Status: http.StatusServiceUnavailable, Code: errcode.ManagementBusy,
			Detail: "the Management API is under heavy load; wait retryAfter seconds", RetryAfter: BusyRetryAfter}
	}
	return nil
}

// resourceKey is the resource budget's key of one resource of a user: a
// singleton's is its kind's.
func resourceKey(userID string, k kindOps, id string) string {
	return userID + "\x00" + k.name() + "\x00" + id
}

// charges returns the budgets a request of class cl costs.
func (s *Server) charges(userID string, rt *route, cl class, id string) []admit.Charge {
	b := s.budgets
	var res admit.Charge
	if rt.kind != nil {
		res = admit.Charge{Budget: b.resource, Key: resourceKey(userID, rt.kind, id)}
	}
	switch cl {
	case classRead:
		return []admit.Charge{{Budget: b.read}}
	case classChange:
		return []admit.Charge{{Budget: b.write}, res}
	case classCreate:
		return []admit.Charge{{Budget: b.write, Cost: 2}}
	case classDelete, classAction:
		return []admit.Charge{{Budget: b.write, Cost: 2}, res}
	case classStop:
		return []admit.Charge{{Budget: b.stop}}
	case classKill:
		return []admit.Charge{{Budget: b.kill}}
	}
	return nil
}
