package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kardianos/service"
	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/agent/installlog"
	"tradebridge/agent/winsvc"
)

// eventLines records what a command sends to the Event Log.
type eventLines struct{ errors, infos []string }

func (e *eventLines) Error(_ uint32, msg string) error { e.errors = append(e.errors, msg); return nil }
func (e *eventLines) Info(_ uint32, msg string) error  { e.infos = append(e.infos, msg); return nil }
func (e *eventLines) Close() error                     { return nil }

// A command run by the installer (--msi-log) that fails writes why to the
// Event Log and appends it to the installer's log, and exits with the
// code of its kind of failure; without --msi-log it exits with 1, as
// documented, and writes nowhere else.
func TestExecuteReportsToTheInstaller(t *testing.T) {
	t.Parallel()
	const canary = "tb_agent_msilogcanary0123456789abcdef"
	// A dangling link: no config file in it, and no folder can be made.
	dangling := filepath.Join(t.TempDir(), "conf")
	require.NoError(t, os.Symlink(filepath.Join(t.TempDir(), "gone", "conf"), dangling))
	// A relay that refuses every pairing code, and the address of one that
	// is gone.
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"success":false,"error":"pairing_code_invalid"}`))
	}))
	t.Cleanup(refusing.Close)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	for _, tc := range []struct {
		name   string
		args   []string // before --config FILE --msi-log LOG
		noLog  bool     // without --msi-log
		config string   // --config, default a file in a new folder
		code   int
		line   string // the line written, "" for none
	}{
		{name: "refused value", args: []string{"config", "set", "relay-url", "ftp://relay.example"}, code: 10,
			line: "agent config set failed (exit code 10, invalid value): relay-url must be http:// or https://"},
		{name: "refused token", args: []string{"config", "set", "token", "tb_api_" + canary[9:]}, code: 10,
			line: "agent config set failed (exit code 10, invalid value): token is an API token"},
		{name: "odd arguments", args: []string{"config", "set", "relay-url"}, code: 10,
			line: "agent config set failed (exit code 10, invalid value): config set takes KEY VALUE pairs"},
		{name: "folder", args: []string{"config", "set", "token", canary}, config: filepath.Join(dangling, "agent.json"), code: 14,
			line: "agent config set failed (exit code 14, folder or permissions): creating the configuration folder"},
		{name: "pairing code refused", args: []string{"pair", "ABCD-EFGH", "--relay", refusing.URL}, code: 11,
			line: "agent pair failed (exit code 11, pairing code refused or expired): the relay refused the pairing code"},
		{name: "relay unreachable", args: []string{"pair", "ABCD-EFGH", "--relay", gone.URL}, code: 12,
			line: "agent pair failed (exit code 12, relay unreachable): reaching the relay"},
		{name: "unknown command", args: []string{"frobnicate"}, code: 1,
			line: "agent failed (exit code 1, failed): unknown command"},
		{name: "without --msi-log", args: []string{"config", "set", "relay-url", "ftp://relay.example"}, noLog: true, code: 1},
		{name: "success", args: []string{"config", "set", "relay-url", "https://relay.example", "token", canary}, code: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			log := filepath.Join(dir, "install.log")
			require.NoError(t, os.WriteFile(log, []byte("MSI (s): Doing action\r\n"), 0o600))
			config := tc.config
			if config == "" {
				config = filepath.Join(dir, "conf", "agent.json")
			}
			args := append(append([]string(nil), tc.args...), "--config", config)
			if !tc.noLog {
				args = append(args, "--msi-log", log)
			}
			ev := &eventLines{}
			var stdout, stderr bytes.Buffer
			code := execute(newRootCmd(&stdout), args, &stderr, func() (installlog.EventLog, error) { return ev, nil })
			require.Equal(t, tc.code, code, stderr.String())

			b, err := os.ReadFile(log)
			require.NoError(t, err)
			written := strings.TrimPrefix(string(b), "MSI (s): Doing action\r\n")
			assert.NotContains(t, written, canary[9:])
			assert.NotContains(t, stderr.String(), canary[9:])
			if tc.line == "" {
				assert.Empty(t, written)
				assert.Empty(t, ev.errors)
				return
			}
			require.Len(t, ev.errors, 1)
			assert.True(t, strings.HasPrefix(ev.errors[0], tc.line), ev.errors[0])
			assert.Regexp(t, `^TradeBridgeAgent \[[0-9TZ:-]+\] `, written)
			assert.Contains(t, written, ev.errors[0]+"\r\n")
			assert.Equal(t, 1, strings.Count(written, "\n"), "one line")
		})
	}
}

// --msi-log is found as parsed, or in a command line that did not parse;
// an empty FILE (an installation without a log) still counts.
func TestMSILogOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args  []string
		file  string
		given bool
	}{
		{[]string{"config", "clear", "--msi-log", `C:\log.txt`}, `C:\log.txt`, true},
		{[]string{"config", "clear", "--msi-log=x.log"}, "x.log", true},
		{[]string{"config", "clear", "--msi-log", ""}, "", true},
		{[]string{"config", "clear", "--bogus", "--msi-log", "y.log"}, "y.log", true},
		{[]string{"config", "clear"}, "", false},
		{[]string{"config", "--", "--msi-log", "z"}, "", false},
	} {
		root := newRootCmd(&bytes.Buffer{})
		root.SetArgs(tc.args)
		_ = root.Execute()
		file, given := msiLogOf(root, tc.args)
		assert.Equal(t, tc.file, file, "%q", tc.args)
		assert.Equal(t, tc.given, given, "%q", tc.args)
	}
	require.True(t, newRootCmd(&bytes.Buffer{}).PersistentFlags().Lookup(msiLogFlag).Hidden)
}

// A refusal for want of privileges is the installer's "needs elevation",
// unless a folder refused the process.
func TestPrivilegeErrorClass(t *testing.T) {
	t.Parallel()
	err := asPrivilegeError("config set", fmt.Errorf("open: %w", fs.ErrPermission))
	assert.Equal(t, installlog.ClassNeedsElevation, installlog.ClassOf(fmt.Errorf("x: %w", err)))
	folder := asPrivilegeError("config set", installlog.WithClass(fmt.Errorf("creating the configuration folder: %w", fs.ErrPermission),
		installlog.ClassFolder))
	var pe *privilegeError
	require.ErrorAs(t, folder, &pe, "the message still says what would help a person")
	assert.Equal(t, installlog.ClassFolder, installlog.ClassOf(folder))
}

// The installer's uninstallation says what stays on the PC, in the
// installer's log and the Event Log.
func TestUninstallSaysWhatStays(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "uninstall.log")
	require.NoError(t, os.WriteFile(log, nil, 0o600))
	code := execute(newRootCmd(&bytes.Buffer{}), []string{"uninstall", "--msi", "--msi-log", log}, &bytes.Buffer{},
		func() (installlog.EventLog, error) { return &eventLines{}, nil })
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Contains(t, string(b), "was uninstalled. Left on this PC:")
	assert.Contains(t, string(b), winsvc.MachinePaths().LogDir)
	if code != 0 { // outside Windows the Event Log source is not there to remove
		assert.Contains(t, string(b), "Windows only")
	}

	p := winsvc.Paths{ConfigFile: filepath.Join("PD", "TradeBridge", "Agent", "config.json"),
		LogDir: filepath.Join("PD", "TradeBridge", "Agent", "logs"), DataDir: filepath.Join("PD", "TradeBridge", "Agent", "data")}
	for _, still := range []bool{false, true} {
		text := leftBehind(p, func(string) bool { return still })
		for _, want := range []string{p.LogDir, p.DataDir, "delete " + filepath.Join("PD", "TradeBridge") + " when",
			`%LOCALAPPDATA%\TradeBridge\ninjatrader-addon.json`, `bin\Custom\AddOns`, "NinjaScript Editor"} {
			assert.Contains(t, text, want)
		}
		assert.Equal(t, still, strings.Contains(text, p.ConfigFile+", with the agent token"), "config still there: %v", still)
	}
}

// status --pause adds a summary for people: the service's state, the
// relay, whether a token is set (never the token), the platform.
func TestStatusSummary(t *testing.T) {
	t.Parallel()
	running := winsvc.Report{Service: winsvc.Name, Status: winsvc.StatusRunning}
	for _, tc := range []struct {
		name     string
		r        winsvc.Report
		cfg      Config
		err      error
		want     []string
		unwanted []string
	}{
		{name: "paired", r: running, cfg: Config{RelayURL: "https://relay.example", Token: "tb_agent_secret", Platform: "ninjatrader"},
			want:     []string{"Service:       running", "Relay:         https://relay.example", "Token:         set", "Platform:      ninjatrader"},
			unwanted: []string{"tb_agent_secret", "Not paired"}},
		{name: "no token", r: running, cfg: Config{RelayURL: "https://relay.example"},
			want: []string{"Token:         not set", "Platform:      not set", "Pair this PC"}},
		{name: "no configuration", r: winsvc.Report{Status: winsvc.StatusStopped}, err: fmt.Errorf("reading: %w", fs.ErrNotExist),
			want: []string{"Service:       stopped", "Not paired yet", "Pair this PC"}, unwanted: []string{"Relay:"}},
		{name: "administrators only", r: winsvc.Report{Status: winsvc.StatusNotInstalled}, err: fmt.Errorf("reading: %w", fs.ErrPermission),
			want: []string{"not installed", "run this entry as administrator"}, unwanted: []string{"Token:"}},
		{name: "invalid", r: winsvc.Report{Status: winsvc.StatusUnknown}, err: errors.New("the config file is not valid"),
			want: []string{"unknown", "cannot be used: the config file is not valid"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			writeStatusSummary(&b, tc.r, "/etc/agent.json", tc.cfg, tc.err)
			assert.Contains(t, b.String(), "Configuration: /etc/agent.json")
			for _, w := range tc.want {
				assert.Contains(t, b.String(), w)
			}
			for _, w := range tc.unwanted {
				assert.NotContains(t, b.String(), w)
			}
		})
	}

	root := &cobra.Command{Use: "agent", SilenceUsage: true, SilenceErrors: true}
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetIn(strings.NewReader("\n"))
	root.AddCommand(newServiceCmds(func() (controller, error) { return &fakeService{status: service.StatusRunning}, nil }, noPairEnv())...)
	root.SetArgs([]string{"status", "--pause"})
	require.NoError(t, root.Execute())
	first, rest, _ := strings.Cut(out.String(), "\n")
	assert.Equal(t, `{"service":"TradeBridgeAgent","status":"running"}`, first, "the JSON first, as without --pause")
	assert.Contains(t, rest, "Service:       running")
	assert.NotContains(t, rest, "Press Enter", "no console: no wait")
}

// The wait happens in a console only (a character device here).
func TestWaitForEnter(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	waitForEnter(&b, strings.NewReader("\n"))
	assert.Empty(t, b.String())
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	require.NoError(t, w.Close())
	waitForEnter(&b, r)
	assert.Empty(t, b.String(), "a pipe is no console")
	null, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer null.Close()
	waitForEnter(&b, null)
	assert.Contains(t, b.String(), "Press Enter to close this window.")
}

// The command lines the MSI's custom actions and Start-menu entries run
// (installer/wix/agent.wxs) are the agent's; `pair` and `unpair` are
// checked with their command's own tests.
func TestInstallerCommandLines(t *testing.T) {
	t.Parallel()
	const log = `C:\Windows\Temp\MSI1234.LOG`
	for _, line := range [][]string{
		{"status", "--pause"},
		{"diag", "--pause"},
		{"install", "--msi", "--msi-log", log},
		{"uninstall", "--msi", "--msi-log", log},
		{"config", "set", "relay-url", "https://relay.example", "--msi-log", log},
		{"config", "set", "token", "tb_agent_x", "--msi-log", ""},
		{"config", "clear", "--msi-log", log},
	} {
		root := newRootCmd(&bytes.Buffer{})
		cmd, rest, err := root.Find(line)
		require.NoError(t, err, "%q", line)
		require.NoError(t, cmd.ParseFlags(rest), "%q", line)
		require.NoError(t, cmd.ValidateArgs(cmd.Flags().Args()), "%q", line)
		file, given := msiLogOf(root, line)
		assert.Equal(t, slices.Contains(line, "--msi-log"), given, "%q", line)
		if given {
			assert.Equal(t, line[len(line)-1], file)
		}
	}
}
