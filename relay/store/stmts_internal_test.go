package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Every constant query of the package is prepared once when the store
// opens: a query SQLite cannot compile fails here rather than at its first
// call.
func TestEveryConstantQueryIsPrepared(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, Options{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	texts := constQueries()
	require.NotEmpty(t, texts)
	require.Len(t, s.stmts.list, len(texts))
	for i, st := range s.stmts.list {
		require.NotNil(t, st, "query %d does not prepare: %s", i+1, texts[i][sqliteIndex])
	}
}

// The write gate lets one writer in at a time, hands over as soon as it
// is free, and a waiter gives up when its context ends.
func TestWriteGate(t *testing.T) {
	t.Parallel()
	g := make(writeGate, 1)
	require.NoError(t, g.enter(context.Background()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, g.enter(ctx), context.DeadlineExceeded, "a second writer waits, and gives up with its context")
	entered := make(chan error, 1)
	go func() { entered <- g.enter(context.Background()) }()
	g.leave()
	require.NoError(t, <-entered, "the waiter enters once the first leaves")
	g.leave()

	var none writeGate
	require.NoError(t, none.enter(context.Background()), "no gate lets everyone through")
	none.leave()
}
