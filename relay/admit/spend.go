package admit

import (
	"net/http"

	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// Spend charges one of budget b to p's user for a call that a door runs
// after its request was admitted: a stream socket's frame, an MCP tool
// call. It answers what Admit answers for a budget: nil when allowed,
// else 429 rate_limited naming the budget's policy with retryAfter, and
// the refusal is told to Options.Refusals as door d's.
func (a *Admitter) Spend(p auth.Principal, d *Door, b *budget.Limiter) *httpapi.Error {
	dec := b.Allow(p.UserID)
	if dec.Allowed {
		return nil
	}
	pol := b.Policy()
	a.Refused(p, d, pol.Name)
	return &httpapi.Error{Status: http.StatusTooManyRequests, Code: errcode.RateLimited,
		Detail: "the " + pol.Name + " budget is used up; wait retryAfter seconds", RetryAfter: dec.RetryAfterSeconds(), Policy: pol.Name}
}
