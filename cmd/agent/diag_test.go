package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/agent/supportzip"
	"tradebridge/agent/winsvc"
)

// Without --config and AGENT_CONFIG, the machine configuration file is
// read when there is one.
func TestDiagFindsTheMachineConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	machine := winsvc.Paths{ConfigFile: writeConfig(t, `{"relayUrl":"https://relay.example","token":"tb_agent_x"}`),
		DataDir: filepath.Join(dir, "data")}
	d := diagConfig{getenv: env(nil), machine: machine}
	cfg, path, err := d.load()
	require.NoError(t, err)
	require.Equal(t, machine.ConfigFile, path)
	require.Equal(t, "https://relay.example", cfg.RelayURL)

	d.getenv = env(map[string]string{"AGENT_RELAY_URL": "https://other.example", "AGENT_TOKEN": "tb_agent_y",
		"AGENT_CONFIG": filepath.Join(dir, "none.json")})
	_, path, err = d.load()
	require.Error(t, err, "AGENT_CONFIG wins over the machine file")
	require.Equal(t, filepath.Join(dir, "none.json"), path)
}

// The command's flags and their defaults.
func TestDiagCommand(t *testing.T) {
	t.Parallel()
	cmd := newDiagCmd()
	for name, def := range map[string]string{"out": "", "config": "", "lines": "2000", "pause": "false"} {
		f := cmd.Flags().Lookup(name)
		require.NotNil(t, f, name)
		require.Equal(t, def, f.DefValue, name)
	}
	cmd.SetArgs([]string{"--lines", "-1"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	require.EqualError(t, cmd.Execute(), "--lines must be 0 or more")
}

// zipConfig carries every setting the zip and the diagnostics report.
func TestZipConfig(t *testing.T) {
	t.Parallel()
	cfg := Config{RelayURL: "https://relay.example", Token: "tb_agent_x", Platform: "ninjatrader", SimStart: "s",
		DataDir: "/d", LogDir: "/l", NinjaTrader: NinjaTraderConfig{DiscoveryFile: "f", Port: 1, Secret: "s3", Dir: "nt", ATI: true}}
	require.Equal(t, supportzip.Config{RelayURL: "https://relay.example", Token: "tb_agent_x", Platform: "ninjatrader",
		SimStart: "s", DataDir: "/d", LogDir: "/l",
		NinjaTrader: supportzip.NinjaTrader{DiscoveryFile: "f", Port: 1, Secret: "s3", Dir: "nt", ATI: true}}, zipConfig(cfg))
	require.Equal(t, []string{"tb_agent_x", "s3"}, secretsOf(writeConfig(t, `{"token":"tb_agent_x","misspelt":1,"ninjatrader":{"secret":"s3"}}`)),
		"a file the agent refuses still names its secrets")
	require.Nil(t, secretsOf(""))
}

// writeConfig writes a config file with content and returns its path.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.json")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}
