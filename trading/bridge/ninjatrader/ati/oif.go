package ati

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// OIF commands this package writes.
const (
	cmdPlace             = "PLACE"
	cmdCancel            = "CANCEL"
	cmdChange            = "CHANGE"
	cmdClosePosition     = "CLOSEPOSITION"
	cmdCancelAllOrders   = "CANCELALLORDERS"
	cmdFlattenEverything = "FLATTENEVERYTHING"
)

// oifFields is the number of semicolon-separated fields of an OIF line.
const oifFields = 13

// oifLineEnd ends every line written: one line per file, CRLF as on
// Windows.
const oifLineEnd = "\r\n"

// maxOrderIDLen bounds order ids: NinjaTrader names the order's state file
// after the id, so it must stay a short file name.
const maxOrderIDLen = 64

// command is one OIF line, field by field, in the ATI spelling. Empty
// fields are written empty; zero quantities and prices are written only
// where the command uses them (see encode).
type command struct {
	Command    string
	Account    string
	Instrument string
	Action     string // BUY, SELL
	Quantity   int
	OrderType  string // MARKET, LIMIT, STOPMARKET, STOPLIMIT
	LimitPrice float64
	StopPrice  float64
	TIF        string // DAY, GTC
	OcoID      string
	OrderID    string
	Strategy   string // ATM template name
	StrategyID string
}

// encode validates c and returns its line, terminator included. It never
// returns a line for a field that could split it: a semicolon, a line
// break or any other control character in a text field, or a price that is
// not a finite non-negative number, is a *bridge.RequestError naming the
// field (never its value).
func (c command) encode() (string, error) {
	for _, f := range [...]struct{ name, value string }{
		{"account", c.Account},
		{"instrument", c.Instrument},
		{"OCO id", c.OcoID},
		{"order id", c.OrderID},
		{"ATM template", c.Strategy},
		{"strategy id", c.StrategyID},
	} {
		if err := checkText(f.name, f.value); err != nil {
			return "", err
		}
	}
	fields := [oifFields]string{0: c.Command}
	switch c.Command {
	case cmdPlace:
		fields[1], fields[2], fields[3] = c.Account, c.Instrument, c.Action
		fields[4] = strconv.Itoa(c.Quantity)
		fields[5] = c.OrderType
		if c.OrderType == "LIMIT" || c.OrderType == "STOPLIMIT" {
			p, err := formatPrice("limit", c.LimitPrice)
			if err != nil {
				return "", err
			}
			fields[6] = p
		}
		if c.OrderType == "STOPMARKET" || c.OrderType == "STOPLIMIT" {
			p, err := formatPrice("stop", c.StopPrice)
			if err != nil {
				return "", err
			}
			fields[7] = p
		}
		fields[8], fields[9], fields[10] = c.TIF, c.OcoID, c.OrderID
		fields[11], fields[12] = c.Strategy, c.StrategyID
	case cmdCancel:
		fields[10], fields[12] = c.OrderID, c.StrategyID
	case cmdChange:
		// Zero leaves a value as it is.
		fields[4] = strconv.Itoa(c.Quantity)
		lp, err := formatPrice("limit", c.LimitPrice)
		if err != nil {
			return "", err
		}
		sp, err := formatPrice("stop", c.StopPrice)
		if err != nil {
			return "", err
		}
		fields[6], fields[7] = lp, sp
		fields[10], fields[12] = c.OrderID, c.StrategyID
	case cmdClosePosition:
		fields[1], fields[2] = c.Account, c.Instrument
	case cmdCancelAllOrders, cmdFlattenEverything:
	default:
		return "", &bridge.RequestError{Reason: "unknown ATI command"}
	}
	if c.Quantity < 0 {
		return "", &bridge.RequestError{Reason: "quantity must not be negative"}
	}
	return strings.Join(fields[:], ";") + oifLineEnd, nil
}

// checkText refuses a text field that could change the line's meaning: a
// field separator, a line break or any other control character, or bytes
// that are not UTF-8.
func checkText(name, s string) error {
	if !utf8.ValidString(s) {
		return &bridge.RequestError{Reason: name + " is not valid UTF-8"}
	}
	for _, r := range s {
		if r == ';' || unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return &bridge.RequestError{Reason: name + " contains a character the ATI cannot carry"}
		}
	}
	return nil
}

// checkOrderID refuses an order id NinjaTrader could not use as a file
// name: it names the order's state file in the outgoing folder. Ids are
// 1 to maxOrderIDLen ASCII letters, digits, '-', '_' and '.', not starting
// with '.'.
func checkOrderID(id string) error {
	if id == "" || len(id) > maxOrderIDLen || id[0] == '.' {
		return &bridge.RequestError{Reason: "order id must be 1 to 64 letters, digits, '-', '_' or '.'"}
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return &bridge.RequestError{Reason: "order id must be 1 to 64 letters, digits, '-', '_' or '.'"}
		}
	}
	return nil
}

// formatPrice writes a price as the ATI reads it, whatever the locale of
// this process or of NinjaTrader: '.' as the decimal separator, no
// thousands separator, no exponent, the shortest form that reads back as
// the same float64 ("5950.25", "0.1", "0").
func formatPrice(name string, p float64) (string, error) {
	if math.IsNaN(p) || math.IsInf(p, 0) || p < 0 {
		return "", &bridge.RequestError{Reason: name + " price must be a finite, non-negative number"}
	}
	if p == 0 {
		return "0", nil // never "-0"
	}
	return strconv.FormatFloat(p, 'f', -1, 64), nil
}

// The ATI spellings of protocol's enumerated values.
var (
	atiAction = map[string]string{
		protocol.ActionBuy:  "BUY",
		protocol.ActionSell: "SELL",
	}
	atiOrderType = map[string]string{
		protocol.OrderTypeMarket:     "MARKET",
		protocol.OrderTypeLimit:      "LIMIT",
		protocol.OrderTypeStopMarket: "STOPMARKET",
		protocol.OrderTypeStopLimit:  "STOPLIMIT",
	}
	atiTIF = map[string]string{
		protocol.TimeInForceDay: "DAY",
		protocol.TimeInForceGtc: "GTC",
	}
)

// contract checks that instrument names a contract ("ES 12-26") and
// returns its canonical name. Roots and month codes are resolved before
// they reach this package; any other form is a *bridge.InstrumentError
// with Cause InstrumentMalformed.
func contract(instrument string) (string, error) {
	in, err := protocol.ParseInstrument(protocol.NormalizeInstrument(instrument))
	if err != nil || in.Form != protocol.InstrumentContract {
		return "", &bridge.InstrumentError{Cause: bridge.InstrumentMalformed}
	}
	return in.String(), nil
}
