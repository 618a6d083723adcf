package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"tradebridge/internal/dbfile"
)

// FileName is the database file inside Options.Dir.
const FileName = "relay.db"

// Options configures Open.
type Options struct {
	// Dir is the data directory; it is created if missing. Required.
	Dir string
	// Logger receives migration notices. Nil means no logging.
	Logger *zap.Logger
}

// SQLite is the Store of a one-machine relay.
type SQLite struct {
	db        *sql.DB
	log       *zap.Logger
	closeOnce sync.Once
	closeErr  error
}

var _ Store = (*SQLite)(nil)

// Open opens (creating if needed) the database in opts.Dir and migrates it
// to the newest schema.
func Open(ctx context.Context, opts Options) (*SQLite, error) {
	if opts.Dir == "" {
		return nil, errors.New("store: Options.Dir is required")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: create data directory: %w", err)
	}
	path := filepath.Join(opts.Dir, FileName)
	if err := dbfile.Restrict(path, opts.Logger); err != nil {
		return nil, err
	}
	dsn := "file:" + path + "?_txlock=immediate" +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)" +
		"&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	// SQLite writes one transaction at a time whatever the pool holds; a
	// bounded pool keeps a storm of connecting agents (each a token check
	// and a write) from opening a file descriptor set per request.
	db.SetMaxOpenConns(maxOpenConns)
	db.SetMaxIdleConns(maxOpenConns)
	s := &SQLite{db: db, log: opts.Logger.Named("store")}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// maxOpenConns bounds the SQLite store's connections (each holds the
// database, its -wal and -shm files open).
const maxOpenConns = 32

// FileMode is the mode of the database file: it holds every user's token
// hashes and the records of their orders, for the relay's user alone.
// SQLite gives its -wal and -shm files the database file's mode.
const FileMode = dbfile.Mode

// migrate applies the embedded migrations newer than the database's
// user_version, each in its own transaction.
func (s *SQLite) migrate(ctx context.Context) error {
	ms, err := loadMigrations(sqliteMigrations, "migrations")
	if err != nil {
		return err
	}
	var current int
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&current); err != nil {
		return fmt.Errorf("store: read schema version: %w", err)
	}
	if current > len(ms) {
		return fmt.Errorf("%w: version %d, this relay knows %d", ErrSchemaTooNew, current, len(ms))
	}
	for _, m := range ms[current:] {
		err = s.tx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.version))
			return err
		})
		if err != nil {
			return fmt.Errorf("store: migration %s: %w", m.name, err)
		}
		s.log.Info("schema migrated", zap.Int("version", m.version), zap.String("migration", m.name))
	}
	return nil
}

// SchemaVersion reports the database's schema version.
func (s *SQLite) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	return v, err
}

func (s *SQLite) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func millis(t time.Time) int64 { return t.UnixMilli() }

func fromMillis(ms sql.NullInt64) time.Time {
	if !ms.Valid {
		return time.Time{}
	}
	return time.UnixMilli(ms.Int64).UTC()
}

// isConstraint reports a UNIQUE or PRIMARY KEY violation.
func isConstraint(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY, sqlite3.SQLITE_CONSTRAINT_UNIQUE:
			return true
		}
	}
	return false
}

func insertToken(ctx context.Context, tx *sql.Tx, t Token) error {
	_, err := tx.ExecContext(ctx,
		"INSERT INTO tokens (hash, user_id, kind, profile, created_at) VALUES (?, ?, ?, ?, ?)",
		t.Hash, t.UserID, t.Kind, profileOrDefault(t.Profile), millis(t.CreatedAt))
	if isConstraint(err) {
		return ErrConflict
	}
	return err
}

// CreateUser implements Store.
func (s *SQLite) CreateUser(ctx context.Context, u User, tokens ...Token) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx,
			"INSERT INTO users (id, name, plan, disabled, created_at, management_closed, withheld_features) VALUES (?, ?, ?, ?, ?, ?, ?)",
			u.ID, u.Name, u.Plan, u.Disabled, millis(u.CreatedAt), u.ManagementClosed, encodeFeatures(u.Withheld))
		if isConstraint(err) {
			return ErrConflict
		}
		if err != nil {
			return err
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

const userColumns = "users.id, users.name, users.plan, users.disabled, users.created_at," +
	" users.management_closed, users.withheld_features"

func scanUser(row interface{ Scan(...any) error }, extra ...any) (User, error) {
	var u User
	var created sql.NullInt64
	var withheld string
	dest := append([]any{&u.ID, &u.Name, &u.Plan, &u.Disabled, &created, &u.ManagementClosed, &withheld}, extra...)
	if err := row.Scan(dest...); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return User{}, ErrNotFound
		}
		return User{}, err
	}
	u.CreatedAt = fromMillis(created)
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
func (s *SQLite) SetUserAccess(ctx context.Context, userID string, managementClosed bool, withheld []string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE users SET management_closed = ?, withheld_features = ? WHERE id = ?",
			managementClosed, encodeFeatures(withheld), userID)
		return affected(res, err)
	})
	return wrap("set user access", err)
}

// User implements Store.
func (s *SQLite) User(ctx context.Context, id string) (User, error) {
	u, err := scanUser(s.db.QueryRowContext(ctx, "SELECT "+userColumns+" FROM users WHERE id = ?", id))
	return u, wrap("read user", err)
}

// SetUserDisabled implements Store.
func (s *SQLite) SetUserDisabled(ctx context.Context, id string, disabled bool) error {
	res, err := s.db.ExecContext(ctx, "UPDATE users SET disabled = ? WHERE id = ?", disabled, id)
	return wrap("update user", affected(res, err))
}

// AddToken implements Store.
func (s *SQLite) AddToken(ctx context.Context, t Token) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, "SELECT 1 FROM users WHERE id = ?", t.UserID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		return insertToken(ctx, tx, t)
	})
	return wrap("add token", err)
}

// LookupToken implements Store.
func (s *SQLite) LookupToken(ctx context.Context, hash string) (Token, User, error) {
	t := Token{Hash: hash}
	var created, revoked sql.NullInt64
	u, err := scanUser(s.db.QueryRowContext(ctx,
		"SELECT "+userColumns+", tokens.kind, tokens.profile, tokens.created_at, tokens.revoked_at"+
			" FROM tokens JOIN users ON users.id = tokens.user_id WHERE tokens.hash = ?", hash),
		&t.Kind, &t.Profile, &created, &revoked)
	if err != nil {
		return Token{}, User{}, wrap("look up token", err)
	}
	t.UserID = u.ID
	t.CreatedAt = fromMillis(created)
	t.RevokedAt = fromMillis(revoked)
	return t, u, nil
}

// SetTokenProfile implements Store.
func (s *SQLite) SetTokenProfile(ctx context.Context, hash, profile string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE tokens SET profile = ? WHERE hash = ?", profileOrDefault(profile), hash)
		return affected(res, err)
	})
	return wrap("set token profile", err)
}

// ListTokens implements Store.
func (s *SQLite) ListTokens(ctx context.Context, userID string) ([]Token, error) {
	if _, err := s.User(ctx, userID); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx,
		"SELECT hash, kind, profile, created_at, revoked_at FROM tokens WHERE user_id = ? ORDER BY created_at, hash", userID)
	if err != nil {
		return nil, wrap("list tokens", err)
	}
	defer rows.Close()
	var out []Token
	for rows.Next() {
		t := Token{UserID: userID}
		var created, revoked sql.NullInt64
		if err := rows.Scan(&t.Hash, &t.Kind, &t.Profile, &created, &revoked); err != nil {
			return nil, wrap("list tokens", err)
		}
		t.CreatedAt = fromMillis(created)
		t.RevokedAt = fromMillis(revoked)
		out = append(out, t)
	}
	return out, wrap("list tokens", rows.Err())
}

// profileOrDefault stores an empty profile as the default one.
func profileOrDefault(p string) string {
	if p == "" {
		return "standard"
	}
	return p
}

// RevokeToken implements Store.
func (s *SQLite) RevokeToken(ctx context.Context, hash string, at time.Time) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx,
			"UPDATE tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE hash = ?", millis(at), hash)
		return affected(res, err)
	})
	return wrap("revoke token", err)
}

// RevokeUserTokens implements Store.
func (s *SQLite) RevokeUserTokens(ctx context.Context, userID, kind string, at time.Time) (int, error) {
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, "SELECT 1 FROM users WHERE id = ?", userID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx,
			"UPDATE tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL AND (? = '' OR kind = ?)",
			millis(at), userID, kind, kind)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), wrap("revoke tokens", err)
}

// Ping implements Store.
func (s *SQLite) Ping(ctx context.Context) error {
	var one int
	return wrap("ping", s.db.QueryRowContext(ctx, "SELECT 1").Scan(&one))
}

// Close implements Store.
func (s *SQLite) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.db.Close() })
	return s.closeErr
}

func affected(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// wrap adds the operation to an error, keeping the sentinels matchable.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("store: %s: %w", op, err)
}
