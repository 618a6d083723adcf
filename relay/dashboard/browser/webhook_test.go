package browser_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/browsertest"
	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/activity"
	"tradebridge/relay/webhook"
)

// The TradingView page, on a laptop and on a phone: the trader builds a
// message (PLACE, BUY 1 ES on Sim101 at market), and "Try it" shows the
// plan while nothing reaches the simulator; the message posted to the
// URL as TradingView posts it (text/plain, no token) runs, and the alert
// appears in the page's history without a reload, with the simulator's
// position; "Rotate key" shows a new key and the old message is refused
// (401). On the phone nothing is wider than the screen.
func TestWebhookPage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		vp    browsertest.Viewport
		shots string
	}{
		{"laptop", browsertest.Desktop, ""},
		{"phone", browsertest.Phone, "phone-"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := newDash(t, c.vp)
			fits := func(page string) {
				if c.vp.Mobile {
					d.narrow(int(c.vp.Width), page)
				}
			}
			ra := d.StartAgent("bob")
			bob := d.Users["bob"]
			d.signInAs("bob")
			d.page("/app/webhook")
			hookURL, key := d.tab.Text("#webhook-url"), d.tab.Text("#webhook-key")
			require.True(t, strings.HasPrefix(hookURL, d.Base+"/v1/send/wh_"), hookURL)
			require.True(t, strings.HasPrefix(key, "whk_"), key)
			fits("the TradingView page")

			// The builder's script writes the message as the trader
			// types, and shows only the inputs the command takes.
			d.markNoReload()
			d.tab.Type("qty", "3")
			d.tab.WaitFor(testkit.Medium, "the message to follow the quantity",
				`!document.querySelector('#webhook-message').hasAttribute('aria-busy') &&
				document.querySelector('#webhook-message').value.includes('qty=3;')`)
			browsertest.Eval[bool](d.tab, `(() => { const c = document.querySelector('select[name=command]');
				c.value = 'FLATTENEVERYTHING'; c.dispatchEvent(new Event('change', {bubbles: true})); return true; })()`)
			d.tab.WaitFor(testkit.Medium, "the message of FLATTENEVERYTHING",
				`document.querySelector('#webhook-message').value.includes('command=FLATTENEVERYTHING;')`)
			require.NotContains(t, browsertest.Eval[string](d.tab, `document.querySelector('#webhook-message').value`), "account=")
			require.True(t, browsertest.Eval[bool](d.tab, `document.querySelector('.field[data-field=account]').hidden`),
				"FLATTENEVERYTHING takes no account: its input is hidden")
			d.stillSamePage()

			// The builder, as a trader fills it in on a fresh page: the
			// message follows (with script, no Write button).
			d.page("/app/webhook")
			require.True(t, browsertest.Eval[bool](d.tab, `document.querySelector('#webhook-builder .write').offsetParent === null`))
			d.tab.Choose("command", "PLACE")
			d.tab.Choose("account", "Sim101")
			d.tab.Choose("action", "BUY")
			d.tab.Choose("order_type", "MARKET")
			d.tab.Type("instrument", "ES")
			d.tab.Type("qty", "1")
			d.tab.WaitFor(testkit.Medium, "the message of the last choices",
				`!document.querySelector('#webhook-message').hasAttribute('aria-busy')`)
			msg := browsertest.Eval[string](d.tab, `document.querySelector('#webhook-message').value`)
			for _, line := range []string{"key=" + key + ";", "command=PLACE;", "account=Sim101;", "instrument=ES;",
				"action=BUY;", "qty=1;", "order_type=MARKET;", "tif=DAY;"} {
				require.Contains(t, msg, line)
			}

			// Try it: the plan, and nothing traded or recorded.
			d.tab.Submit("#webhook-try", "Try it")
			d.tab.WaitVisible(`#try-result[data-outcome="ok"]`)
			would, _ := d.tab.Attr("#try-result", "data-would")
			require.Equal(t, webhook.WouldRun, would)
			require.Equal(t, 1, d.tab.Count(`#try-result li[data-fn="PlaceOrder"][data-account="Sim101"]`), d.tab.Text("#try-result"))
			require.Contains(t, d.tab.Text("#try-result"), "Buy 1 ES at market")
			d.tab.Screenshot(c.shots + "webhook")
			fits("the TradingView page with a dry run")
			orders, err := ra.Sim.Orders(context.Background(), "Sim101")
			require.NoError(t, err)
			require.Empty(t, orders, "the dry run placed nothing")
			require.Zero(t, d.count("/v1/api/accounts/Sim101/positions", bob.APIToken))
			require.Zero(t, d.tab.Count("#webhook-alerts tr[data-alert-id]"), "the dry run recorded nothing")

			// The same message, as TradingView sends it.
			d.markNoReload()
			path := strings.TrimPrefix(hookURL, d.Base)
			r := d.Do("POST", path, "", msg, "Content-Type", "text/plain")
			require.Equal(t, 200, r.Status, "%s", r.Raw)
			var ans struct {
				AlertID string `json:"alertId"`
				Status  string `json:"status"`
			}
			require.NoError(t, json.Unmarshal(r.Data, &ans))
			require.Equal(t, "executed", ans.Status, "%s", r.Raw)
			row := `#webhook-alerts tr[data-alert-id="` + ans.AlertID + `"]`
			d.tab.WaitFor(testkit.Long, "the alert in the history, live",
				`(document.querySelector('`+row+` .status') || {}).textContent === 'executed'`)
			d.stillSamePage()
			require.Equal(t, "PLACE", d.tab.Text(row+" .command"))
			require.Equal(t, "Sim101", d.tab.Text(row+" .account"))
			require.Eventually(t, func() bool { return d.count("/v1/api/accounts/Sim101/positions", bob.APIToken) == 1 },
				testkit.Long, testkit.Tick, "the simulator holds the alert's position")

			// Rotate key: the old message is refused, the new key shown.
			d.tab.ClickElement("#rotate-confirm")
			d.tab.Submit("", "Rotate key")
			d.tab.WaitVisible("#webhook-rotated")
			newKey := d.tab.Text("#webhook-key")
			require.NotEqual(t, key, newKey)
			require.True(t, strings.HasPrefix(newKey, "whk_"), newKey)
			require.Equal(t, hookURL, d.tab.Text("#webhook-url"), "the URL stays")
			require.Contains(t, browsertest.Eval[string](d.tab, `document.querySelector('#webhook-message').value`),
				"key="+newKey+";", "the builder writes the new key")
			r = d.Do("POST", path, "", msg, "Content-Type", "text/plain")
			require.Equal(t, 401, r.Status, "the old key is refused at once: %s", r.Raw)
			var log activity.Page
			require.Eventually(t, func() bool {
				r := d.Do("GET", "/v1/api/activity?kind="+protocol.ActivityConfigChanged, bob.APIToken, "")
				return r.Status == 200 && json.Unmarshal(r.Data, &log) == nil && len(log.Events) == 1
			}, testkit.Long, testkit.Tick, "the rotation in the activity log")
			require.Equal(t, protocol.SourceDashboard, log.Events[0].Source.Kind, "the dashboard rotated it")
			require.Contains(t, log.Events[0].Summary, "webhook key rotated")
			require.NotContains(t, string(log.Events[0].Detail), newKey)
			fits("the TradingView page after a rotation")
			d.noProblems()
		})
	}
}

// On the free plan the page says TradingView alerts need pro, and shows
// no URL that could not work.
func TestWebhookPageFreePlan(t *testing.T) {
	t.Parallel()
	d := newDash(t, browsertest.Desktop)
	d.signInAs("carol")
	d.page("/app")
	d.tab.Submit("", "Webhook")
	d.at("/app/webhook")
	require.Contains(t, d.tab.Text("#webhook-plan"), "pro plan")
	require.Zero(t, d.tab.Count("#webhook-url"))
	require.Zero(t, d.tab.Count("#webhook-key"))
	require.Zero(t, d.tab.Count("#webhook-builder"))
	d.noProblems()
}
