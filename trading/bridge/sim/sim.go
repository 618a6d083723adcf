package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// Defaults of Options.
const (
	// DefaultSeed seeds the price walks when Options.Seed is 0.
	DefaultSeed int64 = 1
	// DefaultStartingCash is each account's starting cash, in USD.
	DefaultStartingCash = 100_000.0
	// DefaultCommissionPerContract is the commission of one contract on one
	// side of a trade, in USD, whatever the instrument.
	DefaultCommissionPerContract = 0.62
)

// defaultAccounts are the accounts of a simulator whose Options name none.
var defaultAccounts = []string{"Sim101", "Sim102"}

// Options configures a simulator. The zero value is a working default.
type Options struct {
	// Logger receives the simulator's logs; nil discards them.
	Logger *zap.Logger
	// Seed seeds the price walks; 0 means DefaultSeed, so runs are
	// reproducible unless a caller asks otherwise.
	Seed int64
	// Clock drives prices, roll dates and record times; nil means the
	// system clock.
	Clock Clock
	// Accounts names the accounts, in the order they are listed; nil or
	// empty means Sim101 and Sim102.
	Accounts []string
	// StartingCash is each account's starting cash in USD; 0 means
	// DefaultStartingCash.
	StartingCash float64
	// CommissionPerContract is charged per contract on every fill, in USD;
	// 0 means DefaultCommissionPerContract and a negative value means no
	// commission.
	CommissionPerContract float64
	// BookDepth is how many contracts each price level of the book offers
	// an order each time it is matched; 0, the default, means unlimited, so
	// every order fills entirely at the touch. With a depth, a market order
	// takes the touch and then one tick worse per level, a marketable limit
	// order takes the levels up to its limit and rests the rest, and a
	// resting limit order takes at most BookDepth contracts per market
	// update. Negative values are refused.
	BookDepth int
	// AtmTemplates are the ATM templates the simulator starts with; nil
	// means DefaultAtmTemplates(), an empty non-nil list none. New refuses
	// invalid templates (see SetAtmTemplates).
	AtmTemplates []protocol.AtmTemplate
	// TickInterval is how often Run steps the simulator; 0 or less means
	// DefaultTickInterval.
	TickInterval time.Duration
}

// Platform is the simulator. Its methods are safe for concurrent use.
type Platform struct {
	log          *zap.Logger
	clock        Clock
	seed         int64
	startingCash float64
	commission   float64
	bookDepth    int

	mu         sync.Mutex
	closed     bool
	accounts   []*account // in Options order
	byName     map[string]*account
	markets    map[string]*market // by contract name
	marketList []*market          // sorted by contract name
	orders     map[string]*order  // by order id, across accounts
	working    []*order           // non-terminal orders, in submission order
	orderSeq   int64
	execSeq    int64
	// gen counts each market's updates (walk steps, SetPrice): a resting
	// order takes BookDepth once per update.
	gen       map[*market]uint64
	templates []protocol.AtmTemplate
	atms      []*atmStrategy // ATM strategies not yet done, oldest first

	// Trading sessions (see session.go): the current session's and week's
	// openings, the next session opening, and the earliest session close at
	// which a working Day order expires (zero when none).
	sessionStart time.Time
	weekStart    time.Time
	nextReset    time.Time
	nextExpiry   time.Time

	events *bridge.Feed // readers of Events

	feed feedState // subscriptions and strategies (marketdata.go)
}

var _ bridge.Platform = (*Platform)(nil)

// New returns a simulator configured by opts.
func New(opts Options) (*Platform, error) {
	p := &Platform{
		log:          opts.Logger,
		clock:        opts.Clock,
		seed:         opts.Seed,
		startingCash: opts.StartingCash,
		commission:   opts.CommissionPerContract,
		bookDepth:    opts.BookDepth,
		byName:       make(map[string]*account),
		markets:      make(map[string]*market),
		orders:       make(map[string]*order),
		gen:          make(map[*market]uint64),
		events:       bridge.NewFeed(eventBuffer),
		feed:         newFeedState(opts),
	}
	if p.log == nil {
		p.log = zap.NewNop()
	}
	if p.clock == nil {
		p.clock = realClock{}
	}
	if p.seed == 0 {
		p.seed = DefaultSeed
	}
	switch {
	case math.IsNaN(p.startingCash) || math.IsInf(p.startingCash, 0) || p.startingCash < 0:
		return nil, errors.New("sim: starting cash must be a non-negative amount")
	case p.startingCash == 0:
		p.startingCash = DefaultStartingCash
	}
	switch {
	case math.IsNaN(p.commission) || math.IsInf(p.commission, 0):
		return nil, errors.New("sim: commission must be a finite amount")
	case p.commission == 0:
		p.commission = DefaultCommissionPerContract
	case p.commission < 0:
		p.commission = 0
	}
	if p.bookDepth < 0 {
		return nil, errors.New("sim: book depth must not be negative")
	}
	templates := opts.AtmTemplates
	if templates == nil {
		templates = DefaultAtmTemplates()
	}
	var err error
	if p.templates, err = validateTemplates(templates); err != nil {
		return nil, err
	}
	names := opts.Accounts
	if len(names) == 0 {
		names = defaultAccounts
	}
	for _, name := range names {
		if strings.TrimSpace(name) == "" {
			return nil, errors.New("sim: an account name is empty")
		}
		if p.byName[name] != nil {
			return nil, fmt.Errorf("sim: account %q is listed twice", name)
		}
		a := newAccount(name)
		p.accounts = append(p.accounts, a)
		p.byName[name] = a
	}
	p.startSessions(p.clock.Now())
	p.log.Info("simulator ready", zap.Int64("seed", p.seed), zap.Strings("accounts", names),
		zap.Float64("startingCash", p.startingCash), zap.Float64("commissionPerContract", p.commission),
		zap.Int("bookDepth", p.bookDepth), zap.Int("atmTemplates", len(p.templates)))
	return p, nil
}

// Kind returns "sim".
func (p *Platform) Kind() string { return "sim" }

// Close closes the simulator; every later call fails with
// bridge.ErrNotConnected. The simulator runs no goroutines, so there is
// nothing to wait for. Close is idempotent.
func (p *Platform) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		p.events.Close()
		p.log.Info("simulator closed")
	}
	return nil
}

// Connections returns the simulator's one connection and its accounts.
func (p *Platform) Connections(ctx context.Context) ([]protocol.Connection, error) {
	return locked(ctx, p, func(_ time.Time) ([]protocol.Connection, error) {
		names := make([]string, len(p.accounts))
		for i, a := range p.accounts {
			names[i] = a.name
		}
		return []protocol.Connection{{Name: connectionName, Status: connectionStatus, Accounts: names}}, nil
	})
}

// Accounts returns every account with its current values.
func (p *Platform) Accounts(ctx context.Context) ([]protocol.Account, error) {
	return locked(ctx, p, func(_ time.Time) ([]protocol.Account, error) {
		out := make([]protocol.Account, len(p.accounts))
		for i, a := range p.accounts {
			out[i] = p.accountRecord(a)
		}
		return out, nil
	})
}

// Account returns one account with its current values.
func (p *Platform) Account(ctx context.Context, name string) (protocol.Account, error) {
	return locked(ctx, p, func(_ time.Time) (protocol.Account, error) {
		a, err := p.account(name)
		if err != nil {
			return protocol.Account{}, err
		}
		return p.accountRecord(a), nil
	})
}

// Positions returns the account's open positions, by instrument name.
func (p *Platform) Positions(ctx context.Context, account string) ([]protocol.Position, error) {
	return locked(ctx, p, func(_ time.Time) ([]protocol.Position, error) {
		a, err := p.account(account)
		if err != nil {
			return nil, err
		}
		out := []protocol.Position{}
		for _, pos := range a.sortedPositions() {
			out = append(out, pos.record(a.name, p.markets[pos.c.Name]))
		}
		return out, nil
	})
}

// Orders returns the account's orders of the current trading session and
// every order still working, in submission order.
func (p *Platform) Orders(ctx context.Context, account string) ([]protocol.Order, error) {
	return locked(ctx, p, func(_ time.Time) ([]protocol.Order, error) {
		a, err := p.account(account)
		if err != nil {
			return nil, err
		}
		out := make([]protocol.Order, 0, len(a.orders))
		for _, o := range a.orders {
			if p.orderInSession(o) {
				out = append(out, o.rec)
			}
		}
		return out, nil
	})
}

// Executions returns the account's fills of the current trading session, in
// the order they happened.
func (p *Platform) Executions(ctx context.Context, account string) ([]protocol.Execution, error) {
	return locked(ctx, p, func(_ time.Time) ([]protocol.Execution, error) {
		a, err := p.account(account)
		if err != nil {
			return nil, err
		}
		return append([]protocol.Execution{}, a.executions...), nil
	})
}

// Quote returns the current market of an instrument.
func (p *Platform) Quote(ctx context.Context, instrument string) (protocol.Quote, error) {
	return locked(ctx, p, func(now time.Time) (protocol.Quote, error) {
		c, err := resolve(instrument, now)
		if err != nil {
			return protocol.Quote{}, err
		}
		return p.market(c, now).quote(), nil
	})
}

// SetPrice puts an instrument's market at last, snapped to the nearest tick:
// bid and last there, ask one tick above. Resting orders the new price
// reaches fill. It is meant for tests.
func (p *Platform) SetPrice(instrument string, last float64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	now, err := p.advanceLocked()
	if err != nil {
		return err
	}
	defer p.settleLocked(now)
	c, err := resolve(instrument, now)
	if err != nil {
		return err
	}
	x := last / c.Root.TickSize
	if math.IsNaN(x) || x < 0.5 || x > maxTicks {
		return errors.New("sim: a price must be at least one tick and finite")
	}
	m := p.market(c, now)
	m.set(int64(math.Round(x)), now)
	p.gen[m]++
	return nil
}

// begin starts a call with the lock held: it refuses calls after Close and
// brings the sessions, every market, resting orders, ATM strategies and
// watermarks up to the clock.
func (p *Platform) begin() (time.Time, error) {
	now, err := p.advanceLocked()
	if err != nil {
		return now, err
	}
	p.settleLocked(now)
	return now, nil
}

// advanceLocked is the first half of begin: it processes the session
// boundaries the clock has passed (Day expiry, session reset), then moves
// every market to the clock.
func (p *Platform) advanceLocked() (time.Time, error) {
	if p.closed {
		return time.Time{}, fmt.Errorf("sim: closed: %w", bridge.ErrNotConnected)
	}
	now := p.clock.Now()
	p.sessionsLocked(now)
	for _, m := range p.marketList {
		bid, walked := m.bid, m.walked
		m.advance(now)
		if m.bid != bid || !m.walked.Equal(walked) {
			p.gen[m]++
		}
	}
	return now, nil
}

// settleLocked is the second half of begin: resting orders are matched,
// ATM strategies act on the prices, the watermarks follow them, and
// afterAdvance runs.
func (p *Platform) settleLocked(now time.Time) {
	p.matchAll(now)
	p.atmUpdateLocked(now)
	for _, a := range p.accounts {
		p.observeLocked(a)
	}
	p.afterAdvance(now)
}

func (p *Platform) account(name string) (*account, error) {
	a := p.byName[name]
	if a == nil {
		return nil, fmt.Errorf("sim: account: %w", bridge.ErrAccountNotFound)
	}
	return a, nil
}

// market returns the contract's market, opening it at now on first use.
func (p *Platform) market(c contract, now time.Time) *market {
	if m := p.markets[c.Name]; m != nil {
		return m
	}
	m := newMarket(c, p.seed, now)
	p.markets[c.Name] = m
	i := sort.Search(len(p.marketList), func(i int) bool { return p.marketList[i].c.Name >= c.Name })
	p.marketList = append(p.marketList, nil)
	copy(p.marketList[i+1:], p.marketList[i:])
	p.marketList[i] = m
	return m
}

// locked runs fn as one call of the platform's API: it refuses a ctx that
// is already done, holds p.mu while fn runs, and first brings every market
// and resting order up to the clock (begin), passing fn the time reached.
func locked[T any](ctx context.Context, p *Platform, fn func(now time.Time) (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now, err := p.begin()
	if err != nil {
		return zero, err
	}
	return fn(now)
}

// lockedErr is locked for calls that return only an error.
func lockedErr(ctx context.Context, p *Platform, fn func(now time.Time) error) error {
	_, err := locked(ctx, p, func(now time.Time) (struct{}, error) { return struct{}{}, fn(now) })
	return err
}

var _ bridge.StatusReporter = (*Platform)(nil)

// Diagnose implements bridge.StatusReporter: the simulator runs inside the
// agent and is always reachable.
func (p *Platform) Diagnose() (bool, string) { return true, "embedded simulator" }
