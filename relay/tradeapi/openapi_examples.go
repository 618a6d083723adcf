package tradeapi

import (
	"embed"
	"encoding/json"
	"path"

	"tradebridge/relay/profile"
)

// examples are real responses of the simulator, recorded by the relay's
// end-to-end test (go test ./relay -run TestContractEndToEnd -update):
// testdata/examples/<profile>/<operationId>.json.
//
//go:embed testdata/examples
var examples embed.FS

// ExampleFile is where the example of operation opID in profile p is
// recorded, relative to this package's directory.
func ExampleFile(p profile.Profile, opID string) string {
	return path.Join("testdata", "examples", string(p), opID+".json")
}

// example returns the recorded example of operation opID in profile p, or
// nil when none is recorded.
func example(p profile.Profile, opID string) any {
	raw, err := examples.ReadFile(ExampleFile(p, opID))
	if err != nil {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}

// OperationIDs maps each route ("POST /v1/api/accounts/{account}/orders/place")
// to the operationId of its OpenAPI operation.
func OperationIDs() map[string]string {
	out := make(map[string]string, len(endpoints))
	for i := range endpoints {
		ep := &endpoints[i]
		out[ep.Method+" "+ep.Path] = operationID(ep)
	}
	return out
}
