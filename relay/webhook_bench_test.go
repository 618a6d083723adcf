package relay_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tradebridge/agent"
	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
)

// stampedSim is the simulator, noting when each order reaches it.
type stampedSim struct {
	*sim.Platform
	at atomic.Int64 // unix nanoseconds of the last SubmitOrder
}

func (p *stampedSim) SubmitOrder(ctx context.Context, req bridge.OrderRequest) (protocol.Order, error) {
	p.at.Store(time.Now().UnixNano())
	return p.Platform.SubmitOrder(ctx, req)
}

// BenchmarkWebhookAlert measures a TradingView alert from the moment its
// POST is sent to the moment its order is submitted at the simulator's
// bridge, through a real relay and agent in one process over loopback
// (p50-µs, p99-µs); answer-p50-µs is the whole round trip, answer
// included.
func BenchmarkWebhookAlert(b *testing.B) {
	s := newSystem(b)
	var stamped *stampedSim
	s.StartAgentOn("alice", "sim", func(o *agent.Options) {
		stamped = &stampedSim{Platform: o.Platform.(*sim.Platform)}
		o.Platform = stamped
	})
	tok := s.Users["alice"].APIToken
	r := s.Do("GET", "/v1/api/webhook", tok, "")
	if r.Status != http.StatusOK {
		b.Fatalf("webhook: %d %s", r.Status, r.Raw)
	}
	var in struct{ URL, Key string }
	if err := json.Unmarshal(r.Data, &in); err != nil {
		b.Fatal(err)
	}
	url := s.Base + in.URL
	n := 0
	send := func() (toBridge, total time.Duration) {
		n++
		action := "BUY"
		if n%2 == 0 {
			action = "SELL"
		}
		// Each text differs (order_id), so that none is a duplicate.
		body := "key=" + in.Key + ";command=PLACE;account=Sim101;instrument=ES 12-26;action=" + action +
			";qty=1;order_type=MARKET;tif=DAY;order_id=bench" + strconv.Itoa(n)
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "text/plain")
		start := time.Now()
		resp, err := s.Client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		total = time.Since(start)
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		return time.Duration(stamped.at.Load() - start.UnixNano()), total
	}
	for range 100 { // warm up connections and code paths
		send()
	}
	bridgeLat := make([]time.Duration, 0, b.N)
	answer := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		d, t := send()
		bridgeLat = append(bridgeLat, d)
		answer = append(answer, t)
	}
	b.StopTimer()
	b.ReportMetric(float64(pct(bridgeLat, 50).Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(pct(bridgeLat, 99).Nanoseconds())/1e3, "p99-µs")
	b.ReportMetric(float64(pct(answer, 50).Nanoseconds())/1e3, "answer-p50-µs")
}
