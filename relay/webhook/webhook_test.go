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
	"go.uber.org/goleak"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/admit"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/agentcall/agentcalltest"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/errcode"
	"tradebridge/relay/sealed"
	"tradebridge/relay/store"
	"tradebridge/relay/webhook"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is a Server over a SQLite store, a fake agent and a test clock
// standing on a Wednesday, 15:30 in New York.
type env struct {
	t      *testing.T
	s      *webhook.Server
	st     store.Store
	agents *agentcalltest.Agents
	clock  *testkit.Clock
	mux    *http.ServeMux
	users  map[string]string // name → user id
	hooks  map[string]webhook.Info
}

var wednesday = time.Date(2026, 11, 18, 20, 30, 0, 0, time.UTC) // 15:30 in New York

func newEnv(t *testing.T, burst int, mod func(*webhook.Options)) *env {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	keys, err := sealed.Generate("test")
	require.NoError(t, err)
	e := &env{t: t, st: st, clock: testkit.NewClock(wednesday), mux: http.NewServeMux(), users: map[string]string{},
		hooks: map[string]webhook.Info{}}
	e.agents = agentcalltest.New(func(_ context.Context, _, fn, _ string, _ json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"orderId":"o-` + fn + `"}`), nil
	})
	for name, plan := range map[string]auth.Plan{"alice": auth.PlanPro, "fred": auth.PlanFree} {
		c, err := auth.CreateUser(context.Background(), st, name, plan, wednesday)
		require.NoError(t, err)
		e.users[name] = c.UserID
		in, err := webhook.Show(context.Background(), st, keys, c.UserID, wednesday)
		require.NoError(t, err)
		e.hooks[name] = in
		e.agents.Connect(c.UserID, agentcall.Info{Hello: protocol.Hello{ProtocolVersion: protocol.ExitsProtocolVersion}})
	}
	adm, err := admit.New(admit.Options{Auth: authNone{}})
	require.NoError(t, err)
	trading, err := budget.New(budget.Options{Policy: budget.Policy{Name: "trading", Rate: burst, Period: time.Minute, Burst: burst},
		Now: e.clock.UnixNano})
	require.NoError(t, err)
	opts := webhook.Options{Store: st, Keys: keys, Admit: adm, Budget: trading, Desktop: e.agents, Clock: e.clock.Now,
		AnswerWithin: 200 * time.Millisecond}
	if mod != nil {
		mod(&opts)
	}
	e.s, err = webhook.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.s.Close() })
	e.s.Register(e.mux)
	return e
}

// authNone refuses every API token: these tests send alerts only.
type authNone struct{}

func (authNone) Authenticate(context.Context, string, auth.Kind) (auth.Principal, error) {
	return auth.Principal{}, auth.ErrUnauthorized
}

// send posts user's alert text, the key first.
func (e *env) send(user, text string) *httptest.ResponseRecorder {
	e.t.Helper()
	in := e.hooks[user]
	req := httptest.NewRequest(http.MethodPost, in.URL, strings.NewReader("key="+in.Key+";"+text))
	req.Header.Set("Content-Type", "text/plain")
	w := httptest.NewRecorder()
	e.mux.ServeHTTP(w, req)
	return w
}

type answer struct {
	Success bool   `json:"success"`
	Error   string `json:"error"`
	AlertID string `json:"alertId"`
	Data    struct {
		AlertID string           `json:"alertId"`
		Status  string           `json:"status"`
		Results []webhook.Result `json:"results"`
	} `json:"data"`
}

func decode(t *testing.T, w *httptest.ResponseRecorder) answer {
	t.Helper()
	var a answer
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &a), w.Body.String())
	return a
}

// alerts returns the user's alert history.
func (e *env) alerts(user string) []store.WebhookAlert {
	e.t.Helper()
	list, err := e.st.ListWebhookAlerts(context.Background(), e.users[user], 0, 100)
	require.NoError(e.t, err)
	return list
}

const place = "command=PLACE;account=Sim101;instrument=ES 12-26;action=BUY;qty=1;order_type=MARKET;tif=DAY"

// A free user's alert is 403 plan_required; an alert whose calls exceed
// the trading budget is 429: neither is recorded, nothing is called.
func TestPlanAndBudget(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, nil)
	w := e.send("fred", place)
	require.Equal(t, http.StatusForbidden, w.Code, w.Body.String())
	require.Equal(t, "plan_required", decode(t, w).Error)
	require.Empty(t, e.alerts("fred"))

	w = e.send("alice", strings.Replace(place, "account=Sim101", "account=A1,A2,A3", 1))
	require.Equal(t, http.StatusTooManyRequests, w.Code, w.Body.String())
	require.Empty(t, e.alerts("alice"))
	require.Empty(t, e.agents.Calls(e.users["alice"]))
	e.clock.Advance(time.Minute) // the budget full again
	w = e.send("alice", strings.Replace(place, "account=Sim101", "account=A1,A2", 1))
	require.Equal(t, http.StatusOK, w.Code, "two calls within the budget of 2: %s", w.Body.String())
	require.Len(t, e.agents.Calls(e.users["alice"]), 2)
	for i, c := range e.agents.Calls(e.users["alice"]) {
		assert.Equal(t, "wh:"+decode(t, w).Data.AlertID+":"+string(rune('0'+i)), c.RequestID, "one request id per call")
	}
}

// Calls not done within AnswerWithin answer 202 running; a duplicate
// meanwhile answers 202 with the first alert's id; once done, the
// history holds the outcome and a duplicate gets the final answer.
func TestRunningAndDuplicates(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100, nil)
	release := make(chan struct{})
	var once sync.Once
	e.agents.SetAnswer(func(ctx context.Context, _, _, _ string, _ json.RawMessage) (json.RawMessage, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return json.RawMessage(`{"orderId":"slow"}`), nil
	})
	defer once.Do(func() { close(release) })
	w := e.send("alice", place)
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	first := decode(t, w)
	require.Equal(t, store.WebhookRunning, first.Data.Status)
	require.NotEmpty(t, first.Data.AlertID)
	w = e.send("alice", place)
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	require.Equal(t, first.Data.AlertID, decode(t, w).Data.AlertID, "the duplicate names the first")
	require.Len(t, e.alerts("alice"), 1)

	once.Do(func() { close(release) })
	require.Eventually(t, func() bool { return e.alerts("alice")[0].Status == store.WebhookExecuted }, testkit.Long, testkit.Tick)
	w = e.send("alice", place)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	again := decode(t, w)
	require.Equal(t, first.Data.AlertID, again.Data.AlertID)
	require.Equal(t, []string{"slow"}, again.Data.Results[0].OrderIDs)
	require.Len(t, e.agents.Calls(e.users["alice"]), 1, "run once")

	// Past the window, the same text is a new alert.
	e.clock.Advance(webhook.DefaultDuplicateWindow + time.Millisecond)
	w = e.send("alice", place)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.NotEqual(t, first.Data.AlertID, decode(t, w).Data.AlertID)
}

// After closing_only_after (and before the window's end), a PLACE is
// sent reduce-only, a FLATPLACE only flattens (its place blocked), and a
// REVERSE is blocked without a call; bypass_trade_windows lifts it;
// outside the window the alert is blocked.
func TestClosingOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100, nil)
	user := e.users["alice"]
	const window = ";start_time=09:30;end_time=16:00;closing_only_after=15:00"
	w := e.send("alice", place+window)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	calls := e.agents.Calls(user)
	require.Len(t, calls, 1)
	var args protocol.PlaceOrderArgs
	require.NoError(t, json.Unmarshal(calls[0].Args, &args))
	require.JSONEq(t, `{"reduceOnly":true}`, string(args.SmartOptions))

	w = e.send("alice", strings.Replace(place, "PLACE", "FLATPLACE", 1)+window)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	a := decode(t, w)
	require.Equal(t, store.WebhookBlocked, a.Data.Status)
	require.Equal(t, webhook.ResultBlocked, a.Data.Results[0].Status)
	calls = e.agents.Calls(user)
	require.Equal(t, protocol.FnFlatten, calls[len(calls)-1].Fn, "the flatten ran")

	n := len(calls)
	w = e.send("alice", "command=REVERSE;account=Sim101;instrument=ES 12-26"+window)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.Equal(t, store.WebhookBlocked, decode(t, w).Data.Status)
	require.Len(t, e.agents.Calls(user), n, "nothing sent")

	w = e.send("alice", "command=REVERSE;account=Sim101;instrument=ES 12-26;bypass_trade_windows=true"+window)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.Equal(t, store.WebhookExecuted, decode(t, w).Data.Status)

	w = e.send("alice", place+";start_time=09:30;end_time=15:00")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.Equal(t, store.WebhookBlocked, decode(t, w).Data.Status)
	require.Contains(t, e.alerts("alice")[0].Reason, "trading window")
}

// An alert with exits to an agent older than protocol version 7 fails
// with addon_version_unsupported and is never sent (the agent would drop
// the stop loss).
func TestExitsNeedANewAgent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100, nil)
	user := e.users["alice"]
	e.agents.Connect(user, agentcall.Info{Hello: protocol.Hello{ProtocolVersion: protocol.ExitsProtocolVersion - 1}})
	w := e.send("alice", place+";stop_loss=10 ticks")
	require.Equal(t, http.StatusConflict, w.Code, w.Body.String())
	a := decode(t, w)
	require.Equal(t, "addon_version_unsupported", a.Error)
	require.NotEmpty(t, a.AlertID)
	require.Empty(t, e.agents.Calls(user))
	require.Equal(t, store.WebhookFailed, e.alerts("alice")[0].Status)
}

// The sweeper marks failed a scheduled alert more than 30 s overdue (its
// node stopped), never running it; Close leaves a pending delay
// scheduled.
func TestSweeperAndClose(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100, func(o *webhook.Options) { o.SweepEvery = 10 * time.Millisecond })
	user := e.users["alice"]
	seq, err := e.st.AddWebhookAlert(context.Background(), store.WebhookAlert{UserID: user, ReceivedAt: wednesday.Add(-time.Minute),
		Status: store.WebhookScheduled, DueAt: wednesday.Add(-webhook.OverdueAfter - time.Second), UpdatedAt: wednesday})
	require.NoError(t, err)
	running, err := e.st.AddWebhookAlert(context.Background(), store.WebhookAlert{UserID: user, ReceivedAt: wednesday.Add(-time.Hour),
		Status: store.WebhookRunning, UpdatedAt: wednesday.Add(-webhook.StaleAfter - time.Second)})
	require.NoError(t, err)
	recent, err := e.st.AddWebhookAlert(context.Background(), store.WebhookAlert{UserID: user, ReceivedAt: wednesday,
		Status: store.WebhookRunning, UpdatedAt: wednesday})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = e.s.Run(ctx) }()
	require.Eventually(t, func() bool {
		a, err := e.st.WebhookAlert(context.Background(), user, seq)
		return err == nil && a.Status == store.WebhookFailed && a.Reason == webhook.ReasonStopped
	}, testkit.Long, testkit.Tick)
	require.Eventually(t, func() bool {
		a, err := e.st.WebhookAlert(context.Background(), user, running)
		return err == nil && a.Status == store.WebhookFailed && a.Reason == webhook.ReasonStoppedRunning
	}, testkit.Long, testkit.Tick, "an alert left running by a stopped node")
	a, err := e.st.WebhookAlert(context.Background(), user, recent)
	require.NoError(t, err)
	require.Equal(t, store.WebhookRunning, a.Status, "an alert running now is left alone")
	cancel()
	<-done

	w := e.send("alice", place+";delay=30")
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	require.NoError(t, e.s.Close())
	require.NoError(t, e.s.Close(), "idempotent")
	require.Equal(t, store.WebhookScheduled, e.alerts("alice")[0].Status)
	require.Empty(t, e.agents.Calls(user))
}

// Ids: a webhook's and an alert's.
func TestIDs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"wh_abcdefghijklmnopqrstuvwx", true}, {"wh_abcdefghijklmnopqrstuvw", false}, {"wh_abcdefghijklmnopqrstuv1", false},
		{"xx_abcdefghijklmnopqrstuvwx", false}, {"", false},
	} {
		assert.Equal(t, tc.ok, webhook.ValidID(tc.id), tc.id)
	}
	for _, tc := range []struct {
		id  string
		seq int64
		ok  bool
	}{{"tva_1", 1, true}, {"tva_42", 42, true}, {"tva_0", 0, false}, {"tva_01", 0, false}, {"act_1", 0, false}, {"tva_", 0, false}} {
		seq, ok := webhook.ParseAlertID(tc.id)
		assert.Equal(t, tc.ok, ok, tc.id)
		assert.Equal(t, tc.seq, seq, tc.id)
		if ok {
			assert.Equal(t, tc.id, webhook.AlertID(seq))
		}
	}
}

// refusals records the budget refusals the door reports.
type refusals struct {
	mu  sync.Mutex
	got []string
}

func (r *refusals) Refused(userID string, src protocol.ActivitySource, policy string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, userID+" "+src.Kind+" "+src.ID+" "+policy)
}

func (r *refusals) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// A trading budget's refusal is told to the relay's Refusals with the
// webhook as its source; a body over the limit is 413 and a body without
// a key 401, nothing recorded.
func TestRefusals(t *testing.T) {
	t.Parallel()
	var told refusals
	e := newEnv(t, 1, func(o *webhook.Options) { o.Refusals = &told })
	user := e.users["alice"]
	wid := strings.TrimPrefix(e.hooks["alice"].URL, "/v1/send/")
	require.Equal(t, http.StatusOK, e.send("alice", place).Code)
	w := e.send("alice", place+";strategy_tag=x")
	require.Equal(t, http.StatusTooManyRequests, w.Code, w.Body.String())
	require.Equal(t, []string{user + " webhook " + wid + " trading"}, told.all())

	big := httptest.NewRequest(http.MethodPost, e.hooks["alice"].URL, strings.NewReader("key="+e.hooks["alice"].Key+";"+
		strings.Repeat("x", 64<<10)))
	big.Header.Set("Content-Type", "text/plain")
	rec := httptest.NewRecorder()
	e.mux.ServeHTTP(rec, big)
	require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code, rec.Body.String())

	nokey := httptest.NewRequest(http.MethodPost, e.hooks["alice"].URL, strings.NewReader(place))
	rec = httptest.NewRecorder()
	e.mux.ServeHTTP(rec, nokey)
	require.Equal(t, http.StatusUnauthorized, rec.Code, rec.Body.String())
	require.Len(t, e.alerts("alice"), 1)
}

// An alert whose instrument is outside the instrument grammar is 400
// invalid_instrument, as on the trading API, its detail the accepted
// forms; another bad value stays invalid_argument.
func TestMalformedInstrumentAlert(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 5, nil)
	for _, tc := range []struct {
		text, code string
	}{
		{"command=PLACE;account=Sim101;instrument=ES 13-26;action=BUY;qty=1", errcode.InvalidInstrument},
		{"command=PLACE;account=Sim101;instrument=ES 12-26;action=HOLD;qty=1", errcode.InvalidArgument},
	} {
		w := e.send("alice", tc.text)
		require.Equal(t, http.StatusBadRequest, w.Code, w.Body.String())
		var body struct{ Error, Detail string }
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
		require.Equal(t, tc.code, body.Error, w.Body.String())
		require.NotContains(t, body.Detail, "13-26")
		require.NotContains(t, body.Detail, "HOLD")
	}
}
