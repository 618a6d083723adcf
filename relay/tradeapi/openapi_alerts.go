package tradeapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"tradebridge/relay/alerts"
	"tradebridge/relay/manage"
)

// The alert destinations of the Management API (/v1/api/manage/alerts,
// package relay/manage) in the desktop family's document: their paths,
// the destinations' shapes, and the webhook's payload with its signature
// scheme. They are described by hand (x-route: manage), as the Management API's
// resources are not functions of the route table.

// alertsPath is the collection of alert destinations.
const alertsPath = "/v1/api/manage/alerts"

// alertWebhookDescription documents the webhook's delivery and its
// signature.
const alertWebhookDescription = "Alert destinations: where the activity log's entries of the kinds a destination asks for are sent " +
	"(elite plan; the Management API's admission, budgets, strict bodies, ETags and errors). " +
	"A webhook receives each as a POST of an AlertPayload (application/json) with two headers: " +
	"`X-Tradebridge-Signature: sha256=<hex>`, the HMAC-SHA256 of the raw body keyed by the destination's secret " +
	"(shown once, in the create's and rotate-secret's answers: data.secret), to compare in constant time before parsing; " +
	"and `X-Tradebridge-Delivery: <id>`, the delivery's id, the same on every retry, by which a receiver drops duplicates. " +
	"Any 2xx takes the delivery; 408, 429, 5xx, timeouts and connection errors are retried with backoff for 24 hours; " +
	"any other status (a 4xx, a redirect, which is never followed) fails it at once. " +
	"Each destination takes at most 6 messages a minute: the minute's further entries become one summary (kind alert.summary). " +
	"agent.disconnected waits graceSeconds, and is not sent if the agent is back by then. " +
	"The outcome of each delivery is an activity entry: alert.sent or alert.failed."

// alertSchemas are the components of the alert destinations.
func alertSchemas() object {
	dateTime := func(doc string) object { return object{"type": "string", "format": "date-time", "description": doc} }
	events := object{"type": "array", "minItems": 1, "maxItems": alerts.MaxEvents, "uniqueItems": true,
		"items":       object{"type": "string", "enum": alerts.AlertableKinds},
		"description": "the activity kinds sent to the destination (never alert.sent or alert.failed)"}
	common := func() object {
		return object{
			"name":         object{"type": "string", "maxLength": alerts.MaxNameLength, "description": "the user's name for it"},
			"active":       object{"type": "boolean", "default": true, "description": "false keeps it without sending to it"},
			"graceSeconds": object{"type": "integer", "minimum": 0, "maximum": alerts.MaxGraceSeconds, "default": alerts.DefaultGraceSeconds, "description": "how long agent.disconnected waits: an agent back within it sends nothing"},
			"events":       events,
		}
	}
	create := func(kind string, required []string, own object) object {
		props := common()
		props["kind"] = object{"type": "string", "const": kind}
		for k, v := range own {
			props[k] = v
		}
		return object{"type": "object", "additionalProperties": false, "required": append([]string{"kind", "events"}, required...), "properties": props}
	}
	webhookURL := object{"type": "string", "format": "uri", "maxLength": 2048,
		"description": "an https URL without credentials, on a public address (relay serve --alerts-allow-private allows private ones, and http)"}
	discordURL := object{"type": "string", "format": "uri", "pattern": `^https://(discord|discordapp)\.com/api/webhooks/[0-9]+/[A-Za-z0-9_-]+$`,
		"description": "the channel's webhook URL, which holds Discord's token: kept sealed, shown by its host only"}
	botToken := object{"type": "string", "pattern": alerts.BotTokenPattern, "format": "password", "writeOnly": true,
		"description": "the bot's token (from BotFather): kept sealed, never shown (hasBotToken)"}
	chatID := object{"type": "string", "pattern": alerts.ChatIDPattern, "description": "the chat the bot writes to"}
	to := object{"type": "string", "format": "email", "description": "the address, sent through the relay operator's SMTP server"}

	shown := common()
	shown["id"] = object{"type": "string", "pattern": `^ale_[0-9a-f]{20}$`}
	shown["createdAt"] = dateTime("when it was created")
	shown["updatedAt"] = dateTime("when it last changed")
	shown["kind"] = object{"type": "string", "enum": alerts.Kinds}
	shown["url"] = object{"type": "string", "description": "a webhook's URL; a Discord destination's host only"}
	shown["chatId"] = chatID
	shown["to"] = to
	shown["hasSecret"] = object{"type": "boolean", "description": "a webhook has its signing secret"}
	shown["hasBotToken"] = object{"type": "boolean", "description": "a Telegram destination has its bot token"}
	withSecret := object{"allOf": []any{ref("AlertDestination"), object{"type": "object", "properties": object{
		"secret": object{"type": "string", "pattern": `^whsec_[0-9a-f]{64}$`,
			"description": "the webhook's signing secret, shown in this answer only: keep it"},
	}}}}
	patch := common()
	changes := object{"url": object{"type": "string", "description": "a webhook's or Discord's new URL"}, "botToken": botToken, "chatId": chatID, "to": to}
	for k, v := range changes {
		patch[k] = v
	}
	return object{
		"AlertDestination": object{"type": "object", "description": "An alert destination as shown: never a secret.",
			"required": []string{"id", "kind", "name", "active", "graceSeconds", "events", "createdAt", "updatedAt"}, "properties": shown},
		"AlertDestinationCreated": withSecret,
		"AlertDestinationCreate": object{"description": "A new destination, by kind.", "oneOf": []any{
			create(alerts.KindWebhook, []string{"url"}, object{"url": webhookURL}),
			create(alerts.KindDiscord, []string{"url"}, object{"url": discordURL}),
			create(alerts.KindTelegram, []string{"botToken", "chatId"}, object{"botToken": botToken, "chatId": chatID}),
			create(alerts.KindEmail, []string{"to"}, object{"to": to}),
		}},
		"AlertDestinationPatch": object{"type": "object", "additionalProperties": false, "properties": patch,
			"description": "The fields to change; the kind is fixed at creation. Secrets not sent are kept."},
		"AlertDestinationList": object{"type": "array", "items": ref("AlertDestination")},
		"AlertTestAccepted": object{"type": "object", "required": []string{"deliveryId", "destinationId", "state"}, "properties": object{
			"deliveryId":    object{"type": "string", "pattern": `^dlv_[0-9a-f]{24}$`, "description": "the test delivery's id, its X-Tradebridge-Delivery"},
			"destinationId": object{"type": "string"},
			"state":         object{"type": "string", "const": "pending"},
		}},
		"AlertDeleted": object{"type": "object", "required": []string{"id", "deleted"}, "properties": object{
			"id": object{"type": "string"}, "deleted": object{"type": "boolean", "const": true},
		}},
		"AlertPayload": object{"type": "object", "description": alertWebhookDescription,
			"required": []string{"id", "at", "kind", "summary", "detail"},
			"properties": object{
				"id":      object{"type": "string", "description": "the activity entry's id (a test's or a summary's: the delivery's)"},
				"at":      dateTime("when it happened, UTC"),
				"kind":    object{"type": "string", "enum": append(append([]string{}, alerts.AlertableKinds...), alerts.PayloadTest, alerts.PayloadSummary)},
				"account": object{"type": "string", "description": "the account it concerns, when one applies"},
				"summary": object{"type": "string", "description": "one line for a person"},
				"detail":  object{"type": "object", "description": "the kind's detail, as the activity log documents it; a summary's: count, kinds, from, until"},
			},
		},
	}
}

// alertRoute is one operation of the alert destinations.
type alertRoute struct {
	method, path, id, summary string
	status                    int
	body, data                string
	codes                     map[int][]string
}

// alertRoutes are the operations of the alert destinations. Their error
// codes are the Management API's own (manage.ErrorCodes).
func alertRoutes() []alertRoute {
	one := alertsPath + "/{id}"
	rs := []alertRoute{
		{http.MethodGet, alertsPath, "ListAlertDestinations", "List the user's alert destinations", http.StatusOK, "", "AlertDestinationList", nil},
		{http.MethodPost, alertsPath, "CreateAlertDestination", "Create an alert destination (a webhook's answer holds its secret, once)", http.StatusCreated,
			"AlertDestinationCreate", "AlertDestinationCreated", nil},
		{http.MethodGet, one, "GetAlertDestination", "Read an alert destination", http.StatusOK, "", "AlertDestination", nil},
		{http.MethodPatch, one, "ChangeAlertDestination", "Change an alert destination (If-Match: its ETag, optional)", http.StatusOK, "AlertDestinationPatch", "AlertDestination", nil},
		{http.MethodDelete, one, "DeleteAlertDestination", "Delete an alert destination", http.StatusOK, "", "AlertDeleted", nil},
		{http.MethodPost, one + "/test", "TestAlertDestination", "Send a test alert now (even to an inactive destination)", http.StatusAccepted, "", "AlertTestAccepted", nil},
		{http.MethodPost, one + "/rotate-secret", "RotateAlertSecret", "Give a webhook a new signing secret, shown once", http.StatusOK, "", "AlertDestinationCreated", nil},
	}
	for i := range rs {
		rs[i].codes = manage.ErrorCodes(rs[i].method, rs[i].path)
	}
	return rs
}

// addAlertRoutes adds the alert destinations' operations and schemas to
// f's document.
func addAlertRoutes(f *docFamily, schemas, paths object) error {
	for name, s := range alertSchemas() {
		if _, taken := schemas[name]; taken {
			return fmt.Errorf("api: the alerts' schema %s is also a generated schema", name)
		}
		schemas[name] = s
	}
	for _, ar := range alertRoutes() {
		envelope := object{"type": "object", "required": []string{"success", "data"}, "properties": object{
			"success": object{"type": "boolean", "const": true},
			"data":    ref(ar.data),
		}}
		responses := object{strconv.Itoa(ar.status): object{
			"description": "success (in both profiles: {success:true, data:…})",
			"content":     object{"application/json": object{"schema": envelope}},
		}}
		for st, codes := range ar.codes {
			responses[strconv.Itoa(st)] = errorResponse(f.statuses, st, codes)
		}
		op := object{
			"operationId": ar.id,
			"summary":     ar.summary,
			"description": alertWebhookDescription,
			"tags":        []string{"alerts"},
			"x-route":     "manage",
			"responses":   responses,
		}
		if strings.Contains(ar.path, "{id}") {
			op["parameters"] = []any{object{"name": "id", "in": "path", "required": true, "schema": object{"type": "string", "pattern": `^[a-z]{3}_[0-9a-f]{20}$`}}}
		}
		if ar.body != "" {
			op["requestBody"] = object{"required": true, "content": object{"application/json": object{"schema": ref(ar.body)}}}
		}
		item, _ := paths[ar.path].(object)
		if item == nil {
			item = object{}
			paths[ar.path] = item
		}
		item[strings.ToLower(ar.method)] = op
	}
	return nil
}
