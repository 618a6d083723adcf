package browser_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/browsertest"
	"tradebridge/internal/testkit"
)

// newCopier fills the copiers' form (the tab at its empty form) with a
// copier from leader to follower at ratio, turned on, and saves it; it
// returns the new copier's id.
func (d *dash) newCopier(leader, follower, ratio string) string {
	d.t.Helper()
	d.page("/app/manage/desktop/copiers")
	d.tab.Submit("main", "New copier")
	d.at("/app/manage/desktop/copiers/new")
	d.check("active", true)
	d.tab.Choose("leader", leader)
	d.tab.Choose("followers.0.account", follower)
	d.tab.Choose("sizing.ratio", ratio)
	d.tab.Submit("#editor", "Save")
	d.tab.WaitVisible("#notice")
	return d.editing("/app/manage/desktop/copiers")
}

// A copier Sim101 → Sim102 at ratio 2 made in the form copies a simulator
// order: a market buy of 1 on Sim101 through the trading API leaves Sim102
// long 2. Its page shows it running; the list shows it.
func TestCopierFromTheForm(t *testing.T) {
	t.Parallel()
	d := newDash(t, browsertest.Desktop)
	d.StartAgent("bob")
	bob := d.Users["bob"]
	d.signInAs("bob")

	d.page("/app/manage/desktop/copiers")
	require.Contains(t, d.tab.Text("#resources"), "None yet.")
	// The form offers the agent's accounts and the Management API's ratio
	// steps; "Add a row" adds a follower row.
	d.tab.Submit("main", "New copier")
	require.Equal(t, 1, d.tab.Count(`select[name="followers.0.account"] option[value="Sim102"]`))
	require.Equal(t, 16, d.tab.Count(`select[name="sizing.ratio"] option`))
	d.tab.Click(`[data-rows="followers"]`, "Add a row")
	d.tab.WaitVisible(`select[name="followers.1.account"]`)

	id := d.newCopier("Sim101", "Sim102", "2")
	require.Equal(t, "running", d.state("#resource-state"))
	d.tab.Screenshot("copier-edit")
	stored := d.manageGet("desktop/copiers/"+id, bob.APIToken)
	require.Equal(t, map[string]any{"ratio": float64(2)}, stored["sizing"])
	require.Equal(t, []any{map[string]any{"account": "Sim102", "inverse": false}}, stored["followers"])

	d.buy(bob.APIToken, "Sim101", 1)
	require.Eventually(t, func() bool { return d.quantity(bob.APIToken, "Sim102", "ES") == 2 },
		testkit.Long, 50*time.Millisecond, "the copier copies the buy of 1 to Sim102 at ratio 2")

	d.page("/app/manage/desktop/copiers")
	require.Equal(t, "running", d.state(fmt.Sprintf(`#resources tr[data-id=%q]`, id)))
	d.tab.Screenshot("copiers")
	d.noProblems()
}

// A ratio that is not a step (2.3, sent by a form the page did not make)
// is refused by the Management API and the message is next to
// sizing.ratio; nothing is stored.
func TestCopierFieldError(t *testing.T) {
	t.Parallel()
	d := newDash(t, browsertest.Desktop)
	d.StartAgent("bob")
	d.signInAs("bob")
	d.page("/app/manage/desktop/copiers/new")
	d.check("active", true)
	d.tab.Choose("leader", "Sim101")
	d.tab.Choose("followers.0.account", "Sim102")
	browsertest.Eval[string](d.tab, `(() => { const s = document.querySelector('select[name="sizing.ratio"]');
		s.add(new Option('× 2.3', '2.3')); s.value = '2.3'; return s.value; })()`)
	d.tab.Submit("#editor", "Save")
	require.Contains(t, d.fieldError("sizing.ratio"), "The ratio must be one of 0.25")
	invalid, _ := d.tab.Attr(`[name="sizing.ratio"]`, "aria-invalid")
	require.Equal(t, "true", invalid)
	require.Contains(t, d.tab.Text("#form-error"), "was not created")
	require.Equal(t, "Sim102", browsertest.Eval[string](d.tab, `document.querySelector('select[name="followers.0.account"]').value`),
		"the form keeps what the trader chose")
	r := d.Do("GET", "/v1/api/manage/desktop/copiers", d.Users["bob"].APIToken, "")
	require.JSONEq(t, `[]`, string(r.Data), "nothing stored")
	d.noProblems("status of 422")
}

// Two browser sessions edit one copier: the first saves; the second's
// save is refused with what changed since it opened the copier, the form
// shows the current values, and nothing of the second edit is stored.
func TestCopierEditedTwice(t *testing.T) {
	t.Parallel()
	d := newDash(t, browsertest.Desktop)
	d.StartAgent("bob")
	bob := d.Users["bob"]
	email, password := setPassword(t, d.System, "bob")
	d.signIn(email, password)
	id := d.newCopier("Sim101", "Sim102", "2")

	other := &dash{System: d.System, t: t, tab: browsertest.New(t, browsertest.Desktop)}
	other.signIn(email, password)
	other.page("/app/manage/desktop/copiers/" + id)
	d.page("/app/manage/desktop/copiers/" + id)

	d.tab.Choose("sizing.ratio", "3")
	d.tab.Submit("#editor", "Save")
	d.tab.WaitVisible("#notice")

	other.check("followers.0.inverse", true)
	other.tab.Choose("sizing.ratio", "0.5")
	other.tab.Submit("#editor", "Save")
	other.tab.WaitVisible("#changed")
	require.Contains(t, other.tab.Text("#form-error"), "Someone else changed this copier since you opened it")
	require.Contains(t, other.tab.Text("#changed"), "Sizing, Ratio")
	require.Contains(t, other.tab.Text("#changed .was"), "× 2")
	require.Contains(t, other.tab.Text("#changed .now"), "× 3")
	require.Equal(t, "3", browsertest.Eval[string](other.tab, `document.querySelector('select[name="sizing.ratio"]').value`),
		"the form shows the current values")
	require.False(t, browsertest.Eval[bool](other.tab, `document.querySelector('input[name="followers.0.inverse"]').checked`))

	stored := d.manageGet("desktop/copiers/"+id, bob.APIToken)
	require.Equal(t, map[string]any{"ratio": float64(3)}, stored["sizing"])
	require.Equal(t, []any{map[string]any{"account": "Sim102", "inverse": false}}, stored["followers"], "nothing of the stale edit")

	// Saved again from the refreshed form, the edit goes through.
	other.check("followers.0.inverse", true)
	other.tab.Submit("#editor", "Save")
	other.tab.WaitVisible("#notice")
	stored = d.manageGet("desktop/copiers/"+id, bob.APIToken)
	require.Equal(t, []any{map[string]any{"account": "Sim102", "inverse": true}}, stored["followers"])
	d.noProblems()
	other.noProblems("status of 412")
}

// A monitor with a $50 loss limit made in the form: a loss trips it and
// the page shows it stopped without a reload; Restart is refused while
// the session's loss stays past the limit (the sentence says so); after
// the limit is raised in the form, Restart makes it active again. On a
// phone the page fits the screen.
func TestMonitorTripAndRestart(t *testing.T) {
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
			agent := d.StartAgent("bob")
			bob := d.Users["bob"]
			d.signInAs("bob")

			d.page("/app/manage/desktop/monitors")
			d.tab.Submit("main", "New monitor")
			d.tab.Choose("account", "Sim101")
			d.check("lossLimit.enabled", true)
			d.tab.Fill("lossLimit.amount", "50")
			d.tab.Submit("#editor", "Save")
			d.tab.WaitVisible("#notice")
			id := d.editing("/app/manage/desktop/monitors")
			require.Equal(t, "active", d.state("#resource-state"))
			require.Contains(t, d.tab.Text("#resource-state"), "Loss limit: 50.00")
			d.tab.WaitVisible("#monitor-pnl .pnl")
			if c.vp.Mobile {
				d.narrow(int(c.vp.Width), "the monitor's page")
			}

			// A buy, then the market falls 20 points: a loss of about
			// $1,000 counting the open position.
			d.markNoReload()
			d.buy(bob.APIToken, "Sim101", 1)
			q, err := agent.Sim.Quote(context.Background(), "ES 12-26")
			require.NoError(t, err)
			require.NoError(t, agent.Sim.SetPrice("ES 12-26", q.Last-20))
			d.tab.WaitFor(testkit.Long, "the state to turn stopped without a reload",
				`document.querySelector('#resource-state').dataset.state === 'stopped'`)
			d.stillSamePage()
			require.Contains(t, d.tab.Text("#resource-state"), "the loss limit was reached")
			require.Eventually(t, func() bool { return d.quantity(bob.APIToken, "Sim101", "ES") == 0 },
				testkit.Long, 50*time.Millisecond, "the trip flattens the account")
			d.tab.ScreenshotView(c.shots + "monitor")
			if c.vp.Mobile {
				d.narrow(int(c.vp.Width), "the stopped monitor's page")
				d.noProblems()
				return
			}

			// The session's realized loss is past the limit: the restart
			// would stop it again at once.
			d.tab.Submit("#resource-state", "Restart")
			require.Contains(t, d.tab.Text("#form-error"), "Restarting now would stop the monitor again at once")
			require.Equal(t, "stopped", d.state("#resource-state"))

			d.tab.Fill("lossLimit.amount", "5000")
			d.tab.Submit("#editor", "Save")
			d.tab.WaitVisible("#notice")
			d.tab.Submit("#resource-state", "Restart")
			d.tab.WaitVisible("#notice")
			require.Contains(t, d.tab.Text("#notice"), "Restarted")
			require.Equal(t, "active", d.state("#resource-state"))
			stored := d.manageGet("desktop/monitors/"+id, bob.APIToken)
			require.Equal(t, "active", stored["state"])
			require.Equal(t, map[string]any{"enabled": true, "amount": float64(5000)}, stored["lossLimit"])
			d.noProblems("status of 409")
		})
	}
}

// A Tandem copier's page turns halted without a reload when its
// follower's monitor stops: a buy copied to Sim102, the market falls past
// Sim102's loss limit, the monitor stops and the copier halts.
func TestCopierHaltsLive(t *testing.T) {
	t.Parallel()
	d := newDash(t, browsertest.Desktop)
	agent := d.StartAgent("bob")
	bob := d.Users["bob"]
	r := d.Do("POST", "/v1/api/manage/desktop/monitors", bob.APIToken, `{"account":"Sim102","lossLimit":{"enabled":true,"amount":50}}`)
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	r = d.Do("POST", "/v1/api/manage/desktop/copiers", bob.APIToken,
		`{"active":true,"leader":"Sim101","followers":[{"account":"Sim102"}],"sizing":{"ratio":1},"tandem":true}`)
	require.Equal(t, 201, r.Status, "%s", r.Raw)
	var copier struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(r.Data, &copier))

	d.signInAs("bob")
	d.page("/app/manage/desktop/copiers/" + copier.ID)
	require.Equal(t, "running", d.state("#resource-state"))
	d.markNoReload()
	d.buy(bob.APIToken, "Sim101", 1)
	require.Eventually(t, func() bool { return d.quantity(bob.APIToken, "Sim102", "ES") == 1 },
		testkit.Long, 50*time.Millisecond, "the buy is copied")
	q, err := agent.Sim.Quote(context.Background(), "ES 12-26")
	require.NoError(t, err)
	require.NoError(t, agent.Sim.SetPrice("ES 12-26", q.Last-20))
	d.tab.WaitFor(testkit.Long, "the copier to turn halted without a reload",
		`document.querySelector('#resource-state').dataset.state === 'halted'`)
	d.stillSamePage()
	require.Contains(t, d.tab.Text("#resource-state"), "the monitor of follower Sim102 stopped")
	d.noProblems()
}
