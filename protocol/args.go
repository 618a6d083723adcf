package protocol

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// Arguments and results of the RPC functions.
//
// Each function's Args travel as one JSON object whose field names are the
// spec's parameter and body field names. Path parameters of the HTTP routes
// (account, id, orderId) travel as fields of the same object, next to the
// body fields, as the WebSocket form of RPC sends them. Query parameters
// arrive as typed JSON values: the relay converts the text of "true" or
// "320" to a boolean or an integer before it calls the agent, and the agent
// refuses a value of the wrong JSON type.
//
// Optional fields whose absence differs from their zero value are pointers
// (nil when absent). Unknown fields are ignored, as everywhere in this
// protocol (see the package documentation): the relay is the edge that
// decides what bot authors may send.
//
// Function → arguments → result:
//
//	ListAccounts            NoArgs                []Account
//	GetAccountSummary       NoArgs                AccountSummary
//	GetAccount              AccountArgs           Account
//	GetWatermarks           AccountArgs           Watermarks
//	GetPosition             PositionArgs          Position (Flat when none)
//	ListPositions           AccountArgs           []Position
//	ListOrders              ListOrdersArgs        []Order
//	GetOrder                OrderArgs             Order
//	ListExecutions          ListExecutionsArgs    []Execution
//	ListStrategies          ListStrategiesArgs    []Strategy
//	GetStrategy             StrategyArgs          Strategy
//	GetQuote                QuoteArgs             QuoteResult
//	GetAtmTemplates         NoArgs                []AtmTemplate
//	GetAllPositions         AllPositionsArgs      []Position
//	GetAllOrders            AllOrdersArgs         []Order
//	ListAllStrategies       AllStrategiesArgs     []Strategy
//	GetExecutionsByOrderId  OrderArgs             []Execution
//	MarketInfo              InstrumentArgs        InstrumentInfo
//	GetBars                 BarsArgs              Bars
//	Flatten                 FlattenArgs           FlattenResult
//	FlattenEverything       NoArgs                FlattenResult
//	CancelAllOrders         NoArgs                CancelResult
//	ClosePosition           ClosePositionArgs     PlaceResult
//	Reverse                 ReverseArgs           PlaceResult
//	ReversePosition         ReversePositionArgs   PlaceResult
//	CancelOrders            CancelOrdersArgs      CancelResult
//	CancelOrder             OrderArgs             OrderResult
//	ChangeOrder             ChangeOrderArgs       OrderResult
//	PlaceOrder              PlaceOrderArgs        PlaceResult
//	FlatPlace               FlatPlaceArgs         PlaceResult
//	CancelAndBracket        CancelAndBracketArgs  BracketResult
//	CancelReplace           CancelReplaceArgs     PlaceResult
//	StartStrategy           StartStrategyArgs     Strategy
//	CloseStrategy           CloseStrategyArgs     Strategy
//	EnableStrategy          StrategyArgs          Strategy
//	DisableStrategy         StrategyArgs          Strategy

// NoArgs are the arguments of functions that take none: ListAccounts,
// GetAccountSummary, GetAtmTemplates, FlattenEverything, CancelAllOrders.
// An empty, null or {} Args is accepted.
type NoArgs struct{}

// PositionArgs are the arguments of GetPosition.
type PositionArgs struct {
	Account    string `json:"account"`
	Instrument string `json:"instrument"`
}

// ListOrdersArgs are the arguments of ListOrders. ActiveOnly defaults to
// true; with ActiveOnly false the result also holds the orders that ended
// within the last LookbackTime seconds (default DefaultLookbackSeconds, at
// most MaxLookbackSeconds).
type ListOrdersArgs struct {
	Account      string `json:"account"`
	ActiveOnly   *bool  `json:"activeOnly,omitempty"`
	LookbackTime *int   `json:"lookbackTime,omitempty"`
}

// AllOrdersArgs are the arguments of GetAllOrders: ListOrdersArgs over
// every account.
type AllOrdersArgs struct {
	ActiveOnly   *bool `json:"activeOnly,omitempty"`
	LookbackTime *int  `json:"lookbackTime,omitempty"`
}

// Bounds of lookbackTime, in seconds.
const (
	DefaultLookbackSeconds = 320
	MaxLookbackSeconds     = 900
)

// OrderArgs name one order: GetOrder, CancelOrder, GetExecutionsByOrderId.
// Account is required by CancelOrder; GetOrder and GetExecutionsByOrderId
// search every account when it is empty.
type OrderArgs struct {
	Account string `json:"account,omitempty"`
	OrderID string `json:"orderId"`
}

// ListExecutionsArgs are the arguments of ListExecutions: the account's
// fills of the last LookbackTime seconds (default DefaultLookbackSeconds,
// at most MaxLookbackSeconds).
type ListExecutionsArgs struct {
	Account      string `json:"account"`
	LookbackTime *int   `json:"lookbackTime,omitempty"`
}

// ListStrategiesArgs are the arguments of ListStrategies.
type ListStrategiesArgs struct {
	Account         string `json:"account"`
	IncludeTerminal bool   `json:"includeTerminal,omitempty"`
}

// AllStrategiesArgs are the arguments of ListAllStrategies.
type AllStrategiesArgs struct {
	IncludeTerminal bool `json:"includeTerminal,omitempty"`
}

// StrategyArgs name one strategy: GetStrategy, EnableStrategy,
// DisableStrategy. The id may be sent as id (the path parameter) or
// strategyId; when both are sent they must be equal.
type StrategyArgs struct {
	Account    string `json:"account"`
	ID         string `json:"id,omitempty"`
	StrategyID string `json:"strategyId,omitempty"`
}

// CloseStrategyArgs are the arguments of CloseStrategy.
type CloseStrategyArgs struct {
	Account    string `json:"account"`
	ID         string `json:"id,omitempty"`
	StrategyID string `json:"strategyId,omitempty"`
	SignalName string `json:"signalName,omitempty"`
	// StrategyTag and Force follow the ownership rules of the write
	// operations: a tag other than the owner of the strategy's account and
	// instrument is refused unless Force.
	StrategyTag string `json:"strategyTag,omitempty"`
	Force       bool   `json:"force,omitempty"`
}

// InstrumentArgs select an instrument by its name or its root:
// MarketInfo. At least one is required; Instrument wins when both are sent.
type InstrumentArgs struct {
	Instrument string `json:"instrument,omitempty"`
	Root       string `json:"root,omitempty"`
}

// QuoteArgs are the arguments of GetQuote. Account is the path parameter of
// the account-scoped route; quotes do not depend on it.
type QuoteArgs struct {
	Account      string `json:"account,omitempty"`
	Instrument   string `json:"instrument,omitempty"`
	Root         string `json:"root,omitempty"`
	ShowRollover bool   `json:"showRollover,omitempty"`
}

// QuoteResult is the result of GetQuote: the quote's own fields, plus the
// next contract's quote when showRollover was set.
type QuoteResult struct {
	Quote
	Rollover *Quote `json:"rollover,omitempty"`
}

// AllPositionsArgs are the arguments of GetAllPositions.
type AllPositionsArgs struct {
	IncludeFlat bool `json:"includeFlat,omitempty"`
}

// BarsArgs are the arguments of GetBars. PeriodType may also be sent as
// period_type.
type BarsArgs struct {
	Instrument string `json:"instrument"`
	// PeriodType is one of tick, second, minute, day, week, month (any
	// casing); default minute.
	PeriodType string `json:"periodType,omitempty"`
	Period     *int   `json:"period,omitempty"`
	DaysBack   *int   `json:"daysBack,omitempty"`
	// From and To are RFC 3339 times or YYYY-MM-DD dates (New York time).
	From           string `json:"from,omitempty"`
	To             string `json:"to,omitempty"`
	Limit          *int   `json:"limit,omitempty"`
	TimeoutMs      *int   `json:"timeoutMs,omitempty"`
	SplitAdjust    bool   `json:"splitAdjust,omitempty"`
	DividendAdjust bool   `json:"dividendAdjust,omitempty"`
	MergePolicy    string `json:"mergePolicy,omitempty"`
}

// UnmarshalJSON accepts periodType also as period_type.
func (a *BarsArgs) UnmarshalJSON(b []byte) error {
	type plain BarsArgs
	var aux struct {
		plain
		PeriodTypeSnake *string `json:"period_type"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	v, err := alias("periodType", aux.plain.PeriodType, "period_type", aux.PeriodTypeSnake)
	if err != nil {
		return err
	}
	*a = BarsArgs(aux.plain)
	a.PeriodType = v
	return nil
}

// FlattenArgs are the arguments of Flatten. Every field is optional:
// without Account every account is flattened, without Instrument every
// instrument of the account(s). CancelOrders defaults to true.
type FlattenArgs struct {
	Account      string `json:"account,omitempty"`
	Instrument   string `json:"instrument,omitempty"`
	CancelOrders *bool  `json:"cancelOrders,omitempty"`
	Force        bool   `json:"force,omitempty"`
	StrategyTag  string `json:"strategyTag,omitempty"`
	// StrategyTagMode is how StrategyTag selects: StrategyTagModeExact
	// (default), StrategyTagModePrefix or StrategyTagModeExclude.
	StrategyTagMode string `json:"strategyTagMode,omitempty"`
}

// Values of FlattenArgs.StrategyTagMode, matched case-insensitively.
const (
	// StrategyTagModeExact touches the orders and position share of
	// exactly that tag.
	StrategyTagModeExact = "exact"
	// StrategyTagModePrefix touches those of every tag that starts with it.
	StrategyTagModePrefix = "prefix"
	// StrategyTagModeExclude touches everything except that tag's orders
	// and position share.
	StrategyTagModeExclude = "exclude"
)

// FlattenResult is the result of Flatten and FlattenEverything.
type FlattenResult struct {
	// Positions are the positions (or position shares) that were closed,
	// as they stood before.
	Positions []Position `json:"positions"`
	// OrderIDs are the closing orders placed.
	OrderIDs []string `json:"orderIds"`
	// CancelledOrderIDs are the working orders cancelled.
	CancelledOrderIDs []string `json:"cancelledOrderIds"`
}

// CancelResult is the result of CancelOrders and CancelAllOrders.
type CancelResult struct {
	// CancelledOrderIDs are the orders asked to cancel. An order that
	// reached a terminal state on its own meanwhile is left out.
	CancelledOrderIDs []string `json:"cancelledOrderIds"`
}

// ClosePositionArgs are the arguments of ClosePosition. At most one of
// Quantity and Percent; without either the whole position is closed.
type ClosePositionArgs struct {
	Account     string   `json:"account"`
	Instrument  string   `json:"instrument"`
	Quantity    *int     `json:"quantity,omitempty"`
	Percent     *float64 `json:"percent,omitempty"`
	StrategyTag string   `json:"strategyTag,omitempty"`
	Force       bool     `json:"force,omitempty"`
}

// ReverseArgs are the arguments of Reverse.
type ReverseArgs struct {
	Account     string `json:"account"`
	Instrument  string `json:"instrument"`
	StrategyTag string `json:"strategyTag,omitempty"`
	Force       bool   `json:"force,omitempty"`
}

// ReversePositionArgs are the arguments of ReversePosition: the order
// placed once the open position is closed.
type ReversePositionArgs struct {
	Account     string   `json:"account"`
	Instrument  string   `json:"instrument"`
	Action      string   `json:"action"`
	Quantity    int      `json:"quantity"`
	OrderType   string   `json:"orderType"`
	TimeInForce string   `json:"timeInForce"`
	LimitPrice  *float64 `json:"limitPrice,omitempty"`
	StopPrice   *float64 `json:"stopPrice,omitempty"`
	// TrailDistance is as in PlaceOrderArgs.
	TrailDistance *float64 `json:"trailDistance,omitempty"`
	OcoID         string   `json:"ocoId,omitempty"`
	Strategy      string   `json:"strategy,omitempty"`
	StrategyTag   string   `json:"strategyTag,omitempty"`
	Force         bool     `json:"force,omitempty"`
}

// CancelOrdersArgs are the arguments of CancelOrders: the account's
// working orders, narrowed to an instrument and a strategy tag when given.
type CancelOrdersArgs struct {
	Account     string `json:"account"`
	Instrument  string `json:"instrument,omitempty"`
	StrategyTag string `json:"strategyTag,omitempty"`
	Force       bool   `json:"force,omitempty"`
}

// ChangeOrderArgs are the arguments of ChangeOrder; absent fields keep
// their value, and at least one must be sent.
type ChangeOrderArgs struct {
	Account    string   `json:"account"`
	OrderID    string   `json:"orderId"`
	Quantity   *int     `json:"quantity,omitempty"`
	LimitPrice *float64 `json:"limitPrice,omitempty"`
	StopPrice  *float64 `json:"stopPrice,omitempty"`
}

// FlatPlaceArgs are the arguments of FlatPlace: an order placed once the
// account's position in the instrument is flat. Instrument, Action and
// Quantity are required; an empty OrderType is FlatPlaceOrderType of the
// prices sent and an empty TimeInForce is Day.
type FlatPlaceArgs = PlaceOrderArgs

// FlatPlaceOrderType is the order type of a FlatPlace that names none:
// StopLimit with both prices, Limit with a limit price, StopMarket with a
// stop price, Market with neither.
func FlatPlaceOrderType(limitPrice, stopPrice bool) string {
	switch {
	case limitPrice && stopPrice:
		return OrderTypeStopLimit
	case limitPrice:
		return OrderTypeLimit
	case stopPrice:
		return OrderTypeStopMarket
	}
	return OrderTypeMarket
}

// SmartOptions are the options PlaceOrder and FlatPlace accept in
// smartOptions. Unknown options are refused, so that an option the agent
// does not implement never passes silently.
type SmartOptions struct {
	// FlattenFirst flattens the account's position and working orders in
	// the instrument (only the strategy tag's share and orders, when
	// StrategyTag is set) and waits for them to clear before placing.
	FlattenFirst bool `json:"flattenFirst,omitempty"`
	// ReduceOnly refuses the order unless it only reduces the position.
	ReduceOnly bool `json:"reduceOnly,omitempty"`
}

// ParseSmartOptions decodes PlaceOrderArgs.SmartOptions: absent or null is
// the zero value; anything but an object of known options is an error.
func ParseSmartOptions(raw json.RawMessage) (SmartOptions, error) {
	var o SmartOptions
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return o, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return SmartOptions{}, NewError(CodeInvalidArgument, "smartOptions must be an object of known options (flattenFirst, reduceOnly) with boolean values")
	}
	return o, nil
}

// CancelAndBracketArgs are the arguments of CancelAndBracket. At least one
// of TakeProfit and StopLoss is required.
type CancelAndBracketArgs struct {
	Account    string   `json:"account"`
	Instrument string   `json:"instrument"`
	Action     string   `json:"action"`
	Quantity   int      `json:"quantity"`
	TakeProfit *float64 `json:"takeProfit,omitempty"`
	StopLoss   *float64 `json:"stopLoss,omitempty"`
	OcoID      string   `json:"ocoId,omitempty"`
}

// BracketResult is the result of CancelAndBracket.
type BracketResult struct {
	// OrderIDs are the bracket orders placed: the stop loss first, then the
	// take profit. Empty when the position went flat during the cancel
	// window (Placed false).
	OrderIDs []string `json:"orderIds"`
	Placed   bool     `json:"placed"`
	// OcoID is the OCO id the legs share (the caller's or a generated one).
	OcoID             string   `json:"ocoId,omitempty"`
	Quantity          int      `json:"quantity"`
	CancelledOrderIDs []string `json:"cancelledOrderIds"`
	Orders            []Order  `json:"orders"`
}

// StartStrategyArgs are the arguments of StartStrategy. StrategyClass may
// also be sent as strategy_class and PeriodType as period_type; Period may
// be a JSON number or a string holding an integer.
type StartStrategyArgs struct {
	Account       string         `json:"account"`
	StrategyClass string         `json:"strategyClass"`
	Instrument    string         `json:"instrument"`
	Mode          string         `json:"mode,omitempty"`
	PeriodType    string         `json:"periodType,omitempty"`
	Period        int            `json:"period,omitempty"`
	Parameters    map[string]any `json:"parameters,omitempty"`
}

// UnmarshalJSON accepts the snake-case spellings and a textual period.
func (a *StartStrategyArgs) UnmarshalJSON(b []byte) error {
	type plain StartStrategyArgs
	var aux struct {
		plain
		StrategyClassSnake *string          `json:"strategy_class"`
		PeriodTypeSnake    *string          `json:"period_type"`
		Period             *json.RawMessage `json:"period"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	class, err := alias("strategyClass", aux.plain.StrategyClass, "strategy_class", aux.StrategyClassSnake)
	if err != nil {
		return err
	}
	pt, err := alias("periodType", aux.plain.PeriodType, "period_type", aux.PeriodTypeSnake)
	if err != nil {
		return err
	}
	*a = StartStrategyArgs(aux.plain)
	a.StrategyClass, a.PeriodType = class, pt
	a.Period = 0
	if aux.Period != nil {
		if a.Period, err = intOrText(*aux.Period); err != nil {
			return NewError(CodeInvalidArgument, "period must be a whole number")
		}
	}
	return nil
}

// alias merges a field sent under two names: equal values or one of them.
func alias(name, v, altName string, alt *string) (string, error) {
	if alt == nil || *alt == "" {
		return v, nil
	}
	if v != "" && v != *alt {
		return "", NewError(CodeInvalidArgument, name+" and "+altName+" differ; send one of them")
	}
	return *alt, nil
}

// intOrText decodes a JSON number, a string holding an integer, or null.
func intOrText(raw json.RawMessage) (int, error) {
	raw = bytes.TrimSpace(raw)
	if bytes.Equal(raw, []byte("null")) {
		return 0, nil
	}
	var n int
	if err := json.Unmarshal(raw, &n); err == nil {
		return n, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, err
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	return strconv.Atoi(s)
}

// PlaceResult is the result of the functions that place one order:
// PlaceOrder, FlatPlace, ClosePosition, Reverse, ReversePosition. Its
// orderId and order fields are those of OrderResult, so a reader of
// OrderResult reads it unchanged.
type PlaceResult struct {
	// OrderID is the id of the order placed; empty when Unchanged.
	OrderID string `json:"orderId"`
	// Order is the order as the platform first reported it; absent when
	// Unchanged.
	Order *Order `json:"order,omitempty"`
	// Unchanged reports that nothing was placed because the position
	// already was what the call asked for (targetQuantity reached).
	Unchanged bool `json:"unchanged,omitempty"`
	// CloseOrderIDs are the orders that closed the old position first
	// (FlatPlace, Reverse, ReversePosition, flattenFirst).
	CloseOrderIDs []string `json:"closeOrderIds,omitempty"`
	// CancelledOrderIDs are the working orders cancelled first.
	CancelledOrderIDs []string `json:"cancelledOrderIds,omitempty"`
	// OrderIDs are the ids of every order the call placed (ClosePosition:
	// the closing order), for callers that read a list.
	OrderIDs []string `json:"orderIds,omitempty"`
	// ClosedPositions are the positions the call closed, wholly or in
	// part, as they stood before it (ClosePosition: one element, whose
	// quantity is the whole position before the close).
	ClosedPositions []Position `json:"closedPositions,omitempty"`
}

// AccountSummary is the result of GetAccountSummary: a snapshot of every
// account with its open positions and working orders, read at one moment
// (Time, Epoch in ms).
type AccountSummary struct {
	Accounts []AccountSnapshot `json:"accounts"`
	Time     string            `json:"time"`
	Epoch    int64             `json:"epoch"`
}

// AccountSnapshot is one account of an AccountSummary: the account record's
// own fields, plus its open positions and its working (non-terminal)
// orders.
type AccountSnapshot struct {
	Account
	Positions []Position `json:"positions"`
	Orders    []Order    `json:"orders"`
}
