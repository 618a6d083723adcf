package dashboard

import (
	"context"
	"time"

	"tradebridge/relay/auth"
	"tradebridge/relay/profile"
	"tradebridge/relay/store"
)

// tokenName is the name a token was given, "" for none.
func tokenName(t auth.TokenInfo) string { return t.Name }

// StoreTokens are the user's tokens in the store, through relay/auth's
// functions (those the operator's `relay tokens` commands use).
type StoreTokens struct {
	Store store.Store
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (t StoreTokens) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// List implements Tokens.
func (t StoreTokens) List(ctx context.Context, userID string) ([]auth.TokenInfo, error) {
	return auth.ListTokens(ctx, t.Store, userID)
}

// Issue implements Tokens: a named API token.
func (t StoreTokens) Issue(ctx context.Context, userID, name string, prof profile.Profile, scope auth.Scope) (string, error) {
	return auth.IssueTokenWith(ctx, t.Store, userID, auth.KindAPI, auth.TokenOptions{Profile: prof, Name: name, Scope: scope}, t.now())
}

// Revoke implements Tokens (auth.ErrNoSuchToken, a store.ErrNotFound, for
// an id that is none of the user's).
func (t StoreTokens) Revoke(ctx context.Context, userID, id string) error {
	return auth.RevokeUserToken(ctx, t.Store, userID, id, t.now())
}
