// Package auth turns the bearer tokens that bot authors and agents present
// into a Principal, and issues and revokes those tokens.
//
// A token is opaque: a readable prefix naming its kind ("tb_api_" for the
// HTTP and WebSocket APIs, "tb_agent_" for an agent's tunnel,
// "tb_support_" for support staff) followed by 32 random bytes in
// unpadded base64url. The relay stores only the token's SHA-256, so a
// leaked database reveals no usable token. Every door accepts one kind:
// an API token never opens a tunnel, an agent token never calls the API,
// and a support token opens nothing but the support routes.
//
// A support token belongs to no trading user. It names the staff member
// it was issued to and grants reading the agent diagnostics and
// connection history of a fixed list of users (IssueSupportToken); its
// Principal has Kind KindSupport, UserName the staff member's name,
// Grants the users, and UserID "support:" followed by the token's id (the
// first 12 hex digits of its hash), which keys the support door's budgets
// and in-flight count per token and is never a user's id.
//
// Authenticator caches each verdict for a short time (CacheTTL, 2 seconds
// by default) so that a burst of calls costs one store read; a revoked token
// therefore stops working within CacheTTL.
//
// A dashboard session ("tb_session_", package relay/account) is a token
// too, kept in the store's sessions table rather than with the tokens:
// Authenticate looks it up on every request, never caching it, so that a
// sign-out holds at once on every relay node; it refuses a session past
// its absolute expiry, idle longer than Options.SessionIdle, or of a
// disabled user, and records the session's last-seen time at most once a
// minute.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode"
)

// Kind is the kind of a token.
type Kind string

// Token kinds.
const (
	// KindAPI tokens call the HTTP and WebSocket APIs.
	KindAPI Kind = "api"
	// KindAgent tokens open an agent's tunnel.
	KindAgent Kind = "agent"
	// KindSupport tokens read, for support staff, the agent diagnostics
	// and connection history of the users they are granted.
	KindSupport Kind = "support"
	// KindSession tokens are the dashboard's sessions (package
	// relay/account): the cookie's value, never issued by the CLI.
	KindSession Kind = "session"
)

// kinds are the token kinds, for ParseKind.
var kinds = []Kind{KindAPI, KindAgent, KindSupport, KindSession}

// prefix returns the token text prefix of the kind.
func (k Kind) prefix() string { return "tb_" + string(k) + "_" }

// Valid reports whether k is a kind a user's or support staff's token is
// issued as by the operator: api, agent or support. A session
// (KindSession) is not: package relay/account makes those at sign-in.
func (k Kind) Valid() bool { return k == KindAPI || k == KindAgent || k == KindSupport }

// secretLen is the length of the random part of a token: 32 bytes in
// unpadded base64url.
var secretLen = base64.RawURLEncoding.EncodedLen(32)

// NewToken returns a fresh random token of the kind, KindSession
// included.
func NewToken(k Kind) (string, error) {
	if !slices.Contains(kinds, k) {
		return "", fmt.Errorf("auth: unknown token kind %q", k)
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("auth: random: %w", err)
	}
	return k.prefix() + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// ParseKind reports the kind of a well-formed token, and false for anything
// else.
func ParseKind(token string) (Kind, bool) {
	for _, k := range kinds {
		secret, ok := strings.CutPrefix(token, k.prefix())
		if !ok || len(secret) != secretLen {
			continue
		}
		if _, err := base64.RawURLEncoding.DecodeString(secret); err != nil {
			return "", false
		}
		return k, true
	}
	return "", false
}

// Hash returns the stored form of a token: its SHA-256 in hex.
func Hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Display returns a form of the token that is safe to log or show to
// support staff: its prefix and the first four characters of its hash.
func Display(token string) string {
	k, ok := ParseKind(token)
	if !ok {
		return "(malformed token)"
	}
	return k.prefix() + "…" + Hash(token)[:4]
}

// BearerToken returns the token of an "Authorization: Bearer <token>"
// header: the one place every door (the trading and Management APIs, the
// stream socket's upgrade, the agents' tunnel, MCP) reads the header. The
// scheme is case-insensitive, as RFC 9110 says; one space separates it
// from the token, and a token with whitespace in it or around it
// ("Bearer  <token>") is malformed: no token, which the doors answer 401
// as any malformed header. A request with more than one Authorization
// header has no token: which one counts would depend on who reads it (a
// proxy may take the last where the relay took the first), so callers
// refuse it; see AmbiguousAuthorization.
func BearerToken(h http.Header) (string, bool) {
	vs := h.Values("Authorization")
	if len(vs) != 1 {
		return "", false
	}
	scheme, token, ok := strings.Cut(vs[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || strings.ContainsFunc(token, unicode.IsSpace) {
		return "", false
	}
	return token, true
}

// AmbiguousAuthorization reports a request with more than one
// Authorization header. Every door refuses it with 401 unauthorized
// (DetailAmbiguousAuthorization) before it looks at any token.
func AmbiguousAuthorization(h http.Header) bool { return len(h.Values("Authorization")) > 1 }

// DetailAmbiguousAuthorization is the detail of the 401 answered to a
// request with more than one Authorization header.
const DetailAmbiguousAuthorization = "send exactly one Authorization header"

// Plan is a user's subscription plan. Trading routes need Pro or above.
type Plan string

// Plans, in increasing order.
const (
	PlanFree  Plan = "free"
	PlanPro   Plan = "pro"
	PlanElite Plan = "elite"
)

func (p Plan) rank() int {
	switch p {
	case PlanPro:
		return 1
	case PlanElite:
		return 2
	}
	return 0
}

// AtLeast reports whether p includes everything min does.
func (p Plan) AtLeast(min Plan) bool { return p.rank() >= min.rank() }

// ParsePlan parses a plan name.
func ParsePlan(s string) (Plan, error) {
	switch p := Plan(strings.ToLower(strings.TrimSpace(s))); p {
	case PlanFree, PlanPro, PlanElite:
		return p, nil
	}
	return "", fmt.Errorf("auth: unknown plan %q", s)
}
