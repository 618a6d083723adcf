package activity_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/activity"
	"tradebridge/relay/admit"
	"tradebridge/relay/auth"
	"tradebridge/relay/auth/authtest"
	"tradebridge/relay/budget"
	"tradebridge/relay/store"
	"tradebridge/relay/store/storetest"
)

type routeFixture struct {
	s   store.Store
	url string
	// seqs are u1's entries, oldest first.
	seqs []int64
}

// newRoute serves the route over a store holding u1's entries: 5 on
// Sim101 and Sim102 of several kinds, and u2's one.
func newRoute(t *testing.T, pol budget.Policy) *routeFixture {
	t.Helper()
	ctx := context.Background()
	f := &routeFixture{s: storetest.Open(t, "sqlite")}
	for _, u := range []string{"u1", "u2", "u3"} {
		require.NoError(t, f.s.CreateUser(ctx, store.User{ID: u, Name: u, Plan: "pro", CreatedAt: testkit.Epoch}))
	}
	for i, k := range []string{protocol.ActivityOrderPlaced, protocol.ActivityOrderRefused, protocol.ActivityConfigChanged,
		protocol.ActivityOrderPlaced, protocol.ActivityMonitorTripped} {
		acct := "Sim101"
		if i%2 == 1 {
			acct = "Sim102"
		}
		if k == protocol.ActivityConfigChanged {
			acct = ""
		}
		seq, _, err := f.s.AppendActivity(ctx, "u1", store.ActivityRecord{At: testkit.Epoch.Add(time.Duration(i) * time.Second),
			Kind: k, Class: activity.Class(k), Account: acct, SourceKind: protocol.SourceAPI, SourceID: "tok1", SourceName: "bot",
			Summary: k, Detail: []byte(`{"n":` + string(rune('0'+i)) + `}`)})
		require.NoError(t, err)
		f.seqs = append(f.seqs, seq)
	}
	_, _, err := f.s.AppendActivity(ctx, "u2", store.ActivityRecord{At: testkit.Epoch, Kind: protocol.ActivityOrderPlaced,
		Class: store.ActivityClassTrading, Account: "Sim101", SourceKind: protocol.SourceAPI, Summary: "theirs"})
	require.NoError(t, err)

	a := authtest.New(map[string]auth.Principal{
		"tok-u1":    {UserID: "u1", Plan: auth.PlanPro, Kind: auth.KindAPI},
		"tok-u2":    {UserID: "u2", Plan: auth.PlanPro, Kind: auth.KindAPI},
		"tok-free":  {UserID: "u3", Plan: "free", Kind: auth.KindAPI},
		"tok-agent": {UserID: "u1", Plan: auth.PlanPro, Kind: auth.KindAgent},
	})
	adm, err := admit.New(admit.Options{Auth: a})
	require.NoError(t, err)
	srv, err := activity.NewServer(activity.ServerOptions{Store: f.s, Admit: adm, Budget: pol})
	require.NoError(t, err)
	mux := http.NewServeMux()
	srv.Register(mux)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	f.url = hs.URL + activity.Path
	return f
}

type answer struct {
	Success bool            `json:"success"`
	Error   string          `json:"error"`
	Detail  string          `json:"detail"`
	Data    json.RawMessage `json:"data"`
	Fields  []struct {
		Path string `json:"path"`
	} `json:"fields"`
}

func get(t *testing.T, url, token string, body io.Reader) (int, answer, http.Header) {
	t.Helper()
	method := http.MethodGet
	req, err := http.NewRequest(method, url, body)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var a answer
	require.NoError(t, json.NewDecoder(res.Body).Decode(&a))
	return res.StatusCode, a, res.Header
}

func page(t *testing.T, a answer) activity.Page {
	t.Helper()
	var p activity.Page
	require.NoError(t, json.Unmarshal(a.Data, &p))
	return p
}

func ids(p activity.Page) []string {
	out := []string{}
	for _, e := range p.Events {
		out = append(out, e.ID)
	}
	return out
}

// The caller reads its own entries, newest first, filtered and paged.
func TestRouteReads(t *testing.T) {
	t.Parallel()
	f := newRoute(t, budget.Policy{})
	id := func(i int) string { return activity.EntryID(f.seqs[i]) }

	status, a, h := get(t, f.url, "tok-u1", nil)
	require.Equal(t, http.StatusOK, status)
	require.True(t, a.Success)
	require.NotEmpty(t, h.Get("RateLimit-Policy"), "the activity budget's state")
	p := page(t, a)
	require.Equal(t, []string{id(4), id(3), id(2), id(1), id(0)}, ids(p))
	require.Nil(t, p.Next, "no more entries")
	e := p.Events[0]
	require.Equal(t, protocol.ActivityEntry{ID: id(4), At: testkit.Epoch.Add(4 * time.Second), Kind: protocol.ActivityMonitorTripped,
		Account: "Sim101", Source: protocol.ActivitySource{Kind: protocol.SourceAPI, ID: "tok1", Name: "bot"},
		Summary: protocol.ActivityMonitorTripped, Detail: json.RawMessage(`{"n":4}`)}, e)
	require.Contains(t, string(a.Data), `"at":"2026-11-02T15:00:04Z"`)

	// Paging.
	_, a, _ = get(t, f.url+"?limit=2", "tok-u1", nil)
	p = page(t, a)
	require.Equal(t, []string{id(4), id(3)}, ids(p))
	require.NotNil(t, p.Next)
	require.Equal(t, id(3), *p.Next)
	_, a, _ = get(t, f.url+"?limit=2&before="+*p.Next, "tok-u1", nil)
	p = page(t, a)
	require.Equal(t, []string{id(2), id(1)}, ids(p))
	_, a, _ = get(t, f.url+"?limit=2&before="+*p.Next, "tok-u1", nil)
	p = page(t, a)
	require.Equal(t, []string{id(0)}, ids(p))
	require.Nil(t, p.Next)

	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"?account=Sim101", []string{id(4), id(0)}},
		{"?account=Sim102", []string{id(3), id(1)}},
		{"?kind=order.placed", []string{id(3), id(0)}},
		{"?kind=order.refused,%20monitor.tripped,order.refused", []string{id(4), id(1)}},
		{"?kind=order.placed&account=Sim102", []string{id(3)}},
		{"?account=Nope", []string{}},
	} {
		status, a, _ := get(t, f.url+tc.query, "tok-u1", nil)
		require.Equal(t, http.StatusOK, status, tc.query)
		require.Equal(t, tc.want, ids(page(t, a)), tc.query)
	}

	// Another user sees only their own.
	_, a, _ = get(t, f.url, "tok-u2", nil)
	p = page(t, a)
	require.Len(t, p.Events, 1)
	require.Equal(t, "theirs", p.Events[0].Summary)
	_, a, _ = get(t, f.url+"?before="+id(4), "tok-u2", nil)
	require.Empty(t, page(t, a).Events, "another user's id pages over the caller's own entries only")
}

// The query is strict, refusals never echo what was sent, and admission
// refuses what it refuses on every door.
func TestRouteRefusals(t *testing.T) {
	t.Parallel()
	f := newRoute(t, budget.Policy{Name: "activity", Rate: 60, Period: time.Minute, Burst: 40})
	for _, tc := range []struct {
		name, query, token string
		status             int
		code, field        string
	}{
		{"no token", "", "", http.StatusUnauthorized, "unauthorized", ""},
		{"bad token", "", "nope", http.StatusUnauthorized, "unauthorized", ""},
		{"agent token", "", "tok-agent", http.StatusUnauthorized, "unauthorized", ""},
		{"plan", "", "tok-free", http.StatusForbidden, "plan_required", ""},
		{"unknown parameter", "?acount=Sim101", "tok-u1", http.StatusBadRequest, "unknown_parameter", "acount"},
		{"repeated parameter", "?limit=1&limit=2", "tok-u1", http.StatusBadRequest, "unknown_parameter", ""},
		{"unknown kind", "?kind=order.placed,secret-kind-xyz", "tok-u1", http.StatusBadRequest, "invalid_argument", "kind"},
		{"empty kind", "?kind=", "tok-u1", http.StatusBadRequest, "invalid_argument", "kind"},
		{"limit low", "?limit=0", "tok-u1", http.StatusBadRequest, "invalid_argument", "limit"},
		{"limit high", "?limit=501", "tok-u1", http.StatusBadRequest, "invalid_argument", "limit"},
		{"limit text", "?limit=ten", "tok-u1", http.StatusBadRequest, "invalid_argument", "limit"},
		{"bad before", "?before=secret-id-xyz", "tok-u1", http.StatusBadRequest, "invalid_argument", "before"},
		{"bad account", "?account=%20Sim", "tok-u1", http.StatusBadRequest, "invalid_argument", "account"},
	} {
		status, a, _ := get(t, f.url+tc.query, tc.token, nil)
		require.Equal(t, tc.status, status, tc.name)
		require.False(t, a.Success, tc.name)
		require.Equal(t, tc.code, a.Error, tc.name)
		require.NotContains(t, a.Detail, "secret", tc.name)
		if tc.field != "" {
			require.NotEmpty(t, a.Fields, tc.name)
			require.Equal(t, tc.field, a.Fields[0].Path, tc.name)
		}
	}
	status, a, _ := get(t, f.url, "tok-u1", strings.NewReader(`{"a":1}`))
	require.Equal(t, http.StatusBadRequest, status, "no body")
	require.Equal(t, "unexpected_body", a.Error)
	status, _, _ = get(t, f.url+"?limit=500", "tok-u1", nil)
	require.Equal(t, http.StatusOK, status)
}

// The route's own budget refuses a caller over it, naming the policy.
func TestRouteBudget(t *testing.T) {
	t.Parallel()
	f := newRoute(t, budget.Policy{Name: "activity", Rate: 1, Period: time.Hour, Burst: 2})
	for range 2 {
		status, _, _ := get(t, f.url, "tok-u1", nil)
		require.Equal(t, http.StatusOK, status)
	}
	status, a, _ := get(t, f.url, "tok-u1", nil)
	require.Equal(t, http.StatusTooManyRequests, status)
	require.Equal(t, "rate_limited", a.Error)
	status, _, _ = get(t, f.url, "tok-u2", nil)
	require.Equal(t, http.StatusOK, status, "per user")
}
