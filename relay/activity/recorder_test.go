package activity_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/activity"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/events"
	"tradebridge/relay/events/eventstest"
	"tradebridge/relay/store"
	"tradebridge/relay/store/storetest"
)

// Run's goroutine must end with its test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fixture struct {
	t     *testing.T
	s     store.Store
	pub   *eventstest.Collector
	rec   *activity.Recorder
	clock *testkit.Clock
}

func newFixture(t *testing.T, opts activity.Options, users ...string) *fixture {
	t.Helper()
	f := &fixture{t: t, s: storetest.Open(t, "sqlite"), pub: &eventstest.Collector{}, clock: testkit.NewClock(testkit.Epoch)}
	for _, u := range users {
		require.NoError(t, f.s.CreateUser(context.Background(), store.User{ID: u, Name: u, Plan: "pro", CreatedAt: testkit.Epoch}))
	}
	opts.Store, opts.Publisher, opts.Clock = f.s, f.pub, f.clock
	var err error
	f.rec, err = activity.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { f.rec.Close() })
	return f
}

// handle hands e to the Recorder and waits until what it records is
// written.
func (f *fixture) handle(ctx context.Context, e events.Event) {
	f.t.Helper()
	f.rec.Handle(ctx, e)
	require.NoError(f.t, f.rec.Flush(ctx))
}

func (f *fixture) list(t *testing.T, user string) []store.ActivityRecord {
	t.Helper()
	got, err := f.s.ListActivity(context.Background(), user, store.ActivityQuery{Limit: 1000})
	require.NoError(t, err)
	return got
}

func placed(summary string) protocol.ActivityEntry {
	return protocol.ActivityEntry{At: testkit.Epoch, Kind: protocol.ActivityOrderPlaced, Account: "Sim101",
		Source:  protocol.ActivitySource{Kind: protocol.SourceAPI, ID: "abc123", Name: "bot"},
		Summary: summary, Detail: json.RawMessage(`{"fn":"PlaceOrder","orderIds":["1"]}`)}
}

// Entries are recorded as given, once per Ref, and published with their
// ids; invalid entries are not recorded.
func TestRecorderEntries(t *testing.T) {
	t.Parallel()
	f := newFixture(t, activity.Options{}, "u1", "u2")
	ctx := context.Background()
	f.handle(ctx, events.Activity("u1", "key:k1", placed("Bought 1 ES")))
	f.handle(ctx, events.Activity("u1", "key:k1", placed("Bought 1 ES again")))
	f.handle(ctx, events.Activity("u1", "", placed("Bought 2 ES")))
	f.handle(ctx, events.Activity("nobody", "", placed("Bought 2 ES")))
	remote := events.Activity("u2", "", placed("elsewhere"))
	remote.Remote = true
	f.handle(ctx, remote)

	long := placed(strings.Repeat("é", protocol.MaxActivitySummary+1))
	for name, e := range map[string]protocol.ActivityEntry{
		"unknown kind":      {At: testkit.Epoch, Kind: "order.teleported", Source: protocol.ActivitySource{Kind: protocol.SourceAPI}, Summary: "x"},
		"unknown source":    {At: testkit.Epoch, Kind: protocol.ActivityOrderPlaced, Source: protocol.ActivitySource{Kind: "ghost"}, Summary: "x"},
		"long summary":      long,
		"no summary":        placed(""),
		"detail not object": func() protocol.ActivityEntry { e := placed("x"); e.Detail = json.RawMessage(`[1]`); return e }(),
		"detail too large": func() protocol.ActivityEntry {
			e := placed("x")
			e.Detail = json.RawMessage(`{"a":"` + strings.Repeat("x", protocol.MaxActivityDetail) + `"}`)
			return e
		}(),
		"bad account": func() protocol.ActivityEntry { e := placed("x"); e.Account = " Sim101"; return e }(),
	} {
		f.handle(ctx, events.Activity("u2", "", e))
		require.Empty(t, f.list(t, "u2"), name)
	}

	got := f.list(t, "u1")
	require.Len(t, got, 2, "the second record of key:k1 is not written")
	require.Equal(t, "Bought 2 ES", got[0].Summary)
	require.Equal(t, store.ActivityClassTrading, got[0].Class)
	require.Equal(t, "key:k1", got[1].Ref)

	pubs := f.pub.All()
	require.Len(t, pubs, 2, "published once per stored entry")
	for i, p := range pubs {
		require.Equal(t, events.TypeRecorded, p.Type)
		require.Equal(t, "u1", p.UserID)
		require.Equal(t, activity.EntryID(got[1-i].Seq), p.Activity.ID)
		require.Equal(t, testkit.Epoch, p.Activity.At)
	}
	require.Equal(t, "Bought 1 ES", pubs[0].Activity.Summary)
	require.JSONEq(t, `{"fn":"PlaceOrder","orderIds":["1"]}`, string(pubs[0].Activity.Detail))

	noDetail := placed("config")
	noDetail.Kind, noDetail.Account, noDetail.Detail = protocol.ActivityConfigChanged, "", nil
	f.handle(ctx, events.Activity("u2", "", noDetail))
	got = f.list(t, "u2")
	require.Len(t, got, 1)
	require.Equal(t, store.ActivityClassAccount, got[0].Class)
	require.Equal(t, `{}`, string(got[0].Detail))
}

func report(t *testing.T, typ events.Type, user string, e protocol.ActivityEntry) events.Event {
	t.Helper()
	data, err := json.Marshal(e)
	require.NoError(t, err)
	return events.Event{Type: typ, UserID: user, Agent: protocol.Event{Kind: protocol.EventActivity, Data: data}}
}

func tripped(id string, at time.Time) protocol.ActivityEntry {
	return protocol.ActivityEntry{ID: id, At: at, Kind: protocol.ActivityMonitorTripped, Account: "Sim101",
		Source:  protocol.ActivitySource{Kind: protocol.SourceMonitor, ID: "mon_1"},
		Summary: "Monitor tripped: loss limit", Detail: json.RawMessage(`{"limit":"lossLimit","pnl":-510}`)}
}

// The engines' reports are recorded once per report id, from the agent
// and the broker family alike; only engine kinds and sources are taken.
func TestRecorderReports(t *testing.T) {
	t.Parallel()
	f := newFixture(t, activity.Options{}, "u1")
	ctx := context.Background()
	f.handle(ctx, report(t, events.TypeAgent, "u1", tripped("r1", testkit.Epoch.Add(-time.Minute))))
	f.handle(ctx, report(t, events.TypeAgent, "u1", tripped("r1", testkit.Epoch.Add(-time.Minute))))
	f.handle(ctx, report(t, events.TypeBroker, "u1", tripped("r1", testkit.Epoch.Add(time.Hour))))

	forged := tripped("r2", testkit.Epoch)
	forged.Kind = protocol.ActivityOrderPlaced
	f.handle(ctx, report(t, events.TypeAgent, "u1", forged))
	asAPI := tripped("r3", testkit.Epoch)
	asAPI.Source.Kind = protocol.SourceAPI
	f.handle(ctx, report(t, events.TypeAgent, "u1", asAPI))
	f.handle(ctx, report(t, events.TypeAgent, "u1", tripped("", testkit.Epoch)))
	f.handle(ctx, events.Event{Type: events.TypeAgent, UserID: "u1", Agent: protocol.Event{Kind: protocol.EventActivity, Data: json.RawMessage(`{"id":`)}})
	other := report(t, events.TypeAgent, "u1", tripped("r4", testkit.Epoch))
	other.Agent.Kind = protocol.EventOrder
	f.handle(ctx, other)

	got := f.list(t, "u1")
	require.Len(t, got, 2, "one per report id and source; the rest dropped")
	require.Equal(t, "broker:r1", got[0].Ref)
	require.Equal(t, testkit.Epoch, got[0].At, "a time after now is now")
	require.Equal(t, "agent:r1", got[1].Ref)
	require.Equal(t, testkit.Epoch.Add(-time.Minute), got[1].At)
	require.Equal(t, protocol.SourceMonitor, got[1].SourceKind)
	require.Equal(t, store.ActivityClassAccount, got[1].Class)
	pubs := f.pub.All()
	require.Len(t, pubs, 2)
	require.Equal(t, activity.EntryID(got[1].Seq), pubs[0].Activity.ID, "published with the log's id, not the report's")
}

func sessionEvent(kind agentcall.SessionKind, id, version string, at time.Time) events.Event {
	return events.Session(agentcall.SessionEvent{Kind: kind, UserID: "u1", SessionID: id, At: at, AgentVersion: version,
		ProtocolVersion: 6, Platform: "sim", Reason: map[bool]string{true: agentcall.ReasonConnectionLost}[kind == agentcall.SessionEnded]})
}

// A tunnel's start is agent.connected (after agent.updated when the
// version changed), its end agent.disconnected with the reason; each once.
func TestRecorderSessions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, activity.Options{}, "u1")
	ctx := context.Background()
	t1 := testkit.Epoch
	f.handle(ctx, sessionEvent(agentcall.SessionStarted, "tun_1", "1.2.0", t1))
	f.handle(ctx, sessionEvent(agentcall.SessionStarted, "tun_1", "1.2.0", t1))
	f.handle(ctx, sessionEvent(agentcall.SessionDiagnostics, "tun_1", "", t1))
	f.handle(ctx, sessionEvent(agentcall.SessionEnded, "tun_1", "", t1.Add(time.Minute)))
	f.handle(ctx, sessionEvent(agentcall.SessionEnded, "tun_1", "", t1.Add(time.Minute)))
	f.handle(ctx, sessionEvent(agentcall.SessionRefused, "", "9.0.0", t1.Add(2*time.Minute)))
	f.handle(ctx, sessionEvent(agentcall.SessionStarted, "tun_2", "1.3.0", t1.Add(3*time.Minute)))
	f.handle(ctx, sessionEvent(agentcall.SessionStarted, "tun_3", "1.3.0", t1.Add(4*time.Minute)))

	got := f.list(t, "u1")
	var kinds []string
	for _, r := range got {
		kinds = append(kinds, r.Kind)
		require.Equal(t, protocol.SourceAgent, r.SourceKind)
	}
	require.Equal(t, []string{protocol.ActivityAgentConnected, protocol.ActivityAgentConnected, protocol.ActivityAgentUpdated,
		protocol.ActivityAgentDisconnected, protocol.ActivityAgentConnected}, kinds)
	require.JSONEq(t, `{"agentVersion":"1.2.0","protocolVersion":6,"platform":"sim"}`, string(got[4].Detail))
	require.JSONEq(t, `{"reason":"connection_lost"}`, string(got[3].Detail))
	require.JSONEq(t, `{"from":"1.2.0","to":"1.3.0"}`, string(got[2].Detail))
	require.Equal(t, "session:tun_1:end", got[3].Ref)
	require.Len(t, f.pub.All(), 5)
}

// Each class is trimmed to its cap every TrimEvery entries, at most once
// per TrimInterval per user; the other class is left alone.
func TestRecorderCaps(t *testing.T) {
	t.Parallel()
	f := newFixture(t, activity.Options{TradingCap: 5, AccountCap: 3, TrimEvery: 10, TrimInterval: time.Minute}, "u1")
	ctx := context.Background()
	cfg := placed("config")
	cfg.Kind, cfg.Account = protocol.ActivityConfigChanged, ""
	for range 4 {
		f.handle(ctx, events.Activity("u1", "", cfg))
	}
	for range 9 {
		f.handle(ctx, events.Activity("u1", "", placed("order")))
	}
	require.Len(t, f.list(t, "u1"), 13, "no trim before the 10th entry of the class")
	f.handle(ctx, events.Activity("u1", "", placed("order")))
	require.Len(t, f.list(t, "u1"), 5+4, "the trading class trimmed to its cap; the account class untouched")

	for range 10 {
		f.handle(ctx, events.Activity("u1", "", placed("order")))
	}
	require.Len(t, f.list(t, "u1"), 15+4, "at most one trim a minute per user")
	f.clock.Advance(time.Minute)
	f.handle(ctx, events.Activity("u1", "", placed("order")))
	require.Len(t, f.list(t, "u1"), 5+4, "trimmed at the next entry once the minute is over")
}

// Run forgets the entries older than the retention at its start and
// every PruneEvery; Close stops it.
func TestRecorderRetention(t *testing.T) {
	t.Parallel()
	f := newFixture(t, activity.Options{Retention: 24 * time.Hour, PruneEvery: testkit.Tick}, "u1")
	ctx := context.Background()
	old := placed("old")
	old.At = testkit.Epoch.Add(-25 * time.Hour)
	f.handle(ctx, events.Activity("u1", "", old))
	f.handle(ctx, events.Activity("u1", "", placed("new")))
	require.Len(t, f.list(t, "u1"), 2)

	done := make(chan error, 1)
	go func() { done <- f.rec.Run(ctx) }()
	require.Eventually(t, func() bool {
		got, err := f.s.ListActivity(ctx, "u1", store.ActivityQuery{Limit: 10})
		return err == nil && len(got) == 1 && got[0].Summary == "new"
	}, testkit.Medium, testkit.Tick)
	f.clock.Advance(24*time.Hour + time.Millisecond)
	require.Eventually(t, func() bool {
		got, err := f.s.ListActivity(ctx, "u1", store.ActivityQuery{Limit: 10})
		return err == nil && len(got) == 0
	}, testkit.Medium, testkit.Tick, "pruned again later")
	require.ErrorIs(t, f.rec.Run(ctx), activity.ErrRunning)
	require.NoError(t, f.rec.Close())
	require.NoError(t, <-done)
}

// AlsoPrune runs with each prune, with the same time.
func TestRecorderAlsoPrune(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []time.Time
	f := newFixture(t, activity.Options{Retention: 24 * time.Hour, PruneEvery: testkit.Tick,
		AlsoPrune: func(_ context.Context, before time.Time) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, before)
			return 0, nil
		}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.rec.Run(ctx) }()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) > 0 }, testkit.Medium, testkit.Tick)
	cancel()
	require.NoError(t, <-done)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, testkit.Epoch.Add(-24*time.Hour), got[0])
}

func TestParseEntryID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"act_1", 1, true}, {"act_9223372036854775807", 9223372036854775807, true},
		{"act_0", 0, false}, {"act_01", 0, false}, {"act_", 0, false}, {"act_-1", 0, false}, {"act_1x", 0, false},
		{"1", 0, false}, {"act_9223372036854775808", 0, false}, {"ACT_1", 0, false},
	} {
		got, ok := activity.ParseEntryID(tc.in)
		require.Equal(t, tc.ok, ok, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
}

// A disabled Recorder records nothing.
func TestRecorderDisabled(t *testing.T) {
	t.Parallel()
	f := newFixture(t, activity.Options{Disabled: true}, "u1")
	f.handle(context.Background(), events.Activity("u1", "", placed("order")))
	f.handle(context.Background(), sessionEvent(agentcall.SessionStarted, "tun_1", "1.2.0", testkit.Epoch))
	require.Empty(t, f.list(t, "u1"))
	require.Empty(t, f.pub.All())
}

// countingStore counts the Recorder's transactions.
type countingStore struct {
	activity.Store
	mu    sync.Mutex
	calls int
	gate  chan struct{} // when set, each write waits for a receive
}

func (c *countingStore) AppendActivities(ctx context.Context, entries []store.ActivityAppend) ([]store.ActivityAppended, error) {
	if c.gate != nil {
		<-c.gate
	}
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	return c.Store.AppendActivities(ctx, entries)
}

// The entries that wait while the writer writes are written together, in
// one transaction, in the order they were handed; Close writes what still
// waits before it returns.
func TestRecorderWritesWaitingEntriesTogether(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t, "sqlite")
	ctx := context.Background()
	require.NoError(t, s.CreateUser(ctx, store.User{ID: "u1", Name: "u1", Plan: "pro", CreatedAt: testkit.Epoch}))
	cs := &countingStore{Store: s, gate: make(chan struct{})}
	pub := &eventstest.Collector{}
	rec, err := activity.New(activity.Options{Store: cs, Publisher: pub, Clock: testkit.NewClock(testkit.Epoch)})
	require.NoError(t, err)
	rec.Handle(ctx, events.Activity("u1", "", placed("first")))
	for i := range 300 {
		rec.Handle(ctx, events.Activity("u1", "", placed(fmt.Sprintf("then %d", i))))
	}
	close(cs.gate) // the first write (of "first" alone, or more) goes on
	require.NoError(t, rec.Close())
	got, err := s.ListActivity(ctx, "u1", store.ActivityQuery{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, got, 301, "Close wrote what waited")
	require.Equal(t, "then 299", got[0].Summary)
	require.Equal(t, "first", got[300].Summary, "in order")
	require.LessOrEqual(t, cs.calls, 3, "301 entries in at most 3 transactions (256 at most each)")
	require.Len(t, pub.All(), 301, "each published once")
	rec.Handle(ctx, events.Activity("u1", "", placed("late")))
	require.NoError(t, rec.Flush(ctx))
	got, err = s.ListActivity(ctx, "u1", store.ActivityQuery{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, got, 301, "nothing recorded after Close")
}
