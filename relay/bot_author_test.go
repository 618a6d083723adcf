package relay_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"

	"tradebridge/internal/testkit"
	"tradebridge/relay/budget"
)

// metaRequestID is the meta.requestId of an error body, or "".
func metaRequestID(t *testing.T, r response) string {
	t.Helper()
	var body struct {
		Meta struct {
			RequestID string `json:"requestId"`
		} `json:"meta"`
	}
	if len(r.Raw) > 0 {
		require.NoError(t, json.Unmarshal(r.Raw, &body), string(r.Raw))
	}
	return body.Meta.RequestID
}

// logged reports whether an entry named message has field key equal to
// value, from a logger whose name contains logger.
func (s *system) logged(logger, message, key, value string) bool {
	for _, e := range s.Logs.All() {
		if e.Message == message && strings.Contains(e.LoggerName, logger) && e.ContextMap()[key] == value {
			return true
		}
	}
	return false
}

var generatedID = regexp.MustCompile(`^req-[0-9a-f]{16}$`)

// Every response carries X-Request-Id; every error body repeats it as
// meta.requestId; the id is in the relay's log line of the request and
// reaches the agent, which logs it with the call. A caller's own id is kept
// when it is 1–64 characters of [A-Za-z0-9._-], else replaced.
func TestRequestIDs(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.StartAgent("alice")
	tok := s.Users["alice"].APIToken

	// A success: the caller's id comes back and reaches the agent.
	r := s.Do("GET", "/v1/api/accounts", tok, "", "X-Request-Id", "bot-7.call_42")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "bot-7.call_42", r.Header.Get("X-Request-Id"))
	require.Eventually(t, func() bool { return s.logged("alice", "call", "trace", "bot-7.call_42") }, testkit.Medium, testkit.Tick,
		"the agent logs the call with the relay's id")
	require.Eventually(t, func() bool { return s.logged("relay", "request", "requestId", "bot-7.call_42") }, testkit.Medium, testkit.Tick,
		"the relay logs the request with its id")

	// An error the agent produced: the same id in the header, the body and
	// the agent's log; account_not_found teaches the account names.
	r = s.Do("GET", "/v1/api/accounts/sim101", tok, "", "X-Request-Id", "bot-7.call_43")
	require.Equal(t, http.StatusBadRequest, r.Status)
	require.Equal(t, "account_not_found", r.Error)
	require.Contains(t, r.Detail, "case-sensitive")
	require.Contains(t, r.Detail, "Sim101, Sim102")
	require.Equal(t, "bot-7.call_43", r.Header.Get("X-Request-Id"))
	require.Equal(t, "bot-7.call_43", metaRequestID(t, r))
	require.Eventually(t, func() bool { return s.logged("alice", "call", "trace", "bot-7.call_43") }, testkit.Medium, testkit.Tick)
	require.True(t, s.logged("relay", "request", "requestId", "bot-7.call_43"))
	for _, e := range s.Logs.FilterMessage("request").All() {
		if e.ContextMap()["requestId"] == "bot-7.call_43" {
			require.Equal(t, zapcore.InfoLevel, e.Level, "refusals are logged at the production level")
		}
	}

	// Ids the relay does not accept are replaced, never echoed.
	seen := map[string]bool{}
	for _, bad := range []string{"", "has space", strings.Repeat("a", 65), "semi;colon", "ünïcode", "<script>"} {
		r := s.Do("GET", "/v1/api/nothing-here", tok, "", "X-Request-Id", bad)
		require.Equal(t, http.StatusNotFound, r.Status)
		id := r.Header.Get("X-Request-Id")
		require.Regexp(t, generatedID, id, "%q", bad)
		require.Equal(t, id, metaRequestID(t, r))
		require.False(t, seen[id], "ids are fresh")
		seen[id] = true
	}
	require.Equal(t, strings.Repeat("a", 64), s.Do("GET", "/healthz", "", "", "X-Request-Id", strings.Repeat("a", 64)).Header.Get("X-Request-Id"))

	// Every route and outcome carries it.
	for _, tc := range []struct {
		name, method, path, token, body string
		status                          int
	}{
		{"health", "GET", "/healthz", "", "", http.StatusOK},
		{"openapi", "GET", "/v1/api/openapi.json", "", "", http.StatusOK},
		{"tv openapi", "GET", "/v1/api/tv/openapi.json", "", "", http.StatusOK},
		{"not found", "GET", "/v1/api/nothing-here", tok, "", http.StatusNotFound},
		{"wrong method", "DELETE", "/v1/api/accounts", tok, "", http.StatusMethodNotAllowed},
		{"wrong method on a wildcard's path", "GET", "/v1/api/accounts/Sim101/orders/place", tok, "", http.StatusMethodNotAllowed},
		{"no token", "GET", "/v1/api/accounts", "", "", http.StatusUnauthorized},
		{"free plan", "GET", "/v1/api/accounts", s.Users["carol"].APIToken, "", http.StatusForbidden},
		{"relay refusal", "POST", "/v1/api/accounts/Sim101/orders/place", tok, `{"action":"Buy"}`, http.StatusBadRequest},
		{"write", "POST", "/v1/api/accounts/Sim101/orders/place", tok, marketBuy, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.Do(tc.method, tc.path, tc.token, tc.body)
			require.Equal(t, tc.status, r.Status, string(r.Raw))
			id := r.Header.Get("X-Request-Id")
			require.Regexp(t, generatedID, id)
			if tc.status >= 400 {
				require.Equal(t, id, metaRequestID(t, r))
			}
		})
	}
}

// 429 carries the request id too.
func TestRequestIDOnRateLimit(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.Budget = budget.Policy{Name: "tight", Rate: 1, Period: time.Hour, Burst: 1}
	s.Restart()
	tok := s.Users["alice"].APIToken
	s.Do("GET", "/v1/api/accounts", tok, "")
	r := s.Do("GET", "/v1/api/accounts", tok, "", "X-Request-Id", "limited-1")
	require.Equal(t, http.StatusTooManyRequests, r.Status)
	require.Equal(t, "limited-1", r.Header.Get("X-Request-Id"))
	require.Equal(t, "limited-1", metaRequestID(t, r))
}

// A clean agent shutdown logs nothing that reads like an error on either
// end: yamux's "Failed to read header" of a normal close is debug level.
func TestCleanShutdownLogsNoError(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	ra := s.StartAgent("alice")
	require.Equal(t, http.StatusOK, s.Do("GET", "/v1/api/accounts", s.Users["alice"].APIToken, "").Status)
	ra.Stop()
	require.Eventually(t, func() bool {
		return s.DoAsync("GET", "/v1/api/accounts", s.Users["alice"].APIToken, "").Status == http.StatusRequestTimeout
	}, testkit.Medium, testkit.Tick, "the relay noticed the agent left")
	time.Sleep(100 * time.Millisecond) // both receive loops have ended and logged
	for _, e := range s.Logs.All() {
		require.Less(t, e.Level, zapcore.WarnLevel, "%s: %s", e.LoggerName, e.Message)
		require.NotContains(t, e.Message, "[ERR]", e.LoggerName)
		if strings.HasSuffix(e.LoggerName, "yamux") {
			require.Equal(t, zapcore.DebugLevel, e.Level, "%s: %s", e.LoggerName, e.Message)
		}
	}
}
