package tradecall

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
)

func TestCheckWriteResult(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fn, result string
		ok         bool
	}{
		{protocol.FnPlaceOrder, `{"orderId":"o-1","order":{}}`, true},
		{protocol.FnPlaceOrder, ` {"orderId":"o-1"}`, true},
		{protocol.FnFlatPlace, `{"unchanged":true}`, true},
		{protocol.FnPlaceOrder, `{}`, false},
		{protocol.FnPlaceOrder, `{"orderId":""}`, false},
		{protocol.FnPlaceOrder, `{"orderId":7}`, false},
		{protocol.FnPlaceOrder, `null`, false},
		{protocol.FnCancelReplace, `{"cancelledOrderIds":["o-1"]}`, false},
		{protocol.FnCancelOrder, `{"orderId":"o-1"}`, true},
		{protocol.FnChangeOrder, `{"order":{}}`, false},
		{protocol.FnCancelAndBracket, `{"placed":true,"orderIds":["o-2","o-3"]}`, true},
		{protocol.FnCancelAndBracket, `{"placed":false,"orderIds":[]}`, true},
		{protocol.FnCancelAndBracket, `{"placed":true,"orderIds":[]}`, false},
		{protocol.FnCancelAndBracket, `{"placed":false}`, false},
		// Writes without ids to check answer an object.
		{protocol.FnClosePosition, `{}`, true},
		{protocol.FnFlattenEverything, `{"positions":[],"orderIds":[]}`, true},
		{protocol.FnFlattenEverything, `[]`, false},
		{protocol.FnStartStrategy, `"started"`, false},
	} {
		err := CheckWriteResult(tc.fn, json.RawMessage(tc.result))
		if tc.ok {
			require.NoError(t, err, "%s %s", tc.fn, tc.result)
		} else {
			require.ErrorIs(t, err, ErrMalformedResult, "%s %s", tc.fn, tc.result)
		}
	}
}
