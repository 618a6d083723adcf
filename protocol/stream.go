package protocol

// SubscriptionsArgs are the arguments of FnSetSubscriptions: the complete
// set of instruments to stream, in any form the platform resolves.
type SubscriptionsArgs struct {
	Instruments []string `json:"instruments"`
}

// SubscriptionsResult reports the subscribed set, resolved to contract
// names, and the requested instruments the platform does not know.
// Resolved maps each known requested name, as it was sent, to its
// contract ("ES" → "ES 12-26"); quotes carry contract names.
type SubscriptionsResult struct {
	Instruments []string          `json:"instruments"`
	Unknown     []string          `json:"unknown,omitempty"`
	Resolved    map[string]string `json:"resolved,omitempty"`
}

// PnlSnapshot is the result of FnGetPnl: every account's P&L at one
// instant (Epoch, milliseconds).
type PnlSnapshot struct {
	Epoch    int64        `json:"epoch"`
	Accounts []PnlAccount `json:"accounts"`
}

// PnlAccount is one account's P&L and open positions, the shape of the
// stream API's pnlUpdate frames.
type PnlAccount struct {
	Account              string     `json:"account"`
	RealizedProfitLoss   float64    `json:"realizedProfitLoss"`
	UnrealizedProfitLoss float64    `json:"unrealizedProfitLoss"`
	TotalProfitLoss      float64    `json:"totalProfitLoss"`
	NetLiquidation       float64    `json:"netLiquidation"`
	CashValue            float64    `json:"cashValue"`
	Positions            []Position `json:"positions"`
}
