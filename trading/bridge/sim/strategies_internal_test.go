package sim

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

func TestStrategiesAreBounded(t *testing.T) {
	p, err := New(Options{Clock: NewManualClock(monday)})
	require.NoError(t, err)
	defer p.Close()
	ctx := context.Background()
	a := p.byName["Sim101"]
	c, err := resolve("ES", monday)
	require.NoError(t, err)
	m := p.market(c, monday)
	for i := range maxStrategies {
		id := "old-" + strconv.Itoa(i)
		p.feed.strategies = append(p.feed.strategies, &strategy{acct: a, m: m, class: strategyClasses[0],
			rec: protocol.Strategy{ID: id, State: protocol.StrategyStateClosed},
			// Far in the future: the strategy never looks at its bars.
			next: monday.AddDate(1, 0, 0)})
	}
	req := bridge.StrategyRequest{Account: "Sim101", Class: StrategyMACrossOver, Instrument: "ES"}
	s, err := p.StartStrategy(ctx, req)
	require.NoError(t, err)
	ss, err := p.Strategies(ctx, "Sim101")
	require.NoError(t, err)
	require.Len(t, ss, maxStrategies)
	require.Equal(t, "old-1", ss[0].ID, "the oldest terminal strategy is forgotten")
	require.Equal(t, s.ID, ss[len(ss)-1].ID)

	for _, x := range p.feed.strategies {
		x.rec.State = protocol.StrategyStateEnabled
	}
	_, err = p.StartStrategy(ctx, req)
	require.ErrorIs(t, err, ErrBadStrategyRequest)
	require.Len(t, p.feed.strategies, maxStrategies)
}
