package manage

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"tradebridge/protocol"
	"tradebridge/relay/alerts"
	"tradebridge/relay/errcode"
)

// kindDoc describes one kind of resource in the OpenAPI document: its
// names, texts, examples, the constraints its rules add to its Go type,
// and the error codes its rules answer. Every kind of kinds() has one; a
// kind or an action without one fails the document's build.
type kindDoc struct {
	// name and plural name its operations (CreateCopier, ListCopiers);
	// noun and nouns its summaries.
	name, plural, noun, nouns string
	// tag groups the kind's operations; tagDoc describes the tag.
	tag, tagDoc string
	// resource describes the resource's schema, description the kind's
	// operations.
	resource, description string
	// create is a create's example body (collections), patch a PATCH's
	// (and a PUT's); example is the resource's shown example, merged
	// onto the kind's defaults.
	create, patch, example string
	// fields add constraints to the resource's fields (enums, bounds).
	fields map[string]object
	// hidden are fields of the Go type never shown (sealed secrets);
	// writeOnly are fields written and never shown.
	hidden, writeOnly []string
	// withSecret marks a kind whose create answers a secret once.
	withSecret bool
	// codes are the codes of the kind's rules (Guard, Validate, Check,
	// Seal, actions), answered by its changes; limitCode a create's past
	// MaxCount.
	codes     []string
	limitCode string
	actions   map[string]actionDoc
}

// actionDoc describes one POST {id}/{action}.
type actionDoc struct {
	id, summary, description string
	// accepted names the schema of a 202 answer; "" answers the resource.
	accepted string
	// withSecret marks an answer that shows a secret once.
	withSecret bool
}

// AlertTestAccepted is the data of an alert destination's test: the
// delivery queued.
type AlertTestAccepted struct {
	// DeliveryID is the test delivery's id, its X-Tradebridge-Delivery.
	DeliveryID    string `json:"deliveryId"`
	DestinationID string `json:"destinationId"`
	// State is "pending".
	State string `json:"state"`
}

func enum(values ...string) object { return object{"enum": values} }

// ratioSteps are the sizing ratios, as a schema's enum.
func ratioSteps() object {
	var out []any
	for _, r := range RatioSteps() {
		out = append(out, r)
	}
	return object{"enum": out, "description": "0.25 to 1.75 in steps of 0.25, then 2 to 10 in steps of 1"}
}

var (
	copierCodes = []string{errcode.AccountIdentityUnresolved, errcode.AccountNotFound, errcode.AutosyncConflict,
		errcode.CopierCycle, errcode.DuplicateCopier, errcode.DuplicateFollower, errcode.FollowerConflict,
		errcode.InvalidReplacement, errcode.TandemRequiresMonitor}
	monitorCodes = []string{errcode.AccountIdentityUnresolved, errcode.AccountNotFound, errcode.AlreadyExists,
		errcode.FieldLocked, errcode.MonitorLocked, errcode.MonitorNotStopped, errcode.MonitorStoppedUseRestart,
		errcode.SwitchesLocked, errcode.TandemDependency, errcode.WouldRetrip, errcode.AddonDisconnected,
		errcode.AddonVersionUnsupported}
	brokerCodes = []string{errcode.FieldNotApplicable, errcode.TradovateNotLinked, errcode.InternalError}

	copierFields = map[string]object{
		"copyMode": enum(protocol.CopyModeOrder, protocol.CopyModeExecution),
		"state":    enum(protocol.CopierRunning, protocol.CopierOff, protocol.CopierHalted),
	}
	monitorFields = map[string]object{
		"state":  enum(protocol.MonitorActive, protocol.MonitorPaused, protocol.MonitorStopped),
		"onTrip": enum(protocol.OnTripFlatten, protocol.OnTripNone),
	}
	restartDoc = actionDoc{
		summary: "Restart a stopped monitor",
		description: "Resumes a monitor that tripped (state stopped) with its limits as stored; 409 monitor_not_stopped when it is not stopped, " +
			"409 would_retrip when the account's P&L would stop it again at once, 409 monitor_locked inside the lock's window.",
	}
)

// kindDocs describe every kind, by name.
var kindDocs = map[string]kindDoc{
	copierKind.Name: {
		name: "Copier", plural: "Copiers", noun: "copier", nouns: "copiers",
		tag: "copiers", tagDoc: "Copiers of the desktop family: a leader account's trading copied to follower accounts by the agent.",
		resource: "A copier: the leader's orders (copyMode order) or fills (execution) copied to each follower, sized by ratio.",
		description: "The agent acts on copiers: a change is pushed to it and acknowledged before the answer. " +
			"PATCH with exactly {\"active\": false} stops a copier on its own budget (stop), never shed under load.",
		create:  `{"leader":"Sim101","followers":[{"account":"Sim102"}],"sizing":{"ratio":1}}`,
		patch:   `{"active":false}`,
		example: `{"leader":"Sim101","followers":[{"account":"Sim102","inverse":false}],"sizing":{"ratio":1}}`,
		fields:  copierFields, codes: copierCodes, limitCode: copierKind.LimitCode,
	},
	monitorKind.Name: {
		name: "Monitor", plural: "Monitors", noun: "monitor", nouns: "monitors",
		tag: "monitors", tagDoc: "Monitors of the desktop family: one per account, stopping its trading at a P&L limit or outside its hours.",
		resource:    "A monitor of one account: P&L limits, trailing drawdown, trading windows, closing-only and blocked signals, locks.",
		description: "The agent acts on monitors: a change is pushed to it and acknowledged before the answer. A stopped monitor resumes only by restart.",
		create:      `{"account":"Sim101","lossLimit":{"enabled":true,"amount":500}}`,
		patch:       `{"profitTarget":{"enabled":true,"amount":1000}}`,
		example:     `{"account":"Sim101","lossLimit":{"enabled":true,"amount":500}}`,
		fields:      monitorFields, codes: monitorCodes, limitCode: monitorKind.LimitCode,
		actions: map[string]actionDoc{"restart": withID(restartDoc, "RestartMonitor")},
	},
	groupKind.Name: {
		name: "AccountGroup", plural: "AccountGroups", noun: "account group", nouns: "account groups",
		tag: "account groups", tagDoc: "Named sets of accounts, of the desktop or the broker family, that orders and flattens may name.",
		resource: "An account group: a name for a set of accounts of one destination (desktop or tv).",
		create:   `{"name":"Evaluations","destination":"desktop","accounts":["Sim101","Sim102"]}`,
		patch:    `{"accounts":["Sim101"]}`,
		example:  `{"name":"Evaluations","destination":"desktop","accounts":["Sim101","Sim102"]}`,
		fields:   map[string]object{"destination": enum(protocol.DestinationDesktop, protocol.DestinationBroker)},
		codes: []string{errcode.AccountIdentityUnresolved, errcode.AccountNotFound, errcode.GroupNameConflict,
			errcode.TradovateNotLinked},
		limitCode: groupKind.LimitCode,
	},
	templateKind.Name: {
		name: "AtmTemplate", plural: "AtmTemplates", noun: "ATM template", nouns: "ATM templates",
		tag: "ATM templates", tagDoc: "ATM templates the agent gives the platform: brackets, breakeven and trailing stop, by name.",
		resource: "An ATM template: the brackets (stop loss and profit target per quantity), breakeven and trailing stop an order named with it gets.",
		create:   `{"name":"Scalp 1","config":{"quantity":1,"timeInForce":"gtc","brackets":[{"quantity":1,"stopLossTicks":8,"profitTargetTicks":16}]}}`,
		patch:    `{"name":"Scalp 2"}`,
		example:  `{"name":"Scalp 1","config":{"quantity":1,"timeInForce":"gtc","brackets":[{"quantity":1,"stopLossTicks":8,"profitTargetTicks":16}]}}`,
		codes:    []string{errcode.InvalidAtmConfig, errcode.TemplateNameConflict}, limitCode: templateKind.LimitCode,
	},
	controlsKind.Name: {
		name: "Controls", plural: "Controls", noun: "controls", nouns: "controls",
		tag: "controls", tagDoc: "The user's account-wide switches, and the kill switch.",
		resource: "The user's account-wide switches: the kill switch (set by PUT controls/kill-switch only), flatten on kill, block all signals.",
		patch:    `{"flattenOnKill":true}`,
		example:  `{"flattenOnKill":true}`,
		codes:    []string{errcode.UseKillSwitchEndpoint},
	},
	newsKind.Name: {
		name: "NewsLockout", plural: "NewsLockout", noun: "news lockout", nouns: "news lockout",
		tag: "news lockout", tagDoc: "Trading blocked, or accounts flattened, around the news events the user lists.",
		resource: "The news lockout: around each event (minutesBefore to minutesAfter), orders on the roots are refused (block) or positions flattened (flatten).",
		patch:    `{"enabled":true,"minutesBefore":5,"minutesAfter":5,"events":[{"at":"2026-12-04T13:30:00Z","title":"Nonfarm payrolls","impact":"high"}]}`,
		example:  `{"enabled":true,"minutesBefore":5,"minutesAfter":5,"events":[{"at":"2026-12-04T13:30:00Z","title":"Nonfarm payrolls","impact":"high"}]}`,
		fields:   map[string]object{"action": enum(protocol.NewsBlock, protocol.NewsFlatten)},
	},
	connectionsKind.Name: {
		name: "ConnectionSettings", plural: "ConnectionSettings", noun: "connection settings", nouns: "connection settings",
		tag: "connection settings", tagDoc: "How the agent keeps the platform's connections: reconnecting, and the data watchdog.",
		resource: "The settings of each platform connection the agent reported (its accounts are the agent's, read-only).",
		patch:    `{"connections":[{"name":"Simulated Data Feed","autoReconnect":true,"dataWatchdogSeconds":30}]}`,
		example:  `{"connections":[{"name":"Simulated Data Feed","accounts":["Sim101","Sim102"],"autoReconnect":true,"dataWatchdogSeconds":30}]}`,
		codes:    []string{errcode.AccountNotFound},
	},
	brokerCopierName: {
		name: "BrokerCopier", plural: "BrokerCopiers", noun: "broker copier", nouns: "broker copiers",
		tag: "broker copiers", tagDoc: "Copiers of the broker family: the linked broker login's accounts, copied by the relay's own engines (no desktop needed).",
		resource: "A copier of the broker family: a copier's fields but copyMode (fills are always copied as market orders).",
		description: "The relay's engines act on broker copiers at once; 409 tradovate_not_linked without a linked broker login. " +
			"PATCH with exactly {\"active\": false} stops one on its own budget (stop).",
		create:  `{"leader":"DEMO100001","followers":[{"account":"DEMO100002"}]}`,
		patch:   `{"active":false}`,
		example: `{"leader":"DEMO100001","followers":[{"account":"DEMO100002","inverse":false}]}`,
		fields:  map[string]object{"state": copierFields["state"]},
		codes:   append(append([]string{}, copierCodes...), brokerCodes...), limitCode: brokerCopierKind.LimitCode,
	},
	brokerMonitorName: {
		name: "BrokerMonitor", plural: "BrokerMonitors", noun: "broker monitor", nouns: "broker monitors",
		tag: "broker monitors", tagDoc: "Monitors of the broker family, run by the relay's engines on the linked broker login's accounts.",
		resource:    "A monitor of a broker account: every field of a desktop monitor.",
		description: "The relay's engines act on broker monitors at once; 409 tradovate_not_linked without a linked broker login.",
		create:      `{"account":"DEMO100001","lossLimit":{"enabled":true,"amount":500}}`,
		patch:       `{"profitTarget":{"enabled":true,"amount":1000}}`,
		example:     `{"account":"DEMO100001","lossLimit":{"enabled":true,"amount":500}}`,
		fields:      monitorFields,
		codes:       append(append([]string{}, monitorCodes...), brokerCodes...), limitCode: brokerMonitorKind.LimitCode,
		actions: map[string]actionDoc{"restart": withID(restartDoc, "RestartBrokerMonitor")},
	},
	alertKind.Name: {
		name: "AlertDestination", plural: "AlertDestinations", noun: "alert destination", nouns: "alert destinations",
		tag: "alerts", tagDoc: "Where the activity log's entries are sent: a webhook, Discord, Telegram or email.",
		resource: "An alert destination as shown: never a secret (a Discord URL by its host, a Telegram bot token by hasBotToken). " +
			"kind is webhook (url), discord (url), telegram (botToken, chatId) or email (to).",
		description: "A webhook receives each entry as a POST (application/json) with `X-Tradebridge-Signature: sha256=<hex>`, " +
			"the HMAC-SHA256 of the raw body keyed by the destination's secret (shown once: data.secret of the create and of rotate-secret), " +
			"and `X-Tradebridge-Delivery: <id>`, the same on every retry. Any 2xx takes a delivery; 408, 429, 5xx and network errors are retried for 24 hours. " +
			"Each destination takes at most 6 messages a minute; more become one summary (alert.summary).",
		create:     `{"kind":"webhook","name":"My bot","url":"https://example.com/hook","events":["monitor.tripped","agent.disconnected"]}`,
		patch:      `{"active":false}`,
		example:    `{"kind":"webhook","name":"My bot","url":"https://example.com/hook","events":["monitor.tripped","agent.disconnected"],"hasSecret":true}`,
		hidden:     []string{"sealed", "botToken"},
		writeOnly:  []string{"botToken"},
		withSecret: true,
		fields: map[string]object{
			"kind":         enum(alerts.Kinds...),
			"events":       object{"items": object{"type": "string", "enum": alerts.AlertableKinds}, "maxItems": alerts.MaxEvents, "uniqueItems": true},
			"graceSeconds": object{"minimum": 0, "maximum": alerts.MaxGraceSeconds},
			"name":         object{"maxLength": alerts.MaxNameLength},
		},
		codes:     []string{errcode.EmailUnavailable, errcode.InternalError, errcode.ManagementUnavailable},
		limitCode: alertKind.LimitCode,
		actions: map[string]actionDoc{
			"test": {id: "TestAlertDestination", summary: "Send a test alert now (even to an inactive destination)",
				description: "Queues one test delivery (kind alert.test), due at once; its outcome is an activity entry (alert.sent or alert.failed).",
				accepted:    "AlertTestAccepted"},
			"rotate-secret": {id: "RotateAlertSecret", summary: "Give a webhook a new signing secret, shown once",
				description: "The old secret stops signing at once; the answer's data.secret is the new one.", withSecret: true},
		},
	},
}

func withID(a actionDoc, id string) actionDoc {
	a.id = id
	return a
}

// exampleTime is the time of the resources' examples.
var exampleTime = time.Date(2026, 11, 18, 15, 4, 5, 0, time.UTC)

// resourceExample is the kind's resource as shown: its defaults, with
// example merged onto them, and an id and times.
func (d kindDoc) resourceExample(info KindInfo) (any, error) {
	var base map[string]any
	if err := json.Unmarshal(info.Default(), &base); err != nil {
		return nil, err
	}
	var top map[string]any
	if err := json.Unmarshal([]byte(d.example), &top); err != nil {
		return nil, fmt.Errorf("manage: the example of %s: %w", info.Name, err)
	}
	ex, _ := mergeJSON(base, top).(map[string]any)
	for _, f := range append(append([]string{}, d.hidden...), info.NotApplicable...) {
		delete(ex, f)
	}
	ex["id"] = prefixOf(info.Name) + "_" + strings.Repeat("0a", 10)
	ex["createdAt"] = exampleTime.Format(time.RFC3339)
	ex["updatedAt"] = exampleTime.Format(time.RFC3339)
	return ex, nil
}
