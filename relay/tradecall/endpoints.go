package tradecall

import (
	"slices"

	"tradebridge/protocol"
	"tradebridge/relay/auth"
)

// Endpoint is one route of the trading API: the RPC function it calls and
// the parameters it takes. The table below (Endpoints) is the single
// description of the API: both doors validate against it (ParseHTTP,
// PrepareSocketCall) and package api generates the OpenAPI document from
// it.
type Endpoint struct {
	Method  string
	Path    string // net/http pattern path, with {account}, {id}, {orderId}
	Fn      string
	Summary string
	Params  []Param
	// OneOf lists groups of parameters of which at least one must be sent.
	OneOf [][]string
	// OrderIDKey: the body's orderId also serves as the idempotency key.
	OrderIDKey bool
	// Choose picks another function for some arguments (POST
	// /positions/flatten with no filters is FlattenEverything).
	Choose func(args map[string]any) string
	// Alternatives are the functions Choose may pick instead of Fn.
	Alternatives []Alternative
}

// Alternative is a function a route's Choose may call instead of its Fn.
type Alternative struct {
	// Fn is the function.
	Fn string
	// Summary says what it does, as a sentence.
	Summary string
}

// Where a parameter travels.
const (
	InPath  = "path"
	InQuery = "query"
	InBody  = "body"
)

// Parameter types, as JSON Schema names them.
const (
	TString  = "string"
	TInteger = "integer"
	TNumber  = "number"
	TBoolean = "boolean"
	TObject  = "object"
)

// Param is one parameter of an endpoint.
type Param struct {
	Name     string
	In       string
	Type     string
	Required bool
	// Default is filled in when the parameter is absent (query only).
	Default any
	// Enum lists the allowed values of a string, matched without regard to
	// case and forwarded in this spelling.
	Enum []string
	// Format checks a string: FormatInstrument, FormatName, FormatTime,
	// FormatPositionList.
	Format string
	// Aliases are other names accepted for the parameter
	// (strategy_class for strategyClass).
	Aliases []string
	// Min and Max bound numbers (inclusive) and the length of strings.
	Min, Max float64
	Doc      string
}

// String formats.
const (
	FormatInstrument   = "instrument"    // "ES 12-26", "ES", "ESZ26"
	FormatName         = "name"          // account names, ids, tags: 1–64 printable characters
	FormatTime         = "date-time"     // RFC 3339
	FormatPositionList = "position-list" // comma-separated subset of flat, long, short
	FormatIntegerText  = "integer-text"  // a whole number from 1 to 100000, as text ("5")
)

var (
	actions      = []string{protocol.ActionBuy, protocol.ActionSell}
	orderTypes   = []string{protocol.OrderTypeMarket, protocol.OrderTypeLimit, protocol.OrderTypeStopMarket, protocol.OrderTypeStopLimit}
	timesInForce = []string{protocol.TimeInForceDay, protocol.TimeInForceGtc}
	periodTypes  = []string{protocol.PeriodTick, protocol.PeriodSecond, protocol.PeriodMinute, protocol.PeriodDay, protocol.PeriodWeek, protocol.PeriodMonth}
	modes        = []string{protocol.StrategyModeRealtime, protocol.StrategyModeDisabled}
	tagModes     = []string{"exact", "prefix"}
)

// Parameters shared by many endpoints.
var (
	pAccount        = Param{Name: "account", In: InPath, Type: TString, Required: true, Format: FormatName, Max: 64, Doc: "account name as the platform shows it"}
	pStrategyID     = Param{Name: "id", In: InPath, Type: TString, Required: true, Format: FormatName, Max: 64, Doc: "strategy id"}
	pOrderIDPath    = Param{Name: "orderId", In: InPath, Type: TString, Required: true, Format: FormatName, Max: 64, Doc: "order id (current or original)"}
	qInstrumentReq  = Param{Name: "instrument", In: InQuery, Type: TString, Required: true, Format: FormatInstrument, Doc: "instrument, e.g. ES 12-26 (URL-encoded) or a root such as ES"}
	qInstrument     = Param{Name: "instrument", In: InQuery, Type: TString, Format: FormatInstrument, Doc: "instrument, e.g. ES 12-26 (URL-encoded)"}
	qRoot           = Param{Name: "root", In: InQuery, Type: TString, Format: FormatInstrument, Max: 8, Doc: "root symbol; the front month is used"}
	qActiveOnly     = Param{Name: "activeOnly", In: InQuery, Type: TBoolean, Default: true, Doc: "only orders that are still working"}
	qLookback       = Param{Name: "lookbackTime", In: InQuery, Type: TInteger, Default: 320, Min: 1, Max: 900, Doc: "seconds to look back for orders and executions that are done"}
	qIncludeTerm    = Param{Name: "includeTerminal", In: InQuery, Type: TBoolean, Default: false, Doc: "include strategies that have ended"}
	qShowRollover   = Param{Name: "showRollover", In: InQuery, Type: TBoolean, Default: false, Doc: "also quote the next contract"}
	bInstrument     = Param{Name: "instrument", In: InBody, Type: TString, Format: FormatInstrument, Doc: "instrument, e.g. ES 12-26"}
	bInstrumentReq  = Param{Name: "instrument", In: InBody, Type: TString, Required: true, Format: FormatInstrument, Doc: "instrument, e.g. ES 12-26"}
	bAccount        = Param{Name: "account", In: InBody, Type: TString, Format: FormatName, Max: 64, Doc: "account name; all accounts when omitted"}
	bForce          = Param{Name: "force", In: InBody, Type: TBoolean, Doc: "act also on positions and orders owned by another strategy tag"}
	bStrategyTag    = Param{Name: "strategyTag", In: InBody, Type: TString, Format: FormatName, Max: 64, Doc: "the strategy tag that owns the position share"}
	bStrategyTagMod = Param{Name: "strategyTagMode", In: InBody, Type: TString, Enum: tagModes, Doc: "how strategyTag matches: exact (default) or prefix"}
	bCancelOrders   = Param{Name: "cancelOrders", In: InBody, Type: TBoolean, Doc: "also cancel working orders (default true)"}
	bAction         = Param{Name: "action", In: InBody, Type: TString, Enum: actions, Doc: "Buy or Sell (any casing)"}
	bOrderType      = Param{Name: "orderType", In: InBody, Type: TString, Enum: orderTypes, Doc: "Market, Limit, StopMarket or StopLimit (any casing)"}
	bTimeInForce    = Param{Name: "timeInForce", In: InBody, Type: TString, Enum: timesInForce, Doc: "Day or Gtc (any casing)"}
	bQuantity       = Param{Name: "quantity", In: InBody, Type: TInteger, Min: 1, Max: 10000, Doc: "contracts"}
	bLimitPrice     = Param{Name: "limitPrice", In: InBody, Type: TNumber, Min: 0, Max: 1e9, Doc: "limit price, for Limit and StopLimit"}
	bStopPrice      = Param{Name: "stopPrice", In: InBody, Type: TNumber, Min: 0, Max: 1e9, Doc: "stop price, for StopMarket and StopLimit"}
	bOcoID          = Param{Name: "ocoId", In: InBody, Type: TString, Format: FormatName, Max: 64, Doc: "OCO group to create or join"}
	bOrderID        = Param{Name: "orderId", In: InBody, Type: TString, Format: FormatName, Max: 64, Doc: "your id for the order; a repeat within 24 h returns the first result and places nothing"}
	bAtmTemplate    = Param{Name: "strategy", In: InBody, Type: TString, Format: FormatName, Max: 64, Doc: "ATM template name: brackets are placed when the entry fills"}
	bTrailDistance  = Param{Name: "trailDistance", In: InBody, Type: TNumber, Min: 0, Max: 1e9, Doc: "distance of a trailing stop from the market, in price units on the tick: required for TrailingStop and TrailingStopLimit, refused otherwise"}
)

// trailingOrderTypes are the order types of a family whose platforms
// have trailing orders (WithTrailingStops).
var trailingOrderTypes = append(slices.Clone(orderTypes), protocol.OrderTypeTrailingStop, protocol.OrderTypeTrailingStopLimit)

// WithTrailingStops returns ep as a family whose platforms have trailing
// orders serves it (the broker family, /v1/api/tv): when ep takes an
// orderType, its enum also offers TrailingStop and TrailingStopLimit and
// ep takes trailDistance after stopPrice. The desktop table is not
// changed: its platforms have no trailing orders, and its routes refuse
// the trailing types as before. Other endpoints are returned as they are.
func WithTrailingStops(ep Endpoint) Endpoint {
	i := slices.IndexFunc(ep.Params, func(p Param) bool { return p.Name == "orderType" && p.In == InBody })
	if i < 0 {
		return ep
	}
	ps := make([]Param, 0, len(ep.Params)+1)
	for _, p := range ep.Params {
		switch p.Name {
		case "orderType":
			p.Enum = trailingOrderTypes
			p.Doc = "Market, Limit, StopMarket, StopLimit, TrailingStop or TrailingStopLimit (any casing)"
			if !p.Required {
				p.Doc += "; by default StopLimit with both prices, Limit with limitPrice, StopMarket with stopPrice, else Market"
			}
		case "limitPrice":
			p.Doc = "limit price, for Limit, StopLimit and TrailingStopLimit (the limit's starting price: it moves with the stop)"
		case "stopPrice":
			p.Doc = "stop price, for StopMarket, StopLimit and TrailingStopLimit; a TrailingStop's starting stop (optional: by default the distance from the market)"
		}
		ps = append(ps, p)
		if p.Name == "stopPrice" && p.In == InBody {
			ps = append(ps, bTrailDistance)
		}
	}
	ep.Params = ps
	return ep
}

func required(p Param) Param { p.Required = true; return p }

// placeParams are PlaceOrder's body fields.
var placeParams = []Param{
	pAccount,
	required(bAction), required(bInstrument), required(bOrderType), required(bQuantity), required(bTimeInForce),
	bLimitPrice, bStopPrice, bOcoID, bOrderID, bAtmTemplate, bStrategyTag,
	{Name: "targetQuantity", In: InBody, Type: TInteger, Min: 0, Max: 10000, Doc: "place only what brings the position to this size in the order's direction"},
	{Name: "maxPositions", In: InBody, Type: TInteger, Min: 1, Max: 1000, Doc: "refuse an order that opens a position when the account already holds this many"},
	{Name: "maxResyncCorrection", In: InBody, Type: TInteger, Min: 1, Max: 10000, Doc: "with targetQuantity: the largest correction placed at once"},
	bForce,
	{Name: "requireMarketPosition", In: InBody, Type: TString, Format: FormatPositionList, Doc: "comma-separated subset of flat, long, short the position must be in"},
	{Name: "smartOptions", In: InBody, Type: TObject, Doc: "platform-specific order options"},
}

// flatPlaceParams are FlatPlace's body fields: PlaceOrder's, where only
// instrument, action and quantity are required; orderType defaults from
// the prices sent (both: StopLimit, limitPrice: Limit, stopPrice:
// StopMarket, neither: Market) and timeInForce to Day.
var flatPlaceParams = func() []Param {
	ps := slices.Clone(placeParams)
	for i := range ps {
		switch ps[i].Name {
		case "orderType":
			ps[i].Required = false
			ps[i].Doc = "Market, Limit, StopMarket or StopLimit (any casing); by default StopLimit with both prices, Limit with limitPrice, StopMarket with stopPrice, else Market"
		case "timeInForce":
			ps[i].Required, ps[i].Default = false, protocol.TimeInForceDay
		}
	}
	return ps
}()

// Endpoints returns the trading API's route table, in order. Callers must
// not modify it.
func Endpoints() []Endpoint { return endpoints }

// endpoints is the trading API.
var endpoints = []Endpoint{
	// Reads.
	{Method: "GET", Path: "/v1/api/accounts", Fn: protocol.FnListAccounts, Summary: "List accounts"},
	{Method: "GET", Path: "/v1/api/accounts/snapshot", Fn: protocol.FnGetAccountSummary, Summary: "Every account with its positions and working orders"},
	{Method: "GET", Path: "/v1/api/accounts/{account}", Fn: protocol.FnGetAccount, Summary: "One account", Params: []Param{pAccount}},
	{Method: "GET", Path: "/v1/api/accounts/{account}/watermarks", Fn: protocol.FnGetWatermarks, Summary: "Session high and low marks of P&L and net liquidation", Params: []Param{pAccount}},
	{Method: "GET", Path: "/v1/api/accounts/{account}/position", Fn: protocol.FnGetPosition, Summary: "The position in one instrument", Params: []Param{pAccount, qInstrumentReq}},
	{Method: "GET", Path: "/v1/api/accounts/{account}/positions", Fn: protocol.FnListPositions, Summary: "Open positions", Params: []Param{pAccount}},
	{Method: "GET", Path: "/v1/api/accounts/{account}/orders", Fn: protocol.FnListOrders, Summary: "Orders", Params: []Param{pAccount, qActiveOnly, qLookback}},
	{Method: "GET", Path: "/v1/api/accounts/{account}/orders/{orderId}", Fn: protocol.FnGetOrder, Summary: "One order", Params: []Param{pAccount, pOrderIDPath}},
	{Method: "GET", Path: "/v1/api/accounts/{account}/executions", Fn: protocol.FnListExecutions, Summary: "Recent executions", Params: []Param{pAccount, qLookback}},
	{Method: "GET", Path: "/v1/api/accounts/{account}/strategies", Fn: protocol.FnListStrategies, Summary: "Strategies of the account", Params: []Param{pAccount, qIncludeTerm}},
	{Method: "GET", Path: "/v1/api/accounts/{account}/strategies/{id}", Fn: protocol.FnGetStrategy, Summary: "One strategy", Params: []Param{pAccount, pStrategyID}},
	{Method: "GET", Path: "/v1/api/accounts/{account}/quote", Fn: protocol.FnGetQuote, Summary: "Quote", Params: []Param{pAccount, qInstrument, qRoot, qShowRollover}, OneOf: [][]string{{"instrument", "root"}}},
	{Method: "GET", Path: "/v1/api/atm-templates", Fn: protocol.FnGetAtmTemplates, Summary: "ATM templates"},
	{Method: "GET", Path: "/v1/api/positions", Fn: protocol.FnGetAllPositions, Summary: "Positions of every account", Params: []Param{{Name: "includeFlat", In: InQuery, Type: TBoolean, Default: false, Doc: "include instruments that are flat"}}},
	{Method: "GET", Path: "/v1/api/orders", Fn: protocol.FnGetAllOrders, Summary: "Orders of every account", Params: []Param{qActiveOnly, qLookback}},
	{Method: "GET", Path: "/v1/api/strategies", Fn: protocol.FnListAllStrategies, Summary: "Strategies of every account", Params: []Param{qIncludeTerm}},
	{Method: "GET", Path: "/v1/api/executions/order/{orderId}", Fn: protocol.FnGetExecutionsByOrderID, Summary: "Executions of an order, by current or original id", Params: []Param{pOrderIDPath}},
	{Method: "GET", Path: "/v1/api/market/info", Fn: protocol.FnMarketInfo, Summary: "Instrument specification and trading hours", Params: []Param{qInstrument, qRoot}, OneOf: [][]string{{"instrument", "root"}}},
	{Method: "GET", Path: "/v1/api/market/quote", Fn: protocol.FnGetQuote, Summary: "Quote", Params: []Param{qInstrument, qRoot, qShowRollover}, OneOf: [][]string{{"instrument", "root"}}},

	// Writes.
	{Method: "POST", Path: "/v1/api/positions/flatten", Fn: protocol.FnFlatten, Summary: "Flatten positions; with no filters, everything",
		Params: []Param{bAccount, bInstrument, bCancelOrders, bForce, bStrategyTag, bStrategyTagMod},
		Choose: func(args map[string]any) string {
			if len(args) == 0 {
				return protocol.FnFlattenEverything
			}
			return protocol.FnFlatten
		},
		Alternatives: []Alternative{{Fn: protocol.FnFlattenEverything, Summary: "Flatten every position and cancel every working order of every account"}}},
	{Method: "POST", Path: "/v1/api/orders/cancelall", Fn: protocol.FnCancelAllOrders, Summary: "Cancel every working order of every account"},
	{Method: "POST", Path: "/v1/api/accounts/{account}/positions/flatten", Fn: protocol.FnFlatten, Summary: "Flatten the account's positions",
		Params: []Param{pAccount, bInstrument, bCancelOrders, bForce, bStrategyTag, bStrategyTagMod}},
	{Method: "POST", Path: "/v1/api/accounts/{account}/positions/close", Fn: protocol.FnClosePosition, Summary: "Close a position, wholly or partly",
		Params: []Param{pAccount, bInstrumentReq,
			{Name: "quantity", In: InBody, Type: TInteger, Min: 1, Max: 10000, Doc: "contracts to close"},
			{Name: "percent", In: InBody, Type: TNumber, Min: 0, Max: 1, Doc: "fraction of the position to close, above 0 and at most 1 (0.5 closes half); rounded up to a whole contract"},
			bStrategyTag, bForce}},
	{Method: "POST", Path: "/v1/api/accounts/{account}/positions/reverse", Fn: protocol.FnReverse, Summary: "Reverse a position at the same size",
		Params: []Param{pAccount, bInstrumentReq, bStrategyTag, bForce}},
	{Method: "POST", Path: "/v1/api/accounts/{account}/positions/reverseposition", Fn: protocol.FnReversePosition, Summary: "Close the open position, then place a new order",
		Params: []Param{pAccount, bInstrumentReq, required(bAction), required(bQuantity), required(bOrderType), required(bTimeInForce),
			bLimitPrice, bStopPrice, bOcoID, bAtmTemplate, bOrderID},
		OrderIDKey: true},
	{Method: "POST", Path: "/v1/api/accounts/{account}/orders/cancel", Fn: protocol.FnCancelOrders, Summary: "Cancel the account's working orders",
		Params: []Param{pAccount, bInstrument, bStrategyTag, bForce}},
	{Method: "POST", Path: "/v1/api/accounts/{account}/orders/place", Fn: protocol.FnPlaceOrder, Summary: "Place an order",
		Params: placeParams, OrderIDKey: true},
	{Method: "POST", Path: "/v1/api/accounts/{account}/orders/flatplace", Fn: protocol.FnFlatPlace, Summary: "Flatten the instrument, then place an order",
		Params: flatPlaceParams, OrderIDKey: true},
	{Method: "POST", Path: "/v1/api/accounts/{account}/orders/cancel_and_bracket", Fn: protocol.FnCancelAndBracket, Summary: "Cancel the instrument's orders, then bracket the position",
		Params: []Param{pAccount, bInstrumentReq, required(bAction), required(bQuantity),
			{Name: "takeProfit", In: InBody, Type: TNumber, Min: 0, Max: 1e9, Doc: "limit price of the take-profit order"},
			{Name: "stopLoss", In: InBody, Type: TNumber, Min: 0, Max: 1e9, Doc: "stop price of the stop-loss order"},
			bOcoID},
		OneOf: [][]string{{"takeProfit", "stopLoss"}}},
	{Method: "POST", Path: "/v1/api/accounts/{account}/orders/{orderId}/cancel", Fn: protocol.FnCancelOrder, Summary: "Cancel one order",
		Params: []Param{pAccount, pOrderIDPath}},
	{Method: "POST", Path: "/v1/api/accounts/{account}/orders/{orderId}/change", Fn: protocol.FnChangeOrder, Summary: "Change one order's quantity or prices",
		Params: []Param{pAccount, pOrderIDPath, bQuantity, bLimitPrice, bStopPrice},
		OneOf:  [][]string{{"quantity", "limitPrice", "stopPrice"}}},
	{Method: "POST", Path: "/v1/api/accounts/{account}/strategies/start", Fn: protocol.FnStartStrategy, Summary: "Start a strategy",
		Params: []Param{pAccount,
			{Name: "strategyClass", In: InBody, Type: TString, Required: true, Format: FormatName, Max: 64, Aliases: []string{"strategy_class"}, Doc: "strategy class name"},
			bInstrumentReq,
			{Name: "mode", In: InBody, Type: TString, Enum: modes, Doc: "Realtime (default) or Disabled"},
			{Name: "periodType", In: InBody, Type: TString, Enum: periodTypes, Aliases: []string{"period_type"}, Doc: "bar period type"},
			{Name: "period", In: InBody, Type: TString, Format: FormatIntegerText, Doc: "bar period, as text"},
			{Name: "parameters", In: InBody, Type: TObject, Doc: "the strategy's parameters"}}},
	{Method: "POST", Path: "/v1/api/accounts/{account}/strategies/{id}/close", Fn: protocol.FnCloseStrategy, Summary: "Close a strategy (terminal)",
		Params: []Param{pAccount, pStrategyID,
			{Name: "strategyId", In: InBody, Type: TString, Format: FormatName, Max: 64, Doc: "the strategy id again, as some clients send it"},
			{Name: "signalName", In: InBody, Type: TString, Format: FormatName, Max: 64, Doc: "signal name of the exit orders"},
			bStrategyTag, bForce}},
	{Method: "POST", Path: "/v1/api/accounts/{account}/strategies/{id}/enable", Fn: protocol.FnEnableStrategy, Summary: "Enable a strategy", Params: []Param{pAccount, pStrategyID}},
	{Method: "POST", Path: "/v1/api/accounts/{account}/strategies/{id}/disable", Fn: protocol.FnDisableStrategy, Summary: "Disable a strategy", Params: []Param{pAccount, pStrategyID}},
	{Method: "POST", Path: "/v1/api/market/bars", Fn: protocol.FnGetBars, Summary: "Historical and current bars",
		Params: []Param{bInstrumentReq,
			{Name: "periodType", In: InBody, Type: TString, Enum: periodTypes, Aliases: []string{"period_type"}, Doc: "tick, second, minute (default), day, week or month"},
			{Name: "period", In: InBody, Type: TInteger, Min: 1, Max: 100000, Doc: "bar period (default 1)"},
			{Name: "daysBack", In: InBody, Type: TInteger, Min: 0, Max: 3650, Doc: "days of history"},
			{Name: "from", In: InBody, Type: TString, Format: FormatTime, Doc: "start, RFC 3339"},
			{Name: "to", In: InBody, Type: TString, Format: FormatTime, Doc: "end, RFC 3339"},
			{Name: "limit", In: InBody, Type: TInteger, Min: 1, Max: 100000, Doc: "most recent bars kept (default 5000)"},
			{Name: "timeoutMs", In: InBody, Type: TInteger, Min: 1, Max: 60000, Doc: "how long to wait for the platform"},
			{Name: "splitAdjust", In: InBody, Type: TBoolean, Doc: "accepted for compatibility; futures have no splits"},
			{Name: "dividendAdjust", In: InBody, Type: TBoolean, Doc: "accepted for compatibility; futures pay no dividends"},
			{Name: "mergePolicy", In: InBody, Type: TString, Format: FormatName, Max: 32, Doc: "accepted for compatibility"}}},
}

// Scope is the scope an API token needs to call the endpoint: its
// function's (FunctionScope), and auth.ScopeTrade when Choose may pick
// another function (the flatten route's writes either way).
func (ep Endpoint) Scope() auth.Scope {
	if ep.Choose != nil {
		return auth.ScopeTrade
	}
	return FunctionScope(ep.Fn)
}

// FunctionScope is the scope an API token needs to call the trading
// function fn, whichever door the call came in by: auth.ScopeTrade for a
// function that writes (protocol.Function.Write) or that the protocol
// does not know, auth.ScopeRead for one that reads.
func FunctionScope(fn string) auth.Scope {
	if f, ok := protocol.LookupFunction(fn); ok && !f.Write {
		return auth.ScopeRead
	}
	return auth.ScopeTrade
}
