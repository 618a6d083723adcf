package alertcmd

import (
	"encoding/json"
	"math"

	"tradebridge/protocol"
)

// opens are the functions whose calls may open or add to a position.
var opens = map[string]bool{
	protocol.FnPlaceOrder: true, protocol.FnFlatPlace: true, protocol.FnReverse: true,
	protocol.FnReversePosition: true, protocol.FnCancelReplace: true,
}

// plan returns the function and arguments of a's command on account.
func (a *Alert) plan(account string) (fn string, args any, v7 bool) {
	switch a.Command {
	case CmdPlace, CmdFlatPlace:
		p, v7 := a.placeArgs(account)
		p.OrderID = a.OrderID
		if a.Command == CmdFlatPlace || a.FlattenFirst {
			return protocol.FnFlatPlace, p, v7
		}
		return protocol.FnPlaceOrder, p, v7
	case CmdCancelReplace:
		p, _ := a.placeArgs(account)
		return protocol.FnCancelReplace, protocol.CancelReplaceArgs{PlaceOrderArgs: p, CancelOrderID: a.OrderID}, true
	case CmdClosePosition:
		return protocol.FnClosePosition, protocol.ClosePositionArgs{Account: account, Instrument: a.Instrument,
			Quantity: a.Qty, Percent: a.QtyPercent, StrategyTag: a.StrategyTag}, false
	case CmdReverse:
		return protocol.FnReverse, protocol.ReverseArgs{Account: account, Instrument: a.Instrument, StrategyTag: a.StrategyTag}, false
	case CmdReversePosition:
		return protocol.FnReversePosition, protocol.ReversePositionArgs{Account: account, Instrument: a.Instrument,
			Action: a.Action, Quantity: *a.Qty, OrderType: a.OrderType, TimeInForce: a.TIF,
			LimitPrice: level(a.LimitPrice), StopPrice: level(a.StopPrice), Strategy: a.ATM, StrategyTag: a.StrategyTag}, false
	case CmdFlatten:
		return protocol.FnFlatten, protocol.FlattenArgs{Account: account, Instrument: a.Instrument, StrategyTag: a.StrategyTag}, false
	case CmdFlattenEverything:
		return protocol.FnFlattenEverything, protocol.NoArgs{}, false
	case CmdCancel:
		return protocol.FnCancelOrder, protocol.OrderArgs{Account: account, OrderID: a.OrderID}, false
	case CmdCancelOrders:
		return protocol.FnCancelOrders, protocol.CancelOrdersArgs{Account: account, Instrument: a.Instrument, StrategyTag: a.StrategyTag}, false
	case CmdCancelAllOrders:
		return protocol.FnCancelAllOrders, protocol.NoArgs{}, false
	case CmdChange:
		return protocol.FnChangeOrder, protocol.ChangeOrderArgs{Account: account, OrderID: a.OrderID, Quantity: a.Qty,
			LimitPrice: level(a.LimitPrice), StopPrice: level(a.StopPrice)}, false
	case CmdCancelAndBracket:
		return protocol.FnCancelAndBracket, protocol.CancelAndBracketArgs{Account: account, Instrument: a.Instrument,
			Action: a.Action, Quantity: *a.Qty, TakeProfit: level(a.TakeProfit), StopLoss: level(a.StopLoss)}, false
	case CmdCloseStrategy:
		return protocol.FnCloseStrategy, protocol.CloseStrategyArgs{Account: account, StrategyID: a.StrategyID, StrategyTag: a.StrategyTag}, false
	}
	return "", nil, false
}

// placeArgs are the arguments of the order a PLACE, FLATPLACE or
// CANCELREPLACE places; v7 reports fields of protocol version 7.
func (a *Alert) placeArgs(account string) (protocol.PlaceOrderArgs, bool) {
	p := protocol.PlaceOrderArgs{
		Account: account, Action: a.Action, Instrument: a.Instrument, OrderType: a.OrderType,
		Quantity: *a.Qty, TimeInForce: a.TIF, Strategy: a.ATM, StrategyTag: a.StrategyTag,
		MaxPositions: a.MaxPositions, RequireMarketPosition: a.RequireMarketPosition,
		LimitPrice: level(a.LimitPrice), StopPrice: level(a.StopPrice),
		LimitOffset: offset(a.LimitPrice), StopOffset: offset(a.StopPrice),
	}
	if a.TakeProfit != nil || a.StopLoss != nil || a.StopLossLimit != nil || a.StopLossStop != nil {
		p.Exits = &protocol.Exits{TakeProfit: exit(a.TakeProfit), StopLoss: exit(a.StopLoss),
			StopLossLimit: exit(a.StopLossLimit), StopLossStop: exit(a.StopLossStop)}
	}
	if a.CancelAfter != 0 {
		s := int(a.CancelAfter.Seconds())
		p.CancelAfterSeconds = &s
	}
	v7 := p.Exits != nil || p.LimitOffset != nil || p.StopOffset != nil || p.CancelAfterSeconds != nil
	return p, v7
}

// level is p's absolute price; nil for none or a relative one.
func level(p *Price) *float64 {
	if p == nil || p.Level == nil {
		return nil
	}
	v := *p.Level
	return &v
}

// offset is p's relative price, signed; nil for none or a level.
func offset(p *Price) *protocol.PriceOffset {
	if p == nil || p.Offset == nil {
		return nil
	}
	return &protocol.PriceOffset{Unit: p.Offset.Unit, Value: p.Offset.Value}
}

// exit is an exit's price: its level, or its distance from the fill
// (positive: the exit's side gives the direction).
func exit(p *Price) *protocol.ExitPrice {
	switch {
	case p == nil:
		return nil
	case p.Level != nil:
		return &protocol.ExitPrice{Price: level(p)}
	}
	return &protocol.ExitPrice{Offset: &protocol.PriceOffset{Unit: p.Offset.Unit, Value: math.Abs(p.Offset.Value)}}
}

// calls plans a's calls once a is valid.
func (a *Alert) calls() ([]Call, error) {
	if a.Command == "" {
		return nil, nil
	}
	accounts := a.Accounts
	if a.Command == CmdFlattenEverything || a.Command == CmdCancelAllOrders {
		accounts = []string{""}
	}
	out := make([]Call, 0, len(accounts))
	for _, acct := range accounts {
		fn, args, v7 := a.plan(acct)
		raw, err := json.Marshal(args)
		if err != nil {
			return nil, errorf("", "the alert's arguments could not be written")
		}
		out = append(out, Call{Account: acct, Fn: fn, Args: raw, Opens: opens[fn], Exits: v7})
	}
	return out, nil
}
