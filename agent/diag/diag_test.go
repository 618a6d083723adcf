package diag

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"tradebridge/protocol"
)

const token = "tb_agent_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcde"

// The recorder counts warnings and errors by level and message, never
// keeps their fields, and lists the most recent first.
func TestRecorderGroups(t *testing.T) {
	t.Parallel()
	r := NewRecorder()
	log := zap.New(r.Core()).Named("tunnel").With(zap.String("session", "s-secret"))
	log.Info("connected")
	log.Debug("pinged")
	log.Warn("tunnel connection failed", zap.String("error", "dial "+token))
	log.Warn("tunnel connection failed", zap.String("error", "again"))
	log.Error("tunnel connection failed")
	time.Sleep(2 * time.Millisecond)
	log.Error("the relay refused the agent token " + token)

	got := r.Errors()
	require.Len(t, got, 3)
	require.Equal(t, "the relay refused the agent token "+Redacted, got[0].Message, "a token in a message is removed")
	require.Equal(t, "error", got[0].Level)
	require.Equal(t, 1, got[1].Count)
	require.Equal(t, "error", got[1].Level)
	require.Equal(t, "tunnel connection failed", got[2].Message)
	require.Equal(t, "warn", got[2].Level)
	require.Equal(t, 2, got[2].Count)
	require.False(t, got[2].Last.Before(got[2].First))
	for _, e := range got {
		require.NotContains(t, fmt.Sprint(e), "s-secret")
		require.NotContains(t, fmt.Sprint(e), "again")
		require.NotContains(t, fmt.Sprint(e), token)
	}
}

// At most MaxDiagnosticErrors groups are kept: the least recently logged
// one makes room.
func TestRecorderBounded(t *testing.T) {
	t.Parallel()
	r := NewRecorder()
	base := time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)
	for i := range protocol.MaxDiagnosticErrors + 5 {
		r.record(zapcore.WarnLevel, fmt.Sprintf("message %d", i), base.Add(time.Duration(i)*time.Second))
	}
	r.record(zapcore.WarnLevel, "message 5", base.Add(time.Hour)) // recent again
	r.record(zapcore.WarnLevel, "one more", base.Add(2*time.Hour))
	got := r.Errors()
	require.Len(t, got, protocol.MaxDiagnosticErrors)
	require.Equal(t, "one more", got[0].Message)
	require.Equal(t, "message 5", got[1].Message)
	require.Equal(t, 2, got[1].Count)
	msgs := make(map[string]bool)
	for _, e := range got {
		msgs[e.Message] = true
	}
	for i := range 5 {
		require.False(t, msgs[fmt.Sprintf("message %d", i)], "the oldest are dropped")
	}
	require.False(t, msgs["message 6"], "message 5, logged again, stayed; the next oldest went")
	require.True(t, msgs["message 7"])

	long := strings.Repeat("é", 300)
	r.record(zapcore.ErrorLevel, long, base.Add(3*time.Hour))
	got = r.Errors()
	require.LessOrEqual(t, len(got[0].Message), maxMessage+len("…"))
	require.True(t, strings.HasSuffix(got[0].Message, "…"))
	require.NotContains(t, got[0].Message, "\uFFFD")
}

func TestRedactor(t *testing.T) {
	t.Parallel()
	secret := "nt-secret-1234"
	r := NewRedactor(token, secret, "", "ab", `q"uote`)
	for _, tc := range []struct{ in, want string }{
		{"Authorization: Bearer " + token, "Authorization: Bearer " + Redacted},
		{"another token tb_api_ZZZZZZZZZZZZZZZZZZZZZZZZZZZZ in a line", "another token " + Redacted + " in a line"},
		{"secret=" + secret + ";", "secret=" + Redacted + ";"},
		{"b64 " + base64.StdEncoding.EncodeToString([]byte(token)), "b64 " + Redacted},
		{"b64url " + base64.RawURLEncoding.EncodeToString([]byte(secret)), "b64url " + Redacted},
		{"tb_agent_short and abc stay", "tb_agent_short and abc stay"},
		{`{"secret":"q\"uote"}`, `{"secret":"` + Redacted + `"}`},
	} {
		require.Equal(t, tc.want, r.Redact(tc.in), tc.in)
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, SnapshotName)
	_, _, err := ReadSnapshot(path)
	require.ErrorIs(t, err, ErrNoSnapshot)

	d := protocol.Diagnostics{At: time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC), AgentVersion: "0.16.3",
		Bridge: protocol.BridgeDiagnostic{Kind: "sim", Reachable: true}}
	require.NoError(t, WriteSnapshot(path, d))
	d.AgentVersion = "0.16.4"
	require.NoError(t, WriteSnapshot(path, d), "replaces the previous snapshot")
	got, at, err := ReadSnapshot(path)
	require.NoError(t, err)
	require.Equal(t, d, got)
	require.WithinDuration(t, time.Now(), at, time.Minute)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left")

	require.NoError(t, os.WriteFile(path, []byte("{half"), 0o600))
	_, _, err = ReadSnapshot(path)
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrNoSnapshot)

	require.Error(t, WriteSnapshot(filepath.Join(dir, "missing", SnapshotName), d))
}

func TestOSDescription(t *testing.T) {
	t.Parallel()
	require.True(t, strings.HasPrefix(OSDescription(), runtime.GOOS+"/"+runtime.GOARCH), OSDescription())
	require.Equal(t, "a b", cleanOSVersion(" a\x01 b\n"))
}
