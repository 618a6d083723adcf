package winsvc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kardianos/service"
	"github.com/stretchr/testify/require"
)

// kardianos/service renders the systemd unit from Config: the agent starts
// after the network with `run --service` and never a token, and systemd
// restarts it always, 5 s after it stopped. The unit is installed as a
// user service into a temporary home, with a fake systemctl first on the
// PATH; the system-wide unit differs only in its folder.
func TestSystemdUnit(t *testing.T) {
	home, bin := t.TempDir(), t.TempDir()
	calls := filepath.Join(bin, "calls")
	require.NoError(t, os.WriteFile(filepath.Join(bin, "systemctl"),
		[]byte("#!/bin/sh\necho \"$@\" >> '"+calls+"'\n"), 0o755))
	exe := filepath.Join(bin, "agent")
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755))
	t.Setenv("HOME", home)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("AGENT_TOKEN", "tb_agent_neverInTheUnitAAAAAAAAAAAAAAAAAAAAAAAAAA")

	// The systemd system, chosen by name: this machine's init may be
	// another, so it is not detected but taken from the list.
	var systemd service.System
	for _, s := range service.AvailableSystems() {
		if s.String() == "linux-systemd" {
			systemd = s
		}
	}
	require.NotNil(t, systemd, "kardianos/service offers systemd on Linux")
	cfg := Config(exe)
	cfg.Option["UserService"] = true // only here: the real unit is the system's
	s, err := systemd.New(idle{}, cfg)
	require.NoError(t, err)
	require.NoError(t, s.Install())

	path := filepath.Join(home, ".config", "systemd", "user", "TradeBridgeAgent.service")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	unit := string(b)
	lines := strings.Split(unit, "\n")
	require.Contains(t, lines, `ExecStart=`+exe+` "run" "--service"`)
	for _, want := range []string{"Restart=always", "RestartSec=5", "After=network-online.target",
		"Wants=network-online.target", "StartLimitIntervalSec=0", "UMask=0077", "WantedBy=multi-user.target"} {
		require.Contains(t, lines, want)
	}
	require.NotContains(t, strings.ToLower(unit), "token")
	require.NotContains(t, unit, "tb_agent_")
	require.NotContains(t, unit, "{{", "every template action was rendered")

	if analyze, err := exec.LookPath("systemd-analyze"); err == nil {
		// As a system unit: verifying a user unit needs a user session.
		out, err := exec.Command(analyze, "verify", path).CombinedOutput()
		require.NoError(t, err, "systemd-analyze verify: %s", out)
		require.Empty(t, strings.TrimSpace(string(out)), "systemd-analyze verify warns (an unknown key?)")
	}

	require.NoError(t, s.Uninstall())
	require.NoFileExists(t, path)
	got, err := os.ReadFile(calls)
	require.NoError(t, err)
	require.Equal(t, "enable --user TradeBridgeAgent.service\ndaemon-reload --user\n"+
		"disable --user TradeBridgeAgent.service\ndaemon-reload --user\n", string(got))
}
