package hub

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/yamux"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/transport"
)

// gatedConn is a connection whose Close calls onClose and then waits for
// release, as a transport.Conn waits for an unresponsive peer's answer to
// its WebSocket close.
type gatedConn struct {
	net.Conn
	onClose func()
	release chan struct{}
}

func (g *gatedConn) Close() error {
	g.onClose()
	<-g.release
	return g.Conn.Close()
}

// A yamux session that ends calls its connection's Close before it ends
// its streams; the tunnel's reads end as Close begins (stopReads), not
// once it returns, however long the WebSocket's close takes, and a reader
// that sets its frame deadline afterwards cannot undo it.
func TestReadsEndAsTheSessionCloses(t *testing.T) {
	t.Parallel()
	relayEnd, agentEnd := net.Pipe()
	c := &agentConn{log: zap.NewNop(), done: make(chan struct{})}
	gate := &gatedConn{Conn: relayEnd, onClose: c.stopReads, release: make(chan struct{})}
	cfg := transport.YamuxConfig(zap.NewNop())
	cfg.EnableKeepAlive = false
	sess, err := yamux.Server(gate, cfg)
	require.NoError(t, err)
	agent, err := yamux.Client(agentEnd, cfg)
	require.NoError(t, err)
	defer agent.Close()

	opened, err := agent.OpenStream()
	require.NoError(t, err)
	_, err = opened.Write([]byte{0, 0, 0, 2, byte(protocol.TypeEvent)}) // a frame's start: its reader arms its deadline
	require.NoError(t, err)
	s, err := sess.AcceptStream()
	require.NoError(t, err)
	fr := protocol.NewReaderSize(c.track(s), 0, readerBuffer)
	fr.SetFrameTimeout(time.Minute)
	read := make(chan error, 1)
	go func() {
		_, _, err := fr.ReadFrame()
		read <- err
	}()

	closed := make(chan struct{})
	go func() { defer close(closed); sess.Close() }()
	select {
	case err := <-read:
		require.True(t, errors.Is(err, yamux.ErrTimeout), "the read ended by its deadline: %v", err)
	case <-time.After(testkit.Long):
		t.Fatal("the read did not end while the session's connection was closing")
	}
	require.True(t, c.readsStopped())
	select {
	case <-closed:
		t.Fatal("the session closed before its connection did")
	default:
	}
	close(gate.release)
	<-closed

	// A stream tracked after the reads stopped is stopped at once.
	require.True(t, c.track(s).stopped)
}

// A reader's deadline set after its stream stopped is in the past.
func TestStoppedStreamKeepsItsDeadlinePast(t *testing.T) {
	t.Parallel()
	relayEnd, agentEnd := net.Pipe()
	cfg := transport.YamuxConfig(zap.NewNop())
	cfg.EnableKeepAlive = false
	sess, err := yamux.Server(relayEnd, cfg)
	require.NoError(t, err)
	defer sess.Close()
	agent, err := yamux.Client(agentEnd, cfg)
	require.NoError(t, err)
	defer agent.Close()
	opened, err := agent.OpenStream()
	require.NoError(t, err)
	_, err = opened.Write([]byte{1})
	require.NoError(t, err)
	s, err := sess.AcceptStream()
	require.NoError(t, err)
	_, err = s.Read(make([]byte, 1))
	require.NoError(t, err)

	c := &agentConn{}
	rs := c.track(s)
	c.stopReads()
	require.NoError(t, rs.SetReadDeadline(time.Now().Add(time.Hour)))
	_, err = rs.Read(make([]byte, 1))
	require.ErrorIs(t, err, yamux.ErrTimeout)
}
