package installlog

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// markedError is another package's error type that knows its class.
type markedError struct{}

func (markedError) Error() string       { return "the folder is owned by a user" }
func (markedError) InstallClass() Class { return ClassFolder }

// Each class has its own documented exit code; an error's class is the
// outermost mark of its chain, else a network failure's, else other.
func TestClassOf(t *testing.T) {
	t.Parallel()
	want := map[Class]int{ClassOther: 1, ClassInvalid: 10, ClassPairingRefused: 11, ClassRelayUnreachable: 12,
		ClassNeedsElevation: 13, ClassFolder: 14}
	require.Len(t, Classes, len(want))
	seen := map[int]bool{}
	for _, c := range Classes {
		assert.Equal(t, want[c], c.ExitCode(), c.String())
		assert.False(t, seen[c.ExitCode()], "exit code %d used twice", c.ExitCode())
		seen[c.ExitCode()] = true
		assert.Equal(t, uint32(100+want[c]), c.EventID())
		assert.NotEmpty(t, c.String())
	}

	base := errors.New("relay-url must be http:// or https://")
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	for _, tc := range []struct {
		name string
		err  error
		want Class
		code int
	}{
		{"nil", nil, ClassOther, 0},
		{"plain", base, ClassOther, 1},
		{"marked", WithClass(base, ClassInvalid), ClassInvalid, 10},
		{"marked and wrapped", fmt.Errorf("config set: %w", WithClass(base, ClassInvalid)), ClassInvalid, 10},
		{"outer mark wins", WithClass(WithClass(base, ClassInvalid), ClassNeedsElevation), ClassNeedsElevation, 13},
		{"error type with a class", fmt.Errorf("install: %w", markedError{}), ClassFolder, 14},
		{"dial failure", fmt.Errorf("pairing: %w", dial), ClassRelayUnreachable, 12},
		{"name not found", &net.DNSError{Err: "no such host", Name: "relay.invalid", IsNotFound: true}, ClassRelayUnreachable, 12},
		{"dial failure marked otherwise", WithClass(dial, ClassPairingRefused), ClassPairingRefused, 11},
		{"timeout", context.DeadlineExceeded, ClassOther, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.err != nil {
				assert.Equal(t, tc.want, ClassOf(tc.err))
			}
			assert.Equal(t, tc.code, ExitCode(tc.err))
		})
	}
	assert.NoError(t, WithClass(nil, ClassInvalid))
	marked := WithClass(base, ClassInvalid)
	assert.ErrorIs(t, marked, base)
	assert.Equal(t, base.Error(), marked.Error(), "the mark adds nothing to the message")
}

// fakeEventLog records what Report and Notice send to the system's log.
type fakeEventLog struct {
	errors, infos []string
	ids           []uint32
	closed        int
}

func (f *fakeEventLog) Error(id uint32, msg string) error {
	f.ids = append(f.ids, id)
	f.errors = append(f.errors, msg)
	return nil
}

func (f *fakeEventLog) Info(id uint32, msg string) error {
	f.ids = append(f.ids, id)
	f.infos = append(f.infos, msg)
	return nil
}

func (f *fakeEventLog) Close() error { f.closed++; return nil }

var stamp = time.Date(2026, 11, 28, 4, 5, 6, 0, time.UTC)

// A failure is one line in the Event Log and at the end of the
// installer's log, without the token or code an error might carry, and
// the exit code of its class.
func TestReport(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "install.log")
	require.NoError(t, os.WriteFile(file, []byte("MSI (s) (A0:B4) [04:05:05:000]: Doing action: Pair\r\n"), 0o600))
	ev := &fakeEventLog{}
	o := Options{File: file, Command: "agent pair", Now: func() time.Time { return stamp },
		EventLog: func() (EventLog, error) { return ev, nil }, Secrets: []string{"s3cr3t-value"}}

	err := WithClass(errors.New("the relay refused code ABCD-EF23 (tb_agent_abc, s3cr3t-value)\nretry"), ClassPairingRefused)
	require.Equal(t, 11, Report(o, err))

	const want = "agent pair failed (exit code 11, pairing code refused or expired): " +
		"the relay refused code [REDACTED] ([REDACTED] [REDACTED]) retry"
	require.Equal(t, []string{want}, ev.errors)
	require.Equal(t, []uint32{111}, ev.ids)
	require.Equal(t, 1, ev.closed)
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, "MSI (s) (A0:B4) [04:05:05:000]: Doing action: Pair\r\n"+
		"TradeBridgeAgent [2026-11-28T04:05:06Z] "+want+"\r\n", string(b))

	require.Equal(t, 0, Report(o, nil), "success writes nothing")
	require.Len(t, ev.errors, 1)

	Notice(o, "Left on this PC:\n  the logs")
	require.Equal(t, []string{"Left on this PC: the logs"}, ev.infos)
	require.Equal(t, uint32(NoticeEventID), ev.ids[1])
}

// The installer's log is appended to in its own encoding; a log that is
// missing is not created, and an Event Log that cannot be opened or a
// file that cannot be written changes nothing of the exit code.
func TestReportBestEffort(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	failing := func() (EventLog, error) { return nil, errors.New("no event log") }
	now := func() time.Time { return stamp }

	missing := filepath.Join(dir, "none.log")
	require.Equal(t, 10, Report(Options{File: missing, EventLog: failing, Now: now}, WithClass(errors.New("bad"), ClassInvalid)))
	require.NoFileExists(t, missing)

	require.Equal(t, 13, Report(Options{File: dir, EventLog: failing}, WithClass(errors.New("denied"), ClassNeedsElevation)),
		"a folder instead of a file")

	unicode := filepath.Join(dir, "unicode.log")
	require.NoError(t, os.WriteFile(unicode, []byte{0xff, 0xfe, 'M', 0, '\r', 0, '\n', 0}, 0o600))
	require.Equal(t, 1, Report(Options{File: unicode, EventLog: failing, Now: now}, errors.New("boom")))
	b, err := os.ReadFile(unicode)
	require.NoError(t, err)
	require.Zero(t, len(b)%2)
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = uint16(b[2*i]) | uint16(b[2*i+1])<<8
	}
	require.Equal(t, "\ufeffM\r\nTradeBridgeAgent [2026-11-28T04:05:06Z] agent failed (exit code 1, failed): boom\r\n",
		string(utf16.Decode(u)))
}

// Clean keeps ordinary words and removes what looks like a secret.
func TestClean(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"read-only file system", "read-only file system"},
		{"relay-url must be https://", "relay-url must be https://"},
		{"code abcd-efgh", "code abcd-efgh"},
		{"code ABCD-EFGH", "code [REDACTED]"},
		{"code ABCDEF23", "code [REDACTED]"},
		{"code ABCDEFGH and SHA256", "code ABCDEFGH and SHA256"},
		{"token tb_agent_x was refused", "token [REDACTED] was refused"},
		{"two\r\nlines", "two lines"},
	} {
		assert.Equal(t, tc.want, Clean(tc.in), tc.in)
	}
	assert.Equal(t, "the [REDACTED] here", Clean("the hunter22 here", "hunter22"))
	assert.False(t, strings.Contains(Clean("x", ""), "REDACTED"), "an empty secret removes nothing")
}
