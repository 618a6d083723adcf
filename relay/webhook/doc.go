// Package webhook is the relay's TradingView door: POST
// /v1/send/{webhookId} takes an alert (the `key=value;` command language
// of package alertcmd, or the same fields in JSON) and runs it through
// the same admission (relay/admit), trading calls (the hub's Caller for
// the desktop family, the broker family's for destination=broker),
// Management API code (the kill switch, manage.Server.Invoke), activity
// log and event spine as every other door; GET /v1/api/webhook shows the
// user's URL and key, GET /v1/api/webhook/alerts the alert history.
//
// # Admission
//
// In this order, before anything of the alert is recorded:
//
//  1. the operator's address list (relay serve --webhook-allow; empty:
//     off): outside it, 403 address_not_allowed;
//  2. the per-address budget (429 rate_limited, policy "ip");
//  3. the body, read whole up to alertcmd.MaxBody (413 body_too_large);
//  4. the webhook and its key: the id in the path and the key in the
//     body, compared as SHA-256 digests in constant time; an unknown id,
//     a missing or wrong key, a disabled user: 401 unauthorized;
//  5. the user's plan: pro or above (403 plan_required);
//  6. the user's trading budget, the same limiter as the trading API's,
//     charged once per trading call the alert makes (at least once): 429
//     rate_limited, recorded in the activity log as the trading API's.
//
// Steps 1 to 5 leave nothing behind but the relay_webhook_alerts_total
// counter; the key is never logged, and no answer repeats the body.
//
// # An alert's life
//
// A body equal to one the same user sent within DuplicateWindow (2 s) is
// a duplicate: TradingView sends one twice when an indicator fires twice.
// It is answered with the first one's answer (202 running while the
// first still runs) and not run again; the claim is an idempotency
// record of the store ("webhook:dup:<sha256 of the body>"), taken in the
// same transaction as the alert's record (store.ReceiveWebhookAlert: one
// commit before the first call), so that it holds across the relay's
// nodes.
//
// Every other alert is recorded in the history (store.WebhookAlert,
// "tva_<seq>") and answered by its status: a body that does not parse is
// failed (400 with alertcmd's detail); then, in order, its rate_limit
// (blocked), its trading window start_time/end_time (blocked outside it,
// unless bypass_trade_windows), its kill_switch (set through the
// Management API's own code), its delay (202 scheduled, run by the Server
// when due; the kill switch is set at once). Then its calls (alertcmd.Alert.Calls) run one after the
// other, each once: request id "wh:<alertId>:<i>", which the agent and the
// broker family run at most once. A refusal of the position's
// requirements (market_position_mismatch, max_positions_reached) is
// blocked; any other is failed. The alert is executed unless one call
// failed (failed) or all were blocked (blocked).
//
// The answer never waits longer than AnswerWithin (2.5 s): calls still
// running then are answered 202 running, and their outcome lands in the
// history. A scheduled alert whose node stopped before it was due is
// never run late: Run's sweeper marks it failed once it is 30 s overdue.
//
// Each recorded alert's final status is one webhook.received entry of the
// activity log, and each trading call its own entry (source webhook, id
// the webhook's id), as the trading API records its writes.
//
// # The dry run
//
// Server.Try takes an alert body of a user's webhook through the same
// steps, in the same functions (read, the door's key and plan check,
// gates, prepare, route), and stops before anything with an effect: the
// trading budget's charge, the duplicate's claim, the record, the kill
// switch and the calls. It answers what the alert would be now (run,
// scheduled, blocked, failed or refused), the alert in words and each call
// with the arguments the trading operations would get, or the error the
// alert's answer would carry. It also reads, without an effect, what the
// real alert learns only from its first call: whether the user linked a
// broker login (Options.Links) and whether the agent is connected. The
// dashboard's TradingView page runs it in process ("Try it"), with Show,
// Rotate (recorded in the activity log with who rotated the key) and
// History.
package webhook
