package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The state several relay nodes share beyond the users' own: the leases
// that place each user's broker instance on one node (broker_leases), and
// the OAuth links under way (oauth_states), so that the broker's callback
// may reach any node. Their times are by the store's clock (the
// database's, the {now} of the statements), so that the nodes' clocks
// need not agree.

var (
	// The clock is read once: a lease has expired when it ends at or
	// before now, excluded.expires_at less the ttl.
	qAcquireLease = sqlConst(`INSERT INTO broker_leases (user_id, node, expires_at) VALUES (?, ?, {now} + ?)
		ON CONFLICT (user_id) DO UPDATE SET node = excluded.node, expires_at = excluded.expires_at
		WHERE broker_leases.node = excluded.node OR broker_leases.expires_at <= excluded.expires_at - ?`)
	qReleaseLease      = sqlConst("DELETE FROM broker_leases WHERE user_id = ? AND node = ?")
	qLeaseHolder       = sqlConst("SELECT node FROM broker_leases WHERE user_id = ? AND expires_at > {now}")
	qLockUser          = sqlConst("SELECT 1 FROM users WHERE id = ?{forNoKeyUpdate}")
	qForgetExpiredAuth = sqlConst("DELETE FROM oauth_states WHERE expires_at < {now}")
	qForgetOldestAuth  = sqlConst(`DELETE FROM oauth_states WHERE user_id = ? AND hash NOT IN (
		SELECT hash FROM oauth_states WHERE user_id = ? ORDER BY expires_at DESC, hash DESC LIMIT ?)`)
	qPutOAuthState = sqlConst(`INSERT INTO oauth_states (hash, user_id, env, expires_at, source_kind, source_id)
		VALUES (?, ?, ?, ?, ?, ?)`)
	qTakeOAuthState = sqlConst("DELETE FROM oauth_states WHERE hash = ? RETURNING user_id, env, expires_at, source_kind, source_id")
)

// errLeaseTTL refuses a lease for no time at all.
var errLeaseTTL = errors.New("a lease needs a positive ttl")

// AcquireBrokerLease implements Store. The take-or-renew is one statement:
// an insert, or an update of a row that is node's or has expired.
func (s *sqlStore) AcquireBrokerLease(ctx context.Context, userID, node string, ttl time.Duration) (bool, error) {
	if ttl <= 0 {
		return false, wrap("acquire broker lease", errLeaseTTL)
	}
	n, err := changed(s.exec(ctx, qAcquireLease, userID, node, ttl.Milliseconds(), ttl.Milliseconds()))
	if err != nil {
		return false, wrap("acquire broker lease", err)
	}
	return n == 1, nil
}

// ReleaseBrokerLease implements Store.
func (s *sqlStore) ReleaseBrokerLease(ctx context.Context, userID, node string) error {
	_, err := s.exec(ctx, qReleaseLease, userID, node)
	return wrap("release broker lease", err)
}

// BrokerLeaseHolder implements Store.
func (s *sqlStore) BrokerLeaseHolder(ctx context.Context, userID string) (string, error) {
	var node string
	err := s.row(ctx, qLeaseHolder, userID).Scan(&node)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return "", wrap("read broker lease", err)
	}
	return node, nil
}

// PutOAuthState implements Store. It locks the user's row first (FOR NO
// KEY UPDATE on PostgreSQL; SQLite's transaction holds the write lock),
// so that concurrent puts for one user keep its bound. "Expired" is by
// the store's clock; a keepPerUser of 0 or less keeps every state of the
// user.
func (s *sqlStore) PutOAuthState(ctx context.Context, st OAuthState, keepPerUser int) error {
	if st.Hash == "" || st.UserID == "" || st.Env == "" || st.Expires.IsZero() {
		return errors.New("store: put OAuth state: a state needs a hash, a user, an environment and an expiry")
	}
	err := s.tx(ctx, func(tx conn) error {
		var one int
		err := tx.row(ctx, qLockUser, st.UserID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if _, err := tx.exec(ctx, qForgetExpiredAuth); err != nil {
			return err
		}
		if keepPerUser > 0 {
			if _, err := tx.exec(ctx, qForgetOldestAuth, st.UserID, st.UserID, keepPerUser-1); err != nil {
				return err
			}
		}
		_, err = tx.exec(ctx, qPutOAuthState, st.Hash, st.UserID, st.Env, millis(st.Expires), st.SourceKind, st.SourceID)
		return tx.d.noUser(tx.d.conflict(err))
	})
	return wrap("put OAuth state", err)
}

// TakeOAuthState implements Store. The state is read and deleted by one
// statement; an expired one is deleted all the same.
func (s *sqlStore) TakeOAuthState(ctx context.Context, hash string, now time.Time) (OAuthState, error) {
	st := OAuthState{Hash: hash}
	var expires int64
	err := s.row(ctx, qTakeOAuthState, hash).Scan(&st.UserID, &st.Env, &expires, &st.SourceKind, &st.SourceID)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return OAuthState{}, wrap("take OAuth state", ErrNotFound)
	case err != nil:
		return OAuthState{}, wrap("take OAuth state", err)
	case expires < millis(now):
		return OAuthState{}, wrap("take OAuth state", fmt.Errorf("%w: the state expired", ErrNotFound))
	}
	st.Expires = fromMS(expires)
	return st, nil
}
