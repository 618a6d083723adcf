package tradeapi

import (
	"fmt"
	"net/http"
	"strconv"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/tradecall"
	"tradebridge/relay/webhook"
	"tradebridge/relay/webhook/alertcmd"
)

// The TradingView webhook's routes (package relay/webhook) in the desktop
// family's document: the alerts' route, which takes the webhook's key in
// its body instead of a token, and the two GET routes of the user's
// webhook and its alert history.

// webhookSendCodes are the error codes of POST /v1/send/{webhookId}: the
// door's own, and those of the trading call that failed (the trading
// API's, at the same statuses).
var webhookSendCodes = map[int][]string{
	http.StatusBadRequest: append([]string{errcode.InvalidArgument, errcode.MissingRequiredFields},
		protocol.CodeTradingBlocked, protocol.CodeInvalidInstrument, protocol.CodeAccountNotFound, protocol.CodeOrderRejected,
		protocol.CodeNoPosition, protocol.CodeOrderNotFound, protocol.CodePositionOwned, protocol.CodeInvalidArgument),
	http.StatusUnauthorized:          {errcode.Unauthorized},
	http.StatusForbidden:             {errcode.AddressNotAllowed, errcode.PlanRequired, errcode.NotAvailable},
	http.StatusRequestTimeout:        {errcode.BodyTimeout, errcode.AddonDisconnected, errcode.PlatformUnavailable},
	http.StatusConflict:              {errcode.AddonVersionUnsupported, errcode.TradovateNotLinked, errcode.AccountIdentityUnresolved, errcode.RequestInProgress},
	http.StatusRequestEntityTooLarge: {errcode.BodyTooLarge},
	http.StatusTooManyRequests:       {errcode.RateLimited, errcode.TooManyConcurrentRequests},
	http.StatusInternalServerError:   {errcode.InternalError},
	http.StatusServiceUnavailable: {errcode.StorageUnavailable, errcode.OutcomeUnknown, errcode.ShuttingDown,
		errcode.BrokerUnavailable, errcode.ManagementUnavailable, errcode.ManagementReadOnly},
	http.StatusGatewayTimeout: {errcode.DeadlineExceeded},
}

// alertIDPattern is the pattern of an alert's id.
const alertIDPattern = `^tva_[1-9][0-9]*$`

// webhookSchemas are the schemas of the webhook's routes.
func webhookSchemas() object {
	envelope := func(data string) object {
		return object{"type": "object", "required": []string{"success", "data"}, "properties": object{
			"success": object{"type": "boolean", "const": true},
			"data":    ref(data),
		}}
	}
	statuses := []string{"executed", "scheduled", "running", "blocked", "failed"}
	return object{
		"Webhook": object{
			"type":                 "object",
			"description":          "The user's TradingView webhook: paste the relay's address followed by url into the alert's Webhook URL, and key=<key>; into its message.",
			"required":             []string{"url", "key"},
			"additionalProperties": false,
			"properties": object{
				"url": object{"type": "string", "pattern": `^/v1/send/wh_[a-z2-7]{24}$`, "description": "the path alerts are sent to, on the relay's address"},
				"key": object{"type": "string", "description": "the secret every alert's message carries (key=…;); relay webhook rotate replaces it"},
			},
		},
		"WebhookResponse": envelope("Webhook"),
		"WebhookResult": object{
			"type":                 "object",
			"description":          "What an alert did on one account (\"\" for a command of every account: FLATTENEVERYTHING, CANCELALLORDERS).",
			"required":             []string{"account", "status", "orderIds"},
			"additionalProperties": false,
			"properties": object{
				"account":  object{"type": "string"},
				"status":   object{"type": "string", "enum": []string{webhook.ResultExecuted, webhook.ResultBlocked, webhook.ResultFailed}},
				"orderIds": object{"type": "array", "items": object{"type": "string"}, "description": "the orders placed or changed"},
				"error": object{
					"type": "object", "required": []string{"code", "detail"}, "additionalProperties": false,
					"description": "why the call was blocked (market_position_mismatch, max_positions_reached, trading_blocked by the alert's closing_only_after) or failed (the trading API's code)",
					"properties":  object{"code": object{"type": "string"}, "detail": object{"type": "string"}},
				},
			},
		},
		"WebhookAnswer": object{
			"type":                 "object",
			"description":          "An alert's answer: executed or blocked (200), scheduled or still running (202).",
			"required":             []string{"alertId", "status", "results"},
			"additionalProperties": false,
			"properties": object{
				"alertId": object{"type": "string", "pattern": alertIDPattern},
				"status":  object{"type": "string", "enum": statuses},
				"results": object{"type": "array", "items": ref("WebhookResult")},
				"dueAt":   object{"type": "string", "format": "date-time", "description": "a scheduled alert's due time"},
			},
		},
		"WebhookAnswerResponse": envelope("WebhookAnswer"),
		"WebhookAlert": object{
			"type":                 "object",
			"description":          "An alert the webhook received with the right key, and what it did.",
			"required":             []string{"alertId", "receivedAt", "text", "command", "accounts", "destination", "status", "reason", "results"},
			"additionalProperties": false,
			"properties": object{
				"alertId":     object{"type": "string", "pattern": alertIDPattern},
				"receivedAt":  object{"type": "string", "format": "date-time"},
				"text":        object{"type": "string", "description": "the alert's message, its key removed"},
				"command":     object{"type": "string", "description": "the command (\"\" for a kill_switch alone, or one that did not parse)"},
				"accounts":    object{"type": "array", "items": object{"type": "string"}},
				"destination": object{"type": "string", "description": "desktop (the agent) or broker (the Tradovate family); \"\" for one that did not parse"},
				"status":      object{"type": "string", "enum": statuses},
				"reason":      object{"type": "string", "description": "why it was blocked or failed"},
				"results":     object{"type": "array", "items": ref("WebhookResult")},
				"dueAt":       object{"type": "string", "format": "date-time", "description": "a delayed alert's due time"},
			},
		},
		"WebhookAlertPage": object{
			"type":                 "object",
			"required":             []string{"alerts", "next"},
			"additionalProperties": false,
			"properties": object{
				"alerts": object{"type": "array", "items": ref("WebhookAlert"), "description": "the alerts, newest first"},
				"next": object{"type": []string{"string", "null"}, "pattern": alertIDPattern,
					"description": "the before of the next page when this one is full; null when there is no older alert"},
			},
		},
		"WebhookAlertPageResponse": envelope("WebhookAlertPage"),
		"WebhookAlertFields": object{
			"type":        "object",
			"description": "An alert as JSON: the command language's keys as members (matched without regard to case), values strings, numbers or booleans. Unknown keys are refused.",
			"required":    []string{"key"},
			"properties": object{
				"key":         object{"type": "string"},
				"command":     object{"type": "string", "enum": alertcmd.Commands},
				"account":     object{"type": "string", "description": "one account, or several separated by commas"},
				"instrument":  object{"type": "string"},
				"action":      object{"type": "string", "enum": []string{"BUY", "SELL"}},
				"qty":         object{"type": []string{"integer", "string"}},
				"order_type":  object{"type": "string", "enum": []string{"MARKET", "LIMIT", "STOPMARKET", "STOPLIMIT"}},
				"tif":         object{"type": "string", "enum": []string{"DAY", "GTC"}},
				"destination": object{"type": "string", "enum": []string{"desktop", "broker"}},
			},
			"additionalProperties": true,
		},
	}
}

// addWebhookRoutes adds the webhook's three routes and their schemas.
func addWebhookRoutes(f *docFamily, schemas, paths object) error {
	for name, s := range webhookSchemas() {
		if _, taken := schemas[name]; taken {
			return fmt.Errorf("api: the webhook's schema %s is also a generated schema", name)
		}
		schemas[name] = s
	}
	rateHeaders := object{"RateLimit": header(hRateLimit, true), "RateLimit-Policy": header(hRateLimitPolicy, true)}
	errors := func(codes map[int][]string) object {
		out := object{}
		for st, c := range codes {
			out[strconv.Itoa(st)] = errorResponse(f.statuses, st, c)
		}
		return out
	}
	put := func(path, method string, op object) {
		item, _ := paths[path].(object)
		if item == nil {
			item = object{}
			paths[path] = item
		}
		item[method] = op
	}

	info := errors(ownReadCodes)
	info["200"] = object{
		"description": "the webhook (made on first use)",
		"headers":     rateHeaders,
		"content": object{"application/json": object{"schema": ref("WebhookResponse"), "examples": object{"example": object{"value": object{
			"success": true, "data": object{"url": "/v1/send/wh_k3v7q2m4x6z6c5b2n7w4r3t6", "key": "whk_q7w3e8r2t6y4u5i9o3p2a7s6d4f8g2h5"},
		}}}}},
	}
	put(webhook.InfoPath, "get", object{
		"operationId": "webhook",
		"summary":     webhook.InfoEndpoint.Summary,
		"description": "Needs the pro plan; its own budget (policy webhook: 60 a minute, burst 20). The operator's relay webhook rotate issues a new key.",
		"x-route":     "webhook",
		"responses":   info,
	})

	var params []any
	for _, p := range webhook.AlertsEndpoint.Params {
		s := tradecall.ParamSchema(p, true)
		if p.Name == "before" {
			s["pattern"] = alertIDPattern
		}
		params = append(params, object{"name": p.Name, "in": p.In, "required": false, "description": p.Doc, "schema": s})
	}
	list := errors(ownReadCodes)
	list["200"] = object{
		"description": "the alerts, newest first",
		"headers":     rateHeaders,
		"content": object{"application/json": object{"schema": ref("WebhookAlertPageResponse"), "examples": object{"example": object{"value": object{
			"success": true, "data": object{"alerts": []any{object{
				"alertId": "tva_812", "receivedAt": "2026-11-18T15:00:01.234Z",
				"text":    "key=;command=PLACE;account=Sim101;instrument=ES1!;action=BUY;qty=1;order_type=MARKET;tif=DAY",
				"command": "PLACE", "accounts": []any{"Sim101"}, "destination": "desktop", "status": "executed", "reason": "",
				"results": []any{object{"account": "Sim101", "status": "executed", "orderIds": []any{"41f0"}}},
			}}, "next": nil},
		}}}}},
	}
	put(webhook.AlertsPath, "get", object{
		"operationId": "webhookAlerts",
		"summary":     webhook.AlertsEndpoint.Summary,
		"description": "The caller's own alerts only, newest first; page with before=data.next until next is null. An alert that " +
			"arrived with the right key but could not run is here as failed with its reason; a wrong key or an unknown webhook " +
			"records nothing. Kept as long as the activity log.",
		"x-route":    "webhook",
		"parameters": params,
		"responses":  list,
	})

	send := errors(webhookSendCodes)
	answer := func(desc string, ex object) object {
		return object{
			"description": desc,
			"headers":     rateHeaders,
			"content":     object{"application/json": object{"schema": ref("WebhookAnswerResponse"), "examples": object{"example": object{"value": ex}}}},
		}
	}
	send["200"] = answer("executed, or blocked by the alert's own conditions (rate_limit, the trading window, require_market_position, max_positions)",
		object{"success": true, "data": object{"alertId": "tva_812", "status": "executed",
			"results": []any{object{"account": "Sim101", "status": "executed", "orderIds": []any{"41f0"}}}}})
	send["202"] = answer("scheduled (delay=), or still running after 2.5 s: the outcome lands in the history",
		object{"success": true, "data": object{"alertId": "tva_813", "status": "scheduled", "results": []any{}, "dueAt": "2026-11-18T15:00:31Z"}})
	put(webhook.SendPath, "post", object{
		"operationId": "webhookSend",
		"summary":     "A TradingView alert: the command language's text (or its fields as JSON), with the webhook's key",
		"description": "What TradingView posts. No token: the webhook's id in the path and key=<key>; in the body admit it " +
			"(401 for either wrong, nothing recorded). The operator may take alerts from some addresses only (403 address_not_allowed). " +
			"Needs the pro plan; charged to the trading budget once per trading call. The same text within 2 s is a duplicate, answered " +
			"with the first one's answer. A failed alert answers the first failure's status and code, with its alertId. The trader's " +
			"guide, with every command and option: docs/webhooks.md.",
		"x-route":  "webhook",
		"security": []any{},
		"parameters": []any{object{"name": "webhookId", "in": "path", "required": true,
			"schema": object{"type": "string", "pattern": `^wh_[a-z2-7]{24}$`}}},
		"requestBody": object{"required": true, "content": object{
			"text/plain": object{"schema": object{"type": "string", "maxLength": alertcmd.MaxBody},
				"example": "key=whk_q7w3e8r2t6y4u5i9o3p2a7s6d4f8g2h5;command=PLACE;account=Sim101;instrument=ES1!;action=BUY;qty=1;order_type=MARKET;tif=DAY;"},
			"application/json": object{"schema": ref("WebhookAlertFields")},
		}},
		"responses": send,
	})
	return nil
}
