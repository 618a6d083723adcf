package store_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"tradebridge/relay/store"
)

// requireModes checks the mode of the database and of SQLite's -wal and
// -shm files next to it, which all exist while the store is open.
func requireModes(t *testing.T, dir string, want os.FileMode) {
	t.Helper()
	for _, name := range []string{store.FileName, store.FileName + "-wal", store.FileName + "-shm"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err, name)
		require.Equal(t, want, fi.Mode().Perm(), "%s is %v", name, fi.Mode().Perm())
	}
}

// The database holds every user's token hashes and order records: it and
// its -wal and -shm files are the relay user's alone (0600), whatever the
// umask, and an existing file open to others is taken down to 0600, with
// a warning.
func TestDatabaseFileMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("POSIX file modes")
	}
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s, err := store.Open(ctx, store.Options{Dir: dir})
	require.NoError(t, err)
	require.NoError(t, s.CreateUser(ctx, store.User{ID: "usr_1", Name: "alice", Plan: "pro", CreatedAt: t0}))
	requireModes(t, dir, 0o600)
	require.NoError(t, s.Close())

	// An older relay left the files readable by everyone.
	for _, name := range []string{store.FileName, store.FileName + "-wal", store.FileName + "-shm"} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			require.NoError(t, os.Chmod(p, 0o644))
		}
	}
	core, logs := observer.New(zapcore.WarnLevel)
	s, err = store.Open(ctx, store.Options{Dir: dir, Logger: zap.New(core)})
	require.NoError(t, err)
	defer s.Close()
	_, err = s.User(ctx, "usr_1")
	require.NoError(t, err, "the data is still there")
	require.NoError(t, s.CreateUser(ctx, store.User{ID: "usr_2", Name: "bob", Plan: "pro", CreatedAt: t0}))
	requireModes(t, dir, 0o600)
	warned := logs.FilterMessageSnippet("mode is now 0600").All()
	require.NotEmpty(t, warned)
	require.Equal(t, filepath.Join(dir, store.FileName), warned[0].ContextMap()["file"])
}
