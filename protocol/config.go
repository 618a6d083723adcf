package protocol

import "time"

// The management configuration. The relay's Management API stores these
// resources, validates them, and pushes a user's whole desired
// configuration (Config) to the agent with FnApplyConfig; the agent's
// engines act on it and report state changes back with the events
// EventMonitorState and EventCopierState. The JSON of each resource is also
// its body in the Management API (DESIGN.md, "Management API").
//
// Times of day are "HH:MM" in New York time on 5-minute marks; days are
// "mon" … "sun".

// Meta are the fields every management resource has. All are read-only.
type Meta struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Copy modes of a copier.
const (
	// CopyModeOrder mirrors every order of the leader, its changes and its
	// cancellation.
	CopyModeOrder = "order"
	// CopyModeExecution turns the leader's fills into market orders.
	CopyModeExecution = "execution"
)

// States of a copier, as the relay stores them (read-only).
const (
	CopierRunning = "running" // active and copying
	CopierOff     = "off"     // active is false
	CopierHalted  = "halted"  // the agent halted it (a Tandem follower's monitor tripped)
)

// Copier copies a leader account's trading to follower accounts.
type Copier struct {
	Meta
	Active    bool       `json:"active"`
	Leader    string     `json:"leader"`
	Followers []Follower `json:"followers"`
	// Sizing is the default sizing of followers that name none.
	Sizing Sizing `json:"sizing"`
	// Instruments are the roots copied ("ES", "NQ"); empty means all.
	Instruments        []string            `json:"instruments"`
	SymbolReplacements []SymbolReplacement `json:"symbolReplacements"`
	CopyMode           string              `json:"copyMode"`
	// Tandem copies only while every follower's monitor is active; a
	// follower's monitor tripping halts the copier.
	Tandem bool `json:"tandem"`
	// AutoSync realigns follower positions to the leader's × ratio every
	// AutoSyncSeconds (at least 3).
	AutoSync        bool `json:"autoSync"`
	AutoSyncSeconds int  `json:"autoSyncSeconds"`
	// State, HaltedReason and HaltedAt are read-only: the relay derives
	// State from Active and the agent's reports.
	State        string     `json:"state"`
	HaltedReason string     `json:"haltedReason,omitempty"`
	HaltedAt     *time.Time `json:"haltedAt,omitempty"`
}

// Follower is one account a copier copies to.
type Follower struct {
	Account string `json:"account"`
	// Sizing overrides the copier's default when set.
	Sizing *Sizing `json:"sizing,omitempty"`
	// Inverse copies buys as sells and sells as buys.
	Inverse bool `json:"inverse"`
}

// Sizing scales follower quantities: Ratio is 0.25 to 1.75 in steps of
// 0.25, or 2 to 10 in steps of 1.
type Sizing struct {
	Ratio float64 `json:"ratio"`
}

// SymbolReplacement copies one root as another of the same underlying
// (ES to MES, …).
type SymbolReplacement struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// States of a monitor (read-only).
const (
	MonitorActive  = "active"  // watching the account
	MonitorPaused  = "paused"  // active is false
	MonitorStopped = "stopped" // tripped; only a restart resumes it
)

// What a monitor does when it trips.
const (
	OnTripFlatten = "flatten"
	OnTripNone    = "none"
)

// Monitor watches one account's session P&L and trading hours, and stops
// the account's trading when a limit is reached.
type Monitor struct {
	Meta
	// Account is set at creation only.
	Account string `json:"account"`
	Active  bool   `json:"active"`
	// State, StoppedReason and StoppedAt are read-only.
	State         string     `json:"state"`
	StoppedReason string     `json:"stoppedReason,omitempty"`
	StoppedAt     *time.Time `json:"stoppedAt,omitempty"`
	// RestartedFrom (read-only) is the StoppedAt of the stop the last
	// restart resumed from, exactly as the agent reported it. The agent
	// resumes a monitor it stopped only when a pushed configuration
	// restarts that very stop: a configuration pushed before the relay
	// learned of the stop says "active" too, and must not resume it.
	RestartedFrom *time.Time `json:"restartedFrom,omitempty"`
	// Blind (read-only) is true while the monitor is active but cannot
	// see the P&L it watches: it counts unrealized P&L and an open
	// position of the account has no live price (the account's
	// AccountItem.UnrealizedUnknown). A blind monitor trips on nothing
	// it cannot see, and is not to be read as safe; it sees again when
	// prices return. Absent (false) otherwise.
	Blind bool `json:"blind,omitempty"`
	// ProfitTarget and LossLimit are in dollars of session P&L.
	ProfitTarget      Limit `json:"profitTarget"`
	LossLimit         Limit `json:"lossLimit"`
	IncludeUnrealized bool  `json:"includeUnrealized"`
	IncludeCommission bool  `json:"includeCommission"`
	// TrailingDrawdown stops when P&L falls Amount below its session high.
	TrailingDrawdown Limit `json:"trailingDrawdown"`
	// MinimumProfitDrawdown stops when P&L falls to its Floor once the
	// session high reached its Trigger. A stored monitor without it reads
	// as disabled.
	MinimumProfitDrawdown ProfitFloor     `json:"minimumProfitDrawdown"`
	MasterWindow          Window          `json:"masterWindow"`
	TradingWindows        []MonitorWindow `json:"tradingWindows"`
	// ClosingOnly refuses orders that open or add to a position;
	// ClosingOnlyAfter ("HH:MM", "" for none) turns it on at that time,
	// strictly inside the master window.
	ClosingOnly      bool   `json:"closingOnly"`
	ClosingOnlyAfter string `json:"closingOnlyAfter"`
	// BlockSignals refuses orders arriving from the API.
	BlockSignals bool `json:"blockSignals"`
	// SwitchesLocked freezes BlockSignals and ClosingOnly.
	SwitchesLocked bool `json:"switchesLocked"`
	// MonitorLock refuses changes to a monitor that stopped today until
	// the 5–6 PM New York window.
	MonitorLock bool `json:"monitorLock"`
	// AutoFlattenAt ("HH:MM", "" for none) flattens the account daily.
	AutoFlattenAt string `json:"autoFlattenAt"`
	OnTrip        string `json:"onTrip"`
}

// Limit is a P&L limit that may be turned on.
type Limit struct {
	Enabled bool    `json:"enabled"`
	Amount  float64 `json:"amount"`
}

// ProfitFloor is a static floor under a good session's P&L, in dollars of
// session P&L: it waits until the session high reaches Trigger, and from
// then on the monitor stops when the P&L is at or below Floor (0 is break
// even). The Management API keeps 0 ≤ Floor < Trigger when it is enabled.
type ProfitFloor struct {
	Enabled bool    `json:"enabled"`
	Trigger float64 `json:"trigger"`
	Floor   float64 `json:"floor"`
}

// ProfitFloorProtocolVersion is the first version whose agents run a
// monitor's MinimumProfitDrawdown; older agents ignore the member.
const ProfitFloorProtocolVersion = 8

// Window is a weekly time window: on each of Days from Start to End; End
// before Start runs past midnight. No days means every day.
type Window struct {
	Days  []string `json:"days"`
	Start string   `json:"start"`
	End   string   `json:"end"`
}

// MonitorWindow is one of a monitor's trading windows.
type MonitorWindow struct {
	Enabled bool `json:"enabled"`
	Window
}

// Destinations of an account group.
const (
	DestinationDesktop = "desktop"
	DestinationBroker  = "tv"
)

// AccountGroup names a set of accounts. It lives in the relay only.
type AccountGroup struct {
	Meta
	Name string `json:"name"`
	// Destination is set at creation only: DestinationDesktop or
	// DestinationBroker.
	Destination string   `json:"destination"`
	Accounts    []string `json:"accounts"`
}

// ManagedAtmTemplate is an ATM template as the Management API keeps it: a
// named bracket configuration for entries.
type ManagedAtmTemplate struct {
	Meta
	Name   string    `json:"name"`
	Config AtmConfig `json:"config"`
}

// AtmConfig is an ATM template's configuration; the brackets' quantities
// add up to Quantity.
type AtmConfig struct {
	Quantity     int             `json:"quantity"`
	TimeInForce  string          `json:"timeInForce"`
	Brackets     []AtmBracket    `json:"brackets"`
	Breakeven    AtmBreakeven    `json:"breakeven"`
	TrailingStop AtmTrailingStop `json:"trailingStop"`
}

// Controls are the user's account-wide switches. KillSwitch changes only
// through the kill-switch operation.
type Controls struct {
	Meta
	KillSwitch      bool `json:"killSwitch"`
	FlattenOnKill   bool `json:"flattenOnKill"`
	BlockAllSignals bool `json:"blockAllSignals"`
}

// Actions of the news lockout.
const (
	NewsBlock   = "block"   // refuse new entries
	NewsFlatten = "flatten" // flatten, then refuse new entries
)

// NewsLockout blocks trading around scheduled news events.
type NewsLockout struct {
	Meta
	Enabled       bool        `json:"enabled"`
	Events        []NewsEvent `json:"events"`
	MinutesBefore int         `json:"minutesBefore"`
	MinutesAfter  int         `json:"minutesAfter"`
	// Roots limits the lockout to these instrument roots; empty means all.
	Roots  []string `json:"roots"`
	Action string   `json:"action"`
}

// NewsEvent is one scheduled release.
type NewsEvent struct {
	At     time.Time `json:"at"`
	Title  string    `json:"title"`
	Impact string    `json:"impact"`
}

// ConnectionSettings are the settings of the platform's connections.
type ConnectionSettings struct {
	Meta
	Connections []ConnectionSetting `json:"connections"`
}

// ConnectionSetting is one platform connection's settings. Name and
// Accounts come from the agent (Accounts is read-only).
type ConnectionSetting struct {
	Name          string   `json:"name"`
	Accounts      []string `json:"accounts"`
	AutoReconnect bool     `json:"autoReconnect"`
	// DataWatchdogSeconds reconnects a connection whose market data has
	// been silent this long; 0 turns the watchdog off.
	DataWatchdogSeconds int `json:"dataWatchdogSeconds"`
}

// Config is a user's whole desired management configuration, the
// arguments of FnApplyConfig. Version increases with every change the
// relay stores; the agent applies a Config atomically and ignores one
// whose Version is not above the last it applied.
type Config struct {
	Version            int64                `json:"version"`
	Copiers            []Copier             `json:"copiers"`
	Monitors           []Monitor            `json:"monitors"`
	AtmTemplates       []ManagedAtmTemplate `json:"atmTemplates"`
	Controls           Controls             `json:"controls"`
	NewsLockout        NewsLockout          `json:"newsLockout"`
	ConnectionSettings ConnectionSettings   `json:"connectionSettings"`
}

// ConfigApplied is the result of FnApplyConfig: the version the agent now
// runs (the pushed one, or a newer one it already had).
type ConfigApplied struct {
	Version int64 `json:"version"`
}

// RestartCheck are the arguments of FnCheckMonitorRestart: the monitor as
// it would run after a restart.
type RestartCheck struct {
	Monitor Monitor `json:"monitor"`
}

// RestartVerdict is the result of FnCheckMonitorRestart.
type RestartVerdict struct {
	// WouldRetrip is true when the monitor would stop again at once.
	WouldRetrip bool `json:"wouldRetrip"`
	// Reason names the limit it would trip on ("lossLimit", …).
	Reason string `json:"reason,omitempty"`
}

// MonitorState is the data of an EventMonitorState event: a monitor's
// state changed on the agent.
type MonitorState struct {
	Account string    `json:"account"`
	State   string    `json:"state"`
	Reason  string    `json:"reason,omitempty"`
	At      time.Time `json:"at"`
	// Blind is true when an active monitor went blind (Monitor.Blind);
	// a report with State active and Blind false says it sees again.
	Blind bool `json:"blind,omitempty"`
}

// CopierState is the data of an EventCopierState event: a copier halted
// on the agent, or runs again.
type CopierState struct {
	ID     string    `json:"id"`
	State  string    `json:"state"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}
