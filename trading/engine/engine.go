// Package engine holds what the agent's engines share: the copier
// (trading/engine/copier), the monitor (trading/engine/monitor) and the
// account-wide controls, kill switch and news lockout
// (trading/engine/controls). The engines run next to the platform, driven by
// its event stream (fills, order updates, positions, account values),
// never by polling it; they act on the management configuration the relay
// pushed (trading/mgmtconfig) and keep working with the last one they had
// while the relay link is down. What they must not forget across an agent
// restart they keep in the agent's state file (Store, implemented by
// agent/agentstore), and the state changes the relay must record they
// report (Reporter).
//
// The agent (package agent) builds the engines, runs each one's Run on a
// goroutine it owns, and makes them the operations' trading gate
// (ops.Gate): every order passes them.
package engine

import (
	"context"
	"time"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// Store is the engines' durable state: buckets of keyed values, each
// bucket owned by one engine. A Put or Delete that returned nil survives
// an agent crash. Load returns a bucket's values (empty, not nil, when
// there are none).
type Store interface {
	Put(bucket, key string, value []byte) error
	Delete(bucket, key string) error
	Load(bucket string) (map[string][]byte, error)
}

// MemStore is a Store in memory, for tests and for an agent run without a
// data folder. The zero value is not usable: use NewMemStore.
type MemStore struct{ m *memStore }

// Reporter carries the engines' state changes and what they did to the
// relay, which records them (a stopped monitor reads stopped even while
// the agent is offline; the activity log holds the trip). Its methods
// never block: while the relay link is down it keeps the latest state of
// each monitor and copier and the activity reports, and sends them on
// reconnect.
type Reporter interface {
	ReportMonitor(protocol.MonitorState)
	ReportCopier(protocol.CopierState)
	// ReportActivity reports one thing an engine did or decided (see
	// NewActivity): its ID is the report's id, unique across agent
	// restarts, by which the relay records a report sent twice once.
	ReportActivity(protocol.ActivityEntry)
}

// Trader is what the engines need from the operations (trading/ops.Ops
// implements it). Every order goes through the trading gate: the context
// says who places it (ops.WithSource).
type Trader interface {
	// Submit places one order through the gate.
	Submit(ctx context.Context, req bridge.OrderRequest) (protocol.Order, error)
	// Flatten cancels orders and closes positions (never refused by the
	// gate).
	Flatten(ctx context.Context, a protocol.FlattenArgs) (protocol.FlattenResult, error)
	// CancelOrders cancels working orders (never refused by the gate).
	CancelOrders(ctx context.Context, a protocol.CancelOrdersArgs) (protocol.CancelResult, error)
}

// Clock is the engines' time. Engines never read the system clock
// directly, so tests drive them with the simulator's manual clock.
type Clock func() time.Time
