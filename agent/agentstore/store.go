// Package agentstore is the agent's state file: one SQLite database in the
// agent's data folder holding everything the agent must not forget across
// a restart or a crash. It keeps
//
//   - buckets of keyed values (Put, Delete, Load): the engines' state
//     (engine.Store) and the operations' strategy-tag ownership
//     (ops.Persist);
//   - the last management configuration applied and its version
//     (SaveConfig, LoadConfig);
//   - the dispatcher's journal of write outcomes (BeginWrite,
//     FinishWrite, LoadWrites, PruneWrites: a dispatch.Journal), so that
//     a write repeated after a restart runs at most once.
//
// A write that returned nil survives a crash of the agent's process (the
// database runs in WAL mode with synchronous=NORMAL); a power loss or an
// operating-system crash may lose the last writes before it, never
// corrupt the file. The file is the agent's user's alone (mode 0600 on
// Unix), and one Store's alone while it is open: a second agent process
// on the same file is refused (ErrInUse). A Store is safe for concurrent
// use; it runs no goroutine of its own.
package agentstore

import (
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.uber.org/zap"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"tradebridge/internal/dbfile"
)

//go:embed migrations/*.sql
var migrations embed.FS

// DefaultFileName is the state file's name inside the agent's data folder.
const DefaultFileName = "agent-state.db"

// FileMode is the mode of the state file and of SQLite's -wal and -shm
// files next to it: they hold trading data, for the agent's user alone.
const FileMode = dbfile.Mode

// busyTimeoutMillis is how long a statement waits for another connection
// (another process opening the same file) to release its lock.
const busyTimeoutMillis = 5000

// ErrSchemaTooNew is returned by Open for a file written by a newer agent,
// whose schema this agent does not know.
var ErrSchemaTooNew = errors.New("agentstore: the state file was written by a newer agent")

// Options configure Open.
type Options struct {
	// Path is the state file; required. Its folder is created (mode 0700)
	// when missing. Usually filepath.Join(dataDir, DefaultFileName).
	Path string
	// Logger receives migration and file-mode notices; nil discards them.
	Logger *zap.Logger
}

// Store is the agent's state file, open.
type Store struct {
	db        *sql.DB
	path      string
	log       *zap.Logger
	closeOnce sync.Once
	closeErr  error
}

// Open opens the state file at opts.Path, creating it when missing, and
// migrates it to this agent's schema. It refuses a file written by a newer
// agent (ErrSchemaTooNew).
func Open(opts Options) (*Store, error) {
	if opts.Path == "" {
		return nil, errors.New("agentstore: Options.Path is required")
	}
	if strings.ContainsRune(opts.Path, '?') {
		return nil, errors.New("agentstore: Options.Path must not contain '?'")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	log := opts.Logger.Named("agentstore")
	if err := os.MkdirAll(filepath.Dir(opts.Path), 0o700); err != nil {
		return nil, fmt.Errorf("agentstore: create the data folder: %w", err)
	}
	if err := dbfile.Restrict(opts.Path, log); err != nil {
		return nil, err
	}
	// A plain path (not a file: URI) reaches SQLite as it is on every
	// system; the driver reads the parameters after '?'.
	dsn := opts.Path + "?_txlock=immediate" +
		"&_pragma=busy_timeout(" + strconv.Itoa(busyTimeoutMillis) + ")" +
		"&_pragma=locking_mode(EXCLUSIVE)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("agentstore: open %s: %w", opts.Path, err)
	}
	// One connection: SQLite has one writer at a time anyway, and the
	// pragmas above then hold for every statement.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	s := &Store{db: db, path: opts.Path, log: log}
	if err := s.check(); err != nil {
		db.Close()
		return nil, inUse(err, opts.Path)
	}
	if err := s.hold(); err != nil {
		db.Close()
		return nil, inUse(err, opts.Path)
	}
	if err := s.migrate(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Path returns the state file's path.
func (s *Store) Path() string { return s.path }

// Close closes the state file. Calls after the first return its result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if err := s.db.Close(); err != nil {
			s.closeErr = fmt.Errorf("agentstore: close: %w", err)
		}
	})
	return s.closeErr
}

// check confirms that the file is a database in WAL mode.
func (s *Store) check() error {
	var mode string
	if err := s.db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("agentstore: open %s: %w", s.path, err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("agentstore: open %s: journal mode is %q, not wal", s.path, mode)
	}
	return nil
}

// ErrInUse is returned by Open for a state file another agent process
// holds open: two agents acting on one state (and on one account) would
// each copy, flatten and answer writes for themselves.
var ErrInUse = errors.New("agentstore: the state file is in use by another agent process")

// hold takes the file for this Store alone, until Close: the connection
// runs in SQLite's EXCLUSIVE locking mode, and a first write takes the
// lock it then keeps. Another process opening the file waits up to the
// busy timeout for it, then fails with ErrInUse.
func (s *Store) hold() error {
	if err := s.tx(func(*sql.Tx) error { return nil }); err != nil { // BEGIN IMMEDIATE takes the write lock
		return fmt.Errorf("agentstore: open %s: %w", s.path, err)
	}
	return nil
}

// inUse turns the error of a file another process holds into ErrInUse.
func inUse(err error, path string) error {
	if strings.Contains(err.Error(), "SQLITE_BUSY") || strings.Contains(err.Error(), "database is locked") {
		return fmt.Errorf("%w: %s", ErrInUse, path)
	}
	return err
}

// SchemaVersion reports the state file's schema version.
func (s *Store) SchemaVersion() (int, error) {
	var v int
	if err := s.db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("agentstore: read the schema version: %w", err)
	}
	return v, nil
}

// migrate applies the embedded migrations newer than the file's
// user_version, each in its own transaction with the version it sets.
func (s *Store) migrate() error {
	files, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("agentstore: list migrations: %w", err)
	}
	sort.Strings(files)
	current, err := s.SchemaVersion()
	if err != nil {
		return err
	}
	if current > len(files) {
		return fmt.Errorf("%w: %s has schema version %d, this agent knows up to %d; run the newer agent, or stop the agent and delete the file to start afresh",
			ErrSchemaTooNew, s.path, current, len(files))
	}
	for i := current; i < len(files); i++ {
		want := i + 1
		name := filepath.Base(files[i])
		if n, err := strconv.Atoi(strings.SplitN(name, "_", 2)[0]); err != nil || n != want {
			return fmt.Errorf("agentstore: migration %s is out of sequence (want %04d)", name, want)
		}
		body, err := migrations.ReadFile(files[i])
		if err != nil {
			return fmt.Errorf("agentstore: read migration %s: %w", name, err)
		}
		err = s.tx(func(tx *sql.Tx) error {
			if _, err := tx.Exec(string(body)); err != nil {
				return err
			}
			_, err := tx.Exec(fmt.Sprintf("PRAGMA user_version = %d", want))
			return err
		})
		if err != nil {
			return fmt.Errorf("agentstore: migration %s: %w", name, err)
		}
		s.log.Info("state file schema migrated", zap.Int("version", want), zap.String("migration", name))
	}
	return nil
}

// tx runs fn in a transaction (begun IMMEDIATE: it holds the write lock
// from the start) and commits it, or rolls it back when fn fails.
func (s *Store) tx(fn func(*sql.Tx) error) error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
