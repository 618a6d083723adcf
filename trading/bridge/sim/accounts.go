package sim

import (
	"slices"
	"sort"

	"tradebridge/protocol"
)

// Account record constants, in NinjaTrader's spellings.
const (
	connectionName   = "Simulated Data Feed"
	connectionStatus = "Connected"
	providerName     = "Simulator"
	denomination     = "UsDollar"
	accountStatus    = "Enabled"
	instrumentType   = "Future"
	// initialMarginRatio is initial margin over maintenance margin.
	initialMarginRatio = 1.1
)

// account is one simulated account.
type account struct {
	name      string
	positions map[string]*position // by contract name; never flat
	posList   []*position          // the same, by contract name
	// orders are the orders of the current trading session and those still
	// working, in submission order; executions the session's fills.
	orders     []*order
	executions []protocol.Execution
	// Realized P&L before commission, and commission: since the start, in
	// the current trading session, and in the current trading week.
	grossRealized, commission       float64
	sessionGross, sessionCommission float64
	weekGross, weekCommission       float64
	marks                           marks // session watermarks
	// unrealSent is the unrealized P&L of the last EventAccount sent, so
	// that a price move that changes it publishes the account again.
	unrealSent float64
}

// book adds a fill's realized P&L (before commission) and its commission.
func (a *account) book(realized, commission float64) {
	a.grossRealized += realized
	a.sessionGross += realized
	a.weekGross += realized
	a.commission += commission
	a.sessionCommission += commission
	a.weekCommission += commission
}

func newAccount(name string) *account {
	return &account{name: name, positions: make(map[string]*position)}
}

// position is an account's net holding of one contract.
type position struct {
	c   contract
	qty int     // signed: long > 0, short < 0
	avg float64 // average entry price, in ticks
}

// fill applies a fill of qty contracts (signed: a buy is positive) at n ticks
// and returns the realized P&L in dollars, before commission.
func (p *position) fill(qty int, n int64) float64 {
	price := float64(n)
	switch {
	case p.qty == 0 || (p.qty > 0) == (qty > 0): // open or add: weighted average
		held, added := float64(abs(p.qty)), float64(abs(qty))
		p.avg = (p.avg*held + price*added) / (held + added)
		p.qty += qty
		return 0
	case abs(qty) <= abs(p.qty): // reduce or close: the average stays
		realized := (price - p.avg) * float64(-qty) * p.c.Root.TickValue
		p.qty += qty
		if p.qty == 0 {
			p.avg = 0
		}
		return cents(realized)
	default: // flip: close everything, open the rest at the fill price
		realized := (price - p.avg) * float64(p.qty) * p.c.Root.TickValue
		p.qty += qty
		p.avg = price
		return cents(realized)
	}
}

// marketPosition spells the position's direction.
func (p *position) marketPosition() string {
	switch {
	case p.qty > 0:
		return protocol.MarketPositionLong
	case p.qty < 0:
		return protocol.MarketPositionShort
	}
	return protocol.MarketPositionFlat
}

// unrealized is the position's open P&L at the market's last price.
func (p *position) unrealized(m *market) float64 {
	return cents((float64(m.last) - p.avg) * float64(p.qty) * p.c.Root.TickValue)
}

// flatRecord is the position record of a contract the account no longer
// holds, as position events report it.
func flatRecord(account string, c contract, m *market) protocol.Position {
	return protocol.Position{
		Account:        account,
		Instrument:     c.Name,
		InstrumentType: instrumentType,
		MarketPosition: protocol.MarketPositionFlat,
		MarketPrice:    c.Root.Price(m.last),
	}
}

func (p *position) record(account string, m *market) protocol.Position {
	r := p.c.Root
	return protocol.Position{
		Account:              account,
		Instrument:           p.c.Name,
		InstrumentType:       instrumentType,
		MarketPosition:       p.marketPosition(),
		Quantity:             abs(p.qty),
		AveragePrice:         roundTo(p.avg*r.TickSize, r.Decimals+8),
		MarketPrice:          r.Price(m.last),
		UnrealizedProfitLoss: p.unrealized(m),
	}
}

// sortedPositions returns the account's positions by instrument name. The
// slice is the account's own: callers must not change it.
func (a *account) sortedPositions() []*position { return a.posList }

// positionFor returns the account's position in c, opening an empty one
// if it has none; a fill must follow.
func (a *account) positionFor(c contract) *position {
	if pos := a.positions[c.Name]; pos != nil {
		return pos
	}
	pos := &position{c: c}
	a.positions[c.Name] = pos
	i := sort.Search(len(a.posList), func(i int) bool { return a.posList[i].c.Name >= c.Name })
	a.posList = slices.Insert(a.posList, i, pos)
	return pos
}

// dropPosition forgets the account's position in c, which went flat.
func (a *account) dropPosition(c contract) {
	delete(a.positions, c.Name)
	if i := slices.IndexFunc(a.posList, func(p *position) bool { return p.c.Name == c.Name }); i >= 0 {
		a.posList = slices.Delete(a.posList, i, i+1)
	}
}

// accountRecord returns the account with its values at the current prices.
func (pl *Platform) accountRecord(a *account) protocol.Account {
	var unrealized, maintenance float64
	for _, p := range a.sortedPositions() {
		unrealized += p.unrealized(pl.markets[p.c.Name])
		maintenance += float64(abs(p.qty)) * walkOf(p.c).margin
	}
	cash := cents(pl.startingCash + cents(a.grossRealized-a.commission))
	realized := cents(a.sessionGross - a.sessionCommission)
	unrealized = cents(unrealized)
	netLiq := cents(cash + unrealized)
	initial := cents(maintenance * initialMarginRatio)
	return protocol.Account{
		Name:             a.name,
		DisplayName:      a.name,
		Provider:         providerName,
		Connection:       connectionName,
		ConnectionStatus: connectionStatus,
		Denomination:     denomination,
		Status:           accountStatus,
		Item: protocol.AccountItem{
			BuyingPower:             cents(netLiq - initial),
			CashValue:               cash,
			NetLiquidation:          netLiq,
			RealizedProfitLoss:      realized,
			UnrealizedProfitLoss:    unrealized,
			GrossRealizedProfitLoss: cents(a.sessionGross),
			Commission:              cents(a.sessionCommission),
			InitialMargin:           initial,
			MaintenanceMargin:       cents(maintenance),
			WeeklyProfitLoss:        cents(a.weekGross - a.weekCommission),
		},
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
