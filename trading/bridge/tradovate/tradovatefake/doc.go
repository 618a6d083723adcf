// Package tradovatefake fakes Tradovate's API for tests: an HTTP server on
// 127.0.0.1 that answers the REST calls, the user-data socket and the
// market-data socket the relay's Tradovate client (trading/bridge/tradovate)
// uses, as the broker documents them (shapes in package tradovatewire), over a
// simulated market (trading/bridge/sim). It is imported by tests only; the
// relay's binary never links it (cmd/agent's dependency test checks).
//
// # Market
//
// Options.Market is the simulator behind the fake. The fake never moves
// its clock: tests do (ManualClock, Step, SetPrice), and the fake reports
// what the simulator publishes. Orders, fills, positions and account values
// are the simulator's; the fake names them the broker's way:
//
//   - The user: one, UserID, named Options.Name.
//   - Accounts: the simulator's, in its order, with ids 800001, 800002, …
//     (AccountID). Type Customer, Speculator, Individual, active.
//   - Contracts: the simulator's "ES 12-26" is the broker's "ESZ6" (root,
//     month code, last digit of the year), with an id from 3000001 given
//     the first time the fake names it. /contract/find, placeorder's
//     symbol and md/subscribequote take that form only: "ESZ26",
//     "ES 12-26" or a bare root are unknown, as at the broker.
//   - Orders: an order placed through the fake is placed in the
//     simulator under an id the fake chooses (5000001, …), the same number
//     on both sides; its text is the simulator order's name, and back.
//     An order placed in the simulator directly gets a broker id of its
//     own. ordStatus: Submitted is PendingNew; Accepted, Working and
//     PartFilled are Working; Filled, Canceled (the broker's spelling) and
//     Rejected follow the simulator. Types: Market, Limit, Stop
//     (StopMarket), StopLimit, TrailingStop and TrailingStopLimit; time
//     in force Day and GTC. A Stop order's stop is stopPrice, or price
//     when stopPrice is absent.
//   - Trailing orders, which the simulator lacks, are its stops (or
//     stop-limits) moved by the fake: pegDifference is the trail, signed
//     (negative for a Sell: the stop below the market; positive for a
//     Buy), else InvalidPrice. The stop starts at stopPrice, or the trail
//     from the market (the bid for a Sell, the ask for a Buy) when
//     stopPrice is absent or farther away; on each quote of the contract
//     (the fake follows the quotes of a contract with a working trailing
//     order) it moves to the bid plus pegDifference (Sell) or the ask
//     plus pegDifference (Buy) when that is nearer the market, never
//     back. A TrailingStopLimit's price moves with its stop. Each move is
//     a new version, of type TrailingStop (or TrailingStopLimit) with
//     the pegDifference and the stop where it stands. Only the quantity
//     of a trailing order can be modified: another pegDifference is
//     TrailingStopNonOrderQtyModify, and the prices sent are ignored.
//   - Order versions: an order's terms (orderQty, orderType, price,
//     stopPrice, timeInForce, text) are its versions, ids from 6000001: a
//     modification that changes them makes a new version; the current one
//     has the highest id.
//   - Fills: one per simulator execution, ids from 7000001. Each fill's
//     commission is its fillFee (props event right after the fill's, and
//     fillFee/list; the syncrequest answer has no fillFees, as its
//     documentation lists none), as the broker reports it. A fill BustFill
//     marks is active false from then on.
//   - Positions: a row per account and contract the account traded (ids
//     from 8000001), with the day's bought and sold quantities and values
//     and the net position; a row whose position went flat stays with
//     netPos 0, as at the broker. A position held before the fake started
//     counts as bought (or sold) at its average price.
//   - Cash balances: one per account (ids from 9000001): amount is the
//     simulator's cash value, realizedPnL the session's realized P&L net of
//     commission, weekRealizedPnL the week's, amountSOD amount minus
//     realizedPnL. The unrealized P&L, net liquidation and margins are only
//     in /cashBalance/getcashbalancesnapshot.
//
// Timestamps are the simulator's (an order's creation, a fill's time);
// trade dates are the trade date of the session at that time. Entities
// with no time of their own take the latest simulator time the fake saw,
// or the auth clock when it saw none.
//
// # REST
//
// Under /v1, paths in any case: auth/accesstokenrequest,
// auth/renewaccesstoken (GET or POST), auth/me, auth/oauthtoken,
// account/list, cashBalance/getcashbalancesnapshot, position/list,
// order/list, order/item?id=, orderVersion/list, fill/list, fillFee/list,
// contract/item?id=, contract/find?name=, order/placeorder, order/placeoco,
// order/placeoso, order/cancelorder, order/modifyorder,
// order/liquidateposition. Every
// call but the auth ones needs "Authorization: Bearer" with a live access
// token (else 401 with errorText "Access is denied"). Lists hold every
// account's entities; order/list and fill/list the simulator's current
// session and the orders still working; orderVersion/list every version
// of those orders.
//
// The answers follow the documentation: a refused login is HTTP 200 with
// errorText; an order request the broker refuses is HTTP 200 with
// failureReason and failureText (the simulator's reason, which never
// repeats the request): SessionClosed (market closed), InvalidPrice,
// TooLate (cancelling or changing a finished order), InvalidContract,
// Unsupported (an order type or time in force the simulator lacks,
// changing an order's type), TrailingStopNonOrderQtyModify, NoQuote (a
// trailing stop to start from a market that has no price), else
// UnknownReason. A malformed request (bad
// JSON, an unknown action, order type or time in force, orderQty below 1)
// is HTTP 400 with errorText; an unknown account, order or contract id is
// HTTP 404 with errorText "Not found". liquidateposition with no position
// to close cancels the contract's orders and answers {} (no orderId).
// placeoco places both orders as one OCO pair (ocoId of each is the
// other's id): when one fills, even partly, the other is cancelled; when
// the other order is refused, the first is cancelled and the refusal
// answered. placeoso places the entry and answers its brackets' ids
// (oso1Id, oso2Id) at once; the brackets are sent when the entry is done,
// sized to what it filled, as an OCO pair when there are two, and with
// the entry as their parentId; an entry done unfilled sends none. Every
// write must carry isAutomated: true, else HTTP 400 with errorText (the
// documentation asks for it; the fake is stricter than the broker). The
// clOrdId of a placement is kept as the broker's command entity echoes it
// (ClOrdID): every order placed has a New command (clOrdId and orderId),
// sent after the order's first events and listed in the syncrequest
// answer's commands. user/syncrequest with users and entityTypes together is HTTP
// 400, as the partner documentation says not to combine them.
//
// A call's events are written to the sockets before the call is answered.
//
// # Sockets
//
// /v1/websocket is the user-data socket (UserSocketURL), /md/v1/websocket
// the market-data socket (MDURL). Both speak the broker's framing
// (tradovatewire): "o" on open, "h" every Options.Heartbeat, "a[...]" messages;
// the client's "[]" heartbeats are read, and a socket whose client sent no
// frame for Options.ClientSilence (DefaultClientSilence) is dropped. The first request must be "authorize" with an access
// token (user data) or the mdAccessToken (market data; an OAuth token opens
// both); it answers {"s":200,"i":id} or 401, and every request before a
// successful one is answered 401. A frame that is no request closes the
// socket.
//
// On the user socket, user/syncrequest answers the whole state (users,
// accounts, cashBalances, contracts, positions, orders, orderVersions,
// fills) and from then on the socket receives props events: contract,
// order, orderVersion and fill Created; order, position and cashBalance
// Updated (position Created for a new row). Any other request is served
// as the REST endpoint of that name ("account/list", "order/item",
// "order/placeorder", with the query line and the body) and answered with
// its HTTP status as s and its JSON as d; the events published before it
// are sent before its answer, so any request serves as a barrier.
//
// On the market-data socket, md/subscribequote and md/unsubscribequote
// take {"symbol":"ESZ6"} or a contract id. After a subscription the socket
// receives the contract's current quote, then an md event per change the
// simulator publishes (Bid, Offer, Trade, HighPrice, LowPrice,
// OpeningPrice, TotalTradeVolume). The fake subscribes the simulator to a
// contract while a socket follows it.
//
// # Sessions and knobs
//
// A login with the configured credentials (Options: Name, Password,
// AppID, CID, Sec) answers an accessToken, an mdAccessToken and their
// expirationTime (Options.TokenLifetime after Options.Now). Renewal answers
// new tokens; the old ones stay valid until they expire. The OAuth flow:
// the authorize page (OAuthAuthorizeURL) redirects at once to its
// redirect_uri with a code and the state; IssueCode makes a code without
// the page; /auth/oauthtoken exchanges a code once, for the configured
// client, answering access_token, token_type Bearer and expires_in, or
// HTTP 400 with error and error_description.
//
// Any REST endpoint answers penalty tickets as the broker does (HTTP 200,
// {"p-ticket":…,"p-time":N}, the request not handled): for the next
// requests of a path (PenalizeNext), or per client address (/24) across
// every login once Options.AddressLimit requests came within
// Options.AddressWindow. A resend of the same endpoint with the ticket
// ("p-ticket" in the JSON body, or a p-ticket query parameter without a
// body) is handled once p-time passed; an earlier one gets the ticket
// again. PenalizeNext also tickets a socket's requests (the ticket is the
// data of a reply with s 200; a resend over the socket is not taken).
// Tickets and TicketedHandled count them.
//
// Tests provoke the broker's failures with FailLogins, PenaltyTicket,
// PenalizeNext, Captcha, RateLimit, RejectNext, RefuseQuotes, Unreachable,
// DropSockets, DropMDSockets and BreakNextOrderReply; its less common answers with RejectNextCommand (a
// cancel or modification accepted, then rejected by a commandReport, its
// events before or after the answer), SuccessReason (failureReason
// "Success" on accepted commands), BustFill (a fill turned inactive),
// AddPositionRow (a row of an older trade date), RefuseUserSockets (the
// user-data socket refused while REST works), MuteUserEvents (props
// events lost on the way) and ReplaceNextText (the next placement's
// versions with another text, or none); the sockets' with SocketRateLimit (a request
// answered {"s":429} as documented: no data, no ticket), ShutdownSockets
// (the shutdown event with a reasonCode, then the sockets closed),
// WithholdContracts (contracts left out of the sync answer and the props
// events, to be looked up) and SlowContractItem (a busy contract/item);
// and observe with Logins, Renewals, Requests, EventsSent and
// OrdersPlaced. Flush sends what the simulator published
// so far, so a test's settle can compare a client's count of applied props
// events with EventsSent.
package tradovatefake
