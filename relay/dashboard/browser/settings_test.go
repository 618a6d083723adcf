package browser_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/browsertest"
	"tradebridge/internal/testkit"
	"tradebridge/relay"
	"tradebridge/relay/alerts"
)

// hidden is a JavaScript condition: the input named name is inside a
// field that does not apply (hidden by the script).
func hidden(name string) string {
	return fmt.Sprintf(`document.querySelector('[name=%q]').closest('.only-if').hidden`, name)
}

// A webhook alert destination made in the form, pointing at a receiver
// of the test (the relay allows loopback alert URLs): only the webhook's
// fields show once it is chosen; the signing secret is shown once;
// "Send a test" makes the receiver get the signed test payload, and the
// page lists the delivery as sent without a reload. The same page fits a
// phone.
func TestAlertDestinationSendATest(t *testing.T) {
	t.Parallel()
	type post struct {
		signature string
		body      []byte
	}
	got := make(chan post, 4)
	gate := make(chan struct{})
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- post{r.Header.Get(alerts.HeaderSignature), b}
		select { // the answer waits until the page follows the socket
		case <-gate:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(recv.Close)
	var release sync.Once
	open := func() { release.Do(func() { close(gate) }) }
	t.Cleanup(open) // before recv.Close: cleanups run last first

	d := newDashWith(t, browsertest.Desktop, func(o *relay.Options) { o.Alerts.AllowPrivate = true })
	d.signInAs("bob")
	d.page("/app/manage/alerts")
	require.Contains(t, d.tab.Text("#resources"), "None yet.")
	d.tab.Submit("", "New alert destination")
	require.True(t, browsertest.Eval[bool](d.tab, hidden("url")), "no kind chosen: no URL")
	d.tab.Choose("kind", "webhook")
	require.False(t, browsertest.Eval[bool](d.tab, hidden("url")))
	require.True(t, browsertest.Eval[bool](d.tab, hidden("chatId")), "a webhook has no chat id")
	require.True(t, browsertest.Eval[bool](d.tab, hidden("to")))
	d.tab.Fill("name", "Trading desk")
	d.tab.Fill("url", recv.URL+"/hook")
	d.checkBox(`input[name="events"][value="monitor.tripped"]`)
	d.tab.Submit("#editor", "Save")
	secret := d.tab.Text("#once-secret")
	require.True(t, strings.HasPrefix(secret, "whsec_"), "the signing secret, shown once: %q", secret)
	require.NotContains(t, browsertest.Eval[string](d.tab, "document.documentElement.outerHTML"), recv.URL, "the URL is not shown back")

	d.tab.Submit("", "Send a test")
	require.Contains(t, d.tab.Text("#notice"), "Test queued: see the deliveries below.")
	page := d.tab.Location()
	var p post
	select {
	case p = <-got:
	case <-time.After(testkit.Long):
		t.Fatal("the receiver got no test")
	}
	require.Equal(t, alerts.Sign(secret, p.body), p.signature, "signed with the secret shown")
	var payload alerts.Payload
	require.NoError(t, json.Unmarshal(p.body, &payload))
	require.Equal(t, alerts.PayloadTest, payload.Kind)

	d.tab.WaitFor(testkit.Medium, "the deliveries to follow the socket", `document.querySelector('#deliveries').dataset.live === 'on'`)
	require.Zero(t, d.tab.Count("#deliveries li[data-outcome]"), "not delivered yet")
	d.markNoReload()
	open()
	d.tab.WaitFor(testkit.Long, "the delivery listed as sent without a reload", `document.querySelector('#deliveries li[data-outcome="sent"]') !== null`)
	d.stillSamePage()
	require.Contains(t, d.tab.Text(`#deliveries li[data-outcome="sent"]`), "Test")
	d.tab.ScreenshotOf("#deliveries", "alert-deliveries") // the whole page is too long for one
	d.noProblems()

	d.page("/app/manage/alerts")
	require.Contains(t, d.tab.Text("#resources"), "Trading desk")
	d.tab.Screenshot("alerts")

	phone := d.withTab(browsertest.Phone)
	phone.signInAs("bob")
	phone.tab.Navigate(page)
	phone.tab.WaitVisible(`#deliveries li[data-outcome="sent"]`)
	phone.narrow(int(browsertest.Phone.Width), "an alert destination's page")
	phone.page("/app/manage/alerts")
	phone.narrow(int(browsertest.Phone.Width), "the alert destinations' list")
	phone.tab.Screenshot("phone-alerts")
	phone.noProblems()
}

// The news lockout with an event row (its time picked in New York time)
// and roots, saved and shown again; the Settings index links to it.
func TestNewsLockoutEditor(t *testing.T) {
	t.Parallel()
	d := newDash(t, browsertest.Desktop)
	d.StartAgent("bob") // the lockout is pushed to the PC
	d.signInAs("bob")
	d.page("/app/manage")
	d.tab.Screenshot("settings")
	d.tab.Submit("#settings", "News lockout")
	d.at("/app/manage/news-lockout")

	d.checkBox("#f-enabled")
	row := d.addRow("events")
	d.setValue(row+".at", "2026-11-20T08:30")
	d.tab.Fill(row+".title", "CPI")
	d.tab.Choose(row+".impact", "high")
	d.tab.Fill("roots", "es, nq")
	d.tab.Fill("minutesAfter", "10")
	d.tab.Submit("#editor", "Save")
	require.Contains(t, d.tab.Text("#notice"), "Saved.")

	var stored struct {
		Enabled bool `json:"enabled"`
		Events  []struct {
			At     time.Time `json:"at"`
			Title  string    `json:"title"`
			Impact string    `json:"impact"`
		} `json:"events"`
		Roots        []string `json:"roots"`
		MinutesAfter int      `json:"minutesAfter"`
	}
	d.apiData("/v1/api/manage/news-lockout", d.Users["bob"].APIToken, &stored)
	require.True(t, stored.Enabled)
	require.Len(t, stored.Events, 1)
	require.Equal(t, time.Date(2026, 11, 20, 13, 30, 0, 0, time.UTC), stored.Events[0].At.UTC(), "08:30 in New York")
	require.Equal(t, "CPI", stored.Events[0].Title)
	require.Equal(t, "high", stored.Events[0].Impact)
	require.Equal(t, []string{"ES", "NQ"}, stored.Roots)
	require.Equal(t, 10, stored.MinutesAfter)

	d.page("/app/manage/news-lockout")
	value := func(name string) string {
		return browsertest.Eval[string](d.tab, fmt.Sprintf(`document.querySelector('[name=%q]').value`, name))
	}
	require.Equal(t, "2026-11-20T08:30", value("events.0.at"))
	require.Equal(t, "CPI", value("events.0.title"))
	require.Equal(t, "high", value("events.0.impact"))
	require.Equal(t, "ES, NQ", value("roots"))
	require.True(t, browsertest.Eval[bool](d.tab, `document.querySelector('#f-enabled').checked`))
	d.tab.Screenshot("news-lockout")
	d.noProblems()
}

// An ATM template with two bracket rows ("Add a row" adds the second):
// brackets that do not add up to the quantity are refused next to the
// brackets, and once they do the template is stored with both.
func TestATMTemplateEditor(t *testing.T) {
	t.Parallel()
	d := newDash(t, browsertest.Desktop)
	d.StartAgent("bob")
	d.signInAs("bob")
	d.page("/app/manage/desktop/atm-templates")
	d.tab.Submit("", "New ATM template")
	d.tab.Fill("name", "ES two targets")
	d.tab.Fill("config.quantity", "3")
	first := d.addRow("config.brackets")
	d.tab.Fill(first+".quantity", "1")
	d.tab.Fill(first+".stopLossTicks", "8")
	d.tab.Fill(first+".profitTargetTicks", "8")
	second := d.addRow("config.brackets")
	require.NotEqual(t, first, second)
	d.tab.Fill(second+".quantity", "1")
	d.tab.Fill(second+".stopLossTicks", "8")
	d.tab.Fill(second+".profitTargetTicks", "16")
	d.tab.Submit("#editor", "Save")

	errSel := `[id="error-config.brackets"]`
	require.Equal(t, "The brackets' quantities must add up to the quantity above.", d.tab.Text(errSel))
	invalid, _ := d.tab.Attr(`[id="f-config.brackets"]`, "aria-invalid")
	require.Equal(t, "true", invalid)
	require.Equal(t, "16", browsertest.Eval[string](d.tab, `document.querySelector('[name="config.brackets.1.profitTargetTicks"]').value`),
		"the form keeps what was typed")
	var list []map[string]any
	d.apiData("/v1/api/manage/desktop/atm-templates", d.Users["bob"].APIToken, &list)
	require.Empty(t, list)

	d.tab.Fill("config.quantity", "2")
	d.tab.Submit("#editor", "Save")
	require.Contains(t, d.tab.Text("#notice"), "Created.")
	var stored []struct {
		Name   string `json:"name"`
		Config struct {
			Quantity int `json:"quantity"`
			Brackets []struct {
				Quantity          int `json:"quantity"`
				StopLossTicks     int `json:"stopLossTicks"`
				ProfitTargetTicks int `json:"profitTargetTicks"`
			} `json:"brackets"`
		} `json:"config"`
	}
	d.apiData("/v1/api/manage/desktop/atm-templates", d.Users["bob"].APIToken, &stored)
	require.Len(t, stored, 1)
	require.Equal(t, "ES two targets", stored[0].Name)
	require.Equal(t, 2, stored[0].Config.Quantity)
	require.Len(t, stored[0].Config.Brackets, 2)
	require.Equal(t, 16, stored[0].Config.Brackets[1].ProfitTargetTicks)
	d.noProblems("status of 422") // the refused save's page
}

// An account group made of one of the PC's accounts, then deleted.
func TestAccountGroupCreateDelete(t *testing.T) {
	t.Parallel()
	d := newDash(t, browsertest.Desktop)
	d.StartAgent("bob")
	d.signInAs("bob")
	d.page("/app/manage/desktop/account-groups")
	d.tab.Submit("", "New account group")
	d.tab.Fill("name", "Evaluations")
	d.tab.Choose("destination", "desktop")
	d.checkBox(`input[name="accounts"][value="Sim101"]`)
	d.tab.Submit("#editor", "Save")
	require.Contains(t, d.tab.Text("#notice"), "Created.")
	var groups []struct {
		Name     string   `json:"name"`
		Accounts []string `json:"accounts"`
	}
	d.apiData("/v1/api/manage/desktop/account-groups", d.Users["bob"].APIToken, &groups)
	require.Len(t, groups, 1)
	require.Equal(t, []string{"Sim101"}, groups[0].Accounts)

	d.tab.Submit(".actions", "Delete")
	require.Contains(t, d.tab.Text("h1"), "Delete this account group?")
	d.tab.Submit("#confirm-delete", "Delete")
	d.at("/app/manage/desktop/account-groups")
	require.Contains(t, d.tab.Text("#notice"), "Deleted.")
	require.Contains(t, d.tab.Text("#resources"), "None yet.")
	d.apiData("/v1/api/manage/desktop/account-groups", d.Users["bob"].APIToken, &groups)
	require.Empty(t, groups)
	d.noProblems()
}
