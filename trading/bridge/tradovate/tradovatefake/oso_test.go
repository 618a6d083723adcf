package tradovatefake_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// Every write must say it is automated: one that does not (or says
// false) is refused before anything happens.
func TestWritesNeedIsAutomated(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	acct, contract := f.accountID("Sim101"), f.contractID()
	for path, body := range map[string]map[string]any{
		"/order/placeorder": {"accountId": acct, "action": "Buy", "symbol": esTradovate, "orderQty": 1, "orderType": "Market"},
		"/order/placeoco": {"accountId": acct, "action": "Sell", "symbol": esTradovate, "orderQty": 1, "orderType": "Limit", "price": 6010,
			"other": map[string]any{"action": "Sell", "orderType": "Stop", "stopPrice": 5990}},
		"/order/placeoso": {"accountId": acct, "action": "Buy", "symbol": esTradovate, "orderQty": 1, "orderType": "Market",
			"bracket1": map[string]any{"action": "Sell", "orderType": "Stop", "stopPrice": 5990}},
		"/order/cancelorder":       {"orderId": 1},
		"/order/modifyorder":       {"orderId": 1, "orderQty": 1, "orderType": "Limit", "price": 5990},
		"/order/liquidateposition": {"accountId": acct, "contractId": contract, "admin": false},
	} {
		for _, automated := range []any{nil, false} {
			if automated != nil {
				body["isAutomated"] = automated
			}
			var res struct {
				ErrorText string `json:"errorText"`
			}
			require.Equal(t, http.StatusBadRequest, f.post(path, body, &res), path)
			require.Contains(t, res.ErrorText, "isAutomated", path)
		}
	}
	require.Empty(t, f.orders(), "nothing was placed")
}

// placeoso answers the entry's and its brackets' ids; the brackets are
// sent, as an OCO pair with the entry's fill, only once the entry fills,
// and carry the entry as their parent.
func TestPlaceOSOSendsBracketsOnFill(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.login()
	req := tradovatewire.PlaceOSORequest{PlaceOrderRequest: f.order(tradovatewire.ActionBuy, tradovatewire.OrderTypeLimit, 2, 5990, 0),
		Bracket1: &tradovatewire.OtherOrder{Action: tradovatewire.ActionSell, OrderType: tradovatewire.OrderTypeStop, StopPrice: 5980, ClOrdID: "b1"},
		Bracket2: &tradovatewire.OtherOrder{Action: tradovatewire.ActionSell, OrderType: tradovatewire.OrderTypeLimit, Price: 6010, ClOrdID: "b2"}}
	req.ClOrdID = "entry"
	var res tradovatewire.PlaceOSOResponse
	require.Equal(t, http.StatusOK, f.post("/order/placeoso", req, &res))
	require.NotZero(t, res.OrderID)
	require.NotZero(t, res.OSO1ID)
	require.NotZero(t, res.OSO2ID)
	require.Len(t, f.orders(), 1, "the brackets wait for the entry")
	for id, want := range map[int64]string{res.OrderID: "entry", res.OSO1ID: "b1", res.OSO2ID: "b2"} {
		got, ok := f.fake.ClOrdID(id)
		require.True(t, ok)
		require.Equal(t, want, got)
	}

	require.NoError(t, f.market.SetPrice(es, 5985))
	f.fake.Flush()
	os := f.orders()
	require.Equal(t, tradovatewire.StatusFilled, os[res.OrderID].OrdStatus)
	for _, id := range []int64{res.OSO1ID, res.OSO2ID} {
		require.Equal(t, tradovatewire.StatusWorking, os[id].OrdStatus)
		require.Equal(t, res.OrderID, os[id].ParentID)
		require.Equal(t, 2, f.version(id).OrderQty)
	}
	require.Equal(t, res.OSO2ID, os[res.OSO1ID].OcoID)
}
