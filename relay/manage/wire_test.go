package manage

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/events"
)

// An answer of the agent the relay cannot read is the relay's 500
// internal_error, and the monitor stays as stored.
func TestInternalErrorOnUnreadableAgentAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	id := newID(monitorKind.Name)
	_, err := e.store.WriteResources(t.Context(), "u1", true, storeWrite(monitorKind.Name, id, monitorJSON(id, "Sim101", protocol.MonitorStopped), 0))
	require.NoError(t, err)
	e.hub.setCall(func(_ context.Context, _, fn string, args json.RawMessage) (json.RawMessage, error) {
		if fn == protocol.FnCheckMonitorRestart {
			return json.RawMessage(`[1,2]`), nil
		}
		return ack(fn, args)
	})
	r := e.do(http.MethodPost, "/desktop/monitors/"+id+"/restart", tokElite, "")
	require.Equal(t, http.StatusInternalServerError, r.Code, string(r.Body))
	require.Equal(t, errcode.InternalError, r.code(t))
	r = e.do(http.MethodGet, "/desktop/monitors/"+id, tokElite, "")
	var m protocol.Monitor
	r.data(t, &m)
	require.Equal(t, protocol.MonitorStopped, m.State)
}

// The items of fields carry path, code, and limit or pattern, as the
// spec's error object: the values of an enumerated field go out as a
// pattern, and nothing the caller sent comes back.
func TestFieldsOnTheWire(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.do(http.MethodPost, "/desktop/copiers", tokElite,
		`{"leader":"Sim101","followers":[{"account":"Sim102"}],"copyMode":"secret-mode","sizing":{"ratio":0.3}}`,
		"Content-Type", "application/json")
	require.Equal(t, http.StatusUnprocessableEntity, r.Code, string(r.Body))
	require.NotContains(t, string(r.Body), "secret-mode")
	var body struct {
		Error  string
		Fields []map[string]any
	}
	require.NoError(t, json.Unmarshal(r.Body, &body))
	require.Equal(t, errcode.ValidationFailed, body.Error)
	require.NotEmpty(t, body.Fields)
	for _, f := range body.Fields {
		for k := range f {
			require.Contains(t, []string{"path", "code", "limit", "pattern"}, k, "fields item %v", f)
		}
	}
	require.Contains(t, body.Fields, map[string]any{"path": "copyMode", "code": errcode.FieldCodeNotAllowed, "pattern": "^(order|execution)$"})
	require.False(t, strings.Contains(string(r.Body), `"allowed"`))
}

// Reports are stored while a change waits for its agent's ack: a report
// of that user queued first delays no other user's report behind it.
func TestReportNotDelayedByAnotherUsersPush(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.AckTimeout = 5 * time.Second })
	mid := newID(monitorKind.Name)
	_, err := e.store.WriteResources(t.Context(), "u1", true, storeWrite(monitorKind.Name, mid, monitorJSON(mid, "Sim101", protocol.MonitorActive), 0))
	require.NoError(t, err)
	release := make(chan struct{})
	e.hub.setCall(func(ctx context.Context, user, fn string, args json.RawMessage) (json.RawMessage, error) {
		if user == "u2" {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return ack(fn, args)
	})
	done := make(chan int, 1)
	go func() {
		r := httptest.NewRequest(http.MethodPatch, "http://relay"+Prefix+"/controls", strings.NewReader(`{"flattenOnKill":true}`))
		r.RemoteAddr = "192.0.2.9:1"
		r.Header.Set("Authorization", "Bearer "+tokElite2)
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		e.mux.ServeHTTP(w, r)
		done <- w.Code
	}()
	require.Eventually(t, func() bool { return len(e.hub.pushes("u2")) > 0 }, testkit.Medium, time.Millisecond, "u2's push is waiting")

	data, err := json.Marshal(protocol.MonitorState{Account: "Sim101", State: protocol.MonitorStopped, Reason: "lossLimit", At: time.Now()})
	require.NoError(t, err)
	// The worker meets u2's report first, then u1's.
	e.s.HandleEvent(events.Agent("u2", protocol.Event{Kind: protocol.EventMonitorState, Data: data}))
	e.s.HandleEvent(events.Agent("u1", protocol.Event{Kind: protocol.EventMonitorState, Data: data}))
	require.Eventually(t, func() bool {
		r, _ := e.store.stored("u1", monitorKind.Name, mid)
		return r.Version == 2
	}, 2*time.Second, time.Millisecond, "u1's report is stored while u2's push waits")
	close(release)
	require.Equal(t, http.StatusOK, <-done)
}
