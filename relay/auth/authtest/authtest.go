// Package authtest gives tests a fake authenticator: the Authenticate
// method that relay/admit, relay/hub, relay/stream and relay/tradeapi
// consume, over a table of tokens a test may change while it runs, in
// place of relay/auth's Authenticator and its store.
package authtest

import (
	"context"
	"maps"
	"sync"

	"tradebridge/relay/auth"
)

// Auth is a fake authenticator over a token table. A token is accepted
// for the kind of its principal only; any other token, kind or revoked
// token is auth.ErrUnauthorized, as the real one answers. It counts the
// look-ups. It is safe for concurrent use.
type Auth struct {
	mu     sync.Mutex
	tokens map[string]auth.Principal
	fail   map[string]error
	calls  int
}

// New returns an Auth that knows tokens (copied: later changes go through
// Add and Revoke).
func New(tokens map[string]auth.Principal) *Auth {
	return &Auth{tokens: maps.Clone(tokens), fail: map[string]error{}}
}

// Authenticate returns the principal of token if it is of the wanted kind.
// A token given to Fail returns its error instead.
func (a *Auth) Authenticate(_ context.Context, token string, want auth.Kind) (auth.Principal, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	if err, ok := a.fail[token]; ok {
		return auth.Principal{}, err
	}
	p, ok := a.tokens[token]
	if !ok || p.Kind != want {
		return auth.Principal{}, auth.ErrUnauthorized
	}
	return p, nil
}

// Add makes token known as p's, or changes its principal.
func (a *Auth) Add(token string, p auth.Principal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.tokens == nil {
		a.tokens = map[string]auth.Principal{}
	}
	a.tokens[token] = p
}

// Revoke forgets token: from now on it is unauthorized.
func (a *Auth) Revoke(token string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.tokens, token)
}

// Fail makes Authenticate of token fail with err, as when the store
// cannot be read.
func (a *Auth) Fail(token string, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fail == nil {
		a.fail = map[string]error{}
	}
	a.fail[token] = err
}

// Calls counts the calls of Authenticate so far.
func (a *Auth) Calls() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls
}
