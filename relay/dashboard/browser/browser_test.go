package browser_test

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/browsertest"
	"tradebridge/internal/testkit"
	"tradebridge/protocol"
)

// killOn is true when the page shows the kill switch on.
const killOn = `document.querySelector('#kill-switch').dataset.state === 'on'`

// A trader signs up (sign-up open), lands on the home page signed in,
// signs out, is refused with a wrong password (and stays signed out), and
// signs in again.
func TestSignUpSignOutSignIn(t *testing.T) {
	t.Parallel()
	d := newDash(t, browsertest.Desktop)
	d.page("/")
	d.at("/app/signin") // / → /app → the sign-in page, with no session
	d.tab.Screenshot("signin")

	const email, password = "trader@example.com", "a long enough passphrase"
	d.page("/app/signup")
	d.tab.Fill("email", email)
	d.tab.Fill("password", password)
	d.tab.Submit("", "Sign up")
	d.at("/app")
	require.Equal(t, "offline", d.state("#agent-status"), "no PC paired yet")
	require.Equal(t, "off", d.state("#kill-switch"))

	d.tab.Submit("", "Sign out")
	d.at("/app/signin")
	d.page("/app")
	d.at("/app/signin")

	d.tab.Fill("email", email)
	d.tab.Fill("password", "not the passphrase")
	d.tab.Submit("", "Sign in")
	role, _ := d.tab.Attr("#form-error", "role")
	require.Equal(t, "alert", role)
	require.NotEmpty(t, d.tab.Text("#form-error"))
	require.Zero(t, d.tab.Count("#kill-switch"), "still signed out")
	d.page("/app")
	d.at("/app/signin")

	d.signIn(email, password)
	d.noProblems("status of 401") // the wrong password's page
}

// The main flow, on a laptop and on a phone: sign in, add a PC from the
// page (agent pair with the code shown, then agent run), the status
// turning online without a reload with the simulator's accounts, a
// position flattened by the kill switch (held on the laptop, tapped twice
// on the phone), and the activity page showing it. On the phone no page
// is wider than the screen.
func TestAddAPCAndKillSwitch(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		vp    browsertest.Viewport
		shots string // the screenshots' prefix
	}{
		{"laptop", browsertest.Desktop, ""},
		{"phone", browsertest.Phone, "phone-"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			phone := c.vp.Mobile
			d := newDash(t, c.vp)
			fits := func(page string) {
				if phone {
					d.narrow(int(c.vp.Width), page)
				}
			}
			d.page("/app/signin")
			fits("the sign-in page")
			d.signInAs("bob")
			bob := d.Users["bob"]
			require.Equal(t, "offline", d.state("#agent-status"))
			fits("the home page")

			code := d.pairCode()
			d.tab.Screenshot(c.shots + "pair")
			fits("the pairing page")

			p := newPC(t)
			require.Equal(t, bob.UserID, p.pair(d.Base, code), "the code pairs the PC with the signed-in user")

			d.page("/app")
			require.Equal(t, "offline", d.state("#agent-status"))
			d.markNoReload()
			p.run(d.Base)
			require.Eventually(t, func() bool { return d.Relay().Hub().Connected(bob.UserID) }, testkit.Long, testkit.Tick,
				"agent run connects with the paired token")
			d.tab.WaitFor(5*time.Second, "the status to turn online without a reload",
				`document.querySelector('#agent-status').dataset.state === 'online'`)
			d.stillSamePage()
			require.Contains(t, strings.ToLower(d.tab.Text("#agent-platform")), "sim")
			d.tab.WaitVisible(`#accounts tr[data-account="Sim101"]`)

			// A position, then the kill switch.
			d.buy(bob.APIToken, "Sim101", 1)
			d.tab.WaitFor(testkit.Long, "the position on the page",
				`document.querySelector('#positions tr[data-account="Sim101"]') !== null`)
			d.tab.Screenshot(c.shots + "home")
			fits("the home page, online")
			if phone {
				d.tab.Tap("#kill-switch")
				d.tab.Tap("#kill-switch") // the second tap confirms
			} else {
				d.tab.HoldUntil("#kill-switch", 1600*time.Millisecond, "the kill switch to be on", killOn)
			}
			d.tab.WaitFor(testkit.Medium, "the kill switch to be on", killOn)
			require.Eventually(t, func() bool { return d.count("/v1/api/accounts/Sim101/positions", bob.APIToken) == 0 },
				testkit.Long, 50*time.Millisecond, "the kill switch flattens the simulator's positions")
			d.tab.WaitFor(testkit.Long, "the page to show no position",
				`document.querySelectorAll('#positions tr[data-account]').length === 0`)
			r := d.Do("POST", "/v1/api/accounts/Sim101/orders/place", bob.APIToken,
				`{"action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day"}`)
			require.Equal(t, 400, r.Status, "entries are refused while the kill switch is on: %s", r.Raw)

			d.page("/app/activity")
			d.tab.WaitVisible(fmt.Sprintf(`#activity li[data-kind=%q]`, protocol.ActivityKillSwitchChanged))
			d.tab.Screenshot(c.shots + "activity")
			fits("the activity page")
			d.page("/app/tokens")
			fits("the tokens page")
			require.Equal(t, "on", d.state("#kill-switch"), "the kill switch is on every page")
			d.noProblems()
		})
	}
}

// An API token made on the tokens page is shown once, works, and stops
// working once revoked there; one made with the scope "Read only" is
// listed as read, reads and is refused a write.
func TestTokens(t *testing.T) {
	t.Parallel()
	d := newDash(t, browsertest.Desktop)
	d.StartAgent("bob")
	d.signInAs("bob")
	d.page("/app/tokens")
	d.tab.Fill("name", "my bot")
	d.tab.Submit("", "New API token")
	d.tab.WaitVisible("#new-token")
	tok := d.apiTokenIn("#new-token")
	require.Contains(t, d.tab.Text("#new-token"), "Copy", "a copy button")

	r := d.Do("GET", "/v1/api/accounts", tok, "")
	require.Equal(t, 200, r.Status, "the new token works: %s", r.Raw)

	require.Equal(t, "trade", browsertest.Eval[string](d.tab, `document.querySelector('#token-scope').value`), "trade is the default")
	d.tab.Fill("name", "assistant")
	d.tab.Choose("scope", "read")
	d.tab.Submit("", "New API token")
	d.tab.WaitVisible("#new-token")
	readTok := d.apiTokenIn("#new-token")
	require.NotEqual(t, tok, readTok)
	d.tab.Screenshot("tokens")
	scopes := browsertest.Eval[map[string]string](d.tab, `Object.fromEntries(Array.from(document.querySelectorAll('#tokens tr[data-token-id]'))
		.map(r => [r.cells[0].innerText, r.querySelector('.scope').innerText]))`)
	require.Equal(t, "trade", scopes["my bot"])
	require.Equal(t, "read", scopes["assistant"])
	require.Equal(t, 200, d.Do("GET", "/v1/api/accounts", readTok, "").Status, "the read token reads")
	r = d.Do("POST", "/v1/api/accounts/Sim101/orders/place", readTok,
		`{"action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day"}`)
	require.Equal(t, 403, r.Status, "the read token does not trade: %s", r.Raw)
	require.Equal(t, "insufficient_scope", r.Error)

	d.page("/app/tokens")
	require.Zero(t, d.tab.Count("#new-token"), "shown once")
	require.NotContains(t, browsertest.Eval[string](d.tab, "document.documentElement.outerHTML"), tok)
	id := browsertest.Eval[string](d.tab, `(Array.from(document.querySelectorAll('#tokens tr[data-token-id]'))
		.find(r => r.innerText.includes('my bot')) || {dataset: {}}).dataset.tokenId || ''`)
	require.NotEmpty(t, id, "the token's row")
	row := fmt.Sprintf(`#tokens tr[data-token-id=%q]`, id)
	d.tab.Submit(row, "Revoke")
	// The row stays, with when it was revoked and no Revoke button.
	require.NotEmpty(t, d.tab.Text(row+" td:nth-child(6)"), "the row shows when the token was revoked")
	require.Zero(t, d.tab.Count(row+" button"), "nothing left to revoke")
	require.Eventually(t, func() bool { return d.Do("GET", "/v1/api/accounts", tok, "").Status == 401 },
		testkit.Medium, testkit.Tick, "the revoked token is refused")
	d.noProblems()
}

// A name the user typed with markup in it is shown as text: no element is
// made of it and no script of it runs.
func TestMarkupShownAsText(t *testing.T) {
	t.Parallel()
	d := newDash(t, browsertest.Desktop)
	d.signInAs("bob")
	const name = `<b id=injected>x</b><img src=x onerror="document.title='pwned'">` // 64 at most
	d.page("/app/tokens")
	d.tab.Fill("name", name)
	d.tab.Submit("", "New API token")
	d.page("/app/tokens")
	d.tab.WaitFor(testkit.Medium, "the token's row",
		fmt.Sprintf(`document.querySelector('#tokens').innerText.includes(%q)`, name))
	require.Zero(t, d.tab.Count("#injected"))
	require.Zero(t, d.tab.Count("#tokens img"))
	require.NotEqual(t, "pwned", browsertest.Eval[string](d.tab, "document.title"))
}

// A form on another site that posts to the dashboard is refused, though
// the browser sends the session's cookie with it (another port of the
// same host is the same site): the kill switch without the session's CSRF
// token, and a sign-in (which would sign the browser in as someone else)
// from another origin.
func TestCrossSiteFormsRefused(t *testing.T) {
	t.Parallel()
	d := newDash(t, browsertest.Desktop)
	email, password := setPassword(t, d.System, "bob")
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>A prize</title>
<form method="post" action="%[1]s/app/kill-switch"><input type="hidden" name="enabled" value="true"><button>Win a prize</button></form>
<form method="post" action="%[1]s/app/signin"><input type="hidden" name="email" value="%[2]s">
<input type="hidden" name="password" value="%[3]s"><button>Win another</button></form>`,
			d.Base, html.EscapeString(email), html.EscapeString(password))
	}))
	t.Cleanup(other.Close)

	// refused checks that the browser got a 403 for the post to path.
	refused := func(path string) {
		t.Helper()
		require.True(t, slices.ContainsFunc(d.tab.Problems(), func(p string) bool {
			return strings.Contains(p, "status of 403") && strings.HasSuffix(p, "("+d.Base+path+")")
		}), "the post to %s is refused: %v", path, d.tab.Problems())
	}

	// Signed out: the other site's sign-in form does not sign the browser in.
	d.tab.Navigate(other.URL)
	d.tab.Submit("", "Win another")
	refused("/app/signin")
	d.page("/app")
	d.at("/app/signin")

	// Signed in: the other site's kill-switch form changes nothing.
	d.signIn(email, password)
	d.tab.Navigate(other.URL)
	d.tab.Submit("", "Win a prize")
	refused("/app/kill-switch")
	d.page("/app")
	d.at("/app")
	require.Equal(t, "off", d.state("#kill-switch"), "the cross-site post turned nothing on")
	d.noProblems("status of 403") // the refusals' pages
}

// The kill switch turned on while the PC is off is recorded, the page says
// so, and the relay refuses the user's entries at once.
func TestKillSwitchWhileThePCIsOff(t *testing.T) {
	t.Parallel()
	d := newDash(t, browsertest.Desktop)
	d.signInAs("bob")
	require.Equal(t, "offline", d.state("#agent-status"))
	d.tab.HoldUntil("#kill-switch", 1600*time.Millisecond, "the kill switch to be on", killOn)
	require.Contains(t, d.tab.Text("#kill-status"), "offline", "the page says the PC applies it when it connects")
	r := d.Do("POST", "/v1/api/accounts/Sim101/orders/place", d.Users["bob"].APIToken,
		`{"action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day"}`)
	require.Equal(t, 400, r.Status, "%s", r.Raw)
	require.Equal(t, "trading_blocked", r.Error, "%s", r.Raw)
	d.page("/app")
	require.Equal(t, "on", d.state("#kill-switch"), "stored: the next page shows it on")
	d.noProblems()
}
