package stream

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/relay/auth"
	"tradebridge/relay/errcode"
)

// A dashboard session of a free user, for the session door's tests.
const (
	sessFree    = "tb_session_ssssssssssssssssssssssssssssssssssssssssss"
	sessionName = "tb_session"
)

// newSessionEnv is newEnv with the session door open over the cookie
// sessionName and one session of the free user.
func newSessionEnv(t *testing.T, tweak ...func(*Options)) *env {
	t.Helper()
	e := newEnv(t, append([]func(*Options){func(o *Options) {
		o.ReverifyInterval = 50 * time.Millisecond
		o.SessionToken = func(r *http.Request) string {
			c, err := r.Cookie(sessionName)
			if err != nil {
				return ""
			}
			return c.Value
		}
	}}, tweak...)...)
	e.auth.Add(sessFree, auth.Principal{UserID: "usr_free", Plan: auth.PlanFree, Kind: auth.KindSession, TokenHash: auth.Hash(sessFree)})
	return e
}

// dialSession opens a socket with the session cookie and origin, and
// answers the refusal's status when there is one.
func (e *env) dialSession(cookie, origin string, extra http.Header) (*client, int) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Medium)
	defer cancel()
	h := http.Header{}
	if cookie != "" {
		h.Set("Cookie", sessionName+"="+cookie)
	}
	if origin != "" {
		h.Set("Origin", origin)
	}
	for k, vs := range extra {
		h[k] = vs
	}
	ws, resp, err := websocket.Dial(ctx, e.url, &websocket.DialOptions{HTTPHeader: h})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		require.NotNil(e.t, resp, "%v", err)
		return nil, resp.StatusCode
	}
	e.t.Cleanup(func() { ws.CloseNow() })
	return &client{t: e.t, ws: ws}, http.StatusSwitchingProtocols
}

// The session door admits the dashboard's own pages only, on every plan,
// and its sockets read: status and the activity log work, rpc runs
// nothing.
func TestSessionDoor(t *testing.T) {
	t.Parallel()
	e := newSessionEnv(t)
	self := "http://" + e.http.Listener.Addr().String()

	for _, tc := range []struct {
		name, cookie, origin string
		extra                http.Header
		want                 int
	}{
		{"another origin", sessFree, "https://evil.example", nil, http.StatusForbidden},
		{"another port", sessFree, "http://127.0.0.1:1", nil, http.StatusForbidden},
		{"no origin", sessFree, "", nil, http.StatusForbidden},
		{"null origin", sessFree, "null", nil, http.StatusForbidden},
		{"unknown session", "tb_session_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", self, nil, http.StatusUnauthorized},
		{"no session", "", self, nil, http.StatusUnauthorized},
		// An API token sent with the cookie is judged alone: the free
		// plan's token is refused by the token door.
		{"a token wins", sessFree, self, http.Header{"Authorization": {"Bearer " + tokFree}}, http.StatusForbidden},
	} {
		_, status := e.dialSession(tc.cookie, tc.origin, tc.extra)
		require.Equal(t, tc.want, status, tc.name)
	}

	c, status := e.dialSession(sessFree, self, nil)
	require.Equal(t, http.StatusSwitchingProtocols, status)
	require.Equal(t, "status", c.read()["type"])

	c.send(map[string]any{"action": "rpc", "id": "1", "api": "ListAccounts", "args": map[string]any{}})
	f := c.read()
	require.Equal(t, false, f["success"])
	require.Equal(t, errcode.ReadOnlySocket, f["error"])
	require.Equal(t, "1", f["id"])

	c.send(map[string]any{"action": "subscribeActivity", "id": "a"})
	require.Equal(t, "activitySubscribed", c.read()["type"])
	c.send(map[string]any{"action": "ping"})
	require.Equal(t, "pong", c.read()["type"])
	for _, call := range e.up.callsOf("ListAccounts") {
		t.Fatalf("the read-only socket ran %v", call)
	}

	// A revoked session closes the socket at its next re-verification,
	// through the session door's own kind.
	e.auth.Revoke(sessFree)
	ce := c.closeError()
	require.Equal(t, websocket.StatusPolicyViolation, ce.Code)
	require.Contains(t, ce.Reason, "session")
}
