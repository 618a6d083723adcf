package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/agent/supportzip"
	"tradebridge/agent/winsvc"
	"tradebridge/protocol"
)

const testToken = "tb_agent_Q2xlYXJseU5vdEFSZWFsVG9rZW5CdXRMb25nRW5vdWdo"

// agentCmd runs the agent's command line with stdin, returning its output.
func agentCmd(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := newRootCmd(&out)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// The installer's sequence: relay URL, token (from standard input),
// platform, one at a time; each merges into the file, the last makes the
// configuration the agent loads. The token is never printed.
func TestConfigSet(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "TradeBridge", "agent.json")
	out, err := agentCmd(t, "", "config", "set", "--config", file, "relay-url", "https://relay.example")
	require.NoError(t, err)
	var v configView
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	require.Equal(t, configView{ConfigFile: file, Exists: true, RelayURL: "https://relay.example", Token: "not set",
		Platform: "sim", Missing: []string{"token"}}, v)

	out, err = agentCmd(t, testToken+"\r\n", "config", "set", "--config", file, "token", "-")
	require.NoError(t, err)
	require.NotContains(t, out, testToken)
	require.Contains(t, out, `"token": "set"`)

	out, err = agentCmd(t, "", "config", "set", "--config", file, "platform", "ninjatrader",
		"ninjatrader.dir", filepath.Join(t.TempDir(), "NinjaTrader 8"), "ninjatrader.ati", "true")
	require.NoError(t, err)
	v = configView{}
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	require.Empty(t, v.Missing)
	require.True(t, v.NinjaTrader.ATI)

	cfg, err := loadConfig(file, Config{}, env(nil))
	require.NoError(t, err, "what config set writes, the agent loads")
	require.Equal(t, "https://relay.example", cfg.RelayURL)
	require.Equal(t, testToken, cfg.Token)
	require.Equal(t, "ninjatrader", cfg.Platform)
	require.True(t, cfg.NinjaTrader.ATI)

	out, err = agentCmd(t, "", "config", "show", "--config", file)
	require.NoError(t, err)
	require.NotContains(t, out, testToken)
	require.Contains(t, out, `"relayUrl": "https://relay.example"`)

	if runtime.GOOS != "windows" {
		st, err := os.Stat(file)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
		st, err = os.Stat(filepath.Dir(file))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), st.Mode().Perm(), "a folder config set creates is the owner's only")
	}
	entries, err := os.ReadDir(filepath.Dir(file))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left")

	out, err = agentCmd(t, "", "config", "clear", "--config", file)
	require.NoError(t, err)
	require.JSONEq(t, `{"configFile":`+quote(file)+`,"removed":true}`, out)
	require.NoFileExists(t, file)
	out, err = agentCmd(t, "", "config", "clear", "--config", file)
	require.NoError(t, err, "clearing twice is fine")
	require.Contains(t, out, `"removed": false`)
	out, err = agentCmd(t, "", "config", "show", "--config", file)
	require.NoError(t, err)
	require.Contains(t, out, `"exists": false`)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// A bad value is refused with a sentence that does not repeat it, and
// nothing is written.
func TestConfigSetRefuses(t *testing.T) {
	t.Parallel()
	abs := filepath.Join(t.TempDir(), "x")
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		err   string
	}{
		{"odd arguments", []string{"relay-url"}, "", "KEY VALUE pairs"},
		{"unknown key", []string{"tokken", "sneaky-value"}, "", "argument 1 is not a key"},
		{"ftp relay", []string{"relay-url", "ftp://relay.example"}, "", "http:// or https://"},
		{"relay without host", []string{"relay-url", "https://"}, "", "with a host"},
		{"relay with credentials", []string{"relay-url", "https://user:sneaky-value@relay.example"}, "", "http:// or https://"},
		{"relay with a query", []string{"relay-url", "https://relay.example/?token=sneaky-value"}, "", "http:// or https://"},
		{"empty token", []string{"token", "-"}, "\n", "must not be empty"},
		{"no stdin", []string{"token", "-"}, "", "standard input ended"},
		{"api token", []string{"token", "tb_api_sneaky-value"}, "", "API token"},
		{"token with a space", []string{"token", "sneaky value"}, "", "spaces"},
		{"platform", []string{"platform", "mt5"}, "", "sim or ninjatrader"},
		{"ati", []string{"ninjatrader.ati", "yes"}, "", "true or false"},
		{"relative data dir", []string{"data-dir", "data"}, "", "absolute path"},
		{"relative log dir", []string{"log-dir", "./logs"}, "", "absolute path"},
		{"one bad pair of two", []string{"data-dir", abs, "platform", "mt5"}, "", "sim or ninjatrader"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "agent.json")
			before := `{"relayUrl":"http://127.0.0.1:1","token":"tb_agent_kept","platform":"sim"}` + "\n"
			require.NoError(t, os.WriteFile(file, []byte(before), 0o600))
			_, err := agentCmd(t, tc.stdin, append([]string{"config", "set", "--config", file}, tc.args...)...)
			require.ErrorContains(t, err, tc.err)
			require.NotContains(t, err.Error(), "sneaky")
			after, rerr := os.ReadFile(file)
			require.NoError(t, rerr)
			require.Equal(t, before, string(after), "nothing is written")
		})
	}

	// A file that is not valid is not overwritten either.
	file := filepath.Join(t.TempDir(), "agent.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"relayUrl":`), 0o600))
	_, err := agentCmd(t, "", "config", "set", "--config", file, "platform", "sim")
	require.ErrorContains(t, err, "agent config clear")
}

// Empty paths return to their defaults; values of - are read in order.
func TestConfigSetPathsAndStdin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "agent.json")
	logs := filepath.Join(dir, "logs")
	_, err := agentCmd(t, "https://relay.example\n"+testToken, "config", "set", "--config", file,
		"relay-url", "-", "token", "-", "log-dir", logs, "data-dir", filepath.Join(dir, "data"))
	require.NoError(t, err)
	cfg, err := readConfigFile(file)
	require.NoError(t, err)
	require.Equal(t, Config{RelayURL: "https://relay.example", Token: testToken, LogDir: logs,
		DataDir: filepath.Join(dir, "data")}, cfg)
	_, err = agentCmd(t, "", "config", "set", "--config", file, "data-dir", "")
	require.NoError(t, err)
	cfg, err = readConfigFile(file)
	require.NoError(t, err)
	require.Empty(t, cfg.DataDir)
	require.Equal(t, logs, cfg.LogDir, "the other keys stay")
}

// config works on --config, else AGENT_CONFIG, else the machine's file.
func TestConfigFileOf(t *testing.T) {
	t.Parallel()
	machine := winsvc.MachinePaths().ConfigFile
	for _, tc := range []struct {
		flag, envFile string
		want          string
		machine       bool
	}{
		{"", "", machine, true},
		{"", "/x/a.json", "/x/a.json", false},
		{"/y/b.json", "/x/a.json", "/y/b.json", false},
		{machine, "", machine, true},
	} {
		got, isMachine := configFileOf(tc.flag, env(map[string]string{"AGENT_CONFIG": tc.envFile}))
		require.Equal(t, tc.want, got)
		require.Equal(t, tc.machine, isMachine)
	}
}

// proxy and proxy-pac are set, checked, shown without the proxy's
// password, loaded by the agent, and returned to their default by "".
func TestConfigSetProxy(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "agent.json")
	out, err := agentCmd(t, "http://trader:Secr3tProxyPw@proxy.corp:3128\n", "config", "set", "--config", file,
		"proxy", "-", "proxy-pac", "http://wpad.corp/proxy.pac")
	require.NoError(t, err)
	require.NotContains(t, out, "Secr3tProxyPw")
	var v configView
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	require.Equal(t, "http://trader:xxxxx@proxy.corp:3128", v.Proxy)
	require.Equal(t, "http://wpad.corp/proxy.pac", v.ProxyPAC)

	cfg, err := readConfigFile(file)
	require.NoError(t, err)
	require.Equal(t, "http://trader:Secr3tProxyPw@proxy.corp:3128", cfg.Proxy, "the agent gets the password")
	require.Equal(t, "http://wpad.corp/proxy.pac", cfg.ProxyPAC)
	require.Contains(t, secretsOf(file), "Secr3tProxyPw", "the support zip's redactor knows the password")
	require.Equal(t, "http://proxy.corp:3128", zipConfigReported(cfg).Proxy)

	_, err = agentCmd(t, "", "config", "set", "--config", file, "proxy", "direct", "proxy-pac", "")
	require.NoError(t, err)
	cfg, err = readConfigFile(file)
	require.NoError(t, err)
	require.Equal(t, "direct", cfg.Proxy)
	require.Empty(t, cfg.ProxyPAC)

	for _, tc := range []struct{ key, value string }{
		{"proxy", "proxy.corp:3128"},
		{"proxy", "socks5://proxy.corp:1080"},
		{"proxy", "http://proxy.corp:3128/path"},
		{"proxy", "DIRECT"},
		{"proxy-pac", "wpad.corp/proxy.pac"},
		{"proxy-pac", "file:///C:/proxy.pac"},
	} {
		_, err := agentCmd(t, "", "config", "set", "--config", file, tc.key, tc.value)
		require.Error(t, err, tc.value)
		require.NotContains(t, err.Error(), tc.value, "errors never repeat the value")
		require.Contains(t, err.Error(), tc.key)
	}
	cfg, err = readConfigFile(file)
	require.NoError(t, err)
	require.Equal(t, "direct", cfg.Proxy, "a refused value changes nothing")

	// A file edited by hand is checked too.
	require.NoError(t, os.WriteFile(file, []byte(`{"relayUrl":"https://relay.example","token":"`+testToken+`","proxy":"proxy:3128"}`), 0o600))
	_, err = loadConfig(file, Config{}, env(nil))
	require.ErrorContains(t, err, "proxy must be")
}

// zipConfigReported is cfg as the agent's diagnostics report it.
func zipConfigReported(cfg Config) protocol.DiagnosticConfig {
	return supportzip.ReportedConfig(zipConfig(cfg), "")
}
