package ntfake_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"tradebridge/internal/testkit"
	"tradebridge/trading/bridge/ninjatrader/ntfake"
	"tradebridge/trading/bridge/ninjatrader/ntwire"
	"tradebridge/trading/bridge/sim"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Timeouts of the tests.
const (
	// readTimeout bounds the wait for one message of the fake.
	readTimeout = testkit.Medium
	// waitFor bounds require.Eventually.
	waitFor = testkit.Medium
	tick    = 10 * time.Millisecond
)

// start is an instant inside a trading session (Wednesday 10:00 in New
// York), when the front month of ES is ES 12-26.
var start = time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)

// fixture is a fake add-on over a simulator on a manual clock.
type fixture struct {
	s      *ntfake.Server
	market *sim.Platform
	clock  *sim.ManualClock
	dir    string
}

func newFixture(t *testing.T, opts ...func(*ntfake.Options)) *fixture {
	t.Helper()
	clock := sim.NewManualClock(start)
	market, err := sim.New(sim.Options{Clock: clock})
	require.NoError(t, err)
	t.Cleanup(func() { _ = market.Close() })
	o := ntfake.Options{Market: market, Dir: t.TempDir(), Logger: zaptest.NewLogger(t)}
	for _, f := range opts {
		f(&o)
	}
	s, err := ntfake.Start(o)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return &fixture{s: s, market: market, clock: clock, dir: o.Dir}
}

// agent is a minimal raw client of the protocol.
type agent struct {
	t  *testing.T
	c  net.Conn
	r  *ntwire.Reader
	w  *ntwire.Writer
	id uint64
}

func dial(t *testing.T, addr string) *agent {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return &agent{t: t, c: c, r: ntwire.NewReader(c), w: ntwire.NewWriter(c)}
}

// connect dials the fake and completes the handshake.
func connect(t *testing.T, s *ntfake.Server) (*agent, ntwire.Message) {
	t.Helper()
	a := dial(t, s.Addr())
	a.send(ntwire.Message{Type: ntwire.TypeHello, ProtocolVersion: ntwire.Version, Secret: s.Secret(), Client: "ntfake test"})
	m := a.read()
	require.Equal(t, ntwire.TypeWelcome, m.Type, "refused: %s", m.Code)
	return a, m
}

// welcomes reports whether a new agent saying hello is welcomed; for the
// conditions of Eventually, which must not fail the test.
func welcomes(s *ntfake.Server) bool {
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		return false
	}
	defer c.Close()
	if ntwire.NewWriter(c).Write(ntwire.Message{Type: ntwire.TypeHello, ProtocolVersion: 1, Secret: s.Secret()}) != nil {
		return false
	}
	_ = c.SetReadDeadline(time.Now().Add(readTimeout))
	m, err := ntwire.NewReader(c).Read()
	return err == nil && m.Type == ntwire.TypeWelcome
}

func (a *agent) send(m ntwire.Message) {
	a.t.Helper()
	require.NoError(a.t, a.w.Write(m))
}

func (a *agent) sendRaw(line string) {
	a.t.Helper()
	_, err := a.c.Write([]byte(line + "\n"))
	require.NoError(a.t, err)
}

// read returns the fake's next message.
func (a *agent) read() ntwire.Message {
	a.t.Helper()
	m, err := a.readErr(readTimeout)
	require.NoError(a.t, err)
	return m
}

func (a *agent) readErr(d time.Duration) (ntwire.Message, error) {
	_ = a.c.SetReadDeadline(time.Now().Add(d))
	return a.r.Read()
}

// closed asserts that the fake closes the connection, after the messages
// it returns (pings skipped).
func (a *agent) closed() []ntwire.Message {
	a.t.Helper()
	var msgs []ntwire.Message
	for {
		m, err := a.readErr(readTimeout)
		if err != nil {
			var ne net.Error
			require.False(a.t, errors.As(err, &ne) && ne.Timeout(), "the fake did not close the connection")
			return msgs
		}
		if m.Type != ntwire.TypePing {
			msgs = append(msgs, m)
		}
	}
}

// call sends a request and returns the events that came before its reply,
// and the reply.
func (a *agent) call(method string, params any) ([]ntwire.Message, ntwire.Message) {
	a.t.Helper()
	var raw json.RawMessage
	if params != nil {
		var err error
		raw, err = json.Marshal(params)
		require.NoError(a.t, err)
	}
	return a.callRaw(method, raw)
}

func (a *agent) callRaw(method string, params json.RawMessage) ([]ntwire.Message, ntwire.Message) {
	a.t.Helper()
	a.id++
	a.send(ntwire.Message{Type: ntwire.TypeRequest, ID: a.id, Method: method, Params: params, TimeoutMs: 10000})
	var events []ntwire.Message
	for {
		m := a.read()
		switch m.Type {
		case ntwire.TypeEvent:
			events = append(events, m)
		case ntwire.TypeReply:
			require.Equal(a.t, a.id, m.ID)
			return events, m
		case ntwire.TypePing:
			a.send(ntwire.Message{Type: ntwire.TypePong, ID: m.ID})
		default:
			a.t.Fatalf("unexpected %s", m.Type)
		}
	}
}

// ok calls a method that must succeed and decodes its result into out
// (when not nil).
func (a *agent) ok(method string, params, out any) []ntwire.Message {
	a.t.Helper()
	events, reply := a.call(method, params)
	require.Nil(a.t, reply.Error, "%s: %v", method, reply.Error)
	if out != nil {
		strict(a.t, reply.Result, out)
	}
	return events
}

// fails calls a method that must fail and returns its error.
func (a *agent) fails(method string, params any) *ntwire.Error {
	a.t.Helper()
	_, reply := a.call(method, params)
	require.NotNil(a.t, reply.Error, "%s succeeded", method)
	require.Empty(a.t, reply.Result)
	return reply.Error
}

// events reads events until the one numbered seq.
func (a *agent) eventsUntil(seq uint64) []ntwire.Message {
	a.t.Helper()
	var events []ntwire.Message
	for {
		m := a.read()
		if m.Type == ntwire.TypePing {
			continue
		}
		require.Equal(a.t, ntwire.TypeEvent, m.Type)
		events = append(events, m)
		if m.Seq >= seq {
			return events
		}
	}
}

// strict decodes JSON into out, refusing unknown fields.
func strict(t *testing.T, data []byte, out any) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	require.NoError(t, d.Decode(out), "%s", data)
}

// consecutive asserts that events are numbered from first on, one by one.
func consecutive(t *testing.T, first uint64, events []ntwire.Message) {
	t.Helper()
	for i, e := range events {
		require.Equal(t, first+uint64(i), e.Seq, "event %d of %d (%s)", i, len(events), e.Kind)
	}
}

// kinds returns the kinds of events.
func kinds(events []ntwire.Message) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Kind
	}
	return out
}
