package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/broker"
	"tradebridge/relay/cluster"
	"tradebridge/relay/events"
	"tradebridge/relay/httpapi"
)

var _ broker.Router = (*cluster.Route)(nil)

// The node-to-node layout is version 1; changing a name of it without a
// new version breaks nodes of mixed releases.
func TestProtocolVersionPinsTheLayout(t *testing.T) {
	t.Parallel()
	require.Equal(t, 1, cluster.ProtocolVersion)
	for got, want := range map[string]string{
		cluster.SubjectAgent: "agent", cluster.SubjectService: "svc", cluster.SubjectStatus: "status",
		cluster.SubjectQuote: "quote", cluster.SubjectActivity: "activity", cluster.QueueGroup: "holders",
		cluster.HeaderVersion: "Tb-Version", cluster.HeaderOp: "Tb-Op", cluster.HeaderFn: "Tb-Fn",
		cluster.HeaderRequestID: "Tb-Request-Id", cluster.HeaderTrace: "Tb-Trace", cluster.HeaderTimeout: "Tb-Timeout-Ms",
		cluster.HeaderBypassWindows: "Tb-Bypass-Windows",
		cluster.HeaderOrigin:        "Tb-Origin", cluster.HeaderKind: "Tb-Kind", cluster.HeaderPart: "Tb-Part",
		cluster.HeaderSeq: "Tb-Seq", cluster.OpCall: "call", cluster.OpInfo: "info",
		cluster.KindHeartbeat: "heartbeat", cluster.KindResult: "result", cluster.KindError: "error",
	} {
		require.Equal(t, want, got)
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for name, o := range map[string]cluster.Options{
		"no node":       {URL: "nats://127.0.0.1:1", Local: newFakeHub()},
		"no local":      {URL: "nats://127.0.0.1:1", Node: "a"},
		"no bus":        {Node: "a", Local: newFakeHub()},
		"wildcard":      {URL: "nats://127.0.0.1:1", Node: "a", Local: newFakeHub(), Prefix: "tb.*"},
		"empty token":   {URL: "nats://127.0.0.1:1", Node: "a", Local: newFakeHub(), Prefix: "tb..x"},
		"heartbeats":    {URL: "nats://127.0.0.1:1", Node: "a", Local: newFakeHub(), HeartbeatInterval: time.Second, HeartbeatTimeout: time.Second},
		"negative part": {URL: "nats://127.0.0.1:1", Node: "a", Local: newFakeHub(), MaxPart: -1},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := cluster.New(o)
			require.Error(t, err)
		})
	}
}

// A call through a node that does not hold the user reaches the holder
// with its function, arguments, request id, trace id and deadline.
func TestClusterCallThroughNonHoldingNode(t *testing.T) {
	t.Parallel()
	a, b, c := cluster3(t)
	a.hub.connect("usr 1/ü.*>", time.Now()) // any user id makes a subject
	b.waitReach(t, "usr 1/ü.*>")
	for _, n := range []*node{a, b, c} {
		ctx, cancel := context.WithTimeout(agentcall.WithTrace(context.Background(), "req-abc"), 2*time.Second)
		out, err := n.cl.Call(ctx, "usr 1/ü.*>", "Echo", "rid-1", json.RawMessage(`{"x":1}`))
		cancel()
		require.NoError(t, err, n.name)
		var e echo
		require.NoError(t, json.Unmarshal(out, &e))
		require.Equal(t, "Echo", e.Fn)
		require.Equal(t, "rid-1", e.RequestID)
		require.Equal(t, "req-abc", e.Trace)
		require.JSONEq(t, `{"x":1}`, string(e.Args))
		require.InDelta(t, 2000, e.LeftMs, 500, "the holder runs the call with the caller's deadline")
	}
	require.Equal(t, 3, a.hub.served())
	require.Zero(t, b.hub.served()+c.hub.served())
}

// A call's protocol.CallOptions reach the holder: BypassWindows travels
// with the call, and a call without it arrives without it.
func TestClusterCallCarriesBypassWindows(t *testing.T) {
	t.Parallel()
	a, b, _ := cluster3(t)
	a.hub.connect("u-bypass", time.Now())
	b.waitReach(t, "u-bypass")
	for _, bypass := range []bool{true, false} {
		ctx, cancel := context.WithTimeout(protocol.WithCallOptions(context.Background(), protocol.CallOptions{BypassWindows: bypass}), 2*time.Second)
		out, err := b.cl.Call(ctx, "u-bypass", "Echo", "", json.RawMessage(`{}`))
		cancel()
		require.NoError(t, err)
		var e echo
		require.NoError(t, json.Unmarshal(out, &e))
		require.Equal(t, bypass, e.Bypass)
	}
}

// The holder runs the call on its hub without the bus: a local call
// works with the node's NATS connection gone.
func TestClusterLocalCallNeedsNoBus(t *testing.T) {
	t.Parallel()
	url, pfx := natsURL(t), prefix()
	a := newNode(t, url, pfx, "a", nil)
	a.hub.connect("u", time.Now())
	a.nc.Close()
	out, err := a.call(t, "u", "Echo", 1, time.Second)
	require.NoError(t, err)
	require.Contains(t, string(out), `"fn":"Echo"`)
	require.True(t, a.cl.Connected("u"))
	_, err = a.call(t, "nobody", "Echo", 1, time.Second)
	require.ErrorIs(t, err, agentcall.ErrNotConnected)
}

// No node holding the user is an answer at once, not a timeout.
func TestClusterNoRespondersIsNotConnectedAtOnce(t *testing.T) {
	t.Parallel()
	_, b, _ := cluster3(t)
	start := time.Now()
	_, err := b.call(t, "nobody", "Echo", 1, 10*time.Second)
	require.ErrorIs(t, err, agentcall.ErrNotConnected)
	require.Less(t, time.Since(start), time.Second)
	require.False(t, b.cl.Connected("nobody"))
	_, ok := b.cl.Info("nobody")
	require.False(t, ok)
	require.Less(t, time.Since(start), 2*time.Second)
}

// Every error the holder's hub returns comes back as the same value.
func TestClusterErrorsRoundTrip(t *testing.T) {
	t.Parallel()
	a, b, _ := cluster3(t)
	a.hub.connect("u", time.Now())
	b.waitReach(t, "u")
	for name, want := range failures {
		t.Run(name, func(t *testing.T) {
			_, err := b.call(t, "u", "Fail", name, 2*time.Second)
			require.Error(t, err)
			var pe *protocol.Error
			var he *httpapi.Error
			var re *cluster.RemoteError
			switch {
			case errors.As(want, &he):
				var got *httpapi.Error
				require.ErrorAs(t, err, &got)
				require.Equal(t, *he, *got)
			case errors.As(want, &pe):
				var got *protocol.Error
				require.ErrorAs(t, err, &got)
				require.Equal(t, *pe, *got)
			case name == "other":
				require.ErrorAs(t, err, &re)
				require.Contains(t, re.Detail, want.Error())
			default:
				require.ErrorIs(t, err, want)
			}
		})
	}
}

// The caller's deadline holds on the holder: a call that outlives it is
// agentcall.ErrTimeout, at the deadline.
func TestClusterDeadlinePropagates(t *testing.T) {
	t.Parallel()
	a, b, _ := cluster3(t)
	a.hub.connect("u", time.Now())
	b.waitReach(t, "u")
	out, err := b.call(t, "u", "Echo", 1, 400*time.Millisecond)
	require.NoError(t, err)
	var e echo
	require.NoError(t, json.Unmarshal(out, &e))
	require.Greater(t, e.LeftMs, int64(0))
	require.LessOrEqual(t, e.LeftMs, int64(400))

	start := time.Now()
	_, err = b.call(t, "u", "Block", 1, 300*time.Millisecond)
	require.ErrorIs(t, err, agentcall.ErrTimeout)
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	require.Less(t, time.Since(start), 2*time.Second)

	// A call that lasts several heartbeats is not given up.
	go func() {
		time.Sleep(600 * time.Millisecond)
		close(a.hub.block)
	}()
	out, err = b.call(t, "u", "Block", 1, 5*time.Second)
	require.NoError(t, err)
	require.JSONEq(t, `{"released":true}`, string(out))
}

// A holder that dies during a call leaves its caller with
// agentcall.ErrConnectionLost after a few heartbeats, not at the deadline.
func TestClusterHolderKilledMidCall(t *testing.T) {
	t.Parallel()
	a, b, _ := cluster3(t)
	a.hub.connect("u", time.Now())
	b.waitReach(t, "u")
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*testkit.Long) // outlasts the bound below
		defer cancel()
		_, err := b.cl.Call(ctx, "u", "Block", "", json.RawMessage(`1`))
		errc <- err
	}()
	require.Eventually(t, func() bool { return a.hub.served() == 1 }, testkit.Medium, time.Millisecond)
	start := time.Now()
	a.nc.Close() // the node dies: no more heartbeats
	select {
	case err := <-errc:
		require.ErrorIs(t, err, agentcall.ErrConnectionLost)
		require.Less(t, time.Since(start), 5*time.Second)
	case <-time.After(testkit.Long):
		t.Fatal("the caller waited for the dead holder")
	}
	// Its subject is gone with it: the user is connected nowhere.
	_, err := b.call(t, "u", "Echo", 1, 5*time.Second)
	require.ErrorIs(t, err, agentcall.ErrNotConnected)
}

// A reply larger than the server's max payload arrives whole.
func TestClusterLargeReplyInParts(t *testing.T) {
	t.Parallel()
	a, b, _ := cluster3(t)
	a.hub.connect("u", time.Now())
	b.waitReach(t, "u")
	for _, n := range []int{2, 1 << 20, 4<<20 + 17} {
		out, err := b.call(t, "u", "Big", n, 10*time.Second)
		require.NoError(t, err)
		require.Len(t, out, n)
		require.Equal(t, string(bigReply(n)), string(out))
	}
}

// A reply over the caller's bound is refused, not kept.
func TestClusterReplyBound(t *testing.T) {
	t.Parallel()
	url, pfx := natsURL(t), prefix()
	a := newNode(t, url, pfx, "a", func(o *cluster.Options) { o.MaxPart = 1000 })
	b := newNode(t, url, pfx, "b", func(o *cluster.Options) { o.MaxReply = 5000 })
	a.hub.connect("u", time.Now())
	b.waitReach(t, "u")
	out, err := b.call(t, "u", "Big", 4999, 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, string(bigReply(4999)), string(out), "five parts of 1000")
	_, err = b.call(t, "u", "Big", 5001, 5*time.Second)
	require.ErrorIs(t, err, cluster.ErrReplyTooLarge)
}

// Info and Connected answer for a user held on another node.
func TestClusterInfo(t *testing.T) {
	t.Parallel()
	a, b, _ := cluster3(t)
	at := time.Now().Add(-time.Minute)
	a.hub.connect("u", at)
	b.waitReach(t, "u")
	want, ok := a.cl.Info("u")
	require.True(t, ok)
	got, ok := b.cl.Info("u")
	require.True(t, ok)
	require.True(t, want.ConnectedAt.Equal(got.ConnectedAt))
	require.True(t, want.DiagnosticsAt.Equal(got.DiagnosticsAt))
	want.ConnectedAt, got.ConnectedAt, want.DiagnosticsAt, got.DiagnosticsAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	require.Equal(t, want, got)
	require.Equal(t, int64(7), got.ConfigApplied, "the version the agent acknowledged travels")
	a.hub.disconnect("u")
	require.Eventually(t, func() bool { return !b.cl.Connected("u") }, testkit.Medium, 5*time.Millisecond)
}

// A newer tunnel on another node replaces the older one; statuses reach
// every other node's spine.
func TestClusterReplacement(t *testing.T) {
	t.Parallel()
	a, b, c := cluster3(t)
	t0 := time.Now()
	old := a.hub.connect("u", t0)
	b.waitReach(t, "u")
	require.Eventually(t, func() bool { return len(c.rec.gotStatuses()) == 1 }, testkit.Medium, time.Millisecond)
	require.Equal(t, []string{"u:true"}, c.rec.gotStatuses())

	b.hub.connect("u", t0.Add(time.Second))
	require.Eventually(t, func() bool { return len(a.hub.evictions()) == 1 }, testkit.Medium, time.Millisecond)
	require.Equal(t, []string{old}, a.hub.evictions())
	require.False(t, a.hub.Connected("u"))
	require.True(t, b.hub.Connected("u"))
	// c heard b connect and a let go.
	require.Eventually(t, func() bool { return len(c.rec.gotStatuses()) == 3 }, testkit.Medium, time.Millisecond, "%v", c.rec.gotStatuses())
	require.ElementsMatch(t, []string{"u:true", "u:true", "u:false"}, c.rec.gotStatuses())
	out, err := c.call(t, "u", "Echo", 1, 2*time.Second)
	require.NoError(t, err)
	require.Contains(t, string(out), "Echo")

	// An older tunnel registering late replaces nothing: it is the one
	// replaced.
	late := c.hub.connect("u", t0)
	require.Eventually(t, func() bool { return len(c.hub.evictions()) == 1 }, testkit.Medium, time.Millisecond)
	require.Equal(t, []string{late}, c.hub.evictions())
	require.True(t, b.hub.Connected("u"))
	require.Empty(t, b.hub.evictions())

	// The same instant: the greater node name stays.
	t1 := t0.Add(time.Hour)
	b.hub.disconnect("u")
	onA := a.hub.connect("v", t1)
	c.hub.connect("v", t1)
	require.Eventually(t, func() bool { return len(a.hub.evictions()) == 2 }, testkit.Medium, time.Millisecond)
	require.Equal(t, onA, a.hub.evictions()[1])
	require.True(t, c.hub.Connected("v"))
}

// Each node's stream sends its own set; the holder sends the agent the
// union, answers each node with its share, and publishes only the quotes
// other nodes asked for, to them alone.
func TestClusterSubscriptionUnionAndQuotes(t *testing.T) {
	t.Parallel()
	a, b, c := cluster3(t)
	a.hub.connect("u", time.Now())
	b.waitReach(t, "u")
	c.waitReach(t, "u")

	set := func(n *node, names ...string) protocol.SubscriptionsResult {
		t.Helper()
		out, err := n.call(t, "u", protocol.FnSetSubscriptions, protocol.SubscriptionsArgs{Instruments: names}, 2*time.Second)
		require.NoError(t, err)
		var r protocol.SubscriptionsResult
		require.NoError(t, json.Unmarshal(out, &r))
		return r
	}
	last := func() []string {
		s := a.hub.sentSets()
		return s[len(s)-1]
	}
	rb := set(b, "ES", "NQ", "XBAD")
	require.Equal(t, []string{"ES", "NQ", "XBAD"}, last())
	require.ElementsMatch(t, []string{"ES 12-26", "NQ 12-26"}, rb.Instruments)
	require.Equal(t, []string{"XBAD"}, rb.Unknown)
	rc := set(c, "ES", "CL")
	require.Equal(t, []string{"CL", "ES", "NQ", "XBAD"}, last(), "the union of both nodes' sets")
	require.ElementsMatch(t, []string{"ES 12-26", "CL 12-26"}, rc.Instruments, "c's share only")
	require.Equal(t, map[string]string{"ES": "ES 12-26", "CL": "CL 12-26"}, rc.Resolved)
	require.Empty(t, rc.Unknown)
	ra := set(a, "GC")
	require.Equal(t, []string{"CL", "ES", "GC", "NQ", "XBAD"}, last(), "the holder's own set too")
	require.Equal(t, []string{"GC 12-26"}, ra.Instruments)

	var seq uint64
	quote := func(instrument string) {
		seq++
		a.cl.HandleEvent(events.Agent("u", protocol.Event{Seq: seq, Kind: protocol.EventQuote,
			Data: json.RawMessage(fmt.Sprintf(`{"instrument":%q,"last":1}`, instrument))}))
	}
	// Quotes of one publisher arrive in order: once the marker is in,
	// everything before it that was sent to a node is too.
	flush := func(marker string, nodes ...*node) {
		t.Helper()
		quote(marker)
		for _, n := range nodes {
			require.Eventually(t, func() bool {
				q := n.rec.gotQuotes()
				return len(q) > 0 && q[len(q)-1] == "u:"+marker
			}, testkit.Medium, time.Millisecond, "%s: %v", n.name, n.rec.gotQuotes())
		}
	}
	quote("GC 12-26")
	quote("NQ 12-26")
	quote("es 12-26") // quotes name contracts in any case
	quote("CL 12-26")
	quote("ZB 12-26") // nobody asked
	flush("ES 12-26", b, c)
	require.Equal(t, []string{"u:NQ 12-26", "u:es 12-26", "u:ES 12-26"}, b.rec.gotQuotes())
	require.Equal(t, []string{"u:es 12-26", "u:CL 12-26", "u:ES 12-26"}, c.rec.gotQuotes())
	require.Empty(t, a.rec.gotQuotes(), "the holder's stream gets its quotes from its hub")

	// b's set becomes empty: b receives nothing more; the agent streams
	// the rest.
	rb = set(b)
	require.Empty(t, rb.Instruments)
	require.Equal(t, []string{"CL", "ES", "GC"}, last())
	quote("NQ 12-26")
	flush("CL 12-26", c)
	require.Equal(t, []string{"u:es 12-26", "u:CL 12-26", "u:ES 12-26", "u:CL 12-26"}, c.rec.gotQuotes())
	require.Len(t, b.rec.gotQuotes(), 3)

	// A holder that loses the user forgets the sets: the next holder
	// starts from the sets sent to it.
	a.hub.disconnect("u")
	b.hub.connect("u", time.Now())
	c.waitReach(t, "u")
	set(c, "ES")
	s := b.hub.sentSets()
	require.Equal(t, []string{"ES"}, s[len(s)-1])
	// b holds the user now: its stream's quotes come from its hub, not
	// the bus, even for contracts c asked for.
	before := len(b.rec.gotQuotes())
	b.cl.HandleEvent(events.Agent("u", protocol.Event{Seq: 1, Kind: protocol.EventQuote, Data: json.RawMessage(`{"instrument":"ES 12-26"}`)}))
	require.Eventually(t, func() bool { return len(c.rec.gotQuotes()) == 5 }, testkit.Medium, time.Millisecond)
	require.Len(t, b.rec.gotQuotes(), before)
}

// Route: the node serving a user answers its calls from every node; no
// node serving is ErrNotConnected at once.
func TestClusterRouteServeForward(t *testing.T) {
	t.Parallel()
	a, b, _ := cluster3(t)
	ra, rb := a.cl.Route("broker"), b.cl.Route("broker")
	var mu sync.Mutex
	var ran []string
	h := func(ctx context.Context, fn, requestID string, args json.RawMessage) (json.RawMessage, error) {
		mu.Lock()
		ran = append(ran, fn)
		mu.Unlock()
		if fn == "Fail" {
			return nil, protocol.NewError(protocol.CodeOrderRejected, "tradovate says no")
		}
		dl, _ := ctx.Deadline()
		return json.Marshal(echo{Fn: fn, RequestID: requestID, Trace: agentcall.TraceFrom(ctx), Args: args, LeftMs: time.Until(dl).Milliseconds()})
	}
	start := time.Now()
	_, err := rb.Forward(context.Background(), "u", "Echo", "", nil)
	require.ErrorIs(t, err, agentcall.ErrNotConnected)
	require.Less(t, time.Since(start), time.Second)

	stop, err := ra.Serve("u", h)
	require.NoError(t, err)
	for _, r := range []*cluster.Route{rb, ra} { // forwarded, then local
		ctx, cancel := context.WithTimeout(agentcall.WithTrace(context.Background(), "trace-1"), time.Second)
		out, err := r.Forward(ctx, "u", "Echo", "rid", json.RawMessage(`{"y":2}`))
		cancel()
		require.NoError(t, err)
		var e echo
		require.NoError(t, json.Unmarshal(out, &e))
		require.Equal(t, echo{Fn: "Echo", RequestID: "rid", Trace: "trace-1", Args: json.RawMessage(`{"y":2}`), LeftMs: e.LeftMs}, e)
		require.InDelta(t, 1000, e.LeftMs, 300)
	}
	_, err = rb.Forward(context.Background(), "u", "Fail", "", nil)
	require.ErrorIs(t, err, &protocol.Error{Code: protocol.CodeOrderRejected})
	// Another service of the same user is not served.
	_, err = b.cl.Route("other").Forward(context.Background(), "u", "Echo", "", nil)
	require.ErrorIs(t, err, agentcall.ErrNotConnected)
	// The agent subject is not the service's either.
	_, err = b.call(t, "u", "Echo", 1, time.Second)
	require.ErrorIs(t, err, agentcall.ErrNotConnected)

	stop()
	stop()
	_, err = rb.Forward(context.Background(), "u", "Echo", "", nil)
	require.ErrorIs(t, err, agentcall.ErrNotConnected)
	_, err = ra.Forward(context.Background(), "u", "Echo", "", nil)
	require.ErrorIs(t, err, agentcall.ErrNotConnected)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"Echo", "Echo", "Fail"}, ran)
}

// With its bus down, a node still serves its own agents, fails calls to
// others at once, and recovers by itself.
func TestClusterBusDown(t *testing.T) {
	t.Parallel()
	url, pfx := natsURL(t), prefix()
	p := newProxy(t, url)
	a := newNode(t, url, pfx, "a", nil)
	b := newNode(t, p.url(), pfx, "b", func(o *cluster.Options) { o.Conn = nil; o.URL = p.url(); o.ReconnectWait = 20 * time.Millisecond })
	b.hub.connect("mine", time.Now())
	a.hub.connect("theirs", time.Now())
	b.waitReach(t, "theirs")

	p.cut()
	require.Eventually(t, func() bool {
		_, err := b.call(t, "theirs", "Echo", 1, 5*time.Second)
		return errors.Is(err, cluster.ErrBusDown)
	}, testkit.Medium, 5*time.Millisecond)
	start := time.Now()
	_, err := b.call(t, "theirs", "Echo", 1, 5*time.Second)
	require.ErrorIs(t, err, agentcall.ErrNotConnected, "a 408, nothing sent")
	require.Less(t, time.Since(start), 100*time.Millisecond, "nothing waits for the bus")
	_, err = b.call(t, "mine", "Echo", 1, time.Second)
	require.NoError(t, err)

	p.restore()
	require.Eventually(t, func() bool {
		_, err := b.call(t, "theirs", "Echo", 1, time.Second)
		return err == nil
	}, testkit.Long, testkit.Tick)
	a.waitReach(t, "mine")
}

func BenchmarkCallHolding(b *testing.B) {
	a, _ := benchNodes(b)
	benchCall(b, a)
}

func BenchmarkCallForwarded(b *testing.B) {
	_, n := benchNodes(b)
	benchCall(b, n)
}

func benchNodes(b *testing.B) (holder, other *node) {
	url, pfx := natsURL(b), prefix()
	holder = newNode(b, url, pfx, "a", nil)
	other = newNode(b, url, pfx, "b", nil)
	holder.hub.connect("u", time.Now())
	other.waitReach(b, "u")
	return holder, other
}

func benchCall(b *testing.B, n *node) {
	args := json.RawMessage(`{"account":"Sim101"}`)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ctx, cancel := context.WithTimeout(context.Background(), testkit.Medium)
			_, err := n.cl.Call(ctx, "u", "Echo", "", args)
			cancel()
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// An activity entry one node's log stored reaches every other node's
// spine once, as a remote TypeRecorded; remote entries are not sent on.
func TestClusterActivity(t *testing.T) {
	t.Parallel()
	a, b, c := cluster3(t)
	entry := protocol.ActivityEntry{ID: "act_7", At: time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC), Kind: protocol.ActivityMonitorTripped,
		Account: "Sim101", Source: protocol.ActivitySource{Kind: protocol.SourceMonitor, ID: "mon_1"}, Summary: "tripped",
		Detail: json.RawMessage(`{"limit":"lossLimit"}`)}
	a.cl.Handle(events.Event{Type: events.TypeRecorded, UserID: "u1", Activity: entry})
	// A remote entry (b's spine re-publishing what it heard) goes nowhere.
	b.cl.Handle(events.Event{Type: events.TypeRecorded, UserID: "u1", Activity: protocol.ActivityEntry{ID: "act_8"}, Remote: true})
	for _, n := range []*node{b, c} {
		require.Eventually(t, func() bool { return len(n.rec.gotActivity()) == 1 }, testkit.Medium, testkit.Tick, n.name)
	}
	// The bus has delivered everything sent before this round trip.
	require.NoError(t, a.nc.Flush())
	require.NoError(t, b.nc.Flush())
	require.NoError(t, c.nc.Flush())
	time.Sleep(50 * time.Millisecond)
	require.Empty(t, a.rec.gotActivity(), "a node never takes its own")
	require.Equal(t, []string{"u1:act_7"}, b.rec.gotActivity())
	require.Equal(t, []string{"u1:act_7"}, c.rec.gotActivity())
}
