package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// ClaimIdempotent implements Store.
func (s *SQLite) ClaimIdempotent(ctx context.Context, rec Idempotent, staleBefore, expiredBefore time.Time) (Idempotent, bool, error) {
	var got Idempotent
	claimed := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var created, updated int64
		err := tx.QueryRowContext(ctx,
			`SELECT fingerprint, state, status, body, created_at, updated_at
			 FROM idempotency WHERE user_id = ? AND key = ?`, rec.UserID, rec.Key).
			Scan(&got.Fingerprint, &got.State, &got.Status, &got.Body, &created, &updated)
		switch {
		case errors.Is(err, sql.ErrNoRows) || (err == nil && created < millis(expiredBefore)):
			got = Idempotent{UserID: rec.UserID, Key: rec.Key, Fingerprint: rec.Fingerprint,
				State: IdemRunning, CreatedAt: rec.CreatedAt, UpdatedAt: rec.CreatedAt}
			claimed = true
			_, err = tx.ExecContext(ctx,
				`INSERT INTO idempotency (user_id, key, fingerprint, state, status, body, created_at, updated_at)
				 VALUES (?, ?, ?, ?, 0, NULL, ?, ?)
				 ON CONFLICT (user_id, key) DO UPDATE SET fingerprint = excluded.fingerprint,
				   state = excluded.state, status = 0, body = NULL,
				   created_at = excluded.created_at, updated_at = excluded.updated_at`,
				rec.UserID, rec.Key, rec.Fingerprint, IdemRunning, millis(rec.CreatedAt), millis(rec.CreatedAt))
			return err
		case err != nil:
			return err
		}
		got.UserID, got.Key = rec.UserID, rec.Key
		got.CreatedAt = time.UnixMilli(created).UTC()
		got.UpdatedAt = time.UnixMilli(updated).UTC()
		if got.Fingerprint != rec.Fingerprint {
			return nil // a different request under the same key: the caller refuses it
		}
		if got.State == IdemUnknown || (got.State == IdemRunning && updated < millis(staleBefore)) {
			claimed = true
			got.State, got.UpdatedAt = IdemRunning, rec.CreatedAt
			_, err = tx.ExecContext(ctx,
				`UPDATE idempotency SET state = ?, updated_at = ? WHERE user_id = ? AND key = ?`,
				IdemRunning, millis(rec.CreatedAt), rec.UserID, rec.Key)
			return err
		}
		return nil
	})
	if err != nil {
		return Idempotent{}, false, wrap("claim idempotency key", err)
	}
	return got, claimed, nil
}

// FinishIdempotent implements Store.
func (s *SQLite) FinishIdempotent(ctx context.Context, rec Idempotent) error {
	res, err := s.db.ExecContext(ctx,
		`UPDATE idempotency SET state = ?, status = ?, body = ?, updated_at = ?
		 WHERE user_id = ? AND key = ?`,
		rec.State, rec.Status, rec.Body, millis(rec.UpdatedAt), rec.UserID, rec.Key)
	return wrap("finish idempotency key", affected(res, err))
}

// PurgeIdempotent implements Store.
func (s *SQLite) PurgeIdempotent(ctx context.Context, before time.Time) (int, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM idempotency WHERE created_at < ?`, millis(before))
	if err != nil {
		return 0, wrap("purge idempotency keys", err)
	}
	n, err := res.RowsAffected()
	return int(n), wrap("purge idempotency keys", err)
}
