package ninjatrader_test

import (
	"testing"

	"tradebridge/trading/bridge/bridgetest"
	"tradebridge/trading/bridge/ninjatrader/ntfake"
)

// The bridge keeps the contract of every bridge.Platform, over the fake
// add-on (which trades on the simulator).
func TestContract(t *testing.T) { bridgetest.Run(t, ntfake.Factory) }
