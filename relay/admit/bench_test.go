package admit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/admit"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/budget/budgettest"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/store"
)

// discard is a ResponseWriter that keeps only its headers, so that the
// benchmark measures admission and not a recorder.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}

// BenchmarkAdmit measures one admission of the trading door's shape (the
// per-address budget, an API token, the plan, the trading budget with its
// RateLimit headers) and of the Management API's (plus a gate, the
// in-flight limit and two budgets), in memory: "fake" with a token
// verdict from a map, "authcache" with the relay's authenticator whose
// verdict is cached (the token's hash and an LRU look-up). The target is
// 2 µs or less.
func BenchmarkAdmit(b *testing.B) {
	big := budget.Policy{Name: "big", Rate: 1 << 30, Period: time.Minute, Burst: 1 << 30}
	newLimiter := func(name string) *budget.Limiter {
		p := big
		p.Name = name
		l, err := budget.New(budget.Options{Policy: p})
		require.NoError(b, err)
		return l
	}
	doors := map[string]func() *admit.Door{
		"trading": func() *admit.Door {
			return &admit.Door{Name: "trading", Kind: auth.KindAPI, Plan: auth.PlanPro, PlanCode: errcode.PlanRequired,
				IP: newLimiter("ip"), Budgets: []*budget.Limiter{newLimiter("trading")}, RateLimitHeaders: true}
		},
		"manage": func() *admit.Door {
			return &admit.Door{Name: "manage", Kind: auth.KindAPI, Plan: auth.PlanPro, PlanCode: errcode.EliteRequired,
				IP: newLimiter("ip"), Gate: func(*http.Request, auth.Principal) *httpapi.Error { return nil }, InFlight: 2,
				Budgets: []*budget.Limiter{newLimiter("token"), newLimiter("read")}, RateLimitHeaders: true}
		},
	}
	type authn struct {
		name string
		make func(b *testing.B) (admit.Authenticator, string)
	}
	auths := []authn{
		{name: "fake", make: func(*testing.B) (admit.Authenticator, string) { return newFakeAuth(), "pro" }},
		{name: "authcache", make: func(b *testing.B) (admit.Authenticator, string) {
			st, err := store.Open(context.Background(), store.Options{Dir: b.TempDir()})
			require.NoError(b, err)
			b.Cleanup(func() { st.Close() })
			creds, err := auth.CreateUser(context.Background(), st, "bench", auth.PlanPro, time.Now())
			require.NoError(b, err)
			a, err := auth.New(auth.Options{Store: st, CacheTTL: time.Hour})
			require.NoError(b, err)
			return a, creds.APIToken
		}},
	}
	for _, au := range auths {
		for _, door := range []string{"trading", "manage"} {
			b.Run(au.name+"/"+door, func(b *testing.B) {
				authenticator, token := au.make(b)
				a, err := admit.New(admit.Options{Auth: authenticator})
				require.NoError(b, err)
				d := doors[door]()
				r := httptest.NewRequest(http.MethodGet, "/v1/api/accounts", nil)
				r.RemoteAddr = "192.0.2.7:5555"
				r.Header.Set("Authorization", "Bearer "+token)
				w := &discard{h: http.Header{}}
				b.ReportAllocs()
				for b.Loop() {
					ad, ok := a.Admit(w, r, d)
					if !ok {
						b.Fatal("refused")
					}
					ad.Done()
				}
			})
		}
	}
}

// BenchmarkRedisAdmission measures one admission against Redis: the
// in-flight lease and the trading budget in one script call, on Redis
// TIME, as a relay node on several nodes runs it (Admission.Done, one
// more call, is timed apart). It reports the median and the 99th
// percentile in µs; it needs TB_TEST_REDIS.
func BenchmarkRedisAdmission(b *testing.B) {
	url := budgettest.RedisURL(b)
	r, err := budget.NewRedis(budget.RedisOptions{URL: url, Prefix: keyPrefix(b, url)})
	require.NoError(b, err)
	defer r.Close()
	a, err := admit.New(admit.Options{Auth: newFakeAuth(), Leases: r})
	require.NoError(b, err)
	trading, err := budget.New(budget.Options{Policy: budget.Policy{Name: "trading", Rate: 1 << 30, Period: time.Minute, Burst: 1 << 30}, Backend: r})
	require.NoError(b, err)
	d := &admit.Door{Name: "trading", Kind: auth.KindAPI, InFlight: 2, Budgets: []*budget.Limiter{trading}, RateLimitHeaders: true}
	req := request("pro")
	w := &discard{h: http.Header{}}
	admits := make([]time.Duration, 0, 1<<16)
	releases := make([]time.Duration, 0, 1<<16)
	for b.Loop() {
		t0 := time.Now()
		ad, ok := a.Admit(w, req, d)
		t1 := time.Now()
		if !ok {
			b.Fatal("refused")
		}
		ad.Done()
		admits = append(admits, t1.Sub(t0))
		releases = append(releases, time.Since(t1))
	}
	require.Zero(b, trading.Len(), "Redis answered every call")
	report := func(name string, ds []time.Duration) {
		slices.Sort(ds)
		b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds())/1e3, name+"-median-µs")
		b.ReportMetric(float64(ds[len(ds)*99/100].Nanoseconds())/1e3, name+"-p99-µs")
	}
	report("admit", admits)
	report("done", releases)
}
