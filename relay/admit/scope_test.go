package admit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/admit"
	"tradebridge/relay/auth"
	"tradebridge/relay/auth/authtest"
	"tradebridge/relay/budget"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// A read token is refused every request that needs trade with 403
// insufficient_scope and its challenge, holding no in-flight place and
// charging no budget; a trade token and a token of another kind pass.
func TestScope(t *testing.T) {
	t.Parallel()
	byPath := func(r *http.Request) auth.Scope {
		if r.URL.Path == "/bars" {
			return auth.ScopeRead
		}
		return auth.ScopeTrade
	}
	cases := []struct {
		name   string
		token  string
		method string
		path   string
		scope  func(*http.Request) auth.Scope
		kind   auth.Kind
		status int
		need   auth.Scope // the challenge's scope when refused
	}{
		{"read token GET", "read", http.MethodGet, "/x", nil, auth.KindAPI, 200, ""},
		{"read token HEAD", "read", http.MethodHead, "/x", nil, auth.KindAPI, 200, ""},
		{"read token OPTIONS", "read", http.MethodOptions, "/x", nil, auth.KindAPI, 200, ""},
		{"read token POST", "read", http.MethodPost, "/x", nil, auth.KindAPI, 403, auth.ScopeTrade},
		{"read token PUT", "read", http.MethodPut, "/x", nil, auth.KindAPI, 403, auth.ScopeTrade},
		{"read token DELETE", "read", http.MethodDelete, "/x", nil, auth.KindAPI, 403, auth.ScopeTrade},
		{"read token PATCH", "read", http.MethodPatch, "/x", nil, auth.KindAPI, 403, auth.ScopeTrade},
		{"door's read POST", "read", http.MethodPost, "/bars", byPath, auth.KindAPI, 200, ""},
		{"door's write POST", "read", http.MethodPost, "/place", byPath, auth.KindAPI, 403, auth.ScopeTrade},
		{"trade token POST", "trade", http.MethodPost, "/x", nil, auth.KindAPI, 200, ""},
		{"token before scopes POST", "legacy", http.MethodPost, "/x", nil, auth.KindAPI, 200, ""},
		{"agent token POST", "agent", http.MethodPost, "/x", nil, auth.KindAgent, 200, ""},
	}
	fa := authtest.New(map[string]auth.Principal{
		"read":   {UserID: "usr_read", Plan: auth.PlanPro, Kind: auth.KindAPI, Scope: auth.ScopeRead},
		"trade":  {UserID: "usr_trade", Plan: auth.PlanPro, Kind: auth.KindAPI, Scope: auth.ScopeTrade},
		"legacy": {UserID: "usr_legacy", Plan: auth.PlanPro, Kind: auth.KindAPI},
		"agent":  {UserID: "usr_agent", Plan: auth.PlanPro, Kind: auth.KindAgent},
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, err := admit.New(admit.Options{Auth: fa})
			require.NoError(t, err)
			trading := limiter(t, "trading", 5)
			d := &admit.Door{Name: "trading", Kind: tc.kind, Plan: auth.PlanPro, Scope: tc.scope, InFlight: 1,
				Budgets: []*budget.Limiter{trading}}
			r := request(tc.token)
			r.Method, r.URL.Path = tc.method, tc.path
			w := httptest.NewRecorder()
			ad, ok := a.Admit(w, r, d)
			user := principalOf(t, fa, tc.token, tc.kind).UserID
			if tc.status == 200 {
				require.True(t, ok, w.Body.String())
				require.Equal(t, 1, a.InFlight("trading", user))
				require.Equal(t, 4, trading.Peek(user).Remaining, "admitted: charged one")
				ad.Done()
				return
			}
			require.False(t, ok)
			require.Equal(t, tc.status, w.Code)
			got := decode(t, w)
			require.Equal(t, errcode.InsufficientScope, got.Error)
			require.Contains(t, got.Detail, "needs the "+string(tc.need)+" scope")
			require.Equal(t, admit.ScopeChallenge(tc.need), w.Header().Get("WWW-Authenticate"))
			require.Equal(t, `Bearer error="insufficient_scope", scope="trade"`, w.Header().Get("WWW-Authenticate"))
			require.Zero(t, a.InFlight("trading", user), "a refused request holds no place")
			require.Equal(t, 5, trading.Peek(user).Remaining, "a refused request is charged nothing")
		})
	}
}

// principalOf is the principal fa knows for token.
func principalOf(t *testing.T, fa *authtest.Auth, token string, kind auth.Kind) auth.Principal {
	t.Helper()
	p, err := fa.Authenticate(t.Context(), token, kind)
	require.NoError(t, err)
	return p
}

// The scope step runs after the plan and the gate: a read token of a
// plan below the door's is told of the plan, not of its scope.
func TestScopeAfterPlanAndGate(t *testing.T) {
	t.Parallel()
	fa := authtest.New(map[string]auth.Principal{
		"free-read": {UserID: "usr_free", Plan: auth.PlanFree, Kind: auth.KindAPI, Scope: auth.ScopeRead},
		"pro-read":  {UserID: "usr_pro", Plan: auth.PlanPro, Kind: auth.KindAPI, Scope: auth.ScopeRead},
	})
	a, err := admit.New(admit.Options{Auth: fa})
	require.NoError(t, err)
	d := &admit.Door{Name: "trading", Kind: auth.KindAPI, Plan: auth.PlanPro, PlanCode: errcode.PlanRequired}
	r := request("free-read")
	r.Method = http.MethodPost
	w := httptest.NewRecorder()
	_, ok := a.Admit(w, r, d)
	require.False(t, ok)
	require.Equal(t, errcode.PlanRequired, decode(t, w).Error)
	require.Empty(t, w.Header().Get("WWW-Authenticate"))

	d.Gate = func(*http.Request, auth.Principal) *httpapi.Error { return errGate }
	r = request("pro-read")
	r.Method = http.MethodPost
	w = httptest.NewRecorder()
	_, ok = a.Admit(w, r, d)
	require.False(t, ok)
	require.Equal(t, errcode.NotAvailable, decode(t, w).Error)
}
