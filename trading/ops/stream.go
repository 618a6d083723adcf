package ops

import (
	"context"
	"slices"
	"sync"

	"tradebridge/protocol"
)

// subscriptions is the set of contracts the relay streams quotes for.
type subscriptions struct {
	mu  sync.Mutex
	set []string // resolved contract names, sorted
}

// SetSubscriptions makes the platform's quote subscription exactly the
// given instruments (the relay's internal FnSetSubscriptions): it resolves
// each, subscribes the new ones and unsubscribes the ones no longer asked
// for. Instruments the platform does not know are reported, not fatal, so
// one bad instrument of one client does not stop the others' quotes.
func (o *Ops) SetSubscriptions(ctx context.Context, a protocol.SubscriptionsArgs) (protocol.SubscriptionsResult, error) {
	if len(a.Instruments) > maxSubscriptions {
		return protocol.SubscriptionsResult{}, invalid("too many instruments to stream")
	}
	res := protocol.SubscriptionsResult{Instruments: []string{}, Resolved: make(map[string]string, len(a.Instruments))}
	want := make([]string, 0, len(a.Instruments))
	for _, in := range a.Instruments {
		info, err := o.p.Instrument(ctx, in)
		if err != nil {
			if ctx.Err() != nil {
				return protocol.SubscriptionsResult{}, wireError(err)
			}
			res.Unknown = append(res.Unknown, in)
			continue
		}
		want = append(want, info.Instrument)
		res.Resolved[in] = info.Instrument
	}
	slices.Sort(want)
	want = slices.Compact(want)

	o.subs.mu.Lock()
	defer o.subs.mu.Unlock()
	var add, drop []string
	for _, in := range want {
		if _, found := slices.BinarySearch(o.subs.set, in); !found {
			add = append(add, in)
		}
	}
	for _, in := range o.subs.set {
		if _, found := slices.BinarySearch(want, in); !found {
			drop = append(drop, in)
		}
	}
	if len(add) > 0 {
		if err := o.p.Subscribe(ctx, add); err != nil {
			return protocol.SubscriptionsResult{}, wireError(err)
		}
	}
	if len(drop) > 0 {
		if err := o.p.Unsubscribe(ctx, drop); err != nil {
			// The new ones are subscribed; keep them in the set so a
			// retry only has the drops left to do.
			o.subs.set = slices.Sorted(slices.Values(append(slices.Clone(o.subs.set), add...)))
			return protocol.SubscriptionsResult{}, wireError(err)
		}
	}
	o.subs.set = want
	res.Instruments = append(res.Instruments, want...)
	return res, nil
}

// maxSubscriptions bounds the instruments streamed at once.
const maxSubscriptions = 500

// GetPnl returns every account's P&L and open positions (the relay's
// internal FnGetPnl, for the stream API's pnlUpdate frames).
func (o *Ops) GetPnl(ctx context.Context, _ protocol.NoArgs) (protocol.PnlSnapshot, error) {
	now := o.opts.Now()
	snap := protocol.PnlSnapshot{Epoch: now.UnixMilli(), Accounts: []protocol.PnlAccount{}}
	accts, err := o.p.Accounts(ctx)
	if err != nil {
		return snap, wireError(err)
	}
	for _, a := range accts {
		ps, err := o.positions(ctx, a.Name)
		if err != nil {
			return snap, err
		}
		snap.Accounts = append(snap.Accounts, protocol.PnlAccount{
			Account:              a.Name,
			RealizedProfitLoss:   a.Item.RealizedProfitLoss,
			UnrealizedProfitLoss: a.Item.UnrealizedProfitLoss,
			TotalProfitLoss:      a.Item.RealizedProfitLoss + a.Item.UnrealizedProfitLoss,
			NetLiquidation:       a.Item.NetLiquidation,
			CashValue:            a.Item.CashValue,
			Positions:            ps,
		})
	}
	return snap, nil
}
