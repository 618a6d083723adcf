package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Users and their tokens (users, tokens).

const userColumns = "users.id, users.name, users.plan, users.disabled, users.created_at," +
	" users.management_closed, users.withheld_features, users.email, users.password_hash"

var (
	qInsertUser = sqlConst(`INSERT INTO users (id, name, plan, disabled, created_at, management_closed, withheld_features,
		email, password_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	qInsertToken     = sqlConst("INSERT INTO tokens (hash, user_id, kind, profile, name, scope, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)")
	qUserExists      = sqlConst("SELECT 1 FROM users WHERE id = ?")
	qUser            = sqlConst("SELECT " + userColumns + " FROM users WHERE id = ?")
	qSetUserAccess   = sqlConst("UPDATE users SET management_closed = ?, withheld_features = ? WHERE id = ?")
	qSetUserDisabled = sqlConst("UPDATE users SET disabled = ? WHERE id = ?")
	qSetUserPlan     = sqlConst("UPDATE users SET plan = ? WHERE id = ?")
	qListUsers       = sqlConst("SELECT " + userColumns + " FROM users ORDER BY users.created_at, users.id")
	qLookupToken     = sqlConst("SELECT " + userColumns + ", tokens.kind, tokens.profile, tokens.name, tokens.scope, tokens.created_at, tokens.revoked_at" +
		" FROM tokens JOIN users ON users.id = tokens.user_id WHERE tokens.hash = ?")
	qSetTokenProfile = sqlConst("UPDATE tokens SET profile = ? WHERE hash = ?")
	qListTokens      = sqlConst("SELECT hash, kind, profile, name, scope, created_at, revoked_at FROM tokens WHERE user_id = ? ORDER BY created_at, hash")
	qRevokeToken     = sqlConst("UPDATE tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE hash = ?")
	qRevokeTokens    = sqlConst("UPDATE tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL AND (? = '' OR kind = ?)")
)

// userExists reports ErrNotFound when the user does not exist.
func userExists(ctx context.Context, c conn, userID string) error {
	var one int
	err := c.row(ctx, qUserExists, userID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return err
}

func insertToken(ctx context.Context, c conn, t Token) error {
	_, err := c.exec(ctx, qInsertToken, t.Hash, t.UserID, t.Kind, orDefault(t.Profile, "standard"), t.Name,
		orDefault(t.Scope, "trade"), millis(t.CreatedAt))
	return c.d.noUser(c.d.conflict(err))
}

// orDefault stores an empty token profile or scope as the default one,
// def.
func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// CreateUser implements Store.
func (s *sqlStore) CreateUser(ctx context.Context, u User, tokens ...Token) error {
	err := s.tx(ctx, func(tx conn) error {
		_, err := tx.exec(ctx, qInsertUser,
			u.ID, u.Name, u.Plan, u.Disabled, millis(u.CreatedAt), u.ManagementClosed, encodeFeatures(u.Withheld),
			nullable(NormalizeEmail(u.Email)), nullable(u.PasswordHash))
		if err != nil {
			return tx.d.conflict(err)
		}
		for _, t := range tokens {
			if t.UserID != u.ID {
				return fmt.Errorf("store: token for user %s given with user %s", t.UserID, u.ID)
			}
			if err := insertToken(ctx, tx, t); err != nil {
				return err
			}
		}
		return nil
	})
	return wrap("create user", err)
}

func scanUser(row scanner, extra ...any) (User, error) {
	var u User
	var created int64
	var withheld string
	var email, password sql.NullString
	dest := append([]any{&u.ID, &u.Name, &u.Plan, &u.Disabled, &created, &u.ManagementClosed, &withheld, &email, &password}, extra...)
	if err := row.Scan(dest...); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return User{}, ErrNotFound
		}
		return User{}, err
	}
	u.CreatedAt = fromMS(created)
	u.Email, u.PasswordHash = email.String, password.String
	var err error
	if u.Withheld, err = decodeFeatures(withheld); err != nil {
		return User{}, err
	}
	return u, nil
}

// encodeFeatures stores a user's withheld features as a JSON array.
func encodeFeatures(fs []string) string {
	if len(fs) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(fs) // strings always encode
	return string(b)
}

// decodeFeatures reads withheld features back; none is nil.
func decodeFeatures(s string) ([]string, error) {
	var fs []string
	if err := json.Unmarshal([]byte(s), &fs); err != nil {
		return nil, fmt.Errorf("withheld features of a user are not a JSON array: %w", err)
	}
	if len(fs) == 0 {
		return nil, nil
	}
	return fs, nil
}

// SetUserAccess implements Store.
func (s *sqlStore) SetUserAccess(ctx context.Context, userID string, managementClosed bool, withheld []string) error {
	return wrap("set user access", affected(s.exec(ctx, qSetUserAccess, managementClosed, encodeFeatures(withheld), userID)))
}

// User implements Store.
func (s *sqlStore) User(ctx context.Context, id string) (User, error) {
	u, err := scanUser(s.row(ctx, qUser, id))
	return u, wrap("read user", err)
}

// SetUserDisabled implements Store.
func (s *sqlStore) SetUserDisabled(ctx context.Context, id string, disabled bool) error {
	return wrap("update user", affected(s.exec(ctx, qSetUserDisabled, disabled, id)))
}

// SetUserPlan implements Store.
func (s *sqlStore) SetUserPlan(ctx context.Context, id, plan string) error {
	return wrap("set user plan", affected(s.exec(ctx, qSetUserPlan, plan, id)))
}

// ListUsers implements Store.
func (s *sqlStore) ListUsers(ctx context.Context) ([]User, error) {
	us, err := all(ctx, s.conn, func(row scanner) (User, error) { return scanUser(row) }, qListUsers)
	return us, wrap("list users", err)
}

// AddToken implements Store.
func (s *sqlStore) AddToken(ctx context.Context, t Token) error {
	err := s.tx(ctx, func(tx conn) error {
		if err := userExists(ctx, tx, t.UserID); err != nil {
			return err
		}
		return insertToken(ctx, tx, t)
	})
	return wrap("add token", err)
}

// LookupToken implements Store.
func (s *sqlStore) LookupToken(ctx context.Context, hash string) (Token, User, error) {
	t := Token{Hash: hash}
	var created int64
	var revoked sql.NullInt64
	u, err := scanUser(s.row(ctx, qLookupToken, hash), &t.Kind, &t.Profile, &t.Name, &t.Scope, &created, &revoked)
	if err != nil {
		return Token{}, User{}, wrap("look up token", err)
	}
	t.UserID = u.ID
	t.CreatedAt = fromMS(created)
	t.RevokedAt = fromMillis(revoked)
	return t, u, nil
}

// SetTokenProfile implements Store.
func (s *sqlStore) SetTokenProfile(ctx context.Context, hash, profile string) error {
	return wrap("set token profile", affected(s.exec(ctx, qSetTokenProfile, orDefault(profile, "standard"), hash)))
}

// ListTokens implements Store.
func (s *sqlStore) ListTokens(ctx context.Context, userID string) ([]Token, error) {
	if _, err := s.User(ctx, userID); err != nil {
		return nil, err
	}
	out, err := all(ctx, s.conn, func(row scanner) (Token, error) {
		t := Token{UserID: userID}
		var created int64
		var revoked sql.NullInt64
		err := row.Scan(&t.Hash, &t.Kind, &t.Profile, &t.Name, &t.Scope, &created, &revoked)
		t.CreatedAt, t.RevokedAt = fromMS(created), fromMillis(revoked)
		return t, err
	}, qListTokens, userID)
	return out, wrap("list tokens", err)
}

// RevokeToken implements Store.
func (s *sqlStore) RevokeToken(ctx context.Context, hash string, at time.Time) error {
	return wrap("revoke token", affected(s.exec(ctx, qRevokeToken, millis(at), hash)))
}

// RevokeUserTokens implements Store.
func (s *sqlStore) RevokeUserTokens(ctx context.Context, userID, kind string, at time.Time) (int, error) {
	var n int
	err := s.tx(ctx, func(tx conn) error {
		if err := userExists(ctx, tx, userID); err != nil {
			return err
		}
		var err error
		n, err = changed(tx.exec(ctx, qRevokeTokens, millis(at), userID, kind, kind))
		return err
	})
	return n, wrap("revoke tokens", err)
}
