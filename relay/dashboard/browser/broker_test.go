package browser_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/browsertest"
	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/broker"
	"tradebridge/trading/bridge/tradovate/tradovatefake"
)

// brokerLinked is true when the broker page shows the login linked and
// connected, with its accounts.
const brokerLinked = `document.querySelector('#broker-link').dataset.state === 'linked' &&
	document.querySelectorAll('#broker-accounts li').length > 0`

// linkStatus returns the relay's own view of the user's link.
func (d *dash) linkStatus(user string) broker.Status {
	d.t.Helper()
	st, err := d.Relay().Broker().Status(context.Background(), d.Users[user].UserID)
	require.NoError(d.t, err)
	return st
}

// activitySource returns the source kind the activity page shows for the
// newest entry of kind, "" when there is none.
func (d *dash) activitySource(kind string) string {
	d.t.Helper()
	d.page("/app/activity?kind=" + kind)
	return browsertest.Eval[string](d.tab, fmt.Sprintf(`(() => { const e = document.querySelector('#activity li[data-kind=%q] .source');
		return e ? e.innerText : ''; })()`, kind))
}

// fillAPIKey fills the broker page's API-key form with the Tradovate
// fake's credentials and password.
func (d *dash) fillAPIKey(password string) {
	d.t.Helper()
	d.tab.Choose("env", "demo")
	d.tab.Fill("username", tradovatefake.DefaultName)
	d.tab.Fill("password", password)
	d.tab.Fill("appId", tradovatefake.DefaultAppID)
	d.tab.Fill("appVersion", "1.0")
	d.tab.Fill("cid", strconv.Itoa(tradovatefake.DefaultCID))
	d.tab.Fill("sec", tradovatefake.DefaultSec)
}

// linkAPIKey links the fake's login from the broker page's API-key form
// and waits for the page to show it linked with its accounts.
func (d *dash) linkAPIKey() {
	d.t.Helper()
	d.page("/app/broker")
	d.fillAPIKey(tradovatefake.DefaultPassword)
	d.tab.Submit("#api-key-form", "Link")
	d.at("/app/broker")
	d.tab.WaitFor(testkit.Long, "the login linked, with its accounts", brokerLinked)
}

// A trader links their Tradovate login with "Link demo": the browser
// goes to the broker's authorization page (the fake grants access at
// once, as a broker does for a user signed in who allowed the app
// before), comes back through the relay's callback to the broker page,
// which says so and shows the login linked with its accounts, without a
// reload; the activity log names the dashboard. "Unlink", confirmed,
// unlinks it. The page's forms leading to the broker is allowed by its
// Content-Security-Policy: a refusal would be a console error.
func TestBrokerLinkWithOAuth(t *testing.T) {
	t.Parallel()
	d, tv := newBrokerDash(t, browsertest.Desktop)
	d.signInAs("alice")
	d.page("/app/broker")
	require.Equal(t, "unlinked", d.state("#broker-link"))
	require.Equal(t, "Broker", d.tab.Text(`nav a[aria-current="page"]`))
	d.tab.Screenshot("broker")

	d.tab.Submit("#broker-oauth", "Link demo")
	d.at("/app/broker")
	require.Equal(t, "Your Tradovate login is linked.", d.tab.Text("#broker-result"))
	d.tab.WaitFor(testkit.Long, "the login linked, with its accounts", brokerLinked)
	require.Equal(t, "oauth", browsertest.Eval[string](d.tab, `document.querySelector('#broker-method').dataset.method`))
	require.Equal(t, "demo", browsertest.Eval[string](d.tab, `document.querySelector('#broker-env').dataset.env`))
	st := d.linkStatus("alice")
	require.True(t, st.Linked)
	require.Equal(t, broker.MethodOAuth, st.Method)
	shown := browsertest.Eval[[]string](d.tab, `Array.from(document.querySelectorAll('#broker-accounts li')).map(li => li.innerText)`)
	require.ElementsMatch(t, st.Accounts, shown, "the login's accounts")
	require.Zero(t, tv.Fake.Logins(), "an OAuth link needs no password login")
	require.Contains(t, d.tab.Text("#main"), "Broker copiers")
	d.tab.Screenshot("broker-linked")

	require.Equal(t, protocol.SourceDashboard, d.activitySource(protocol.ActivityBrokerLinked))

	d.page("/app/broker")
	require.False(t, browsertest.Eval[bool](d.tab, `document.querySelector('#broker-unlink form').checkValidity()`),
		"the browser does not send Unlink before Yes, unlink is ticked")
	d.tab.ClickElement(`#broker-unlink input[name="confirm"]`)
	d.tab.Submit("#broker-unlink", "Unlink")
	d.at("/app/broker")
	require.Contains(t, d.tab.Text("#broker-result"), "unlinked")
	require.Equal(t, "unlinked", d.state("#broker-link"))
	require.False(t, d.linkStatus("alice").Linked)
	require.Equal(t, protocol.SourceDashboard, d.activitySource(protocol.ActivityBrokerUnlinked))
	d.noProblems()
}

// On a phone, a trader links with the API-key form: a wrong password is
// refused in words next to it, nothing is linked and neither the
// password nor the secret is in the page; the right one links the login.
// The page, its menu included, fits the phone's screen.
func TestBrokerLinkWithAPIKey(t *testing.T) {
	t.Parallel()
	d, tv := newBrokerDash(t, browsertest.Phone)
	d.signInAs("alice")
	d.page("/app/broker")
	d.narrow(int(browsertest.Phone.Width), "the broker page")
	const wrong = "not-the-fake-password"
	fill := d.fillAPIKey

	fill(wrong)
	d.tab.Submit("#api-key-form", "Link")
	require.Contains(t, d.tab.Text("#form-error"), "Tradovate refused the username or password")
	require.Contains(t, d.tab.Text("#err-password"), "Tradovate refused the username or password")
	role, _ := d.tab.Attr("#form-error", "role")
	require.Equal(t, "alert", role)
	page := d.html()
	require.NotContains(t, page, wrong, "the password is not written back")
	require.NotContains(t, page, tradovatefake.DefaultSec, "the secret is not written back")
	require.Equal(t, tradovatefake.DefaultName, browsertest.Eval[string](d.tab, `document.querySelector('input[name="username"]').value`),
		"the username is kept")
	require.Equal(t, "unlinked", d.state("#broker-link"))
	require.False(t, d.linkStatus("alice").Linked, "nothing was linked")
	d.narrow(int(browsertest.Phone.Width), "the refused form")

	fill(tradovatefake.DefaultPassword)
	d.tab.Submit("#api-key-form", "Link")
	d.at("/app/broker")
	d.tab.WaitFor(testkit.Long, "the login linked, with its accounts", brokerLinked)
	require.Equal(t, "apikey", browsertest.Eval[string](d.tab, `document.querySelector('#broker-method').dataset.method`))
	require.NotContains(t, d.html(), tradovatefake.DefaultPassword)
	require.Equal(t, broker.MethodAPIKey, d.linkStatus("alice").Method)
	require.Positive(t, tv.Fake.Logins(), "the credentials were checked with the broker")
	d.narrow(int(browsertest.Phone.Width), "the broker page, linked")
	d.tab.Screenshot("phone-broker-linked")
	d.noProblems("status of 400") // the refused form's page
}

// The broker family's copiers and monitors are edited with the same
// forms once a login is linked: their account choices are the login's
// accounts, the copier's form has no copy mode (a broker copier copies
// executions), and what is saved is what the Management API stores.
func TestBrokerEditors(t *testing.T) {
	t.Parallel()
	d, _ := newBrokerDash(t, browsertest.Desktop)
	bob := d.Users["bob"]
	d.signInAs("bob")
	d.page("/app/manage/tv/monitors")
	require.Contains(t, d.tab.Text("#link-broker"), "Link a broker first", "nothing linked yet")
	d.linkAPIKey()
	accounts := d.linkStatus("bob").Accounts
	require.GreaterOrEqual(t, len(accounts), 2, "the fake's login has two accounts")

	d.page("/app/manage/tv/monitors")
	d.tab.Submit("main", "New broker monitor")
	offered := browsertest.Eval[[]string](d.tab, `Array.from(document.querySelectorAll('select[name="account"] option')).map(o => o.value).filter(v => v)`)
	require.ElementsMatch(t, accounts, offered, "the login's accounts are offered")
	d.tab.Choose("account", accounts[0])
	d.check("lossLimit.enabled", true)
	d.tab.Fill("lossLimit.amount", "50")
	d.tab.Submit("#editor", "Save")
	d.tab.WaitVisible("#notice")
	id := d.editing("/app/manage/tv/monitors")
	require.Equal(t, "active", d.state("#resource-state"))
	stored := d.manageGet("tv/monitors/"+id, bob.APIToken)
	require.Equal(t, accounts[0], stored["account"])
	require.Equal(t, map[string]any{"enabled": true, "amount": float64(50)}, stored["lossLimit"])

	d.page("/app/manage/tv/copiers")
	d.tab.Submit("main", "New broker copier")
	require.Zero(t, d.tab.Count(`[name="copyMode"]`), "a broker copier has no copy mode")
	d.check("active", true)
	d.tab.Choose("leader", accounts[0])
	d.tab.Choose("followers.0.account", accounts[1])
	d.tab.Choose("sizing.ratio", "2")
	d.tab.Submit("#editor", "Save")
	d.tab.WaitVisible("#notice")
	cid := d.editing("/app/manage/tv/copiers")
	stored = d.manageGet("tv/copiers/"+cid, bob.APIToken)
	require.Equal(t, accounts[0], stored["leader"])
	require.Equal(t, map[string]any{"ratio": float64(2)}, stored["sizing"])
	require.NotContains(t, stored, "copyMode")
	d.noProblems("status of 409") // the form before the link
}
