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
