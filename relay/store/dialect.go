package store

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
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
type query struct{ text [numDialects]string }

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
// transaction.
type conn struct {
	q querier
	d *dialect
}

func (c conn) exec(ctx context.Context, q query, args ...any) (sql.Result, error) {
	return c.q.ExecContext(ctx, q.text[c.d.index], args...)
}

func (c conn) row(ctx context.Context, q query, args ...any) *sql.Row {
	return c.q.QueryRowContext(ctx, q.text[c.d.index], args...)
}

func (c conn) rows(ctx context.Context, q query, args ...any) (*sql.Rows, error) {
	return c.q.QueryContext(ctx, q.text[c.d.index], args...)
}

// prepare compiles q once, for a statement run many times (in a
// transaction: until it ends). The caller closes it.
func (c conn) prepare(ctx context.Context, q query) (*sql.Stmt, error) {
	return c.q.PrepareContext(ctx, q.text[c.d.index])
}
