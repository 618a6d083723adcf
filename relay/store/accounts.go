package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The traders' accounts (package relay/account): users' emails and
// passwords (users), the dashboard's sessions (sessions) and the
// password-reset links (password_resets). Sessions and links are stored
// as the hex SHA-256 of their secret only; their times are the caller's
// clock.

var (
	qUserByEmail     = sqlConst("SELECT " + userColumns + " FROM users WHERE users.email = ?")
	qSetUserEmail    = sqlConst("UPDATE users SET email = ? WHERE id = ?")
	qSetUserPassword = sqlConst("UPDATE users SET password_hash = ? WHERE id = ?")
	qCreateSession   = sqlConst("INSERT INTO sessions (hash, user_id, created_at, last_seen_at, expires_at) VALUES (?, ?, ?, ?, ?)")
	qLookupSession   = sqlConst("SELECT " + userColumns + ", sessions.created_at, sessions.last_seen_at, sessions.expires_at" +
		" FROM sessions JOIN users ON users.id = sessions.user_id WHERE sessions.hash = ?")
	qTouchSession       = sqlConst("UPDATE sessions SET last_seen_at = ? WHERE hash = ?")
	qDeleteSession      = sqlConst("DELETE FROM sessions WHERE hash = ?")
	qDeleteUserSessions = sqlConst("DELETE FROM sessions WHERE user_id = ?")
	qPruneSessions      = sqlConst("DELETE FROM sessions WHERE expires_at < ? OR last_seen_at < ?")
	qForgetResets       = sqlConst("DELETE FROM password_resets WHERE user_id = ? OR expires_at < ?")
	qPutReset           = sqlConst("INSERT INTO password_resets (hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)")
	qTakeReset          = sqlConst("DELETE FROM password_resets WHERE hash = ? RETURNING user_id, expires_at")
)

// NormalizeEmail is the form an email is stored and compared in: trimmed
// and lowercased.
func NormalizeEmail(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// Session is the stored form of a dashboard session: the hash of its
// token, never the token.
type Session struct {
	// Hash is the hex SHA-256 of the session's token.
	Hash   string
	UserID string
	// CreatedAt is the sign-in, LastSeenAt the latest request (written at
	// most once a minute), Expires the absolute expiry.
	CreatedAt  time.Time
	LastSeenAt time.Time
	Expires    time.Time
}

// PasswordReset is the stored form of a password-reset link: the hash of
// its token, never the token.
type PasswordReset struct {
	// Hash is the hex SHA-256 of the link's token.
	Hash      string
	UserID    string
	CreatedAt time.Time
	Expires   time.Time
}

// UserByEmail implements Store.
func (s *sqlStore) UserByEmail(ctx context.Context, email string) (User, error) {
	email = NormalizeEmail(email)
	if email == "" {
		return User{}, wrap("read user by email", ErrNotFound)
	}
	u, err := scanUser(s.row(ctx, qUserByEmail, email))
	return u, wrap("read user by email", err)
}

// SetUserEmail implements Store.
func (s *sqlStore) SetUserEmail(ctx context.Context, userID, email string) error {
	res, err := s.exec(ctx, qSetUserEmail, nullable(NormalizeEmail(email)), userID)
	return wrap("set user email", affected(res, s.d.conflict(err)))
}

// SetUserPassword implements Store.
func (s *sqlStore) SetUserPassword(ctx context.Context, userID, hash string) error {
	return wrap("set user password", affected(s.exec(ctx, qSetUserPassword, nullable(hash), userID)))
}

// CreateSession implements Store.
func (s *sqlStore) CreateSession(ctx context.Context, ss Session) error {
	if ss.Hash == "" || ss.UserID == "" || ss.CreatedAt.IsZero() || ss.Expires.IsZero() {
		return errors.New("store: create session: a session needs a hash, a user, a creation time and an expiry")
	}
	last := ss.LastSeenAt
	if last.IsZero() {
		last = ss.CreatedAt
	}
	_, err := s.exec(ctx, qCreateSession, ss.Hash, ss.UserID, millis(ss.CreatedAt), millis(last), millis(ss.Expires))
	return wrap("create session", s.d.noUser(s.d.conflict(err)))
}

// LookupSession implements Store.
func (s *sqlStore) LookupSession(ctx context.Context, hash string) (Session, User, error) {
	ss := Session{Hash: hash}
	var created, last, expires int64
	u, err := scanUser(s.row(ctx, qLookupSession, hash), &created, &last, &expires)
	if err != nil {
		return Session{}, User{}, wrap("look up session", err)
	}
	ss.UserID = u.ID
	ss.CreatedAt, ss.LastSeenAt, ss.Expires = fromMS(created), fromMS(last), fromMS(expires)
	return ss, u, nil
}

// TouchSession implements Store.
func (s *sqlStore) TouchSession(ctx context.Context, hash string, at time.Time) error {
	return wrap("touch session", affected(s.exec(ctx, qTouchSession, millis(at), hash)))
}

// DeleteSession implements Store.
func (s *sqlStore) DeleteSession(ctx context.Context, hash string) error {
	_, err := s.exec(ctx, qDeleteSession, hash)
	return wrap("delete session", err)
}

// DeleteUserSessions implements Store.
func (s *sqlStore) DeleteUserSessions(ctx context.Context, userID string) (int, error) {
	n, err := changed(s.exec(ctx, qDeleteUserSessions, userID))
	return n, wrap("delete user sessions", err)
}

// PruneSessions implements Store.
func (s *sqlStore) PruneSessions(ctx context.Context, expiredAt, idleBefore time.Time) (int, error) {
	n, err := changed(s.exec(ctx, qPruneSessions, millis(expiredAt), millis(idleBefore)))
	return n, wrap("prune sessions", err)
}

// PutPasswordReset implements Store.
func (s *sqlStore) PutPasswordReset(ctx context.Context, r PasswordReset) error {
	if r.Hash == "" || r.UserID == "" || r.CreatedAt.IsZero() || r.Expires.IsZero() {
		return errors.New("store: put password reset: a link needs a hash, a user, a creation time and an expiry")
	}
	err := s.tx(ctx, func(tx conn) error {
		if _, err := tx.exec(ctx, qForgetResets, r.UserID, millis(r.CreatedAt)); err != nil {
			return err
		}
		_, err := tx.exec(ctx, qPutReset, r.Hash, r.UserID, millis(r.CreatedAt), millis(r.Expires))
		return tx.d.noUser(tx.d.conflict(err))
	})
	return wrap("put password reset", err)
}

// TakePasswordReset implements Store. The link is read and deleted by one
// statement, so that of two using one link at once one finds it.
func (s *sqlStore) TakePasswordReset(ctx context.Context, hash string, now time.Time) (string, error) {
	var userID string
	var expires int64
	err := s.row(ctx, qTakeReset, hash).Scan(&userID, &expires)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", wrap("take password reset", ErrNotFound)
	case err != nil:
		return "", wrap("take password reset", err)
	case expires < millis(now):
		return "", wrap("take password reset", fmt.Errorf("%w: the link expired", ErrNotFound))
	}
	return userID, nil
}
