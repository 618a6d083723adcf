package events_test

import (
	"context"
	"fmt"
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
	"tradebridge/relay/agentcall"
	"tradebridge/relay/events"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newBus(t *testing.T, opts events.Options) *events.Bus {
	t.Helper()
	b, err := events.New(opts)
	require.NoError(t, err)
	t.Cleanup(b.Close)
	return b
}

func monitorState(user string, i int) events.Event {
	return events.Agent(user, protocol.Event{Seq: uint64(i), Kind: protocol.EventMonitorState, Data: []byte(`{}`)})
}

// Direct subscribers see their types in the publisher's goroutine, in the
// order they subscribed; remote events only reach those that ask.
func TestDirectSubscribers(t *testing.T) {
	t.Parallel()
	b := newBus(t, events.Options{})
	var got []string
	sub := func(name string, remote bool, types ...events.Type) {
		require.NoError(t, b.Subscribe(events.Subscription{Name: name, Types: types, Remote: remote, Handle: func(e events.Event) {
			got = append(got, fmt.Sprintf("%s:%s:%s:%v", name, e.Type, e.UserID, e.Remote))
		}}))
	}
	sub("cluster", false, events.TypeAgent, events.TypeStatus)
	sub("stream", true, events.TypeAgent, events.TypeStatus)
	sub("history", false, events.TypeSession)

	b.Publish(events.Status("u1", true))
	b.Publish(events.Event{Type: events.TypeAgent, UserID: "u2", Remote: true})
	b.Publish(events.Session(agentcall.SessionEvent{Kind: agentcall.SessionStarted, UserID: "u3"}))
	b.Publish(events.Event{Type: events.TypeBroker, UserID: "u4"}) // nobody takes it
	require.Equal(t, []string{
		"cluster:status:u1:false", "stream:status:u1:false",
		"stream:agent:u2:true",
		"history:session:u3:false",
	}, got)
}

func TestSubscriptionErrors(t *testing.T) {
	t.Parallel()
	b := newBus(t, events.Options{})
	h := func(events.Event) {}
	for _, s := range []events.Subscription{
		{Types: []events.Type{events.TypeAgent}, Handle: h},
		{Name: "x", Handle: h},
		{Name: "x", Types: []events.Type{events.TypeAgent}},
		{Name: "x", Types: []events.Type{99}, Handle: h},
	} {
		require.ErrorIs(t, b.Subscribe(s), events.ErrInvalidSubscription)
	}
	require.NoError(t, b.Subscribe(events.Subscription{Name: "x", Types: []events.Type{events.TypeAgent}, Handle: h}))
	require.ErrorIs(t, b.Subscribe(events.Subscription{Name: "x", Types: []events.Type{events.TypeAgent}, Handle: h}), events.ErrInvalidSubscription, "names are unique")
	b.Close()
	require.ErrorIs(t, b.Subscribe(events.Subscription{Name: "y", Types: []events.Type{events.TypeAgent}, Handle: h}), events.ErrClosed)
}

// A queued subscriber handles each user's events in order, only of its
// kinds.
func TestQueuedOrderAndKinds(t *testing.T) {
	t.Parallel()
	b := newBus(t, events.Options{})
	var mu sync.Mutex
	got := map[string][]uint64{}
	require.NoError(t, b.SubscribeQueued(events.QueuedSubscription{
		Name: "manage", Types: []events.Type{events.TypeAgent}, Kinds: []string{protocol.EventMonitorState}, Workers: 3,
		Handle: func(_ context.Context, e events.Event) {
			mu.Lock()
			got[e.UserID] = append(got[e.UserID], e.Agent.Seq)
			mu.Unlock()
		},
	}))
	for i := range 100 {
		for _, u := range []string{"a", "b", "c"} {
			b.Publish(monitorState(u, i))
		}
		b.Publish(events.Agent("a", protocol.Event{Kind: protocol.EventQuote}))
	}
	require.Eventually(t, func() bool { return b.Stats("manage").Handled == 300 }, testkit.Medium, testkit.Tick)
	mu.Lock()
	defer mu.Unlock()
	for _, u := range []string{"a", "b", "c"} {
		require.Len(t, got[u], 100, u)
		for i, seq := range got[u] {
			require.Equal(t, uint64(i), seq, "user %s in order", u)
		}
	}
}

// One user's flood, handled slowly, neither delays nor drops another
// user's events: theirs are handled within a turn, the flood's excess is
// dropped and counted, and the drops are logged once per interval.
func TestQueuedFairness(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.WarnLevel)
	var dropped atomic.Int64
	b := newBus(t, events.Options{Logger: zap.New(core), Metrics: dropCounter{&dropped}, WarnInterval: time.Hour})
	var handledB, handledFlood atomic.Int64
	release := make(chan struct{})
	require.NoError(t, b.SubscribeQueued(events.QueuedSubscription{
		Name: "manage", Types: []events.Type{events.TypeAgent}, QueueSize: 8,
		Handle: func(ctx context.Context, e events.Event) {
			if e.UserID == "flood" {
				handledFlood.Add(1)
				select { // each of the flood's events takes a while
				case <-release:
				case <-time.After(20 * time.Millisecond):
				case <-ctx.Done():
				}
				return
			}
			handledB.Add(1)
		},
	}))
	for i := range 10_000 {
		b.Publish(monitorState("flood", i))
	}
	start := time.Now()
	for i := range 5 {
		b.Publish(monitorState("b", i))
	}
	require.Eventually(t, func() bool { return handledB.Load() == 5 }, testkit.Medium, testkit.Tick)
	// b's five events each waited behind at most one of the flood's.
	assert.Less(t, time.Since(start), 2*time.Second)
	close(release)

	st := b.Stats("manage")
	// Each of the flood's events was dropped, handled (one each time the
	// worker came back to the flood, slower on a busy machine), or waits
	// (at most 8).
	require.GreaterOrEqual(t, st.Dropped, int64(10_000-8)-handledFlood.Load(), "the flood's excess is dropped")
	require.Equal(t, st.Dropped, dropped.Load(), "and counted in the metrics")
	warns := logs.FilterMessageSnippet("events dropped").All()
	require.Len(t, warns, 1, "one warning per interval")
	require.Equal(t, "manage", warns[0].ContextMap()["subscriber"])
}

// The subscriber's bytes bound all its queues.
func TestQueuedMaxBytes(t *testing.T) {
	t.Parallel()
	b := newBus(t, events.Options{})
	block := make(chan struct{})
	require.NoError(t, b.SubscribeQueued(events.QueuedSubscription{
		Name: "s", Types: []events.Type{events.TypeAgent}, MaxBytes: 10 << 10,
		Handle: func(ctx context.Context, e events.Event) {
			select {
			case <-block:
			case <-ctx.Done():
			}
		},
	}))
	big := make([]byte, 1<<10)
	for i := range 100 {
		b.Publish(events.Agent(fmt.Sprint("u", i), protocol.Event{Kind: protocol.EventConnections, Data: big}))
	}
	st := b.Stats("s")
	require.Greater(t, st.Dropped, int64(80))
	require.Less(t, st.Dropped, int64(100))
	close(block)
}

// Close ends a Handle under way (its ctx), waits for the workers, drops
// later events and may be called again.
func TestClose(t *testing.T) {
	t.Parallel()
	b, err := events.New(events.Options{})
	require.NoError(t, err)
	started := make(chan struct{})
	var ended atomic.Bool
	require.NoError(t, b.SubscribeQueued(events.QueuedSubscription{
		Name: "s", Types: []events.Type{events.TypeAgent},
		Handle: func(ctx context.Context, e events.Event) {
			close(started)
			<-ctx.Done()
			ended.Store(true)
		},
	}))
	var direct atomic.Int64
	require.NoError(t, b.Subscribe(events.Subscription{Name: "d", Types: []events.Type{events.TypeAgent}, Handle: func(events.Event) { direct.Add(1) }}))
	b.Publish(monitorState("u", 1))
	b.Publish(monitorState("u", 2))
	<-started
	b.Close()
	require.True(t, ended.Load())
	b.Publish(monitorState("u", 3))
	require.Equal(t, int64(2), direct.Load(), "nothing after Close")
	b.Close()
}

type dropCounter struct{ n *atomic.Int64 }

func (d dropCounter) EventsDropped(_ string, n int) { d.n.Add(int64(n)) }

// BenchmarkPublishDirect is a quote's cost on the spine with the stream
// and cluster subscribed.
func BenchmarkPublishDirect(b *testing.B) {
	bus, err := events.New(events.Options{})
	require.NoError(b, err)
	defer bus.Close()
	var n atomic.Int64
	for _, name := range []string{"cluster", "stream"} {
		require.NoError(b, bus.Subscribe(events.Subscription{Name: name, Types: []events.Type{events.TypeAgent}, Handle: func(events.Event) { n.Add(1) }}))
	}
	require.NoError(b, bus.SubscribeQueued(events.QueuedSubscription{Name: "manage", Types: []events.Type{events.TypeAgent},
		Kinds: []string{protocol.EventMonitorState}, Handle: func(context.Context, events.Event) {}}))
	e := events.Agent("u", protocol.Event{Kind: protocol.EventQuote, Data: []byte(`{"instrument":"ES 12-26"}`)})
	b.ReportAllocs()
	for b.Loop() {
		bus.Publish(e)
	}
}

// Drain returns once the queued subscribers have handled what waited,
// and what their handlers published meanwhile; it gives up when its
// context ends.
func TestDrain(t *testing.T) {
	t.Parallel()
	b := newBus(t, events.Options{})
	release := make(chan struct{})
	var recorded, alerted atomic.Int64
	require.NoError(t, b.SubscribeQueued(events.QueuedSubscription{Name: "recorder", Types: []events.Type{events.TypeActivity},
		Handle: func(_ context.Context, e events.Event) {
			<-release
			recorded.Add(1)
			b.Publish(events.Event{Type: events.TypeRecorded, UserID: e.UserID})
		}}))
	require.NoError(t, b.SubscribeQueued(events.QueuedSubscription{Name: "alerts", Types: []events.Type{events.TypeRecorded},
		Handle: func(context.Context, events.Event) { alerted.Add(1) }}))
	for i := range 3 {
		b.Publish(events.Activity(fmt.Sprintf("u%d", i), "", protocol.ActivityEntry{}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, b.Drain(ctx), context.DeadlineExceeded, "the recorder is held")
	close(release)
	require.NoError(t, b.Drain(context.Background()))
	require.Equal(t, int64(3), recorded.Load())
	require.Equal(t, int64(3), alerted.Load(), "what the handlers published was drained too")
}
