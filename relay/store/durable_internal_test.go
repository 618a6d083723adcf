package store

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every connection of the pool runs in WAL with synchronous FULL and takes
// the write lock at BEGIN: a commit is on disk when WriteResources
// returns, and concurrent writers queue instead of failing on upgrade.
func TestEveryConnectionIsDurable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, Options{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })

	// Hold several connections at once so that the pool opens new ones.
	for range 3 {
		c, err := s.db.Conn(ctx)
		require.NoError(t, err)
		defer c.Close()
		var mode string
		require.NoError(t, c.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode))
		require.Equal(t, "wal", strings.ToLower(mode))
		var sync int
		require.NoError(t, c.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync))
		require.Equal(t, 2, sync, "synchronous FULL")
	}

	// A write transaction holds the write lock from its BEGIN.
	tx, err := s.db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	var one int
	require.NoError(t, tx.QueryRowContext(ctx, "SELECT 1").Scan(&one))
	c, err := s.db.Conn(ctx)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.ExecContext(ctx, "PRAGMA busy_timeout = 0")
	require.NoError(t, err)
	_, err = c.ExecContext(ctx, "BEGIN IMMEDIATE")
	require.Error(t, err, "another writer cannot begin while the first holds the lock")
}
