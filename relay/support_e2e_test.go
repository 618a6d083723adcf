package relay_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/agent"
	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/auth"
	"tradebridge/relay/support"
)

// supportPath is the support route of a user.
func supportPath(userID string) string {
	return strings.Replace(support.Path, "{userId}", userID, 1)
}

// supportAnswer is the support route's data as a client reads it.
type supportAnswer struct {
	UserID    string `json:"userId"`
	Connected bool   `json:"connected"`
	Agent     *struct {
		SessionID       string                `json:"sessionId"`
		ConnectedAt     time.Time             `json:"connectedAt"`
		AgentVersion    string                `json:"agentVersion"`
		ProtocolVersion int                   `json:"protocolVersion"`
		Platform        string                `json:"platform"`
		Connections     []protocol.Connection `json:"connections"`
	} `json:"agent"`
	Diagnostics       *protocol.Diagnostics `json:"diagnostics"`
	DiagnosticsAt     *time.Time            `json:"diagnosticsAt"`
	DiagnosticsSource string                `json:"diagnosticsSource"`
	History           []support.Entry       `json:"history"`
}

func (s *system) readAgent(token, userID string) supportAnswer {
	s.T.Helper()
	r := s.Do("GET", supportPath(userID), token, "")
	require.Equal(s.T, http.StatusOK, r.Status, string(r.Raw))
	var a supportAnswer
	require.NoError(s.T, json.Unmarshal(r.Data, &a), string(r.Data))
	return a
}

// tryReadAgent is readAgent for the conditions of Eventually, which run
// on a goroutine of their own and so must not fail the test: false when
// the read did not answer 200.
func (s *system) tryReadAgent(token, userID string) (supportAnswer, bool) {
	r, err := s.Request("GET", supportPath(userID), token, "")
	if err != nil || r.Status != http.StatusOK {
		return supportAnswer{}, false
	}
	var a supportAnswer
	return a, json.Unmarshal(r.Data, &a) == nil
}

// entryOf returns the history's entry of the session, if any.
func (a supportAnswer) entryOf(sessionID string) (support.Entry, bool) {
	for _, e := range a.History {
		if e.SessionID == sessionID {
			return e, true
		}
	}
	return support.Entry{}, false
}

// Support staff read, with a support token granted the user, the real
// agent's live diagnostics and its connection history; a user the token is
// not granted looks like a user that does not exist; the user's own tokens
// do not open the support route; and each read is in the audit log.
func TestSupportReadsTheAgent(t *testing.T) {
	t.Parallel()
	// The route's own budget (support.DefaultBudget, a burst of 10) is
	// for a person reading; this test polls it until the history shows
	// the session, so its relay gives the support token a roomy budget
	// (the budget is support's own tests' subject).
	s := newSystemWith(t, func(o *relay.Options) { o.Support.Budget = roomy })
	ctx := context.Background()
	alice, bob := s.Users["alice"], s.Users["bob"]
	tok, err := auth.IssueSupportToken(ctx, s.Store, "Sam Support", []string{alice.UserID}, time.Now())
	require.NoError(t, err)

	// No agent yet: nothing but the user.
	a := s.readAgent(tok, alice.UserID)
	require.Equal(t, alice.UserID, a.UserID)
	require.False(t, a.Connected)
	require.Nil(t, a.Agent)
	require.Nil(t, a.Diagnostics)
	require.Equal(t, support.SourceNone, a.DiagnosticsSource)

	ra := s.StartAgentOn("alice", "sim", nil)
	a = s.readAgent(tok, alice.UserID)
	require.True(t, a.Connected)
	require.NotNil(t, a.Agent)
	require.Equal(t, "sim", a.Agent.Platform)
	require.Equal(t, agent.Version, a.Agent.AgentVersion)
	require.Equal(t, protocol.ProtocolVersion, a.Agent.ProtocolVersion)
	require.NotEmpty(t, a.Agent.Connections)
	require.Contains(t, a.Agent.Connections[0].Accounts, "Sim101")

	// The diagnostics, asked of the agent now.
	require.Equal(t, support.SourceLive, a.DiagnosticsSource)
	require.NotNil(t, a.Diagnostics)
	require.NotNil(t, a.DiagnosticsAt)
	d := a.Diagnostics
	require.Equal(t, agent.Version, d.AgentVersion)
	require.Equal(t, "sim", d.Bridge.Kind)
	require.True(t, d.Bridge.Reachable)
	require.NotEmpty(t, d.Bridge.Connections)
	require.Contains(t, d.Bridge.Connections[0].Accounts, "Sim101")
	require.True(t, d.Tunnel.Connected)
	require.Equal(t, a.Agent.SessionID, d.Tunnel.SessionID)
	require.NotEmpty(t, d.OS)

	// The history: the session, live.
	session := a.Agent.SessionID
	require.Eventually(t, func() bool {
		a, ok := s.tryReadAgent(tok, alice.UserID)
		if !ok {
			return false
		}
		_, ok = a.entryOf(session)
		return ok
	}, testkit.Medium, testkit.Tick)
	e, _ := s.readAgent(tok, alice.UserID).entryOf(session)
	require.Nil(t, e.DisconnectedAt)
	require.Equal(t, "sim", e.Platform)
	require.Equal(t, agent.Version, e.AgentVersion)
	require.Equal(t, "127.0.0.1", e.RemoteAddr)
	require.WithinDuration(t, a.Agent.ConnectedAt, e.ConnectedAt, time.Millisecond)

	// The agent stops: its session ends, and what it sent after its
	// Welcome is what support staff read now.
	ra.Stop()
	require.Eventually(t, func() bool {
		a, ok := s.tryReadAgent(tok, alice.UserID)
		if !ok {
			return false
		}
		e, ok := a.entryOf(session)
		return ok && e.DisconnectedAt != nil
	}, testkit.Medium, testkit.Tick)
	a = s.readAgent(tok, alice.UserID)
	require.False(t, a.Connected)
	e, _ = a.entryOf(session)
	require.Equal(t, agentcall.ReasonAgentClosed, e.Reason)
	require.False(t, e.DisconnectedAt.Before(e.ConnectedAt))
	require.Equal(t, support.SourceStored, a.DiagnosticsSource, "the diagnostics the agent sent after its Welcome were stored")
	require.NotNil(t, a.Diagnostics)
	require.Equal(t, "sim", a.Diagnostics.Bridge.Kind)

	// Not granted, or no such user: the same answer.
	notGranted := s.Do("GET", supportPath(bob.UserID), tok, "")
	unknown := s.Do("GET", supportPath("usr_nobody"), tok, "")
	for _, r := range []response{notGranted, unknown} {
		require.Equal(t, http.StatusNotFound, r.Status)
		require.Equal(t, "not_found", r.Error)
	}
	require.Equal(t, notGranted.Detail, unknown.Detail)
	require.Equal(t, withoutMeta(t, notGranted.Raw), withoutMeta(t, unknown.Raw))

	// The user's own tokens are no support tokens.
	for _, other := range []string{alice.APIToken, alice.AgentToken, "", "tb_support_" + strings.Repeat("A", 43)} {
		r := s.Do("GET", supportPath(alice.UserID), other, "")
		require.Equal(t, http.StatusUnauthorized, r.Status)
		require.Equal(t, "unauthorized", r.Error)
	}

	// The audit log names the token's id and the staff member, the user
	// and the result; never the token.
	reads := s.Logs.FilterMessage("support read").All()
	require.NotEmpty(t, reads)
	results := map[string]int{}
	for _, l := range reads {
		m := l.ContextMap()
		require.Equal(t, "support", l.LoggerName)
		require.Equal(t, auth.Hash(tok)[:12], m["supportToken"])
		require.Equal(t, "Sam Support", m["supportName"])
		results[m["result"].(string)+" "+m["user"].(string)]++
	}
	require.Positive(t, results["ok "+alice.UserID])
	require.Equal(t, 1, results["not_found "+bob.UserID])
	require.Equal(t, 1, results["not_found usr_nobody"])
	for _, l := range s.Logs.All() {
		b, _ := json.Marshal(l.ContextMap())
		require.NotContains(t, l.Message+string(b), tok)
	}
}

// withoutMeta is an error body without its meta (the request id).
func withoutMeta(t *testing.T, raw []byte) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	delete(m, "meta")
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return string(b)
}

// A support token opens nothing but the support route: on every other
// route of the relay (the trading API, the broker family, the stream
// socket, the Management API, the agents' tunnel) it gets what a request
// without a token gets, 401 wherever a token is needed.
func TestSupportTokenIsRefusedEverywhereElse(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.StartAgent("alice")
	alice := s.Users["alice"]
	tok, err := auth.IssueSupportToken(context.Background(), s.Store, "sam", []string{alice.UserID}, time.Now())
	require.NoError(t, err)

	r, err := relay.New(relay.Options{Store: s.Store})
	require.NoError(t, err)
	routes := r.Routes()
	require.NoError(t, r.Close())

	refused := map[string]bool{}
	for _, pattern := range routes {
		method, path, ok := strings.Cut(pattern, " ")
		require.True(t, ok, pattern)
		if path == support.Path {
			continue
		}
		path = fillWildcards(path, alice.UserID)
		var hdr []string
		if path == "/ws/stream" || path == protocol.ConnectPath {
			hdr = webSocketUpgrade
		}
		with := s.Do(method, path, tok, "", hdr...)
		without := s.Do(method, path, "", "", hdr...)
		require.Equal(t, without.Status, with.Status, "%s: a support token gets what no token gets", pattern)
		require.Equal(t, without.Error, with.Error, pattern)
		if with.Status == http.StatusUnauthorized {
			refused[pattern] = true
		}
		// Whatever the door, the token is worth nothing more than none:
		// the user's own API token gets further than 401 on trading
		// routes.
		if strings.HasPrefix(path, "/v1/api/accounts") {
			require.NotEqual(t, http.StatusUnauthorized, s.Do(method, path, alice.APIToken, "").Status, pattern)
		}
	}
	for _, must := range []string{
		"GET /v1/api/accounts", "POST /v1/api/accounts/{account}/orders/place", "GET /v1/api/tv/accounts",
		"POST /v1/api/tv/link", "GET " + protocol.ConnectPath, "GET /ws/stream", "GET /v1/api/manage",
	} {
		require.True(t, refused[must], "%s refuses the support token with 401", must)
	}
	manage := 0
	for p := range refused {
		if strings.Contains(p, "/v1/api/manage") {
			manage++
		}
	}
	require.Greater(t, manage, 10, "every Management API route refuses it")
	require.Greater(t, len(refused), 60)

	// The stream socket takes its token in the query string too.
	q := s.Do("GET", "/ws/stream?token="+tok, "", "", webSocketUpgrade...)
	require.Equal(t, http.StatusUnauthorized, q.Status)
}

// webSocketUpgrade are the headers of a WebSocket upgrade of the tunnel's
// current protocol version.
var webSocketUpgrade = []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13",
	"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Protocol", protocol.Subprotocol(protocol.ProtocolVersion)}

// fillWildcards puts a value in every wildcard of a path pattern: the
// user's id where a user is named, else a plain word.
func fillWildcards(path, userID string) string {
	segs := strings.Split(path, "/")
	for i, seg := range segs {
		if !strings.HasPrefix(seg, "{") {
			continue
		}
		switch name := strings.Trim(seg, "{}."); name {
		case "userId":
			segs[i] = userID
		case "account":
			segs[i] = "Sim101"
		default:
			segs[i] = "x1"
		}
	}
	return strings.Join(segs, "/")
}
