// Package sim is the agent's built-in trading platform: an in-process,
// deterministic paper-trading simulator that implements bridge.Platform. It
// is the default platform for demos (agent run --platform sim) and the test
// double on which every operation of trading/ops is tested, so it behaves like
// NinjaTrader where the two can be compared: the same record shapes (package
// protocol), the same enumerated spellings, the same instrument names.
//
// # Accounts
//
// By default the platform has one connection, "Simulated Data Feed", with the
// accounts Sim101 and Sim102, each starting with 100,000 USD (Options changes
// both). Account names match exactly (case-sensitive). Account values are
// recomputed on every read from the account's fills and the current prices:
//
//   - grossRealizedProfitLoss: the sum of the P&L of every reduction in the
//     current trading session, before commission;
//   - commission: the commission charged in the current trading session;
//   - realizedProfitLoss: the session's gross realized P&L minus its
//     commission. Like NinjaTrader's, these three restart at every session
//     (see Trading sessions);
//   - cashValue: starting cash plus the realized P&L, net of commission, of
//     every session;
//   - unrealizedProfitLoss: the open positions marked at the last price;
//   - netLiquidation: cash value plus unrealized P&L;
//   - maintenanceMargin: open contracts times the root's approximate exchange
//     maintenance margin; initialMargin is 110% of it;
//   - buyingPower: net liquidation minus initial margin. It is reported, not
//     enforced: the simulator never refuses an order for lack of margin;
//   - weeklyProfitLoss: the realized P&L, net of commission, since the
//     trading week opened (Sunday 18:00 New York time); dailyLossLimit and
//     trailingMaxDrawdown are zero (no limit set).
//
// Dollar amounts are rounded to cents when they are charged or reported.
//
// # Commission
//
// Every fill costs Options.CommissionPerContract per contract, whatever the
// instrument (one figure, charged on each side of a round turn). The default
// is DefaultCommissionPerContract, 0.62 USD, roughly the all-in rate of a
// micro contract at a discount broker; set the option for standard contracts,
// or make it negative for a commission-free simulator.
//
// # Instruments
//
// The simulator trades every root of package futures, the CME futures ES,
// MES, NQ, MNQ, YM, MYM, RTY, M2K, CL, MCL, GC and MGC, with their real tick
// sizes, tick values and point values. Which contracts exist, their roll
// and expiry dates, the front month and the trading hours are package
// futures' rules (see its documentation); the simulator applies them at its
// own clock. A contract is named NinjaTrader style, "<ROOT> <MM>-<YY>" ("ES
// 12-26"), and every record the simulator reports carries that full name.
// Callers may also write a bare root ("ES", the front month) or the
// month-code form ("ESZ26", "ESZ6"; a one-digit year is the first year from
// the current one that ends in that digit), as futures.Resolve reads them.
// Matching is case-insensitive and ignores surrounding spaces. A root the
// simulator does not know, a month that is not a contract month of its
// root ("ES 11-26"), a contract already expired or one more than ten years
// out is a *bridge.InstrumentError naming the cause (it matches
// bridge.ErrInstrumentUnknown), made from futures' refusal by
// bridge.InstrumentErrorFrom.
//
// In short: equity index roots (ES, MES, NQ, MNQ, YM, MYM, RTY, M2K) are
// quarterly and expire on the third Friday of the month; crude oil (CL,
// MCL) is monthly and expires on the 20th of the month before; gold (GC,
// MGC) is bimonthly, rolls on the 25th of the month before and expires on
// the 27th. The front month switches when the roll date's trading session
// opens, 18:00 New York time on the day before it; a contract expires when
// its last trading day's session closes, 17:00 New York time.
//
// Instrument describes a contract as futures.Contract.Info does: root,
// description ("E-mini S&P 500"), exchange (CME; CBOT for YM and MYM; NYMEX
// for CL and MCL; COMEX for GC and MGC), currency USD, tick size, point and
// tick values, expiry (the last trading day) and roll date (YYYY-MM-DD, New
// York), the next contract, the trading hours in words, whether the market
// is open now, and the next five sessions (the current one first while it
// is open; none past the expiry) in RFC 3339 UTC.
//
// # Trading hours
//
// Every root trades CME Globex hours (futures.SessionFrom and
// futures.Contract.Open): from Sunday 18:00 to Friday 17:00 New York time,
// with a daily break from 17:00 to 18:00. Each session lasts 23 hours, from
// 18:00 to 17:00 the next day, for a trade date from Monday to Friday. New
// York time follows the US daylight-saving rule, computed without the tz
// database. No holidays are known: the simulator trades on Christmas Day.
// A contract also stops trading when it expires. While its market is
// closed, a contract's prices stand still, Market orders are refused and
// nothing fills.
//
// # Prices
//
// Each contract has its own seeded random walk on its tick grid, starting at
// a realistic base price that is the same for every month of a root (ES and
// MES 6000, NQ and MNQ 21000, YM and MYM 44000, RTY and M2K 2300, CL and MCL
// 70, GC and MGC 2600). The walk is lazy and driven by the clock: whenever
// the simulator is called, every contract it has seen takes one step for each
// whole second of the clock passed since its last step, inside trading hours
// only. A step moves the bid by a normally distributed whole number of ticks,
// scaled so that a 23-hour session moves about 1% (2% for crude oil): most
// steps move the price by zero or one tick. Each step prints a trade at the
// last price, with a synthetic size that averages the root's typical
// contracts per second (ES 15, MES 12, NQ 6, MNQ 14, CL 6, GC 4, the others
// 2), and draws new bid and ask sizes.
//
// After a long jump of the clock (more than an hour of trading time), the
// latest hour is still simulated second by second, and the time before it in
// at most 3600 coarser steps of several seconds each, with the volatility
// and volume of their length; bars of that stretch are sparser. A clock that
// stops (ManualClock) stops the prices; a clock that goes back freezes them
// until it passes the last step again.
//
// The bid and the ask are one tick apart; the last price is the side the
// market last moved to (an uptick trades at the ask, a downtick at the bid),
// or the side the simulator's last fill traded on. In a quote, Open, High,
// Low and Volume are the current trading session's (from 18:00 New York
// time), or since the simulator first priced the contract when that was
// later; Volume counts the synthetic prints and the simulator's own fills;
// Close equals Last; quoteTimeUtc is the time of the last print, so it stands
// still while the market is closed.
//
// Options.Seed seeds the walks (0 means DefaultSeed). Each contract's
// generator is seeded from the seed and the contract's name, so for one seed,
// one sequence of calls and one sequence of clock readings, every price,
// fill and id is the same on every run. SetPrice puts a contract at a given
// price for tests: bid and last at the price snapped to the tick grid, ask
// one tick above; it prints a trade of no contracts there, so bars and
// strategies see the price.
//
// # Market data
//
// Subscribe and Unsubscribe take instruments in any accepted form and
// resolve each one when called: a root subscribes the front month of that
// moment, and the subscription stays on that contract after the roll. Both
// are all-or-nothing: when any instrument is unknown, the call changes
// nothing and returns an error wrapping bridge.ErrInstrumentUnknown.
// Subscribing is idempotent, and a contract subscribed for the first time
// publishes its current quote at once. After that, every call into the
// simulator (Step, or any other method) publishes one EventQuote per
// subscribed contract whose quote changed since it was last published:
// quotes are conflated, never more than one per contract per call, so a
// reader gets the latest quote rather than every print. Unsubscribe also
// takes an expired contract's full name; a contract that is not subscribed
// is not an error.
//
// Step brings the simulator to its clock and does nothing else: prices
// advance, resting orders fill, strategies act and quotes are published. Run
// calls Step every Options.TickInterval (DefaultTickInterval, 250 ms) until
// its context ends, in the caller's goroutine: the agent runs it beside a
// simulator on the system clock, so that quotes stream and strategies trade
// with no caller. Tests drive a ManualClock and call Step.
//
// # Bars
//
// Bars returns bars of period type tick, second, minute, day, week or month
// (any casing) and Period (0 means 1), built from the contract's prints: a
// bar's open is its first print, its close its last, high and low the
// extremes, volume the contracts traded; time is the bar's start, in RFC 3339
// UTC with milliseconds. Only trading hours have bars.
//
//   - Second and minute bars align on the session's 18:00 open (60-minute
//     bars start on the hour) and a session's last bar ends at 17:00; a
//     second or minute without a print has no bar.
//   - A tick bar holds Period prints, counted from the session's first
//     print; a session's last bar may hold fewer. Its time is its first
//     print's.
//   - A day bar is a session, from its 18:00 open; a week bar runs from
//     Sunday 18:00 to Friday 17:00; a month bar holds the sessions whose
//     trade date is in the month, from the first one's open. Bars of several
//     days or weeks are aligned on Monday 3 January 2000, bars of several
//     months on January, so every request cuts them the same way.
//
// The range is From to To when From is set (To defaults to now and is
// capped at now); else DaysBack sessions back, the current one (or the last
// one, while the market is closed) counting as the first, so DaysBack 1 is
// the session so far and DaysBack 5 gives five day bars; else, with
// neither, far enough back for Limit bars. A bar is in the range when it
// starts in it; the bar in progress is included. Limit (DefaultBarsLimit,
// 5000, when 0; at most MaxBarsLimit, 50,000) keeps the most recent bars.
// Ranges are bounded: tick and second bars to 7 days of From-To or 5
// sessions of DaysBack, minute bars to 366 days or 260 sessions, day, week
// and month bars to 3660 days or 2600 sessions, and no range starts more than
// 30 years back. An unknown period type, a negative Period, DaysBack or
// Limit, a Limit above MaxBarsLimit, From after To, or a range too long is
// a *bridge.RequestError with a fixed reason, wrapping ErrBadBarsRequest; an
// unknown instrument wraps bridge.ErrInstrumentUnknown.
//
// From the moment the simulator first prices a contract (its first call
// about it), bars come from the live walk's prints: its steps, fills and
// SetPrice. The simulator keeps the latest 32,768 prints, 32,768 one-second
// bars (about nine hours of trading), 65,536 one-minute bars (about seven
// weeks) and 5000 session bars of each contract; older live bars are no
// longer available. Before that moment, bars come from a generated history
// with the walk's volatility and volume and one print a second. It is
// deterministic, seeded by Options.Seed, the contract and the time bucket
// (session, minute), and it runs backwards from the live walk's opening
// price: the last generated minute, the one before the minute the contract
// was first priced in, closes exactly at that price, and the live walk goes
// on from there. History bars of every period agree: minute bars are made
// of the history's one-second prints, day bars of its minutes. The same
// request at the same clock returns the same bars.
//
// # Strategies
//
// StartStrategy starts a strategy of a built-in class on an account and an
// instrument, resolved when it starts (a root trades the front month of
// that moment for good):
//
//   - SampleMACrossOver, NinjaTrader's sample: long when the simple moving
//     average of the last Fast closes crosses above that of the last Slow
//     closes, short when it crosses below. Parameters Fast (default 10, 1 to
//     500), Slow (25, 2 to 1000, above Fast) and Quantity (1, 1 to 1000).
//   - SampleRsi: Wilder's relative strength index of Period closes; long
//     when it crosses above Lower, short when it crosses below Upper.
//     Parameters Period (14, 2 to 500), Upper (70), Lower (30, below Upper)
//     and Quantity (1).
//
// Class and parameter names match in any casing. Parameters are whole
// numbers (10 or 10.0); a missing one takes its default; an unknown or
// mistyped one, or one out of its range, is refused. PeriodType and Period
// choose the strategy's bars (minute and 1 when empty or 0). Mode Realtime,
// or none, starts it Enabled; Disabled starts it Disabled. Ids are
// "sim-strat-<n>". Refusals are a *bridge.RequestError wrapping
// ErrBadStrategyRequest (parameters, mode,
// period, action, or 1000 strategies none of which is terminal),
// bridge.ErrStrategyClass, bridge.ErrAccountNotFound or
// bridge.ErrInstrumentUnknown.
//
// A strategy first reads the bars its rule needs, history included,
// without trading on them. From then on it looks at its bars whenever the
// simulator is called while its market is open, and acts on every bar that
// closed: a bar that closes with the session is acted on when the next
// session opens, as on NinjaTrader with bars evaluated on their close. It
// wants to be long or short Quantity contracts and gets there with market
// orders named "Long" or "Short", a reversal first closing its own position
// with a "Close position" order, all with StrategyTag set to its id. After
// a long jump of the clock, it reads every bar that closed and trades once,
// to the position of the latest signal. A disabled strategy keeps its
// position and follows its bars, but places nothing.
//
// A strategy keeps its own position, average price, realized P&L (net of
// the commission of each of its fills) and unrealized P&L (at the last
// price), from its own fills only, whatever else the account trades in the
// instrument. SetStrategyState enables or disables it (doing again what is
// done changes nothing) or closes it. Closing is terminal: it cancels the
// strategy's working orders and closes the strategy's own position, not the
// account's, with a "Close position" market order; while the market is
// closed, closing a strategy that holds a position is refused with a
// *bridge.RejectError and changes nothing. Changing a terminal strategy
// wraps bridge.ErrStrategyTerminal; an id the account does not have wraps
// bridge.ErrStrategyNotFound. Strategies lists the account's strategies in
// start order, terminal ones included; the simulator keeps at most 1000 and
// forgets the oldest terminal ones first. An EventStrategy publishes the
// strategy at every change of its state or of its own position.
//
// # Orders
//
// SubmitOrder validates the order, then:
//
//   - a Market order fills at once and entirely: a Buy from the ask, a Sell
//     from the bid;
//   - a Limit order that is marketable fills at once from the ask (Buy) or
//     the bid (Sell), never worse than its limit; otherwise it rests in state
//     Working;
//   - a StopMarket or StopLimit order rests in state Accepted until the
//     market touches its stop (the ask reaches it for a Buy, the bid for a
//     Sell). A StopMarket order then fills at the market like a Market order,
//     so a market that gapped through the stop fills past it; a StopLimit
//     order becomes a Working limit order, filling at once if its limit is
//     marketable. A stop already at or through the market is rejected.
//
// Book depth. Options.BookDepth is how many contracts each price level
// offers an order each time it is matched; 0, the default, is unlimited,
// and every order then fills entirely at the touch. With a depth D, an
// order that fills on arrival (submitted, re-priced by ChangeOrder, or a
// stop that just triggered) walks the book: D contracts at the touch, D
// more one tick worse, and so on, one execution per level. A Market or
// StopMarket order walks as far as it needs; a limit order walks up to its
// limit level and rests the rest in state PartFilled. A resting limit order
// that the market reaches takes at most D contracts, at the touch, per
// market update (a step of the price walk, or SetPrice); reading the
// simulator again without the market moving fills nothing more. Every order
// has the depth to itself: orders do not share a level's contracts, and the
// quote does not move with the simulator's own fills (only Last does). To
// bound the work of a huge order on a thin book, one match takes at most
// 1,000 levels: a market order fills whatever remains at the 1,000th, a
// limit order rests it; no level is below one tick.
//
// Resting orders are matched against the quote each time the simulator is
// called, after the prices advance, and after SetPrice, in submission order.
// A resting limit order fills at the touch, which is its limit or better
// (better when the market gapped through it). An order's Filled counts its
// filled contracts and AverageFillPrice is their quantity-weighted price.
//
// Closed markets. Nothing fills while an order's market is closed (outside
// its trading hours, or once the contract expired): a Market order, or a
// limit order that would fill at once, is refused with the reason "market is
// closed; it reopens <day> at 18:00 New York time (<instant> UTC)" ("market
// is closed: the contract has expired" after expiry), while an order that
// would rest is accepted and waits for the open.
//
// OCO. When an order with an OCO id fills, even partly, the account's other
// non-terminal orders with the same OCO id are cancelled (orders of other
// accounts are not). Cancelling an order does not cancel its group. ATM
// brackets follow their own rule (see ATM strategies).
//
// CancelOrder cancels a non-terminal order; it keeps what it had filled.
// ChangeOrder changes a non-terminal order's quantity, limit price or stop
// price; a zero field keeps its value. A new quantity must be more than the
// order has filled (to stop the rest of a partly filled order, cancel it); a
// new price is checked as on submission (positive, on the tick grid, a stop
// not at or through the market); a limit price on an order without one, a
// stop price on an order without one or on a stop that already triggered,
// are refused. A change that makes a limit order marketable fills it at once,
// walking the book as a new order would. A change that changes nothing is
// not an error and publishes nothing.
//
// Flatten cancels the account's non-terminal orders in the contract, then
// closes its position with a Market order named "Close"; an empty instrument
// flattens every contract in which the account has a position or a working
// order, in contract-name order. Nothing to do is not an error. While the
// market is closed the orders are cancelled but closing the position is
// refused with "market is closed".
//
// Time in force: a Day order is cancelled at the first session close (17:00
// New York time, Monday to Friday) after it was submitted, so a Day order
// placed in the daily break or on a weekend lives until the next session
// closes; a Gtc order stays until it fills or is cancelled. Expiry happens
// when the simulator next reads the clock, at the close's time: on a clock
// that jumped past a close, Day orders are cancelled before the prices move.
//
// Order states are NinjaTrader's: an order is Submitted, then Working (Market
// and Limit orders) or Accepted (stop orders, until they trigger), then
// PartFilled, Filled or Cancelled. Orders lists the orders of the current
// trading session, terminal or not, and every order still working, in
// submission order; Executions lists the session's fills.
//
// Errors: an unknown account wraps bridge.ErrAccountNotFound, an unknown
// instrument bridge.ErrInstrumentUnknown, an unknown ATM template
// bridge.ErrTemplateNotFound, an order id the account does not have
// (CancelOrder, ChangeOrder) bridge.ErrOrderNotFound, and a trailing order
// type (TrailingStop, TrailingStopLimit: the simulator has none) is a
// *bridge.NotSupportedError matching bridge.ErrNotSupported; every other
// refusal is a *bridge.RejectError whose Reason never repeats the caller's
// input: a quantity below 1, an action other than Buy or Sell, an unknown
// order type or time in force (all matched case-insensitively; an empty
// time in force means Day), a missing, non-positive or off-tick limit or
// stop price, a stop through the market, an OrderID already used on the
// platform, a market that is closed, and cancelling or changing a terminal
// order ("order is already filled", "order is already cancelled"). Refused
// orders and changes are not recorded and publish nothing. After Close
// every call fails with bridge.ErrNotConnected.
//
// Order ids are "sim-<n>" and execution ids "sim-exec-<n>", with n counting
// from 1 on each platform; a generated id skips any id a caller already
// chose. Order times are the submission time, execution times the fill time,
// both from the clock, in RFC 3339 UTC with milliseconds.
//
// A position is the net quantity of one contract on one account. Its average
// price is the quantity-weighted entry price while it grows, stays unchanged
// while it shrinks, and restarts at the fill price when it flips from long to
// short or back. Flat positions are not listed. Positions are marked at the
// last price, and carry over from one session to the next.
//
// # ATM strategies
//
// An order whose OrderRequest.AtmTemplate names a template (ignoring case and
// surrounding spaces) is the entry of an ATM strategy; an unknown name is an
// error wrapping bridge.ErrTemplateNotFound and nothing is recorded. An
// unnamed entry is named "Entry". The simulator starts with
// Options.AtmTemplates, or DefaultAtmTemplates() when that is nil;
// SetAtmTemplates replaces the list atomically. A template needs a
// non-empty name unique ignoring case, a quantity of at least 1, at least
// one bracket, bracket quantities of at least 1 adding up to the template's
// quantity, stop and target distances of at least 1 tick, and a time in
// force of Day or Gtc (empty means Gtc); an enabled breakeven needs a
// trigger of at least 1 tick and plus ticks from 0 to below the trigger, an
// enabled trailing stop a trigger, distance and step of at least 1 tick. A
// running strategy keeps the template it started with.
//
// Each time the entry fills, even partly, the new contracts are allocated to
// the template's brackets in template order, each bracket up to its share of
// the entry's quantity: the bracket quantities scaled to the entry quantity,
// rounded by largest remainder with ties to the earlier bracket (an entry of
// 5 on brackets of 1 and 1 gives 3 and 2; an entry of 1 gives 1 and 0). A
// bracket receiving its first contracts gets a StopMarket stop-loss named
// "Stop<n>" and a Limit profit target named "Target<n>" (n counting brackets
// from 1) on the opposite side, priced StopLossTicks and ProfitTargetTicks
// from the entry's average fill price at that moment (rounded to a tick),
// sharing an OCO id of their own, with the entry's StrategyTag and the
// template's time in force. A bracket that already has them sees their
// quantities grow instead; their prices stay. If the stop would already be at
// or through the market, it is placed as a Market order that exits at once,
// and the bracket gets no target.
//
// Within a bracket, a target that fills partly leaves the stop protecting
// the contracts still open (its quantity shrinks to match), and whichever of
// the two fills completely cancels the other. Breakeven moves every bracket's
// untriggered stop to the entry's average price plus PlusTicks in the
// position's favour, once, when the last price first reaches TriggerTicks of
// profit. The trailing stop follows the best last price since the entry
// filled: once that is TriggerTicks in profit, each stop moves to
// DistanceTicks behind it, in whole steps of StepTicks. Stops only ever move
// in the position's favour, as prices move, and a stop moved to the market
// triggers at once. Cancelling the entry leaves the brackets of what it
// filled; Flatten cancels them with every other order of the contract.
//
// # Trading sessions
//
// The trading session, and with it the session P&L, opens at 18:00 New York
// time on Sunday to Thursday and closes at 17:00 the next day; between
// Friday's close and Sunday's open the current session is still Friday's.
// New York time follows the US daylight-saving rule, computed without the
// tz database, and no holidays are known. When a session opens, each
// account's session realized P&L, session commission and watermarks
// restart, Orders forgets the terminal orders and Executions the fills of
// earlier sessions, and an EventAccount publishes each account's values;
// working orders and open positions carry over. Weekly P&L restarts at the
// Sunday open. A clock that jumps across several sessions goes through every
// session close and open in turn; a clock that goes back changes nothing.
//
// # Watermarks
//
// Watermarks returns an account's session highs and lows of P&L (session
// realized P&L net of commission, plus unrealized P&L), net liquidation and
// unrealized P&L, with the current figures: pnl, realized (session, net),
// unrealized, total (realized net of every session plus unrealized),
// netliq, poscount (open positions) and commission (session), and when the
// session began. The marks start at the account's values when the session
// opens, and follow every value the simulator observes: after every fill,
// and each time it is called after the prices moved. A carried position's
// unrealized P&L counts whole in the session P&L.
//
// # Events
//
// Events publishes, in the order the simulator makes its changes: an
// EventOrder for every state change of an order (Submitted, then Working or
// Accepted, a stop limit's trigger to Working, PartFilled, Filled,
// Cancelled, and changes by ChangeOrder or by an ATM strategy), and for every
// execution, in this order, an EventOrder with the order's new state, the
// EventExecution, an EventPosition (a position that went flat is reported
// Flat with quantity 0) and an EventAccount; OCO cancellations and ATM
// brackets follow the fill that caused them. Every reader sees the same
// sequence. Refused orders publish nothing. An event is built once, whatever
// the number of readers.
//
// The simulator starts no goroutines; every method is safe for concurrent
// use (one mutex guards the whole state).
package sim
