package dashboard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/dashboard"
	"tradebridge/relay/manage"
	"tradebridge/relay/sealed"
	"tradebridge/relay/store"
)

// fakeAlerts is the alerts' dispatcher as the Management API sees it: it
// records the tests queued.
type fakeAlerts struct {
	mu    sync.Mutex
	tests []string // destination ids
}

func (f *fakeAlerts) Test(_ context.Context, _, destinationID string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tests = append(f.tests, destinationID)
	return "dlv_1", nil
}

func (f *fakeAlerts) Changed(string) {}

func (f *fakeAlerts) queued() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.tests...)
}

// alertLog is an activity log holding alert outcomes the test adds,
// newest first, paged as the store pages.
type alertLog struct {
	mu   sync.Mutex
	recs []store.ActivityRecord // oldest first
}

// add records an outcome of a delivery to the destination.
func (l *alertLog) add(kind, destinationID, alertKind, reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	detail := map[string]any{"destinationId": destinationID, "destinationKind": "webhook", "deliveryId": "dlv_x",
		"attempts": 1, "alertKind": alertKind}
	if reason != "" {
		detail["error"], detail["attempts"] = reason, 3
	}
	b, _ := json.Marshal(detail)
	l.recs = append(l.recs, store.ActivityRecord{Seq: int64(len(l.recs) + 1), At: time.Date(2026, 11, 2, 15, 0, len(l.recs), 0, time.UTC),
		Kind: kind, SourceKind: protocol.SourceAlert, SourceID: destinationID, Summary: "Alert " + alertKind, Detail: b})
}

func (l *alertLog) ListActivity(_ context.Context, userID string, q store.ActivityQuery) ([]store.ActivityRecord, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if userID != aliceID {
		return nil, nil
	}
	var out []store.ActivityRecord
	for i := len(l.recs) - 1; i >= 0 && len(out) < q.Limit; i-- {
		r := l.recs[i]
		if (q.Before != 0 && r.Seq >= q.Before) || (len(q.Kinds) > 0 && !contains(q.Kinds, r.Kind)) {
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

// alertsEnv is a manageEnv whose Management API seals secrets, queues
// tests with a fakeAlerts, allows private webhook addresses (email as
// email says), and whose dashboard reads log.
func alertsEnv(t *testing.T, email bool) (*manageEnv, *fakeAlerts, *alertLog) {
	t.Helper()
	keys, err := sealed.Generate("test")
	require.NoError(t, err)
	fa, log := &fakeAlerts{}, &alertLog{}
	m := newManageEnvWith(t, func(o *manage.Options) {
		o.Keys, o.Alerts, o.AlertsAllowPrivate, o.EmailEnabled = keys, fa, true, email
	}, func(o *dashboard.Options) { o.Activity = log })
	return m, fa, log
}

// alertForm is an alert destination's form of kind, with the inputs of
// every kind as a browser without script sends them.
func alertForm(csrf, kind string, events ...string) url.Values {
	return url.Values{"csrf": {csrf}, "kind": {kind}, "name": {"desk"}, "active": {"true"}, "graceSeconds": {"60"},
		"events": events, "url": {""}, "botToken": {""}, "chatId": {""}, "to": {""}}
}

var secretRE = regexp.MustCompile(`<code id="once-secret">(whsec_[0-9a-f]{64})</code>`)

// A webhook destination: the create shows its signing secret once; the
// edit form shows the kind locked, only the webhook's fields, the URL
// never (left empty, it is kept); "Send a test" queues a test and says
// so; "Rotate secret" shows a new secret once.
func TestAlertEditorWebhook(t *testing.T) {
	t.Parallel()
	m, fa, _ := alertsEnv(t, false)
	cookie, csrf := m.signIn(aliceEmail)

	blank := m.do(http.MethodGet, "/app/manage/alerts/new", cookie, nil)
	require.Equal(t, http.StatusOK, blank.StatusCode, blank.Body)
	require.Contains(t, blank.Body, `<select id="f-kind" name="kind"`)
	require.Contains(t, blank.Body, `<div class="only-if" data-if-field="kind" data-if-values="webhook discord">`)
	require.Contains(t, blank.Body, `<div class="only-if" data-if-field="kind" data-if-values="telegram">`)
	require.Contains(t, blank.Body, `value="monitor.tripped"`)
	require.NotContains(t, blank.Body, `value="alert.sent"`, "alerts cannot alert about themselves")
	require.Equal(t, "60", inputValue(blank.Body, "graceSeconds"))

	// Fields of another kind, filled in, are not sent.
	form := alertForm(csrf, "webhook", "monitor.tripped", "copier.halted")
	form.Set("url", "http://127.0.0.1:9/hook")
	form.Set("chatId", "-100")
	form.Set("to", "x@example.com")
	r := m.post("/app/manage/alerts", cookie, form)
	require.Equal(t, http.StatusCreated, r.StatusCode, r.Body)
	sec := secretRE.FindStringSubmatch(r.Body)
	require.Len(t, sec, 2, "the signing secret, shown once")
	require.Contains(t, r.Body, "Copy it now: it is not shown again.")
	require.NotContains(t, r.Body, "127.0.0.1:9", "the URL is not shown back")
	list := m.apiList("alerts")
	require.Len(t, list, 1)
	id := list[0]["id"].(string)
	require.Equal(t, "http://127.0.0.1:9/hook", list[0]["url"])
	require.Nil(t, list[0]["chatId"])
	require.Equal(t, []any{"monitor.tripped", "copier.halted"}, list[0]["events"])

	page := m.do(http.MethodGet, "/app/manage/alerts/"+id, cookie, nil).Body
	require.NotContains(t, page, sec[1], "the secret is shown once")
	require.NotContains(t, page, "127.0.0.1:9")
	require.Contains(t, page, `<output id="f-kind" class="locked"`)
	require.Contains(t, page, `name="url"`)
	require.Contains(t, page, `placeholder="Leave empty to keep it"`)
	for _, name := range []string{"chatId", "botToken", "to"} {
		require.NotContains(t, page, `name="`+name+`"`, "a webhook's form has no %s", name)
	}
	require.Contains(t, page, ">Send a test</button>")
	require.Contains(t, page, ">Rotate secret</button>")
	require.True(t, checked(t, page, "events", "copier.halted"))
	require.Contains(t, page, `<section id="deliveries"`)
	require.Contains(t, page, `<li class="empty muted">None yet.</li>`)

	// A save with the URL left empty keeps it.
	edit := editForm(page, csrf)
	edit.Set("name", "desk 2")
	edit.Set("active", "true")
	edit.Set("graceSeconds", "120")
	edit["events"] = []string{"monitor.tripped"}
	edit.Set("url", "")
	r = m.post("/app/manage/alerts/"+id, cookie, edit)
	require.Equal(t, http.StatusSeeOther, r.StatusCode, r.Body)
	stored, _ := m.apiGet("alerts/" + id)
	require.Equal(t, "http://127.0.0.1:9/hook", stored["url"])
	require.Equal(t, "desk 2", stored["name"])
	require.Equal(t, float64(120), stored["graceSeconds"])
	require.Equal(t, []any{"monitor.tripped"}, stored["events"])

	r = m.post("/app/manage/alerts/"+id+"/test", cookie, url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, r.Body)
	require.Equal(t, "/app/manage/alerts/"+id+"?done=test", r.Header.Get("Location"))
	require.Equal(t, []string{id}, fa.queued())
	page = m.do(http.MethodGet, r.Header.Get("Location"), cookie, nil).Body
	require.Contains(t, page, "Test queued: see the deliveries below.")

	r = m.post("/app/manage/alerts/"+id+"/rotate-secret", cookie, url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusOK, r.StatusCode, r.Body)
	rotated := secretRE.FindStringSubmatch(r.Body)
	require.Len(t, rotated, 2, "the new secret, shown once")
	require.NotEqual(t, sec[1], rotated[1])
	require.Contains(t, r.Body, "Secret rotated")
}

// The other kinds: a Discord destination has no "Rotate secret"; a
// Telegram one shows its chat id and takes its bot token write-only; a
// URL that is not Discord's is refused next to it; an email destination
// on a relay without email is refused in a sentence.
func TestAlertEditorKinds(t *testing.T) {
	t.Parallel()
	m, _, _ := alertsEnv(t, false)
	cookie, csrf := m.signIn(aliceEmail)

	form := alertForm(csrf, "discord", "copier.halted")
	form.Set("url", "https://example.com/hook")
	r := m.post("/app/manage/alerts", cookie, form)
	require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, r.Body)
	require.Equal(t, "This is not in the expected form.", fieldError(t, r.Body, "url"))

	form.Set("url", "https://discord.com/api/webhooks/42/tok-en_1")
	id := created(t, m.post("/app/manage/alerts", cookie, form), "/app/manage/alerts")
	page := m.do(http.MethodGet, "/app/manage/alerts/"+id, cookie, nil).Body
	require.NotContains(t, page, "Rotate secret", "only a webhook has a signing secret")
	require.Contains(t, page, ">Send a test</button>")
	require.NotContains(t, page, "tok-en_1")

	form = alertForm(csrf, "telegram", "copier.halted")
	form.Set("botToken", "123456789:AAbbCCddEEffGGhhIIjjKKllMMnnOOppQQ")
	form.Set("chatId", "-1001")
	form.Set("url", "https://example.com/not-sent")
	id = created(t, m.post("/app/manage/alerts", cookie, form), "/app/manage/alerts")
	page = m.do(http.MethodGet, "/app/manage/alerts/"+id, cookie, nil).Body
	require.Equal(t, "-1001", inputValue(page, "chatId"))
	require.NotContains(t, page, "AAbbCC", "the bot token is never shown")
	require.NotContains(t, page, `name="url"`)
	stored, _ := m.apiGet("alerts/" + id)
	require.Equal(t, true, stored["hasBotToken"])
	require.Nil(t, stored["url"])

	r = m.post("/app/manage/alerts", cookie, func() url.Values {
		f := alertForm(csrf, "email", "copier.halted")
		f.Set("to", "trader@example.com")
		return f
	}())
	require.Equal(t, http.StatusConflict, r.StatusCode, r.Body)
	require.Contains(t, r.Body, "The alert destination was not created")
	require.Contains(t, r.Body, "his relay sends no email, so an email destination cannot be used. Choose another kind.")
	require.Equal(t, "trader@example.com", inputValue(r.Body, "to"), "the form keeps what was typed")

	r = m.post("/app/manage/alerts", cookie, alertForm(csrf, "webhook"))
	require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, r.Body)
	require.Equal(t, "This is required.", fieldError(t, r.Body, "events"))
	require.Equal(t, "This is required.", fieldError(t, r.Body, "url"))
}

// The last deliveries of a destination: its own alert.sent and
// alert.failed entries only, newest first, the failure's reason in
// words; the panel alone at …/deliveries for the live updates.
func TestAlertEditorDeliveries(t *testing.T) {
	t.Parallel()
	m, _, log := alertsEnv(t, false)
	cookie, csrf := m.signIn(aliceEmail)
	form := alertForm(csrf, "webhook", "monitor.tripped")
	form.Set("url", "http://127.0.0.1:9/hook")
	r := m.post("/app/manage/alerts", cookie, form)
	require.Equal(t, http.StatusCreated, r.StatusCode, r.Body)
	id := m.apiList("alerts")[0]["id"].(string)

	log.add(protocol.ActivityAlertSent, id, "alert.test", "")
	log.add(protocol.ActivityAlertSent, "alr_00000000000000000000", "monitor.tripped", "")
	log.add(protocol.ActivityAlertFailed, id, "monitor.tripped", "http_500")

	page := m.do(http.MethodGet, "/app/manage/alerts/"+id, cookie, nil).Body
	items := regexp.MustCompile(`<li data-outcome="(sent|failed)">.*?</li>`).FindAllStringSubmatch(page, -1)
	require.Len(t, items, 2, "only this destination's")
	require.Equal(t, "failed", items[0][1], "newest first")
	require.Contains(t, items[0][0], "A monitor stopped an account")
	require.Contains(t, items[0][0], "the destination answered HTTP 500")
	require.Contains(t, items[0][0], "after 3 tries")
	require.Equal(t, "sent", items[1][1])
	require.Contains(t, items[1][0], "Test")

	frag := m.do(http.MethodGet, "/app/manage/alerts/"+id+"/deliveries", cookie, nil, "Accept", "text/html")
	require.Equal(t, http.StatusOK, frag.StatusCode, frag.Body)
	require.True(t, strings.HasPrefix(strings.TrimSpace(frag.Body), `<section id="deliveries"`), frag.Body)
	require.Equal(t, 2, strings.Count(frag.Body, "<li data-outcome="))

	// The panel needs the elite plan (404 to a free one) and a session.
	bob, _ := m.signIn(bobEmail)
	r = m.do(http.MethodGet, "/app/manage/alerts/"+id+"/deliveries", bob, nil)
	require.Equal(t, http.StatusNotFound, r.StatusCode)
	r = m.do(http.MethodGet, "/app/manage/alerts/"+id+"/deliveries", "", nil)
	require.Equal(t, http.StatusUnauthorized, r.StatusCode)
}
