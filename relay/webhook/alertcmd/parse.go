package alertcmd

import (
	"bytes"
	"strings"

	"tradebridge/protocol"
)

// Fields lists every field of the language, in the order the trader's
// page documents them (and errors list missing ones). "strategy" is
// another name of "atm".
var Fields = []string{
	"key", "command", "destination", "account", "instrument", "action", "qty", "order_type", "tif",
	"limit_price", "stop_price", "order_id", "strategy_id", "strategy_tag", "flatten_first",
	"require_market_position", "max_positions", "take_profit", "stop_loss", "stop_loss_limit",
	"stop_loss_stop", "atm", "cancel_after", "delay", "id", "rate_limit", "kill_switch",
	"start_time", "end_time", "closing_only_after", "bypass_trade_windows",
}

// aliases are other names of fields.
var aliases = map[string]string{"strategy": "atm"}

// setters decode one field's value into an Alert. Each is called once per
// alert, with a value that is not empty and holds no placeholder.
var setters = map[string]func(a *Alert, v string) *Error{
	"key": func(a *Alert, v string) *Error {
		if !validName(v, maxKeyLen) {
			return errorf("key", "key must be the secret key shown with the webhook URL")
		}
		a.Key = v
		return nil
	},
	"command": func(a *Alert, v string) *Error {
		c, ok := normalizeCommand(v)
		if !ok {
			return errorf("command", "command must be one of %s", strings.Join(Commands, ", "))
		}
		a.Command = c
		return nil
	},
	"destination": func(a *Alert, v string) *Error {
		switch strings.ToLower(v) {
		case DestinationDesktop:
			a.Destination = DestinationDesktop
		case DestinationBroker, "tradovate":
			a.Destination = DestinationBroker
		default:
			return errorf("destination", "destination must be desktop (the default: your NinjaTrader add-on) or broker (your linked Tradovate login)")
		}
		return nil
	},
	"account": func(a *Alert, v string) *Error {
		accts, err := parseAccounts(v)
		if err != nil {
			return err
		}
		a.Accounts = accts
		return nil
	},
	"instrument": func(a *Alert, v string) *Error {
		in, ok := ParseInstrument(v)
		if !ok {
			e := errorf("instrument", "instrument must be a contract (ES 12-26), a month code (ESZ26 or ESZ6), a root for its front month (ES), or TradingView's front month (ES1!)")
			e.Instrument = true
			return e
		}
		a.Instrument = in
		return nil
	},
	"action": func(a *Alert, v string) *Error {
		act, ok := protocol.NormalizeAction(v)
		if !ok {
			return errorf("action", "action must be BUY or SELL")
		}
		a.Action = act
		return nil
	},
	"qty": func(a *Alert, v string) *Error {
		if num, ok := strings.CutSuffix(v, "%"); ok {
			f, ok := decimal(strings.TrimSpace(num))
			if !ok || f <= 0 || f > 100 {
				return errorf("qty", "qty as a percentage (CLOSEPOSITION only) must be above 0%% and at most 100%%")
			}
			frac := f / 100
			a.QtyPercent = &frac
			return nil
		}
		n, ok := parseWhole(v)
		if !ok || n < 1 || n > maxQty {
			return errorf("qty", "qty must be a whole number of contracts from 1 to %d", maxQty)
		}
		a.Qty = &n
		return nil
	},
	"order_type": func(a *Alert, v string) *Error {
		t, ok := normalizeOrderType(v)
		if !ok {
			return errorf("order_type", "order_type must be MARKET, LIMIT, STOPMARKET (or STOP) or STOPLIMIT")
		}
		a.OrderType = t
		return nil
	},
	"tif": func(a *Alert, v string) *Error {
		t, ok := protocol.NormalizeTimeInForce(v)
		if !ok {
			return errorf("tif", "tif must be DAY or GTC")
		}
		a.TIF = t
		return nil
	},
	"limit_price":     priceSetter("limit_price", func(a *Alert) **Price { return &a.LimitPrice }),
	"stop_price":      priceSetter("stop_price", func(a *Alert) **Price { return &a.StopPrice }),
	"take_profit":     priceSetter("take_profit", func(a *Alert) **Price { return &a.TakeProfit }),
	"stop_loss":       priceSetter("stop_loss", func(a *Alert) **Price { return &a.StopLoss }),
	"stop_loss_limit": priceSetter("stop_loss_limit", func(a *Alert) **Price { return &a.StopLossLimit }),
	"stop_loss_stop":  priceSetter("stop_loss_stop", func(a *Alert) **Price { return &a.StopLossStop }),
	"order_id":        nameSetter("order_id", func(a *Alert) *string { return &a.OrderID }),
	"strategy_id":     nameSetter("strategy_id", func(a *Alert) *string { return &a.StrategyID }),
	"strategy_tag":    nameSetter("strategy_tag", func(a *Alert) *string { return &a.StrategyTag }),
	"atm":             nameSetter("atm", func(a *Alert) *string { return &a.ATM }),
	"id":              nameSetter("id", func(a *Alert) *string { return &a.ID }),
	"flatten_first":   boolSetter("flatten_first", func(a *Alert) *bool { return &a.FlattenFirst }),
	"bypass_trade_windows": boolSetter("bypass_trade_windows", func(a *Alert) *bool {
		return &a.BypassWindows
	}),
	"require_market_position": func(a *Alert, v string) *Error {
		p, ok := parsePositions(v)
		if !ok {
			return errorf("require_market_position", "require_market_position must be flat, long or short, or several separated by '/' (flat/long)")
		}
		a.RequireMarketPosition = p
		return nil
	},
	"max_positions": func(a *Alert, v string) *Error {
		n, ok := parseWhole(v)
		if !ok || n < 0 || n > maxQty {
			return errorf("max_positions", "max_positions must be a whole number from 0 to %d", maxQty)
		}
		a.MaxPositions = &n
		return nil
	},
	"cancel_after": func(a *Alert, v string) *Error {
		d, ok := parseMinutes(v)
		if !ok {
			return errorf("cancel_after", "cancel_after must be a number of minutes from %d to %d", minCancel, maxCancel)
		}
		a.CancelAfter = d
		return nil
	},
	"delay": func(a *Alert, v string) *Error {
		d, ok := parseSeconds(v)
		if !ok {
			return errorf("delay", "delay must be a number of seconds above 0 and at most %d", int(MaxDelay.Seconds()))
		}
		a.Delay = d
		return nil
	},
	"rate_limit": func(a *Alert, v string) *Error {
		rl, ok := ParseRateLimit(v)
		if !ok {
			return errorf("rate_limit", "rate_limit must be N (alerts per minute) or N/seconds, N from 1 to %d and seconds from 1 to %d", maxRateN, maxRatePer)
		}
		a.RateLimit = &rl
		return nil
	},
	"kill_switch": func(a *Alert, v string) *Error {
		on, ok := parseBool(v)
		if !ok {
			return errorf("kill_switch", "kill_switch must be on or off")
		}
		a.KillSwitch = &on
		return nil
	},
	"start_time":         clockSetter("start_time", func(a *Alert) **ClockTime { return &a.StartTime }),
	"end_time":           clockSetter("end_time", func(a *Alert) **ClockTime { return &a.EndTime }),
	"closing_only_after": clockSetter("closing_only_after", func(a *Alert) **ClockTime { return &a.ClosingOnlyAfter }),
}

func priceSetter(name string, field func(*Alert) **Price) func(*Alert, string) *Error {
	return func(a *Alert, v string) *Error {
		p, ok := ParsePrice(v)
		if !ok {
			return errorf(name, "%s must be a price (4550.25) or a distance with its unit and an optional sign: 10 ticks, 4 points, 0.5%%, $100", name)
		}
		*field(a) = &p
		return nil
	}
}

func nameSetter(name string, field func(*Alert) *string) func(*Alert, string) *Error {
	return func(a *Alert, v string) *Error {
		if !validName(v, maxNameLen) {
			return errorf(name, "%s must be at most %d characters of printable text", name, maxNameLen)
		}
		*field(a) = v
		return nil
	}
}

func boolSetter(name string, field func(*Alert) *bool) func(*Alert, string) *Error {
	return func(a *Alert, v string) *Error {
		b, ok := parseBool(v)
		if !ok {
			return errorf(name, "%s must be true or false", name)
		}
		*field(a) = b
		return nil
	}
}

func clockSetter(name string, field func(*Alert) **ClockTime) func(*Alert, string) *Error {
	return func(a *Alert, v string) *Error {
		t, ok := ParseClock(v)
		if !ok {
			return errorf(name, "%s must be a time of day in New York time: HH:MM on the 24-hour clock (09:30) or with AM/PM (1:30 PM)", name)
		}
		*field(a) = &t
		return nil
	}
}

// normalizeCommand returns the Cmd constant of any casing of a command.
func normalizeCommand(v string) (string, bool) {
	for _, c := range Commands {
		if strings.EqualFold(v, c) {
			return c, true
		}
	}
	return "", false
}

// parseAccounts reads account=: names separated by commas, each once,
// at most MaxAccounts; empty items (a trailing comma) are skipped.
func parseAccounts(v string) ([]string, *Error) {
	var out []string
	for part := range strings.SplitSeq(v, ",") {
		name := strings.TrimSpace(part)
		if name == "" {
			continue
		}
		if !validName(name, maxNameLen) {
			return nil, errorf("account", "each account must be at most %d characters of printable text", maxNameLen)
		}
		if len(out) == MaxAccounts {
			return nil, errorf("account", "account names more than %d accounts", MaxAccounts)
		}
		for _, o := range out {
			if o == name {
				return nil, errorf("account", "account names the same account twice")
			}
		}
		out = append(out, name)
	}
	if len(out) == 0 {
		return nil, errorf("account", "account has no account name")
	}
	return out, nil
}

// parse reads body into an Alert: the pairs, then their values, then the
// rules of the command. It returns what it read before an error; the key
// whenever the text had one that reads.
func parse(body []byte, contentType string) (Alert, *Error) {
	var a Alert
	if len(body) > MaxBody {
		return a, errorf("", "the alert is longer than %d KiB", MaxBody>>10)
	}
	body = bytes.TrimPrefix(body, []byte("\ufeff")) // a byte order mark
	var pairs []pair
	var lexErr *Error
	if isJSON(body, contentType) {
		var syntax bool
		pairs, syntax, lexErr = lexJSON(body)
		if syntax {
			return a, lexErr
		}
	} else {
		pairs, lexErr = lexText(string(body))
	}
	// Fold aliases, and read the fields that name the alert (key,
	// command, account) first, so that an alert that fails still says
	// whose it is and what it meant.
	for i := range pairs {
		if to, ok := aliases[pairs[i].key]; ok {
			pairs[i].key = to
		}
	}
	seen := map[string]bool{}
	for _, p := range pairs {
		if seen[p.key] {
			continue
		}
		seen[p.key] = true
		if p.key == "key" || p.key == "command" || p.key == "account" {
			if p.value != "" && !strings.Contains(p.value, "{{") {
				_ = setters[p.key](&a, p.value)
			}
		}
	}
	if lexErr != nil {
		return a, lexErr
	}
	clear(seen)
	var unknown []string
	for _, p := range pairs {
		if seen[p.key] {
			return a, errorf(safeField(p.key), "%s is given twice", fieldName(p.key))
		}
		seen[p.key] = true
		if strings.Contains(p.key, "{{") {
			return a, placeholderError("")
		}
		if setters[p.key] == nil {
			unknown = append(unknown, p.key)
		}
	}
	if len(unknown) > 0 {
		return a, unknownError(unknown)
	}
	for _, p := range pairs {
		if strings.Contains(p.value, "{{") {
			return a, placeholderError(p.key)
		}
		if p.value == "" {
			return a, errorf(p.key, "%s has no value", p.key)
		}
	}
	for _, p := range pairs {
		if err := setters[p.key](&a, p.value); err != nil {
			return a, err
		}
	}
	a.defaults()
	if err := a.validate(); err != nil {
		return a, err
	}
	return a, nil
}

// unknownError names the unknown fields that are safe to repeat.
func unknownError(keys []string) *Error {
	var names []string
	for _, k := range keys {
		if safeName(k) {
			names = append(names, k)
		}
	}
	e := &Error{}
	switch {
	case len(names) == 0:
		e.Detail = "unknown field: a field name is not part of the language"
	case len(names) == 1:
		e.Field, e.Detail = names[0], "unknown field: "+names[0]
	default:
		e.Field, e.Detail = names[0], "unknown fields: "+strings.Join(names, ", ")
	}
	return e
}

// defaults fills what an alert may leave out: the destination, and
// FLATPLACE's order type (from the prices given) and time in force.
func (a *Alert) defaults() {
	if a.Destination == "" {
		a.Destination = DestinationDesktop
	}
	if a.Command == CmdFlatPlace {
		if a.OrderType == "" {
			a.OrderType = protocol.FlatPlaceOrderType(a.LimitPrice != nil, a.StopPrice != nil)
		}
		if a.TIF == "" {
			a.TIF = protocol.TimeInForceDay
		}
	}
}
