package admit

import (
	"net/http"

	"tradebridge/relay/auth"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// RequireScope is the scope check of every door: nil when p may do what
// need covers (auth.Principal.Allows), else the answer, 403
// insufficient_scope naming the scope needed. Admit runs it for a door's
// Scope; the doors whose requests carry several calls (the stream
// socket's rpc frames, MCP's tool calls) run it for each call that
// writes.
func RequireScope(p auth.Principal, need auth.Scope) *httpapi.Error {
	if p.Allows(need) {
		return nil
	}
	return &httpapi.Error{Status: http.StatusForbidden, Code: errcode.InsufficientScope,
		Detail: "this API token has the " + string(p.Scope) + " scope; this request needs the " + string(need) + " scope (issue a token with --scope " + string(need) + ")"}
}

// ScopeChallenge is the WWW-Authenticate header of a 403
// insufficient_scope on HTTP (RFC 6750, section 3): the error and the
// scope needed, for clients that read the header rather than the body.
func ScopeChallenge(need auth.Scope) string {
	return `Bearer error="insufficient_scope", scope="` + string(need) + `"`
}

// MethodScope is the scope a request needs by its method, a door's
// default (Door.Scope): ScopeRead for GET, HEAD and OPTIONS, which change
// nothing, ScopeTrade for every other method.
func MethodScope(r *http.Request) auth.Scope {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return auth.ScopeRead
	}
	return auth.ScopeTrade
}

// allowScope runs Admit's scope step: it reports whether p may make the
// request r through d, and otherwise writes the 403 insufficient_scope
// with its challenge.
func allowScope(w http.ResponseWriter, r *http.Request, d *Door, p auth.Principal) bool {
	scope := MethodScope
	if d.Scope != nil {
		scope = d.Scope
	}
	need := scope(r)
	e := RequireScope(p, need)
	if e == nil {
		return true
	}
	w.Header().Set("WWW-Authenticate", ScopeChallenge(need))
	httpapi.WriteError(w, e.Status, *e)
	return false
}
