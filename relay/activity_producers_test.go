package relay_test

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/events"
)

// spineEntries collects the activity entries published to a relay's
// spine.
type spineEntries struct {
	mu  sync.Mutex
	evs []events.Event
}

func (c *spineEntries) subscribe(t *testing.T, r *relay.Relay) {
	t.Helper()
	require.NoError(t, r.Events().Subscribe(events.Subscription{Name: "test-activity", Types: []events.Type{events.TypeActivity},
		Handle: func(e events.Event) {
			if !e.Built() {
				return
			}
			c.mu.Lock()
			c.evs = append(c.evs, e)
			c.mu.Unlock()
		}}))
}

// kind returns the entries of a kind.
func (c *spineEntries) kind(k string) []events.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []events.Event
	for _, e := range c.evs {
		if e.Activity.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// The relay's producers publish to its spine: a trading write over HTTP,
// a Management API change, and the budget refusals, aggregated and
// published at the latest when the relay stops.
func TestProducersPublishToTheSpine(t *testing.T) {
	t.Parallel()
	s := newSystemWith(t, func(o *relay.Options) {
		o.TradingBudget = budget.Policy{Name: "trading", Rate: 1, Period: time.Hour, Burst: 3}
	})
	var got spineEntries
	got.subscribe(t, s.Relay())
	s.StartAgent("alice")
	alice := s.Users["alice"]

	r := s.Do("POST", "/v1/api/accounts/Sim101/orders/place", alice.APIToken, marketBuy)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Eventually(t, func() bool { return len(got.kind(protocol.ActivityOrderPlaced)) == 1 }, testkit.Medium, testkit.Tick)
	placed := got.kind(protocol.ActivityOrderPlaced)[0]
	assert.Equal(t, alice.UserID, placed.UserID)
	assert.Equal(t, protocol.ActivitySource{Kind: protocol.SourceAPI, ID: auth.TokenID(auth.Hash(alice.APIToken))}, placed.Activity.Source)
	assert.Equal(t, "Sim101", placed.Activity.Account)

	bob := s.Users["bob"]
	s.StartAgent("bob")
	r = s.Do(http.MethodPut, "/v1/api/manage/controls/kill-switch", bob.APIToken, `{"enabled":true}`)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	changed := got.kind(protocol.ActivityConfigChanged)
	require.Len(t, changed, 1)
	assert.Equal(t, bob.UserID, changed[0].UserID)
	assert.Equal(t, "Kill switch turned on", changed[0].Activity.Summary)

	for range 5 {
		r = s.Do("GET", "/v1/api/accounts", alice.APIToken, "")
	}
	require.Equal(t, http.StatusTooManyRequests, r.Status)
	s.Stop()
	refused := got.kind(protocol.ActivityBudgetRefused)
	require.Len(t, refused, 1, "one entry for the refusals of a user and budget")
	assert.Equal(t, alice.UserID, refused[0].UserID)
	assert.JSONEq(t, `"trading"`, string(jsonField(t, refused[0].Activity.Detail, "policy")))
	assert.JSONEq(t, `3`, string(jsonField(t, refused[0].Activity.Detail, "count")))
}

// jsonField returns the member name of the JSON object b.
func jsonField(t *testing.T, b []byte, name string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &m))
	return m[name]
}
