package bridgetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
)

// Lagging is the Factory of the simulator seen the way a bridge over a
// connection sees its platform: reads of account state (Accounts, Account,
// Positions, Orders, Executions, Watermarks, Strategies) answer from a copy
// of the market's state, taken when the platform's own writes return (a
// bridge has received their effects by then) and when Settle runs. A move
// of the market (SetPrice, the clock) is seen only after Settle. Every
// other call goes to the simulator. Tests of tests run on it: a test that
// reads without settling after moving the market fails on it.
func Lagging(t testing.TB, opts sim.Options) Harness {
	t.Helper()
	h := Sim(t, opts)
	l := &lagging{Platform: h.Market}
	require.NoError(t, l.refresh())
	h.Platform = l
	h.Settle = func(t testing.TB) {
		t.Helper()
		l.mu.Lock()
		closed := l.closed
		l.mu.Unlock()
		if !closed {
			require.NoError(t, l.refresh())
		}
	}
	return h
}

// lagging is the simulator behind a copy of its account state.
type lagging struct {
	bridge.Platform // the simulator

	mu       sync.Mutex
	closed   bool
	accounts []protocol.Account
	state    map[string]*accountCopy
}

// accountCopy is what lagging last read of one account.
type accountCopy struct {
	positions  []protocol.Position
	orders     []protocol.Order
	executions []protocol.Execution
	watermarks protocol.Watermarks
	strategies []protocol.Strategy
}

// refresh copies the simulator's account state.
func (l *lagging) refresh() error {
	ctx := context.Background()
	accounts, err := l.Platform.Accounts(ctx)
	if err != nil {
		return err
	}
	state := make(map[string]*accountCopy, len(accounts))
	for _, a := range accounts {
		c := &accountCopy{}
		if c.positions, err = l.Platform.Positions(ctx, a.Name); err != nil {
			return err
		}
		if c.orders, err = l.Platform.Orders(ctx, a.Name); err != nil {
			return err
		}
		if c.executions, err = l.Platform.Executions(ctx, a.Name); err != nil {
			return err
		}
		if c.watermarks, err = l.Platform.Watermarks(ctx, a.Name); err != nil {
			return err
		}
		if c.strategies, err = l.Platform.Strategies(ctx, a.Name); err != nil {
			return err
		}
		state[a.Name] = c
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.accounts, l.state = accounts, state
	return nil
}

// wrote refreshes the copy after one of the platform's own writes.
func (l *lagging) wrote() {
	_ = l.refresh() // a closed simulator: reads fail anyway
}

// read answers a read of an account from the copy.
func read[T any](ctx context.Context, l *lagging, account string, get func(c *accountCopy) T) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return zero, fmt.Errorf("lagging: %w", bridge.ErrNotConnected)
	}
	c := l.state[account]
	if c == nil {
		return zero, fmt.Errorf("lagging: %w", bridge.ErrAccountNotFound)
	}
	return get(c), nil
}

func (l *lagging) Kind() string { return "lagging-sim" }

func (l *lagging) Accounts(ctx context.Context) ([]protocol.Account, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, fmt.Errorf("lagging: %w", bridge.ErrNotConnected)
	}
	return append([]protocol.Account(nil), l.accounts...), nil
}

func (l *lagging) Account(ctx context.Context, name string) (protocol.Account, error) {
	as, err := l.Accounts(ctx)
	if err != nil {
		return protocol.Account{}, err
	}
	for _, a := range as {
		if a.Name == name {
			return a, nil
		}
	}
	return protocol.Account{}, fmt.Errorf("lagging: %w", bridge.ErrAccountNotFound)
}

func (l *lagging) Positions(ctx context.Context, account string) ([]protocol.Position, error) {
	return read(ctx, l, account, func(c *accountCopy) []protocol.Position {
		return append([]protocol.Position{}, c.positions...)
	})
}

func (l *lagging) Orders(ctx context.Context, account string) ([]protocol.Order, error) {
	return read(ctx, l, account, func(c *accountCopy) []protocol.Order { return append([]protocol.Order{}, c.orders...) })
}

func (l *lagging) Executions(ctx context.Context, account string) ([]protocol.Execution, error) {
	return read(ctx, l, account, func(c *accountCopy) []protocol.Execution {
		return append([]protocol.Execution{}, c.executions...)
	})
}

func (l *lagging) Watermarks(ctx context.Context, account string) (protocol.Watermarks, error) {
	return read(ctx, l, account, func(c *accountCopy) protocol.Watermarks { return c.watermarks })
}

func (l *lagging) Strategies(ctx context.Context, account string) ([]protocol.Strategy, error) {
	return read(ctx, l, account, func(c *accountCopy) []protocol.Strategy {
		return append([]protocol.Strategy{}, c.strategies...)
	})
}

func (l *lagging) SubmitOrder(ctx context.Context, req bridge.OrderRequest) (protocol.Order, error) {
	defer l.wrote()
	return l.Platform.SubmitOrder(ctx, req)
}

func (l *lagging) CancelOrder(ctx context.Context, account, orderID string) (protocol.Order, error) {
	defer l.wrote()
	return l.Platform.CancelOrder(ctx, account, orderID)
}

func (l *lagging) ChangeOrder(ctx context.Context, req bridge.ChangeRequest) (protocol.Order, error) {
	defer l.wrote()
	return l.Platform.ChangeOrder(ctx, req)
}

func (l *lagging) Flatten(ctx context.Context, account, instrument string) error {
	defer l.wrote()
	return l.Platform.Flatten(ctx, account, instrument)
}

func (l *lagging) StartStrategy(ctx context.Context, req bridge.StrategyRequest) (protocol.Strategy, error) {
	defer l.wrote()
	return l.Platform.StartStrategy(ctx, req)
}

func (l *lagging) SetStrategyState(ctx context.Context, account, id string, action bridge.StrategyAction) (protocol.Strategy, error) {
	defer l.wrote()
	return l.Platform.SetStrategyState(ctx, account, id, action)
}

func (l *lagging) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	return l.Platform.Close()
}
