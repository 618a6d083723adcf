package tradovate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"tradebridge/futures"
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
// unknown ones ask the broker.
type contracts struct {
	sess *Session
	now  func() time.Time

	mu       sync.Mutex
	byID     map[int64]contract
	bySymbol map[string]contract
	missing  map[string]time.Time // symbols the broker does not know, and when it said so
}

// missingFor is how long a symbol the broker does not know is not asked
// for again.
const missingFor = time.Minute

func newContracts(sess *Session, now func() time.Time) *contracts {
	return &contracts{sess: sess, now: now, byID: make(map[int64]contract), bySymbol: make(map[string]contract),
		missing: make(map[string]time.Time)}
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

// byIDs makes sure every id is cached, asking the broker for the others.
// A failure leaves those ids unknown.
func (cs *contracts) ensure(ctx context.Context, ids []int64) {
	for _, id := range ids {
		if id == 0 {
			continue
		}
		if _, ok := cs.cached(id); ok {
			continue
		}
		var c tradovatewire.Contract
		err := cs.sess.Do(ctx, http.MethodGet, "/contract/item", "id="+strconv.FormatInt(id, 10), nil, &c)
		if err == nil && c.ID == id && c.Name != "" {
			cs.add(c)
		}
	}
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
