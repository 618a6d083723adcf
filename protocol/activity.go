package protocol

import (
	"encoding/json"
	"slices"
	"time"
	"unicode/utf8"
)

// ActivityEntry is one entry of a user's activity log: something done or
// decided on the user's account, by whom, and its outcome. The relay
// serves the log at GET /v1/api/activity and on the stream socket
// (subscribeActivity), and sends the entries a user's alert destinations
// ask for.
//
// The agent reports what its engines did as ActivityEntry values too
// (EventActivity): ID is then the report's own id, unique on the agent,
// by which the relay records a report it is sent twice (after a
// reconnect) once; the relay gives the entry its own id.
type ActivityEntry struct {
	// ID is the entry's id in the log ("act_…"), by which a reader pages
	// (the before parameter).
	ID string `json:"id"`
	// At is when it happened, UTC, to the millisecond.
	At time.Time `json:"at"`
	// Kind is one of ActivityKinds.
	Kind string `json:"kind"`
	// Account is the trading account it concerns; "" (absent) when none
	// applies.
	Account string `json:"account,omitempty"`
	// Source is who did it.
	Source ActivitySource `json:"source"`
	// Summary is one line for a person.
	Summary string `json:"summary"`
	// Detail is a JSON object with the kind's structured detail (its keys
	// are documented per kind); {} when it has none. It never holds a
	// secret.
	Detail json.RawMessage `json:"detail"`
}

// ActivitySource is who or what acted: an API token by its id, a
// copier or monitor by its id, the operator's command line, …
type ActivitySource struct {
	// Kind is one of ActivitySourceKinds.
	Kind string `json:"kind"`
	// ID names the source among those of its kind: the API token's id
	// (the start of its hash, as relay tokens list shows it), the copier's
	// or monitor's id, the webhook's id, the alert destination's id; ""
	// (absent) when the kind is enough (the kill switch, the operator).
	ID string `json:"id,omitempty"`
	// Name is the source's name when it has one (a token's or a
	// copier's).
	Name string `json:"name,omitempty"`
}

// Sources of activity (ActivitySource.Kind).
const (
	SourceAPI         = "api"         // the trading or Management API over HTTP, with an API token
	SourceStream      = "stream"      // the stream socket (its rpc action)
	SourceWebhook     = "webhook"     // a TradingView alert (/v1/send/{webhookId})
	SourceMCP         = "mcp"         // an AI assistant over /mcp
	SourceDashboard   = "dashboard"   // the trader's dashboard (/app)
	SourceCopier      = "copier"      // a copier of the agent's or the broker family's engines
	SourceMonitor     = "monitor"     // a monitor
	SourceKillSwitch  = "killSwitch"  // the kill switch
	SourceNewsLockout = "newsLockout" // the news lockout
	SourceBroker      = "broker"      // the broker family's link (Tradovate)
	SourceAgent       = "agent"       // the user's agent and its tunnel
	SourceOperator    = "operator"    // the operator's command line (relay …)
	SourceAlert       = "alert"       // an alert destination (its id), for the outcomes of alerts
)

// ActivitySourceKinds lists every ActivitySource.Kind, in the order the
// documentation lists them.
var ActivitySourceKinds = []string{
	SourceAPI, SourceStream, SourceWebhook, SourceMCP, SourceDashboard, SourceCopier, SourceMonitor,
	SourceKillSwitch, SourceNewsLockout, SourceBroker, SourceAgent, SourceOperator, SourceAlert,
}

// Kinds of activity (ActivityEntry.Kind). The list is part of the API:
// a kind never changes meaning, and a new thing to record takes a new
// kind.
const (
	// ActivityOrderPlaced: a trading write placed orders (PlaceOrder,
	// flat place, a bracket, reverse). detail: fn, family ("desktop" or
	// "tv"), request (the arguments as asked), orderIds,
	// cancelledOrderIds when it cancelled some, idempotencyKey when one
	// was sent.
	ActivityOrderPlaced = "order.placed"
	// ActivityOrderChanged: a trading write changed, cancelled or closed
	// (ModifyOrder, CancelOrder(s), ClosePosition, Flatten): detail as
	// order.placed, with the result's ids.
	ActivityOrderChanged = "order.changed"
	// ActivityOrderRefused: a trading write was refused or failed:
	// detail: fn, family, request, error (the code; outcome_unknown when
	// the outcome could not be learnt), idempotencyKey when one was sent.
	ActivityOrderRefused = "order.refused"
	// ActivityOrderReplayed: a trading write answered with the recorded
	// outcome of the same Idempotency-Key (or orderId): nothing ran
	// again. detail: fn, family, request, idempotencyKey, and the
	// outcome's orderIds or error.
	ActivityOrderReplayed = "order.replayed"
	// ActivityTradingBlocked: a trading write refused with
	// trading_blocked by a rule (a monitor, the kill switch, the news
	// lockout, a strategy lock): detail: fn, family, request, rule (as
	// the agent's detail names it, "" from an agent before protocol
	// version 3), idempotencyKey when one was sent.
	ActivityTradingBlocked = "trading.blocked"
	// ActivityBudgetRefused: calls refused for a budget (rate_limited),
	// aggregated: one entry per user, policy and minute, detail: policy,
	// count, from, until (the first and the last refusal counted). Its
	// source is the door and token of the refused requests, without an
	// id when they came from several tokens.
	ActivityBudgetRefused = "budget.refused"
	// ActivityConfigChanged: a Management API resource was created,
	// changed or deleted: detail: resource (the kind), id, op (create,
	// update, delete, or an action's name), changes ([{field, before,
	// after}], before absent on create and after on delete; a secret
	// field is {field, changed: true}, its values never shown).
	ActivityConfigChanged = "config.changed"
	// ActivityCopierCopied: a copier placed a follower's copy, or the
	// copy was refused: detail: copierId, leader, follower, instrument,
	// action, quantity, leaderOrderId (absent for an auto-sync
	// correction), orderId (absent when nothing was placed), outcome
	// ("placed", or "blocked", "rejected", "failed" as CopyOutcome),
	// reason (when refused), sync (true for an auto-sync correction). A
	// copy the ratio rounds to zero is not recorded.
	ActivityCopierCopied = "copier.copied"
	// ActivityCopierHalted: a copier halted: detail: copierId, reason.
	ActivityCopierHalted = "copier.halted"
	// ActivityMonitorTripped: a monitor stopped trading on an account:
	// detail: limit (the rule that tripped), pnl (the session P&L at the
	// trip), threshold (absent for the limits of time), onTrip ("flatten"
	// or "none"), flatten ({orderIds, cancelledOrderIds, error}).
	ActivityMonitorTripped = "monitor.tripped"
	// ActivityMonitorBlind: a monitor that counts unrealized P&L went
	// blind (an open position of its account has had no live price for
	// a while: market data down or refused), or sees again: detail:
	// blind (true when it went blind, false when prices returned), pnl
	// (the session P&L it can see, without the unpriced positions).
	// While blind it trips on no P&L limit.
	ActivityMonitorBlind = "monitor.blind"
	// ActivityKillSwitchChanged: the kill switch was turned on or off;
	// detail: enabled, and flatten ({orderIds, cancelledOrderIds,
	// error}, its first attempt) when turning it on flattened accounts.
	ActivityKillSwitchChanged = "killSwitch.changed"
	// ActivityNewsLockoutEntered: a news lockout window opened: detail:
	// title, from, until, action, roots, and flatten ({orderIds,
	// cancelledOrderIds, error}) for the action "flatten".
	ActivityNewsLockoutEntered = "newsLockout.entered"
	// ActivityStrategyRefused: orders refused by a strategy lock
	// (position_owned), aggregated: one entry per account, instrument,
	// strategy and rule a minute: detail: instrument, strategy (the
	// refused tag), rule ("strategyOwned", "untaggedPosition"), owner
	// (the owning tag), count, from, until (the first and last refusal).
	ActivityStrategyRefused = "strategy.refused"
	// ActivityExitsPlaced: the exits of an entry placed with exits
	// (PlaceOrderArgs.Exits) were placed once it filled, or resized to
	// its later fills: detail: entryOrderId, orderIds (the exit orders),
	// ocoId, quantity (what they are sized to), prices ({takeProfit,
	// stopLoss, stopLossLimit, stopLossStop}, those placed).
	ActivityExitsPlaced = "exits.placed"
	// ActivityExitsFailed: the exits of an entry could not be placed or
	// resized (the platform or the trading gate refused a leg); nothing
	// is tried again: detail: entryOrderId, reason.
	ActivityExitsFailed = "exits.failed"
	// ActivityAgentConnected: the user's agent connected: detail:
	// agentVersion, protocolVersion, platform.
	ActivityAgentConnected = "agent.connected"
	// ActivityAgentDisconnected: the user's agent's tunnel ended: detail:
	// reason (the connection history's reason code).
	ActivityAgentDisconnected = "agent.disconnected"
	// ActivityAgentUpdated: the agent connected with another version than
	// the last time: detail: from, to.
	ActivityAgentUpdated = "agent.updated"
	// ActivityBrokerLinked: a broker login was linked: detail: env,
	// method.
	ActivityBrokerLinked = "broker.linked"
	// ActivityBrokerUnlinked: the broker login was unlinked.
	ActivityBrokerUnlinked = "broker.unlinked"
	// ActivityBrokerLoginFailed: the broker refused the linked login:
	// detail: error (login_failed, captcha_required), env, reason (the
	// kind of refusal: credentials, api_key, locked, refused).
	ActivityBrokerLoginFailed = "broker.loginFailed"
	// ActivityBrokerTokenExpired: the broker's session of the linked
	// login expired and could not be renewed: detail: error
	// (token_expired), env.
	ActivityBrokerTokenExpired = "broker.tokenExpired"
	// ActivityBrokerMarketDataRefused: the broker refused the quotes of
	// an instrument the relay needs (an open position's, or one a caller
	// subscribed): no real-time market-data entitlement on the login, or
	// delayed data only; positions in it have no price. At most one entry
	// per instrument and day: detail: instrument, env, reason
	// ("refused", or "delayed").
	ActivityBrokerMarketDataRefused = "broker.marketDataRefused"
	// ActivityWebhookReceived: a TradingView alert was received: detail:
	// webhookId, outcome (the alert's final status: executed, blocked,
	// failed), alertId (its id in the alert history).
	ActivityWebhookReceived = "webhook.received"
	// ActivityAlertSent: an alert reached a destination: detail:
	// destinationId, destinationKind, entryId (absent for a test or a
	// summary), deliveryId, attempts, alertKind (the entry's kind, or
	// alert.test, alert.summary). Its source is the destination
	// (SourceAlert).
	ActivityAlertSent = "alert.sent"
	// ActivityAlertFailed: an alert could not be delivered (refused by
	// the destination, or not delivered within 24 hours): detail as
	// alert.sent, with error.
	ActivityAlertFailed = "alert.failed"
)

// ActivityKinds lists every ActivityEntry.Kind, in the order the
// documentation lists them.
var ActivityKinds = []string{
	ActivityOrderPlaced, ActivityOrderChanged, ActivityOrderRefused, ActivityOrderReplayed,
	ActivityTradingBlocked, ActivityBudgetRefused, ActivityConfigChanged,
	ActivityCopierCopied, ActivityCopierHalted, ActivityMonitorTripped, ActivityMonitorBlind, ActivityKillSwitchChanged,
	ActivityNewsLockoutEntered, ActivityStrategyRefused, ActivityExitsPlaced, ActivityExitsFailed,
	ActivityAgentConnected, ActivityAgentDisconnected, ActivityAgentUpdated,
	ActivityBrokerLinked, ActivityBrokerUnlinked, ActivityBrokerLoginFailed, ActivityBrokerTokenExpired,
	ActivityBrokerMarketDataRefused,
	ActivityWebhookReceived, ActivityAlertSent, ActivityAlertFailed,
}

// ValidActivityKind reports whether k is one of ActivityKinds.
func ValidActivityKind(k string) bool { return slices.Contains(ActivityKinds, k) }

// Bounds of an ActivityEntry, as the relay's activity log takes it: a
// longer summary or a larger detail is refused.
const (
	// MaxActivitySummary bounds Summary, in characters (runes).
	MaxActivitySummary = 200
	// MaxActivityDetail bounds Detail, a JSON object, in bytes.
	MaxActivityDetail = 8 << 10
)

// CutActivitySummary returns s cut to MaxActivitySummary characters, the
// last one "…" when it was cut.
func CutActivitySummary(s string) string {
	if utf8.RuneCountInString(s) <= MaxActivitySummary {
		return s
	}
	return string([]rune(s)[:MaxActivitySummary-1]) + "…"
}
