package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"

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

// SQLite is the Store of a one-machine relay: one database file, in WAL
// mode with synchronous FULL, so that a commit is on disk before the call
// returns. Every write transaction is BEGIN IMMEDIATE (the DSN's
// _txlock=immediate): concurrent writers queue on SQLite's one write lock,
// and each sees what the ones before it committed. The store's clock is
// SQLite's, the machine's.
type SQLite struct{ *sqlStore }

var _ Store = (*SQLite)(nil)

// sqliteDialect is SQLite's part of the store.
var sqliteDialect = &dialect{
	name:  "SQLite",
	index: sqliteIndex,
	fragments: map[string]string{
		// The store's clock in unix milliseconds ('now' has millisecond
		// precision and is one value within a statement).
		"now": "CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER)",
		// A transaction holds the database's write lock from its BEGIN:
		// there are no row locks to take.
		"forUpdate":      "",
		"forNoKeyUpdate": "",
		// The journal's order among equal times.
		"journalOrder": "rowid",
	},
	isUnique:         isConstraint,
	isForeignKey:     isForeignKey,
	textBytes:        func(b []byte) any { return string(b) },
	migrations:       sqliteMigrations,
	migrationsDir:    "migrations",
	schemaVersion:    "PRAGMA user_version",
	setSchemaVersion: func(v int) string { return fmt.Sprintf("PRAGMA user_version = %d", v) },
}

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
	s, err := openSQL(ctx, db, sqliteDialect, opts.Logger)
	if err != nil {
		return nil, err
	}
	return &SQLite{s}, nil
}

// maxOpenConns bounds the SQLite store's connections (each holds the
// database, its -wal and -shm files open).
const maxOpenConns = 32

// FileMode is the mode of the database file: it holds every user's token
// hashes and the records of their orders, for the relay's user alone.
// SQLite gives its -wal and -shm files the database file's mode.
const FileMode = dbfile.Mode

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

// isForeignKey reports a FOREIGN KEY violation.
func isForeignKey(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}
