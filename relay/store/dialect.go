package store

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"sync"
)

// A dialect is what one database needs of the store beyond the SQL the
// two share: its statements' placeholders, the fragments of SQL that
// differ, how it reports a unique or foreign-key violation, and how its
// schema version is kept and its migrations serialised. The store's
// methods are written once, over database/sql, in the shared SQL; the
// dialects are sqliteDialect (sqlite.go) and postgresDialect
// (postgres.go).
type dialect struct {
	name string
	// index is the dialect's place in every query's text.
	index int
	// numbered rewrites the ? placeholders as $1, $2, … (PostgreSQL).
	numbered bool
	// fragments fill the {name} slots of the shared statements.
	fragments map[string]string

	// isUnique reports a unique or primary-key violation; isForeignKey a
	// foreign-key violation, which in this schema is always a user that
	// does not exist.
	isUnique, isForeignKey func(error) bool
	// textBytes is the argument for a column that holds the agents'
	// diagnostics (JSON): TEXT in SQLite's schema, BYTEA in PostgreSQL's.
	textBytes func([]byte) any

	// migrations holds the dialect's numbered migrations in migrationsDir.
	migrations    fs.FS
	migrationsDir string
	// lockMigrations run first in the migration transaction, so that one
	// store at a time reads the schema version and migrates.
	lockMigrations []string
	// schemaVersion reads the schema version; setSchemaVersion is the
	// statement that records v.
	schemaVersion    string
	setSchemaVersion func(v int) string
}

// The dialects, by index.
const (
	sqliteIndex = iota
	postgresIndex
	numDialects
)

// dialects are every dialect, by index, for building the queries.
var dialects = [numDialects]*dialect{sqliteIndex: sqliteDialect, postgresIndex: postgresDialect}

// A query is one of the store's statements in the text of each dialect,
// built once, when the package loads.
type query struct {
	text [numDialects]string
	// id names a constant query (sqlConst) in the stmtCache; 0 for one
	// built at run time.
	id int
}

// sqlText builds a query from the shared text: ? placeholders and {name}
// slots, which each dialect fills with its fragment of that name. It
// panics on a slot no dialect fills, so that a typo fails at start-up.
func sqlText(shared string) query {
	var q query
	for _, d := range dialects {
		q.text[d.index] = d.render(shared)
	}
	return q
}

// render is the shared text in d's SQL.
func (d *dialect) render(shared string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(shared); i++ {
		c := shared[i]
		switch {
		case c == '\'':
			end := strings.IndexByte(shared[i+1:], '\'')
			if end < 0 {
				panic(fmt.Sprintf("store: unterminated string in %q", shared))
			}
			b.WriteString(shared[i : i+end+2])
			i += end + 1
		case c == '{':
			end := strings.IndexByte(shared[i:], '}')
			if end < 0 {
				panic(fmt.Sprintf("store: unterminated slot in %q", shared))
			}
			frag, ok := d.fragments[shared[i+1:i+end]]
			if !ok {
				panic(fmt.Sprintf("store: the %s dialect has no fragment %s in %q", d.name, shared[i:i+end+1], shared))
			}
			b.WriteString(frag)
			i += end
		case c == '?' && d.numbered:
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// conflict maps a unique violation to ErrConflict.
func (d *dialect) conflict(err error) error {
	if err != nil && d.isUnique(err) {
		return ErrConflict
	}
	return err
}

// noUser maps a foreign-key violation to ErrNotFound.
func (d *dialect) noUser(err error) error {
	if err != nil && d.isForeignKey(err) {
		return ErrNotFound
	}
	return err
}

// querier is what *sql.DB and *sql.Tx share.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

// conn runs queries in the text of its dialect, on the database or in a
// transaction (tx), through the store's prepared statements (stmts) once
// it has them.
type conn struct {
	q querier
	d *dialect
	// stmts, when set, prepares each query once; nil runs the text as
	// it is (while the schema is migrated).
	stmts *stmtCache
	// tx is the transaction the conn runs in, or nil.
	tx *sql.Tx
	// writers, outside a transaction, is the gate a statement that may
	// write passes (exec); nil lets every one through.
	writers writeGate
}

// writeGate lets one writer at a time into the SQLite store, in the
// process: SQLite writes one transaction at a time anyway, and a writer
// that finds the database locked waits in SQLite's busy handler, which
// sleeps in steps of milliseconds; waiting here instead hands the lock
// over as soon as it is free, and a waiter gives up when its context
// ends. Read-only transactions and reads do not pass it (WAL readers do
// not wait for writers). The PostgreSQL store has none.
type writeGate chan struct{}

// enter waits for the gate, or for ctx to end.
func (g writeGate) enter(ctx context.Context) error {
	if g == nil {
		return nil
	}
	select {
	case g <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// leave lets the next writer in.
func (g writeGate) leave() {
	if g != nil {
		<-g
	}
}

// stmt returns q's prepared statement for c (in its transaction, when it
// runs in one), or nil when c has no cache.
func (c conn) stmt(ctx context.Context, q query) (*sql.Stmt, error) {
	if c.stmts == nil {
		return nil, nil
	}
	if q.id == 0 || q.id > len(c.stmts.list) || c.stmts.list[q.id-1] == nil {
		return nil, nil
	}
	st := c.stmts.list[q.id-1]
	if c.tx == nil {
		return st, nil
	}
	return c.tx.StmtContext(ctx, st), nil
}

func (c conn) exec(ctx context.Context, q query, args ...any) (sql.Result, error) {
	if c.tx == nil {
		if err := c.writers.enter(ctx); err != nil {
			return nil, err
		}
		defer c.writers.leave()
	}
	st, err := c.stmt(ctx, q)
	switch {
	case err != nil:
		return nil, err
	case st != nil:
		return st.ExecContext(ctx, args...)
	}
	return c.q.ExecContext(ctx, q.text[c.d.index], args...)
}

func (c conn) row(ctx context.Context, q query, args ...any) *sql.Row {
	if st, err := c.stmt(ctx, q); err == nil && st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return c.q.QueryRowContext(ctx, q.text[c.d.index], args...)
}

func (c conn) rows(ctx context.Context, q query, args ...any) (*sql.Rows, error) {
	st, err := c.stmt(ctx, q)
	switch {
	case err != nil:
		return nil, err
	case st != nil:
		return st.QueryContext(ctx, args...)
	}
	return c.q.QueryContext(ctx, q.text[c.d.index], args...)
}

// stmtCache holds the store's constant queries (sqlConst), each prepared
// once on the database when the store opens: database/sql prepares a
// statement on each connection of the pool the first time it runs there
// and keeps it, and a transaction takes it over (Tx.StmtContext), so that
// a query is compiled once per connection rather than on every call.
// Queries built at run time (sqlText: filters, lists) run as text.
type stmtCache struct {
	list []*sql.Stmt // by query id - 1; nil where the dialect could not prepare it
}

// newStmtCache prepares every constant query in dialect d on db. A query
// the database refuses to prepare (one of another dialect's) runs as text.
func newStmtCache(ctx context.Context, db *sql.DB, d *dialect) *stmtCache {
	texts := constQueries()
	c := &stmtCache{list: make([]*sql.Stmt, len(texts))}
	for i, t := range texts {
		if st, err := db.PrepareContext(ctx, t[d.index]); err == nil {
			c.list[i] = st
		}
	}
	return c
}

// registry lists the constant queries' texts, by id - 1.
var registry struct {
	sync.Mutex
	texts [][numDialects]string
}

// sqlConst is sqlText for a query of the package's constants, which the
// store prepares once (stmtCache).
func sqlConst(shared string) query {
	q := sqlText(shared)
	registry.Lock()
	defer registry.Unlock()
	registry.texts = append(registry.texts, q.text)
	q.id = len(registry.texts)
	return q
}

// constQueries returns the texts of the constant queries, by id - 1.
func constQueries() [][numDialects]string {
	registry.Lock()
	defer registry.Unlock()
	return registry.texts[:len(registry.texts):len(registry.texts)]
}

// prepare compiles q once, for a statement run many times (in a
// transaction: until it ends). The caller closes it.
func (c conn) prepare(ctx context.Context, q query) (*sql.Stmt, error) {
	return c.q.PrepareContext(ctx, q.text[c.d.index])
}
