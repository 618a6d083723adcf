package tradovate_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate/tradovatetest"
)

// A placement whose answer is lost and whose order's version does not
// carry our id as its text is still found as ours: the placement's
// command entity echoes our id as its clOrdId. Live, from the socket's
// events, and from a later sync answer alone.
func TestOutcomeUnknownBoundByClOrdID(t *testing.T) {
	t.Parallel()
	for _, viaSync := range []bool{false, true} {
		name := map[bool]string{false: "events", true: "resync"}[viaSync]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pr := pair(t, tradovatetest.PairOptions{Persist: &memStore{}})
			if viaSync {
				pr.Fake.MuteUserEvents(true)
			}
			pr.Fake.ReplaceNextText("")
			pr.Fake.BreakNextOrderReply()
			req := limit(protocol.ActionBuy, 5990)
			req.OrderID, req.Name = "lost-1", "Entry"
			_, err := pr.Platform.SubmitOrder(t.Context(), req)
			require.ErrorIs(t, err, bridge.ErrOutcomeUnknown)
			if viaSync {
				pr.Fake.MuteUserEvents(false)
				resync(t, pr)
			} else {
				pr.Settle(t)
			}

			os, err := pr.Platform.Orders(t.Context(), acct)
			require.NoError(t, err)
			require.Len(t, os, 1)
			assert.Equal(t, "lost-1", os[0].OrderID, "the order shows up under our id")
			assert.Equal(t, "Entry", os[0].Name)
			assert.Equal(t, protocol.OrderStateWorking, os[0].OrderState)
			c, err := pr.Platform.CancelOrder(t.Context(), acct, "lost-1")
			require.NoError(t, err)
			assert.Equal(t, protocol.OrderStateCancelled, c.OrderState)
		})
	}
}
