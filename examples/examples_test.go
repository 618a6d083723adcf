// Package examples_test runs every example of examples/ and the smoke tests
// of the generated clients of clients/ against a real relay and agent on the
// simulator: the commands are built from cmd/relay and cmd/agent into a
// temporary folder once, and each test starts its own relay (on a free
// loopback port, with its own data folder) and agent.
//
// What the examples need beyond Go is installed by scripts/test-deps.sh (make
// test runs it): Debian's python3 packages for /usr/bin/python3, and npm ci in
// clients/typescript and clients/python/generator. A test whose tool is
// missing skips with a message saying how to install it, except under CI
// (CI set), where it fails (testkit.MissingTool). The browser test needs
// Debian's chromium (internal/browsertest), which make test installs too.
//
// The simulator keeps CME Globex hours, so each agent starts its simulator
// inside them (agent run --sim-start, see simStart): the examples trade at
// market whatever the hour.
package examples_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	_ "time/tzdata" // New York time on machines without the tz database

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"tradebridge/internal/browsertest"
	"tradebridge/internal/testkit"
)

// bin holds the relay and agent commands built by TestMain.
var bin struct{ relay, agent string }

// repo is the repository's root.
var repo string

func TestMain(m *testing.M) {
	flag.Parse()
	_, file, _, _ := runtime.Caller(0)
	repo = filepath.Dir(filepath.Dir(file))
	if testing.Short() {
		os.Exit(m.Run()) // every test skips
	}
	dir, err := os.MkdirTemp("", "tradebridge-examples-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin.relay = filepath.Join(dir, "relay")
	bin.agent = filepath.Join(dir, "agent")
	for _, b := range []struct{ out, pkg string }{{bin.relay, "./cmd/relay"}, {bin.agent, "./cmd/agent"}} {
		cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", b.pkg, err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// env is a relay and an agent on the simulator, with a user of the pro plan.
type env struct {
	url         string // the relay's base URL
	apiToken    string // standard profile
	compatToken string // compatible profile, when asked for
}

// start starts a relay and an agent for t; t.Cleanup stops both.
func start(t *testing.T, compatible bool) *env {
	t.Helper()
	return startPlan(t, compatible, "pro")
}

// startPlan is start with a user of the plan.
func startPlan(t *testing.T, compatible bool, plan string) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a relay and an agent; skipped with -short")
	}
	data := t.TempDir()
	logs := t.TempDir()
	var creds struct{ UserID, APIToken, AgentToken string }
	require.NoError(t, json.Unmarshal(output(t, bin.relay, "users", "add", "--data", data, "--name", "examples", "--plan", plan), &creds))
	require.NotEmpty(t, creds.APIToken)
	e := &env{apiToken: creds.APIToken}
	if compatible {
		var tok struct{ Token string }
		require.NoError(t, json.Unmarshal(output(t, bin.relay, "tokens", "issue", "--data", data, "--user", creds.UserID, "--kind", "api", "--profile", "compatible"), &tok))
		require.NotEmpty(t, tok.Token)
		e.compatToken = tok.Token
	}

	addr := freeAddr(t)
	e.url = "http://" + addr
	// Tests run relays side by side: none takes the default operator
	// address (127.0.0.1:9090).
	startProcess(t, filepath.Join(logs, "relay.log"), nil, bin.relay, "serve", "--listen", addr, "--operator-listen", "off", "--data", data)
	waitFor(t, 15*time.Second, "the relay to be ready", func() bool { return status(e.url+"/readyz", "") == http.StatusOK })
	startProcess(t, filepath.Join(logs, "agent.log"), []string{"AGENT_TOKEN=" + creds.AgentToken}, bin.agent, "run", "--relay", e.url, "--platform", "sim", "--sim-start", simStart(time.Now()), "--data", t.TempDir())
	waitFor(t, 15*time.Second, "the agent to connect", func() bool { return status(e.url+"/v1/api/accounts", e.apiToken) == http.StatusOK })
	t.Cleanup(func() {
		if t.Failed() {
			for _, name := range []string{"relay.log", "agent.log"} {
				b, _ := os.ReadFile(filepath.Join(logs, name))
				t.Logf("%s:\n%s", name, tail(b, 4000))
			}
		}
	})
	return e
}

// output runs a command to its end and returns its standard output.
func output(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s %s: %s", filepath.Base(name), args[0], stderr.String())
	return out
}

// startProcess starts a long-running command with its output in logFile;
// t.Cleanup stops it with SIGTERM, then SIGKILL after 10 s.
func startProcess(t *testing.T, logFile string, extraEnv []string, name string, args ...string) {
	t.Helper()
	f, err := os.Create(logFile)
	require.NoError(t, err)
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), extraEnv...)
	cmd.Stdout, cmd.Stderr = f, f
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		defer f.Close()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("%s did not stop within 10 s of SIGTERM; killed", filepath.Base(name))
			_ = cmd.Process.Kill()
			<-done
		}
	})
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

var httpClient = &http.Client{Timeout: 10 * time.Second}

// status returns the status of GET url, or 0 when the request failed.
func status(url, token string) int {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// getJSON returns the decoded body of GET path, which must answer 200.
func (e *env) getJSON(t *testing.T, path, token string) map[string]any {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.url+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := httpClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var v map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %v", path, v)
	return v
}

// placeMarket places a market order of one ES on Sim101 and returns its
// order id.
func (e *env) placeMarket(t *testing.T, action string) string {
	t.Helper()
	body := `{"action":"` + action + `","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day"}`
	req, err := http.NewRequest(http.MethodPost, e.url+"/v1/api/accounts/Sim101/orders/place", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+e.apiToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var v struct {
		OrderID string `json:"orderId"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotEmpty(t, v.OrderID)
	return v.OrderID
}

func waitFor(t *testing.T, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// simStart is a moment inside CME Globex hours near now, for the agents'
// simulators: the most recent Wednesday, 10:00 New York time. Contract
// months near it are the ones near today.
func simStart(now time.Time) string {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		panic(err)
	}
	t := now.In(ny)
	t = time.Date(t.Year(), t.Month(), t.Day(), 10, 0, 0, 0, ny)
	for t.Weekday() != time.Wednesday || t.After(now) {
		t = t.AddDate(0, 0, -1)
	}
	return t.Format(time.RFC3339)
}

// python returns the interpreter of the Python examples: $TB_PYTHON, else
// the system /usr/bin/python3, whose Debian packages scripts/test-deps.sh
// installs. It skips t when the interpreter lacks a module.
func python(t *testing.T, modules ...string) string {
	t.Helper()
	py := os.Getenv("TB_PYTHON")
	if py == "" {
		py = "/usr/bin/python3"
	}
	if _, err := exec.LookPath(py); err != nil {
		testkit.MissingTool(t, "%s not found", py)
	}
	if out, err := exec.Command(py, "-c", "import "+strings.Join(modules, ", ")).CombinedOutput(); err != nil {
		testkit.MissingTool(t, "%s cannot import %s: %s", py, strings.Join(modules, ", "), bytes.TrimSpace(out))
	}
	return py
}

// syncBuffer collects a process's output while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

// run runs an example to its end within limit and returns its output (both
// streams) and its error.
func run(t *testing.T, limit time.Duration, dir string, env []string, name string, args ...string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1"), env...)
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %v: %w", limit, err)
	}
	return out, err
}

// noToken fails t when out shows a token.
func noToken(t *testing.T, out []byte, tokens ...string) {
	t.Helper()
	for _, tok := range tokens {
		if tok != "" && bytes.Contains(out, []byte(tok)) {
			t.Fatal("the output shows the API token")
		}
	}
	require.NotContains(t, string(out), "tb_api_", "the output shows an API token")
}

func clientEnv(e *env, token string) []string {
	return []string{"RELAY_URL=" + e.url, "API_TOKEN=" + token}
}

func TestCurlWalkthrough(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		testkit.MissingTool(t, "curl not found")
	}
	e := start(t, false)
	out, err := run(t, 60*time.Second, repo, clientEnv(e, e.apiToken), "bash", "examples/curl.sh")
	require.NoError(t, err, "%s", out)
	noToken(t, out, e.apiToken)
	s := string(out)
	require.Contains(t, s, "Idempotent-Replayed: true")
	require.Contains(t, s, "same order: the replay placed nothing")
	require.Contains(t, s, "7. Flatten")
	require.Contains(t, s, `"kind":"order.replayed"`, "the activity log shows the replay")
	require.Contains(t, s, `"status":"executed"`, "the TradingView alerts ran")
	require.Regexp(t, `"orderType":"StopMarket"[^}]*"orderState":"(Accepted|Working)"`, s, "the alert's entry got its stop loss")
	require.NotRegexp(t, `whk_[A-Za-z0-9]`, s, "the webhook's key is never printed")
	require.True(t, strings.HasSuffix(strings.TrimSpace(s), "done"), "%s", s)
	positions := e.getJSON(t, "/v1/api/accounts/Sim101/positions", e.apiToken)
	require.Equal(t, float64(0), positions["data"].(map[string]any)["count"], "positions left: %v", positions)
}

func TestPythonBot(t *testing.T) {
	py := python(t, "websocket")
	e := start(t, false)
	// The account's older fills, a round trip before the bot starts, are
	// not the bot's: it reports only the fills of its own orders.
	older := []string{e.placeMarket(t, "Buy"), e.placeMarket(t, "Sell")}

	var out syncBuffer
	cmd := exec.Command(py, "-u", "examples/bot.py", "--seconds", "60")
	cmd.Dir = repo
	cmd.Env = append(append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1"), clientEnv(e, e.apiToken)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 2 * time.Second
	require.NoError(t, cmd.Start())
	// done is closed when the bot has exited; exitErr is then its error.
	done := make(chan struct{})
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // no-op once it has exited
		<-done
	})

	// Wait for the entry's fill, then Ctrl-C.
	deadline := time.After(30 * time.Second)
	waiting := true
	for waiting {
		select {
		case <-done:
			t.Fatalf("bot.py exited before a fill (%v):\n%s", exitErr, out.Bytes())
		case <-deadline:
			t.Fatalf("no fill within 30 s:\n%s", out.Bytes())
		case <-time.After(100 * time.Millisecond):
			b := out.Bytes()
			waiting = !bytes.Contains(b, []byte("fill: entry"))
		}
	}
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("bot.py did not stop within 20 s of SIGINT:\n%s", out.Bytes())
	}
	b := out.Bytes()
	require.NoError(t, exitErr, "%s", b)
	t.Logf("bot.py:\n%s", b)
	noToken(t, b, e.apiToken)
	s := string(b)
	require.Contains(t, s, "subscribed: ES")
	require.Contains(t, s, "placed: entry")
	require.Contains(t, s, "interrupted: flattening")
	require.Contains(t, s, "flattened: 1 position(s) closed")
	for _, id := range older {
		require.NotContains(t, s, id, "bot.py reports an older fill of the account as its own")
	}
	require.Equal(t, 1, strings.Count(s, "fill: entry"), "the entry fills once: %s", s)
	positions := e.getJSON(t, "/v1/api/accounts/Sim101/positions", e.apiToken)
	require.Equal(t, float64(0), positions["data"].(map[string]any)["count"], "positions left: %v", positions)
	orders := e.getJSON(t, "/v1/api/accounts/Sim101/orders?activeOnly=true", e.apiToken)
	require.Empty(t, orders["data"].(map[string]any)["orders"], "the bracket orders are still working")
}

func TestCompatibleProfileBot(t *testing.T) {
	py := python(t, "requests")
	e := start(t, true)
	out, err := run(t, 60*time.Second, repo, clientEnv(e, e.compatToken), py, "examples/compat_bot.py")
	require.NoError(t, err, "%s", out)
	noToken(t, out, e.compatToken, e.apiToken)
	s := string(out)
	require.Contains(t, s, "accounts: Sim101, Sim102")
	require.Contains(t, s, "position: ES ")
	require.Contains(t, s, "Long 2 @")
	require.Contains(t, s, "closed half:")
	require.Contains(t, s, "left: 1\n")
	require.Contains(t, s, "positions after flatten: 0")
}

func TestPythonClientSmoke(t *testing.T) {
	py := python(t, "urllib3", "six", "dateutil", "certifi")
	e := start(t, false)
	out, err := run(t, 60*time.Second, repo, clientEnv(e, e.apiToken), py, "clients/python/smoke.py")
	require.NoError(t, err, "%s", out)
	noToken(t, out, e.apiToken)
	checkSmoke(t, out)
	s := string(out)
	require.Contains(t, s, "fills: ")
	require.Contains(t, s, "position: Long 2 ")
	require.Contains(t, s, "closed half: order ")
}

func TestTypeScriptClientSmoke(t *testing.T) {
	tsDir := filepath.Join(repo, "clients", "typescript")
	node := nodeTools(t, tsDir)
	e := start(t, false)
	dist := t.TempDir()
	out, err := run(t, 90*time.Second, tsDir, nil, filepath.Join(tsDir, "node_modules", ".bin", "tsc"), "-p", "tsconfig.json", "--outDir", dist)
	require.NoError(t, err, "tsc: %s", out)
	out, err = run(t, 60*time.Second, tsDir, clientEnv(e, e.apiToken), node, filepath.Join(dist, "smoke.js"))
	require.NoError(t, err, "%s", out)
	noToken(t, out, e.apiToken)
	checkSmoke(t, out)
}

// The generated Management API clients, against a relay with a user on
// the elite plan: list the copiers, create, rename and delete an account
// group.
func TestPythonManageClientSmoke(t *testing.T) {
	py := python(t, "urllib3", "six", "dateutil", "certifi")
	e := startPlan(t, false, "elite")
	out, err := run(t, 60*time.Second, repo, clientEnv(e, e.apiToken), py, "clients/python/manage_smoke.py")
	require.NoError(t, err, "%s", out)
	noToken(t, out, e.apiToken)
	checkManageSmoke(t, out)
	require.Contains(t, string(out), "write budget: 20 per minute")
}

func TestTypeScriptManageClientSmoke(t *testing.T) {
	tsDir := filepath.Join(repo, "clients", "typescript")
	node := nodeTools(t, tsDir)
	e := startPlan(t, false, "elite")
	dist := t.TempDir()
	out, err := run(t, 90*time.Second, tsDir, nil, filepath.Join(tsDir, "node_modules", ".bin", "tsc"), "-p", "tsconfig.json", "--outDir", dist)
	require.NoError(t, err, "tsc: %s", out)
	out, err = run(t, 60*time.Second, tsDir, clientEnv(e, e.apiToken), node, filepath.Join(dist, "manage_smoke.js"))
	require.NoError(t, err, "%s", out)
	noToken(t, out, e.apiToken)
	checkManageSmoke(t, out)
}

// checkManageSmoke checks a Management API client smoke test's report.
func checkManageSmoke(t *testing.T, out []byte) {
	t.Helper()
	s := string(out)
	require.Contains(t, s, "copiers: 0\n")
	require.Contains(t, s, "created group: Smoke Sim101, Sim102 (desktop)\n")
	require.Contains(t, s, "renamed: Smoke 2, changed ")
	require.Contains(t, strings.ToLower(s), "deleted: true\n", "the generated client's DELETE is answered 200")
}

// checkSmoke checks a client smoke test's report: the keyed retry answered
// the first order, and nothing is left after Flatten.
func checkSmoke(t *testing.T, out []byte) {
	t.Helper()
	var placed, replayed string
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "placed: "); ok {
			placed = v
		}
		if v, ok := strings.CutPrefix(line, "replayed: "); ok {
			replayed, _, _ = strings.Cut(v, " ")
		}
	}
	require.NotEmpty(t, placed, "%s", out)
	require.Equal(t, placed, replayed, "the keyed retry answered another order:\n%s", out)
	require.Contains(t, string(out), "accounts: Sim101, Sim102")
	require.Contains(t, string(out), "flattened: 1 position(s) closed")
	require.Contains(t, string(out), "positions: 0")
}

// nodeTools returns node, and skips t when dir's npm packages are missing.
func nodeTools(t *testing.T, dir string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		testkit.MissingTool(t, "node not found")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err != nil {
		testkit.MissingTool(t, "the npm packages of %s are not installed", dir)
	}
	return node
}

// TestQuotesPage loads examples/quotes.html in headless Chromium with the
// relay and a token in the URL fragment, and checks that quotes appear.
func TestQuotesPage(t *testing.T) {
	chromium := browsertest.Chromium(t)
	e := start(t, false)
	page := (&url.URL{Scheme: "file", Path: filepath.Join(repo, "examples", "quotes.html")}).String() +
		"#" + url.Values{"relay": {e.url}, "instruments": {"ES,NQ"}, "token": {e.apiToken}}.Encode()
	// Virtual time runs ahead while the page only waits on its socket, so a
	// slow subscribe can miss the budget: load the page again then.
	var statusLine, rows string
	for attempt := 1; attempt <= 4; attempt++ {
		dom := dumpDOM(t, chromium, page)
		require.NotContains(t, string(dom), e.apiToken, "the page keeps the token in its DOM")
		statusLine = regexp.MustCompile(`<div id="status">[^<]*</div>`).FindString(string(dom))
		rows = regexp.MustCompile(`<tbody id="quotes">.*</tbody>`).FindString(string(dom))
		if strings.Contains(rows, `<tr class="quote"`) {
			break
		}
		t.Logf("attempt %d: no quotes yet (%s)", attempt, statusLine)
	}
	require.Contains(t, statusLine, `<div id="status">streaming ES `)
	require.Contains(t, statusLine, `, NQ `)
	// The subscribed reply has the relay's latest quote of each contract it
	// has one of; the others come in marketData frames.
	require.Contains(t, rows, `<tr class="quote" data-instrument="ES `, "%s", statusLine)
	t.Logf("the page shows: %s", rows)
}

// dumpDOM loads page in headless Chromium and returns its DOM after a
// budget of virtual time.
func dumpDOM(t *testing.T, chromium, page string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append(browsertest.Flags[:len(browsertest.Flags):len(browsertest.Flags)],
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=4000", "--dump-dom", page)
	cmd := exec.CommandContext(ctx, chromium, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	dom, err := cmd.Output()
	require.NoError(t, err, "chromium: %s", tail(stderr.Bytes(), 2000))
	return dom
}

// TestClientsUpToDate regenerates the clients (scripts/gen-clients.sh) into a
// temporary folder and compares them with the committed ones: make clients
// after a change of the OpenAPI document.
func TestClientsUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the generators; skipped with -short")
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("java not found: Swagger Codegen, the Python client's generator, runs on Java 11+")
	}
	nodeTools(t, filepath.Join(repo, "clients", "typescript"))
	nodeTools(t, filepath.Join(repo, "clients", "python", "generator"))
	out := t.TempDir()
	b, err := run(t, 3*time.Minute, repo, nil, "bash", "scripts/gen-clients.sh", out)
	require.NoError(t, err, "%s", b)
	for _, p := range []string{"openapi.json", "typescript/src/generated", "python/tradebridge_client", "python/setup.py", "python/requirements.txt", "python/GENERATED.md",
		"manage-openapi.json", "typescript/src/manage", "python/tradebridge_manage_client", "python/GENERATED-manage.md"} {
		compareTrees(t, filepath.Join(repo, "clients", p), filepath.Join(out, p))
	}
}

// compareTrees fails t when the files under want and got differ.
func compareTrees(t *testing.T, want, got string) {
	t.Helper()
	files := map[string]bool{}
	for _, root := range []string{want, got} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "__pycache__" {
				return filepath.SkipDir
			}
			if !d.IsDir() {
				rel, _ := filepath.Rel(root, p)
				files[rel] = true
			}
			return nil
		})
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		require.NoError(t, err)
	}
	for rel := range files {
		a, errA := os.ReadFile(filepath.Join(want, rel))
		b, errB := os.ReadFile(filepath.Join(got, rel))
		name := filepath.Join(filepath.Base(want), rel)
		switch {
		case errA != nil:
			t.Errorf("clients/…/%s is generated but not committed: run make clients", name)
		case errB != nil:
			t.Errorf("clients/…/%s is committed but no longer generated: run make clients", name)
		case !bytes.Equal(a, b):
			t.Errorf("clients/…/%s differs from what the generator writes now: run make clients", name)
		}
	}
}

// TestMakeTargetsNamedExist checks that every make target the README, the
// docs and the examples name (`make X` in code, or a line of a code block
// that starts with make X) is a target of the Makefile: a reader who runs
// it finds it.
func TestMakeTargetsNamedExist(t *testing.T) {
	t.Parallel()
	mk, err := os.ReadFile(filepath.Join(repo, "Makefile"))
	require.NoError(t, err)
	targets := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):`).FindAllStringSubmatch(string(mk), -1) {
		targets[m[1]] = true
	}
	require.True(t, targets["demo"] && targets["test"], "the Makefile's targets are read")

	named := regexp.MustCompile("(?m)(?:`make ([a-z][a-z0-9-]*)|^(?:\\$ )?make ([a-z][a-z0-9-]*))")
	var files []string
	for _, root := range []string{"README.md", "docs", "examples", filepath.Join("installer", "README.md")} {
		require.NoError(t, filepath.WalkDir(filepath.Join(repo, root), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "screenshots" {
				return filepath.SkipDir
			}
			switch filepath.Ext(path) {
			case ".md", ".py", ".sh", ".html", ".go":
				files = append(files, path)
			}
			return nil
		}))
	}
	seen := 0
	for _, path := range files {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		for _, m := range named.FindAllStringSubmatch(string(b), -1) {
			target := m[1] + m[2]
			seen++
			rel, _ := filepath.Rel(repo, path)
			require.True(t, targets[target], "%s names `make %s`, which the Makefile does not have", rel, target)
		}
	}
	require.Greater(t, seen, 20, "the README and docs name make targets")
}
