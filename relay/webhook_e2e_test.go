package relay_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/events"
	"tradebridge/relay/events/eventstest"
	"tradebridge/relay/store"
	"tradebridge/relay/webhook"
)

// alertAnswer is the data of an alert's answer.
type alertAnswer struct {
	AlertID string           `json:"alertId"`
	Status  string           `json:"status"`
	Results []webhook.Result `json:"results"`
	DueAt   string           `json:"dueAt"`
}

// hook is a user's webhook as a test sends alerts to it.
type hook struct {
	s     *system
	token string
	webhook.Info
}

// webhookOf reads user's webhook with its API token (made on first use).
func (s *system) webhookOf(user string) hook {
	s.T.Helper()
	tok := s.Users[user].APIToken
	r := s.Do("GET", "/v1/api/webhook", tok, "")
	require.Equal(s.T, http.StatusOK, r.Status, string(r.Raw))
	h := hook{s: s, token: tok}
	require.NoError(s.T, json.Unmarshal(r.Data, &h.Info))
	require.True(s.T, strings.HasPrefix(h.URL, "/v1/send/wh_"), h.URL)
	return h
}

// send posts an alert's text (text/plain), with the webhook's key first.
func (h hook) send(text string) response {
	h.s.T.Helper()
	return h.s.Do("POST", h.URL, "", "key="+h.Key+";\n"+text, "Content-Type", "text/plain")
}

// answer decodes an alert's answer.
func (h hook) answer(r response) alertAnswer {
	h.s.T.Helper()
	var a alertAnswer
	if r.Success {
		require.NoError(h.s.T, json.Unmarshal(r.Data, &a), string(r.Raw))
	} else {
		require.NoError(h.s.T, json.Unmarshal(r.Raw, &a), string(r.Raw))
	}
	return a
}

// history reads the webhook's alert history (the newest page).
func (h hook) history(query string) webhook.Page {
	h.s.T.Helper()
	r := h.s.Do("GET", "/v1/api/webhook/alerts"+query, h.token, "")
	require.Equal(h.s.T, http.StatusOK, r.Status, string(r.Raw))
	var p webhook.Page
	require.NoError(h.s.T, json.Unmarshal(r.Data, &p))
	return p
}

// waitStatus waits until the alert's status in the history is want.
func (h hook) waitStatus(alertID, want string) webhook.AlertView {
	h.s.T.Helper()
	var got webhook.AlertView
	require.Eventually(h.s.T, func() bool {
		for _, a := range h.history("?limit=50").Alerts {
			if a.AlertID == alertID {
				got = a
				return a.Status == want
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond, "alert %s never became %s", alertID, want)
	return got
}

const placeES = "command=PLACE;account=Sim101;instrument=ES 12-26;action=BUY;qty=2;order_type=MARKET;tif=DAY"

// A PLACE alert places its order at the simulator, answered 200 executed
// with the order's id, recorded in the history (without the key) and in
// the activity log (the alert and its call, source webhook); the other
// commands run the same operations: multi-account, flatten first,
// FLATTEN, CANCELALLORDERS; a JSON body is read like the text.
func TestWebhookEndToEnd(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	ra := s.StartAgent("alice")
	var spine eventstest.Collector
	h := s.webhookOf("alice")
	require.Equal(t, h.Info, s.webhookOf("alice").Info, "one webhook per user")
	sub := subscribeActivity(t, s, &spine)
	_ = sub

	r := h.send(placeES)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	a := h.answer(r)
	require.Equal(t, store.WebhookExecuted, a.Status)
	require.Len(t, a.Results, 1)
	require.Equal(t, "Sim101", a.Results[0].Account)
	require.Len(t, a.Results[0].OrderIDs, 1)
	pos, err := ra.Sim.Positions(t.Context(), "Sim101")
	require.NoError(t, err)
	require.Len(t, pos, 1)
	require.Equal(t, 2, pos[0].Quantity)

	// Multi-account: one result per account.
	r = h.send(strings.Replace(placeES, "account=Sim101", "account=Sim101,Sim102", 1) + ";qty=1")
	require.Equal(t, http.StatusBadRequest, r.Status, "qty given twice: %s", r.Raw)
	require.Contains(t, r.Detail, "qty")
	r = h.send("command=PLACE;account=Sim101,Sim102;instrument=ES 12-26;action=SELL;qty=1;order_type=MARKET;tif=DAY")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	a = h.answer(r)
	require.Len(t, a.Results, 2)
	assert.Equal(t, "Sim101", a.Results[0].Account)
	assert.Equal(t, "Sim102", a.Results[1].Account)
	for _, res := range a.Results {
		assert.Equal(t, webhook.ResultExecuted, res.Status)
		assert.Len(t, res.OrderIDs, 1)
	}

	// Flatten first: the long on Sim101 is closed, then the sell placed.
	r = h.send("command=PLACE;flatten_first=true;account=Sim101;instrument=ES 12-26;action=SELL;qty=3;order_type=MARKET;tif=DAY")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	pos, err = ra.Sim.Positions(t.Context(), "Sim101")
	require.NoError(t, err)
	require.Len(t, pos, 1)
	require.Equal(t, protocol.MarketPositionShort, pos[0].MarketPosition)
	require.Equal(t, 3, pos[0].Quantity)

	// A working order, then CANCELALLORDERS; FLATTEN of the instrument.
	r = h.s.Do("POST", h.URL, "", `{"key":"`+h.Key+`","command":"PLACE","account":"Sim101","instrument":"ES 12-26","action":"buy","qty":1,"order_type":"LIMIT","limit_price":1000,"tif":"GTC"}`)
	require.Equal(t, http.StatusOK, r.Status, "a JSON body: %s", r.Raw)
	limit := h.answer(r)
	require.Equal(t, store.WebhookExecuted, limit.Status)
	r = h.send("command=CANCELALLORDERS")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	orders, err := ra.Sim.Orders(t.Context(), "Sim101")
	require.NoError(t, err)
	for _, o := range orders {
		require.True(t, protocol.TerminalOrderState(o.OrderState), "every order cancelled: %+v", o)
	}
	r = h.send("command=FLATTEN;account=Sim101;instrument=ES 12-26")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	pos, err = ra.Sim.Positions(t.Context(), "Sim101")
	require.NoError(t, err)
	require.Empty(t, pos)

	// The history: newest first, paged, without the key.
	page := h.history("?limit=2")
	require.Len(t, page.Alerts, 2)
	require.NotNil(t, page.Next)
	assert.Equal(t, "FLATTEN", page.Alerts[0].Command)
	all := h.history("")
	for _, al := range all.Alerts {
		assert.NotContains(t, al.Text, h.Key, "the key is never kept")
	}
	older := h.history("?before=" + *page.Next)
	require.NotEmpty(t, older.Alerts)
	assert.Equal(t, all.Alerts[2].AlertID, older.Alerts[0].AlertID)
	first := all.Alerts[len(all.Alerts)-1]
	assert.Equal(t, "PLACE", first.Command)
	assert.JSONEq(t, `["Sim101"]`, string(first.Accounts))
	assert.Equal(t, "desktop", first.Destination)
	assert.Equal(t, store.WebhookExecuted, first.Status)
	failedOne := all.Alerts[len(all.Alerts)-2]
	assert.Equal(t, store.WebhookFailed, failedOne.Status, "an alert that did not parse is recorded failed")
	assert.Contains(t, failedOne.Reason, "qty")

	// Another user sees none of them.
	r = s.Do("GET", "/v1/api/webhook/alerts", s.Users["bob"].APIToken, "")
	require.Equal(t, http.StatusOK, r.Status)
	require.JSONEq(t, `{"alerts":[],"next":null}`, string(r.Data))

	// The activity log: a webhook.received per alert, and each call's
	// entry, source webhook.
	wid := strings.TrimPrefix(h.URL, "/v1/send/")
	received := waitEntries(t, &spine, protocol.ActivityWebhookReceived, len(all.Alerts))
	for _, e := range received {
		assert.Equal(t, protocol.ActivitySource{Kind: protocol.SourceWebhook, ID: wid}, e.Source)
		d := eventstest.Detail(t, e)
		assert.Equal(t, wid, d["webhookId"])
		assert.NotEmpty(t, d["alertId"])
		assert.NotEmpty(t, d["outcome"])
	}
	placed := waitEntries(t, &spine, protocol.ActivityOrderPlaced, 1)
	assert.Equal(t, protocol.ActivitySource{Kind: protocol.SourceWebhook, ID: wid}, placed[0].Source)
}

// subscribeActivity collects the activity entries the relay records.
func subscribeActivity(t *testing.T, s *system, c *eventstest.Collector) bool {
	t.Helper()
	require.NoError(t, s.Relay().Events().Subscribe(events.Subscription{Name: "test-webhook", Types: []events.Type{events.TypeActivity},
		Handle: c.Publish}))
	return true
}

// waitEntries waits for at least n recorded entries of kind and returns
// them.
func waitEntries(t *testing.T, c *eventstest.Collector, kind string, n int) []protocol.ActivityEntry {
	t.Helper()
	var got []protocol.ActivityEntry
	require.Eventually(t, func() bool {
		got = c.Entries(kind)
		return len(got) >= n
	}, 5*time.Second, 10*time.Millisecond, "%d entries of %s", n, kind)
	return got
}

// metricsOf returns the relay's metrics in the Prometheus text format.
func metricsOf(t *testing.T, s *system) string {
	t.Helper()
	w := httptest.NewRecorder()
	s.Relay().OperatorHandler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	return w.Body.String()
}
