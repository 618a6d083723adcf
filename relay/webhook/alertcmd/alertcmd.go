// Package alertcmd reads the command language of TradingView alerts: the
// `key=value;` text traders write for NinjaTrader automation (or the same
// fields as members of a JSON object), parsed into an Alert, and the plan
// of trading calls an Alert makes (Alert.Calls), one or more per
// account. It does no I/O: the webhook door (package webhook) admits the
// request, parses it here, applies the alert's gates (duplicates, rate
// limits, windows, the kill switch) and runs the calls through the same
// operations as every other door.
//
// The language (docs/webhooks.md is the trader's page):
//
//   - Pairs are `key=value`, separated by `;` or line breaks (CRLF too);
//     the last `;` may be missing; blank lines, empty segments and
//     surrounding spaces are ignored; keys are matched without regard to
//     (ASCII) case. Enumerated values (BUY, market, Day) are too; names
//     (accounts, strategy tags, ATM template names, ids) keep their case.
//     A value runs to the next `;` or line break and may hold `=`.
//   - A JSON body (Content-Type application/json or +json, or any other
//     type but text/plain whose body starts with `{` or `[`) is one
//     object whose members are the same fields, with string, number or
//     boolean values. An array, several objects, nested values and null
//     are errors.
//   - Required: key, command; account and instrument where the command
//     needs them; PLACE also action, qty, order_type, tif, and
//     limit_price or stop_price where the order type needs them.
//   - Unknown keys, a key given twice and a value that does not parse are
//     errors whose detail names the key in the language's own words
//     ("missing required field: qty", "unknown field: stop_los"), so
//     that a typo never silently drops a stop loss. A detail never repeats
//     a value the sender wrote; an unknown key is named only when it is a
//     short name of letters, digits and underscores.
//
// Decisions where the anchor service's documents are silent:
//
//   - Every missing field is named at once, in the order of Fields
//     ("missing required fields: qty, order_type, tif"); Error.Field is
//     the first.
//   - A field the command does not use is an error ("stop_loss does not
//     apply to CLOSEPOSITION"), as a field it silently ignored could be a
//     protection the trader believes is there. The alert's own gates
//     (destination, delay, id, rate_limit, the window fields,
//     bypass_trade_windows) apply to every command.
//   - An empty value ("stop_loss=;"), or one still holding a TradingView
//     placeholder ("{{…}}"), is an error, not an absent field.
//   - instrument is protocol's instrument grammar (protocol.ParseInstrument,
//     as the trading API accepts), plus TradingView's spellings rewritten
//     into it: "ES1!" (front month) is the root "ES", and "ESZ2026" is
//     "ESZ26" (see ParseInstrument).
//   - FLATPLACE's order_type defaults from the prices sent and its tif to
//     DAY, as the trading API's flat place does; flatten_first on PLACE
//     makes it a FlatPlace.
//   - CLOSEPOSITION's qty may be a percentage of the position (qty=50%,
//     Alert.QtyPercent); elsewhere qty is a whole number from 1 to 10000
//     (also written 2.0).
//   - Relative limit_price and stop_price (ticks, points, %, $) apply to
//     the commands that place through PlaceOrderArgs (PLACE, FLATPLACE,
//     CANCELREPLACE); CHANGE, REVERSEPOSITION and CANCELANDBRACKET take
//     prices only (CANCELANDBRACKET's legs are prices around the open
//     position, not offsets from an entry's fill). A price level has no
//     sign: "-4" is refused, "-4 ticks" is a distance.
//   - Brackets (take_profit, stop_loss, stop_loss_limit, stop_loss_stop)
//     belong to PLACE and FLATPLACE. A distance's sign is optional; when
//     written it must point the protective way (a BUY's take profit +,
//     its stop loss -; a SELL's the reverse). Two levels must have the
//     take profit on the profit side of the stop.
//   - kill_switch is an alert of its own: key and kill_switch (on/off,
//     true/false, yes/no, 1/0), no command and no other field (destination
//     is accepted and means nothing there). Its Alert
//     has Command "" and plans no calls.
//   - start_time and end_time come together (an end before the start
//     spans midnight), closing_only_after only with them and inside the
//     window; rate_limit needs id. InWindow judges a time of day.
//   - account= lists at most MaxAccounts accounts, each once (a repeat is
//     an error, an empty item is skipped); FLATTENEVERYTHING and
//     CANCELALLORDERS take no account and plan one call for every
//     account (Account "").
//   - CANCELORDERS needs instrument (CANCELALLORDERS cancels everything);
//     FLATTEN without instrument flattens the account.
package alertcmd

import (
	"bytes"
	"encoding/json"
	"time"
)

// Commands, as the language spells them (upper case; matched without
// regard to case).
const (
	CmdPlace             = "PLACE"
	CmdFlatPlace         = "FLATPLACE"
	CmdClosePosition     = "CLOSEPOSITION"
	CmdReverse           = "REVERSE"
	CmdReversePosition   = "REVERSEPOSITION"
	CmdFlatten           = "FLATTEN"
	CmdFlattenEverything = "FLATTENEVERYTHING"
	CmdCancel            = "CANCEL"
	CmdCancelOrders      = "CANCELORDERS"
	CmdCancelAllOrders   = "CANCELALLORDERS"
	CmdChange            = "CHANGE"
	CmdCancelReplace     = "CANCELREPLACE"
	CmdCancelAndBracket  = "CANCELANDBRACKET"
	CmdCloseStrategy     = "CLOSESTRATEGY"
)

// Commands lists every command, in the order the trader's page documents
// them.
var Commands = []string{
	CmdPlace, CmdFlatPlace, CmdClosePosition, CmdReverse, CmdReversePosition,
	CmdFlatten, CmdFlattenEverything, CmdCancel, CmdCancelOrders, CmdCancelAllOrders,
	CmdChange, CmdCancelReplace, CmdCancelAndBracket, CmdCloseStrategy,
}

// Destinations (destination=).
const (
	// DestinationDesktop is the user's agent next to the desktop platform
	// (the default).
	DestinationDesktop = "desktop"
	// DestinationBroker is the user's linked broker login (the broker
	// family, /v1/api/tv). "tradovate" is accepted as another spelling.
	DestinationBroker = "broker"
)

// MaxBody is the largest alert accepted, in bytes.
const MaxBody = 64 << 10

// MaxAccounts bounds the accounts of one alert (account=A,B,…).
const MaxAccounts = 20

// MaxDelay bounds delay=.
const MaxDelay = 60 * time.Second

// Price is a price field's value: a Level (4550.25), or an Offset
// (`10 ticks`, `4 points`, `0.5%`, `$100`, `-4 ticks`) with its sign
// kept (Signed reports whether the sender wrote one). Exactly one of
// Level and Offset is set.
type Price struct {
	Level  *float64
	Offset *Offset
}

// Offset is a relative price as written: Unit is one of the
// protocol.Offset* units; Value is signed.
type Offset struct {
	Unit   string
	Value  float64
	Signed bool
}

// ClockTime is a time of day in New York time, in minutes after
// midnight (0–1439).
type ClockTime int

// RateLimit is rate_limit=N or N/seconds: at most N alerts of the same
// id (Alert.ID) in Per.
type RateLimit struct {
	N   int
	Per time.Duration
}

// DefaultRateLimitPer is the period of rate_limit=N without one.
const DefaultRateLimitPer = time.Minute

// Alert is one parsed alert. Enumerations are in their canonical
// spellings: Command as the Cmd constants; Action, OrderType and TIF as
// the protocol spells them (Buy, Market, Day); Destination as the
// Destination constants; RequireMarketPosition as a comma-separated list
// of flat, long, short.
type Alert struct {
	// Key is the secret key the alert carried.
	Key string
	// Command is empty only for an alert that sets the kill switch
	// (KillSwitch) and nothing else.
	Command     string
	Destination string
	// Accounts are account= split at commas, in order, each once.
	Accounts   []string
	Instrument string
	Action     string
	Qty        *int
	// QtyPercent is CLOSEPOSITION's qty written as a percentage
	// (qty=50%): the fraction of the position to close (0.5), rounded up
	// to whole contracts by the operation. Qty is nil then.
	QtyPercent *float64
	OrderType  string
	TIF        string
	LimitPrice *Price
	StopPrice  *Price
	// OrderID is order_id: the order to cancel or change, or the id a
	// PLACE gives its order.
	OrderID string
	// StrategyID is CLOSESTRATEGY's strategy (strategy_id).
	StrategyID            string
	StrategyTag           string
	FlattenFirst          bool
	RequireMarketPosition string
	MaxPositions          *int
	TakeProfit            *Price
	StopLoss              *Price
	StopLossLimit         *Price
	StopLossStop          *Price
	// ATM names an ATM template (atm= or strategy=).
	ATM         string
	CancelAfter time.Duration
	Delay       time.Duration
	// ID names the alert for RateLimit (id=).
	ID        string
	RateLimit *RateLimit
	// KillSwitch is kill_switch=on (true) or off (false).
	KillSwitch *bool
	// StartTime, EndTime and ClosingOnlyAfter are the alert's trading
	// window, in New York time.
	StartTime        *ClockTime
	EndTime          *ClockTime
	ClosingOnlyAfter *ClockTime
	BypassWindows    bool
}

// Error is a parse or planning error: Field names the key in the
// language's words ("qty", "stop_loss", "" for the text as a whole) and
// Detail is the sentence TradingView's sender reads
// ("missing required field: qty"). It never repeats a value the sender
// wrote.
type Error struct {
	Field  string
	Detail string
	// Instrument reports that the instrument= value is not a name of the
	// instrument grammar (the relay answers invalid_instrument).
	Instrument bool
}

func (e *Error) Error() string { return "alertcmd: " + e.Detail }

// Parse reads one alert from body, sent with the given Content-Type:
// text/plain (or none) is the `key=value;` text; application/json an
// object of the same keys (values strings, numbers or booleans). A body
// over MaxBody, or one holding more than one alert, is an error. The
// error is an *Error.
//
// The Alert holds its defaults (Destination desktop; FLATPLACE's
// OrderType and TIF). On an error it still holds what could be read, the
// Key above all (and Command and Accounts when they read): the door tells
// a wrong key (nothing recorded) from a right key on an alert that fails
// (recorded failed). A JSON body that is not JSON, or a body over
// MaxBody, has no Key.
func Parse(body []byte, contentType string) (Alert, error) {
	a, err := parse(body, contentType)
	if err != nil {
		return a, err
	}
	return a, nil
}

// Redact returns body with the key's value removed, for the alert
// history: the text the trader wrote, without the secret. In a text body
// the pair stays as `key=` with nothing after it (up to the next ';' or
// line break); in a JSON body every member named key, at any depth,
// becomes "key":"". It never fails: a body that does not parse is
// redacted as text, where any "key" followed by '=' or ':' loses the
// rest of its segment.
func Redact(body []byte, contentType string) string {
	if isJSON(bytes.TrimPrefix(body, []byte("\ufeff")), contentType) {
		if s, ok := redactJSON(body); ok {
			return s
		}
	}
	return redactText(string(body))
}

// Call is one trading call an alert makes: the RPC function Fn with its
// typed arguments Args (the protocol's argument types, as JSON) on
// Account ("" for a call of every account: FLATTENEVERYTHING,
// CANCELALLORDERS). Opens reports a call that may open or add to a
// position (the alert's closing_only_after blocks those): PlaceOrder,
// FlatPlace, Reverse, ReversePosition and CancelReplace. Exits reports a
// call that needs an agent of protocol version 7 (ExitsProtocolVersion):
// its arguments use Exits, LimitOffset, StopOffset or
// CancelAfterSeconds, or its function is CancelReplace.
type Call struct {
	Account string
	Fn      string
	Args    json.RawMessage
	Opens   bool
	Exits   bool
}

// Calls plans the calls of a: for each account, in order, the calls of
// its command; a flatten_first on PLACE is FlatPlace. The error is an
// *Error. A (killswitch-only) alert with no command plans no calls.
//
// Calls checks a as Parse does (an Alert built by hand gets the same
// rules and defaults), so a parsed Alert's Calls does not fail.
func (a Alert) Calls() ([]Call, error) {
	a.defaults()
	if err := a.validate(); err != nil {
		return nil, err
	}
	return a.calls()
}
