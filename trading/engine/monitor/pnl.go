package monitor

import (
	"math"

	"tradebridge/protocol"
)

// A monitor counts its session P&L one of four ways, after its
// includeUnrealized and includeCommission switches. The engine follows the
// session high of all four, so that a restart that changes the switches
// is judged against the high as the restarted monitor would count it.
const nCounts = 4

// countOf returns the index of the way m counts P&L.
func countOf(unrealized, commission bool) int {
	i := 0
	if unrealized {
		i |= 1
	}
	if commission {
		i |= 2
	}
	return i
}

// sessionPnl is the session P&L counted the way i says, in dollars
// rounded to the cent: the session's realized P&L before commission
// (grossRealizedProfitLoss), plus the open positions' unrealized P&L when
// it includes them, minus the session's commission when it includes that.
func sessionPnl(item *protocol.AccountItem, i int) float64 {
	pnl := item.GrossRealizedProfitLoss
	if i&1 != 0 {
		pnl += item.UnrealizedProfitLoss
	}
	if i&2 != 0 {
		pnl -= item.Commission
	}
	return math.Round(pnl*100) / 100
}

// platformRestarted reports whether the platform's session figures
// restarted between prev and next: the session commission fell, or the
// session's realized P&L and commission went back to zero. Within one
// session the commission never falls, and neither figure returns to zero
// once a fill was charged.
func platformRestarted(prev, next *protocol.AccountItem) bool {
	if next.Commission < prev.Commission {
		return true
	}
	return next.Commission == 0 && next.GrossRealizedProfitLoss == 0 &&
		(prev.Commission != 0 || prev.GrossRealizedProfitLoss != 0)
}

// verdict judges a monitor's P&L limits: pnl counted its way, and high the
// session high of that count. It returns the reason of the first limit
// reached, in the order loss limit, trailing drawdown, minimum-profit
// drawdown, profit target, or "".
func verdict(m *protocol.Monitor, pnl, high float64) string {
	switch {
	case m.LossLimit.Enabled && pnl <= -m.LossLimit.Amount:
		return reasonLossLimit
	case m.TrailingDrawdown.Enabled && pnl <= round(high-m.TrailingDrawdown.Amount):
		return reasonTrailingDrawdown
	case floorReached(&m.MinimumProfitDrawdown, pnl, high):
		return reasonMinimumProfitDrawdown
	case m.ProfitTarget.Enabled && pnl >= m.ProfitTarget.Amount:
		return reasonProfitTarget
	}
	return ""
}

// floorReached reports whether the minimum-profit drawdown d trips: it is
// enabled, the session high reached its trigger (it is armed), and the P&L
// is at or below its floor. Once armed it stays armed for the session,
// since the session high never falls within one.
func floorReached(d *protocol.ProfitFloor, pnl, high float64) bool {
	return d.Enabled && high >= d.Trigger && pnl <= d.Floor
}

// round rounds a dollar amount to the cent.
func round(v float64) float64 { return math.Round(v*100) / 100 }
