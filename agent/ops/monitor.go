package ops

import (
	"context"
	"math"

	"tradebridge/protocol"
)

// Reasons of a protocol.RestartVerdict: the JSON names of the monitor's
// limits.
const (
	reasonLossLimit    = "lossLimit"
	reasonProfitTarget = "profitTarget"
)

// CheckMonitorRestart is the fallback answer to the relay's internal
// FnCheckMonitorRestart, for an agent that runs no monitor engine: whether
// the monitor, restarted with the given settings, would stop again at once
// because the account's session P&L (see sessionPnl) already reached an
// enabled limit: the loss limit (P&L at or below -amount) or the profit
// target (P&L at or above amount). It changes nothing.
//
// The monitor engine (agent/engine/monitor, Engine.CheckRestart) answers
// for the agent when it runs: it also judges the trailing drawdown, which
// needs the session high of the P&L as the monitor counts it (kept by the
// engine, not the platform), and the monitor's windows. This fallback
// never refuses a restart for those.
func (o *Ops) CheckMonitorRestart(ctx context.Context, a protocol.RestartCheck) (protocol.RestartVerdict, error) {
	if a.Monitor.Account == "" {
		return protocol.RestartVerdict{}, missing("monitor.account")
	}
	if err := text("monitor.account", a.Monitor.Account, maxNameLen); err != nil {
		return protocol.RestartVerdict{}, err
	}
	acct, err := o.p.Account(ctx, a.Monitor.Account)
	if err != nil {
		return protocol.RestartVerdict{}, wireError(err)
	}
	return restartVerdict(a.Monitor, acct.Item), nil
}

// restartVerdict judges a monitor's limits against an account's values.
// The loss limit is judged first.
func restartVerdict(m protocol.Monitor, item protocol.AccountItem) protocol.RestartVerdict {
	pnl := sessionPnl(m, item)
	switch {
	case m.LossLimit.Enabled && pnl <= -m.LossLimit.Amount:
		return protocol.RestartVerdict{WouldRetrip: true, Reason: reasonLossLimit}
	case m.ProfitTarget.Enabled && pnl >= m.ProfitTarget.Amount:
		return protocol.RestartVerdict{WouldRetrip: true, Reason: reasonProfitTarget}
	}
	return protocol.RestartVerdict{}
}

// sessionPnl is the session P&L a monitor watches, in dollars rounded to
// the cent: the session's realized P&L before commission
// (grossRealizedProfitLoss), plus the open positions' unrealized P&L when
// the monitor includes it, minus the session's commission when it
// includes that.
func sessionPnl(m protocol.Monitor, item protocol.AccountItem) float64 {
	pnl := item.GrossRealizedProfitLoss
	if m.IncludeUnrealized {
		pnl += item.UnrealizedProfitLoss
	}
	if m.IncludeCommission {
		pnl -= item.Commission
	}
	return math.Round(pnl*100) / 100
}
