// Package tradovatewire holds Tradovate's documented JSON shapes as Go types, the
// codec of its websocket text frames, and the table of order failure
// reasons with our stable codes for them.
//
// It sits under trading/bridge/tradovate: the session, REST calls and
// websocket client there speak these shapes to the broker, and the fake
// server of trading/bridge/tradovate/tradovatefake speaks them to the client in
// tests. It uses the standard library only. Decoding ignores fields it does
// not know (the broker adds fields over time); optional request fields are
// left out when empty.
package tradovatewire

import (
	"encoding/json"
	"time"
)

// AccessTokenRequest is the body of POST /auth/accesstokenrequest. PTicket
// is set when resending after a penalty ticket.
type AccessTokenRequest struct {
	Name       string `json:"name"`
	Password   string `json:"password"`
	AppID      string `json:"appId"`
	AppVersion string `json:"appVersion"`
	CID        int    `json:"cid"`
	Sec        string `json:"sec"`
	DeviceID   string `json:"deviceId,omitempty"`
	PTicket    string `json:"p-ticket,omitempty"`
}

// AccessTokenResponse is the answer of /auth/accesstokenrequest and of
// /auth/renewaccesstoken. Exactly one case holds: a token (AccessToken
// set), a refused login (ErrorText set), or a penalty ticket (PTicket set:
// wait PTime seconds and resend with the ticket, unless PCaptcha asks for a
// human).
type AccessTokenResponse struct {
	ErrorText      string `json:"errorText,omitempty"`
	AccessToken    string `json:"accessToken,omitempty"`
	MDAccessToken  string `json:"mdAccessToken,omitempty"`
	ExpirationTime string `json:"expirationTime,omitempty"` // RFC 3339
	UserStatus     string `json:"userStatus,omitempty"`
	UserID         int64  `json:"userId,omitempty"`
	Name           string `json:"name,omitempty"`
	HasLive        bool   `json:"hasLive,omitempty"`

	PTicket  string `json:"p-ticket,omitempty"`
	PTime    int    `json:"p-time,omitempty"`
	PCaptcha bool   `json:"p-captcha,omitempty"`
}

// Expires parses ExpirationTime; ok is false when it is empty or malformed.
func (r AccessTokenResponse) Expires() (t time.Time, ok bool) {
	t, err := time.Parse(time.RFC3339, r.ExpirationTime)
	return t, err == nil
}

// OAuthTokenRequest is the body of POST /auth/oauthtoken, the exchange of
// an OAuth authorization code for an access token.
type OAuthTokenRequest struct {
	GrantType    string `json:"grant_type"` // "authorization_code"
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	RedirectURI  string `json:"redirect_uri"`
	Code         string `json:"code"`
}

// OAuthTokenResponse is the answer of /auth/oauthtoken: a token, or Error
// with ErrorDescription.
type OAuthTokenResponse struct {
	AccessToken      string `json:"access_token,omitempty"`
	TokenType        string `json:"token_type,omitempty"`
	ExpiresIn        int    `json:"expires_in,omitempty"` // seconds
	Error            string `json:"error,omitempty"`
	ErrorDescription string `json:"error_description,omitempty"`
}

// MeResponse is the answer of GET /auth/me: the user the access token
// belongs to.
type MeResponse struct {
	ErrorText string `json:"errorText,omitempty"`
	UserID    int64  `json:"userId"`
	Name      string `json:"name,omitempty"`
}

// TradeDate is a trading day as the broker writes it.
type TradeDate struct {
	Year  int `json:"year"`
	Month int `json:"month"`
	Day   int `json:"day"`
}

// User is a user entity (of the syncrequest answer).
type User struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// Account is an account entity (GET /account/list).
type Account struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	UserID      int64  `json:"userId"`
	AccountType string `json:"accountType,omitempty"`
	Active      bool   `json:"active"`
	Archived    bool   `json:"archived,omitempty"`
}

// CashBalanceSnapshotRequest is the body of POST
// /cashBalance/getcashbalancesnapshot.
type CashBalanceSnapshotRequest struct {
	AccountID int64 `json:"accountId"`
}

// CashBalanceSnapshot is an account's values now (POST
// /cashBalance/getcashbalancesnapshot).
type CashBalanceSnapshot struct {
	ErrorText         string  `json:"errorText,omitempty"`
	AccountID         int64   `json:"accountId,omitempty"`
	TotalCashValue    float64 `json:"totalCashValue"`
	NetLiq            float64 `json:"netLiq"`
	OpenPnL           float64 `json:"openPnL"`
	RealizedPnL       float64 `json:"realizedPnL"`
	WeekRealizedPnL   float64 `json:"weekRealizedPnL"`
	InitialMargin     float64 `json:"initialMargin"`
	MaintenanceMargin float64 `json:"maintenanceMargin"`
	TotalPnL          float64 `json:"totalPnL,omitempty"`
}

// CashBalance is a cash-balance entity (syncrequest answer, props events):
// the account's cash in one currency for a trade date.
type CashBalance struct {
	ID              int64     `json:"id"`
	AccountID       int64     `json:"accountId"`
	Timestamp       string    `json:"timestamp,omitempty"`
	TradeDate       TradeDate `json:"tradeDate"`
	CurrencyID      int64     `json:"currencyId,omitempty"`
	Amount          float64   `json:"amount"`
	RealizedPnL     float64   `json:"realizedPnL"`
	WeekRealizedPnL float64   `json:"weekRealizedPnL"`
}

// Position is a position entity (GET /position/list). Rows with NetPos 0
// exist: the account traded the contract that day and is flat.
type Position struct {
	ID          int64     `json:"id"`
	AccountID   int64     `json:"accountId"`
	ContractID  int64     `json:"contractId"`
	Timestamp   string    `json:"timestamp,omitempty"`
	TradeDate   TradeDate `json:"tradeDate"`
	NetPos      int       `json:"netPos"`
	NetPrice    float64   `json:"netPrice,omitempty"`
	Bought      int       `json:"bought"`
	BoughtValue float64   `json:"boughtValue"`
	Sold        int       `json:"sold"`
	SoldValue   float64   `json:"soldValue"`
}

// Order actions.
const (
	ActionBuy  = "Buy"
	ActionSell = "Sell"
)

// Order statuses (Order.OrdStatus).
const (
	StatusWorking        = "Working"
	StatusFilled         = "Filled"
	StatusCanceled       = "Canceled"
	StatusRejected       = "Rejected"
	StatusExpired        = "Expired"
	StatusPendingNew     = "PendingNew"
	StatusPendingCancel  = "PendingCancel"
	StatusPendingReplace = "PendingReplace"
	StatusCompleted      = "Completed"
	StatusSuspended      = "Suspended"
	StatusUnknown        = "Unknown"
)

// Order types (OrderVersion.OrderType).
const (
	OrderTypeMarket            = "Market"
	OrderTypeLimit             = "Limit"
	OrderTypeStop              = "Stop"
	OrderTypeStopLimit         = "StopLimit"
	OrderTypeTrailingStop      = "TrailingStop"
	OrderTypeTrailingStopLimit = "TrailingStopLimit"
	OrderTypeMIT               = "MIT"
	OrderTypeQTS               = "QTS"
)

// Times in force.
const (
	TIFDay = "Day"
	TIFGTC = "GTC"
	TIFGTD = "GTD"
	TIFIOC = "IOC"
	TIFFOK = "FOK"
)

// Order is an order entity (GET /order/list). Its quantity, type and
// prices are in its OrderVersion.
type Order struct {
	ID         int64  `json:"id"`
	AccountID  int64  `json:"accountId"`
	ContractID int64  `json:"contractId"`
	Timestamp  string `json:"timestamp,omitempty"`
	Action     string `json:"action"`
	OrdStatus  string `json:"ordStatus"`
	OcoID      int64  `json:"ocoId,omitempty"`
	ParentID   int64  `json:"parentId,omitempty"`
	Admin      bool   `json:"admin"`
}

// OrderVersion is an order's current terms (GET /orderVersion/list); a
// modification creates a new version of the same OrderID. A trailing
// order's PegDifference is its trail (see PlaceOrderRequest) and its
// StopPrice (and a TrailingStopLimit's Price) where the trail stands.
type OrderVersion struct {
	ID            int64   `json:"id"`
	OrderID       int64   `json:"orderId"`
	OrderQty      int     `json:"orderQty"`
	OrderType     string  `json:"orderType"`
	Price         float64 `json:"price,omitempty"`
	StopPrice     float64 `json:"stopPrice,omitempty"`
	PegDifference float64 `json:"pegDifference,omitempty"`
	TimeInForce   string  `json:"timeInForce,omitempty"`
	Text          string  `json:"text,omitempty"`
}

// Fill is a fill entity (GET /fill/list).
type Fill struct {
	ID         int64     `json:"id"`
	OrderID    int64     `json:"orderId"`
	ContractID int64     `json:"contractId"`
	Timestamp  string    `json:"timestamp,omitempty"`
	TradeDate  TradeDate `json:"tradeDate"`
	Action     string    `json:"action"`
	Qty        int       `json:"qty"`
	Price      float64   `json:"price"`
	Active     bool      `json:"active"`
}

// FillFee is the fees of one fill (its ID is the fill's): the broker's
// fillFee entity. Total adds them up.
type FillFee struct {
	ID           int64   `json:"id"`
	Commission   float64 `json:"commission,omitempty"`
	ClearingFee  float64 `json:"clearingFee,omitempty"`
	ExchangeFee  float64 `json:"exchangeFee,omitempty"`
	NFAFee       float64 `json:"nfaFee,omitempty"`
	BrokerageFee float64 `json:"brokerageFee,omitempty"`
}

// Total is the sum of the fill's fees.
func (f FillFee) Total() float64 {
	return f.Commission + f.ClearingFee + f.ExchangeFee + f.NFAFee + f.BrokerageFee
}

// Contract is a contract entity (GET /contract/item?id=N, GET
// /contract/find?name=ESZ6). Name is the broker's symbol: root, month
// code, one-digit year.
type Contract struct {
	ID                 int64  `json:"id"`
	Name               string `json:"name"`
	ContractMaturityID int64  `json:"contractMaturityId,omitempty"`
}

// PlaceOrderRequest is the body of POST /order/placeorder. Price is the
// limit price, StopPrice the stop price; both are left out when zero.
//
// The trailing types (OrderTypeTrailingStop, OrderTypeTrailingStopLimit)
// take PegDifference, the trail: the stop's signed offset from the market
// (stop − market), negative for a Sell (the stop below the market),
// positive for a Buy, as the broker signs its stop-loss offsets; StopPrice
// is the starting stop, and a TrailingStopLimit's Price its starting
// limit, which moves with the stop. PegDifference is left out when zero.
type PlaceOrderRequest struct {
	AccountSpec   string  `json:"accountSpec"`
	AccountID     int64   `json:"accountId"`
	Action        string  `json:"action"`
	Symbol        string  `json:"symbol"`
	OrderQty      int     `json:"orderQty"`
	OrderType     string  `json:"orderType"`
	Price         float64 `json:"price,omitempty"`
	StopPrice     float64 `json:"stopPrice,omitempty"`
	PegDifference float64 `json:"pegDifference,omitempty"`
	TimeInForce   string  `json:"timeInForce,omitempty"`
	IsAutomated   bool    `json:"isAutomated"`
	Text          string  `json:"text,omitempty"`
	// ClOrdID is the client's id of the order, which the broker echoes on
	// the command entity of the placement (command.clOrdId).
	ClOrdID string `json:"clOrdId,omitempty"`
}

// OtherOrder is the second order of an OCO pair (PlaceOCORequest.Other).
type OtherOrder struct {
	Action        string  `json:"action"`
	OrderType     string  `json:"orderType"`
	Price         float64 `json:"price,omitempty"`
	StopPrice     float64 `json:"stopPrice,omitempty"`
	PegDifference float64 `json:"pegDifference,omitempty"`
	TimeInForce   string  `json:"timeInForce,omitempty"`
	Text          string  `json:"text,omitempty"`
	ClOrdID       string  `json:"clOrdId,omitempty"`
}

// PegDifference is the broker's trail of a trailing order: distance
// (above zero) signed for its action, negative for a Sell, positive for a
// Buy.
func PegDifference(action string, distance float64) float64 {
	if action == ActionSell {
		return -distance
	}
	return distance
}

// PlaceOCORequest is the body of POST /order/placeoco: two orders placed
// together, each cancelling the other when it fills. The other order has
// the first one's account, symbol and quantity.
type PlaceOCORequest struct {
	PlaceOrderRequest
	Other OtherOrder `json:"other"`
}

// PlaceOrderResponse answers /order/placeorder and
// /order/liquidateposition: OrderID, or FailureReason (one of the
// FailureReasons) with FailureText. ErrorText is set when the broker
// refused the request itself (no permission, malformed).
type PlaceOrderResponse struct {
	OrderID       int64  `json:"orderId,omitempty"`
	FailureReason string `json:"failureReason,omitempty"`
	FailureText   string `json:"failureText,omitempty"`
	ErrorText     string `json:"errorText,omitempty"`
}

// PlaceOCOResponse answers /order/placeoco: OcoID is the other order's id.
type PlaceOCOResponse struct {
	OrderID       int64  `json:"orderId,omitempty"`
	OcoID         int64  `json:"ocoId,omitempty"`
	FailureReason string `json:"failureReason,omitempty"`
	FailureText   string `json:"failureText,omitempty"`
	ErrorText     string `json:"errorText,omitempty"`
}

// PlaceOSORequest is the body of POST /order/placeoso ("order sends
// order"): an entry order and the one or two orders it sends once it
// fills. Bracket1 and Bracket2 take the entry's account, symbol and
// quantity; with both, they are an OCO pair. IsAutomated (of the
// embedded entry) must be true for an order no human placed.
type PlaceOSORequest struct {
	PlaceOrderRequest
	Bracket1 *OtherOrder `json:"bracket1,omitempty"`
	Bracket2 *OtherOrder `json:"bracket2,omitempty"`
}

// PlaceOSOResponse answers /order/placeoso: the entry's id (OrderID) and
// its brackets' (OSO1ID, OSO2ID), or FailureReason with FailureText.
type PlaceOSOResponse struct {
	OrderID       int64  `json:"orderId,omitempty"`
	OSO1ID        int64  `json:"oso1Id,omitempty"`
	OSO2ID        int64  `json:"oso2Id,omitempty"`
	FailureReason string `json:"failureReason,omitempty"`
	FailureText   string `json:"failureText,omitempty"`
	ErrorText     string `json:"errorText,omitempty"`
}

// CancelOrderRequest is the body of POST /order/cancelorder.
type CancelOrderRequest struct {
	OrderID     int64 `json:"orderId"`
	IsAutomated bool  `json:"isAutomated"`
}

// ModifyOrderRequest is the body of POST /order/modifyorder: the order's
// full new terms.
type ModifyOrderRequest struct {
	OrderID       int64   `json:"orderId"`
	OrderQty      int     `json:"orderQty"`
	OrderType     string  `json:"orderType"`
	Price         float64 `json:"price,omitempty"`
	StopPrice     float64 `json:"stopPrice,omitempty"`
	PegDifference float64 `json:"pegDifference,omitempty"`
	TimeInForce   string  `json:"timeInForce,omitempty"`
	IsAutomated   bool    `json:"isAutomated"`
}

// CommandResponse answers /order/cancelorder and /order/modifyorder.
// FailureReason "Success" (a documented value) is no failure: Failed
// tells.
type CommandResponse struct {
	CommandID     int64  `json:"commandId,omitempty"`
	FailureReason string `json:"failureReason,omitempty"`
	FailureText   string `json:"failureText,omitempty"`
	ErrorText     string `json:"errorText,omitempty"`
}

// Failed reports whether the answer refuses the command: an errorText,
// or a failureReason other than "Success".
func (r CommandResponse) Failed() bool {
	return r.ErrorText != "" || (r.FailureReason != "" && r.FailureReason != ReasonSuccess)
}

// ReasonSuccess is the failureReason of a request the broker accepted.
const ReasonSuccess = "Success"

// LiquidatePositionRequest is the body of POST /order/liquidateposition:
// cancel the contract's working orders and close the position at market.
type LiquidatePositionRequest struct {
	AccountID   int64 `json:"accountId"`
	ContractID  int64 `json:"contractId"`
	Admin       bool  `json:"admin"`
	IsAutomated bool  `json:"isAutomated"`
}

// SyncRequest is the body of the user/syncrequest websocket request: it
// answers the users' whole state (SyncResponse) and subscribes the socket
// to props events about it. The partner documentation makes
// splitResponses mandatory (true) for vendors and says not to send users
// with entityTypes, which must be given (its default is none).
type SyncRequest struct {
	Users          []int64  `json:"users,omitempty"`
	SplitResponses bool     `json:"splitResponses,omitempty"`
	EntityTypes    []string `json:"entityTypes,omitempty"`
}

// Entity types of props events and of SyncRequest.EntityTypes.
const (
	EntityAccount      = "account"
	EntityCashBalance  = "cashBalance"
	EntityContract     = "contract"
	EntityFill         = "fill"
	EntityFillFee      = "fillFee"
	EntityOrder        = "order"
	EntityOrderVersion = "orderVersion"
	EntityPosition     = "position"
	EntityUser         = "user"
	// EntityCommand is a request about an order (New, Modify, Cancel);
	// EntityCommandReport is the broker's verdict on one, which may
	// reject it after the request was answered.
	EntityCommand       = "command"
	EntityCommandReport = "commandReport"
)

// SyncEntityTypes are the entity types a client following orders,
// positions, fills and balances asks user/syncrequest for.
var SyncEntityTypes = []string{EntityUser, EntityAccount, EntityCashBalance, EntityContract,
	EntityFill, EntityFillFee, EntityOrder, EntityOrderVersion, EntityPosition, EntityCommand, EntityCommandReport}

// SyncResponse is the answer of user/syncrequest: every entity of the
// users, as the lists of the REST calls return them.
type SyncResponse struct {
	Users         []User         `json:"users"`
	Accounts      []Account      `json:"accounts"`
	CashBalances  []CashBalance  `json:"cashBalances"`
	Contracts     []Contract     `json:"contracts"`
	Positions     []Position     `json:"positions"`
	Orders        []Order        `json:"orders"`
	OrderVersions []OrderVersion `json:"orderVersions"`
	Fills         []Fill         `json:"fills"`
	// FillFees is not among the documented fields of the answer: a
	// client reads the fees with GET /fillFee/list; it is applied when a
	// server sends it.
	FillFees       []FillFee       `json:"fillFees,omitempty"`
	Commands       []Command       `json:"commands,omitempty"`
	CommandReports []CommandReport `json:"commandReports,omitempty"`
}

// Command is a command entity: one request about an order.
type Command struct {
	ID            int64  `json:"id"`
	OrderID       int64  `json:"orderId"`
	Timestamp     string `json:"timestamp,omitempty"`
	ClOrdID       string `json:"clOrdId,omitempty"`
	CommandType   string `json:"commandType"`
	CommandStatus string `json:"commandStatus"`
	IsAutomated   bool   `json:"isAutomated,omitempty"`
}

// Command types (Command.CommandType).
const (
	CommandNew    = "New"
	CommandModify = "Modify"
	CommandCancel = "Cancel"
)

// Command statuses (Command.CommandStatus, CommandReport.CommandStatus).
const (
	CommandRiskRejected      = "RiskRejected"
	CommandExecutionRejected = "ExecutionRejected"
	CommandAtExecution       = "AtExecution"
)

// CommandReport is a commandReport entity: the broker's verdict on a
// command. RejectReason is one of FailureReasons when the command was
// rejected.
type CommandReport struct {
	ID            int64  `json:"id"`
	CommandID     int64  `json:"commandId"`
	Timestamp     string `json:"timestamp,omitempty"`
	CommandStatus string `json:"commandStatus"`
	RejectReason  string `json:"rejectReason,omitempty"`
	OrdStatus     string `json:"ordStatus,omitempty"`
}

// Rejected reports whether the report rejects its command.
func (r CommandReport) Rejected() bool {
	return r.CommandStatus == CommandRiskRejected || r.CommandStatus == CommandExecutionRejected
}

// Event types of props events.
const (
	EventCreated = "Created"
	EventUpdated = "Updated"
	EventDeleted = "Deleted"
)

// Names of websocket events (Message.E).
const (
	EventProps = "props"
	EventMD    = "md"
	// EventShutdown is sent before the broker closes a socket on purpose.
	EventShutdown = "shutdown"
)

// PropsEvent is the data of a props event: one entity created, updated or
// deleted. Entity holds the entity's JSON; decode it by EntityType.
type PropsEvent struct {
	EntityType string          `json:"entityType"`
	EventType  string          `json:"eventType"`
	Entity     json.RawMessage `json:"entity"`
}

// SubscribeQuoteRequest is the body of md/subscribequote and
// md/unsubscribequote: Symbol is the contract's name ("ESZ6").
type SubscribeQuoteRequest struct {
	Symbol string `json:"symbol"`
}

// MDEvent is the data of an md event.
type MDEvent struct {
	Quotes []Quote `json:"quotes"`
}

// Quote entries (Quote.Entries keys).
const (
	EntryBid              = "Bid"
	EntryOffer            = "Offer"
	EntryTrade            = "Trade"
	EntryHighPrice        = "HighPrice"
	EntryLowPrice         = "LowPrice"
	EntryOpeningPrice     = "OpeningPrice"
	EntrySettlementPrice  = "SettlementPrice"
	EntryTotalTradeVolume = "TotalTradeVolume"
)

// Quote is one contract's market in an md event. Entries are keyed by the
// Entry* names; an entry absent from an update did not change.
type Quote struct {
	Timestamp  string                `json:"timestamp,omitempty"`
	ContractID int64                 `json:"contractId"`
	Entries    map[string]QuoteEntry `json:"entries"`
}

// QuoteEntry is a price and size of a quote; TotalTradeVolume has only a
// size.
type QuoteEntry struct {
	Price float64 `json:"price,omitempty"`
	Size  float64 `json:"size,omitempty"`
}

// TimeLayout is how the broker writes timestamps ("2026-11-18T15:00:00.123Z");
// ParseTime also accepts RFC 3339 without fractions.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// FormatTime writes t in TimeLayout, in UTC.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// ParseTime parses a broker timestamp; ok is false when s is empty or
// malformed.
func ParseTime(s string) (t time.Time, ok bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}
