package tradovate_test

import (
	"context"
	"errors"
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
