package copier

import (
	"fmt"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/engine"
)

// outcomePlaced is the outcome of a copier.copied report of a copy the
// follower's platform took (the others are the protocol.Copy* outcomes of
// a copy refused: blocked, rejected, failed).
const outcomePlaced = "placed"

// copyDetail is the detail of a copier.copied report.
type copyDetail struct {
	CopierID   string `json:"copierId"`
	Leader     string `json:"leader"`
	Follower   string `json:"follower"`
	Instrument string `json:"instrument"`
	// Action is the follower order's (Buy, Sell); absent for a copy the
	// tandem rule refused before it was built.
	Action   string `json:"action,omitempty"`
	Quantity int    `json:"quantity"`
	// LeaderOrderID is the leader order copied; absent for an auto-sync
	// correction.
	LeaderOrderID string `json:"leaderOrderId,omitempty"`
	// OrderID is the follower order placed; absent when none was.
	OrderID string `json:"orderId,omitempty"`
	// Outcome is outcomePlaced or the protocol.Copy* outcome of a refusal.
	Outcome string `json:"outcome"`
	// Reason says why a copy was refused (the gate's fixed sentence, the
	// platform's reason).
	Reason string `json:"reason,omitempty"`
	// Sync marks an auto-sync correction.
	Sync bool `json:"sync,omitempty"`
}

// source is the copier as an activity source.
func (r *run) source() protocol.ActivitySource {
	return protocol.ActivitySource{Kind: protocol.SourceCopier, ID: r.cfg.id}
}

// reportCopy reports a copier.copied, stamped now (the wall clock's): a
// copy of req placed as orderID, or refused with outcome and reason.
func (e *Engine) reportCopy(r *run, req bridge.OrderRequest, leaderOrderID, orderID, outcome, reason string) {
	if e.opts.Reporter == nil {
		return
	}
	d := copyDetail{CopierID: r.cfg.id, Leader: r.cfg.leader, Follower: req.Account, Instrument: req.Instrument,
		Action: req.Action, Quantity: req.Quantity, LeaderOrderID: leaderOrderID, OrderID: orderID,
		Outcome: outcome, Reason: reason, Sync: leaderOrderID == ""}
	e.reportActivity(engine.NewActivity(e.stamp(), protocol.ActivityCopierCopied, req.Account, r.source(), copySummary(&d), d))
}

// copySummary is the one line of a copier.copied report.
func copySummary(d *copyDetail) string {
	what := "copied"
	if d.Sync {
		what = "corrected"
	}
	order := fmt.Sprintf("%d %s", d.Quantity, d.Instrument)
	if d.Action != "" {
		order = d.Action + " " + order
	}
	if d.Outcome == outcomePlaced {
		return fmt.Sprintf("Copier %s %s %s on %s", d.CopierID, what, order, d.Follower)
	}
	return fmt.Sprintf("Copier %s did not place %s on %s: %s", d.CopierID, order, d.Follower, d.Outcome)
}

// reportHalt reports a copier.halted.
func (e *Engine) reportHalt(r *run, h halt) {
	d := struct {
		CopierID string `json:"copierId"`
		Reason   string `json:"reason"`
	}{r.cfg.id, h.Reason}
	e.reportActivity(engine.NewActivity(h.At, protocol.ActivityCopierHalted, r.cfg.leader, r.source(),
		"Copier "+r.cfg.id+" halted: "+h.Reason, d))
}

// reportActivity sends an activity report to the relay.
func (e *Engine) reportActivity(a protocol.ActivityEntry) {
	if e.opts.Reporter != nil {
		e.opts.Reporter.ReportActivity(a)
	}
}
