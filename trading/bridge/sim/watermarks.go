package sim

import (
	"context"
	"time"

	"tradebridge/protocol"
)

// figures are an account's current values that watermarks follow.
type figures struct {
	sessionNet float64 // session realized P&L, net of commission
	unrealized float64
	netLiq     float64
	totalNet   float64 // all-time realized P&L, net of commission
	positions  int
}

// pnl is the session P&L the watermarks follow: session realized (net)
// plus unrealized.
func (f figures) pnl() float64 { return cents(f.sessionNet + f.unrealized) }

// figures computes an account's values at the current prices.
func (p *Platform) figures(a *account) figures {
	var unrealized float64
	for _, pos := range a.sortedPositions() {
		unrealized += pos.unrealized(p.markets[pos.c.Name])
	}
	totalNet := cents(a.grossRealized - a.commission)
	unrealized = cents(unrealized)
	return figures{
		sessionNet: cents(a.sessionGross - a.sessionCommission),
		unrealized: unrealized,
		netLiq:     cents(cents(p.startingCash+totalNet) + unrealized),
		totalNet:   totalNet,
		positions:  len(a.positions),
	}
}

// marks are an account's session highs and lows.
type marks struct {
	pnlHigh, pnlLow       float64
	netLiqHigh, netLiqLow float64
	unrealHigh, unrealLow float64
}

// reset starts the marks at the current figures.
func (m *marks) reset(f figures) {
	pnl := f.pnl()
	*m = marks{pnl, pnl, f.netLiq, f.netLiq, f.unrealized, f.unrealized}
}

// observe widens the marks to the current figures.
func (m *marks) observe(f figures) {
	pnl := f.pnl()
	m.pnlHigh, m.pnlLow = max(m.pnlHigh, pnl), min(m.pnlLow, pnl)
	m.netLiqHigh, m.netLiqLow = max(m.netLiqHigh, f.netLiq), min(m.netLiqLow, f.netLiq)
	m.unrealHigh, m.unrealLow = max(m.unrealHigh, f.unrealized), min(m.unrealLow, f.unrealized)
}

// observeLocked updates an account's watermarks at the current prices.
// observeLocked brings the account's watermarks up to the market and,
// when its unrealized P&L moved since the account was last published,
// publishes it (EventAccount), as NinjaTrader does on every change: the
// agent's monitors follow the unrealized P&L by these events.
func (p *Platform) observeLocked(a *account) {
	f := p.figures(a)
	a.marks.observe(f)
	switch {
	case p.events.Readers() == 0:
		a.unrealSent = f.unrealized // nobody to tell; a reader is told of the next move
	case f.unrealized != a.unrealSent:
		p.emitAccount(a)
	}
}

// Watermarks returns the account's session highs and lows of P&L, net
// liquidation and unrealized P&L, with the current figures they follow.
func (p *Platform) Watermarks(ctx context.Context, account string) (protocol.Watermarks, error) {
	return locked(ctx, p, func(_ time.Time) (protocol.Watermarks, error) {
		a, err := p.account(account)
		if err != nil {
			return protocol.Watermarks{}, err
		}
		f := p.figures(a)
		a.marks.observe(f)
		m := a.marks
		return protocol.Watermarks{
			Account: a.name,
			Watermarks: protocol.WatermarkValues{
				PnlHigh: m.pnlHigh, PnlLow: m.pnlLow,
				NetLiqHigh: m.netLiqHigh, NetLiqLow: m.netLiqLow,
				UnrealHigh: m.unrealHigh, UnrealLow: m.unrealLow,
			},
			Stats: protocol.WatermarkStats{
				Pnl:        f.pnl(),
				Realized:   f.sessionNet,
				Unrealized: f.unrealized,
				Total:      cents(f.totalNet + f.unrealized),
				NetLiq:     f.netLiq,
				PosCount:   f.positions,
				Commission: cents(a.sessionCommission),
			},
			SessionStart: protocol.FormatTime(p.sessionStart),
		}, nil
	})
}
