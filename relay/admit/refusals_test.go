package admit_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/admit"
	"tradebridge/relay/auth"
	"tradebridge/relay/auth/authtest"
	"tradebridge/relay/budget"
	"tradebridge/relay/budget/budgettest"
)

// refusal is one refusal Options.Refusals was told of.
type refusal struct {
	user   string
	source protocol.ActivitySource
	policy string
}

// refusals records what it is told.
type refusals struct {
	mu  sync.Mutex
	got []refusal
}

func (r *refusals) Refused(userID string, source protocol.ActivitySource, policy string) {
	r.mu.Lock()
	r.got = append(r.got, refusal{userID, source, policy})
	r.mu.Unlock()
}

func (r *refusals) all() []refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]refusal(nil), r.got...)
}

// A user's budget refusal is told to Options.Refusals with the door's
// source and the token's id, by Admit, Charge and a door's own charge
// (Refused); the per-address budget's refusals and other kinds of
// token's are not.
func TestRefusalsTold(t *testing.T) {
	t.Parallel()
	var told refusals
	fa := authtest.New(map[string]auth.Principal{
		"pro":   {UserID: "usr_pro", Plan: auth.PlanPro, Kind: auth.KindAPI, TokenHash: "0123456789abcdef"},
		"agent": {UserID: "usr_pro", Plan: auth.PlanPro, Kind: auth.KindAgent, TokenHash: "fedcba9876543210"},
	})
	a, err := admit.New(admit.Options{Auth: fa, Refusals: &told})
	require.NoError(t, err)
	src := protocol.ActivitySource{Kind: protocol.SourceAPI, ID: "0123456789ab"}

	d := &admit.Door{Name: "trading", Kind: auth.KindAPI, Budgets: []*budget.Limiter{exhausted(t, "trading", "usr_pro")}}
	_, ok := a.Admit(httptest.NewRecorder(), request("pro"), d)
	require.False(t, ok)

	stream := &admit.Door{Name: "stream", Kind: auth.KindAPI, Source: protocol.SourceStream, Budgets: d.Budgets}
	_, ok = a.Admit(httptest.NewRecorder(), request("pro"), stream)
	require.False(t, ok)

	p := principals["pro"]
	p.TokenHash = "0123456789abcdef"
	require.False(t, a.Charge(httptest.NewRecorder(), p, admit.Charge{Budget: exhausted(t, "manage-write", "usr_pro")}))
	a.Refused(p, stream, "subscriptions")

	ip := &admit.Door{Name: "trading", Kind: auth.KindAPI, IP: exhausted(t, "ip", "192.0.2.7")}
	_, ok = a.Admit(httptest.NewRecorder(), request("pro"), ip)
	require.False(t, ok)
	agentDoor := &admit.Door{Name: "tunnel", Kind: auth.KindAgent, Budgets: []*budget.Limiter{exhausted(t, "tunnel", "usr_pro")}}
	w := httptest.NewRecorder()
	_, ok = a.Admit(w, request("agent"), agentDoor)
	require.False(t, ok)
	require.Equal(t, http.StatusTooManyRequests, w.Code)

	assert.Equal(t, []refusal{
		{"usr_pro", src, "trading"},
		{"usr_pro", protocol.ActivitySource{Kind: protocol.SourceStream, ID: "0123456789ab"}, "trading"},
		{"usr_pro", src, "manage-write"},
		{"usr_pro", protocol.ActivitySource{Kind: protocol.SourceStream, ID: "0123456789ab"}, "subscriptions"},
	}, told.all())

	// Without Refusals, nothing is told and nothing fails.
	plain, _ := newAdmitter(t)
	plain.Refused(p, nil, "trading")
}

// With the budgets in Redis, a refusal is told the same.
func TestSharedRefusalsTold(t *testing.T) {
	t.Parallel()
	url := budgettest.RedisURL(t)
	var told refusals
	r, err := budget.NewRedis(budget.RedisOptions{URL: url, Prefix: keyPrefix(t, url), Timeout: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	a, err := admit.New(admit.Options{Auth: newFakeAuth(), Leases: r, Refusals: &told})
	require.NoError(t, err)
	l, err := budget.New(budget.Options{Policy: budget.Policy{Name: "read", Rate: 1, Period: time.Hour, Burst: 1}, Backend: r})
	require.NoError(t, err)
	d := &admit.Door{Name: "manage", Kind: auth.KindAPI, InFlight: 2, Budgets: []*budget.Limiter{l}}
	ad, ok := a.Admit(httptest.NewRecorder(), request("pro"), d)
	require.True(t, ok)
	ad.Done()
	_, ok = a.Admit(httptest.NewRecorder(), request("pro"), d)
	require.False(t, ok)
	require.Len(t, told.all(), 1)
	assert.Equal(t, "read", told.all()[0].policy)
	assert.Equal(t, "usr_pro", told.all()[0].user)
}

// Spend charges a door's own call to a budget: allowed while the budget
// lasts, then 429 rate_limited naming it, told as the door's refusal.
func TestSpend(t *testing.T) {
	t.Parallel()
	var told refusals
	a, err := admit.New(admit.Options{Auth: authtest.New(nil), Refusals: &told})
	require.NoError(t, err)
	b, err := budget.New(budget.Options{Policy: budget.Policy{Name: "trading", Rate: 1, Period: time.Hour, Burst: 2}})
	require.NoError(t, err)
	p := auth.Principal{UserID: "usr_1", Kind: auth.KindAPI, TokenHash: "0123456789abcdef"}
	d := &admit.Door{Name: "mcp", Source: protocol.SourceMCP}
	require.Nil(t, a.Spend(p, d, b))
	require.Nil(t, a.Spend(p, d, b))
	e := a.Spend(p, d, b)
	require.NotNil(t, e)
	require.Equal(t, http.StatusTooManyRequests, e.Status)
	require.Equal(t, "rate_limited", e.Code)
	require.Equal(t, "trading", e.Policy)
	require.Positive(t, e.RetryAfter)
	require.Equal(t, []refusal{{"usr_1", protocol.ActivitySource{Kind: protocol.SourceMCP, ID: "0123456789ab"}, "trading"}}, told.all())
}
