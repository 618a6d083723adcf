package relay_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/bridge/sim"
)

// Refusals teach through the real relay and agent: a malformed
// instrument is invalid_instrument on HTTP and on the stream socket, an
// off-tick price names the tick size and the nearest valid prices, an
// unknown ATM template lists the platform's templates, written as they
// are named ("&" not \u0026), a streamPnl interval names the bound it
// crossed; nothing the caller typed comes back.
func TestErrorsTeachEndToEnd(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	ra := s.StartAgent("alice")
	tok := s.Users["alice"].APIToken
	require.NoError(t, ra.Sim.SetAtmTemplates(append(sim.DefaultAtmTemplates(), protocol.AtmTemplate{
		Name: "S&P <Scalp>", Quantity: 1, TimeInForce: protocol.TimeInForceGtc,
		Brackets: []protocol.AtmBracket{{Quantity: 1, StopLossTicks: 8, ProfitTargetTicks: 16}},
	})))
	const place = "/v1/api/accounts/Sim101/orders/place"
	order := func(fields string) string {
		return `{"action":"Buy","orderType":"Limit","quantity":1,"timeInForce":"Day",` + fields + `}`
	}
	for _, tc := range []struct {
		name, method, path, body string
		code, detail             string
		secret                   string
	}{
		{"malformed instrument in a body", "POST", place, order(`"instrument":"ES 13-26","limitPrice":5990`),
			"invalid_instrument", `instrument must be written as "ES 12-26" (root and contract month), "ES" (the front month) or "ESZ26" (month code)`, "13-26"},
		{"malformed instrument in a query", "GET", "/v1/api/market/quote?instrument=ES%2013-26", "",
			"invalid_instrument", `"ES 12-26"`, "13-26"},
		{"off-tick price", "POST", place, order(`"instrument":"ES","limitPrice":5990.1`),
			"invalid_argument", "limitPrice must be a multiple of the instrument's tick size, 0.25; the nearest valid values are 5990 and 5990.25", "5990.1"},
		{"unknown ATM template", "POST", place, order(`"instrument":"ES","limitPrice":5990,"strategy":"Moonshot"`),
			"atm_template_not_found", "the platform's templates (names match exactly): ATM 1 Target, ATM 2 Targets, ATM Trail, S&P <Scalp>", "Moonshot"},
	} {
		r := s.Do(tc.method, tc.path, tok, tc.body)
		require.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", tc.name, r.Raw)
		require.Equal(t, tc.code, r.Error, tc.name)
		require.Contains(t, r.Detail, tc.detail, tc.name)
		require.NotContains(t, string(r.Raw), tc.secret, tc.name)
		require.NotContains(t, string(r.Raw), `\u0026`, tc.name)
		require.NotContains(t, string(r.Raw), `\u003c`, tc.name)
	}
	require.Contains(t, string(s.Do("POST", place, tok, order(`"instrument":"ES","limitPrice":5990,"strategy":"Moonshot"`)).Raw),
		`S&P <Scalp>`, "the raw bytes hold & and < as written")

	ws := s.openStream(t, "alice")
	ws.send(`{"action":"subscribe","instruments":["ES 13-26"]}`)
	f := ws.next("error")
	require.Equal(t, "invalid_instrument", f["error"])
	require.NotContains(t, f["detail"], "13-26")
	ws.send(`{"action":"streamPnl","enabled":true,"interval":100}`)
	f = ws.next("error")
	require.Equal(t, "invalid_argument", f["error"])
	require.Equal(t, []any{map[string]any{"path": "interval", "code": "greater_than_equal", "limit": 250.0}}, f["fields"])
}
