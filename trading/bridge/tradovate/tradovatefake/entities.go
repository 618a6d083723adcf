package tradovatefake

import (
	"sort"
	"strconv"
	"time"

	"tradebridge/futures"
	"tradebridge/protocol"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// The entities the fake answers with: package tradovatewire's types, which hold
// what a client reads, plus the fields the documentation marks required
// that a client ignores, so that the answers carry the documented keys
// (the shape test in shape_test.go holds them to testdata/).

// accountEntity is an account as /account/list and the syncrequest answer
// report it.
type accountEntity struct {
	tradovatewire.Account
	ClearingHouseID   int64  `json:"clearingHouseId"`
	RiskCategoryID    int64  `json:"riskCategoryId"`
	AutoLiqProfileID  int64  `json:"autoLiqProfileId"`
	MarginAccountType string `json:"marginAccountType"`
	LegalStatus       string `json:"legalStatus"`
	Timestamp         string `json:"timestamp"`
	Restricted        bool   `json:"restricted"`
	Closed            bool   `json:"closed"`
}

// userEntity is the login's user, in the syncrequest answer.
type userEntity struct {
	tradovatewire.User
	Timestamp    string `json:"timestamp"`
	Email        string `json:"email"`
	Status       string `json:"status"`
	Professional bool   `json:"professional"`
}

// cashBalanceEntity is an account's cash balance.
type cashBalanceEntity struct {
	tradovatewire.CashBalance
	AmountSOD float64 `json:"amountSOD"`
}

// positionEntity is an account's position in a contract for the day.
type positionEntity struct {
	tradovatewire.Position
	PrevPos int `json:"prevPos"`
}

// fillEntity is one fill.
type fillEntity struct {
	tradovatewire.Fill
	FinallyPaired int `json:"finallyPaired"`
}

// contractEntity is a contract.
type contractEntity struct {
	tradovatewire.Contract
	Timestamp string `json:"timestamp"`
}

// snapshotEntity answers /cashBalance/getcashbalancesnapshot with every
// documented figure, zero ones included.
type snapshotEntity struct {
	ErrorText         string  `json:"errorText,omitempty"`
	TotalCashValue    float64 `json:"totalCashValue"`
	TotalPnL          float64 `json:"totalPnL"`
	InitialMargin     float64 `json:"initialMargin"`
	MaintenanceMargin float64 `json:"maintenanceMargin"`
	NetLiq            float64 `json:"netLiq"`
	OpenPnL           float64 `json:"openPnL"`
	RealizedPnL       float64 `json:"realizedPnL"`
	WeekRealizedPnL   float64 `json:"weekRealizedPnL"`
}

// syncEntity is the answer of user/syncrequest.
type syncEntity struct {
	Users         []userEntity                 `json:"users"`
	Accounts      []accountEntity              `json:"accounts"`
	CashBalances  []cashBalanceEntity          `json:"cashBalances"`
	Contracts     []contractEntity             `json:"contracts"`
	Positions     []positionEntity             `json:"positions"`
	Orders        []tradovatewire.Order        `json:"orders"`
	OrderVersions []tradovatewire.OrderVersion `json:"orderVersions"`
	Fills         []fillEntity                 `json:"fills"`
	Commands      []tradovatewire.Command      `json:"commands,omitempty"`
}

// First ids of each kind of entity, so that an id tells its kind in logs
// and tests.
const (
	firstAccountID  = 800_001
	firstContractID = 3_000_001
	firstMaturityID = 4_000_001
	firstOrderID    = 5_000_001
	firstVersionID  = 6_000_001
	firstFillID     = 7_000_001
	firstPositionID = 8_000_001
	firstCashID     = 9_000_001
	firstCommandID  = 10_000_001
)

// Fixed values of the entities the simulator has no notion of.
const (
	accountType       = "Customer"
	marginAccountType = "Speculator"
	legalStatus       = "Individual"
	userStatus        = "Active"
	currencyUSD       = 1
)

// acctState is one of the simulator's accounts.
type acctState struct {
	id   int64
	name string
	cash *cashState
}

// cashState is an account's cash balance as last reported.
type cashState struct {
	id                             int64
	amount, realized, weekRealized float64
	at                             time.Time
}

// contractState is a contract the fake has named: the simulator's name
// ("ES 12-26") and the broker's ("ESZ6").
type contractState struct {
	id, maturityID int64
	simName        string
	tradovateName  string
}

// orderState is an order the fake knows: its id on both sides, what the
// broker's entities say of it, and its versions, oldest first.
type orderState struct {
	id       int64
	simID    string
	acct     *acctState
	contract *contractState
	action   string
	status   string
	ocoID    int64
	created  time.Time
	versions []tradovatewire.OrderVersion
	// trail is set for a trailing order (see trailState).
	trail *trailState
	// parent is the entry that sent this order (placeoso); oso are the
	// orders an entry sends once it is filled, until it sends them.
	parent int64
	oso    []osoLeg
	// clOrdID is the clOrdId of the order's placement.
	clOrdID string
}

// posKey names a position row: an account and a contract.
type posKey struct{ acct, contract int64 }

// posState is a position row: the day's buys and sells of an account in a
// contract, and the net position.
type posState struct {
	id       int64
	acct     *acctState
	contract *contractState
	posFigures
	at   time.Time
	sent bool       // reported in a props event at least once
	last posFigures // the figures last reported
}

// posFigures are the figures of a position row.
type posFigures struct {
	netPos                 int
	netPrice               float64
	bought, sold           int
	boughtValue, soldValue float64
}

// state is what the fake knows of the simulator in the broker's terms.
// The loop goroutine owns it.
type state struct {
	started time.Time // the auth clock when the fake started: entity timestamps

	accounts   []*acctState
	acctByName map[string]*acctState
	acctByID   map[int64]*acctState

	contractBySim           map[string]*contractState
	contractByTradovateName map[string]*contractState
	contractByID            map[int64]*contractState

	orderBySim map[string]*orderState
	orderByID  map[int64]*orderState

	fillBySim map[string]int64
	// busted are the fills BustFill made inactive.
	busted map[int64]bool

	positions map[posKey]*posState
	// oldRows are position rows of older trade dates (AddPositionRow).
	oldRows []positionEntity

	// quoteRefs counts, per contract id, what follows its quotes: the
	// market-data sockets and the trailing orders (follow).
	quoteRefs map[int64]int

	// trailing are the working trailing orders, by id.
	trailing map[int64]*orderState

	nextContract, nextOrder, nextVersion, nextFill, nextPosition, nextCash, nextCommand int64

	// commands are the placements' command entities (placementCommand).
	commands []tradovatewire.Command

	// last is the latest instant of the simulator the fake saw (an order,
	// a fill or a quote): the time of entities that carry none.
	last time.Time
}

func newState(started time.Time) *state {
	return &state{
		started:                 started,
		acctByName:              make(map[string]*acctState),
		acctByID:                make(map[int64]*acctState),
		contractBySim:           make(map[string]*contractState),
		contractByTradovateName: make(map[string]*contractState),
		contractByID:            make(map[int64]*contractState),
		orderBySim:              make(map[string]*orderState),
		orderByID:               make(map[int64]*orderState),
		fillBySim:               make(map[string]int64),
		busted:                  make(map[int64]bool),
		positions:               make(map[posKey]*posState),
		quoteRefs:               make(map[int64]int),
		trailing:                make(map[int64]*orderState),
		nextContract:            firstContractID,
		nextOrder:               firstOrderID,
		nextVersion:             firstVersionID,
		nextFill:                firstFillID,
		nextPosition:            firstPositionID,
		nextCash:                firstCashID,
		nextCommand:             firstCommandID,
	}
}

// addAccount records one of the simulator's accounts, in order.
func (st *state) addAccount(name string) *acctState {
	a := &acctState{id: firstAccountID + int64(len(st.accounts)), name: name}
	a.cash = &cashState{id: st.nextCash}
	st.nextCash++
	st.accounts = append(st.accounts, a)
	st.acctByName[name] = a
	st.acctByID[a.id] = a
	return a
}

// see moves st.last forward to t.
func (st *state) see(t time.Time) {
	if t.After(st.last) {
		st.last = t
	}
}

// now is the time of entities that carry none of their own.
func (st *state) now() time.Time {
	if st.last.IsZero() {
		return st.started
	}
	return st.last
}

// tradovateName is the broker's name of a simulator contract: "ES 12-26" is
// "ESZ6" (root, month code, the year's last digit). ok is false for a
// name that is no contract.
func tradovateName(simName string) (string, bool) {
	in, err := protocol.ParseInstrument(simName)
	if err != nil || in.Form != protocol.InstrumentContract {
		return "", false
	}
	return in.Root + string(protocol.MonthCode(in.Month)) + strconv.Itoa(in.Year%10), true
}

// contract returns the contract of a simulator name, naming it on first
// use; created reports that it is new. ok is false for a name that is no
// contract.
func (st *state) contract(simName string) (c *contractState, created, ok bool) {
	if c := st.contractBySim[simName]; c != nil {
		return c, false, true
	}
	name, ok := tradovateName(simName)
	if !ok {
		return nil, false, false
	}
	c = &contractState{id: st.nextContract, maturityID: firstMaturityID + (st.nextContract - firstContractID),
		simName: simName, tradovateName: name}
	st.nextContract++
	st.contractBySim[simName] = c
	st.contractByTradovateName[name] = c
	st.contractByID[c.id] = c
	return c, true, true
}

func (c *contractState) entity(ts time.Time) contractEntity {
	return contractEntity{
		Contract:  tradovatewire.Contract{ID: c.id, Name: c.tradovateName, ContractMaturityID: c.maturityID},
		Timestamp: tradovatewire.FormatTime(ts),
	}
}

func (a *acctState) entity(userID int64, ts time.Time) accountEntity {
	return accountEntity{
		Account:           tradovatewire.Account{ID: a.id, Name: a.name, UserID: userID, AccountType: accountType, Active: true},
		ClearingHouseID:   1,
		RiskCategoryID:    1,
		AutoLiqProfileID:  1,
		MarginAccountType: marginAccountType,
		LegalStatus:       legalStatus,
		Timestamp:         tradovatewire.FormatTime(ts),
	}
}

// cashEntity returns an account's cash balance.
func (a *acctState) cashEntity() cashBalanceEntity {
	c := a.cash
	return cashBalanceEntity{
		CashBalance: tradovatewire.CashBalance{
			ID:              c.id,
			AccountID:       a.id,
			Timestamp:       tradovatewire.FormatTime(c.at),
			TradeDate:       tradeDate(c.at),
			CurrencyID:      currencyUSD,
			Amount:          c.amount,
			RealizedPnL:     c.realized,
			WeekRealizedPnL: c.weekRealized,
		},
		AmountSOD: roundCents(c.amount - c.realized),
	}
}

// setCash records an account's values; it reports whether the cash
// balance the broker shows changed.
func (a *acctState) setCash(rec protocol.Account, at time.Time) bool {
	c := a.cash
	if c.amount == rec.Item.CashValue && c.realized == rec.Item.RealizedProfitLoss &&
		c.weekRealized == rec.Item.WeeklyProfitLoss && !c.at.IsZero() {
		return false
	}
	c.amount, c.realized, c.weekRealized, c.at = rec.Item.CashValue, rec.Item.RealizedProfitLoss, rec.Item.WeeklyProfitLoss, at
	return true
}

// tradeDate is the trade date of the session in progress at t, or of the
// next one.
func tradeDate(t time.Time) tradovatewire.TradeDate {
	d := futures.SessionFrom(t).Day
	return tradovatewire.TradeDate{Year: d.Year(), Month: int(d.Month()), Day: d.Day()}
}

// newOrder registers an order the fake is about to place in the
// simulator, under an id of its choosing (also the simulator's id).
func (st *state) newOrder(a *acctState, c *contractState, action string) *orderState {
	o := &orderState{id: st.nextOrder, acct: a, contract: c, action: action, status: tradovatewire.StatusPendingNew}
	st.nextOrder++
	o.simID = strconv.FormatInt(o.id, 10)
	st.orderBySim[o.simID] = o
	st.orderByID[o.id] = o
	return o
}

// forget drops an order the simulator refused.
func (st *state) forget(o *orderState) {
	delete(st.orderBySim, o.simID)
	delete(st.orderByID, o.id)
}

// order returns the order of a simulator record, registering one the fake
// did not place (an order placed on the simulator directly, a strategy's)
// under a new id; created reports a new one. ok is false when the record's
// account or instrument is unknown.
func (st *state) order(rec protocol.Order) (o *orderState, created, ok bool) {
	if o := st.orderBySim[rec.OrderID]; o != nil {
		return o, len(o.versions) == 0, true
	}
	a := st.acctByName[rec.Account]
	c, _, cok := st.contract(rec.Instrument)
	if a == nil || !cok {
		return nil, false, false
	}
	o = &orderState{id: st.nextOrder, simID: rec.OrderID, acct: a, contract: c, action: rec.OrderAction,
		status: tradovatewire.StatusPendingNew}
	st.nextOrder++
	st.orderBySim[o.simID] = o
	st.orderByID[o.id] = o
	return o, true, true
}

// ordStatus is the broker's status of a simulator order state.
func ordStatus(s string) string {
	switch s {
	case protocol.OrderStateInitialized, protocol.OrderStateSubmitted:
		return tradovatewire.StatusPendingNew
	case protocol.OrderStateAccepted, protocol.OrderStateTriggerPending, protocol.OrderStateWorking,
		protocol.OrderStatePartFilled:
		return tradovatewire.StatusWorking
	case protocol.OrderStateChangePending, protocol.OrderStateChangeSubmitted:
		return tradovatewire.StatusPendingReplace
	case protocol.OrderStateCancelPending, protocol.OrderStateCancelSubmitted:
		return tradovatewire.StatusPendingCancel
	case protocol.OrderStateFilled:
		return tradovatewire.StatusFilled
	case protocol.OrderStateCancelled:
		return tradovatewire.StatusCanceled
	case protocol.OrderStateRejected:
		return tradovatewire.StatusRejected
	}
	return tradovatewire.StatusUnknown
}

// tradovateOrderType is the broker's order type of a simulator order type.
func tradovateOrderType(t string) string {
	switch t {
	case protocol.OrderTypeStopMarket:
		return tradovatewire.OrderTypeStop
	case protocol.OrderTypeStopLimit:
		return tradovatewire.OrderTypeStopLimit
	case protocol.OrderTypeLimit:
		return tradovatewire.OrderTypeLimit
	}
	return tradovatewire.OrderTypeMarket
}

// tradovateTIF is the broker's time in force of a simulator one.
func tradovateTIF(t string) string {
	if t == protocol.TimeInForceGtc {
		return tradovatewire.TIFGTC
	}
	return tradovatewire.TIFDay
}

// update applies a simulator record to o: it reports whether the order's
// status changed and whether a new version was made (its quantity, type,
// prices, time in force or text changed, or it has none yet).
func (st *state) update(o *orderState, rec protocol.Order) (statusChanged, versioned bool) {
	if o.created.IsZero() {
		o.created = time.UnixMilli(rec.Epoch).UTC()
	}
	if s := ordStatus(rec.OrderState); s != o.status {
		o.status, statusChanged = s, true
	}
	v := tradovatewire.OrderVersion{
		OrderID:     o.id,
		OrderQty:    rec.Quantity,
		OrderType:   tradovateOrderType(rec.OrderType),
		TimeInForce: tradovateTIF(rec.TimeInForce),
		Text:        rec.Name,
	}
	switch rec.OrderType {
	case protocol.OrderTypeLimit:
		v.Price = rec.LimitPrice
	case protocol.OrderTypeStopMarket:
		v.StopPrice = rec.StopPrice
	case protocol.OrderTypeStopLimit:
		v.Price, v.StopPrice = rec.LimitPrice, rec.StopPrice
	}
	if o.trail != nil {
		v.OrderType, v.PegDifference = o.trail.typ, o.trail.peg
	}
	if n := len(o.versions); n > 0 {
		cur := o.versions[n-1]
		v.ID = cur.ID
		if cur == v {
			return statusChanged, false
		}
	}
	v.ID = st.nextVersion
	st.nextVersion++
	o.versions = append(o.versions, v)
	return statusChanged, true
}

func (o *orderState) entity() tradovatewire.Order {
	return tradovatewire.Order{
		ID:         o.id,
		AccountID:  o.acct.id,
		ContractID: o.contract.id,
		Timestamp:  tradovatewire.FormatTime(o.created),
		Action:     o.action,
		OrdStatus:  o.status,
		OcoID:      o.ocoID,
		ParentID:   o.parent,
	}
}

// version returns the order's current version.
func (o *orderState) version() tradovatewire.OrderVersion {
	if len(o.versions) == 0 {
		return tradovatewire.OrderVersion{}
	}
	return o.versions[len(o.versions)-1]
}

// fill returns the fill of a simulator execution, naming it on first use.
// ok is false when its order is unknown.
func (st *state) fill(e protocol.Execution) (f fillEntity, created, ok bool) {
	o := st.orderBySim[e.OrderID]
	if o == nil {
		return fillEntity{}, false, false
	}
	id, seen := st.fillBySim[e.ID]
	if !seen {
		id = st.nextFill
		st.nextFill++
		st.fillBySim[e.ID] = id
	}
	at := time.UnixMilli(e.Epoch).UTC()
	action := tradovatewire.ActionBuy
	if e.MarketPosition == protocol.MarketPositionShort {
		action = tradovatewire.ActionSell
	}
	return fillEntity{Fill: tradovatewire.Fill{
		ID:         id,
		OrderID:    o.id,
		ContractID: o.contract.id,
		Timestamp:  tradovatewire.FormatTime(at),
		TradeDate:  tradeDate(at),
		Action:     action,
		Qty:        e.Quantity,
		Price:      e.Price,
		Active:     !st.busted[id],
	}}, !seen, true
}

// position returns the row of an account's position in a contract,
// opening it on first use.
func (st *state) position(a *acctState, c *contractState) *posState {
	k := posKey{a.id, c.id}
	if p := st.positions[k]; p != nil {
		return p
	}
	p := &posState{id: st.nextPosition, acct: a, contract: c}
	st.nextPosition++
	st.positions[k] = p
	return p
}

// sortedPositions returns every position row, by id.
func (st *state) sortedPositions() []*posState {
	out := make([]*posState, 0, len(st.positions))
	for _, p := range st.positions {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// addFill counts a fill in the day's buys or sells.
func (p *posState) addFill(f tradovatewire.Fill) {
	value := roundPrice(f.Price * float64(f.Qty))
	if f.Action == tradovatewire.ActionBuy {
		p.bought += f.Qty
		p.boughtValue = roundPrice(p.boughtValue + value)
	} else {
		p.sold += f.Qty
		p.soldValue = roundPrice(p.soldValue + value)
	}
}

// setNet records the net position of a simulator position record.
func (p *posState) setNet(rec protocol.Position) {
	switch rec.MarketPosition {
	case protocol.MarketPositionLong:
		p.netPos, p.netPrice = rec.Quantity, rec.AveragePrice
	case protocol.MarketPositionShort:
		p.netPos, p.netPrice = -rec.Quantity, rec.AveragePrice
	default:
		p.netPos, p.netPrice = 0, 0
	}
}

// changed reports whether the row differs from what was last reported.
func (p *posState) changed() bool { return !p.sent || p.posFigures != p.last }

// markSent records the row as reported.
func (p *posState) markSent() { p.sent, p.last = true, p.posFigures }

func (p *posState) entity() positionEntity {
	at := p.at
	return positionEntity{Position: tradovatewire.Position{
		ID:          p.id,
		AccountID:   p.acct.id,
		ContractID:  p.contract.id,
		Timestamp:   tradovatewire.FormatTime(at),
		TradeDate:   tradeDate(at),
		NetPos:      p.netPos,
		NetPrice:    p.netPrice,
		Bought:      p.bought,
		BoughtValue: p.boughtValue,
		Sold:        p.sold,
		SoldValue:   p.soldValue,
	}}
}

// roundCents rounds a dollar amount to cents.
func roundCents(x float64) float64 { return roundTo(x, 2) }

// roundPrice rounds a price (or price × quantity) to 8 decimals, so that
// sums of tick prices do not drift.
func roundPrice(x float64) float64 { return roundTo(x, 8) }

func roundTo(x float64, n int) float64 {
	p := 1.0
	for range n {
		p *= 10
	}
	if x < 0 {
		return -float64(int64(-x*p+0.5)) / p
	}
	return float64(int64(x*p+0.5)) / p
}
