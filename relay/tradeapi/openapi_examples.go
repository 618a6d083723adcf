package tradeapi

import (
	"embed"
	"encoding/json"
	"path"
	"strconv"

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

// RequestExampleValue is a recorded request of an operation: its path
// parameters, its query parameters as sent (text) and its JSON body, each
// nil when the request had none.
type RequestExampleValue struct {
	Path  map[string]string `json:"path,omitempty"`
	Query map[string]string `json:"query,omitempty"`
	Body  map[string]any    `json:"body,omitempty"`
}

// RequestExampleFile is where the request example of operation opID is
// recorded, relative to this package's directory.
func RequestExampleFile(opID string) string {
	return path.Join("testdata", "examples", "requests", opID+".json")
}

// RequestExample returns the request of operation opID that the relay's
// end-to-end test recorded (the first that succeeded on the simulator, in
// the standard profile); ok is false when none is recorded. The OpenAPI
// documents show it as the operation's request example.
func RequestExample(opID string) (v RequestExampleValue, ok bool) {
	raw, err := examples.ReadFile(RequestExampleFile(opID))
	if err != nil {
		return RequestExampleValue{}, false
	}
	if json.Unmarshal(raw, &v) != nil {
		return RequestExampleValue{}, false
	}
	return v, true
}

// RequestExampleArgs returns the recorded request of operation opID
// (RequestExample) in the form a call by function takes its arguments
// (tradecall.Table.Prepare, the MCP tools): the path parameters, the
// query parameters typed as their schemas are, and the body's members in
// one object. ok is false when none is recorded.
func RequestExampleArgs(opID string) (args map[string]any, ok bool) {
	ex, ok := RequestExample(opID)
	if !ok {
		return nil, false
	}
	args = map[string]any{}
	for i := range endpoints {
		ep := &endpoints[i]
		if operationID(ep) != opID {
			continue
		}
		for _, p := range ep.Params {
			if p.In == inPath || p.In == inQuery {
				if v := exampleValue(p, ex); v != nil {
					args[p.Name] = v
				}
			}
		}
	}
	for k, v := range ex.Body {
		args[k] = v
	}
	return args, true
}

// OperationFunctions maps the operationId of each desktop route's
// operation to the RPC function the route calls (its x-rpc).
func OperationFunctions() map[string]string {
	out := make(map[string]string, len(endpoints))
	for i := range endpoints {
		ep := &endpoints[i]
		out[operationID(ep)] = ep.Fn
	}
	return out
}

// requestContent is the media type object of a request body of schema s,
// with the recorded request example of operation opID when there is one.
func requestContent(s map[string]any, opID string) object {
	c := object{"schema": s}
	if ex, ok := RequestExample(opID); ok && ex.Body != nil {
		c["examples"] = object{"simulator": object{
			"summary": "a request the simulator accepted (recorded by the relay's end-to-end test)",
			"value":   ex.Body,
		}}
	}
	return c
}

// paramExample is the example of path or query parameter p of operation
// opID, typed as p's schema is, or nil when none is recorded.
func paramExample(p param, opID string) any {
	ex, ok := RequestExample(opID)
	if !ok {
		return nil
	}
	return exampleValue(p, ex)
}

// exampleValue is the value of path or query parameter p in request ex,
// typed as p's schema is, or nil when ex has none.
func exampleValue(p param, ex RequestExampleValue) any {
	m := ex.Query
	if p.In == inPath {
		m = ex.Path
	}
	text, ok := m[p.Name]
	if !ok {
		return nil
	}
	switch p.Type {
	case tBoolean:
		if b, err := strconv.ParseBool(text); err == nil {
			return b
		}
		return nil
	case tInteger:
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			return n
		}
		return nil
	case tNumber:
		if f, err := strconv.ParseFloat(text, 64); err == nil {
			return f
		}
		return nil
	}
	return text
}
