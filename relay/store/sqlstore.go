package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
)

// sqlStore is the Store over database/sql, in the SQL of its dialect:
// SQLite and Postgres are each one of it. Every write is one statement or
// one transaction, durable when it returns; a write that must see the row
// it changes as it is now makes that so in one statement (INSERT … ON
// CONFLICT, UPDATE … WHERE version = ?) or locks the row it reads inside
// its transaction, so that concurrent writers queue on the row (or on
// SQLite's one write lock) instead of overwriting each other.
type sqlStore struct {
	// conn runs queries on the database, outside any transaction.
	conn
	db        *sql.DB
	log       *zap.Logger
	closeOnce sync.Once
	closeErr  error
}

// openSQL returns the store over db in dialect d, its schema migrated;
// it closes db when it fails.
func openSQL(ctx context.Context, db *sql.DB, d *dialect, log *zap.Logger) (*sqlStore, error) {
	s := &sqlStore{conn: conn{q: db, d: d}, db: db, log: log.Named("store")}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	// Statements are cached once the schema stands: none is prepared
	// over a table a migration still changes.
	s.conn.stmts = newStmtCache(ctx, db, d)
	if d == sqliteDialect {
		s.conn.writers = make(writeGate, 1)
	}
	return s, nil
}

// tx runs fn in a read-write transaction and commits it when fn returns
// nil.
func (s *sqlStore) tx(ctx context.Context, fn func(conn) error) error {
	return s.txWith(ctx, nil, fn)
}

func (s *sqlStore) txWith(ctx context.Context, opts *sql.TxOptions, fn func(conn) error) error {
	if opts == nil || !opts.ReadOnly {
		if err := s.writers.enter(ctx); err != nil {
			return err
		}
		defer s.writers.leave()
	}
	tx, err := s.db.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	if err := fn(conn{q: tx, d: s.d, stmts: s.stmts, tx: tx}); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// SchemaVersion reports the database's schema version.
func (s *sqlStore) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	if err := s.db.QueryRowContext(ctx, s.d.schemaVersion).Scan(&v); err != nil {
		return 0, fmt.Errorf("store: read schema version: %w", err)
	}
	return v, nil
}

// Ping implements Store.
func (s *sqlStore) Ping(ctx context.Context) error {
	return wrap("ping", s.db.PingContext(ctx))
}

// Close implements Store. It waits for the queries under way to finish.
func (s *sqlStore) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.db.Close() })
	return s.closeErr
}

// The store keeps times as unix milliseconds, so that they round-trip
// exactly on every database.
func millis(t time.Time) int64 { return t.UnixMilli() }

func fromMS(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// fromMillis reads a nullable milliseconds column: NULL is the zero time.
func fromMillis(ms sql.NullInt64) time.Time {
	if !ms.Valid {
		return time.Time{}
	}
	return fromMS(ms.Int64)
}

// scanner is a row to scan: *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// all runs q on c and returns every row it answers, read by scan.
func all[T any](ctx context.Context, c conn, scan func(scanner) (T, error), q query, args ...any) ([]T, error) {
	rows, err := c.rows(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// orNull stores a nil slice as NULL.
func orNull(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}

// nullable stores "" as NULL.
func nullable(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// affected reports ErrNotFound when a statement changed no row.
func affected(res sql.Result, err error) error {
	n, err := changed(res, err)
	if err == nil && n == 0 {
		return ErrNotFound
	}
	return err
}

// changed returns how many rows a statement changed.
func changed(res sql.Result, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// wrap adds the operation to an error, keeping the sentinels matchable.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("store: %s: %w", op, err)
}
