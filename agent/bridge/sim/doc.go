// Package sim is the agent's built-in trading platform: an in-process,
// deterministic paper-trading simulator that implements bridge.Platform. It
// is the default platform for demos (agent run --platform sim) and the test
// double on which every operation of agent/ops is tested, so it behaves like
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
//   - grossRealizedProfitLoss: the sum of the P&L of every reduction, before
//     commission;
//   - commission: every commission charged;
//   - realizedProfitLoss: gross realized P&L minus commission;
//   - cashValue: starting cash plus realized P&L;
//   - unrealizedProfitLoss: the open positions marked at the last price;
//   - netLiquidation: cash value plus unrealized P&L;
//   - maintenanceMargin: open contracts times the root's approximate exchange
//     maintenance margin; initialMargin is 110% of it;
//   - buyingPower: net liquidation minus initial margin. It is reported, not
//     enforced: the simulator never refuses an order for lack of margin;
//   - weeklyProfitLoss: equal to realized P&L (the simulator has no trading
//     sessions yet, so P&L accumulates from its start); dailyLossLimit and
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
// The simulator knows the CME futures ES, MES, NQ, MNQ, YM, MYM, RTY, M2K,
// CL, MCL, GC and MGC, with their real tick sizes, tick values and point
// values. A contract is named NinjaTrader style, "<ROOT> <MM>-<YY>" ("ES
// 12-26"), and every record the simulator reports carries that full name.
// Callers may also write a bare root ("ES", the front month) or the
// month-code form ("ESZ26", "ESZ6"; a one-digit year is the first year from
// the current one that ends in that digit). Matching is case-insensitive and
// ignores surrounding spaces. A root the simulator does not know, a month
// that is not a contract month of its root ("ES 11-26"), a contract already
// expired or one more than ten years out is an error wrapping
// bridge.ErrInstrumentUnknown.
//
// Contract months and the front-month roll, with dates taken in New York
// time (US daylight-saving rules, computed without the tz database):
//
//   - equity index (ES, MES, NQ, MNQ, YM, MYM, RTY, M2K): March, June,
//     September, December. A contract expires at the third Friday of its
//     month; the front month rolls to the next contract on the roll date, the
//     Thursday eight days before that Friday.
//   - crude oil (CL, MCL): every month. A contract's last trading day is
//     taken as the 20th of the month before its month (the exchange rule is
//     three business days before the 25th); the roll date is eight days
//     earlier, the 12th.
//   - gold (GC, MGC): February, April, June, August, October, December
//     (DESIGN.md's table). A contract's last trading day is taken as the 27th
//     of its month; the front month rolls on the 25th of the month before,
//     ahead of first notice day, as traders do.
//
// The front month switches when the roll date's trading session opens,
// 18:00 New York time on the day before it. A contract expires when its last
// trading day's session closes, 17:00 New York time.
//
// # Prices
//
// Each contract has its own seeded random walk on its tick grid, starting at
// a realistic base price that is the same for every month of a root (ES and
// MES 6000, NQ and MNQ 21000, YM and MYM 44000, RTY and M2K 2300, CL and MCL
// 70, GC and MGC 2600). The walk is lazy and driven by the clock: whenever
// the simulator is called, every contract it has seen advances by the whole
// seconds elapsed since its last step, in one normally distributed move whose
// size gives about 1% daily volatility (2% for crude oil). A clock that stops
// (ManualClock) stops the prices; a clock that goes back freezes them until
// it passes the last step again. The bid and the ask are one tick apart; the
// last price is the side the market last moved to, or the side the
// simulator's last fill traded on. In a quote, Open is the contract's first
// price, High and Low the extremes since, Close equals Last, and Volume counts
// the contracts traded on the simulator.
//
// Options.Seed seeds the walks (0 means DefaultSeed). Each contract's
// generator is seeded from the seed and the contract's name, so for one seed,
// one sequence of calls and one sequence of clock readings, every price,
// fill and id is the same on every run. SetPrice puts a contract at a given
// price for tests: bid and last at the price snapped to the tick grid, ask
// one tick above.
//
// # Orders
//
// SubmitOrder validates the order, then:
//
//   - a Market order fills at once and entirely: a Buy at the ask, a Sell at
//     the bid;
//   - a Limit order that is marketable fills at once at the ask (Buy) or bid
//     (Sell), which is never worse than its limit; otherwise it rests in state
//     Working;
//   - a StopMarket or StopLimit order rests in state Accepted until the market
//     reaches its stop (the ask for a Buy, the bid for a Sell). A StopMarket
//     order then fills at the market; a StopLimit order becomes a Working
//     limit order. A stop already at or through the market is rejected.
//
// Resting orders are matched against the quote each time the simulator is
// called, after the prices advance, and after SetPrice; they fill entirely,
// at the quote that reached them. When an order with an OCO id fills, the
// account's other non-terminal orders with the same OCO id are cancelled.
// Time in force is recorded; Day orders do not expire yet. Cancelling and
// changing orders, partial fills, bars and market-data subscriptions are not
// part of this stage of the simulator.
//
// Errors: an unknown account wraps bridge.ErrAccountNotFound, an unknown
// instrument bridge.ErrInstrumentUnknown; every other refusal is a
// *bridge.RejectError whose Reason never repeats the caller's input: a
// quantity below 1, an action other than Buy or Sell, an unknown order type
// or time in force (all matched case-insensitively; an empty time in force
// means Day), a missing, non-positive or off-tick limit or stop price, a stop
// through the market, and an OrderID already used on the platform. Refused
// orders are not recorded. After Close every call fails with
// bridge.ErrNotConnected.
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
// last price.
//
// The simulator starts no goroutines; every method is safe for concurrent
// use (one mutex guards the whole state).
package sim
