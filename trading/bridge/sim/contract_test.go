package sim_test

import (
	"testing"

	"tradebridge/trading/bridge/bridgetest"
)

// TestContract runs the contract every bridge keeps on the simulator.
func TestContract(t *testing.T) { bridgetest.Run(t, bridgetest.Sim) }
