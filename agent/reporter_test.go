package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/trading/engine"
)

// fakeTunnel is the reporter's tunnel: up or down, with the relay's
// protocol version, recording the events sent.
type fakeTunnel struct {
	mu        sync.Mutex
	connected bool
	version   int
	fail      bool // SendEvent fails, as on a tunnel that just dropped
	events    []protocol.Event
}

func (f *fakeTunnel) Connected() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.connected
}

func (f *fakeTunnel) RelayProtocolVersion() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.version
}

func (f *fakeTunnel) SendEvent(kind string, data any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail || !f.connected {
		return errors.New("tunnel: not connected")
	}
	var raw []byte
	if e, ok := data.(protocol.ActivityEntry); ok {
		raw = []byte(e.ID) // the id is what the tests compare
	}
	f.events = append(f.events, protocol.Event{Kind: kind, Data: raw})
	return nil
}

func (f *fakeTunnel) set(connected bool, version int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.connected, f.version = connected, version
}

// activity returns the ids of the EventActivity sent, in order.
func (f *fakeTunnel) activity() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for _, e := range f.events {
		if e.Kind == protocol.EventActivity {
			ids = append(ids, string(e.Data))
		}
	}
	return ids
}

// testReporter is a reporter over store and a fake tunnel, on a clock the
// test sets.
type testReporter struct {
	*reporter
	tun *fakeTunnel
	now time.Time
}

func newTestReporter(t *testing.T, store engine.Store, connected bool, version int) *testReporter {
	t.Helper()
	tr := &testReporter{tun: &fakeTunnel{connected: connected, version: version},
		now: time.Now()}
	tr.reporter = newReporter(zap.NewNop(), store)
	tr.activity.now = func() time.Time { return tr.now }
	tr.tunnel = tr.tun
	return tr
}

// report makes an activity report and returns its id.
func (tr *testReporter) report() string {
	e := engine.NewActivity(tr.now, protocol.ActivityMonitorTripped, "Sim101",
		protocol.ActivitySource{Kind: protocol.SourceMonitor, ID: "Sim101"}, "Monitor stopped trading", nil)
	tr.ReportActivity(e)
	return e.ID
}

// connect is a new connection: the reporter sends everything again.
func (tr *testReporter) connect(version int) {
	tr.tun.set(true, version)
	tr.resendAll()
	tr.flush()
}

func keys(t *testing.T, s engine.Store) []string {
	t.Helper()
	m, err := s.Load(OutboxBucket)
	require.NoError(t, err)
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestActivityOutbox(t *testing.T) {
	t.Parallel()
	t.Run("sent at once while connected, again after every connect", func(t *testing.T) {
		t.Parallel()
		r := newTestReporter(t, engine.NewMemStore(), true, protocol.ProtocolVersion)
		a := r.report()
		r.flush()
		require.Equal(t, []string{a}, r.tun.activity())
		b := r.report()
		r.flush()
		r.flush()
		require.Equal(t, []string{a, b}, r.tun.activity(), "each once on a connection")

		r.tun.set(false, 0)
		c := r.report()
		r.flush()
		require.Equal(t, []string{a, b}, r.tun.activity(), "nothing while down")
		r.connect(protocol.ProtocolVersion)
		require.Equal(t, []string{a, b, a, b, c}, r.tun.activity(), "every kept report again, with its id")
	})
	t.Run("a report whose send failed goes after the next connect", func(t *testing.T) {
		t.Parallel()
		r := newTestReporter(t, engine.NewMemStore(), true, protocol.ProtocolVersion)
		r.tun.fail = true
		a := r.report()
		r.flush()
		require.Empty(t, r.tun.activity())
		r.tun.fail = false
		r.connect(protocol.ProtocolVersion)
		require.Equal(t, []string{a}, r.tun.activity())
	})
	t.Run("not sent to a relay of version 5", func(t *testing.T) {
		t.Parallel()
		r := newTestReporter(t, engine.NewMemStore(), true, 5)
		r.ReportMonitor(protocol.MonitorState{Account: "Sim101", State: protocol.MonitorStopped})
		a := r.report()
		r.flush()
		require.Empty(t, r.tun.activity())
		require.Len(t, r.tun.events, 1, "the monitor's state is sent")
		r.connect(protocol.ActivityProtocolVersion)
		require.Equal(t, []string{a}, r.tun.activity(), "kept for a relay that records it")
	})
	t.Run("bounded by count, the oldest dropped first", func(t *testing.T) {
		t.Parallel()
		store := engine.NewMemStore()
		r := newTestReporter(t, store, false, 0)
		r.activity.maxCount = 3
		var ids []string
		for range 5 {
			ids = append(ids, r.report())
			r.now = r.now.Add(time.Second)
		}
		r.flush()
		require.ElementsMatch(t, ids[2:], keys(t, store), "the Store keeps the same three")
		r.connect(protocol.ProtocolVersion)
		require.Equal(t, ids[2:], r.tun.activity())
	})
	t.Run("bounded by age", func(t *testing.T) {
		t.Parallel()
		store := engine.NewMemStore()
		r := newTestReporter(t, store, false, 0)
		old := r.report()
		r.flush()
		r.now = r.now.Add(outboxMaxAge - time.Second)
		young := r.report()
		r.flush()
		require.ElementsMatch(t, []string{old, young}, keys(t, store))
		r.now = r.now.Add(2 * time.Second)
		r.connect(protocol.ProtocolVersion)
		require.Equal(t, []string{young}, r.tun.activity())
		require.Equal(t, []string{young}, keys(t, store))
	})
	t.Run("a report made offline survives a restart", func(t *testing.T) {
		t.Parallel()
		store := engine.NewMemStore()
		first := newTestReporter(t, store, false, 0)
		a := first.report()
		first.now = first.now.Add(time.Millisecond)
		b := first.report()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- first.run(ctx) }()
		cancel() // the agent stops before it reached the relay
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(testkit.Long):
			t.Fatal("the reporter did not stop")
		}
		require.ElementsMatch(t, []string{a, b}, keys(t, store))

		again := newTestReporter(t, store, false, 0)
		again.connect(protocol.ProtocolVersion)
		require.Equal(t, []string{a, b}, again.tun.activity(), "in the order they were made")
	})
	t.Run("an unreadable record is dropped", func(t *testing.T) {
		t.Parallel()
		store := engine.NewMemStore()
		require.NoError(t, store.Put(OutboxBucket, "x", []byte("{")))
		r := newTestReporter(t, store, true, protocol.ProtocolVersion)
		r.flush()
		require.Empty(t, keys(t, store))
		require.Empty(t, r.tun.activity())
	})
}

func BenchmarkReportActivity(b *testing.B) {
	r := newReporter(zap.NewNop(), nil)
	r.activity.maxCount = 100
	e := engine.NewActivity(time.Now(), protocol.ActivityCopierCopied, "A", protocol.ActivitySource{Kind: protocol.SourceCopier}, "x", nil)
	for i := 0; b.Loop(); i++ {
		e.ID = fmt.Sprint(i)
		r.ReportActivity(e)
	}
}
