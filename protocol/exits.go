package protocol

import "context"

// Orders placed with their exits, relative prices and timeouts (since
// protocol version 7, ExitsProtocolVersion). PlaceOrder and FlatPlace
// take them in PlaceOrderArgs; the relay sends them only to an agent of
// that version or later (an older agent ignores unknown fields, which
// here would drop a stop loss), and its HTTP routes do not offer them:
// the TradingView webhook door (relay/webhook) does.

// Units of a PriceOffset.
const (
	// OffsetTicks is a number of the instrument's ticks.
	OffsetTicks = "ticks"
	// OffsetPoints is a number of whole price units ("4 points" on ES is
	// 16 ticks).
	OffsetPoints = "points"
	// OffsetPercent is a percentage of the reference price (0.5 is half
	// a percent).
	OffsetPercent = "percent"
	// OffsetDollars is a price move worth that many dollars on one
	// contract: Value divided by the instrument's point value, in points.
	OffsetDollars = "dollars"
)

// OffsetUnits lists the units of a PriceOffset.
var OffsetUnits = []string{OffsetTicks, OffsetPoints, OffsetPercent, OffsetDollars}

// PriceOffset is a price given relative to a reference price: Value
// units of Unit. The price it names is rounded to the instrument's
// nearest tick.
type PriceOffset struct {
	Unit  string  `json:"unit"`
	Value float64 `json:"value"`
}

// ExitPrice is the price of one exit order: an absolute Price, or an
// Offset from the entry's average fill price. Exactly one is set. An
// Offset's Value is a distance, above 0: its direction is the exit's
// (a long's take profit above the fill, its stop loss below).
type ExitPrice struct {
	Price  *float64     `json:"price,omitempty"`
	Offset *PriceOffset `json:"offset,omitempty"`
}

// Exits are the exit orders an entry gets once it fills: a take profit
// (a Limit order), and a stop loss, either a StopMarket (StopLoss) or a
// StopLimit (StopLossLimit, the limit price, with StopLossStop, its
// trigger, which is the limit price when absent). With both sides they
// form an OCO pair. They are placed Gtc, on the other side of the entry,
// for the quantity filled so far, as soon as the entry's first fill is
// known, and grow with its later fills; an entry that ends with no fill
// places none. At least one of TakeProfit, StopLoss and StopLossLimit is
// set; StopLoss and StopLossLimit exclude each other, and Exits exclude
// an ATM template (PlaceOrderArgs.Strategy).
type Exits struct {
	TakeProfit    *ExitPrice `json:"takeProfit,omitempty"`
	StopLoss      *ExitPrice `json:"stopLoss,omitempty"`
	StopLossLimit *ExitPrice `json:"stopLossLimit,omitempty"`
	StopLossStop  *ExitPrice `json:"stopLossStop,omitempty"`
}

// Bounds of PlaceOrderArgs.CancelAfterSeconds.
const (
	MinCancelAfterSeconds = 60
	MaxCancelAfterSeconds = 3600
)

// ExitsProtocolVersion is the first version whose agents take
// PlaceOrderArgs.Exits, LimitOffset, StopOffset and CancelAfterSeconds,
// the function FnCancelReplace and Request.BypassWindows.
const ExitsProtocolVersion = 7

// CancelReplaceArgs are the arguments of FnCancelReplace: the working
// order OrderID of Account is cancelled, and only once it is cancelled
// with nothing filled is the order of the embedded PlaceOrderArgs placed
// (its Account is Account). An order that filled, wholly or partly,
// before the cancel took effect places nothing and is refused.
type CancelReplaceArgs struct {
	PlaceOrderArgs
	// CancelOrderID is the order to cancel (current or original id).
	CancelOrderID string `json:"cancelOrderId"`
}

// CallOptions are what a relay door asks of one call beyond its
// arguments; they travel in the context to the Caller (the hub copies
// them into the Request, the broker family reads them in process).
type CallOptions struct {
	// BypassWindows lets the call's orders through the account monitor's
	// trading windows (masterWindow, tradingWindows, closingOnlyAfter):
	// a TradingView alert's bypass_trade_windows=true. Every other rule
	// of the trading gate still applies.
	BypassWindows bool
}

type callOptionsKey struct{}

// WithCallOptions returns ctx carrying o.
func WithCallOptions(ctx context.Context, o CallOptions) context.Context {
	return context.WithValue(ctx, callOptionsKey{}, o)
}

// CallOptionsOf returns the CallOptions ctx carries; the zero value when
// none.
func CallOptionsOf(ctx context.Context) CallOptions {
	o, _ := ctx.Value(callOptionsKey{}).(CallOptions)
	return o
}
