package stream

import (
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/auth"
	"tradebridge/relay/errcode"
)

// A read-scoped token opens a socket and its rpc reads run; its rpc
// writes are answered insufficient_scope, call nothing and charge
// nothing; an unknown function is still unknown_function. A trade token's
// write runs.
func TestReadScopedSocket(t *testing.T) {
	t.Parallel()
	e, ag := newTradingEnv(t)
	const tokRead = "tb_api_rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr"
	const tokTrade = "tb_api_tttttttttttttttttttttttttttttttttttttttttttt"
	e.auth.Add(tokRead, auth.Principal{UserID: userA, Plan: auth.PlanPro, Kind: auth.KindAPI, Scope: auth.ScopeRead})
	e.auth.Add(tokTrade, auth.Principal{UserID: userA, Plan: auth.PlanPro, Kind: auth.KindAPI, Scope: auth.ScopeTrade})
	c := e.dial(tokRead)

	before := e.budget.Peek(userA).Remaining
	for i, fn := range []string{protocol.FnPlaceOrder, protocol.FnFlattenEverything, protocol.FnCancelAllOrders, protocol.FnFlatten} {
		args := map[string]any{}
		if fn == protocol.FnPlaceOrder {
			args = placeArgs()
		}
		c.send(rpcFrame(i, fn, args))
		f := c.readReply()
		require.Equal(t, false, f["success"], fn)
		require.Equal(t, errcode.InsufficientScope, f["error"], fn)
		require.Contains(t, f["detail"], "needs the trade scope", fn)
	}
	require.Equal(t, before, e.budget.Peek(userA).Remaining, "refused writes are charged nothing")
	require.Zero(t, placedBy(ag), "refused writes call nothing")
	require.Empty(t, e.up.callsOf(protocol.FnPlaceOrder))

	c.send(rpcFrame("u", "NoSuchFunction", map[string]any{}))
	require.Equal(t, protocol.CodeUnknownFunction, c.readReply()["error"])
	c.send(rpcFrame("l", protocol.FnListPositions, map[string]any{"account": "Sim101"}))
	require.Equal(t, true, c.readReply()["success"], "reads run")

	w := e.dial(tokTrade)
	w.send(rpcFrame("p", protocol.FnPlaceOrder, placeArgs()))
	require.Equal(t, true, w.readReply()["success"])
	require.Equal(t, 1, placedBy(ag))
}

// placedBy is how many writes ag ran.
func placedBy(ag *tradingAgent) int {
	ag.mu.Lock()
	defer ag.mu.Unlock()
	return ag.placed
}
