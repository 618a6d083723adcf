package tradovate_test

import (
	"testing"

	"tradebridge/trading/bridge/bridgetest"
	"tradebridge/trading/bridge/tradovate/tradovatetest"
)

// The Tradovate platform keeps the bridge.Platform contract over a fake
// Tradovate, lacking strategies, ATM templates, bars and OCO groups.
func TestContract(t *testing.T) {
	t.Parallel()
	bridgetest.Run(t, tradovatetest.Factory)
}
