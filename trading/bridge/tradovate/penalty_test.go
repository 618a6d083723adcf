package tradovate_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate"
	"tradebridge/trading/bridge/tradovate/tradovatetest"
)

// The tests of penalty tickets on order requests and lookups, against
// the fake answering them as the broker documents: HTTP 200 with
// {"p-ticket":…,"p-time":1}, the request not handled; the resend with the
// ticket is handled once p-time passed (real time: one second).

// working places a resting buy limit order and returns its id.
func working(t *testing.T, pr *tradovatetest.Pair) string {
	t.Helper()
	o, err := pr.Platform.SubmitOrder(t.Context(), limit(protocol.ActionBuy, 5990))
	require.NoError(t, err)
	require.Equal(t, protocol.OrderStateWorking, o.OrderState)
	return o.OrderID
}

func TestCancelPenaltyTicketIsResent(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	id := working(t, pr)
	pr.Fake.PenalizeNext("/order/cancelorder", 1, time.Second)
	o, err := pr.Platform.CancelOrder(t.Context(), acct, id)
	require.NoError(t, err)
	assert.Equal(t, protocol.OrderStateCancelled, o.OrderState, "cancelled, not the still-working order")
	assert.Equal(t, 1, pr.Fake.Tickets("/order/cancelorder"))
	assert.Equal(t, 1, pr.Fake.TicketedHandled("/order/cancelorder"), "resent with its ticket after p-time")
	assert.Equal(t, 2, pr.Fake.Requests("/order/cancelorder"))
}

func TestModifyPenaltyTicketIsResent(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	id := working(t, pr)
	pr.Fake.PenalizeNext("/order/modifyorder", 1, time.Second)
	o, err := pr.Platform.ChangeOrder(t.Context(), bridge.ChangeRequest{Account: acct, OrderID: id, LimitPrice: 5985})
	require.NoError(t, err)
	assert.Equal(t, 5985.0, o.LimitPrice, "the order moved")
	assert.Equal(t, 1, pr.Fake.TicketedHandled("/order/modifyorder"))
	assert.Equal(t, 2, pr.Fake.Requests("/order/modifyorder"))
}

func TestPlacePenaltyTicketPlacesOnce(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	pr.Fake.PenalizeNext("/order/placeorder", 1, time.Second)
	o, err := pr.Platform.SubmitOrder(t.Context(), limit(protocol.ActionBuy, 5990))
	require.NoError(t, err, "a ticket is no refusal")
	assert.Equal(t, protocol.OrderStateWorking, o.OrderState)
	assert.Equal(t, 1, pr.Fake.OrdersPlaced(), "placed once")
	assert.Equal(t, 2, pr.Fake.Requests("/order/placeorder"))
	assert.Equal(t, 1, pr.Fake.TicketedHandled("/order/placeorder"))
}

func TestFlattenCancelPenaltyTicketIsResent(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	working(t, pr)
	pr.Fake.PenalizeNext("/order/cancelorder", 1, time.Second)
	require.NoError(t, pr.Platform.Flatten(t.Context(), acct, es))
	os, err := pr.Platform.Orders(t.Context(), acct)
	require.NoError(t, err)
	require.Len(t, os, 1)
	assert.Equal(t, protocol.OrderStateCancelled, os[0].OrderState)
	assert.Equal(t, 1, pr.Fake.TicketedHandled("/order/cancelorder"))
}

func TestContractLookupPenaltyTicketIsNoUnknownContract(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	before := pr.Fake.Requests("contract/find")
	pr.Fake.PenalizeNext("contract/find", 1, time.Second)
	// Flatten without a position nor orders looks the contract up.
	require.NoError(t, pr.Platform.Flatten(t.Context(), acct, es), "found after the resend, not cached as unknown")
	assert.Equal(t, before+2, pr.Fake.Requests("contract/find"))
	assert.Equal(t, 1, pr.Fake.TicketedHandled("contract/find"))
}

func TestPenaltyTicketLongerThanTheContext(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	id := working(t, pr)
	pr.Fake.PenalizeNext("/order/cancelorder", 1, time.Hour)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := pr.Platform.CancelOrder(ctx, acct, id)
	var ue *bridge.UnavailableError
	require.ErrorAs(t, err, &ue, "an error, never success")
	assert.Equal(t, tradovate.CodeRateLimited, ue.Code)
	assert.False(t, errors.Is(err, bridge.ErrOutcomeUnknown), "a ticketed request was not handled")
	assert.NoError(t, ctx.Err(), "it did not wait for a ticket it could not outlast")
	assert.Equal(t, 1, pr.Fake.Requests("/order/cancelorder"), "not resent")
	os, err := pr.Platform.Orders(t.Context(), acct)
	require.NoError(t, err)
	require.Len(t, os, 1)
	assert.Equal(t, protocol.OrderStateWorking, os[0].OrderState)
}

func TestPlacePenaltyTicketsThatDoNotEnd(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	pr.Fake.PenalizeNext("/order/placeorder", 1, time.Hour)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := pr.Platform.SubmitOrder(ctx, limit(protocol.ActionBuy, 5990))
	var ue *bridge.UnavailableError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, tradovate.CodeRateLimited, ue.Code)
	assert.Zero(t, pr.Fake.OrdersPlaced())
	os, err := pr.Platform.Orders(t.Context(), acct)
	require.NoError(t, err)
	assert.Empty(t, os)
}

// A penalty ticket is the address's: while one session waits out a
// ticket of an endpoint, another session's requests of that endpoint
// wait too, and one that cannot wait that long fails at once. A request
// without a body is resent with the ticket as a query parameter.
func TestPenaltyTicketHoldsTheEndpointForTheAddress(t *testing.T) {
	t.Parallel()
	b, c := newBroker(t), newClock()
	var ticketed atomic.Bool
	b.handle("/account/list", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("p-ticket") == "" && ticketed.CompareAndSwap(false, true) {
			writeJSON(w, map[string]any{"p-ticket": "tk-1", "p-time": 15})
			return
		}
		_, _ = w.Write(recordedRaw(t, "account_list.json"))
	})
	budget := tradovate.NewAddressBudget(tradovate.BudgetOptions{Now: c.Now, After: c.After})
	saved := func(tok string) func(*tradovate.SessionOptions) {
		return func(o *tradovate.SessionOptions) {
			o.Token = tradovate.Token{AccessToken: tok, Expires: c.Now().Add(3 * time.Hour), UserID: 2441}
			o.Budget = budget
		}
	}
	s1, s2 := session(t, b, c, saved("tok-one")), session(t, b, c, saved("tok-two"))

	first := make(chan error, 1)
	go func() { first <- s1.Do(context.Background(), http.MethodGet, "/account/list", "", nil, nil) }()
	c.AwaitWaiters(t, 1) // the first waits out its ticket
	require.Len(t, b.requestsTo("/account/list"), 1)

	short, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	err := s2.Do(short, http.MethodGet, "/account/list", "", nil, nil)
	requireUnavailable(t, err, tradovate.CodeRateLimited)
	assert.Len(t, b.requestsTo("/account/list"), 1, "nothing sent while the address is held")

	second := make(chan error, 1)
	go func() { second <- s2.Do(context.Background(), http.MethodGet, "/account/list", "", nil, nil) }()
	c.AwaitWaiters(t, 2) // the other session's request waits for the ticket's end
	assert.Len(t, b.requestsTo("/account/list"), 1)
	c.Advance(15 * time.Second)
	require.NoError(t, <-first)
	require.NoError(t, <-second)
	reqs := b.requestsTo("/account/list")
	require.Len(t, reqs, 3)
	var resent []string
	for _, r := range reqs[1:] {
		resent = append(resent, r.Query)
	}
	assert.Contains(t, resent, "p-ticket=tk-1", "resent with the ticket")
}

// A penalty ticket answering user/syncrequest is no empty account: the
// platform does not take it for the state, and syncs again after p-time.
func TestSyncPenaltyTicketIsNoEmptyState(t *testing.T) {
	t.Parallel()
	pr := pair(t, tradovatetest.PairOptions{})
	id := working(t, pr)
	pr.Fake.PenalizeNext("user/syncrequest", 1, time.Second)
	pr.Fake.DropSockets()
	require.Eventually(t, func() bool { return pr.Fake.Requests("user/syncrequest") >= 3 }, tradovatetest.SettleTimeout,
		time.Millisecond, "synced again after the ticket")
	assert.Equal(t, 1, pr.Fake.Tickets("user/syncrequest"))
	pr.WaitConnected(t)
	os, err := pr.Platform.Orders(t.Context(), acct)
	require.NoError(t, err)
	require.Len(t, os, 1, "the working order is still there")
	assert.Equal(t, id, os[0].OrderID)
}
