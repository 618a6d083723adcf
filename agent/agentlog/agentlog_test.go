package agentlog

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"tradebridge/internal/testkit"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// lumberjack compresses and removes rotated files in a goroutine of its
// own that it never stops.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("gopkg.in/natefinch/lumberjack%2ev2.(*Logger).millRun"))
}

// fakeEventLog is the system's log, recording what it is sent.
type fakeEventLog struct {
	mu    sync.Mutex
	lines []string // "level text"
}

func (f *fakeEventLog) add(level string, v []any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lines = append(f.lines, level+" "+strings.TrimSpace(strings.Join(strings.Fields(fmtAll(v)), " ")))
	return nil
}
func (f *fakeEventLog) Error(v ...any) error   { return f.add("error", v) }
func (f *fakeEventLog) Warning(v ...any) error { return f.add("warning", v) }
func (f *fakeEventLog) Info(v ...any) error    { return f.add("info", v) }
func (f *fakeEventLog) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.lines...)
}

func fmtAll(v []any) string {
	var b strings.Builder
	for _, x := range v {
		b.WriteString(x.(string))
	}
	return b.String()
}

// The system's log receives warnings and errors, and the Info lines the
// caller marks (by the Notable field, on the line or on its logger, or by
// message); never Debug, never plain Info.
func TestEventLogLevels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		log  func(*zap.Logger)
		want []string
	}{
		{"debug", func(l *zap.Logger) { l.Debug("details", Notable()) }, nil},
		{"plain info", func(l *zap.Logger) { l.Info("agent state", zap.String("file", "x")) }, nil},
		{"notable info", func(l *zap.Logger) { l.Info("service started", Notable(), zap.String("version", "1.2")) },
			[]string{`info service started: {"version": "1.2"}`}},
		{"notable logger", func(l *zap.Logger) { l.With(Notable()).Named("svc").Info("stopping") },
			[]string{`info svc: stopping`}},
		{"listed message", func(l *zap.Logger) { l.Named("tunnel").Info("tunnel connected") },
			[]string{`info tunnel: tunnel connected`}},
		{"warn", func(l *zap.Logger) { l.Warn("tunnel connection failed", zap.Duration("retryIn", time.Second)) },
			[]string{`warning tunnel connection failed: {"retryIn": "1s"}`}},
		{"error", func(l *zap.Logger) { l.Error("the agent token was revoked") },
			[]string{`error the agent token was revoked`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev := &fakeEventLog{}
			l, err := New(Options{EventLog: ev, EventMessages: []string{"tunnel connected"}, Level: zapcore.DebugLevel})
			require.NoError(t, err)
			tc.log(l.Logger())
			require.NoError(t, l.Close())
			require.Equal(t, tc.want, ev.got())
		})
	}
}

// The same message at the same level reaches the system's log once per
// EventRepeat; the next copy says how many were left out.
func TestEventLogRepeats(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	ev := &fakeEventLog{}
	l, err := New(Options{EventLog: ev, EventRepeat: time.Minute, Now: func() time.Time { return now }})
	require.NoError(t, err)
	defer l.Close()
	log := l.Logger()
	for range 5 {
		log.Warn("tunnel connection failed")
		now = now.Add(10 * time.Second)
	}
	log.Error("tunnel connection failed") // another level: its own count
	now = now.Add(time.Minute)
	log.Warn("tunnel connection failed")
	require.Equal(t, []string{
		"warning tunnel connection failed",
		"error tunnel connection failed",
		"warning tunnel connection failed (4 more since 2026-11-25T10:00:00Z, left out)",
	}, ev.got())
}

// A token, whether shaped like the relay's or named by SetSecrets, never
// reaches the file or the system's log; the diagnostics recorder (any
// teed core) sees the message.
func TestNoTokenInLogs(t *testing.T) {
	t.Parallel()
	const token = "tb_agent_Q2xlYXJseU5vdEFSZWFsVG9rZW5CdXRMb25nRW5vdWdo"
	const secret = `s3cr"et-of-the-add-on`
	dir := t.TempDir()
	ev := &fakeEventLog{}
	teed, seen := observer.New(zapcore.InfoLevel)
	l, err := New(Options{Dir: dir, EventLog: ev, Cores: []zapcore.Core{teed}})
	require.NoError(t, err)
	l.SetSecrets(token, secret, "short")
	log := l.Logger().Named("agent")
	log.Error("refused "+token, zap.String("token", token), zap.String("secret", secret))
	log.Warn("the add-on refused", zap.String("header", "Bearer tb_api_"+strings.Repeat("x", 43)))
	log.Info("a short word stays", zap.String("w", "short"))
	require.NoError(t, l.Close())

	b, err := os.ReadFile(filepath.Join(dir, FileName))
	require.NoError(t, err)
	file := string(b)
	require.Equal(t, 3, strings.Count(file, "\n"))
	for _, text := range append([]string{file}, ev.got()...) {
		require.NotContains(t, text, token)
		require.NotContains(t, text, "tb_api_xxxx")
		require.NotContains(t, text, "s3cr")
		require.Contains(t, text, Redacted)
	}
	require.Contains(t, file, `"w":"short"`)
	sc := bufio.NewScanner(strings.NewReader(file))
	for sc.Scan() {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), "every line stays JSON: %s", sc.Text())
		require.Equal(t, "agent", line["logger"])
	}
	require.Equal(t, 3, seen.Len())
}

// The file rotates at MaxSizeMB and keeps at most MaxBackups compressed
// backups.
func TestRotationIsBounded(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "logs")
	l, err := New(Options{Dir: dir, MaxSizeMB: 1, MaxBackups: 2})
	require.NoError(t, err)
	log := l.Logger()
	pad := strings.Repeat("x", 1000)
	for i := range 5000 { // about 5 MB
		log.Info("line", zap.Int("i", i), zap.String("pad", pad))
	}
	require.Eventually(t, func() bool {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return false
		}
		var gz, plain int
		for _, e := range entries {
			switch {
			case e.Name() == FileName:
			case strings.HasSuffix(e.Name(), ".log.gz"):
				gz++
			default:
				plain++
			}
		}
		return gz == 2 && plain == 0
	}, testkit.Long, 20*time.Millisecond, "the current file and two compressed backups")
	st, err := os.Stat(filepath.Join(dir, FileName))
	require.NoError(t, err)
	require.LessOrEqual(t, st.Size(), int64(1<<20))
	if runtime.GOOS != "windows" {
		require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
		dst, err := os.Stat(dir)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), dst.Mode().Perm())
	}
	require.NoError(t, l.Close())
}

// Close is idempotent; after it the file is left alone.
func TestClose(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "logs")
	l, err := New(Options{Dir: dir})
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, FileName), l.File())
	l.Logger().Info("before")
	require.NoError(t, l.Close())
	require.NoError(t, l.Close())
	l.Logger().Info("after")
	b, err := os.ReadFile(l.File())
	require.NoError(t, err)
	require.Contains(t, string(b), "before")
	require.NotContains(t, string(b), "after")

	_, err = New(Options{MaxBackups: -1})
	require.Error(t, err)
	blocker := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	_, err = New(Options{Dir: filepath.Join(blocker, "logs")})
	require.ErrorContains(t, err, "log folder", "a folder it cannot create is reported at once")
}
