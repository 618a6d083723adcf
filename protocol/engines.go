package protocol

import "time"

// EngineStatus is the result of FnEngineStatus: what the agent's engines
// are doing, for support staff and for tests. It is read only.
type EngineStatus struct {
	// ConfigVersion is the version of the configuration the engines run.
	ConfigVersion int64           `json:"configVersion"`
	Copiers       []CopierStatus  `json:"copiers"`
	Monitors      []MonitorStatus `json:"monitors"`
	Controls      ControlsStatus  `json:"controls"`
}

// CopierStatus is one copier as its engine runs it.
type CopierStatus struct {
	ID string `json:"id"`
	// State is CopierRunning, CopierOff or CopierHalted.
	State  string     `json:"state"`
	Reason string     `json:"reason,omitempty"`
	At     *time.Time `json:"at,omitempty"`
	// Unaligned lists the followers auto-sync could not align, with why.
	Unaligned []FollowerIssue `json:"unaligned,omitempty"`
	// Recent are the latest copies that did not go as asked (rounded to
	// zero, refused, rejected), newest last, at most 50.
	Recent []CopyOutcome `json:"recent,omitempty"`
}

// FollowerIssue is a follower the copier could not keep in line.
type FollowerIssue struct {
	Account    string    `json:"account"`
	Instrument string    `json:"instrument"`
	Reason     string    `json:"reason"`
	At         time.Time `json:"at"`
}

// Outcomes of a copy (CopyOutcome.Outcome).
const (
	CopyRoundedToZero = "rounded_to_zero" // the ratio made the quantity 0: nothing placed
	CopyBlocked       = "blocked"         // the trading gate refused it (Reason names the rule)
	CopyRejected      = "rejected"        // the platform refused it (Reason says why)
	CopyFailed        = "failed"          // it could not be placed (disconnected, …)
)

// CopyOutcome is one copy that did not go as asked.
type CopyOutcome struct {
	At            time.Time `json:"at"`
	Follower      string    `json:"follower"`
	Instrument    string    `json:"instrument"`
	LeaderOrderID string    `json:"leaderOrderId,omitempty"`
	Quantity      int       `json:"quantity"`
	Outcome       string    `json:"outcome"`
	Reason        string    `json:"reason,omitempty"`
}

// MonitorStatus is one account's monitor as its engine runs it.
type MonitorStatus struct {
	Account   string     `json:"account"`
	State     string     `json:"state"`
	Reason    string     `json:"reason,omitempty"`
	StoppedAt *time.Time `json:"stoppedAt,omitempty"`
	// SessionPnl is the session P&L as the monitor counts it, and
	// SessionHigh its high of the session (the trailing drawdown's base,
	// and what arms the minimum-profit drawdown once it reaches the
	// trigger).
	SessionPnl   float64   `json:"sessionPnl"`
	SessionHigh  float64   `json:"sessionHigh"`
	Session      time.Time `json:"session"` // the session's start
	ClosingOnly  bool      `json:"closingOnly"`
	BlockSignals bool      `json:"blockSignals"`
	// Blind is true while the monitor cannot see the P&L it watches
	// (Monitor.Blind): SessionPnl then leaves out the unpriced
	// positions' P&L and is not the account's.
	Blind bool `json:"blind,omitempty"`
}

// ControlsStatus is the account-wide controls as the agent runs them.
type ControlsStatus struct {
	KillSwitch      bool `json:"killSwitch"`
	BlockAllSignals bool `json:"blockAllSignals"`
	// NewsLockout is the open lockout window, if any.
	NewsLockout *NewsWindow `json:"newsLockout,omitempty"`
}

// NewsWindow is a news event's lockout window.
type NewsWindow struct {
	Title  string    `json:"title"`
	From   time.Time `json:"from"`
	Until  time.Time `json:"until"`
	Action string    `json:"action"`
	Roots  []string  `json:"roots,omitempty"`
}
