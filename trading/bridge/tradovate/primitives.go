package tradovate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// The platform's bridge.Platform, bridge.PairSubmitter,
// bridge.BracketSubmitter and bridge.BrokerFlattener.
var (
	_ bridge.Platform         = (*Platform)(nil)
	_ bridge.PairSubmitter    = (*Platform)(nil)
	_ bridge.BracketSubmitter = (*Platform)(nil)
	_ bridge.BrokerFlattener  = (*Platform)(nil)
)

// Connections implements bridge.Platform: one connection, "Tradovate
// demo" or "Tradovate live", with the login's accounts, Connected while
// the user-data socket is synced.
func (p *Platform) Connections(ctx context.Context) ([]protocol.Connection, error) {
	if err := p.usable(ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.connectionsLocked(), nil
}

// read runs f on the synced mirror, or says why there is none.
func read[T any](ctx context.Context, p *Platform, f func(m *mirror) (T, error)) (T, error) {
	var zero T
	if err := p.usable(ctx); err != nil {
		return zero, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	m, err := p.syncedLocked()
	if err != nil {
		return zero, err
	}
	return f(m)
}

// errAccount is the error of an account name the login does not have.
func errAccount() error { return fmt.Errorf("tradovate: %w", bridge.ErrAccountNotFound) }

// readAccount runs f on one account of the mirror.
func readAccount[T any](ctx context.Context, p *Platform, name string, f func(m *mirror, a *accountState) T) (T, error) {
	return read(ctx, p, func(m *mirror) (T, error) {
		id, ok := m.byName[name]
		if !ok {
			var zero T
			return zero, errAccount()
		}
		return f(m, m.accounts[id]), nil
	})
}

// Accounts implements bridge.Platform.
func (p *Platform) Accounts(ctx context.Context) ([]protocol.Account, error) {
	return read(ctx, p, func(m *mirror) ([]protocol.Account, error) {
		out := make([]protocol.Account, 0, len(m.accOrder))
		for _, id := range m.accOrder {
			out = append(out, p.accountRecordLocked(m.accounts[id]))
		}
		return out, nil
	})
}

// Account implements bridge.Platform.
func (p *Platform) Account(ctx context.Context, name string) (protocol.Account, error) {
	return readAccount(ctx, p, name, func(_ *mirror, a *accountState) protocol.Account { return p.accountRecordLocked(a) })
}

// Watermarks implements bridge.Platform: the session's highs and lows of
// the account's values as the platform saw them change (the broker keeps
// none). They start when the platform first sees the account in a
// session.
func (p *Platform) Watermarks(ctx context.Context, account string) (protocol.Watermarks, error) {
	now := p.opts.Now()
	return readAccount(ctx, p, account, func(_ *mirror, a *accountState) protocol.Watermarks {
		return a.marks.Watermarks(a.rec.Name, p.figuresLocked(a).Figures, now)
	})
}

// Positions implements bridge.Platform: the account's open positions (the
// broker's rows with netPos 0 are left out), by instrument.
func (p *Platform) Positions(ctx context.Context, account string) ([]protocol.Position, error) {
	return readAccount(ctx, p, account, func(m *mirror, a *accountState) []protocol.Position {
		out := []protocol.Position{}
		for k := range m.positions {
			if k.account != a.rec.ID {
				continue
			}
			if rec, ok := p.positionRecordLocked(k); ok && rec.Quantity != 0 {
				out = append(out, rec)
			}
		}
		slices.SortFunc(out, func(x, y protocol.Position) int { return cmp.Compare(x.Instrument, y.Instrument) })
		return out
	})
}

// Orders implements bridge.Platform: the orders of the current trading
// session and every order still working, oldest first.
func (p *Platform) Orders(ctx context.Context, account string) ([]protocol.Order, error) {
	start := protocol.SessionStart(p.opts.Now()).UnixMilli()
	return readAccount(ctx, p, account, func(m *mirror, a *accountState) []protocol.Order {
		out := []protocol.Order{}
		for _, id := range sortedIDs(m.orders) {
			if m.orders[id].o.AccountID != a.rec.ID {
				continue
			}
			o, ok := p.orderRecordLocked(id)
			if ok && (!protocol.TerminalOrderState(o.OrderState) || o.Epoch == 0 || o.Epoch >= start) {
				out = append(out, o)
			}
		}
		slices.SortStableFunc(out, func(x, y protocol.Order) int { return cmp.Compare(x.Epoch, y.Epoch) })
		return out
	})
}

// Executions implements bridge.Platform: the account's fills of the
// current session, oldest first.
func (p *Platform) Executions(ctx context.Context, account string) ([]protocol.Execution, error) {
	start := protocol.SessionStart(p.opts.Now()).UnixMilli()
	return readAccount(ctx, p, account, func(m *mirror, a *accountState) []protocol.Execution {
		out := []protocol.Execution{}
		for _, id := range sortedIDs(m.fills) {
			f := m.fills[id]
			if os := m.orders[f.OrderID]; os == nil || os.o.AccountID != a.rec.ID {
				continue
			}
			if e, ok := p.executionLocked(f); ok && (e.Epoch == 0 || e.Epoch >= start) {
				out = append(out, e)
			}
		}
		slices.SortStableFunc(out, func(x, y protocol.Execution) int { return cmp.Compare(x.Epoch, y.Epoch) })
		return out
	})
}

// Fixed reasons of the refusals the platform makes itself.
const (
	reasonQuantity    = "the quantity must be a whole number of contracts above zero"
	reasonAction      = "the action must be Buy or Sell"
	reasonOrderType   = "the order type must be Market, Limit, StopMarket, StopLimit, TrailingStop or TrailingStopLimit"
	reasonTimeInForce = "the time in force must be Day or Gtc"
	reasonLimit       = "the limit price must be above zero and on the contract's tick grid"
	reasonStop        = "the stop price must be above zero and on the contract's tick grid"
	reasonTrail       = "the trail distance must be above zero and on the contract's tick grid"
	reasonTrailChange = "a trailing order's prices follow the market: only its quantity can be changed"
	reasonNoQuote     = "there is no quote to start the trailing stop from; send its stop price"
	reasonDuplicate   = "the order id was used before; every order needs a new id"
	reasonOrderID     = "the order id must be 1 to 64 letters, digits, '.', '_', ':' or '-'"
	reasonTerminal    = "the order is already filled, cancelled or rejected"
	reasonNoLimit     = "only a Limit or StopLimit order has a limit price"
	reasonNoStop      = "only a StopMarket or StopLimit order has a stop price"
	reasonBelowFilled = "the quantity must stay above the quantity already filled"
	reasonOCOPair     = "the two orders of an OCO pair must be for the same account, instrument and quantity, " +
		"each with its own order id"
	reasonBrokerRefused = "Tradovate refused the request"
)

// maxFailed bounds the refused ids the platform remembers.
const maxFailed = 4096

func reject(reason string) error { return &bridge.RejectError{Reason: reason} }

// writeError turns the broker's HTTP refusal of an order request into a
// rejection (400: malformed) or ErrOrderNotFound (404 on an order of
// ours: the broker no longer knows it); other errors pass.
func writeError(err error, orderKnown bool) error {
	var he *HTTPError
	if !errors.As(err, &he) {
		return err
	}
	switch {
	case he.Status == http.StatusNotFound && orderKnown:
		return fmt.Errorf("tradovate: %w", bridge.ErrOrderNotFound)
	case he.Status >= 400 && he.Status < 500:
		return &bridge.RejectError{Code: tradovatewire.RejectCode(tradovatewire.ReasonUnknown), Reason: reasonBrokerRefused}
	}
	return err
}

// brokerReject is the rejection of a failureReason (or of an errorText,
// which has no reason).
func brokerReject(failureReason, errorText string) error {
	if failureReason == "" && errorText != "" {
		return &bridge.RejectError{Code: tradovatewire.RejectCode(tradovatewire.ReasonUnknown), Reason: reasonBrokerRefused}
	}
	return &bridge.RejectError{Code: tradovatewire.RejectCode(failureReason), Reason: tradovatewire.RejectSentence(failureReason)}
}

// The primitives Tradovate lacks.
var (
	notSupportedStrategies = &bridge.NotSupportedError{What: "strategies",
		Reason: "Tradovate runs no strategies for the relay; run the strategy in the bot and place its orders"}
	notSupportedATM = &bridge.NotSupportedError{What: "ATM templates",
		Reason: "Tradovate has no ATM templates for the relay; place the entry, then a bracket (cancel_and_bracket)"}
	notSupportedBars = &bridge.NotSupportedError{What: "bars",
		Reason: "the relay serves no Tradovate bars; build bars from the quote stream"}
	notSupportedOCO = &bridge.NotSupportedError{What: "OCO groups",
		Reason: "Tradovate joins orders to an OCO group only when both are placed together; use a bracket (cancel_and_bracket)"}
)

// order is a validated order request, in the broker's terms.
type order struct {
	req      bridge.OrderRequest
	inst     resolved
	account  int64
	action   string
	typ      string // the broker's order type
	tif      string // the broker's time in force
	limit    float64
	stop     float64
	peg      float64 // a trailing order's pegDifference; zero for the others
	quantity int
}

// validate checks an order request and resolves it; errors never repeat
// the request.
func (p *Platform) validate(ctx context.Context, req bridge.OrderRequest) (order, error) {
	o := order{req: req, quantity: req.Quantity}
	if req.AtmTemplate != "" {
		return o, notSupportedATM
	}
	if req.OrderID != "" && !validOrderID(req.OrderID) {
		return o, reject(reasonOrderID)
	}
	acct, err := read(ctx, p, func(m *mirror) (int64, error) {
		id, ok := m.byName[req.Account]
		if !ok {
			return 0, errAccount()
		}
		return id, nil
	})
	if err != nil {
		return o, err
	}
	o.account = acct
	inst, err := p.resolve(ctx, req.Instrument)
	if err != nil {
		return o, err
	}
	o.inst = inst
	var ok bool
	if o.action, ok = protocol.NormalizeAction(req.Action); !ok {
		return o, reject(reasonAction)
	}
	typ, ok := protocol.NormalizeOrderType(req.OrderType)
	if !ok {
		return o, reject(reasonOrderType)
	}
	o.typ = brokerOrderType(typ)
	tif := protocol.TimeInForceDay
	if req.TimeInForce != "" {
		if tif, ok = protocol.NormalizeTimeInForce(req.TimeInForce); !ok {
			return o, reject(reasonTimeInForce)
		}
	}
	o.tif = tradovatewire.TIFDay
	if tif == protocol.TimeInForceGtc {
		o.tif = tradovatewire.TIFGTC
	}
	if req.Quantity <= 0 {
		return o, reject(reasonQuantity)
	}
	switch typ {
	case protocol.OrderTypeLimit:
		o.limit = req.LimitPrice
		if !onGrid(inst, o.limit) {
			return o, reject(reasonLimit)
		}
	case protocol.OrderTypeStopMarket:
		o.stop = req.StopPrice
		if !onGrid(inst, o.stop) {
			return o, reject(reasonStop)
		}
	case protocol.OrderTypeStopLimit, protocol.OrderTypeTrailingStopLimit:
		o.limit, o.stop = req.LimitPrice, req.StopPrice
		if !onGrid(inst, o.stop) {
			return o, reject(reasonStop)
		}
		if !onGrid(inst, o.limit) {
			return o, reject(reasonLimit)
		}
	case protocol.OrderTypeTrailingStop:
		o.stop = req.StopPrice
		if o.stop != 0 && !onGrid(inst, o.stop) {
			return o, reject(reasonStop)
		}
	}
	if protocol.TrailingOrderType(typ) {
		if !onGrid(inst, req.TrailDistance) {
			return o, reject(reasonTrail)
		}
		o.peg = tradovatewire.PegDifference(o.action, req.TrailDistance)
		if o.stop == 0 {
			if err := p.startStop(ctx, &o, req.TrailDistance); err != nil {
				return o, err
			}
		}
	}
	return o, nil
}

// startStop sets the starting stop of a TrailingStop sent without one:
// the distance from the market, below the bid for a Sell, above the ask
// for a Buy, from the contract's quote. The broker then trails it.
func (p *Platform) startStop(ctx context.Context, o *order, distance float64) error {
	q, err := p.Quote(ctx, o.inst.Name)
	if err != nil {
		return err
	}
	from, sign := q.Ask, 1.0
	if o.action == protocol.ActionSell {
		from, sign = q.Bid, -1
	}
	if from <= 0 {
		return &bridge.RejectError{Code: tradovatewire.RejectCode("NoQuote"), Reason: reasonNoQuote}
	}
	o.stop = from + sign*distance
	if o.inst.Known {
		r := o.inst.Contract.Root
		n, _ := r.Ticks(from)
		d, _ := r.Ticks(distance)
		o.stop = r.Price(n + int64(sign)*d)
	}
	if o.stop <= 0 {
		return &bridge.RejectError{Code: tradovatewire.RejectCode("NoQuote"), Reason: reasonNoQuote}
	}
	return nil
}

// onGrid reports whether a price is above zero and, for a root package
// futures knows, on its tick grid.
func onGrid(r resolved, price float64) bool {
	if price <= 0 {
		return false
	}
	if !r.Known {
		return true
	}
	_, ok := r.Contract.Root.Ticks(price)
	return ok
}

// validOrderID reports whether an order id is one the platform keeps.
func validOrderID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for _, c := range []byte(id) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// placeRequest is the broker's request of a validated order.
func (p *Platform) placeRequest(o order, ours string) tradovatewire.PlaceOrderRequest {
	return tradovatewire.PlaceOrderRequest{
		AccountSpec: o.req.Account, AccountID: o.account, Action: o.action, Symbol: o.inst.Symbol,
		OrderQty: o.quantity, OrderType: o.typ, Price: o.limit, StopPrice: o.stop, PegDifference: o.peg,
		TimeInForce: o.tif, IsAutomated: true, Text: ours, ClOrdID: ours,
	}
}

// startPlacing counts a placement in flight: versions of orders nobody
// can tell the owner of wait until it answers.
func (p *Platform) startPlacing() {
	p.mu.Lock()
	p.placing++
	p.mu.Unlock()
}

// donePlacing ends a placement: refused ids are remembered (their orders
// are not ours to show) and held events go on.
func (p *Platform) donePlacing(refused ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.placing--
	if len(p.failed) > maxFailed {
		clear(p.failed) // old refusals: their orders, if any, are long known
	}
	for _, id := range refused {
		p.failed[id] = true
		if p.m != nil {
			for _, os := range p.m.orders {
				if os.hasVer && os.v.Text == id {
					if _, _, ok := p.ids.ours(os.v.OrderID); !ok {
						os.ignored = true
					}
				}
			}
			for _, c := range p.m.commands {
				if c.ClOrdID == id && c.OrderID != 0 {
					if _, _, ok := p.ids.ours(c.OrderID); !ok {
						p.m.order(c.OrderID).ignored = true
					}
				}
			}
		}
	}
	p.flushHeldLocked()
}

// SubmitOrder implements bridge.Platform. The order's id is the caller's
// (one is made when the request has none); the map to the broker's id is
// kept in Persist before the order is sent. It returns the order once the
// broker's events about it have arrived (a market order is usually
// Filled by then). An OCO id is not supported (see SubmitOCO).
func (p *Platform) SubmitOrder(ctx context.Context, req bridge.OrderRequest) (protocol.Order, error) {
	if err := p.usable(ctx); err != nil {
		return protocol.Order{}, err
	}
	if req.Oco != "" {
		return protocol.Order{}, notSupportedOCO
	}
	o, err := p.validate(ctx, req)
	if err != nil {
		return protocol.Order{}, err
	}
	ours := req.OrderID
	if ours == "" {
		ours = newOrderID()
	}
	if err := p.reserve(ours, req); err != nil {
		return protocol.Order{}, err
	}
	p.startPlacing()
	var res tradovatewire.PlaceOrderResponse
	err = writeError(p.sess.Do(ctx, http.MethodPost, "/order/placeorder", "", p.placeRequest(o, ours), &res), false)
	if failed := p.placed(ours, err, res.OrderID, res.FailureReason, res.ErrorText); failed != nil {
		return protocol.Order{}, failed
	}
	return p.afterWrite(ctx, res.OrderID, func(o protocol.Order) bool { return o.OrderState != protocol.OrderStateSubmitted })
}

// reserve records our id before the order is sent.
func (p *Platform) reserve(ours string, req bridge.OrderRequest) error {
	err := p.ids.reserve(ours, orderRecord{Account: req.Account, Name: req.Name, Tag: req.StrategyTag,
		Oco: req.Oco, At: p.opts.Now()})
	if errors.Is(err, errDuplicateID) {
		return reject(reasonDuplicate)
	}
	if err != nil {
		return fmt.Errorf("tradovate: the order-id map could not be saved: %w", err)
	}
	p.mu.Lock()
	delete(p.failed, ours) // an id refused before is free again
	p.mu.Unlock()
	return nil
}

// placed settles a placement's answer: the broker's id is bound to ours,
// or the reservation is released when the broker refused (or nothing was
// sent). An outcome unknown keeps the reservation: the order's text
// carries our id, and binds it when the order shows up.
func (p *Platform) placed(ours string, err error, broker int64, failure, errorText string) error {
	switch {
	case errors.Is(err, bridge.ErrOutcomeUnknown):
		p.donePlacing()
		return err
	case err != nil:
		p.ids.release(ours)
		p.donePlacing(ours)
		return err
	case broker == 0:
		p.ids.release(ours)
		p.donePlacing(ours)
		return brokerReject(failure, errorText)
	}
	p.ids.bind(ours, broker)
	p.mu.Lock()
	if p.m != nil && p.m.orders[broker] != nil {
		p.m.orders[broker].ignored = false
	}
	p.mu.Unlock()
	p.donePlacing()
	return nil
}

// afterWrite waits until the broker's events about an order are in the
// mirror (a barrier request on the user socket, then until ready holds or
// WriteWait passes) and returns the order as it stands.
func (p *Platform) afterWrite(ctx context.Context, broker int64, ready func(protocol.Order) bool) (protocol.Order, error) {
	p.barrier(ctx, broker)
	var rec protocol.Order
	var have bool
	p.waitFor(ctx, p.opts.WriteWait, func() bool {
		if p.m == nil {
			return false
		}
		rec, have = p.orderRecordLocked(broker)
		return have && ready(rec)
	})
	if !have {
		// The broker took the order but its events have not come: say
		// what is known.
		ours, _ := p.ourID(broker)
		return protocol.Order{OrderID: ours, OrderState: protocol.OrderStateSubmitted}, nil
	}
	return rec, nil
}

// afterCommand is afterWrite for a command (a cancel or a modification)
// the broker accepted as command cmd: a command report rejecting it, which
// the broker may send after its answer, ends the wait with the rejection
// (its rejectReason).
func (p *Platform) afterCommand(ctx context.Context, broker, cmd int64, ready func(protocol.Order) bool) (protocol.Order, error) {
	rejected := func() (tradovatewire.CommandReport, bool) { // p.mu held
		if p.m == nil || cmd == 0 {
			return tradovatewire.CommandReport{}, false
		}
		r, ok := p.m.reports[cmd]
		return r, ok && r.Rejected()
	}
	rec, err := p.afterWrite(ctx, broker, func(o protocol.Order) bool {
		_, rej := rejected()
		return rej || ready(o)
	})
	p.mu.Lock()
	r, rej := rejected()
	p.mu.Unlock()
	if rej {
		return protocol.Order{}, brokerReject(cmp.Or(r.RejectReason, tradovatewire.ReasonUnknown), "")
	}
	return rec, err
}

// barrier sends a request on the user socket and waits for its reply:
// the events the broker sent before it are applied by then.
func (p *Platform) barrier(ctx context.Context, broker int64) {
	p.mu.Lock()
	sock := p.user
	p.mu.Unlock()
	if sock == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.WriteWait)
	defer cancel()
	_, _ = sock.request(ctx, "order/item", "id="+strconv.FormatInt(broker, 10), nil)
}

// SubmitOCO implements bridge.PairSubmitter with order/placeoco: a and b
// must be for the same account, instrument and quantity; the broker
// cancels one when the other fills. Both orders carry a's OCO id.
func (p *Platform) SubmitOCO(ctx context.Context, a, b bridge.OrderRequest) (protocol.Order, protocol.Order, error) {
	var none protocol.Order
	if err := p.usable(ctx); err != nil {
		return none, none, err
	}
	oco := a.Oco
	a.Oco, b.Oco = "", ""
	oa, err := p.validate(ctx, a)
	if err != nil {
		return none, none, err
	}
	ob, err := p.validate(ctx, b)
	if err != nil {
		return none, none, err
	}
	if oa.account != ob.account || oa.inst.Symbol != ob.inst.Symbol || oa.quantity != ob.quantity ||
		(a.OrderID != "" && a.OrderID == b.OrderID) {
		return none, none, &bridge.RequestError{Reason: reasonOCOPair}
	}
	idA, idB := a.OrderID, b.OrderID
	if idA == "" {
		idA = newOrderID()
	}
	if idB == "" {
		idB = newOrderID()
	}
	a.Oco, b.Oco = oco, oco
	if err := p.reserve(idA, a); err != nil {
		return none, none, err
	}
	if err := p.reserve(idB, b); err != nil {
		p.ids.release(idA)
		return none, none, err
	}
	body := tradovatewire.PlaceOCORequest{PlaceOrderRequest: p.placeRequest(oa, idA), Other: tradovatewire.OtherOrder{
		Action: ob.action, OrderType: ob.typ, Price: ob.limit, StopPrice: ob.stop, PegDifference: ob.peg,
		TimeInForce: ob.tif, Text: idB, ClOrdID: idB}}
	p.startPlacing()
	var res tradovatewire.PlaceOCOResponse
	err = writeError(p.sess.Do(ctx, http.MethodPost, "/order/placeoco", "", body, &res), false)
	failedA := p.placed(idA, err, res.OrderID, res.FailureReason, res.ErrorText)
	if failedA != nil {
		if errors.Is(failedA, bridge.ErrOutcomeUnknown) {
			return none, none, failedA
		}
		p.ids.release(idB)
		p.mu.Lock()
		p.failed[idB] = true
		p.mu.Unlock()
		return none, none, failedA
	}
	p.ids.bind(idB, res.OcoID)
	p.mu.Lock()
	p.flushHeldLocked()
	p.mu.Unlock()
	notSubmitted := func(o protocol.Order) bool { return o.OrderState != protocol.OrderStateSubmitted }
	ra, err := p.afterWrite(ctx, res.OrderID, notSubmitted)
	if err != nil {
		return none, none, err
	}
	rb, err := p.afterWrite(ctx, res.OcoID, notSubmitted)
	return ra, rb, err
}

// target finds an order of an account by our id (or the broker's, for an
// order placed elsewhere).
func (p *Platform) target(ctx context.Context, account, id string) (int64, protocol.Order, error) {
	type found struct {
		broker int64
		rec    protocol.Order
	}
	f, err := readAccount(ctx, p, account, func(m *mirror, a *accountState) found {
		broker := int64(0)
		if rec, ok := p.ids.lookup(id); ok {
			broker = rec.Broker
		} else if n, err := strconv.ParseInt(id, 10, 64); err == nil {
			if _, _, mine := p.ids.ours(n); !mine {
				broker = n
			}
		}
		os := m.orders[broker]
		if broker == 0 || os == nil || os.o.AccountID != a.rec.ID {
			return found{}
		}
		rec, ok := p.orderRecordLocked(broker)
		if !ok {
			return found{}
		}
		return found{broker, rec}
	})
	if err != nil {
		return 0, protocol.Order{}, err
	}
	if f.broker == 0 {
		return 0, protocol.Order{}, fmt.Errorf("tradovate: %w", bridge.ErrOrderNotFound)
	}
	return f.broker, f.rec, nil
}

// CancelOrder implements bridge.Platform.
func (p *Platform) CancelOrder(ctx context.Context, account, orderID string) (protocol.Order, error) {
	if err := p.usable(ctx); err != nil {
		return protocol.Order{}, err
	}
	broker, rec, err := p.target(ctx, account, orderID)
	if err != nil {
		return protocol.Order{}, err
	}
	if protocol.TerminalOrderState(rec.OrderState) {
		return protocol.Order{}, reject(reasonTerminal)
	}
	var res tradovatewire.CommandResponse
	err = writeError(p.sess.Do(ctx, http.MethodPost, "/order/cancelorder", "",
		tradovatewire.CancelOrderRequest{OrderID: broker, IsAutomated: true}, &res), true)
	if err != nil {
		return protocol.Order{}, err
	}
	if res.Failed() {
		return protocol.Order{}, brokerReject(res.FailureReason, res.ErrorText)
	}
	return p.afterCommand(ctx, broker, res.CommandID, func(o protocol.Order) bool { return protocol.TerminalOrderState(o.OrderState) })
}

// ChangeOrder implements bridge.Platform with order/modifyorder, sending
// the order's whole terms with the changes.
func (p *Platform) ChangeOrder(ctx context.Context, req bridge.ChangeRequest) (protocol.Order, error) {
	if err := p.usable(ctx); err != nil {
		return protocol.Order{}, err
	}
	broker, rec, err := p.target(ctx, req.Account, req.OrderID)
	if err != nil {
		return protocol.Order{}, err
	}
	if protocol.TerminalOrderState(rec.OrderState) {
		return protocol.Order{}, reject(reasonTerminal)
	}
	inst, err := p.resolve(ctx, rec.Instrument)
	if err != nil {
		return protocol.Order{}, err
	}
	mod := tradovatewire.ModifyOrderRequest{OrderID: broker, OrderQty: rec.Quantity, OrderType: brokerOrderType(rec.OrderType),
		Price: rec.LimitPrice, StopPrice: rec.StopPrice, TimeInForce: tradovatewire.TIFDay, IsAutomated: true}
	if rec.TimeInForce == protocol.TimeInForceGtc {
		mod.TimeInForce = tradovatewire.TIFGTC
	}
	hasLimit := rec.OrderType == protocol.OrderTypeLimit || rec.OrderType == protocol.OrderTypeStopLimit
	hasStop := rec.OrderType == protocol.OrderTypeStopMarket || rec.OrderType == protocol.OrderTypeStopLimit
	trailing := protocol.TrailingOrderType(rec.OrderType)
	if trailing {
		// The broker keeps the trail; the prices sent are where it stands.
		mod.PegDifference = tradovatewire.PegDifference(rec.OrderAction, rec.TrailDistance)
	}
	switch {
	case trailing && (req.LimitPrice != 0 || req.StopPrice != 0):
		return protocol.Order{}, reject(reasonTrailChange)
	case req.Quantity < 0:
		return protocol.Order{}, reject(reasonQuantity)
	case req.Quantity > 0 && req.Quantity <= rec.Filled:
		return protocol.Order{}, reject(reasonBelowFilled)
	case req.LimitPrice != 0 && !hasLimit:
		return protocol.Order{}, reject(reasonNoLimit)
	case req.StopPrice != 0 && !hasStop:
		return protocol.Order{}, reject(reasonNoStop)
	case req.LimitPrice != 0 && !onGrid(inst, req.LimitPrice):
		return protocol.Order{}, reject(reasonLimit)
	case req.StopPrice != 0 && !onGrid(inst, req.StopPrice):
		return protocol.Order{}, reject(reasonStop)
	}
	if req.Quantity > 0 {
		mod.OrderQty = req.Quantity
	}
	if req.LimitPrice != 0 {
		mod.Price = req.LimitPrice
	}
	if req.StopPrice != 0 {
		mod.StopPrice = req.StopPrice
	}
	var res tradovatewire.CommandResponse
	if err := writeError(p.sess.Do(ctx, http.MethodPost, "/order/modifyorder", "", mod, &res), true); err != nil {
		return protocol.Order{}, err
	}
	if res.Failed() {
		return protocol.Order{}, brokerReject(res.FailureReason, res.ErrorText)
	}
	return p.afterCommand(ctx, broker, res.CommandID, func(o protocol.Order) bool {
		return protocol.TerminalOrderState(o.OrderState) || (o.Quantity == mod.OrderQty &&
			(!hasLimit || o.LimitPrice == mod.Price) && (!hasStop || o.StopPrice == mod.StopPrice))
	})
}

// Flatten implements bridge.Platform over REST alone, from the broker's
// own lists (position/list, order/list), not the mirror: it works while
// the user-data socket is down and when the mirror is behind. With a
// position, the broker's liquidateposition (it cancels the contract's
// working orders and closes the position at market; the closing order is
// named "Close"); without one, the contract's working orders are
// cancelled one by one. While the socket is up it then waits for the
// mirror to show the account flat there; without it, it returns once the
// broker accepted the requests.
func (p *Platform) Flatten(ctx context.Context, account, instrument string) error {
	if err := p.usable(ctx); err != nil {
		return err
	}
	if account == "" {
		return errAccount()
	}
	accts, err := p.brokerAccounts(ctx, account)
	if err != nil {
		return err
	}
	acct := accts[0].ID
	inst, err := p.resolve(ctx, instrument)
	if err != nil {
		return err
	}
	cid, err := p.contractID(ctx, inst)
	if err != nil {
		return err
	}
	rows, err := p.brokerPositions(ctx)
	if err != nil {
		return err
	}
	net := latestNetPos(rows, acct, cid)
	var working []int64
	if net == 0 { // else the liquidation cancels them
		orders, err := p.brokerOrders(ctx)
		if err != nil {
			return err
		}
		working = workingOrders(orders, acct, cid)
	}
	return p.flattenContract(ctx, account, acct, cid, net, working)
}

// flattenContract flattens an account in a contract given the broker's
// net position and working orders there (see Flatten).
func (p *Platform) flattenContract(ctx context.Context, account string, acct, cid int64, netPos int, working []int64) error {
	if netPos == 0 {
		var first error
		for _, id := range working {
			if err := p.cancelForFlatten(ctx, id); err != nil && first == nil {
				first = err
			}
		}
		if first != nil {
			return first
		}
		if len(working) > 0 {
			p.afterFlatten(ctx, acct, cid)
		}
		return nil
	}
	ours := newOrderID()
	if err := p.ids.reserve(ours, orderRecord{Account: account, Name: "Close", At: p.opts.Now()}); err != nil {
		return fmt.Errorf("tradovate: the order-id map could not be saved: %w", err)
	}
	p.startPlacing()
	var res tradovatewire.PlaceOrderResponse
	err := writeError(p.sess.Do(ctx, http.MethodPost, "/order/liquidateposition", "",
		tradovatewire.LiquidatePositionRequest{AccountID: acct, ContractID: cid, IsAutomated: true}, &res), false)
	if err == nil && res.OrderID == 0 && res.ErrorText == "" &&
		(res.FailureReason == "" || res.FailureReason == tradovatewire.ReasonSuccess) {
		// Nothing left to close (the position closed meanwhile): the
		// broker cancelled the contract's orders and placed none.
		p.ids.release(ours)
		p.donePlacing()
		p.afterFlatten(ctx, acct, cid)
		return nil
	}
	if failed := p.placed(ours, err, res.OrderID, res.FailureReason, res.ErrorText); failed != nil {
		return failed
	}
	p.afterFlatten(ctx, acct, cid)
	return nil
}

// FlattenFromBroker implements bridge.BrokerFlattener: Flatten over
// every contract (or instrument's) where the broker's position/list shows
// account (or every account) holding a position or order/list a working
// order, from one read of each list.
func (p *Platform) FlattenFromBroker(ctx context.Context, account, instrument string) ([]protocol.Position, error) {
	if err := p.usable(ctx); err != nil {
		return nil, err
	}
	accts, err := p.brokerAccounts(ctx, account)
	if err != nil {
		return nil, err
	}
	var only int64
	if instrument != "" {
		inst, err := p.resolve(ctx, instrument)
		if err != nil {
			return nil, err
		}
		if only, err = p.contractID(ctx, inst); err != nil {
			return nil, err
		}
	}
	rows, err := p.brokerPositions(ctx)
	if err != nil {
		return nil, err
	}
	orders, err := p.brokerOrders(ctx)
	if err != nil {
		return nil, err
	}
	out := []protocol.Position{}
	var first error
	for _, a := range accts {
		cids := map[int64]bool{}
		for _, r := range rows {
			if r.AccountID == a.ID && (only == 0 || r.ContractID == only) {
				cids[r.ContractID] = true
			}
		}
		for _, o := range orders {
			if o.AccountID == a.ID && (only == 0 || o.ContractID == only) {
				cids[o.ContractID] = true
			}
		}
		ids := sortedIDs(cids)
		p.contracts.ensure(ctx, ids)
		for _, cid := range ids {
			net, working := latestNetPos(rows, a.ID, cid), workingOrders(orders, a.ID, cid)
			if net == 0 && len(working) == 0 {
				continue
			}
			if err := p.flattenContract(ctx, a.Name, a.ID, cid, net, working); err != nil {
				if first == nil {
					first = err
				}
				continue
			}
			if net != 0 {
				pos := protocol.Position{Account: a.Name, InstrumentType: "Future", Quantity: net,
					MarketPosition: protocol.MarketPositionLong}
				if net < 0 {
					pos.Quantity, pos.MarketPosition = -net, protocol.MarketPositionShort
				}
				if c, ok := p.contracts.cached(cid); ok {
					pos.Instrument = c.Name
				}
				out = append(out, pos)
			}
		}
	}
	return out, first
}

// brokerAccounts are the broker's accounts named name (all of them when
// name is empty): from the mirror when there is one, else account/list.
func (p *Platform) brokerAccounts(ctx context.Context, name string) ([]tradovatewire.Account, error) {
	p.mu.Lock()
	var out []tradovatewire.Account
	if p.m != nil {
		for _, id := range p.m.accOrder {
			if a := p.m.accounts[id].rec; name == "" || a.Name == name {
				out = append(out, a)
			}
		}
	}
	p.mu.Unlock()
	if len(out) > 0 {
		return out, nil
	}
	var accts []tradovatewire.Account
	if err := p.sess.Do(ctx, http.MethodGet, "/account/list", "", nil, &accts); err != nil {
		return nil, err
	}
	for _, a := range accts {
		if name == "" || a.Name == name {
			out = append(out, a)
		}
	}
	if len(out) == 0 && name != "" {
		return nil, errAccount()
	}
	return out, nil
}

// brokerPositions reads the broker's position/list.
func (p *Platform) brokerPositions(ctx context.Context) ([]tradovatewire.Position, error) {
	var rows []tradovatewire.Position
	if err := p.sess.Do(ctx, http.MethodGet, "/position/list", "", nil, &rows); err != nil {
		return nil, err
	}
	return rows, nil
}

// brokerOrders reads the broker's order/list.
func (p *Platform) brokerOrders(ctx context.Context) ([]tradovatewire.Order, error) {
	var orders []tradovatewire.Order
	if err := p.sess.Do(ctx, http.MethodGet, "/order/list", "", nil, &orders); err != nil {
		return nil, err
	}
	return orders, nil
}

// latestNetPos is the account's net position in a contract in the
// broker's position rows: the row of the latest trade date.
func latestNetPos(rows []tradovatewire.Position, acct, cid int64) int {
	var latest *tradovatewire.Position
	for i, r := range rows {
		if r.AccountID == acct && r.ContractID == cid && (latest == nil || !tradeDateLess(r.TradeDate, latest.TradeDate)) {
			latest = &rows[i]
		}
	}
	if latest == nil {
		return 0
	}
	return latest.NetPos
}

// workingOrders lists the account's orders in a contract that the
// broker's orders report still working.
func workingOrders(orders []tradovatewire.Order, acct, cid int64) []int64 {
	var out []int64
	for _, o := range orders {
		if o.AccountID != acct || o.ContractID != cid {
			continue
		}
		switch o.OrdStatus {
		case tradovatewire.StatusWorking, tradovatewire.StatusPendingNew, tradovatewire.StatusPendingReplace,
			tradovatewire.StatusSuspended:
			out = append(out, o.ID)
		}
	}
	slices.Sort(out)
	return out
}

// cancelForFlatten cancels one working order for Flatten: an order that
// ended meanwhile (the broker no longer knows it, or answers TooLate) is
// no failure.
func (p *Platform) cancelForFlatten(ctx context.Context, id int64) error {
	var res tradovatewire.CommandResponse
	err := writeError(p.sess.Do(ctx, http.MethodPost, "/order/cancelorder", "",
		tradovatewire.CancelOrderRequest{OrderID: id, IsAutomated: true}, &res), true)
	switch {
	case errors.Is(err, bridge.ErrOrderNotFound):
		return nil
	case err != nil:
		return err
	case res.Failed() && res.FailureReason == "TooLate":
		return nil
	case res.Failed():
		return brokerReject(res.FailureReason, res.ErrorText)
	}
	return nil
}

// afterFlatten waits until the account is flat in the contract with no
// working order there, or WriteWait passes.
func (p *Platform) afterFlatten(ctx context.Context, acct, cid int64) {
	p.mu.Lock()
	up := p.user != nil
	p.mu.Unlock()
	if !up {
		return // no mirror to wait for: the broker accepted
	}
	p.barrier(ctx, 0)
	p.waitFor(ctx, p.opts.WriteWait, func() bool {
		m := p.m
		if m == nil {
			return false
		}
		if m.positions[posKey{acct, cid}].NetPos != 0 {
			return false
		}
		for id, os := range m.orders {
			if os.o.AccountID == acct && os.o.ContractID == cid {
				if rec, ok := p.orderRecordLocked(id); ok && !protocol.TerminalOrderState(rec.OrderState) {
					return false
				}
			}
		}
		return true
	})
}

// Instrument implements bridge.Platform: contracts of package futures'
// roots are described by it; another root's contract the broker knows is
// described by name only.
func (p *Platform) Instrument(ctx context.Context, instrument string) (protocol.InstrumentInfo, error) {
	if err := p.usable(ctx); err != nil {
		return protocol.InstrumentInfo{}, err
	}
	r, err := p.resolve(ctx, instrument)
	if err != nil {
		return protocol.InstrumentInfo{}, err
	}
	if r.Known {
		return r.Contract.Info(p.opts.Now()), nil
	}
	in, _ := protocol.ParseInstrument(r.Name)
	return protocol.InstrumentInfo{Instrument: r.Name, Root: in.Root, Sessions: []protocol.TradingWindow{}}, nil
}

// Quote implements bridge.Platform: the contract's market from the
// market-data socket. A contract not followed yet is subscribed (and
// stays so a while), and the first quote is waited for, for QuoteWait.
func (p *Platform) Quote(ctx context.Context, instrument string) (protocol.Quote, error) {
	if err := p.usable(ctx); err != nil {
		return protocol.Quote{}, err
	}
	r, err := p.resolve(ctx, instrument)
	if err != nil {
		return protocol.Quote{}, err
	}
	cid, err := p.contractID(ctx, r)
	if err != nil {
		return protocol.Quote{}, err
	}
	p.mu.Lock()
	p.md.wanted[cid] = time.Now()
	p.md.kickLocked()
	p.mu.Unlock()
	var q protocol.Quote
	if !p.waitFor(ctx, p.opts.QuoteWait, func() bool {
		var ok bool
		q, ok = p.quoteRecordLocked(cid)
		return ok
	}) {
		if err := p.usable(ctx); err != nil {
			return protocol.Quote{}, err
		}
		return protocol.Quote{}, platformUnavailable(CodeNoMarketData)
	}
	return q, nil
}

// Subscribe implements bridge.Platform. Every instrument is resolved
// before any is subscribed; a contract newly subscribed whose quote is
// known is published at once.
func (p *Platform) Subscribe(ctx context.Context, instruments []string) error {
	ids, err := p.contractIDs(ctx, instruments)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		if p.md.user[id] {
			continue
		}
		p.md.user[id] = true
		if q, ok := p.quoteRecordLocked(id); ok {
			p.feed.Publish(bridge.Event{Kind: bridge.EventQuote, Quote: &q})
		}
	}
	p.md.kickLocked()
	return nil
}

// Unsubscribe implements bridge.Platform.
func (p *Platform) Unsubscribe(ctx context.Context, instruments []string) error {
	ids, err := p.contractIDs(ctx, instruments)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		delete(p.md.user, id)
	}
	p.md.kickLocked()
	return nil
}

// contractIDs resolves instruments to the broker's contract ids.
func (p *Platform) contractIDs(ctx context.Context, instruments []string) ([]int64, error) {
	if err := p.usable(ctx); err != nil {
		return nil, err
	}
	ids := make([]int64, 0, len(instruments))
	for _, in := range instruments {
		r, err := p.resolve(ctx, in)
		if err != nil {
			return nil, err
		}
		id, err := p.contractID(ctx, r)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// Bars implements bridge.Platform: not supported.
func (p *Platform) Bars(ctx context.Context, _ bridge.BarsRequest) (protocol.Bars, error) {
	if err := p.usable(ctx); err != nil {
		return protocol.Bars{}, err
	}
	return protocol.Bars{}, notSupportedBars
}

// AtmTemplates implements bridge.Platform: the broker has none.
func (p *Platform) AtmTemplates(ctx context.Context) ([]protocol.AtmTemplate, error) {
	if err := p.usable(ctx); err != nil {
		return nil, err
	}
	return []protocol.AtmTemplate{}, nil
}

// Strategies implements bridge.Platform: not supported.
func (p *Platform) Strategies(ctx context.Context, _ string) ([]protocol.Strategy, error) {
	if err := p.usable(ctx); err != nil {
		return nil, err
	}
	return nil, notSupportedStrategies
}

// StartStrategy implements bridge.Platform: not supported.
func (p *Platform) StartStrategy(ctx context.Context, _ bridge.StrategyRequest) (protocol.Strategy, error) {
	if err := p.usable(ctx); err != nil {
		return protocol.Strategy{}, err
	}
	return protocol.Strategy{}, notSupportedStrategies
}

// SetStrategyState implements bridge.Platform: not supported.
func (p *Platform) SetStrategyState(ctx context.Context, _, _ string, _ bridge.StrategyAction) (protocol.Strategy, error) {
	if err := p.usable(ctx); err != nil {
		return protocol.Strategy{}, err
	}
	return protocol.Strategy{}, notSupportedStrategies
}
