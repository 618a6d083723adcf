package ninjatrader

import (
	"encoding/json"
	"maps"
	"slices"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/ninjatrader/ntwire"
)

// mirror is what the bridge knows of NinjaTrader: the snapshot it took and
// every event since. Platform.mu guards it.
type mirror struct {
	connections []protocol.Connection
	accounts    map[string]*accountState
	names       []string // account names, in the add-on's order
	quotes      map[string]protocol.Quote
}

// accountState is one account's part of the mirror.
type accountState struct {
	rec        protocol.Account
	known      bool // an account record has been seen (not only its orders)
	positions  map[string]protocol.Position
	orders     map[string]protocol.Order
	orderIDs   []string // in the order first seen
	executions []protocol.Execution
	execSeen   map[string]bool
	strategies map[string]protocol.Strategy
	stratIDs   []string
	marks      bridge.Marks
}

func newMirror() *mirror {
	return &mirror{accounts: make(map[string]*accountState), quotes: make(map[string]protocol.Quote)}
}

func newAccountState(name string) *accountState {
	return &accountState{rec: protocol.Account{Name: name},
		positions: make(map[string]protocol.Position), orders: make(map[string]protocol.Order),
		execSeen: make(map[string]bool), strategies: make(map[string]protocol.Strategy)}
}

// account returns the named account's state, creating it.
func (m *mirror) account(name string) *accountState {
	a := m.accounts[name]
	if a == nil {
		a = newAccountState(name)
		m.accounts[name] = a
		m.names = append(m.names, name)
	}
	return a
}

func (a *accountState) setOrder(o protocol.Order) {
	if _, ok := a.orders[o.OrderID]; !ok {
		a.orderIDs = append(a.orderIDs, o.OrderID)
	}
	a.orders[o.OrderID] = o
}

func (a *accountState) addExecution(e protocol.Execution) bool {
	if a.execSeen[e.ID] {
		return false
	}
	a.execSeen[e.ID] = true
	a.executions = append(a.executions, e)
	return true
}

func (a *accountState) setPosition(p protocol.Position) {
	if p.MarketPosition == protocol.MarketPositionFlat || p.Quantity == 0 {
		delete(a.positions, p.Instrument)
		return
	}
	a.positions[p.Instrument] = p
}

func (a *accountState) setStrategy(s protocol.Strategy) {
	if _, ok := a.strategies[s.ID]; !ok {
		a.stratIDs = append(a.stratIDs, s.ID)
	}
	a.strategies[s.ID] = s
}

// applySnapshot replaces the mirror with a snapshot and publishes, as
// events, every difference a reader of Events would otherwise have missed:
// new executions, orders, positions (a vanished one as Flat), accounts and
// strategies that changed, and the connections.
func (p *Platform) applySnapshot(snap ntwire.Snapshot) {
	now := p.opts.Now()
	p.mu.Lock()
	old := p.mirror
	m := newMirror()
	m.quotes = old.quotes
	m.connections = orEmpty(snap.Connections)
	for _, rec := range snap.Accounts {
		a := m.account(rec.Name)
		a.rec, a.known = rec, true
		if o := old.accounts[rec.Name]; o != nil {
			a.marks = o.marks
		}
	}
	var evs []bridge.Event
	for _, e := range snap.Executions {
		a := m.account(e.Account)
		a.addExecution(e)
		if o := old.accounts[e.Account]; o == nil || !o.execSeen[e.ID] {
			evs = append(evs, bridge.Event{Kind: bridge.EventExecution, Execution: ptr(e)})
		}
	}
	for _, ord := range snap.Orders {
		m.account(ord.Account).setOrder(ord)
		if o := old.accounts[ord.Account]; o == nil || o.orders[ord.OrderID] != ord {
			evs = append(evs, bridge.Event{Kind: bridge.EventOrder, Order: ptr(ord)})
		}
	}
	for _, pos := range snap.Positions {
		m.account(pos.Account).setPosition(pos)
		if o := old.accounts[pos.Account]; o == nil || o.positions[pos.Instrument] != pos {
			evs = append(evs, bridge.Event{Kind: bridge.EventPosition, Position: ptr(pos)})
		}
	}
	for _, name := range old.names {
		o, a := old.accounts[name], m.accounts[name]
		for _, inst := range sortedKeys(o.positions) {
			if a == nil || a.positions[inst] == (protocol.Position{}) {
				flat := o.positions[inst]
				flat.MarketPosition, flat.Quantity, flat.AveragePrice, flat.UnrealizedProfitLoss = protocol.MarketPositionFlat, 0, 0, 0
				evs = append(evs, bridge.Event{Kind: bridge.EventPosition, Position: &flat})
			}
		}
	}
	for _, s := range snap.Strategies {
		m.account(s.Account).setStrategy(s)
		if o := old.accounts[s.Account]; o == nil || !sameJSON(o.strategies[s.ID], s) {
			evs = append(evs, bridge.Event{Kind: bridge.EventStrategy, Strategy: ptr(s)})
		}
	}
	for _, rec := range snap.Accounts {
		a := m.accounts[rec.Name]
		a.marks.Observe(figuresOf(a), now)
		if o := old.accounts[rec.Name]; o == nil || o.rec != rec {
			evs = append(evs, bridge.Event{Kind: bridge.EventAccount, Account: ptr(rec)})
		}
	}
	p.mirror = m
	conns := slices.Clone(m.connections)
	p.mu.Unlock()
	for _, ev := range evs {
		p.feed.Publish(ev)
	}
	p.feed.Publish(bridge.Event{Kind: bridge.EventConnections, Connections: conns})
}

// applyEvents applies add-on events to the mirror and publishes them.
func (p *Platform) applyEvents(run []ntwire.Message) {
	for _, m := range run {
		if ev, ok := p.applyEvent(m); ok {
			p.feed.Publish(ev)
		}
	}
}

// applyEvent applies one event; ok is false for an event nothing reads
// (bars, kinds of later versions) or one that does not decode.
func (p *Platform) applyEvent(msg ntwire.Message) (bridge.Event, bool) {
	now := p.opts.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.mirror
	bad := func() (bridge.Event, bool) {
		p.log.Warn("ninjatrader: an event that does not decode was skipped", zap.String("kind", msg.Kind), zap.Uint64("seq", msg.Seq))
		return bridge.Event{}, false
	}
	switch msg.Kind {
	case ntwire.KindOrder:
		var o protocol.Order
		if json.Unmarshal(msg.Data, &o) != nil || o.OrderID == "" {
			return bad()
		}
		m.account(o.Account).setOrder(o)
		return bridge.Event{Kind: bridge.EventOrder, Order: &o}, true
	case ntwire.KindExecution:
		var e protocol.Execution
		if json.Unmarshal(msg.Data, &e) != nil || e.ID == "" {
			return bad()
		}
		if !m.account(e.Account).addExecution(e) {
			return bridge.Event{}, false
		}
		return bridge.Event{Kind: bridge.EventExecution, Execution: &e}, true
	case ntwire.KindPosition:
		var pos protocol.Position
		if json.Unmarshal(msg.Data, &pos) != nil || pos.Instrument == "" {
			return bad()
		}
		a := m.account(pos.Account)
		a.setPosition(pos)
		a.marks.Observe(figuresOf(a), now)
		return bridge.Event{Kind: bridge.EventPosition, Position: &pos}, true
	case ntwire.KindAccount:
		var rec protocol.Account
		if json.Unmarshal(msg.Data, &rec) != nil || rec.Name == "" {
			return bad()
		}
		a := m.account(rec.Name)
		a.rec, a.known = rec, true
		a.marks.Observe(figuresOf(a), now)
		return bridge.Event{Kind: bridge.EventAccount, Account: &rec}, true
	case ntwire.KindConnection:
		var c protocol.Connection
		if json.Unmarshal(msg.Data, &c) != nil || c.Name == "" {
			return bad()
		}
		i := slices.IndexFunc(m.connections, func(x protocol.Connection) bool { return x.Name == c.Name })
		if i < 0 {
			m.connections = append(m.connections, c)
		} else {
			m.connections[i] = c
		}
		for _, name := range c.Accounts {
			a := m.account(name)
			a.rec.Connection, a.rec.ConnectionStatus = c.Name, c.Status
		}
		return bridge.Event{Kind: bridge.EventConnections, Connections: slices.Clone(m.connections)}, true
	case ntwire.KindQuote:
		var q protocol.Quote
		if json.Unmarshal(msg.Data, &q) != nil || q.Instrument == "" {
			return bad()
		}
		m.quotes[q.Instrument] = q
		return bridge.Event{Kind: bridge.EventQuote, Quote: &q}, true
	case ntwire.KindStrategy:
		var s protocol.Strategy
		if json.Unmarshal(msg.Data, &s) != nil || s.ID == "" {
			return bad()
		}
		m.account(s.Account).setStrategy(s)
		return bridge.Event{Kind: bridge.EventStrategy, Strategy: &s}, true
	}
	return bridge.Event{}, false
}

// figuresOf returns the account's values that its watermarks follow.
func figuresOf(a *accountState) bridge.Figures {
	it := a.rec.Item
	return bridge.Figures{Realized: it.RealizedProfitLoss, Unrealized: it.UnrealizedProfitLoss,
		NetLiq: it.NetLiquidation, Commission: it.Commission, Positions: len(a.positions)}
}

func ptr[T any](v T) *T { return &v }

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// sameJSON reports whether two records encode the same.
func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
