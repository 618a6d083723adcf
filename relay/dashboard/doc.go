// Package dashboard serves the traders' dashboard under /app: server-
// rendered HTML from Go templates (html/template, which escapes every
// value a user or an agent supplied), a small script and a stylesheet of
// its own, embedded with go:embed, no Node build step. It is one more door
// of the relay: its requests are admitted by package admit like every
// other door's (the address's budget, a session of kind auth.KindSession
// from the cookie, the door's budget), and what it does it asks of the
// relay's own parts in process, with the session's user: the Management
// API (manage.Server.Invoke: the kill switch), tokens (relay/auth),
// pairing codes (relay/pairing), the agent's status (the hub, the
// connection history), the trading reads (the hub, the broker family)
// and the activity log (relay/activity). It implements no rule of its
// own twice.
//
// # Routes
//
//	GET  /                       303 to /app
//	GET  /app                    the home page: the agent's status, accounts, P&L, positions,
//	                             working orders, the broker link, 30 days of connection history
//	                             (303 to /app/signin without a session)
//	GET  /app/status             the home page's status section alone (HTML fragment), which the
//	                             page fetches again when the stream socket says something changed
//	GET  /app/signin             the sign-in form (email, password)
//	POST /app/signin             signs in: 303 to /app; 401 with the form again and one message
//	GET  /app/signup             the sign-up form (relay serve --signup open), else a page saying
//	                             sign-up is closed (404)
//	POST /app/signup             signs up (free plan) and in: 303 to /app
//	POST /app/signout            ends this session: 303 to /app/signin
//	POST /app/signout-everywhere ends every session of the user
//	GET  /app/reset              asks for a reset link by email (--smtp-url), or says to ask the operator
//	POST /app/reset              sends the link; the same page whatever the email
//	GET  /app/reset/{token}      the new-password form; POST sets it and signs in
//	GET  /app/pair               "Add a PC"; POST /app/pair mints a code and shows it
//	GET  /app/tokens             the user's tokens; POST /app/tokens makes an API token (name,
//	                             profile, scope) and shows it once; POST /app/tokens/{id}/revoke revokes
//	GET  /app/activity           the activity log with filters, live
//	POST /app/kill-switch        turns the kill switch on or off (enabled=true|false); answers
//	                             JSON {"killSwitch":bool,"applied":bool} to fetch (Accept:
//	                             application/json; the relay's {"success":true,"data":{…}}
//	                             with the two members at the top level too), or 303 back
//	GET  /app/assets/{name}      app.js, app.css (immutable, versioned by content hash)
//	GET  /app/broker             the broker link: its state and accounts, "Link demo" and "Link live"
//	                             (OAuth), the API-key form, "Unlink"; ?link=ok|unlinked|none and
//	                             ?link=failed&reason=CODE (the OAuth callback's) say how an action went
//	GET  /app/broker/status      the link's state alone (HTML fragment), fetched again while it connects
//	POST /app/broker/link        links API-key credentials (env, username, password, appId,
//	                             appVersion, cid, sec): 303 to /app/broker?link=ok, or the form again
//	                             with the refusal
//	POST /app/broker/oauth       starts an OAuth link (env=demo|live): 303 to the broker's
//	                             authorization page, which comes back through the relay's callback
//	POST /app/broker/unlink      unlinks (confirm=yes, the box "Yes, unlink"): 303 to /app/broker?link=unlinked
//
// The Management API's editors (editor.go), for the elite plan, each a
// page over the Management API's route of the same path:
//
//	GET  /app/manage                          Settings: links to every editor
//	GET  /app/manage/{kind}                   a collection's list (desktop/copiers, …)
//	GET  /app/manage/{kind}/new               the empty form, with the kind's defaults
//	POST /app/manage/{kind}                   creates: 303 to the resource's form
//	GET  /app/manage/{kind}/{id}              the resource's form
//	POST /app/manage/{kind}/{id}              saves (PATCH, If-Match the ETag the form showed)
//	POST /app/manage/{kind}/{id}/delete       asks to confirm, then deletes (confirm=yes)
//	POST /app/manage/{kind}/{id}/{action}     the kind's action (a monitor's restart)
//	GET  /app/manage/{kind}/{id}/state        the resource's state block alone (HTML fragment)
//	GET  /app/manage/{kind}/{id}/pnl          a monitor's P&L block alone (?account=NAME; from the agent)
//	GET  /app/manage/{singleton}              a singleton's form (controls, …); POST saves it
//
// The account-wide settings and the alert destinations, editors of the
// same engine (editors_settings.go, editors_alerts.go):
//
//	/app/manage/desktop/account-groups        account groups: name, destination (on create only), accounts
//	/app/manage/desktop/atm-templates         ATM templates: name, quantity, time in force, bracket rows,
//	                                          breakeven, trailing stop
//	/app/manage/controls                      the controls (flattenOnKill, blockAllSignals; the kill
//	                                          switch keeps its own button)
//	/app/manage/news-lockout                  the news lockout: event rows, minutes, roots, action
//	/app/manage/desktop/connection-settings   one row per connection the agent reports
//	/app/manage/alerts                        alert destinations (Nav "alerts"); POST …/{id}/test is
//	                                          "Send a test", POST …/{id}/rotate-secret "Rotate secret"
//	GET  /app/manage/alerts/{id}/deliveries   a destination's last deliveries alone (HTML fragment)
//
// The TradingView page (Options.Webhook, package relay/webhook; the pro plan or above, else
// the page says so and shows no URL):
//
//	GET  /app/webhook            the webhook's URL and key, Rotate key, the message builder (its
//	                             choices in the query write the message), the alert history
//	                             (before=tva_… pages back), live
//	GET  /app/webhook/message    the builder's message of the query, as JSON
//	                             {"message","error","field","tryAction"} (the page's script)
//	GET  /app/webhook/alerts     the history's newest rows alone (HTML fragment), which the page
//	                             fetches again when the stream socket says an alert was received
//	POST /app/webhook/try        "Try it" (message): the webhook's dry run (webhook.Server.Try),
//	                             shown with the builder of the query; nothing sent or recorded
//	POST /app/webhook/rotate     "Rotate key" (confirm=rotate): a new key, the old one refused
//	                             at once; 303 back to the page
//
// # Stable names (a contract: tests and operators' scripts use them)
//
// Form inputs are named email, password, code, name (a token's name),
// profile, scope (a token's: trade, the default, or read), csrf. Buttons' visible texts are exactly "Sign in", "Sign up",
// "Sign out", "Add a PC", "New API token", "Revoke", "Kill switch".
// Element ids and attributes:
//
//	#agent-status[data-state=online|offline]     the agent, live
//	#agent-since #agent-version #agent-platform  since when, its version, its platform
//	#agent-rtt #agent-last-disconnect            the tunnel's round trip, the last disconnect's reason
//	#accounts tr[data-account=NAME]              one row per account, cells .cash .realized .unrealized
//	#positions tr[data-account][data-instrument] open positions, cell .quantity
//	#orders tr[data-order-id]                    working orders
//	#broker-link[data-state=linked|unlinked|…]   the broker family's link
//	#history tr                                  the connection history, newest first
//	#kill-switch[data-state=on|off]              the kill switch button, on every page
//	#pair-code #pair-command                     the minted code (XXXX-XXXX) and the agent pair line
//	#tokens tr[data-token-id=ID]                 one row per token, cell .scope (an API token's: read|trade), with a Revoke button
//	#token-scope                                 the new token's scope: trade (the first, default) or read
//	#new-token                                   a token made just now (shown once), with a Copy button
//	#activity li[data-kind=KIND]                 the activity log's entries, newest first, live
//	#form-error[role=alert]                      a form's refusal
//	meta[name=csrf-token]                        the session's CSRF token, for fetch
//
// The broker page's: inputs env, username, password, appId, appVersion,
// cid, sec (the fields of POST /v1/api/tv/link; password and sec are
// never written back), confirm; buttons "Link demo", "Link live" (both
// name=env), "Link", "Unlink"; and
//
//	#broker-link[data-state=…]                   as on the home page: unlinked, linked, or the session's state
//	#broker-env[data-env] #broker-method[data-method] #broker-since
//	#broker-session[data-session] #broker-retry-at #broker-connected[data-connected]
//	#broker-accounts li                          the login's accounts
//	#broker-result[role=status]                  the result of an action (?link=ok|unlinked|none)
//	#broker-oauth #oauth-off #api-key-form #broker-relink #broker-unlink #broker-plan
//	#err-NAME                                    the refusal of the input NAME, which names it in aria-describedby
//
// The editors' inputs are named by the Management API field they edit,
// dotted for nested fields and rows (leader, sizing.ratio,
// followers.0.account, followers.0.sizing.ratio, followers.0.inverse, …);
// a row's "Remove" checkbox is <row>._remove; the hidden inputs etag and
// loaded carry the ETag and the resource the form showed. Buttons' texts
// are "Save", "Delete", "Add a row", and the kinds' actions' ("Restart").
//
//	form#editor                                  an editor's form
//	p.field-error#error-<path>                   a field's refusal, next to its input (aria-invalid, aria-describedby)
//	#form-problems li                            refusals that name no input
//	#changed tr                                  what changed since the form was loaded (after a 412)
//	#notice[role=status]                         what was just done ("Saved. …")
//	#resource-state[data-state=…]                a copier's or monitor's state, live
//	#monitor-pnl .pnl .watermark                 a monitor's session P&L and session high, live
//	#resources tr[data-id][data-state]           a collection's list
//
// The settings' editors add: inputs config.quantity,
// config.brackets.N.quantity (.stopLossTicks, .profitTargetTicks),
// config.breakeven.enabled, config.trailingStop.distanceTicks, …;
// events.N.at (a datetime-local in New York time), events.N.title,
// events.N.impact, roots (comma-separated); connections.N.name (hidden,
// sent back), connections.N.autoReconnect,
// connections.N.dataWatchdogSeconds; an alert destination's kind, name,
// active, graceSeconds, events (one checkbox per activity kind, its value
// the kind), url, botToken, chatId, to. Buttons "Send a test" and
// "Rotate secret".
//
//	.only-if[data-if-field][data-if-values]      a field that applies only while another holds one of the values
//	#once-secret                                 a webhook's signing secret, shown once (with a Copy button)
//	#deliveries[data-live=on|off]                a destination's last deliveries, following the stream socket when on
//	#deliveries li[data-outcome=sent|failed]     one delivery's outcome, newest first
//
// The TradingView page's builder inputs are named after the alert language's keys: command,
// destination, account, instrument, action, qty, order_type, limit_price, stop_price, tif,
// take_profit, stop_loss (ticks), flatten_first, and from_chart; its forms post message and
// confirm. Buttons: "Write the message", "Copy", "Try it", "Rotate key".
//
//	#webhook-url #webhook-key                    the URL and the key, each with a Copy button
//	#webhook-builder #webhook-message            the builder's form and the message it writes
//	#builder-error[role=alert]                   what the parser says of the builder's message
//	#try-result[data-outcome=ok|error]           a dry run; data-would=run|scheduled|blocked|
//	                                             failed|refused; li[data-fn][data-account] per call
//	#webhook-alerts tr[data-alert-id][data-status]  the alert history, newest first, live
//	#webhook-rotated                             the notice after Rotate key
//	#webhook-plan                                the free plan's notice
//
// # Security
//
// The session cookie is tb_session (__Host-tb_session over https):
// HttpOnly, SameSite=Lax, Path=/, Secure except for http://127.0.0.1 and
// http://localhost. A POST is accepted only with the session's CSRF
// token (account.CSRFToken; form field csrf or header X-CSRF-Token) and,
// before there is a session (sign-in, sign-up, reset), only from the
// dashboard's own origin (Origin, else Sec-Fetch-Site). Refusals are 403
// csrf_token_invalid and origin_not_allowed (JSON to a fetch, a page
// otherwise). Every answer
// carries Content-Security-Policy "default-src 'none'; script-src 'self';
// style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action
// 'self'; frame-ancestors 'none'; base-uri 'none'",
// X-Content-Type-Options: nosniff, Referrer-Policy: same-origin and
// Cache-Control: no-store (assets excepted). Another user's resource is
// 404, as a missing one. The broker page's policy adds the origin of the
// broker's authorization page to form-action ("Link demo" answers a
// redirect there), from the relay's configuration.
//
// # Live updates
//
// A page opens the stream socket (/ws/stream) as any client would, with
// its session cookie instead of a token (the stream's session door:
// same origin only, every plan, read-only: no rpc), subscribes to the
// activity log and P&L, and fetches /app/status again on each status
// frame and every few seconds while the agent is online.
package dashboard
