package auth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"tradebridge/relay/store"
)

// Errors of IssueSupportToken.
var (
	// ErrSupportName refuses a support token's name: 1 to 100 bytes.
	ErrSupportName = fmt.Errorf("auth: a support token's name must have 1 to %d bytes", MaxUserName)
	// ErrNoGrants refuses a support token that would grant nothing.
	ErrNoGrants = errors.New("auth: a support token must be granted at least one user")
	// ErrTooManyGrants refuses a support token granted more than
	// MaxGrants users.
	ErrTooManyGrants = fmt.Errorf("auth: a support token may be granted at most %d users", MaxGrants)
)

// MaxGrants bounds the users one support token is granted: a token
// serves one support case or a handful, not the whole user base.
const MaxGrants = 100

// IssueSupportToken issues a support token to the staff member name,
// granted reading the agent diagnostics and connection history of the
// users grants (each an existing user; listed twice counts once). It
// returns the token, shown once; store.ErrNotFound if a granted user
// does not exist. Grants never change: to change them, issue a new token
// and revoke the old one.
func IssueSupportToken(ctx context.Context, st store.Store, name string, grants []string, now time.Time) (string, error) {
	if name == "" || len(name) > MaxUserName {
		return "", ErrSupportName
	}
	gs := slices.Compact(slices.Sorted(slices.Values(grants)))
	switch {
	case len(gs) == 0:
		return "", ErrNoGrants
	case len(gs) > MaxGrants:
		return "", ErrTooManyGrants
	}
	tok, err := NewToken(KindSupport)
	if err != nil {
		return "", err
	}
	err = st.CreateSupportToken(ctx, store.SupportToken{Hash: Hash(tok), Name: name, Grants: gs,
		CreatedAt: now.UTC().Truncate(time.Millisecond)})
	if err != nil {
		return "", err
	}
	return tok, nil
}

// SupportTokenInfo describes a support token without revealing it: its id
// (the first 12 hex digits of its hash), the staff member's name, its
// grants, and when it was issued and revoked.
type SupportTokenInfo struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Grants    []string `json:"grants"`
	CreatedAt string   `json:"createdAt"`
	RevokedAt string   `json:"revokedAt,omitempty"`
}

// ListSupportTokens describes every support token, revoked ones included,
// oldest first.
func ListSupportTokens(ctx context.Context, st store.Store) ([]SupportTokenInfo, error) {
	ts, err := st.ListSupportTokens(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]SupportTokenInfo, 0, len(ts))
	for _, t := range ts {
		si := SupportTokenInfo{ID: TokenID(t.Hash), Name: t.Name, Grants: t.Grants,
			CreatedAt: t.CreatedAt.UTC().Format(time.RFC3339)}
		if si.Grants == nil {
			si.Grants = []string{}
		}
		if t.Revoked() {
			si.RevokedAt = t.RevokedAt.UTC().Format(time.RFC3339)
		}
		out = append(out, si)
	}
	return out, nil
}
