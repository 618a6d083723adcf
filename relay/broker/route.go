package broker

import (
	"context"
	"encoding/json"
)

// Router reaches the relay node that runs a user's broker instance, when
// the relay runs as several nodes; package relay/cluster implements it over
// NATS. A Manager without a Router runs every instance itself.
//
// A user's instance runs on the one node that holds the user's lease in
// the store (store.Store.AcquireBrokerLease); that node serves the user's
// calls (Serve) and any other node forwards them there (Forward).
type Router interface {
	// Serve makes this node answer the calls forwarded for userID with
	// h until stop is called. Calls run one per forwarded request, at
	// once; h's errors travel back to Forward's caller as they are: a
	// *protocol.Error, an *httpapi.Error, or agentcall.ErrConnectionLost,
	// agentcall.ErrTimeout, agentcall.ErrNotConnected.
	Serve(userID string, h func(ctx context.Context, fn, requestID string, args json.RawMessage) (json.RawMessage, error)) (stop func(), err error)
	// Forward runs fn on the node serving userID and returns what its
	// handler returned. When no node serves userID it returns
	// agentcall.ErrNotConnected at once: nothing ran. When the serving node
	// goes away during the call it returns agentcall.ErrConnectionLost: the
	// call may or may not have run.
	Forward(ctx context.Context, userID, fn, requestID string, args json.RawMessage) (json.RawMessage, error)
}
