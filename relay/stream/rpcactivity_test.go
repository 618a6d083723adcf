package stream

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/admit"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/budget"
	"tradebridge/relay/events/eventstest"
)

// The socket's rpc writes are recorded as the HTTP routes' are, source
// stream: placed; trading_blocked with its rule; a keyed write whose
// outcome was unknown, its rerun (the same ref, so the log keeps one) and
// its replay. Reads and frames refused for bad input are not recorded.
func TestRPCWritesRecorded(t *testing.T) {
	t.Parallel()
	var pub eventstest.Collector
	e := newEnv(t, func(o *Options) { o.Events = &pub })
	ag := &tradingAgent{}
	e.up.mu.Lock()
	e.up.onCall = ag.call
	e.up.mu.Unlock()
	ag.failW = func(n int) error {
		switch n {
		case 2:
			return protocol.NewError(protocol.CodeTradingBlocked, "the account's monitor allows closing orders only (rule: closingOnly)")
		case 3:
			return agentcall.ErrConnectionLost
		}
		return nil
	}
	c := e.dial(tokA)
	c.send(rpcFrame("read", "ListPositions", map[string]any{"account": "Sim101"}))
	c.readReply()
	c.send(rpcFrame("bad", "PlaceOrder", map[string]any{"account": "Sim101"}))
	require.Equal(t, false, c.readReply()["success"])

	c.send(rpcFrame(1, "PlaceOrder", placeArgs()))
	require.Equal(t, true, c.readReply()["success"])
	placed := pub.WaitActivity(t, 1)[0]
	assert.Equal(t, protocol.ActivityOrderPlaced, placed.Activity.Kind)
	assert.Equal(t, userA, placed.UserID)
	assert.Equal(t, protocol.SourceStream, placed.Activity.Source.Kind)
	assert.Equal(t, "Sim101", placed.Activity.Account)
	assert.Equal(t, "Bought 1 ES at market on Sim101 — order o-1", placed.Activity.Summary)
	assert.Empty(t, placed.Ref)
	assert.Equal(t, "desktop", eventstest.Detail(t, placed.Activity)["family"])

	c.send(rpcFrame(2, "PlaceOrder", placeArgs()))
	require.Equal(t, "trading_blocked", c.readReply()["error"])
	blocked := pub.WaitActivity(t, 2)[1]
	assert.Equal(t, protocol.ActivityTradingBlocked, blocked.Activity.Kind)
	assert.Equal(t, "closingOnly", eventstest.Detail(t, blocked.Activity)["rule"])

	for i := range 3 {
		c.send(rpcFrame(3+i, "PlaceOrder", placeArgs("idempotencyKey", "k-9")))
		c.readReply()
	}
	evs := pub.WaitActivity(t, 5)
	// Each call records once it answered, on its own goroutine: the
	// rerun's entry and the replay's may come in either order.
	unknown, rerun, replay := evs[2], evs[3], evs[4]
	if rerun.Activity.Kind == protocol.ActivityOrderReplayed {
		rerun, replay = replay, rerun
	}
	assert.Equal(t, protocol.ActivityOrderRefused, unknown.Activity.Kind)
	assert.Equal(t, "outcome_unknown", eventstest.Detail(t, unknown.Activity)["error"])
	assert.Equal(t, protocol.ActivityOrderPlaced, rerun.Activity.Kind)
	require.NotEmpty(t, unknown.Ref)
	assert.Equal(t, unknown.Ref, rerun.Ref, "the rerun of the same claim records nothing more")
	assert.Equal(t, protocol.ActivityOrderReplayed, replay.Activity.Kind)
	assert.Empty(t, replay.Ref)
	assert.Equal(t, "k-9", eventstest.Detail(t, replay.Activity)["idempotencyKey"])
}

// toldRefusals records the refusals the Admitter is told of.
type toldRefusals struct {
	mu       sync.Mutex
	policies []string
	sources  []string
}

func (r *toldRefusals) Refused(_ string, source protocol.ActivitySource, policy string) {
	r.mu.Lock()
	r.policies = append(r.policies, policy)
	r.sources = append(r.sources, source.Kind)
	r.mu.Unlock()
}

// The socket's own budget refusals (rpc frames, subscriptions) are told
// to the Admitter's Refusals, source stream, as the upgrade's are.
func TestSocketBudgetRefusalsTold(t *testing.T) {
	t.Parallel()
	var told toldRefusals
	e := newEnv(t, func(o *Options) {
		var err error
		o.Budget, err = budget.New(budget.Options{Policy: budget.Policy{Name: "trading", Rate: 1, Period: time.Hour, Burst: 2}})
		require.NoError(t, err)
		o.SubscriptionBudget, err = budget.New(budget.Options{Policy: budget.Policy{Name: "subscriptions", Rate: 1, Period: time.Hour, Burst: 1}})
		require.NoError(t, err)
		o.Admit, err = admit.New(admit.Options{Auth: o.Auth, Refusals: &told})
		require.NoError(t, err)
	})
	c := e.dial(tokA) // the upgrade: 1
	c.send(rpcFrame("a", "ListAccounts", nil))
	require.Equal(t, true, c.readReply()["success"])
	c.send(rpcFrame("b", "ListAccounts", nil))
	require.Equal(t, "rate_limited", c.readReply()["error"])
	c.send(map[string]any{"action": "subscribe", "instruments": []string{"ES"}})
	require.Equal(t, "subscribed", c.read()["type"])
	c.send(map[string]any{"action": "subscribe", "instruments": []string{"NQ"}})
	require.Equal(t, "rate_limited", c.read()["error"])
	status, _ := httpGet(t, e.http.URL+Path, withAuth(upgradeHeaders, tokA))
	require.Equal(t, 429, status)
	told.mu.Lock()
	defer told.mu.Unlock()
	assert.Equal(t, []string{"trading", "subscriptions", "trading"}, told.policies)
	assert.Equal(t, []string{"stream", "stream", "stream"}, told.sources)
}
