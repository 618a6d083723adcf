package bridgetest_test

import (
	"testing"

	"go.uber.org/goleak"

	"tradebridge/agent/bridge/bridgetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The suite passes on a platform that sees the market's moves only when
// settled: it settles before every read that follows a move.
func TestContractOnLaggingPlatform(t *testing.T) { bridgetest.Run(t, bridgetest.Lagging) }
