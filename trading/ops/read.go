package ops

import (
	"context"
	"strings"
	"time"

	"tradebridge/protocol"
)

// ListAccounts returns every account.
func (o *Ops) ListAccounts(ctx context.Context, _ protocol.NoArgs) ([]protocol.Account, error) {
	accts, err := o.p.Accounts(ctx)
	if err != nil {
		return nil, wireError(err)
	}
	if accts == nil {
		accts = []protocol.Account{}
	}
	return accts, nil
}

// GetAccountSummary returns a snapshot of every account with its open
// positions and working orders.
func (o *Ops) GetAccountSummary(ctx context.Context, _ protocol.NoArgs) (protocol.AccountSummary, error) {
	now := o.opts.Now()
	res := protocol.AccountSummary{Accounts: []protocol.AccountSnapshot{}, Time: protocol.FormatTime(now), Epoch: now.UnixMilli()}
	accts, err := o.p.Accounts(ctx)
	if err != nil {
		return res, wireError(err)
	}
	for _, a := range accts {
		snap := protocol.AccountSnapshot{Account: a}
		if snap.Positions, err = o.positions(ctx, a.Name); err != nil {
			return res, err
		}
		if snap.Orders, err = o.orders(ctx, a.Name, true, 0); err != nil {
			return res, err
		}
		res.Accounts = append(res.Accounts, snap)
	}
	return res, nil
}

// GetAccount returns one account.
func (o *Ops) GetAccount(ctx context.Context, a protocol.AccountArgs) (protocol.Account, error) {
	if err := account(a.Account); err != nil {
		return protocol.Account{}, err
	}
	acct, err := o.p.Account(ctx, a.Account)
	return acct, wireError(err)
}

// GetWatermarks returns the account's session highs and lows.
func (o *Ops) GetWatermarks(ctx context.Context, a protocol.AccountArgs) (protocol.Watermarks, error) {
	if err := account(a.Account); err != nil {
		return protocol.Watermarks{}, err
	}
	w, err := o.p.Watermarks(ctx, a.Account)
	return w, wireError(err)
}

// ListPositions returns the account's open positions; each carries the
// strategy tag that owns it, if any.
func (o *Ops) ListPositions(ctx context.Context, a protocol.AccountArgs) ([]protocol.Position, error) {
	if err := account(a.Account); err != nil {
		return nil, err
	}
	return o.positions(ctx, a.Account)
}

// positions returns the account's open positions, each with the strategy
// tag that owns it (as of the platform's orders now; the book itself only
// changes under a key's lock, in writes).
func (o *Ops) positions(ctx context.Context, account string) ([]protocol.Position, error) {
	ps, err := o.p.Positions(ctx, account)
	if err != nil {
		return nil, wireError(err)
	}
	out := make([]protocol.Position, 0, len(ps))
	var orders []protocol.Order
	for _, p := range ps {
		k := key{account, p.Instrument}
		if p.Tag == "" && o.book.owner(k) != "" {
			if orders == nil {
				if orders, err = o.p.Orders(ctx, account); err != nil {
					return nil, wireError(err)
				}
			}
			var mine []protocol.Order
			for _, ord := range orders {
				if ord.Instrument == p.Instrument {
					mine = append(mine, ord)
				}
			}
			p.Tag, _ = o.book.peek(k, signedQty(p), mine)
		}
		out = append(out, p)
	}
	return out, nil
}

// GetPosition returns the account's position in the instrument, or a Flat
// record when it holds none.
func (o *Ops) GetPosition(ctx context.Context, a protocol.PositionArgs) (protocol.Position, error) {
	var miss fields
	miss.need("account", strings.TrimSpace(a.Account) != "")
	miss.need("instrument", strings.TrimSpace(a.Instrument) != "")
	if err := miss.err(); err != nil {
		return protocol.Position{}, err
	}
	if err := account(a.Account); err != nil {
		return protocol.Position{}, err
	}
	info, err := o.resolve(ctx, "instrument", a.Instrument)
	if err != nil {
		return protocol.Position{}, err
	}
	ps, err := o.positions(ctx, a.Account)
	if err != nil {
		return protocol.Position{}, err
	}
	for _, p := range ps {
		if p.Instrument == info.Instrument {
			return p, nil
		}
	}
	return flatPosition(a.Account, info.Instrument), nil
}

func flatPosition(account, instrument string) protocol.Position {
	return protocol.Position{Account: account, Instrument: instrument, InstrumentType: "Future",
		MarketPosition: protocol.MarketPositionFlat}
}

// lookback checks a lookbackTime argument and returns it in seconds.
func lookback(v *int) (int, error) {
	if v == nil {
		return protocol.DefaultLookbackSeconds, nil
	}
	if *v < 0 || *v > protocol.MaxLookbackSeconds {
		return 0, invalid("lookbackTime must be between 0 and 900 seconds")
	}
	return *v, nil
}

// ListOrders returns the account's working orders, and with activeOnly
// false also those that ended within lookbackTime seconds.
func (o *Ops) ListOrders(ctx context.Context, a protocol.ListOrdersArgs) ([]protocol.Order, error) {
	if err := account(a.Account); err != nil {
		return nil, err
	}
	lb, err := lookback(a.LookbackTime)
	if err != nil {
		return nil, err
	}
	return o.orders(ctx, a.Account, a.ActiveOnly == nil || *a.ActiveOnly, lb)
}

// GetAllOrders is ListOrders over every account.
func (o *Ops) GetAllOrders(ctx context.Context, a protocol.AllOrdersArgs) ([]protocol.Order, error) {
	lb, err := lookback(a.LookbackTime)
	if err != nil {
		return nil, err
	}
	accounts, err := o.accounts(ctx, "")
	if err != nil {
		return nil, err
	}
	out := []protocol.Order{}
	for _, acct := range accounts {
		orders, err := o.orders(ctx, acct, a.ActiveOnly == nil || *a.ActiveOnly, lb)
		if err != nil {
			return nil, err
		}
		out = append(out, orders...)
	}
	return out, nil
}

// orders returns the account's working orders and, unless activeOnly, the
// orders that ended within lb seconds. An ended order's time is its last
// fill's, else its submission's (platforms report no cancel time).
func (o *Ops) orders(ctx context.Context, account string, activeOnly bool, lb int) ([]protocol.Order, error) {
	all, err := o.p.Orders(ctx, account)
	if err != nil {
		return nil, wireError(err)
	}
	var lastFill map[string]int64
	if !activeOnly {
		execs, err := o.p.Executions(ctx, account)
		if err != nil {
			return nil, wireError(err)
		}
		lastFill = make(map[string]int64, len(execs))
		for _, e := range execs {
			lastFill[e.OrderID] = max(lastFill[e.OrderID], e.Epoch)
		}
	}
	since := o.opts.Now().Add(-time.Duration(lb) * time.Second).UnixMilli()
	out := []protocol.Order{}
	for _, ord := range all {
		if !protocol.TerminalOrderState(ord.OrderState) {
			out = append(out, ord)
			continue
		}
		if !activeOnly && max(ord.Epoch, lastFill[ord.OrderID]) >= since {
			out = append(out, ord)
		}
	}
	return out, nil
}

// GetOrder returns one order, found by its current or original id, on the
// account or (without account) on any account.
func (o *Ops) GetOrder(ctx context.Context, a protocol.OrderArgs) (protocol.Order, error) {
	if err := checkOrderID(a.OrderID); err != nil {
		return protocol.Order{}, err
	}
	if a.Account != "" {
		if err := account(a.Account); err != nil {
			return protocol.Order{}, err
		}
	}
	return o.findOrder(ctx, a.Account, a.OrderID)
}

// ListExecutions returns the account's fills of the last lookbackTime
// seconds.
func (o *Ops) ListExecutions(ctx context.Context, a protocol.ListExecutionsArgs) ([]protocol.Execution, error) {
	if err := account(a.Account); err != nil {
		return nil, err
	}
	lb, err := lookback(a.LookbackTime)
	if err != nil {
		return nil, err
	}
	execs, err := o.p.Executions(ctx, a.Account)
	if err != nil {
		return nil, wireError(err)
	}
	since := o.opts.Now().Add(-time.Duration(lb) * time.Second).UnixMilli()
	out := []protocol.Execution{}
	for _, e := range execs {
		if e.Epoch >= since {
			out = append(out, e)
		}
	}
	return out, nil
}

// GetExecutionsByOrderId returns the fills of an order, matching its
// current and its original id (and every id between, when the platform
// changed it more than once), on the account or on every account.
func (o *Ops) GetExecutionsByOrderId(ctx context.Context, a protocol.OrderArgs) ([]protocol.Execution, error) {
	if err := checkOrderID(a.OrderID); err != nil {
		return nil, err
	}
	if a.Account != "" {
		if err := account(a.Account); err != nil {
			return nil, err
		}
	}
	ids := map[string]bool{}
	for _, id := range o.ids.all(a.OrderID) {
		ids[id] = true
	}
	accounts, err := o.accounts(ctx, a.Account)
	if err != nil {
		return nil, err
	}
	out := []protocol.Execution{}
	for _, acct := range accounts {
		execs, err := o.p.Executions(ctx, acct)
		if err != nil {
			return nil, wireError(err)
		}
		for _, e := range execs {
			if ids[e.OrderID] {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// GetAllPositions returns the open positions of every account; with
// includeFlat also a Flat record for every account and instrument that
// traded or had an order this session and is flat now.
func (o *Ops) GetAllPositions(ctx context.Context, a protocol.AllPositionsArgs) ([]protocol.Position, error) {
	accounts, err := o.accounts(ctx, "")
	if err != nil {
		return nil, err
	}
	out := []protocol.Position{}
	for _, acct := range accounts {
		ps, err := o.positions(ctx, acct)
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
		if !a.IncludeFlat {
			continue
		}
		open := map[string]bool{}
		for _, p := range ps {
			open[p.Instrument] = true
		}
		orders, err := o.p.Orders(ctx, acct)
		if err != nil {
			return nil, wireError(err)
		}
		for _, ord := range orders {
			if !open[ord.Instrument] {
				open[ord.Instrument] = true
				out = append(out, flatPosition(acct, ord.Instrument))
			}
		}
	}
	return out, nil
}

// GetAtmTemplates returns the platform's ATM templates.
func (o *Ops) GetAtmTemplates(ctx context.Context, _ protocol.NoArgs) ([]protocol.AtmTemplate, error) {
	ts, err := o.p.AtmTemplates(ctx)
	if err != nil {
		return nil, wireError(err)
	}
	if ts == nil {
		ts = []protocol.AtmTemplate{}
	}
	return ts, nil
}
