package store

import (
	"context"
	"errors"
	"time"
)

// errPending marks methods whose SQLite implementation is being written.
var errPending = errors.New("store: not implemented yet")

func (s *SQLite) AcquireBrokerLease(ctx context.Context, userID, node string, ttl time.Duration) (bool, error) {
	return false, errPending
}

func (s *SQLite) ReleaseBrokerLease(ctx context.Context, userID, node string) error { return errPending }

func (s *SQLite) BrokerLeaseHolder(ctx context.Context, userID string) (string, error) {
	return "", errPending
}

func (s *SQLite) PutOAuthState(ctx context.Context, st OAuthState, keepPerUser int) error {
	return errPending
}

func (s *SQLite) TakeOAuthState(ctx context.Context, hash string, now time.Time) (OAuthState, error) {
	return OAuthState{}, errPending
}
