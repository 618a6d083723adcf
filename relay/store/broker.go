package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The broker links: one row per linked user in broker_links (its secrets
// sealed by the caller), the Put/Delete/Load buckets of the operations
// running over the link in broker_state, and the dispatcher's journal in
// broker_writes.

const brokerLinkColumns = "user_id, env, method, sealed, linked_at, updated_at"

var (
	qPutBrokerLink = sqlConst(`INSERT INTO broker_links (` + brokerLinkColumns + `) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (user_id) DO UPDATE SET env = excluded.env, method = excluded.method, sealed = excluded.sealed,
		  linked_at = excluded.linked_at, updated_at = excluded.updated_at`)
	qBrokerLink         = sqlConst("SELECT " + brokerLinkColumns + " FROM broker_links WHERE user_id = ?")
	qBrokerLinks        = sqlConst("SELECT " + brokerLinkColumns + " FROM broker_links ORDER BY user_id")
	qBrokerLinkExists   = sqlConst("SELECT 1 FROM broker_links WHERE user_id = ?")
	qUpdateBrokerSealed = sqlConst("UPDATE broker_links SET sealed = ?, updated_at = ? WHERE user_id = ?")
	qSwapBrokerSealed   = sqlConst("UPDATE broker_links SET sealed = ?, updated_at = ? WHERE user_id = ? AND sealed = ?")
	qDeleteBrokerLink   = sqlConst("DELETE FROM broker_links WHERE user_id = ?")
	qDeleteUserState    = sqlConst("DELETE FROM broker_state WHERE user_id = ?")
	qDeleteUserWrites   = sqlConst("DELETE FROM broker_writes WHERE user_id = ?")
	qPutBrokerState     = sqlConst(`INSERT INTO broker_state (user_id, bucket, key, value) VALUES (?, ?, ?, ?)
		ON CONFLICT (user_id, bucket, key) DO UPDATE SET value = excluded.value`)
	qDeleteBrokerState = sqlConst("DELETE FROM broker_state WHERE user_id = ? AND bucket = ? AND key = ?")
	qLoadBrokerState   = sqlConst("SELECT key, value FROM broker_state WHERE user_id = ? AND bucket = ?")
	qBeginBrokerWrite  = sqlConst("INSERT INTO broker_writes (user_id, id, fingerprint, at) VALUES (?, ?, ?, ?)")
	qFinishBrokerWrite = sqlConst(`UPDATE broker_writes SET done = TRUE, result = ?, err_code = ?, err_detail = ?
		WHERE user_id = ? AND id = ?`)
	qLoadBrokerWrites = sqlConst(`SELECT id, fingerprint, at, done, result, err_code, err_detail FROM broker_writes
		WHERE user_id = ? AND at >= ? ORDER BY at, {journalOrder}`)
	qPruneBrokerWrites = sqlConst("DELETE FROM broker_writes WHERE user_id = ? AND at < ?")
)

// errNoSealed refuses a link without its sealed secrets.
var errNoSealed = errors.New("the sealed secrets are empty")

// PutBrokerLink implements Store.
func (s *sqlStore) PutBrokerLink(ctx context.Context, l BrokerLink) error {
	if l.UserID == "" || l.Env == "" || l.Method == "" || l.Sealed == "" {
		return errors.New("store: put broker link: a link needs a user, an environment, a method and its sealed secrets")
	}
	_, err := s.exec(ctx, qPutBrokerLink, l.UserID, l.Env, l.Method, l.Sealed, millis(l.LinkedAt), millis(l.UpdatedAt))
	return wrap("put broker link", s.d.noUser(err))
}

func scanBrokerLink(row scanner) (BrokerLink, error) {
	var l BrokerLink
	var linked, updated int64
	if err := row.Scan(&l.UserID, &l.Env, &l.Method, &l.Sealed, &linked, &updated); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return BrokerLink{}, ErrNotFound
		}
		return BrokerLink{}, err
	}
	l.LinkedAt, l.UpdatedAt = fromMS(linked), fromMS(updated)
	return l, nil
}

// BrokerLink implements Store.
func (s *sqlStore) BrokerLink(ctx context.Context, userID string) (BrokerLink, error) {
	l, err := scanBrokerLink(s.row(ctx, qBrokerLink, userID))
	return l, wrap("read broker link", err)
}

// ListBrokerLinks implements Store.
func (s *sqlStore) ListBrokerLinks(ctx context.Context) ([]BrokerLink, error) {
	out, err := all(ctx, s.conn, scanBrokerLink, qBrokerLinks)
	return out, wrap("list broker links", err)
}

// UpdateBrokerSealed implements Store.
func (s *sqlStore) UpdateBrokerSealed(ctx context.Context, userID, sealed string, at time.Time) error {
	if sealed == "" {
		return wrap("update broker link", errNoSealed)
	}
	return wrap("update broker link", affected(s.exec(ctx, qUpdateBrokerSealed, sealed, millis(at), userID)))
}

// SwapBrokerSealed implements Store. The compare and the swap are one
// UPDATE.
func (s *sqlStore) SwapBrokerSealed(ctx context.Context, userID, old, sealed string, at time.Time) error {
	if sealed == "" {
		return wrap("update broker link", errNoSealed)
	}
	err := affected(s.exec(ctx, qSwapBrokerSealed, sealed, millis(at), userID, old))
	if errors.Is(err, ErrNotFound) {
		// No link, or not with the old secrets.
		var one int
		err = s.row(ctx, qBrokerLinkExists, userID).Scan(&one)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			err = ErrNotFound
		case err == nil:
			err = ErrVersionConflict
		}
	}
	return wrap("update broker link", err)
}

// DeleteBrokerLink implements Store.
func (s *sqlStore) DeleteBrokerLink(ctx context.Context, userID string) (bool, error) {
	var had bool
	err := s.tx(ctx, func(tx conn) error {
		n, err := changed(tx.exec(ctx, qDeleteBrokerLink, userID))
		if err != nil {
			return err
		}
		had = n > 0
		if _, err := tx.exec(ctx, qDeleteUserState, userID); err != nil {
			return err
		}
		_, err = tx.exec(ctx, qDeleteUserWrites, userID)
		return err
	})
	if err != nil {
		return false, wrap("delete broker link", err)
	}
	return had, nil
}

// PutBrokerState implements Store.
func (s *sqlStore) PutBrokerState(ctx context.Context, userID, bucket, key string, value []byte) error {
	if value == nil {
		value = []byte{} // the column is NOT NULL; an empty value is a value
	}
	_, err := s.exec(ctx, qPutBrokerState, userID, bucket, key, value)
	return wrap("put broker state", s.d.noUser(err))
}

// DeleteBrokerState implements Store.
func (s *sqlStore) DeleteBrokerState(ctx context.Context, userID, bucket, key string) error {
	_, err := s.exec(ctx, qDeleteBrokerState, userID, bucket, key)
	return wrap("delete broker state", err)
}

// LoadBrokerState implements Store.
func (s *sqlStore) LoadBrokerState(ctx context.Context, userID, bucket string) (map[string][]byte, error) {
	rows, err := s.rows(ctx, qLoadBrokerState, userID, bucket)
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
func (s *sqlStore) BeginBrokerWrite(ctx context.Context, userID, id string, fp [32]byte, at time.Time) error {
	_, err := s.exec(ctx, qBeginBrokerWrite, userID, id, fp[:], millis(at))
	return wrap("begin broker write", s.d.noUser(s.d.conflict(err)))
}

// FinishBrokerWrite implements Store.
func (s *sqlStore) FinishBrokerWrite(ctx context.Context, userID, id string, result []byte, errCode, errDetail string) error {
	res, err := s.exec(ctx, qFinishBrokerWrite, orNull(result), errCode, errDetail, userID, id)
	return wrap("finish broker write", affected(res, err))
}

// LoadBrokerWrites implements Store.
func (s *sqlStore) LoadBrokerWrites(ctx context.Context, userID string, since time.Time) ([]BrokerWrite, error) {
	out, err := all(ctx, s.conn, scanBrokerWrite, qLoadBrokerWrites, userID, millis(since))
	return out, wrap("load broker writes", err)
}

func scanBrokerWrite(row scanner) (BrokerWrite, error) {
	var w BrokerWrite
	var fp []byte
	var at int64
	if err := row.Scan(&w.ID, &fp, &at, &w.Done, &w.Result, &w.ErrCode, &w.ErrDetail); err != nil {
		return BrokerWrite{}, err
	}
	if len(fp) != len(w.Fingerprint) {
		return BrokerWrite{}, fmt.Errorf("a write's fingerprint is %d bytes, not %d", len(fp), len(w.Fingerprint))
	}
	copy(w.Fingerprint[:], fp)
	w.At = fromMS(at)
	return w, nil
}

// PruneBrokerWrites implements Store.
func (s *sqlStore) PruneBrokerWrites(ctx context.Context, userID string, before time.Time) error {
	_, err := s.exec(ctx, qPruneBrokerWrites, userID, millis(before))
	return wrap("prune broker writes", err)
}
