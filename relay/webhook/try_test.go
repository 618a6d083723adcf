package webhook_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/agentcall/agentcalltest"
	"tradebridge/relay/auth"
	"tradebridge/relay/events"
	"tradebridge/relay/store"
	"tradebridge/relay/webhook"
)

// writeCounter is the door's store with its writes counted: every
// method of webhook.Store that changes the store.
type writeCounter struct {
	webhook.Store
	mu     sync.Mutex
	writes []string
}

func (w *writeCounter) wrote(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, name)
}

func (w *writeCounter) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.writes...)
}

func (w *writeCounter) CreateWebhook(ctx context.Context, h store.Webhook) (store.Webhook, bool, error) {
	w.wrote("CreateWebhook")
	return w.Store.CreateWebhook(ctx, h)
}

func (w *writeCounter) RotateWebhook(ctx context.Context, userID, keyHash, keySealed string, at time.Time) (store.Webhook, error) {
	w.wrote("RotateWebhook")
	return w.Store.RotateWebhook(ctx, userID, keyHash, keySealed, at)
}

func (w *writeCounter) ReceiveWebhookAlert(ctx context.Context, claim store.Idempotent, expiredBefore time.Time, a store.WebhookAlert,
	answer func(seq int64) store.Idempotent) (int64, store.Idempotent, bool, error) {
	w.wrote("ReceiveWebhookAlert")
	return w.Store.ReceiveWebhookAlert(ctx, claim, expiredBefore, a, answer)
}

func (w *writeCounter) FinishWebhookAlert(ctx context.Context, userID string, seq int64, from []string, u store.WebhookAlertUpdate,
	dup store.Idempotent) (bool, error) {
	w.wrote("FinishWebhookAlert")
	return w.Store.FinishWebhookAlert(ctx, userID, seq, from, u, dup)
}

func (w *writeCounter) UpdateWebhookAlert(ctx context.Context, userID string, seq int64, from []string, u store.WebhookAlertUpdate) (bool, error) {
	w.wrote("UpdateWebhookAlert")
	return w.Store.UpdateWebhookAlert(ctx, userID, seq, from, u)
}

// publisher counts what is published on the event spine.
type publisher struct {
	mu  sync.Mutex
	got []events.Event
}

func (p *publisher) Publish(e events.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, e)
}

func (p *publisher) all() []events.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]events.Event(nil), p.got...)
}

// manager counts the Management API's calls; it sets every kill switch.
type manager struct {
	mu    sync.Mutex
	calls int
}

func (m *manager) Invoke(context.Context, auth.Principal, protocol.ActivitySource, string, string, []byte) (int, []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	return http.StatusOK, []byte(`{"success":true,"data":{"killSwitch":true}}`)
}

func (m *manager) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// brokerCalls counts the broker family's calls.
type brokerCalls struct {
	mu    sync.Mutex
	calls []string
}

func (b *brokerCalls) Call(_ context.Context, _, fn, _ string, _ json.RawMessage) (json.RawMessage, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, fn)
	return json.RawMessage(`{"orderId":"b-1"}`), nil
}

func (b *brokerCalls) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.calls)
}

// links says whose broker login is linked.
type links map[string]bool

func (l links) BrokerLink(_ context.Context, userID string) (store.BrokerLink, error) {
	if l[userID] {
		return store.BrokerLink{UserID: userID}, nil
	}
	return store.BrokerLink{}, store.ErrNotFound
}

// try runs a dry run of user's alert text, the key first.
func (e *env) try(user, text string) webhook.TryResult {
	e.t.Helper()
	r, err := e.s.Try(context.Background(), e.users[user], []byte("key="+e.hooks[user].Key+";"+text), "text/plain")
	require.NoError(e.t, err)
	return r
}

// A dry run of every kind of alert writes nothing to the store, publishes
// nothing, calls neither the agent, nor the broker family, nor the
// Management API, and spends nothing of the trading budget: with a budget
// of one call, a real alert still runs after them.
func TestTryChangesNothing(t *testing.T) {
	t.Parallel()
	var (
		counted *writeCounter
		pub     publisher
		mgr     manager
		broker  brokerCalls
	)
	e := newEnv(t, 1, func(o *webhook.Options) {
		counted = &writeCounter{Store: o.Store}
		o.Store, o.Events, o.Manage, o.Broker = counted, &pub, &mgr, &broker
		o.Links = links{}
	})
	alice := e.users["alice"]
	for _, text := range []string{
		place,
		place + ";take_profit=20 ticks;stop_loss=10 ticks",
		strings.Replace(place, "account=Sim101", "account=Sim101,Sim102", 1),
		strings.Replace(place, "PLACE", "FLATPLACE", 1),
		place + ";delay=5",
		place + ";id=es;rate_limit=1",
		place + ";start_time=09:30;end_time=16:00;closing_only_after=15:00",
		"command=FLATTENEVERYTHING",
		"command=CANCELALLORDERS",
		"kill_switch=on",
		"destination=broker;" + place,
		"command=PLACE;account=Sim101",
		"command=PLACE;stop_los=3",
	} {
		for range 3 {
			e.try("alice", text)
		}
	}
	_, err := e.s.Try(context.Background(), alice, []byte("key=whk_wrong;"+place), "text/plain")
	require.NoError(t, err)
	_, err = e.s.Try(context.Background(), e.users["fred"], []byte("key="+e.hooks["fred"].Key+";"+place), "text/plain")
	require.NoError(t, err)

	require.Empty(t, counted.all(), "no store write")
	require.Empty(t, pub.all(), "nothing published")
	require.Zero(t, mgr.count(), "no Management API call")
	require.Zero(t, broker.count(), "no broker call")
	require.Empty(t, e.agents.Calls(alice), "no agent call")
	require.Empty(t, e.alerts("alice"), "nothing in the history")

	w := e.send("alice", place)
	require.Equal(t, http.StatusOK, w.Code, "the budget of one call is whole: %s", w.Body.String())
	require.Len(t, e.agents.Calls(alice), 1)
	require.Contains(t, counted.all(), "ReceiveWebhookAlert", "the counter sees a real alert's writes")
}

// sent is what a real alert did: its status code and answer.
type sent struct {
	code   int
	answer answer
}

// The dry run and the real run agree, on a table of bodies: the same
// parse errors (detail, code, status), the same refusals, the same
// verdict (run: executed; blocked; scheduled; failed), and the same
// calls, function and arguments as the agent gets them (after
// closing_only_after's changes).
func TestTryAgreesWithTheRealRun(t *testing.T) {
	t.Parallel()
	const closing = ";start_time=09:30;end_time=16:00;closing_only_after=15:00" // 15:30 now: closing only
	e := newEnv(t, 100, func(o *webhook.Options) { o.AnswerWithin = testkit.Long })
	offline := func(e *env) { e.agents.Disconnect(e.users["alice"]) }
	oldAgent := func(e *env) {
		e.agents.Connect(e.users["alice"], agentcall.Info{Hello: protocol.Hello{ProtocolVersion: protocol.ExitsProtocolVersion - 1}})
	}
	for _, tc := range []struct {
		name, user, body string
		contentType      string
		would            string
		setup            func(*env)
	}{
		{"place", "alice", place, "", webhook.WouldRun, nil},
		{"brackets", "alice", place + ";take_profit=20 ticks;stop_loss=10 ticks", "", webhook.WouldRun, nil},
		{"relative limit", "alice", strings.Replace(place, "order_type=MARKET", "order_type=LIMIT;limit_price=-4 ticks", 1), "", webhook.WouldRun, nil},
		{"flatten first", "alice", place + ";flatten_first=true", "", webhook.WouldRun, nil},
		{"flatplace", "alice", "command=FLATPLACE;account=Sim101;instrument=ES1!;action=sell;qty=2", "", webhook.WouldRun, nil},
		{"two accounts", "alice", strings.Replace(place, "account=Sim101", "account=Sim101,Sim102", 1), "", webhook.WouldRun, nil},
		{"close half", "alice", "command=CLOSEPOSITION;account=Sim101;instrument=ES 12-26;qty=50%", "", webhook.WouldRun, nil},
		{"reverse position", "alice", "command=REVERSEPOSITION;account=Sim101;instrument=NQ1!;action=SELL;qty=1;order_type=MARKET;tif=DAY", "", webhook.WouldRun, nil},
		{"flatten", "alice", "command=FLATTEN;account=Sim101", "", webhook.WouldRun, nil},
		{"flatten everything", "alice", "command=FLATTENEVERYTHING", "", webhook.WouldRun, nil},
		{"cancel all", "alice", "command=CANCELALLORDERS", "", webhook.WouldRun, nil},
		{"json", "alice", `"command":"PLACE","account":"Sim101","instrument":"ES","action":"buy","qty":1,"order_type":"market","tif":"day"}`,
			"application/json", webhook.WouldRun, nil},
		{"closing only place", "alice", place + closing, "", webhook.WouldRun, nil},
		{"closing only flatplace", "alice", strings.Replace(place, "PLACE", "FLATPLACE", 1) + closing, "", webhook.WouldBlock, nil},
		{"closing only reverse", "alice", "command=REVERSE;account=Sim101;instrument=ES 12-26" + closing, "", webhook.WouldBlock, nil},
		{"outside the window", "alice", place + ";start_time=09:30;end_time=15:00", "", webhook.WouldBlock, nil},
		{"missing fields", "alice", "command=PLACE;account=Sim101", "", webhook.WouldFail, nil},
		{"unknown field", "alice", place + ";stop_los=10 ticks", "", webhook.WouldFail, nil},
		{"not applicable", "alice", "command=CLOSEPOSITION;account=Sim101;instrument=ES1!;stop_loss=10 ticks", "", webhook.WouldFail, nil},
		{"placeholder", "alice", strings.Replace(place, "qty=1", "qty={{strategy.order.contracts}}", 1), "", webhook.WouldFail, nil},
		{"not json", "alice", `"command":`, "application/json", webhook.WouldRefuse, nil},
		{"wrong key", "alice", "key=whk_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa;" + place, "", webhook.WouldRefuse, nil},
		{"no key", "alice", "key=;" + place, "", webhook.WouldRefuse, nil},
		{"agent offline", "alice", place, "", webhook.WouldFail, offline},
		{"exits for an old agent", "alice", place + ";stop_loss=10 ticks", "", webhook.WouldFail, oldAgent},
		{"old agent without exits", "alice", place, "", webhook.WouldRun, oldAgent},
		{"kill switch without the Management API", "alice", "kill_switch=on", "", webhook.WouldFail, nil},
		{"broker family missing", "alice", "destination=broker;" + place, "", webhook.WouldFail, nil},
		{"free plan", "fred", place, "", webhook.WouldRefuse, nil},
		// Last: its timer runs a minute from now, after the test.
		{"delay", "alice", place + ";delay=60", "", webhook.WouldSchedule, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// One after the other on one Server: each past the last one's
			// duplicate window, with the agent connected anew.
			e.clock.Advance(webhook.DefaultDuplicateWindow + time.Second)
			e.agents.Connect(e.users["alice"], agentcall.Info{Hello: protocol.Hello{ProtocolVersion: protocol.ExitsProtocolVersion}})
			if tc.setup != nil {
				tc.setup(e)
			}
			user := e.users[tc.user]
			body := "key=" + e.hooks[tc.user].Key + ";" + tc.body
			if strings.HasPrefix(tc.body, "key=") {
				body = tc.body
			}
			if tc.contentType == "application/json" {
				body = `{"key":"` + e.hooks[tc.user].Key + `",` + tc.body
			}
			ct := tc.contentType
			if ct == "" {
				ct = "text/plain"
			}
			dry, err := e.s.Try(context.Background(), user, []byte(body), ct)
			require.NoError(t, err)
			require.Equal(t, tc.would, dry.Would, "%+v", dry)
			before := len(e.agents.Calls(user))
			real := post(t, e, e.hooks[tc.user].URL, body, ct)
			agreeWith(t, e, user, dry, real, e.agents.Calls(user)[before:])
		})
	}
}

// post sends an alert body as TradingView does and returns what it did.
func post(t *testing.T, e *env, url, body, contentType string) sent {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	w := httptest.NewRecorder()
	e.mux.ServeHTTP(w, req)
	s := sent{code: w.Code}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &s.answer), w.Body.String())
	return s
}

// agreeWith checks that a dry run said what the real alert then did.
func agreeWith(t *testing.T, e *env, user string, dry webhook.TryResult, real sent, calls []agentcalltest.Call) {
	t.Helper()
	switch dry.Would {
	case webhook.WouldRefuse:
		require.NotNil(t, dry.Error)
		assert.Equal(t, dry.Error.Status, real.code)
		assert.Equal(t, dry.Error.Code, real.answer.Error)
		assert.Empty(t, real.answer.AlertID, "nothing recorded")
	case webhook.WouldFail:
		require.NotNil(t, dry.Error)
		assert.Equal(t, dry.Error.Status, real.code)
		assert.Equal(t, dry.Error.Code, real.answer.Error)
		list, err := e.st.ListWebhookAlerts(context.Background(), user, 0, 1)
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.Equal(t, store.WebhookFailed, list[0].Status)
		assert.Equal(t, dry.Error.Detail, list[0].Reason, "the same detail")
	case webhook.WouldRun, webhook.WouldBlock, webhook.WouldSchedule:
		require.Nil(t, dry.Error, "%+v", dry.Error)
		want := map[string]string{webhook.WouldRun: store.WebhookExecuted, webhook.WouldBlock: store.WebhookBlocked,
			webhook.WouldSchedule: store.WebhookScheduled}[dry.Would]
		assert.Equal(t, want, real.answer.Data.Status)
		assert.NotEmpty(t, dry.Summary)
	}
	if dry.Error != nil && dry.Error.Status == http.StatusBadRequest {
		assert.Empty(t, dry.Calls, "an alert that does not parse plans nothing")
	}
	// The calls sent: the dry run's, but for those it says are skipped,
	// in order, with the same arguments, when it runs or is blocked
	// (closing_only_after lets a flatten through); none when it fails, is
	// refused or waits for its delay.
	var planned []webhook.TryCall
	for _, c := range dry.Calls {
		if c.Skipped == "" && (dry.Would == webhook.WouldRun || dry.Would == webhook.WouldBlock) {
			planned = append(planned, c)
		}
	}
	require.Len(t, calls, len(planned))
	for i, c := range planned {
		assert.Equal(t, c.Fn, calls[i].Fn)
		assert.JSONEq(t, string(c.Args), string(calls[i].Args))
	}
}

// A dry run to the broker family reads the user's link: without one it
// would fail tradovate_not_linked, nothing called; with one it would run.
// A key rotated away is refused at once, and the new one accepted.
func TestTryLinkAndRotatedKey(t *testing.T) {
	t.Parallel()
	var broker brokerCalls
	linked := links{}
	var pub publisher
	e := newEnv(t, 100, func(o *webhook.Options) { o.Broker, o.Links, o.Events = &broker, linked, &pub })
	alice := e.users["alice"]
	r := e.try("alice", "destination=broker;"+place)
	require.Equal(t, webhook.WouldFail, r.Would)
	require.Equal(t, "tradovate_not_linked", r.Error.Code)
	require.Equal(t, http.StatusConflict, r.Error.Status)
	require.Len(t, r.Calls, 1, "the plan is shown")
	require.Contains(t, r.Summary, "Tradovate")
	linked[alice] = true
	r = e.try("alice", "destination=broker;"+place)
	require.Equal(t, webhook.WouldRun, r.Would, "%+v", r.Error)
	require.Zero(t, broker.count())

	old := e.hooks["alice"]
	src := protocol.ActivitySource{Kind: protocol.SourceDashboard, ID: "sess1"}
	in, err := e.s.Rotate(context.Background(), alice, src)
	require.NoError(t, err)
	require.Equal(t, old.URL, in.URL, "the URL stays")
	require.NotEqual(t, old.Key, in.Key)
	r = e.try("alice", place) // the old key, kept in e.hooks
	require.Equal(t, webhook.WouldRefuse, r.Would)
	require.Equal(t, http.StatusUnauthorized, r.Error.Status)
	e.hooks["alice"] = in
	require.Equal(t, webhook.WouldRun, e.try("alice", place).Would)
	shown, err := e.s.Show(context.Background(), alice)
	require.NoError(t, err)
	require.Equal(t, in, shown)

	got := pub.all()
	require.Len(t, got, 1, "the rotation's entry")
	require.Equal(t, alice, got[0].UserID)
	require.Equal(t, protocol.ActivityConfigChanged, got[0].Activity.Kind)
	require.Equal(t, src, got[0].Activity.Source, "names who rotated it")
	require.Contains(t, got[0].Activity.Summary, "dashboard")
	require.NotContains(t, string(got[0].Activity.Detail), in.Key, "no key in the log")
	require.NotContains(t, got[0].Activity.Summary, in.Key)
}

// The dry run says the alert in words.
func TestTrySummary(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100, func(o *webhook.Options) { o.Manage = &manager{} })
	for _, c := range []struct{ text, want string }{
		{place, "Buy 1 ES 12-26 at market (Day) on Sim101."},
		{place + ";take_profit=20 ticks;stop_loss=10 ticks", "Buy 1 ES 12-26 at market (Day) on Sim101; take profit 20 ticks, stop loss 10 ticks."},
		{strings.Replace(place, "PLACE", "FLATPLACE", 1), "Flatten ES 12-26 first, then buy 1 ES 12-26 at market (Day) on Sim101."},
		{"command=PLACE;account=A1,A2;instrument=NQ1!;action=sell;qty=2;order_type=limit;limit_price=-4 ticks;tif=gtc",
			"Sell 2 NQ limit at -4 ticks (Gtc) on A1, A2."},
		{"command=CLOSEPOSITION;account=Sim101;instrument=ES1!;qty=50%", "Close 50% of the ES position on Sim101."},
		{"command=FLATTEN;account=Sim101", "Flatten every position and cancel every order on Sim101."},
		{"command=CANCELALLORDERS", "Cancel every working order of every account."},
		{"kill_switch=on", "Turn the kill switch on."},
		{place + ";delay=2.5", "Buy 1 ES 12-26 at market (Day) on Sim101, after 2.5s."},
	} {
		r := e.try("alice", c.text)
		assert.Nil(t, r.Error, c.text)
		assert.Equal(t, c.want, r.Summary, c.text)
	}
	r := e.try("alice", "kill_switch=on")
	require.Equal(t, webhook.WouldRun, r.Would)
	require.Empty(t, r.Calls)
	require.Contains(t, strings.Join(r.Notes, " "), "kill switch on")
}
