package relay_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay"
	"tradebridge/relay/pairing"
)

// Pairing on the relay: the routes are registered with the relay's
// answers for other methods, a code pairs once through the relay's
// middleware, the route's per-address budget holds, and the attempts are
// counted on the operator's /metrics by result.
func TestPairingOnTheRelay(t *testing.T) {
	t.Parallel()
	var operator string
	s := newSystemWith(t, func(o *relay.Options) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		o.OperatorListener = ln
		operator = "http://" + ln.Addr().String()
	})
	require.Contains(t, s.Relay().Routes(), "POST "+protocol.PairPath)
	require.Contains(t, s.Relay().Routes(), "DELETE "+protocol.AgentTokenPath)
	r := s.Do("GET", protocol.PairPath, "", "")
	require.Equal(t, http.StatusMethodNotAllowed, r.Status)
	require.Equal(t, "POST", r.Header.Get("Allow"))

	alice := s.Users["alice"]
	code, err := pairing.Mint(context.Background(), s.Store, alice.UserID, time.Now())
	require.NoError(t, err)
	r = s.Do("POST", protocol.PairPath, "", `{"code":"`+code.Code+`"}`)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.NotEmpty(t, r.Header.Get("X-Request-Id"))
	r = s.Do("POST", protocol.PairPath, "", `{"code":"`+code.Code+`"}`)
	require.Equal(t, http.StatusUnauthorized, r.Status)
	require.Equal(t, "pairing_code_invalid", r.Error)
	require.NotContains(t, string(r.Raw), code.Code)

	// 2 attempts so far; the budget's 10 run out at the 11th.
	for i := 2; i < pairing.Budget.Burst; i++ {
		require.Equal(t, http.StatusUnauthorized, s.Do("POST", protocol.PairPath, "", `{"code":"WXYZ-WXYZ"}`).Status, "attempt %d", i+1)
	}
	r = s.Do("POST", protocol.PairPath, "", `{"code":"WXYZ-WXYZ"}`)
	require.Equal(t, http.StatusTooManyRequests, r.Status)
	require.Equal(t, "rate_limited", r.Error)
	require.NotEmpty(t, r.Header.Get("Retry-After"))

	resp, err := s.Client.Get(operator + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, want := range []string{
		`relay_agent_pair_attempts_total{result="paired"} 1`,
		`relay_agent_pair_attempts_total{result="invalid"} 9`,
		`relay_agent_pair_attempts_total{result="rate_limited"} 1`,
		`relay_http_requests_total{code="401",route="POST /v1/agent/pair"} 9`,
	} {
		require.Contains(t, string(b), want)
	}
	for _, e := range s.Logs.All() {
		for _, v := range e.ContextMap() {
			if str, ok := v.(string); ok {
				require.NotContains(t, str, code.Code, "no log line holds the code")
			}
		}
	}
}
