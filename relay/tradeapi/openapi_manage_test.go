package tradeapi_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/manage"
	"tradebridge/relay/tradeapi"
)

// The Management API's routes the trading document describes for its
// clients (x-route: manage: the kill switch, the alert destinations) are
// those of the Management API's own document: same path, method and
// operationId, and no error code the Management API's document does not
// list at that status.
func TestOpenAPIManageRoutesAgree(t *testing.T) {
	t.Parallel()
	type operation struct {
		OperationID string                    `json:"operationId"`
		Route       string                    `json:"x-route"`
		Responses   map[string]map[string]any `json:"responses"`
	}
	type document struct {
		Paths map[string]map[string]operation `json:"paths"`
	}
	decode := func(v any) document {
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		var d document
		require.NoError(t, json.Unmarshal(raw, &d))
		return d
	}
	trading, mgmt := decode(tradeapi.OpenAPI()), decode(manage.OpenAPI())
	n := 0
	for path, ops := range trading.Paths {
		for method, op := range ops {
			if op.Route != "manage" {
				continue
			}
			n++
			want, ok := mgmt.Paths[path][method]
			require.True(t, ok, "%s %s is in the Management API's document", method, path)
			require.Equal(t, want.OperationID, op.OperationID, "%s %s", method, path)
			for st, r := range op.Responses {
				codes, _ := r["x-error-codes"].([]any)
				listed, _ := want.Responses[st]["x-error-codes"].([]any)
				for _, c := range codes {
					require.True(t, slices.Contains(listed, c), "%s %s %s: %s is in the Management API's document", method, path, st, c)
				}
			}
		}
	}
	require.Greater(t, n, 5)
}
