// Package futures is what the project knows of the CME futures it trades:
// the roots (tick size and value, point value, exchange, contract months),
// the contracts of a root and their roll and expiry dates, the front month,
// the CME Globex trading sessions, and how an instrument name resolves to a
// contract at an instant.
//
// It is shared by every platform bridge of the agent (the simulator in
// trading/bridge/sim, NinjaTrader) and by the relay, so that the contract
// rules are written once. The grammar of instrument names is
// protocol.ParseInstrument's (syntax only); what a root or a one-digit
// year resolves to, which contracts exist and when they trade is decided
// here.
//
// # Roots and contracts
//
// The roots are ES, MES, NQ, MNQ, YM, MYM, RTY, M2K (equity index), CL, MCL
// (crude oil) and GC, MGC (gold); see Roots and Lookup. A contract is one
// delivery month of a root, named "<ROOT> <MM>-<YY>" (protocol.ContractName).
// Dates are taken in New York time (US daylight-saving rules, computed
// without the tz database):
//
//   - equity index: March, June, September, December. A contract's last
//     trading day is the third Friday of its month; the roll date is the
//     Thursday eight days before.
//   - crude oil: every month. A contract's last trading day is taken as the
//     20th of the month before its month (the exchange rule is three
//     business days before the 25th); the roll date is eight days earlier,
//     the 12th.
//   - gold: February, April, June, August, October, December. A contract's
//     last trading day is taken as the 27th of its month; the roll date is
//     the 25th of the month before, ahead of first notice day.
//
// The front month switches to the next contract when the roll date's
// session opens (18:00 New York time the day before the roll date); a
// contract expires when its last trading day's session closes (17:00 New
// York time).
//
// # Resolving names
//
// Resolve accepts every form of protocol.ParseInstrument, in any case and
// with surrounding white space: "ES 12-26", "ESZ26", "ESZ6" (the first year
// from the current one ending in that digit) and a root alone ("ES", its
// front month). A refusal is a *ResolveError naming the cause, and the root
// when it is one of this package's, with its month codes and front month.
// A contract more than ListedYears years out is not listed yet.
//
// # Trading sessions
//
// Every root trades CME Globex hours: from Sunday 18:00 to Friday 17:00 New
// York time, with a daily break from 17:00 to 18:00. A session lasts 23
// hours, from 18:00 to 17:00 the next day, and belongs to the trade date on
// which it closes, a Monday to Friday. Holidays are not known: every Monday
// to Friday is a trade date.
package futures
