package tradovate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"tradebridge/futures"
	"tradebridge/internal/backoff"
	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// contract is one contract as both sides name it.
type contract struct {
	ID int64
	// Symbol is the broker's name: "ESZ6".
	Symbol string
	// Name is ours: "ES 12-26".
	Name string
	// Root is the futures root, nil for a root package futures does not
	// know.
	Root *futures.Root
}

// contracts caches the broker's contracts by id and by symbol. Lookups of
// unknown ones ask the broker: by symbol at once, by id through the
// platform's resolver (want, runContracts), never on a socket's read
// goroutine.
type contracts struct {
	sess *Session
	now  func() time.Time
	kick chan struct{} // wakes the resolver

	mu       sync.Mutex
	byID     map[int64]contract
	bySymbol map[string]contract
	missing  map[string]time.Time // symbols the broker does not know, and when it said so
	pending  map[int64]bool       // ids the resolver is to look up
}

// missingFor is how long a symbol the broker does not know is not asked
// for again.
const missingFor = time.Minute

func newContracts(sess *Session, now func() time.Time) *contracts {
	return &contracts{sess: sess, now: now, kick: make(chan struct{}, 1), byID: make(map[int64]contract),
		bySymbol: make(map[string]contract), missing: make(map[string]time.Time), pending: make(map[int64]bool)}
}

// add caches a contract entity of the broker.
func (cs *contracts) add(c tradovatewire.Contract) contract {
	ref := contract{ID: c.ID, Symbol: c.Name}
	ref.Name, ref.Root = ourName(c.Name, cs.now())
	cs.mu.Lock()
	cs.byID[c.ID] = ref
	cs.bySymbol[c.Name] = ref
	cs.mu.Unlock()
	return ref
}

// cached returns a contract known by id.
func (cs *contracts) cached(id int64) (contract, bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c, ok := cs.byID[id]
	return c, ok
}

// want queues the ids that are not cached for the resolver; it never
// blocks, so the sockets' read goroutines call it.
func (cs *contracts) want(ids ...int64) {
	queued := false
	cs.mu.Lock()
	for _, id := range ids {
		if _, ok := cs.byID[id]; ok || id == 0 || cs.pending[id] {
			continue
		}
		cs.pending[id], queued = true, true
	}
	cs.mu.Unlock()
	if queued {
		select {
		case cs.kick <- struct{}{}:
		default:
		}
	}
}

// takePending returns the queued ids and empties the queue.
func (cs *contracts) takePending() []int64 {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	ids := make([]int64, 0, len(cs.pending))
	for id := range cs.pending {
		ids = append(ids, id)
	}
	clear(cs.pending)
	slices.Sort(ids)
	return ids
}

// lookup asks the broker for a contract by id and caches it;
// errNoSuchContract when the broker has none.
func (cs *contracts) lookup(ctx context.Context, id int64) error {
	var c tradovatewire.Contract
	err := cs.sess.Do(ctx, http.MethodGet, "/contract/item", "id="+strconv.FormatInt(id, 10), nil, &c)
	var he *HTTPError
	switch {
	case errors.As(err, &he) && he.Status == http.StatusNotFound, err == nil && (c.ID != id || c.Name == ""):
		return errNoSuchContract
	case err != nil:
		return err
	}
	cs.add(c)
	return nil
}

// ensure looks up the ids that are not cached, one request each, and
// waits for the answers. Only callers off the sockets' read goroutines
// use it (a flatten naming the contracts it closed); a failed lookup
// leaves the contract unnamed.
func (cs *contracts) ensure(ctx context.Context, ids []int64) {
	for _, id := range ids {
		if _, ok := cs.cached(id); ok || id == 0 {
			continue
		}
		if ctx.Err() != nil {
			return
		}
		_ = cs.lookup(ctx, id)
	}
}

// runContracts is the platform's contract resolver: it looks up the
// contracts events and sync answers name that are not cached, then
// publishes what waited for them (an order, fill or position is
// published once its contract is known). A failed lookup is tried again
// after a backoff; a contract the broker does not know is dropped until
// something names it again. It runs until ctx ends.
func (p *Platform) runContracts(ctx context.Context) {
	retry := backoff.Backoff{Min: p.opts.MinBackoff, Max: p.opts.MaxBackoff}
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.contracts.kick:
		}
		for ids := p.contracts.takePending(); len(ids) > 0; ids = p.contracts.takePending() {
			var got, failed []int64
			for _, id := range ids {
				if _, ok := p.contracts.cached(id); ok {
					got = append(got, id)
					continue
				}
				err := p.contracts.lookup(ctx, id)
				switch {
				case err == nil:
					got = append(got, id)
				case ctx.Err() != nil:
					return
				case errors.Is(err, errNoSuchContract):
					p.log.Warn("tradovate: the broker knows no contract of an id its events name", zap.Int64("contractId", id))
				default:
					failed = append(failed, id)
				}
			}
			if len(got) > 0 {
				p.contractsArrived(got)
			}
			if len(failed) == 0 {
				retry.Reset()
				continue
			}
			p.contracts.want(failed...)
			if !retry.Wait(ctx) {
				return
			}
		}
	}
}

// contractsArrived publishes the orders, fills and positions (and their
// accounts) that waited for contracts now known.
func (p *Platform) contractsArrived(ids []int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.md.kickLocked() // a position's contract may be to subscribe
	m := p.m
	if m == nil {
		return
	}
	known := make(map[int64]bool, len(ids))
	for _, id := range ids {
		known[id] = true
	}
	var evs []bridge.Event
	for _, id := range sortedIDs(m.orders) {
		if known[m.orders[id].o.ContractID] {
			evs = append(evs, p.refreshOrderLocked(id, true)...) // its fills follow it
		}
	}
	for _, id := range sortedIDs(m.fills) {
		if known[m.fills[id].ContractID] {
			evs = append(evs, p.refreshExecLocked(id)...)
		}
	}
	keys, accounts := make(map[posKey]bool), make(map[int64]bool)
	for k := range m.positions {
		if known[k.contract] {
			keys[k], accounts[k.account] = true, true
		}
	}
	for _, k := range sortedKeys(keys) {
		evs = append(evs, p.refreshPositionLocked(k)...)
	}
	for _, id := range m.accOrder {
		if accounts[id] {
			evs = append(evs, p.refreshAccountLocked(id)...)
		}
	}
	p.publishLocked(evs)
	p.notifyLocked()
}

// errNoSuchContract reports a symbol the broker does not know.
var errNoSuchContract = errors.New("tradovate: the broker knows no such contract")

// bySymbolLookup returns the contract of a broker symbol, asking the
// broker when it is not cached.
func (cs *contracts) bySymbolLookup(ctx context.Context, symbol string) (contract, error) {
	cs.mu.Lock()
	c, ok := cs.bySymbol[symbol]
	miss, missed := cs.missing[symbol]
	cs.mu.Unlock()
	if ok {
		return c, nil
	}
	if missed && cs.now().Sub(miss) < missingFor {
		return contract{}, errNoSuchContract
	}
	var res tradovatewire.Contract
	err := cs.sess.Do(ctx, http.MethodGet, "/contract/find", "name="+url.QueryEscape(symbol), nil, &res)
	var he *HTTPError
	switch {
	case errors.As(err, &he) && he.Status == http.StatusNotFound, err == nil && (res.ID == 0 || res.Name == ""):
		cs.mu.Lock()
		cs.missing[symbol] = cs.now()
		cs.mu.Unlock()
		return contract{}, errNoSuchContract
	case err != nil:
		return contract{}, err
	}
	return cs.add(res), nil
}

// brokerSymbol is the broker's name of a contract of package futures:
// root, month code, one-digit year ("ESZ6").
func brokerSymbol(c futures.Contract) string {
	return c.Root.Symbol + string(protocol.MonthCode(c.Month)) + strconv.Itoa(c.Year%10)
}

// ourName turns a broker symbol into our contract name, and its root when
// package futures knows it. A one-digit year is the year ending in that
// digit nearest to now (within five years back and four ahead), so
// positions in expired contracts keep their name. A symbol that is no
// contract keeps its text.
func ourName(symbol string, now time.Time) (string, *futures.Root) {
	in, err := protocol.ParseInstrument(protocol.NormalizeInstrument(symbol))
	if err != nil || in.Form != protocol.InstrumentMonthCode {
		return symbol, nil
	}
	year := futures.ContractYear(in, now)
	if in.YearDigits == 1 && year-now.Year() > 4 {
		year -= 10
	}
	r, _ := futures.Lookup(in.Root)
	return protocol.ContractName(in.Root, in.Month, year), r
}

// resolved is an instrument argument resolved to a contract of the broker.
type resolved struct {
	// Name is ours ("ES 12-26"), Symbol the broker's ("ESZ6").
	Name, Symbol string
	// Contract is set when package futures knows the root.
	Contract futures.Contract
	Known    bool
}

// resolve turns an instrument in any accepted form into a contract. Roots
// of package futures resolve by its rules and its refusals are passed on;
// a month code or contract of another root is looked up at the broker
// (contract/find), and is unknown when the broker has none.
func (p *Platform) resolve(ctx context.Context, s string) (resolved, error) {
	now := p.opts.Now()
	c, err := futures.Resolve(s, now)
	var re *futures.ResolveError
	switch {
	case err == nil:
		return resolved{Name: c.Name, Symbol: brokerSymbol(c), Contract: c, Known: true}, nil
	case !errors.As(err, &re) || re.Cause != futures.CauseUnknownRoot:
		return resolved{}, fmt.Errorf("tradovate: %w", bridge.InstrumentErrorFrom(err))
	}
	unknown := fmt.Errorf("tradovate: %w", &bridge.InstrumentError{Cause: bridge.InstrumentUnknownRoot})
	in, perr := protocol.ParseInstrument(protocol.NormalizeInstrument(s))
	if perr != nil || in.Form == protocol.InstrumentRoot {
		return resolved{}, unknown
	}
	year := futures.ContractYear(in, now)
	symbol := in.Root + string(protocol.MonthCode(in.Month)) + strconv.Itoa(year%10)
	ref, err := p.contracts.bySymbolLookup(ctx, symbol)
	if errors.Is(err, errNoSuchContract) {
		return resolved{}, unknown
	}
	if err != nil {
		return resolved{}, err
	}
	return resolved{Name: protocol.ContractName(in.Root, in.Month, year), Symbol: ref.Symbol}, nil
}

// contractID returns the broker's id of a resolved contract.
func (p *Platform) contractID(ctx context.Context, r resolved) (int64, error) {
	ref, err := p.contracts.bySymbolLookup(ctx, r.Symbol)
	if errors.Is(err, errNoSuchContract) {
		return 0, fmt.Errorf("tradovate: %w", &bridge.InstrumentError{Cause: bridge.InstrumentUnknownRoot})
	}
	return ref.ID, err
}
