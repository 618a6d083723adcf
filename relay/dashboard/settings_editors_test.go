package dashboard_test

import (
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// created returns the id of the resource a create's 303 names.
func created(t *testing.T, r resp, base string) string {
	t.Helper()
	require.Equal(t, http.StatusSeeOther, r.StatusCode, r.Body)
	m := regexp.MustCompile(`^` + regexp.QuoteMeta(base) + `/([a-z]{3}_[0-9a-f]{20})\?done=created$`).FindStringSubmatch(r.Header.Get("Location"))
	require.Len(t, m, 2, r.Header.Get("Location"))
	return m[1]
}

// checked reports whether the page's checkbox named name with value is
// checked (value "" for a lone checkbox of value true).
func checked(t *testing.T, page, name, value string) bool {
	t.Helper()
	if value == "" {
		value = "true"
	}
	input := regexp.MustCompile(`<input type="checkbox"[^>]*name="` + regexp.QuoteMeta(name) + `" value="` + regexp.QuoteMeta(value) + `"[^>]*>`).FindString(page)
	require.NotEmpty(t, input, "no checkbox %s=%s", name, value)
	return regexp.MustCompile(` checked[ >]`).MatchString(input)
}

// editForm returns the form of a resource's page: its csrf, etag and
// loaded, to which a test adds the fields it sends.
func editForm(page, csrf string) url.Values {
	return url.Values{"csrf": {csrf}, "etag": {inputValue(page, "etag")}, "loaded": {inputValue(page, "loaded")}}
}

// Account groups: the new form offers the agent's accounts as
// checkboxes, a create stores the checked ones, the destination is shown
// locked on edit and not sent, a save replaces the accounts, a name
// that is an account's is refused in a sentence, and Delete deletes.
func TestGroupEditor(t *testing.T) {
	t.Parallel()
	m := newManageEnv(t)
	cookie, csrf := m.signIn(aliceEmail)
	const base = "/app/manage/desktop/account-groups"

	blank := m.do(http.MethodGet, base+"/new", cookie, nil)
	require.Equal(t, http.StatusOK, blank.StatusCode, blank.Body)
	require.Contains(t, blank.Body, `<select id="f-destination" name="destination"`)
	for _, a := range simAccounts {
		require.False(t, checked(t, blank.Body, "accounts", a), a)
	}

	r := m.post(base, cookie, url.Values{"csrf": {csrf}, "name": {"Sim101"}, "destination": {"desktop"}, "accounts": {"Sim101"}})
	require.Equal(t, http.StatusConflict, r.StatusCode, r.Body)
	require.Contains(t, r.Body, "The account group was not created")
	require.Contains(t, r.Body, "his name is already used by another group or by an account.")
	require.True(t, checked(t, r.Body, "accounts", "Sim101"), "the form keeps what the trader checked")
	require.Empty(t, m.apiList("desktop/account-groups"))

	id := created(t, m.post(base, cookie, url.Values{"csrf": {csrf}, "name": {"Evals"}, "destination": {"desktop"},
		"accounts": {"Sim101", "Sim102"}}), base)
	stored, _ := m.apiGet("desktop/account-groups/" + id)
	require.Equal(t, "desktop", stored["destination"])
	require.Equal(t, []any{"Sim101", "Sim102"}, stored["accounts"])

	page := m.do(http.MethodGet, base+"/"+id, cookie, nil).Body
	require.Contains(t, page, `<output id="f-destination" class="locked"`)
	require.NotContains(t, page, `name="destination"`, "an immutable field is not sent on edit")
	require.True(t, checked(t, page, "accounts", "Sim102"))
	require.False(t, checked(t, page, "accounts", "Sim103"))

	form := editForm(page, csrf)
	form.Set("name", "Evals")
	form["accounts"] = []string{"Sim101", "Sim103"}
	r = m.post(base+"/"+id, cookie, form)
	require.Equal(t, http.StatusSeeOther, r.StatusCode, r.Body)
	stored, _ = m.apiGet("desktop/account-groups/" + id)
	require.Equal(t, []any{"Sim101", "Sim103"}, stored["accounts"])
	require.Equal(t, "desktop", stored["destination"])

	list := m.do(http.MethodGet, base, cookie, nil).Body
	require.Contains(t, list, `<tr data-id="`+id+`">`)
	require.Contains(t, list, "Sim101, Sim103")

	r = m.post(base+"/"+id+"/delete", cookie, url.Values{"csrf": {csrf}, "confirm": {"yes"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, r.Body)
	require.Empty(t, m.apiList("desktop/account-groups"))
}

// templateForm is an ATM template's form: quantity and brackets given
// as quantity, stop, target triples.
func templateForm(csrf, name, quantity string, brackets ...[3]string) url.Values {
	f := url.Values{"csrf": {csrf}, "name": {name}, "config.quantity": {quantity}, "config.timeInForce": {"Day"},
		"config.breakeven.triggerTicks": {""}, "config.breakeven.plusTicks": {""},
		"config.trailingStop.triggerTicks": {""}, "config.trailingStop.distanceTicks": {""}, "config.trailingStop.stepTicks": {""}}
	for i, b := range brackets {
		p := "config.brackets." + string(rune('0'+i)) + "."
		f.Set(p+"quantity", b[0])
		f.Set(p+"stopLossTicks", b[1])
		f.Set(p+"profitTargetTicks", b[2])
	}
	return f
}

// ATM templates: two bracket rows are stored, brackets that do not add
// up to the quantity are said next to the brackets, and a bad tick
// distance next to its input; nothing is stored then.
func TestTemplateEditor(t *testing.T) {
	t.Parallel()
	m := newManageEnv(t)
	cookie, csrf := m.signIn(aliceEmail)
	const base = "/app/manage/desktop/atm-templates"

	blank := m.do(http.MethodGet, base+"/new", cookie, nil).Body
	for _, name := range []string{"name", "config.quantity", "config.timeInForce", "config.brackets.0.quantity",
		"config.brackets.0.stopLossTicks", "config.brackets.0.profitTargetTicks", "config.breakeven.enabled",
		"config.breakeven.triggerTicks", "config.breakeven.plusTicks", "config.trailingStop.enabled",
		"config.trailingStop.triggerTicks", "config.trailingStop.distanceTicks", "config.trailingStop.stepTicks"} {
		require.Contains(t, blank, `name="`+name+`"`, name)
	}
	require.Contains(t, blank, `<option value="Day" selected>Day</option>`)

	r := m.post(base, cookie, templateForm(csrf, "ES 2", "3", [3]string{"1", "8", "8"}, [3]string{"1", "8", "16"}))
	require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, r.Body)
	require.Equal(t, "The brackets&#39; quantities must add up to the quantity above.", fieldError(t, r.Body, "config.brackets"))
	require.Contains(t, r.Body, "The ATM template was not created")
	require.Contains(t, r.Body, "he ATM template&#39;s settings do not fit together; each field says why.")
	require.Equal(t, "16", inputValue(r.Body, "config.brackets.1.profitTargetTicks"), "the form keeps what was typed")

	r = m.post(base, cookie, templateForm(csrf, "ES 2", "2", [3]string{"1", "0", "8"}, [3]string{"1", "8", "16"}))
	require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, r.Body)
	require.Equal(t, "This must be at least 1.", fieldError(t, r.Body, "config.brackets.0.stopLossTicks"))

	form := templateForm(csrf, "ES 2", "2", [3]string{"1", "8", "8"}, [3]string{"1", "8", "16"})
	form.Set("config.breakeven.enabled", "true")
	r = m.post(base, cookie, form)
	require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, r.Body)
	require.Equal(t, "Needed when this setting is turned on.", fieldError(t, r.Body, "config.breakeven.triggerTicks"))
	require.Empty(t, m.apiList("desktop/atm-templates"))

	form.Set("config.breakeven.triggerTicks", "6")
	form.Set("config.brackets.2.quantity", "") // the blank row
	id := created(t, m.post(base, cookie, form), base)
	stored, _ := m.apiGet("desktop/atm-templates/" + id)
	require.Equal(t, map[string]any{"quantity": float64(2), "timeInForce": "Day",
		"brackets": []any{
			map[string]any{"quantity": float64(1), "stopLossTicks": float64(8), "profitTargetTicks": float64(8)},
			map[string]any{"quantity": float64(1), "stopLossTicks": float64(8), "profitTargetTicks": float64(16)}},
		"breakeven":    map[string]any{"enabled": true, "triggerTicks": float64(6), "plusTicks": float64(0)},
		"trailingStop": map[string]any{"enabled": false, "triggerTicks": float64(0), "distanceTicks": float64(0), "stepTicks": float64(0)},
	}, stored["config"])

	page := m.do(http.MethodGet, base+"/"+id, cookie, nil).Body
	require.Equal(t, "16", inputValue(page, "config.brackets.1.profitTargetTicks"))
	require.Contains(t, page, `name="config.brackets.2.quantity"`, "a blank row after the two")
	require.True(t, checked(t, page, "config.breakeven.enabled", ""))
	list := m.do(http.MethodGet, base, cookie, nil).Body
	require.Contains(t, list, "1 × stop 8 / target 8; 1 × stop 8 / target 16")
}

// The controls: two switches, saved, and the kill switch, which has its
// own control, neither shown nor changed by a save.
func TestControlsEditor(t *testing.T) {
	t.Parallel()
	m := newManageEnv(t)
	cookie, csrf := m.signIn(aliceEmail)
	status, body := m.apiDo(http.MethodPut, "controls/kill-switch", `{"enabled":true}`)
	require.Equal(t, http.StatusOK, status, body)

	page := m.do(http.MethodGet, "/app/manage/controls", cookie, nil)
	require.Equal(t, http.StatusOK, page.StatusCode, page.Body)
	require.NotContains(t, page.Body, `name="killSwitch"`)
	require.False(t, checked(t, page.Body, "flattenOnKill", ""))
	require.NotContains(t, page.Body, ">Delete</button>", "a singleton is not deleted")

	m.refill()
	form := editForm(page.Body, csrf)
	form.Set("flattenOnKill", "true")
	r := m.post("/app/manage/controls", cookie, form)
	require.Equal(t, http.StatusSeeOther, r.StatusCode, r.Body)
	require.Equal(t, "/app/manage/controls?done=saved", r.Header.Get("Location"))
	stored, _ := m.apiGet("controls")
	require.Equal(t, true, stored["flattenOnKill"])
	require.Equal(t, false, stored["blockAllSignals"], "an unchecked box is false")
	require.Equal(t, true, stored["killSwitch"], "a save leaves the kill switch as it was")
	page = m.do(http.MethodGet, "/app/manage/controls?done=saved", cookie, nil)
	require.True(t, checked(t, page.Body, "flattenOnKill", ""))
	require.Contains(t, page.Body, "Saved.")
}

// The news lockout: an event row (typed in New York time) and roots are
// saved and shown again; turning it on without events is refused next
// to the events.
func TestNewsEditor(t *testing.T) {
	t.Parallel()
	m := newManageEnv(t)
	cookie, csrf := m.signIn(aliceEmail)
	const path = "/app/manage/news-lockout"
	page := m.do(http.MethodGet, path, cookie, nil).Body
	require.Equal(t, "5", inputValue(page, "minutesBefore"), "the kind's defaults")
	require.Contains(t, page, `<input id="f-events.0.at" name="events.0.at" type="datetime-local" value=""`)

	form := editForm(page, csrf)
	form.Set("enabled", "true")
	form.Set("minutesBefore", "5")
	form.Set("minutesAfter", "10")
	form.Set("roots", "")
	form.Set("action", "block")
	form.Set("events.0.at", "")
	form.Set("events.0.title", "")
	form.Set("events.0.impact", "")
	r := m.post(path, cookie, form)
	require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, r.Body)
	require.Equal(t, "Needed when this setting is turned on.", fieldError(t, r.Body, "events"))

	m.refill()
	form.Set("events.0.at", "2026-11-20T08:30")
	form.Set("events.0.title", "CPI")
	form.Set("events.0.impact", "high")
	form.Set("roots", "es, nq")
	r = m.post(path, cookie, form)
	require.Equal(t, http.StatusSeeOther, r.StatusCode, r.Body)
	stored, _ := m.apiGet("news-lockout")
	require.Equal(t, []any{map[string]any{"at": "2026-11-20T13:30:00Z", "title": "CPI", "impact": "high"}}, stored["events"],
		"08:30 in New York is 13:30 UTC in November")
	require.Equal(t, []any{"ES", "NQ"}, stored["roots"])
	require.Equal(t, float64(10), stored["minutesAfter"])

	page = m.do(http.MethodGet, path, cookie, nil).Body
	require.Equal(t, "2026-11-20T08:30", inputValue(page, "events.0.at"))
	require.Equal(t, "CPI", inputValue(page, "events.0.title"))
	require.Regexp(t, `<option value="high" selected>High</option>`, page)
	require.Equal(t, "ES, NQ", inputValue(page, "roots"))
	require.True(t, checked(t, page, "enabled", ""))
	require.Contains(t, page, `name="events.1.title"`, "a blank row to add an event")
}

// The connection settings: one row per connection the agent reports,
// its name and accounts shown and not edited (no blank row, no Remove,
// no Add a row), its settings saved; a watchdog out of bounds is refused
// next to it.
func TestConnectionsEditor(t *testing.T) {
	t.Parallel()
	m := newManageEnv(t)
	cookie, csrf := m.signIn(aliceEmail)
	const path = "/app/manage/desktop/connection-settings"
	page := m.do(http.MethodGet, path, cookie, nil).Body
	require.Contains(t, page, `<output id="f-connections.0.name" class="locked">Sim</output><input type="hidden" name="connections.0.name" value="Sim">`)
	require.Contains(t, page, `<output id="f-connections.0.accounts" class="locked">Sim101, Sim102, Sim103</output>`)
	require.NotContains(t, page, `name="connections.0.accounts"`, "the accounts are not sent")
	require.NotContains(t, page, `connections.1.`, "no blank row")
	require.NotContains(t, page, `_remove`)
	require.NotContains(t, page, "Add a row")
	require.True(t, checked(t, page, "connections.0.autoReconnect", ""), "on by default")

	form := editForm(page, csrf)
	form.Set("connections.0.name", "Sim")
	form.Set("connections.0.dataWatchdogSeconds", "3")
	r := m.post(path, cookie, form)
	require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, r.Body)
	require.Equal(t, "This must be at least 5.", fieldError(t, r.Body, "connections.0.dataWatchdogSeconds"))

	m.refill()
	form.Set("connections.0.dataWatchdogSeconds", "30")
	r = m.post(path, cookie, form)
	require.Equal(t, http.StatusSeeOther, r.StatusCode, r.Body)
	stored, _ := m.apiGet("desktop/connection-settings")
	require.Equal(t, []any{map[string]any{"name": "Sim", "accounts": []any{"Sim101", "Sim102", "Sim103"},
		"autoReconnect": false, "dataWatchdogSeconds": float64(30)}}, stored["connections"])
}

// The Settings index links to each editor of the account-wide settings,
// and the navigation to the alert destinations.
func TestSettingsIndexLinks(t *testing.T) {
	t.Parallel()
	m := newManageEnv(t)
	cookie, _ := m.signIn(aliceEmail)
	r := m.do(http.MethodGet, "/app/manage", cookie, nil)
	require.Equal(t, http.StatusOK, r.StatusCode)
	for _, p := range []string{"desktop/account-groups", "desktop/atm-templates", "controls", "news-lockout",
		"desktop/connection-settings", "alerts"} {
		require.Contains(t, r.Body, `<li><a href="/app/manage/`+p+`">`, p)
	}
	require.Contains(t, r.Body, `<a href="/app/manage/alerts">Alerts</a>`)
}
