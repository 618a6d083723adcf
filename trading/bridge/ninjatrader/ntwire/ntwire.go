// Package ntwire is the NinjaTrader add-on protocol as Go types: the
// messages the agent and the NinjaScript add-on exchange as JSON lines over
// localhost TCP, their constants, and a line reader and writer. The
// protocol's document is docs/ninjatrader-protocol.md; the bridge
// (trading/bridge/ninjatrader) speaks it as the client, the add-on
// (installer/ninjatrader) as the server, and tests fake the server with it.
//
// The package imports only the standard library and package protocol,
// whose records (orders, positions, accounts, …) the messages carry.
package ntwire

import (
	"encoding/json"
	"strings"
	"time"

	"tradebridge/protocol"
)

// Version is the highest add-on protocol version this package speaks.
//
//	1: hello/welcome with a session id, requests and replies by id,
//	   numbered events, pings both ways, snapshot.
const Version = 1

// MaxLine is the longest line either side accepts, newline excluded.
const MaxLine = 16 << 20

// Timing rules of the protocol.
const (
	// HelloTimeout is how long the add-on waits for the agent's hello.
	HelloTimeout = 5 * time.Second
	// PingAfter is the silence after which a side sends a ping.
	PingAfter = 5 * time.Second
	// DeadAfter is the silence after which a side considers the
	// connection dead and closes it.
	DeadAfter = 15 * time.Second
)

// Message types.
const (
	TypeHello   = "hello"
	TypeWelcome = "welcome"
	TypeRefused = "refused"
	TypeRequest = "request"
	TypeReply   = "reply"
	TypeEvent   = "event"
	TypePing    = "ping"
	TypePong    = "pong"
	TypeBye     = "bye"
)

// Message is one line of the protocol. Type says which fields are set:
//
//	hello    ProtocolVersion, Secret, Client
//	welcome  ProtocolVersion, SessionID, AddonVersion, PlatformVersion
//	refused  Code, Text
//	request  ID, Method, Params, TimeoutMs
//	reply    ID, and Result or Error
//	event    Seq, Kind, Data
//	ping     ID
//	pong     ID
//	bye      Reason
type Message struct {
	Type string `json:"type"`

	ProtocolVersion int    `json:"protocolVersion,omitempty"`
	Secret          string `json:"secret,omitempty"`
	Client          string `json:"client,omitempty"`
	SessionID       string `json:"sessionId,omitempty"`
	AddonVersion    string `json:"addonVersion,omitempty"`
	PlatformVersion string `json:"platformVersion,omitempty"`

	// Code and Text are a refusal's code and sentence ("message" on the
	// wire).
	Code string `json:"code,omitempty"`
	Text string `json:"message,omitempty"`

	ID        uint64          `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	TimeoutMs int64           `json:"timeoutMs,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *Error          `json:"error,omitempty"`

	Seq  uint64          `json:"seq,omitempty"`
	Kind string          `json:"kind,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`

	Reason string `json:"reason,omitempty"`
}

// Refusal codes of a refused message.
const (
	RefusedBadSecret          = "bad_secret"
	RefusedVersionUnsupported = "version_unsupported"
	RefusedBusy               = "busy"
	RefusedBadHello           = "bad_hello"
)

// Reasons of a bye message.
const (
	ByePlatformClosing = "platform_closing"
	ByeAddonStopping   = "addon_stopping"
)

// Error is a reply's error.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
	// Cause, Root, Months and Front describe an instrument_unknown error.
	Cause  string `json:"cause,omitempty"`
	Root   string `json:"root,omitempty"`
	Months string `json:"months,omitempty"`
	Front  string `json:"front,omitempty"`
}

func (e *Error) Error() string {
	if e.Message == "" {
		return "ninjatrader add-on: " + e.Code
	}
	return "ninjatrader add-on: " + e.Code + ": " + e.Message
}

// Error codes of replies.
const (
	CodeBadRequest           = "bad_request"
	CodeUnknownMethod        = "unknown_method"
	CodeAccountNotFound      = "account_not_found"
	CodeOrderNotFound        = "order_not_found"
	CodeInstrumentUnknown    = "instrument_unknown"
	CodeOrderRejected        = "order_rejected"
	CodeTemplateNotFound     = "template_not_found"
	CodeStrategyNotFound     = "strategy_not_found"
	CodeStrategyClassUnknown = "strategy_class_unknown"
	CodeStrategyTerminal     = "strategy_terminal"
	CodeNotConnected         = "not_connected"
	CodeInternal             = "internal"
)

// Codes lists every reply error code, for tests and documentation.
var Codes = []string{
	CodeBadRequest, CodeUnknownMethod, CodeAccountNotFound, CodeOrderNotFound,
	CodeInstrumentUnknown, CodeOrderRejected, CodeTemplateNotFound, CodeStrategyNotFound,
	CodeStrategyClassUnknown, CodeStrategyTerminal, CodeNotConnected, CodeInternal,
}

// Methods.
const (
	MethodSnapshot         = "snapshot"
	MethodSubmitOrder      = "submitOrder"
	MethodCancelOrder      = "cancelOrder"
	MethodChangeOrder      = "changeOrder"
	MethodFlatten          = "flatten"
	MethodInstrument       = "instrument"
	MethodQuote            = "quote"
	MethodSubscribe        = "subscribe"
	MethodUnsubscribe      = "unsubscribe"
	MethodBars             = "bars"
	MethodSubscribeBars    = "subscribeBars"
	MethodUnsubscribeBars  = "unsubscribeBars"
	MethodAtmTemplates     = "atmTemplates"
	MethodStartStrategy    = "startStrategy"
	MethodSetStrategyState = "setStrategyState"
)

// Methods lists every method, for tests and documentation.
var Methods = []string{
	MethodSnapshot, MethodSubmitOrder, MethodCancelOrder, MethodChangeOrder, MethodFlatten,
	MethodInstrument, MethodQuote, MethodSubscribe, MethodUnsubscribe, MethodBars,
	MethodSubscribeBars, MethodUnsubscribeBars, MethodAtmTemplates, MethodStartStrategy,
	MethodSetStrategyState,
}

// Event kinds.
const (
	KindOrder      = "order"
	KindExecution  = "execution"
	KindPosition   = "position"
	KindAccount    = "account"
	KindConnection = "connection"
	KindQuote      = "quote"
	KindBar        = "bar"
	KindStrategy   = "strategy"
)

// Kinds lists every event kind.
var Kinds = []string{KindOrder, KindExecution, KindPosition, KindAccount, KindConnection,
	KindQuote, KindBar, KindStrategy}

// Snapshot is the result of the snapshot method.
type Snapshot struct {
	// Seq is the last event the snapshot reflects.
	Seq         uint64                `json:"seq"`
	Connections []protocol.Connection `json:"connections"`
	Accounts    []protocol.Account    `json:"accounts"`
	Positions   []protocol.Position   `json:"positions"`
	Orders      []protocol.Order      `json:"orders"`
	Executions  []protocol.Execution  `json:"executions"`
	Strategies  []protocol.Strategy   `json:"strategies"`
}

// SubmitOrderParams are the params of submitOrder.
type SubmitOrderParams struct {
	Account     string  `json:"account"`
	Instrument  string  `json:"instrument"`
	Action      string  `json:"action"`
	OrderType   string  `json:"orderType"`
	Quantity    int     `json:"quantity"`
	LimitPrice  float64 `json:"limitPrice,omitempty"`
	StopPrice   float64 `json:"stopPrice,omitempty"`
	TimeInForce string  `json:"timeInForce,omitempty"`
	Oco         string  `json:"oco,omitempty"`
	OrderID     string  `json:"orderId"`
	Name        string  `json:"name,omitempty"`
	StrategyTag string  `json:"strategyTag,omitempty"`
	AtmTemplate string  `json:"atmTemplate,omitempty"`
}

// OrderRef names an order: the params of cancelOrder.
type OrderRef struct {
	Account string `json:"account"`
	OrderID string `json:"orderId"`
}

// ChangeOrderParams are the params of changeOrder; zero keeps a value.
type ChangeOrderParams struct {
	Account    string  `json:"account"`
	OrderID    string  `json:"orderId"`
	Quantity   int     `json:"quantity,omitempty"`
	LimitPrice float64 `json:"limitPrice,omitempty"`
	StopPrice  float64 `json:"stopPrice,omitempty"`
}

// OrderResult is the result of submitOrder, cancelOrder and changeOrder.
type OrderResult struct {
	Order protocol.Order `json:"order"`
}

// FlattenParams are the params of flatten.
type FlattenParams struct {
	Account    string `json:"account"`
	Instrument string `json:"instrument"`
}

// InstrumentParams are the params of instrument and quote.
type InstrumentParams struct {
	Instrument string `json:"instrument"`
}

// InstrumentsParams are the params of subscribe and unsubscribe.
type InstrumentsParams struct {
	Instruments []string `json:"instruments"`
}

// BarsParams are the params of bars. From and To are RFC 3339 or empty.
type BarsParams struct {
	Instrument string `json:"instrument"`
	PeriodType string `json:"periodType"`
	Period     int    `json:"period"`
	DaysBack   int    `json:"daysBack,omitempty"`
	From       string `json:"from,omitempty"`
	To         string `json:"to,omitempty"`
	Limit      int    `json:"limit,omitempty"`
}

// BarSeries names a bar subscription: the params of subscribeBars and
// unsubscribeBars.
type BarSeries struct {
	Instrument string `json:"instrument"`
	PeriodType string `json:"periodType"`
	Period     int    `json:"period"`
}

// BarUpdate is the data of a bar event.
type BarUpdate struct {
	BarSeries
	Bar    protocol.Bar `json:"bar"`
	Closed bool         `json:"closed"`
}

// AtmTemplatesResult is the result of atmTemplates.
type AtmTemplatesResult struct {
	Templates []protocol.AtmTemplate `json:"templates"`
}

// StartStrategyParams are the params of startStrategy.
type StartStrategyParams struct {
	Account    string         `json:"account"`
	Class      string         `json:"class"`
	Instrument string         `json:"instrument"`
	Mode       string         `json:"mode,omitempty"`
	PeriodType string         `json:"periodType,omitempty"`
	Period     int            `json:"period,omitempty"`
	Parameters map[string]any `json:"parameters,omitempty"`
}

// StrategyStateParams are the params of setStrategyState.
type StrategyStateParams struct {
	Account string `json:"account"`
	ID      string `json:"id"`
	Action  string `json:"action"`
}

// StrategyResult is the result of startStrategy and setStrategyState.
type StrategyResult struct {
	Strategy protocol.Strategy `json:"strategy"`
}

// Discovery is the add-on's discovery file: where it listens and the
// secret an agent must present.
type Discovery struct {
	Version      int    `json:"version"`
	Port         int    `json:"port"`
	Secret       string `json:"secret"`
	PID          int    `json:"pid,omitempty"`
	AddonVersion string `json:"addonVersion,omitempty"`
	StartedAt    string `json:"startedAt,omitempty"`
	// UserDataDir is NinjaTrader's user folder (NinjaTrader.Core.Globals.
	// UserDataDir: "Documents\\NinjaTrader 8", wherever Windows put the
	// trader's Documents, OneDrive included).
	UserDataDir string `json:"userDataDir,omitempty"`
}

// DiscoveryFileName is the discovery file's name in its folder.
const DiscoveryFileName = "ninjatrader-addon.json"

// MaxOrderID is the longest order id the agent gives an order.
const MaxOrderID = 64

// ValidOrderID reports whether id may be an agent's order id: 1 to
// MaxOrderID characters of [A-Za-z0-9._:-].
func ValidOrderID(id string) bool { return spelled(id, 1, MaxOrderID, "._:-") }

// ValidSessionID reports whether id may be an add-on session id: 8 to 64
// characters of [A-Za-z0-9_-].
func ValidSessionID(id string) bool { return spelled(id, 8, 64, "_-") }

// spelled reports whether s has min to max characters, each an ASCII
// letter, a digit or one of extra.
func spelled(s string, min, max int, extra string) bool {
	if len(s) < min || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(extra, c) >= 0) {
			return false
		}
	}
	return true
}

// MaxOrderName is the longest order name NinjaTrader keeps. The add-on
// shortens the signal name to fit, and refuses an order whose id and tag
// alone do not.
const MaxOrderName = 50

// NameFits reports whether an order with this id and strategy tag fits a
// NinjaTrader order name (with the signal name shortened if need be).
func NameFits(orderID, tag string) bool {
	return len(OrderName("", orderID, tag)) <= MaxOrderName
}

// NameSeparator separates the parts of an order's NinjaTrader name.
const NameSeparator = "|"

// OrderName is the NinjaTrader name the add-on gives an order the agent
// places: "name|orderId", or "name|orderId|tag" with a strategy tag. None of
// the parts may contain NameSeparator.
func OrderName(name, orderID, tag string) string {
	s := name + NameSeparator + orderID
	if tag != "" {
		s += NameSeparator + tag
	}
	return s
}

// ParseOrderName splits a NinjaTrader order name made by OrderName. ok is
// false for a name the agent did not make (an order placed by hand, the
// brackets of an ATM strategy): its id is then NinjaTrader's own.
func ParseOrderName(s string) (name, orderID, tag string, ok bool) {
	parts := strings.Split(s, NameSeparator)
	switch {
	case len(parts) < 2 || len(parts) > 3 || !ValidOrderID(parts[1]):
		return "", "", "", false
	case len(parts) == 3:
		if parts[2] == "" {
			return "", "", "", false
		}
		return parts[0], parts[1], parts[2], true
	}
	return parts[0], parts[1], "", true
}
