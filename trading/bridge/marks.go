package bridge

import (
	"math"
	"time"

	"tradebridge/protocol"
)

// Figures are an account's current values that its watermarks follow,
// for platforms that keep no watermarks of their own (NinjaTrader,
// Tradovate): the bridge computes them from the account's values as the
// platform reports them, and a Marks follows them.
type Figures struct {
	// Realized is the session's realized P&L.
	Realized float64
	// Unrealized is the open positions' P&L at the latest prices.
	Unrealized float64
	// NetLiq is the account's net liquidation value.
	NetLiq float64
	// Commission is the session's commission.
	Commission float64
	// Positions counts the open positions.
	Positions int
}

// Pnl is the session P&L the watermarks follow: realized plus
// unrealized, in cents.
func (f Figures) Pnl() float64 { return roundCents(f.Realized + f.Unrealized) }

// Marks are an account's session highs and lows of P&L, net liquidation
// and unrealized P&L, for platforms that keep no watermarks of their own:
// the bridge observes the account's Figures whenever they may have
// changed, and the marks widen to them. They start at the first
// observation of a trading session (protocol.SessionStart) and start
// afresh in the next. The zero value has seen nothing. A Marks is not
// safe for concurrent use; the bridge guards it with its own lock.
type Marks struct {
	session               time.Time // the trading session they belong to
	pnlHigh, pnlLow       float64
	netLiqHigh, netLiqLow float64
	unrealHigh, unrealLow float64
	started               bool
}

// Observe widens the marks to f, seen at now, starting them afresh at f
// when now is in a later trading session than the marks.
func (k *Marks) Observe(f Figures, now time.Time) {
	start := protocol.SessionStart(now)
	pnl := f.Pnl()
	if !k.started || !k.session.Equal(start) {
		*k = Marks{session: start, started: true, pnlHigh: pnl, pnlLow: pnl, netLiqHigh: f.NetLiq,
			netLiqLow: f.NetLiq, unrealHigh: f.Unrealized, unrealLow: f.Unrealized}
		return
	}
	k.pnlHigh, k.pnlLow = max(k.pnlHigh, pnl), min(k.pnlLow, pnl)
	k.netLiqHigh, k.netLiqLow = max(k.netLiqHigh, f.NetLiq), min(k.netLiqLow, f.NetLiq)
	k.unrealHigh, k.unrealLow = max(k.unrealHigh, f.Unrealized), min(k.unrealLow, f.Unrealized)
}

// Watermarks observes f at now (see Observe) and returns the account's
// watermarks record: the marks, with f as its current values.
func (k *Marks) Watermarks(account string, f Figures, now time.Time) protocol.Watermarks {
	k.Observe(f, now)
	return protocol.Watermarks{
		Account: account,
		Watermarks: protocol.WatermarkValues{PnlHigh: k.pnlHigh, PnlLow: k.pnlLow,
			NetLiqHigh: k.netLiqHigh, NetLiqLow: k.netLiqLow, UnrealHigh: k.unrealHigh, UnrealLow: k.unrealLow},
		Stats: protocol.WatermarkStats{Pnl: f.Pnl(), Realized: f.Realized, Unrealized: f.Unrealized,
			Total: f.Pnl(), NetLiq: f.NetLiq, PosCount: f.Positions, Commission: f.Commission},
		SessionStart: protocol.FormatTime(k.session),
	}
}

func roundCents(x float64) float64 { return math.Round(x*100) / 100 }
