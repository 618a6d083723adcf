package manage

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/admit"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/store"
)

// sqliteEnv is a Server over a real SQLite store in a temporary directory,
// the real authenticator and the fake hub, on a budget clock that moves a
// minute per request (benchmarks measure latency, not budgets).
type sqliteEnv struct {
	s     *Server
	mux   *http.ServeMux
	token string
}

func newSQLiteEnv(b *testing.B) *sqliteEnv {
	b.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Dir: b.TempDir()})
	require.NoError(b, err)
	b.Cleanup(func() { st.Close() })
	creds, err := auth.CreateUser(ctx, st, "bench", auth.PlanElite, time.Now())
	require.NoError(b, err)
	authn, err := auth.New(auth.Options{Store: st})
	require.NoError(b, err)
	adm, err := admit.New(admit.Options{Auth: authn})
	require.NoError(b, err)
	var clock atomic.Int64
	s, err := New(Options{Store: st, Hub: newFakeHub(creds.UserID), Admitter: adm,
		Now: func() int64 { return clock.Add(int64(time.Minute)) }})
	require.NoError(b, err)
	b.Cleanup(func() { _ = s.Close() })
	mux := http.NewServeMux()
	s.Register(mux)
	return &sqliteEnv{s: s, mux: mux, token: creds.APIToken}
}

// serve runs one request and returns its status.
func (e *sqliteEnv) serve(method, path, body string) int {
	var r *http.Request
	if body != "" {
		r = httptest.NewRequest(method, "http://relay"+Prefix+path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
	} else {
		r = httptest.NewRequest(method, "http://relay"+Prefix+path, nil)
	}
	r.RemoteAddr = "192.0.2.1:1"
	r.Header.Set("Authorization", "Bearer "+e.token)
	w := httptest.NewRecorder()
	e.mux.ServeHTTP(w, r)
	return w.Code
}

// reportLatency reports the median and the 99th percentile of took.
func reportLatency(b *testing.B, took []time.Duration) {
	if len(took) == 0 {
		return
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkManageGet is GET /controls through admission and the SQLite
// store.
func BenchmarkManageGet(b *testing.B) {
	e := newSQLiteEnv(b)
	require.Equal(b, http.StatusOK, e.serve(http.MethodPatch, "/controls", `{"flattenOnKill":true}`))
	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if code := e.serve(http.MethodGet, "/controls", ""); code != http.StatusOK {
			b.Fatalf("status %d", code)
		}
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	reportLatency(b, took)
}

// BenchmarkManagePatch is PATCH /controls (a change each time, stored
// durably, pushed to an agent that acknowledges at once) through
// admission and the SQLite store.
func BenchmarkManagePatch(b *testing.B) {
	e := newSQLiteEnv(b)
	bodies := []string{`{"flattenOnKill":true}`, `{"flattenOnKill":false}`}
	took := make([]time.Duration, 0, b.N)
	i := 0
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if code := e.serve(http.MethodPatch, "/controls", bodies[i%2]); code != http.StatusOK {
			b.Fatalf("status %d", code)
		}
		took = append(took, time.Since(start))
		i++
	}
	b.StopTimer()
	reportLatency(b, took)
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

// BenchmarkAdmission is the admission of a GET alone, in memory: address
// budget, token (the fake authenticator), plan, gate, in-flight, token
// and read budgets, path, body and class.
func BenchmarkAdmission(b *testing.B) {
	var clock atomic.Int64
	tick := func() int64 { return clock.Add(int64(time.Minute)) }
	e := newEnv(b, func(o *Options) {
		o.Now = tick
		ip, err := budget.New(budget.Options{Policy: admit.DefaultIPPolicy, Now: tick})
		require.NoError(b, err)
		o.IPBudget = ip
	})
	var rt *route
	for _, x := range e.s.routes {
		if x.op == routeGet && x.path == "desktop/copiers/{id}" {
			rt = x
		}
	}
	r := httptest.NewRequest(http.MethodGet, "http://relay"+Prefix+"/desktop/copiers/"+noCopier, nil)
	r.SetPathValue("id", noCopier)
	r.RemoteAddr = "192.0.2.1:1"
	r.Header.Set("Authorization", "Bearer "+tokElite)
	w := &discard{h: http.Header{}}
	took := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		a, ok := e.s.admitRequest(w, r, rt)
		if !ok {
			b.Fatal("refused")
		}
		a.done()
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds()), "p99-ns")
}
