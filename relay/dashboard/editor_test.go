package dashboard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"tradebridge/protocol"

	"github.com/stretchr/testify/require"
)

// copierForm is the copiers' form of a copier from leader to one
// follower at ratio.
func copierForm(csrf, leader, follower, ratio string) url.Values {
	return url.Values{"csrf": {csrf}, "active": {"true"}, "leader": {leader}, "followers.0.account": {follower},
		"followers.0.sizing.ratio": {""}, "followers.1.account": {""}, "sizing.ratio": {ratio}, "copyMode": {"order"},
		"instruments": {""}, "autoSyncSeconds": {""}}
}

// createCopier creates a copier through the form and returns its id.
func (m *manageEnv) createCopier(cookie, csrf, leader, follower, ratio string) string {
	m.t.Helper()
	r := m.post("/app/manage/desktop/copiers", cookie, copierForm(csrf, leader, follower, ratio))
	require.Equal(m.t, http.StatusSeeOther, r.StatusCode, r.Body)
	loc := r.Header.Get("Location")
	id := regexp.MustCompile(`^/app/manage/desktop/copiers/(cop_[0-9a-f]{20})\?done=created$`).FindStringSubmatch(loc)
	require.Len(m.t, id, 2, loc)
	return id[1]
}

// fieldError returns the message next to the input named name ("" for
// none) and checks that the input points at it.
func fieldError(t *testing.T, page, name string) string {
	t.Helper()
	m := regexp.MustCompile(`<p class="field-error" id="error-` + regexp.QuoteMeta(name) + `">([^<]*)</p>`).FindStringSubmatch(page)
	if m == nil {
		return ""
	}
	input := regexp.MustCompile(`<(?:input|select|fieldset)[^>]*id="f-` + regexp.QuoteMeta(name) + `"[^>]*>`).FindString(page)
	require.Contains(t, input, `aria-invalid="true"`, name)
	require.Regexp(t, `aria-describedby="[^"]*error-`+regexp.QuoteMeta(name), input)
	return m[1]
}

// The copiers' editor over the real Management API: the list, the empty
// form with the kind's defaults, a create, the edit form and a save with
// the ETag the form showed.
func TestCopierEditor(t *testing.T) {
	t.Parallel()
	m := newManageEnv(t)
	cookie, csrf := m.signIn(aliceEmail)

	list := m.do(http.MethodGet, "/app/manage/desktop/copiers", cookie, nil)
	require.Equal(t, http.StatusOK, list.StatusCode, list.Body)
	require.Contains(t, list.Body, "None yet.")
	require.Contains(t, list.Body, `href="/app/manage/desktop/copiers/new"`)

	blank := m.do(http.MethodGet, "/app/manage/desktop/copiers/new", cookie, nil)
	require.Equal(t, http.StatusOK, blank.StatusCode)
	for _, name := range []string{"leader", "followers.0.account", "followers.0.sizing.ratio", "followers.0.inverse", "sizing.ratio",
		"instruments", "symbolReplacements.0.from", "symbolReplacements.0.to", "copyMode", "tandem", "autoSync", "autoSyncSeconds", "active"} {
		require.Contains(t, blank.Body, `name="`+name+`"`, name)
	}
	require.NotContains(t, blank.Body, `name="state"`)
	require.NotContains(t, blank.Body, `name="followers.0._remove"`, "the blank row has nothing to remove")
	// The agent's accounts are the choices; the kind's defaults are
	// chosen (ratio 1, order copy mode).
	require.Contains(t, blank.Body, `<option value="Sim103">Sim103</option>`)
	require.Regexp(t, `<option value="1" selected>× 1</option>`, blank.Body)
	require.Contains(t, blank.Body, `<option value="order" selected>`)
	require.Contains(t, blank.Body, `class="add-row" data-rows="followers" hidden>Add a row</button>`)

	id := m.createCopier(cookie, csrf, "Sim101", "Sim102", "2")
	stored, etag := m.apiGet("desktop/copiers/" + id)
	require.Equal(t, "Sim101", stored["leader"])
	require.Equal(t, map[string]any{"ratio": float64(2)}, stored["sizing"])
	require.Equal(t, []any{map[string]any{"account": "Sim102", "inverse": false}}, stored["followers"])
	require.Equal(t, true, stored["active"])
	require.Equal(t, "running", stored["state"])

	edit := m.do(http.MethodGet, "/app/manage/desktop/copiers/"+id+"?done=created", cookie, nil)
	require.Equal(t, http.StatusOK, edit.StatusCode)
	require.Contains(t, edit.Body, `id="notice" role="status"`)
	require.Equal(t, etag, inputValue(edit.Body, "etag"))
	require.Contains(t, edit.Body, `id="resource-state" data-state="running"`)
	require.Contains(t, edit.Body, `name="followers.0._remove"`)
	require.Contains(t, edit.Body, `name="followers.1.account"`, "one blank row after the follower")
	require.Regexp(t, `<option value="2" selected>× 2</option>`, edit.Body)

	list = m.do(http.MethodGet, "/app/manage/desktop/copiers", cookie, nil)
	require.Contains(t, list.Body, `<tr data-id="`+id+`" data-state="running">`)
	require.Contains(t, list.Body, "Sim102")

	// A save: the whole editable object, with If-Match.
	form := copierForm(csrf, "Sim101", "Sim102", "3")
	form.Set("followers.0.inverse", "true")
	form.Set("followers.1.account", "Sim103")
	form.Set("followers.1.sizing.ratio", "0.5")
	form.Set("instruments", "es, nq")
	form.Set("etag", etag)
	form.Set("loaded", inputValue(edit.Body, "loaded"))
	r := m.post("/app/manage/desktop/copiers/"+id, cookie, form)
	require.Equal(t, http.StatusSeeOther, r.StatusCode, r.Body)
	require.Equal(t, "/app/manage/desktop/copiers/"+id+"?done=saved", r.Header.Get("Location"))
	stored, etag2 := m.apiGet("desktop/copiers/" + id)
	require.NotEqual(t, etag, etag2)
	require.Equal(t, map[string]any{"ratio": float64(3)}, stored["sizing"])
	require.Equal(t, []any{"ES", "NQ"}, stored["instruments"])
	require.Equal(t, []any{map[string]any{"account": "Sim102", "inverse": true},
		map[string]any{"account": "Sim103", "inverse": false, "sizing": map[string]any{"ratio": 0.5}}}, stored["followers"])

	// Sending the stored values again changes nothing.
	m.refill()
	form.Set("etag", etag2)
	form.Set("instruments", "ES, NQ")
	r = m.post("/app/manage/desktop/copiers/"+id, cookie, form)
	require.Equal(t, http.StatusSeeOther, r.StatusCode, r.Body)
	require.Equal(t, "/app/manage/desktop/copiers/"+id+"?done=unchanged", r.Header.Get("Location"))
	_, etag3 := m.apiGet("desktop/copiers/" + id)
	require.Equal(t, etag2, etag3)

	// Removing a row and turning the copier off.
	m.refill()
	form.Set("followers.0._remove", "true")
	form.Del("active")
	r = m.post("/app/manage/desktop/copiers/"+id, cookie, form)
	require.Equal(t, http.StatusSeeOther, r.StatusCode, r.Body)
	stored, _ = m.apiGet("desktop/copiers/" + id)
	require.Equal(t, false, stored["active"], "an unchecked box is false")
	require.Equal(t, "off", stored["state"])
	require.Len(t, stored["followers"], 1)

	// Every write went through the Management API in process, with the
	// session's source.
	require.NotEmpty(t, m.hub.Pushes(aliceID), "the configuration was pushed to the agent")
}

// A 422 is shown next to the input its path names, the form keeps what
// the trader typed, and nothing is stored; a value that is not a number
// is refused before anything is sent.
func TestCopierEditorFieldErrors(t *testing.T) {
	t.Parallel()
	m := newManageEnv(t)
	cookie, csrf := m.signIn(aliceEmail)

	r := m.post("/app/manage/desktop/copiers", cookie, copierForm(csrf, "Sim101", "Sim102", "2.3"))
	require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, r.Body)
	require.Equal(t, "The ratio must be one of 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, or 2 to 10 in whole steps.", fieldError(t, r.Body, "sizing.ratio"))
	require.Contains(t, r.Body, `id="form-error" role="alert"`)
	require.Regexp(t, `<option value="2.3" selected>2.3</option>`, r.Body, "the typed value is kept")
	require.Contains(t, r.Body, `<option value="Sim102" selected>`)
	require.Empty(t, m.apiList("desktop/copiers"))

	form := copierForm(csrf, "Sim101", "Sim102", "1")
	form.Set("autoSync", "true")
	form.Set("autoSyncSeconds", "ten")
	r = m.post("/app/manage/desktop/copiers", cookie, form)
	require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode)
	require.Equal(t, "Enter a whole number, such as 5.", fieldError(t, r.Body, "autoSyncSeconds"))
	require.Equal(t, "ten", inputValue(r.Body, "autoSyncSeconds"))
	require.Empty(t, m.apiList("desktop/copiers"))

	// The API's own rule: Auto-Sync needs its seconds.
	form.Set("autoSyncSeconds", "")
	r = m.post("/app/manage/desktop/copiers", cookie, form)
	require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode)
	require.Equal(t, "Needed when this setting is turned on.", fieldError(t, r.Body, "autoSyncSeconds"))

	// A follower that is the leader: 409 duplicate_follower, next to it.
	r = m.post("/app/manage/desktop/copiers", cookie, copierForm(csrf, "Sim101", "Sim101", "1"))
	require.Equal(t, http.StatusConflict, r.StatusCode)
	require.Equal(t, "This follower appears twice, or is the leader.", fieldError(t, r.Body, "followers.0.account"))
	require.Contains(t, r.Body, "The copier was not created. A follower appears twice, or is the leader itself.")

	// An account no connection has: 404 account_not_found; what the
	// trader typed is shown back as text.
	r = m.post("/app/manage/desktop/copiers", cookie, copierForm(csrf, "<b>Sim9</b>", "Sim102", "1"))
	require.Equal(t, http.StatusNotFound, r.StatusCode)
	require.Equal(t, "None of your PC&#39;s platform connections has this account.", fieldError(t, r.Body, "leader"))
	require.NotContains(t, r.Body, "<b>Sim9</b>")
	require.Contains(t, r.Body, "&lt;b&gt;Sim9&lt;/b&gt; (not on your PC now)")
}

// Two editors of one copier: the second save gets the 412 explained
// (what changed, with the values loaded and now), the form shows the
// current values, and nothing of its edit is stored.
func TestCopierEditorStale(t *testing.T) {
	t.Parallel()
	m := newManageEnv(t)
	cookie, csrf := m.signIn(aliceEmail)
	id := m.createCopier(cookie, csrf, "Sim101", "Sim102", "2")
	page := m.do(http.MethodGet, "/app/manage/desktop/copiers/"+id, cookie, nil).Body
	etag, loaded := inputValue(page, "etag"), inputValue(page, "loaded")

	first := copierForm(csrf, "Sim101", "Sim102", "3")
	first.Set("etag", etag)
	first.Set("loaded", loaded)
	r := m.post("/app/manage/desktop/copiers/"+id, cookie, first)
	require.Equal(t, http.StatusSeeOther, r.StatusCode, r.Body)

	m.refill()
	second := copierForm(csrf, "Sim101", "Sim103", "2")
	second.Set("followers.0.inverse", "true")
	second.Set("etag", etag)
	second.Set("loaded", loaded)
	r = m.post("/app/manage/desktop/copiers/"+id, cookie, second)
	require.Equal(t, http.StatusPreconditionFailed, r.StatusCode, r.Body)
	require.Contains(t, r.Body, "Someone else changed this copier since you opened it, so your changes were not saved.")
	require.Regexp(t, `<th scope="row">Sizing, Ratio</th><td data-label="When you opened it:" class="was">× 2</td><td data-label="Now:" class="now">× 3</td>`, r.Body)
	require.Regexp(t, `<option value="3" selected>× 3</option>`, r.Body, "the form shows the current values")
	_, now := m.apiGet("desktop/copiers/" + id)
	require.Equal(t, now, inputValue(r.Body, "etag"), "the form carries the current ETag")
	stored, _ := m.apiGet("desktop/copiers/" + id)
	require.Equal(t, []any{map[string]any{"account": "Sim102", "inverse": false}}, stored["followers"], "nothing of the stale edit is stored")

	// A form without its ETag is refused as a stale one.
	m.refill()
	second.Del("etag")
	r = m.post("/app/manage/desktop/copiers/"+id, cookie, second)
	require.Equal(t, http.StatusPreconditionFailed, r.StatusCode)
}

// Too many changes of one resource: the page says when to try again and
// sets Retry-After.
func TestCopierEditorRateLimited(t *testing.T) {
	t.Parallel()
	m := newManageEnv(t)
	cookie, csrf := m.signIn(aliceEmail)
	id := m.createCopier(cookie, csrf, "Sim101", "Sim102", "2")
	var last resp
	for i := range 10 {
		page := m.do(http.MethodGet, "/app/manage/desktop/copiers/"+id, cookie, nil).Body
		form := copierForm(csrf, "Sim101", "Sim102", []string{"1", "2"}[i%2])
		form.Set("etag", inputValue(page, "etag"))
		last = m.post("/app/manage/desktop/copiers/"+id, cookie, form)
		if last.StatusCode == http.StatusTooManyRequests {
			break
		}
		require.Equal(t, http.StatusSeeOther, last.StatusCode, last.Body)
	}
	require.Equal(t, http.StatusTooManyRequests, last.StatusCode)
	require.Regexp(t, `Too many changes at once\. Try again in \d+ seconds?\.`, last.Body)
	require.Regexp(t, `^\d+$`, last.Header.Get("Retry-After"))
}

// Delete asks to confirm (no script needed), then deletes.
func TestCopierEditorDelete(t *testing.T) {
	t.Parallel()
	m := newManageEnv(t)
	cookie, csrf := m.signIn(aliceEmail)
	id := m.createCopier(cookie, csrf, "Sim101", "Sim102", "2")
	r := m.post("/app/manage/desktop/copiers/"+id+"/delete", cookie, url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusOK, r.StatusCode)
	require.Contains(t, r.Body, "Delete this copier?")
	require.Contains(t, r.Body, `<input type="hidden" name="confirm" value="yes">`)
	require.Len(t, m.apiList("desktop/copiers"), 1)

	r = m.post("/app/manage/desktop/copiers/"+id+"/delete", cookie, url.Values{"csrf": {csrf}, "confirm": {"yes"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, r.Body)
	require.Equal(t, "/app/manage/desktop/copiers?done=deleted", r.Header.Get("Location"))
	require.Empty(t, m.apiList("desktop/copiers"))

	r = m.do(http.MethodGet, "/app/manage/desktop/copiers/"+id, cookie, nil)
	require.Equal(t, http.StatusNotFound, r.StatusCode)
	r = m.do(http.MethodGet, "/app/manage/desktop/copiers/not-an-id", cookie, nil)
	require.Equal(t, http.StatusNotFound, r.StatusCode)
	r = m.post("/app/manage/desktop/copiers/"+id+"/explode", cookie, url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusNotFound, r.StatusCode)
}

// The editors need the elite plan (the Management API's door); a free
// user gets a page saying so, and nothing reaches the API. Without the
// CSRF token nothing is created.
func TestEditorRefusals(t *testing.T) {
	t.Parallel()
	m := newManageEnv(t)
	bobCookie, bobCSRF := m.signIn(bobEmail)
	for _, path := range []string{"/app/manage/desktop/copiers", "/app/manage/desktop/copiers/new"} {
		r := m.do(http.MethodGet, path, bobCookie, nil)
		require.Equal(t, http.StatusForbidden, r.StatusCode, path)
		require.Contains(t, r.Body, "come with the elite plan")
	}
	r := m.post("/app/manage/desktop/copiers", bobCookie, copierForm(bobCSRF, "Sim101", "Sim102", "1"))
	require.Equal(t, http.StatusForbidden, r.StatusCode)

	cookie, csrf := m.signIn(aliceEmail)
	r = m.post("/app/manage/desktop/copiers", cookie, copierForm("", "Sim101", "Sim102", "1"))
	require.Equal(t, http.StatusForbidden, r.StatusCode)
	r = m.post("/app/manage/desktop/copiers", cookie, copierForm(bobCSRF, "Sim101", "Sim102", "1"))
	require.Equal(t, http.StatusForbidden, r.StatusCode, "another session's token")
	require.Empty(t, m.apiList("desktop/copiers"))

	// The agent disconnected (its accounts as it last reported them):
	// the change needs it (409 addon_disconnected).
	conns, err := json.Marshal([]protocol.Connection{{Name: "Sim", Accounts: simAccounts}})
	require.NoError(t, err)
	require.NoError(t, m.store.SetConnections(context.Background(), aliceID, conns))
	m.hub.Disconnect(aliceID)
	r = m.post("/app/manage/desktop/copiers", cookie, copierForm(csrf, "Sim101", "Sim102", "1"))
	require.Equal(t, http.StatusConflict, r.StatusCode)
	require.Contains(t, r.Body, "The copier was not created. Your PC&#39;s agent is not connected")
}

// A plan without a kind, and an account whose Management API the
// operator closed, get the page that says so (the Management API's own
// gate, run in process).
func TestEditorPlanRefusals(t *testing.T) {
	t.Parallel()
	m := newManageEnv(t)
	m.accounts.mu.Lock()
	m.accounts.withheld = map[string][]string{aliceID: {"copier"}}
	m.accounts.mu.Unlock()
	cookie, _ := m.signIn(aliceEmail)
	r := m.do(http.MethodGet, "/app/manage/desktop/copiers", cookie, nil)
	require.Equal(t, http.StatusForbidden, r.StatusCode)
	require.Contains(t, r.Body, "come with the elite plan")
	require.Equal(t, http.StatusOK, m.do(http.MethodGet, "/app/manage/desktop/monitors", cookie, nil).StatusCode,
		"the monitors are not withheld")

	m.accounts.mu.Lock()
	m.accounts.withheld = nil
	m.accounts.closed = map[string]bool{aliceID: true}
	m.accounts.mu.Unlock()
	cookie, _ = m.signIn(aliceEmail)
	r = m.do(http.MethodGet, "/app/manage/desktop/monitors", cookie, nil)
	require.Equal(t, http.StatusForbidden, r.StatusCode)
	require.Contains(t, r.Body, "closed them for it")
}

// The Settings index links to the editors.
func TestSettingsIndex(t *testing.T) {
	t.Parallel()
	m := newManageEnv(t)
	cookie, _ := m.signIn(aliceEmail)
	r := m.do(http.MethodGet, "/app/manage", cookie, nil)
	require.Equal(t, http.StatusOK, r.StatusCode)
	require.Contains(t, r.Body, `href="/app/manage/desktop/copiers"`)
}

// monitorForm is the monitors' form of a new monitor of the account
// with a loss limit.
func monitorForm(csrf, account, lossLimit string) url.Values {
	return url.Values{"csrf": {csrf}, "account": {account}, "active": {"true"}, "includeUnrealized": {"true"},
		"lossLimit.enabled": {"true"}, "lossLimit.amount": {lossLimit}, "profitTarget.amount": {""},
		"trailingDrawdown.amount": {""}, "masterWindow.start": {""}, "masterWindow.end": {""},
		"tradingWindows.0.start": {""}, "tradingWindows.0.end": {""}, "closingOnlyAfter": {""},
		"autoFlattenAt": {""}, "onTrip": {"flatten"}}
}

// The monitors' editor: a monitor with a $50 loss limit, its state with
// the session P&L and high as the agent's engine counts them, a trip
// shown by the state block (with Restart), a save of the stopped monitor
// that sends only what changed, a restart refused (would_retrip) in a
// sentence, then a restart.
func TestMonitorEditor(t *testing.T) {
	t.Parallel()
	m := newManageEnv(t)
	cookie, csrf := m.signIn(aliceEmail)

	blank := m.do(http.MethodGet, "/app/manage/desktop/monitors/new", cookie, nil)
	require.Equal(t, http.StatusOK, blank.StatusCode)
	for _, name := range []string{"account", "active", "profitTarget.enabled", "profitTarget.amount", "lossLimit.enabled", "lossLimit.amount",
		"includeUnrealized", "includeCommission", "trailingDrawdown.enabled", "trailingDrawdown.amount", "masterWindow.days",
		"masterWindow.start", "masterWindow.end", "tradingWindows.0.enabled", "tradingWindows.0.days", "tradingWindows.0.start",
		"tradingWindows.0.end", "closingOnly", "closingOnlyAfter", "blockSignals", "switchesLocked", "monitorLock", "autoFlattenAt", "onTrip",
		"minimumProfitDrawdown.enabled", "minimumProfitDrawdown.trigger", "minimumProfitDrawdown.floor"} {
		require.Contains(t, blank.Body, `name="`+name+`"`, name)
	}
	require.Contains(t, blank.Body, `name="masterWindow.days" value="mon"`)
	require.Contains(t, blank.Body, `type="time" step="300"`)
	require.NotContains(t, blank.Body, `id="resource-state"`)

	r := m.post("/app/manage/desktop/monitors", cookie, monitorForm(csrf, "Sim101", "50"))
	require.Equal(t, http.StatusSeeOther, r.StatusCode, r.Body)
	href, _, _ := strings.Cut(r.Header.Get("Location"), "?")
	id := strings.TrimPrefix(href, "/app/manage/desktop/monitors/")
	stored, _ := m.apiGet("desktop/monitors/" + id)
	require.Equal(t, map[string]any{"enabled": true, "amount": float64(50)}, stored["lossLimit"])
	require.Equal(t, "Sim101", stored["account"])
	require.Equal(t, map[string]any{"days": []any{}, "start": "", "end": ""}, stored["masterWindow"])

	page := m.do(http.MethodGet, href, cookie, nil).Body
	require.Contains(t, page, `<output id="f-account" class="locked"`, "the account is set at creation")
	require.NotContains(t, page, `name="account"`)
	require.Contains(t, page, `id="resource-state" data-state="active"`)
	require.Contains(t, page, `data-account="Sim101"`)
	require.Contains(t, page, `<strong class="pnl loss">-12.50</strong>`)
	require.Contains(t, page, `<strong class="watermark">30.00</strong>`)
	require.Contains(t, page, `Loss limit: <strong>50.00</strong>`)
	require.NotContains(t, page, ">Restart</button>", "only a stopped monitor restarts")

	// The P&L block alone, from the agent, for the live updates.
	pnl := m.do(http.MethodGet, href+"/pnl?account=Sim101", cookie, nil)
	require.Equal(t, http.StatusOK, pnl.StatusCode)
	require.Contains(t, pnl.Body, `<div id="monitor-pnl"`)
	require.Contains(t, pnl.Body, `-12.50`)
	require.Equal(t, http.StatusNotFound, m.do(http.MethodGet, href+"/pnl", cookie, nil).StatusCode)

	// The agent reports the monitor blind (an open position without a
	// price): the state block says so, and no longer once it sees.
	at := time.Date(2026, 11, 2, 15, 4, 5, 0, time.UTC)
	m.report("desktop/monitors/"+id, protocol.MonitorState{Account: "Sim101", State: protocol.MonitorActive, Blind: true, At: at})
	st := m.do(http.MethodGet, href+"/state", cookie, nil)
	require.Contains(t, st.Body, `id="resource-state" data-state="active"`)
	require.Contains(t, st.Body, "(blind: an open position has no live price")
	m.report("desktop/monitors/"+id, protocol.MonitorState{Account: "Sim101", State: protocol.MonitorActive, At: at})
	require.NotContains(t, m.do(http.MethodGet, href+"/state", cookie, nil).Body, "blind")

	// The agent reports a trip: the state block says so, with Restart.
	m.report("desktop/monitors/"+id, protocol.MonitorState{Account: "Sim101", State: protocol.MonitorStopped, Reason: "lossLimit", At: at})

	// A form loaded before the trip is stale: its save says that the
	// monitor's state changed, not its settings, and stores nothing.
	stale := monitorForm(csrf, "", "60")
	stale.Del("account")
	stale.Set("etag", inputValue(page, "etag"))
	stale.Set("loaded", inputValue(page, "loaded"))
	r = m.post(href, cookie, stale)
	require.Equal(t, http.StatusPreconditionFailed, r.StatusCode, r.Body)
	require.Contains(t, r.Body, "This monitor changed since you opened it (its state, not its settings)")
	require.NotContains(t, r.Body, `id="changed"`)
	require.Contains(t, r.Body, `data-state="stopped"`)
	stored, _ = m.apiGet("desktop/monitors/" + id)
	require.Equal(t, map[string]any{"enabled": true, "amount": float64(50)}, stored["lossLimit"])
	st = m.do(http.MethodGet, href+"/state", cookie, nil)
	require.Equal(t, http.StatusOK, st.StatusCode)
	require.Contains(t, st.Body, `id="resource-state" data-state="stopped"`)
	require.Contains(t, st.Body, "(the loss limit was reached)")
	require.Contains(t, st.Body, "since 2026-11-02 15:04:05 UTC")
	require.Contains(t, st.Body, `action="`+href+`/restart"`)
	require.Contains(t, st.Body, ">Restart</button>")

	// A save of the stopped monitor sends what changed only (sending
	// active: true would be refused: a stopped monitor resumes by
	// Restart).
	m.refill()
	page = m.do(http.MethodGet, href, cookie, nil).Body
	form := monitorForm(csrf, "", "75")
	form.Del("account")
	form.Set("etag", inputValue(page, "etag"))
	form.Set("loaded", inputValue(page, "loaded"))
	r = m.post(href, cookie, form)
	require.Equal(t, http.StatusSeeOther, r.StatusCode, r.Body)
	stored, _ = m.apiGet("desktop/monitors/" + id)
	require.Equal(t, map[string]any{"enabled": true, "amount": float64(75)}, stored["lossLimit"])
	require.Equal(t, "stopped", stored["state"])

	// Restart refused: the account is still past the limit.
	m.refill()
	m.retrip.Store(true)
	r = m.post(href+"/restart", cookie, url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusConflict, r.StatusCode, r.Body)
	require.Contains(t, r.Body, "Restarting now would stop the monitor again at once")
	require.Contains(t, r.Body, `data-state="stopped"`)

	m.refill()
	m.retrip.Store(false)
	r = m.post(href+"/restart", cookie, url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, r.Body)
	require.Equal(t, href+"?done=restart", r.Header.Get("Location"))
	page = m.do(http.MethodGet, href+"?done=restart", cookie, nil).Body
	require.Contains(t, page, "Restarted: the monitor watches the account again.")
	require.Contains(t, page, `id="resource-state" data-state="active"`)

	// The list.
	list := m.do(http.MethodGet, "/app/manage/desktop/monitors", cookie, nil).Body
	require.Contains(t, list, `<tr data-id="`+id+`" data-state="active">`)
	require.Contains(t, list, ">75.00<")

	// A second monitor of the account: 409 already_exists, in words.
	m.refill()
	r = m.post("/app/manage/desktop/monitors", cookie, monitorForm(csrf, "Sim101", "50"))
	require.Equal(t, http.StatusConflict, r.StatusCode)
	require.Contains(t, r.Body, "This account already has a monitor.")
}

// The broker family's editors need a linked broker login: without one
// the page says to link one first, with a link to /app/broker.
func TestBrokerEditorsNeedALink(t *testing.T) {
	t.Parallel()
	m := newManageEnv(t)
	cookie, csrf := m.signIn(aliceEmail)
	for _, path := range []string{"/app/manage/tv/copiers", "/app/manage/tv/monitors"} {
		r := m.do(http.MethodGet, path, cookie, nil)
		require.Equal(t, http.StatusConflict, r.StatusCode, path)
		require.Contains(t, r.Body, "Link a broker first")
		require.Contains(t, r.Body, `<a href="/app/broker">`)
	}
	blank := m.do(http.MethodGet, "/app/manage/tv/copiers/new", cookie, nil)
	require.Equal(t, http.StatusOK, blank.StatusCode)
	require.NotContains(t, blank.Body, `name="copyMode"`, "a broker copier copies executions only")
	form := copierForm(csrf, "DEMO1", "DEMO2", "1")
	form.Del("copyMode")
	r := m.post("/app/manage/tv/copiers", cookie, form)
	require.Equal(t, http.StatusConflict, r.StatusCode)
	require.Contains(t, r.Body, `<a href="/app/broker">Link a broker first</a>`)
}

// The monitor's minimum-profit drawdown is edited in the form: a floor
// at or above its trigger is refused next to the floor's input, and a
// good one is stored and shown with the monitor's limits.
func TestMonitorMinimumProfitForm(t *testing.T) {
	t.Parallel()
	m := newManageEnv(t)
	cookie, csrf := m.signIn(aliceEmail)
	form := monitorForm(csrf, "Sim101", "50")
	form.Set("minimumProfitDrawdown.enabled", "true")
	form.Set("minimumProfitDrawdown.trigger", "300")
	form.Set("minimumProfitDrawdown.floor", "300")
	r := m.post("/app/manage/desktop/monitors", cookie, form)
	require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, r.Body)
	require.NotEmpty(t, fieldError(t, r.Body, "minimumProfitDrawdown.floor"), "the refusal is next to the floor")

	form.Set("minimumProfitDrawdown.floor", "100")
	r = m.post("/app/manage/desktop/monitors", cookie, form)
	require.Equal(t, http.StatusSeeOther, r.StatusCode, r.Body)
	href, _, _ := strings.Cut(r.Header.Get("Location"), "?")
	stored, _ := m.apiGet(strings.TrimPrefix(href, "/app/manage/"))
	require.Equal(t, map[string]any{"enabled": true, "trigger": float64(300), "floor": float64(100)}, stored["minimumProfitDrawdown"])
	page := m.do(http.MethodGet, href, cookie, nil)
	require.Contains(t, page.Body, "100.00 once 300.00 is reached")
}
