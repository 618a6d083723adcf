package tradecall_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/store"
	"tradebridge/relay/tradecall"
)

// recordingCaller answers every call with err (or a fixed result) and
// records the request ids it was called under.
type recordingCaller struct {
	mu  sync.Mutex
	ids []string
	err error
}

func (c *recordingCaller) Call(_ context.Context, _, _, requestID string, _ json.RawMessage) (json.RawMessage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids = append(c.ids, requestID)
	if c.err != nil {
		return nil, c.err
	}
	return json.RawMessage(`{"orderId":"o-1"}`), nil
}

func (c *recordingCaller) IDs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.ids...)
}

func openStore(t *testing.T) *store.SQLite {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	require.NoError(t, st.CreateUser(context.Background(), store.User{ID: "usr", Name: "usr", Plan: "pro", CreatedAt: time.Now()}))
	return st
}

// A namespace keeps one family's keys apart from another's in the one
// store: the same key runs once per family, each under its own stored key
// and request id; the empty namespace keeps the keys and request ids of
// before namespaces.
func TestKeyedWritesNamespace(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	args := json.RawMessage(`{"account":"A","action":"Buy"}`)
	caller := &recordingCaller{}
	run := func(ns string) tradecall.Outcome {
		k, err := tradecall.NewKeyedWrites(tradecall.KeyedOptions{Store: st, Caller: caller, Namespace: ns})
		require.NoError(t, err)
		return k.Run(t.Context(), "usr", protocol.FnPlaceOrder, "key:k1", args)
	}
	for _, tc := range []struct {
		ns       string
		replayed bool
		ids      []string
	}{
		{"", false, []string{"idem:key:k1"}},
		{"tv", false, []string{"idem:key:k1", "idem:tv:key:k1"}},
		{"", true, []string{"idem:key:k1", "idem:tv:key:k1"}},
		{"tv", true, []string{"idem:key:k1", "idem:tv:key:k1"}},
	} {
		o := run(tc.ns)
		require.Nil(t, o.Err)
		require.Equal(t, tc.replayed, o.Replayed, "namespace %q", tc.ns)
		require.Equal(t, tc.ids, caller.IDs(), "namespace %q", tc.ns)
	}
	// The stored keys are "key:k1" (as before namespaces) and "tv:key:k1".
	for _, key := range []string{"key:k1", "tv:key:k1"} {
		got, claimed, err := st.ClaimIdempotent(t.Context(), store.Idempotent{UserID: "usr", Key: key, Fingerprint: "other", CreatedAt: time.Now()},
			time.Now().Add(-time.Hour), time.Now().Add(-tradecall.IdempotencyTTL))
		require.NoError(t, err)
		require.False(t, claimed, key)
		require.Equal(t, store.IdemDone, got.State, key)
	}

	for _, ns := range []string{"TV", "t v", "tv:", "abcdefghijklmnopq", "tv/1"} {
		_, err := tradecall.NewKeyedWrites(tradecall.KeyedOptions{Store: st, Caller: caller, Namespace: ns})
		require.Error(t, err, ns)
		require.NotContains(t, err.Error(), ns)
	}
}

// A done record the relay cannot read (not {"v":2,…}) answers 500
// internal_error and never runs the write again: it ran.
func TestKeyedWritesUnreadableRecord(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"success":true,"data":{"orderId":"o-1"}}`,
		`{"v":3,"fn":"PlaceOrder","result":{}}`,
		`{"v":2,"result":{}}`,
		`not json`,
		``,
	} {
		st := openStore(t)
		caller := &recordingCaller{}
		k, err := tradecall.NewKeyedWrites(tradecall.KeyedOptions{Store: st, Caller: caller})
		require.NoError(t, err)
		args := json.RawMessage(`{"account":"A","action":"Buy"}`)
		require.Nil(t, k.Run(t.Context(), "usr", protocol.FnPlaceOrder, "key:k1", args).Err)

		// The record as the store holds it, its body replaced.
		now := time.Now()
		got, claimed, err := st.ClaimIdempotent(t.Context(), store.Idempotent{UserID: "usr", Key: "key:k1", Fingerprint: "other", CreatedAt: now},
			now.Add(-time.Hour), now.Add(-tradecall.IdempotencyTTL))
		require.NoError(t, err)
		require.False(t, claimed)
		got.State, got.Status, got.Body, got.UpdatedAt = store.IdemDone, http.StatusOK, []byte(body), now
		require.NoError(t, st.FinishIdempotent(t.Context(), got))

		o := k.Run(t.Context(), "usr", protocol.FnPlaceOrder, "key:k1", args)
		require.NotNil(t, o.Err, "%q", body)
		require.Equal(t, http.StatusInternalServerError, o.Err.Status, "%q", body)
		require.Equal(t, errcode.InternalError, o.Err.Code, "%q", body)
		require.True(t, o.Replayed, "%q", body)
		require.Len(t, caller.IDs(), 1, "%q: the write ran once", body)
	}
}

// An *httpapi.Error of the Caller is answered as it is; one saying the
// target is unavailable (408, 503) is recorded as unknown, so that a
// retry runs again, while any other is the recorded outcome.
func TestKeyedWritesPassedError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		err   *httpapi.Error
		again bool // a retry runs the write again
	}{
		{"unavailable", &httpapi.Error{Status: http.StatusServiceUnavailable, Code: "broker_unavailable", Detail: "the broker cannot be reached", RetryAfter: 30}, true},
		{"timeout", &httpapi.Error{Status: http.StatusRequestTimeout, Code: "some_timeout"}, true},
		{"refused", &httpapi.Error{Status: http.StatusForbidden, Code: "plan_required", Detail: "no"}, false},
		{"rejected", &httpapi.Error{Status: http.StatusBadRequest, Code: "tradovate_max_pos_limit_reached", Detail: "limit"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			caller := &recordingCaller{err: fmt.Errorf("broker: %w", tc.err)}
			k, err := tradecall.NewKeyedWrites(tradecall.KeyedOptions{Store: openStore(t), Caller: caller, Namespace: "tv"})
			require.NoError(t, err)
			for i := range 2 {
				o := k.Run(t.Context(), "usr", protocol.FnPlaceOrder, "key:k", json.RawMessage(`{}`))
				require.NotNil(t, o.Err)
				require.Equal(t, tc.err.Status, o.Err.Status)
				require.Equal(t, tc.err.Code, o.Err.Code)
				require.Equal(t, tc.err.Detail, o.Err.Detail)
				require.Equal(t, tc.err.RetryAfter, o.Err.RetryAfter)
				require.Equal(t, i == 1 && !tc.again, o.Replayed)
			}
			calls := 1
			if tc.again {
				calls = 2
			}
			require.Len(t, caller.IDs(), calls)
		})
	}
}

// CallError answers an *httpapi.Error found in the chain as it is, before
// anything else it maps.
func TestCallErrorPassesHTTPErrors(t *testing.T) {
	t.Parallel()
	he := &httpapi.Error{Status: http.StatusServiceUnavailable, Code: "broker_unavailable", Detail: "the broker asks for a captcha", RetryAfter: 60,
		Fields: []httpapi.FieldError{{Path: "x", Code: "y"}}}
	for _, tc := range []struct {
		name  string
		err   error
		write bool
		want  httpapi.Error
		ok    bool
	}{
		{"bare", he, true, *he, true},
		{"wrapped", fmt.Errorf("a: %w", fmt.Errorf("b: %w", he)), false, *he, true},
		{"beside a hub error", errors.Join(agentcall.ErrTimeout, he), true, *he, true},
		{"a protocol error still maps", protocol.NewError(protocol.CodeNotSupported, "no bars"), false,
			httpapi.Error{Status: http.StatusBadRequest, Code: protocol.CodeNotSupported, Detail: "no bars"}, true},
		{"a hub error still maps", agentcall.ErrNotConnected, false,
			httpapi.Error{Status: http.StatusRequestTimeout, Code: errcode.AddonDisconnected, Detail: "the trading add-on is not connected: start the agent next to the platform"}, true},
		{"anything else is not ours", errors.New("bug"), true, httpapi.Error{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := tradecall.CallError(tc.err, tc.write)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want.Status, got.Status)
			require.Equal(t, tc.want.Code, got.Code)
			require.Equal(t, tc.want.Detail, got.Detail)
			require.Equal(t, tc.want.RetryAfter, got.RetryAfter)
			require.Equal(t, tc.want.Fields, got.Fields)
		})
	}
}

// crashedStore is the store of a relay killed after it called the agent
// and before it recorded the outcome: the record stays running.
type crashedStore struct{ *store.SQLite }

func (crashedStore) FinishIdempotent(context.Context, store.Idempotent) error {
	return errors.New("the relay was killed")
}

// A repeat of a keyed write whose relay was killed mid-call is answered
// 409 request_in_progress with retryAfter the seconds until the record
// goes stale (StaleAfter after the claim, rounded up, at least 1); after
// that the repeat takes the record over and runs under the same request
// id, which the agent answers from its memory. A repeat of a write that
// runs in this process is told to retry in 1 s.
func TestKeyedWritesInProgressSaysWhenToRetry(t *testing.T) {
	t.Parallel()
	// A key of its own: which writes run in this process is
	// known process-wide, and the parallel tests share the process.
	st := openStore(t)
	clock := testkit.NewClock(testkit.Epoch)
	caller := &recordingCaller{}
	killed, err := tradecall.NewKeyedWrites(tradecall.KeyedOptions{Store: crashedStore{st}, Caller: caller, Now: clock.Now})
	require.NoError(t, err)
	args := json.RawMessage(`{"account":"Sim101","quantity":1}`)
	o := killed.Run(context.Background(), "usr", protocol.FnPlaceOrder, "key:killed-relay", args)
	require.Nil(t, o.Err, "the call ran; its outcome was never recorded")

	restarted, err := tradecall.NewKeyedWrites(tradecall.KeyedOptions{Store: st, Caller: caller, Now: clock.Now})
	require.NoError(t, err)
	require.Equal(t, 60*time.Second, restarted.StaleAfter())
	for _, tc := range []struct {
		at    time.Duration
		retry int
	}{
		{0, 60},
		{10 * time.Second, 50},
		{10*time.Second + 400*time.Millisecond, 50},
		{59*time.Second + 500*time.Millisecond, 1},
		{60 * time.Second, 1},
	} {
		clock.Set(testkit.Epoch.Add(tc.at))
		o := restarted.Run(context.Background(), "usr", protocol.FnPlaceOrder, "key:killed-relay", args)
		require.NotNil(t, o.Err, "at %v", tc.at)
		require.Equal(t, errcode.RequestInProgress, o.Err.Code, "at %v", tc.at)
		require.Equal(t, http.StatusConflict, o.Err.Status)
		require.Equal(t, tc.retry, o.Err.RetryAfter, "at %v", tc.at)
	}
	require.Len(t, caller.IDs(), 1, "no repeat ran while the record was running")

	clock.Set(testkit.Epoch.Add(60*time.Second + time.Millisecond))
	o = restarted.Run(context.Background(), "usr", protocol.FnPlaceOrder, "key:killed-relay", args)
	require.Nil(t, o.Err, "the stale record is taken over")
	require.Equal(t, []string{"idem:key:killed-relay", "idem:key:killed-relay"}, caller.IDs(), "under the same request id")

	// A write running in this process: retry at once.
	release := make(chan struct{})
	started := make(chan struct{})
	slow, err := tradecall.NewKeyedWrites(tradecall.KeyedOptions{Store: st, Now: clock.Now,
		Caller: callerFunc(func(context.Context) (json.RawMessage, error) {
			close(started)
			<-release
			return json.RawMessage(`{"orderId":"o-2"}`), nil
		})})
	require.NoError(t, err)
	done := make(chan tradecall.Outcome, 1)
	go func() { done <- slow.Run(context.Background(), "usr", protocol.FnPlaceOrder, "key:k-2", args) }()
	<-started
	o = restarted.Run(context.Background(), "usr", protocol.FnPlaceOrder, "key:k-2", args)
	close(release)
	require.NotNil(t, o.Err)
	require.Equal(t, errcode.RequestInProgress, o.Err.Code)
	require.Equal(t, 1, o.Err.RetryAfter)
	require.Nil(t, (<-done).Err)
}

// callerFunc is a Caller of one function.
type callerFunc func(ctx context.Context) (json.RawMessage, error)

func (f callerFunc) Call(ctx context.Context, _, _, _ string, _ json.RawMessage) (json.RawMessage, error) {
	return f(ctx)
}
