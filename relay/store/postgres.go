package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"go.uber.org/zap"
)

// PostgresOptions configures OpenPostgres.
type PostgresOptions struct {
	// URL is the database's connection string, postgres://… or
	// postgresql://… (pgx's keywords and query parameters, including
	// run-time parameters such as search_path, and pgxpool's
	// pool_max_conns, pool_max_conn_lifetime and pool_max_conn_idle_time).
	// Required.
	URL string
	// Logger receives migration notices. Nil means no logging.
	Logger *zap.Logger
	// MaxConns bounds the pool's connections. 0 means pgxpool's default
	// (or the URL's pool_max_conns).
	MaxConns int32
}

// Postgres is the Store of a relay that runs as several nodes sharing one
// PostgreSQL database, through pgx's database/sql driver. Its schema is
// the SQLite one, with times as unix milliseconds in BIGINT columns, so
// that they round-trip exactly as they do in SQLite. Transactions are
// READ COMMITTED; a write that must see the row it changes as it is now
// locks it (INSERT … ON CONFLICT, UPDATE … WHERE, SELECT … FOR UPDATE), so
// that concurrent nodes queue on the row. The times the store decides
// itself (lease expiry, forgetting expired OAuth states, SetConnections)
// are by the database's clock, now(), so that the nodes' clocks need not
// agree.
type Postgres struct{ *sqlStore }

var _ Store = (*Postgres)(nil)

// postgresDialect is PostgreSQL's part of the store.
var postgresDialect = &dialect{
	name:     "PostgreSQL",
	index:    postgresIndex,
	numbered: true,
	fragments: map[string]string{
		// The database's clock in unix milliseconds.
		"now":            "(floor(extract(epoch FROM now()) * 1000)::bigint)",
		"forUpdate":      " FOR UPDATE",
		"forNoKeyUpdate": " FOR NO KEY UPDATE",
		// The journal's order among equal times: an identity column.
		"journalOrder": "seq",
	},
	isUnique:     func(err error) bool { return pgCode(err) == pgUniqueViolation },
	isForeignKey: func(err error) bool { return pgCode(err) == pgForeignKeyViolation },
	textBytes: func(b []byte) any {
		if b == nil {
			return []byte{} // recorded, if empty
		}
		return b
	},
	migrations:    postgresMigrations,
	migrationsDir: "migrations/postgres",
	// An advisory lock of the schema (current_schema()), released when
	// the migration transaction ends; then the version table, if the
	// schema has none yet.
	lockMigrations: []string{
		"SELECT pg_advisory_xact_lock(hashtext('tradebridge store migrations ' || current_schema()))",
		"CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)",
	},
	schemaVersion: "SELECT COALESCE(MAX(version), 0) FROM schema_version",
	setSchemaVersion: func(v int) string {
		return fmt.Sprintf("DELETE FROM schema_version; INSERT INTO schema_version (version) VALUES (%d)", v)
	},
}

// SQLSTATEs the store maps to its errors.
const (
	pgUniqueViolation     = "23505"
	pgForeignKeyViolation = "23503"
)

// pgCode reports err's SQLSTATE, "" if it has none.
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

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
	// pgxpool's parser takes the pool's settings out of the URL and leaves
	// the connections' to pgx.
	cfg, err := pgxpool.ParseConfig(opts.URL)
	if err != nil {
		// pgx's parse errors show the URL with its password masked.
		return nil, fmt.Errorf("store: PostgreSQL connection string: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	db := stdlib.OpenDB(*cfg.ConnConfig)
	db.SetMaxOpenConns(int(cfg.MaxConns))
	db.SetMaxIdleConns(int(cfg.MaxConns))
	db.SetConnMaxLifetime(cfg.MaxConnLifetime)
	db.SetConnMaxIdleTime(cfg.MaxConnIdleTime)
	s, err := openSQL(ctx, db, postgresDialect, opts.Logger)
	if err != nil {
		return nil, err
	}
	return &Postgres{s}, nil
}
