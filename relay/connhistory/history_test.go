package connhistory_test

import (
	"context"
	"encoding/json"
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
	"tradebridge/relay/agentcall"
	"tradebridge/relay/connhistory"
	"tradebridge/relay/store"
	"tradebridge/relay/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)

// openStore opens a fresh SQLite store with the user u1.
func openStore(t *testing.T) store.Store { return openBackend(t, "sqlite") }

// openBackend opens a fresh store of the backend with the user u1.
func openBackend(t *testing.T, backend string) store.Store {
	t.Helper()
	st := storetest.Open(t, backend)
	require.NoError(t, st.CreateUser(context.Background(), store.User{ID: "u1", Name: "u1", Plan: "pro", CreatedAt: t0}))
	return st
}

// run starts w.Run and returns a stop that ends it and returns its error.
func run(t *testing.T, w *connhistory.Writer) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func sessions(t *testing.T, st store.Store) []store.AgentSession {
	t.Helper()
	got, err := st.AgentSessions(context.Background(), "u1", t0.Add(-365*24*time.Hour), 100)
	assert.NoError(t, err) // no require: Eventually's conditions call it
	return got
}

// The hub's entries are written in order: a session's start, its
// diagnostics and its end, and a refused handshake; what is queued when
// Run stops is written before it returns.
func TestWriterWritesTheHistory(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	w, err := connhistory.New(connhistory.Options{Store: st, Node: "node-a", Now: func() time.Time { return t0 }})
	require.NoError(t, err)
	stop := run(t, w)

	diag := json.RawMessage(`{"agentVersion":"1.2.3"}`)
	w.Record(agentcall.SessionEvent{Kind: agentcall.SessionStarted, UserID: "u1", SessionID: "tun_1", At: t0, AgentVersion: "1.2.3",
		ProtocolVersion: 5, Platform: "sim", RemoteAddr: "192.0.2.7"})
	w.Record(agentcall.SessionEvent{Kind: agentcall.SessionDiagnostics, UserID: "u1", SessionID: "tun_1", At: t0.Add(time.Second), Diagnostics: diag})
	w.Record(agentcall.SessionEvent{Kind: agentcall.SessionRefused, UserID: "u1", At: t0.Add(time.Minute), Reason: agentcall.ReasonVersionUnsupported,
		ProtocolVersion: 9, RemoteAddr: "192.0.2.8"})
	w.Record(agentcall.SessionEvent{Kind: agentcall.SessionEnded, UserID: "u1", SessionID: "tun_1", At: t0.Add(time.Hour), Reason: agentcall.ReasonReplaced})
	w.Record(agentcall.SessionEvent{Kind: agentcall.SessionEnded, UserID: "u1", SessionID: "tun_never_started", At: t0, Reason: agentcall.ReasonReplaced})
	require.NoError(t, stop())

	require.Equal(t, []store.AgentSession{
		{UserID: "u1", ConnectedAt: t0.Add(time.Minute), DisconnectedAt: t0.Add(time.Minute), Reason: agentcall.ReasonVersionUnsupported,
			ProtocolVersion: 9, RemoteAddr: "192.0.2.8", Node: "node-a"},
		{SessionID: "tun_1", UserID: "u1", ConnectedAt: t0, DisconnectedAt: t0.Add(time.Hour), Reason: agentcall.ReasonReplaced,
			AgentVersion: "1.2.3", ProtocolVersion: 5, Platform: "sim", RemoteAddr: "192.0.2.7", Node: "node-a"},
	}, sessions(t, st))
	d, err := st.LatestAgentDiagnostics(context.Background(), "u1")
	require.NoError(t, err)
	require.Equal(t, store.StoredDiagnostics{SessionID: "tun_1", JSON: diag, At: t0.Add(time.Second)}, d)
	require.Zero(t, w.Dropped())
}

// At its start the writer closes what a previous run of its node left
// open, at the start's time, and forgets what ended before the retention;
// then it prunes again every PruneEvery. Another node's live sessions stay
// open. It runs on every store backend.
func TestWriterStartClosesLeftOpenAndPrunes(t *testing.T) {
	t.Parallel()
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			writerStartClosesLeftOpenAndPrunes(t, openBackend(t, backend))
		})
	}
}

func writerStartClosesLeftOpenAndPrunes(t *testing.T, st store.Store) {
	ctx := context.Background()
	old := t0.Add(-31 * 24 * time.Hour)
	require.NoError(t, st.AddAgentSession(ctx, store.AgentSession{SessionID: "tun_old", UserID: "u1", ConnectedAt: old}))
	require.NoError(t, st.EndAgentSession(ctx, "tun_old", old.Add(time.Hour), agentcall.ReasonAgentClosed))
	require.NoError(t, st.AddAgentSession(ctx, store.AgentSession{SessionID: "tun_open", UserID: "u1", ConnectedAt: t0.Add(-time.Hour), Node: "node-a"}))
	require.NoError(t, st.AddAgentSession(ctx, store.AgentSession{SessionID: "tun_other", UserID: "u1", ConnectedAt: t0.Add(-2 * time.Hour), Node: "node-b"}))
	require.NoError(t, st.AddAgentSession(ctx, store.AgentSession{SessionID: "tun_ok", UserID: "u1", ConnectedAt: t0.Add(-29 * 24 * time.Hour)}))
	require.NoError(t, st.EndAgentSession(ctx, "tun_ok", t0.Add(-29*24*time.Hour), agentcall.ReasonAgentClosed))

	var now atomic.Int64
	now.Store(t0.UnixMilli())
	w, err := connhistory.New(connhistory.Options{Store: st, Node: "node-a", PruneEvery: 10 * time.Millisecond,
		Now: func() time.Time { return time.UnixMilli(now.Load()).UTC() }})
	require.NoError(t, err)
	run(t, w)
	require.Eventually(t, func() bool { return len(sessions(t, st)) == 3 }, testkit.Medium, 5*time.Millisecond)
	got := sessions(t, st)
	require.Equal(t, "tun_open", got[0].SessionID)
	require.Equal(t, agentcall.ReasonRelayStopped, got[0].Reason)
	require.Equal(t, t0, got[0].DisconnectedAt, "closed at the start's time")
	require.Equal(t, "tun_other", got[1].SessionID)
	require.True(t, got[1].DisconnectedAt.IsZero(), "another node's live session stays open")
	require.Empty(t, got[1].Reason)
	require.Equal(t, "tun_ok", got[2].SessionID)

	// A day later, the hourly pruning forgets tun_ok.
	now.Store(t0.Add(2 * 24 * time.Hour).UnixMilli())
	require.Eventually(t, func() bool { return len(sessions(t, st)) == 2 }, testkit.Medium, 5*time.Millisecond)
	require.Equal(t, []string{"tun_open", "tun_other"}, []string{sessions(t, st)[0].SessionID, sessions(t, st)[1].SessionID})
}

// blockingStore holds every write until released.
type blockingStore struct {
	connhistory.Store
	release chan struct{}
	writes  atomic.Int64
}

func (b *blockingStore) AddAgentSession(ctx context.Context, s store.AgentSession) error {
	<-b.release
	b.writes.Add(1)
	return nil
}

// Record never waits for the store: a full queue drops entries, counts
// them and warns with the count.
func TestRecordNeverBlocks(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	bs := &blockingStore{Store: st, release: make(chan struct{})}
	core, logs := observer.New(zapcore.WarnLevel)
	w, err := connhistory.New(connhistory.Options{Store: bs, QueueSize: 4, Logger: zap.New(core)})
	require.NoError(t, err)
	stop := run(t, w)

	start := time.Now()
	for range 20 {
		w.Record(agentcall.SessionEvent{Kind: agentcall.SessionRefused, UserID: "u1", At: t0, Reason: agentcall.ReasonBadHandshake})
	}
	require.Less(t, time.Since(start), time.Second, "Record did not wait")
	// One entry is being written, 4 are queued: 15 were dropped.
	require.Eventually(t, func() bool { return w.Dropped() >= 15 }, testkit.Medium, time.Millisecond)
	dropped := w.Dropped()
	require.LessOrEqual(t, dropped, int64(16))
	close(bs.release)
	require.NoError(t, stop())
	require.Equal(t, 20-dropped, bs.writes.Load(), "what was queued was written")
	warned := logs.FilterMessage("connection history entries dropped: the queue was full").All()
	require.NotEmpty(t, warned)
	var total int64
	for _, e := range warned {
		total += e.ContextMap()["dropped"].(int64)
	}
	require.Equal(t, dropped, total, "every drop is counted in a warning")
}

// Close stops Run and is idempotent; a Writer runs once.
func TestWriterCloseAndRunOnce(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	w, err := connhistory.New(connhistory.Options{Store: st})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	w.Record(agentcall.SessionEvent{Kind: agentcall.SessionStarted, UserID: "u1", SessionID: "tun_1", At: t0})
	require.Eventually(t, func() bool { return len(sessions(t, st)) == 1 }, testkit.Medium, 5*time.Millisecond)
	require.NoError(t, w.Close())
	require.NoError(t, <-done)
	require.NoError(t, w.Close(), "idempotent")
	require.ErrorIs(t, w.Run(context.Background()), connhistory.ErrRunning)

	unused, err := connhistory.New(connhistory.Options{Store: st})
	require.NoError(t, err)
	require.NoError(t, unused.Close(), "closing a writer that never ran")
	_, err = connhistory.New(connhistory.Options{})
	require.Error(t, err)
}
