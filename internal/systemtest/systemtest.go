// Package systemtest runs the whole system in one test process: a real
// relay on a loopback port, with its store, and real agents on simulators
// (or on the NinjaTrader bridge in front of a fake add-on) dialing it, as
// the two binaries run them; and a client that calls the relay's HTTP API
// as a bot author does. It is for the end-to-end tests of any package
// (the relay's own, first of all). It imports both relay/ and agent/,
// which is why it lives outside both: relay/ never imports agent/ outside
// its tests.
package systemtest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"tradebridge/agent"
	"tradebridge/internal/testkit"
	"tradebridge/relay"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/profile"
	"tradebridge/relay/store"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/ninjatrader"
	"tradebridge/trading/bridge/ninjatrader/ntfake"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/ops"
)

// System is a real relay on a loopback port and the test's users. New
// and NewWith make one on a SQLite store of its own, with the users
// alice (pro), bob (elite) and carol (free); a test that needs another
// store (a cluster's nodes on PostgreSQL) fills the fields itself and
// calls Start.
type System struct {
	T     testing.TB
	Store store.Store
	// Logs holds what the relay and the agents logged, at every level
	// (New's; nil for a System a test assembles).
	Logs *observer.ObservedLogs
	Log  *zap.Logger
	// Addr is the relay's address (host:port) and Base its URL, set by
	// Start.
	Addr, Base string
	// Users are the credentials of the test's users, by name.
	Users  map[string]auth.Credentials
	Client *http.Client
	// Budget is the relay's trading budget; tests that do not test
	// budgets use Roomy.
	Budget budget.Policy
	// Tweak, when set, changes the relay's options before each start.
	Tweak func(*relay.Options)

	stop func()
	// relay is the relay serving now.
	relay atomic.Pointer[relay.Relay]
}

// Relay returns the relay serving now.
func (s *System) Relay() *relay.Relay { return s.relay.Load() }

// Roomy is a budget tests that do not test budgets never exhaust.
var Roomy = budget.Policy{Name: "roomy", Rate: 1 << 20, Period: time.Minute, Burst: 1 << 20}

// SimStart is when the simulators of these tests stand: Wednesday
// 18 November 2026, 10:00 in New York, the market open whenever the tests
// run.
var SimStart = time.Date(2026, 11, 18, 15, 0, 0, 0, time.UTC)

// New starts a relay with the test users, stopped at t's cleanup.
func New(t testing.TB) *System {
	t.Helper()
	return NewWith(t, nil)
}

// NewWith is New with a relay whose options tweak may change (before
// every start, restarts included).
func NewWith(t testing.TB, tweak func(*relay.Options)) *System {
	t.Helper()
	s := prepare(t, tweak)
	s.Start()
	return s
}

// prepare makes what NewWith starts: the store, the test users, the
// client.
func prepare(t testing.TB, tweak func(*relay.Options)) *System {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core)
	if _, ok := t.(*testing.B); ok {
		// Benchmarks keep the production level: nothing per call.
		log = zap.New(zapcore.NewNopCore())
	}
	st, err := store.Open(context.Background(), store.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	s := &System{T: t, Store: st, Logs: logs, Log: log, Users: map[string]auth.Credentials{},
		Budget: Roomy, Tweak: tweak,
		Client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}}
	for name, plan := range map[string]auth.Plan{"alice": auth.PlanPro, "bob": auth.PlanElite, "carol": auth.PlanFree} {
		creds, err := auth.CreateUser(context.Background(), st, name, plan, time.Now())
		require.NoError(t, err)
		s.Users[name] = creds
	}
	return s
}

// Start runs the relay on a free loopback port, setting Addr and Base,
// until Stop or t's cleanup. Client's idle connections are closed at the
// cleanup too; the store is the caller's to close.
func (s *System) Start() {
	s.T.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(s.T, err)
	s.Addr = ln.Addr().String()
	s.Base = "http://" + s.Addr
	s.serve(ln)
	s.T.Cleanup(func() {
		s.Stop()
		s.Client.CloseIdleConnections()
	})
}

// CompatibleToken issues user another API token, of the compatible
// response profile.
func (s *System) CompatibleToken(user string) string {
	s.T.Helper()
	tok, err := auth.IssueToken(context.Background(), s.Store, s.Users[user].UserID, auth.KindAPI, profile.Compatible, time.Now())
	require.NoError(s.T, err)
	return tok
}

// ScopedToken issues user another API token, of the scope.
func (s *System) ScopedToken(user string, scope auth.Scope) string {
	s.T.Helper()
	tok, err := auth.IssueTokenWith(context.Background(), s.Store, s.Users[user].UserID, auth.KindAPI,
		auth.TokenOptions{Scope: scope}, time.Now())
	require.NoError(s.T, err)
	return tok
}

// serve runs a relay on ln until Stop.
func (s *System) serve(ln net.Listener) {
	s.T.Helper()
	opts := relay.Options{Store: s.Store, Logger: s.Log, AuthCacheTTL: 50 * time.Millisecond,
		TradingBudget: s.Budget, IPBudget: Roomy}
	if s.Tweak != nil {
		s.Tweak(&opts)
	}
	r, err := relay.New(opts)
	require.NoError(s.T, err)
	s.relay.Store(r)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, ln) }()
	var once sync.Once
	s.stop = func() {
		once.Do(func() {
			cancel()
			assert.NoError(s.T, <-done, "the relay's Serve")
		})
	}
}

// Stop stops the relay (once; later calls do nothing).
func (s *System) Stop() { s.stop() }

// Restart stops the relay and starts a new one on the same address.
func (s *System) Restart() {
	s.T.Helper()
	s.Stop()
	// The old relay closed its connections; a request must not pick one
	// the client has not yet seen closed (a POST on it fails with EOF).
	s.Client.CloseIdleConnections()
	var ln net.Listener
	require.Eventually(s.T, func() bool {
		var err error
		ln, err = net.Listen("tcp", s.Addr)
		return err == nil
	}, testkit.Medium, testkit.Tick)
	s.serve(ln)
}

// RunningAgent is an agent connected to the relay, on its own simulator.
type RunningAgent struct {
	Agent *agent.Agent
	Sim   *sim.Platform
	// Clock is the simulator's, which the agent's engines and operations
	// read too.
	Clock *sim.ManualClock
	// Pair, when the agent trades through the NinjaTrader bridge, is the
	// bridge and the fake add-on in front of Sim.
	Pair *ntfake.Pair
	// Platform is the agent's platform: Sim, or the bridge of Pair.
	Platform bridge.Platform
	done     chan struct{}
}

// PlatformUnderTest names the platform the harness's agents trade on:
// "sim" (the default), or "ninjatrader", where the agent drives the
// NinjaTrader bridge and the bridge a fake add-on that trades on the
// simulator (TRADEBRIDGE_TEST_PLATFORM=ninjatrader; make test runs the
// relay's tests once so).
var PlatformUnderTest = cmp.Or(os.Getenv("TRADEBRIDGE_TEST_PLATFORM"), "sim")

// StartAgent starts user's agent on the platform under test and waits
// until it is connected; it stops at t's cleanup.
func (s *System) StartAgent(user string) *RunningAgent {
	s.T.Helper()
	return s.StartAgentWith(user, nil)
}

// StartAgentWith starts an agent whose options tweak may change, on the
// platform under test.
func (s *System) StartAgentWith(user string, tweak func(*agent.Options)) *RunningAgent {
	s.T.Helper()
	return s.StartAgentOn(user, PlatformUnderTest, tweak)
}

// StartAgentOn starts an agent on a platform kind: "sim", or
// "ninjatrader" (the bridge in front of a fake add-on over the simulator).
func (s *System) StartAgentOn(user, kind string, tweak func(*agent.Options)) *RunningAgent {
	s.T.Helper()
	// A clock standing on a Wednesday morning in New York: the market is
	// open whenever the tests run, and prices stay put.
	clock := sim.NewManualClock(SimStart)
	p, err := sim.New(sim.Options{Seed: 1, Clock: clock})
	require.NoError(s.T, err)
	opts := agent.Options{RelayURL: s.Base, Token: s.Users[user].AgentToken, Platform: p, Logger: s.Log.Named(user),
		Ops: ops.Options{Now: clock.Now}}
	ra := &RunningAgent{Sim: p, Clock: clock, done: make(chan struct{})}
	switch kind {
	case "sim":
	case ninjatrader.Kind:
		ra.Pair = ntfake.NewPair(s.T, p, clock.Now)
		opts.Platform = ra.Pair.Bridge // the agent runs its connection loop
	default:
		s.T.Fatalf("TRADEBRIDGE_TEST_PLATFORM names no platform the tests know")
	}
	if tweak != nil {
		tweak(&opts)
	}
	a, err := agent.New(opts)
	require.NoError(s.T, err)
	ra.Agent, ra.Platform = a, opts.Platform
	if _, runs := opts.Platform.(agent.Runner); ra.Pair != nil && !runs {
		ra.Pair.Run(s.T) // wrapped by the test: the agent cannot run its loop
	}
	go func() {
		defer close(ra.done)
		_ = a.Run(context.Background())
	}()
	s.T.Cleanup(ra.Stop)
	require.Eventually(s.T, a.Connected, testkit.Medium, 5*time.Millisecond)
	if nt, ok := opts.Platform.(*ninjatrader.Platform); ok {
		require.Eventually(s.T, func() bool { return nt.Status().Connected }, testkit.Medium, time.Millisecond)
	}
	if r := s.Relay(); ra.Pair != nil && r != nil {
		// On the NinjaTrader bridge the platform's connections follow the
		// handshake: wait until the relay knows the agent's accounts, so
		// that a test may name one at once.
		userID := s.Users[user].UserID
		require.Eventually(s.T, func() bool {
			info, ok := r.Hub().Info(userID)
			return ok && len(info.Hello.Connections) > 0
		}, testkit.Medium, time.Millisecond, "the relay learned the agent's connections")
	}
	return ra
}

// Close closes the agent and waits until it has ended, leaving its
// platform open: a test may start another agent on it.
func (ra *RunningAgent) Close() {
	ra.Agent.Close()
	<-ra.done
}

// MovePrice moves the instrument's last price on the agent's simulator
// to last and publishes what the move changed (quotes, positions' and
// accounts' P&L), as a market move would: the agent's engines see it
// through the platform's events.
func (ra *RunningAgent) MovePrice(instrument string, last float64) error {
	if err := ra.Sim.SetPrice(instrument, last); err != nil {
		return err
	}
	return ra.Sim.Step(context.Background())
}

// Stop closes the agent, waits for it and closes its simulator. Once per
// agent: StartAgent's cleanup calls it.
func (ra *RunningAgent) Stop() {
	ra.Close()
	ra.Sim.Close()
}

// Response is the relay's answer to a request: its status and headers,
// the envelope's fields when the body is JSON, and the body as it came.
type Response struct {
	Status  int             `json:"-"`
	Header  http.Header     `json:"-"`
	Success bool            `json:"success"`
	Data    json.RawMessage `json:"data"`
	Error   string          `json:"error"`
	Detail  string          `json:"detail"`
	OrderID string          `json:"orderId"`
	Raw     []byte          `json:"-"`
}

// Do calls the relay with token (none when empty), a JSON body (none
// when empty) and more headers as name, value pairs; a failure to get an
// answer fails the test. Only on the test's goroutine: others use
// DoAsync.
func (s *System) Do(method, path, token, body string, header ...string) Response {
	s.T.Helper()
	r, err := s.Request(method, path, token, body, header...)
	require.NoError(s.T, err)
	return r
}

// DoAsync is Do for other goroutines: a failure is a response with status
// -1 and the error as its raw body.
func (s *System) DoAsync(method, path, token, body string, header ...string) Response {
	r, err := s.Request(method, path, token, body, header...)
	if err != nil {
		return Response{Status: -1, Raw: []byte(err.Error())}
	}
	return r
}

// NewRequest builds a request to the relay with token, a JSON body and
// more headers as name, value pairs.
func (s *System) NewRequest(method, path, token, body string, header ...string) (*http.Request, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.Base+path, rd)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return req, nil
}

// Request is Do returning the error: for any goroutine.
func (s *System) Request(method, path, token, body string, header ...string) (Response, error) {
	req, err := s.NewRequest(method, path, token, body, header...)
	if err != nil {
		return Response{}, err
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return Response{}, err
	}
	r := Response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &r); err != nil {
			return Response{}, fmt.Errorf("decoding %q: %w", raw, err)
		}
	}
	return r, nil
}
