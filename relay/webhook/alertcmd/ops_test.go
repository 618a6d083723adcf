package alertcmd

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"tradebridge/protocol"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/engine"
	"tradebridge/trading/engine/enginetest"
	"tradebridge/trading/engine/exits"
	"tradebridge/trading/ops"
)

// refusedArgs are the codes that say the operations refused the
// arguments themselves: a planned call must never get one. Codes that
// depend on the account's state (no position, an unknown order, account
// or template, a position that does not match) are the alert's to meet.
var refusedArgs = []string{protocol.CodeInvalidArgument, protocol.CodeMissingFields, protocol.CodeInvalidInstrument,
	protocol.CodeNotSupported, protocol.CodeUnknownFunction}

// Every call the golden alerts plan is taken by the trading core's
// operations as it is: run on a simulator (with the exits engine the
// stacks have), none is refused for its arguments.
func TestGoldenCallsRunOnTheSimulator(t *testing.T) {
	t.Parallel()
	// Wednesday 18 November 2026, 10:00 in New York: the market is open
	// and ES 12-26 trades.
	at := time.Date(2026, 11, 18, 15, 0, 0, 0, time.UTC)
	for _, c := range alertCases {
		a, err := Parse([]byte(c.body), c.contentType)
		if err != nil {
			continue
		}
		calls, err := a.Calls()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(calls) == 0 {
			continue
		}
		m := enginetest.NewMarket(t, at, sim.Options{Seed: 1}, ops.Options{})
		eng, err := exits.New(exits.Options{Platform: m.Sim, Trader: m.Ops, Store: engine.NewMemStore(), Reporter: &enginetest.Reporter{},
			Now: m.Clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		m.Ops.SetEntryWatcher(eng)
		fns := m.Ops.Functions()
		for _, cl := range calls {
			h := fns[cl.Fn]
			if h == nil {
				t.Errorf("%s: the operations have no %s", c.name, cl.Fn)
				continue
			}
			_, err := h(context.Background(), cl.Args)
			var pe *protocol.Error
			if errors.As(err, &pe) {
				for _, code := range refusedArgs {
					if pe.Code == code {
						t.Errorf("%s: %s refused its arguments: %s: %s\nargs %s", c.name, cl.Fn, pe.Code, pe.Detail, cl.Args)
					}
				}
				continue
			}
			if err != nil && !strings.Contains(err.Error(), "market is closed") {
				t.Errorf("%s: %s: %v", c.name, cl.Fn, err)
			}
		}
	}
}
