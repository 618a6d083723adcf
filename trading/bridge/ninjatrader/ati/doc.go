// Package ati drives NinjaTrader 8 through its Automated Trading Interface
// (ATI) file interface, for agents whose NinjaTrader runs without the
// tradebridge NinjaScript add-on but with the ATI enabled (Tools > Options >
// Automated Trading Interface). The NinjaTrader bridge
// (trading/bridge/ninjatrader) uses it as a fallback for the order commands
// the file interface supports; everything else needs the add-on and is
// answered with ErrNeedsAddon by the bridge, not by this package.
//
// Files offers the bridge.Platform primitives the ATI can serve, with the
// same signatures: SubmitOrder, CancelOrder, ChangeOrder, Flatten,
// Orders, Positions, Connections and Events, plus CancelAllOrders and
// FlattenEverything.
//
// # Folders
//
// Options.Dir is NinjaTrader's user folder ("Documents\NinjaTrader 8").
// Order instruction files (OIF) go to its incoming folder; NinjaTrader
// writes state files to its outgoing folder, and empties that folder when
// it starts. New refuses a Dir without both folders (ErrFolder).
//
// # Order instruction files
//
// From the help guide (Automated Trading Interface > File Interface >
// Order Instruction Files, and Commands and Valid Parameters): a file
// named oif*.txt in the incoming folder holds lines of 13 fields separated
// by ';':
//
//	COMMAND;ACCOUNT;INSTRUMENT;ACTION;QTY;ORDER TYPE;LIMIT PRICE;STOP PRICE;TIF;OCO ID;ORDER ID;STRATEGY;STRATEGY ID
//
// This package writes one line per file, ended by CRLF, and uses:
//
//	PLACE;<account>;<instrument>;<BUY|SELL>;<qty>;<MARKET|LIMIT|STOPMARKET|STOPLIMIT>;[limit];[stop];<DAY|GTC>;[oco];<order id>;[ATM template];[strategy id]
//	CANCEL;;;;;;;;;;<order id>;;
//	CHANGE;;;;<qty>;;<limit>;<stop>;;;<order id>;;          (0 keeps a value)
//	CLOSEPOSITION;<account>;<instrument>;;;;;;;;;;
//	CANCELALLORDERS;;;;;;;;;;;;
//	FLATTENEVERYTHING;;;;;;;;;;;;
//
// NinjaTrader 8 spells the stop order type STOPMARKET (NinjaTrader 7's STOP
// is refused). Prices use '.' whatever the locale ("prices must be in US
// decimal format"), here in the shortest form that reads back as the same
// number, without thousands separators or exponents ("5950.25", "0.1").
// An ATM template goes in STRATEGY, with STRATEGY ID "<order id>-atm".
//
// A file is written under a temporary name in the incoming folder that
// NinjaTrader does not read (".tb-….tmp"), synced, then renamed to a name
// unique to the command ("oiftb_<time>_<seq>_<random>.txt"): NinjaTrader
// never reads part of a command, and never sees a name twice (it can be
// set to ignore duplicate names). Every text field is checked first: a
// ';', a line break or any other control character, or bytes that are not
// UTF-8, is a *bridge.RequestError and nothing is written, so one call can
// never become two commands. Order ids name files in the outgoing folder,
// so they are limited to 64 ASCII letters, digits, '-', '_' and '.'.
//
// Instruments are NinjaTrader contract names ("ES 12-26"): callers resolve
// roots and month codes before calling. Any other form is a
// *bridge.InstrumentError with Cause bridge.InstrumentMalformed.
//
// # Handing over and withdrawing
//
// NinjaTrader removes an instruction file from the incoming folder once it
// has read it (observed behaviour, which the help guide does not spell
// out). Each command waits, for Options.WaitTimeout or until the caller's
// context ends, for the file to leave the folder and for the outcome
// below. A file still there at the end, with no state file showing that
// NinjaTrader acted on it, is deleted: the command is withdrawn unread and
// the error is ErrNotPickedUp, so a NinjaTrader that starts reading the
// folder later can never act on a command whose caller was told it
// failed. A command NinjaTrader did read is never written again: when its
// outcome is not seen in time the method returns what it knows and logs a
// warning.
//
// # Outgoing files
//
// From the help guide (File Interface > Information Update Files), with
// what NinjaTrader 8 has been seen to write:
//
//   - Order state files, for orders placed with an ORDER ID, rewritten at
//     every change of the order's state: "<state>;<filled>;<average fill
//     price>", e.g. "FILLED;2;5950.25". The guide names the file
//     "<order id>.txt"; NinjaTrader 8 has been seen to write
//     "<account>_<order id>.txt". Both are read. States are NinjaTrader's
//     OrderState names in any case ("WORKING", "PartFilled") or the
//     guide's display names ("Partially filled", "Cancel pending"); a
//     state not known reads as Unknown, with a warning logged.
//   - Position files, rewritten at every change of a position:
//     "<instrument> <exchange>_<account>_position.txt" ("ES 12-26
//     Globex_Sim101_position.txt"; the guide writes "_Position.txt"),
//     holding "<LONG|SHORT|FLAT>;<quantity>;<average price>". The
//     instrument is read in NinjaTrader 8's form ("ES 12-26"), the guide's
//     ("ES 0914"), or as a month code ("ESZ6") or month name ("ES SEP26"),
//     and reported as a contract name; a root alone is not read.
//   - Connection files, "<connection name>.txt", holding CONNECTED or
//     DISCONNECTED.
//
// Decimals are read with '.', or with a single ',' when there is no '.'
// (a machine whose culture writes one). A file that changes while it is
// read, or whose content does not parse, is read again at the next scan.
//
// # What the ATI cannot do
//
// The ATI tells order states only for orders placed with an ORDER ID, and
// this package only for the orders this process placed: Orders lists
// them, with the state, filled quantity and average fill price the files
// tell and everything else as sent (a change's prices and quantity are
// reported as sent, never confirmed). Cancelling or changing any other
// order matches both bridge.ErrOrderNotFound and ErrNeedsAddon, and
// nothing survives a restart of this process. An order NinjaTrader rejects
// is a bridge.RejectError without NinjaTrader's reason. Positions carry no
// market price or unrealized P&L, and a position whose file NinjaTrader
// has not rewritten since it started is not known. Connections carry no
// accounts. An unknown account or ATM template is not detected before
// sending: NinjaTrader rejects the order or ignores it. Account values,
// executions, quotes, bars, ATM template lists, strategies and watermarks
// are not available at all (ErrNeedsAddon).
//
// # Events
//
// Files reads the outgoing folder whenever a method needs it, and every
// Options.Poll after Start (polling: there is no file-system notification
// here). Events streams the order changes of this process's orders (their
// hand-over, then every state file read) and every change of a position
// file, in the shape of bridge.Event.
package ati
