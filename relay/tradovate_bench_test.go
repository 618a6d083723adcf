package relay_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"tradebridge/relay"
	"tradebridge/trading/bridge/tradovate"
	"tradebridge/trading/bridge/tradovate/tradovatefake"
)

// BenchmarkBrokerCall measures the relay's own time on a call of the
// broker family against the fake Tradovate server: the whole HTTP call
// minus the time the fake spent answering it (tradovatefake.Server.Busy). It
// reports the median and the 99th percentile of that overhead per call:
//
//   - PlaceOrder: a market order (the admission, the dispatcher's journal
//     in the store, the operations, the REST call and the socket barrier
//     that waits for the order's events);
//   - ListPositions: a read, served from the platform's mirror of the
//     broker's state (no broker call).
func BenchmarkBrokerCall(b *testing.B) {
	// Pacers that never wait: the benchmark measures the relay, not the
	// login's 10 requests a second nor the node's address budget.
	s := newBrokerSystem(b, func(o *relay.Options) {
		o.Broker.Rate, o.Broker.Burst, o.Broker.PerHour = 1e6, 1e6, 1e9
		o.Broker.AddressBudget = tradovate.NewAddressBudget(tradovate.BudgetOptions{Rate: 1e6, Burst: 1e6})
	})
	tok := s.Users["alice"].APIToken
	if r := s.link(tok); r.Status != http.StatusOK {
		b.Fatalf("link: %s", r.Raw)
	}
	run := func(b *testing.B, call func(i int) response) {
		var overhead []time.Duration
		i := 0
		for b.Loop() {
			i++
			busy := s.fake.Busy()
			start := time.Now()
			r := call(i)
			took := time.Since(start)
			if r.Status != http.StatusOK {
				b.Fatalf("call %d: %d %s", i, r.Status, r.Raw)
			}
			overhead = append(overhead, took-(s.fake.Busy()-busy))
		}
		slices.Sort(overhead)
		b.ReportMetric(float64(overhead[len(overhead)/2].Microseconds()), "overhead-p50-µs")
		b.ReportMetric(float64(overhead[len(overhead)*99/100].Microseconds()), "overhead-p99-µs")
	}
	b.Run("PlaceOrder", func(b *testing.B) {
		run(b, func(i int) response {
			action := "Buy"
			if i%2 == 0 {
				action = "Sell" // back to flat
			}
			return s.DoAsync(http.MethodPost, "/v1/api/tv/accounts/Sim101/orders/place", tok, placeBody(action, 1), "Content-Type", jsonBody)
		})
	})
	b.Run("ListPositions", func(b *testing.B) {
		run(b, func(int) response {
			return s.DoAsync(http.MethodGet, "/v1/api/tv/accounts/Sim101/positions", tok, "")
		})
	})
}

var _ = tradovatefake.Start
