package store

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A statement is written once: SQLite keeps its ? placeholders,
// PostgreSQL numbers them, and each fills the {slots} with its own SQL;
// quoted text is left as it is.
func TestQueryRendering(t *testing.T) {
	t.Parallel()
	q := sqlText("SELECT node FROM t WHERE a = ? AND b <> '?{x}' AND (? = '' OR c = ?) AND d > {now}{forUpdate}")
	require.Equal(t,
		"SELECT node FROM t WHERE a = ? AND b <> '?{x}' AND (? = '' OR c = ?) AND d > "+
			sqliteDialect.fragments["now"],
		q.text[sqliteIndex])
	require.Equal(t,
		"SELECT node FROM t WHERE a = $1 AND b <> '?{x}' AND ($2 = '' OR c = $3) AND d > "+
			postgresDialect.fragments["now"]+" FOR UPDATE",
		q.text[postgresIndex])

	require.Panics(t, func() { sqlText("SELECT {nowMS}") }, "a slot no dialect fills")
	require.Panics(t, func() { sqlText("SELECT 'unterminated") })
}

// Every dialect fills the same slots, so that every statement renders in
// each.
func TestDialectsFillTheSameSlots(t *testing.T) {
	t.Parallel()
	want := slices.Sorted(maps.Keys(sqliteDialect.fragments))
	for _, d := range dialects {
		require.Equal(t, want, slices.Sorted(maps.Keys(d.fragments)), d.name)
		require.Equal(t, d, dialects[d.index], "%s is at its index", d.name)
	}
}

// SQLite's clock, the store's on one machine, is the machine's, in
// milliseconds.
func TestSQLiteClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, Options{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	before := time.Now().UnixMilli()
	var now int64
	require.NoError(t, s.row(ctx, sqlText("SELECT {now}")).Scan(&now))
	after := time.Now().UnixMilli()
	require.GreaterOrEqual(t, now, before-1)
	require.LessOrEqual(t, now, after+1)
}
