package tradeapi

import (
	"fmt"
	"net/http"
	"strconv"

	"tradebridge/relay/manage"
)

// The Management API's kill switch (PUT /v1/api/manage/controls/kill-switch,
// package relay/manage) in the desktop family's document, described by
// hand (x-route: manage) like the alert destinations: the one control a
// trader reaches for from anywhere, the PC on or off.

// killSwitchPath is the kill switch's route.
const killSwitchPath = "/v1/api/manage/controls/kill-switch"

// killSwitchDescription documents the kill switch's behaviour with the
// agent offline.
const killSwitchDescription = "Turns the kill switch on or off (elite plan; the Management API's admission, its kill budget, " +
	"strict bodies, If-Match and errors). Accepted whether or not the agent is connected: the change is stored, and " +
	"`applied` says whether the agent runs it yet. While it is on and not applied, the relay itself refuses the user's " +
	"orders that may open or add to a position with 400 trading_blocked (rule: killSwitch), as the agent does; reads, " +
	"cancels, closes and flattens are not refused. The agent gets it when it connects, before any other call, and " +
	"flattens then when flattenOnKill is on and the switch turned on."

// killSwitchSchemas are the kill switch's components.
func killSwitchSchemas() object {
	return object{
		"KillSwitchChange": object{"type": "object", "additionalProperties": false, "required": []string{"enabled"},
			"properties": object{
				"enabled": object{"type": "boolean", "description": "true turns the kill switch on, false off"},
				"flattenOnKill": object{"type": "boolean",
					"description": "when sent, sets the controls' flattenOnKill in the same change: the switch turning on flattens every account"},
			}},
		"Controls": object{"type": "object", "description": "The user's account-wide switches.",
			"required": []string{"id", "killSwitch", "flattenOnKill", "blockAllSignals"},
			"properties": object{
				"id":              object{"type": "string"},
				"createdAt":       object{"type": "string", "format": "date-time"},
				"updatedAt":       object{"type": "string", "format": "date-time"},
				"killSwitch":      object{"type": "boolean"},
				"flattenOnKill":   object{"type": "boolean"},
				"blockAllSignals": object{"type": "boolean"},
			}},
	}
}

// addKillSwitchRoute adds the kill switch's operation and schemas to f's
// document.
func addKillSwitchRoute(f *docFamily, schemas, paths object) error {
	for name, s := range killSwitchSchemas() {
		if _, taken := schemas[name]; taken {
			return fmt.Errorf("api: the kill switch's schema %s is also another schema", name)
		}
		schemas[name] = s
	}
	envelope := object{"type": "object", "required": []string{"success", "data", "meta", "changed", "applied"}, "properties": object{
		"success": object{"type": "boolean", "const": true},
		"data":    ref("Controls"),
		"meta": object{"type": "object", "required": []string{"etag"}, "properties": object{
			"etag": object{"type": "string", "description": "the controls' ETag, also in the ETag header"},
		}},
		"changed": object{"type": "boolean", "description": "false when the switch already was as asked (nothing stored)"},
		"applied": object{"type": "boolean",
			"description": "whether the user's agent runs the configuration that carries the switch; false: stored, and applied when the agent connects"},
	}}
	responses := object{strconv.Itoa(http.StatusOK): object{
		"description": "success (in both profiles)",
		"content":     object{"application/json": object{"schema": envelope}},
	}}
	codes := manage.ErrorCodes(http.MethodPut, killSwitchPath)
	for st, c := range codes {
		responses[strconv.Itoa(st)] = errorResponse(f.statuses, st, c)
	}
	paths[killSwitchPath] = object{"put": object{
		"operationId": "SetKillSwitch",
		"summary":     "Turn the kill switch on or off, the agent connected or not",
		"description": killSwitchDescription,
		"tags":        []string{"controls"},
		"x-route":     "manage",
		"requestBody": object{"required": true, "content": object{"application/json": object{"schema": ref("KillSwitchChange")}}},
		"responses":   responses,
	}}
	return nil
}
