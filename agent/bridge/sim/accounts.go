package sim

import (
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
	name          string
	positions     map[string]*position // by contract name; never flat
	orders        []*order             // in submission order
	executions    []protocol.Execution // in fill order
	grossRealized float64
	commission    float64
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
		realized := (price - p.avg) * float64(-qty) * p.c.root.tickValue
		p.qty += qty
		if p.qty == 0 {
			p.avg = 0
		}
		return cents(realized)
	default: // flip: close everything, open the rest at the fill price
		realized := (price - p.avg) * float64(p.qty) * p.c.root.tickValue
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
	return cents((float64(m.last) - p.avg) * float64(p.qty) * p.c.root.tickValue)
}

func (p *position) record(account string, m *market) protocol.Position {
	r := p.c.root
	return protocol.Position{
		Account:              account,
		Instrument:           p.c.name,
		InstrumentType:       instrumentType,
		MarketPosition:       p.marketPosition(),
		Quantity:             abs(p.qty),
		AveragePrice:         roundTo(p.avg*r.tickSize, r.decimals+8),
		MarketPrice:          r.price(m.last),
		UnrealizedProfitLoss: p.unrealized(m),
	}
}

// sortedPositions returns the account's positions by instrument name.
func (a *account) sortedPositions() []*position {
	ps := make([]*position, 0, len(a.positions))
	for _, p := range a.positions {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].c.name < ps[j].c.name })
	return ps
}

// accountRecord returns the account with its values at the current prices.
func (pl *Platform) accountRecord(a *account) protocol.Account {
	var unrealized, maintenance float64
	for _, p := range a.sortedPositions() {
		unrealized += p.unrealized(pl.markets[p.c.name])
		maintenance += float64(abs(p.qty)) * p.c.root.margin
	}
	realized := cents(a.grossRealized - a.commission)
	cash := cents(pl.startingCash + realized)
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
			GrossRealizedProfitLoss: cents(a.grossRealized),
			Commission:              cents(a.commission),
			InitialMargin:           initial,
			MaintenanceMargin:       cents(maintenance),
			WeeklyProfitLoss:        realized,
		},
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
