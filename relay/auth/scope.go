package auth

import "fmt"

// Scope is what an API token may do. Every door's admission checks it
// (package admit): a read token reads everything its user's plan reads
// and changes nothing, on every door (HTTP, the stream socket, MCP); a
// trade token does everything, as API tokens did before scopes.
// Scopes apply to API tokens alone: an agent's, a support token and a
// dashboard session are kept to their own doors by their kind.
type Scope string

// Scopes, from the narrower to the wider.
const (
	// ScopeRead tokens read: accounts, positions, orders, quotes, the
	// activity log, the Management API's resources.
	ScopeRead Scope = "read"
	// ScopeTrade tokens also write: orders, flattens, strategies, the
	// Management API's resources, the broker link. The default.
	ScopeTrade Scope = "trade"
)

// Scopes lists the scopes, narrower first.
var Scopes = []Scope{ScopeRead, ScopeTrade}

// ParseScope parses a scope name; "" is ScopeTrade, the default.
func ParseScope(s string) (Scope, error) {
	switch Scope(s) {
	case "", ScopeTrade:
		return ScopeTrade, nil
	case ScopeRead:
		return ScopeRead, nil
	}
	return "", fmt.Errorf("auth: unknown scope %q (the scopes are read and trade)", s)
}

// Covers reports whether a token of scope s may do what need asks: a
// trade token covers both scopes, a read token ScopeRead alone.
func (s Scope) Covers(need Scope) bool {
	return s == ScopeTrade || need == ScopeRead
}

// Allows reports whether the principal may do what scope need covers. An
// API token is held to its Scope ("" counts as ScopeTrade, the scope of
// tokens issued before scopes); every other kind of principal is kept to
// its doors by its kind and allowed.
func (p Principal) Allows(need Scope) bool {
	if p.Kind != KindAPI || p.Scope == "" {
		return true
	}
	return p.Scope.Covers(need)
}
