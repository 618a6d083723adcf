package tradovate

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// A quote subscription is refused to the login by an errorText, a
// Delayed mode or a 403; a rate limit or a failure is no refusal of the
// entitlement.
func TestQuoteRefusal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s    int
		d    string
		want string
	}{
		{200, `null`, ""},
		{200, `{"mode":"RealTime","subscriptionId":7}`, ""},
		{200, `{"errorText":"Market data subscription is required"}`, "Market data subscription is required"},
		{200, `{"mode":"Delayed","subscriptionId":7}`, mdDelayed},
		{403, `"Access is denied"`, "Access is denied"},
		{403, `null`, "Forbidden"},
		{429, `null`, ""},
		{500, `"The server failed."`, ""},
	} {
		got := quoteRefusal(tradovatewire.Message{S: tc.s, D: json.RawMessage(tc.d)})
		require.Equal(t, tc.want, got, "%d %s", tc.s, tc.d)
	}
}
