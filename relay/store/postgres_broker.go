package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgreSQL: the broker links, their state and journal, the leases that
// place each user's broker instance on one node, and the OAuth links
// under way.

// PutBrokerLink implements Store.
func (p *Postgres) PutBrokerLink(ctx context.Context, l BrokerLink) error {
	if l.UserID == "" || l.Env == "" || l.Method == "" || l.Sealed == "" {
		return errors.New("store: put broker link: a link needs a user, an environment, a method and its sealed secrets")
	}
	_, err := p.pool.Exec(ctx,
		`INSERT INTO broker_links (user_id, env, method, sealed, linked_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6)
		 ON CONFLICT (user_id) DO UPDATE SET env = excluded.env, method = excluded.method, sealed = excluded.sealed,
		   linked_at = excluded.linked_at, updated_at = excluded.updated_at`,
		l.UserID, l.Env, l.Method, l.Sealed, millis(l.LinkedAt), millis(l.UpdatedAt))
	return wrap("put broker link", pgNoUser(err))
}

// BrokerLink implements Store.
func (p *Postgres) BrokerLink(ctx context.Context, userID string) (BrokerLink, error) {
	l, err := scanBrokerLink(p.pool.QueryRow(ctx,
		"SELECT "+brokerLinkColumns+" FROM broker_links WHERE user_id = $1", userID))
	return l, wrap("read broker link", pgFound(err))
}

// ListBrokerLinks implements Store.
func (p *Postgres) ListBrokerLinks(ctx context.Context) ([]BrokerLink, error) {
	rows, err := p.pool.Query(ctx, "SELECT "+brokerLinkColumns+" FROM broker_links ORDER BY user_id")
	if err != nil {
		return nil, wrap("list broker links", err)
	}
	defer rows.Close()
	var out []BrokerLink
	for rows.Next() {
		l, err := scanBrokerLink(rows)
		if err != nil {
			return nil, wrap("list broker links", err)
		}
		out = append(out, l)
	}
	return out, wrap("list broker links", rows.Err())
}

// UpdateBrokerSealed implements Store.
func (p *Postgres) UpdateBrokerSealed(ctx context.Context, userID, sealed string, at time.Time) error {
	if sealed == "" {
		return errors.New("store: update broker link: the sealed secrets are empty")
	}
	tag, err := p.pool.Exec(ctx,
		"UPDATE broker_links SET sealed = $1, updated_at = $2 WHERE user_id = $3", sealed, millis(at), userID)
	return wrap("update broker link", pgAffected(tag, err))
}

// SwapBrokerSealed implements Store. The compare and the swap are one
// UPDATE.
func (p *Postgres) SwapBrokerSealed(ctx context.Context, userID, old, sealed string, at time.Time) error {
	if sealed == "" {
		return errors.New("store: update broker link: the sealed secrets are empty")
	}
	tag, err := p.pool.Exec(ctx,
		"UPDATE broker_links SET sealed = $1, updated_at = $2 WHERE user_id = $3 AND sealed = $4",
		sealed, millis(at), userID, old)
	if err == nil && tag.RowsAffected() == 0 {
		var one int
		err = pgFound(p.pool.QueryRow(ctx, "SELECT 1 FROM broker_links WHERE user_id = $1", userID).Scan(&one))
		if err == nil {
			err = ErrVersionConflict
		}
	}
	return wrap("update broker link", err)
}

// DeleteBrokerLink implements Store.
func (p *Postgres) DeleteBrokerLink(ctx context.Context, userID string) (bool, error) {
	var had bool
	err := p.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "DELETE FROM broker_links WHERE user_id = $1", userID)
		if err != nil {
			return err
		}
		had = tag.RowsAffected() > 0
		if _, err := tx.Exec(ctx, "DELETE FROM broker_state WHERE user_id = $1", userID); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "DELETE FROM broker_writes WHERE user_id = $1", userID)
		return err
	})
	if err != nil {
		return false, wrap("delete broker link", err)
	}
	return had, nil
}

// PutBrokerState implements Store.
func (p *Postgres) PutBrokerState(ctx context.Context, userID, bucket, key string, value []byte) error {
	if value == nil {
		value = []byte{} // the column is NOT NULL; an empty value is a value
	}
	_, err := p.pool.Exec(ctx,
		`INSERT INTO broker_state (user_id, bucket, key, value) VALUES ($1, $2, $3, $4)
		 ON CONFLICT (user_id, bucket, key) DO UPDATE SET value = excluded.value`,
		userID, bucket, key, value)
	return wrap("put broker state", pgNoUser(err))
}

// DeleteBrokerState implements Store.
func (p *Postgres) DeleteBrokerState(ctx context.Context, userID, bucket, key string) error {
	_, err := p.pool.Exec(ctx,
		"DELETE FROM broker_state WHERE user_id = $1 AND bucket = $2 AND key = $3", userID, bucket, key)
	return wrap("delete broker state", err)
}

// LoadBrokerState implements Store.
func (p *Postgres) LoadBrokerState(ctx context.Context, userID, bucket string) (map[string][]byte, error) {
	rows, err := p.pool.Query(ctx,
		"SELECT key, value FROM broker_state WHERE user_id = $1 AND bucket = $2", userID, bucket)
	if err != nil {
		return nil, wrap("load broker state", err)
	}
	defer rows.Close()
	out := map[string][]byte{}
	for rows.Next() {
		var k string
		var v []byte
		if err := rows.Scan(&k, &v); err != nil {
			return nil, wrap("load broker state", err)
		}
		if v == nil {
			v = []byte{}
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("load broker state", err)
	}
	return out, nil
}

// BeginBrokerWrite implements Store.
func (p *Postgres) BeginBrokerWrite(ctx context.Context, userID, id string, fp [32]byte, at time.Time) error {
	_, err := p.pool.Exec(ctx,
		"INSERT INTO broker_writes (user_id, id, fingerprint, at) VALUES ($1, $2, $3, $4)",
		userID, id, fp[:], millis(at))
	return wrap("begin broker write", pgNoUser(pgConflict(err)))
}

// FinishBrokerWrite implements Store.
func (p *Postgres) FinishBrokerWrite(ctx context.Context, userID, id string, result []byte, errCode, errDetail string) error {
	tag, err := p.pool.Exec(ctx,
		"UPDATE broker_writes SET done = true, result = $1, err_code = $2, err_detail = $3 WHERE user_id = $4 AND id = $5",
		result, errCode, errDetail, userID, id)
	return wrap("finish broker write", pgAffected(tag, err))
}

// LoadBrokerWrites implements Store.
func (p *Postgres) LoadBrokerWrites(ctx context.Context, userID string, since time.Time) ([]BrokerWrite, error) {
	rows, err := p.pool.Query(ctx,
		`SELECT id, fingerprint, at, done, result, err_code, err_detail FROM broker_writes
		 WHERE user_id = $1 AND at >= $2 ORDER BY at, seq`, userID, millis(since))
	if err != nil {
		return nil, wrap("load broker writes", err)
	}
	defer rows.Close()
	var out []BrokerWrite
	for rows.Next() {
		var w BrokerWrite
		var fp []byte
		var at int64
		if err := rows.Scan(&w.ID, &fp, &at, &w.Done, &w.Result, &w.ErrCode, &w.ErrDetail); err != nil {
			return nil, wrap("load broker writes", err)
		}
		if len(fp) != len(w.Fingerprint) {
			return nil, wrap("load broker writes", fmt.Errorf("a write's fingerprint is %d bytes, not %d", len(fp), len(w.Fingerprint)))
		}
		copy(w.Fingerprint[:], fp)
		w.At = fromMS(at)
		out = append(out, w)
	}
	return out, wrap("load broker writes", rows.Err())
}

// PruneBrokerWrites implements Store.
func (p *Postgres) PruneBrokerWrites(ctx context.Context, userID string, before time.Time) error {
	_, err := p.pool.Exec(ctx,
		"DELETE FROM broker_writes WHERE user_id = $1 AND at < $2", userID, millis(before))
	return wrap("prune broker writes", err)
}

// AcquireBrokerLease implements Store. The take-or-renew is one
// statement, and the expiry is by the database's clock.
func (p *Postgres) AcquireBrokerLease(ctx context.Context, userID, node string, ttl time.Duration) (bool, error) {
	if ttl <= 0 {
		return false, wrap("acquire broker lease", errLeaseTTL)
	}
	tag, err := p.pool.Exec(ctx,
		`INSERT INTO broker_leases (user_id, node, expires_at) VALUES ($1, $2, `+nowMS+` + $3)
		 ON CONFLICT (user_id) DO UPDATE SET node = excluded.node, expires_at = excluded.expires_at
		 WHERE broker_leases.node = excluded.node OR broker_leases.expires_at <= `+nowMS,
		userID, node, ttl.Milliseconds())
	if err != nil {
		return false, wrap("acquire broker lease", err)
	}
	return tag.RowsAffected() == 1, nil
}

// ReleaseBrokerLease implements Store.
func (p *Postgres) ReleaseBrokerLease(ctx context.Context, userID, node string) error {
	_, err := p.pool.Exec(ctx, "DELETE FROM broker_leases WHERE user_id = $1 AND node = $2", userID, node)
	return wrap("release broker lease", err)
}

// BrokerLeaseHolder implements Store.
func (p *Postgres) BrokerLeaseHolder(ctx context.Context, userID string) (string, error) {
	var node string
	err := p.pool.QueryRow(ctx,
		"SELECT node FROM broker_leases WHERE user_id = $1 AND expires_at > "+nowMS, userID).Scan(&node)
	if err != nil {
		return "", wrap("read broker lease", pgFound(err))
	}
	return node, nil
}

// PutOAuthState implements Store. It locks the user's row (FOR NO KEY
// UPDATE) first, so that concurrent puts for one user keep its bound.
// "Expired" is by the database's clock.
func (p *Postgres) PutOAuthState(ctx context.Context, st OAuthState, keepPerUser int) error {
	if err := checkOAuthState(st); err != nil {
		return err
	}
	err := p.tx(ctx, func(tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, "SELECT 1 FROM users WHERE id = $1 FOR NO KEY UPDATE", st.UserID).Scan(&one)
		if err != nil {
			return pgFound(err)
		}
		if _, err := tx.Exec(ctx, "DELETE FROM oauth_states WHERE expires_at < "+nowMS); err != nil {
			return err
		}
		if keepPerUser > 0 {
			_, err := tx.Exec(ctx,
				`DELETE FROM oauth_states WHERE hash IN (
				   SELECT hash FROM oauth_states WHERE user_id = $1
				   ORDER BY expires_at DESC, hash DESC OFFSET $2)`,
				st.UserID, keepPerUser-1)
			if err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx,
			"INSERT INTO oauth_states (hash, user_id, env, expires_at) VALUES ($1, $2, $3, $4)",
			st.Hash, st.UserID, st.Env, millis(st.Expires))
		return pgNoUser(pgConflict(err))
	})
	return wrap("put OAuth state", err)
}

// TakeOAuthState implements Store. The state is read and deleted by one
// statement; an expired one is deleted all the same.
func (p *Postgres) TakeOAuthState(ctx context.Context, hash string, now time.Time) (OAuthState, error) {
	st := OAuthState{Hash: hash}
	var expires int64
	err := p.pool.QueryRow(ctx,
		"DELETE FROM oauth_states WHERE hash = $1 RETURNING user_id, env, expires_at", hash).
		Scan(&st.UserID, &st.Env, &expires)
	return takenState(st, expires, now, err)
}
