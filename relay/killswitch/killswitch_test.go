package killswitch

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/agentcall/agentcalltest"
	"tradebridge/relay/tradecall"
	"tradebridge/trading/ops"
)

// stored is a fake store of the users' kill switches, counting reads.
type stored struct {
	mu      sync.Mutex
	on      map[string]bool
	version map[string]int64
	err     error
	reads   int
}

func (s *stored) lookup(_ context.Context, userID string) (bool, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.err != nil {
		return false, 0, s.err
	}
	return s.on[userID], s.version[userID], nil
}

func (s *stored) set(userID string, on bool, version int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.on[userID], s.version[userID] = on, version
}

func (s *stored) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// clock is a manual clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type fixture struct {
	gate   *Gate
	agents *agentcalltest.Agents
	store  *stored
	clock  *clock
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{
		agents: agentcalltest.New(nil),
		store:  &stored{on: map[string]bool{}, version: map[string]int64{}},
		clock:  &clock{now: time.Unix(1_800_000_000, 0)},
	}
	g, err := New(Options{Caller: f.agents, Lookup: f.store.lookup, TTL: time.Second, Now: f.clock.Now})
	require.NoError(t, err)
	f.gate = g
	return f
}

func (f *fixture) connect(user string, applied int64) {
	f.agents.Connect(user, agentcall.Info{SessionID: "s-" + user, ConfigApplied: applied,
		Hello: protocol.Hello{ProtocolVersion: protocol.ProtocolVersion}})
}

// requireBlocked checks err is the agent's own kill switch refusal, as
// every door maps and records it.
func requireBlocked(t *testing.T, err error) {
	t.Helper()
	var pe *protocol.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, protocol.CodeTradingBlocked, pe.Code)
	require.Equal(t, ops.RuleKillSwitch, tradecall.BlockedRule(pe.Detail))
	e, ok := tradecall.CallError(err, true)
	require.True(t, ok)
	require.Equal(t, 400, e.Status)
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	_, err := New(Options{Lookup: func(context.Context, string) (bool, int64, error) { return false, 0, nil }})
	require.Error(t, err)
	_, err = New(Options{Caller: agentcalltest.New(nil)})
	require.Error(t, err)
}

// Which calls pass, for each state of the stored switch and the agent.
func TestCall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		on        bool
		connected bool
		applied   int64
		fn        string
		blocked   bool
		notConn   bool
	}{
		{name: "off, offline, entry", fn: protocol.FnPlaceOrder, notConn: true},
		{name: "off, online, entry", connected: true, fn: protocol.FnPlaceOrder},
		{name: "on, offline, PlaceOrder", on: true, fn: protocol.FnPlaceOrder, blocked: true},
		{name: "on, offline, CancelAndBracket", on: true, fn: protocol.FnCancelAndBracket, blocked: true},
		{name: "on, offline, ReversePosition", on: true, fn: protocol.FnReversePosition, blocked: true},
		{name: "on, offline, a read", on: true, fn: protocol.FnListAccounts, notConn: true},
		{name: "on, offline, a flatten", on: true, fn: protocol.FnFlattenEverything, notConn: true},
		{name: "on, offline, a cancel", on: true, fn: protocol.FnCancelOrder, notConn: true},
		{name: "on, online, not applied, entry", on: true, connected: true, applied: 4, fn: protocol.FnPlaceOrder, blocked: true},
		{name: "on, online, not applied, close", on: true, connected: true, applied: 4, fn: protocol.FnClosePosition},
		{name: "on, online, applied, entry", on: true, connected: true, applied: 5, fn: protocol.FnPlaceOrder},
		{name: "on, online, newer applied, entry", on: true, connected: true, applied: 6, fn: protocol.FnStartStrategy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.store.set("u1", tc.on, 5)
			if tc.connected {
				f.connect("u1", tc.applied)
			}
			_, err := f.gate.Call(context.Background(), "u1", tc.fn, "", json.RawMessage(`{}`))
			switch {
			case tc.blocked:
				requireBlocked(t, err)
				require.Empty(t, f.agents.Calls("u1"), "nothing sent")
			case tc.notConn:
				require.ErrorIs(t, err, agentcall.ErrNotConnected)
			default:
				require.NoError(t, err)
				require.Len(t, f.agents.Calls("u1"), 1)
			}
		})
	}
}

// Every function the agent's gate may refuse as an entry is one; no
// function that only reads or closes is.
func TestEntries(t *testing.T) {
	t.Parallel()
	for _, fn := range []string{protocol.FnListAccounts, protocol.FnGetPosition, protocol.FnFlatten, protocol.FnFlattenEverything,
		protocol.FnClosePosition, protocol.FnCancelOrder, protocol.FnCancelOrders, protocol.FnCancelAllOrders,
		protocol.FnCloseStrategy, protocol.FnDisableStrategy, protocol.FnApplyConfig, protocol.FnSetSubscriptions} {
		require.False(t, Entries[fn], fn)
	}
	for fn := range Entries {
		f, ok := protocol.LookupFunction(fn)
		require.True(t, ok, fn)
		require.True(t, f.Write, fn)
	}
}

// The stored switch is read once per TTL; Set replaces it at once; a
// read older than a Set does not undo it; a failed read keeps what was
// known.
func TestCache(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.store.set("u1", true, 3)
	require.True(t, f.gate.Blocked(ctx, "u1"))
	require.True(t, f.gate.Blocked(ctx, "u1"))
	require.Equal(t, 1, f.store.count(), "one read within the TTL")

	f.store.set("u1", false, 4) // another node's change
	require.True(t, f.gate.Blocked(ctx, "u1"), "known until the TTL passes")
	f.clock.advance(time.Second)
	require.False(t, f.gate.Blocked(ctx, "u1"))
	require.Equal(t, 2, f.store.count())

	f.gate.Set("u1", true, 5) // this node's change
	require.True(t, f.gate.Blocked(ctx, "u1"))
	require.Equal(t, 2, f.store.count(), "no read after Set")

	f.connect("u1", 5)
	require.False(t, f.gate.Blocked(ctx, "u1"), "the agent acknowledged the version carrying it")

	f.store.err = errors.New("store down")
	f.clock.advance(time.Second)
	f.agents.Disconnect("u1")
	require.True(t, f.gate.Blocked(ctx, "u1"), "a failed read keeps what was known")

	f.store.err = nil
	f.store.set("u2", true, 1)
	f.gate.Set("u2", false, 2)
	f.clock.advance(time.Second)
	f.store.set("u2", true, 1) // a stale read: the store has not caught up
	f.gate.mu.Lock()
	k := f.gate.users["u2"]
	k.until = f.clock.Now() // expired
	f.gate.users["u2"] = k
	f.gate.mu.Unlock()
	require.False(t, f.gate.Blocked(ctx, "u2"), "an older read does not undo a newer Set")
}

// Connected and Info are the wrapped Caller's.
func TestPassThrough(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	require.False(t, f.gate.Connected("u1"))
	f.connect("u1", 7)
	require.True(t, f.gate.Connected("u1"))
	info, ok := f.gate.Info("u1")
	require.True(t, ok)
	require.Equal(t, int64(7), info.ConfigApplied)
}
