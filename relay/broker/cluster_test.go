package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/broker"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/store"
)

// handlerFunc is what a node serves a user's calls with.
type handlerFunc = func(ctx context.Context, fn, requestID string, args json.RawMessage) (json.RawMessage, error)

// fakeNet connects the relay nodes of a test, as package relay/cluster
// connects them over NATS: each node's Router is a fakeRouter on it. It
// records what a test checks: which node serves a user, the calls each
// node answered for another, and any moment two registrations served one
// user.
type fakeNet struct {
	mu       sync.Mutex
	serving  map[string][]*served // by user, oldest first
	answered map[string]int       // forwarded calls run, by the node that ran them
	overlaps []string
}

type served struct {
	node string
	h    handlerFunc
}

func newFakeNet() *fakeNet {
	return &fakeNet{serving: map[string][]*served{}, answered: map[string]int{}}
}

// server returns the node serving the user, "" when none does.
func (n *fakeNet) server(userID string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if s := n.serving[userID]; len(s) > 0 {
		return s[len(s)-1].node
	}
	return ""
}

func (n *fakeNet) answeredBy(node string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.answered[node]
}

func (n *fakeNet) overlapping() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.overlaps...)
}

// fakeRouter is one node's broker.Router on a fakeNet.
type fakeRouter struct {
	net  *fakeNet
	node string
}

func (r *fakeRouter) Serve(userID string, h handlerFunc) (func(), error) {
	n := r.net
	s := &served{node: r.node, h: h}
	n.mu.Lock()
	for _, o := range n.serving[userID] {
		n.overlaps = append(n.overlaps, fmt.Sprintf("%s served by %s and %s", userID, o.node, r.node))
	}
	n.serving[userID] = append(n.serving[userID], s)
	n.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			n.mu.Lock()
			defer n.mu.Unlock()
			list := n.serving[userID]
			for i, o := range list {
				if o == s {
					n.serving[userID] = append(list[:i:i], list[i+1:]...)
					break
				}
			}
			if len(n.serving[userID]) == 0 {
				delete(n.serving, userID)
			}
		})
	}, nil
}

func (r *fakeRouter) Forward(ctx context.Context, userID, fn, requestID string, args json.RawMessage) (json.RawMessage, error) {
	n := r.net
	n.mu.Lock()
	list := n.serving[userID]
	if len(list) == 0 {
		n.mu.Unlock()
		return nil, agentcall.ErrNotConnected
	}
	s := list[len(list)-1]
	n.answered[s.node]++
	n.mu.Unlock()
	raw, err := s.h(ctx, fn, requestID, args)
	return raw, overTheWire(err)
}

// overTheWire keeps what a real Router carries back of a handler's error
// (package relay/cluster encodes it): the protocol and HTTP errors and
// the hub's sentinels; any other error only as its text.
func overTheWire(err error) error {
	var pe *protocol.Error
	var he *httpapi.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe):
		c := *pe
		return &c
	case errors.As(err, &he):
		c := *he
		return &c
	}
	for _, s := range []error{agentcall.ErrNotConnected, agentcall.ErrConnectionLost, agentcall.ErrTimeout} {
		if errors.Is(err, s) {
			return s
		}
	}
	return errors.New(err.Error())
}

// leaseStore is the store the nodes of a test share, whose leases a test
// can break for one node: its renewals refused or failing, its releases
// lost (a node that died rather than closed).
type leaseStore struct {
	*store.SQLite
	mu        sync.Mutex
	refuse    map[string]bool
	fail      map[string]bool
	noRelease map[string]bool
}

var errLeaseStore = errors.New("test: the store does not answer")

func (s *leaseStore) AcquireBrokerLease(ctx context.Context, userID, node string, ttl time.Duration) (bool, error) {
	s.mu.Lock()
	refuse, fail := s.refuse[node], s.fail[node]
	s.mu.Unlock()
	switch {
	case fail:
		return false, errLeaseStore
	case refuse:
		return false, nil
	}
	return s.SQLite.AcquireBrokerLease(ctx, userID, node, ttl)
}

func (s *leaseStore) ReleaseBrokerLease(ctx context.Context, userID, node string) error {
	s.mu.Lock()
	lost := s.noRelease[node]
	s.mu.Unlock()
	if lost {
		return nil
	}
	return s.SQLite.ReleaseBrokerLease(ctx, userID, node)
}

func (s *leaseStore) set(m *map[string]bool, node string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if *m == nil {
		*m = map[string]bool{}
	}
	(*m)[node] = on
}

// node is one relay node's Manager in a test, with what it built.
type node struct {
	*broker.Manager
	name   string
	builds atomic.Int32 // platforms built: instances started
	closes atomic.Int32 // platforms closed: instances stopped
}

// countedPlatform counts its Close on its node.
type countedPlatform struct {
	broker.Platform
	n *node
}

func (p countedPlatform) Close() error {
	p.n.closes.Add(1)
	return p.Platform.Close()
}

// Test timings: a short lease (yet long enough that a renewal slowed by
// a busy machine rarely times out), and a sweep for links running
// nowhere every few milliseconds.
const (
	testTTL  = 1500 * time.Millisecond
	testSync = 20 * time.Millisecond
)

// newNode starts a relay node on the fixture's market and db, with its
// Router on net, running (Run) until the test ends.
func (f *fixture) newNode(t *testing.T, net *fakeNet, db broker.Store, name string, ttl time.Duration) *node {
	t.Helper()
	n := &node{name: name}
	m, err := broker.New(broker.Options{Store: db, Keys: f.keys, Node: name, Router: &fakeRouter{net: net, node: name},
		LeaseTTL: ttl, SyncInterval: testSync,
		NewPlatform: func(ctx context.Context, c broker.PlatformConfig) (broker.Platform, error) {
			p, err := f.markets.newPlatform(ctx, c)
			if err != nil {
				return nil, err
			}
			n.builds.Add(1)
			return countedPlatform{Platform: p, n: n}, nil
		},
		Config: f.configs.get, Events: f.configs, Now: f.markets.clock.Now, EngineTick: 10 * time.Millisecond,
		Login: func(context.Context, string, broker.Secrets) (broker.Session, error) {
			return broker.Session{AccessToken: "tok", Expires: time.Now().Add(time.Hour)}, nil
		}})
	require.NoError(t, err)
	n.Manager = m
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = m.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		m.Close()
	})
	return n
}

// holder returns the node holding the user's lease in the store, "" when
// none does, the error's text when the store fails (no require: it runs
// in Eventually's goroutine too).
func holder(db *store.SQLite, userID string) string {
	h, err := db.BrokerLeaseHolder(context.Background(), userID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return ""
	case err != nil:
		return err.Error()
	}
	return h
}

func placeArgs(qty int) map[string]any {
	return map[string]any{"account": "Sim101", "action": "Buy", "instrument": "ES 12-26", "orderType": "Market",
		"quantity": qty, "timeInForce": "Day"}
}

func requireBrokerUnavailable(t *testing.T, err error) *httpapi.Error {
	t.Helper()
	var he *httpapi.Error
	require.ErrorAs(t, err, &he)
	require.Equal(t, http.StatusServiceUnavailable, he.Status)
	require.Equal(t, errcode.BrokerUnavailable, he.Code)
	return he
}

// Two nodes over one store: the user's instance runs on the node that
// holds the lease, and only there; the other forwards every entry point
// to it: trading calls (a write's request id answers once), the
// restart check of a monitor, the link's live state, and the news of a
// changed configuration, which its engines act on.
func TestClusterRunsAUsersInstanceOnOneNode(t *testing.T) {
	t.Parallel()
	// A lease long enough that a renewal slowed by a busy machine does
	// not lose it (which restarts the instance, rightly).
	const ttl = 3 * time.Second
	f := newFixture(t)
	net := newFakeNet()
	db := &leaseStore{SQLite: f.store}
	a := f.newNode(t, net, db, "a", ttl)
	b := f.newNode(t, net, db, "b", ttl)

	_, err := a.Link(context.Background(), "alice", broker.EnvDemo, broker.MethodAPIKey, apiKey())
	require.NoError(t, err)
	require.Equal(t, "a", holder(f.store, "alice"))
	require.Eventually(t, func() bool { return net.server("alice") == "a" }, waitFor, time.Millisecond)

	_, err = call(t, b.Manager, "alice", protocol.FnListAccounts, "", nil)
	require.NoError(t, err)
	first, err := call(t, b.Manager, "alice", protocol.FnPlaceOrder, "req-b1", placeArgs(2))
	require.NoError(t, err)
	again, err := call(t, b.Manager, "alice", protocol.FnPlaceOrder, "req-b1", placeArgs(2))
	require.NoError(t, err)
	require.JSONEq(t, string(first), string(again))
	require.Equal(t, 2, position(t, f, "alice"), "the repeat placed nothing")
	require.Equal(t, 3, net.answeredBy("a"))

	// The agent's codes travel back as they are.
	_, err = call(t, b.Manager, "alice", protocol.FnGetAccount, "", map[string]any{"account": "Nope"})
	var he *httpapi.Error
	require.ErrorAs(t, err, &he)
	require.Equal(t, errcode.AccountIdentityUnresolved, he.Code)

	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	_, err = b.CheckMonitorRestart(ctx, "alice", protocol.Monitor{Account: "Sim101"})
	require.NoError(t, err)
	_, err = b.CheckMonitorRestart(ctx, "alice", protocol.Monitor{})
	var pe *protocol.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, protocol.CodeMissingFields, pe.Code)

	before := net.answeredBy("a")
	st, err := b.Status(ctx, "alice")
	require.NoError(t, err)
	require.True(t, st.Linked)
	require.Equal(t, []string{"Sim101", "Sim102"}, st.Accounts)
	require.Equal(t, before+1, net.answeredBy("a"), "the live state comes from the node running the link")

	f.configs.set("alice", protocol.Config{Controls: protocol.Controls{KillSwitch: true, FlattenOnKill: true}})
	b.ConfigChanged("alice")
	require.Eventually(t, func() bool { return position(t, f, "alice") == 0 }, waitFor, 10*time.Millisecond)

	// Many sweeps and a renewal later, b still runs nothing.
	time.Sleep(ttl/3 + 100*testSync)
	require.Zero(t, b.builds.Load(), "b never ran the user's instance")
	require.Equal(t, int32(1), a.builds.Load())
	require.Equal(t, "a", holder(f.store, "alice"))
	require.Empty(t, net.overlapping())
}

// The node running a user's instance closes: it gives up the lease, and
// the other node runs the instance on its next sweep; the journal of
// writes, in the store, answers a repeat there.
func TestClusterTakeoverWhenTheHolderCloses(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	net := newFakeNet()
	db := &leaseStore{SQLite: f.store}
	a := f.newNode(t, net, db, "a", testTTL)
	b := f.newNode(t, net, db, "b", testTTL)
	_, err := a.Link(context.Background(), "alice", broker.EnvDemo, broker.MethodAPIKey, apiKey())
	require.NoError(t, err)
	first, err := call(t, b.Manager, "alice", protocol.FnPlaceOrder, "req-t1", placeArgs(1))
	require.NoError(t, err)

	start := time.Now()
	require.NoError(t, a.Close())
	require.Equal(t, int32(1), a.closes.Load(), "a stopped its instance")
	require.Eventually(t, func() bool { return net.server("alice") == "b" }, waitFor, time.Millisecond)
	t.Logf("b runs the instance %v after a closed (lease %v, sweep %v)", time.Since(start), testTTL, testSync)
	require.Equal(t, "b", holder(f.store, "alice"))

	again, err := call(t, b.Manager, "alice", protocol.FnPlaceOrder, "req-t1", placeArgs(1))
	require.NoError(t, err)
	require.JSONEq(t, string(first), string(again))
	require.Equal(t, 1, position(t, f, "alice"))
	require.Equal(t, int32(1), b.builds.Load())
	require.Empty(t, net.overlapping())
}

// The node running a user's instance dies (its lease is not given up):
// until the lease expires the user's calls on another node answer 503
// broker_unavailable with a Retry-After; then that node runs the instance.
func TestClusterTakeoverWhenTheHolderDies(t *testing.T) {
	t.Parallel()
	const ttl = 3 * time.Second // the lease outlives the first call after the death
	f := newFixture(t)
	net := newFakeNet()
	db := &leaseStore{SQLite: f.store}
	a := f.newNode(t, net, db, "a", ttl)
	b := f.newNode(t, net, db, "b", ttl)
	_, err := a.Link(context.Background(), "alice", broker.EnvDemo, broker.MethodAPIKey, apiKey())
	require.NoError(t, err)
	require.Eventually(t, func() bool { return net.server("alice") == "a" }, waitFor, time.Millisecond)

	db.set(&db.noRelease, "a", true)
	start := time.Now()
	require.NoError(t, a.Close())
	_, err = call(t, b.Manager, "alice", protocol.FnListAccounts, "", nil)
	he := requireBrokerUnavailable(t, err)
	require.Positive(t, he.RetryAfter)
	require.Zero(t, b.builds.Load())

	require.Eventually(t, func() bool { return net.server("alice") == "b" }, waitFor, time.Millisecond)
	t.Logf("b runs the instance %v after a died (lease %v)", time.Since(start), ttl)
	_, err = call(t, b.Manager, "alice", protocol.FnListAccounts, "", nil)
	require.NoError(t, err)
	require.Empty(t, net.overlapping())
}

// A renewal of the lease refused, or failing: the node stops the
// instance at once and serves the user no more; once the lease expires
// the other node runs the instance.
func TestClusterLostLeaseStopsTheInstance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		break_ func(db *leaseStore)
	}{
		{"refused", func(db *leaseStore) { db.set(&db.refuse, "a", true) }},
		{"failed", func(db *leaseStore) { db.set(&db.fail, "a", true) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			net := newFakeNet()
			db := &leaseStore{SQLite: f.store}
			a := f.newNode(t, net, db, "a", testTTL)
			_, err := a.Link(context.Background(), "alice", broker.EnvDemo, broker.MethodAPIKey, apiKey())
			require.NoError(t, err)
			require.Eventually(t, func() bool { return net.server("alice") == "a" }, waitFor, time.Millisecond)

			tc.break_(db)
			require.Eventually(t, func() bool { return a.closes.Load() == 1 }, waitFor, time.Millisecond,
				"the instance stops")
			require.Empty(t, net.server("alice"), "a serves the user no more")
			_, err = call(t, a.Manager, "alice", protocol.FnListAccounts, "", nil)
			require.Error(t, err, "nor runs the user's calls itself")

			b := f.newNode(t, net, db, "b", testTTL)
			require.Eventually(t, func() bool { return net.server("alice") == "b" }, waitFor, time.Millisecond)
			_, err = call(t, a.Manager, "alice", protocol.FnListAccounts, "", nil)
			require.NoError(t, err, "a forwards to b")
			require.Equal(t, int32(1), a.builds.Load())
			require.Equal(t, int32(1), b.builds.Load())
			require.Empty(t, net.overlapping())
		})
	}
}

// A call on a node when no node runs the user's instance: the node takes
// the lease and runs it itself.
func TestClusterCallStartsAnInstanceRunningNowhere(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, err := f.manager(t).Links().Put(context.Background(), "bob", broker.EnvDemo, broker.MethodAPIKey, apiKey())
	require.NoError(t, err)
	net := newFakeNet()
	n, err := broker.New(broker.Options{Store: f.store, Keys: f.keys, Node: "c", Router: &fakeRouter{net: net, node: "c"},
		NewPlatform: f.markets.newPlatform, Now: f.markets.clock.Now})
	require.NoError(t, err)
	defer n.Close()
	_, err = call(t, n, "bob", protocol.FnListAccounts, "", nil)
	require.NoError(t, err)
	require.Equal(t, "c", holder(f.store, "bob"))
	require.Equal(t, "c", net.server("bob"))
	require.NoError(t, n.Close())
	require.Empty(t, holder(f.store, "bob"), "Close gives the lease up")
	require.Empty(t, net.server("bob"))
}

// Linking again, or unlinking, on a node that does not run the user's
// instance: the node running it follows at once.
func TestClusterRelinkAndUnlinkOnAnotherNode(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	net := newFakeNet()
	db := &leaseStore{SQLite: f.store}
	a := f.newNode(t, net, db, "a", testTTL)
	b := f.newNode(t, net, db, "b", testTTL)
	_, err := a.Link(context.Background(), "alice", broker.EnvDemo, broker.MethodAPIKey, apiKey())
	require.NoError(t, err)
	require.Eventually(t, func() bool { return net.server("alice") == "a" }, waitFor, time.Millisecond)

	_, err = b.Link(context.Background(), "alice", broker.EnvLive, broker.MethodAPIKey, apiKey())
	require.NoError(t, err)
	require.Eventually(t, func() bool { return a.closes.Load() == 1 }, waitFor, time.Millisecond, "a stopped the replaced link")
	require.Eventually(t, func() bool { return net.server("alice") != "" }, waitFor, time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	st, err := b.Status(ctx, "alice")
	require.NoError(t, err)
	require.Equal(t, broker.EnvLive, st.Env)

	had, err := b.Unlink(ctx, "alice", protocol.ActivitySource{Kind: protocol.SourceAPI})
	require.NoError(t, err)
	require.True(t, had)
	require.Empty(t, net.server("alice"), "the instance stopped on its node")
	// A sweep that read the link before it was deleted may hold the lease
	// a moment.
	require.Eventually(t, func() bool { return holder(f.store, "alice") == "" }, waitFor, time.Millisecond)
	_, err = call(t, a.Manager, "alice", protocol.FnListAccounts, "", nil)
	var he *httpapi.Error
	require.ErrorAs(t, err, &he)
	require.Equal(t, errcode.TradovateNotLinked, he.Code)
	require.Empty(t, net.overlapping())
}

// The Manager's own functions travel between nodes only: a caller of
// the trading API cannot call them, with or without a Router.
func TestCallRefusesTheManagersOwnFunctions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	net := newFakeNet()
	db := &leaseStore{SQLite: f.store}
	alone := f.manager(t)
	a := f.newNode(t, net, db, "a", testTTL)
	b := f.newNode(t, net, db, "b", testTTL)
	_, err := a.Link(context.Background(), "alice", broker.EnvDemo, broker.MethodAPIKey, apiKey())
	require.NoError(t, err)
	for _, m := range []*broker.Manager{alone, a.Manager, b.Manager} {
		for _, fn := range []string{"configChanged", "checkMonitorRestart", "linkState", "refresh", "x"} {
			_, err := call(t, m, "alice", broker.FnPrefix+fn, "", nil)
			var pe *protocol.Error
			require.ErrorAs(t, err, &pe, fn)
			require.Equal(t, protocol.CodeUnknownFunction, pe.Code)
		}
	}
	require.Zero(t, net.answeredBy("a"))
}
