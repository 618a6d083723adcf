package hub_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/auth"
	"tradebridge/relay/auth/authtest"
	"tradebridge/relay/events"
	"tradebridge/relay/hub"
)

// statusLog records the statuses the hub publishes, with what Connected
// said during each.
type statusLog struct {
	mu     sync.Mutex
	h      *hub.Hub
	events []string
}

func (l *statusLog) record(user string, up bool) {
	agrees := l.h.Connected(user) == up // a direct subscriber may call the Hub
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, fmt.Sprintf("%s:%v:%v", user, up, agrees))
}

func (l *statusLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

// spine hands each type of event the hub publishes to its function; nil
// ones are ignored.
type spine struct {
	session func(agentcall.SessionEvent)
	status  func(userID string, connected bool)
	event   func(protocol.Event)
}

func (s spine) Publish(e events.Event) {
	switch {
	case e.Type == events.TypeSession && s.session != nil:
		s.session(e.Session)
	case e.Type == events.TypeStatus && s.status != nil:
		s.status(e.UserID, e.Connected)
	case e.Type == events.TypeAgent && s.event != nil:
		s.event(e.Agent)
	}
}

func newStatusEnv(t *testing.T) (*env, *statusLog) {
	fa := authtest.New(map[string]auth.Principal{
		"agent-a": {UserID: "usr_a", Plan: auth.PlanPro, Kind: auth.KindAgent},
		"agent-b": {UserID: "usr_b", Plan: auth.PlanPro, Kind: auth.KindAgent},
	})
	log := &statusLog{}
	h, err := hub.New(hub.Options{Auth: fa, Logger: zaptest.NewLogger(t), HandshakeTimeout: 500 * time.Millisecond,
		Events: spine{status: log.record}})
	require.NoError(t, err)
	log.h = h
	mux := http.NewServeMux()
	mux.Handle("GET "+protocol.ConnectPath, h)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		h.Close()
		srv.Close()
	})
	return &env{t: t, hub: h, srv: srv, auth: fa}, log
}

func TestOnStatusReportsConnectsAndDisconnects(t *testing.T) {
	e, log := newStatusEnv(t)
	a := e.startAgent("agent-a", "A")
	e.waitConnected("usr_a")
	require.Eventually(t, func() bool { return len(log.all()) == 1 }, testkit.Medium, time.Millisecond)
	require.Equal(t, []string{"usr_a:true:true"}, log.all())

	// A dropped tunnel reports false; the agent's reconnection, true. The
	// redial waits until the relay has seen the drop: a tunnel that
	// arrives first replaces the old one, which reports no false.
	release := a.dialer.killAndHold()
	require.Eventually(t, func() bool { return len(log.all()) >= 2 }, testkit.Long, time.Millisecond)
	release()
	require.Eventually(t, func() bool { return len(log.all()) >= 3 }, testkit.Long, time.Millisecond)
	require.Equal(t, []string{"usr_a:true:true", "usr_a:false:true", "usr_a:true:true"}, log.all()[:3])

	// Another user's agent reports only for that user.
	e.startAgent("agent-b", "B")
	e.waitConnected("usr_b")
	require.Eventually(t, func() bool { return len(log.all()) == 4 }, testkit.Medium, time.Millisecond)
	require.Equal(t, "usr_b:true:true", log.all()[3])
}

func TestOnStatusReplacementReportsNoDisconnect(t *testing.T) {
	e, log := newStatusEnv(t)
	first := e.startAgent("agent-a", "first")
	info1 := e.waitConnected("usr_a")
	e.startAgent("agent-a", "second")
	require.Eventually(t, func() bool {
		info, ok := e.hub.Info("usr_a")
		return ok && info.SessionID != info1.SessionID
	}, testkit.Medium, 5*time.Millisecond)
	require.Eventually(t, func() bool { return !first.client.Connected() }, testkit.Medium, 5*time.Millisecond)
	first.stop()
	// The first tunnel ended replaced: true for each tunnel, never false.
	time.Sleep(50 * time.Millisecond)
	for _, ev := range log.all() {
		require.Equal(t, "usr_a:true:true", ev)
	}
	require.GreaterOrEqual(t, len(log.all()), 2)
	require.True(t, e.hub.Connected("usr_a"))

	// Closing the hub ends the tunnel: false.
	require.NoError(t, e.hub.Close())
	evs := log.all()
	require.Equal(t, "usr_a:false:true", evs[len(evs)-1])
}
