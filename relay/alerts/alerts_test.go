package alerts_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/alerts"
	"tradebridge/relay/alerts/smtptest"
	"tradebridge/relay/events"
	"tradebridge/relay/sealed"
	"tradebridge/relay/store"
	"tradebridge/relay/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rig is a store with user u1, a key ring, and what the dispatchers
// published.
type rig struct {
	t    *testing.T
	st   store.Store
	keys *sealed.Keyring
	logs *observer.ObservedLogs
	log  *zap.Logger

	mu          sync.Mutex
	published   []events.Event
	dispatchers []*alerts.Dispatcher
	seq         atomic.Int64
}

func newRig(t *testing.T) *rig {
	t.Helper()
	return newRigOn(t, storetest.Open(t, "sqlite"))
}

// newRigOn is a rig on a store of the test's.
func newRigOn(t *testing.T, st store.Store) *rig {
	t.Helper()
	keys, err := sealed.Generate("k1")
	require.NoError(t, err)
	require.NoError(t, st.CreateUser(context.Background(), store.User{ID: "u1", Name: "u1", Plan: "elite", CreatedAt: testkit.Epoch}))
	core, logs := observer.New(zapcore.DebugLevel)
	return &rig{t: t, st: st, keys: keys, logs: logs, log: zap.New(core)}
}

// Publish records an outcome.
func (r *rig) Publish(e events.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.published = append(r.published, e)
}

// outcomes returns the published entries of the kind.
func (r *rig) outcomes(kind string) []protocol.ActivityEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []protocol.ActivityEntry
	for _, e := range r.published {
		if e.Type == events.TypeActivity && e.Activity.Kind == kind {
			out = append(out, e.Activity)
		}
	}
	return out
}

// dispatcher returns a running Dispatcher on the rig's store.
func (r *rig) dispatcher(mod func(*alerts.Options)) *alerts.Dispatcher {
	r.t.Helper()
	return r.dispatcherOn(r.st, mod)
}

// dispatcherOn returns a running Dispatcher on a store.
func (r *rig) dispatcherOn(st alerts.Store, mod func(*alerts.Options)) *alerts.Dispatcher {
	r.t.Helper()
	opts := alerts.Options{Store: st, Publisher: r, Keys: r.keys, AllowPrivate: true, Timeout: 2 * time.Second,
		RetryMin: 10 * time.Millisecond, RetryMax: 20 * time.Millisecond, PollInterval: 20 * time.Millisecond, Logger: r.log}
	if mod != nil {
		mod(&opts)
	}
	d, err := alerts.New(opts)
	require.NoError(r.t, err)
	r.mu.Lock()
	r.dispatchers = append(r.dispatchers, d)
	r.mu.Unlock()
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Run(context.Background()) }()
	r.t.Cleanup(func() {
		_ = d.Close()
		<-done
	})
	return d
}

// destination stores a destination of u1 with its secrets sealed and
// returns it.
func (r *rig) destination(d alerts.Destination, sec alerts.Secrets) alerts.Destination {
	r.t.Helper()
	d.ID = fmt.Sprintf("alr_%020d", r.seq.Add(1))
	d.Active = true
	if sec != (alerts.Secrets{}) {
		require.NoError(r.t, alerts.Seal(r.keys, "u1", &d, sec))
	}
	b, err := json.Marshal(d)
	require.NoError(r.t, err)
	_, err = r.st.WriteResources(context.Background(), "u1", false,
		store.ResourceWrite{Kind: alerts.ResourceKind, ID: d.ID, Body: b, At: testkit.Epoch})
	require.NoError(r.t, err)
	// As the Management API tells them of a change.
	r.mu.Lock()
	for _, dp := range r.dispatchers {
		dp.Changed("u1")
	}
	r.mu.Unlock()
	return d
}

// recorded is a TypeRecorded event of an entry of u1.
func (r *rig) recorded(kind, summary string) events.Event {
	n := r.seq.Add(1)
	return events.Event{Type: events.TypeRecorded, UserID: "u1", Activity: protocol.ActivityEntry{
		ID: fmt.Sprintf("act_%d", n), At: testkit.Epoch, Kind: kind, Account: "Sim101",
		Source: protocol.ActivitySource{Kind: protocol.SourceMonitor, ID: "mon_1"}, Summary: summary,
		Detail: json.RawMessage(`{"limit":"dailyLoss","pnl":-500}`)}}
}

// hit is one request a receiver got.
type hit struct {
	header http.Header
	body   []byte
	path   string
}

// receiver is an HTTP server that answers with the next status of its
// list (the last one once the list is used up) and records each request.
type receiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	statuses []int
	hits     []hit
	got      chan hit
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	rc := &receiver{statuses: statuses, got: make(chan hit, 64)}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		h := hit{header: req.Header.Clone(), body: b, path: req.URL.Path}
		rc.mu.Lock()
		rc.hits = append(rc.hits, h)
		status := http.StatusOK
		if len(rc.statuses) > 0 {
			status = rc.statuses[0]
			if len(rc.statuses) > 1 {
				rc.statuses = rc.statuses[1:]
			}
		}
		rc.mu.Unlock()
		w.WriteHeader(status)
		rc.got <- h
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.hits)
}

// next waits for the receiver's next request.
func (rc *receiver) next(t *testing.T) hit {
	t.Helper()
	select {
	case h := <-rc.got:
		return h
	case <-time.After(testkit.Medium):
		t.Fatal("no request reached the receiver")
		return hit{}
	}
}

const secret = "whsec_test_secret_0123456789"

// A webhook gets the entry signed with its secret, with the delivery's id;
// the outcome is one alert.sent; entries of kinds it did not ask for and
// the alerts' own are not sent.
func TestWebhookSignedDelivery(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	rc := newReceiver(t)
	d := r.dispatcher(nil)
	dst := r.destination(alerts.Destination{Kind: alerts.KindWebhook, URL: rc.srv.URL + "/hook", Events: []string{"monitor.tripped"}},
		alerts.Secrets{Secret: secret})
	ctx := context.Background()
	d.Handle(ctx, r.recorded("copier.halted", "not asked for"))
	d.Handle(ctx, r.recorded("alert.sent", "never alerted"))
	ev := r.recorded("monitor.tripped", "Monitor tripped on Sim101: daily loss")
	d.Handle(ctx, ev)
	d.Handle(ctx, ev) // twice: stored once

	h := rc.next(t)
	require.Equal(t, "/hook", h.path)
	require.Equal(t, alerts.Sign(secret, h.body), h.header.Get(alerts.HeaderSignature))
	require.True(t, strings.HasPrefix(h.header.Get(alerts.HeaderSignature), "sha256="))
	require.True(t, strings.HasPrefix(h.header.Get(alerts.HeaderDelivery), "dlv_"))
	var p map[string]any
	require.NoError(t, json.Unmarshal(h.body, &p))
	require.Equal(t, ev.Activity.ID, p["id"])
	require.Equal(t, "monitor.tripped", p["kind"])
	require.Equal(t, "Sim101", p["account"])
	require.Equal(t, ev.Activity.Summary, p["summary"])
	require.Equal(t, map[string]any{"limit": "dailyLoss", "pnl": -500.0}, p["detail"])
	require.NotContains(t, p, "source")

	require.Eventually(t, func() bool { return len(r.outcomes(protocol.ActivityAlertSent)) == 1 }, testkit.Medium, testkit.Tick)
	time.Sleep(200 * time.Millisecond)
	require.Equal(t, 1, rc.count(), "once")
	out := r.outcomes(protocol.ActivityAlertSent)[0]
	require.Equal(t, protocol.SourceAlert, out.Source.Kind)
	require.Equal(t, dst.ID, out.Source.ID)
	var detail map[string]any
	require.NoError(t, json.Unmarshal(out.Detail, &detail))
	require.Equal(t, ev.Activity.ID, detail["entryId"])
	require.Equal(t, h.header.Get(alerts.HeaderDelivery), detail["deliveryId"])
	require.EqualValues(t, 1, detail["attempts"])
	r.mu.Lock()
	require.Equal(t, "alert:"+detail["deliveryId"].(string), r.published[0].Ref, "the outcome is recorded once")
	r.mu.Unlock()
}

// 500, 500, 200: three attempts and one alert.sent; 400: one attempt and
// alert.failed at once.
func TestWebhookRetries(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	flaky := newReceiver(t, 500, 500, 200)
	refusing := newReceiver(t, 400)
	d := r.dispatcher(nil)
	r.destination(alerts.Destination{Kind: alerts.KindWebhook, URL: flaky.srv.URL, Events: []string{"copier.halted"}}, alerts.Secrets{Secret: secret})
	bad := r.destination(alerts.Destination{Kind: alerts.KindWebhook, URL: refusing.srv.URL, Events: []string{"copier.halted"}}, alerts.Secrets{Secret: secret})
	d.Handle(context.Background(), r.recorded("copier.halted", "Copier halted"))

	require.Eventually(t, func() bool {
		return len(r.outcomes(protocol.ActivityAlertSent)) == 1 && len(r.outcomes(protocol.ActivityAlertFailed)) == 1
	}, testkit.Medium, testkit.Tick)
	require.Equal(t, 3, flaky.count())
	first := flaky.next(t)
	for range 2 {
		h := flaky.next(t)
		require.Equal(t, first.header.Get(alerts.HeaderDelivery), h.header.Get(alerts.HeaderDelivery), "one delivery id")
		require.Equal(t, first.body, h.body, "the same body")
	}
	var detail map[string]any
	require.NoError(t, json.Unmarshal(r.outcomes(protocol.ActivityAlertSent)[0].Detail, &detail))
	require.EqualValues(t, 3, detail["attempts"])

	time.Sleep(200 * time.Millisecond)
	require.Equal(t, 1, refusing.count(), "no retry on 4xx")
	failed := r.outcomes(protocol.ActivityAlertFailed)[0]
	require.Equal(t, bad.ID, failed.Source.ID)
	require.NoError(t, json.Unmarshal(failed.Detail, &detail))
	require.Equal(t, "http_400", detail["error"])
}

// A destination that does not answer delays no other.
func TestSlowDestinationDelaysNoOther(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-release:
		case <-req.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(release) })
	fast := newReceiver(t)
	d := r.dispatcher(func(o *alerts.Options) { o.Timeout = 10 * time.Second })
	r.destination(alerts.Destination{Kind: alerts.KindWebhook, URL: slow.URL, Events: []string{"monitor.tripped"}}, alerts.Secrets{Secret: secret})
	ctx := context.Background()
	d.Handle(ctx, r.recorded("monitor.tripped", "first"))
	time.Sleep(100 * time.Millisecond) // the slow one is being sent
	r.destination(alerts.Destination{Kind: alerts.KindWebhook, URL: fast.srv.URL, Events: []string{"monitor.tripped"}}, alerts.Secrets{Secret: secret})
	start := time.Now()
	d.Handle(ctx, r.recorded("monitor.tripped", "second"))
	fast.next(t)
	require.Less(t, time.Since(start), 2*time.Second, "not behind the slow destination")
}

// Past the rate limit, a window's entries become one summary at its end.
func TestRateLimitSummary(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	rc := newReceiver(t)
	clock := testkit.NewClock(testkit.Epoch)
	d := r.dispatcher(func(o *alerts.Options) { o.Clock, o.RateLimit = clock.Now, 2 })
	r.destination(alerts.Destination{Kind: alerts.KindWebhook, URL: rc.srv.URL, Events: []string{"order.refused", "trading.blocked"}},
		alerts.Secrets{Secret: secret})
	ctx := context.Background()
	for _, k := range []string{"order.refused", "order.refused", "order.refused", "trading.blocked", "order.refused"} {
		d.Handle(ctx, r.recorded(k, k))
	}
	rc.next(t)
	rc.next(t)
	time.Sleep(200 * time.Millisecond)
	require.Equal(t, 2, rc.count(), "the rest waits for the window's end")
	clock.Advance(time.Minute)
	h := rc.next(t)
	var p alerts.Payload
	require.NoError(t, json.Unmarshal(h.body, &p))
	require.Equal(t, alerts.PayloadSummary, p.Kind)
	require.Equal(t, "3 more events: 2 order.refused, 1 trading.blocked", p.Summary)
	require.Equal(t, alerts.Sign(secret, h.body), h.header.Get(alerts.HeaderSignature))
	time.Sleep(200 * time.Millisecond)
	require.Equal(t, 3, rc.count(), "one summary")
}

// agent.disconnected waits the grace: an agent back by then sends
// nothing; one still away sends one.
func TestAgentDisconnectedGrace(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	rc := newReceiver(t)
	clock := testkit.NewClock(testkit.Epoch)
	var connected atomic.Bool
	d := r.dispatcher(func(o *alerts.Options) {
		o.Clock = clock.Now
		o.Connected = func(string) bool { return connected.Load() }
	})
	r.destination(alerts.Destination{Kind: alerts.KindWebhook, URL: rc.srv.URL, Events: []string{"agent.disconnected"}, GraceSeconds: 60},
		alerts.Secrets{Secret: secret})
	ctx := context.Background()

	d.Handle(ctx, r.recorded("agent.disconnected", "first"))
	clock.Advance(30 * time.Second)
	time.Sleep(200 * time.Millisecond)
	require.Zero(t, rc.count(), "not before the grace")
	connected.Store(true)
	clock.Advance(31 * time.Second)
	time.Sleep(300 * time.Millisecond)
	require.Zero(t, rc.count(), "back within the grace: nothing")

	connected.Store(false)
	d.Handle(ctx, r.recorded("agent.disconnected", "second"))
	time.Sleep(200 * time.Millisecond)
	require.Zero(t, rc.count())
	clock.Advance(61 * time.Second)
	h := rc.next(t)
	require.Contains(t, string(h.body), `"second"`)
	time.Sleep(200 * time.Millisecond)
	require.Equal(t, 1, rc.count())
	require.Empty(t, r.outcomes(protocol.ActivityAlertFailed))
}

// Two nodes on one database (two SQLite handles on one file, two
// PostgreSQL pools on one schema) send each alert once, even when both
// handle the same entry.
func TestTwoNodesSendOnce(t *testing.T) {
	t.Parallel()
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			twoNodes(t, backend)
		})
	}
}

func twoNodes(t *testing.T, backend string) {
	var first, second store.Store
	ctx0, cancel := context.WithTimeout(context.Background(), testkit.Long)
	defer cancel()
	switch backend {
	case "sqlite":
		dir := t.TempDir()
		for _, p := range []*store.Store{&first, &second} {
			s, err := store.Open(ctx0, store.Options{Dir: dir})
			require.NoError(t, err)
			t.Cleanup(func() { s.Close() })
			*p = s
		}
	default:
		url := storetest.PostgresURL(t)
		for _, p := range []*store.Store{&first, &second} {
			s, err := store.OpenPostgres(ctx0, store.PostgresOptions{URL: url})
			require.NoError(t, err)
			t.Cleanup(func() { s.Close() })
			*p = s
		}
	}
	r := newRigOn(t, first)
	rc := newReceiver(t)
	a := r.dispatcherOn(first, func(o *alerts.Options) { o.Node = "node-a" })
	b := r.dispatcherOn(second, func(o *alerts.Options) { o.Node = "node-b" })
	r.destination(alerts.Destination{Kind: alerts.KindWebhook, URL: rc.srv.URL, Events: []string{"killSwitch.changed"}}, alerts.Secrets{Secret: secret})
	ctx := context.Background()
	const n = 5
	for i := range n {
		ev := r.recorded("killSwitch.changed", fmt.Sprintf("entry %d", i))
		a.Handle(ctx, ev)
		b.Handle(ctx, ev)
	}
	require.Eventually(t, func() bool { return len(r.outcomes(protocol.ActivityAlertSent)) >= n }, testkit.Medium, testkit.Tick)
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, n, rc.count())
	seen := map[string]bool{}
	rc.mu.Lock()
	for _, h := range rc.hits {
		id := h.header.Get(alerts.HeaderDelivery)
		require.False(t, seen[id], "sent twice: %s", id)
		seen[id] = true
	}
	rc.mu.Unlock()
}

// Loopback is refused unless the operator allows it, by address and by a
// name that resolves to it when the delivery is sent.
func TestPrivateAddressRefusedAtSend(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	rc := newReceiver(t)
	d := r.dispatcher(func(o *alerts.Options) { o.AllowPrivate = false })
	_, port, _ := net.SplitHostPort(rc.srv.Listener.Addr().String())
	for _, u := range []string{rc.srv.URL, "http://localhost:" + port + "/"} {
		r.destination(alerts.Destination{Kind: alerts.KindWebhook, URL: u, Events: []string{"broker.loginFailed"}}, alerts.Secrets{Secret: secret})
	}
	d.Handle(context.Background(), r.recorded("broker.loginFailed", "login refused"))
	require.Eventually(t, func() bool { return len(r.outcomes(protocol.ActivityAlertFailed)) == 2 }, testkit.Medium, testkit.Tick)
	require.Zero(t, rc.count())
	for _, o := range r.outcomes(protocol.ActivityAlertFailed) {
		require.Contains(t, string(o.Detail), "address_not_allowed")
	}

	require.ErrorIs(t, alerts.CheckURL("https://127.0.0.1/", false), alerts.ErrURLPrivate)
	require.ErrorIs(t, alerts.CheckURL("https://[::ffff:10.0.0.1]/", false), alerts.ErrURLPrivate)
	require.ErrorIs(t, alerts.CheckURL("https://100.64.1.1/", false), alerts.ErrURLPrivate)
	require.ErrorIs(t, alerts.CheckURL("https://[fd00::1]/", false), alerts.ErrURLPrivate)
	require.ErrorIs(t, alerts.CheckURL("https://0.0.0.0/", false), alerts.ErrURLPrivate)
	require.ErrorIs(t, alerts.CheckURL("https://224.0.0.1/", false), alerts.ErrURLPrivate)
	require.ErrorIs(t, alerts.CheckURL("http://hooks.example.com/", false), alerts.ErrURLInsecure)
	require.ErrorIs(t, alerts.CheckURL("https://u:p@hooks.example.com/", false), alerts.ErrURLInvalid)
	require.NoError(t, alerts.CheckURL("https://hooks.example.com/x", false))
	require.NoError(t, alerts.CheckURL("http://127.0.0.1:8080/x", true))
}

// A redirect is not followed: the delivery fails.
func TestRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	target := newReceiver(t)
	redirect := httptest.NewServer(http.RedirectHandler(target.srv.URL, http.StatusTemporaryRedirect))
	t.Cleanup(redirect.Close)
	d := r.dispatcher(nil)
	r.destination(alerts.Destination{Kind: alerts.KindWebhook, URL: redirect.URL, Events: []string{"order.refused"}}, alerts.Secrets{Secret: secret})
	d.Handle(context.Background(), r.recorded("order.refused", "refused"))
	require.Eventually(t, func() bool { return len(r.outcomes(protocol.ActivityAlertFailed)) == 1 }, testkit.Medium, testkit.Tick)
	require.Zero(t, target.count())
}

// Discord and Telegram fakes receive the bodies their APIs document, at
// the operator's base URLs; the bot token and webhook token travel only in
// the path, and neither they nor the webhook secret are ever logged.
func TestDiscordAndTelegram(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	fake := newReceiver(t)
	d := r.dispatcher(func(o *alerts.Options) {
		o.DiscordURL, o.TelegramURL = fake.srv.URL, fake.srv.URL+"/tg"
	})
	const discordToken = "discordTOKENsecret_abc"
	const botToken = "123456789:AAbbCCddEEffGGhhIIjjKKllMMnnOOppQQ"
	r.destination(alerts.Destination{Kind: alerts.KindDiscord, URL: "discord.com", Events: []string{"monitor.tripped"}},
		alerts.Secrets{URL: "https://discord.com/api/webhooks/4242/" + discordToken})
	r.destination(alerts.Destination{Kind: alerts.KindTelegram, ChatID: "-100777", HasBotToken: true, Events: []string{"monitor.tripped"}},
		alerts.Secrets{BotToken: botToken})
	d.Handle(context.Background(), r.recorded("monitor.tripped", "Monitor tripped"))

	got := map[string]hit{}
	for range 2 {
		h := fake.next(t)
		got[h.path] = h
	}
	dc, ok := got["/api/webhooks/4242/"+discordToken]
	require.True(t, ok, "Discord's execute-webhook path: %v", got)
	var db alerts.DiscordBody
	require.NoError(t, json.Unmarshal(dc.body, &db))
	require.Contains(t, db.Content, "Monitor tripped")
	require.Len(t, db.Embeds, 1)
	require.Equal(t, "monitor.tripped", db.Embeds[0].Title)
	require.NotNil(t, db.AllowedMentions.Parse)

	tg, ok := got["/tg/bot"+botToken+"/sendMessage"]
	require.True(t, ok, "Telegram's sendMessage path: %v", got)
	var tb alerts.TelegramBody
	require.NoError(t, json.Unmarshal(tg.body, &tb))
	require.Equal(t, "-100777", tb.ChatID)
	require.Contains(t, tb.Text, "Monitor tripped")
	require.Contains(t, tb.Text, "Sim101")

	require.Eventually(t, func() bool { return len(r.outcomes(protocol.ActivityAlertSent)) == 2 }, testkit.Medium, testkit.Tick)
	for _, e := range r.logs.All() {
		line := e.Message + fmt.Sprint(e.ContextMap())
		for _, s := range []string{discordToken, botToken, secret} {
			assert.NotContains(t, line, s)
		}
	}
	r.mu.Lock()
	for _, e := range r.published {
		b, _ := json.Marshal(e.Activity)
		require.NotContains(t, string(b), discordToken)
		require.NotContains(t, string(b), botToken)
	}
	r.mu.Unlock()
}

// A failing Telegram (a connection error, whose text quotes the URL and
// so the token) is logged and recorded without the token.
func TestSecretsNeverInLogsOrOutcomes(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	const botToken = "987654321:ZZyyXXwwVVuuTTssRRqqPPooNNmmLLkkJJ"
	// A closed port: a connection error, whose text holds the URL.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := "http://" + l.Addr().String()
	l.Close()
	d := r.dispatcher(func(o *alerts.Options) { o.TelegramURL = dead; o.RetryFor = time.Nanosecond })
	r.destination(alerts.Destination{Kind: alerts.KindTelegram, ChatID: "42", HasBotToken: true, Events: []string{"copier.halted"}},
		alerts.Secrets{BotToken: botToken})
	d.Handle(context.Background(), r.recorded("copier.halted", "halted"))
	require.Eventually(t, func() bool { return len(r.outcomes(protocol.ActivityAlertFailed)) == 1 }, testkit.Medium, testkit.Tick)
	for _, e := range r.logs.All() {
		require.NotContains(t, e.Message+fmt.Sprint(e.ContextMap()), botToken)
	}
	for _, o := range r.outcomes(protocol.ActivityAlertFailed) {
		require.NotContains(t, string(o.Detail)+o.Summary, botToken)
	}
}

// A go-smtp server offering STARTTLS on a test certificate receives the
// email, over TLS, authenticated; the password is never logged.
func TestEmailThroughSMTPWithStartTLS(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	mail := smtptest.Start(t)
	d := r.dispatcher(func(o *alerts.Options) { o.SMTP = mail.SMTP("alerts@relay.example") })
	require.True(t, d.EmailEnabled())
	r.destination(alerts.Destination{Kind: alerts.KindEmail, To: "trader@example.com", Events: []string{"monitor.tripped"}}, alerts.Secrets{})
	d.Handle(context.Background(), r.recorded("monitor.tripped", "Monitor tripped on Sim101"))

	m := mail.Next(t, testkit.Medium)
	require.True(t, m.TLS, "STARTTLS")
	require.Equal(t, smtptest.User, m.User)
	require.Equal(t, "alerts@relay.example", m.From)
	require.Equal(t, "trader@example.com", m.To)
	require.Contains(t, string(m.Data), "Subject: [tradebridge] [monitor.tripped] Sim101: Monitor tripped on Sim101")
	require.Contains(t, string(m.Data), alerts.HeaderDelivery+": dlv_")
	require.Eventually(t, func() bool { return len(r.outcomes(protocol.ActivityAlertSent)) == 1 }, testkit.Medium, testkit.Tick)
	for _, e := range r.logs.All() {
		require.NotContains(t, e.Message+fmt.Sprint(e.ContextMap()), smtptest.Password)
	}
}

// A test delivery is sent at once, even to an inactive destination.
func TestTestDelivery(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	rc := newReceiver(t)
	d := r.dispatcher(nil)
	dst := r.destination(alerts.Destination{Kind: alerts.KindWebhook, URL: rc.srv.URL, Events: []string{"monitor.tripped"}}, alerts.Secrets{Secret: secret})
	id, err := d.Test(context.Background(), "u1", dst.ID)
	require.NoError(t, err)
	h := rc.next(t)
	require.Equal(t, id, h.header.Get(alerts.HeaderDelivery))
	var p alerts.Payload
	require.NoError(t, json.Unmarshal(h.body, &p))
	require.Equal(t, alerts.PayloadTest, p.Kind)
	require.Equal(t, id, p.ID)
}

// A user's destinations are read once per CacheTTL: one stored by
// another node (no Changed here) is used once the TTL is over, one the
// Management API of this node changed (Changed) at once.
func TestDestinationsCachedForTheTTL(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	rc := newReceiver(t)
	d := r.dispatcher(func(o *alerts.Options) { o.CacheTTL = 300 * time.Millisecond })
	ctx := context.Background()
	d.Handle(ctx, r.recorded("monitor.tripped", "read with no destination"))

	dst := alerts.Destination{Kind: alerts.KindWebhook, URL: rc.srv.URL, Events: []string{"monitor.tripped"}, Active: true}
	dst.ID = "alr_elsewhere"
	require.NoError(t, alerts.Seal(r.keys, "u1", &dst, alerts.Secrets{Secret: secret}))
	b, err := json.Marshal(dst)
	require.NoError(t, err)
	_, err = r.st.WriteResources(ctx, "u1", false, store.ResourceWrite{Kind: alerts.ResourceKind, ID: dst.ID, Body: b, At: testkit.Epoch})
	require.NoError(t, err)
	d.Handle(ctx, r.recorded("monitor.tripped", "within the TTL"))
	time.Sleep(350 * time.Millisecond)
	require.Zero(t, rc.count(), "the cached list had no destination")
	d.Handle(ctx, r.recorded("monitor.tripped", "after the TTL"))
	require.Contains(t, string(rc.next(t).body), "after the TTL")

	r.destination(alerts.Destination{Kind: alerts.KindWebhook, URL: rc.srv.URL, Events: []string{"monitor.tripped"}}, alerts.Secrets{Secret: secret})
	d.Handle(ctx, r.recorded("monitor.tripped", "after Changed"))
	rc.next(t)
	rc.next(t) // both destinations, the new one at once
}

// slowReads holds the Dispatcher's reads of destinations until released.
type slowReads struct {
	alerts.Store
	started chan struct{}
	release chan struct{}
}

func (s *slowReads) ManagedState(ctx context.Context, userID string) (store.ManagedState, error) {
	ms, err := s.Store.ManagedState(ctx, userID)
	select {
	case s.started <- struct{}{}:
		<-s.release
	default:
	}
	return ms, err
}

// A read of the destinations that overlapped a change (Changed) is used
// for its entry but not kept: the next entry reads them again and finds
// the destination created meanwhile.
func TestDestinationReadOverlappingAChange(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	rc := newReceiver(t)
	slow := &slowReads{Store: r.st, started: make(chan struct{}), release: make(chan struct{})}
	d := r.dispatcherOn(slow, nil)
	ctx := context.Background()
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Handle(ctx, r.recorded("monitor.tripped", "before the destination"))
	}()
	<-slow.started // the read without the destination is under way
	r.destination(alerts.Destination{Kind: alerts.KindWebhook, URL: rc.srv.URL, Events: []string{"monitor.tripped"}}, alerts.Secrets{Secret: secret})
	close(slow.release)
	<-done
	d.Handle(ctx, r.recorded("monitor.tripped", "after the destination"))
	require.Contains(t, string(rc.next(t).body), "after the destination")
}

// Send mails plain text through the server: STARTTLS, authenticated, the
// subject on one line; without a server, or to a non-address, it refuses.
func TestSend(t *testing.T) {
	t.Parallel()
	mail := smtptest.Start(t)
	ctx := context.Background()
	s := mail.SMTP("relay@relay.example")
	require.NoError(t, s.Send(ctx, "trader@example.com", "Reset\r\nBcc: x@example.com", "line one\nline two"))
	m := mail.Next(t, testkit.Medium)
	require.True(t, m.TLS)
	require.Equal(t, "trader@example.com", m.To)
	require.Contains(t, string(m.Data), "Subject: Reset  Bcc: x@example.com\r\n", "no header injection")
	require.Contains(t, string(m.Data), "\r\n\r\nline one\r\nline two")
	require.ErrorIs(t, alerts.SMTP{}.Send(ctx, "trader@example.com", "s", "t"), alerts.ErrSMTPDisabled)
	require.Error(t, s.Send(ctx, "Trader <trader@example.com>", "s", "t"))
	require.Len(t, mail.Messages(), 1)
}
