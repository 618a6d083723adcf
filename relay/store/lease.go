package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The state several relay nodes share beyond the users' own: the leases
// that place each user's broker instance on one node (broker_leases), and
// the OAuth links under way (oauth_states), so that the broker's callback
// may reach any node. SQLite serves one machine, where the store's clock
// is the relay's: time.Now.

// errLeaseTTL refuses a lease for no time at all.
var errLeaseTTL = errors.New("a lease needs a positive ttl")

// AcquireBrokerLease implements Store. The take-or-renew is one statement:
// an insert, or an update of a row that is node's or has expired.
func (s *SQLite) AcquireBrokerLease(ctx context.Context, userID, node string, ttl time.Duration) (bool, error) {
	if ttl <= 0 {
		return false, wrap("acquire broker lease", errLeaseTTL)
	}
	now := time.Now()
	res, err := s.db.ExecContext(ctx,
		`INSERT INTO broker_leases (user_id, node, expires_at) VALUES (?, ?, ?)
		 ON CONFLICT (user_id) DO UPDATE SET node = excluded.node, expires_at = excluded.expires_at
		 WHERE broker_leases.node = excluded.node OR broker_leases.expires_at <= ?`,
		userID, node, millis(now.Add(ttl)), millis(now))
	if err != nil {
		return false, wrap("acquire broker lease", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, wrap("acquire broker lease", err)
	}
	return n == 1, nil
}

// ReleaseBrokerLease implements Store.
func (s *SQLite) ReleaseBrokerLease(ctx context.Context, userID, node string) error {
	_, err := s.db.ExecContext(ctx, "DELETE FROM broker_leases WHERE user_id = ? AND node = ?", userID, node)
	return wrap("release broker lease", err)
}

// BrokerLeaseHolder implements Store.
func (s *SQLite) BrokerLeaseHolder(ctx context.Context, userID string) (string, error) {
	var node string
	err := s.db.QueryRowContext(ctx,
		"SELECT node FROM broker_leases WHERE user_id = ? AND expires_at > ?", userID, millis(time.Now())).Scan(&node)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return "", wrap("read broker lease", err)
	}
	return node, nil
}

// checkOAuthState refuses a state PutOAuthState cannot store.
func checkOAuthState(st OAuthState) error {
	if st.Hash == "" || st.UserID == "" || st.Env == "" || st.Expires.IsZero() {
		return errors.New("store: put OAuth state: a state needs a hash, a user, an environment and an expiry")
	}
	return nil
}

// PutOAuthState implements Store. "Expired" is by the store's clock; a
// keepPerUser of 0 or less keeps every state of the user.
func (s *SQLite) PutOAuthState(ctx context.Context, st OAuthState, keepPerUser int) error {
	if err := checkOAuthState(st); err != nil {
		return err
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "DELETE FROM oauth_states WHERE expires_at < ?", millis(time.Now())); err != nil {
			return err
		}
		if keepPerUser > 0 {
			_, err := tx.ExecContext(ctx,
				`DELETE FROM oauth_states WHERE hash IN (
				   SELECT hash FROM oauth_states WHERE user_id = ?
				   ORDER BY expires_at DESC, hash DESC LIMIT -1 OFFSET ?)`,
				st.UserID, keepPerUser-1)
			if err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx,
			"INSERT INTO oauth_states (hash, user_id, env, expires_at) VALUES (?, ?, ?, ?)",
			st.Hash, st.UserID, st.Env, millis(st.Expires))
		if isConstraint(err) {
			return ErrConflict
		}
		return noUser(err)
	})
	return wrap("put OAuth state", err)
}

// TakeOAuthState implements Store. The state is read and deleted by one
// statement; an expired one is deleted all the same.
func (s *SQLite) TakeOAuthState(ctx context.Context, hash string, now time.Time) (OAuthState, error) {
	st := OAuthState{Hash: hash}
	var expires int64
	err := s.db.QueryRowContext(ctx,
		"DELETE FROM oauth_states WHERE hash = ? RETURNING user_id, env, expires_at", hash).
		Scan(&st.UserID, &st.Env, &expires)
	return takenState(st, expires, now, err)
}

// takenState finishes TakeOAuthState: ErrNotFound when there was no row
// or it expired before now.
func takenState(st OAuthState, expires int64, now time.Time, err error) (OAuthState, error) {
	switch {
	case errors.Is(err, sql.ErrNoRows) || errors.Is(err, pgx.ErrNoRows):
		return OAuthState{}, wrap("take OAuth state", ErrNotFound)
	case err != nil:
		return OAuthState{}, wrap("take OAuth state", err)
	case expires < millis(now):
		return OAuthState{}, wrap("take OAuth state", fmt.Errorf("%w: the state expired", ErrNotFound))
	}
	st.Expires = time.UnixMilli(expires).UTC()
	return st, nil
}
