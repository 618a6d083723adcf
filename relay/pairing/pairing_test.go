package pairing_test

import (
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"tradebridge/protocol"
	"tradebridge/relay/admit"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/pairing"
	"tradebridge/relay/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Codes are 8 characters of the alphabet, every character drawn about
// as often as every other.
func TestMintedCodes(t *testing.T) {
	t.Parallel()
	st, user := newStore(t)
	counts := map[rune]int{}
	seen := map[string]bool{}
	now := time.Now()
	const n = 400
	for range n {
		c, err := pairing.Mint(context.Background(), st, user, now)
		require.NoError(t, err)
		require.Regexp(t, `^[ABCDEFGHJKMNPQRSTUVWXYZ23456789]{4}-[ABCDEFGHJKMNPQRSTUVWXYZ23456789]{4}$`, c.Code)
		require.Equal(t, now.UTC().Truncate(time.Millisecond).Add(pairing.TTL), c.ExpiresAt)
		require.False(t, seen[c.Code], "codes do not repeat")
		seen[c.Code] = true
		for _, r := range strings.ReplaceAll(c.Code, "-", "") {
			counts[r]++
		}
	}
	require.Len(t, counts, len(protocol.PairingCodeAlphabet), "every character is drawn")
	// 3200 characters over 31: about 103 each; a biased draw (b % 31
	// over all 256 bytes) favours the first 8 by a third.
	for r, c := range counts {
		require.InDelta(t, 103, c, 45, "%c", r)
	}
	_, err := pairing.Mint(context.Background(), st, "usr_nobody", now)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"ABCD-EFGH", "ABCDEFGH", true},
		{"abcd-efgh", "ABCDEFGH", true},
		{"  AbCdEfGh \n", "ABCDEFGH", true},
		{"2345-6789", "23456789", true},
		{"ABCD EFGH", "", false},
		{"ABCD--EFGH", "", false},
		{"ABC-DEFGH", "", false},
		{"ABCDEFG", "", false},
		{"ABCDEFGHJ", "", false},
		{"ABCD-EFGI", "", false}, // I is a look-alike
		{"ABCD-EFG0", "", false}, // 0 too
		{"ABCD-EFGL", "", false},
		{"ABCD-EFG1", "", false},
		{"ABCD-EFGO", "", false},
		{"", "", false},
		{"ÀBCD-EFGH", "", false},
	} {
		got, ok := pairing.Normalize(tc.in)
		require.Equal(t, tc.ok, ok, "%q", tc.in)
		require.Equal(t, tc.want, got, "%q", tc.in)
	}
	require.Equal(t, "ABCD-EFGH", pairing.Format("ABCDEFGH"))
	require.Len(t, pairing.Hash("ABCDEFGH"), 64)
	require.NotContains(t, pairing.Hash("ABCDEFGH"), "ABCDEFGH")
	require.NotEqual(t, pairing.Hash("ABCDEFGH"), pairing.Hash("ABCDEFGJ"))
}

// mismatched is a store whose look-up answers a code of another hash.
type mismatched struct {
	store.Store
	revoked atomic.Int32
}

func (m *mismatched) RedeemPairingCode(ctx context.Context, hash string, now time.Time, t store.Token) (store.PairingCode, error) {
	return store.PairingCode{Hash: strings.Repeat("0", 64), UserID: "usr_x"}, nil
}

func (m *mismatched) RevokeToken(context.Context, string, time.Time) error {
	m.revoked.Add(1)
	return nil
}

// The code's hash is compared again, in constant time, with the one
// looked up: a store that answers another code's pairs nothing, and the
// token minted for it is revoked.
func TestExchangeComparesTheHash(t *testing.T) {
	t.Parallel()
	m := &mismatched{}
	_, err := pairing.Exchange(context.Background(), m, "ABCD-EFGH", time.Now())
	require.ErrorIs(t, err, pairing.ErrInvalidCode)
	require.Equal(t, int32(1), m.revoked.Load())

	// The comparison is subtle.ConstantTimeCompare.
	f, err := parser.ParseFile(token.NewFileSet(), "pairing.go", nil, 0)
	require.NoError(t, err)
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "ConstantTimeCompare" {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "subtle" {
				found = true
			}
		}
		return true
	})
	require.True(t, found, "pairing.go compares hashes with subtle.ConstantTimeCompare")
}

// newStore opens a SQLite store with one user.
func newStore(t *testing.T) (store.Store, string) {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	creds, err := auth.CreateUser(context.Background(), st, "alice", auth.PlanPro, time.Now())
	require.NoError(t, err)
	return st, creds.UserID
}

// counter counts attempts by result.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) PairAttempt(result string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[result]++
}

func (c *counter) get(result string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[result]
}

// server is a pairing server on a loopback port.
type server struct {
	url     string
	st      store.Store
	user    string
	metrics *counter
	logs    *observer.ObservedLogs
	now     atomic.Pointer[time.Time]
}

func newServer(t *testing.T, pol budget.Policy) *server {
	t.Helper()
	st, user := newStore(t)
	a, err := auth.New(auth.Options{Store: st, CacheTTL: -1})
	require.NoError(t, err)
	adm, err := admit.New(admit.Options{Auth: a})
	require.NoError(t, err)
	core, logs := observer.New(zap.DebugLevel)
	s := &server{st: st, user: user, metrics: &counter{}, logs: logs}
	start := time.Now()
	s.now.Store(&start)
	srv, err := pairing.New(pairing.Options{Store: st, Admit: adm, Budget: pol, Metrics: s.metrics, Logger: zap.New(core),
		Now: func() time.Time { return *s.now.Load() }})
	require.NoError(t, err)
	mux := http.NewServeMux()
	srv.Register(mux)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	s.url = hs.URL
	return s
}

// roomy is a budget the tests that do not test it never exhaust.
var roomy = budget.Policy{Name: "pair", Rate: 10000, Period: time.Minute, Burst: 10000}

type answer struct {
	status     int
	header     http.Header
	raw        string
	Success    bool                  `json:"success"`
	Error      string                `json:"error"`
	Detail     string                `json:"detail"`
	Policy     string                `json:"policy"`
	RetryAfter int                   `json:"retryAfter"`
	Data       protocol.PairResponse `json:"data"`
}

func (s *server) do(t *testing.T, method, path, ctype, body, token string) answer {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	require.NoError(t, err)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(b)}
	if len(b) > 0 {
		require.NoError(t, json.Unmarshal(b, &a), string(b))
	}
	return a
}

func (s *server) pair(t *testing.T, body string) answer {
	t.Helper()
	return s.do(t, "POST", protocol.PairPath, "application/json", body, "")
}

func (s *server) mint(t *testing.T) string {
	t.Helper()
	c, err := pairing.Mint(context.Background(), s.st, s.user, *s.now.Load())
	require.NoError(t, err)
	return c.Code
}

// Every answer of POST /v1/agent/pair: the one 401 for every refused
// code, 400s for a malformed body, none repeating what was sent; a
// code pairs once.
func TestPairRoute(t *testing.T) {
	t.Parallel()
	s := newServer(t, roomy)
	good := s.mint(t)
	expired := s.mint(t)
	later := s.now.Load().Add(pairing.TTL + time.Second)

	r := s.pair(t, fmt.Sprintf(`{"code":%q}`, "  "+strings.ToLower(strings.ReplaceAll(good, "-", ""))+" "))
	require.Equal(t, http.StatusOK, r.status, r.raw)
	require.True(t, r.Success)
	require.Equal(t, s.user, r.Data.UserID)
	k, ok := auth.ParseKind(r.Data.Token)
	require.True(t, ok)
	require.Equal(t, auth.KindAgent, k)
	require.Equal(t, "no-store", r.header.Get("Cache-Control"))
	a, err := auth.New(auth.Options{Store: s.st, CacheTTL: -1})
	require.NoError(t, err)
	p, err := a.Authenticate(context.Background(), r.Data.Token, auth.KindAgent)
	require.NoError(t, err, "the new token opens a tunnel")
	require.Equal(t, s.user, p.UserID)

	s.now.Store(&later)
	for _, tc := range []struct {
		name, ctype, body string
		status            int
		code              string
	}{
		{"used", "application/json", fmt.Sprintf(`{"code":%q}`, good), 401, "pairing_code_invalid"},
		{"expired", "application/json", fmt.Sprintf(`{"code":%q}`, expired), 401, "pairing_code_invalid"},
		{"wrong", "application/json", `{"code":"WXYZ-WXYZ"}`, 401, "pairing_code_invalid"},
		{"not a code", "application/json", `{"code":"<script>SECRET"}`, 401, "pairing_code_invalid"},
		{"empty", "application/json", `{"code":""}`, 401, "pairing_code_invalid"},
		{"missing", "application/json", `{}`, 400, "missing_required_fields"},
		{"unknown field", "application/json", `{"code":"WXYZ-WXYZ","extra":1,"<SECRET>":2}`, 400, "invalid_argument"},
		{"wrong type", "application/json", `{"code":12345678}`, 400, "invalid_field"},
		{"duplicate key", "application/json", `{"code":"WXYZ-WXYZ","code":"SECR-ET12"}`, 400, "invalid_json"},
		{"not JSON", "application/json", `code=SECRET`, 400, "invalid_json"},
		{"no body", "application/json", ``, 400, "invalid_json"},
		{"not an object", "application/json", `["SECRET"]`, 400, "invalid_json"},
		{"form", "application/x-www-form-urlencoded", `code=SECRET`, 415, "unsupported_content_type"},
		{"too large", "application/json", `{"code":"` + strings.Repeat("S", 2000) + `"}`, 413, "body_too_large"},
	} {
		r := s.do(t, "POST", protocol.PairPath, tc.ctype, tc.body, "")
		require.Equal(t, tc.status, r.status, "%s: %s", tc.name, r.raw)
		require.Equal(t, tc.code, r.Error, tc.name)
		require.False(t, r.Success, tc.name)
		for _, secret := range []string{"SECRET", "WXYZ", "<script>", good, expired, strings.ReplaceAll(good, "-", "")} {
			require.NotContains(t, r.raw, secret, "%s: the answer never repeats what was sent", tc.name)
		}
	}
	require.Equal(t, 1, s.metrics.get(pairing.ResultPaired))
	require.Equal(t, 5, s.metrics.get(pairing.ResultInvalid))
	require.Equal(t, 9, s.metrics.get(pairing.ResultBadRequest))

	// Refusals are logged with the address, never a code.
	warns := s.logs.FilterMessageSnippet("pairing attempt refused").All()
	require.Len(t, warns, 14)
	for _, e := range s.logs.All() {
		line := e.Message + fmt.Sprint(e.ContextMap())
		for _, secret := range []string{good, expired, strings.ReplaceAll(good, "-", ""), "WXYZ", "SECRET", r.Data.Token} {
			require.NotContains(t, line, secret)
		}
		if strings.Contains(e.Message, "refused") {
			require.Equal(t, "127.0.0.1", e.ContextMap()["addr"])
		}
	}
}

// The route's per-address budget: the 11th attempt in a minute is 429
// with Retry-After, a good code included; attempts are counted.
func TestPairBudget(t *testing.T) {
	t.Parallel()
	s := newServer(t, pairing.Budget)
	for i := range pairing.Budget.Burst {
		r := s.pair(t, `{"code":"WXYZ-WXYZ"}`)
		require.Equal(t, http.StatusUnauthorized, r.status, "attempt %d", i+1)
	}
	r := s.pair(t, fmt.Sprintf(`{"code":%q}`, s.mint(t)))
	require.Equal(t, http.StatusTooManyRequests, r.status, r.raw)
	require.Equal(t, "rate_limited", r.Error)
	require.Equal(t, "pair", r.Policy)
	require.Positive(t, r.RetryAfter)
	require.Regexp(t, `^[1-9][0-9]*$`, r.header.Get("Retry-After"))
	require.Equal(t, 1, s.metrics.get(pairing.ResultRateLimited))
}

// Many exchanges of one code at once: one token.
func TestPairOnceUnderConcurrency(t *testing.T) {
	t.Parallel()
	s := newServer(t, roomy)
	for round := range 3 {
		code := s.mint(t)
		const n = 10
		statuses := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, err := http.NewRequest("POST", s.url+protocol.PairPath, strings.NewReader(fmt.Sprintf(`{"code":%q}`, code)))
				if err != nil {
					return
				}
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				statuses[i] = resp.StatusCode
			}()
		}
		wg.Wait()
		ok := 0
		for _, st := range statuses {
			require.Contains(t, []int{200, 401}, st, "round %d", round)
			if st == 200 {
				ok++
			}
		}
		require.Equal(t, 1, ok, "round %d: one exchange pairs", round)
	}
	toks, err := auth.ListTokens(context.Background(), s.st, s.user)
	require.NoError(t, err)
	require.Len(t, toks, 2+3, "the user's first two tokens and one per code")
}

// DELETE /v1/agent/token revokes the agent token that authorizes it, and
// that one only.
func TestRevokeOwnToken(t *testing.T) {
	t.Parallel()
	s := newServer(t, roomy)
	first := s.pair(t, fmt.Sprintf(`{"code":%q}`, s.mint(t))).Data.Token
	second := s.pair(t, fmt.Sprintf(`{"code":%q}`, s.mint(t))).Data.Token
	apiTok, err := auth.IssueToken(context.Background(), s.st, s.user, auth.KindAPI, "", time.Now())
	require.NoError(t, err)

	for _, tc := range []struct {
		name, token string
		status      int
		code        string
	}{
		{"no token", "", 401, "unauthorized"},
		{"an API token", apiTok, 401, "unauthorized"},
		{"made up", "tb_agent_" + strings.Repeat("A", 43), 401, "unauthorized"},
		{"the agent's", first, 204, ""},
		{"again", first, 401, "unauthorized"},
	} {
		r := s.do(t, "DELETE", protocol.AgentTokenPath, "", "", tc.token)
		require.Equal(t, tc.status, r.status, "%s: %s", tc.name, r.raw)
		require.Equal(t, tc.code, r.Error, tc.name)
	}
	r := s.do(t, "DELETE", protocol.AgentTokenPath, "application/json", `{}`, second)
	require.Equal(t, http.StatusBadRequest, r.status, "a body is refused")
	require.Equal(t, "unexpected_body", r.Error)

	a, err := auth.New(auth.Options{Store: s.st, CacheTTL: -1})
	require.NoError(t, err)
	_, err = a.Authenticate(context.Background(), first, auth.KindAgent)
	require.ErrorIs(t, err, auth.ErrUnauthorized)
	_, err = a.Authenticate(context.Background(), second, auth.KindAgent)
	require.NoError(t, err, "the other agent token stays")
	_, err = a.Authenticate(context.Background(), apiTok, auth.KindAPI)
	require.NoError(t, err)
}
