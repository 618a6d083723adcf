package relay_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay"
	"tradebridge/relay/events"
	"tradebridge/relay/events/eventstest"
	"tradebridge/relay/sealed"
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

// waitStatus waits until the alert's status in the store is want, and
// returns it as the history shows it.
func (h hook) waitStatus(alertID, want string) webhook.AlertView {
	h.s.T.Helper()
	seq, ok := webhook.ParseAlertID(alertID)
	require.True(h.s.T, ok, alertID)
	var got store.WebhookAlert
	require.Eventually(h.s.T, func() bool {
		var err error
		got, err = h.s.Store.WebhookAlert(h.s.T.Context(), h.userID(), seq)
		return err == nil && got.Status == want
	}, 10*time.Second, 20*time.Millisecond, "alert %s never became %s", alertID, want)
	return webhook.View(got)
}

// userID is the id of the webhook's user.
func (h hook) userID() string {
	for _, c := range h.s.Users {
		if c.APIToken == h.token {
			return c.UserID
		}
	}
	return ""
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

// TradingView's duplicate (the same text again within the window) is
// answered with the first alert's answer and places nothing more; an
// alert's rate_limit blocks the alerts of its id past it; a
// require_market_position that does not hold blocks the alert (200
// blocked, recorded, nothing placed).
func TestWebhookDuplicateRateLimitBlocked(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	ra := s.StartAgent("alice")
	h := s.webhookOf("alice")

	first := h.send(placeES)
	require.Equal(t, http.StatusOK, first.Status, string(first.Raw))
	again := h.send(placeES)
	require.Equal(t, http.StatusOK, again.Status, string(again.Raw))
	require.JSONEq(t, string(first.Raw), string(again.Raw), "the first answer again")
	pos, err := ra.Sim.Positions(t.Context(), "Sim101")
	require.NoError(t, err)
	require.Len(t, pos, 1)
	require.Equal(t, 2, pos[0].Quantity, "one order")
	require.Len(t, h.history("").Alerts, 1, "a duplicate is not recorded again")
	require.Contains(t, metricsOf(t, s), `relay_webhook_alerts_total{outcome="duplicate"} 1`)

	// rate_limit=1 per minute of id "breakout": the second is blocked.
	rated := "command=PLACE;account=Sim102;instrument=ES 12-26;action=BUY;qty=1;order_type=MARKET;tif=DAY;rate_limit=1/60;id=breakout"
	r := h.send(rated)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, store.WebhookExecuted, h.answer(r).Status)
	r = h.send(rated + ";strategy_tag=other") // another text: not a duplicate
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	blocked := h.answer(r)
	require.Equal(t, store.WebhookBlocked, blocked.Status)
	view := h.waitStatus(blocked.AlertID, store.WebhookBlocked)
	require.Contains(t, view.Reason, "rate_limit")
	pos, err = ra.Sim.Positions(t.Context(), "Sim102")
	require.NoError(t, err)
	require.Len(t, pos, 1)
	require.Equal(t, 1, pos[0].Quantity, "the blocked alert placed nothing")

	// require_market_position=short on a long account: blocked.
	r = h.send(placeES + ";require_market_position=short")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	a := h.answer(r)
	require.Equal(t, store.WebhookBlocked, a.Status)
	require.Len(t, a.Results, 1)
	require.Equal(t, webhook.ResultBlocked, a.Results[0].Status)
	require.Equal(t, protocol.CodeMarketPositionMismatch, a.Results[0].Error.Code)
	pos, err = ra.Sim.Positions(t.Context(), "Sim101")
	require.NoError(t, err)
	require.Equal(t, 2, pos[0].Quantity, "nothing placed")
}

// kill_switch=on sets the user's kill switch through the Management
// API's code: the PLACE after it fails with the agent's trading_blocked,
// answered with the trading API's status and code and the alert's id,
// and recorded failed; kill_switch=off lifts it.
func TestWebhookKillSwitch(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	ra := s.StartAgent("alice")
	h := s.webhookOf("alice")

	r := h.send("kill_switch=on")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, store.WebhookExecuted, h.answer(r).Status)
	r = h.send(placeES)
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Raw))
	require.Equal(t, protocol.CodeTradingBlocked, r.Error)
	a := h.answer(r)
	require.NotEmpty(t, a.AlertID, "the failure names the alert")
	view := h.waitStatus(a.AlertID, store.WebhookFailed)
	require.NotEmpty(t, view.Reason)
	var results []webhook.Result
	require.NoError(t, json.Unmarshal(view.Results, &results))
	require.Len(t, results, 1)
	require.Equal(t, protocol.CodeTradingBlocked, results[0].Error.Code)
	pos, err := ra.Sim.Positions(t.Context(), "Sim101")
	require.NoError(t, err)
	require.Empty(t, pos)

	r = h.send("kill_switch=off")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = h.send(placeES + ";strategy_tag=after")
	if r.Status == http.StatusAccepted { // a slow machine: the outcome is in the history
		h.waitStatus(h.answer(r).AlertID, store.WebhookExecuted)
		return
	}
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
}

// delay= answers 202 scheduled at once; the Server runs the alert when
// it is due, and the history says executed.
func TestWebhookDelay(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	ra := s.StartAgent("alice")
	h := s.webhookOf("alice")
	r := h.send(placeES + ";delay=2")
	answered := time.Now()
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	a := h.answer(r)
	require.Equal(t, store.WebhookScheduled, a.Status)
	due, err := time.Parse(time.RFC3339Nano, a.DueAt)
	require.NoError(t, err)
	require.True(t, answered.Before(due), "answered before the delay ended")
	view := h.waitStatus(a.AlertID, store.WebhookExecuted)
	require.False(t, time.Now().Before(due), "run when due")
	var results []webhook.Result
	require.NoError(t, json.Unmarshal(view.Results, &results))
	require.Len(t, results, 1)
	require.Len(t, results[0].OrderIDs, 1)
	pos, err := ra.Sim.Positions(t.Context(), "Sim101")
	require.NoError(t, err)
	require.Len(t, pos, 1)
}

// A wrong key, an unknown webhook id and an address outside
// --webhook-allow leave nothing behind but the counter: no history, no
// activity entry, no order.
func TestWebhookRefusalsLeaveNothing(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	ra := s.StartAgent("alice")
	var spine eventstest.Collector
	subscribeActivity(t, s, &spine)
	h := s.webhookOf("alice")

	wrong := h
	wrong.Key = "whk_" + strings.Repeat("a", 32)
	r := wrong.send(placeES)
	require.Equal(t, http.StatusUnauthorized, r.Status, string(r.Raw))
	require.Equal(t, "unauthorized", r.Error)
	unknown := h
	unknown.URL = "/v1/send/wh_" + strings.Repeat("b", 24)
	r = unknown.send(placeES)
	require.Equal(t, http.StatusUnauthorized, r.Status, string(r.Raw))
	r = s.Do("POST", "/v1/send/nonsense", "", "key="+h.Key+";"+placeES, "Content-Type", "text/plain")
	require.Equal(t, http.StatusUnauthorized, r.Status, string(r.Raw))
	r = s.Do("POST", h.URL, "", placeES, "Content-Type", "text/plain")
	require.Equal(t, http.StatusUnauthorized, r.Status, "no key: %s", r.Raw)
	for _, resp := range []response{r} {
		require.NotContains(t, string(resp.Raw), "Sim101", "errors never echo the body")
	}

	m := metricsOf(t, s)
	require.Contains(t, m, `relay_webhook_alerts_total{outcome="wrong_key"} 2`)
	require.Contains(t, m, `relay_webhook_alerts_total{outcome="unknown_webhook"} 2`)
	require.Empty(t, h.history("").Alerts)
	pos, err := ra.Sim.Positions(t.Context(), "Sim101")
	require.NoError(t, err)
	require.Empty(t, pos)
	time.Sleep(50 * time.Millisecond) // what the spine would carry
	require.Empty(t, spine.Entries(), "no activity entry")

	// Outside --webhook-allow: 403 address_not_allowed, nothing else.
	s2 := newSystemWith(t, func(o *relay.Options) {
		o.Webhook.Allow = []netip.Prefix{netip.MustParsePrefix("52.89.214.238/32")}
	})
	ra2 := s2.StartAgent("alice")
	h2 := s2.webhookOf("alice")
	r = h2.send(placeES)
	require.Equal(t, http.StatusForbidden, r.Status, string(r.Raw))
	require.Equal(t, "address_not_allowed", r.Error)
	require.Empty(t, h2.history("").Alerts)
	pos, err = ra2.Sim.Positions(t.Context(), "Sim101")
	require.NoError(t, err)
	require.Empty(t, pos)
	require.Contains(t, metricsOf(t, s2), `relay_webhook_alerts_total{outcome="address_not_allowed"} 1`)
}

// destination=broker runs the alert on the broker family (the Tradovate
// fake): one order at the broker, one per alert even when TradingView
// sends it twice; before a login is linked it fails with
// tradovate_not_linked.
func TestWebhookBrokerFamily(t *testing.T) {
	t.Parallel()
	s := newBrokerSystem(t)
	tok := s.Users["alice"].APIToken
	h := s.webhookOf("alice")
	text := placeES + ";destination=broker"

	r := h.send(text)
	require.Equal(t, http.StatusConflict, r.Status, string(r.Raw))
	require.Equal(t, "tradovate_not_linked", r.Error)
	require.NotEmpty(t, h.answer(r).AlertID)

	r = s.link(tok)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	before := s.fake.OrdersPlaced()
	text += ";strategy_tag=tv"
	r = h.send(text)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	a := h.answer(r)
	require.Equal(t, store.WebhookExecuted, a.Status)
	require.Len(t, a.Results, 1)
	require.Len(t, a.Results[0].OrderIDs, 1)
	r = h.send(text)
	require.Equal(t, a.AlertID, h.answer(r).AlertID, "a duplicate")
	require.Equal(t, before+1, s.fake.OrdersPlaced())
	require.Eventually(t, func() bool { n, ok := s.brokerPosition(tok, "Sim101"); return ok && n == 2 }, engineWait, 10*time.Millisecond)
	view := h.waitStatus(a.AlertID, store.WebhookExecuted)
	require.Equal(t, "broker", view.Destination)

	// Brackets on the broker family: the relay's own exits engine places
	// the OCO pair once the entry filled.
	r = h.send("command=PLACE;destination=broker;account=Sim102;instrument=ES 12-26;action=SELL;qty=1;order_type=MARKET;tif=DAY;" +
		"take_profit=10 ticks;stop_loss=2 points")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	entryID := h.answer(r).Results[0].OrderIDs[0]
	var working []protocol.Order
	require.Eventually(t, func() bool {
		r := s.broker("GET", "accounts/Sim102/orders?activeOnly=true", tok, "")
		var page struct {
			Orders []protocol.Order `json:"orders"`
		}
		if r.Status != http.StatusOK || json.Unmarshal(r.Data, &page) != nil {
			return false
		}
		working = page.Orders
		return len(working) == 2
	}, engineWait, 20*time.Millisecond, "the exits stand at the broker")
	for _, o := range working {
		require.NotEqual(t, entryID, o.OrderID)
		require.Equal(t, protocol.ActionBuy, o.OrderAction)
		require.Equal(t, 1, o.Quantity)
		require.NotEmpty(t, o.Oco)
	}
}

// A rotation (what relay webhook rotate runs, on the relay's key file)
// takes effect at once: the old key is refused on the next alert, the
// new one accepted, and GET /v1/api/webhook shows it.
func TestWebhookRotate(t *testing.T) {
	t.Parallel()
	keys, err := sealed.Generate("test")
	require.NoError(t, err)
	s := newSystemWith(t, func(o *relay.Options) { o.Broker.Keys = keys })
	s.StartAgent("alice")
	h := s.webhookOf("alice")
	r := h.send(placeES)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	in, err := webhook.Rotate(t.Context(), s.Store, keys, s.Users["alice"].UserID, time.Now())
	require.NoError(t, err)
	require.Equal(t, h.URL, in.URL)
	r = h.send(placeES + ";qty_after=1")
	require.Equal(t, http.StatusUnauthorized, r.Status, "the old key: %s", r.Raw)
	h2 := s.webhookOf("alice")
	require.Equal(t, in, h2.Info)
	r = h2.send(strings.Replace(placeES, "qty=2", "qty=1", 1))
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
}
