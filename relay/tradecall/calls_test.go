package tradecall_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/errcode"
	"tradebridge/relay/events/eventstest"
	"tradebridge/relay/tradecall"
)

// blockingCaller answers once its context ends, as the hub does: a
// timeout at its deadline, the context's error when it was cancelled.
type blockingCaller struct{}

func (blockingCaller) Call(ctx context.Context, _, _, _ string, _ json.RawMessage) (json.RawMessage, error) {
	<-ctx.Done()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, agentcall.ErrTimeout
	}
	return nil, ctx.Err()
}

func TestNewCallsNeedsCallerAndKeyed(t *testing.T) {
	t.Parallel()
	keyed, err := tradecall.NewKeyedWrites(tradecall.KeyedOptions{Store: openStore(t), Caller: &recordingCaller{}})
	require.NoError(t, err)
	for _, o := range []tradecall.CallsOptions{{}, {Caller: &recordingCaller{}}, {Keyed: keyed}} {
		_, err := tradecall.NewCalls(o)
		require.Error(t, err)
	}
}

// Calls runs a read and an unkeyed write straight to the caller (the
// write under a fresh rly: request id), a keyed write through
// KeyedWrites (a repeat answered its recorded outcome), and maps each
// failure as the doors answer it.
func TestCallsRun(t *testing.T) {
	t.Parallel()
	prep := func(fn, args string) tradecall.SocketCall {
		c, e := tradecall.Desktop().Prepare(fn, json.RawMessage(args))
		require.Nil(t, e)
		return c
	}
	read := prep(protocol.FnListAccounts, `{}`)
	write := prep(protocol.FnCancelAllOrders, `{}`)
	keyedWrite := prep(protocol.FnCancelAllOrders, `{"idempotencyKey":"k-1"}`)
	for _, tc := range []struct {
		name     string
		err      error
		call     tradecall.SocketCall
		times    int
		ids      []string // request ids, "rly:" meaning a fresh one
		code     string
		replayed bool
	}{
		{"a read", nil, read, 1, []string{""}, "", false},
		{"an unkeyed write", nil, write, 1, []string{"rly:"}, "", false},
		{"two unkeyed writes run twice", nil, write, 2, []string{"rly:", "rly:"}, "", false},
		{"a keyed write runs once", nil, keyedWrite, 2, []string{"idem:key:k-1"}, "", true},
		{"the agent's error", &protocol.Error{Code: protocol.CodeInvalidArgument, Detail: "no"}, read, 1, []string{""}, protocol.CodeInvalidArgument, false},
		{"the add-on not connected", agentcall.ErrNotConnected, read, 1, []string{""}, errcode.AddonDisconnected, false},
		{"a write's outcome unknown", agentcall.ErrTimeout, write, 1, []string{"rly:"}, errcode.OutcomeUnknown, false},
		{"the relay failing", context.Canceled, read, 1, []string{""}, errcode.InternalError, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			caller := &recordingCaller{err: tc.err}
			keyed, err := tradecall.NewKeyedWrites(tradecall.KeyedOptions{Store: openStore(t), Caller: caller})
			require.NoError(t, err)
			calls, err := tradecall.NewCalls(tradecall.CallsOptions{Caller: caller, Keyed: keyed})
			require.NoError(t, err)
			var o tradecall.Outcome
			for range tc.times {
				o = calls.Run(t.Context(), trader, tc.call)
			}
			ids := caller.IDs()
			require.Len(t, ids, len(tc.ids))
			for i, id := range ids {
				if tc.ids[i] == "rly:" {
					require.True(t, strings.HasPrefix(id, "rly:") && len(id) == len("rly:")+32, id)
					continue
				}
				require.Equal(t, tc.ids[i], id)
			}
			if len(ids) == 2 && tc.ids[0] == "rly:" {
				require.NotEqual(t, ids[0], ids[1])
			}
			require.Equal(t, tc.replayed, o.Replayed)
			if tc.code == "" {
				require.Nil(t, o.Err)
				require.Equal(t, tc.call.Fn, o.Fn)
				require.JSONEq(t, `{"orderId":"o-1"}`, string(o.Result))
				return
			}
			require.NotNil(t, o.Err)
			require.Equal(t, tc.code, o.Err.Code)
		})
	}
}

// A call whose caller left is Gone; one cut by CallTimeout is not.
func TestCallsRunEnds(t *testing.T) {
	t.Parallel()
	keyed, err := tradecall.NewKeyedWrites(tradecall.KeyedOptions{Store: openStore(t), Caller: blockingCaller{}})
	require.NoError(t, err)
	calls, err := tradecall.NewCalls(tradecall.CallsOptions{Caller: blockingCaller{}, Keyed: keyed, CallTimeout: 10 * time.Millisecond})
	require.NoError(t, err)
	read, e := tradecall.Desktop().Prepare(protocol.FnListAccounts, nil)
	require.Nil(t, e)

	o := calls.Run(t.Context(), trader, read)
	require.False(t, o.Gone)
	require.Equal(t, errcode.DeadlineExceeded, o.Err.Code)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	o = calls.Run(ctx, trader, read)
	require.True(t, o.Gone)
	require.Nil(t, o.Err)
}

// Record publishes a write's entry with the door's source and family,
// and nothing for a read.
func TestCallsRecord(t *testing.T) {
	t.Parallel()
	var col eventstest.Collector
	caller := &recordingCaller{}
	keyed, err := tradecall.NewKeyedWrites(tradecall.KeyedOptions{Store: openStore(t), Caller: caller})
	require.NoError(t, err)
	calls, err := tradecall.NewCalls(tradecall.CallsOptions{Caller: caller, Keyed: keyed, Events: &col,
		Source: protocol.SourceMCP, Family: "tv"})
	require.NoError(t, err)
	for _, fn := range []string{protocol.FnListAccounts, protocol.FnCancelAllOrders} {
		call, e := tradecall.Desktop().Prepare(fn, nil)
		require.Nil(t, e)
		calls.Record(trader, call, calls.Run(t.Context(), trader, call))
	}
	evs := col.WaitActivity(t, 1)
	entry := evs[0].Activity
	require.Equal(t, protocol.SourceMCP, entry.Source.Kind)
	require.Equal(t, "tv", eventstest.Detail(t, entry)["family"])
}
