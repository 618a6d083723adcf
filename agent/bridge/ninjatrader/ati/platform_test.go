package ati_test

import (
	"tradebridge/agent/bridge/ninjatrader"
	"tradebridge/agent/bridge/ninjatrader/ati"
)

// Files is the NinjaTrader bridge's ATI fallback.
var _ ninjatrader.ATI = (*ati.Files)(nil)
