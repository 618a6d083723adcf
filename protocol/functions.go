package protocol

// RPC function names, as the spec names them. A Request's Fn is one of these;
// the WebSocket stream API's "api" field carries the same names.
const (
	FnListAccounts           = "ListAccounts"
	FnGetAccountSummary      = "GetAccountSummary"
	FnGetAccount             = "GetAccount"
	FnGetWatermarks          = "GetWatermarks"
	FnGetPosition            = "GetPosition"
	FnListPositions          = "ListPositions"
	FnListOrders             = "ListOrders"
	FnGetOrder               = "GetOrder"
	FnListExecutions         = "ListExecutions"
	FnListStrategies         = "ListStrategies"
	FnGetStrategy            = "GetStrategy"
	FnGetQuote               = "GetQuote"
	FnGetAtmTemplates        = "GetAtmTemplates"
	FnGetAllPositions        = "GetAllPositions"
	FnGetAllOrders           = "GetAllOrders"
	FnListAllStrategies      = "ListAllStrategies"
	FnGetExecutionsByOrderID = "GetExecutionsByOrderId"
	FnMarketInfo             = "MarketInfo"
	FnGetBars                = "GetBars"
	FnFlatten                = "Flatten"
	FnFlattenEverything      = "FlattenEverything"
	FnCancelAllOrders        = "CancelAllOrders"
	FnClosePosition          = "ClosePosition"
	FnReverse                = "Reverse"
	FnReversePosition        = "ReversePosition"
	FnCancelOrders           = "CancelOrders"
	FnCancelOrder            = "CancelOrder"
	FnChangeOrder            = "ChangeOrder"
	FnPlaceOrder             = "PlaceOrder"
	FnFlatPlace              = "FlatPlace"
	FnCancelAndBracket       = "CancelAndBracket"
	FnStartStrategy          = "StartStrategy"
	FnCloseStrategy          = "CloseStrategy"
	FnEnableStrategy         = "EnableStrategy"
	FnDisableStrategy        = "DisableStrategy"
)

// Function describes an RPC function.
type Function struct {
	Name string
	// Write is true for functions that change orders, positions or
	// strategies. Writes carry a RequestID and run at most once.
	Write bool
}

// Functions lists every RPC function of this protocol version.
var Functions = []Function{
	{FnListAccounts, false},
	{FnGetAccountSummary, false},
	{FnGetAccount, false},
	{FnGetWatermarks, false},
	{FnGetPosition, false},
	{FnListPositions, false},
	{FnListOrders, false},
	{FnGetOrder, false},
	{FnListExecutions, false},
	{FnListStrategies, false},
	{FnGetStrategy, false},
	{FnGetQuote, false},
	{FnGetAtmTemplates, false},
	{FnGetAllPositions, false},
	{FnGetAllOrders, false},
	{FnListAllStrategies, false},
	{FnGetExecutionsByOrderID, false},
	{FnMarketInfo, false},
	{FnGetBars, false},
	{FnFlatten, true},
	{FnFlattenEverything, true},
	{FnCancelAllOrders, true},
	{FnClosePosition, true},
	{FnReverse, true},
	{FnReversePosition, true},
	{FnCancelOrders, true},
	{FnCancelOrder, true},
	{FnChangeOrder, true},
	{FnPlaceOrder, true},
	{FnFlatPlace, true},
	{FnCancelAndBracket, true},
	{FnStartStrategy, true},
	{FnCloseStrategy, true},
	{FnEnableStrategy, true},
	{FnDisableStrategy, true},
}

var functionIndex = func() map[string]Function {
	m := make(map[string]Function, len(Functions))
	for _, f := range Functions {
		m[f.Name] = f
	}
	return m
}()

// LookupFunction returns the function named name.
func LookupFunction(name string) (Function, bool) {
	f, ok := functionIndex[name]
	return f, ok
}
