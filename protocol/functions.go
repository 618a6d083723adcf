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
	// FnCancelReplace cancels a working order and, once it is cancelled
	// unfilled, places another: CancelReplaceArgs → PlaceResult. Since
	// protocol version 7 (ExitsProtocolVersion).
	FnCancelReplace = "CancelReplace"
)

// Function describes an RPC function.
type Function struct {
	Name string
	// Write is true for functions that change orders, positions or
	// strategies. Writes carry a RequestID and run at most once.
	Write bool
	// Internal functions are the relay's own (market-data subscriptions,
	// P&L polling): bot authors cannot call them.
	Internal bool
}

// Functions lists every RPC function of this protocol version.
var Functions = []Function{
	{Name: FnListAccounts, Write: false},
	{Name: FnGetAccountSummary, Write: false},
	{Name: FnGetAccount, Write: false},
	{Name: FnGetWatermarks, Write: false},
	{Name: FnGetPosition, Write: false},
	{Name: FnListPositions, Write: false},
	{Name: FnListOrders, Write: false},
	{Name: FnGetOrder, Write: false},
	{Name: FnListExecutions, Write: false},
	{Name: FnListStrategies, Write: false},
	{Name: FnGetStrategy, Write: false},
	{Name: FnGetQuote, Write: false},
	{Name: FnGetAtmTemplates, Write: false},
	{Name: FnGetAllPositions, Write: false},
	{Name: FnGetAllOrders, Write: false},
	{Name: FnListAllStrategies, Write: false},
	{Name: FnGetExecutionsByOrderID, Write: false},
	{Name: FnMarketInfo, Write: false},
	{Name: FnGetBars, Write: false},
	{Name: FnFlatten, Write: true},
	{Name: FnFlattenEverything, Write: true},
	{Name: FnCancelAllOrders, Write: true},
	{Name: FnClosePosition, Write: true},
	{Name: FnReverse, Write: true},
	{Name: FnReversePosition, Write: true},
	{Name: FnCancelOrders, Write: true},
	{Name: FnCancelOrder, Write: true},
	{Name: FnChangeOrder, Write: true},
	{Name: FnPlaceOrder, Write: true},
	{Name: FnFlatPlace, Write: true},
	{Name: FnCancelAndBracket, Write: true},
	{Name: FnStartStrategy, Write: true},
	{Name: FnCloseStrategy, Write: true},
	{Name: FnEnableStrategy, Write: true},
	{Name: FnDisableStrategy, Write: true},
	{Name: FnCancelReplace, Write: true},
}

// Internal functions, which the relay calls for its own needs.
const (
	// FnSetSubscriptions sets the instruments whose quotes the agent sends
	// as EventQuote events: SubscriptionsArgs → SubscriptionsResult. The
	// relay sends the whole set each time (the union of its WebSocket
	// clients' instruments), so the call is idempotent and a reconnected
	// agent is brought up to date by one call.
	FnSetSubscriptions = "SetSubscriptions"
	// FnGetPnl returns a PnlSnapshot of every account.
	FnGetPnl = "GetPnl"
	// FnApplyConfig applies the user's whole management configuration:
	// Config → ConfigApplied. The agent applies it atomically and
	// ignores a Config whose Version is not above the one it runs, so a
	// repeated or late push changes nothing. Since protocol version 2.
	FnApplyConfig = "ApplyConfig"
	// FnCheckMonitorRestart asks whether a stopped monitor, restarted
	// with the given settings, would stop again at once: RestartCheck →
	// RestartVerdict. It changes nothing. Since protocol version 2.
	FnCheckMonitorRestart = "CheckMonitorRestart"
	// FnEngineStatus reports what the agent's engines are doing: NoArgs →
	// EngineStatus. It changes nothing. Since protocol version 3.
	FnEngineStatus = "EngineStatus"
	// FnDiagnostics asks the agent for a fresh Diagnostics: NoArgs →
	// Diagnostics. It changes nothing. Since protocol version 5.
	FnDiagnostics = "Diagnostics"
)

// InternalFunctions lists the relay's own functions.
var InternalFunctions = []Function{
	{Name: FnSetSubscriptions, Internal: true},
	{Name: FnGetPnl, Internal: true},
	{Name: FnApplyConfig, Internal: true},
	{Name: FnCheckMonitorRestart, Internal: true},
	{Name: FnEngineStatus, Internal: true},
	{Name: FnDiagnostics, Internal: true},
}

var functionIndex = func() map[string]Function {
	m := make(map[string]Function, len(Functions)+len(InternalFunctions))
	for _, f := range Functions {
		m[f.Name] = f
	}
	for _, f := range InternalFunctions {
		m[f.Name] = f
	}
	return m
}()

// LookupFunction returns the function named name, public or internal.
func LookupFunction(name string) (Function, bool) {
	f, ok := functionIndex[name]
	return f, ok
}
