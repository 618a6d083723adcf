// Package stream serves the WebSocket stream API at GET /ws/stream: market
// data, profit-and-loss streaming, the user's activity log as it is
// written, and the WebSocket form of RPC for the desktop platform, through the user's agent (package hub). This comment is
// the socket's contract; the spec leaves most of it "not shown", and the
// decisions below fill those gaps.
//
// # Opening a socket
//
// The API token travels as "Authorization: Bearer <token>" on the upgrade
// request or, for browsers, which cannot set headers on a WebSocket, as
// the query parameter ?token=<token> (the only query parameter accepted;
// the header wins when both are sent). The query string is removed from
// the request before anything else runs, so a token in it reaches no log
// or metric. Before the upgrade the relay checks, in order (package
// admit's steps with this package's Door), and answers with the trading
// API's JSON error body:
//
//	429 rate_limited (policy ip)  the client address's budget
//	426 upgrade_required          not a WebSocket upgrade
//	400 unknown_parameter         a query parameter other than one token
//	401 unauthorized              missing, malformed or revoked token
//	403 plan_required             the plan is below pro
//	429 rate_limited (trading)    the user's trading budget: opening a
//	                              socket costs one request of it
//	503 shutting_down             the relay is stopping
//
// Compression is off. Any browser origin may connect (unless
// Options.OriginPatterns says otherwise): the credential is the token sent
// with the upgrade, never a cookie. A user may hold MaxSocketsPerUser
// sockets (default 5); one more is accepted and closed at once with 1008
// and the reason "too many sockets for this user (limit 5)", because a
// browser cannot read the status of a refused upgrade but does see a close
// reason. Every rpc and subscription frame first checks the socket's
// token and plan again, through the admission layer's token cache, so a
// revoked token or a downgraded plan stops acting on a socket within the
// cache's TTL (2 s), as on HTTP: the frame is answered with HTTP's code
// (unauthorized, plan_required), runs nothing, costs no budget, and the
// socket closes with 1008 (when the store cannot say, the frame alone is
// refused, storage_unavailable with retryAfter). Besides, the socket
// re-checks its token and plan every ReverifyInterval (30 s), so that an
// idle socket (receiving quotes, P&L, activity) closes with 1008 too.
//
// Opening a socket is a read: a read-scoped API token opens one, and its
// rpc frames that read run as a trade token's do. An rpc frame of a
// function that writes (PlaceOrder, ClosePosition, FlattenEverything, …)
// from a read token is answered {success:false,
// error:"insufficient_scope"} with the scope needed in the detail; it is
// charged to no budget and calls nothing.
//
// # The dashboard's sockets (the session door)
//
// The dashboard's pages (package relay/dashboard) open the socket as any
// client would, but with the session cookie the browser sends instead of
// a token: an upgrade with no Authorization header and no token parameter
// that carries a session (Options.SessionToken) is admitted by
// SessionDoor. Its Origin must be the relay's own (the request's Host,
// scheme https, or http when the request did not come over TLS): any
// other origin, none, or "null" is 403 origin_not_allowed before the
// session is looked at, so no other site's page can ride on the cookie.
// Then, as for a token: 401 unauthorized for a session unknown, expired
// or signed out, the user's trading budget (one request), the socket
// limit. Every plan is admitted. Such a socket reads only: status,
// subscribe, streamPnl and the activity log work as for a token, and an
// rpc frame is answered {success:false, error:"read_only_socket"} and
// runs nothing. Its re-verification checks the session (its own kind)
// every SessionReverifyInterval (2 s; sessions are never cached) and
// closes the socket with 1008 "dashboard session ended" once it was
// signed out or expired.
//
// # Client frames
//
// Each client frame is one JSON object in a text message of at most
// ReadLimit bytes (64 KiB; larger closes the socket with 1009), strict
// JSON as on HTTP (no duplicate keys, nesting at most 32). Every frame has
// an action and may have an id (a string of at most 128 bytes or a
// number), which the reply carries back as sent. Fields an action does not
// take are refused.
//
//	{"action":"rpc","id":"1","api":"PlaceOrder","args":{"account":"Sim101",…}}
//	{"action":"subscribe","instruments":["ES","NQ 12-26"]}
//	{"action":"unsubscribe","instruments":["ES"]}
//	{"action":"streamPnl","enabled":true,"interval":1000}
//	{"action":"subscribeActivity"}
//	{"action":"unsubscribeActivity"}
//	{"action":"ping"}
//
// Every client frame gets exactly one reply; the relay reads the next frame
// only while fewer than MaxInFlight+16 replies are owed, so a client that
// sends without reading is held back by TCP, never queued without bound.
//
// # Server frames
//
// Every server frame is a JSON object whose first field is seq: 1 on the
// socket's first frame and one more on each next one, so a client can tell
// that it missed nothing.
//
//	{"seq":1,"type":"status","agentConnected":true,"detail":"…"}
//	{"seq":2,"id":"1","success":true,"data":{…PlaceResult…},"orderId":"…"}
//	{"seq":3,"id":"2","success":false,"error":"no_position","detail":"…"}
//	{"seq":4,"type":"subscribed","instruments":["ES 12-26","NQ 12-26"],"unknown":["XX"],"quotes":[{…Quote…}]}
//	{"seq":5,"type":"unsubscribed","instruments":["ES 12-26"]}
//	{"seq":6,"type":"pnlStreaming","enabled":true,"interval":1000}
//	{"seq":7,"type":"pong"}
//	{"seq":8,"type":"error","error":"invalid_frame","detail":"…"}
//	{"seq":9,"type":"marketData","quotes":[{…Quote…},…],"dropped":12}
//	{"seq":10,"type":"pnlUpdate","epoch":1767225600000,"accounts":[{…PnlAccount…}]}
//	{"seq":11,"type":"activitySubscribed"}
//	{"seq":12,"type":"activity","event":{…ActivityEntry…}}
//	{"seq":13,"type":"activityUnsubscribed"}
//
// Every frame has a type except rpc replies, as the specification says: a
// client tells a reply from an event by the absence of type, and matches
// it to its request by id. Replies carry the frame's id when it had one.
// Error frames and failed rpc replies have error (a stable code), detail
// (a sentence that never repeats what the client sent), and, where they
// apply, fields, retryAfter (seconds) and policy, as the HTTP API's error
// body.
//
// # status
//
// A status frame comes right after the socket opens and whenever the
// user's agent connects or disconnects. It reports the current state:
// when the agent flaps faster than the client reads, the client sees the
// latest state, not every change. When the agent connects again, the
// socket's subscriptions are sent to it again; if its platform cannot
// take them yet (NinjaTrader still starting), they are sent again when
// the platform's connections change, and every second until they are
// taken, so that quotes resume without the client doing anything.
//
// # rpc
//
// api names a public RPC function (unknown or internal names are
// unknown_function); args holds the path parameters and body fields of the
// function's HTTP route together, plus the query parameters (typed, or as
// the text HTTP carries: "true", "320"), and is checked against the same
// table as the HTTP routes (relay/tradeapi), with the same codes and field
// errors, defaults filled in.
//
// The reply has no type. A success is {id,success:true,…} with the
// members the HTTP route answers in the profile of the socket's API token
// (package relay/profile, sk.p.Profile): in the standard profile
// data, always an object (lists are named: ListAccounts {"accounts":[…]},
// ListPositions {"positions":[…],"count":n}, ListOrders {"orders":[…]}),
// with a write's orderId or orderIds also at the top level:
//
//	{"seq":5,"id":"p","success":true,"data":{"orderId":"…",…},"orderId":"…"}
//	{"seq":6,"id":"l","success":true,"data":{"positions":[…],"count":1}}
//
// in the compatible profile the members of data stand at the top level
// (GetWatermarks keeps data in both):
//
//	{"seq":5,"id":"p","success":true,"orderId":"…",…}
//	{"seq":6,"id":"l","success":true,"positions":[…],"count":1}
//
// A failure is {id,success:false,error,detail} (fields, retryAfter where
// they apply), the same in both profiles; the errors are the HTTP API's
// (addon_disconnected when the agent is away, outcome_unknown when a
// write's tunnel dropped, deadline_exceeded, the agent's codes).
//
// A write may carry idempotencyKey in args, the Idempotency-Key header's
// counterpart, removed before the call; PlaceOrder, FlatPlace and
// ReversePosition also use orderId. A keyed write runs under the HTTP
// API's rule, on the same durable store (relay/tradeapi KeyedWrites): the key
// ("key:<idempotencyKey>" or "order:<orderId>", per user) is one key space
// for both doors; the request is fingerprinted by function and canonical
// typed args, not by transport; the agent is called with request id
// "idem:key:<key>" or "idem:order:<orderId>"; and the outcome (the agent's
// result, or the error) is recorded before the reply is sent. A repeat
// within 24 h, over the socket or HTTP, is answered with the recorded
// outcome, rendered in the asking token's profile, with "replayed":true
// (Idempotent-Replayed: true on HTTP), and runs nothing, even after the
// agent restarted and forgot its request ids. Another request under the
// same key is idempotency_key_reused; a repeat while the first runs is
// request_in_progress (retryAfter: 1 while the first runs on this relay,
// else the seconds until its record goes stale, 60 s after a relay killed
// mid-call left it running); a store that cannot record the key
// answers storage_unavailable and sends nothing. An outcome the relay
// could not learn (outcome_unknown, addon_disconnected, the agent's
// request_in_progress, the socket closing mid-call) is not recorded as the
// answer: the retry runs again under the same request id and the agent
// answers from its memory. A write without a key gets a fresh
// request id, so the agent runs it at most once however the tunnel
// behaves.
//
//	{"seq":9,"id":"p2","success":true,"data":{"orderId":"…",…},"orderId":"…","replayed":true}
//
// Every write, once its reply is queued, is an entry of the user's
// activity log (Options.Events, tradecall.Activity), as on HTTP but of
// source stream: order.placed, order.changed, order.refused,
// trading.blocked or order.replayed; reads and frames refused before the
// call are not recorded.
//
// Every rpc frame costs one request of the user's trading budget, the one
// the HTTP API charges (180 per minute, burst 20); over it, the reply is
// rate_limited with retryAfter and policy "trading". The budgets' refusals
// (rpc frames, subscriptions, the upgrade) are told to the Admitter's
// Refusals, which records them in the activity log, aggregated. A socket runs at most
// MaxInFlight (16) calls at once, concurrently, each bounded by
// CallTimeout (30 s); one more is answered too_many_concurrent_requests
// (not charged). A call still running when the socket closes is
// cancelled, as an HTTP request whose client went away.
//
// # subscribe, unsubscribe
//
// instruments holds 1 to MaxInstruments names in the forms the HTTP API
// accepts ("ES 12-26", "ES", "ESZ26"); a malformed name refuses the frame
// with invalid_instrument and nothing changes. A socket subscribes to at most
// MaxInstruments (50) names (too_many_instruments beyond, nothing
// changes). Subscription frames of all of a user's sockets share a budget
// of 20 per minute, burst 10 (rate_limited, policy "subscriptions").
// Subscribing needs the agent (addon_disconnected otherwise); unsubscribing
// does not.
//
// The relay sends the agent the union of all of the user's sockets' names
// with the internal function SetSubscriptions (the whole set, so the call
// is idempotent) whenever the union changes, again whenever the agent
// connects, and an empty set when the user's last socket closes. The
// agent answers with the contracts it subscribed and the names it does not
// know; the subscribed reply lists the contracts the frame's names resolve
// to (a root resolves to its front month), in unknown the names the agent
// does not know, which are not subscribed, and in quotes the latest quote
// the relay has of each contract (omitted when it has none yet): a new
// subscriber has the current market at once, even for a quiet contract,
// and also when another socket already streams it. Later quotes come as
// marketData; a quote already in the reply is not repeated. Quotes are
// matched by contract name (see resolveNames for the rules). The
// unsubscribed reply lists the contracts of the names removed; no quote of
// a contract that is no longer subscribed follows it.
//
// # marketData
//
// A marketData frame holds the latest quote of each subscribed contract
// that changed since the socket's previous marketData frame, at most one
// per contract. Each socket has one writer and a slot per subscribed
// contract: a quote that arrives before the writer took the previous one of
// the same contract replaces it. A slow client thus gets the latest quotes,
// never a backlog, and the relay holds at most one pending quote per
// subscribed contract per socket. dropped is the socket's cumulative count
// of quotes replaced that way, present once it is not 0. Each quote is
// encoded once for all sockets. A woken writer yields once before it
// collects the quotes, so that a burst of quotes (one per instrument)
// travels in one frame. A client that reads nothing for WriteTimeout
// (10 s) while a frame waits is disconnected (a watchdog, not a timer per
// frame).
//
// # streamPnl, pnlUpdate
//
// streamPnl turns P&L streaming on or off for the socket; interval is in
// milliseconds, 250 to 60000 (invalid_argument outside, its field naming
// the bound crossed: greater_than_equal 250 or less_than_equal 60000;
// nothing changes),
// default 1000. The reply echoes the setting. The relay polls the agent
// with the internal function GetPnl (not charged to any budget) at the
// smallest interval any of the user's sockets asked for, and a socket gets
// a pnlUpdate frame (the agent's snapshot: epoch in milliseconds and
// accounts) when its own interval has elapsed since its previous one. A
// socket that turns streaming on gets a first frame at once: the user's
// last snapshot when it is younger than 250 ms, else a new poll (at most
// one extra poll per 250 ms per user). While the agent is away nothing is
// polled and no pnlUpdate is sent.
//
// # subscribeActivity, activity
//
// subscribeActivity subscribes the socket to the user's activity log (the
// entries GET /v1/api/activity answers, package relay/activity) as they
// are written, on this relay node or any other; unsubscribeActivity ends
// that. Neither takes a field besides action and id, neither needs the
// agent nor costs a budget, and both are idempotent. The reply
// (activitySubscribed, activityUnsubscribed) comes before the first
// entry, and no entry follows activityUnsubscribed. Each entry written
// while the socket is subscribed comes once, as an activity frame whose
// event is the entry (protocol.ActivityEntry: id, at, kind, account,
// source, summary, detail), in the order the log wrote them. Entries
// written before the subscription are not sent: read them with the
// route (GET /v1/api/activity?before=…).
//
// Each socket queues at most MaxActivityQueue (256) entries for its
// writer; an entry beyond is dropped, and dropped, the socket's
// cumulative count of dropped entries, is on every later activity frame
// once it is not 0 (as on marketData). A client that sees dropped grow
// reads the log's route for what it missed.
//
// # Malformed frames
//
// A frame that is not JSON, not an object, has no known action, a field
// its action does not take, a field of the wrong type, or (rpc) an unknown
// api, is answered with an error and counts as malformed. After
// BadFrameLimit (10) malformed frames in a row, or 10 within
// BadFrameWindow (1 minute), the socket is closed with 1008 "too many
// malformed frames". Refusals for budgets, limits and argument values do
// not count.
//
// # Close codes
//
//	1000  the client closed
//	1001  the relay is shutting down
//	1008  too many malformed frames; too many sockets for the user; the
//	      token was revoked or the plan changed (found at the next rpc or
//	      subscription frame, or the periodic re-verification)
//	1009  a client frame over ReadLimit
//
// A client that stops reading (write timeout) or answering pings is
// dropped without a close frame.
//
// # Isolation
//
// A socket belongs to the user of its token. Events reach the Server with
// the user id of the tunnel they came from (HandleEvent), and only that
// user's sockets, subscribed to the quote's contract, receive them; P&L is
// polled per user and delivered to that user's sockets only; an activity
// entry reaches only its user's sockets subscribed to the activity.
package stream
