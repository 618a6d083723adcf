package tradeapi

import (
	"fmt"
	"reflect"
	"sort"
	"tradebridge/relay/apischema"

	"tradebridge/protocol"
	"tradebridge/relay/profile"
)

// StreamPath is the stream API's socket (package stream serves it; the
// constant is repeated here because stream imports this package).
const StreamPath = "/ws/stream"

// AsyncAPI returns the AsyncAPI 3.0 document of the stream API at
// /ws/stream: the client frames (rpc, subscribe, unsubscribe, streamPnl,
// subscribeActivity, unsubscribeActivity, ping), the replies to them and
// the events the relay sends. Its schemas
// are generated from the same Go types as the OpenAPI documents'. The
// relay is the application described: client frames are operations it
// receives, events are operations it sends. The frames are those of the
// package comment of relay/stream.
func AsyncAPI() map[string]any {
	doc, err := buildAsyncAPI()
	if err != nil {
		panic(err)
	}
	return doc
}

func buildAsyncAPI() (map[string]any, error) {
	set := apischema.New(FamilyDesktop)
	quote, err := set.Ref(reflect.TypeFor[protocol.Quote]())
	if err != nil {
		return nil, err
	}
	pnlAccount, err := set.Ref(reflect.TypeFor[protocol.PnlAccount]())
	if err != nil {
		return nil, err
	}
	// The data of every public function, for rpc replies.
	var apis []string
	dataByAPI := object{}
	var dataRefs []any
	seen := map[string]bool{}
	for _, f := range protocol.Functions {
		if f.Internal {
			continue
		}
		t, ok := profile.DataType(f.Name)
		if !ok || t == nil {
			return nil, fmt.Errorf("api: %s has no data type in package profile", f.Name)
		}
		name, err := set.Ref(t)
		if err != nil {
			return nil, err
		}
		apis = append(apis, f.Name)
		dataByAPI[f.Name] = ref(name)
		if !seen[name] {
			seen[name] = true
			dataRefs = append(dataRefs, ref(name))
		}
	}
	sort.Strings(apis)
	schemas, err := set.Objects()
	if err != nil {
		return nil, err
	}
	schemas["FieldError"] = fieldErrorSchema()
	for k, v := range activitySchemas() {
		schemas[k] = v
	}

	seq := object{"type": "integer", "minimum": 1, "description": "1 on the socket's first frame, one more on each next one"}
	id := object{
		"description": "the client's correlation id, carried back by the reply",
		"oneOf":       []any{object{"type": "string", "maxLength": 128}, object{"type": "number"}},
	}
	instruments := object{"type": "array", "minItems": 1, "maxItems": 50, "items": object{"type": "string", "pattern": protocol.InstrumentPattern},
		"description": `instrument names: "ES 12-26", a root ("ES") or a month code ("ESZ26")`}
	strings := object{"type": "array", "items": object{"type": "string"}}
	errorProps := func() object {
		return object{
			"seq":        seq,
			"id":         id,
			"error":      object{"type": "string", "description": "stable error code"},
			"detail":     object{"type": "string", "description": "a sentence; never repeats what the client sent"},
			"fields":     object{"type": "array", "items": ref("FieldError")},
			"retryAfter": object{"type": "integer", "minimum": 1},
			"policy":     object{"type": "string", "description": "the budget that refused the frame: trading, subscriptions"},
		}
	}
	client := func(action string, props object, required ...string) object {
		props["action"] = object{"type": "string", "const": action}
		props["id"] = id
		return object{"type": "object", "additionalProperties": false, "required": append([]string{"action"}, required...), "properties": props}
	}
	event := func(typ string, props object, required ...string) object {
		props["seq"] = seq
		props["type"] = object{"type": "string", "const": typ}
		return object{"type": "object", "required": append([]string{"seq", "type"}, required...), "properties": props}
	}
	rpcErrorProps := errorProps()
	rpcErrorProps["success"] = object{"type": "boolean", "const": false}
	eventErrorProps := errorProps()
	eventErrorProps["type"] = object{"type": "string", "const": "error"}

	frames := object{
		// Client frames.
		"RpcFrame": client("rpc", object{
			"api":  object{"type": "string", "enum": apis, "description": "a public RPC function (the x-rpc of the OpenAPI operations)"},
			"args": object{"type": "object", "description": "the path parameters, body fields and query parameters of the function's HTTP route, checked as on HTTP; a write may add idempotencyKey"},
		}, "api"),
		"SubscribeFrame":   client("subscribe", object{"instruments": instruments}, "instruments"),
		"UnsubscribeFrame": client("unsubscribe", object{"instruments": instruments}, "instruments"),
		"StreamPnlFrame": client("streamPnl", object{
			"enabled":  object{"type": "boolean"},
			"interval": object{"type": "integer", "minimum": 250, "maximum": 60000, "default": 1000, "description": "milliseconds between pnlUpdate frames"},
		}, "enabled"),
		"PingFrame":                client("ping", object{}),
		"SubscribeActivityFrame":   client("subscribeActivity", object{}),
		"UnsubscribeActivityFrame": client("unsubscribeActivity", object{}),

		// Replies to rpc: no type.
		"RpcResult": object{
			"type":        "object",
			"description": "A successful rpc reply; it has no type. Standard profile: data holds the function's data (x-dataByApi), with orderId or orderIds lifted to the top level for writes. Compatible profile: the members of data stand at the top level instead (GetWatermarks keeps data).",
			"required":    []string{"seq", "success"},
			"properties": object{
				"seq":      seq,
				"id":       id,
				"success":  object{"type": "boolean", "const": true},
				"data":     object{"anyOf": dataRefs},
				"orderId":  object{"type": "string"},
				"orderIds": strings,
			},
			"x-dataByApi": dataByAPI,
		},
		"RpcError": object{
			"type":        "object",
			"description": "A failed rpc reply; it has no type. The codes are the HTTP API's (see the OpenAPI operation of the function) plus too_many_concurrent_requests, rate_limited and unknown_function.",
			"required":    []string{"seq", "success", "error"},
			"properties":  rpcErrorProps,
		},

		// Events and replies to the other frames.
		"StatusEvent": event("status", object{
			"agentConnected": object{"type": "boolean"},
			"detail":         object{"type": "string"},
		}, "agentConnected"),
		"SubscribedEvent": event("subscribed", object{
			"id":          id,
			"instruments": object{"type": "array", "items": object{"type": "string"}, "description": "the contracts the names resolve to"},
			"unknown":     object{"type": "array", "items": object{"type": "string"}, "description": "names the agent does not know; not subscribed"},
			"quotes":      object{"type": "array", "items": ref(quote), "description": "the latest quote of each contract, when the relay has one"},
		}, "instruments"),
		"UnsubscribedEvent": event("unsubscribed", object{
			"id":          id,
			"instruments": object{"type": "array", "items": object{"type": "string"}},
		}, "instruments"),
		"PnlStreamingEvent": event("pnlStreaming", object{
			"id":       id,
			"enabled":  object{"type": "boolean"},
			"interval": object{"type": "integer"},
		}, "enabled", "interval"),
		"PongEvent": event("pong", object{"id": id}),
		"MarketDataEvent": event("marketData", object{
			"quotes":  object{"type": "array", "items": ref(quote), "description": "at most one quote per contract: the latest"},
			"dropped": object{"type": "integer", "minimum": 1, "description": "the socket's cumulative count of quotes replaced before they were sent"},
		}, "quotes"),
		"ActivitySubscribedEvent":   event("activitySubscribed", object{"id": id}),
		"ActivityUnsubscribedEvent": event("activityUnsubscribed", object{"id": id}),
		"ActivityEvent": event("activity", object{
			"event":   ref("ActivityEntry"),
			"dropped": object{"type": "integer", "minimum": 1, "description": "the socket's cumulative count of entries its full queue dropped; read them at GET /v1/api/activity"},
		}, "event"),
		"PnlUpdateEvent": event("pnlUpdate", object{
			"epoch":    object{"type": "integer", "description": "milliseconds"},
			"accounts": object{"type": "array", "items": ref(pnlAccount)},
		}, "epoch", "accounts"),
		"ErrorEvent": object{
			"type":        "object",
			"description": "A refused frame other than rpc (malformed, over a limit or a budget).",
			"required":    []string{"seq", "type", "error"},
			"properties":  eventErrorProps,
		},
	}
	for k, v := range frames {
		schemas[k] = v
	}

	messages := object{}
	channelMessages := object{}
	msg := func(key, schema, title, summary string) {
		messages[key] = object{"name": key, "title": title, "summary": summary, "contentType": "application/json", "payload": ref(schema)}
		channelMessages[key] = object{"$ref": "#/components/messages/" + key}
	}
	msg("rpc", "RpcFrame", "rpc", "Call a trading function over the socket.")
	msg("subscribe", "SubscribeFrame", "subscribe", "Subscribe to quotes.")
	msg("unsubscribe", "UnsubscribeFrame", "unsubscribe", "Stop quotes.")
	msg("streamPnl", "StreamPnlFrame", "streamPnl", "Turn P&L streaming on or off.")
	msg("ping", "PingFrame", "ping", "Ask for a pong.")
	msg("subscribeActivity", "SubscribeActivityFrame", "subscribeActivity", "Receive the user's activity log entries as they are written.")
	msg("unsubscribeActivity", "UnsubscribeActivityFrame", "unsubscribeActivity", "Stop the activity entries.")
	msg("activitySubscribed", "ActivitySubscribedEvent", "activitySubscribed", "The reply to subscribeActivity.")
	msg("activityUnsubscribed", "ActivityUnsubscribedEvent", "activityUnsubscribed", "The reply to unsubscribeActivity.")
	msg("activity", "ActivityEvent", "activity", "One entry of the user's activity log, as written.")
	msg("rpcResult", "RpcResult", "rpc success", "The reply to an rpc frame that succeeded (no type).")
	msg("rpcError", "RpcError", "rpc failure", "The reply to an rpc frame that failed (no type).")
	msg("status", "StatusEvent", "status", "Whether the user's agent is connected; on open and on every change.")
	msg("subscribed", "SubscribedEvent", "subscribed", "The reply to subscribe.")
	msg("unsubscribed", "UnsubscribedEvent", "unsubscribed", "The reply to unsubscribe.")
	msg("pnlStreaming", "PnlStreamingEvent", "pnlStreaming", "The reply to streamPnl.")
	msg("pong", "PongEvent", "pong", "The reply to ping.")
	msg("marketData", "MarketDataEvent", "marketData", "Conflated latest quotes of subscribed contracts.")
	msg("pnlUpdate", "PnlUpdateEvent", "pnlUpdate", "A P&L snapshot of every account.")
	msg("error", "ErrorEvent", "error", "A refused frame.")

	channel := object{"$ref": "#/channels/stream"}
	chMsg := func(keys ...string) []any {
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = object{"$ref": "#/channels/stream/messages/" + k}
		}
		return out
	}
	receive := func(summary, in string, reply ...string) object {
		return object{"action": "receive", "channel": channel, "summary": summary, "messages": chMsg(in),
			"reply": object{"channel": channel, "messages": chMsg(reply...)}}
	}
	send := func(summary, out string) object {
		return object{"action": "send", "channel": channel, "summary": summary, "messages": chMsg(out)}
	}

	return object{
		"asyncapi": "3.0.0",
		"info": object{
			"title":   "Stream API",
			"version": "1.0.0",
			"description": "The WebSocket at " + StreamPath + ": quotes, P&L, the activity log and RPC. Every client frame is one JSON object with an action; " +
				"every client frame gets exactly one reply. Every server frame starts with seq. Events carry a type; rpc replies carry none " +
				"(tell them by the absence of type). RPC over the socket shares the HTTP API's budget and answers with its codes and data " +
				"(see /v1/api/openapi.json and /v1/api/openapi.compatible.json for the response profiles). The full contract is the " +
				"package comment of relay/stream.",
		},
		"defaultContentType": "application/json",
		"servers": object{
			"relay": object{
				"host":        "relay.example",
				"protocol":    "wss",
				"description": "The relay's host: the socket is at the relay's base URL (ws:// for a relay served over plain HTTP).",
				"security": []any{
					object{"$ref": "#/components/securitySchemes/bearer"},
					object{"$ref": "#/components/securitySchemes/queryToken"},
				},
			},
		},
		"channels": object{
			"stream": object{
				"address":     StreamPath,
				"title":       "stream",
				"description": "One socket per connection; a user may hold 5.",
				"servers":     []any{object{"$ref": "#/servers/relay"}},
				"messages":    channelMessages,
			},
		},
		"operations": object{
			"rpc":                 receive("Call a trading function.", "rpc", "rpcResult", "rpcError"),
			"subscribe":           receive("Subscribe to quotes.", "subscribe", "subscribed", "error"),
			"unsubscribe":         receive("Unsubscribe.", "unsubscribe", "unsubscribed", "error"),
			"streamPnl":           receive("Turn P&L streaming on or off.", "streamPnl", "pnlStreaming", "error"),
			"ping":                receive("Ping.", "ping", "pong", "error"),
			"subscribeActivity":   receive("Subscribe to the activity log.", "subscribeActivity", "activitySubscribed", "error"),
			"unsubscribeActivity": receive("Unsubscribe from the activity log.", "unsubscribeActivity", "activityUnsubscribed", "error"),
			"activity":            send("An activity log entry.", "activity"),
			"status":              send("The agent's state.", "status"),
			"marketData":          send("Quotes.", "marketData"),
			"pnlUpdate":           send("P&L.", "pnlUpdate"),
			"frameRefused":        send("A malformed frame was refused.", "error"),
		},
		"components": object{
			"schemas":  schemas,
			"messages": messages,
			"securitySchemes": object{
				"bearer":     object{"type": "http", "scheme": "bearer", "description": "API token in Authorization on the upgrade request"},
				"queryToken": object{"type": "httpApiKey", "name": "token", "in": "query", "description": "API token as ?token=, for browsers"},
			},
		},
	}, nil
}
