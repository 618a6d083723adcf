package httpapi

import (
	"net"
	"net/http"

	"tradebridge/relay/budget"
	"tradebridge/relay/errcode"
)

// WriteRateLimited answers 429 rate_limited naming the budget, with
// Retry-After (whole seconds, never 0) and the RateLimit headers. Every
// door of the relay (the trading API, the stream socket, the agent's
// connect) answers an exhausted budget with it.
func WriteRateLimited(w http.ResponseWriter, pol budget.Policy, d budget.Decision) {
	w.Header().Set("RateLimit-Policy", pol.PolicyHeader())
	w.Header().Set("RateLimit", pol.Header(d))
	WriteError(w, http.StatusTooManyRequests, Error{Code: errcode.RateLimited,
		Detail: "the request budget is used up; wait retryAfter seconds", RetryAfter: d.RetryAfterSeconds(), Policy: pol.Name})
}

// AllowAddress charges the request's client address (ClientAddr) to the
// per-address budget l, before any token is looked at, and reports whether
// it may go on; when not, it has answered 429 with WriteRateLimited. A nil
// l admits everything. Every door checks it first.
func AllowAddress(w http.ResponseWriter, r *http.Request, l *budget.Limiter) bool {
	if l == nil {
		return true
	}
	if d := l.Allow(ClientAddr(r)); !d.Allowed {
		WriteRateLimited(w, l.Policy(), d)
		return false
	}
	return true
}

// ClientAddr is the address a request came from: the TCP peer's host. The
// relay answers on the address clients connect to; a deployment behind a
// proxy must make the proxy keep the client's address (e.g. PROXY
// protocol).
func ClientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
