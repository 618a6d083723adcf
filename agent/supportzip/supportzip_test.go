package supportzip

import (
	"archive/zip"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/agent/diag"
	"tradebridge/agent/winsvc"
	"tradebridge/internal/testkit"
	"tradebridge/protocol"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// readZip returns the files of the zip at path by name.
func readZip(t *testing.T, path string) map[string]string {
	t.Helper()
	zr, err := zip.OpenReader(path)
	require.NoError(t, err)
	defer zr.Close()
	files := make(map[string]string)
	for _, f := range zr.File {
		rc, err := f.Open()
		require.NoError(t, err)
		b, err := io.ReadAll(rc)
		rc.Close()
		require.NoError(t, err)
		files[f.Name] = string(b)
	}
	return files
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	writeFile(t, path, string(b))
}

func random(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}

// The zip holds the agent's snapshot, the checks made now, the
// configuration and the log's tail, and never the token or the
// NinjaTrader secret, in any of the forms they could take.
func TestZip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	token := "tb_agent_" + base64.RawURLEncoding.EncodeToString(random(t, 32))
	secret := hex.EncodeToString(random(t, 16))

	relay := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" || r.Header.Get("Authorization") != "" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, `{"status":"ok"}`)
	}))
	defer relay.Close()
	addon, err := net.Listen("tcp", "127.0.0.1:0") // the add-on's port: dialled, never spoken to
	require.NoError(t, err)
	defer addon.Close()

	discovery := filepath.Join(dir, "programdata", "ninjatrader-addon.json")
	writeJSON(t, discovery, map[string]any{"version": 1, "port": addon.Addr().(*net.TCPAddr).Port,
		"secret": secret, "addonVersion": "1.2.3"})
	ntDir := filepath.Join(dir, "NinjaTrader 8")
	writeFile(t, filepath.Join(ntDir, addonSource), "// add-on")
	dataDir := filepath.Join(dir, "data")
	logDir := filepath.Join(dir, "logs")
	cfgFile := filepath.Join(dir, "agent.json")
	cfg := Config{RelayURL: relay.URL, Token: token, Platform: "ninjatrader", DataDir: dataDir,
		NinjaTrader: NinjaTrader{DiscoveryFile: discovery, Secret: secret, Dir: ntDir}}

	snap := protocol.Diagnostics{At: time.Now().UTC(), AgentVersion: "0.16.1",
		Config: protocol.DiagnosticConfig{RelayURL: relay.URL, Platform: "ninjatrader", TokenID: tokenID(token),
			LogFile: filepath.Join(logDir, "agent.log")},
		Bridge: protocol.BridgeDiagnostic{Kind: "ninjatrader", Connections: []protocol.Connection{}},
		Errors: []protocol.ErrorCount{{Level: "warn", Message: "tunnel connection failed", Count: 3}}}
	require.NoError(t, os.MkdirAll(dataDir, 0o700))
	require.NoError(t, diag.WriteSnapshot(filepath.Join(dataDir, diag.SnapshotName), snap))

	var log strings.Builder
	for i := range 3000 {
		switch i % 500 {
		case 7:
			fmt.Fprintf(&log, `{"level":"info","msg":"dialing","header":"Bearer %s"}`+"\n", token)
		case 8:
			fmt.Fprintf(&log, `{"level":"info","msg":"secret %s"}`+"\n", secret)
		case 9:
			fmt.Fprintf(&log, `{"level":"debug","raw":"%s"}`+"\n", base64.StdEncoding.EncodeToString([]byte(token)))
		default:
			fmt.Fprintf(&log, `{"level":"info","msg":"line %d"}`+"\n", i)
		}
	}
	writeFile(t, filepath.Join(logDir, "agent.log"), log.String())

	path, err := Write(t.Context(), Options{Config: cfg, ConfigFile: cfgFile,
		Out: filepath.Join(dir, "out.zip"), Lines: 2000, Hostname: "trader-pc", Getenv: env(nil),
		Machine: winsvc.Paths{ConfigFile: filepath.Join(dir, "machine.json"), LogDir: filepath.Join(dir, "nologs"),
			DataDir: filepath.Join(dir, "nodata")},
		UserDataDir: func() (string, error) { return filepath.Join(dir, "user"), nil },
		Service:     func() any { return winsvc.Report{Service: winsvc.Name, Status: winsvc.StatusRunning} },
		Now:         time.Now})
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "out.zip"), path)
	files := readZip(t, path)
	require.ElementsMatch(t, []string{"summary.json", "live.json", "config.json", "logs/agent.log", "service.json"},
		slices.Collect(maps.Keys(files)))

	forbidden := []string{token, secret, token[len("tb_agent_"):]}
	for _, s := range []string{token, secret} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			forbidden = append(forbidden, enc.EncodeToString([]byte(s)))
		}
	}
	for name, content := range files {
		for _, f := range forbidden {
			require.NotContains(t, content, f, "%s holds a secret", name)
		}
		if strings.HasSuffix(name, ".json") {
			require.True(t, json.Valid([]byte(content)), "%s is JSON", name)
		}
	}

	var summary summaryReport
	require.NoError(t, json.Unmarshal([]byte(files["summary.json"]), &summary))
	require.Equal(t, filepath.Join(dataDir, diag.SnapshotName), summary.File)
	require.NotNil(t, summary.Diagnostics)
	require.Equal(t, "ninjatrader", summary.Diagnostics.Bridge.Kind)
	require.Equal(t, "tunnel connection failed", summary.Diagnostics.Errors[0].Message)
	require.NotNil(t, summary.AgeSeconds)
	require.GreaterOrEqual(t, *summary.AgeSeconds, int64(0))
	require.Less(t, *summary.AgeSeconds, int64(60))

	var live liveReport
	require.NoError(t, json.Unmarshal([]byte(files["live.json"]), &live))
	require.Equal(t, "trader-pc", live.Host)
	require.NotEmpty(t, live.OS)
	require.NotNil(t, live.Relay)
	require.True(t, live.Relay.Reachable, "%+v", live.Relay)
	require.Equal(t, http.StatusOK, live.Relay.Status)
	require.Positive(t, live.Relay.RTTMillis)
	require.NotNil(t, live.Relay.ClockSkewMillis)
	require.InDelta(t, 0, *live.Relay.ClockSkewMillis, 1500, "the test relay shares this clock")
	require.NotNil(t, live.NinjaTrader)
	require.True(t, live.NinjaTrader.DiscoveryPresent)
	require.True(t, live.NinjaTrader.PortReachable, "%+v", live.NinjaTrader)
	require.True(t, live.NinjaTrader.AddonInstalled)
	require.Equal(t, "1.2.3", live.NinjaTrader.AddonVersion)

	var report configFileReport
	require.NoError(t, json.Unmarshal([]byte(files["config.json"]), &report))
	require.Empty(t, report.Error)
	require.Equal(t, tokenID(token), report.TokenID)
	require.Len(t, report.TokenID, 12)
	require.Equal(t, "ninjatrader", report.Platform)
	require.Equal(t, cfgFile, report.ConfigFile)
	require.NotNil(t, report.NinjaTrader)
	require.True(t, report.NinjaTrader.SecretSet)

	lines := strings.Split(strings.TrimRight(files["logs/agent.log"], "\n"), "\n")
	require.Len(t, lines, 2001, "a header and the last 2000 lines")
	require.Contains(t, lines[0], filepath.Join(logDir, "agent.log"))
	require.Equal(t, `{"level":"info","msg":"line 2999"}`, lines[len(lines)-1])
	require.Equal(t, `{"level":"info","msg":"line 1000"}`, lines[1])
	require.Contains(t, files["logs/agent.log"], `"header":"Bearer `+diag.Redacted+`"`)

	var svc winsvc.Report
	require.NoError(t, json.Unmarshal([]byte(files["service.json"]), &svc))
	require.Equal(t, winsvc.StatusRunning, svc.Status)
}

// Without a configuration, a snapshot or a log the zip is still written,
// and says what is missing.
func TestZipWithNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path, err := Write(t.Context(), Options{ConfigFile: filepath.Join(dir, "missing.json"),
		ConfigErr: fmt.Errorf("reading the config file: %w", fs.ErrNotExist), Lines: 10,
		Out:    filepath.Join(dir, "out.zip"),
		Getenv: env(map[string]string{"AGENT_TOKEN": "tb_agent_fromtheenvironment_0123456789"}),
		Machine: winsvc.Paths{ConfigFile: filepath.Join(dir, "machine.json"), LogDir: filepath.Join(dir, "nologs"),
			DataDir: filepath.Join(dir, "nodata")},
		UserDataDir: func() (string, error) { return "", fmt.Errorf("no home") },
		Now:         time.Now})
	require.NoError(t, err)
	files := readZip(t, path)
	require.ElementsMatch(t, []string{"summary.json", "live.json", "config.json", "logs/agent.log"}, slices.Collect(maps.Keys(files)))
	require.NotContains(t, strings.Join(slices.Collect(maps.Values(files)), ""), "fromtheenvironment")

	var cfg configFileReport
	require.NoError(t, json.Unmarshal([]byte(files["config.json"]), &cfg))
	require.Contains(t, cfg.Error, "reading the config file")
	require.Equal(t, []string{"AGENT_TOKEN"}, cfg.Environment)
	var summary summaryReport
	require.NoError(t, json.Unmarshal([]byte(files["summary.json"]), &summary))
	require.Nil(t, summary.Diagnostics)
	require.NotEmpty(t, summary.Error)
	require.Contains(t, files["logs/agent.log"], "no log file found")
}

func TestReportedConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  Config
		want protocol.DiagnosticConfig
	}{
		{Config{RelayURL: "https://relay.example", Token: "tb_agent_x", Platform: "sim"},
			protocol.DiagnosticConfig{RelayURL: "https://relay.example", Platform: "sim", TokenID: "52dca309f4c3", ConfigFile: "c.json"}},
		{Config{RelayURL: "https://user:pw@relay.example/base?token=x#f", Platform: "ninjatrader", DataDir: "/d", LogDir: "/l",
			NinjaTrader: NinjaTrader{Secret: "s3cr3t"}},
			protocol.DiagnosticConfig{RelayURL: "https://relay.example/base", Platform: "ninjatrader", DataDir: "/d",
				LogFile: filepath.Join("/l", "agent.log"), ConfigFile: "c.json"}},
		{Config{RelayURL: "relay.example"}, protocol.DiagnosticConfig{RelayURL: "(not a URL like https://relay.example)", ConfigFile: "c.json"}},
	} {
		require.Equal(t, tc.want, ReportedConfig(tc.cfg, "c.json"))
	}
}

func TestTailLines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var all []string
	var b strings.Builder
	for i := range 5000 {
		l := fmt.Sprintf("%04d %s", i, strings.Repeat("x", i%150))
		all = append(all, l)
		b.WriteString(l + "\r\n")
	}
	path := filepath.Join(dir, "a.log")
	writeFile(t, path, strings.TrimSuffix(b.String(), "\r\n")) // no final newline
	for _, n := range []int{1, 10, 2000, 4999, 5000, 9000} {
		got, err := tailLines(path, n)
		require.NoError(t, err)
		require.Equal(t, all[max(0, len(all)-n):], got, "n=%d", n)
	}
	writeFile(t, filepath.Join(dir, "empty.log"), "")
	got, err := tailLines(filepath.Join(dir, "empty.log"), 5)
	require.NoError(t, err)
	require.Empty(t, got)
}

// Write refuses a negative number of lines.
func TestWriteValidates(t *testing.T) {
	t.Parallel()
	_, err := Write(t.Context(), Options{Lines: -1, Out: filepath.Join(t.TempDir(), "out.zip")})
	require.EqualError(t, err, "supportzip: Options.Lines must not be negative")
}

// The zip says which proxy the relay was asked through and where the
// agent found it, and never the proxy's password.
func TestZipReportsTheProxy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	password := "pw" + hex.EncodeToString(random(t, 8))
	proxy := testkit.NewConnectProxy(t, 0) // plain HTTP through it is refused: 405
	proxyHost := strings.TrimPrefix(proxy.URL, "http://")
	cfg := Config{RelayURL: "http://relay.example", Token: "tb_agent_" + hex.EncodeToString(random(t, 20)), Platform: "sim",
		Proxy: "http://trader:" + password + "@" + proxyHost}
	path, err := Write(t.Context(), Options{Config: cfg, Out: filepath.Join(dir, "out.zip"), Getenv: env(nil),
		Machine: winsvc.Paths{ConfigFile: filepath.Join(dir, "machine.json"), LogDir: filepath.Join(dir, "nologs"),
			DataDir: filepath.Join(dir, "nodata")}})
	require.NoError(t, err)
	files := readZip(t, path)
	for name, content := range files {
		require.NotContains(t, content, password, name)
	}
	var live struct {
		Relay relayCheck `json:"relay"`
	}
	require.NoError(t, json.Unmarshal([]byte(files["live.json"]), &live))
	require.Equal(t, proxyHost, live.Relay.Proxy)
	require.Equal(t, "config", live.Relay.ProxySource)
	require.Equal(t, http.StatusMethodNotAllowed, live.Relay.Status, "the check went through the proxy")
	var report configFileReport
	require.NoError(t, json.Unmarshal([]byte(files["config.json"]), &report))
	require.Equal(t, proxy.URL, report.Proxy)

	// Without a setting, the environment's proxy is reported as such.
	path, err = Write(t.Context(), Options{Config: Config{RelayURL: "http://relay.example", Platform: "sim"},
		Out: filepath.Join(dir, "env.zip"), Getenv: env(map[string]string{"HTTP_PROXY": proxy.URL}),
		Machine: winsvc.Paths{ConfigFile: filepath.Join(dir, "machine.json")}})
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(readZip(t, path)["live.json"]), &live))
	require.Equal(t, "environment", live.Relay.ProxySource)
	require.Equal(t, proxyHost, live.Relay.Proxy)
}
