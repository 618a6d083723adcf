package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// The outcomes of trading writes by idempotency key (idempotency).

var (
	qClaimNew = sqlConst(`INSERT INTO idempotency (user_id, key, fingerprint, state, status, body, created_at, updated_at)
		VALUES (?, ?, ?, ?, 0, NULL, ?, ?) ON CONFLICT (user_id, key) DO NOTHING`)
	qClaimRead = sqlConst(`SELECT fingerprint, state, status, body, created_at, updated_at
		FROM idempotency WHERE user_id = ? AND key = ?{forUpdate}`)
	qClaimExpired = sqlConst(`UPDATE idempotency SET fingerprint = ?, state = ?, status = 0, body = NULL, created_at = ?, updated_at = ?
		WHERE user_id = ? AND key = ?`)
	qClaimAgain = sqlConst("UPDATE idempotency SET state = ?, updated_at = ? WHERE user_id = ? AND key = ?")
	qFinishIdem = sqlConst(`UPDATE idempotency SET state = ?, status = ?, body = ?, updated_at = ?
		WHERE user_id = ? AND key = ?`)
	qPurgeIdem = sqlConst("DELETE FROM idempotency WHERE created_at < ?")
)

// errClaimVanished reports a record deleted under ClaimIdempotent again
// and again.
var errClaimVanished = errors.New("the record kept vanishing while it was claimed")

// ClaimIdempotent implements Store. A new key is claimed by one INSERT …
// ON CONFLICT DO NOTHING; a key already there is read under a lock (FOR
// UPDATE on PostgreSQL; SQLite's transaction holds the write lock from
// its start), so that the stores that claim it at once decide one after
// the other, each seeing what the one before wrote.
func (s *sqlStore) ClaimIdempotent(ctx context.Context, rec Idempotent, staleBefore, expiredBefore time.Time) (Idempotent, bool, error) {
	var got Idempotent
	claimed := false
	err := s.tx(ctx, func(tx conn) error {
		var err error
		got, claimed, err = claimIn(ctx, tx, rec, staleBefore, expiredBefore)
		return err
	})
	if err != nil {
		return Idempotent{}, false, wrap("claim idempotency key", err)
	}
	return got, claimed, nil
}

// claimIn is ClaimIdempotent in the transaction tx.
func claimIn(ctx context.Context, tx conn, rec Idempotent, staleBefore, expiredBefore time.Time) (got Idempotent, claimed bool, _ error) {
	at := millis(rec.CreatedAt)
	// A row deleted between the insert and the read (purged) is
	// inserted again: a few rounds at most.
	for range 3 {
		n, err := changed(tx.exec(ctx, qClaimNew, rec.UserID, rec.Key, rec.Fingerprint, IdemRunning, at, at))
		if err != nil {
			return got, false, err
		}
		if n == 1 {
			return newClaim(rec), true, nil
		}
		var created, updated int64
		err = tx.row(ctx, qClaimRead, rec.UserID, rec.Key).
			Scan(&got.Fingerprint, &got.State, &got.Status, &got.Body, &created, &updated)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return got, false, err
		}
		if created < millis(expiredBefore) {
			_, err = tx.exec(ctx, qClaimExpired, rec.Fingerprint, IdemRunning, at, at, rec.UserID, rec.Key)
			return newClaim(rec), true, err
		}
		got.UserID, got.Key = rec.UserID, rec.Key
		got.CreatedAt, got.UpdatedAt = fromMS(created), fromMS(updated)
		if got.Fingerprint != rec.Fingerprint {
			return got, false, nil // a different request under the same key: the caller refuses it
		}
		if got.State == IdemUnknown || (got.State == IdemRunning && updated < millis(staleBefore)) {
			got.State, got.UpdatedAt = IdemRunning, rec.CreatedAt
			_, err = tx.exec(ctx, qClaimAgain, IdemRunning, at, rec.UserID, rec.Key)
			return got, true, err
		}
		return got, false, nil
	}
	return got, false, errClaimVanished
}

// newClaim is the record of a key claimed afresh.
func newClaim(rec Idempotent) Idempotent {
	return Idempotent{UserID: rec.UserID, Key: rec.Key, Fingerprint: rec.Fingerprint,
		State: IdemRunning, CreatedAt: rec.CreatedAt, UpdatedAt: rec.CreatedAt}
}

// FinishIdempotent implements Store.
func (s *sqlStore) FinishIdempotent(ctx context.Context, rec Idempotent) error {
	res, err := s.exec(ctx, qFinishIdem,
		rec.State, rec.Status, orNull(rec.Body), millis(rec.UpdatedAt), rec.UserID, rec.Key)
	return wrap("finish idempotency key", affected(res, err))
}

// PurgeIdempotent implements Store.
func (s *sqlStore) PurgeIdempotent(ctx context.Context, before time.Time) (int, error) {
	n, err := changed(s.exec(ctx, qPurgeIdem, millis(before)))
	return n, wrap("purge idempotency keys", err)
}
