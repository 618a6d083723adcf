package agentstore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"tradebridge/agent/agentstore"
	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/trading/dispatch"
	"tradebridge/trading/ops"
)

// The state file keeps the operations' strategy-tag ownership.
var _ ops.Persist = (*agentstore.Store)(nil)

func TestMain(m *testing.M) {
	if os.Getenv(crashEnv) != "" {
		crashChild()
		return
	}
	goleak.VerifyTestMain(m)
}

var t0 = time.Date(2026, 3, 2, 14, 30, 0, 0, time.UTC)

// open opens a fresh state file in a test folder; it is closed at the
// test's end.
func open(t *testing.T) (*agentstore.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), agentstore.DefaultFileName)
	s, err := agentstore.Open(agentstore.Options{Path: path})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s, path
}

func TestOpenOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		path string
		want string
	}{
		{"no path", "", "Options.Path is required"},
		{"question mark", filepath.Join(t.TempDir(), "a?b.db"), "must not contain '?'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := agentstore.Open(agentstore.Options{Path: tc.path})
			require.ErrorContains(t, err, tc.want)
		})
	}

	// A missing folder is created.
	path := filepath.Join(t.TempDir(), "data", "nested", agentstore.DefaultFileName)
	s, err := agentstore.Open(agentstore.Options{Path: path})
	require.NoError(t, err)
	require.Equal(t, path, s.Path())
	v, err := s.SchemaVersion()
	require.NoError(t, err)
	require.Equal(t, 1, v)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	require.Error(t, s.Put("b", "k", nil), "a closed store refuses writes")
}

func TestBuckets(t *testing.T) {
	t.Parallel()
	type op struct {
		del           bool
		bucket, key   string
		value         string
		nilValue      bool
		wantBucket    string
		wantAfterThis map[string]string
	}
	for _, tc := range []struct {
		name string
		ops  []op
	}{
		{"empty bucket is an empty map", []op{
			{bucket: "", wantBucket: "copier", wantAfterThis: map[string]string{}},
		}},
		{"put then load", []op{
			{bucket: "copier", key: "c1", value: `{"a":1}`, wantBucket: "copier", wantAfterThis: map[string]string{"c1": `{"a":1}`}},
		}},
		{"put overwrites", []op{
			{bucket: "copier", key: "c1", value: "one"},
			{bucket: "copier", key: "c1", value: "two", wantBucket: "copier", wantAfterThis: map[string]string{"c1": "two"}},
		}},
		{"buckets are apart", []op{
			{bucket: "copier", key: "k", value: "c"},
			{bucket: "monitor", key: "k", value: "m", wantBucket: "copier", wantAfterThis: map[string]string{"k": "c"}},
			{wantBucket: "monitor", wantAfterThis: map[string]string{"k": "m"}},
		}},
		{"delete", []op{
			{bucket: "b", key: "x", value: "1"},
			{bucket: "b", key: "y", value: "2"},
			{del: true, bucket: "b", key: "x", wantBucket: "b", wantAfterThis: map[string]string{"y": "2"}},
		}},
		{"delete of a missing key is no error", []op{
			{del: true, bucket: "b", key: "nothing", wantBucket: "b", wantAfterThis: map[string]string{}},
		}},
		{"nil and empty values", []op{
			{bucket: "b", key: "nil", nilValue: true},
			{bucket: "b", key: "empty", value: "", wantBucket: "b", wantAfterThis: map[string]string{"nil": "", "empty": ""}},
		}},
		{"binary keys and values", []op{
			{bucket: "ops.tags", key: "Sim101\x00ES 12-26", value: "\x00\xff\x01", wantBucket: "ops.tags",
				wantAfterThis: map[string]string{"Sim101\x00ES 12-26": "\x00\xff\x01"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, _ := open(t)
			for _, o := range tc.ops {
				switch {
				case o.bucket == "":
				case o.del:
					require.NoError(t, s.Delete(o.bucket, o.key))
				case o.nilValue:
					require.NoError(t, s.Put(o.bucket, o.key, nil))
				default:
					require.NoError(t, s.Put(o.bucket, o.key, []byte(o.value)))
				}
				if o.wantBucket == "" {
					continue
				}
				got, err := s.Load(o.wantBucket)
				require.NoError(t, err)
				require.NotNil(t, got)
				gotS := make(map[string]string, len(got))
				for k, v := range got {
					require.NotNil(t, v, "values are never nil")
					gotS[k] = string(v)
				}
				require.Equal(t, o.wantAfterThis, gotS)
			}
		})
	}
}

// A value the caller changes after Put or after Load does not change the
// store.
func TestBucketValuesAreCopies(t *testing.T) {
	t.Parallel()
	s, _ := open(t)
	v := []byte("abc")
	require.NoError(t, s.Put("b", "k", v))
	v[0] = 'X'
	got, err := s.Load("b")
	require.NoError(t, err)
	require.Equal(t, "abc", string(got["k"]))
	got["k"][0] = 'Y'
	again, err := s.Load("b")
	require.NoError(t, err)
	require.Equal(t, "abc", string(again["k"]))
}

func TestConfigMonotonic(t *testing.T) {
	t.Parallel()
	s, _ := open(t)
	cfg, err := s.LoadConfig()
	require.NoError(t, err)
	require.Nil(t, cfg, "no configuration yet")
	require.Error(t, s.SaveConfig(nil))

	mk := func(v int64, name string) *protocol.Config {
		return &protocol.Config{Version: v, Monitors: []protocol.Monitor{{Account: name}}}
	}
	for _, tc := range []struct {
		save        *protocol.Config
		wantVersion int64
		wantMonitor string
	}{
		{mk(3, "m3"), 3, "m3"},
		{mk(5, "m5"), 5, "m5"},
		{mk(5, "other5"), 5, "m5"}, // the same version changes nothing
		{mk(4, "m4"), 5, "m5"},     // nor an older one
		{mk(6, "m6"), 6, "m6"},
	} {
		require.NoError(t, s.SaveConfig(tc.save))
		got, err := s.LoadConfig()
		require.NoError(t, err)
		require.Equal(t, tc.wantVersion, got.Version, "after saving version %d", tc.save.Version)
		require.Len(t, got.Monitors, 1)
		require.Equal(t, tc.wantMonitor, got.Monitors[0].Account)
	}
}

func fp(b byte) [32]byte {
	var f [32]byte
	for i := range f {
		f[i] = b + byte(i)
	}
	return f
}

func TestJournal(t *testing.T) {
	t.Parallel()
	s, _ := open(t)
	recs, err := s.LoadWrites(time.Time{})
	require.NoError(t, err)
	require.Empty(t, recs)

	require.NoError(t, s.BeginWrite("w1", fp(1), t0))
	require.NoError(t, s.BeginWrite("w2", fp(2), t0.Add(time.Second)))
	require.NoError(t, s.BeginWrite("w0", fp(3), t0)) // the same instant as w1, begun after it
	require.NoError(t, s.BeginWrite("w3", fp(4), t0.Add(2*time.Second)))
	require.ErrorIs(t, s.BeginWrite("w1", fp(9), t0.Add(time.Hour)), agentstore.ErrJournalDuplicate)

	require.NoError(t, s.FinishWrite("w1", json.RawMessage(`{"orderId":"o-1"}`), nil))
	require.NoError(t, s.FinishWrite("w2", nil, protocol.NewError(protocol.CodeOrderRejected, "margin")))
	require.ErrorIs(t, s.FinishWrite("w1", json.RawMessage(`{}`), nil), agentstore.ErrJournalFinished, "the first outcome stays")
	require.ErrorIs(t, s.FinishWrite("nope", nil, nil), agentstore.ErrJournalNotBegun)

	recs, err = s.LoadWrites(time.Time{})
	require.NoError(t, err)
	require.Len(t, recs, 4)
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.ID)
	}
	require.Equal(t, []string{"w1", "w0", "w2", "w3"}, ids, "oldest first, then in the order begun")

	w1, w0, w2, w3 := recs[0], recs[1], recs[2], recs[3]
	require.True(t, w1.Done)
	require.Equal(t, fp(1), w1.Fingerprint)
	require.True(t, w1.At.Equal(t0))
	require.JSONEq(t, `{"orderId":"o-1"}`, string(w1.Result))
	require.Nil(t, w1.Err)
	require.True(t, w2.Done)
	require.Nil(t, w2.Result)
	require.Equal(t, &protocol.Error{Code: protocol.CodeOrderRejected, Detail: "margin"}, w2.Err)
	require.False(t, w0.Done, "begun and never finished")
	require.Nil(t, w0.Result)
	require.Nil(t, w0.Err)
	require.False(t, w3.Done)

	// A write that finished with neither result nor error is done.
	require.NoError(t, s.FinishWrite("w3", nil, nil))

	// Load since a time.
	recs, err = s.LoadWrites(t0.Add(time.Second))
	require.NoError(t, err)
	require.Len(t, recs, 2)
	require.Equal(t, "w2", recs[0].ID)
	require.True(t, recs[1].Done)

	// Prune forgets records begun before the time, and not those at it.
	require.NoError(t, s.PruneWrites(t0.Add(time.Second)))
	recs, err = s.LoadWrites(time.Time{})
	require.NoError(t, err)
	require.Len(t, recs, 2)
	require.Equal(t, "w2", recs[0].ID)
	require.NoError(t, s.BeginWrite("w1", fp(1), t0.Add(time.Hour)), "a pruned id may begin again")
}

// Everything written survives Close and a new Open.
func TestReopenKeepsEverything(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), agentstore.DefaultFileName)
	s, err := agentstore.Open(agentstore.Options{Path: path})
	require.NoError(t, err)
	write(t, s)
	require.NoError(t, s.Close())

	s, err = agentstore.Open(agentstore.Options{Path: path})
	require.NoError(t, err)
	defer s.Close()
	requireWritten(t, s)
}

// write writes one of each kind of record; requireWritten checks them.
func write(t *testing.T, s *agentstore.Store) {
	t.Helper()
	require.NoError(t, writeAll(s))
}

func writeAll(s *agentstore.Store) error {
	for _, step := range []func() error{
		func() error { return s.Put("copier", "c1", []byte(`{"orders":{"m1":"f1"}}`)) },
		func() error { return s.Put("copier", "gone", []byte("x")) },
		func() error { return s.Delete("copier", "gone") },
		func() error { return s.SaveConfig(&protocol.Config{Version: 7}) },
		func() error { return s.BeginWrite("w-done", fp(1), t0) },
		func() error { return s.FinishWrite("w-done", json.RawMessage(`{"ok":true}`), nil) },
		func() error { return s.BeginWrite("w-running", fp(2), t0.Add(time.Second)) },
	} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

func requireWritten(t *testing.T, s *agentstore.Store) {
	t.Helper()
	b, err := s.Load("copier")
	require.NoError(t, err)
	require.Equal(t, map[string][]byte{"c1": []byte(`{"orders":{"m1":"f1"}}`)}, b)
	cfg, err := s.LoadConfig()
	require.NoError(t, err)
	require.NotNil(t, cfg)
	require.Equal(t, int64(7), cfg.Version)
	recs, err := s.LoadWrites(time.Time{})
	require.NoError(t, err)
	require.Len(t, recs, 2)
	require.Equal(t, "w-done", recs[0].ID)
	require.True(t, recs[0].Done)
	require.JSONEq(t, `{"ok":true}`, string(recs[0].Result))
	require.Equal(t, "w-running", recs[1].ID)
	require.False(t, recs[1].Done)
}

// A second Store on the same file, opened while the first is still open
// (a second agent process on the same data folder), is refused with
// ErrInUse; once the first is closed, the file opens with everything the
// first wrote.
func TestSecondOpenRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), agentstore.DefaultFileName)
	first, err := agentstore.Open(agentstore.Options{Path: path})
	require.NoError(t, err)
	write(t, first)

	_, err = agentstore.Open(agentstore.Options{Path: path})
	require.ErrorIs(t, err, agentstore.ErrInUse)

	require.NoError(t, first.Close())
	second, err := agentstore.Open(agentstore.Options{Path: path})
	require.NoError(t, err)
	defer second.Close()
	requireWritten(t, second)
}

const (
	crashEnv     = "AGENTSTORE_CRASH_PATH"
	crashTimeout = testkit.Long
)

// crashChild runs in a child process: it writes to the state file at
// $AGENTSTORE_CRASH_PATH and kills itself (SIGKILL on Unix,
// TerminateProcess on Windows) without closing anything.
func crashChild() {
	s, err := agentstore.Open(agentstore.Options{Path: os.Getenv(crashEnv)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := writeAll(s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	p, err := os.FindProcess(os.Getpid())
	if err == nil {
		err = p.Kill()
	}
	fmt.Fprintln(os.Stderr, "kill failed:", err)
	os.Exit(3)
}

// A write that returned survives the process being killed at once after
// it (kill -9): the next Open finds it.
func TestCommittedWritesSurviveKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), agentstore.DefaultFileName)
	ctx, cancel := context.WithTimeout(context.Background(), crashTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "the child is killed: %s", out)
	if runtime.GOOS != "windows" {
		require.Equal(t, -1, ee.ExitCode(), "killed by a signal, not exited: %s", out)
	}
	_, err = os.Stat(path + "-wal")
	require.NoError(t, err, "the child left its WAL behind")

	s, err := agentstore.Open(agentstore.Options{Path: path})
	require.NoError(t, err)
	defer s.Close()
	requireWritten(t, s)
}

// A file written by a newer agent is refused, and left as it is.
func TestNewerSchemaRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), agentstore.DefaultFileName)
	s, err := agentstore.Open(agentstore.Options{Path: path})
	require.NoError(t, err)
	require.NoError(t, s.Put("b", "k", []byte("v")))
	require.NoError(t, s.Close())

	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	_, err = db.Exec("PRAGMA user_version = 99")
	require.NoError(t, err)
	require.NoError(t, db.Close())

	_, err = agentstore.Open(agentstore.Options{Path: path})
	require.ErrorIs(t, err, agentstore.ErrSchemaTooNew)
	require.ErrorContains(t, err, "schema version 99")

	db, err = sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	var v int
	require.NoError(t, db.QueryRow("PRAGMA user_version").Scan(&v))
	require.Equal(t, 99, v)
}

// A file that is not a database is refused.
func TestNotADatabase(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), agentstore.DefaultFileName)
	require.NoError(t, os.WriteFile(path, []byte("this is not a database, just some text long enough"), 0o600))
	_, err := agentstore.Open(agentstore.Options{Path: path})
	require.Error(t, err)
}

// The state file and its -wal and -shm files are the agent's user's
// alone, whatever the umask; an existing file open to others is taken
// down to 0600, with a warning.
func TestFileMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("POSIX file modes")
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "data", agentstore.DefaultFileName)
	s, err := agentstore.Open(agentstore.Options{Path: path})
	require.NoError(t, err)
	require.NoError(t, s.Put("b", "k", []byte("v")))
	requireModes(t, path, 0o600)
	fi, err := os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	require.Zero(t, fi.Mode().Perm()&0o077, "a folder Open creates is not open to others")
	require.NoError(t, s.Close())

	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if _, err := os.Stat(p); err == nil {
			require.NoError(t, os.Chmod(p, 0o644))
		}
	}
	core, logs := observer.New(zapcore.WarnLevel)
	s, err = agentstore.Open(agentstore.Options{Path: path, Logger: zap.New(core)})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Put("b", "k2", []byte("v")))
	requireModes(t, path, 0o600)
	require.NotZero(t, logs.FilterMessageSnippet("mode is now 0600").Len())
}

func requireModes(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if p == path+"-shm" && errors.Is(err, fs.ErrNotExist) {
			continue // SQLite's exclusive locking mode keeps the WAL index in memory
		}
		require.NoError(t, err, p)
		require.Equal(t, want, fi.Mode().Perm(), "%s is %v", p, fi.Mode().Perm())
	}
}

// The journal keeps a dispatcher's outcomes across a restart: a write
// repeated after it returns the first outcome and does not run again,
// and a write that never finished answers outcome_unknown.
func TestJournalWithDispatcher(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), agentstore.DefaultFileName)
	var runs atomic.Int64
	now := func() time.Time { return t0 }
	newDispatcher := func(s *agentstore.Store) *dispatch.Dispatcher {
		d, err := dispatch.New(dispatch.Options{Journal: s, Now: now})
		require.NoError(t, err)
		require.NoError(t, d.Register(protocol.FnPlaceOrder, func(context.Context, json.RawMessage) (any, error) {
			n := runs.Add(1)
			return protocol.PlaceResult{OrderID: fmt.Sprintf("o-%d", n)}, nil
		}))
		return d
	}
	place := func(d *dispatch.Dispatcher, id string) (json.RawMessage, *protocol.Error) {
		return d.Handle(context.Background(), &protocol.Request{Fn: protocol.FnPlaceOrder, RequestID: id,
			Args: json.RawMessage(`{"account":"Sim101","instrument":"ES","action":"Buy","orderType":"Market","quantity":1}`)})
	}

	s, err := agentstore.Open(agentstore.Options{Path: path})
	require.NoError(t, err)
	first, perr := place(newDispatcher(s), "req-1")
	require.Nil(t, perr)
	// A write that began and never finished: the agent died while it ran.
	require.NoError(t, s.BeginWrite("req-2", sameFingerprint(t, s, "req-1"), t0))
	require.NoError(t, s.Close())

	s, err = agentstore.Open(agentstore.Options{Path: path})
	require.NoError(t, err)
	defer s.Close()
	d := newDispatcher(s)
	again, perr := place(d, "req-1")
	require.Nil(t, perr)
	require.JSONEq(t, string(first), string(again))
	require.Equal(t, int64(1), runs.Load(), "the repeat ran nothing")
	_, perr = place(d, "req-2")
	require.NotNil(t, perr)
	require.Equal(t, protocol.CodeOutcomeUnknown, perr.Code)
	require.Equal(t, int64(1), runs.Load())
}

// sameFingerprint returns the fingerprint the journal holds for id.
func sameFingerprint(t *testing.T, s *agentstore.Store, id string) [32]byte {
	t.Helper()
	recs, err := s.LoadWrites(time.Time{})
	require.NoError(t, err)
	for _, r := range recs {
		if r.ID == id {
			return r.Fingerprint
		}
	}
	require.FailNow(t, "no record", id)
	return [32]byte{}
}

// Writes from many goroutines (the engines, the operations and the
// dispatcher share the store) all land.
func TestConcurrentWrites(t *testing.T) {
	t.Parallel()
	s, _ := open(t)
	const writers, each = 8, 50
	errs := make(chan error, writers*each*2)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				errs <- s.Put("b", fmt.Sprintf("%d-%d", w, i), []byte("v"))
				errs <- s.BeginWrite(fmt.Sprintf("w-%d-%d", w, i), fp(byte(w)), t0)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	got, err := s.Load("b")
	require.NoError(t, err)
	require.Len(t, got, writers*each)
	recs, err := s.LoadWrites(time.Time{})
	require.NoError(t, err)
	require.Len(t, recs, writers*each)
}
