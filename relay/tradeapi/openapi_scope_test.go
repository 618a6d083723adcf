package tradeapi_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/errcode"
	"tradebridge/relay/profile"
	"tradebridge/relay/tradeapi"
)

// Both families' documents give every operation that needs the trade
// scope (the trading writes, the Management API's and the broker link's
// changes) 403 insufficient_scope with its WWW-Authenticate header, and
// none to the reads, POST /v1/api/market/bars and the TradingView webhook
// (its own key, no token) included; the bearer scheme says so.
func TestOpenAPIScopes(t *testing.T) {
	t.Parallel()
	noScope := map[string]bool{"post /v1/api/market/bars": true, "post /v1/send/{webhookId}": true}
	docs := map[string]map[string]any{
		"desktop": tradeapi.OpenAPIFor(profile.Standard),
		"broker":  tradeapi.BrokerOpenAPIFor(profile.Standard),
	}
	for name, doc := range docs {
		scopes := 0
		paths := doc["paths"].(map[string]any)
		for path, item := range paths {
			for method, v := range item.(map[string]any) {
				op, ok := v.(map[string]any)
				if !ok {
					continue
				}
				where := method + " " + path
				resp, _ := op["responses"].(map[string]any)["403"].(map[string]any)
				var codes []string
				if resp != nil {
					codes, _ = resp["x-error-codes"].([]string)
				}
				has := slices.Contains(codes, errcode.InsufficientScope)
				bars := strings.HasSuffix(path, "/market/bars")
				want := method != "get" && !noScope[where] && !bars
				require.Equal(t, want, has, "%s: %s", name, where)
				if has {
					scopes++
					require.Contains(t, resp["headers"], "WWW-Authenticate", where)
					require.Contains(t, resp["description"], "trade token", where)
				}
			}
		}
		require.Positive(t, scopes, name)
		scheme := doc["components"].(map[string]any)["securitySchemes"].(map[string]any)["bearer"].(map[string]any)
		require.Contains(t, scheme["description"], "scope", name)
	}
}
