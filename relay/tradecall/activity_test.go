package tradecall_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/auth"
	"tradebridge/relay/errcode"
	"tradebridge/relay/events"
	"tradebridge/relay/events/eventstest"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/tradecall"
)

var trader = auth.Principal{UserID: "usr", Kind: auth.KindAPI, TokenHash: "abcdef0123456789abcdef"}

// Each outcome of a trading write is one entry of its kind, with the
// detail keys its kind documents; reads and keyed writes refused before
// they ran are not recorded.
func TestWriteEntry(t *testing.T) {
	t.Parallel()
	at := testkit.Epoch.Add(1234567 * time.Microsecond)
	place := tradecall.Write{Principal: trader, Source: protocol.SourceAPI, Fn: protocol.FnPlaceOrder,
		Args: json.RawMessage(`{"account":"Sim101","action":"Buy","instrument":"ES 12-26","orderType":"Market","quantity":2,"timeInForce":"Day"}`)}
	keyed := place
	keyed.Key = "key:k-1"
	byOrderID := place
	byOrderID.Key = "order:my-1"
	tv := place
	tv.Family = "tv"
	tv.Source = protocol.SourceStream
	limit := place
	limit.Args = json.RawMessage(`{"account":"Sim101","action":"Sell","instrument":"NQ 12-26","orderType":"Limit","limitPrice":21000.25,"quantity":1}`)
	flatten := tradecall.Write{Principal: trader, Source: protocol.SourceAPI, Fn: protocol.FnFlatten,
		Args: json.RawMessage(`{"account":"Sim101","instrument":"ES 12-26"}`)}
	cancel := tradecall.Write{Principal: trader, Source: protocol.SourceAPI, Fn: protocol.FnCancelOrder,
		Args: json.RawMessage(`{"account":"Sim101","orderId":"77"}`)}
	read := tradecall.Write{Principal: trader, Source: protocol.SourceAPI, Fn: protocol.FnListOrders,
		Args: json.RawMessage(`{"account":"Sim101"}`)}
	ok := tradecall.Outcome{Fn: protocol.FnPlaceOrder, Result: json.RawMessage(`{"orderId":"123"}`)}
	errOf := func(code, detail string) tradecall.Outcome {
		return tradecall.Outcome{Err: &httpapi.Error{Status: http.StatusBadRequest, Code: code, Detail: detail}}
	}
	blocked := errOf(protocol.CodeTradingBlocked, "the account's monitor stopped trading for the session (rule: monitorStopped)")
	withRef := func(o tradecall.Outcome) tradecall.Outcome { o.Ref = "write:r1"; return o }
	replayed := ok
	replayed.Replayed = true

	for _, tc := range []struct {
		name    string
		w       tradecall.Write
		o       tradecall.Outcome
		kind    string
		ref     string
		summary string
		detail  map[string]any
	}{
		{name: "placed", w: place, o: ok, kind: protocol.ActivityOrderPlaced,
			summary: "Bought 2 ES 12-26 at market on Sim101 — order 123",
			detail:  map[string]any{"fn": "PlaceOrder", "family": "desktop", "orderIds": []any{"123"}}},
		{name: "limit", w: limit, o: ok, kind: protocol.ActivityOrderPlaced,
			summary: "Sold 1 NQ 12-26 limit 21000.25 on Sim101 — order 123"},
		{name: "broker family over the socket", w: tv, o: ok, kind: protocol.ActivityOrderPlaced,
			detail: map[string]any{"family": "tv"}},
		{name: "trading blocked", w: place, o: blocked, kind: protocol.ActivityTradingBlocked,
			summary: "PlaceOrder on Sim101 refused: trading_blocked (monitorStopped)",
			detail:  map[string]any{"rule": "monitorStopped", "fn": "PlaceOrder"}},
		{name: "add-on disconnected", w: place, o: errOf(errcode.AddonDisconnected, "x"), kind: protocol.ActivityOrderRefused,
			summary: "PlaceOrder on Sim101 refused: addon_disconnected", detail: map[string]any{"error": "addon_disconnected"}},
		{name: "caller gone", w: place, o: tradecall.Outcome{Gone: true}, kind: protocol.ActivityOrderRefused,
			detail: map[string]any{"error": "outcome_unknown"}},
		{name: "keyed, its own outcome", w: keyed, o: withRef(ok), kind: protocol.ActivityOrderPlaced, ref: "write:r1",
			detail: map[string]any{"idempotencyKey": "k-1"}},
		{name: "keyed by orderId", w: byOrderID, o: withRef(ok), kind: protocol.ActivityOrderPlaced, ref: "write:r1"},
		{name: "keyed, replayed", w: keyed, o: replayed, kind: protocol.ActivityOrderReplayed,
			summary: "PlaceOrder on Sim101 answered again from its first outcome — order 123",
			detail:  map[string]any{"idempotencyKey": "k-1", "orderIds": []any{"123"}}},
		{name: "keyed, replayed refusal", w: keyed, o: func() tradecall.Outcome { o := blocked; o.Replayed = true; return o }(),
			kind: protocol.ActivityOrderReplayed, detail: map[string]any{"error": "trading_blocked"}},
		{name: "keyed, refused before it ran", w: keyed, o: errOf(errcode.IdempotencyKeyReused, "x")},
		{name: "a read", w: read, o: ok},
		{name: "flatten", w: flatten, o: tradecall.Outcome{Fn: protocol.FnFlatten,
			Result: json.RawMessage(`{"orderIds":["5","6"],"cancelledOrderIds":["9"]}`)}, kind: protocol.ActivityOrderChanged,
			summary: "Flatten ES 12-26 on Sim101 — orders 5, 6; 1 cancelled",
			detail:  map[string]any{"orderIds": []any{"5", "6"}, "cancelledOrderIds": []any{"9"}}},
		{name: "cancel", w: cancel, o: tradecall.Outcome{Fn: protocol.FnCancelOrder, Result: json.RawMessage(`{"orderId":"77"}`)},
			kind: protocol.ActivityOrderChanged, summary: "CancelOrder 77 on Sim101"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, ref, recorded := tradecall.WriteEntry(tc.w, tc.o, at)
			if tc.kind == "" {
				assert.False(t, recorded)
				return
			}
			require.True(t, recorded)
			assert.Equal(t, tc.kind, e.Kind)
			assert.Equal(t, tc.ref, ref)
			assert.True(t, protocol.ValidActivityKind(e.Kind))
			assert.Equal(t, at.UTC().Truncate(time.Millisecond), e.At)
			assert.Equal(t, "Sim101", e.Account)
			want := tc.w.Source
			assert.Equal(t, protocol.ActivitySource{Kind: want, ID: "abcdef012345"}, e.Source)
			if tc.summary != "" {
				assert.Equal(t, tc.summary, e.Summary)
			}
			assert.NotEmpty(t, e.Summary)
			d := eventstest.Detail(t, e)
			assert.Equal(t, tc.w.Fn, d["fn"])
			assert.NotNil(t, d["request"], "the arguments as asked")
			for k, v := range tc.detail {
				assert.Equal(t, v, d[k], k)
			}
		})
	}
}

// The rule of trading_blocked is the one the agent's gate names at the
// end of the detail; anything else names none.
func TestBlockedRule(t *testing.T) {
	t.Parallel()
	for detail, want := range map[string]string{
		"the kill switch is on (rule: killSwitch)":     "killSwitch",
		"a news lockout is open (rule: newsLockout)":   "newsLockout",
		"trading is blocked":                           "",
		"(rule: )":                                     "",
		"odd (rule: not a rule)":                       "",
		"(rule: killSwitch) but then more":             "",
		"two (rule: a) and (rule: closingOnly)":        "closingOnly",
		"version 2 agents say nothing of their rules.": "",
	} {
		assert.Equal(t, want, tradecall.BlockedRule(detail), detail)
	}
}

// A keyed write's outcome carries one ref per claim: a rerun of an
// unknown outcome (the record claimed again) keeps it, so the activity
// log records the write once; a replay has none; the key claimed afresh
// once it expired has another.
func TestKeyedWritesRef(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	clock := testkit.NewClock(time.Time{})
	caller := &recordingCaller{err: agentcall.ErrConnectionLost}
	k, err := tradecall.NewKeyedWrites(tradecall.KeyedOptions{Store: st, Caller: caller, Now: clock.Now})
	require.NoError(t, err)
	args := json.RawMessage(`{"account":"A","action":"Buy"}`)

	first := k.Run(t.Context(), "usr", protocol.FnPlaceOrder, "key:k1", args)
	require.NotNil(t, first.Err)
	require.Equal(t, errcode.OutcomeUnknown, first.Err.Code)
	require.NotEmpty(t, first.Ref)

	caller.mu.Lock()
	caller.err = nil
	caller.mu.Unlock()
	clock.Advance(time.Second)
	rerun := k.Run(t.Context(), "usr", protocol.FnPlaceOrder, "key:k1", args)
	require.Nil(t, rerun.Err)
	require.False(t, rerun.Replayed)
	assert.Equal(t, first.Ref, rerun.Ref, "a rerun of the same claim")

	replay := k.Run(t.Context(), "usr", protocol.FnPlaceOrder, "key:k1", args)
	require.True(t, replay.Replayed)
	assert.Empty(t, replay.Ref)

	clock.Advance(tradecall.IdempotencyTTL + time.Minute)
	again := k.Run(t.Context(), "usr", protocol.FnPlaceOrder, "key:k1", args)
	require.False(t, again.Replayed)
	assert.NotEmpty(t, again.Ref)
	assert.NotEqual(t, first.Ref, again.Ref, "a fresh claim after the key expired")

	other, err := tradecall.NewKeyedWrites(tradecall.KeyedOptions{Store: st, Caller: caller, Now: clock.Now, Namespace: "tv"})
	require.NoError(t, err)
	tv := other.Run(t.Context(), "usr", protocol.FnPlaceOrder, "key:k1", args)
	assert.NotEqual(t, again.Ref, tv.Ref, "another family's key")

	// Recorded through Activity, the first run and its rerun name the
	// same ref; the replay names none.
	var c eventstest.Collector
	a := tradecall.NewActivity(&c, clock.Now)
	w := tradecall.Write{Principal: trader, Source: protocol.SourceAPI, Fn: protocol.FnPlaceOrder, Args: args, Key: "key:k1"}
	for _, o := range []tradecall.Outcome{first, rerun, replay} {
		a.Record(w, o)
	}
	evs := c.Activity()
	require.Len(t, evs, 3)
	assert.Equal(t, evs[0].Ref, evs[1].Ref)
	assert.Equal(t, protocol.ActivityOrderRefused, evs[0].Activity.Kind)
	assert.Equal(t, protocol.ActivityOrderPlaced, evs[1].Activity.Kind)
	assert.Equal(t, protocol.ActivityOrderReplayed, evs[2].Activity.Kind)
	assert.Empty(t, evs[2].Ref)
	for _, e := range evs {
		assert.Equal(t, events.TypeActivity, e.Type)
		assert.Equal(t, "usr", e.UserID)
		assert.Empty(t, e.Activity.ID)
	}
}

// A nil Activity (no spine) records nothing and does not fail.
func TestNilActivity(t *testing.T) {
	t.Parallel()
	a := tradecall.NewActivity(nil, nil)
	assert.Nil(t, a)
	a.Record(tradecall.Write{Fn: protocol.FnPlaceOrder}, tradecall.Outcome{})
}

// CallOutcome maps an unkeyed call's answer as the doors answer it.
func TestCallOutcome(t *testing.T) {
	t.Parallel()
	o := tradecall.CallOutcome(protocol.FnPlaceOrder, json.RawMessage(`{}`), nil, false)
	assert.Nil(t, o.Err)
	assert.Equal(t, protocol.FnPlaceOrder, o.Fn)
	o = tradecall.CallOutcome(protocol.FnPlaceOrder, nil, agentcall.ErrNotConnected, false)
	require.NotNil(t, o.Err)
	assert.Equal(t, errcode.AddonDisconnected, o.Err.Code)
	o = tradecall.CallOutcome(protocol.FnPlaceOrder, nil, agentcall.ErrTimeout, false)
	assert.Equal(t, errcode.OutcomeUnknown, o.Err.Code)
	assert.True(t, tradecall.CallOutcome(protocol.FnPlaceOrder, nil, assert.AnError, true).Gone)
	assert.Equal(t, errcode.InternalError, tradecall.CallOutcome(protocol.FnPlaceOrder, nil, assert.AnError, false).Err.Code)
}

// BenchmarkWriteEntry measures what a door spends recording a placed
// order once the caller has its answer.
func BenchmarkWriteEntry(b *testing.B) {
	w := tradecall.Write{Principal: trader, Source: protocol.SourceAPI, Fn: protocol.FnPlaceOrder,
		Args: json.RawMessage(`{"account":"Sim101","action":"Buy","instrument":"ES 12-26","orderType":"Market","quantity":2,"timeInForce":"Day"}`)}
	o := tradecall.Outcome{Fn: protocol.FnPlaceOrder, Result: json.RawMessage(`{"orderId":"123","order":{"orderId":"123","account":"Sim101","instrument":"ES 12-26","orderAction":"Buy","orderType":"Market","orderState":"Working","quantity":2}}`)}
	a := tradecall.NewActivity(events.PublishFunc(func(events.Event) {}), nil)
	b.ReportAllocs()
	for b.Loop() {
		a.Record(w, o)
	}
}

// An entry stays within the activity log's bounds: a long summary is cut,
// a large detail leaves the request out and cuts its lists of ids, and
// says so.
func TestWriteEntryBounds(t *testing.T) {
	t.Parallel()
	ids := make([]string, 300)
	for i := range ids {
		ids[i] = fmt.Sprintf("order-%060d", i)
	}
	result, err := json.Marshal(map[string]any{"orderIds": ids, "cancelledOrderIds": ids})
	require.NoError(t, err)
	args, err := json.Marshal(map[string]any{"account": strings.Repeat("A", 64), "instrument": "ES 12-26",
		"smartOptions": map[string]string{"x": strings.Repeat("y", 20000)}})
	require.NoError(t, err)
	w := tradecall.Write{Principal: trader, Source: protocol.SourceAPI, Fn: protocol.FnFlatten, Args: args}
	e, _, ok := tradecall.WriteEntry(w, tradecall.Outcome{Fn: protocol.FnFlatten, Result: result}, time.Now())
	require.True(t, ok)
	assert.LessOrEqual(t, utf8.RuneCountInString(e.Summary), protocol.MaxActivitySummary)
	assert.True(t, strings.HasSuffix(e.Summary, "…"), "cut")
	assert.LessOrEqual(t, len(e.Detail), protocol.MaxActivityDetail)
	d := eventstest.Detail(t, e)
	assert.Equal(t, true, d["truncated"])
	assert.Nil(t, d["request"])
	assert.Len(t, d["orderIds"], 20)

	long := "x" + strings.Repeat("é", 300)
	assert.Equal(t, protocol.MaxActivitySummary, utf8.RuneCountInString(protocol.CutActivitySummary(long)))
	assert.Equal(t, "short", protocol.CutActivitySummary("short"))
}
