package dashboard

import (
	"context"
	"time"

	"tradebridge/relay/auth"
	"tradebridge/relay/profile"
	"tradebridge/relay/store"
)

// tokenName is the name a token was given, "" for none.
func tokenName(auth.TokenInfo) string { return "" }

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

// Issue implements Tokens.
func (t StoreTokens) Issue(ctx context.Context, userID, _ string, prof profile.Profile) (string, error) {
	return auth.IssueToken(ctx, t.Store, userID, auth.KindAPI, prof, t.now())
}

// Revoke implements Tokens.
func (t StoreTokens) Revoke(ctx context.Context, userID, id string) error {
	ts, err := t.Store.ListTokens(ctx, userID)
	if err != nil {
		return err
	}
	for _, tok := range ts {
		if auth.TokenID(tok.Hash) == id {
			return t.Store.RevokeToken(ctx, tok.Hash, t.now().UTC())
		}
	}
	return store.ErrNotFound
}
