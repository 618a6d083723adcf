package relay_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay"
	"tradebridge/relay/store"
)

// slowConnections is the relay's store with one user's connections slow
// to write, so that a flood of that user's reports outruns the
// Management API's writes however fast the machine.
type slowConnections struct {
	store.Store
	userID *atomic.Pointer[string]
}

func (s slowConnections) SetConnections(ctx context.Context, userID string, conns []byte) error {
	if slow := s.userID.Load(); slow != nil && userID == *slow {
		select {
		case <-time.After(5 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.Store.SetConnections(ctx, userID, conns)
}

// One user's agent floods connections events at its tunnel's event rate
// while another user's agent reports a monitor trip and a connection
// change: the second user's reports are stored during the flood, the
// relay logs a few lines at most, and the flood's drops are counted in
// /metrics.
func TestSpineFloodLeavesOtherUsersServed(t *testing.T) {
	t.Parallel()
	op, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var slow atomic.Pointer[string]
	s := newSystemWith(t, func(o *relay.Options) {
		o.Store = slowConnections{Store: o.Store, userID: &slow}
		o.OperatorListener = op
	})
	carol := s.Users["carol"].UserID
	slow.Store(&carol)
	bob := s.Users["bob"].UserID

	// Bob's monitor, as the Management API stores it.
	monitorID := "mon_00112233445566778899"
	body, err := json.Marshal(protocol.Monitor{Meta: protocol.Meta{ID: monitorID}, Account: "Sim101", Active: true, State: protocol.MonitorActive,
		OnTrip: protocol.OnTripFlatten})
	require.NoError(t, err)
	_, err = s.Store.WriteResources(t.Context(), bob, false, store.ResourceWrite{Kind: "monitor", ID: monitorID, Body: body, At: time.Now()})
	require.NoError(t, err)

	s.StartAgent("alice")
	flooder := s.dialHostile(t, "carol", hostileOptions{reply: answerEmpty})
	honest := s.dialHostile(t, "bob", hostileOptions{reply: answerEmpty})
	s.requireServed(t)
	loud := func() int {
		return s.Logs.Filter(func(e observer.LoggedEntry) bool { return e.Level >= zapcore.InfoLevel }).Len()
	}
	loudBefore := loud()

	// The flood: connections events as fast as the tunnel takes them.
	stop := make(chan struct{})
	var sent atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		payload := []byte(`{"seq":0,"kind":"connections","data":[{"name":"Sim","status":"Connected","accounts":["Sim101"]}]}`)
		var frame []byte
		for {
			select {
			case <-stop:
				return
			default:
			}
			frame, _ = protocol.AppendFrame(frame[:0], protocol.TypeEvent, payload)
			if _, err := flooder.control.Write(frame); err != nil {
				return
			}
			sent.Add(1)
		}
	}()
	defer func() { close(stop); _ = flooder.control.Close(); wg.Wait() }()
	require.Eventually(t, func() bool { return sent.Load() > 5_000 }, testkit.Long, time.Millisecond, "the flood runs")

	// Bob's agent reports a trip and a change of its connections.
	tripped := time.Now().UTC().Truncate(time.Second)
	trip, err := json.Marshal(protocol.MonitorState{Account: "Sim101", State: protocol.MonitorStopped, Reason: "lossLimit", At: tripped})
	require.NoError(t, err)
	conns := []protocol.Connection{{Name: "Sim", Status: "Disconnected", Accounts: []string{"Sim101"}}}
	connsJSON, err := json.Marshal(conns)
	require.NoError(t, err)
	require.NoError(t, honest.events.WriteFrame(protocol.TypeEvent, protocol.Event{Seq: 1, Kind: protocol.EventMonitorState, Data: trip}))
	require.NoError(t, honest.events.WriteFrame(protocol.TypeEvent, protocol.Event{Seq: 2, Kind: protocol.EventConnections, Data: connsJSON}))

	require.Eventually(t, func() bool {
		ms, err := s.Store.ManagedState(t.Context(), bob)
		if err != nil || len(ms.Resources) != 1 {
			return false
		}
		var m protocol.Monitor
		if json.Unmarshal(ms.Resources[0].Body, &m) != nil || m.State != protocol.MonitorStopped || m.StoppedAt == nil || !m.StoppedAt.Equal(tripped) {
			return false
		}
		var stored []protocol.Connection
		return json.Unmarshal(ms.Connections, &stored) == nil && len(stored) == 1 && stored[0].Status == "Disconnected"
	}, testkit.Medium, 10*time.Millisecond, "bob's trip and connections are stored during the flood")
	select {
	case <-stop:
		t.Fatal("the flood ended before bob's reports were stored")
	default:
	}
	before := sent.Load()
	require.Eventually(t, func() bool { return sent.Load() > before+1_000 }, testkit.Medium, time.Millisecond, "the flood still runs")
	s.requireServed(t)

	// The flood's drops are counted, and the relay said little about them.
	resp, err := http.Get("http://" + op.Addr().String() + "/metrics")
	require.NoError(t, err)
	text, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^relay_events_dropped_total\{subscriber="manage-reports"\} (\S+)$`).FindSubmatch(text)
	require.NotNil(t, m, "the drops are in /metrics")
	dropped, err := strconv.ParseFloat(string(m[1]), 64)
	require.NoError(t, err)
	require.Positive(t, dropped)
	lines := loud() - loudBefore
	t.Logf("%d events sent, %.0f dropped, %d log lines at info or above", sent.Load(), dropped, lines)
	require.LessOrEqual(t, lines, 3, "a few lines, however many events: %v", s.Logs.FilterLevelExact(zapcore.WarnLevel).All())
}
