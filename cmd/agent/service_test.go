package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kardianos/service"
	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"tradebridge/agent/winsvc"
	"tradebridge/internal/testkit"
	"tradebridge/trading/bridge/ninjatrader"
)

// lumberjack compresses and removes rotated files in a goroutine of its
// own that it never stops.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("gopkg.in/natefinch/lumberjack%2ev2.(*Logger).millRun"))
}

// fakeAgents stands for the agents the supervisor runs: each run reports
// its configuration, runs until its context ends (or fails at once when
// fail is set) and reports its end.
type fakeAgents struct {
	started chan Config
	stopped chan string // the token of the agent that stopped
	mu      sync.Mutex
	fail    error
}

func newFakeAgents() *fakeAgents {
	return &fakeAgents{started: make(chan Config, 10), stopped: make(chan string, 10)}
}

func (f *fakeAgents) run(ctx context.Context, cfg Config) error {
	f.started <- cfg
	defer func() { f.stopped <- cfg.Token }()
	f.mu.Lock()
	fail := f.fail
	f.mu.Unlock()
	if fail != nil {
		return fail
	}
	<-ctx.Done()
	return nil
}

func (f *fakeAgents) setFail(err error) {
	f.mu.Lock()
	f.fail = err
	f.mu.Unlock()
}

func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(testkit.Medium):
		require.FailNow(t, "timed out waiting: "+what)
	}
	var zero T
	return zero
}

func quiet[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case v := <-ch:
		require.FailNow(t, fmt.Sprintf("unexpected %s: %v", what, v))
	case <-time.After(100 * time.Millisecond):
	}
}

// The service waits for a configuration, runs the agent on it, and runs a
// new agent whenever the file's content changes; a file rewritten with
// the same content changes nothing; an invalid one stops the agent and
// is reported once.
func TestSupervisorFollowsTheConfigFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "agent.json")
	write := func(content string) { // whole, as config set writes
		require.NoError(t, os.WriteFile(file+".tmp", []byte(content), 0o600))
		require.NoError(t, os.Rename(file+".tmp", file))
	}
	agents := newFakeAgents()
	core, logs := observer.New(zapcore.InfoLevel)
	sup, err := newSupervisor(supervisorOptions{ConfigFile: file, Poll: 10 * time.Millisecond,
		Load: func() (Config, error) { return loadConfig(file, Config{}, env(nil)) }, Run: agents.run,
		Logger: zap.New(core)})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- sup.Run(context.Background()) }()

	quiet(t, agents.started, "agent without a configuration")
	waiting := func() []observer.LoggedEntry {
		return logs.FilterMessageSnippet("waits for a valid configuration").All()
	}
	require.Len(t, waiting(), 1, "said once, not at every poll")
	require.Equal(t, zapcore.ErrorLevel, waiting()[0].Level, "an error: it reaches the Event Log")

	write(`{"relayUrl":"http://127.0.0.1:1","token":"tb_agent_one"}`)
	require.Equal(t, "tb_agent_one", receive(t, agents.started, "first agent").Token)
	write(`{"relayUrl":"http://127.0.0.1:1","token":"tb_agent_one"}`)
	quiet(t, agents.stopped, "restart on the same content")

	write(`{"relayUrl":"http://127.0.0.1:1","token":"tb_agent_two","platform":"sim"}`)
	require.Equal(t, "tb_agent_one", receive(t, agents.stopped, "first agent stopped"))
	require.Equal(t, "tb_agent_two", receive(t, agents.started, "second agent").Token)

	write(`{"relayUrl":"ftp://relay","token":"tb_agent_two"}`)
	require.Equal(t, "tb_agent_two", receive(t, agents.stopped, "second agent stopped"))
	quiet(t, agents.started, "agent on an invalid configuration")
	require.Len(t, waiting(), 2)
	require.NotContains(t, fmt.Sprint(waiting()[1].Context), "tb_agent_two", "the error names no token")

	require.NoError(t, os.Remove(file))
	write(`{"relayUrl":"http://127.0.0.1:1","token":"tb_agent_three"}`)
	require.Equal(t, "tb_agent_three", receive(t, agents.started, "third agent").Token)

	require.NoError(t, sup.Close())
	require.Equal(t, "tb_agent_three", receive(t, agents.stopped, "Close stops the agent"))
	require.NoError(t, receive(t, done, "Run returns"))
	require.NoError(t, sup.Close(), "idempotent")
	require.NoError(t, sup.Run(context.Background()), "after Close, Run returns at once")
}

// An agent that stops by itself is started again after Retry; ending
// Run's context stops the agent.
func TestSupervisorRestartsAStoppedAgent(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "agent.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"relayUrl":"http://127.0.0.1:1","token":"tb_agent_one"}`), 0o600))
	agents := newFakeAgents()
	agents.setFail(errors.New("the state file is locked"))
	core, logs := observer.New(zapcore.InfoLevel)
	sup, err := newSupervisor(supervisorOptions{ConfigFile: file, Poll: 5 * time.Millisecond, Retry: 50 * time.Millisecond,
		Load: func() (Config, error) { return loadConfig(file, Config{}, env(nil)) }, Run: agents.run,
		Logger: zap.New(core)})
	require.NoError(t, err)
	defer sup.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sup.Run(ctx) }()

	receive(t, agents.started, "first agent")
	receive(t, agents.stopped, "first agent fails")
	began := time.Now()
	agents.setFail(nil)
	receive(t, agents.started, "started again")
	require.GreaterOrEqual(t, time.Since(began), 40*time.Millisecond, "after a pause")
	require.Equal(t, 1, logs.FilterMessageSnippet("the agent stopped").Len())

	cancel()
	receive(t, agents.stopped, "the agent stops with the context")
	require.NoError(t, receive(t, done, "Run returns"))

	_, err = newSupervisor(supervisorOptions{ConfigFile: file})
	require.Error(t, err)
}

// fakeService is the service manager's view of the agent's service.
type fakeService struct {
	status   service.Status
	statErr  error
	platform string
	err      error    // what every operation returns
	calls    []string // the operations called
}

func (f *fakeService) op(name string, next service.Status) error {
	f.calls = append(f.calls, name)
	if f.err != nil {
		return f.err
	}
	f.status, f.statErr = next, nil
	return nil
}
func (f *fakeService) Install() error   { return f.op("install", service.StatusStopped) }
func (f *fakeService) Start() error     { return f.op("start", service.StatusRunning) }
func (f *fakeService) Stop() error      { return f.op("stop", service.StatusStopped) }
func (f *fakeService) Restart() error   { return f.op("restart", service.StatusRunning) }
func (f *fakeService) Platform() string { return f.platform }
func (f *fakeService) Uninstall() error {
	err := f.op("uninstall", service.StatusUnknown)
	if err == nil {
		f.statErr = service.ErrNotInstalled
	}
	return err
}
func (f *fakeService) Status() (service.Status, error) { return f.status, f.statErr }

// runServiceCmd runs one of the service commands on svc.
func runServiceCmd(t *testing.T, svc *fakeService, args ...string) (string, error) {
	t.Helper()
	root := &cobra.Command{Use: "agent", SilenceUsage: true, SilenceErrors: true}
	var out bytes.Buffer
	root.SetOut(&out)
	root.AddCommand(newServiceCmds(func() (controller, error) { return svc, nil }, noPairEnv())...)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// The service commands print the service's state as JSON, refuse what
// the state does not allow, and say clearly when they need privileges.
func TestServiceCommands(t *testing.T) {
	t.Parallel()
	notInstalled := func() *fakeService {
		return &fakeService{statErr: service.ErrNotInstalled, platform: "linux-systemd"}
	}
	for _, tc := range []struct {
		name      string
		svc       *fakeService
		args      []string
		out       string
		err       string
		calls     []string
		privilege bool
	}{
		{name: "status not installed", svc: notInstalled(), args: []string{"status"},
			out: `{"service":"TradeBridgeAgent","status":"not-installed"}`},
		{name: "status running", svc: &fakeService{status: service.StatusRunning}, args: []string{"status"},
			out: `{"service":"TradeBridgeAgent","status":"running"}`},
		{name: "status unknown", svc: &fakeService{statErr: errors.New("service in failed state")}, args: []string{"status"},
			out: `{"service":"TradeBridgeAgent","status":"unknown"}`},
		{name: "install", svc: notInstalled(), args: []string{"install"},
			out: `{"service":"TradeBridgeAgent","status":"stopped"}`, calls: []string{"install"}},
		{name: "install twice", svc: &fakeService{status: service.StatusStopped, platform: "linux-systemd"},
			args: []string{"install"}, err: "installed already"},
		{name: "start", svc: &fakeService{status: service.StatusStopped}, args: []string{"start"},
			out: `{"service":"TradeBridgeAgent","status":"running"}`, calls: []string{"start"}},
		{name: "start not installed", svc: notInstalled(), args: []string{"start"}, err: "agent install"},
		{name: "restart", svc: &fakeService{status: service.StatusRunning}, args: []string{"restart"},
			out: `{"service":"TradeBridgeAgent","status":"running"}`, calls: []string{"restart"}},
		{name: "uninstall stops first", svc: &fakeService{status: service.StatusRunning}, args: []string{"uninstall"},
			out: `{"service":"TradeBridgeAgent","status":"not-installed"}`, calls: []string{"stop", "uninstall"}},
		{name: "uninstall not installed", svc: notInstalled(), args: []string{"uninstall"},
			out: `{"service":"TradeBridgeAgent","status":"not-installed"}`},
		{name: "stop refused", svc: &fakeService{status: service.StatusRunning, err: fmt.Errorf("systemctl: %w", os.ErrPermission)},
			args: []string{"stop"}, err: "stop " + winsvc.PrivilegeHint, calls: []string{"stop"}, privilege: true},
		{name: "install refused", svc: &fakeService{statErr: service.ErrNotInstalled, platform: "linux-systemd",
			err: &os.PathError{Op: "open", Path: "/etc/systemd/system/TradeBridgeAgent.service", Err: os.ErrPermission}},
			args: []string{"install"}, err: "install " + winsvc.PrivilegeHint, calls: []string{"install"}, privilege: true},
		{name: "msi install", svc: notInstalled(), args: []string{"install", "--msi"}, err: "Windows only"},
		{name: "msi uninstall", svc: notInstalled(), args: []string{"uninstall", "--msi"}, err: "Windows only"},
		{name: "install on another init", svc: &fakeService{statErr: service.ErrNotInstalled, platform: "unix-systemv"},
			args: []string{"install"}, err: "needs systemd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := runServiceCmd(t, tc.svc, tc.args...)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				var pe *privilegeError
				require.Equal(t, tc.privilege, errors.As(err, &pe))
			} else {
				require.NoError(t, err)
				require.Equal(t, tc.out, strings.TrimSpace(out))
			}
			require.Equal(t, tc.calls, tc.svc.calls)
		})
	}
}

// The service starts the agent with `run --service`, which reads the
// machine's configuration file unless told another.
func TestServiceConfigFile(t *testing.T) {
	t.Parallel()
	machine := winsvc.MachinePaths()
	require.Equal(t, machine.ConfigFile, serviceConfigFile("", env(nil)))
	require.Equal(t, "/x/a.json", serviceConfigFile("", env(map[string]string{"AGENT_CONFIG": "/x/a.json"})))
	require.Equal(t, "/y/b.json", serviceConfigFile("/y/b.json", env(map[string]string{"AGENT_CONFIG": "/x/a.json"})))

	dir := t.TempDir()
	file := filepath.Join(dir, "agent.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"relayUrl":"http://127.0.0.1:1","token":"tb_agent_x","logDir":"/logs/here"}`), 0o600))
	trustAll := func(string) error { return nil }
	cfg, err := loadServiceConfig(file, Config{}, env(nil), trustAll)
	require.NoError(t, err)
	require.Equal(t, machine.DataDir, cfg.DataDir, "the machine's data folder is the service's default")
	require.Equal(t, ninjatrader.Kind, cfg.Platform, "the service's platform is NinjaTrader unless chosen")
	logDir := func(file string, flags Config, check trustCheck) string {
		dir, _ := serviceLogDir(file, flags, env(nil), check)
		return dir
	}
	require.Equal(t, "/logs/here", logDir(file, Config{}, trustAll))
	require.Equal(t, "/flag", logDir(file, Config{LogDir: "/flag"}, trustAll))
	require.Equal(t, machine.LogDir, logDir(filepath.Join(dir, "none.json"), Config{}, trustAll))

	root := newRootCmd(&bytes.Buffer{})
	run, _, err := root.Find([]string{"run"})
	require.NoError(t, err)
	require.NotNil(t, run.Flags().Lookup(strings.TrimPrefix(winsvc.ServiceArguments[1], "--")),
		"run takes the service's arguments")
}
