package httpapi

import (
	"net/http"

	"tradebridge/relay/budget"
)

// CodeRateLimited answers a request over budget (429).
const CodeRateLimited = "rate_limited"

// WriteRateLimited answers 429 rate_limited naming the budget, with
// Retry-After (whole seconds, never 0) and the RateLimit headers. Every
// door of the relay (the trading API, the stream socket, the agent's
// connect) answers an exhausted budget with it.
func WriteRateLimited(w http.ResponseWriter, pol budget.Policy, d budget.Decision) {
	w.Header().Set("RateLimit-Policy", pol.PolicyHeader())
	w.Header().Set("RateLimit", pol.Header(d))
	WriteError(w, http.StatusTooManyRequests, Error{Code: CodeRateLimited,
		Detail: "the request budget is used up; wait retryAfter seconds", RetryAfter: d.RetryAfterSeconds(), Policy: pol.Name})
}
