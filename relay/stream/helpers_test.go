package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/auth"
	"tradebridge/relay/auth/authtest"
	"tradebridge/relay/budget"
	"tradebridge/relay/profile"
	"tradebridge/relay/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Tokens of the tests' users.
const (
	tokA    = "tb_api_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	tokA2   = "tb_api_a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a"
	tokAC   = "tb_api_acacacacacacacacacacacacacacacacacacacacaca" // userA, compatible profile
	tokB    = "tb_api_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	tokFree = "tb_api_ffffffffffffffffffffffffffffffffffffffffff"
	userA   = "usr_a"
	userB   = "usr_b"
)

// newFakeAuth is an Authenticator over the test tokens, which tests may
// revoke.
func newFakeAuth() *authtest.Auth {
	return authtest.New(map[string]auth.Principal{
		tokA:    {UserID: userA, Plan: auth.PlanPro, Kind: auth.KindAPI},
		tokA2:   {UserID: userA, Plan: auth.PlanPro, Kind: auth.KindAPI},
		tokAC:   {UserID: userA, Plan: auth.PlanPro, Kind: auth.KindAPI, Profile: profile.Compatible},
		tokB:    {UserID: userB, Plan: auth.PlanElite, Kind: auth.KindAPI},
		tokFree: {UserID: "usr_free", Plan: auth.PlanFree, Kind: auth.KindAPI},
	})
}

// upCall is one call the fake upstream received.
type upCall struct {
	User, Fn, RequestID string
	Args                json.RawMessage
}

// fakeUpstream stands in for the hub and the users' agents. Agents are
// connected unless a test says otherwise. SetSubscriptions resolves roots
// to the 12-26 contract and knows the roots in knownRoots; GetPnl answers
// one account named after the user; other functions echo their call, or
// run onCall when set.
type fakeUpstream struct {
	mu           sync.Mutex
	disconnected map[string]bool
	calls        []upCall
	pnlEpoch     int64
	onCall       func(ctx context.Context, c upCall) (json.RawMessage, error)
	// onSubscribed, when set, runs with the contracts of each
	// SetSubscriptions before it answers, as an agent that publishes the
	// current quotes of what it just subscribed.
	onSubscribed func(user string, contracts []string)
	// subsErr, when set, is SetSubscriptions' answer (a platform not
	// ready behind a connected agent); such calls are counted in
	// subsFailed, not in calls.
	subsErr    error
	subsFailed int
}

func (f *fakeUpstream) failedSets() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.subsFailed
}

func (f *fakeUpstream) setSubsErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subsErr = err
}

var knownRoots = map[string]bool{"ES": true, "NQ": true, "CL": true, "GC": true, "YM": true, "RTY": true, "MES": true, "MNQ": true}

func (f *fakeUpstream) Connected(userID string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.disconnected[userID]
}

func (f *fakeUpstream) setConnected(userID string, up bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.disconnected == nil {
		f.disconnected = map[string]bool{}
	}
	f.disconnected[userID] = !up
}

func (f *fakeUpstream) Call(ctx context.Context, userID, fn, requestID string, args json.RawMessage) (json.RawMessage, error) {
	c := upCall{User: userID, Fn: fn, RequestID: requestID, Args: append(json.RawMessage(nil), args...)}
	f.mu.Lock()
	if f.disconnected[userID] {
		f.mu.Unlock()
		return nil, agentcall.ErrNotConnected
	}
	if fn == protocol.FnSetSubscriptions && f.subsErr != nil {
		f.subsFailed++
		err := f.subsErr
		f.mu.Unlock()
		return nil, err
	}
	f.calls = append(f.calls, c)
	onCall := f.onCall
	f.pnlEpoch++
	epoch := f.pnlEpoch
	f.mu.Unlock()
	switch fn {
	case protocol.FnSetSubscriptions:
		var a protocol.SubscriptionsArgs
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, err
		}
		res := protocol.SubscriptionsResult{Instruments: []string{}}
		for _, n := range a.Instruments {
			if c, ok := fakeResolve(n); ok {
				res.Instruments = append(res.Instruments, c)
			} else {
				res.Unknown = append(res.Unknown, n)
			}
		}
		f.mu.Lock()
		hook := f.onSubscribed
		f.mu.Unlock()
		if hook != nil {
			hook(userID, res.Instruments)
		}
		return json.Marshal(res)
	case protocol.FnGetPnl:
		return json.Marshal(protocol.PnlSnapshot{Epoch: epoch, Accounts: []protocol.PnlAccount{
			{Account: "acct-" + userID, RealizedProfitLoss: float64(epoch), Positions: []protocol.Position{}}}})
	}
	if onCall != nil {
		return onCall(ctx, c)
	}
	return echoRecord(c)
}

// listFunctions answer with a JSON array, as the agent's records of them
// are; package profile names the array in the reply.
var listFunctions = map[string]bool{
	protocol.FnListAccounts: true, protocol.FnListPositions: true, protocol.FnGetAllPositions: true,
	protocol.FnListOrders: true, protocol.FnGetAllOrders: true, protocol.FnListExecutions: true,
	protocol.FnGetExecutionsByOrderID: true, protocol.FnListStrategies: true, protocol.FnListAllStrategies: true,
	protocol.FnGetAtmTemplates: true,
}

// echoRecord is the fake agent's record for a call: for a list function
// an array of one element, else an object; either echoes the user, the
// function and the arguments, and writes carry orderId o-1.
func echoRecord(c upCall) (json.RawMessage, error) {
	m := map[string]any{"user": c.User, "fn": c.Fn, "args": c.Args}
	if f, _ := protocol.LookupFunction(c.Fn); f.Write {
		m["orderId"] = "o-1"
	}
	if listFunctions[c.Fn] {
		return json.Marshal([]any{m})
	}
	return json.Marshal(m)
}

// fakeResolve resolves like the simulator: a known root or a contract of
// one.
func fakeResolve(n string) (string, bool) {
	if c, ok := parseContract(n); ok {
		return c.name, knownRoots[c.root]
	}
	if knownRoots[n] {
		return n + " 12-26", true
	}
	if in, err := protocol.ParseInstrument(n); err == nil && in.Form == protocol.InstrumentMonthCode && knownRoots[in.Root] {
		year := in.Year
		if in.YearDigits == 1 {
			year += 20
		}
		return protocol.ContractName(in.Root, in.Month, year), true
	}
	return "", false
}

func (f *fakeUpstream) callsOf(fn string) []upCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []upCall
	for _, c := range f.calls {
		if c.Fn == fn {
			out = append(out, c)
		}
	}
	return out
}

// lastSet is the last subscription set sent for user, and how many were.
func (f *fakeUpstream) lastSet(user string) ([]string, int) {
	var last []string
	n := 0
	for _, c := range f.callsOf(protocol.FnSetSubscriptions) {
		if c.User != user {
			continue
		}
		var a protocol.SubscriptionsArgs
		_ = json.Unmarshal(c.Args, &a)
		last = a.Instruments
		n++
	}
	return last, n
}

// fakeClock is a Clock whose time moves only when a test says: the
// test kit's, its tickers given as this package's Ticker.
type fakeClock struct{ *testkit.Clock }

func newFakeClock() *fakeClock {
	return &fakeClock{testkit.NewClock(time.Date(2026, 11, 2, 15, 0, 0, 0, time.UTC))}
}

func (c *fakeClock) NewTicker(d time.Duration) Ticker { return c.Clock.NewTicker(d) }

// env is a Server on a loopback httptest server.
type env struct {
	t      *testing.T
	srv    *Server
	store  *store.SQLite
	up     *fakeUpstream
	auth   *authtest.Auth
	clock  *fakeClock
	budget *budget.Limiter
	logs   *observer.ObservedLogs
	http   *httptest.Server
	url    string
}

func newEnv(t *testing.T, tweak ...func(*Options)) *env {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	roomy, err := budget.New(budget.Options{Policy: budget.Policy{Name: "trading", Rate: 1 << 20, Period: time.Minute, Burst: 1 << 20}})
	require.NoError(t, err)
	subs, err := budget.New(budget.Options{Policy: budget.Policy{Name: "subscriptions", Rate: 1 << 20, Period: time.Minute, Burst: 1 << 20}})
	require.NoError(t, err)
	st, err := store.Open(context.Background(), store.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	for _, id := range []string{userA, userB, "usr_free"} {
		require.NoError(t, st.CreateUser(context.Background(), store.User{ID: id, Name: id, Plan: "pro", CreatedAt: time.Now()}))
	}
	e := &env{t: t, store: st, up: &fakeUpstream{}, auth: newFakeAuth(), clock: newFakeClock(), budget: roomy, logs: logs}
	opts := Options{Auth: e.auth, Upstream: e.up, Budget: roomy, Idempotency: st, SubscriptionBudget: subs, Logger: zap.New(core), Clock: e.clock}
	for _, f := range tweak {
		f(&opts)
	}
	e.budget = opts.Budget
	e.srv, err = New(opts)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("GET "+Path, e.srv)
	e.http = httptest.NewServer(mux)
	e.url = "ws" + strings.TrimPrefix(e.http.URL, "http") + Path
	t.Cleanup(func() {
		require.NoError(t, e.srv.Close())
		e.http.Close()
	})
	return e
}

// client is a test's end of a socket. It checks that seq rises by one on
// every frame.
type client struct {
	t       *testing.T
	ws      *websocket.Conn
	seq     float64
	pending []map[string]any
}

// dial opens a socket with the token in the Authorization header and
// reads the status frame every socket starts with.
func (e *env) dial(token string) *client {
	e.t.Helper()
	c := e.dialNoStatus(token)
	st := c.read()
	require.Equal(e.t, "status", st["type"])
	return c
}

func (e *env) dialNoStatus(token string) *client {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Medium)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, e.url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	require.NoError(e.t, err)
	if resp.Body != nil {
		resp.Body.Close()
	}
	ws.SetReadLimit(1 << 24)
	c := &client{t: e.t, ws: ws}
	e.t.Cleanup(func() { ws.CloseNow() })
	return c
}

func (c *client) sendRaw(s string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Medium)
	defer cancel()
	require.NoError(c.t, c.ws.Write(ctx, websocket.MessageText, []byte(s)))
}

func (c *client) send(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	require.NoError(c.t, err)
	c.sendRaw(string(b))
}

// read returns the next frame.
func (c *client) read() map[string]any {
	c.t.Helper()
	if len(c.pending) > 0 {
		f := c.pending[0]
		c.pending = c.pending[1:]
		return f
	}
	f, err := c.readErr(testkit.Medium)
	require.NoError(c.t, err)
	return f
}

func (c *client) readErr(timeout time.Duration) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	typ, data, err := c.ws.Read(ctx)
	if err != nil {
		return nil, err
	}
	if typ != websocket.MessageText {
		return nil, errors.New("binary frame")
	}
	var f map[string]any
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	seq, ok := f["seq"].(float64)
	if !ok || seq != c.seq+1 {
		return nil, fmt.Errorf("seq %v after %v in %s", f["seq"], c.seq, data)
	}
	c.seq = seq
	return f, nil
}

// readType returns the next frame of type typ, keeping the others for
// later reads.
func (c *client) readType(typ string) map[string]any {
	c.t.Helper()
	for i, f := range c.pending {
		if f["type"] == typ {
			c.pending = append(c.pending[:i:i], c.pending[i+1:]...)
			return f
		}
	}
	for {
		f, err := c.readErr(testkit.Medium)
		require.NoError(c.t, err, "waiting for a %s frame", typ)
		if f["type"] == typ {
			return f
		}
		c.pending = append(c.pending, f)
	}
}

// readReply returns the next rpc reply, keeping the other frames for later
// reads, as a client that dispatches on type does: a reply is the frame
// without a type.
func (c *client) readReply() map[string]any {
	c.t.Helper()
	for i, f := range c.pending {
		if _, typed := f["type"]; !typed {
			c.pending = append(c.pending[:i:i], c.pending[i+1:]...)
			return f
		}
	}
	for {
		f, err := c.readErr(testkit.Medium)
		require.NoError(c.t, err, "waiting for an rpc reply")
		if _, typed := f["type"]; !typed {
			return f
		}
		c.pending = append(c.pending, f)
	}
}

// closeCode waits for the socket to end and returns the close code.
func (c *client) closeCode() websocket.StatusCode {
	c.t.Helper()
	for {
		_, err := c.readErr(testkit.Medium)
		if err != nil {
			code := websocket.CloseStatus(err)
			require.NotEqual(c.t, websocket.StatusCode(-1), code, "expected a close frame, got %v", err)
			return code
		}
	}
}

func (c *client) closeError() websocket.CloseError {
	c.t.Helper()
	for {
		_, err := c.readErr(testkit.Medium)
		if err != nil {
			var ce websocket.CloseError
			require.True(c.t, errors.As(err, &ce), "expected a close frame, got %v", err)
			return ce
		}
	}
}

// quoteEvent is a quote event as the hub delivers it.
func quoteEvent(instrument string, bid float64) protocol.Event {
	data, _ := json.Marshal(protocol.Quote{Instrument: instrument, Bid: bid, Ask: bid + 0.25, Last: bid, QuoteTimeUTC: "2026-11-02T15:00:00Z"})
	return protocol.Event{Kind: protocol.EventQuote, Data: data}
}

// quotesOf returns a marketData frame's quotes by instrument.
func quotesOf(f map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	qs, _ := f["quotes"].([]any)
	for _, q := range qs {
		m := q.(map[string]any)
		out[m["instrument"].(string)] = m
	}
	return out
}

// smallBufListener makes the server's socket buffers small, so a client
// that does not read blocks the relay's writer quickly.
type smallBufListener struct{ net.Listener }

func (l smallBufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(8 << 10)
	}
	return c, err
}

// userRoutes returns the sockets subscribed to contract for user.
func (s *Server) userRoutes(userID, contract string) []*socket {
	var out []*socket
	for _, r := range s.routesOf(userID, contract) {
		out = append(out, r.sk)
	}
	return out
}

func (s *Server) routesOf(userID, contract string) []route {
	s.mu.RLock()
	u := s.users[userID]
	s.mu.RUnlock()
	if u == nil {
		return nil
	}
	rt := u.routes.Load()
	if rt == nil {
		return nil
	}
	return rt.by[contract]
}

func (s *Server) userCount() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.users)
}
