package tradecall_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/tradecall"
)

// endpoint returns the trading API's route of method and path.
func endpoint(t *testing.T, method, path string) *tradecall.Endpoint {
	t.Helper()
	for _, ep := range tradecall.Endpoints() {
		if ep.Method == method && ep.Path == path {
			return &ep
		}
	}
	t.Fatalf("no route %s %s", method, path)
	return nil
}

// A name outside the instrument grammar is invalid_instrument on every
// door the arguments come through (an HTTP body, an HTTP query, a socket
// rpc's or an MCP tool's args), as the agent answers a name it cannot
// resolve; a value that is no name at all stays invalid_argument. The
// detail gives the accepted forms, never the name sent.
func TestMalformedInstrumentIsInvalidInstrument(t *testing.T) {
	t.Parallel()
	place := endpoint(t, http.MethodPost, "/v1/api/accounts/{account}/orders/place")
	quote := endpoint(t, http.MethodGet, "/v1/api/market/quote")
	const forms = `instrument must be written as "ES 12-26" (root and contract month), "ES" (the front month) or "ESZ26" (month code)`
	body := func(instrument string) string {
		return `{"action":"Buy","instrument":` + instrument + `,"orderType":"Market","quantity":1,"timeInForce":"Day"}`
	}
	viaBody := func(instrument string) *httpapi.Error {
		r := httptest.NewRequest(http.MethodPost, "/v1/api/accounts/Sim101/orders/place", strings.NewReader(body(instrument)))
		r.Header.Set("Content-Type", "application/json")
		r.SetPathValue("account", "Sim101")
		_, e := tradecall.ParseHTTP(httptest.NewRecorder(), r, place)
		return e
	}
	viaQuery := func(instrument string) *httpapi.Error {
		var s string
		if json.Unmarshal([]byte(instrument), &s) != nil {
			s = instrument
		}
		r := httptest.NewRequest(http.MethodGet, "/v1/api/market/quote?instrument="+url.QueryEscape(s), nil)
		_, e := tradecall.ParseHTTP(httptest.NewRecorder(), r, quote)
		return e
	}
	viaSocket := func(instrument string) *httpapi.Error {
		_, e := tradecall.PrepareSocketCall("PlaceOrder", json.RawMessage(`{"account":"Sim101",`+body(instrument)[1:]))
		return e
	}
	viaTool := func(instrument string) *httpapi.Error {
		_, e := tradecall.ParseArgs(place, json.RawMessage(`{"account":"Sim101",`+body(instrument)[1:]))
		return e
	}
	for _, door := range []struct {
		name  string
		parse func(string) *httpapi.Error
	}{
		{"body", viaBody}, {"query", viaQuery}, {"socket", viaSocket}, {"tool", viaTool},
	} {
		for _, tc := range []struct {
			instrument, code, detail string
		}{
			{`"ES 13-26"`, errcode.InvalidInstrument, forms},
			{`"ES; DROP"`, errcode.InvalidInstrument, forms},
			{`"ES 00-26"`, errcode.InvalidInstrument, forms},
			{`"` + strings.Repeat("Q", 70) + `"`, errcode.InvalidInstrument, forms},
			{`true`, errcode.InvalidArgument, ""},
		} {
			if door.name == "query" && tc.code == errcode.InvalidArgument {
				continue // a query's value is always text
			}
			t.Run(door.name+" "+tc.instrument, func(t *testing.T) {
				t.Parallel()
				e := door.parse(tc.instrument)
				require.NotNil(t, e)
				require.Equal(t, http.StatusBadRequest, e.Status)
				require.Equal(t, tc.code, e.Code, e.Detail)
				require.Contains(t, e.Detail, tc.detail)
				for _, secret := range []string{"13-26", "00-26", "DROP", "QQQQ"} {
					require.NotContains(t, e.Detail, secret)
				}
			})
		}
	}
}
