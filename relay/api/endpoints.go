package api

import (
	"slices"

	"tradebridge/protocol"
)

// endpoint is one route of the trading API: the RPC function it calls and
// the parameters it takes. The table below is the single description of
// the API: handlers validate against it and the OpenAPI document is
// generated from it.
type endpoint struct {
	Method  string
	Path    string // net/http pattern path, with {account}, {id}, {orderId}
	Fn      string
	Summary string
	Params  []param
	// OneOf lists groups of parameters of which at least one must be sent.
	OneOf [][]string
	// OrderIDKey: the body's orderId also serves as the idempotency key.
	OrderIDKey bool
	// Choose picks another function for some arguments (POST
	// /positions/flatten with no filters is FlattenEverything).
	Choose func(args map[string]any) string
}

// Where a parameter travels.
const (
	inPath  = "path"
	inQuery = "query"
	inBody  = "body"
)

// Parameter types, as JSON Schema names them.
const (
	tString  = "string"
	tInteger = "integer"
	tNumber  = "number"
	tBoolean = "boolean"
	tObject  = "object"
)

// param is one parameter of an endpoint.
type param struct {
	Name     string
	In       string
	Type     string
	Required bool
	// Default is filled in when the parameter is absent (query only).
	Default any
	// Enum lists the allowed values of a string, matched without regard to
	// case and forwarded in this spelling.
	Enum []string
	// Format checks a string: formatInstrument, formatName, formatTime,
	// formatPositionList.
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
	formatInstrument   = "instrument"    // "ES 12-26", "ES", "ESZ26"
	formatName         = "name"          // account names, ids, tags: 1–64 printable characters
	formatTime         = "date-time"     // RFC 3339
	formatPositionList = "position-list" // comma-separated subset of flat, long, short
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
	pAccount        = param{Name: "account", In: inPath, Type: tString, Required: true, Format: formatName, Max: 64, Doc: "account name as the platform shows it"}
	pStrategyID     = param{Name: "id", In: inPath, Type: tString, Required: true, Format: formatName, Max: 64, Doc: "strategy id"}
	pOrderIDPath    = param{Name: "orderId", In: inPath, Type: tString, Required: true, Format: formatName, Max: 64, Doc: "order id (current or original)"}
	qInstrumentReq  = param{Name: "instrument", In: inQuery, Type: tString, Required: true, Format: formatInstrument, Doc: "instrument, e.g. ES 12-26 (URL-encoded) or a root such as ES"}
	qInstrument     = param{Name: "instrument", In: inQuery, Type: tString, Format: formatInstrument, Doc: "instrument, e.g. ES 12-26 (URL-encoded)"}
	qRoot           = param{Name: "root", In: inQuery, Type: tString, Format: formatInstrument, Max: 8, Doc: "root symbol; the front month is used"}
	qActiveOnly     = param{Name: "activeOnly", In: inQuery, Type: tBoolean, Default: true, Doc: "only orders that are still working"}
	qLookback       = param{Name: "lookbackTime", In: inQuery, Type: tInteger, Default: 320, Min: 1, Max: 900, Doc: "seconds to look back for orders and executions that are done"}
	qIncludeTerm    = param{Name: "includeTerminal", In: inQuery, Type: tBoolean, Default: false, Doc: "include strategies that have ended"}
	qShowRollover   = param{Name: "showRollover", In: inQuery, Type: tBoolean, Default: false, Doc: "also quote the next contract"}
	bInstrument     = param{Name: "instrument", In: inBody, Type: tString, Format: formatInstrument, Doc: "instrument, e.g. ES 12-26"}
	bInstrumentReq  = param{Name: "instrument", In: inBody, Type: tString, Required: true, Format: formatInstrument, Doc: "instrument, e.g. ES 12-26"}
	bAccount        = param{Name: "account", In: inBody, Type: tString, Format: formatName, Max: 64, Doc: "account name; all accounts when omitted"}
	bForce          = param{Name: "force", In: inBody, Type: tBoolean, Doc: "act also on positions and orders owned by another strategy tag"}
	bStrategyTag    = param{Name: "strategyTag", In: inBody, Type: tString, Format: formatName, Max: 64, Doc: "the strategy tag that owns the position share"}
	bStrategyTagMod = param{Name: "strategyTagMode", In: inBody, Type: tString, Enum: tagModes, Doc: "how strategyTag matches: exact (default) or prefix"}
	bCancelOrders   = param{Name: "cancelOrders", In: inBody, Type: tBoolean, Doc: "also cancel working orders (default true)"}
	bAction         = param{Name: "action", In: inBody, Type: tString, Enum: actions, Doc: "Buy or Sell (any casing)"}
	bOrderType      = param{Name: "orderType", In: inBody, Type: tString, Enum: orderTypes, Doc: "Market, Limit, StopMarket or StopLimit (any casing)"}
	bTimeInForce    = param{Name: "timeInForce", In: inBody, Type: tString, Enum: timesInForce, Doc: "Day or Gtc (any casing)"}
	bQuantity       = param{Name: "quantity", In: inBody, Type: tInteger, Min: 1, Max: 10000, Doc: "contracts"}
	bLimitPrice     = param{Name: "limitPrice", In: inBody, Type: tNumber, Min: 0, Max: 1e9, Doc: "limit price, for Limit and StopLimit"}
	bStopPrice      = param{Name: "stopPrice", In: inBody, Type: tNumber, Min: 0, Max: 1e9, Doc: "stop price, for StopMarket and StopLimit"}
	bOcoID          = param{Name: "ocoId", In: inBody, Type: tString, Format: formatName, Max: 64, Doc: "OCO group to create or join"}
	bOrderID        = param{Name: "orderId", In: inBody, Type: tString, Format: formatName, Max: 64, Doc: "your id for the order; a repeat within 24 h returns the first result and places nothing"}
	bAtmTemplate    = param{Name: "strategy", In: inBody, Type: tString, Format: formatName, Max: 64, Doc: "ATM template name: brackets are placed when the entry fills"}
)

func required(p param) param { p.Required = true; return p }

// placeParams are PlaceOrder's body fields.
var placeParams = []param{
	pAccount,
	required(bAction), required(bInstrument), required(bOrderType), required(bQuantity), required(bTimeInForce),
	bLimitPrice, bStopPrice, bOcoID, bOrderID, bAtmTemplate, bStrategyTag,
	{Name: "targetQuantity", In: inBody, Type: tInteger, Min: 0, Max: 10000, Doc: "place only what brings the position to this size in the order's direction"},
	{Name: "maxPositions", In: inBody, Type: tInteger, Min: 1, Max: 1000, Doc: "refuse an order that opens a position when the account already holds this many"},
	{Name: "maxResyncCorrection", In: inBody, Type: tInteger, Min: 1, Max: 10000, Doc: "with targetQuantity: the largest correction placed at once"},
	bForce,
	{Name: "requireMarketPosition", In: inBody, Type: tString, Format: formatPositionList, Doc: "comma-separated subset of flat, long, short the position must be in"},
	{Name: "smartOptions", In: inBody, Type: tObject, Doc: "platform-specific order options"},
}

// flatPlaceParams are FlatPlace's body fields: PlaceOrder's, where only
// instrument, action and quantity are required; orderType defaults from
// the prices sent (both: StopLimit, limitPrice: Limit, stopPrice:
// StopMarket, neither: Market) and timeInForce to Day.
var flatPlaceParams = func() []param {
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

// endpoints is the trading API.
var endpoints = []endpoint{
	// Reads.
	{Method: "GET", Path: "/v1/api/accounts", Fn: protocol.FnListAccounts, Summary: "List accounts"},
	{Method: "GET", Path: "/v1/api/accounts/snapshot", Fn: protocol.FnGetAccountSummary, Summary: "Every account with its positions and working orders"},
	{Method: "GET", Path: "/v1/api/accounts/{account}", Fn: protocol.FnGetAccount, Summary: "One account", Params: []param{pAccount}},
	{Method: "GET", Path: "/v1/api/accounts/{account}/watermarks", Fn: protocol.FnGetWatermarks, Summary: "Session high and low marks of P&L and net liquidation", Params: []param{pAccount}},
	{Method: "GET", Path: "/v1/api/accounts/{account}/position", Fn: protocol.FnGetPosition, Summary: "The position in one instrument", Params: []param{pAccount, qInstrumentReq}},
	{Method: "GET", Path: "/v1/api/accounts/{account}/positions", Fn: protocol.FnListPositions, Summary: "Open positions", Params: []param{pAccount}},
	{Method: "GET", Path: "/v1/api/accounts/{account}/orders", Fn: protocol.FnListOrders, Summary: "Orders", Params: []param{pAccount, qActiveOnly, qLookback}},
	{Method: "GET", Path: "/v1/api/accounts/{account}/orders/{orderId}", Fn: protocol.FnGetOrder, Summary: "One order", Params: []param{pAccount, pOrderIDPath}},
	{Method: "GET", Path: "/v1/api/accounts/{account}/executions", Fn: protocol.FnListExecutions, Summary: "Recent executions", Params: []param{pAccount, qLookback}},
	{Method: "GET", Path: "/v1/api/accounts/{account}/strategies", Fn: protocol.FnListStrategies, Summary: "Strategies of the account", Params: []param{pAccount, qIncludeTerm}},
	{Method: "GET", Path: "/v1/api/accounts/{account}/strategies/{id}", Fn: protocol.FnGetStrategy, Summary: "One strategy", Params: []param{pAccount, pStrategyID}},
	{Method: "GET", Path: "/v1/api/accounts/{account}/quote", Fn: protocol.FnGetQuote, Summary: "Quote", Params: []param{pAccount, qInstrument, qRoot, qShowRollover}, OneOf: [][]string{{"instrument", "root"}}},
	{Method: "GET", Path: "/v1/api/atm-templates", Fn: protocol.FnGetAtmTemplates, Summary: "ATM templates"},
	{Method: "GET", Path: "/v1/api/positions", Fn: protocol.FnGetAllPositions, Summary: "Positions of every account", Params: []param{{Name: "includeFlat", In: inQuery, Type: tBoolean, Default: false, Doc: "include instruments that are flat"}}},
	{Method: "GET", Path: "/v1/api/orders", Fn: protocol.FnGetAllOrders, Summary: "Orders of every account", Params: []param{qActiveOnly, qLookback}},
	{Method: "GET", Path: "/v1/api/strategies", Fn: protocol.FnListAllStrategies, Summary: "Strategies of every account", Params: []param{qIncludeTerm}},
	{Method: "GET", Path: "/v1/api/executions/order/{orderId}", Fn: protocol.FnGetExecutionsByOrderID, Summary: "Executions of an order, by current or original id", Params: []param{pOrderIDPath}},
	{Method: "GET", Path: "/v1/api/market/info", Fn: protocol.FnMarketInfo, Summary: "Instrument specification and trading hours", Params: []param{qInstrument, qRoot}, OneOf: [][]string{{"instrument", "root"}}},
	{Method: "GET", Path: "/v1/api/market/quote", Fn: protocol.FnGetQuote, Summary: "Quote", Params: []param{qInstrument, qRoot, qShowRollover}, OneOf: [][]string{{"instrument", "root"}}},

	// Writes.
	{Method: "POST", Path: "/v1/api/positions/flatten", Fn: protocol.FnFlatten, Summary: "Flatten positions; with no filters, everything",
		Params: []param{bAccount, bInstrument, bCancelOrders, bForce, bStrategyTag, bStrategyTagMod},
		Choose: func(args map[string]any) string {
			if len(args) == 0 {
				return protocol.FnFlattenEverything
			}
			return protocol.FnFlatten
		}},
	{Method: "POST", Path: "/v1/api/orders/cancelall", Fn: protocol.FnCancelAllOrders, Summary: "Cancel every working order of every account"},
	{Method: "POST", Path: "/v1/api/accounts/{account}/positions/flatten", Fn: protocol.FnFlatten, Summary: "Flatten the account's positions",
		Params: []param{pAccount, bInstrument, bCancelOrders, bForce, bStrategyTag, bStrategyTagMod}},
	{Method: "POST", Path: "/v1/api/accounts/{account}/positions/close", Fn: protocol.FnClosePosition, Summary: "Close a position, wholly or partly",
		Params: []param{pAccount, bInstrumentReq,
			{Name: "quantity", In: inBody, Type: tInteger, Min: 1, Max: 10000, Doc: "contracts to close"},
			{Name: "percent", In: inBody, Type: tNumber, Min: 0, Max: 1, Doc: "fraction of the position to close, above 0 and at most 1 (0.5 closes half); rounded up to a whole contract"},
			bStrategyTag, bForce}},
	{Method: "POST", Path: "/v1/api/accounts/{account}/positions/reverse", Fn: protocol.FnReverse, Summary: "Reverse a position at the same size",
		Params: []param{pAccount, bInstrumentReq, bStrategyTag, bForce}},
	{Method: "POST", Path: "/v1/api/accounts/{account}/positions/reverseposition", Fn: protocol.FnReversePosition, Summary: "Close the open position, then place a new order",
		Params: []param{pAccount, bInstrumentReq, required(bAction), required(bQuantity), required(bOrderType), required(bTimeInForce),
			bLimitPrice, bStopPrice, bOcoID, bAtmTemplate, bOrderID},
		OrderIDKey: true},
	{Method: "POST", Path: "/v1/api/accounts/{account}/orders/cancel", Fn: protocol.FnCancelOrders, Summary: "Cancel the account's working orders",
		Params: []param{pAccount, bInstrument, bStrategyTag, bForce}},
	{Method: "POST", Path: "/v1/api/accounts/{account}/orders/place", Fn: protocol.FnPlaceOrder, Summary: "Place an order",
		Params: placeParams, OrderIDKey: true},
	{Method: "POST", Path: "/v1/api/accounts/{account}/orders/flatplace", Fn: protocol.FnFlatPlace, Summary: "Flatten the instrument, then place an order",
		Params: flatPlaceParams, OrderIDKey: true},
	{Method: "POST", Path: "/v1/api/accounts/{account}/orders/cancel_and_bracket", Fn: protocol.FnCancelAndBracket, Summary: "Cancel the instrument's orders, then bracket the position",
		Params: []param{pAccount, bInstrumentReq, required(bAction), required(bQuantity),
			{Name: "takeProfit", In: inBody, Type: tNumber, Min: 0, Max: 1e9, Doc: "limit price of the take-profit order"},
			{Name: "stopLoss", In: inBody, Type: tNumber, Min: 0, Max: 1e9, Doc: "stop price of the stop-loss order"},
			bOcoID},
		OneOf: [][]string{{"takeProfit", "stopLoss"}}},
	{Method: "POST", Path: "/v1/api/accounts/{account}/orders/{orderId}/cancel", Fn: protocol.FnCancelOrder, Summary: "Cancel one order",
		Params: []param{pAccount, pOrderIDPath}},
	{Method: "POST", Path: "/v1/api/accounts/{account}/orders/{orderId}/change", Fn: protocol.FnChangeOrder, Summary: "Change one order's quantity or prices",
		Params: []param{pAccount, pOrderIDPath, bQuantity, bLimitPrice, bStopPrice},
		OneOf:  [][]string{{"quantity", "limitPrice", "stopPrice"}}},
	{Method: "POST", Path: "/v1/api/accounts/{account}/strategies/start", Fn: protocol.FnStartStrategy, Summary: "Start a strategy",
		Params: []param{pAccount,
			{Name: "strategyClass", In: inBody, Type: tString, Required: true, Format: formatName, Max: 64, Aliases: []string{"strategy_class"}, Doc: "strategy class name"},
			bInstrumentReq,
			{Name: "mode", In: inBody, Type: tString, Enum: modes, Doc: "Realtime (default) or Disabled"},
			{Name: "periodType", In: inBody, Type: tString, Enum: periodTypes, Aliases: []string{"period_type"}, Doc: "bar period type"},
			{Name: "period", In: inBody, Type: tString, Format: "integer-text", Doc: "bar period, as text"},
			{Name: "parameters", In: inBody, Type: tObject, Doc: "the strategy's parameters"}}},
	{Method: "POST", Path: "/v1/api/accounts/{account}/strategies/{id}/close", Fn: protocol.FnCloseStrategy, Summary: "Close a strategy (terminal)",
		Params: []param{pAccount, pStrategyID,
			{Name: "strategyId", In: inBody, Type: tString, Format: formatName, Max: 64, Doc: "the strategy id again, as some clients send it"},
			{Name: "signalName", In: inBody, Type: tString, Format: formatName, Max: 64, Doc: "signal name of the exit orders"},
			bStrategyTag, bForce}},
	{Method: "POST", Path: "/v1/api/accounts/{account}/strategies/{id}/enable", Fn: protocol.FnEnableStrategy, Summary: "Enable a strategy", Params: []param{pAccount, pStrategyID}},
	{Method: "POST", Path: "/v1/api/accounts/{account}/strategies/{id}/disable", Fn: protocol.FnDisableStrategy, Summary: "Disable a strategy", Params: []param{pAccount, pStrategyID}},
	{Method: "POST", Path: "/v1/api/market/bars", Fn: protocol.FnGetBars, Summary: "Historical and current bars",
		Params: []param{bInstrumentReq,
			{Name: "periodType", In: inBody, Type: tString, Enum: periodTypes, Aliases: []string{"period_type"}, Doc: "tick, second, minute (default), day, week or month"},
			{Name: "period", In: inBody, Type: tInteger, Min: 1, Max: 100000, Doc: "bar period (default 1)"},
			{Name: "daysBack", In: inBody, Type: tInteger, Min: 0, Max: 3650, Doc: "days of history"},
			{Name: "from", In: inBody, Type: tString, Format: formatTime, Doc: "start, RFC 3339"},
			{Name: "to", In: inBody, Type: tString, Format: formatTime, Doc: "end, RFC 3339"},
			{Name: "limit", In: inBody, Type: tInteger, Min: 1, Max: 100000, Doc: "most recent bars kept (default 5000)"},
			{Name: "timeoutMs", In: inBody, Type: tInteger, Min: 1, Max: 60000, Doc: "how long to wait for the platform"},
			{Name: "splitAdjust", In: inBody, Type: tBoolean, Doc: "accepted for compatibility; futures have no splits"},
			{Name: "dividendAdjust", In: inBody, Type: tBoolean, Doc: "accepted for compatibility; futures pay no dividends"},
			{Name: "mergePolicy", In: inBody, Type: tString, Format: formatName, Max: 32, Doc: "accepted for compatibility"}}},
}
