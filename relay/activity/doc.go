// Package activity keeps each user's activity log: what was done and
// decided on the user's account, by whom, and its outcome
// (protocol.ActivityEntry), durable in the relay's store
// (store.Store.AppendActivity), read back at GET /v1/api/activity and on
// the stream socket (relay/stream, subscribeActivity), and sent to the
// user's alert destinations (relay/alerts).
//
// It sits on the event spine (relay/events), between those who report
// and those who read:
//
//   - The Recorder is a queued subscriber of the spine (the relay
//     subscribes Handle as "activity"). Handle only queues; the
//     Recorder's writer builds the deferred entries (events.Deferred),
//     checks them and writes those that gathered within
//     Options.BatchDelay in one transaction. It records the TypeActivity
//     events the trading doors, the Management API, the broker links and
//     the budgets publish; the engines' reports the agents and the broker
//     family send (TypeAgent and TypeBroker events of kind
//     protocol.EventActivity); and the tunnels' sessions (TypeSession) as
//     agent.connected, agent.updated and agent.disconnected. After each
//     entry it stores, it publishes the entry with its id once, as a
//     TypeRecorded event, which the stream sockets, the other relay nodes
//     (relay/cluster) and the alerts take.
//   - The Server answers GET /v1/api/activity (Path) with the caller's
//     own entries, newest first.
//
// # Exactly once
//
// An entry that may be reported twice carries a reference (events.Event's
// Ref; the store writes one entry per user and reference): the agent's
// and the broker family's reports their own ids ("agent:<id>",
// "broker:<id>"), which the agent sends again after a reconnect; the
// tunnels' sessions theirs ("session:<id>:start", ":end"); the trading
// doors the idempotency key of a keyed write. The entry with the same
// reference is then not written again, and no second TypeRecorded is
// published for it.
//
// # Retention and caps
//
// Entries older than Options.Retention (90 days by default; relay serve
// --activity-retention) are deleted every hour (Run). Each user's log is
// capped per class: at most Options.TradingCap entries of the trading
// class (the trading doors' writes and refusals, the budgets' refusals,
// the TradingView alerts received, the exits placed for entries) and
// Options.AccountCap of the rest
// (50,000 each by default), so that a noisy bot's orders never push out
// the account's own history. The cap is kept by trimming the user's
// oldest entries of the class after every TrimEvery-th (100th) entry the
// Recorder writes of that user and class, and at most once per
// TrimInterval (a minute) per user: a log may exceed its cap by what is
// written between two trims (at most a few hundred entries, under 1% of
// the default cap) before the trim brings it back.
//
// Recording never sits on the order path: producers publish and return
// (events.Bus.Publish never blocks), and the Recorder's writes run on the
// spine's goroutines, one user's events in order. A user whose queue is
// full loses the newest events (the spine counts and logs them).
package activity
