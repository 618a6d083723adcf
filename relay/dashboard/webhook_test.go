package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/admit"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/agentcall/agentcalltest"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/dashboard"
	"tradebridge/relay/events"
	"tradebridge/relay/sealed"
	"tradebridge/relay/store"
	"tradebridge/relay/webhook"
	"tradebridge/relay/webhook/alertcmd"
)

const carolEmail = "carol@example.com"

// hookEnv is a dashboard over the fakes with the real TradingView webhook
// (webhook.Server) over a store of its own, whose agent is alice's fake.
type hookEnv struct {
	*env
	st     store.Store
	hooks  *webhook.Server
	agents *agentcalltest.Agents
	events *entries
	send   *http.ServeMux // the webhook's own routes: POST /v1/send/{id}
}

// entries are the events the webhook published.
type entries struct {
	mu  sync.Mutex
	got []events.Event
}

func (e *entries) Publish(ev events.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, ev)
}

func (e *entries) all() []events.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]events.Event(nil), e.got...)
}

// noTokens refuses every API token: the tests send alerts only.
type noTokens struct{}

func (noTokens) Authenticate(context.Context, string, auth.Kind) (auth.Principal, error) {
	return auth.Principal{}, auth.ErrUnauthorized
}

func newHookEnv(t *testing.T) *hookEnv {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	for _, u := range []store.User{{ID: aliceID, Name: "alice", Plan: "pro"}, {ID: bobID, Name: "bob", Plan: "free"},
		{ID: "usr_carol", Name: "carol", Plan: "pro"}} {
		u.CreatedAt = time.Now()
		require.NoError(t, st.CreateUser(context.Background(), u))
	}
	keys, err := sealed.Generate("test")
	require.NoError(t, err)
	// The agent answers writes as a real one does, with the order's id
	// (a write answered without it fails the alert).
	var orders atomic.Int64
	agents := agentcalltest.New(func(_ context.Context, _, _, _ string, _ json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(fmt.Sprintf(`{"orderId":"o-%d"}`, orders.Add(1))), nil
	})
	agents.Connect(aliceID, agentcall.Info{Hello: protocol.Hello{ProtocolVersion: protocol.ExitsProtocolVersion}})
	adm, err := admit.New(admit.Options{Auth: noTokens{}})
	require.NoError(t, err)
	trading, err := budget.New(budget.Options{Policy: budget.Policy{Name: "trading", Rate: 1000, Period: time.Minute, Burst: 1000}})
	require.NoError(t, err)
	pub := &entries{}
	hooks, err := webhook.New(webhook.Options{Store: st, Keys: keys, Admit: adm, Budget: trading, Desktop: agents, Events: pub,
		AnswerWithin: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = hooks.Close() })
	send := http.NewServeMux()
	hooks.Register(send)
	base := newEnv(t, func(o *dashboard.Options) { o.Webhook = hooks })
	base.accounts.users[carolEmail] = "usr_carol"
	return &hookEnv{env: base, st: st, hooks: hooks, agents: agents, events: pub, send: send}
}

// signInOn signs the user in with a session of the plan (the session's
// principal carries the user's plan, as auth's does).
func (e *hookEnv) signInOn(email string, plan auth.Plan) (cookie, csrf string) {
	e.t.Helper()
	cookie, csrf = e.signIn(email)
	userID := e.accounts.users[email]
	e.accounts.auth.Add(cookie, auth.Principal{UserID: userID, UserName: userID, Plan: plan, Kind: auth.KindSession,
		TokenHash: auth.Hash(cookie)})
	return cookie, csrf
}

// info is the user's webhook as the webhook shows it.
func (e *hookEnv) info(userID string) webhook.Info {
	e.t.Helper()
	in, err := e.hooks.Show(context.Background(), userID)
	require.NoError(e.t, err)
	return in
}

// alert posts a message to the user's webhook as TradingView does.
func (e *hookEnv) alert(userID, msg string) *httptest.ResponseRecorder {
	e.t.Helper()
	req := httptest.NewRequest(http.MethodPost, e.info(userID).URL, strings.NewReader(msg))
	req.Header.Set("Content-Type", "text/plain")
	w := httptest.NewRecorder()
	e.send.ServeHTTP(w, req)
	return w
}

var (
	messageRE = regexp.MustCompile(`(?s)<textarea id="webhook-message"[^>]*>(.*?)</textarea>`)
	urlRE     = regexp.MustCompile(`<code id="webhook-url">([^<]*)</code>`)
	keyRE     = regexp.MustCompile(`<code id="webhook-key">([^<]*)</code>`)
)

// textOf returns the first group of re in page, unescaped; "" when none.
func textOf(re *regexp.Regexp, page string) string {
	m := re.FindStringSubmatch(page)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// The page shows the user's own URL (on the dashboard's origin) and key,
// with copy buttons and Rotate key; the builder's first message is
// valid, for the agent's first account; another user sees only theirs.
func TestWebhookPageShowsTheUsersOwn(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	alice, _ := e.signInOn(aliceEmail, auth.PlanPro)
	carol, _ := e.signInOn(carolEmail, auth.PlanElite)
	mine, hers := e.info(aliceID), e.info("usr_carol")

	r := e.do(http.MethodGet, "/app/webhook", alice, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, r.Body)
	require.Equal(t, e.url+mine.URL, textOf(urlRE, r.Body))
	require.Equal(t, mine.Key, textOf(keyRE, r.Body))
	require.Contains(t, r.Body, `data-copy="#webhook-url"`)
	require.Contains(t, r.Body, `data-copy="#webhook-key"`)
	require.Contains(t, r.Body, `>Rotate key</button>`)
	require.Contains(t, r.Body, `href="/app/webhook" aria-current="page"`)
	require.Contains(t, r.Body, `<select id="b-account" name="account"`, "the agent is online: its accounts")
	require.NotContains(t, r.Body, hers.Key)
	msg := textOf(messageRE, r.Body)
	a, err := alertcmd.Parse([]byte(msg), "text/plain")
	require.NoError(t, err, msg)
	require.Equal(t, mine.Key, a.Key)
	require.Equal(t, []string{"Sim101"}, a.Accounts)
	require.Contains(t, r.Body, `<p id="builder-error" class="error" role="alert" hidden></p>`, "no problem shown")

	r = e.do(http.MethodGet, "/app/webhook", carol, nil)
	require.Equal(t, hers.Key, textOf(keyRE, r.Body))
	require.NotContains(t, r.Body, mine.Key)
	require.Contains(t, r.Body, `<input id="b-account" name="account"`, "carol's PC is offline: a text input")
	r = e.do(http.MethodGet, "/app/webhook/message?command=FLATTEN&account=Sim101", carol, nil, "Accept", "application/json")
	require.Equal(t, http.StatusOK, r.StatusCode, r.Body)
	require.Contains(t, r.Body, hers.Key)
	require.NotContains(t, r.Body, mine.Key)

	r = e.do(http.MethodGet, "/app/webhook", "", nil)
	require.Equal(t, http.StatusSeeOther, r.StatusCode, "signed out: to the sign-in page")
	r = e.do(http.MethodGet, "/app/webhook/message", "", nil)
	require.Equal(t, http.StatusUnauthorized, r.StatusCode)
	require.NotContains(t, r.Body, mine.Key)
}

// On the free plan the page says alerts need pro, with no URL or key
// (none is made), and Try it and Rotate key are refused.
func TestWebhookFreePlan(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	bob, csrf := e.signInOn(bobEmail, auth.PlanFree)
	r := e.do(http.MethodGet, "/app/webhook", bob, nil)
	require.Equal(t, http.StatusOK, r.StatusCode, r.Body)
	require.Contains(t, r.Body, `id="webhook-plan"`)
	require.Contains(t, r.Body, "pro plan")
	require.NotContains(t, r.Body, `id="webhook-url"`)
	require.NotContains(t, r.Body, `id="webhook-key"`)
	require.NotContains(t, r.Body, "whk_")
	require.Contains(t, r.Body, `id="webhook-alerts"`, "the history stays")
	_, err := e.st.Webhook(context.Background(), bobID)
	require.ErrorIs(t, err, store.ErrNotFound, "no webhook made for a plan that cannot use it")

	r = e.post("/app/webhook/try", bob, url.Values{"csrf": {csrf}, "message": {"key=x;command=FLATTENEVERYTHING"}})
	require.Equal(t, http.StatusForbidden, r.StatusCode)
	require.NotContains(t, r.Body, `id="try-result"`)
	r = e.post("/app/webhook/rotate", bob, url.Values{"csrf": {csrf}, "confirm": {"rotate"}})
	require.Equal(t, http.StatusForbidden, r.StatusCode)
	r = e.do(http.MethodGet, "/app/webhook/message?command=FLATTEN", bob, nil, "Accept", "application/json")
	require.Equal(t, http.StatusForbidden, r.StatusCode)
	_, err = e.st.Webhook(context.Background(), bobID)
	require.ErrorIs(t, err, store.ErrNotFound)
}

// Try it and Rotate key need the session's CSRF token and the dashboard's
// origin; refused, they do nothing.
func TestWebhookCSRF(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	alice, csrf := e.signInOn(aliceEmail, auth.PlanPro)
	_, carolCSRF := e.signInOn(carolEmail, auth.PlanPro)
	before := e.info(aliceID)
	for _, path := range []string{"/app/webhook/rotate", "/app/webhook/try"} {
		for _, tc := range []struct {
			name   string
			form   url.Values
			header []string
		}{
			{"no token", url.Values{"confirm": {"rotate"}, "message": {"x"}}, nil},
			{"another session's token", url.Values{"csrf": {carolCSRF}, "confirm": {"rotate"}, "message": {"x"}}, nil},
			{"another site", url.Values{"csrf": {csrf}, "confirm": {"rotate"}, "message": {"x"}}, []string{"Origin", "https://evil.example"}},
		} {
			r := e.do(http.MethodPost, path, alice, tc.form, tc.header...)
			require.Equal(t, http.StatusForbidden, r.StatusCode, "%s %s", path, tc.name)
			require.NotContains(t, r.Body, `id="try-result"`)
		}
	}
	require.Equal(t, before, e.info(aliceID), "the key did not change")
	require.Empty(t, e.events.all())
}

// Rotate key, confirmed, issues a new key: the page shows it, the old key
// is refused at once (401), the new one works, and the activity log names
// the dashboard's session as who rotated it. Unconfirmed, nothing
// changes.
func TestWebhookRotate(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	alice, csrf := e.signInOn(aliceEmail, auth.PlanPro)
	old := e.info(aliceID)
	const place = "command=PLACE;account=Sim101;instrument=ES;action=BUY;qty=1;order_type=MARKET;tif=DAY"

	r := e.post("/app/webhook/rotate", alice, url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusBadRequest, r.StatusCode)
	require.Contains(t, r.Body, `id="form-error" role="alert"`)
	require.Equal(t, old, e.info(aliceID), "not confirmed: the same key")

	r = e.post("/app/webhook/rotate", alice, url.Values{"csrf": {csrf}, "confirm": {"rotate"}})
	require.Equal(t, http.StatusSeeOther, r.StatusCode, r.Body)
	require.True(t, strings.HasPrefix(r.Header.Get("Location"), "/app/webhook?rotated=1"), r.Header.Get("Location"))
	now := e.info(aliceID)
	require.NotEqual(t, old.Key, now.Key)
	require.Equal(t, old.URL, now.URL, "the URL stays")

	page := e.do(http.MethodGet, r.Header.Get("Location"), alice, nil)
	require.Equal(t, now.Key, textOf(keyRE, page.Body))
	require.Contains(t, page.Body, `id="webhook-rotated"`)
	require.Contains(t, textOf(messageRE, page.Body), "key="+now.Key+";", "the builder writes the new key")
	require.NotContains(t, page.Body, old.Key)

	w := e.alert(aliceID, "key="+old.Key+";"+place)
	require.Equal(t, http.StatusUnauthorized, w.Code, "the old key stops at once: %s", w.Body.String())
	w = e.alert(aliceID, "key="+now.Key+";"+place)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())

	var rotated []protocol.ActivityEntry
	for _, ev := range e.events.all() {
		if ev.Activity.Kind == protocol.ActivityConfigChanged {
			rotated = append(rotated, ev.Activity)
		}
	}
	require.Len(t, rotated, 1)
	require.Equal(t, protocol.SourceDashboard, rotated[0].Source.Kind)
	require.Equal(t, auth.TokenID(auth.Hash(alice)), rotated[0].Source.ID, "the session that rotated it")
	require.NotContains(t, string(rotated[0].Detail), now.Key)
}

// builderQuery is a builder form.
func builderQuery(kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	return q.Encode()
}

// The builder's message, for every command it offers, written as it is
// or with the chart's placeholders, is read by the webhook's own parser
// (the placeholders filled in as TradingView fills them) and plans its
// calls; it holds the user's key and the keys the command takes, and
// never one it does not. Choices the parser refuses are named in its
// words, with the field.
func TestWebhookBuilderWritesValidMessages(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	alice, _ := e.signInOn(aliceEmail, auth.PlanPro)
	key := e.info(aliceID).Key
	message := func(q string) (msg, problem, field string) {
		t.Helper()
		r := e.do(http.MethodGet, "/app/webhook/message?"+q, alice, nil, "Accept", "application/json")
		require.Equal(t, http.StatusOK, r.StatusCode, r.Body)
		var ans struct {
			Data struct{ Message, Error, Field, TryAction string } `json:"data"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.Body), &ans), r.Body)
		require.True(t, strings.HasPrefix(ans.Data.TryAction, "/app/webhook/try?"), ans.Data.TryAction)
		return ans.Data.Message, ans.Data.Error, ans.Data.Field
	}
	fill := func(msg string) string {
		for _, p := range dashboard.ChartPlaceholders {
			msg = strings.ReplaceAll(msg, p.Placeholder, p.Example)
		}
		return msg
	}
	for _, cmd := range dashboard.BuilderCommands {
		for _, chart := range []bool{false, true} {
			name := fmt.Sprintf("%s chart=%v", cmd, chart)
			kv := []string{"command", cmd, "account", "Sim101", "instrument", "ES 12-26", "action", "SELL", "qty", "2",
				"order_type", "MARKET", "tif", "GTC", "take_profit", "16", "stop_loss", "8", "flatten_first", "true"}
			if chart {
				kv = append(kv, "from_chart", "true")
			}
			msg, problem, _ := message(builderQuery(kv...))
			require.Empty(t, problem, name)
			a, err := alertcmd.Parse([]byte(fill(msg)), "text/plain")
			require.NoError(t, err, "%s:\n%s", name, msg)
			calls, err := a.Calls()
			require.NoError(t, err, name)
			require.NotEmpty(t, calls, name)
			require.Equal(t, key, a.Key, name)
			require.Equal(t, cmd, a.Command, name)
			for _, line := range strings.Split(msg, "\n") {
				field, _, ok := strings.Cut(line, "=")
				require.True(t, ok && strings.HasSuffix(line, ";"), "%s: a key=value; line: %q", name, line)
				require.True(t, field == "key" || alertcmd.Takes(cmd, field), "%s: %s does not apply", name, field)
			}
			if alertcmd.Takes(cmd, "instrument") {
				want := "ES 12-26"
				if chart {
					want = "ES"
					require.Contains(t, msg, "instrument={{ticker}};", name)
				}
				require.Equal(t, want, a.Instrument, name)
			}
			if cmd == alertcmd.CmdPlace {
				require.NotNil(t, a.TakeProfit, name)
				require.Equal(t, 16.0, a.TakeProfit.Offset.Value, "ticks: %s", name)
				require.True(t, a.FlattenFirst, name)
			}
		}
	}

	for _, tc := range []struct {
		name, query, field, want string
	}{
		{"a limit order's price", builderQuery("command", "PLACE", "account", "Sim101", "instrument", "NQ1!", "action", "BUY",
			"qty", "1", "order_type", "LIMIT", "limit_price", "-4 ticks", "tif", "DAY"), "", ""},
		{"a stop-limit order's prices", builderQuery("command", "FLATPLACE", "account", "Sim101", "instrument", "CL 01-27",
			"action", "SELL", "qty", "2", "order_type", "STOPLIMIT", "limit_price", "71.48", "stop_price", "71.5", "tif", "DAY"), "", ""},
		{"no limit price", builderQuery("command", "PLACE", "account", "Sim101", "instrument", "ES", "action", "BUY",
			"qty", "1", "order_type", "LIMIT", "tif", "DAY"), "limit_price", "missing required field: limit_price"},
		{"no account", builderQuery("command", "FLATTEN"), "account", "missing required field: account"},
		{"a key smuggled in an account", builderQuery("command", "FLATTEN", "account", "Sim101;kill_switch=on"), "account",
			"account cannot hold a ; or a line break"},
		{"ticks that are not a number", builderQuery("command", "PLACE", "account", "Sim101", "instrument", "ES", "action", "BUY",
			"qty", "1", "order_type", "MARKET", "tif", "DAY", "stop_loss", "ten"), "stop_loss", "stop_loss is a number of ticks above 0"},
		{"a bad quantity", builderQuery("command", "PLACE", "account", "Sim101", "instrument", "ES", "action", "BUY",
			"qty", "0", "order_type", "MARKET", "tif", "DAY"), "qty", "qty must be a whole number of contracts from 1 to 10000"},
	} {
		msg, problem, field := message(tc.query)
		require.Equal(t, tc.want, problem, tc.name)
		require.Equal(t, tc.field, field, tc.name)
		require.NotContains(t, msg, "kill_switch", tc.name)
		if tc.want == "" {
			_, err := alertcmd.Parse([]byte(msg), "text/plain")
			require.NoError(t, err, "%s:\n%s", tc.name, msg)
		}
	}

	// Without script: the builder's GET writes the message into the page,
	// and its problem next to it.
	r := e.do(http.MethodGet, "/app/webhook?"+builderQuery("command", "CLOSEPOSITION", "account", "Sim101", "instrument", "ES1!",
		"qty", "50%", "action", "BUY", "take_profit", "10"), alice, nil)
	require.Equal(t, http.StatusOK, r.StatusCode)
	require.Equal(t, "key="+key+";\ncommand=CLOSEPOSITION;\naccount=Sim101;\ninstrument=ES1!;\nqty=50%;", textOf(messageRE, r.Body))
	r = e.do(http.MethodGet, "/app/webhook?"+builderQuery("command", "FLATTEN", "account", "Sim101,Sim102"), alice, nil)
	require.Contains(t, r.Body, `<option selected>Sim101,Sim102</option>`, "an account typed before stays chosen")
	require.Contains(t, textOf(messageRE, r.Body), "account=Sim101,Sim102;")
	r = e.do(http.MethodGet, "/app/webhook?"+builderQuery("command", "FLATTEN"), alice, nil)
	require.Contains(t, r.Body, `<p id="builder-error" class="error" role="alert">missing required field: account</p>`)
	require.Contains(t, r.Body, `aria-invalid="true"`)
}

// Try it runs the message through the dry run and shows the plan, or the
// parser's detail, or the key's refusal, and sends and records nothing.
func TestWebhookTry(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	alice, csrf := e.signInOn(aliceEmail, auth.PlanPro)
	key := e.info(aliceID).Key
	try := func(msg string) resp {
		t.Helper()
		r := e.post("/app/webhook/try?command=PLACE&account=Sim101", alice, url.Values{"csrf": {csrf}, "message": {msg}})
		require.Equal(t, http.StatusOK, r.StatusCode, r.Body)
		return r
	}
	result := regexp.MustCompile(`<div id="try-result" class="try [a-z]+" data-outcome="([a-z]+)" data-would="([a-z]+)"`)
	outcome := func(r resp) (string, string) {
		m := result.FindStringSubmatch(r.Body)
		require.Len(t, m, 3, r.Body)
		return m[1], m[2]
	}

	msg := "key=" + key + ";\r\ncommand=PLACE;\r\naccount=Sim101;\r\ninstrument=ES;\r\naction=BUY;\r\nqty=1;\r\norder_type=MARKET;\r\ntif=DAY;\r\ntake_profit=20 ticks;"
	r := try(msg)
	o, would := outcome(r)
	require.Equal(t, "ok", o)
	require.Equal(t, webhook.WouldRun, would)
	require.Contains(t, r.Body, `<li data-fn="PlaceOrder" data-account="Sim101">`)
	require.Contains(t, r.Body, "<dt>exits.takeProfit.offset.value</dt><dd>20</dd>")
	require.Contains(t, r.Body, "Buy 1 ES at market (Day) on Sim101; take profit 20 ticks.")
	require.Contains(t, r.Body, "nothing was sent, traded or recorded")
	require.Equal(t, msg, textOf(messageRE, r.Body), "the message stays in the box")
	require.Contains(t, r.Body, `<option value="PLACE" selected>`, "the builder comes back with its choices")

	r = try("key=" + key + ";command=PLACE;account=Sim101;instrument=ES;action=BUY;qty=1;order_type=MARKET;tif=DAY;stop_los=4 ticks")
	o, would = outcome(r)
	require.Equal(t, "error", o)
	require.Equal(t, webhook.WouldFail, would)
	require.Contains(t, r.Body, "unknown field: stop_los")

	r = try("key=" + key + ";command=FLATPLACE;account=Sim101;instrument={{ticker}};action={{strategy.order.action}};qty={{strategy.order.contracts}};")
	o, _ = outcome(r)
	require.Equal(t, "ok", o, "the chart's placeholders are tried as TradingView fills them")
	require.Contains(t, r.Body, "{{ticker}} as ES1!")
	require.Contains(t, r.Body, `data-fn="FlatPlace"`)

	r = try(`{"key":"` + key + `","command":"FLATTEN","account":"Sim101"}`)
	o, _ = outcome(r)
	require.Equal(t, "ok", o, "a JSON message is tried as JSON")

	r = try("key=whk_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa;command=FLATTENEVERYTHING")
	o, would = outcome(r)
	require.Equal(t, "error", o)
	require.Equal(t, webhook.WouldRefuse, would)
	require.Contains(t, r.Body, "HTTP 401")

	require.Empty(t, e.agents.Calls(aliceID), "nothing sent")
	list, err := e.st.ListWebhookAlerts(context.Background(), aliceID, 0, 10)
	require.NoError(t, err)
	require.Empty(t, list, "nothing recorded")
	require.Empty(t, e.events.all(), "nothing in the activity log")
}

// The history shows the alerts received, newest first, 20 a page with a
// link to the older ones; the fragment the page fetches live holds the
// newest rows.
func TestWebhookHistory(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	alice, _ := e.signInOn(aliceEmail, auth.PlanPro)
	key := e.info(aliceID).Key
	for i := 1; i <= dashboard.HistoryPage+1; i++ {
		w := e.alert(aliceID, fmt.Sprintf("key=%s;command=PLACE;account=Sim101;instrument=ES;action=BUY;qty=%d;order_type=MARKET;tif=DAY", key, i))
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	}
	w := e.alert(aliceID, "key="+key+";command=PLACE;account=Sim101")
	require.Equal(t, http.StatusBadRequest, w.Code)

	row := regexp.MustCompile(`<tr data-alert-id="(tva_\d+)" data-status="([a-z]+)">`)
	r := e.do(http.MethodGet, "/app/webhook", alice, nil)
	rows := row.FindAllStringSubmatch(r.Body, -1)
	require.Len(t, rows, dashboard.HistoryPage)
	require.Equal(t, []string{rows[0][0], "tva_22", store.WebhookFailed}, rows[0], "newest first")
	require.Contains(t, r.Body, "missing required fields: instrument, action, qty, order_type, tif")
	require.Equal(t, "tva_21", rows[1][1])
	require.Contains(t, r.Body, `data-live="on"`)
	require.Contains(t, r.Body, `href="/app/webhook?before=tva_3#webhook-alerts"`)

	r = e.do(http.MethodGet, "/app/webhook?before=tva_3", alice, nil)
	rows = row.FindAllStringSubmatch(r.Body, -1)
	require.Len(t, rows, 2)
	require.Equal(t, "tva_2", rows[0][1])
	require.Equal(t, store.WebhookExecuted, rows[0][2])
	require.Contains(t, r.Body, `data-live="off"`, "an older page is not live")

	r = e.do(http.MethodGet, "/app/webhook/alerts", alice, nil)
	require.Equal(t, http.StatusOK, r.StatusCode)
	require.Contains(t, r.Header.Get("Content-Type"), "text/html")
	require.Len(t, row.FindAllString(r.Body, -1), dashboard.HistoryPage)
	require.NotContains(t, r.Body, "<html", "the rows alone")

	carol, _ := e.signInOn(carolEmail, auth.PlanPro)
	r = e.do(http.MethodGet, "/app/webhook/alerts", carol, nil)
	require.Empty(t, row.FindAllString(r.Body, -1), "another user's history is their own")
	require.Contains(t, r.Body, "No alert received yet.")

	r = e.do(http.MethodGet, "/app/webhook?before=nope", alice, nil)
	require.Equal(t, http.StatusBadRequest, r.StatusCode)
}
