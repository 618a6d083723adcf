package alertcmd

import (
	"strings"

	"tradebridge/protocol"
)

// universal are the fields every command takes: the alert's own gates.
var universal = set("key", "command", "destination", "delay", "id", "rate_limit",
	"start_time", "end_time", "closing_only_after", "bypass_trade_windows")

// entryFields are the fields of an order a command places.
var entryFields = []string{"account", "instrument", "action", "qty", "order_type", "tif", "limit_price", "stop_price"}

// bracketFields are the exits placed once an entry fills.
var bracketFields = []string{"take_profit", "stop_loss", "stop_loss_limit", "stop_loss_stop"}

// spec is what a command takes: Required fields (before those its order
// type needs) and every other field it accepts.
type spec struct {
	required []string
	optional map[string]bool
}

var specs = map[string]spec{
	CmdPlace: {entryFields[:6], set(append([]string{"limit_price", "stop_price", "order_id", "strategy_tag",
		"flatten_first", "require_market_position", "max_positions", "atm", "cancel_after"}, bracketFields...)...)},
	CmdFlatPlace: {entryFields[:4], set(append([]string{"order_type", "tif", "limit_price", "stop_price", "order_id",
		"strategy_tag", "flatten_first", "require_market_position", "max_positions", "atm", "cancel_after"}, bracketFields...)...)},
	CmdClosePosition:     {[]string{"account", "instrument"}, set("qty", "strategy_tag")},
	CmdReverse:           {[]string{"account", "instrument"}, set("strategy_tag")},
	CmdReversePosition:   {entryFields[:6], set("limit_price", "stop_price", "atm", "strategy_tag")},
	CmdFlatten:           {[]string{"account"}, set("instrument", "strategy_tag")},
	CmdFlattenEverything: {nil, set()},
	CmdCancel:            {[]string{"account", "order_id"}, set()},
	CmdCancelOrders:      {[]string{"account", "instrument"}, set("strategy_tag")},
	CmdCancelAllOrders:   {nil, set()},
	CmdChange:            {[]string{"account", "order_id"}, set("qty", "limit_price", "stop_price")},
	CmdCancelReplace: {append([]string{"account", "order_id"}, entryFields[1:6]...), set("limit_price", "stop_price",
		"atm", "strategy_tag", "require_market_position", "max_positions", "cancel_after")},
	CmdCancelAndBracket: {[]string{"account", "instrument", "action", "qty"}, set("take_profit", "stop_loss")},
	CmdCloseStrategy:    {[]string{"account", "strategy_id"}, set("strategy_tag")},
}

// Takes reports whether command (one of Commands, as spelled there)
// takes field (one of Fields): a field it needs, one it may also take, or
// one of the alert's own gates every command takes. A field it does not
// take is an error in its alerts ("stop_loss does not apply to
// CLOSEPOSITION").
func Takes(command, field string) bool {
	sp, ok := specs[command]
	if !ok {
		return false
	}
	return universal[field] || contains(sp.required, field) || sp.optional[field]
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// present reports whether a holds the field name.
func (a *Alert) present(name string) bool {
	switch name {
	case "key":
		return a.Key != ""
	case "command":
		return a.Command != ""
	case "destination":
		return a.Destination != ""
	case "account":
		return len(a.Accounts) > 0
	case "instrument":
		return a.Instrument != ""
	case "action":
		return a.Action != ""
	case "qty":
		return a.Qty != nil || a.QtyPercent != nil
	case "order_type":
		return a.OrderType != ""
	case "tif":
		return a.TIF != ""
	case "limit_price":
		return a.LimitPrice != nil
	case "stop_price":
		return a.StopPrice != nil
	case "order_id":
		return a.OrderID != ""
	case "strategy_id":
		return a.StrategyID != ""
	case "strategy_tag":
		return a.StrategyTag != ""
	case "flatten_first":
		return a.FlattenFirst
	case "require_market_position":
		return a.RequireMarketPosition != ""
	case "max_positions":
		return a.MaxPositions != nil
	case "take_profit":
		return a.TakeProfit != nil
	case "stop_loss":
		return a.StopLoss != nil
	case "stop_loss_limit":
		return a.StopLossLimit != nil
	case "stop_loss_stop":
		return a.StopLossStop != nil
	case "atm":
		return a.ATM != ""
	case "cancel_after":
		return a.CancelAfter != 0
	case "delay":
		return a.Delay != 0
	case "id":
		return a.ID != ""
	case "rate_limit":
		return a.RateLimit != nil
	case "kill_switch":
		return a.KillSwitch != nil
	case "start_time":
		return a.StartTime != nil
	case "end_time":
		return a.EndTime != nil
	case "closing_only_after":
		return a.ClosingOnlyAfter != nil
	case "bypass_trade_windows":
		return a.BypassWindows
	}
	return false
}

// missingError names the missing fields, in the order of Fields.
func missingError(names []string) *Error {
	if len(names) == 1 {
		return errorf(names[0], "missing required field: %s", names[0])
	}
	return errorf(names[0], "missing required fields: %s", strings.Join(names, ", "))
}

// validate checks the rules of a's command. a holds its defaults.
func (a *Alert) validate() *Error {
	if a.Key == "" {
		return missingError([]string{"key"})
	}
	if a.KillSwitch != nil {
		return a.validateKillSwitch()
	}
	if a.Command == "" {
		return missingError([]string{"command"})
	}
	sp, ok := specs[a.Command]
	if !ok {
		return errorf("command", "command must be one of %s", strings.Join(Commands, ", "))
	}
	switch a.Destination {
	case DestinationDesktop, DestinationBroker:
	default:
		return errorf("destination", "destination must be desktop or broker")
	}
	// Required fields, with the prices the order type needs.
	need := append([]string(nil), sp.required...)
	if sp.optional["limit_price"] || sp.optional["order_type"] {
		p := protocol.OrderPricesOf(a.OrderType)
		if p.Limit {
			need = append(need, "limit_price")
		}
		if p.Stop {
			need = append(need, "stop_price")
		}
	}
	var missing []string
	for _, f := range Fields {
		if contains(need, f) && !a.present(f) {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return missingError(missing)
	}
	for _, f := range Fields {
		if a.present(f) && !universal[f] && !contains(sp.required, f) && !sp.optional[f] {
			return errorf(f, "%s does not apply to %s", f, a.Command)
		}
	}
	return a.validateRules()
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// validateKillSwitch checks an alert that sets the kill switch: it
// carries the key and kill_switch, and nothing else.
func (a *Alert) validateKillSwitch() *Error {
	if a.Command != "" {
		return errorf("kill_switch", "kill_switch is an alert of its own: send it with the key and without command")
	}
	for _, f := range Fields {
		if f != "key" && f != "kill_switch" && f != "destination" && a.present(f) {
			return errorf(f, "%s does not apply to a kill_switch alert", f)
		}
	}
	return nil
}

// validateRules checks the rules between fields, once every field a
// command needs is there and every field it has applies to it.
func (a *Alert) validateRules() *Error {
	if len(a.Accounts) > MaxAccounts {
		return errorf("account", "account names more than %d accounts", MaxAccounts)
	}
	if a.QtyPercent != nil && a.Command != CmdClosePosition {
		return errorf("qty", "qty as a percentage applies to CLOSEPOSITION only: write a whole number of contracts")
	}
	if a.QtyPercent != nil && !(*a.QtyPercent > 0 && *a.QtyPercent <= 1) {
		return errorf("qty", "qty as a percentage must be above 0%% and at most 100%%")
	}
	if a.Qty != nil && (*a.Qty < 1 || *a.Qty > maxQty) {
		return errorf("qty", "qty must be a whole number of contracts from 1 to %d", maxQty)
	}
	if a.Command == CmdChange && a.Qty == nil && a.LimitPrice == nil && a.StopPrice == nil {
		return errorf("qty", "CHANGE needs at least one of qty, limit_price and stop_price: what to change")
	}
	if err := a.validatePrices(); err != nil {
		return err
	}
	if err := a.validateBrackets(); err != nil {
		return err
	}
	if a.CancelAfter != 0 {
		if a.OrderType == protocol.OrderTypeMarket {
			return errorf("cancel_after", "cancel_after applies to LIMIT, STOPMARKET and STOPLIMIT entries: a MARKET order does not wait")
		}
		if s := int(a.CancelAfter.Seconds()); s < protocol.MinCancelAfterSeconds || s > protocol.MaxCancelAfterSeconds {
			return errorf("cancel_after", "cancel_after must be a number of minutes from %d to %d", minCancel, maxCancel)
		}
	}
	if a.Delay < 0 || a.Delay > MaxDelay {
		return errorf("delay", "delay must be a number of seconds above 0 and at most %d", int(MaxDelay.Seconds()))
	}
	if a.RateLimit != nil {
		if a.ID == "" {
			return errorf("id", "missing required field: id (rate_limit counts the alerts of one id)")
		}
		if a.RateLimit.N < 1 || a.RateLimit.Per <= 0 {
			return errorf("rate_limit", "rate_limit must be N (alerts per minute) or N/seconds")
		}
	}
	return a.validateWindow()
}

// validatePrices checks the entry's limit and stop prices: the order
// type's, and relative ones only where the order is placed by the
// operations that resolve them.
func (a *Alert) validatePrices() *Error {
	if a.OrderType != "" {
		p := protocol.OrderPricesOf(a.OrderType)
		ot := langOrderType(a.OrderType)
		if a.LimitPrice != nil && !p.Limit {
			return errorf("limit_price", "limit_price does not apply to a %s order", ot)
		}
		if a.StopPrice != nil && !p.Stop {
			return errorf("stop_price", "stop_price does not apply to a %s order", ot)
		}
	}
	relOK := a.Command == CmdPlace || a.Command == CmdFlatPlace || a.Command == CmdCancelReplace
	for _, f := range []struct {
		name string
		p    *Price
	}{{"limit_price", a.LimitPrice}, {"stop_price", a.StopPrice}} {
		if f.p == nil {
			continue
		}
		if err := checkPrice(f.name, f.p); err != nil {
			return err
		}
		if f.p.Offset != nil && !relOK {
			return errorf(f.name, "%s of %s must be a price: a distance (ticks, points, %%, $) applies to PLACE, FLATPLACE and CANCELREPLACE", f.name, a.Command)
		}
	}
	return nil
}

// checkPrice checks a Price built by hand: exactly one of Level and
// Offset, in bounds.
func checkPrice(name string, p *Price) *Error {
	switch {
	case (p.Level == nil) == (p.Offset == nil):
		return errorf(name, "%s must be a price or a distance", name)
	case p.Level != nil && !(*p.Level > 0 && *p.Level <= maxPrice):
		return errorf(name, "%s must be a positive price", name)
	case p.Offset != nil && !contains(protocol.OffsetUnits, p.Offset.Unit):
		return errorf(name, "%s has a distance of an unknown unit", name)
	case p.Offset != nil && !(p.Offset.Value >= -maxPrice && p.Offset.Value <= maxPrice):
		return errorf(name, "%s is too far", name)
	}
	return nil
}

// validateBrackets checks the exits: not with an ATM template, one kind
// of stop loss, and relative distances whose sign, when written, points
// the protective way for the action.
func (a *Alert) validateBrackets() *Error {
	legs := []struct {
		name string
		p    *Price
		up   bool // the protective direction of a BUY: above the fill
	}{{"take_profit", a.TakeProfit, true}, {"stop_loss", a.StopLoss, false},
		{"stop_loss_limit", a.StopLossLimit, false}, {"stop_loss_stop", a.StopLossStop, false}}
	hasLeg := false
	for _, l := range legs {
		if l.p == nil {
			continue
		}
		hasLeg = true
		if err := checkPrice(l.name, l.p); err != nil {
			return err
		}
		if a.Command == CmdCancelAndBracket {
			if l.p.Offset != nil {
				return errorf(l.name, "%s of CANCELANDBRACKET must be a price (4560.25): its bracket goes around the open position, not an entry's fill", l.name)
			}
			continue
		}
		if o := l.p.Offset; o != nil {
			if o.Value == 0 {
				return errorf(l.name, "%s must be a distance above 0 from the entry's fill", l.name)
			}
			if o.Signed {
				wantUp := l.up == (a.Action == protocol.ActionBuy)
				if (o.Value > 0) != wantUp {
					side, dir, sign := "BUY", "below", "-"
					if a.Action == protocol.ActionSell {
						side = "SELL"
					}
					if wantUp {
						dir, sign = "above", "+"
					}
					return errorf(l.name, "%s of a %s is %s the fill: write its distance with %s or without a sign", l.name, side, dir, sign)
				}
			}
		}
	}
	if a.Command == CmdCancelAndBracket {
		if a.TakeProfit == nil && a.StopLoss == nil {
			return errorf("take_profit", "CANCELANDBRACKET needs take_profit, stop_loss or both")
		}
	} else if hasLeg && a.ATM != "" {
		return errorf("atm", "atm excludes take_profit and stop_loss: an ATM template places its own exits")
	}
	if a.StopLoss != nil && a.StopLossLimit != nil {
		return errorf("stop_loss_limit", "stop_loss and stop_loss_limit exclude each other: a stop-market stop loss, or a stop-limit one")
	}
	if a.StopLossStop != nil && a.StopLossLimit == nil {
		return errorf("stop_loss_stop", "stop_loss_stop is the trigger of a stop_loss_limit: send stop_loss_limit with it")
	}
	// Two levels: the take profit on the profit side of the stop.
	stop := a.StopLoss
	if stop == nil {
		stop = a.StopLossLimit
	}
	if tp := a.TakeProfit; tp != nil && stop != nil && tp.Level != nil && stop.Level != nil && a.Action != "" {
		if (a.Action == protocol.ActionBuy) != (*tp.Level > *stop.Level) || *tp.Level == *stop.Level {
			if a.Action == protocol.ActionBuy {
				return errorf("take_profit", "take_profit of a BUY must be above its stop loss")
			}
			return errorf("take_profit", "take_profit of a SELL must be below its stop loss")
		}
	}
	return nil
}

// validateWindow checks the trading window: start_time and end_time
// together, closing_only_after only with them.
func (a *Alert) validateWindow() *Error {
	for _, t := range []*ClockTime{a.StartTime, a.EndTime, a.ClosingOnlyAfter} {
		if t != nil && (*t < 0 || *t >= 24*60) {
			return errorf("start_time", "a time of day must be from 00:00 to 23:59")
		}
	}
	switch {
	case a.StartTime != nil && a.EndTime == nil:
		return errorf("end_time", "missing required field: end_time (start_time and end_time make the trading window)")
	case a.EndTime != nil && a.StartTime == nil:
		return errorf("start_time", "missing required field: start_time (start_time and end_time make the trading window)")
	case a.ClosingOnlyAfter != nil && a.StartTime == nil:
		return errorf("start_time", "missing required fields: start_time, end_time (closing_only_after applies within a trading window)")
	case a.StartTime != nil && *a.StartTime == *a.EndTime:
		return errorf("end_time", "start_time and end_time are equal: the window would be empty")
	}
	if c := a.ClosingOnlyAfter; c != nil {
		if open, _ := a.InWindow(*c); !open || *c == *a.StartTime {
			return errorf("closing_only_after", "closing_only_after must be inside the window, after start_time and before end_time")
		}
	}
	return nil
}

// InWindow reports what a's trading window allows at the New York time of
// day at (see Clock): open is false outside [start_time, end_time) (a
// window whose end is before its start spans midnight: 18:00 to 16:00),
// and closingOnly is true from closing_only_after to the window's end
// (only calls that do not open, Call.Opens false, may run). An alert
// without a window is always open.
func (a Alert) InWindow(at ClockTime) (open, closingOnly bool) {
	if a.StartTime == nil || a.EndTime == nil {
		return true, false
	}
	s, e := *a.StartTime, *a.EndTime
	in := func(t ClockTime) bool {
		if s < e {
			return s <= t && t < e
		}
		return t >= s || t < e
	}
	if !in(at) {
		return false, false
	}
	if c := a.ClosingOnlyAfter; c != nil && in(*c) {
		// From c to the end, along the window.
		if s < e || (*c >= s) == (at >= s) {
			return true, at >= *c
		}
		return true, at < s // c after midnight, at before midnight: not yet
	}
	return true, false
}
