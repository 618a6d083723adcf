package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// The broker links: one row per linked user in broker_links (its secrets
// sealed by the caller), the Put/Delete/Load buckets of the operations
// running over the link in broker_state, and the dispatcher's journal in
// broker_writes. Every write is one statement or one transaction, durable
// on return (WAL journal, synchronous FULL).

// isForeignKey reports a FOREIGN KEY violation: here, always a user that
// does not exist.
func isForeignKey(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

// noUser maps a foreign-key violation to ErrNotFound.
func noUser(err error) error {
	if isForeignKey(err) {
		return ErrNotFound
	}
	return err
}

// PutBrokerLink implements Store.
func (s *SQLite) PutBrokerLink(ctx context.Context, l BrokerLink) error {
	if l.UserID == "" || l.Env == "" || l.Method == "" || l.Sealed == "" {
		return errors.New("store: put broker link: a link needs a user, an environment, a method and its sealed secrets")
	}
	_, err := s.db.ExecContext(ctx,
		`INSERT INTO broker_links (user_id, env, method, sealed, linked_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
		 ON CONFLICT (user_id) DO UPDATE SET env = excluded.env, method = excluded.method, sealed = excluded.sealed,
		   linked_at = excluded.linked_at, updated_at = excluded.updated_at`,
		l.UserID, l.Env, l.Method, l.Sealed, millis(l.LinkedAt), millis(l.UpdatedAt))
	return wrap("put broker link", noUser(err))
}

const brokerLinkColumns = "user_id, env, method, sealed, linked_at, updated_at"

func scanBrokerLink(row interface{ Scan(...any) error }) (BrokerLink, error) {
	var l BrokerLink
	var linked, updated int64
	if err := row.Scan(&l.UserID, &l.Env, &l.Method, &l.Sealed, &linked, &updated); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return BrokerLink{}, ErrNotFound
		}
		return BrokerLink{}, err
	}
	l.LinkedAt = time.UnixMilli(linked).UTC()
	l.UpdatedAt = time.UnixMilli(updated).UTC()
	return l, nil
}

// BrokerLink implements Store.
func (s *SQLite) BrokerLink(ctx context.Context, userID string) (BrokerLink, error) {
	l, err := scanBrokerLink(s.db.QueryRowContext(ctx,
		"SELECT "+brokerLinkColumns+" FROM broker_links WHERE user_id = ?", userID))
	return l, wrap("read broker link", err)
}

// ListBrokerLinks implements Store.
func (s *SQLite) ListBrokerLinks(ctx context.Context) ([]BrokerLink, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+brokerLinkColumns+" FROM broker_links ORDER BY user_id")
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
func (s *SQLite) UpdateBrokerSealed(ctx context.Context, userID, sealed string, at time.Time) error {
	if sealed == "" {
		return errors.New("store: update broker link: the sealed secrets are empty")
	}
	res, err := s.db.ExecContext(ctx,
		"UPDATE broker_links SET sealed = ?, updated_at = ? WHERE user_id = ?", sealed, millis(at), userID)
	return wrap("update broker link", affected(res, err))
}

// SwapBrokerSealed implements Store.
func (s *SQLite) SwapBrokerSealed(ctx context.Context, userID, old, sealed string, at time.Time) error {
	if sealed == "" {
		return errors.New("store: update broker link: the sealed secrets are empty")
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var cur string
		err := tx.QueryRowContext(ctx, "SELECT sealed FROM broker_links WHERE user_id = ?", userID).Scan(&cur)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if cur != old {
			return ErrVersionConflict
		}
		_, err = tx.ExecContext(ctx,
			"UPDATE broker_links SET sealed = ?, updated_at = ? WHERE user_id = ?", sealed, millis(at), userID)
		return err
	})
	return wrap("update broker link", err)
}

// DeleteBrokerLink implements Store.
func (s *SQLite) DeleteBrokerLink(ctx context.Context, userID string) (bool, error) {
	var had bool
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM broker_links WHERE user_id = ?", userID)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		had = n > 0
		if _, err := tx.ExecContext(ctx, "DELETE FROM broker_state WHERE user_id = ?", userID); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "DELETE FROM broker_writes WHERE user_id = ?", userID)
		return err
	})
	if err != nil {
		return false, wrap("delete broker link", err)
	}
	return had, nil
}

// PutBrokerState implements Store.
func (s *SQLite) PutBrokerState(ctx context.Context, userID, bucket, key string, value []byte) error {
	if value == nil {
		value = []byte{} // the column is NOT NULL; an empty value is a value
	}
	_, err := s.db.ExecContext(ctx,
		`INSERT INTO broker_state (user_id, bucket, key, value) VALUES (?, ?, ?, ?)
		 ON CONFLICT (user_id, bucket, key) DO UPDATE SET value = excluded.value`,
		userID, bucket, key, value)
	return wrap("put broker state", noUser(err))
}

// DeleteBrokerState implements Store.
func (s *SQLite) DeleteBrokerState(ctx context.Context, userID, bucket, key string) error {
	_, err := s.db.ExecContext(ctx,
		"DELETE FROM broker_state WHERE user_id = ? AND bucket = ? AND key = ?", userID, bucket, key)
	return wrap("delete broker state", err)
}

// LoadBrokerState implements Store.
func (s *SQLite) LoadBrokerState(ctx context.Context, userID, bucket string) (map[string][]byte, error) {
	rows, err := s.db.QueryContext(ctx,
		"SELECT key, value FROM broker_state WHERE user_id = ? AND bucket = ?", userID, bucket)
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
func (s *SQLite) BeginBrokerWrite(ctx context.Context, userID, id string, fp [32]byte, at time.Time) error {
	_, err := s.db.ExecContext(ctx,
		"INSERT INTO broker_writes (user_id, id, fingerprint, at) VALUES (?, ?, ?, ?)",
		userID, id, fp[:], millis(at))
	if isConstraint(err) {
		err = ErrConflict
	}
	return wrap("begin broker write", noUser(err))
}

// FinishBrokerWrite implements Store.
func (s *SQLite) FinishBrokerWrite(ctx context.Context, userID, id string, result []byte, errCode, errDetail string) error {
	var res any // NULL when nil
	if result != nil {
		res = result
	}
	r, err := s.db.ExecContext(ctx,
		"UPDATE broker_writes SET done = 1, result = ?, err_code = ?, err_detail = ? WHERE user_id = ? AND id = ?",
		res, errCode, errDetail, userID, id)
	return wrap("finish broker write", affected(r, err))
}

// LoadBrokerWrites implements Store.
func (s *SQLite) LoadBrokerWrites(ctx context.Context, userID string, since time.Time) ([]BrokerWrite, error) {
	rows, err := s.db.QueryContext(ctx,
		`SELECT id, fingerprint, at, done, result, err_code, err_detail FROM broker_writes
		 WHERE user_id = ? AND at >= ? ORDER BY at, rowid`, userID, millis(since))
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
		w.At = time.UnixMilli(at).UTC()
		out = append(out, w)
	}
	return out, wrap("load broker writes", rows.Err())
}

// PruneBrokerWrites implements Store.
func (s *SQLite) PruneBrokerWrites(ctx context.Context, userID string, before time.Time) error {
	_, err := s.db.ExecContext(ctx,
		"DELETE FROM broker_writes WHERE user_id = ? AND at < ?", userID, millis(before))
	return wrap("prune broker writes", err)
}
