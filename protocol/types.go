package protocol

import (
	"encoding/json"
	"strings"
)

// The records below are the results of RPC functions. Their JSON field names
// are the ones bot authors already program against (see DESIGN.md); the relay
// passes them through unchanged inside its {"success":true,"data":…} envelope.

// Account is a trading account on the platform.
type Account struct {
	Name             string      `json:"name"`
	DisplayName      string      `json:"displayName"`
	Provider         string      `json:"provider"`
	Connection       string      `json:"connection"`
	ConnectionStatus string      `json:"connectionStatus"`
	Denomination     string      `json:"denomination"`
	Status           string      `json:"status"`
	Item             AccountItem `json:"item"`
}

// AccountItem holds an account's values in its denomination (dollars).
type AccountItem struct {
	BuyingPower             float64 `json:"buyingPower"`
	CashValue               float64 `json:"cashValue"`
	NetLiquidation          float64 `json:"netLiquidation"`
	RealizedProfitLoss      float64 `json:"realizedProfitLoss"`
	UnrealizedProfitLoss    float64 `json:"unrealizedProfitLoss"`
	GrossRealizedProfitLoss float64 `json:"grossRealizedProfitLoss"`
	Commission              float64 `json:"commission"`
	InitialMargin           float64 `json:"initialMargin"`
	MaintenanceMargin       float64 `json:"maintenanceMargin"`
	DailyLossLimit          float64 `json:"dailyLossLimit"`
	TrailingMaxDrawdown     float64 `json:"trailingMaxDrawdown"`
	WeeklyProfitLoss        float64 `json:"weeklyProfitLoss"`
}

// Position is an account's holding in one instrument.
type Position struct {
	Account              string  `json:"account"`
	Instrument           string  `json:"instrument"`
	InstrumentType       string  `json:"instrumentType"`
	MarketPosition       string  `json:"marketPosition"`
	Quantity             int     `json:"quantity"`
	AveragePrice         float64 `json:"averagePrice"`
	MarketPrice          float64 `json:"marketPrice"`
	UnrealizedProfitLoss float64 `json:"unrealizedProfitLoss"`
	Tag                  string  `json:"tag,omitempty"`
}

// Order is an order on the platform. LimitPrice and StopPrice are zero when
// the order type has none.
type Order struct {
	OrderID          string  `json:"orderId"`
	Account          string  `json:"account"`
	Instrument       string  `json:"instrument"`
	Name             string  `json:"name"`
	OrderAction      string  `json:"orderAction"`
	OrderType        string  `json:"orderType"`
	OrderState       string  `json:"orderState"`
	Quantity         int     `json:"quantity"`
	Filled           int     `json:"filled"`
	AverageFillPrice float64 `json:"averageFillPrice"`
	LimitPrice       float64 `json:"limitPrice"`
	StopPrice        float64 `json:"stopPrice"`
	TimeInForce      string  `json:"timeInForce"`
	Oco              string  `json:"oco,omitempty"`
	StrategyTag      string  `json:"strategyTag,omitempty"`
	// Time is RFC 3339 UTC; Epoch the same instant in milliseconds.
	Time  string `json:"time"`
	Epoch int64  `json:"epoch"`
}

// Execution is one fill of an order.
type Execution struct {
	ID             string  `json:"id"`
	OrderID        string  `json:"orderId"`
	Account        string  `json:"account"`
	Instrument     string  `json:"instrument"`
	Name           string  `json:"name"`
	MarketPosition string  `json:"marketPosition"`
	Quantity       int     `json:"quantity"`
	Price          float64 `json:"price"`
	Commission     float64 `json:"commission"`
	Time           string  `json:"time"`
	Epoch          int64   `json:"epoch"`
}

// Quote is the current market of an instrument.
type Quote struct {
	Instrument   string  `json:"instrument"`
	Bid          float64 `json:"bid"`
	Ask          float64 `json:"ask"`
	Last         float64 `json:"last"`
	Open         float64 `json:"open"`
	High         float64 `json:"high"`
	Low          float64 `json:"low"`
	Close        float64 `json:"close"`
	Volume       int64   `json:"volume"`
	BidSize      int64   `json:"bidSize"`
	AskSize      int64   `json:"askSize"`
	TickSize     float64 `json:"tickSize"`
	PointValue   float64 `json:"pointValue"`
	TickValue    float64 `json:"tickValue"`
	QuoteTimeUTC string  `json:"quoteTimeUtc"`
	Epoch        int64   `json:"epoch"`
}

// Values of the enumerated fields, in the platform's casing. Callers may send
// any casing; Normalize* return these spellings.
const (
	ActionBuy  = "Buy"
	ActionSell = "Sell"

	OrderTypeMarket     = "Market"
	OrderTypeLimit      = "Limit"
	OrderTypeStopMarket = "StopMarket"
	OrderTypeStopLimit  = "StopLimit"

	TimeInForceDay = "Day"
	TimeInForceGtc = "Gtc"

	MarketPositionLong  = "Long"
	MarketPositionShort = "Short"
	MarketPositionFlat  = "Flat"
)

// Order states, as the platform names them.
const (
	OrderStateInitialized     = "Initialized"
	OrderStateSubmitted       = "Submitted"
	OrderStateAccepted        = "Accepted"
	OrderStateTriggerPending  = "TriggerPending"
	OrderStateWorking         = "Working"
	OrderStateChangePending   = "ChangePending"
	OrderStateChangeSubmitted = "ChangeSubmitted"
	OrderStateCancelPending   = "CancelPending"
	OrderStateCancelSubmitted = "CancelSubmitted"
	OrderStateCancelled       = "Cancelled"
	OrderStateRejected        = "Rejected"
	OrderStatePartFilled      = "PartFilled"
	OrderStateFilled          = "Filled"
	OrderStateUnknown         = "Unknown"
)

// TerminalOrderState reports whether an order in state s can change no more.
func TerminalOrderState(s string) bool {
	return s == OrderStateCancelled || s == OrderStateFilled || s == OrderStateRejected
}

func normalize(s string, allowed ...string) (string, bool) {
	for _, a := range allowed {
		if strings.EqualFold(s, a) {
			return a, true
		}
	}
	return "", false
}

// NormalizeAction returns Buy or Sell for any casing of them.
func NormalizeAction(s string) (string, bool) { return normalize(s, ActionBuy, ActionSell) }

// NormalizeOrderType returns the platform spelling of an order type.
func NormalizeOrderType(s string) (string, bool) {
	return normalize(s, OrderTypeMarket, OrderTypeLimit, OrderTypeStopMarket, OrderTypeStopLimit)
}

// NormalizeTimeInForce returns Day or Gtc for any casing of them.
func NormalizeTimeInForce(s string) (string, bool) {
	return normalize(s, TimeInForceDay, TimeInForceGtc)
}

// AccountArgs are the arguments of functions that take only an account:
// GetAccount, GetWatermarks, ListPositions.
type AccountArgs struct {
	Account string `json:"account"`
}

// PlaceOrderArgs are the arguments of PlaceOrder. Pointer fields are optional
// and nil when absent.
type PlaceOrderArgs struct {
	Account               string          `json:"account"`
	Action                string          `json:"action"`
	Instrument            string          `json:"instrument"`
	OrderType             string          `json:"orderType"`
	Quantity              int             `json:"quantity"`
	LimitPrice            *float64        `json:"limitPrice,omitempty"`
	StopPrice             *float64        `json:"stopPrice,omitempty"`
	TimeInForce           string          `json:"timeInForce"`
	OcoID                 string          `json:"ocoId,omitempty"`
	OrderID               string          `json:"orderId,omitempty"`
	Strategy              string          `json:"strategy,omitempty"`
	StrategyTag           string          `json:"strategyTag,omitempty"`
	TargetQuantity        *int            `json:"targetQuantity,omitempty"`
	MaxPositions          *int            `json:"maxPositions,omitempty"`
	MaxResyncCorrection   *int            `json:"maxResyncCorrection,omitempty"`
	Force                 bool            `json:"force,omitempty"`
	RequireMarketPosition string          `json:"requireMarketPosition,omitempty"`
	SmartOptions          json.RawMessage `json:"smartOptions,omitempty"`
}

// OrderResult is the result of functions that place one order.
type OrderResult struct {
	OrderID string `json:"orderId"`
	Order   Order  `json:"order"`
}
