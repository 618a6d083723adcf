package ati_test

import (
	"tradebridge/trading/bridge/ninjatrader"
	"tradebridge/trading/bridge/ninjatrader/ati"
)

// Files is the NinjaTrader bridge's ATI fallback.
var _ ninjatrader.ATI = (*ati.Files)(nil)
