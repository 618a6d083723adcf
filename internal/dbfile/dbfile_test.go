package dbfile_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"tradebridge/internal/dbfile"
)

// A new file is the user's alone; an existing one open to others, and its
// -wal file, are taken down to Mode with a warning; a missing -shm is no
// error.
func TestRestrict(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("POSIX file modes")
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.db")
	require.NoError(t, dbfile.Restrict(path, zap.NewNop()))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, dbfile.Mode, fi.Mode().Perm())

	require.NoError(t, os.Chmod(path, 0o644))
	require.NoError(t, os.WriteFile(path+"-wal", nil, 0o644))
	core, logs := observer.New(zapcore.WarnLevel)
	require.NoError(t, dbfile.Restrict(path, zap.New(core)))
	for _, p := range []string{path, path + "-wal"} {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		require.Equal(t, dbfile.Mode, fi.Mode().Perm(), p)
	}
	require.Equal(t, 2, logs.FilterMessageSnippet("mode is now 0600").Len())
	require.Error(t, dbfile.Restrict(filepath.Join(t.TempDir(), "missing", "x.db"), zap.NewNop()), "no folder")
}
