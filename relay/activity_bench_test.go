package relay_test

import (
	"net/http"
	"testing"
	"time"

	"tradebridge/relay"
)

// BenchmarkPlaceOrderActivity measures PlaceOrder through the relay (HTTP,
// the tunnel, the agent on the simulator) with the activity log on and
// off, alternating the two relays call by call so that both see the same
// machine, and reports the ratio of their medians (p50-ratio: with/without; the
// target is at most 1.05): the log must not sit on the order path.
func BenchmarkPlaceOrderActivity(b *testing.B) {
	with := newSystem(b)
	with.StartAgent("alice")
	without := newSystemWith(b, func(o *relay.Options) { o.Activity.Disabled = true })
	without.StartAgent("alice")
	place := func(s *system) time.Duration {
		start := time.Now()
		r := s.Do(http.MethodPost, "/v1/api/accounts/Sim101/orders/place", s.Users["alice"].APIToken, marketBuy)
		d := time.Since(start)
		if r.Status != http.StatusOK {
			b.Fatalf("status %d: %s", r.Status, r.Raw)
		}
		return d
	}
	for range 50 { // warm both
		place(with)
		place(without)
	}
	var on, off []time.Duration
	b.ResetTimer()
	for b.Loop() {
		on = append(on, place(with))
		off = append(off, place(without))
	}
	b.StopTimer()
	reportLatency(b, "with-log", on)
	reportLatency(b, "without-log", off)
	b.ReportMetric(float64(pct(on, 50))/float64(pct(off, 50)), "p50-ratio")
}
