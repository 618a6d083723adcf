// Package bridge defines the primitives the agent needs from a trading
// platform. Each platform (the simulator in sim/, ninjatrader/, tradovate/)
// implements only these primitives; every operation a caller can ask for
// (reverse, cancel-and-bracket, close by percent, …) is written once in
// trading/ops on top of them, so it behaves the same on every platform.
//
// The primitives mirror what NinjaTrader's AddOn API offers (Account,
// Order, Execution, MarketData, BarsRequest, AtmStrategy, Strategy), so a
// NinjaTrader bridge is a thin translation.
//
// The package also holds what the bridges that keep a connection to
// their platform share (NinjaTrader's add-on, Tradovate's broker): the
// event Feed, the RunGuard and Reconnect of their connection loops, and the
// Marks that follow watermarks for platforms that keep none.
package bridge

import (
	"context"
	"errors"
	"time"

	"tradebridge/futures"
	"tradebridge/protocol"
)

// Platform is a connected trading platform. Implementations are safe for
// concurrent use. Records use the wire shapes of package protocol; every
// instrument a platform reports is the full contract name ("ES 12-26"),
// while instrument arguments may be any form the platform resolves (a
// root, "ES 12-26", "ESZ26").
type Platform interface {
	// Kind names the platform for the tunnel handshake: "sim", "ninjatrader".
	Kind() string

	// Connections lists the platform's connections and their accounts.
	Connections(ctx context.Context) ([]protocol.Connection, error)
	// Accounts lists every account with its current values.
	Accounts(ctx context.Context) ([]protocol.Account, error)
	// Account returns one account; ErrAccountNotFound if there is none.
	Account(ctx context.Context, name string) (protocol.Account, error)
	// Watermarks returns the account's session high and low marks.
	Watermarks(ctx context.Context, account string) (protocol.Watermarks, error)

	// Positions lists the account's open positions (never flat ones).
	Positions(ctx context.Context, account string) ([]protocol.Position, error)
	// Orders lists the account's orders of the current trading session and
	// every order still working, oldest first.
	Orders(ctx context.Context, account string) ([]protocol.Order, error)
	// Executions lists the account's fills of the current trading session,
	// oldest first.
	Executions(ctx context.Context, account string) ([]protocol.Execution, error)

	// SubmitOrder submits an order and returns it as the platform first
	// reports it (a market order may already be Filled). A RejectError
	// reports an order the platform refused; nothing is recorded then.
	SubmitOrder(ctx context.Context, req OrderRequest) (protocol.Order, error)
	// CancelOrder asks the platform to cancel a working order and returns
	// it as it stands afterwards. Cancelling a terminal order is a
	// RejectError; an unknown id is ErrOrderNotFound.
	CancelOrder(ctx context.Context, account, orderID string) (protocol.Order, error)
	// ChangeOrder changes a working order's quantity or prices.
	ChangeOrder(ctx context.Context, req ChangeRequest) (protocol.Order, error)
	// Flatten cancels the account's working orders in the instrument and
	// closes its position there at the market, as NinjaTrader's
	// Account.Flatten does. It is not an error when there is nothing to do.
	Flatten(ctx context.Context, account, instrument string) error

	// Instrument resolves an instrument (any accepted form) and describes
	// it; ErrInstrumentUnknown when it cannot.
	Instrument(ctx context.Context, instrument string) (protocol.InstrumentInfo, error)
	// Quote returns the instrument's current market.
	Quote(ctx context.Context, instrument string) (protocol.Quote, error)
	// Subscribe adds instruments to the market-data subscription: from then
	// on the event stream carries EventQuote updates for them. Unsubscribe
	// removes them. Both take resolved or unresolved names and are
	// idempotent.
	Subscribe(ctx context.Context, instruments []string) error
	Unsubscribe(ctx context.Context, instruments []string) error
	// Bars returns historical and current bars built from the platform's
	// prices.
	Bars(ctx context.Context, req BarsRequest) (protocol.Bars, error)

	// AtmTemplates lists the ATM templates the platform knows. An order
	// whose OrderRequest.AtmTemplate names one starts an ATM strategy:
	// when the entry fills, the platform places the template's stop and
	// target orders, sized to the filled quantity.
	AtmTemplates(ctx context.Context) ([]protocol.AtmTemplate, error)

	// Strategies lists the account's strategies, terminal ones included.
	Strategies(ctx context.Context, account string) ([]protocol.Strategy, error)
	// StartStrategy starts a strategy of a built-in class.
	StartStrategy(ctx context.Context, req StrategyRequest) (protocol.Strategy, error)
	// SetStrategyState enables, disables or closes a strategy (closing is
	// terminal: it cancels the strategy's orders and flattens its
	// position). Changing a terminal strategy is ErrStrategyTerminal; an
	// unknown id is ErrStrategyNotFound.
	SetStrategyState(ctx context.Context, account, id string, action StrategyAction) (protocol.Strategy, error)

	// Events returns the platform's one ordered stream of updates, to be
	// read until ctx ends; the channel is closed then, or when the platform
	// closes. A reader that falls behind by more than the platform's
	// buffer receives an Event with Lost set, and must re-read the state
	// it follows. Each call returns an independent stream.
	Events(ctx context.Context) <-chan Event

	// Close releases the platform. It is idempotent.
	Close() error
}

// OrderRequest is an order to submit. Enumerated fields use the platform
// spellings of package protocol (Buy, Market, Day, …); prices are zero when
// the order type has none.
//
// The trailing types (protocol.OrderTypeTrailingStop and
// TrailingStopLimit) are a stop that follows the market at TrailDistance
// and never moves back: a Sell's stop rises to the best bid since the
// order was placed minus TrailDistance, a Buy's falls to the best ask plus
// TrailDistance. StopPrice is the starting stop when it is nearer the
// market than that (a tighter stop until the market has moved); a
// TrailingStop without one, or with one farther away, starts at the bid
// minus TrailDistance (Sell) or the ask plus TrailDistance (Buy). A
// TrailingStopLimit needs both StopPrice and LimitPrice: its limit moves
// with its stop, keeping their difference. A platform without trailing
// orders answers them with a *NotSupportedError and records nothing.
type OrderRequest struct {
	Account    string
	Instrument string
	Action     string
	OrderType  string
	Quantity   int
	LimitPrice float64
	StopPrice  float64
	// TrailDistance is a trailing order's distance from the market, in
	// price units, above zero; zero for the other types.
	TrailDistance float64
	TimeInForce   string
	// Oco joins the order to an OCO group: when one order of the group
	// fills (even partly), the platform cancels the others.
	Oco string
	// OrderID is our own id for the order; the platform generates one when
	// it is empty, and rejects one it has seen before.
	OrderID string
	// Name is the order's signal name as the platform shows it.
	Name        string
	StrategyTag string
	// AtmTemplate names an ATM template: the order is the entry of an ATM
	// strategy (see Platform.AtmTemplates).
	AtmTemplate string
}

// ChangeRequest changes a working order. Zero fields keep their value.
type ChangeRequest struct {
	Account    string
	OrderID    string
	Quantity   int
	LimitPrice float64
	StopPrice  float64
}

// BarsRequest selects bars. PeriodType is one of protocol's PeriodType
// values; the range is [From, To] when set, otherwise DaysBack days back
// from now; Limit keeps the most recent bars.
type BarsRequest struct {
	Instrument string
	PeriodType string
	Period     int
	DaysBack   int
	From, To   time.Time
	Limit      int
}

// StrategyRequest starts a strategy.
type StrategyRequest struct {
	Account    string
	Class      string
	Instrument string
	// Mode is how the strategy starts: protocol.StrategyModeRealtime
	// (enabled) or protocol.StrategyModeDisabled.
	Mode       string
	PeriodType string
	Period     int
	Parameters map[string]any
}

// StrategyAction is a change of a strategy's state.
type StrategyAction string

// Strategy actions.
const (
	StrategyEnable  StrategyAction = "enable"
	StrategyDisable StrategyAction = "disable"
	StrategyClose   StrategyAction = "close"
)

// EventKind tells which record an Event carries.
type EventKind string

// Event kinds. The values equal protocol's Event kinds.
const (
	EventOrder     EventKind = protocol.EventOrder
	EventExecution EventKind = protocol.EventExecution
	EventPosition  EventKind = protocol.EventPosition
	EventAccount   EventKind = protocol.EventAccount
	EventQuote     EventKind = protocol.EventQuote
	EventStrategy  EventKind = protocol.EventStrategy
	// EventConnections reports that the platform's connections or their
	// accounts changed: Event.Connections holds the whole list as it
	// stands (empty while the platform itself is unreachable).
	EventConnections EventKind = protocol.EventConnections
)

// Event is one update of the platform's event stream. Exactly one record
// field is set, matching Kind, unless Lost is set.
type Event struct {
	// Seq increases by one per event of the platform.
	Seq  uint64
	Kind EventKind
	// Lost reports that events were dropped before this one because the
	// reader fell behind; the other fields are empty.
	Lost bool

	Order     *protocol.Order
	Execution *protocol.Execution
	// Position is the position after the change; a position that became
	// flat is reported with MarketPosition Flat and Quantity 0.
	Position *protocol.Position
	Account  *protocol.Account
	Quote    *protocol.Quote
	Strategy *protocol.Strategy
	// Connections is the whole list of the platform's connections, for
	// EventConnections.
	Connections []protocol.Connection
}

// Errors every platform reports with these sentinels (wrapped with detail).
var (
	ErrAccountNotFound   = errors.New("bridge: account not found")
	ErrInstrumentUnknown = errors.New("bridge: unknown instrument")
	ErrOrderNotFound     = errors.New("bridge: order not found")
	ErrNotConnected      = errors.New("bridge: platform not connected")
	ErrTemplateNotFound  = errors.New("bridge: ATM template not found")
	ErrStrategyNotFound  = errors.New("bridge: strategy not found")
	ErrStrategyClass     = errors.New("bridge: unknown strategy class")
	ErrStrategyTerminal  = errors.New("bridge: strategy is terminal")
	// ErrOutcomeUnknown reports a write that reached the platform, after
	// which the link to it broke before the platform answered: the
	// platform may have acted on it. Nothing is retried; the caller should
	// read the orders and positions before trying again.
	ErrOutcomeUnknown = errors.New("bridge: the platform may have acted; the outcome is unknown")
	// ErrNotSupported reports a primitive the platform lacks (a broker
	// with no strategies, ATM templates or bars): nothing was done, and
	// asking again will not help. Platforms answer it with a
	// *NotSupportedError.
	ErrNotSupported = errors.New("bridge: not supported by the platform")
)

// Why an instrument was refused (InstrumentError.Cause). The values are
// package futures' causes, so a bridge passes a futures refusal on
// unchanged (InstrumentErrorFrom).
const (
	// InstrumentMalformed: not in any accepted form ("ES 12-26", "ES",
	// "ESZ26").
	InstrumentMalformed = futures.CauseMalformed
	// InstrumentUnknownRoot: the platform trades no such root.
	InstrumentUnknownRoot = futures.CauseUnknownRoot
	// InstrumentNotContractMonth: the month is not a contract month of
	// the root.
	InstrumentNotContractMonth = futures.CauseNotContractMonth
	// InstrumentExpired: the contract no longer trades.
	InstrumentExpired = futures.CauseExpired
	// InstrumentNotListed: the contract is too far out to be listed yet.
	InstrumentNotListed = futures.CauseNotListed
)

// InstrumentError says why the platform could not resolve an instrument.
// It matches ErrInstrumentUnknown with errors.Is. Its fields are the
// platform's own names, never the caller's text: Root is set only when the
// root is one the platform trades.
type InstrumentError struct {
	Cause string // one of the Instrument* causes
	// Root is the root symbol, when the platform knows it ("ES").
	Root string
	// Months lists the root's contract months as month codes ("HMUZ").
	Months string
	// Front is the root's front month ("ES 12-26"), when Root is set.
	Front string
}

func (e *InstrumentError) Error() string { return "bridge: unknown instrument: " + e.Cause }

// Is matches ErrInstrumentUnknown.
func (e *InstrumentError) Is(target error) bool { return target == ErrInstrumentUnknown }

// InstrumentErrorFrom returns the *InstrumentError of a refusal of
// futures.Resolve (a *futures.ResolveError anywhere in err's chain), with
// the same cause, root, months and front month; every platform reports a
// contract it cannot resolve this way. Other errors, and nil, are returned
// unchanged.
func InstrumentErrorFrom(err error) error {
	var re *futures.ResolveError
	if !errors.As(err, &re) {
		return err
	}
	return &InstrumentError{Cause: re.Cause, Root: re.Root, Months: re.Months, Front: re.Front}
}

// RequestError reports a request the platform refused as malformed (a bars
// range it cannot serve, a strategy parameter of the wrong type): nothing
// was done. Reason is a fixed sentence that never repeats the caller's
// input. Err, when set, is a platform sentinel that errors.Is matches.
type RequestError struct {
	Reason string
	Err    error
}

func (e *RequestError) Error() string { return "bridge: bad request: " + e.Reason }

// Unwrap returns the platform's sentinel, if any.
func (e *RequestError) Unwrap() error { return e.Err }

// RejectError reports an order (or a change, or a cancel) the platform
// refused, with its reason. The reason never repeats the caller's input.
type RejectError struct {
	Reason string
	// Code, when set, is a stable code for the refusal that programs can
	// act on, as a broker names it ("tradovate_max_pos_limit_reached");
	// the operations answer it in place of order_rejected. Empty means
	// order_rejected.
	Code string
}

func (e *RejectError) Error() string { return "bridge: order rejected: " + e.Reason }

// NotSupportedError reports a primitive, or a form of a request, the
// platform lacks. It matches ErrNotSupported with errors.Is. What names
// the primitive ("strategies", "ATM templates", "bars", "OCO groups")
// and Reason is a fixed sentence for bot authors saying what to do
// instead; neither ever repeats the caller's input.
type NotSupportedError struct {
	What   string
	Reason string
}

func (e *NotSupportedError) Error() string {
	s := "bridge: not supported by the platform: " + e.What
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// Is matches ErrNotSupported.
func (e *NotSupportedError) Is(target error) bool { return target == ErrNotSupported }

// PairSubmitter is implemented by platforms that place two orders as one
// OCO pair in a single request (a broker that joins orders to an OCO
// group only when they are placed together, and answers ErrNotSupported
// to SubmitOrder with Oco set). The operations use it for the legs of a
// bracket when the platform implements it.
type PairSubmitter interface {
	// SubmitOCO places a and b as one OCO pair: when one fills (even
	// partly), the platform cancels the other. Both are placed or
	// neither is: an error means no order of the pair stands (a
	// RejectError as SubmitOrder reports one), except ErrOutcomeUnknown,
	// after which the caller must read the orders. Their Oco fields are
	// the pair's OCO id as the caller names it; the orders returned carry
	// it. It returns the two orders as the platform first reports them,
	// a's first.
	SubmitOCO(ctx context.Context, a, b OrderRequest) (protocol.Order, protocol.Order, error)
}

// BracketSubmitter is implemented by platforms that place an entry
// order with its exits in a single request: the broker holds the exits
// and sends them when the entry fills ("order sends order"), so that no
// failure of the caller between the entry and its exits can leave a
// filled entry unprotected. The operations use it for an order placed
// with exits at fixed prices when the platform implements it.
type BracketSubmitter interface {
	// SubmitBracket places entry with one or two exits (a stop loss
	// and/or a take profit, on the other side, at fixed prices, for the
	// entry's account, instrument and quantity; two are one OCO pair, and
	// carry its id in Oco). The broker sends the exits once the entry
	// fills, sized to its fill; an entry cancelled unfilled sends none.
	// All are placed or none is: an error means no order stands (a
	// RejectError as SubmitOrder reports one), except ErrOutcomeUnknown,
	// after which the caller must read the orders. It returns the entry
	// as the platform first reports it, then the exits in the order
	// given, each with its id (an exit not sent yet is
	// OrderStateAccepted: held by the broker).
	SubmitBracket(ctx context.Context, entry OrderRequest, exits ...OrderRequest) ([]protocol.Order, error)
}

// StatusReporter is implemented by platforms that can tell support staff
// whether the agent reaches them (protocol.BridgeDiagnostic). Diagnose
// must not block: it reports what the platform already knows.
type StatusReporter interface {
	// Diagnose reports whether the platform is reachable and a sentence of
	// the agent's saying how it is reached or why it is not. The sentence
	// never holds a secret, and nothing the platform sent except short
	// version strings.
	Diagnose() (reachable bool, detail string)
}
