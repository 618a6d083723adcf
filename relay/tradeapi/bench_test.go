package tradeapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkRelayOnly measures the relay's own work per trading call (auth,
// budget, parameters, idempotency bookkeeping, the envelope) with the agent
// answering at once, over loopback HTTP.
func BenchmarkRelayOnly(b *testing.B) {
	for _, tc := range []struct{ name, method, path, body string }{
		{"ListPositions", "GET", "/v1/api/accounts/Sim101/positions", ""},
		{"PlaceOrder", "POST", "/v1/api/accounts/Sim101/orders/place", `{"action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day"}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			e := newEnv(b)
			defer e.srv.Close()
			client := e.srv.Client()
			for b.Loop() {
				var rd io.Reader
				if tc.body != "" {
					rd = strings.NewReader(tc.body)
				}
				req, _ := http.NewRequest(tc.method, e.srv.URL+tc.path, rd)
				req.Header.Set("Authorization", "Bearer tb_api_pro")
				if tc.body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
