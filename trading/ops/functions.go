package ops

import (
	"tradebridge/protocol"
	"tradebridge/trading/dispatch"
)

// Functions returns the operations by protocol function name, for the
// dispatcher's registry: every public function of the protocol and the
// relay's SetSubscriptions and GetPnl. The agent adds the functions that
// are not operations (the configuration push, the engines' queries).
func (o *Ops) Functions() map[string]dispatch.Handler {
	return map[string]dispatch.Handler{
		protocol.FnListAccounts:           dispatch.Func(o.ListAccounts),
		protocol.FnGetAccountSummary:      dispatch.Func(o.GetAccountSummary),
		protocol.FnGetAccount:             dispatch.Func(o.GetAccount),
		protocol.FnGetWatermarks:          dispatch.Func(o.GetWatermarks),
		protocol.FnGetPosition:            dispatch.Func(o.GetPosition),
		protocol.FnListPositions:          dispatch.Func(o.ListPositions),
		protocol.FnListOrders:             dispatch.Func(o.ListOrders),
		protocol.FnGetOrder:               dispatch.Func(o.GetOrder),
		protocol.FnListExecutions:         dispatch.Func(o.ListExecutions),
		protocol.FnListStrategies:         dispatch.Func(o.ListStrategies),
		protocol.FnGetStrategy:            dispatch.Func(o.GetStrategy),
		protocol.FnGetQuote:               dispatch.Func(o.GetQuote),
		protocol.FnGetAtmTemplates:        dispatch.Func(o.GetAtmTemplates),
		protocol.FnGetAllPositions:        dispatch.Func(o.GetAllPositions),
		protocol.FnGetAllOrders:           dispatch.Func(o.GetAllOrders),
		protocol.FnListAllStrategies:      dispatch.Func(o.ListAllStrategies),
		protocol.FnGetExecutionsByOrderID: dispatch.Func(o.GetExecutionsByOrderId),
		protocol.FnMarketInfo:             dispatch.Func(o.MarketInfo),
		protocol.FnGetBars:                dispatch.Func(o.GetBars),
		protocol.FnFlatten:                dispatch.Func(o.Flatten),
		protocol.FnFlattenEverything:      dispatch.Func(o.FlattenEverything),
		protocol.FnCancelAllOrders:        dispatch.Func(o.CancelAllOrders),
		protocol.FnClosePosition:          dispatch.Func(o.ClosePosition),
		protocol.FnReverse:                dispatch.Func(o.Reverse),
		protocol.FnReversePosition:        dispatch.Func(o.ReversePosition),
		protocol.FnCancelOrders:           dispatch.Func(o.CancelOrders),
		protocol.FnCancelOrder:            dispatch.Func(o.CancelOrder),
		protocol.FnChangeOrder:            dispatch.Func(o.ChangeOrder),
		protocol.FnPlaceOrder:             dispatch.Func(o.PlaceOrder),
		protocol.FnFlatPlace:              dispatch.Func(o.FlatPlace),
		protocol.FnCancelAndBracket:       dispatch.Func(o.CancelAndBracket),
		protocol.FnCancelReplace:          dispatch.Func(o.CancelReplace),
		protocol.FnStartStrategy:          dispatch.Func(o.StartStrategy),
		protocol.FnCloseStrategy:          dispatch.Func(o.CloseStrategy),
		protocol.FnEnableStrategy:         dispatch.Func(o.EnableStrategy),
		protocol.FnDisableStrategy:        dispatch.Func(o.DisableStrategy),
		protocol.FnSetSubscriptions:       dispatch.Func(o.SetSubscriptions),
		protocol.FnGetPnl:                 dispatch.Func(o.GetPnl),
	}
}
