package tradeapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/profile"
	"tradebridge/relay/stream"
	"tradebridge/relay/tradeapi"
)

// loadOpenAPI loads and validates the OpenAPI document of profile p with
// kin-openapi, as a client generator would read it.
func loadOpenAPI(t *testing.T, p profile.Profile) *openapi3.T {
	t.Helper()
	raw, err := json.Marshal(tradeapi.OpenAPIFor(p))
	require.NoError(t, err)
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(context.Background()))
	return doc
}

// typedObject reports whether s is an object schema with properties: not
// an untyped {}.
func typedObject(s *openapi3.Schema) bool {
	return s != nil && s.Type != nil && s.Type.Includes(openapi3.TypeObject) && len(s.Properties) > 0
}

// Every operation of both documents has a typed 200 body (data, or the
// data's members in the compatible profile), an error schema for every
// other status listing its codes, and a recorded example that matches its
// schema.
func TestOpenAPIDocuments(t *testing.T) {
	t.Parallel()
	for _, p := range profile.All {
		t.Run(string(p), func(t *testing.T) {
			t.Parallel()
			doc := loadOpenAPI(t, p)
			require.Equal(t, "3.1.0", doc.OpenAPI)
			require.NotEmpty(t, doc.Servers)
			require.Contains(t, doc.Components.SecuritySchemes, "bearer")
			ops := 0
			for path, item := range doc.Paths.Map() {
				for method, op := range item.Operations() {
					if op.Extensions["x-route"] == "manage" {
						continue // the Management API's (TestOpenAPIAlerts)
					}
					ops++
					where := method + " " + path
					if _, ok := op.Extensions["x-route"]; ok {
						checkRouteOperation(t, where, op)
						continue
					}
					fn, _ := op.Extensions["x-rpc"].(string)
					ok := op.Responses.Status(http.StatusOK)
					require.NotNil(t, ok, where)
					mt := ok.Value.Content.Get("application/json")
					require.NotNil(t, mt, where)
					body := mt.Schema.Value
					require.NotNil(t, body, where)

					// The data: standard profile (and GetWatermarks in both)
					// under data, else the members of the allOf's first
					// schema.
					var data *openapi3.Schema
					if p == profile.Standard || profile.Wrapped(fn) {
						require.Contains(t, body.Required, "data", where)
						require.Contains(t, body.Properties, "data", where)
						data = body.Properties["data"].Value
						require.NotEmpty(t, body.Properties["data"].Ref, "%s: data is a named component", where)
					} else {
						require.Len(t, body.AllOf, 2, where)
						require.NotEmpty(t, body.AllOf[0].Ref, "%s: data is a named component", where)
						data = body.AllOf[0].Value
						require.NotContains(t, body.Properties, "data", where)
					}
					require.True(t, typedObject(data), "%s: data is a typed object", where)
					require.NotNil(t, ok.Value.Headers["RateLimit"], where)

					// Writes lift orderId/orderIds in the standard profile.
					if p == profile.Standard && slices.Contains([]string{protocol.FnPlaceOrder, protocol.FnReversePosition, protocol.FnCancelOrder}, fn) {
						require.Contains(t, body.Properties, "orderId", where)
					}
					if p == profile.Standard && fn == protocol.FnCancelAndBracket {
						require.Contains(t, body.Properties, "orderIds", where)
					}

					// The recorded example matches the schema.
					ex := mt.Examples["simulator"]
					require.NotNil(t, ex, "%s: an example was recorded (go test ./relay -run TestContractEndToEnd -update)", where)
					require.NoError(t, body.VisitJSON(ex.Value.Value, openapi3.EnableJSONSchema2020()), where)

					// Errors.
					for _, st := range []int{400, 401, 403, 408, 429, 500, 503, 504} {
						require.NotNil(t, op.Responses.Status(st), "%s answers %d", where, st)
					}
					for code, r := range op.Responses.Map() {
						if code == "200" {
							continue
						}
						es := r.Value.Content.Get("application/json").Schema.Value
						require.Len(t, es.AllOf, 2, "%s %s", where, code)
						require.Equal(t, "#/components/schemas/Error", es.AllOf[0].Ref, "%s %s", where, code)
						require.NotEmpty(t, es.AllOf[1].Value.Properties["error"].Value.Enum, "%s %s lists its codes", where, code)
					}
					if op.RequestBody != nil && isWriteFn(fn) {
						for _, st := range []int{409, 422} {
							require.NotNil(t, op.Responses.Status(st), "%s answers %d", where, st)
						}
					}
				}
			}
			require.Greater(t, ops, 30)

			// The error schema carries every member of the error body.
			es := doc.Components.Schemas["Error"].Value
			for _, m := range []string{"success", "error", "detail", "fields", "retryAfter", "policy", "meta"} {
				require.Contains(t, es.Properties, m)
			}
			fe := doc.Components.Schemas["FieldError"].Value
			for _, m := range []string{"path", "code", "limit", "pattern", "allowed"} {
				require.Contains(t, fe.Properties, m)
			}
			require.Contains(t, doc.Components.Schemas, "Position")
		})
	}
}

func isWriteFn(fn string) bool {
	f, _ := protocol.LookupFunction(fn)
	return f.Write
}

// Every error code the relay and the agent produce is documented on some
// operation, at the status it is answered with.
func TestOpenAPIErrorCodes(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t, profile.Standard)
	byCode := map[string][]string{} // code -> statuses
	perOp := map[string]map[string][]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			perOp[method+" "+path] = map[string][]string{}
			for st, r := range op.Responses.Map() {
				codes, _ := r.Value.Extensions["x-error-codes"].([]any)
				for _, c := range codes {
					byCode[c.(string)] = append(byCode[c.(string)], st)
					perOp[method+" "+path][st] = append(perOp[method+" "+path][st], c.(string))
				}
			}
		}
	}
	for _, c := range protocol.Codes {
		require.Contains(t, byCode, c, "agent code %s is documented", c)
	}
	for _, c := range []string{
		errcode.Unauthorized, errcode.PlanRequired, errcode.AddonDisconnected, errcode.OutcomeUnknown,
		errcode.InvalidPath, errcode.StorageUnavailable, errcode.InternalError, errcode.RateLimited,
		errcode.UnknownParameter, errcode.IdempotencyKeyReused,
		errcode.InvalidJSON, errcode.BodyTooLarge, errcode.UnsupportedContentType, errcode.UnexpectedBody,
	} {
		require.Contains(t, byCode, c, "relay code %s is documented", c)
	}
	for _, tc := range []struct {
		op, status, code string
		want             bool
	}{
		{"GET /v1/api/accounts/{account}", "400", protocol.CodeAccountNotFound, true},
		{"GET /v1/api/accounts", "400", protocol.CodeAccountNotFound, false},
		{"GET /v1/api/accounts", "401", errcode.Unauthorized, true},
		{"GET /v1/api/accounts", "408", errcode.AddonDisconnected, true},
		{"POST /v1/api/accounts/{account}/orders/place", "400", protocol.CodeOrderRejected, true},
		{"POST /v1/api/accounts/{account}/orders/place", "503", errcode.OutcomeUnknown, true},
		{"POST /v1/api/accounts/{account}/orders/place", "422", errcode.IdempotencyKeyReused, true},
		{"GET /v1/api/accounts/{account}/positions", "400", protocol.CodeOrderRejected, false},
		{"GET /v1/api/accounts/{account}/strategies/{id}", "400", protocol.CodeStrategyNotFound, true},
		{"POST /v1/api/accounts/{account}/strategies/{id}/enable", "400", protocol.CodeStrategyTerminal, true},
		{"GET /v1/api/market/quote", "400", protocol.CodeInvalidInstrument, true},
		{"GET /v1/api/executions/order/{orderId}", "400", protocol.CodeOrderNotFound, true},
	} {
		got := slices.Contains(perOp[tc.op][tc.status], tc.code)
		require.Equal(t, tc.want, got, "%s %s %s", tc.op, tc.status, tc.code)
	}
}

// The documents are served without a token, as JSON.
func TestContractDocumentsServed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, path := range tradeapi.DocumentPaths {
		r := e.do("GET", path, "", "")
		require.Equal(t, http.StatusOK, r.Status, path)
		require.Equal(t, "application/json", r.Header.Get("Content-Type"), path)
		require.NotEmpty(t, r.Body, path)
	}
	r := e.do("GET", tradeapi.OpenAPICompatiblePath, "", "")
	require.Equal(t, "compatible", r.Body["x-profile"])
	r = e.do("GET", tradeapi.AsyncAPIPath, "", "")
	require.Equal(t, "3.0.0", r.Body["asyncapi"])
}

// The AsyncAPI document describes every frame of the stream API, its
// references resolve, and frames of the shapes relay/stream writes match
// their messages' schemas.
func TestAsyncAPIDocument(t *testing.T) {
	t.Parallel()
	require.Equal(t, stream.Path, tradeapi.StreamPath)
	raw, err := json.Marshal(tradeapi.AsyncAPI())
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.Equal(t, "3.0.0", doc["asyncapi"])

	// Every $ref resolves.
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if r, ok := v["$ref"].(string); ok {
				require.NotNil(t, pointer(doc, r), "%s resolves", r)
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)

	// Every client action and every server frame has a message, and every
	// client action an operation the relay receives, with a reply.
	msgs := pointer(doc, "#/components/messages").(map[string]any)
	for _, m := range []string{"rpc", "subscribe", "unsubscribe", "streamPnl", "ping", "subscribeActivity", "unsubscribeActivity",
		"rpcResult", "rpcError", "status", "subscribed", "unsubscribed", "marketData", "pnlStreaming", "pnlUpdate", "pong", "error",
		"activitySubscribed", "activityUnsubscribed", "activity"} {
		require.Contains(t, msgs, m)
	}
	for _, op := range []string{"rpc", "subscribe", "unsubscribe", "streamPnl", "ping", "subscribeActivity", "unsubscribeActivity"} {
		o := pointer(doc, "#/operations/"+op).(map[string]any)
		require.Equal(t, "receive", o["action"])
		require.NotNil(t, o["reply"])
	}

	// The schemas validate frames; they are loaded through an OpenAPI 3.1
	// document so that kin-openapi resolves their references.
	wrapper, err := json.Marshal(map[string]any{
		"openapi": "3.1.0", "info": map[string]any{"title": "frames", "version": "1"}, "paths": map[string]any{},
		"components": map[string]any{"schemas": pointer(doc, "#/components/schemas")},
	})
	require.NoError(t, err)
	schemas, err := openapi3.NewLoader().LoadFromData(wrapper)
	require.NoError(t, err)
	require.NoError(t, schemas.Validate(context.Background()))
	quote := `{"instrument":"ES 12-26","bid":6000,"ask":6000.25,"last":6000,"open":5990,"high":6010,"low":5980,"close":5995,"volume":100,"bidSize":5,"askSize":7,"tickSize":0.25,"pointValue":50,"tickValue":12.5,"quoteTimeUtc":"2026-11-18T15:00:00Z","epoch":1795100400000}`
	for _, tc := range []struct {
		schema, frame string
		valid         bool
	}{
		{"RpcFrame", `{"action":"rpc","id":"1","api":"PlaceOrder","args":{"account":"Sim101"}}`, true},
		{"RpcFrame", `{"action":"rpc","id":1,"api":"SetSubscriptions","args":{}}`, false},
		{"SubscribeFrame", `{"action":"subscribe","instruments":["ES","NQ 12-26"]}`, true},
		{"SubscribeFrame", `{"action":"subscribe","instruments":[]}`, false},
		{"UnsubscribeFrame", `{"action":"unsubscribe","instruments":["ES"]}`, true},
		{"StreamPnlFrame", `{"action":"streamPnl","enabled":true,"interval":1000}`, true},
		{"StreamPnlFrame", `{"action":"streamPnl","enabled":true,"interval":10}`, false},
		{"PingFrame", `{"action":"ping"}`, true},
		{"PingFrame", `{"action":"ping","extra":1}`, false},
		{"SubscribeActivityFrame", `{"action":"subscribeActivity","id":"a"}`, true},
		{"SubscribeActivityFrame", `{"action":"subscribeActivity","kinds":[]}`, false},
		{"UnsubscribeActivityFrame", `{"action":"unsubscribeActivity"}`, true},
		{"ActivitySubscribedEvent", `{"seq":11,"type":"activitySubscribed","id":"a"}`, true},
		{"ActivityUnsubscribedEvent", `{"seq":12,"type":"activityUnsubscribed"}`, true},
		{"ActivityEvent", `{"seq":13,"type":"activity","event":{"id":"act_5","at":"2026-11-02T15:00:00.123Z","kind":"order.placed","account":"Sim101","source":{"kind":"api","id":"ab12","name":"bot"},"summary":"Bought 1 ES","detail":{"fn":"PlaceOrder"}},"dropped":2}`, true},
		{"ActivityEvent", `{"seq":13,"type":"activity","event":{"id":"act_5","at":"2026-11-02T15:00:00Z","kind":"order.teleported","source":{"kind":"api"},"summary":"x","detail":{}}}`, false},
		{"ActivityEvent", `{"seq":13,"type":"activity","event":{"id":"act_5","at":"2026-11-02T15:00:00Z","kind":"order.placed","source":{"kind":"robot"},"summary":"x","detail":{}}}`, false},
		{"RpcResult", `{"seq":2,"id":"1","success":true,"data":{"orderId":"o1","order":null},"orderId":"o1"}`, false},
		{"RpcResult", `{"seq":2,"id":"1","success":true,"data":{"accounts":[]}}`, true},
		{"RpcError", `{"seq":3,"id":"2","success":false,"error":"no_position","detail":"there is no position"}`, true},
		{"RpcError", `{"seq":3,"id":"2","success":true,"error":"no_position"}`, false},
		{"StatusEvent", `{"seq":1,"type":"status","agentConnected":true,"detail":"the trading add-on is connected"}`, true},
		{"SubscribedEvent", `{"seq":4,"type":"subscribed","instruments":["ES 12-26"],"unknown":["XX"],"quotes":[` + quote + `]}`, true},
		{"UnsubscribedEvent", `{"seq":5,"type":"unsubscribed","instruments":["ES 12-26"]}`, true},
		{"PnlStreamingEvent", `{"seq":6,"type":"pnlStreaming","enabled":true,"interval":1000}`, true},
		{"PongEvent", `{"seq":7,"type":"pong"}`, true},
		{"PongEvent", `{"seq":7,"type":"ping"}`, false},
		{"ErrorEvent", `{"seq":8,"type":"error","error":"invalid_frame","detail":"a frame must be a JSON object with an action","fields":[{"path":"x","code":"unknown_field"}]}`, true},
		{"MarketDataEvent", `{"seq":9,"type":"marketData","quotes":[` + quote + `],"dropped":12}`, true},
		{"PnlUpdateEvent", `{"seq":10,"type":"pnlUpdate","epoch":1767225600000,"accounts":[{"account":"Sim101","realizedProfitLoss":0,"unrealizedProfitLoss":0,"totalProfitLoss":0,"netLiquidation":100000,"cashValue":100000,"positions":[]}]}`, true},
	} {
		s := schemas.Components.Schemas[tc.schema]
		require.NotNil(t, s, tc.schema)
		var v any
		require.NoError(t, json.Unmarshal([]byte(tc.frame), &v))
		err := s.Value.VisitJSON(v, openapi3.EnableJSONSchema2020())
		if tc.valid {
			require.NoError(t, err, "%s: %s", tc.schema, tc.frame)
		} else {
			require.Error(t, err, "%s: %s", tc.schema, tc.frame)
		}
	}
}

// pointer resolves a local JSON pointer (#/a/b) in doc, or returns nil.
func pointer(doc map[string]any, ref string) any {
	var cur any = doc
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[strings.NewReplacer("~1", "/", "~0", "~").Replace(part)]
	}
	return cur
}

// checkRouteOperation checks an operation of a route outside the trading
// table (the activity log): {success, data} in both profiles, data a
// named typed object, an example that matches, and the access errors.
func checkRouteOperation(t *testing.T, where string, op *openapi3.Operation) {
	t.Helper()
	ok := op.Responses.Status(http.StatusOK)
	require.NotNil(t, ok, where)
	mt := ok.Value.Content.Get("application/json")
	require.NotNil(t, mt, where)
	body := mt.Schema.Value
	require.Contains(t, body.Required, "data", where)
	require.NotEmpty(t, body.Properties["data"].Ref, "%s: data is a named component", where)
	require.True(t, typedObject(body.Properties["data"].Value), where)
	require.NotNil(t, ok.Value.Headers["RateLimit"], where)
	require.NotEmpty(t, mt.Examples, where)
	for name, ex := range mt.Examples {
		require.NoError(t, body.VisitJSON(ex.Value.Value, openapi3.EnableJSONSchema2020()), "%s %s", where, name)
	}
	for _, st := range []int{400, 401, 403, 429, 500, 503} {
		require.NotNil(t, op.Responses.Status(st), "%s answers %d", where, st)
	}
}

// The activity route documents its entries' kinds and sources as the
// protocol pins them, and its strict parameters.
func TestOpenAPIActivity(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t, profile.Standard)
	entry := doc.Components.Schemas["ActivityEntry"].Value
	require.NotNil(t, entry)
	var kinds, sources []string
	for _, v := range entry.Properties["kind"].Value.Enum {
		kinds = append(kinds, v.(string))
	}
	for _, v := range doc.Components.Schemas["ActivitySource"].Value.Properties["kind"].Value.Enum {
		sources = append(sources, v.(string))
	}
	require.Equal(t, protocol.ActivityKinds, kinds)
	require.Equal(t, protocol.ActivitySourceKinds, sources)
	op := doc.Paths.Find("/v1/api/activity").Get
	require.NotNil(t, op)
	var names []string
	for _, p := range op.Parameters {
		names = append(names, p.Value.Name)
		require.Equal(t, "query", p.Value.In)
	}
	require.Equal(t, []string{"account", "kind", "before", "limit"}, names)
	limit := op.Parameters[3].Value.Schema.Value
	require.Equal(t, float64(1), *limit.Min)
	require.Equal(t, float64(500), *limit.Max)
	require.Contains(t, op.Responses.Status(400).Value.Extensions["x-error-codes"], "unknown_parameter")
}
