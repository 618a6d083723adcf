package ati

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/trading/bridge"
)

func TestEncodeGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cmd  command
		want string
	}{
		{"market", command{Command: cmdPlace, Account: "Sim101", Instrument: "ES 12-26", Action: "BUY", Quantity: 1,
			OrderType: "MARKET", TIF: "DAY", OrderID: "tb1"},
			"PLACE;Sim101;ES 12-26;BUY;1;MARKET;;;DAY;;tb1;;\r\n"},
		{"limit with a quarter", command{Command: cmdPlace, Account: "Sim101", Instrument: "ES 12-26", Action: "SELL",
			Quantity: 2, OrderType: "LIMIT", LimitPrice: 5950.25, TIF: "GTC", OcoID: "oco-1", OrderID: "tb2"},
			"PLACE;Sim101;ES 12-26;SELL;2;LIMIT;5950.25;;GTC;oco-1;tb2;;\r\n"},
		{"stop limit with tenths", command{Command: cmdPlace, Account: "Sim101", Instrument: "M6E 12-26", Action: "BUY",
			Quantity: 3, OrderType: "STOPLIMIT", LimitPrice: 0.1, StopPrice: 1.08255, TIF: "DAY", OrderID: "tb3"},
			"PLACE;Sim101;M6E 12-26;BUY;3;STOPLIMIT;0.1;1.08255;DAY;;tb3;;\r\n"},
		{"stop market drops a stray limit", command{Command: cmdPlace, Account: "Sim101", Instrument: "ES 12-26",
			Action: "SELL", Quantity: 1, OrderType: "STOPMARKET", LimitPrice: 1, StopPrice: 5900, TIF: "DAY", OrderID: "tb4"},
			"PLACE;Sim101;ES 12-26;SELL;1;STOPMARKET;;5900;DAY;;tb4;;\r\n"},
		{"large price, no exponent or separator", command{Command: cmdPlace, Account: "Sim101", Instrument: "NQ 12-26",
			Action: "BUY", Quantity: 1, OrderType: "LIMIT", LimitPrice: 12345678.5, TIF: "DAY", OrderID: "tb5"},
			"PLACE;Sim101;NQ 12-26;BUY;1;LIMIT;12345678.5;;DAY;;tb5;;\r\n"},
		{"atm", command{Command: cmdPlace, Account: "Sim 101", Instrument: "ES 12-26", Action: "BUY", Quantity: 1,
			OrderType: "MARKET", TIF: "DAY", OrderID: "tb6", Strategy: "ATM 2R", StrategyID: "tb6-atm"},
			"PLACE;Sim 101;ES 12-26;BUY;1;MARKET;;;DAY;;tb6;ATM 2R;tb6-atm\r\n"},
		{"cancel", command{Command: cmdCancel, OrderID: "tb1"}, "CANCEL;;;;;;;;;;tb1;;\r\n"},
		{"change price", command{Command: cmdChange, OrderID: "tb2", LimitPrice: 5945.5},
			"CHANGE;;;;0;;5945.5;0;;;tb2;;\r\n"},
		{"change quantity", command{Command: cmdChange, OrderID: "tb2", Quantity: 4},
			"CHANGE;;;;4;;0;0;;;tb2;;\r\n"},
		{"close position", command{Command: cmdClosePosition, Account: "Sim101", Instrument: "ES 12-26"},
			"CLOSEPOSITION;Sim101;ES 12-26;;;;;;;;;;\r\n"},
		{"cancel all", command{Command: cmdCancelAllOrders}, "CANCELALLORDERS;;;;;;;;;;;;\r\n"},
		{"flatten everything", command{Command: cmdFlattenEverything}, "FLATTENEVERYTHING;;;;;;;;;;;;\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.cmd.encode()
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestEncodeRefuses(t *testing.T) {
	t.Parallel()
	base := command{Command: cmdPlace, Account: "Sim101", Instrument: "ES 12-26", Action: "BUY", Quantity: 1,
		OrderType: "LIMIT", LimitPrice: 1, TIF: "DAY", OrderID: "tb1"}
	tests := []struct {
		name string
		mod  func(*command)
	}{
		{"semicolon in account", func(c *command) { c.Account = "Sim101;CANCELALLORDERS" }},
		{"line feed in account", func(c *command) { c.Account = "Sim101\nFLATTENEVERYTHING;;;;;;;;;;;;" }},
		{"carriage return in OCO", func(c *command) { c.OcoID = "a\rb" }},
		{"NUL in ATM template", func(c *command) { c.Strategy = "ATM\x00" }},
		{"tab in order id", func(c *command) { c.OrderID = "tb\t1" }},
		{"C1 control (NEL) in account", func(c *command) { c.Account = "Sim\u0085101" }},
		{"line separator in OCO", func(c *command) { c.OcoID = "a\u2028b" }},
		{"DEL in strategy id", func(c *command) { c.StrategyID = "x\x7f" }},
		{"invalid UTF-8 in account", func(c *command) { c.Account = "Sim\xff101" }},
		{"semicolon in instrument", func(c *command) { c.Instrument = "ES 12-26;X" }},
		{"NaN price", func(c *command) { c.LimitPrice = math.NaN() }},
		{"infinite price", func(c *command) { c.LimitPrice = math.Inf(1) }},
		{"negative price", func(c *command) { c.LimitPrice = -1 }},
		{"unknown command", func(c *command) { c.Command = "REVERSEPOSITION" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := base
			tt.mod(&c)
			line, err := c.encode()
			require.Empty(t, line)
			var re *bridge.RequestError
			require.True(t, errors.As(err, &re), "got %v", err)
		})
	}
}

func TestCheckOrderID(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"tb0123456789abcdef", "A-b_c.9", "x"} {
		require.NoError(t, checkOrderID(id), id)
	}
	long := make([]byte, maxOrderIDLen+1)
	for i := range long {
		long[i] = 'a'
	}
	for _, id := range []string{"", ".hidden", "../x", `a\b`, "a/b", "a b", "a:b", "a;b", "é", string(long)} {
		require.Error(t, checkOrderID(id), id)
	}
}

func TestFormatPrice(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   float64
		want string
	}{
		{5950.25, "5950.25"},
		{0.1, "0.1"},
		{0.00005, "0.00005"},
		{1e-7, "0.0000001"},
		{21000, "21000"},
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{1.0825, "1.0825"},
	}
	for _, tt := range tests {
		got, err := formatPrice("limit", tt.in)
		require.NoError(t, err)
		require.Equal(t, tt.want, got)
	}
}
