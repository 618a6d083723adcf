package tradeapi_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/tradeapi"
	"tradebridge/relay/tradecall"
)

// The broker family's order-placing routes take the trailing types and
// trailDistance (checked as the desktop routes check prices), and forward
// them to its Caller in the platform's spelling.
func TestBrokerPlaceTakesTrailingStops(t *testing.T) {
	t.Parallel()
	f := newFamilies(t, 1000)
	for _, tc := range []struct {
		name, path, body string
		fn               string
		want             map[string]any // forwarded arguments checked
	}{
		{"place", "/accounts/Demo1/orders/place",
			`{"action":"sell","instrument":"ES 12-26","orderType":"trailingstop","quantity":1,"timeInForce":"gtc","trailDistance":4}`,
			protocol.FnPlaceOrder, map[string]any{"orderType": "TrailingStop", "trailDistance": 4.0}},
		{"place with a starting stop", "/accounts/Demo1/orders/place",
			`{"action":"Sell","instrument":"ES","orderType":"TrailingStop","quantity":1,"timeInForce":"Day","trailDistance":2.5,"stopPrice":5990}`,
			protocol.FnPlaceOrder, map[string]any{"orderType": "TrailingStop", "trailDistance": 2.5, "stopPrice": 5990.0}},
		{"place a stop limit", "/accounts/Demo1/orders/place",
			`{"action":"Buy","instrument":"ES","orderType":"TRAILINGSTOPLIMIT","quantity":2,"timeInForce":"Day","trailDistance":1.5,"stopPrice":6010,"limitPrice":6011}`,
			protocol.FnPlaceOrder, map[string]any{"orderType": "TrailingStopLimit", "trailDistance": 1.5, "stopPrice": 6010.0, "limitPrice": 6011.0}},
		{"flatplace", "/accounts/Demo1/orders/flatplace",
			`{"action":"Sell","instrument":"ES","orderType":"TrailingStop","quantity":1,"trailDistance":3}`,
			protocol.FnFlatPlace, map[string]any{"orderType": "TrailingStop", "trailDistance": 3.0, "timeInForce": "Day"}},
		{"reverseposition", "/accounts/Demo1/positions/reverseposition",
			`{"action":"Sell","instrument":"ES","orderType":"TrailingStop","quantity":1,"timeInForce":"Gtc","trailDistance":3}`,
			protocol.FnReversePosition, map[string]any{"orderType": "TrailingStop", "trailDistance": 3.0}},
		{"a plain order as before", "/accounts/Demo1/orders/place",
			`{"action":"Buy","instrument":"ES","orderType":"Limit","quantity":1,"timeInForce":"Day","limitPrice":5990}`,
			protocol.FnPlaceOrder, map[string]any{"orderType": "Limit", "limitPrice": 5990.0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.broker.all())
			r := f.env.do("POST", "/v1/api/tv"+tc.path, "tb_api_pro", tc.body)
			require.Equal(t, http.StatusOK, r.Status, r.Raw)
			calls := f.broker.all()
			require.Len(t, calls, before+1)
			got := calls[before]
			require.Equal(t, tc.fn, got.Fn)
			for k, v := range tc.want {
				require.Equal(t, v, got.Args[k], k)
			}
		})
	}
}

// The broker family refuses a trailing order without what it needs, and a
// distance out of range, as the desktop routes refuse prices: 400 with the
// fields named and nothing called.
func TestBrokerTrailingStopsRefused(t *testing.T) {
	t.Parallel()
	f := newFamilies(t, 1000)
	for _, tc := range []struct {
		name, body string
		code       string
		fields     map[string]string // path → field code
	}{
		{"no distance", `{"action":"Sell","instrument":"ES","orderType":"TrailingStop","quantity":1,"timeInForce":"Day"}`,
			errcode.MissingRequiredFields, map[string]string{"trailDistance": errcode.FieldCodeRequired}},
		{"stop limit without anything", `{"action":"Sell","instrument":"ES","orderType":"TrailingStopLimit","quantity":1,"timeInForce":"Day"}`,
			errcode.MissingRequiredFields, map[string]string{"limitPrice": errcode.FieldCodeRequired,
				"stopPrice": errcode.FieldCodeRequired, "trailDistance": errcode.FieldCodeRequired}},
		{"zero distance", `{"action":"Sell","instrument":"ES","orderType":"TrailingStop","quantity":1,"timeInForce":"Day","trailDistance":0}`,
			errcode.InvalidArgument, map[string]string{"trailDistance": errcode.FieldCodeGreaterThan}},
		{"negative distance", `{"action":"Sell","instrument":"ES","orderType":"TrailingStop","quantity":1,"timeInForce":"Day","trailDistance":-4.75}`,
			errcode.InvalidArgument, map[string]string{"trailDistance": errcode.FieldCodeGreaterThan}},
		{"distance as text", `{"action":"Sell","instrument":"ES","orderType":"TrailingStop","quantity":1,"timeInForce":"Day","trailDistance":"4"}`,
			errcode.InvalidArgument, map[string]string{"trailDistance": errcode.FieldCodeWrongType}},
		{"an unknown type", `{"action":"Sell","instrument":"ES","orderType":"TrailingStopMarket","quantity":1,"timeInForce":"Day","trailDistance":4}`,
			errcode.InvalidArgument, map[string]string{"orderType": errcode.FieldCodeNotAllowed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.broker.all())
			r := f.env.do("POST", "/v1/api/tv/accounts/Demo1/orders/place", "tb_api_pro", tc.body)
			require.Equal(t, http.StatusBadRequest, r.Status, r.Raw)
			require.Equal(t, tc.code, r.Body["error"])
			require.NotContains(t, r.Raw, "4.75")
			require.NotContains(t, r.Raw, "TrailingStopMarket")
			got := map[string]string{}
			for _, fe := range fieldsOf(t, r.Raw) {
				got[fe["path"].(string)] = fe["code"].(string)
				if fe["code"] == errcode.FieldCodeNotAllowed {
					require.Equal(t, []any{"Market", "Limit", "StopMarket", "StopLimit", "TrailingStop", "TrailingStopLimit"}, fe["allowed"])
				}
			}
			require.Equal(t, tc.fields, got)
			require.Len(t, f.broker.all(), before, "nothing is called")
		})
	}
}

// The desktop routes are as they were: their orderType enum has no
// trailing type (400 not_allowed listing the four), and they take no
// trailDistance.
func TestDesktopRefusesTrailingStops(t *testing.T) {
	t.Parallel()
	f := newFamilies(t, 1000)
	for _, tc := range []struct {
		name, path, body string
		field, code      string
	}{
		{"place", "/v1/api/accounts/Sim101/orders/place",
			`{"action":"Sell","instrument":"ES","orderType":"TrailingStop","quantity":1,"timeInForce":"Day"}`,
			"orderType", errcode.FieldCodeNotAllowed},
		{"reverseposition", "/v1/api/accounts/Sim101/positions/reverseposition",
			`{"action":"Sell","instrument":"ES","orderType":"trailingStopLimit","quantity":1,"timeInForce":"Day","stopPrice":1,"limitPrice":1}`,
			"orderType", errcode.FieldCodeNotAllowed},
		{"flatplace with a distance", "/v1/api/accounts/Sim101/orders/flatplace",
			`{"action":"Sell","instrument":"ES","orderType":"StopMarket","stopPrice":5990,"quantity":1,"trailDistance":4}`,
			"trailDistance", errcode.FieldCodeUnknownField},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.env.do("POST", tc.path, "tb_api_pro", tc.body)
			require.Equal(t, http.StatusBadRequest, r.Status, r.Raw)
			require.Equal(t, errcode.InvalidArgument, r.Body["error"])
			fields := fieldsOf(t, r.Raw)
			require.Len(t, fields, 1)
			require.Equal(t, tc.field, fields[0]["path"])
			require.Equal(t, tc.code, fields[0]["code"])
			if tc.code == errcode.FieldCodeNotAllowed {
				require.Equal(t, []any{"Market", "Limit", "StopMarket", "StopLimit"}, fields[0]["allowed"])
				require.Equal(t, "orderType must be one of Market, Limit, StopMarket, StopLimit (any casing)", r.Body["detail"])
			}
		})
	}
	require.Empty(t, f.desktop.all())
	require.Empty(t, f.broker.all())
}

// One table: the broker family's order-placing routes are the desktop
// routes' parameters, in order, with the trailing types added to orderType
// and trailDistance after stopPrice; every other route and parameter is
// the desktop one. The desktop table itself has no trailing type.
func TestBrokerParamsDeriveFromTheDesktopTable(t *testing.T) {
	t.Parallel()
	derived := 0
	for _, ep := range tradecall.Endpoints() {
		if p := ep.Param("orderType", tradecall.InBody); p != nil {
			require.Equal(t, []string{"Market", "Limit", "StopMarket", "StopLimit"}, p.Enum, ep.Path)
		}
		require.Nil(t, ep.Param("trailDistance", tradecall.InBody), ep.Path)
		broker := tradecall.WithTrailingStops(ep)
		if ep.Param("orderType", tradecall.InBody) == nil {
			require.Equal(t, ep.Params, broker.Params, "%s is served as it is", ep.Path)
			continue
		}
		derived++
		var names, brokerNames []string
		for _, p := range ep.Params {
			names = append(names, p.Name)
		}
		for _, p := range broker.Params {
			brokerNames = append(brokerNames, p.Name)
		}
		i := slices.Index(names, "stopPrice")
		require.GreaterOrEqual(t, i, 0, ep.Path)
		require.Equal(t, slices.Insert(slices.Clone(names), i+1, "trailDistance"), brokerNames, ep.Path)
		d := broker.Param("trailDistance", tradecall.InBody)
		require.Equal(t, tradecall.TNumber, d.Type)
		require.False(t, d.Required)
		o := broker.Param("orderType", tradecall.InBody)
		require.Equal(t, ep.Param("orderType", tradecall.InBody).Required, o.Required)
		require.Equal(t, []string{"Market", "Limit", "StopMarket", "StopLimit", "TrailingStop", "TrailingStopLimit"}, o.Enum)
	}
	require.Equal(t, 3, derived, "place, flatplace and reverseposition")
	// The broker family serves all three.
	served := map[string]bool{}
	for _, r := range tradeapi.BrokerRoutes() {
		served[r[1]] = true
	}
	for _, p := range []string{"/orders/place", "/orders/flatplace", "/positions/reverseposition"} {
		require.True(t, served[tradeapi.BrokerPrefix+"accounts/{account}"+p], p)
	}
}
