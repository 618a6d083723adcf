package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/agentcall/agentcalltest"
	"tradebridge/relay/cluster"
	"tradebridge/relay/events"
	"tradebridge/relay/httpapi"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// envNATS names the NATS server the tests use; unset, they skip.
const envNATS = "TB_TEST_NATS"

func natsURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(envNATS)
	if u == "" {
		t.Skipf("cluster test: set %s to a NATS server (nats://127.0.0.1:4222) to run it", envNATS)
	}
	return u
}

// prefix is a subject prefix of the test's own.
func prefix() string { return fmt.Sprintf("t%x", rand.Uint64()) }

// fakeHub is an in-memory Local (the relay's one fake of the agents):
// connected agents whose functions are answer's, reporting their
// connects and disconnects to the node's cluster as its hub would.
type fakeHub struct {
	*agentcalltest.Agents
	// block is closed to release the "Block" calls.
	block chan struct{}

	mu sync.Mutex
	// subs is every set the agent was sent (FnSetSubscriptions).
	subs [][]string
}

func newFakeHub() *fakeHub {
	f := &fakeHub{Agents: agentcalltest.New(nil), block: make(chan struct{})}
	f.SetAnswer(f.answer)
	return f
}

// connect makes user's agent connect here at at, as the hub reports it,
// and returns its session.
func (f *fakeHub) connect(user string, at time.Time) string {
	s := fmt.Sprintf("tun_%x", rand.Uint64())
	f.Connect(user, agentcall.Info{SessionID: s, ConnectedAt: at, RemoteAddr: "192.0.2.7",
		Hello: protocol.Hello{ProtocolVersion: protocol.ProtocolVersion, AgentVersion: "test", Platform: "sim",
			Connections: []protocol.Connection{{Name: "Sim", Status: "Connected", Accounts: []string{"Sim101"}}}},
		Diagnostics:   &protocol.Diagnostics{AgentVersion: "test", OS: "linux/amd64"},
		DiagnosticsAt: at.Add(time.Second), ConfigApplied: 7})
	return s
}

func (f *fakeHub) disconnect(user string) { f.Disconnect(user) }

func (f *fakeHub) evictions() []string { return f.Evicted() }

// served counts the calls that reached an agent here.
func (f *fakeHub) served() int { return len(f.Calls("")) }

func (f *fakeHub) sentSets() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]string(nil), f.subs...)
}

// echo is what "Echo" answers: what reached the agent.
type echo struct {
	Fn        string          `json:"fn"`
	RequestID string          `json:"requestId"`
	Trace     string          `json:"trace"`
	Bypass    bool            `json:"bypassWindows,omitempty"`
	Args      json.RawMessage `json:"args"`
	LeftMs    int64           `json:"leftMs"`
}

// answer runs the fake agent's functions: Echo, Block (until released or
// the deadline: agentcall.ErrTimeout), Big (args: a byte count), the errors of
// failures (Fail, args naming one), and FnSetSubscriptions (roots
// resolve to their December contract, names beginning with X are
// unknown).
func (f *fakeHub) answer(ctx context.Context, user, fn, requestID string, args json.RawMessage) (json.RawMessage, error) {
	switch fn {
	case "Echo":
		dl, _ := ctx.Deadline()
		return json.Marshal(echo{Fn: fn, RequestID: requestID, Trace: agentcall.TraceFrom(ctx), Args: args,
			Bypass: protocol.CallOptionsOf(ctx).BypassWindows, LeftMs: time.Until(dl).Milliseconds()})
	case "Block":
		select {
		case <-f.block:
			return json.RawMessage(`{"released":true}`), nil
		case <-ctx.Done():
			return nil, agentcall.ErrTimeout
		}
	case "Big":
		var n int
		if err := json.Unmarshal(args, &n); err != nil {
			return nil, err
		}
		return bigReply(n), nil
	case "Fail":
		var which string
		_ = json.Unmarshal(args, &which)
		return nil, failures[which]
	case protocol.FnSetSubscriptions:
		var sa protocol.SubscriptionsArgs
		if err := json.Unmarshal(args, &sa); err != nil {
			return nil, err
		}
		f.mu.Lock()
		f.subs = append(f.subs, sa.Instruments)
		f.mu.Unlock()
		res := protocol.SubscriptionsResult{Instruments: []string{}, Resolved: map[string]string{}}
		for _, n := range sa.Instruments {
			if strings.HasPrefix(n, "X") {
				res.Unknown = append(res.Unknown, n)
				continue
			}
			c := n
			if !strings.Contains(n, " ") {
				c = n + " 12-26"
			}
			res.Resolved[n] = c
			res.Instruments = append(res.Instruments, c)
		}
		return json.Marshal(res)
	}
	return nil, protocol.NewError(protocol.CodeUnknownFunction, fn)
}

// failures are the errors "Fail" returns, by name.
var failures = map[string]error{
	"notConnected":   agentcall.ErrNotConnected,
	"connectionLost": agentcall.ErrConnectionLost,
	"timeout":        agentcall.ErrTimeout,
	"closed":         agentcall.ErrClosed,
	"canceled":       context.Canceled,
	"agent":          protocol.NewError(protocol.CodeNoPosition, "no position on Sim101"),
	"http": &httpapi.Error{Status: 429, Code: "rate_limited", Detail: "slow down", RetryAfter: 3, Policy: "broker",
		Fields: []httpapi.FieldError{{Path: "quantity", Code: "too_large"}}},
	"other": io.ErrUnexpectedEOF,
}

func bigReply(n int) json.RawMessage {
	b := make([]byte, n)
	b[0], b[n-1] = '"', '"'
	for i := 1; i < n-1; i++ {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

// recorder keeps the remote events and statuses a node publishes.
type recorder struct {
	mu       sync.Mutex
	quotes   []string // "user:instrument"
	statuses []string // "user:true"
	activity []string // "user:act_1"
}

// Publish takes what the node publishes on its spine.
func (r *recorder) Publish(e events.Event) {
	if !e.Remote {
		return
	}
	switch e.Type {
	case events.TypeAgent:
		r.event(e)
	case events.TypeStatus:
		r.status(e.UserID, e.Connected)
	case events.TypeRecorded:
		r.mu.Lock()
		r.activity = append(r.activity, e.UserID+":"+e.Activity.ID)
		r.mu.Unlock()
	}
}

func (r *recorder) gotActivity() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.activity...)
}

func (r *recorder) event(e events.Event) {
	var q protocol.Quote
	_ = json.Unmarshal(e.Agent.Data, &q)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.quotes = append(r.quotes, e.UserID+":"+q.Instrument)
}

func (r *recorder) status(user string, up bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.statuses = append(r.statuses, fmt.Sprintf("%s:%v", user, up))
}

func (r *recorder) gotQuotes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.quotes...)
}

func (r *recorder) gotStatuses() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.statuses...)
}

// node is one relay node of a test: a Cluster over a fake hub.
type node struct {
	name string
	cl   *cluster.Cluster
	hub  *fakeHub
	rec  *recorder
	nc   *nats.Conn // the node's connection, which the test may cut
}

// newNode starts a node of the test's cluster (prefix) on a connection of
// its own, to url.
func newNode(t testing.TB, url, pfx, name string, tweak func(*cluster.Options)) *node {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond), nats.ReconnectBufSize(-1))
	require.NoError(t, err)
	n := &node{name: name, hub: newFakeHub(), rec: &recorder{}, nc: nc}
	opts := cluster.Options{Conn: nc, Node: name, Local: n.hub, Prefix: pfx, Logger: zaptest.NewLogger(t),
		Events:            n.rec,
		HeartbeatInterval: 50 * time.Millisecond, HeartbeatTimeout: 250 * time.Millisecond}
	if tweak != nil {
		tweak(&opts)
	}
	cl, err := cluster.New(opts)
	require.NoError(t, err)
	n.cl = cl
	n.hub.OnStatus(cl.HandleStatus)
	t.Cleanup(func() {
		n.hub.mu.Lock()
		select {
		case <-n.hub.block:
		default:
			close(n.hub.block)
		}
		n.hub.mu.Unlock()
		require.NoError(t, cl.Close())
		require.NoError(t, cl.Close(), "Close is idempotent")
		nc.Close()
	})
	return n
}

// cluster3 starts nodes a, b and c of one test cluster.
func cluster3(t *testing.T) (a, b, c *node) {
	url, pfx := natsURL(t), prefix()
	return newNode(t, url, pfx, "a", nil), newNode(t, url, pfx, "b", nil), newNode(t, url, pfx, "c", nil)
}

// call runs fn through n with a deadline.
func (n *node) call(t testing.TB, user, fn string, args any, timeout time.Duration) (json.RawMessage, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil { // no require: Eventually's conditions call it
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return n.cl.Call(ctx, user, fn, "", raw)
}

// waitReach waits until n reaches user's agent (its status is out).
func (n *node) waitReach(t testing.TB, user string) {
	t.Helper()
	require.Eventually(t, func() bool { return n.cl.Connected(user) }, testkit.Medium, 5*time.Millisecond)
}

// proxy forwards TCP connections to a NATS server until cut.
type proxy struct {
	t      testing.TB
	target string
	ln     net.Listener
	mu     sync.Mutex
	down   bool
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newProxy(t testing.TB, natsURL string) *proxy {
	t.Helper()
	u := strings.TrimPrefix(natsURL, "nats://")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{t: t, target: u, ln: ln}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) url() string { return "nats://" + p.ln.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns = append(p.conns, c, s)
		p.wg.Add(2)
		p.mu.Unlock()
		go func() { defer p.wg.Done(); _, _ = io.Copy(s, c); s.Close() }()
		go func() { defer p.wg.Done(); _, _ = io.Copy(c, s); c.Close() }()
	}
}

// cut drops every connection and refuses new ones until restore.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}
