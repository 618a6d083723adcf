package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
)

// The PostgreSQL store, shared by the nodes of a relay that runs as
// several. Its schema is the SQLite one: times are unix milliseconds in
// BIGINT columns, so that they round-trip exactly as they do in SQLite.
// Every write is one statement or one transaction (READ COMMITTED); a
// write that must see the row it changes as it is now locks it (UPDATE …
// WHERE version = $n, SELECT … FOR UPDATE, INSERT … ON CONFLICT), so
// concurrent nodes queue on the row instead of overwriting each other.
// The times the store decides itself (lease expiry, forgetting expired
// OAuth states, SetConnections) are by the database's clock, now(), so
// that the nodes' clocks need not agree.

// PostgresOptions configures OpenPostgres.
type PostgresOptions struct {
	// URL is the database's connection string, postgres://… or
	// postgresql://… (pgx's keywords and query parameters, including
	// run-time parameters such as search_path). Required.
	URL string
	// Logger receives migration notices. Nil means no logging.
	Logger *zap.Logger
	// MaxConns bounds the pool's connections. 0 means pgx's default (or
	// the URL's pool_max_conns).
	MaxConns int32
}

// Postgres is the Store of a relay that runs as several nodes sharing one
// PostgreSQL database.
type Postgres struct {
	pool      *pgxpool.Pool
	log       *zap.Logger
	closeOnce sync.Once
}

var _ Store = (*Postgres)(nil)

// nowMS is the database's clock in unix milliseconds.
const nowMS = "(floor(extract(epoch FROM now()) * 1000)::bigint)"

// OpenPostgres connects to the database at opts.URL and migrates it to the
// newest schema. Several nodes may open one database at once: the
// migrations run under a transaction-scoped advisory lock, one node at a
// time, and the others find them applied.
func OpenPostgres(ctx context.Context, opts PostgresOptions) (*Postgres, error) {
	if opts.URL == "" {
		return nil, errors.New("store: PostgresOptions.URL is required")
	}
	if opts.MaxConns < 0 {
		return nil, errors.New("store: PostgresOptions.MaxConns is negative")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	cfg, err := pgxpool.ParseConfig(opts.URL)
	if err != nil {
		// pgx's parse errors show the URL with its password masked.
		return nil, fmt.Errorf("store: PostgreSQL connection string: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: connect to PostgreSQL: %w", err)
	}
	p := &Postgres{pool: pool, log: opts.Logger.Named("store")}
	if err := p.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return p, nil
}

// migrate applies the embedded migrations newer than the schema_version
// table's, in one transaction that holds an advisory lock of the schema
// (current_schema()) while it reads the version and migrates.
func (p *Postgres) migrate(ctx context.Context) error {
	ms, err := loadMigrations(postgresMigrations, "migrations/postgres")
	if err != nil {
		return err
	}
	var applied []migration
	err = p.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext('tradebridge store migrations ' || current_schema()))"); err != nil {
			return fmt.Errorf("store: lock the schema for migrations: %w", err)
		}
		if _, err := tx.Exec(ctx, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"); err != nil {
			return fmt.Errorf("store: create schema_version: %w", err)
		}
		current, err := postgresVersion(ctx, tx)
		if err != nil {
			return err
		}
		if current > len(ms) {
			return fmt.Errorf("%w: version %d, this relay knows %d", ErrSchemaTooNew, current, len(ms))
		}
		for _, m := range ms[current:] {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("store: migration %s: %w", m.name, err)
			}
			applied = append(applied, m)
		}
		if len(applied) == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, "DELETE FROM schema_version"); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "INSERT INTO schema_version (version) VALUES ($1)", len(ms))
		return err
	})
	if err != nil {
		if errors.Is(err, ErrSchemaTooNew) {
			return err
		}
		return fmt.Errorf("store: migrate: %w", err)
	}
	for _, m := range applied {
		p.log.Info("schema migrated", zap.Int("version", m.version), zap.String("migration", m.name))
	}
	return nil
}

// postgresVersion reads schema_version: 0 when it holds no row.
func postgresVersion(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (int, error) {
	var v int
	err := q.QueryRow(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_version").Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("store: read schema version: %w", err)
	}
	return v, nil
}

// SchemaVersion reports the database's schema version.
func (p *Postgres) SchemaVersion(ctx context.Context) (int, error) {
	return postgresVersion(ctx, p.pool)
}

func (p *Postgres) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, p.pool, fn)
}

// pgCode reports err's SQLSTATE, "" if it has none.
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// SQLSTATEs the store maps to its errors.
const (
	pgUniqueViolation     = "23505"
	pgForeignKeyViolation = "23503"
)

// pgConflict maps a unique violation to ErrConflict.
func pgConflict(err error) error {
	if pgCode(err) == pgUniqueViolation {
		return ErrConflict
	}
	return err
}

// pgNoUser maps a foreign-key violation, always a user that does not
// exist, to ErrNotFound.
func pgNoUser(err error) error {
	if pgCode(err) == pgForeignKeyViolation {
		return ErrNotFound
	}
	return err
}

// pgFound maps pgx.ErrNoRows to ErrNotFound.
func pgFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	return err
}

// pgAffected is affected for a pgx command tag.
func pgAffected(tag pgconn.CommandTag, err error) error {
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// optMillis reads a nullable milliseconds column: nil is the zero time.
func optMillis(ms *int64) time.Time {
	if ms == nil {
		return time.Time{}
	}
	return time.UnixMilli(*ms).UTC()
}

func fromMS(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// pgUserExists reports ErrNotFound when the user does not exist.
func pgUserExists(ctx context.Context, tx pgx.Tx, userID string) error {
	var one int
	return pgFound(tx.QueryRow(ctx, "SELECT 1 FROM users WHERE id = $1", userID).Scan(&one))
}

// CreateUser implements Store.
func (p *Postgres) CreateUser(ctx context.Context, u User, tokens ...Token) error {
	err := p.tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx,
			`INSERT INTO users (id, name, plan, disabled, created_at, management_closed, withheld_features)
			 VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			u.ID, u.Name, u.Plan, u.Disabled, millis(u.CreatedAt), u.ManagementClosed, encodeFeatures(u.Withheld))
		if err != nil {
			return pgConflict(err)
		}
		for _, t := range tokens {
			if t.UserID != u.ID {
				return fmt.Errorf("store: token for user %s given with user %s", t.UserID, u.ID)
			}
			if err := pgInsertToken(ctx, tx, t); err != nil {
				return err
			}
		}
		return nil
	})
	return wrap("create user", err)
}

func pgInsertToken(ctx context.Context, tx pgx.Tx, t Token) error {
	_, err := tx.Exec(ctx,
		"INSERT INTO tokens (hash, user_id, kind, profile, created_at) VALUES ($1, $2, $3, $4, $5)",
		t.Hash, t.UserID, t.Kind, profileOrDefault(t.Profile), millis(t.CreatedAt))
	return pgConflict(err)
}

func pgScanUser(row pgx.Row, extra ...any) (User, error) {
	var u User
	var created int64
	var withheld string
	dest := append([]any{&u.ID, &u.Name, &u.Plan, &u.Disabled, &created, &u.ManagementClosed, &withheld}, extra...)
	if err := row.Scan(dest...); err != nil {
		return User{}, pgFound(err)
	}
	u.CreatedAt = fromMS(created)
	var err error
	if u.Withheld, err = decodeFeatures(withheld); err != nil {
		return User{}, err
	}
	return u, nil
}

// SetUserAccess implements Store.
func (p *Postgres) SetUserAccess(ctx context.Context, userID string, managementClosed bool, withheld []string) error {
	tag, err := p.pool.Exec(ctx, "UPDATE users SET management_closed = $1, withheld_features = $2 WHERE id = $3",
		managementClosed, encodeFeatures(withheld), userID)
	return wrap("set user access", pgAffected(tag, err))
}

// User implements Store.
func (p *Postgres) User(ctx context.Context, id string) (User, error) {
	u, err := pgScanUser(p.pool.QueryRow(ctx, "SELECT "+userColumns+" FROM users WHERE id = $1", id))
	return u, wrap("read user", err)
}

// SetUserDisabled implements Store.
func (p *Postgres) SetUserDisabled(ctx context.Context, id string, disabled bool) error {
	tag, err := p.pool.Exec(ctx, "UPDATE users SET disabled = $1 WHERE id = $2", disabled, id)
	return wrap("update user", pgAffected(tag, err))
}

// AddToken implements Store.
func (p *Postgres) AddToken(ctx context.Context, t Token) error {
	err := p.tx(ctx, func(tx pgx.Tx) error {
		if err := pgUserExists(ctx, tx, t.UserID); err != nil {
			return err
		}
		return pgNoUser(pgInsertToken(ctx, tx, t))
	})
	return wrap("add token", err)
}

// LookupToken implements Store.
func (p *Postgres) LookupToken(ctx context.Context, hash string) (Token, User, error) {
	t := Token{Hash: hash}
	var created int64
	var revoked *int64
	u, err := pgScanUser(p.pool.QueryRow(ctx,
		"SELECT "+userColumns+", tokens.kind, tokens.profile, tokens.created_at, tokens.revoked_at"+
			" FROM tokens JOIN users ON users.id = tokens.user_id WHERE tokens.hash = $1", hash),
		&t.Kind, &t.Profile, &created, &revoked)
	if err != nil {
		return Token{}, User{}, wrap("look up token", err)
	}
	t.UserID = u.ID
	t.CreatedAt = fromMS(created)
	t.RevokedAt = optMillis(revoked)
	return t, u, nil
}

// SetTokenProfile implements Store.
func (p *Postgres) SetTokenProfile(ctx context.Context, hash, profile string) error {
	tag, err := p.pool.Exec(ctx, "UPDATE tokens SET profile = $1 WHERE hash = $2", profileOrDefault(profile), hash)
	return wrap("set token profile", pgAffected(tag, err))
}

// ListTokens implements Store.
func (p *Postgres) ListTokens(ctx context.Context, userID string) ([]Token, error) {
	if _, err := p.User(ctx, userID); err != nil {
		return nil, err
	}
	rows, err := p.pool.Query(ctx,
		"SELECT hash, kind, profile, created_at, revoked_at FROM tokens WHERE user_id = $1 ORDER BY created_at, hash", userID)
	if err != nil {
		return nil, wrap("list tokens", err)
	}
	defer rows.Close()
	var out []Token
	for rows.Next() {
		t := Token{UserID: userID}
		var created int64
		var revoked *int64
		if err := rows.Scan(&t.Hash, &t.Kind, &t.Profile, &created, &revoked); err != nil {
			return nil, wrap("list tokens", err)
		}
		t.CreatedAt = fromMS(created)
		t.RevokedAt = optMillis(revoked)
		out = append(out, t)
	}
	return out, wrap("list tokens", rows.Err())
}

// RevokeToken implements Store.
func (p *Postgres) RevokeToken(ctx context.Context, hash string, at time.Time) error {
	tag, err := p.pool.Exec(ctx,
		"UPDATE tokens SET revoked_at = COALESCE(revoked_at, $1) WHERE hash = $2", millis(at), hash)
	return wrap("revoke token", pgAffected(tag, err))
}

// RevokeUserTokens implements Store.
func (p *Postgres) RevokeUserTokens(ctx context.Context, userID, kind string, at time.Time) (int, error) {
	var n int64
	err := p.tx(ctx, func(tx pgx.Tx) error {
		if err := pgUserExists(ctx, tx, userID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx,
			"UPDATE tokens SET revoked_at = $1 WHERE user_id = $2 AND revoked_at IS NULL AND ($3::text = '' OR kind = $3::text)",
			millis(at), userID, kind)
		n = tag.RowsAffected()
		return err
	})
	return int(n), wrap("revoke tokens", err)
}

// Ping implements Store.
func (p *Postgres) Ping(ctx context.Context) error {
	return wrap("ping", p.pool.Ping(ctx))
}

// Close implements Store. It waits for the connections in use to be
// returned to the pool.
func (p *Postgres) Close() error {
	p.closeOnce.Do(p.pool.Close)
	return nil
}
