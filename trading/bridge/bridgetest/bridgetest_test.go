package bridgetest_test

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/bridgetest"
	"tradebridge/trading/bridge/sim"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The suite passes on a platform that sees the market's moves only when
// settled: it settles before every read that follows a move.
func TestContractOnLaggingPlatform(t *testing.T) { bridgetest.Run(t, bridgetest.Lagging) }

// lacking is the simulator without any capability a platform may lack,
// as a broker reached over its API is: no strategies, no ATM templates,
// no bars, and no OCO groups joined one order at a time.
type lacking struct{ bridge.Platform }

func notSupported(what string) error {
	return &bridge.NotSupportedError{What: what, Reason: "the platform has none"}
}

func (l *lacking) Strategies(context.Context, string) ([]protocol.Strategy, error) {
	return nil, notSupported("strategies")
}

func (l *lacking) StartStrategy(context.Context, bridge.StrategyRequest) (protocol.Strategy, error) {
	return protocol.Strategy{}, notSupported("strategies")
}

func (l *lacking) SetStrategyState(context.Context, string, string, bridge.StrategyAction) (protocol.Strategy, error) {
	return protocol.Strategy{}, notSupported("strategies")
}

func (l *lacking) AtmTemplates(context.Context) ([]protocol.AtmTemplate, error) {
	return []protocol.AtmTemplate{}, nil
}

func (l *lacking) Bars(context.Context, bridge.BarsRequest) (protocol.Bars, error) {
	return protocol.Bars{}, notSupported("bars")
}

func (l *lacking) SubmitOrder(ctx context.Context, req bridge.OrderRequest) (protocol.Order, error) {
	switch {
	case req.AtmTemplate != "":
		return protocol.Order{}, notSupported("ATM templates")
	case req.Oco != "":
		return protocol.Order{}, notSupported("OCO groups")
	}
	return l.Platform.SubmitOrder(ctx, req)
}

// The suite passes on a platform that lacks every capability and says so:
// each check that needs one asserts ErrNotSupported in its place.
func TestContractOnPlatformLackingEverything(t *testing.T) {
	bridgetest.Run(t, func(t testing.TB, opts sim.Options) bridgetest.Harness {
		h := bridgetest.Sim(t, opts)
		h.Platform = &lacking{Platform: h.Platform}
		h.Lacks = bridgetest.Capabilities
		return h
	})
}
