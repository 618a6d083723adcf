package tradeapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/errcode"
	"tradebridge/relay/store"
	"tradebridge/relay/tradeapi"
	"tradebridge/relay/tradecall"
)

// spyStore records what is finished in the store it wraps, and fails on
// demand.
type spyStore struct {
	tradecall.IdempotencyStore
	mu        sync.Mutex
	finished  []store.Idempotent
	claimErr  error
	finishErr error
}

func (s *spyStore) ClaimIdempotent(ctx context.Context, rec store.Idempotent, stale, expired time.Time) (store.Idempotent, bool, error) {
	s.mu.Lock()
	err := s.claimErr
	s.mu.Unlock()
	if err != nil {
		return store.Idempotent{}, false, err
	}
	return s.IdempotencyStore.ClaimIdempotent(ctx, rec, stale, expired)
}

func (s *spyStore) FinishIdempotent(ctx context.Context, rec store.Idempotent) error {
	s.mu.Lock()
	s.finished = append(s.finished, rec)
	err := s.finishErr
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.IdempotencyStore.FinishIdempotent(ctx, rec)
}

func (s *spyStore) last() store.Idempotent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.finished[len(s.finished)-1]
}

// newKeyedEnv is the HTTP API on a spied store, and a KeyedWrites (the
// socket's door) on the same store and agent.
func newKeyedEnv(t *testing.T) (*env, *spyStore, *tradecall.KeyedWrites) {
	var spy *spyStore
	e := newEnv(t, func(o *tradeapi.Options) {
		spy = &spyStore{IdempotencyStore: o.Idempotency}
		o.Idempotency = spy
	})
	kw, err := tradecall.NewKeyedWrites(tradecall.KeyedOptions{Store: spy, Caller: e.agent})
	require.NoError(t, err)
	return e, spy, kw
}

// socketRun runs a WebSocket rpc frame's api and args as package stream
// does for a keyed write.
func socketRun(t *testing.T, kw *tradecall.KeyedWrites, user, fn, args string) tradecall.Outcome {
	t.Helper()
	c, e := tradecall.PrepareSocketCall(fn, json.RawMessage(args))
	require.Nil(t, e)
	require.True(t, c.Write)
	require.NotEmpty(t, c.Key)
	return kw.Run(context.Background(), user, c.Fn, c.Key, c.Args)
}

// The same write reads as the same request whichever door it came in by:
// a key used over the socket replays over HTTP, and the other way round,
// whatever the route, the casing, aliases or the order of members.
func TestKeyedWriteIsTheSameRequestOnEitherDoor(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		fn, args   string // the socket's frame
		path, body string // the HTTP request
		header     string // the Idempotency-Key header, if any
	}{
		{"PlaceOrder by key", "PlaceOrder", `{"account":"Sim101","action":"Buy","instrument":"ES","orderType":"Limit","limitPrice":5000.25,"quantity":1,"timeInForce":"Gtc","idempotencyKey":"k-1"}`,
			"/v1/api/accounts/Sim101/orders/place", `{"timeInForce":"GTC","quantity":1,"limitPrice":5000.250,"orderType":"limit","instrument":"ES","action":"BUY"}`, "k-1"},
		{"PlaceOrder by orderId", "PlaceOrder", `{"account":"Sim101","action":"Sell","instrument":"ES","orderType":"Market","quantity":2,"timeInForce":"Day","orderId":"mine-1"}`,
			"/v1/api/accounts/Sim101/orders/place", `{"orderId":"mine-1","action":"sell","instrument":"ES","orderType":"market","quantity":2,"timeInForce":"day"}`, ""},
		{"ReversePosition by orderId", "ReversePosition", `{"account":"Sim101","instrument":"ES","action":"Buy","quantity":1,"orderType":"Market","timeInForce":"Day","orderId":"rev-1"}`,
			"/v1/api/accounts/Sim101/positions/reverseposition", `{"instrument":"ES","action":"Buy","quantity":1,"orderType":"Market","timeInForce":"Day","orderId":"rev-1"}`, ""},
		{"CancelAllOrders without body", "CancelAllOrders", `{"idempotencyKey":"k-c"}`, "/v1/api/orders/cancelall", "", "k-c"},
		{"FlattenEverything", "Flatten", `{"idempotencyKey":"k-fe"}`, "/v1/api/positions/flatten", "", "k-fe"},
		{"Flatten by another route", "Flatten", `{"account":"Sim101","instrument":"ES","idempotencyKey":"k-f"}`,
			"/v1/api/accounts/Sim101/positions/flatten", `{"instrument":"ES"}`, "k-f"},
		{"ChangeOrder path parameters", "ChangeOrder", `{"account":"Sim101","orderId":"o-9","limitPrice":4999.5,"idempotencyKey":"k-ch"}`,
			"/v1/api/accounts/Sim101/orders/o-9/change", `{"limitPrice":4999.5}`, "k-ch"},
		{"StartStrategy alias and nested object", "StartStrategy", `{"account":"Sim101","strategyClass":"SampleMACrossOver","instrument":"ES","parameters":{"b":1,"a":{"y":2,"x":3}},"idempotencyKey":"k-s"}`,
			"/v1/api/accounts/Sim101/strategies/start", `{"parameters":{"a":{"x":3,"y":2},"b":1},"instrument":"ES","strategy_class":"SampleMACrossOver"}`, "k-s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, _, kw := newKeyedEnv(t)
			var hdr []string
			if tc.header != "" {
				hdr = []string{tradeapi.IdempotencyKeyHeader, tc.header}
			}
			// Socket first, then HTTP.
			o := socketRun(t, kw, "usr_pro", tc.fn, tc.args)
			require.Nil(t, o.Err)
			require.False(t, o.Replayed)
			r := e.do("POST", tc.path, "tb_api_pro", tc.body, hdr...)
			require.Equal(t, http.StatusOK, r.Status, r.Raw)
			require.Equal(t, "true", r.Header.Get(tradeapi.ReplayedHeader), r.Raw)
			require.Len(t, e.agent.all(), 1)
			// HTTP first (another user: another key space), then the socket.
			r = e.do("POST", tc.path, "tb_api_pro2", tc.body, hdr...)
			require.Equal(t, http.StatusOK, r.Status, r.Raw)
			require.Empty(t, r.Header.Get(tradeapi.ReplayedHeader))
			o = socketRun(t, kw, "usr_pro2", tc.fn, tc.args)
			require.Nil(t, o.Err)
			require.True(t, o.Replayed)
			calls := e.agent.all()
			require.Len(t, calls, 2)
			require.Equal(t, calls[0].RequestID, calls[1].RequestID)
			require.True(t, strings.HasPrefix(calls[0].RequestID, "idem:"))
		})
	}
}

// The record is transport-neutral: the function and the agent's raw
// result, or the error; outcomes nobody learnt are unknown and hold
// nothing.
func TestOutcomeRecord(t *testing.T) {
	t.Parallel()
	const place = `{"account":"Sim101","action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day","idempotencyKey":"k"}`
	cases := []struct {
		name   string
		reply  func() (json.RawMessage, error)
		cancel bool // the caller leaves during the call
		state  string
		status int
		body   string
		code   string
	}{
		{"success", func() (json.RawMessage, error) { return json.RawMessage(`{"orderId":"o-1","status":"Filled"}`), nil },
			false, store.IdemDone, 200, `{"v":2,"fn":"PlaceOrder","result":{"orderId":"o-1","status":"Filled"}}`, ""},
		{"agent refusal", func() (json.RawMessage, error) {
			return nil, protocol.NewError(protocol.CodeOrderRejected, "market is closed")
		},
			false, store.IdemDone, 400, `{"v":2,"error":{"status":400,"code":"order_rejected","detail":"market is closed"}}`, "order_rejected"},
		{"outcome unknown", func() (json.RawMessage, error) { return nil, agentcall.ErrConnectionLost },
			false, store.IdemUnknown, 0, "", errcode.OutcomeUnknown},
		{"agent away", func() (json.RawMessage, error) { return nil, agentcall.ErrNotConnected },
			false, store.IdemUnknown, 0, "", errcode.AddonDisconnected},
		{"agent still runs the first try", func() (json.RawMessage, error) {
			return nil, protocol.NewError(protocol.CodeRequestInProgress, "a write with this request id is still running")
		}, false, store.IdemUnknown, 0, "", errcode.RequestInProgress},
		{"relay failure", func() (json.RawMessage, error) { return nil, errors.New("boom") },
			false, store.IdemUnknown, 0, "", errcode.InternalError},
		{"caller gone", func() (json.RawMessage, error) { return nil, context.Canceled },
			true, store.IdemUnknown, 0, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, spy, kw := newKeyedEnv(t)
			ctx, cancel := context.WithCancel(context.Background())
			e.agent.reply = func(call) (json.RawMessage, error) {
				if tc.cancel {
					cancel() // the caller leaves while the agent runs it
				}
				return tc.reply()
			}
			c, pe := tradecall.PrepareSocketCall("PlaceOrder", json.RawMessage(place))
			require.Nil(t, pe)
			o := kw.Run(ctx, "usr_pro", c.Fn, c.Key, c.Args)
			cancel()
			rec := spy.last()
			require.Equal(t, tc.state, rec.State)
			require.Equal(t, tc.status, rec.Status)
			if tc.body == "" {
				require.Nil(t, rec.Body)
			} else {
				require.JSONEq(t, tc.body, string(rec.Body))
			}
			switch {
			case tc.cancel:
				require.True(t, o.Gone)
			case tc.code == "":
				require.Nil(t, o.Err)
				require.Equal(t, protocol.FnPlaceOrder, o.Fn)
			default:
				require.Equal(t, tc.code, o.Err.Code)
			}
			// A done record answers the retry; an unknown one runs it
			// again under the same request id.
			again := kw.Run(context.Background(), "usr_pro", c.Fn, c.Key, c.Args)
			calls := e.agent.all()
			if tc.state == store.IdemDone {
				require.True(t, again.Replayed)
				require.Equal(t, o.Result, again.Result)
				require.Equal(t, o.Err, again.Err)
				require.Len(t, calls, 1)
			} else {
				require.False(t, again.Replayed)
				require.Len(t, calls, 2)
				require.Equal(t, calls[0].RequestID, calls[1].RequestID)
			}
		})
	}
}

// A store that cannot claim the key sends nothing; one that cannot record
// the outcome still lets the caller hear it (the agent remembers it by
// request id for a retry).
func TestKeyedWriteWhenTheStoreFails(t *testing.T) {
	t.Parallel()
	e, spy, kw := newKeyedEnv(t)
	const place = "/v1/api/accounts/Sim101/orders/place"
	const body = `{"action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day"}`
	spy.claimErr = errors.New("disk on fire")
	r := e.do("POST", place, "tb_api_pro", body, tradeapi.IdempotencyKeyHeader, "k-s")
	require.Equal(t, 503, r.Status)
	require.Equal(t, errcode.StorageUnavailable, r.Body["error"])
	require.Equal(t, "2", r.Header.Get("Retry-After"))
	o := socketRun(t, kw, "usr_pro", "CancelAllOrders", `{"idempotencyKey":"k-s"}`)
	require.Equal(t, errcode.StorageUnavailable, o.Err.Code)
	require.Equal(t, 503, o.Err.Status)
	require.Empty(t, e.agent.all())

	spy.mu.Lock()
	spy.claimErr, spy.finishErr = nil, errors.New("disk full")
	spy.mu.Unlock()
	r = e.do("POST", place, "tb_api_pro", body, tradeapi.IdempotencyKeyHeader, "k-s")
	require.Equal(t, 200, r.Status)
	require.Equal(t, "o-1", r.Body["orderId"])
	// The record stays running: a repeat now is in progress, not run.
	r = e.do("POST", place, "tb_api_pro", body, tradeapi.IdempotencyKeyHeader, "k-s")
	require.Equal(t, 409, r.Status)
	require.Len(t, e.agent.all(), 1)
}
