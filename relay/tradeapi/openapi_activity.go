package tradeapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"tradebridge/protocol"
	"tradebridge/relay/activity"
	"tradebridge/relay/errcode"
	"tradebridge/relay/tradecall"
)

// The activity log's route (GET /v1/api/activity, package relay/activity)
// in the desktop family's documents, and its entries' schemas, which the
// stream API's document (AsyncAPI: the activity frames) shares.

// ownReadCodes are the error codes of the GET routes of the user's own
// records: the activity log, the webhook and its alert history.
var ownReadCodes = map[int][]string{
	http.StatusBadRequest:          {errcode.InvalidArgument, errcode.UnknownParameter, errcode.UnexpectedBody},
	http.StatusUnauthorized:        {errcode.Unauthorized},
	http.StatusForbidden:           {errcode.PlanRequired},
	http.StatusTooManyRequests:     {errcode.RateLimited, errcode.TooManyConcurrentRequests},
	http.StatusServiceUnavailable:  {errcode.StorageUnavailable, errcode.ShuttingDown},
	http.StatusInternalServerError: {errcode.InternalError},
}

// activitySchemas are the schemas of the log's entries: ActivityEntry and
// ActivitySource, their kinds the protocol's pinned lists.
func activitySchemas() object {
	return object{
		"ActivityEntry": object{
			"type":                 "object",
			"description":          "One entry of the user's activity log: something done or decided on the account, by whom, and its outcome.",
			"required":             []string{"id", "at", "kind", "source", "summary", "detail"},
			"additionalProperties": false,
			"properties": object{
				"id":      object{"type": "string", "pattern": `^act_[1-9][0-9]*$`, "description": "the entry's id, by which a reader pages (before)"},
				"at":      object{"type": "string", "format": "date-time", "description": "when it happened, UTC, to the millisecond"},
				"kind":    object{"type": "string", "enum": protocol.ActivityKinds, "description": "what happened; each kind's detail keys are documented in docs/activity.md"},
				"account": object{"type": "string", "maxLength": 64, "description": "the trading account it concerns; absent when none applies"},
				"source":  ref("ActivitySource"),
				"summary": object{"type": "string", "maxLength": protocol.MaxActivitySummary, "description": "one line for a person"},
				"detail":  object{"type": "object", "description": "the kind's structured detail; {} when none; never a secret"},
			},
		},
		"ActivitySource": object{
			"type":                 "object",
			"description":          "Who or what acted.",
			"required":             []string{"kind"},
			"additionalProperties": false,
			"properties": object{
				"kind": object{"type": "string", "enum": protocol.ActivitySourceKinds},
				"id":   object{"type": "string", "description": "the source among those of its kind: an API token's id, a copier's, monitor's, webhook's or alert destination's id"},
				"name": object{"type": "string", "description": "the source's name when it has one"},
			},
		},
	}
}

// addActivityRoute adds GET /v1/api/activity and its schemas.
func addActivityRoute(f *docFamily, schemas, paths object) error {
	own := activitySchemas()
	own["ActivityPage"] = object{
		"type":     "object",
		"required": []string{"events", "next"},
		"properties": object{
			"events": object{"type": "array", "items": ref("ActivityEntry"), "description": "the entries, newest first"},
			"next": object{"type": []string{"string", "null"}, "pattern": `^act_[1-9][0-9]*$`,
				"description": "the before of the next page when this one is full; null when no older entry matches"},
		},
	}
	own["ActivityPageResponse"] = object{
		"type":     "object",
		"required": []string{"success", "data"},
		"properties": object{
			"success": object{"type": "boolean", "const": true},
			"data":    ref("ActivityPage"),
		},
	}
	for name, s := range own {
		if _, taken := schemas[name]; taken {
			return fmt.Errorf("api: the activity route's schema %s is also a generated schema", name)
		}
		schemas[name] = s
	}
	ep := &activity.Endpoint
	var params []any
	for _, p := range ep.Params {
		s := tradecall.ParamSchema(p, true)
		switch p.Name {
		case "kind":
			s["description"] = "a comma-separated list of: " + strings.Join(protocol.ActivityKinds, ", ")
		case "before":
			s["pattern"] = `^act_[1-9][0-9]*$`
		}
		params = append(params, object{"name": p.Name, "in": p.In, "required": false, "description": p.Doc, "schema": s})
	}
	example := object{"success": true, "data": object{
		"events": []any{object{
			"id": "act_1042", "at": "2026-11-02T15:04:05.123Z", "kind": protocol.ActivityMonitorTripped, "account": "Sim101",
			"source":  object{"kind": protocol.SourceMonitor, "id": "mon_7f3a"},
			"summary": "Monitor tripped on Sim101: loss limit -500.00 reached at -512.50; flattened",
			"detail":  object{"limit": "lossLimit", "pnl": -512.5, "threshold": -500, "flatten": object{"orderIds": []any{"9f1c"}}},
		}},
		"next": nil,
	}}
	responses := object{"200": object{
		"description": "the entries (in both profiles: {success:true, data:{…}})",
		"headers":     object{"RateLimit": header(hRateLimit, true), "RateLimit-Policy": header(hRateLimitPolicy, true)},
		"content": object{"application/json": object{"schema": ref("ActivityPageResponse"),
			"examples": object{"example": object{"value": example}}}},
	}}
	for st, codes := range ownReadCodes {
		responses[strconv.Itoa(st)] = errorResponse(f.statuses, st, codes)
	}
	item, _ := paths[activity.Path].(object)
	if item == nil {
		item = object{}
		paths[activity.Path] = item
	}
	item["get"] = object{
		"operationId": "activity",
		"summary":     ep.Summary,
		"description": "The caller's own entries only, newest first. Page with before=data.next until next is null. " +
			"Needs the pro plan; its own budget (policy activity: 60 a minute, burst 20). The stream socket's " +
			"subscribeActivity sends new entries as they are written (see /v1/api/asyncapi.json).",
		"x-route":    "activity",
		"parameters": params,
		"responses":  responses,
	}
	return nil
}
