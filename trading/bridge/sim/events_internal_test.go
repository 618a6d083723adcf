package sim

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

func TestEmitAllocatesNothingPerReader(t *testing.T) {
	p, err := New(Options{Clock: NewManualClock(time.Date(2026, 10, 5, 14, 30, 0, 0, time.UTC))})
	require.NoError(t, err)
	defer p.Close()
	c, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 3 {
		p.Events(c)
	}
	ev := bridge.Event{Kind: bridge.EventQuote, Quote: &protocol.Quote{}}
	allocs := testing.AllocsPerRun(200, func() {
		p.mu.Lock()
		p.emit(ev)
		p.mu.Unlock()
	})
	require.Zero(t, allocs, "emit itself allocates nothing, whatever the readers")

	o := &order{rec: protocol.Order{OrderID: "x"}}
	allocs = testing.AllocsPerRun(200, func() {
		p.mu.Lock()
		p.emitOrder(o)
		p.mu.Unlock()
	})
	require.Equal(t, 1.0, allocs, "one copy of the record, shared by every reader")
}
