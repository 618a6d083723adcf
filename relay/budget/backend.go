package budget

import (
	"context"
	"time"
)

// A Backend keeps budgets, and the leases of requests in flight, where
// every relay node sees them, so that N nodes enforce one budget and not
// N. *Redis implements it; a Limiter uses one through Options.Backend and
// the admission of relay/admit through its Options.Leases.
//
// A Backend answers every call with the exact decisions a Limiter makes in
// memory for the same clock (GCRA, cost 1 or 2, every attempt counts). An
// error means it did not answer (a timeout, a refused connection): the
// caller then decides in its own memory, with the same policy, and the
// node enforces the budget alone until the backend answers again.
type Backend interface {
	// Admit takes lease, when not nil, and then charges charges in
	// order, as one step that no other admission interleaves with. A
	// refused lease charges nothing. At the first refused charge it
	// stops: that charge is not charged, the ones before it stay charged
	// (every attempt counts), and the lease is given back. It fills
	// decisions[i] for each charge it tried; decisions must be as long
	// as charges. When lease.ID is "", Admit sets it. When the result is
	// OK and lease is not nil, the lease is held until Release, or until
	// its TTL lapses.
	Admit(ctx context.Context, lease *Lease, charges []Charge, decisions []Decision) (Result, error)
	// Peek reports the budget of key in l's policy without charging it.
	Peek(ctx context.Context, l *Limiter, key string) (Decision, error)
	// Release gives lease back; a lease no longer held is ignored.
	Release(ctx context.Context, lease *Lease) error
	// Leases returns how many leases of key are held, for tests and
	// metrics.
	Leases(ctx context.Context, key string) (int, error)
}

// MaxSharedWindow bounds Period/Rate × Burst, in nanoseconds, for a budget
// kept by a Backend (13 days): Redis scripts count in float64, exact below
// 2^53.
const MaxSharedWindow = 1 << 50

// Charge is one budget charged for one request.
type Charge struct {
	// Limiter is the budget; it names the policy.
	Limiter *Limiter
	// Key is whose budget: a user id, a client address, a token's.
	Key string
	// Cost is what the request costs; 0 means 1.
	Cost int
}

// Lease is a place among the requests of one key running at once.
type Lease struct {
	// Key is whose requests are counted together: the door and the
	// user ("manage:usr_1").
	Key string
	// ID tells this lease from the key's others; Backend.Admit sets it
	// when "".
	ID string
	// Limit is the most leases of Key held at once.
	Limit int
	// TTL is how long the lease is held when it is never released (a
	// node that stopped mid-request); it must exceed the longest a
	// request may run.
	TTL time.Duration
}

// Result is the outcome of Backend.Admit.
type Result struct {
	// LeaseRefused reports that Limit leases of the lease's Key were
	// held: nothing was taken or charged.
	LeaseRefused bool
	// Refused is the index of the refused charge, whose decision says
	// when to retry, or -1 when none was refused.
	Refused int
}

// OK reports whether the lease, if any, is held and every charge was
// admitted.
func (r Result) OK() bool { return !r.LeaseRefused && r.Refused < 0 }

// AllowAll charges charges in order, each Cost (0 means 1) to its Key in
// its Limiter, and stops at the first refused one: that one is not
// charged, and the ones before it stay charged (every attempt counts). It
// fills decisions[i] for each charge tried (decisions must be as long as
// charges) and returns the index of the refused charge, or -1.
//
// When every charge's Limiter is kept by one Backend, that is one call to
// it; when that backend does not answer, the charges are decided in the
// limiters' memory. Otherwise each Limiter decides in turn.
func AllowAll(ctx context.Context, charges []Charge, decisions []Decision) int {
	if len(charges) == 0 {
		return -1
	}
	be := charges[0].Limiter.backend
	for _, c := range charges[1:] {
		if c.Limiter.backend != be {
			be = nil
			break
		}
	}
	if be != nil {
		if res, err := be.Admit(ctx, nil, charges, decisions); err == nil {
			return res.Refused
		}
		// Having failed, the backend is not asked again before its retry
		// interval: each Limiter decides in memory.
	}
	for i, c := range charges {
		if decisions[i] = c.Limiter.AllowN(c.Key, cost(c.Cost)); !decisions[i].Allowed {
			return i
		}
	}
	return -1
}

// cost is a charge's cost: 0 or less means 1.
func cost(n int) int {
	if n <= 0 {
		return 1
	}
	return n
}
