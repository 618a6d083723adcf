package bridge

import (
	"context"

	"tradebridge/protocol"
)

// BrokerFlattener is a Platform that can flatten from the broker's own
// records over plain requests, without the state it follows: while its
// event stream is down (its reads refused) or behind. Operations fall
// back to it when the platform refuses to read because it is not
// connected.
type BrokerFlattener interface {
	// FlattenFromBroker cancels the working orders and closes the
	// positions the broker lists for account (every account when empty)
	// in instrument (every instrument when empty). It reports the
	// positions it asked the broker to close. It is not an error when
	// there is nothing to do.
	FlattenFromBroker(ctx context.Context, account, instrument string) ([]protocol.Position, error)
}
