package sim

import (
	"context"
	"sort"
	"strings"
	"time"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// DefaultTickInterval is how often Run steps the simulator when
// Options.TickInterval is not set.
const DefaultTickInterval = 250 * time.Millisecond

// feedState is the simulator's market-data subscriptions and strategies,
// guarded by p.mu.
type feedState struct {
	tickInterval time.Duration
	subs         []*subscription // sorted by contract name
	strategies   []*strategy     // in start order
	strategySeq  int64
}

// newFeedState returns the state of a new simulator.
func newFeedState(opts Options) feedState {
	f := feedState{tickInterval: opts.TickInterval}
	if f.tickInterval <= 0 {
		f.tickInterval = DefaultTickInterval
	}
	return f
}

// subscription is one subscribed contract and the quote last published for
// it.
type subscription struct {
	m         *market
	published bool
	last      protocol.Quote
}

// afterAdvance runs at the end of begin, with p.mu held, once every market
// has moved to now and resting orders have been matched: it lets strategies
// act on closed bars, then publishes the quotes of subscribed instruments.
func (p *Platform) afterAdvance(now time.Time) {
	p.runStrategiesLocked(now)
	p.publishQuotesLocked()
}

// publishQuotesLocked publishes one EventQuote per subscribed contract
// whose quote changed since its last publication, with p.mu held.
func (p *Platform) publishQuotesLocked() {
	for _, s := range p.feed.subs {
		q := s.m.quote()
		if s.published && q == s.last {
			continue
		}
		s.published, s.last = true, q
		p.emit(bridge.Event{Kind: bridge.EventQuote, Quote: &q})
	}
}

// Subscribe adds instruments to the market-data subscription. Each is
// resolved now, so a root subscribes its current front month for good.
// When any instrument is unknown, nothing changes. A contract subscribed
// for the first time gets its current quote published at once; after that
// its quote is published whenever it changed, at most once per call into
// the simulator (Step, or any other method).
func (p *Platform) Subscribe(ctx context.Context, instruments []string) error {
	return lockedErr(ctx, p, func(now time.Time) error {
		cs := make([]contract, 0, len(instruments))
		for _, in := range instruments {
			c, err := resolve(in, now)
			if err != nil {
				return err
			}
			cs = append(cs, c)
		}
		for _, c := range cs {
			if p.subscriptionIndex(c.Name) >= 0 {
				continue
			}
			p.feed.subs = append(p.feed.subs, &subscription{m: p.market(c, now)})
		}
		sort.Slice(p.feed.subs, func(i, j int) bool { return p.feed.subs[i].m.c.Name < p.feed.subs[j].m.c.Name })
		p.publishQuotesLocked()
		return nil
	})
}

// Unsubscribe removes instruments from the market-data subscription. A
// root resolves to its current front month. A contract's full name is
// accepted even once it expired. When any instrument is unknown, nothing
// changes; one that is not subscribed is not an error.
func (p *Platform) Unsubscribe(ctx context.Context, instruments []string) error {
	return lockedErr(ctx, p, func(now time.Time) error {
		names := make([]string, 0, len(instruments))
		for _, in := range instruments {
			c, err := resolve(in, now)
			if err != nil {
				name := strings.ToUpper(strings.TrimSpace(in))
				if p.subscriptionIndex(name) < 0 {
					return err
				}
				names = append(names, name)
				continue
			}
			names = append(names, c.Name)
		}
		for _, name := range names {
			if i := p.subscriptionIndex(name); i >= 0 {
				p.feed.subs = append(p.feed.subs[:i], p.feed.subs[i+1:]...)
			}
		}
		return nil
	})
}

// subscriptionIndex returns the index of a contract's subscription, or -1,
// with p.mu held.
func (p *Platform) subscriptionIndex(name string) int {
	for i, s := range p.feed.subs {
		if s.m.c.Name == name {
			return i
		}
	}
	return -1
}

// Step brings the simulator to its clock: prices advance, resting orders
// that the market reaches fill, strategies act on the bars that closed, and
// the quotes of subscribed instruments that changed are published. Every
// other method does the same before its own work; Step does nothing else.
func (p *Platform) Step(ctx context.Context) error {
	return lockedErr(ctx, p, func(time.Time) error { return nil })
}

// Run calls Step every Options.TickInterval until ctx ends, and returns
// ctx's error then, or Step's error when the simulator closes. The agent
// runs it beside a simulator on the system clock, so that quotes stream
// and strategies trade without callers; tests drive Step themselves.
func (p *Platform) Run(ctx context.Context) error {
	p.mu.Lock()
	interval := p.feed.tickInterval
	p.mu.Unlock()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := p.Step(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
