package manage

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/alerts"
	"tradebridge/relay/errcode"
	"tradebridge/relay/sealed"
)

// fakeAlerts records the tests queued and the users whose destinations
// changed.
type fakeAlerts struct {
	mu      sync.Mutex
	tests   []string
	changed []string
}

func (f *fakeAlerts) Changed(userID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changed = append(f.changed, userID)
}

func (f *fakeAlerts) Test(_ context.Context, userID, destinationID string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tests = append(f.tests, userID+"/"+destinationID)
	return "dlv_test", nil
}

// alertEnv is an env with a key ring and the alerts, without SMTP unless
// email.
func alertEnv(t *testing.T, email, allowPrivate bool) (*env, *sealed.Keyring, *fakeAlerts) {
	t.Helper()
	keys, err := sealed.Generate("k1")
	require.NoError(t, err)
	fa := &fakeAlerts{}
	e := newEnv(t, func(o *Options) {
		o.Keys, o.Alerts, o.EmailEnabled, o.AlertsAllowPrivate = keys, fa, email, allowPrivate
	})
	return e, keys, fa
}

const (
	discordURL = "https://discord.com/api/webhooks/123456/abcdefghijklmnopqrstuvwxyz_SECRET"
	botToken   = "123456789:AAbbCCddEEffGGhhIIjjKKllMMnnOOppQQ"
)

// A webhook is created with its secret shown once, listed and read with
// it redacted, changed, rotated (a new secret, once) and deleted; the
// stored body holds the secret sealed only.
func TestAlertWebhookLifecycle(t *testing.T) {
	t.Parallel()
	e, keys, fa := alertEnv(t, false, false)
	r := e.do(http.MethodPost, "/alerts", tokElite, `{"kind":"webhook","url":"https://hooks.example.com/tb","events":["monitor.tripped"]}`)
	require.Equal(t, http.StatusCreated, r.Code, string(r.Body))
	var created map[string]any
	r.data(t, &created)
	secret, _ := created["secret"].(string)
	require.True(t, strings.HasPrefix(secret, "whsec_"), "the secret, once")
	require.Equal(t, true, created["active"], "active by default")
	require.EqualValues(t, alerts.DefaultGraceSeconds, created["graceSeconds"])
	require.Equal(t, true, created["hasSecret"])
	require.NotContains(t, created, "sealed")
	id := created["id"].(string)

	stored, ok := e.store.stored("u1", "alert", id)
	require.True(t, ok)
	require.NotContains(t, string(stored.Body), secret, "sealed at rest")
	var dst alerts.Destination
	require.NoError(t, jsonUnmarshal(stored.Body, &dst))
	dst.ID = id
	sec, err := alerts.Open(keys, "u1", &dst)
	require.NoError(t, err)
	require.Equal(t, secret, sec.Secret)

	for _, path := range []string{"/alerts", "/alerts/" + id} {
		r = e.do(http.MethodGet, path, tokElite, "")
		require.Equal(t, http.StatusOK, r.Code)
		require.NotContains(t, string(r.Body), secret, path)
		require.NotContains(t, string(r.Body), "sealed", path)
	}

	r = e.do(http.MethodPatch, "/alerts/"+id, tokElite, `{"name":"desk","graceSeconds":120}`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	require.NotContains(t, string(r.Body), "whsec_", "no secret after create")
	var got alerts.Destination
	r.data(t, &got)
	require.Equal(t, "desk", got.Name)
	require.Equal(t, 120, got.GraceSeconds)

	r = e.do(http.MethodPost, "/alerts/"+id+"/rotate-secret", tokElite, "")
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	var rotated map[string]any
	r.data(t, &rotated)
	newSecret, _ := rotated["secret"].(string)
	require.True(t, strings.HasPrefix(newSecret, "whsec_"))
	require.NotEqual(t, secret, newSecret)
	stored, _ = e.store.stored("u1", "alert", id)
	require.NoError(t, jsonUnmarshal(stored.Body, &dst))
	sec, err = alerts.Open(keys, "u1", &dst)
	require.NoError(t, err)
	require.Equal(t, newSecret, sec.Secret)

	r = e.do(http.MethodGet, "/alerts/"+id, tokElite2, "")
	require.Equal(t, http.StatusNotFound, r.Code, "another user's destination")
	r = e.do(http.MethodDelete, "/alerts/"+id, tokElite2, "")
	require.Equal(t, http.StatusNotFound, r.Code)
	r = e.do(http.MethodDelete, "/alerts/"+id, tokElite, "")
	require.Equal(t, http.StatusOK, r.Code)
	r = e.do(http.MethodGet, "/alerts/"+id, tokElite, "")
	require.Equal(t, http.StatusNotFound, r.Code)
	fa.mu.Lock()
	defer fa.mu.Unlock()
	require.Equal(t, []string{"u1", "u1", "u1", "u1"}, fa.changed, "the alerts hear of each change stored: create, patch, rotate, delete")
}

// Discord's URL and Telegram's bot token are sealed and shown redacted;
// a PATCH that sends back what was shown keeps them.
func TestAlertChatSecretsRedacted(t *testing.T) {
	t.Parallel()
	e, keys, _ := alertEnv(t, false, false)
	r := e.do(http.MethodPost, "/alerts", tokElite, `{"kind":"discord","url":"`+discordURL+`","events":["copier.halted"]}`)
	require.Equal(t, http.StatusCreated, r.Code, string(r.Body))
	require.NotContains(t, string(r.Body), "SECRET")
	require.NotContains(t, string(r.Body), `"secret"`, "only a webhook has a secret")
	var d alerts.Destination
	r.data(t, &d)
	require.Equal(t, "discord.com", d.URL)

	r = e.do(http.MethodGet, "/alerts/"+d.ID, tokElite, "")
	require.Equal(t, http.StatusOK, r.Code)
	require.NotContains(t, string(r.Body), "SECRET")
	var shown map[string]any
	r.data(t, &shown)
	r = e.do(http.MethodPatch, "/alerts/"+d.ID, tokElite, `{"url":"discord.com","name":"ops"}`)
	require.Equal(t, http.StatusOK, r.Code, "the shown host sent back: %s", r.Body)
	stored, _ := e.store.stored("u1", "alert", d.ID)
	var dst alerts.Destination
	require.NoError(t, jsonUnmarshal(stored.Body, &dst))
	dst.ID = d.ID
	sec, err := alerts.Open(keys, "u1", &dst)
	require.NoError(t, err)
	require.Equal(t, discordURL, sec.URL, "kept")

	r = e.do(http.MethodPost, "/alerts", tokElite, `{"kind":"telegram","botToken":"`+botToken+`","chatId":"-1001234","events":["agent.disconnected"],"graceSeconds":0}`)
	require.Equal(t, http.StatusCreated, r.Code, string(r.Body))
	require.NotContains(t, string(r.Body), botToken)
	var tg map[string]any
	r.data(t, &tg)
	require.Equal(t, true, tg["hasBotToken"])
	require.NotContains(t, tg, "botToken")
	require.EqualValues(t, 0, tg["graceSeconds"])
	r = e.do(http.MethodPatch, "/alerts/"+tg["id"].(string), tokElite, `{"chatId":"@tradingdesk"}`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	stored, _ = e.store.stored("u1", "alert", tg["id"].(string))
	require.NotContains(t, string(stored.Body), botToken)
	require.NoError(t, jsonUnmarshal(stored.Body, &dst))
	dst.ID = tg["id"].(string)
	sec, err = alerts.Open(keys, "u1", &dst)
	require.NoError(t, err)
	require.Equal(t, botToken, sec.BotToken)

	r = e.do(http.MethodPost, "/alerts/"+d.ID+"/rotate-secret", tokElite, "")
	require.Equal(t, http.StatusUnprocessableEntity, r.Code, "only webhooks have a secret")

	require.ElementsMatch(t, []string{"url", "botToken", "sealed", "secret"}, alertKind.Secret)
}

// Bodies that are not valid destinations are refused with every field at
// fault, and no value sent is echoed.
func TestAlertValidation(t *testing.T) {
	t.Parallel()
	e, _, _ := alertEnv(t, false, false)
	for _, tc := range []struct {
		name, body, code string
		fields           []string
	}{
		{"no events", `{"kind":"webhook","url":"https://a.example.com/"}`, errcode.ValidationFailed, []string{"events"}},
		{"empty events", `{"kind":"webhook","url":"https://a.example.com/","events":[]}`, errcode.ValidationFailed, []string{"events"}},
		{"an alert kind", `{"kind":"webhook","url":"https://a.example.com/","events":["alert.sent"]}`, errcode.ValidationFailed, []string{"events.0"}},
		{"an unknown kind", `{"kind":"webhook","url":"https://a.example.com/","events":["nope.x"]}`, errcode.ValidationFailed, []string{"events.0"}},
		{"a duplicate", `{"kind":"webhook","url":"https://a.example.com/","events":["order.refused","order.refused"]}`, errcode.ValidationFailed, []string{"events.1"}},
		{"grace too long", `{"kind":"webhook","url":"https://a.example.com/","events":["agent.disconnected"],"graceSeconds":3601}`, errcode.ValidationFailed, []string{"graceSeconds"}},
		{"grace negative", `{"kind":"webhook","url":"https://a.example.com/","events":["agent.disconnected"],"graceSeconds":-1}`, errcode.ValidationFailed, []string{"graceSeconds"}},
		{"kind unknown", `{"kind":"pager","events":["order.refused"]}`, errcode.ValidationFailed, []string{"kind"}},
		{"no url", `{"kind":"webhook","events":["order.refused"]}`, errcode.ValidationFailed, []string{"url"}},
		{"http", `{"kind":"webhook","url":"http://a.example.com/","events":["order.refused"]}`, errcode.ValidationFailed, []string{"url"}},
		{"credentials", `{"kind":"webhook","url":"https://u:p@a.example.com/","events":["order.refused"]}`, errcode.ValidationFailed, []string{"url"}},
		{"loopback", `{"kind":"webhook","url":"https://127.0.0.1:8443/","events":["order.refused"]}`, errcode.ValidationFailed, []string{"url"}},
		{"private", `{"kind":"webhook","url":"https://10.1.2.3/","events":["order.refused"]}`, errcode.ValidationFailed, []string{"url"}},
		{"localhost", `{"kind":"webhook","url":"https://localhost/","events":["order.refused"]}`, errcode.ValidationFailed, []string{"url"}},
		{"link-local", `{"kind":"webhook","url":"https://[fe80::1]/","events":["order.refused"]}`, errcode.ValidationFailed, []string{"url"}},
		{"another kind's field", `{"kind":"webhook","url":"https://a.example.com/","to":"a@example.com","events":["order.refused"]}`, errcode.ValidationFailed, []string{"to"}},
		{"not discord", `{"kind":"discord","url":"https://evil.example.com/api/webhooks/1/x","events":["order.refused"]}`, errcode.ValidationFailed, []string{"url"}},
		{"bad token", `{"kind":"telegram","botToken":"nope","chatId":"1","events":["order.refused"]}`, errcode.ValidationFailed, []string{"botToken"}},
		{"no chat", `{"kind":"telegram","botToken":"` + botToken + `","events":["order.refused"]}`, errcode.ValidationFailed, []string{"chatId"}},
		{"sealed sent", `{"kind":"webhook","url":"https://a.example.com/","events":["order.refused"],"sealed":"v1.k1.x"}`, errcode.FieldReadOnly, []string{"sealed"}},
		{"unknown field", `{"kind":"webhook","url":"https://a.example.com/","events":["order.refused"],"extra":1}`, errcode.ValidationFailed, []string{"extra"}},
		{"email without SMTP", `{"kind":"email","to":"me@example.com","events":["order.refused"]}`, errcode.EmailUnavailable, nil},
	} {
		r := e.do(http.MethodPost, "/alerts", tokElite, tc.body)
		require.Equal(t, tc.code, r.code(t), "%s: %s", tc.name, r.Body)
		var paths []string
		for _, f := range r.body(t).Fields {
			paths = append(paths, f["path"].(string))
		}
		if tc.fields != nil {
			require.ElementsMatch(t, tc.fields, paths, "%s: %s", tc.name, r.Body)
		}
		require.NotContains(t, string(r.Body), "example.com", tc.name)
		require.NotContains(t, string(r.Body), botToken, tc.name)
	}
	require.Equal(t, http.StatusConflict, errcode.Status(errcode.EmailUnavailable))

	r := e.do(http.MethodPost, "/alerts", tokElite, `{"kind":"webhook","url":"https://a.example.com/","events":["order.refused"]}`)
	require.Equal(t, http.StatusCreated, r.Code)
	var d alerts.Destination
	r.data(t, &d)
	r = e.do(http.MethodPatch, "/alerts/"+d.ID, tokElite, `{"kind":"email"}`)
	require.Equal(t, errcode.ImmutableField, r.code(t))
	r = e.do(http.MethodPatch, "/alerts/"+d.ID, tokElite, `{"url":"https://192.168.1.1/"}`)
	require.Equal(t, errcode.ValidationFailed, r.code(t), "a change is checked too")

	r = e.do(http.MethodPost, "/alerts", tokPro, `{"kind":"webhook","url":"https://a.example.com/","events":["order.refused"]}`)
	require.Equal(t, errcode.EliteRequired, r.code(t))
}

// The operator's flag lets private addresses and plain http; email needs
// SMTP configured.
func TestAlertOperatorSettings(t *testing.T) {
	t.Parallel()
	e, _, _ := alertEnv(t, true, true)
	r := e.do(http.MethodPost, "/alerts", tokElite, `{"kind":"webhook","url":"http://127.0.0.1:9000/hook","events":["order.refused"]}`)
	require.Equal(t, http.StatusCreated, r.Code, string(r.Body))
	r = e.do(http.MethodPost, "/alerts", tokElite, `{"kind":"email","to":"me@example.com","events":["order.refused"]}`)
	require.Equal(t, http.StatusCreated, r.Code, string(r.Body))
	r = e.do(http.MethodPost, "/alerts", tokElite, `{"kind":"email","to":"Me <me@example.com>","events":["order.refused"]}`)
	require.Equal(t, errcode.ValidationFailed, r.code(t))
}

// POST {id}/test queues a test delivery: 202 with its id.
func TestAlertTestAction(t *testing.T) {
	t.Parallel()
	e, _, fa := alertEnv(t, false, false)
	r := e.do(http.MethodPost, "/alerts", tokElite, `{"kind":"webhook","url":"https://a.example.com/","events":["order.refused"],"active":false}`)
	require.Equal(t, http.StatusCreated, r.Code)
	var d alerts.Destination
	r.data(t, &d)
	r = e.do(http.MethodPost, "/alerts/"+d.ID+"/test", tokElite, "")
	require.Equal(t, http.StatusAccepted, r.Code, string(r.Body))
	var got map[string]any
	r.data(t, &got)
	require.Equal(t, "dlv_test", got["deliveryId"])
	require.Equal(t, []string{"u1/" + d.ID}, fa.tests)
	r = e.do(http.MethodPost, "/alerts/"+d.ID+"/test", tokElite2, "")
	require.Equal(t, http.StatusNotFound, r.Code)
	r = e.do(http.MethodPost, "/alerts/"+d.ID+"/test", tokElite, `{"x":1}`)
	require.Equal(t, errcode.ValidationFailed, r.code(t))
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
