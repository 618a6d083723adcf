//go:build !windows

package winsvc

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckOwnerMode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		uid   uint32
		mode  fs.FileMode
		trust bool
	}{
		{0, 0o600, true},
		{0, 0o644, true},
		{0, fs.ModeDir | 0o755, true},
		{0, fs.ModeDir | 0o700, true},
		{1000, 0o600, false},
		{0, 0o664, false},
		{0, 0o646, false},
		{0, fs.ModeDir | 0o777, false},
	} {
		err := checkOwnerMode("/etc/tradebridge/agent.json", tc.uid, tc.mode)
		if tc.trust {
			require.NoError(t, err, "%d %v", tc.uid, tc.mode)
		} else {
			require.ErrorIs(t, err, ErrUntrusted, "%d %v", tc.uid, tc.mode)
		}
	}
}

func TestCheckTrustedFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "agent.json")
	require.NoError(t, os.WriteFile(file, []byte("{}"), 0o600))
	_, err := os.Stat(filepath.Join(dir, "none"))
	require.ErrorIs(t, CheckTrusted(filepath.Join(dir, "none")), err.(*fs.PathError).Err)

	require.NoError(t, os.Chmod(file, 0o666))
	require.ErrorIs(t, CheckTrusted(file), ErrUntrusted, "writable by others")
	require.NoError(t, os.Chmod(file, 0o600))
	if os.Geteuid() != 0 {
		require.ErrorIs(t, CheckTrusted(file), ErrUntrusted, "owned by this user, not root")
		return
	}
	require.NoError(t, CheckTrusted(file))
	require.NoError(t, os.Chown(file, 1000, 1000))
	require.ErrorIs(t, CheckTrusted(file), ErrUntrusted, "owned by a user")
}

// The data and log folders are created for root, mode 0700, and pass the
// service's check.
func TestEnsureFolders(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	p := Paths{DataDir: filepath.Join(base, "lib", "agent"), LogDir: filepath.Join(base, "log")}
	require.NoError(t, ensureFolders(p))
	require.NoError(t, ensureFolders(p), "again: nothing to do")
	for _, dir := range []string{p.DataDir, p.LogDir} {
		fi, err := os.Stat(dir)
		require.NoError(t, err)
		require.Equal(t, fs.FileMode(0o700), fi.Mode().Perm())
		if os.Geteuid() == 0 {
			require.NoError(t, CheckTrusted(dir))
		}
	}
}
