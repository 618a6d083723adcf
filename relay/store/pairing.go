package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Pairing codes (pairing_codes): the one-time codes that pair a PC's
// agent with a user. Their expiry is by the caller's clock, which mints
// and redeems them.

var (
	qForgetExpiredCodes = sqlConst("DELETE FROM pairing_codes WHERE expires_at < ?")
	qForgetOldestCodes  = sqlConst(`DELETE FROM pairing_codes WHERE user_id = ? AND hash NOT IN (
		SELECT hash FROM pairing_codes WHERE user_id = ? ORDER BY expires_at DESC, hash DESC LIMIT ?)`)
	qPutPairingCode  = sqlConst("INSERT INTO pairing_codes (hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)")
	qTakePairingCode = sqlConst("DELETE FROM pairing_codes WHERE hash = ? RETURNING hash, user_id, created_at, expires_at")
)

// PairingCode is the stored form of a one-time pairing code: the hash of
// its text, never the text.
type PairingCode struct {
	// Hash is the hex SHA-256 of the code's normalized text.
	Hash   string
	UserID string
	// CreatedAt is when the code was minted, Expires when it stops being
	// accepted.
	CreatedAt time.Time
	Expires   time.Time
}

// PutPairingCode implements Store. It locks the user's row first (FOR NO
// KEY UPDATE on PostgreSQL; SQLite's transaction holds the write lock), so
// that concurrent puts for one user keep its bound; codes expired at the
// new code's CreatedAt are forgotten. A keepPerUser of 0 or less keeps
// every code of the user.
func (s *sqlStore) PutPairingCode(ctx context.Context, c PairingCode, keepPerUser int) error {
	if c.Hash == "" || c.UserID == "" || c.CreatedAt.IsZero() || c.Expires.IsZero() {
		return errors.New("store: put pairing code: a code needs a hash, a user, a creation time and an expiry")
	}
	err := s.tx(ctx, func(tx conn) error {
		var one int
		err := tx.row(ctx, qLockUser, c.UserID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if _, err := tx.exec(ctx, qForgetExpiredCodes, millis(c.CreatedAt)); err != nil {
			return err
		}
		if keepPerUser > 0 {
			if _, err := tx.exec(ctx, qForgetOldestCodes, c.UserID, c.UserID, keepPerUser-1); err != nil {
				return err
			}
		}
		_, err = tx.exec(ctx, qPutPairingCode, c.Hash, c.UserID, millis(c.CreatedAt), millis(c.Expires))
		return tx.d.noUser(tx.d.conflict(err))
	})
	return wrap("put pairing code", err)
}

// RedeemPairingCode implements Store. The code is read and deleted by one
// statement inside the transaction that stores the token, so that of two
// redeeming one code at once, one stores a token and the other finds
// nothing.
func (s *sqlStore) RedeemPairingCode(ctx context.Context, hash string, now time.Time, t Token) (PairingCode, error) {
	var c PairingCode
	var refused error
	err := s.tx(ctx, func(tx conn) error {
		refused = nil
		var created, expires int64
		err := tx.row(ctx, qTakePairingCode, hash).Scan(&c.Hash, &c.UserID, &created, &expires)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		c.CreatedAt, c.Expires = fromMS(created), fromMS(expires)
		// An expired code, or one of a disabled user, is forgotten all
		// the same: the transaction commits without the token.
		if expires < millis(now) {
			refused = fmt.Errorf("%w: the code expired", ErrNotFound)
			return nil
		}
		u, err := scanUser(tx.row(ctx, qUser, c.UserID))
		if err != nil {
			return err
		}
		if u.Disabled {
			refused = fmt.Errorf("%w: the user is disabled", ErrNotFound)
			return nil
		}
		t.UserID = c.UserID
		return insertToken(ctx, tx, t)
	})
	if err == nil {
		err = refused
	}
	if err != nil {
		return PairingCode{}, wrap("redeem pairing code", err)
	}
	return c, nil
}
