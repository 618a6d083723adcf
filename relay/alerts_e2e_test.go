package relay_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/systemtest"
	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay"
	"tradebridge/relay/alerts"
	"tradebridge/relay/alerts/smtptest"
	"tradebridge/relay/events"
)

// A webhook destination created over HTTP on a real relay that allows
// private addresses gets one signed POST within 2 s of an entry the
// activity log recorded; the create's answer held its secret once, and no
// log line holds it.
func TestAlertsWebhookEndToEnd(t *testing.T) {
	t.Parallel()
	type post struct {
		header http.Header
		body   []byte
	}
	got := make(chan post, 8)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- post{r.Header.Clone(), b}
	}))
	t.Cleanup(recv.Close)
	sys := systemtest.NewWith(t, func(o *relay.Options) { o.Alerts.AllowPrivate = true })
	bob := sys.Users["bob"]

	r := sys.Do(http.MethodPost, "/v1/api/manage/alerts", bob.APIToken,
		`{"kind":"webhook","url":"`+recv.URL+`/hook","events":["monitor.tripped"],"name":"desk"}`)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	var dst struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	require.NoError(t, json.Unmarshal(r.Data, &dst))
	require.True(t, strings.HasPrefix(dst.Secret, "whsec_"))
	r = sys.Do(http.MethodGet, "/v1/api/manage/alerts/"+dst.ID, bob.APIToken, "")
	require.Equal(t, http.StatusOK, r.Status)
	require.NotContains(t, string(r.Raw), dst.Secret)

	entry := protocol.ActivityEntry{ID: "act_41", At: time.Now().UTC().Truncate(time.Millisecond), Kind: protocol.ActivityMonitorTripped,
		Account: "Sim101", Source: protocol.ActivitySource{Kind: protocol.SourceMonitor, ID: "mon_1"},
		Summary: "Monitor tripped on Sim101: daily loss", Detail: json.RawMessage(`{"limit":"dailyLoss"}`)}
	outcomes := make(chan events.Event, 8)
	require.NoError(t, sys.Relay().Events().Subscribe(events.Subscription{Name: "test-outcomes", Types: []events.Type{events.TypeActivity},
		Handle: func(e events.Event) {
			if strings.HasPrefix(e.Activity.Kind, "alert.") {
				outcomes <- e
			}
		}}))
	start := time.Now()
	sys.Relay().Events().Publish(events.Event{Type: events.TypeRecorded, UserID: bob.UserID, Activity: entry})

	var p post
	select {
	case p = <-got:
	case <-time.After(2 * time.Second):
		t.Fatal("no signed POST within 2 s")
	}
	require.Less(t, time.Since(start), 2*time.Second)
	require.Equal(t, alerts.Sign(dst.Secret, p.body), p.header.Get(alerts.HeaderSignature))
	var payload alerts.Payload
	require.NoError(t, json.Unmarshal(p.body, &payload))
	require.Equal(t, "act_41", payload.ID)
	require.Equal(t, protocol.ActivityMonitorTripped, payload.Kind)
	select {
	case <-got:
		t.Fatal("sent twice")
	case <-time.After(300 * time.Millisecond):
	}

	// The outcome reaches the spine as an alert.sent entry, and no log
	// line holds the secret.
	select {
	case e := <-outcomes:
		require.Equal(t, protocol.ActivityAlertSent, e.Activity.Kind)
		require.Equal(t, bob.UserID, e.UserID)
		require.Equal(t, dst.ID, e.Activity.Source.ID)
	case <-time.After(testkit.Medium):
		t.Fatal("no alert.sent entry")
	}
	for _, e := range sys.Logs.All() {
		require.NotContains(t, e.Message+stringify(e.ContextMap()), dst.Secret)
	}
}

func stringify(m map[string]any) string {
	b, _ := json.Marshal(m)
	return string(b)
}

// recordedEntry publishes a TypeRecorded entry of the user on the relay's
// spine, as the activity log does once it stored it, and returns it.
func recordedEntry(sys *systemtest.System, userID, id, kind string) protocol.ActivityEntry {
	e := protocol.ActivityEntry{ID: id, At: time.Now().UTC().Truncate(time.Millisecond), Kind: kind, Account: "Sim101",
		Source: protocol.ActivitySource{Kind: protocol.SourceAgent}, Summary: kind + " on the test's account", Detail: json.RawMessage(`{}`)}
	sys.Relay().Events().Publish(events.Event{Type: events.TypeRecorded, UserID: userID, Activity: e})
	return e
}

// Discord and Telegram fakes at the relay's --discord-url and
// --telegram-url receive their documented bodies, and a go-smtp server
// offering STARTTLS receives the email, for destinations created over
// HTTP.
func TestAlertsChatAndEmailEndToEnd(t *testing.T) {
	t.Parallel()
	type hit struct {
		path string
		body []byte
	}
	hits := make(chan hit, 8)
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hits <- hit{r.URL.Path, b}
	}))
	t.Cleanup(fake.Close)
	mail := smtptest.Start(t)
	sys := systemtest.NewWith(t, func(o *relay.Options) {
		o.Alerts.DiscordURL, o.Alerts.TelegramURL = fake.URL, fake.URL
		o.Alerts.SMTP = mail.SMTP("alerts@relay.example")
	})
	bob := sys.Users["bob"]
	for _, body := range []string{
		`{"kind":"discord","url":"https://discord.com/api/webhooks/42/tok-en_1","events":["copier.halted"]}`,
		`{"kind":"telegram","botToken":"123456789:AAbbCCddEEffGGhhIIjjKKllMMnnOOppQQ","chatId":"-1001","events":["copier.halted"]}`,
		`{"kind":"email","to":"trader@example.com","events":["copier.halted"]}`,
	} {
		r := sys.Do(http.MethodPost, "/v1/api/manage/alerts", bob.APIToken, body)
		require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	}
	recordedEntry(sys, bob.UserID, "act_77", protocol.ActivityCopierHalted)

	got := map[string][]byte{}
	for range 2 {
		select {
		case h := <-hits:
			got[h.path] = h.body
		case <-time.After(testkit.Medium):
			t.Fatalf("the chat fakes got %d messages", len(got))
		}
	}
	var d alerts.DiscordBody
	require.NoError(t, json.Unmarshal(got["/api/webhooks/42/tok-en_1"], &d), "Discord's execute-webhook path: %v", got)
	require.Len(t, d.Embeds, 1)
	require.Equal(t, protocol.ActivityCopierHalted, d.Embeds[0].Title)
	var tg alerts.TelegramBody
	require.NoError(t, json.Unmarshal(got["/bot123456789:AAbbCCddEEffGGhhIIjjKKllMMnnOOppQQ/sendMessage"], &tg), "sendMessage: %v", got)
	require.Equal(t, "-1001", tg.ChatID)
	m := mail.Next(t, testkit.Medium)
	require.True(t, m.TLS)
	require.Equal(t, "trader@example.com", m.To)
	require.Contains(t, string(m.Data), "copier.halted")
}

// agent.disconnected waits the destination's grace: an agent that goes
// away and comes back within it sends nothing; one that stays away is
// alerted after the grace, not before. The entries are the activity log's
// own, recorded from the real tunnels.
func TestAlertsAgentDisconnectedGraceEndToEnd(t *testing.T) {
	t.Parallel()
	posts := make(chan alerts.Payload, 8)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p alerts.Payload
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &p) == nil {
			posts <- p
		}
	}))
	t.Cleanup(recv.Close)
	sys := systemtest.NewWith(t, func(o *relay.Options) {
		o.Alerts.AllowPrivate = true
		o.Alerts.PollInterval = 50 * time.Millisecond // due rows are looked for this often
	})
	bob := sys.Users["bob"]
	r := sys.Do(http.MethodPost, "/v1/api/manage/alerts", bob.APIToken,
		`{"kind":"webhook","url":"`+recv.URL+`","events":["agent.disconnected"],"graceSeconds":1}`)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	gone := func() bool { return !sys.Relay().Hub().Connected(bob.UserID) }

	// Away and back within the grace: nothing.
	sys.StartAgent("bob").Close()
	require.Eventually(t, gone, testkit.Medium, testkit.Tick)
	ra := sys.StartAgent("bob")
	select {
	case p := <-posts:
		t.Fatalf("sent although the agent came back: %s", p.Summary)
	case <-time.After(1500 * time.Millisecond):
	}

	// Away for good: one alert, after the grace.
	ra.Close()
	require.Eventually(t, gone, testkit.Medium, testkit.Tick)
	start := time.Now()
	select {
	case p := <-posts:
		require.Equal(t, protocol.ActivityAgentDisconnected, p.Kind)
		require.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond, "not before the grace")
	case <-time.After(testkit.Medium):
		t.Fatal("no alert after the grace")
	}
	select {
	case p := <-posts:
		t.Fatalf("alerted twice: %s", p.Summary)
	case <-time.After(300 * time.Millisecond):
	}
}
