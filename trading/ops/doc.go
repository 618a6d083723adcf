// Package ops implements the agent's RPC functions on top of the platform
// primitives of package bridge. Every operation is written here once, so it
// behaves the same on the simulator and on NinjaTrader; argument checking
// happens here too, before anything reaches the platform.
//
// Construct Ops with New and an Options; Platform is required, the rest has
// defaults (DefaultBracketDelay, DefaultClearTimeout, DefaultPollInterval).
// Every wait goes through Options.Sleep, so tests replace it and never
// sleep; Options.Now must be the platform's clock (lookbackTime windows are
// measured on it).
//
// # Errors
//
// Every failure is a *protocol.Error with a stable code; its detail is a
// fixed sentence that names missing or invalid fields and never repeats a
// value the caller sent (the one exception, by DESIGN.md, is the strategy
// tag that owns a position, named in position_owned). A platform failure
// that fits no code is returned as a plain error, which the dispatcher
// answers with internal_error. A platform's refusal is order_rejected, or
// the platform's own stable code when it names one (bridge.RejectError's
// Code, "tradovate_max_pos_limit_reached"); a primitive the platform
// lacks (bridge.ErrNotSupported) is not_supported, whose detail says what
// to do instead.
//
// # Trailing orders
//
// The order-placing functions (PlaceOrder, FlatPlace, ReversePosition)
// take the trailing types where the platform has them (the broker family;
// the simulator and NinjaTrader answer not_supported): trailDistance, in
// price units, above 0 and on the instrument's tick, is required for
// TrailingStop and TrailingStopLimit and refused with any other type. The
// stop follows the market and never moves back: a Sell's stop is never
// lower than the best bid since placement minus trailDistance, a Buy's
// never higher than the best ask plus trailDistance. A TrailingStop's
// stopPrice is optional: a starting stop nearer the market than that
// (tighter until the market moves); without it the stop starts
// trailDistance from the market. A TrailingStopLimit needs stopPrice and
// limitPrice, both prices (not offsets): the limit moves with the stop,
// keeping their difference, as the broker's order does. Only the quantity
// of a trailing order can be changed (bridge.OrderRequest).
//
// # Nothing half-applied
//
// Every argument is checked before the first write reaches the platform:
// required fields (missing_required_fields names all the missing ones at
// once), enumerated values (matched case-insensitively, written back in the
// platform's casing: Buy, Sell; Market, Limit, StopMarket, StopLimit,
// TrailingStop, TrailingStopLimit; Day, Gtc), quantities (1 to 10,000),
// prices and trailDistance (positive, finite, on the instrument's tick
// grid), text fields (printable, bounded), the account
// (it must exist), the instrument (resolved by the platform: a root means
// its front month; "ES 12-26", "ESZ26" and "ESZ6" are accepted; unknown or
// expired is invalid_instrument, whose detail names the cause and the
// accepted forms), the ATM template (it must exist) and the
// conditions on the position. Operations made of several writes order them
// so that a refusal can happen only before the first one (CancelAndBracket
// checks its legs against the market before it cancels), and take back what
// they placed when a later write fails anyway (a bracket is never left with
// one leg). Where the spec itself orders a close before a placement
// (ReversePosition, Reverse, FlatPlace), a failure of the placement is
// reported with the detail "the old position was closed, but the new order
// failed".
//
// # Exits, relative prices, cancel-after, CancelReplace
//
// PlaceOrder and FlatPlace take Exits (a take profit and a stop loss
// placed once the entry fills), LimitOffset and StopOffset (prices
// relative to the last price, resolved when the order is placed and
// rounded to the nearest tick; a platform with no last price refuses
// them) and CancelAfterSeconds (Limit, StopLimit and StopMarket entries).
// They are checked with the rest of the arguments; then the entry is
// placed and handed to the EntryWatcher (the exits engine,
// trading/engine/exits), which records it before the call returns. Ops
// without a watcher refuses them (not_supported). On a platform that
// implements bridge.BracketSubmitter, exits whose prices are all fixed
// (no offset from the fill) go with the entry in one request instead: the
// broker holds them and sends them when the entry fills, the watcher
// receives no exits (only a cancel-after, if any), and no watcher is
// needed for them. CancelReplace cancels a
// working order, waits for the cancel, and places the new order only when
// nothing of the old one filled. See exits.go and replace.go.
//
// # Concurrency
//
// Ops is safe for concurrent use. Writes that touch one account and
// instrument (a key) run one at a time: each takes the key's lock, which
// waiting callers give up when their context ends. Calls over many keys
// (Flatten of an account, CancelAllOrders, FlattenEverything) take one key
// at a time, never two, so they cannot deadlock. PlaceOrder with
// maxPositions also takes an account-wide lock first, so that two such
// orders cannot both open "the last" position. Reads take no lock.
//
// # Decisions of DESIGN.md, as implemented
//
//   - strategyTag (ownership). A tag claims an account's instrument when it
//     places an order there while no tag owns it and the position is flat.
//     While it owns it, another tag's write (PlaceOrder, FlatPlace,
//     ClosePosition, Reverse, ReversePosition, CloseStrategy) is refused
//     with position_owned, whose detail names the owner; so is a tagged
//     write on an untagged open position (a tag claims only a flat
//     instrument). Writes without a tag are the trader's own and always
//     pass. The tag's share of the position is the sum of the fills of its
//     orders placed since its claim, never more than the net position and
//     never on its other side (a netting account: an opposite untagged
//     holding, a manual close or an untagged flatten reduce it). A tag whose
//     share is zero and that has no working order in the instrument is
//     released. Positions report their owner in the tag field. The record
//     is in memory, per agent process: a restarted agent starts with every
//     instrument unowned.
//   - Flatten, ClosePosition, Reverse and CancelOrders with a strategyTag
//     touch only that tag's orders and position share; force drops the
//     restriction (the call acts as an untagged one). strategyTagMode (on
//     Flatten): exact (default) selects the tag; prefix selects every tag
//     that starts with it (the owner, when it does); exclude selects
//     everything but that tag's orders and share. The order closing a
//     tag's share carries the tag, so that its fill counts against it.
//   - requireMarketPosition: a comma-separated subset of flat, long and
//     short (any casing), checked against the position (the tag's share
//     when the tag owns the instrument); a mismatch is
//     market_position_mismatch and nothing is placed.
//   - maxPositions: an order on an instrument where the account is flat is
//     refused with max_positions_reached when the account already holds
//     maxPositions open positions (in any instruments); orders on an
//     instrument already held are never blocked. 0 blocks every new
//     position.
//   - lookbackTime: seconds, default 320, 0 to 900 (beyond is
//     invalid_argument). ListOrders and GetAllOrders with activeOnly false
//     add the orders that ended within the window to the working ones; an
//     ended order's time is its last fill's, else its submission's
//     (platforms report no cancel time). ListExecutions keeps the fills of
//     the window.
//   - ReversePosition: with no position in the instrument, no_position and
//     nothing else runs (not even the cancellation of working orders).
//     Otherwise the platform's flatten cancels the instrument's working
//     orders and closes the position; the operation then polls every
//     PollInterval (50 ms), for at most ClearTimeout (5 s), until the
//     position is flat and no order of the instrument is working, and only
//     then places the new order. A wait that runs out is position_not_flat
//     and places nothing; a cancelled context stops the wait. The result is
//     the new order's id (plus the close and cancelled orders' ids).
//   - CancelAndBracket, spec rules 1 to 8: (1) the legs are on the side
//     opposite to action; (2) at least one of takeProfit and stopLoss, else
//     missing_required_fields and nothing is cancelled; (3) every
//     non-terminal order of the instrument on the account is cancelled
//     (every tag's), then the operation waits BracketDelay (300 ms; ctx
//     ends it), then places the bracket; (4) the legs' quantity is the
//     position's size when that is smaller than quantity, read after the
//     wait; (5) when there was a position and it is flat after the wait, no
//     bracket is placed (placed false, orderIds []); (6) when there was no
//     position at all, the legs are placed at quantity as a straddle entry
//     (the same two orders, resting on either side of the market; the first
//     to trigger enters and cancels the other); (7) the legs share the
//     caller's ocoId or a generated one ("bracket-" and 16 hex digits);
//     (8) the result is {orderIds: [stop loss, take profit]} plus ocoId,
//     quantity, placed, cancelledOrderIds and the orders. The stop loss is
//     a StopMarket order, the take profit a Limit order, both Gtc, named
//     "Stop loss" and "Profit target"; the stop is placed first. On a
//     platform that implements bridge.PairSubmitter (a broker that joins
//     orders to an OCO group only when they are placed together) two legs
//     are placed in one request, SubmitOCO, both or neither; the result
//     reads the same. A lone leg goes to such a platform as a plain order
//     (no OCO id on the order; the result still reports ocoId), since it
//     joins no order to a group afterwards.
//
// # Choices where the spec and DESIGN.md are silent
//
//   - A position open on the other side than CancelAndBracket's action is
//     market_position_mismatch before anything is cancelled (the bracket
//     would add to it); a stop loss at or through the market, a take profit
//     on the wrong side of the stop loss, and (with no position) a take
//     profit that would enter at once are invalid_argument, also before
//     anything is cancelled. A position that changed side during the wait
//     is market_position_mismatch (orders cancelled, no bracket).
//   - targetQuantity (PlaceOrder, FlatPlace): the position, in contracts in
//     the direction of action, that the account (the tag's share, for a
//     tag that owns the instrument) should hold once the order fills. The
//     order's quantity is computed as the difference; quantity may then be
//     omitted. When the position already is there nothing is placed and the
//     result has unchanged true and no order. Reaching the target may need
//     an order on the other side of action (long 5, Buy with target 2 sells
//     3): allowed for Market orders only, resync_limit_exceeded for priced
//     ones, whose price was meant for the other side.
//   - maxResyncCorrection (only with targetQuantity): the largest difference,
//     in contracts, between the computed order and the signal's own order
//     (quantity in the direction of action, zero when quantity is omitted)
//     that the agent corrects. A bot in sync sends quantity 1 and target 3
//     while long 2: correction 0. Beyond the limit nothing is placed:
//     resync_limit_exceeded. Without it any correction is placed.
//   - smartOptions: an object of options, each refused when unknown:
//     flattenFirst (flatten the instrument, or the tag's share, and wait for
//     it to clear, then place: FlatPlace is PlaceOrder with flattenFirst,
//     where orderType defaults from the prices and timeInForce to Day)
//     and reduceOnly (refused with market_position_mismatch unless the
//     order only reduces the position, never to the other side).
//   - force: on every write that has it, force lifts the strategy-tag
//     restrictions: a tagged order may trade an instrument another tag
//     owns (without taking it over) and a tagged close, reverse, flatten or
//     cancel acts on the whole position and every order, as an untagged
//     one would. force never lifts requireMarketPosition, maxPositions,
//     maxResyncCorrection or reduceOnly, which the caller chose for this
//     order. A forced Reverse or ReversePosition leaves the instrument
//     flat before its new order, so the new order's tag claims it.
//   - ReversePosition always closes the whole position in the instrument;
//     its optional strategyTag (and force) tag the new order and are checked
//     against the owner. Reverse closes the position (the tag's share with
//     a tag) and its working orders, waits as ReversePosition does, and
//     opens the opposite side at the same size with a Market order: two
//     orders rather than one of double size, so that no stop of the old
//     position can act on the new one.
//   - ClosePosition: quantity or percent, not both (invalid_argument);
//     neither closes everything. quantity above the position closes the
//     position. percent is a fraction, above 0 and at most 1 (0.5 closes
//     half; anything else is invalid_argument); the quantity is rounded up
//     to a whole contract and never exceeds the position (0.5 of 3 is 2,
//     0.01 of 1 is 1). The result carries the closing order's id in
//     orderId and orderIds, and the position as it stood before the close
//     (the tag's share with a tag) in closedPositions. A close that leaves the position
//     (or the tag's share) flat also cancels the working orders it selects,
//     so that stops and targets of a closed position cannot open a new one;
//     a partial close leaves them alone. No position is no_position.
//   - Flatten: account optional (every account), instrument optional (every
//     instrument with a position or a working order), cancelOrders default
//     true (false closes positions and leaves orders). It does not wait for
//     the platform to confirm. The result lists the positions (or shares)
//     closed as they were, the closing orders and the cancelled orders.
//     FlattenEverything is Flatten with no arguments.
//   - CancelOrders: the account's working orders, narrowed to instrument and
//     strategyTag (the orders carrying exactly that tag; force drops the
//     filter). CancelAllOrders: every account's. An order that ends on its
//     own while being cancelled is skipped, not an error. The result is
//     {cancelledOrderIds}.
//   - CancelOrder, ChangeOrder: account and orderId required. ChangeOrder
//     needs at least one of quantity, limitPrice and stopPrice, and refuses
//     a price the order type does not have (a trailing order's prices
//     follow the market: only its quantity changes). When the platform gives a
//     changed order a new id, the agent remembers original → current (in
//     memory, the last 100,000 changes): GetOrder, CancelOrder and
//     ChangeOrder accept any id the order has had, and
//     GetExecutionsByOrderId matches the fills of every one of them.
//     GetOrder and GetExecutionsByOrderId search every account when account
//     is omitted; GetExecutionsByOrderId has no lookback (the whole session).
//   - GetPosition: a Flat record (account, full instrument name,
//     instrumentType Future, marketPosition Flat, zeros) when there is no
//     position. GetAllPositions with includeFlat adds a Flat record for each
//     account and instrument that had an order this session and holds
//     nothing now.
//   - GetAccountSummary: {accounts: [account record + positions + orders
//     (working only)], time, epoch}, read account by account.
//   - GetQuote and MarketInfo take instrument or root (instrument wins when
//     both are sent; neither is missing_required_fields). showRollover adds
//     rollover: the quote of the contract after the resolved one. GetQuote's
//     account is accepted and does not matter.
//   - GetBars: periodType default minute, period default 1, daysBack
//     default 1, limit default 5000 and at most 20,000 (the frame limit),
//     from/to as RFC 3339 or YYYY-MM-DD (midnight UTC); from and to win over
//     daysBack; to without from is missing_required_fields; timeoutMs (1 to
//     120,000) bounds the call. splitAdjust, dividendAdjust and mergePolicy
//     (DoNotMerge, MergeBackAdjusted, MergeNonBackAdjusted,
//     UseGlobalSettings) are accepted and have no effect on futures. The
//     simulator's own refusals (sim.ErrBadBarsRequest) are invalid_argument
//     with its fixed reason.
//   - Strategies: StartStrategy needs strategyClass and instrument; mode
//     Realtime (default) or Disabled; periodType default minute; period
//     default 1. CloseStrategy refuses signalName (invalid_argument): the
//     agent can close only a whole strategy, and closing more than asked is
//     not a silent substitute. ListStrategies and ListAllStrategies leave
//     out ended strategies unless includeTerminal.
//   - Orders the agent places itself are named: "Close" (closing a position
//     or share, Market, Day), "Reverse" (Reverse's new side), "Stop loss"
//     and "Profit target" (bracket legs).
//   - Resolved instruments are cached for one second of the platform's
//     clock: for at most that long after a root's front month rolls, an
//     order naming the root may still go to the previous contract, which
//     trades for days more.
package ops
