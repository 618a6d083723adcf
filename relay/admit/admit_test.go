package admit_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"tradebridge/relay/admit"
	"tradebridge/relay/auth"
	"tradebridge/relay/auth/authtest"
	"tradebridge/relay/budget"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The tokens the admitter's authenticator knows; any other is
// unauthorized, and "broken" fails as a store would.
var principals = map[string]auth.Principal{
	"free":  {UserID: "usr_free", Plan: auth.PlanFree, Kind: auth.KindAPI},
	"pro":   {UserID: "usr_pro", Plan: auth.PlanPro, Kind: auth.KindAPI},
	"elite": {UserID: "usr_elite", Plan: auth.PlanElite, Kind: auth.KindAPI},
	"agent": {UserID: "usr_pro", Plan: auth.PlanPro, Kind: auth.KindAgent},
}

var errStore = errors.New("store down")

// newFakeAuth is an authenticator over principals.
func newFakeAuth() *authtest.Auth {
	fa := authtest.New(principals)
	fa.Fail("broken", errStore)
	return fa
}

func newAdmitter(t testing.TB) (*admit.Admitter, *authtest.Auth) {
	t.Helper()
	fa := newFakeAuth()
	a, err := admit.New(admit.Options{Auth: fa})
	require.NoError(t, err)
	return a, fa
}

// limiter is a budget of burst n on a clock that never moves.
func limiter(t testing.TB, name string, n int) *budget.Limiter {
	t.Helper()
	l, err := budget.New(budget.Options{Policy: budget.Policy{Name: name, Rate: n, Period: time.Minute, Burst: n}, Now: func() int64 { return 0 }})
	require.NoError(t, err)
	return l
}

// exhausted is a budget with nothing left for key.
func exhausted(t testing.TB, name, key string) *budget.Limiter {
	t.Helper()
	l := limiter(t, name, 1)
	require.True(t, l.Allow(key).Allowed)
	return l
}

func request(token string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/x", nil)
	r.RemoteAddr = "192.0.2.7:5555"
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	return r
}

type answer struct {
	Error      string `json:"error"`
	Detail     string `json:"detail"`
	RetryAfter int    `json:"retryAfter"`
	Policy     string `json:"policy"`
}

func decode(t *testing.T, w *httptest.ResponseRecorder) answer {
	t.Helper()
	var a answer
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &a), w.Body.String())
	return a
}

var errGate = &httpapi.Error{Status: http.StatusForbidden, Code: errcode.NotAvailable, Detail: "closed"}

// Each step refuses while every later one would refuse too: the earliest
// step's answer wins, and the later steps are not run (a refused token
// reaches no plan; a refused gate charges no budget).
func TestOrderOfChecks(t *testing.T) {
	t.Parallel()
	gateShut := func(*http.Request, auth.Principal) *httpapi.Error { return errGate }
	gateOpen := func(*http.Request, auth.Principal) *httpapi.Error { return nil }
	cases := []struct {
		name       string
		ipSpent    bool
		token      string
		gate       func(*http.Request, auth.Principal) *httpapi.Error
		inFlight   bool // the user's one place is taken
		budgetGone bool
		status     int
		code       string
		policy     string
		detail     string
	}{
		{"ip before token", true, "", gateShut, true, true, 429, errcode.RateLimited, "ip", ""},
		{"missing token before plan", false, "", gateShut, true, true, 401, errcode.Unauthorized, "", "send a token"},
		{"bad token before plan", false, "nope", gateShut, true, true, 401, errcode.Unauthorized, "", "bad token"},
		{"wrong kind is a bad token", false, "agent", gateShut, true, true, 401, errcode.Unauthorized, "", "bad token"},
		{"store failure before plan", false, "broken", gateShut, true, true, 503, errcode.StorageUnavailable, "", ""},
		{"plan before gate", false, "pro", gateShut, true, true, 403, errcode.EliteRequired, "", "elite only"},
		{"gate before in-flight", false, "elite", gateShut, true, true, 403, errcode.NotAvailable, "", "closed"},
		{"in-flight before budgets", false, "elite", gateOpen, true, true, 429, errcode.TooManyConcurrentRequests, "", ""},
		{"budgets last", false, "elite", nil, false, true, 429, errcode.RateLimited, "write", ""},
		{"admitted", false, "elite", gateOpen, false, false, 200, "", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, fa := newAdmitter(t)
			d := &admit.Door{
				Name: "manage", Kind: auth.KindAPI, Plan: auth.PlanElite,
				PlanCode: errcode.EliteRequired, PlanDetail: "elite only",
				MissingTokenDetail: "send a token", InvalidTokenDetail: "bad token",
				IP: limiter(t, "ip", 5), Gate: tc.gate, InFlight: 1,
				Budgets: []*budget.Limiter{limiter(t, "token", 5), limiter(t, "write", 5)}, RateLimitHeaders: true,
			}
			if tc.ipSpent {
				d.IP = exhausted(t, "ip", "192.0.2.7")
			}
			if tc.inFlight {
				held, ok := a.Admit(httptest.NewRecorder(), request("elite"), &admit.Door{Name: "manage", Kind: auth.KindAPI, InFlight: 1})
				require.True(t, ok)
				defer held.Done()
			}
			if tc.budgetGone {
				d.Budgets[1] = exhausted(t, "write", "usr_elite")
			}
			calls := fa.Calls()
			w := httptest.NewRecorder()
			ad, ok := a.Admit(w, request(tc.token), d)
			if tc.status == 200 {
				require.True(t, ok)
				require.Equal(t, "usr_elite", ad.Principal.UserID)
				require.Equal(t, `"token";q=5;w=60`, w.Header().Get("RateLimit-Policy"))
				require.Equal(t, `"token";r=4;t=12`, w.Header().Get("RateLimit"))
				require.Equal(t, 1, a.InFlight("manage", "usr_elite"))
				ad.Done()
				require.Zero(t, a.InFlight("manage", "usr_elite"))
				return
			}
			require.False(t, ok)
			require.Nil(t, ad)
			require.Equal(t, tc.status, w.Code, w.Body.String())
			got := decode(t, w)
			require.Equal(t, tc.code, got.Error)
			require.Equal(t, tc.policy, got.Policy)
			if tc.detail != "" {
				require.Equal(t, tc.detail, got.Detail)
			}
			switch tc.code {
			case errcode.RateLimited, errcode.TooManyConcurrentRequests:
				require.NotEmpty(t, w.Header().Get("Retry-After"))
				require.Positive(t, got.RetryAfter)
			case errcode.StorageUnavailable:
				require.Equal(t, "5", w.Header().Get("Retry-After"))
				require.Equal(t, 5, got.RetryAfter)
			}
			if tc.ipSpent {
				require.Equal(t, calls, fa.Calls(), "a refused address must cost no token look-up")
			}
			// A refusal holds no in-flight place beyond the one taken
			// on purpose.
			want := 0
			if tc.inFlight {
				want = 1
			}
			require.Equal(t, want, a.InFlight("manage", "usr_elite"))
		})
	}
}

// A refusal by a budget releases the in-flight place Admit took, and a
// refused budget charges nothing to the budgets after it.
func TestBudgetRefusalReleases(t *testing.T) {
	t.Parallel()
	a, _ := newAdmitter(t)
	first, third := limiter(t, "token", 5), limiter(t, "after", 5)
	d := &admit.Door{Name: "manage", Kind: auth.KindAPI, InFlight: 1,
		Budgets: []*budget.Limiter{first, exhausted(t, "write", "usr_pro"), third}}
	w := httptest.NewRecorder()
	_, ok := a.Admit(w, request("pro"), d)
	require.False(t, ok)
	require.Equal(t, "write", decode(t, w).Policy)
	require.Equal(t, `"write";q=1;w=60`, w.Header().Get("RateLimit-Policy"))
	require.Zero(t, a.InFlight("manage", "usr_pro"))
	require.Equal(t, 4, first.Peek("usr_pro").Remaining, "every attempt counts")
	require.Equal(t, 5, third.Peek("usr_pro").Remaining)
}

func TestInFlight(t *testing.T) {
	t.Parallel()
	a, _ := newAdmitter(t)
	d := &admit.Door{Name: "manage", Kind: auth.KindAPI, InFlight: 2}
	other := &admit.Door{Name: "trading", Kind: auth.KindAPI, InFlight: 1}
	one, ok := a.Admit(httptest.NewRecorder(), request("pro"), d)
	require.True(t, ok)
	two, ok := a.Admit(httptest.NewRecorder(), request("pro"), d)
	require.True(t, ok)
	w := httptest.NewRecorder()
	_, ok = a.Admit(w, request("pro"), d)
	require.False(t, ok)
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	require.Equal(t, "1", w.Header().Get("Retry-After"))
	got := decode(t, w)
	require.Equal(t, errcode.TooManyConcurrentRequests, got.Error)
	require.Equal(t, 1, got.RetryAfter)

	// Another user, and another door, count apart.
	e, ok := a.Admit(httptest.NewRecorder(), request("elite"), d)
	require.True(t, ok)
	defer e.Done()
	t1, ok := a.Admit(httptest.NewRecorder(), request("pro"), other)
	require.True(t, ok)
	defer t1.Done()

	// Done releases once, however often it is called.
	one.Done()
	one.Done()
	require.Equal(t, 1, a.InFlight("manage", "usr_pro"))
	three, ok := a.Admit(httptest.NewRecorder(), request("pro"), d)
	require.True(t, ok)
	_, ok = a.Admit(httptest.NewRecorder(), request("pro"), d)
	require.False(t, ok)
	two.Done()
	three.Done()
	require.Zero(t, a.InFlight("manage", "usr_pro"))

	// Without a limit nothing is counted; Done is harmless, also on nil.
	free, ok := a.Admit(httptest.NewRecorder(), request("pro"), &admit.Door{Name: "stream", Kind: auth.KindAPI})
	require.True(t, ok)
	require.Zero(t, a.InFlight("stream", "usr_pro"))
	free.Done()
	var none *admit.Admission
	none.Done()
}

// Concurrent admissions never exceed the limit and leave nothing behind.
func TestInFlightConcurrent(t *testing.T) {
	t.Parallel()
	a, _ := newAdmitter(t)
	d := &admit.Door{Name: "manage", Kind: auth.KindAPI, InFlight: 3}
	var mu sync.Mutex
	running, most := 0, 0
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for range 50 {
				ad, ok := a.Admit(httptest.NewRecorder(), request("pro"), d)
				if !ok {
					continue
				}
				mu.Lock()
				running++
				most = max(most, running)
				mu.Unlock()
				mu.Lock()
				running--
				mu.Unlock()
				ad.Done()
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, most, 3)
	require.Zero(t, a.InFlight("manage", "usr_pro"))
}

func TestTokenFunc(t *testing.T) {
	t.Parallel()
	a, _ := newAdmitter(t)
	refuse := &httpapi.Error{Status: http.StatusUpgradeRequired, Code: errcode.UpgradeRequired, Detail: "upgrade"}
	// httptest.NewRequest comes from 192.0.2.1.
	d := &admit.Door{Name: "stream", Kind: auth.KindAPI, IP: exhausted(t, "ip", "192.0.2.1"),
		Token: func(r *http.Request) (string, *httpapi.Error) {
			if r.URL.Query().Get("no") != "" {
				return "", refuse
			}
			return r.URL.Query().Get("token"), nil
		}}
	// The address still comes first.
	w := httptest.NewRecorder()
	_, ok := a.Admit(w, httptest.NewRequest(http.MethodGet, "/x?no=1", nil), d)
	require.False(t, ok)
	require.Equal(t, http.StatusTooManyRequests, w.Code)

	d.IP = nil
	w = httptest.NewRecorder()
	_, ok = a.Admit(w, httptest.NewRequest(http.MethodGet, "/x?no=1", nil), d)
	require.False(t, ok)
	require.Equal(t, http.StatusUpgradeRequired, w.Code)
	require.Equal(t, errcode.UpgradeRequired, decode(t, w).Error)

	ad, ok := a.Admit(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/x?token=pro", nil), d)
	require.True(t, ok)
	require.Equal(t, "usr_pro", ad.Principal.UserID)

	// The bearer header is not read when Token is set.
	r := httptest.NewRequest(http.MethodGet, "/x", nil)
	r.Header.Set("Authorization", "Bearer pro")
	w = httptest.NewRecorder()
	_, ok = a.Admit(w, r, d)
	require.False(t, ok)
	require.Equal(t, http.StatusUnauthorized, w.Code)
}

// Defaults of the sentences and of the plan code.
func TestDefaults(t *testing.T) {
	t.Parallel()
	a, _ := newAdmitter(t)
	d := &admit.Door{Name: "x", Kind: auth.KindAPI, Plan: auth.PlanPro}
	w := httptest.NewRecorder()
	_, ok := a.Admit(w, request(""), d)
	require.False(t, ok)
	require.NotEmpty(t, decode(t, w).Detail)
	w = httptest.NewRecorder()
	_, ok = a.Admit(w, request("free"), d)
	require.False(t, ok)
	got := decode(t, w)
	require.Equal(t, errcode.PlanRequired, got.Error)
	require.NotEmpty(t, got.Detail)

	// Plan "" admits every plan.
	_, ok = a.Admit(httptest.NewRecorder(), request("free"), &admit.Door{Name: "x", Kind: auth.KindAPI})
	require.True(t, ok)

	_, err := admit.New(admit.Options{})
	require.Error(t, err)
}

func TestCharge(t *testing.T) {
	t.Parallel()
	a, _ := newAdmitter(t)
	p := principals["elite"]
	write := limiter(t, "write", 5)
	resource := limiter(t, "resource", 3)

	// Cost 2 on write, 1 on resource keyed by the resource.
	for range 2 {
		require.True(t, a.Charge(httptest.NewRecorder(), p,
			admit.Charge{Budget: write, Cost: 2}, admit.Charge{Budget: resource, Key: "copier:1"}))
	}
	require.Equal(t, 1, write.Peek("usr_elite").Remaining)
	require.Equal(t, 1, resource.Peek("copier:1").Remaining)
	require.Equal(t, 3, resource.Peek("usr_elite").Remaining, "a keyed charge is not the user's")

	// Cost 2 does not fit in 1: refused, nothing charged to write, and
	// the budgets after it are not charged.
	w := httptest.NewRecorder()
	require.False(t, a.Charge(w, p, admit.Charge{Budget: write, Cost: 2}, admit.Charge{Budget: resource, Key: "copier:1"}))
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	got := decode(t, w)
	require.Equal(t, errcode.RateLimited, got.Error)
	require.Equal(t, "write", got.Policy)
	require.Positive(t, got.RetryAfter)
	require.Equal(t, 1, write.Peek("usr_elite").Remaining)
	require.Equal(t, 1, resource.Peek("copier:1").Remaining)

	// Every attempt counts: the budgets before the refusal stay charged.
	w = httptest.NewRecorder()
	require.False(t, a.Charge(w, p, admit.Charge{Budget: resource, Key: "copier:1"}, admit.Charge{Budget: write, Cost: 2}))
	require.Equal(t, "write", decode(t, w).Policy)
	require.Zero(t, resource.Peek("copier:1").Remaining)

	// No charges, or a nil budget, admit.
	require.True(t, a.Charge(httptest.NewRecorder(), p))
	require.True(t, a.Charge(httptest.NewRecorder(), p, admit.Charge{}))
}

func TestVerify(t *testing.T) {
	t.Parallel()
	a, _ := newAdmitter(t)
	d := &admit.Door{Name: "stream", Kind: auth.KindAPI, Plan: auth.PlanPro, PlanCode: errcode.PlanRequired, PlanDetail: "pro"}
	p, e := a.Verify(context.Background(), d, "pro")
	require.Nil(t, e)
	require.Equal(t, "usr_pro", p.UserID)
	for token, want := range map[string]struct {
		status int
		code   string
	}{
		"":       {401, errcode.Unauthorized},
		"nope":   {401, errcode.Unauthorized},
		"agent":  {401, errcode.Unauthorized},
		"free":   {403, errcode.PlanRequired},
		"broken": {503, errcode.StorageUnavailable},
	} {
		_, e := a.Verify(context.Background(), d, token)
		require.NotNil(t, e, token)
		require.Equal(t, want.status, e.Status, token)
		require.Equal(t, want.code, e.Code, token)
	}
	p, e = a.Verify(context.Background(), &admit.Door{Name: "tunnel", Kind: auth.KindAgent}, "agent")
	require.Nil(t, e)
	require.Equal(t, auth.KindAgent, p.Kind)
}
