package ninjatrader

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"tradebridge/futures"
	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/ninjatrader/ntwire"
)

// Connections implements bridge.Platform. While the add-on cannot be
// reached the list is empty (not an error), so the agent still connects to
// the relay and reports the platform as it is.
func (p *Platform) Connections(ctx context.Context) ([]protocol.Connection, error) {
	if err := p.usable(ctx); err != nil {
		return nil, err
	}
	if p.viaATI() {
		return p.opts.ATI.Connections(ctx)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sess == nil {
		return []protocol.Connection{}, nil
	}
	out := make([]protocol.Connection, len(p.mirror.connections))
	for i, c := range p.mirror.connections {
		c.Accounts = slices.Clone(c.Accounts)
		out[i] = c
	}
	return out, nil
}

// read runs f on the mirror, or says why there is none.
func read[T any](ctx context.Context, p *Platform, f func(m *mirror) (T, error)) (T, error) {
	if err := p.usable(ctx); err != nil {
		var zero T
		return zero, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sess == nil {
		var zero T
		if p.opts.ATI != nil {
			return zero, unavailable(ReasonNeedsAddon)
		}
		return zero, p.unavailable
	}
	return f(p.mirror)
}

// readAccount runs f on a known account of the mirror.
func readAccount[T any](ctx context.Context, p *Platform, name string, f func(a *accountState) T) (T, error) {
	return read(ctx, p, func(m *mirror) (T, error) {
		a := m.accounts[name]
		if a == nil || !a.known {
			var zero T
			return zero, fmt.Errorf("ninjatrader: %w", bridge.ErrAccountNotFound)
		}
		return f(a), nil
	})
}

// Accounts implements bridge.Platform.
func (p *Platform) Accounts(ctx context.Context) ([]protocol.Account, error) {
	return read(ctx, p, func(m *mirror) ([]protocol.Account, error) {
		out := []protocol.Account{}
		for _, name := range m.names {
			if a := m.accounts[name]; a.known {
				out = append(out, a.rec)
			}
		}
		return out, nil
	})
}

// Account implements bridge.Platform.
func (p *Platform) Account(ctx context.Context, name string) (protocol.Account, error) {
	return readAccount(ctx, p, name, func(a *accountState) protocol.Account { return a.rec })
}

// Watermarks implements bridge.Platform: the session's highs and lows of
// the account's values as the bridge saw them change (NinjaTrader keeps
// none). They start when the bridge first sees the account in a session.
func (p *Platform) Watermarks(ctx context.Context, account string) (protocol.Watermarks, error) {
	now := p.opts.Now()
	return readAccount(ctx, p, account, func(a *accountState) protocol.Watermarks {
		return a.marks.Watermarks(a.rec.Name, figuresOf(a), now)
	})
}

// Positions implements bridge.Platform.
func (p *Platform) Positions(ctx context.Context, account string) ([]protocol.Position, error) {
	if err := p.usable(ctx); err != nil {
		return nil, err
	}
	if p.viaATI() {
		return p.opts.ATI.Positions(ctx, account)
	}
	return readAccount(ctx, p, account, func(a *accountState) []protocol.Position {
		out := make([]protocol.Position, 0, len(a.positions))
		for _, inst := range sortedKeys(a.positions) {
			out = append(out, a.positions[inst])
		}
		return out
	})
}

// Orders implements bridge.Platform: the orders of the current trading
// session and every order still working, oldest first.
func (p *Platform) Orders(ctx context.Context, account string) ([]protocol.Order, error) {
	if err := p.usable(ctx); err != nil {
		return nil, err
	}
	if p.viaATI() {
		return p.opts.ATI.Orders(ctx, account)
	}
	start := protocol.SessionStart(p.opts.Now()).UnixMilli()
	return readAccount(ctx, p, account, func(a *accountState) []protocol.Order {
		out := []protocol.Order{}
		for _, id := range a.orderIDs {
			if o := a.orders[id]; !terminal(o.OrderState) || o.Epoch == 0 || o.Epoch >= start {
				out = append(out, o)
			}
		}
		slices.SortStableFunc(out, func(x, y protocol.Order) int { return cmp.Compare(x.Epoch, y.Epoch) })
		return out
	})
}

// Executions implements bridge.Platform.
func (p *Platform) Executions(ctx context.Context, account string) ([]protocol.Execution, error) {
	start := protocol.SessionStart(p.opts.Now()).UnixMilli()
	return readAccount(ctx, p, account, func(a *accountState) []protocol.Execution {
		out := []protocol.Execution{}
		for _, e := range a.executions {
			if e.Epoch == 0 || e.Epoch >= start {
				out = append(out, e)
			}
		}
		slices.SortStableFunc(out, func(x, y protocol.Execution) int { return cmp.Compare(x.Epoch, y.Epoch) })
		return out
	})
}

// Strategies implements bridge.Platform.
func (p *Platform) Strategies(ctx context.Context, account string) ([]protocol.Strategy, error) {
	return readAccount(ctx, p, account, func(a *accountState) []protocol.Strategy {
		out := make([]protocol.Strategy, 0, len(a.stratIDs))
		for _, id := range a.stratIDs {
			out = append(out, a.strategies[id])
		}
		return out
	})
}

func terminal(state string) bool {
	return state == protocol.OrderStateFilled || state == protocol.OrderStateCancelled || state == protocol.OrderStateRejected
}

// usable refuses a call whose ctx has ended, and every call once the
// Platform is closed.
func (p *Platform) usable(ctx context.Context) error {
	if p.run.Closed() {
		return unavailable(ReasonStopped)
	}
	return ctx.Err()
}

// call sends a request on the ready session and decodes its result.
func (p *Platform) call(ctx context.Context, method string, params, out any, write bool) error {
	if err := p.usable(ctx); err != nil {
		return err
	}
	s, err := p.ready()
	if err != nil {
		return err
	}
	raw, err := s.request(ctx, method, params, write)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("ninjatrader: the add-on's %s result does not decode: %w", method, err)
	}
	return nil
}

// SubmitOrder implements bridge.Platform. The order carries the agent's
// id (one is made when the request has none) in its NinjaTrader name. A
// trailing order type is a *bridge.NotSupportedError (errNoTrailing),
// whether the add-on or the ATI files are in use.
func (p *Platform) SubmitOrder(ctx context.Context, req bridge.OrderRequest) (protocol.Order, error) {
	if typ, _ := protocol.NormalizeOrderType(req.OrderType); protocol.TrailingOrderType(typ) {
		return protocol.Order{}, errNoTrailing
	}
	if err := p.usable(ctx); err != nil {
		return protocol.Order{}, err
	}
	inst, err := p.contractName(req.Instrument)
	if err != nil {
		return protocol.Order{}, err
	}
	if req.OrderID == "" {
		req.OrderID = newOrderID()
	}
	if !ntwire.ValidOrderID(req.OrderID) {
		return protocol.Order{}, &bridge.RejectError{Reason: "the order id is not one NinjaTrader can carry (1-64 letters, digits, '.', '_', ':' or '-')"}
	}
	if strings.Contains(req.Name, ntwire.NameSeparator) || strings.Contains(req.StrategyTag, ntwire.NameSeparator) {
		return protocol.Order{}, &bridge.RequestError{Reason: "the signal name and the strategy tag may not contain '|'"}
	}
	if !ntwire.NameFits(req.OrderID, req.StrategyTag) {
		return protocol.Order{}, &bridge.RequestError{Reason: "the order id and the strategy tag together are too long for a NinjaTrader order name (50 characters)"}
	}
	req.Instrument = inst
	if p.viaATI() {
		return p.opts.ATI.SubmitOrder(ctx, req)
	}
	var res ntwire.OrderResult
	err = p.call(ctx, ntwire.MethodSubmitOrder, ntwire.SubmitOrderParams{
		Account: req.Account, Instrument: inst, Action: req.Action, OrderType: req.OrderType,
		Quantity: req.Quantity, LimitPrice: req.LimitPrice, StopPrice: req.StopPrice,
		TimeInForce: req.TimeInForce, Oco: req.Oco, OrderID: req.OrderID, Name: req.Name,
		StrategyTag: req.StrategyTag, AtmTemplate: req.AtmTemplate,
	}, &res, true)
	return res.Order, err
}

// errNoTrailing answers a trailing order: NinjaTrader's orders (through the
// add-on or the ATI files) have no trailing types; its trailing stops are
// an ATM template's.
var errNoTrailing = &bridge.NotSupportedError{What: "trailing stops",
	Reason: "NinjaTrader trails stops only through an ATM template: name one (strategy) whose stop trails, or place a stop and move it"}

// CancelOrder implements bridge.Platform.
func (p *Platform) CancelOrder(ctx context.Context, account, orderID string) (protocol.Order, error) {
	if err := p.usable(ctx); err != nil {
		return protocol.Order{}, err
	}
	if p.viaATI() {
		return p.opts.ATI.CancelOrder(ctx, account, orderID)
	}
	var res ntwire.OrderResult
	err := p.call(ctx, ntwire.MethodCancelOrder, ntwire.OrderRef{Account: account, OrderID: orderID}, &res, true)
	return res.Order, err
}

// ChangeOrder implements bridge.Platform.
func (p *Platform) ChangeOrder(ctx context.Context, req bridge.ChangeRequest) (protocol.Order, error) {
	if err := p.usable(ctx); err != nil {
		return protocol.Order{}, err
	}
	if p.viaATI() {
		return p.opts.ATI.ChangeOrder(ctx, req)
	}
	var res ntwire.OrderResult
	err := p.call(ctx, ntwire.MethodChangeOrder, ntwire.ChangeOrderParams{Account: req.Account, OrderID: req.OrderID,
		Quantity: req.Quantity, LimitPrice: req.LimitPrice, StopPrice: req.StopPrice}, &res, true)
	return res.Order, err
}

// Flatten implements bridge.Platform.
func (p *Platform) Flatten(ctx context.Context, account, instrument string) error {
	if err := p.usable(ctx); err != nil {
		return err
	}
	inst, err := p.contractName(instrument)
	if err != nil {
		return err
	}
	if p.viaATI() {
		return p.opts.ATI.Flatten(ctx, account, inst)
	}
	return p.call(ctx, ntwire.MethodFlatten, ntwire.FlattenParams{Account: account, Instrument: inst}, nil, true)
}

// Instrument implements bridge.Platform.
func (p *Platform) Instrument(ctx context.Context, instrument string) (protocol.InstrumentInfo, error) {
	inst, err := p.contractName(instrument)
	if err != nil {
		return protocol.InstrumentInfo{}, err
	}
	var info protocol.InstrumentInfo
	err = p.call(ctx, ntwire.MethodInstrument, ntwire.InstrumentParams{Instrument: inst}, &info, false)
	return info, err
}

// Quote implements bridge.Platform.
func (p *Platform) Quote(ctx context.Context, instrument string) (protocol.Quote, error) {
	inst, err := p.contractName(instrument)
	if err != nil {
		return protocol.Quote{}, err
	}
	var q protocol.Quote
	err = p.call(ctx, ntwire.MethodQuote, ntwire.InstrumentParams{Instrument: inst}, &q, false)
	return q, err
}

// Subscribe implements bridge.Platform.
func (p *Platform) Subscribe(ctx context.Context, instruments []string) error {
	return p.subscription(ctx, ntwire.MethodSubscribe, instruments)
}

// Unsubscribe implements bridge.Platform.
func (p *Platform) Unsubscribe(ctx context.Context, instruments []string) error {
	return p.subscription(ctx, ntwire.MethodUnsubscribe, instruments)
}

func (p *Platform) subscription(ctx context.Context, method string, instruments []string) error {
	names := make([]string, 0, len(instruments))
	for _, in := range instruments {
		name, err := p.contractName(in)
		if err != nil {
			return err
		}
		names = append(names, name)
	}
	return p.call(ctx, method, ntwire.InstrumentsParams{Instruments: names}, nil, false)
}

// Bars implements bridge.Platform.
func (p *Platform) Bars(ctx context.Context, req bridge.BarsRequest) (protocol.Bars, error) {
	inst, err := p.contractName(req.Instrument)
	if err != nil {
		return protocol.Bars{}, err
	}
	params := ntwire.BarsParams{Instrument: inst, PeriodType: req.PeriodType, Period: req.Period,
		DaysBack: req.DaysBack, Limit: req.Limit}
	if !req.From.IsZero() {
		params.From = req.From.UTC().Format(time.RFC3339Nano)
	}
	if !req.To.IsZero() {
		params.To = req.To.UTC().Format(time.RFC3339Nano)
	}
	var bars protocol.Bars
	err = p.call(ctx, ntwire.MethodBars, params, &bars, false)
	return bars, err
}

// AtmTemplates implements bridge.Platform.
func (p *Platform) AtmTemplates(ctx context.Context) ([]protocol.AtmTemplate, error) {
	var res ntwire.AtmTemplatesResult
	err := p.call(ctx, ntwire.MethodAtmTemplates, nil, &res, false)
	return orEmpty(res.Templates), err
}

// StartStrategy implements bridge.Platform.
func (p *Platform) StartStrategy(ctx context.Context, req bridge.StrategyRequest) (protocol.Strategy, error) {
	inst, err := p.contractName(req.Instrument)
	if err != nil {
		return protocol.Strategy{}, err
	}
	var res ntwire.StrategyResult
	err = p.call(ctx, ntwire.MethodStartStrategy, ntwire.StartStrategyParams{Account: req.Account, Class: req.Class,
		Instrument: inst, Mode: req.Mode, PeriodType: req.PeriodType, Period: req.Period, Parameters: req.Parameters}, &res, true)
	return res.Strategy, err
}

// SetStrategyState implements bridge.Platform.
func (p *Platform) SetStrategyState(ctx context.Context, account, id string, action bridge.StrategyAction) (protocol.Strategy, error) {
	var res ntwire.StrategyResult
	err := p.call(ctx, ntwire.MethodSetStrategyState, ntwire.StrategyStateParams{Account: account, ID: id, Action: string(action)}, &res, true)
	return res.Strategy, err
}

// newOrderID makes an order id for an order whose request has none.
func newOrderID() string {
	return "nt-" + strings.ToLower(rand.Text()[:20])
}

// replyError turns an add-on error into the bridge's errors.
func replyError(e *ntwire.Error) error {
	wrap := func(sentinel error) error { return fmt.Errorf("ninjatrader: %w", sentinel) }
	switch e.Code {
	case ntwire.CodeAccountNotFound:
		return wrap(bridge.ErrAccountNotFound)
	case ntwire.CodeOrderNotFound:
		return wrap(bridge.ErrOrderNotFound)
	case ntwire.CodeInstrumentUnknown:
		cause := e.Cause
		if cause == "" {
			cause = bridge.InstrumentUnknownRoot
		}
		return wrap(&bridge.InstrumentError{Cause: cause, Root: e.Root, Months: e.Months, Front: e.Front})
	case ntwire.CodeOrderRejected:
		reason := e.Message
		if reason == "" {
			reason = "NinjaTrader rejected the order"
		}
		return &bridge.RejectError{Reason: reason}
	case ntwire.CodeTemplateNotFound:
		return wrap(bridge.ErrTemplateNotFound)
	case ntwire.CodeStrategyNotFound:
		return wrap(bridge.ErrStrategyNotFound)
	case ntwire.CodeStrategyClassUnknown:
		return wrap(bridge.ErrStrategyClass)
	case ntwire.CodeStrategyTerminal:
		return wrap(bridge.ErrStrategyTerminal)
	case ntwire.CodeBadRequest:
		reason := e.Message
		if reason == "" {
			reason = "NinjaTrader's add-on refused the request's parameters"
		}
		return &bridge.RequestError{Reason: reason}
	case ntwire.CodeNotConnected:
		return wrap(&bridge.UnavailableError{Code: "account_connection_down",
			Reason: "the account's connection in NinjaTrader is not connected"})
	}
	return fmt.Errorf("ninjatrader: %w", e)
}

// contractName turns an instrument in any accepted form into the contract
// name the add-on takes ("ES 12-26"). Roots of package futures resolve by
// its rules (the front month, the one-digit year), as on every platform of
// the agent, and their refusals are futures'; a root futures does not know
// goes to NinjaTrader as written, a month code turned into a contract.
func (p *Platform) contractName(s string) (string, error) {
	now := p.opts.Now()
	c, err := futures.Resolve(s, now)
	var re *futures.ResolveError
	switch {
	case err == nil:
		return c.Name, nil
	case !errors.As(err, &re) || re.Cause != futures.CauseUnknownRoot:
		return "", fmt.Errorf("ninjatrader: %w", bridge.InstrumentErrorFrom(err))
	}
	in, err := protocol.ParseInstrument(protocol.NormalizeInstrument(s))
	if err != nil {
		return "", fmt.Errorf("ninjatrader: %w", &bridge.InstrumentError{Cause: bridge.InstrumentMalformed})
	}
	if in.Form == protocol.InstrumentMonthCode {
		return protocol.ContractName(in.Root, in.Month, futures.ContractYear(in, now)), nil
	}
	return in.String(), nil
}
