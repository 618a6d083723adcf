// Package supportzip writes the zip the agent's `agent diag` command hands
// to support staff: summary.json (the running agent's last diagnostics
// snapshot, agent/diag), live.json (checks made now: the relay reached
// over HTTP(S), the round trip, the clock's difference with the relay's,
// the NinjaTrader add-on's port), config.json (the configuration without
// its secrets), logs/agent.log (the log's last lines) and service.json
// (the system service's state). Every file passes through a
// diag.Redactor: the zip holds no token or secret. cmd/agent loads the
// configuration and wires Write to the command line.
package supportzip

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"tradebridge/agent"
	"tradebridge/agent/agentlog"
	"tradebridge/agent/diag"
	"tradebridge/agent/sysproxy"
	"tradebridge/agent/winsvc"
	"tradebridge/protocol"
	"tradebridge/trading/bridge/ninjatrader"
	"tradebridge/trading/bridge/ninjatrader/ntwire"
)

// Bounds of Write.
const (
	// DefaultLines is how many of the log's last lines the command
	// includes by default.
	DefaultLines = 2000
	// httpTimeout bounds each request to the relay.
	httpTimeout = 10 * time.Second
	// dialTimeout bounds the dial of the NinjaTrader add-on's port.
	dialTimeout = 2 * time.Second
	// maxTailBytes bounds how much of the log file is read for its tail.
	maxTailBytes = 32 << 20
)

// addonSource is the NinjaTrader add-on's source file relative to
// NinjaTrader's user folder, present once the add-on is imported (as the
// bridge checks it).
var addonSource = filepath.Join("bin", "Custom", "AddOns", "TradeBridgeAddOn.cs")

// Config is the agent's configuration as the zip reports it: what
// `agent run` would load from its flags, environment and file.
type Config struct {
	RelayURL, Token, Platform string
	// SimStart is the simulator's start (RFC 3339), if set.
	SimStart string
	// DataDir and LogDir are the configured folders; empty for the
	// defaults.
	DataDir, LogDir string
	// Proxy and ProxyPAC are the proxy settings (sysproxy.Options.Proxy
	// and PACURL); Proxy may carry a password, which the zip leaves out.
	Proxy, ProxyPAC string
	NinjaTrader     NinjaTrader
}

// NinjaTrader is the configuration of the NinjaTrader bridge.
type NinjaTrader struct {
	DiscoveryFile string
	Port          int
	Secret        string
	Dir           string
	ATI           bool
}

// Options configure Write.
type Options struct {
	// Config is the configuration (what could be read of it when it is
	// not valid), ConfigFile the file it was read from ("" for none), and
	// ConfigErr why it is not valid or could not be read.
	Config     Config
	ConfigFile string
	ConfigErr  error
	// Secrets are more texts kept out of the zip, beside Config's token
	// and NinjaTrader secret and AGENT_TOKEN: those the configuration
	// file holds when it is not valid.
	Secrets []string
	// Out is the zip file to write; default
	// tradebridge-diag-<Hostname>-<UTC time>.zip in the current folder.
	Out string
	// Lines is how many of the log's last lines to include; 0 leaves
	// the log out; negative is invalid.
	Lines int
	// Hostname names the computer, in live.json and the default Out.
	Hostname string
	// Getenv reads the environment; default os.Getenv.
	Getenv func(string) string
	// Machine are the machine's folders of the agent as a service.
	Machine winsvc.Paths
	// UserDataDir is the data folder of an agent run by the user; nil
	// means none.
	UserDataDir func() (string, error)
	// Service reports the system service's state; nil leaves
	// service.json out.
	Service func() any
	// HTTPClient asks the relay; nil builds one that goes through the
	// proxy Proxy chooses.
	HTTPClient *http.Client
	// Proxy chooses the proxy to the relay for live.json; nil builds one
	// from Config's proxy settings (the environment and the machine's
	// settings after them).
	Proxy *sysproxy.Resolver
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Write validates opts, writes the zip and returns its absolute path.
func Write(ctx context.Context, opts Options) (string, error) {
	if opts.Lines < 0 {
		return "", errors.New("supportzip: Options.Lines must not be negative")
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.UserDataDir == nil {
		opts.UserDataDir = func() (string, error) { return "", nil }
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return (&run{Options: opts}).build(ctx)
}

// run is one Write.
type run struct {
	Options
}

// build writes the zip and returns its path.
func (d *run) build(ctx context.Context) (string, error) {
	now := d.Now()
	cfg, cfgFile, cfgErr := d.Config, d.ConfigFile, d.ConfigErr
	red := diag.NewRedactor(append(slices.Clone(d.Secrets), cfg.Token, cfg.NinjaTrader.Secret, d.Getenv("AGENT_TOKEN"),
		ProxyPassword(cfg.Proxy))...)

	files := []zipFile{}
	add := func(name string, v any) {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			b, _ = json.Marshal(map[string]string{"error": "encoding " + name + " failed"})
		}
		files = append(files, zipFile{name: name, data: append(b, '\n')})
	}

	summary, logDirs := d.summary(cfg, cfgFile, now)
	add("summary.json", summary)
	add("live.json", d.live(ctx, cfg, now))
	add("config.json", d.configReport(cfg, cfgFile, cfgErr))
	if d.Lines > 0 {
		files = append(files, d.logTail(append(append([]string{cfg.LogDir}, logDirs...), d.Machine.LogDir), red))
	}
	if d.Service != nil {
		add("service.json", d.Service())
	}

	out := d.Out
	if out == "" {
		out = fmt.Sprintf("tradebridge-diag-%s-%s.zip", safeName(d.Hostname), now.UTC().Format("20060102T150405Z"))
	}
	if abs, err := filepath.Abs(out); err == nil {
		out = abs
	}
	if err := writeZip(out, files, red, now); err != nil {
		return "", err
	}
	return out, nil
}

// ReportedConfig is the configuration as the agent's diagnostics report
// it (protocol.Diagnostics.Config, and config.json here): without its
// secrets, the token shown by its id only.
func ReportedConfig(cfg Config, configFile string) protocol.DiagnosticConfig {
	r := protocol.DiagnosticConfig{
		RelayURL:   safeURL(cfg.RelayURL),
		Platform:   cfg.Platform,
		TokenID:    tokenID(cfg.Token),
		ConfigFile: configFile,
		DataDir:    cfg.DataDir,
	}
	if cfg.LogDir != "" {
		r.LogFile = filepath.Join(cfg.LogDir, agentlog.FileName)
	}
	r.Proxy, r.ProxyPAC = safeProxy(cfg.Proxy), safeURL(cfg.ProxyPAC)
	return r
}

// safeProxy is a proxy setting without user or password.
func safeProxy(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return s // "", "direct" (a setting the agent accepted has no other form)
	}
	return sysproxy.Redact(u)
}

// ProxyPassword is the password in a proxy setting, for the redactors;
// "" when none.
func ProxyPassword(setting string) string {
	u, err := url.Parse(setting)
	if err != nil || u.User == nil {
		return ""
	}
	p, _ := u.User.Password()
	return p
}

// tokenID is the first 12 hex digits of the token's SHA-256: the id the
// relay's `relay tokens list` shows. Empty without a token.
func tokenID(token string) string {
	if token == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])[:12]
}

// safeURL is the relay URL without anything that may carry a credential
// (user information, a query, a fragment).
func safeURL(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "(not a URL like https://relay.example)"
	}
	return sysproxy.Redact(u)
}

// configFileReport is config.json: the configuration without secrets.
type configFileReport struct {
	protocol.DiagnosticConfig
	// Error says why the configuration is not valid or cannot be read.
	Error string `json:"error,omitempty"`
	// Environment names the AGENT_* variables set (never their values).
	Environment []string `json:"environment"`
	SimStart    string   `json:"simStart,omitempty"`
	NinjaTrader *struct {
		DiscoveryFile string `json:"discoveryFile,omitempty"`
		Port          int    `json:"port,omitempty"`
		SecretSet     bool   `json:"secretSet"`
		Dir           string `json:"dir,omitempty"`
		ATI           bool   `json:"ati"`
	} `json:"ninjatrader,omitempty"`
}

func (d *run) configReport(cfg Config, cfgFile string, cfgErr error) configFileReport {
	r := configFileReport{DiagnosticConfig: ReportedConfig(cfg, cfgFile), SimStart: cfg.SimStart, Environment: []string{}}
	if cfgErr != nil {
		r.Error = cfgErr.Error()
		if errors.Is(cfgErr, fs.ErrPermission) {
			r.Error += " (run agent diag as an administrator to read the machine configuration)"
		}
	}
	for _, k := range []string{"AGENT_CONFIG", "AGENT_RELAY_URL", "AGENT_TOKEN", "AGENT_PLATFORM", "AGENT_DATA", "AGENT_LOG_DIR", "AGENT_SIM_START"} {
		if d.Getenv(k) != "" {
			r.Environment = append(r.Environment, k)
		}
	}
	if cfg.Platform == ninjatrader.Kind || cfg.NinjaTrader != (NinjaTrader{}) {
		nt := cfg.NinjaTrader
		r.NinjaTrader = &struct {
			DiscoveryFile string `json:"discoveryFile,omitempty"`
			Port          int    `json:"port,omitempty"`
			SecretSet     bool   `json:"secretSet"`
			Dir           string `json:"dir,omitempty"`
			ATI           bool   `json:"ati"`
		}{nt.DiscoveryFile, nt.Port, nt.Secret != "", nt.Dir, nt.ATI}
	}
	return r
}

// summaryReport is summary.json: the running agent's last snapshot.
type summaryReport struct {
	// File is the snapshot read; WrittenAt when the agent wrote it and
	// AgeSeconds how long before this zip. A running agent rewrites it
	// every 15 s: an old one means the agent is not running.
	File        string                `json:"file,omitempty"`
	WrittenAt   *time.Time            `json:"writtenAt,omitempty"`
	AgeSeconds  *int64                `json:"ageSeconds,omitempty"`
	Diagnostics *protocol.Diagnostics `json:"diagnostics,omitempty"`
	// Error says why there is no snapshot; Searched are the folders
	// looked in.
	Error    string   `json:"error,omitempty"`
	Searched []string `json:"searched,omitempty"`
}

// summary reads the agent's snapshot from the first data folder that has
// one, and returns the log folders it names.
func (d *run) summary(cfg Config, cfgFile string, now time.Time) (summaryReport, []string) {
	var dirs []string
	add := func(dir string) {
		if dir != "" && !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	add(cfg.DataDir)
	user, _ := d.UserDataDir()
	if cfgFile != "" && cfgFile == d.Machine.ConfigFile {
		add(d.Machine.DataDir)
		add(user)
	} else {
		add(user)
		add(d.Machine.DataDir)
	}
	r := summaryReport{Searched: dirs}
	var firstErr error
	for _, dir := range dirs {
		path := filepath.Join(dir, diag.SnapshotName)
		snap, at, err := diag.ReadSnapshot(path)
		if errors.Is(err, diag.ErrNoSnapshot) {
			continue
		}
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		age := int64(now.Sub(at) / time.Second)
		at = at.UTC()
		r = summaryReport{File: path, WrittenAt: &at, AgeSeconds: &age, Diagnostics: &snap}
		var logDirs []string
		if snap.Config.LogFile != "" {
			logDirs = append(logDirs, filepath.Dir(snap.Config.LogFile))
		}
		return r, logDirs
	}
	r.Error = "no diagnostics snapshot: the agent has not run with these data folders, or runs a version without diagnostics"
	if firstErr != nil {
		r.Error = firstErr.Error()
		if errors.Is(firstErr, fs.ErrPermission) {
			r.Error += " (run agent diag as an administrator to read the service's data folder)"
		}
	}
	return r, nil
}

// liveReport is live.json: what `agent diag` measured itself.
type liveReport struct {
	At           time.Time        `json:"at"`
	AgentVersion string           `json:"agentVersion"`
	OS           string           `json:"os"`
	Host         string           `json:"host,omitempty"`
	Relay        *relayCheck      `json:"relay,omitempty"`
	NinjaTrader  *ninjaTraderScan `json:"ninjatrader,omitempty"`
}

// relayCheck is the relay reached over HTTP(S) now.
type relayCheck struct {
	URL string `json:"url"`
	// Proxy is the HTTP proxy the agent goes through (its host only),
	// and ProxySource where the agent found it (sysproxy.Source: config,
	// environment, winhttp, pac or direct).
	Proxy       string `json:"proxy,omitempty"`
	ProxySource string `json:"proxySource,omitempty"`
	Reachable   bool   `json:"reachable"`
	Status      int    `json:"status,omitempty"`
	Error       string `json:"error,omitempty"`
	// ConnectMillis is the first request's time (DNS, TCP, TLS and one
	// round trip); RTTMillis a second request's on the same connection.
	ConnectMillis float64 `json:"connectMillis,omitempty"`
	RTTMillis     float64 `json:"rttMillis,omitempty"`
	// ClockSkewMillis is the relay's clock (its Date header) minus this
	// computer's, ±500 ms: the header counts whole seconds.
	ClockSkewMillis *int64 `json:"clockSkewMillis,omitempty"`
	// TLSIssuer names who issued the relay's certificate as this computer
	// sees it: a company proxy that inspects HTTPS shows up here.
	TLSIssuer string `json:"tlsIssuer,omitempty"`
}

// ninjaTraderScan is the NinjaTrader add-on as seen from outside it.
type ninjaTraderScan struct {
	DiscoveryFile    string `json:"discoveryFile"`
	DiscoveryPresent bool   `json:"discoveryPresent"`
	DiscoveryError   string `json:"discoveryError,omitempty"`
	AddonVersion     string `json:"addonVersion,omitempty"`
	AddonStartedAt   string `json:"addonStartedAt,omitempty"`
	Port             int    `json:"port,omitempty"`
	PortReachable    bool   `json:"portReachable"`
	PortError        string `json:"portError,omitempty"`
	NinjaTraderDir   string `json:"ninjaTraderDir,omitempty"`
	DirPresent       bool   `json:"dirPresent"`
	AddonInstalled   bool   `json:"addonInstalled"`
	ATI              bool   `json:"ati"`
}

func (d *run) live(ctx context.Context, cfg Config, now time.Time) liveReport {
	r := liveReport{At: now.UTC(), AgentVersion: agent.Version, OS: diag.OSDescription(), Host: d.Hostname}
	if cfg.RelayURL != "" {
		r.Relay = d.checkRelay(ctx, cfg)
	}
	if cfg.Platform == ninjatrader.Kind {
		r.NinjaTrader = scanNinjaTrader(ctx, cfg.NinjaTrader)
	}
	return r
}

// checkRelay asks the relay's /healthz twice: the first request opens the
// connection, the second measures the round trip and the clock skew.
func (d *run) checkRelay(ctx context.Context, cfg Config) *relayCheck {
	r := &relayCheck{URL: safeURL(cfg.RelayURL)}
	u, err := url.Parse(cfg.RelayURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		r.Error = "the relay URL must look like https://relay.example"
		return r
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	u = u.JoinPath("healthz")
	resolver := d.Proxy
	if resolver == nil {
		if resolver, err = sysproxy.New(sysproxy.Options{Proxy: cfg.Proxy, PACURL: cfg.ProxyPAC, Getenv: d.Getenv}); err != nil {
			r.Error = err.Error()
			return r
		}
	}
	client := d.HTTPClient
	if client == nil {
		t := &http.Transport{TLSHandshakeTimeout: httpTimeout}
		resolver.Configure(t)
		client = &http.Client{Timeout: httpTimeout, Transport: t}
		defer client.CloseIdleConnections()
	}
	choice := resolver.Choose(ctx, u)
	r.ProxySource = string(choice.Source)
	if choice.URL != nil {
		r.Proxy = choice.URL.Host
	}
	get := func() (*http.Response, time.Time, time.Time, error) {
		ctx, cancel := context.WithTimeout(ctx, httpTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, time.Time{}, time.Time{}, err
		}
		sent := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return nil, sent, time.Now(), err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		return resp, sent, time.Now(), nil
	}
	resp, sent, read, err := get()
	if err != nil {
		r.Error = "the relay cannot be reached: " + err.Error()
		return r
	}
	r.ConnectMillis = millis(read.Sub(sent))
	r.Status = resp.StatusCode
	r.Reachable = resp.StatusCode == http.StatusOK
	if !r.Reachable {
		r.Error = fmt.Sprintf("the relay answered HTTP %d to GET %s", resp.StatusCode, u.Path)
	}
	if resp.TLS != nil && len(resp.TLS.PeerCertificates) > 0 {
		r.TLSIssuer = resp.TLS.PeerCertificates[0].Issuer.String()
	}
	if resp2, sent2, read2, err := get(); err == nil {
		resp, sent, read = resp2, sent2, read2
		r.RTTMillis = millis(read.Sub(sent))
	}
	if date, err := http.ParseTime(resp.Header.Get("Date")); err == nil {
		mid := sent.Add(read.Sub(sent) / 2)
		skew := date.Add(500*time.Millisecond).UnixMilli() - mid.UnixMilli()
		r.ClockSkewMillis = &skew
	}
	return r
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// scanNinjaTrader looks for the add-on's discovery file, dials its port on
// 127.0.0.1 (without saying anything) and looks for the add-on in
// NinjaTrader's folder.
func scanNinjaTrader(ctx context.Context, nt NinjaTrader) *ninjaTraderScan {
	s := &ninjaTraderScan{DiscoveryFile: nt.DiscoveryFile, NinjaTraderDir: nt.Dir, ATI: nt.ATI}
	if s.DiscoveryFile == "" {
		s.DiscoveryFile = ninjatrader.DefaultDiscoveryFile()
	}
	b, err := os.ReadFile(s.DiscoveryFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.DiscoveryError = "no discovery file: NinjaTrader is not running, or the add-on is not installed"
	case err != nil:
		s.DiscoveryPresent = true
		s.DiscoveryError = "the discovery file cannot be read: " + err.Error()
	default:
		s.DiscoveryPresent = true
		var disc ntwire.Discovery
		if err := json.Unmarshal(b, &disc); err != nil {
			s.DiscoveryError = "the discovery file is not valid JSON"
		} else {
			s.Port = disc.Port
			s.AddonVersion = printable(disc.AddonVersion, 32)
			s.AddonStartedAt = printable(disc.StartedAt, 40)
			if s.NinjaTraderDir == "" && filepath.IsAbs(disc.UserDataDir) {
				s.NinjaTraderDir = disc.UserDataDir // NinjaTrader's own folder, as the add-on reports it
			}
		}
	}
	if s.NinjaTraderDir == "" {
		s.NinjaTraderDir = ninjatrader.DefaultNinjaTraderDir()
	}
	if nt.Port != 0 {
		s.Port = nt.Port
	}
	if s.Port > 0 && s.Port <= 65535 {
		dctx, cancel := context.WithTimeout(ctx, dialTimeout)
		conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)))
		cancel()
		if err != nil {
			s.PortError = "nothing answers on the add-on's port: " + err.Error()
		} else {
			s.PortReachable = true
			conn.Close()
		}
	}
	if s.NinjaTraderDir != "" {
		if fi, err := os.Stat(s.NinjaTraderDir); err == nil && fi.IsDir() {
			s.DirPresent = true
			_, err := os.Stat(filepath.Join(s.NinjaTraderDir, addonSource))
			s.AddonInstalled = err == nil
		}
	}
	return s
}

// printable keeps s when it is short printable ASCII, and drops it
// otherwise: it came from another program's file.
func printable(s string, max int) string {
	if len(s) > max {
		return ""
	}
	for _, r := range s {
		if r < ' ' || r > '~' {
			return ""
		}
	}
	return s
}

// logTail is logs/agent.log: the last lines of the newest log file in the
// first of dirs that has one, each passed through red.
func (d *run) logTail(dirs []string, red *diag.Redactor) zipFile {
	f := zipFile{name: "logs/agent.log"}
	var searched []string
	for _, dir := range dirs {
		if dir == "" || slices.Contains(searched, dir) {
			continue
		}
		searched = append(searched, dir)
		path := newestLog(dir)
		if path == "" {
			continue
		}
		lines, err := tailLines(path, d.Lines)
		if err != nil {
			f.data = []byte("# the log file " + path + " cannot be read: " + err.Error() + "\n")
			return f
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, "# the last %d lines of %s\n", len(lines), path)
		for _, l := range lines {
			b.WriteString(red.Redact(l))
			b.WriteByte('\n')
		}
		f.data = b.Bytes()
		return f
	}
	f.data = []byte("# no log file found in: " + strings.Join(searched, ", ") + "\n")
	return f
}

// newestLog is the agent's current log file in dir (agentlog.FileName),
// or else the newest uncompressed .log file there (rotated files are
// compressed and not read); "" when there is none.
func newestLog(dir string) string {
	if fi, err := os.Stat(filepath.Join(dir, agentlog.FileName)); err == nil && fi.Mode().IsRegular() {
		return filepath.Join(dir, agentlog.FileName)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	type cand struct {
		path string
		mod  time.Time
	}
	var cands []cand
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(strings.ToLower(e.Name()), ".log") {
			if fi, err := e.Info(); err == nil {
				cands = append(cands, cand{filepath.Join(dir, e.Name()), fi.ModTime()})
			}
		}
	}
	if len(cands) == 0 {
		return ""
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].mod.After(cands[j].mod) })
	return cands[0].path
}

// tailLines returns the last n lines of the file at path, reading at most
// maxTailBytes from its end.
func tailLines(path string, n int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	const chunk = 64 << 10
	var parts [][]byte // from the end backwards
	newlines := 0
	pos := size
	for pos > 0 && size-pos < maxTailBytes && newlines <= n {
		step := min(int64(chunk), pos)
		pos -= step
		part := make([]byte, step)
		if _, err := f.ReadAt(part, pos); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		newlines += bytes.Count(part, []byte{'\n'})
		parts = append(parts, part)
	}
	slices.Reverse(parts)
	text := strings.TrimRight(string(bytes.Join(parts, nil)), "\r\n")
	if text == "" {
		return nil, nil
	}
	lines := strings.Split(text, "\n")
	if pos > 0 && len(lines) > 0 {
		lines = lines[1:] // the first may be cut
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines, nil
}

// zipFile is one file of the zip.
type zipFile struct {
	name string
	data []byte
}

// writeZip writes files to path, each passed through red once more: the
// zip holds no secret whatever a part of it picked up.
func writeZip(path string, files []zipFile, red *diag.Redactor, now time.Time) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("creating the zip: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("writing the zip: %w", cerr)
		}
		if err != nil {
			_ = os.Remove(path)
		}
	}()
	zw := zip.NewWriter(f)
	for _, file := range files {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: file.name, Method: zip.Deflate, Modified: now})
		if err != nil {
			return fmt.Errorf("writing the zip: %w", err)
		}
		if _, err := io.WriteString(w, red.Redact(string(file.data))); err != nil {
			return fmt.Errorf("writing the zip: %w", err)
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("writing the zip: %w", err)
	}
	return nil
}

// safeName keeps the letters, digits, dots and dashes of a host name for a
// file name.
func safeName(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		}
		return '_'
	}, s)
	if s == "" {
		return "host"
	}
	return s
}
