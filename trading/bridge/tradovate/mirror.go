package tradovate

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"

	"go.uber.org/zap"

	"tradebridge/futures"
	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// mirror is what the platform knows of the login: the sync answer and
// every props event since. Platform.mu guards it.
type mirror struct {
	userID    int64
	accOrder  []int64
	accounts  map[int64]*accountState
	byName    map[string]int64
	orders    map[int64]*orderState
	fills     map[int64]tradovatewire.Fill
	fees      map[int64]tradovatewire.FillFee
	positions map[posKey]tradovatewire.Position
	cash      map[int64]tradovatewire.CashBalance // the latest, by account
	// reports are the broker's command reports, by command id: a
	// rejected one ends the write that waits for it.
	reports map[int64]tradovatewire.CommandReport
	// commands are the broker's commands, by id.
	commands map[int64]tradovatewire.Command

	// What was last published, so that only changes are.
	pubOrders    map[int64]protocol.Order
	pubPositions map[posKey]protocol.Position
	pubExecs     map[int64]bool
}

type posKey struct{ account, contract int64 }

// accountState is one account of the mirror.
type accountState struct {
	rec       tradovatewire.Account
	pub       protocol.Account
	published bool
	marks     bridge.Marks
}

// orderState is one order of the mirror: the order entity and its latest
// version, and its fills.
type orderState struct {
	o        tradovatewire.Order
	hasOrder bool
	v        tradovatewire.OrderVersion
	hasVer   bool
	fills    []int64
	// typ is the order type as placed; a stop-limit whose version turns
	// into a limit has triggered.
	typ       string
	triggered bool
	// ignored marks an order of a placement the broker refused.
	ignored bool
}

func newMirror(userID int64) *mirror {
	return &mirror{userID: userID, accounts: make(map[int64]*accountState), byName: make(map[string]int64),
		orders: make(map[int64]*orderState), fills: make(map[int64]tradovatewire.Fill), fees: make(map[int64]tradovatewire.FillFee),
		positions: make(map[posKey]tradovatewire.Position), cash: make(map[int64]tradovatewire.CashBalance),
		reports: make(map[int64]tradovatewire.CommandReport), commands: make(map[int64]tradovatewire.Command),
		pubOrders: make(map[int64]protocol.Order), pubPositions: make(map[posKey]protocol.Position),
		pubExecs: make(map[int64]bool)}
}

func (m *mirror) order(id int64) *orderState {
	o := m.orders[id]
	if o == nil {
		o = &orderState{}
		m.orders[id] = o
	}
	return o
}

func (m *mirror) setAccount(a tradovatewire.Account) (added bool) {
	st := m.accounts[a.ID]
	if st == nil {
		st = &accountState{}
		m.accounts[a.ID] = st
		m.accOrder = append(m.accOrder, a.ID)
		added = true
	} else if st.rec.Name != a.Name {
		delete(m.byName, st.rec.Name)
	}
	st.rec = a
	m.byName[a.Name] = a.ID
	return added
}

func (m *mirror) setVersion(v tradovatewire.OrderVersion) {
	os := m.order(v.OrderID)
	if os.hasVer && v.ID < os.v.ID {
		return // an older version
	}
	if os.typ == "" {
		os.typ = v.OrderType
	}
	if (os.typ == tradovatewire.OrderTypeStopLimit || os.typ == tradovatewire.OrderTypeTrailingStopLimit) && v.OrderType == tradovatewire.OrderTypeLimit {
		os.triggered = true
	}
	os.v, os.hasVer = v, true
}

// addFill records a fill; an inactive one (busted or corrected by the
// broker) is removed, so that it counts nowhere: not in the order's filled
// quantity, the executions or the commission.
func (m *mirror) addFill(f tradovatewire.Fill) {
	os := m.order(f.OrderID)
	if !f.Active {
		delete(m.fills, f.ID)
		os.fills = slices.DeleteFunc(os.fills, func(id int64) bool { return id == f.ID })
		return
	}
	m.fills[f.ID] = f
	if !slices.Contains(os.fills, f.ID) {
		os.fills = append(os.fills, f.ID)
	}
}

// setPosition records a position row. The broker keeps a row per
// account, contract and trade date: the row of the latest trade date is
// the position, and a row of an older one is ignored.
func (m *mirror) setPosition(pos tradovatewire.Position) {
	k := posKey{pos.AccountID, pos.ContractID}
	if old, ok := m.positions[k]; ok && old.ID != pos.ID && tradeDateLess(pos.TradeDate, old.TradeDate) {
		return
	}
	m.positions[k] = pos
}

// setCash records an account's cash balance: the latest one wins.
func (m *mirror) setCash(c tradovatewire.CashBalance) { m.cash[c.AccountID] = c }

func tradeDateLess(a, b tradovatewire.TradeDate) bool {
	return cmp.Or(cmp.Compare(a.Year, b.Year), cmp.Compare(a.Month, b.Month), cmp.Compare(a.Day, b.Day)) < 0
}

// applySnapshot replaces the mirror with a sync answer, makes sock the
// user socket, and publishes, as events, every difference a reader of
// Events would otherwise have missed.
func (p *Platform) applySnapshot(userID int64, s tradovatewire.SyncResponse, sock *socket) {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.m
	m := newMirror(userID)
	for _, a := range s.Accounts {
		m.setAccount(a)
	}
	for _, o := range s.Orders {
		os := m.order(o.ID)
		os.o, os.hasOrder = o, true
	}
	versions := slices.Clone(s.OrderVersions)
	slices.SortFunc(versions, func(a, b tradovatewire.OrderVersion) int { return cmp.Compare(a.ID, b.ID) })
	for _, v := range versions {
		m.setVersion(v)
	}
	for _, f := range s.Fills {
		m.addFill(f)
	}
	for _, f := range s.FillFees {
		m.fees[f.ID] = f
	}
	for _, pos := range s.Positions {
		m.setPosition(pos)
	}
	for _, c := range s.Commands {
		m.commands[c.ID] = c
	}
	for _, r := range s.CommandReports {
		m.reports[r.CommandID] = r
	}
	for _, c := range s.CashBalances {
		// One per account; of several, the latest trade date's.
		if old, ok := m.cash[c.AccountID]; !ok || !tradeDateLess(c.TradeDate, old.TradeDate) {
			m.setCash(c)
		}
	}
	if old != nil {
		m.pubOrders, m.pubPositions, m.pubExecs = old.pubOrders, old.pubPositions, old.pubExecs
		for id, a := range m.accounts {
			if o := old.accounts[id]; o != nil {
				a.pub, a.published, a.marks = o.pub, o.published, o.marks
			}
		}
		for id, os := range old.orders {
			if n := m.orders[id]; n != nil && os.triggered && n.typ == os.typ {
				n.triggered = true
			}
		}
		// The answer carries no fees (fillFee/list is read after it): the
		// fees known of fills still listed stay.
		for id, f := range old.fees {
			if _, ok := m.fills[id]; ok {
				if _, have := m.fees[id]; !have {
					m.fees[id] = f
				}
			}
		}
	}
	p.m = m
	p.user = sock
	p.unavailable = nil
	// Events held from a socket before this one are in the answer.
	p.applied.Add(uint64(len(p.held)))
	p.held = nil
	for _, os := range m.orders {
		p.bindByTextLocked(os)
	}
	for _, id := range sortedIDs(m.commands) {
		p.bindByCommandLocked(m.commands[id])
	}

	var evs []bridge.Event
	fillIDs := sortedIDs(m.fills)
	for _, id := range fillIDs {
		evs = append(evs, p.refreshExecLocked(id)...)
	}
	for _, id := range sortedIDs(m.orders) {
		evs = append(evs, p.refreshOrderLocked(id, false)...)
	}
	keys := make(map[posKey]bool)
	for k := range m.positions {
		keys[k] = true
	}
	for k := range m.pubPositions {
		keys[k] = true
	}
	for _, k := range sortedKeys(keys) {
		evs = append(evs, p.refreshPositionLocked(k)...)
	}
	for _, id := range m.accOrder {
		evs = append(evs, p.refreshAccountLocked(id)...)
	}
	evs = append(evs, bridge.Event{Kind: bridge.EventConnections, Connections: p.connectionsLocked()})
	p.publishLocked(evs)
	p.pruneIDsLocked()
	p.md.kickLocked()
	p.notifyLocked()
}

// pruneIDsLocked forgets old records of the order-id map whose orders
// the broker no longer lists.
func (p *Platform) pruneIDsLocked() {
	m := p.m
	p.ids.prune(p.opts.Now().Add(-orderRecordKeep), func(broker int64) bool { _, ok := m.orders[broker]; return ok })
}

func (p *Platform) publishLocked(evs []bridge.Event) {
	for _, ev := range evs {
		p.feed.Publish(ev)
	}
}

// onUserEvent applies one event of the user socket (on its read
// goroutine).
func (p *Platform) onUserEvent(msg tradovatewire.Message) {
	if msg.E == tradovatewire.EventProps {
		var pe tradovatewire.PropsEvent
		if json.Unmarshal(msg.D, &pe) == nil {
			var e struct {
				ContractID int64 `json:"contractId"`
			}
			if json.Unmarshal(pe.Entity, &e) == nil && e.ContractID != 0 {
				p.contracts.want(e.ContractID) // looked up off the read goroutine
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.applied.Add(1)
		return
	}
	if len(p.held) > 0 && isCommandEvent(msg) {
		// A command publishes nothing of its own, and may bind the order
		// of a held version to one of our placements: it goes ahead of
		// the held events, which then go on if they can.
		p.applyLocked(msg)
		p.flushHeldLocked()
		return
	}
	if len(p.held) > 0 || p.holdLocked(msg) {
		p.held = append(p.held, msg)
		return
	}
	p.applyLocked(msg)
}

// isCommandEvent reports whether msg is a props event of a command entity.
func isCommandEvent(msg tradovatewire.Message) bool {
	var pe tradovatewire.PropsEvent
	return msg.E == tradovatewire.EventProps && json.Unmarshal(msg.D, &pe) == nil &&
		pe.EntityType == tradovatewire.EntityCommand
}

// holdLocked reports whether an event must wait for the placements in
// flight: the first version of an order we cannot tell the owner of
// while one of our placements has not answered (it may be ours, and the
// answer will say). Events after a held one wait behind it.
func (p *Platform) holdLocked(msg tradovatewire.Message) bool {
	if p.placing == 0 || msg.E != tradovatewire.EventProps {
		return false
	}
	var pe tradovatewire.PropsEvent
	if json.Unmarshal(msg.D, &pe) != nil || pe.EntityType != tradovatewire.EntityOrderVersion {
		return false
	}
	var v tradovatewire.OrderVersion
	if json.Unmarshal(pe.Entity, &v) != nil {
		return false
	}
	if os := p.m.orders[v.OrderID]; os != nil && os.hasVer {
		return false
	}
	if _, _, ok := p.ids.ours(v.OrderID); ok {
		return false
	}
	return v.Text == "" || !p.ids.unbound(v.Text)
}

// flushHeldLocked applies the held events that need not wait any more.
func (p *Platform) flushHeldLocked() {
	for len(p.held) > 0 && p.m != nil {
		msg := p.held[0]
		if p.holdLocked(msg) {
			return
		}
		p.held = p.held[1:]
		p.applyLocked(msg)
	}
	if p.m == nil {
		p.applied.Add(uint64(len(p.held)))
		p.held = nil
	}
}

// applyLocked applies one props event and publishes what it changed.
func (p *Platform) applyLocked(msg tradovatewire.Message) {
	defer p.applied.Add(1)
	defer p.notifyLocked()
	if msg.E != tradovatewire.EventProps {
		return
	}
	var pe tradovatewire.PropsEvent
	if err := json.Unmarshal(msg.D, &pe); err != nil {
		p.log.Warn("tradovate: a props event does not decode; skipped")
		return
	}
	m := p.m
	deleted := pe.EventType == tradovatewire.EventDeleted
	bad := func() {
		p.log.Warn("tradovate: an entity does not decode; skipped", zap.String("entity", pe.EntityType))
	}
	var evs []bridge.Event
	switch pe.EntityType {
	case tradovatewire.EntityOrder:
		var o tradovatewire.Order
		if json.Unmarshal(pe.Entity, &o) != nil || o.ID == 0 {
			bad()
			return
		}
		os := m.order(o.ID)
		os.o, os.hasOrder = o, true
		evs = p.refreshOrderLocked(o.ID, true)
	case tradovatewire.EntityOrderVersion:
		var v tradovatewire.OrderVersion
		if json.Unmarshal(pe.Entity, &v) != nil || v.OrderID == 0 {
			bad()
			return
		}
		m.setVersion(v)
		p.bindByTextLocked(m.orders[v.OrderID])
		evs = p.refreshOrderLocked(v.OrderID, true)
	case tradovatewire.EntityFill:
		var f tradovatewire.Fill
		if json.Unmarshal(pe.Entity, &f) != nil || f.ID == 0 {
			bad()
			return
		}
		m.addFill(f)
		evs = append(p.refreshOrderLocked(f.OrderID, true), p.refreshExecLocked(f.ID)...)
	case tradovatewire.EntityFillFee:
		var f tradovatewire.FillFee
		if json.Unmarshal(pe.Entity, &f) != nil || f.ID == 0 {
			bad()
			return
		}
		m.fees[f.ID] = f
	case tradovatewire.EntityPosition:
		var pos tradovatewire.Position
		if json.Unmarshal(pe.Entity, &pos) != nil || pos.AccountID == 0 {
			bad()
			return
		}
		k := posKey{pos.AccountID, pos.ContractID}
		if deleted {
			if pos.ID == 0 || m.positions[k].ID == pos.ID {
				delete(m.positions, k)
			}
		} else {
			m.setPosition(pos)
		}
		evs = p.refreshPositionLocked(k)
		p.md.kickLocked()
	case tradovatewire.EntityCashBalance:
		var c tradovatewire.CashBalance
		if json.Unmarshal(pe.Entity, &c) != nil || c.AccountID == 0 {
			bad()
			return
		}
		m.setCash(c)
		evs = p.refreshAccountLocked(c.AccountID)
	case tradovatewire.EntityAccount:
		var a tradovatewire.Account
		if json.Unmarshal(pe.Entity, &a) != nil || a.ID == 0 || a.Name == "" {
			bad()
			return
		}
		added := m.setAccount(a)
		evs = p.refreshAccountLocked(a.ID)
		if added {
			evs = append(evs, bridge.Event{Kind: bridge.EventConnections, Connections: p.connectionsLocked()})
		}
	case tradovatewire.EntityContract:
		var c tradovatewire.Contract
		if json.Unmarshal(pe.Entity, &c) == nil && c.ID != 0 && c.Name != "" {
			p.contracts.add(c)
		}
	case tradovatewire.EntityCommand:
		var c tradovatewire.Command
		if json.Unmarshal(pe.Entity, &c) != nil || c.ID == 0 {
			bad()
			return
		}
		m.commands[c.ID] = c
		if p.bindByCommandLocked(c) {
			// The order may have been published under the broker's id:
			// it is published again under ours.
			evs = p.refreshOrderLocked(c.OrderID, true)
		}
	case tradovatewire.EntityCommandReport:
		var r tradovatewire.CommandReport
		if json.Unmarshal(pe.Entity, &r) != nil || r.CommandID == 0 {
			bad()
			return
		}
		m.reports[r.CommandID] = r
		if r.Rejected() {
			p.commandRejectedLocked(r)
		}
	}
	p.publishLocked(evs)
}

// commandRejectedLocked tells of a command the broker rejected after it
// accepted the request: the write waiting for it (afterCommand) returns
// the rejection; the log says it for a write that already returned. The
// order stays as the broker's entities say, which the rejection left
// unchanged.
func (p *Platform) commandRejectedLocked(r tradovatewire.CommandReport) {
	fields := []zap.Field{zap.Int64("commandId", r.CommandID), zap.String("status", r.CommandStatus),
		zap.String("code", tradovatewire.RejectCode(r.RejectReason))}
	if c, ok := p.m.commands[r.CommandID]; ok {
		ours, _ := p.ourID(c.OrderID)
		fields = append(fields, zap.String("orderId", ours), zap.String("command", c.CommandType))
	}
	p.log.Warn("tradovate: the broker rejected a command after accepting it", fields...)
}

// bindByTextLocked maps an order to our id when its version carries the
// id of one of our placements that has not answered, and marks an order
// of a refused placement ignored (bindOursLocked).
func (p *Platform) bindByTextLocked(os *orderState) {
	if os == nil || !os.hasVer || os.v.Text == "" {
		return
	}
	p.bindOursLocked(os.v.Text, os.v.OrderID)
}

// bindByCommandLocked maps the order a command names to our id when the
// command echoes, as its clOrdId, the id of one of our placements that
// has not answered (bindOursLocked): every placement sends our id as its
// clOrdId, and the broker's command entity of the placement echoes it,
// whatever became of the order's text. It reports whether it bound.
func (p *Platform) bindByCommandLocked(c tradovatewire.Command) bool {
	if c.ClOrdID == "" || c.OrderID == 0 {
		return false
	}
	return p.bindOursLocked(c.ClOrdID, c.OrderID)
}

// bindOursLocked binds a broker order to ours, the id of one of our
// placements, unless the order is ours already or ours is bound; when
// the broker refused that placement, the order is marked ignored
// instead. It reports whether it bound.
func (p *Platform) bindOursLocked(ours string, broker int64) bool {
	if _, _, ok := p.ids.ours(broker); ok {
		return false
	}
	if p.failed[ours] {
		p.m.order(broker).ignored = true
		return false
	}
	return p.ids.unbound(ours) && p.ids.bind(ours, broker)
}

// refreshOrderLocked publishes an order when its record changed. created
// says the order came by event: its first publication is preceded by a
// Submitted one when the broker's first state is later, so that every
// order is first reported Submitted. Executions that waited for the
// order follow it.
func (p *Platform) refreshOrderLocked(id int64, created bool) []bridge.Event {
	m := p.m
	rec, ok := p.orderRecordLocked(id)
	if !ok {
		return nil
	}
	old, seen := m.pubOrders[id]
	if seen && old == rec {
		return nil
	}
	var evs []bridge.Event
	if !seen && created && rec.OrderState != protocol.OrderStateSubmitted && rec.OrderState != protocol.OrderStateRejected {
		sub := rec
		sub.OrderState, sub.Filled, sub.AverageFillPrice = protocol.OrderStateSubmitted, 0, 0
		evs = append(evs, bridge.Event{Kind: bridge.EventOrder, Order: ptr(sub)})
	}
	m.pubOrders[id] = rec
	evs = append(evs, bridge.Event{Kind: bridge.EventOrder, Order: ptr(rec)})
	if !seen {
		for _, f := range m.orders[id].fills {
			evs = append(evs, p.refreshExecLocked(f)...)
		}
	}
	return evs
}

// refreshExecLocked publishes a fill not published yet, once its order
// is.
func (p *Platform) refreshExecLocked(id int64) []bridge.Event {
	m := p.m
	if m.pubExecs[id] {
		return nil
	}
	f := m.fills[id]
	if _, ok := m.pubOrders[f.OrderID]; !ok {
		return nil
	}
	e, ok := p.executionLocked(f)
	if !ok {
		return nil
	}
	m.pubExecs[id] = true
	return []bridge.Event{{Kind: bridge.EventExecution, Execution: &e}}
}

// refreshPositionLocked publishes a position when its record changed; a
// position gone is published Flat once.
func (p *Platform) refreshPositionLocked(k posKey) []bridge.Event {
	m := p.m
	rec, ok := p.positionRecordLocked(k)
	old, seen := m.pubPositions[k]
	switch {
	case !ok:
		return nil
	case rec.MarketPosition == protocol.MarketPositionFlat:
		if !seen {
			return nil
		}
		delete(m.pubPositions, k)
	case seen && old == rec:
		return nil
	default:
		m.pubPositions[k] = rec
	}
	if a := m.accounts[k.account]; a != nil {
		a.marks.Observe(p.figuresLocked(a).Figures, p.opts.Now())
	}
	return []bridge.Event{{Kind: bridge.EventPosition, Position: &rec}}
}

// refreshAccountLocked publishes an account when its record changed.
func (p *Platform) refreshAccountLocked(id int64) []bridge.Event {
	a := p.m.accounts[id]
	if a == nil {
		return nil
	}
	rec := p.accountRecordLocked(a)
	a.marks.Observe(p.figuresLocked(a).Figures, p.opts.Now())
	if a.published && a.pub == rec {
		return nil
	}
	a.pub, a.published = rec, true
	return []bridge.Event{{Kind: bridge.EventAccount, Account: ptr(rec)}}
}

// ourID returns the order id callers know an order by.
func (p *Platform) ourID(broker int64) (string, orderRecord) {
	if id, rec, ok := p.ids.ours(broker); ok {
		return id, rec
	}
	return strconv.FormatInt(broker, 10), orderRecord{}
}

// orderRecordLocked makes an order's record; false while the order, its
// version, its account or its contract is not known, or when it is
// ignored.
func (p *Platform) orderRecordLocked(id int64) (protocol.Order, bool) {
	m := p.m
	os := m.orders[id]
	if os == nil || !os.hasOrder || !os.hasVer || os.ignored {
		return protocol.Order{}, false
	}
	a := m.accounts[os.o.AccountID]
	c, ok := p.contracts.cached(os.o.ContractID)
	if a == nil || !ok {
		return protocol.Order{}, false
	}
	ours, rec := p.ourID(id)
	o := protocol.Order{
		OrderID: ours, Account: a.rec.Name, Instrument: c.Name, Name: rec.Name, StrategyTag: rec.Tag,
		OrderAction: os.o.Action, OrderType: orderType(os.typ), Quantity: os.v.OrderQty,
		TimeInForce: timeInForce(os.v.TimeInForce), Oco: rec.Oco,
	}
	if o.Oco == "" && os.o.OcoID != 0 {
		o.Oco = strconv.FormatInt(min(id, os.o.OcoID), 10)
	}
	switch o.OrderType {
	case protocol.OrderTypeLimit:
		o.LimitPrice = os.v.Price
	case protocol.OrderTypeStopMarket:
		o.StopPrice = os.v.StopPrice
	case protocol.OrderTypeStopLimit:
		o.LimitPrice, o.StopPrice = os.v.Price, os.v.StopPrice
	case protocol.OrderTypeTrailingStop:
		o.StopPrice, o.TrailDistance = os.v.StopPrice, math.Abs(os.v.PegDifference)
	case protocol.OrderTypeTrailingStopLimit:
		o.LimitPrice, o.StopPrice, o.TrailDistance = os.v.Price, os.v.StopPrice, math.Abs(os.v.PegDifference)
	default:
		o.LimitPrice, o.StopPrice = os.v.Price, os.v.StopPrice
	}
	var qty int
	var value float64
	for _, fid := range os.fills {
		f := m.fills[fid]
		qty += f.Qty
		value += float64(f.Qty) * f.Price
	}
	o.Filled = qty
	if qty > 0 {
		o.AverageFillPrice = value / float64(qty)
		if c.Root != nil {
			o.AverageFillPrice = roundTo(o.AverageFillPrice, c.Root.Decimals+2)
		}
	}
	o.OrderState = stateOf(os, qty)
	if t, ok := tradovatewire.ParseTime(os.o.Timestamp); ok {
		o.Time, o.Epoch = protocol.FormatTime(t), t.UnixMilli()
	}
	return o, true
}

// stateOf maps the broker's status to ours, with the filled quantity:
// an order the broker reports filled is Filled once its fills add up.
func stateOf(os *orderState, filled int) string {
	resting := func() string {
		switch {
		case filled > 0:
			return protocol.OrderStatePartFilled
		case stopType(os.typ) && !os.triggered:
			return protocol.OrderStateAccepted
		}
		return protocol.OrderStateWorking
	}
	switch os.o.OrdStatus {
	case tradovatewire.StatusPendingNew:
		return protocol.OrderStateSubmitted
	case tradovatewire.StatusWorking, tradovatewire.StatusSuspended:
		return resting()
	case tradovatewire.StatusPendingCancel:
		return protocol.OrderStateCancelPending
	case tradovatewire.StatusPendingReplace:
		return protocol.OrderStateChangePending
	case tradovatewire.StatusFilled, tradovatewire.StatusCompleted:
		if filled >= os.v.OrderQty && filled > 0 {
			return protocol.OrderStateFilled
		}
		if os.o.OrdStatus == tradovatewire.StatusCompleted {
			return protocol.OrderStateCancelled
		}
		return resting()
	case tradovatewire.StatusCanceled, tradovatewire.StatusExpired:
		return protocol.OrderStateCancelled
	case tradovatewire.StatusRejected:
		return protocol.OrderStateRejected
	}
	return protocol.OrderStateUnknown
}

// stopType reports whether a broker order type waits for its stop: Stop,
// StopLimit and the trailing types rest Accepted until the market reaches
// the stop.
func stopType(t string) bool {
	switch t {
	case tradovatewire.OrderTypeStop, tradovatewire.OrderTypeStopLimit, tradovatewire.OrderTypeTrailingStop, tradovatewire.OrderTypeTrailingStopLimit:
		return true
	}
	return false
}

// orderType maps the broker's order type to ours; types we do not name
// keep the broker's name (TrailingStop and TrailingStopLimit are ours
// too).
func orderType(t string) string {
	switch t {
	case tradovatewire.OrderTypeStop:
		return protocol.OrderTypeStopMarket
	case "":
		return protocol.OrderTypeMarket
	}
	return t
}

// brokerOrderType maps our order type to the broker's.
func brokerOrderType(t string) string {
	if t == protocol.OrderTypeStopMarket {
		return tradovatewire.OrderTypeStop
	}
	return t
}

// timeInForce maps the broker's time in force to ours.
func timeInForce(t string) string {
	switch t {
	case tradovatewire.TIFDay, "":
		return protocol.TimeInForceDay
	case tradovatewire.TIFGTC:
		return protocol.TimeInForceGtc
	}
	return t
}

// executionLocked makes a fill's record; false while its order is not
// known.
func (p *Platform) executionLocked(f tradovatewire.Fill) (protocol.Execution, bool) {
	m := p.m
	os := m.orders[f.OrderID]
	if os == nil || !os.hasOrder || os.ignored {
		return protocol.Execution{}, false
	}
	a := m.accounts[os.o.AccountID]
	c, ok := p.contracts.cached(f.ContractID)
	if !ok {
		c, ok = p.contracts.cached(os.o.ContractID)
	}
	if a == nil || !ok {
		return protocol.Execution{}, false
	}
	ours, rec := p.ourID(f.OrderID)
	e := protocol.Execution{ID: strconv.FormatInt(f.ID, 10), OrderID: ours, Account: a.rec.Name,
		Instrument: c.Name, Name: rec.Name, MarketPosition: protocol.MarketPositionLong, Quantity: f.Qty,
		Price: f.Price, Commission: roundCents(m.fees[f.ID].Total())}
	if f.Action == tradovatewire.ActionSell {
		e.MarketPosition = protocol.MarketPositionShort
	}
	if t, ok := tradovatewire.ParseTime(f.Timestamp); ok {
		e.Time, e.Epoch = protocol.FormatTime(t), t.UnixMilli()
	}
	return e, true
}

// positionRecordLocked makes a position's record (Flat when the broker
// reports it flat or gone); false while its account or contract is not
// known.
func (p *Platform) positionRecordLocked(k posKey) (protocol.Position, bool) {
	m := p.m
	a := m.accounts[k.account]
	c, ok := p.contracts.cached(k.contract)
	if a == nil || !ok {
		return protocol.Position{}, false
	}
	rec := protocol.Position{Account: a.rec.Name, Instrument: c.Name, InstrumentType: "Future",
		MarketPosition: protocol.MarketPositionFlat}
	pos, ok := m.positions[k]
	if !ok || pos.NetPos == 0 {
		return rec, true
	}
	rec.Quantity = pos.NetPos
	rec.MarketPosition = protocol.MarketPositionLong
	if pos.NetPos < 0 {
		rec.Quantity = -pos.NetPos
		rec.MarketPosition = protocol.MarketPositionShort
	}
	rec.AveragePrice = pos.NetPrice
	if price, ok := p.livePriceLocked(k.contract, pos.NetPos > 0); ok && c.Root != nil {
		rec.MarketPrice = price
		rec.UnrealizedProfitLoss = roundCents((price - pos.NetPrice) * float64(pos.NetPos) * c.Root.PointValue)
	} else {
		rec.UnrealizedUnknown = true // no live price: 0 means unknown, not flat
	}
	return rec, true
}

// accountRecordLocked makes an account's record from its cash balance,
// the fees of the session's fills and its positions at the latest quotes.
func (p *Platform) accountRecordLocked(a *accountState) protocol.Account {
	f := p.figuresLocked(a)
	rec := protocol.Account{Name: a.rec.Name, DisplayName: a.rec.Name, Provider: "Tradovate",
		Connection: p.connName, ConnectionStatus: "Disconnected", Denomination: "USD", Status: "Active"}
	if p.user != nil {
		rec.ConnectionStatus = "Connected"
	}
	if !a.rec.Active {
		rec.Status = "Inactive"
	}
	rec.Item = protocol.AccountItem{
		CashValue: f.cash, NetLiquidation: f.NetLiq, RealizedProfitLoss: f.Realized,
		UnrealizedProfitLoss: f.Unrealized, GrossRealizedProfitLoss: roundCents(f.Realized + f.Commission),
		Commission: f.Commission, BuyingPower: f.NetLiq, WeeklyProfitLoss: f.week, UnrealizedUnknown: f.unknown,
	}
	return rec
}

// figures are an account's values: those its watermarks follow, and its
// cash and the week's realized P&L.
type figures struct {
	bridge.Figures
	cash, week float64
	unknown    bool // an open position has no live price
}

// figuresLocked computes an account's values now.
func (p *Platform) figuresLocked(a *accountState) figures {
	m := p.m
	now := p.opts.Now()
	var f figures
	cb, ok := m.cash[a.rec.ID]
	if ok {
		f.cash, f.week = roundCents(cb.Amount), roundCents(cb.WeekRealizedPnL)
		if cb.TradeDate == (tradovatewire.TradeDate{}) || cb.TradeDate == tradeDateOf(now) {
			f.Realized = roundCents(cb.RealizedPnL)
		}
	}
	start := protocol.SessionStart(now).UnixMilli()
	for id, fill := range m.fills {
		os := m.orders[fill.OrderID]
		if os == nil || os.o.AccountID != a.rec.ID {
			continue
		}
		if t, ok := tradovatewire.ParseTime(fill.Timestamp); ok && t.UnixMilli() < start {
			continue
		}
		f.Commission += m.fees[id].Total()
	}
	f.Commission = roundCents(f.Commission)
	for k := range m.positions {
		if k.account != a.rec.ID {
			continue
		}
		if rec, ok := p.positionRecordLocked(k); ok && rec.Quantity != 0 {
			f.Unrealized += rec.UnrealizedProfitLoss
			f.unknown = f.unknown || rec.UnrealizedUnknown
			f.Positions++
		}
	}
	f.Unrealized = roundCents(f.Unrealized)
	f.NetLiq = roundCents(f.cash + f.Unrealized)
	return f
}

// tradeDateOf is the trade date of the session at now.
func tradeDateOf(now time.Time) tradovatewire.TradeDate {
	d := futures.SessionFrom(now).Day
	return tradovatewire.TradeDate{Year: d.Year(), Month: int(d.Month()), Day: d.Day()}
}

func roundCents(x float64) float64 { return math.Round(x*100) / 100 }

func roundTo(x float64, decimals int) float64 {
	s := math.Pow10(decimals)
	return math.Round(x*s) / s
}

func ptr[T any](v T) *T { return &v }

func sortedIDs[V any](m map[int64]V) []int64 {
	ids := make([]int64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func sortedKeys(m map[posKey]bool) []posKey {
	ks := make([]posKey, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b posKey) int {
		return cmp.Or(cmp.Compare(a.account, b.account), cmp.Compare(a.contract, b.contract))
	})
	return ks
}
