package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/kardianos/service"
	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"tradebridge/agent/winsvc"
	"tradebridge/trading/bridge/ninjatrader"
)

// untrusting is a trustCheck that refuses the listed paths and says the
// rest exist and are trusted.
func untrusting(paths ...string) trustCheck {
	return func(p string) error {
		for _, u := range paths {
			if p == u {
				return &winsvc.UntrustedError{Path: p, Reason: "its owner is not SYSTEM or the Administrators"}
			}
		}
		return nil
	}
}

// The service refuses a configuration whose file, folder, data folder,
// state file or log folder someone else than the administrators owns or
// may change.
func TestServiceRefusesUntrustedFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "agent.json")
	data, logs := filepath.Join(dir, "data"), filepath.Join(dir, "logs")
	cfgJSON := `{"relayUrl":"http://127.0.0.1:1","token":"tb_agent_x","dataDir":"` + data + `","logDir":"` + logs + `"}`
	require.NoError(t, os.WriteFile(file, []byte(cfgJSON), 0o600))
	state := stateFile(data, Config{RelayURL: "http://127.0.0.1:1", Token: "tb_agent_x"})

	for _, tc := range []struct {
		name      string
		untrusted string
	}{
		{"the config file", file},
		{"its folder", dir},
		{"the data folder", data},
		{"the state file", state},
		{"the log folder", logs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := loadServiceConfig(file, Config{}, env(nil), untrusting(tc.untrusted))
			require.ErrorIs(t, err, winsvc.ErrUntrusted)
			require.Contains(t, err.Error(), tc.untrusted, "the error names the file")
			require.NotContains(t, err.Error(), "tb_agent_x")
		})
	}
	cfg, err := loadServiceConfig(file, Config{}, env(nil), untrusting())
	require.NoError(t, err)
	require.True(t, cfg.asService)
	require.True(t, cfg.adminOwned, "a config file only administrators can change")

	// A data folder that does not exist is not created by the service.
	_, err = loadServiceConfig(file, Config{}, env(nil), func(p string) error {
		if p == data {
			return os.ErrNotExist
		}
		return nil
	})
	require.ErrorContains(t, err, "does not exist")

	// The log folder of an untrusted configuration is not used.
	got, ignored := serviceLogDir(file, Config{}, env(nil), untrusting(file))
	require.Equal(t, winsvc.MachinePaths().LogDir, got)
	require.ErrorIs(t, ignored, winsvc.ErrUntrusted)
	got, ignored = serviceLogDir(file, Config{}, env(nil), untrusting(logs))
	require.Equal(t, winsvc.MachinePaths().LogDir, got)
	require.ErrorIs(t, ignored, winsvc.ErrUntrusted)
	got, ignored = serviceLogDir(file, Config{}, env(nil), untrusting())
	require.Equal(t, logs, got)
	require.NoError(t, ignored)
	got, ignored = serviceLogDir(file, Config{}, env(nil), untrusting(logs, winsvc.MachinePaths().LogDir))
	require.Empty(t, got, "no safe folder: no log file")
	require.ErrorIs(t, ignored, winsvc.ErrUntrusted)
}

// On Linux the service's check is the real one: root's files that only
// root may write.
func TestServiceTrustsRootsFiles(t *testing.T) {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("needs root on Linux")
	}
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "agent.json")
	data := filepath.Join(dir, "data")
	require.NoError(t, os.Mkdir(data, 0o700))
	require.NoError(t, os.WriteFile(file, []byte(`{"relayUrl":"http://127.0.0.1:1","token":"tb_agent_x","dataDir":"`+data+`"}`), 0o600))
	_, err := loadServiceConfig(file, Config{}, env(nil), winsvc.CheckTrusted)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(file, 0o666))
	_, err = loadServiceConfig(file, Config{}, env(nil), winsvc.CheckTrusted)
	require.ErrorIs(t, err, winsvc.ErrUntrusted, "a file others may write")
	require.NoError(t, os.Chmod(file, 0o600))
	require.NoError(t, os.Chown(file, 1000, 1000))
	_, err = loadServiceConfig(file, Config{}, env(nil), winsvc.CheckTrusted)
	require.ErrorIs(t, err, winsvc.ErrUntrusted, "a user's file")
}

// A refused file that is repaired (same content, new owner) is loaded
// again: the supervisor watches the checks too.
func TestSupervisorReloadsARepairedFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "agent.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"relayUrl":"http://127.0.0.1:1","token":"tb_agent_one"}`), 0o600))
	var mu sync.Mutex
	check := untrusting(file)
	current := func(p string) error { mu.Lock(); defer mu.Unlock(); return check(p) }
	agents := newFakeAgents()
	core, logs := observer.New(zapcore.InfoLevel)
	sup, err := newSupervisor(supervisorOptions{ConfigFile: file, Poll: 10 * time.Millisecond,
		Load:  func() (Config, error) { return loadServiceConfig(file, Config{}, env(nil), current) },
		Watch: func() string { return trustState(current, file) },
		Run:   agents.run, Logger: zap.New(core)})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- sup.Run(context.Background()) }()

	quiet(t, agents.started, "agent on an untrusted file")
	waiting := logs.FilterMessageSnippet("waits for a valid configuration").All()
	require.Len(t, waiting, 1)
	require.Contains(t, waiting[0].ContextMap()["error"], "not safe for the service")

	mu.Lock()
	check = untrusting()
	mu.Unlock()
	require.Equal(t, "tb_agent_one", receive(t, agents.started, "agent once repaired").Token)
	require.NoError(t, sup.Close())
	receive(t, agents.stopped, "Close stops the agent")
	require.NoError(t, receive(t, done, "Run returns"))
}

// The service runs NinjaTrader unless the simulator is chosen; the
// foreground agent keeps the simulator as its default.
func TestPlatformDefaults(t *testing.T) {
	t.Parallel()
	base := map[string]string{"AGENT_RELAY_URL": "http://127.0.0.1:1", "AGENT_TOKEN": "tb_agent_x"}
	cfg, err := loadConfig("", Config{}, env(base))
	require.NoError(t, err)
	require.Equal(t, "sim", cfg.Platform)
	require.True(t, cfg.platformDefaulted)

	file := filepath.Join(t.TempDir(), "agent.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"relayUrl":"http://127.0.0.1:1","token":"tb_agent_x"}`), 0o600))
	cfg, err = loadServiceConfig(file, Config{}, env(nil), untrusting())
	require.NoError(t, err)
	require.Equal(t, ninjatrader.Kind, cfg.Platform)
	require.NoError(t, os.WriteFile(file, []byte(`{"relayUrl":"http://127.0.0.1:1","token":"tb_agent_x","platform":"sim"}`), 0o600))
	cfg, err = loadServiceConfig(file, Config{}, env(nil), untrusting())
	require.NoError(t, err)
	require.Equal(t, "sim", cfg.Platform, "chosen explicitly")
	require.False(t, cfg.platformDefaulted)
}

// The Windows service refuses the ATI fallback: it would write into the
// trader's folders as SYSTEM. `agent run` and other systems keep it.
func TestATIRefusedUnderTheWindowsService(t *testing.T) {
	t.Parallel()
	ati := Config{Platform: ninjatrader.Kind, NinjaTrader: NinjaTraderConfig{ATI: true}}
	require.ErrorIs(t, checkServiceConfig(ati, "windows"), ErrATIUnderService)
	require.Contains(t, ErrATIUnderService.Error(), "agent run")
	require.NoError(t, checkServiceConfig(ati, "linux"))
	require.NoError(t, checkServiceConfig(Config{Platform: ninjatrader.Kind}, "windows"))
	require.NoError(t, checkServiceConfig(Config{Platform: "sim", NinjaTrader: NinjaTraderConfig{ATI: true}}, "windows"))

	file := filepath.Join(t.TempDir(), "agent.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"relayUrl":"http://127.0.0.1:1","token":"tb_agent_x","ninjatrader":{"ati":true}}`), 0o600))
	_, err := loadServiceConfig(file, Config{}, env(nil), untrusting())
	if runtime.GOOS == "windows" {
		require.ErrorIs(t, err, ErrATIUnderService, "refused at config load")
	} else {
		require.NoError(t, err)
	}
}

// The foreground agent on the default simulator warns when the user's
// NinjaTrader add-on is running.
func TestSimWarnsWhenTheAddonRuns(t *testing.T) {
	t.Parallel()
	discovery := filepath.Join(t.TempDir(), "ninjatrader-addon.json")
	for _, tc := range []struct {
		name      string
		cfg       Config
		addonRuns bool
		warns     bool
	}{
		{"add-on running", Config{Platform: "sim", platformDefaulted: true}, true, true},
		{"no add-on", Config{Platform: "sim", platformDefaulted: true}, false, false},
		{"simulator chosen", Config{Platform: "sim"}, true, false},
	} {
		if tc.addonRuns {
			require.NoError(t, os.WriteFile(discovery, []byte("{}"), 0o600))
		} else {
			os.Remove(discovery)
		}
		tc.cfg.NinjaTrader.DiscoveryFile = discovery
		core, logs := observer.New(zapcore.WarnLevel)
		_, _, closeAll, err := openPlatform(tc.cfg, zap.New(core))
		require.NoError(t, err, tc.name)
		closeAll()
		require.Equal(t, tc.warns, logs.FilterMessageSnippet("add-on is running").Len() == 1, tc.name)
	}
}

// config show prints the effective platform: NinjaTrader for the
// machine's file when it names none (the service's default), the
// simulator for another.
func TestConfigShowsTheEffectivePlatform(t *testing.T) {
	t.Parallel()
	require.Equal(t, ninjatrader.Kind, viewConfig("m.json", true, true, Config{}).Platform)
	require.Equal(t, "sim", viewConfig("a.json", false, true, Config{}).Platform)
	require.Equal(t, "sim", viewConfig("m.json", true, true, Config{Platform: "sim"}).Platform)
}

// guardedService is a fake service with an install guard.
type guardedService struct {
	*fakeService
	msi     bool
	exeErr  error
	folders int // EnsureFolders calls
}

func (g *guardedService) MSIInstalled() (bool, error) { return g.msi, nil }
func (g *guardedService) CheckExecutable() error      { return g.exeErr }
func (g *guardedService) EnsureFolders() error        { g.folders++; return nil }

// runGuardedCmd runs one of the service commands on g.
func runGuardedCmd(g *guardedService, args ...string) error {
	root := &cobra.Command{Use: "agent", SilenceUsage: true, SilenceErrors: true}
	root.SetOut(io.Discard)
	root.AddCommand(newServiceCmds(func() (controller, error) { return g, nil }, noPairEnv())...)
	root.SetArgs(args)
	return root.Execute()
}

// One registration route: agent install refuses when the installer
// (MSI) installed the agent or when others may change the executable;
// agent uninstall refuses to remove the installer's service; both
// install routes create the machine's folders.
func TestInstallGuard(t *testing.T) {
	t.Parallel()
	notInstalled := func() *fakeService {
		return &fakeService{statErr: service.ErrNotInstalled, platform: "linux-systemd"}
	}
	untrusted := &winsvc.UntrustedError{Path: `C:\Users\bob\Downloads`, Reason: "its owner is not SYSTEM or the Administrators"}
	for _, tc := range []struct {
		name    string
		g       *guardedService
		args    []string
		err     error
		calls   []string
		folders int
	}{
		{"install", &guardedService{fakeService: notInstalled()}, []string{"install"}, nil, []string{"install"}, 1},
		{"install over the MSI's", &guardedService{fakeService: notInstalled(), msi: true}, []string{"install"},
			winsvc.ErrMSIInstalled, nil, 0},
		{"install from a user's folder", &guardedService{fakeService: notInstalled(), exeErr: untrusted}, []string{"install"},
			winsvc.ErrUntrusted, nil, 0},
		{"the installer's install step", &guardedService{fakeService: notInstalled(), msi: true}, []string{"install", "--msi"},
			winsvc.ErrWindowsOnly, nil, 1},
		{"uninstall the MSI's service", &guardedService{fakeService: &fakeService{status: service.StatusRunning}, msi: true},
			[]string{"uninstall"}, winsvc.ErrMSIInstalled, nil, 0},
		{"uninstall", &guardedService{fakeService: &fakeService{status: service.StatusRunning}}, []string{"uninstall"},
			nil, []string{"stop", "uninstall"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := runGuardedCmd(tc.g, tc.args...)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, tc.calls, tc.g.calls)
			require.Equal(t, tc.folders, tc.g.folders)
		})
	}
	require.Contains(t, winsvc.ErrMSIInstalled.Error(), "Apps & features")
}
