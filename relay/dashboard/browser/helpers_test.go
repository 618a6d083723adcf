package browser_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/browsertest"
	"tradebridge/internal/systemtest"
	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay"
)

// dash is a relay serving the dashboard, with sign-up open, and the test's
// browser tab.
type dash struct {
	*systemtest.System
	t   *testing.T
	tab *browsertest.Tab
}

// newDash starts a relay and a browser at vp for t.
func newDash(t *testing.T, vp browsertest.Viewport) *dash {
	t.Helper()
	return newDashWith(t, vp, nil)
}

// newDashWith is newDash with a relay whose options tweak may change
// further (nil: none).
func newDashWith(t *testing.T, vp browsertest.Viewport, tweak func(*relay.Options)) *dash {
	t.Helper()
	tab := browsertest.New(t, vp) // first: it skips when there is no chromium
	s := systemtest.NewWith(t, func(o *relay.Options) {
		dashOptions(o)
		if tweak != nil {
			tweak(o)
		}
	})
	return &dash{System: s, t: t, tab: tab}
}

// dashOptions are the options of the dashboard tests' relays.
func dashOptions(o *relay.Options) {
	// An agent's revoked token, or a user's, stops at once.
	o.Hub.ReverifyInterval = 200 * time.Millisecond
	openSignup(o)
}

// newBrokerDash is newDash with the relay's broker family linking logins
// with the Tradovate fake it returns (its OAuth client sending the
// browser back to this relay).
func newBrokerDash(t *testing.T, vp browsertest.Viewport) (*dash, *systemtest.Tradovate) {
	t.Helper()
	tab := browsertest.New(t, vp)
	tv := systemtest.StartTradovate(t)
	s := tv.NewSystem(t, dashOptions)
	return &dash{System: s, t: t, tab: tab}, tv
}

// withTab returns the dashboard of d's relay in a browser of its own at
// vp (another person, or the same one on a phone): sign it in anew.
func (d *dash) withTab(vp browsertest.Viewport) *dash {
	d.t.Helper()
	return &dash{System: d.System, t: d.t, tab: browsertest.New(d.t, vp)}
}

// setValue sets the value of the form input named name as a browser's
// own picker does (a date and time), firing its input and change events.
func (d *dash) setValue(name, value string) {
	d.t.Helper()
	ok := browsertest.Eval[bool](d.tab, fmt.Sprintf(`(e => { if (!e) return false; e.value = %q;
		for (const t of ['input', 'change']) e.dispatchEvent(new Event(t, {bubbles: true})); return e.value === %q; })(document.querySelector('[name=%q]'))`,
		value, value, name))
	require.True(d.t, ok, "setting %s to %s", name, value)
}

// addRow presses "Add a row" of the list of rows named rows and returns
// the name of the row it added ("config.brackets.1"), the last of the
// list.
func (d *dash) addRow(rows string) string {
	d.t.Helper()
	sel := fmt.Sprintf(`fieldset[data-rows=%q] > .row`, rows)
	before := d.tab.Count(sel)
	d.tab.Click(fmt.Sprintf(`fieldset[data-rows=%q]`, rows), "Add a row")
	d.tab.WaitFor(testkit.Medium, "a row added to "+rows, fmt.Sprintf(`document.querySelectorAll(%q).length > %d`, sel, before))
	return browsertest.Eval[string](d.tab, fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).pop().dataset.row`, sel))
}

// checkBox checks the checkbox sel matches (one of several of a name:
// input[name="events"][value="monitor.tripped"]), by a click, unless it
// is checked.
func (d *dash) checkBox(sel string) {
	d.t.Helper()
	if !browsertest.Eval[bool](d.tab, fmt.Sprintf(`!!(document.querySelector(%q) || {}).checked`, sel)) {
		d.tab.ClickElement(sel)
	}
	d.tab.WaitFor(testkit.Medium, sel+" to be checked", fmt.Sprintf(`!!(document.querySelector(%q) || {}).checked`, sel))
}

// html returns the page's markup as it stands, for what must not be in
// it.
func (d *dash) html() string {
	d.t.Helper()
	return browsertest.Eval[string](d.tab, "document.documentElement.outerHTML")
}

// page loads the dashboard's path.
func (d *dash) page(path string) {
	d.t.Helper()
	d.tab.Navigate(d.Base + path)
}

// at fails the test unless the tab shows the dashboard's path (its query
// ignored).
func (d *dash) at(path string) {
	d.t.Helper()
	loc, _, _ := strings.Cut(d.tab.Location(), "?")
	require.Equal(d.t, d.Base+path, loc)
}

// signIn signs in on the sign-in page and checks that it lands on /app.
func (d *dash) signIn(email, password string) {
	d.t.Helper()
	d.page("/app/signin")
	d.tab.Fill("email", email)
	d.tab.Fill("password", password)
	d.tab.Submit("", "Sign in")
	d.at("/app")
	d.tab.WaitVisible("#kill-switch")
}

// signInAs gives the test's user (systemtest's alice, bob or carol) an
// email and password and signs in with them.
func (d *dash) signInAs(user string) {
	d.t.Helper()
	email, password := setPassword(d.t, d.System, user)
	d.signIn(email, password)
}

// state returns the data-state of the element sel matches.
func (d *dash) state(sel string) string {
	d.t.Helper()
	v, _ := d.tab.Attr(sel, "data-state")
	return v
}

// noProblems fails the test when the pages had uncaught exceptions or
// console errors (a refused script, a Content-Security-Policy violation),
// except those holding one of expected (a page answered 401 on purpose).
func (d *dash) noProblems(expected ...string) {
	d.t.Helper()
	var left []string
	for _, p := range d.tab.Problems() {
		if !slices.ContainsFunc(expected, func(e string) bool { return strings.Contains(p, e) }) {
			left = append(left, p)
		}
	}
	require.Empty(d.t, left, "the pages' exceptions and console errors")
}

// narrow fails the test when the page scrolls sideways at the tab's width.
func (d *dash) narrow(width int, page string) {
	d.t.Helper()
	require.LessOrEqual(d.t, d.tab.ScrollWidth(), width, "%s is wider than the screen", page)
}

// markNoReload marks the page, so that stillSamePage can tell it was not
// loaded again.
func (d *dash) markNoReload() {
	d.t.Helper()
	browsertest.Eval[bool](d.tab, "(window.__browserTestMark = true)")
}

func (d *dash) stillSamePage() {
	d.t.Helper()
	require.True(d.t, browsertest.Eval[bool](d.tab, "window.__browserTestMark === true"), "the page was loaded again")
}

// pairCode presses "Add a PC" and returns the code the page shows.
func (d *dash) pairCode() string {
	d.t.Helper()
	d.page("/app/pair")
	d.tab.Submit("main", "Add a PC")
	code := d.tab.Text("#pair-code")
	require.Regexp(d.t, `^[A-Z0-9]{4}-[A-Z0-9]{4}$`, code)
	require.Contains(d.t, d.tab.Text("#pair-command"), "agent pair "+code)
	return code
}

// pc is a trader's PC: the agent's command run with a data folder of its
// own.
type pc struct {
	t    *testing.T
	dir  string // --data
	logs string
}

func newPC(t *testing.T) *pc {
	return &pc{t: t, dir: t.TempDir(), logs: t.TempDir()}
}

// pair runs agent pair CODE --relay URL --data DIR and returns the user it
// paired with.
func (p *pc) pair(relayURL, code string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Long)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentBin, "pair", code, "--relay", relayURL, "--data", p.dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(p.t, err, "agent pair: %s", stderr.String())
	var paired struct {
		Paired bool   `json:"paired"`
		UserID string `json:"userId"`
	}
	require.NoError(p.t, json.Unmarshal(out, &paired), "%s", out)
	require.True(p.t, paired.Paired, "%s", out)
	return paired.UserID
}

// run starts agent run --relay URL --data DIR on the simulator, standing
// at systemtest.SimStart (the market open); it is stopped at the test's
// cleanup.
func (p *pc) run(relayURL string) {
	p.t.Helper()
	logFile := filepath.Join(p.logs, "agent.log")
	f, err := os.Create(logFile)
	require.NoError(p.t, err)
	cmd := exec.Command(agentBin, "run", "--relay", relayURL, "--data", p.dir, "--platform", "sim",
		"--sim-start", systemtest.SimStart.Format(time.RFC3339))
	cmd.Stdout, cmd.Stderr = f, f
	require.NoError(p.t, cmd.Start())
	p.t.Cleanup(func() {
		defer f.Close()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(testkit.Long):
			p.t.Errorf("agent run did not stop within %v of SIGTERM; killed", testkit.Long)
			_ = cmd.Process.Kill()
			<-done
		}
		if p.t.Failed() {
			b, _ := os.ReadFile(logFile)
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			p.t.Logf("agent.log:\n%s", b)
		}
	})
}

// count returns data.count of a GET of the trading API that answers 200.
func (d *dash) count(path, token string) int {
	d.t.Helper()
	r := d.Do("GET", path, token, "")
	require.Equal(d.t, 200, r.Status, "GET %s: %s", path, r.Raw)
	var data struct {
		Count int `json:"count"`
	}
	require.NoError(d.t, json.Unmarshal(r.Data, &data), "%s", r.Raw)
	return data.Count
}

// buy buys quantity ES at market on the account with token, and waits for
// the position.
func (d *dash) buy(token, account string, quantity int) {
	d.t.Helper()
	r := d.Do("POST", "/v1/api/accounts/"+account+"/orders/place", token,
		fmt.Sprintf(`{"action":"Buy","instrument":"ES","orderType":"Market","quantity":%d,"timeInForce":"Day"}`, quantity))
	require.Equal(d.t, 200, r.Status, "placing an order: %s", r.Raw)
	require.Eventually(d.t, func() bool { return d.count("/v1/api/accounts/"+account+"/positions", token) == 1 },
		testkit.Long, 50*time.Millisecond, "the position opens")
}

// apiToken is the first API token in the text of the element sel matches
// (its value when it is a form field).
var apiTokenRE = regexp.MustCompile(`tb_api_[A-Za-z0-9_-]+`)

func (d *dash) apiTokenIn(sel string) string {
	d.t.Helper()
	html := browsertest.Eval[string](d.tab, fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return '';
		return e.innerText + ' ' + Array.from(e.querySelectorAll('input, textarea')).map(i => i.value).join(' '); })()`, sel))
	tok := apiTokenRE.FindString(html)
	require.NotEmpty(d.t, tok, "no API token in %s", sel)
	return tok
}

// quantity returns the signed quantity of the account's position in the
// instrument root (long positive, short negative; 0 when flat), read
// through the trading API.
func (d *dash) quantity(token, account, root string) int {
	d.t.Helper()
	r := d.Do("GET", "/v1/api/accounts/"+account+"/positions", token, "")
	require.Equal(d.t, 200, r.Status, "%s", r.Raw)
	var data struct {
		Positions []protocol.Position `json:"positions"`
	}
	require.NoError(d.t, json.Unmarshal(r.Data, &data), "%s", r.Raw)
	q := 0
	for _, p := range data.Positions {
		if p.Instrument != root && !strings.HasPrefix(p.Instrument, root+" ") {
			continue
		}
		if strings.EqualFold(p.MarketPosition, "Short") {
			q -= p.Quantity
		} else {
			q += p.Quantity
		}
	}
	return q
}

// manageGet reads a Management API resource with the token: its data.
func (d *dash) manageGet(path, token string) map[string]any {
	d.t.Helper()
	var data map[string]any
	d.apiData("/v1/api/manage/"+path, token, &data)
	return data
}

// apiData returns data of a GET of the relay's API that answers 200, as
// JSON into v.
func (d *dash) apiData(path, token string, v any) {
	d.t.Helper()
	r := d.Do(http.MethodGet, path, token, "")
	require.Equal(d.t, http.StatusOK, r.Status, "GET %s: %s", path, r.Raw)
	require.NoError(d.t, json.Unmarshal(r.Data, v), "%s", r.Raw)
}

// check checks (on true) or unchecks the checkbox named name, as a click
// does.
func (d *dash) check(name string, on bool) {
	d.t.Helper()
	browsertest.Eval[bool](d.tab, fmt.Sprintf(`(() => { const c = document.querySelector('input[type=checkbox][name=%q]');
		if (!c) throw new Error('no checkbox ' + %q); if (c.checked !== %t) c.click(); return c.checked; })()`, name, name, on))
}

// editing returns the id of the resource whose editor page the tab shows
// under base ("/app/manage/desktop/copiers").
func (d *dash) editing(base string) string {
	d.t.Helper()
	loc, _, _ := strings.Cut(d.tab.Location(), "?")
	id, ok := strings.CutPrefix(loc, d.Base+base+"/")
	require.True(d.t, ok && !strings.Contains(id, "/"), "the tab shows a resource of %s: %s", base, loc)
	return id
}

// fieldError returns the message shown next to the input named name.
func (d *dash) fieldError(name string) string {
	d.t.Helper()
	return d.tab.Text(fmt.Sprintf(`[id=%q]`, "error-"+name))
}
