package protocol

import (
	"encoding/json"
	"strings"
	"time"
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
	// UnrealizedUnknown is true when an open position of the account has
	// no live price (the platform's market data is down, refused or has
	// not quoted it yet): UnrealizedProfitLoss and NetLiquidation then
	// leave that position's P&L out, and are not to be taken as the
	// account's. Absent (false) when every open position is priced.
	UnrealizedUnknown bool `json:"unrealizedUnknown,omitempty"`
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
	// UnrealizedUnknown is true when the open position has no live
	// price: MarketPrice and UnrealizedProfitLoss are then 0 and mean
	// "unknown", not "flat at the average price". Absent (false) when it
	// is priced.
	UnrealizedUnknown bool `json:"unrealizedUnknown,omitempty"`
}

// Order is an order on the platform. LimitPrice and StopPrice are zero when
// the order type has none. A trailing order's StopPrice (and a
// TrailingStopLimit's LimitPrice) is where the trail stands now.
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
	// TrailDistance is a trailing order's distance from the market, in
	// price units; zero (absent) for the other types. Only the broker
	// family's platforms have trailing orders, so the desktop documents
	// leave it out (tag family:"tv").
	TrailDistance float64 `json:"trailDistance,omitempty" family:"tv"`
	Oco           string  `json:"oco,omitempty"`
	StrategyTag   string  `json:"strategyTag,omitempty"`
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
	// The trailing types: a stop that follows the market at a distance
	// (PlaceOrderArgs.TrailDistance) and never moves back. Only the relay's
	// in-process dispatcher (the broker family, /v1/api/tv) receives them:
	// the desktop routes' orderType enum does not offer them, so no agent
	// is ever sent one and the tunnel protocol's version is unchanged. A
	// platform without trailing orders answers them not_supported.
	OrderTypeTrailingStop      = "TrailingStop"
	OrderTypeTrailingStopLimit = "TrailingStopLimit"

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

// NormalizeOrderType returns the platform spelling of an order type, the
// trailing types included (platforms without them check TrailingOrderType).
func NormalizeOrderType(s string) (string, bool) {
	return normalize(s, OrderTypeMarket, OrderTypeLimit, OrderTypeStopMarket, OrderTypeStopLimit,
		OrderTypeTrailingStop, OrderTypeTrailingStopLimit)
}

// TrailingOrderType reports whether t, in the platform spelling, is a
// trailing type: TrailingStop or TrailingStopLimit.
func TrailingOrderType(t string) bool {
	return t == OrderTypeTrailingStop || t == OrderTypeTrailingStopLimit
}

// OrderPrices are the price fields an order type needs.
type OrderPrices struct {
	// Limit: limitPrice, for Limit, StopLimit and TrailingStopLimit.
	Limit bool
	// Stop: stopPrice, for StopMarket, StopLimit and TrailingStopLimit.
	// A TrailingStop takes one (its starting stop) but does not need it.
	Stop bool
	// TrailDistance: trailDistance, for the trailing types.
	TrailDistance bool
}

// OrderPricesOf returns the prices an order of type t, in the platform
// spelling, needs: none for Market or a type it does not know. The
// relay's argument checks and the agent's operations both ask it.
func OrderPricesOf(t string) OrderPrices {
	return OrderPrices{
		Limit:         t == OrderTypeLimit || t == OrderTypeStopLimit || t == OrderTypeTrailingStopLimit,
		Stop:          t == OrderTypeStopMarket || t == OrderTypeStopLimit || t == OrderTypeTrailingStopLimit,
		TrailDistance: TrailingOrderType(t),
	}
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
	Account    string   `json:"account"`
	Action     string   `json:"action"`
	Instrument string   `json:"instrument"`
	OrderType  string   `json:"orderType"`
	Quantity   int      `json:"quantity"`
	LimitPrice *float64 `json:"limitPrice,omitempty"`
	StopPrice  *float64 `json:"stopPrice,omitempty"`
	// TrailDistance is a trailing order's distance from the market, in
	// price units (above 0, on the instrument's tick): required for
	// TrailingStop and TrailingStopLimit, refused with any other type.
	TrailDistance         *float64        `json:"trailDistance,omitempty"`
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
	// Exits are placed once the entry fills (since protocol version 7;
	// see Exits).
	Exits *Exits `json:"exits,omitempty"`
	// LimitOffset and StopOffset give the limit and stop prices relative
	// to the instrument's last price instead of LimitPrice and StopPrice
	// (one or the other), signed: positive above, negative below (since
	// protocol version 7).
	LimitOffset *PriceOffset `json:"limitOffset,omitempty"`
	StopOffset  *PriceOffset `json:"stopOffset,omitempty"`
	// CancelAfterSeconds cancels what is left of the entry when it has
	// not wholly filled that long after it was placed:
	// MinCancelAfterSeconds to MaxCancelAfterSeconds (since protocol
	// version 7).
	CancelAfterSeconds *int `json:"cancelAfterSeconds,omitempty"`
}

// OrderResult is the result of functions that place one order.
type OrderResult struct {
	OrderID string `json:"orderId"`
	Order   Order  `json:"order"`
}

// Watermarks are an account's session extremes: the highs and lows of its
// P&L, net liquidation and unrealized P&L since the trading session began
// (6 PM New York time), and the current figures they are measured on.
type Watermarks struct {
	Account    string          `json:"account"`
	Watermarks WatermarkValues `json:"watermarks"`
	Stats      WatermarkStats  `json:"stats"`
	// SessionStart is when the current session began, RFC 3339 UTC.
	SessionStart string `json:"sessionStart"`
}

// WatermarkValues are the session's highs and lows, in dollars. P&L is
// the session's realized P&L (net of commission) plus unrealized.
type WatermarkValues struct {
	PnlHigh    float64 `json:"pnlhigh"`
	PnlLow     float64 `json:"pnllow"`
	NetLiqHigh float64 `json:"netliqhigh"`
	NetLiqLow  float64 `json:"netliqlow"`
	UnrealHigh float64 `json:"unrealhigh"`
	UnrealLow  float64 `json:"unreallow"`
}

// WatermarkStats are the current values the watermarks follow.
type WatermarkStats struct {
	Pnl        float64 `json:"pnl"`        // session realized (net) + unrealized
	Realized   float64 `json:"realized"`   // session realized, net of commission
	Unrealized float64 `json:"unrealized"` // open positions
	Total      float64 `json:"total"`      // all-time realized (net) + unrealized
	NetLiq     float64 `json:"netliq"`
	PosCount   int     `json:"poscount"`
	Commission float64 `json:"commission"` // session commission
}

// InstrumentInfo describes a contract (MarketInfo).
type InstrumentInfo struct {
	Instrument  string  `json:"instrument"` // "ES 12-26"
	Root        string  `json:"root"`
	Description string  `json:"description"`
	Exchange    string  `json:"exchange"`
	Currency    string  `json:"currency"`
	TickSize    float64 `json:"tickSize"`
	PointValue  float64 `json:"pointValue"`
	TickValue   float64 `json:"tickValue"`
	// Expiry is the last trading day, RollDate the day the front month
	// moves to the next contract; both YYYY-MM-DD in New York time.
	Expiry   string `json:"expiry"`
	RollDate string `json:"rollDate"`
	// NextInstrument is the contract that follows this one.
	NextInstrument string          `json:"nextInstrument"`
	TradingHours   TradingHours    `json:"tradingHours"`
	MarketOpen     bool            `json:"marketOpen"`
	Sessions       []TradingWindow `json:"sessions,omitempty"`
}

// TradingHours are a contract's regular trading hours.
type TradingHours struct {
	TimeZone string `json:"timeZone"` // "America/New_York"
	// Description in words, e.g. "Sunday 18:00 to Friday 17:00, daily break 17:00-18:00".
	Description string `json:"description"`
}

// TradingWindow is one trading session, RFC 3339 UTC.
type TradingWindow struct {
	Open  string `json:"open"`
	Close string `json:"close"`
}

// Bar period types.
const (
	PeriodTick   = "tick"
	PeriodSecond = "second"
	PeriodMinute = "minute"
	PeriodDay    = "day"
	PeriodWeek   = "week"
	PeriodMonth  = "month"
)

// NormalizePeriodType returns the spelling of a bar period type for any
// casing, also accepting NinjaTrader's names (Tick, Second, Minute, Day,
// Week, Month).
func NormalizePeriodType(s string) (string, bool) {
	v, ok := normalize(s, PeriodTick, PeriodSecond, PeriodMinute, PeriodDay, PeriodWeek, PeriodMonth)
	return v, ok
}

// Bars is the result of GetBars.
type Bars struct {
	Instrument string `json:"instrument"`
	PeriodType string `json:"periodType"`
	Period     int    `json:"period"`
	Count      int    `json:"count"`
	Bars       []Bar  `json:"bars"`
}

// Bar is one bar; Time is its start, RFC 3339 UTC, Epoch the same in ms.
type Bar struct {
	Time   string  `json:"time"`
	Epoch  int64   `json:"epoch"`
	Open   float64 `json:"open"`
	High   float64 `json:"high"`
	Low    float64 `json:"low"`
	Close  float64 `json:"close"`
	Volume int64   `json:"volume"`
}

// AtmTemplate is an ATM strategy template: the brackets placed around an
// entry when it fills. Quantities of the brackets add up to Quantity.
type AtmTemplate struct {
	Name         string           `json:"name"`
	Quantity     int              `json:"quantity"`
	TimeInForce  string           `json:"timeInForce"`
	Brackets     []AtmBracket     `json:"brackets"`
	Breakeven    *AtmBreakeven    `json:"breakeven,omitempty"`
	TrailingStop *AtmTrailingStop `json:"trailingStop,omitempty"`
}

// AtmBracket is one stop/target pair of a template, in ticks from the
// entry's fill price.
type AtmBracket struct {
	Quantity          int `json:"quantity"`
	StopLossTicks     int `json:"stopLossTicks"`
	ProfitTargetTicks int `json:"profitTargetTicks"`
}

// AtmBreakeven moves the stop to entry + PlusTicks once the market is
// TriggerTicks in profit.
type AtmBreakeven struct {
	Enabled      bool `json:"enabled"`
	TriggerTicks int  `json:"triggerTicks"`
	PlusTicks    int  `json:"plusTicks"`
}

// AtmTrailingStop trails the stop DistanceTicks behind the best price, in
// steps of StepTicks, once the market is TriggerTicks in profit.
type AtmTrailingStop struct {
	Enabled       bool `json:"enabled"`
	TriggerTicks  int  `json:"triggerTicks"`
	DistanceTicks int  `json:"distanceTicks"`
	StepTicks     int  `json:"stepTicks"`
}

// Strategy modes of StartStrategy.
const (
	StrategyModeRealtime = "Realtime" // start enabled, trading
	StrategyModeDisabled = "Disabled" // start loaded but not trading
)

// Strategy states. Closed and Error are terminal.
const (
	StrategyStateEnabled  = "Enabled"
	StrategyStateDisabled = "Disabled"
	StrategyStateClosed   = "Closed"
	StrategyStateError    = "Error"
)

// TerminalStrategyState reports whether a strategy in state s can change no more.
func TerminalStrategyState(s string) bool {
	return s == StrategyStateClosed || s == StrategyStateError
}

// Strategy is a running (or ended) automated strategy on an account.
type Strategy struct {
	ID         string         `json:"id"`
	StrategyID string         `json:"strategyId"` // equal to ID; both names are in use
	Class      string         `json:"strategyClass"`
	Account    string         `json:"account"`
	Instrument string         `json:"instrument"`
	PeriodType string         `json:"periodType"`
	Period     int            `json:"period"`
	Parameters map[string]any `json:"parameters"`
	State      string         `json:"state"`
	Enabled    bool           `json:"enabled"`
	Terminal   bool           `json:"terminal"`
	// Position is the strategy's own position.
	MarketPosition       string  `json:"marketPosition"`
	Quantity             int     `json:"quantity"`
	AveragePrice         float64 `json:"averagePrice"`
	RealizedProfitLoss   float64 `json:"realizedProfitLoss"`
	UnrealizedProfitLoss float64 `json:"unrealizedProfitLoss"`
	StartedAt            string  `json:"startedAt"`
	EndedAt              string  `json:"endedAt,omitempty"`
	Detail               string  `json:"detail,omitempty"` // why it ended in Error
}

// TimeLayout is how records write an instant: RFC 3339 in UTC with
// milliseconds ("2026-11-18T15:00:00.000Z").
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// FormatTime writes t in TimeLayout, in UTC.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }
