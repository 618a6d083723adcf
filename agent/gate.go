package agent

import "tradebridge/agent/ops"

// checker is one engine's part of the trading gate.
type checker interface {
	Check(account, instrument string, src ops.Source) ops.Verdict
}

// gate is the trading gate the operations ask about every order: the
// controls first (kill switch, blockAllSignals, news lockout), then the
// account's monitor. For each kind of refusal the first engine that
// refuses names the rule.
type gate []checker

// Check implements ops.Gate.
func (g gate) Check(account, instrument string, src ops.Source) ops.Verdict {
	var v ops.Verdict
	for _, c := range g {
		w := c.Check(account, instrument, src)
		if v.Any == nil {
			v.Any = w.Any
		}
		if v.Entries == nil {
			v.Entries = w.Entries
		}
	}
	return v
}
