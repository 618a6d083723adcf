package dashboard

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/activity"
	"tradebridge/relay/alerts"
	"tradebridge/relay/store"
)

// The alert destinations' editor (/app/manage/alerts) and its panel of
// the last deliveries, read from the activity log.

// activityKindWords name each activity kind for a trader (the alert
// destinations' event checkboxes); TestActivityKindWords pins that every
// kind a destination may ask for has words.
var activityKindWords = map[string]string{
	protocol.ActivityOrderPlaced:        "Orders placed",
	protocol.ActivityOrderChanged:       "Orders changed, cancelled or closed",
	protocol.ActivityOrderRefused:       "Orders refused or failed",
	protocol.ActivityOrderReplayed:      "Repeated orders not placed again",
	protocol.ActivityTradingBlocked:     "Orders blocked by a rule",
	protocol.ActivityBudgetRefused:      "Requests refused for going too fast",
	protocol.ActivityConfigChanged:      "Settings changed",
	protocol.ActivityCopierCopied:       "Trades copied by a copier",
	protocol.ActivityCopierHalted:       "A copier halted",
	protocol.ActivityMonitorTripped:     "A monitor stopped an account",
	protocol.ActivityMonitorBlind:       "A monitor cannot see an open position's P&L (no market data), or sees again",
	protocol.ActivityKillSwitchChanged:  "The kill switch turned on or off",
	protocol.ActivityNewsLockoutEntered: "A news lockout started",
	protocol.ActivityStrategyRefused:    "Orders refused by a strategy's lock",
	protocol.ActivityExitsPlaced:        "Exits of an entry placed",
	protocol.ActivityExitsFailed:        "Exits of an entry could not be placed",
	protocol.ActivityAgentConnected:     "Your PC connected",
	protocol.ActivityAgentDisconnected:  "Your PC disconnected",
	protocol.ActivityAgentUpdated:       "Your PC's agent was updated",
	protocol.ActivityBrokerLinked:       "A broker login was linked",
	protocol.ActivityBrokerUnlinked:     "The broker login was unlinked",
	protocol.ActivityBrokerLoginFailed:  "The broker refused the linked login",
	protocol.ActivityBrokerTokenExpired: "The broker's session expired",
	protocol.ActivityWebhookReceived:    "TradingView alerts received",
	protocol.ActivityAlertSent:          "An alert was sent",
	protocol.ActivityAlertFailed:        "An alert could not be sent",
	alerts.PayloadTest:                  "Test",
	alerts.PayloadSummary:               "Summary of the alerts past the rate limit",

	protocol.ActivityBrokerMarketDataRefused: "The broker refused an instrument's market data",
}

// eventChoices are the activity kinds a destination may ask for, in the
// alerts package's order, each named in words (the checkbox's value is
// the kind).
func eventChoices() []Choice {
	out := make([]Choice, 0, len(alerts.AlertableKinds))
	for _, k := range alerts.AlertableKinds {
		out = append(out, Choice{Value: k, Label: or(activityKindWords[k], k)})
	}
	return out
}

// alertKindChoices are the kinds of destination.
var alertKindChoices = []Choice{
	{Value: alerts.KindWebhook, Label: "Webhook (your HTTPS endpoint, signed)"},
	{Value: alerts.KindDiscord, Label: "Discord channel"},
	{Value: alerts.KindTelegram, Label: "Telegram chat"},
	{Value: alerts.KindEmail, Label: "Email"},
}

// alertEditor is the alert destinations' editor.
func alertEditor() Editor {
	return Editor{
		Path:  "alerts",
		Title: "Alerts", Noun: "alert destination", Nav: "alerts",
		Intro: "Where the relay sends alerts about your account (a webhook, Discord, Telegram or email), and which events each one gets.",
		Words: map[string]Words{
			"kind": {Label: "Kind", Input: InputSelect, Choices: alertKindChoices,
				Help: "Set when the destination is made; it cannot be changed after."},
			"name":   {Label: "Name", Placeholder: "Trading desk", Help: "Your name for it; optional."},
			"active": {Label: "On", Help: "Sends alerts while this is checked. \"Send a test\" works either way."},
			"graceSeconds": {Label: "Grace before a disconnect alert (seconds)", Placeholder: strconv.Itoa(alerts.DefaultGraceSeconds),
				Help: "0 to " + strconv.Itoa(alerts.MaxGraceSeconds) + ": a PC that is back within this many seconds sends no \"Your PC disconnected\" alert."},
			"events": {Label: "Events", Input: InputChecks, Choices: eventChoices(),
				Help: "The events sent to it; check at least one."},
			"url": {Label: "URL", Placeholder: "https://",
				OnlyIf: &Condition{Field: "kind", Values: []string{alerts.KindWebhook, alerts.KindDiscord}},
				Help: "A webhook: your HTTPS endpoint, which gets each alert as a JSON POST signed with the signing secret " +
					"(header " + alerts.HeaderSignature + "). Discord: the channel's webhook URL. Never shown again once saved."},
			"botToken": {Label: "Bot token", OnlyIf: &Condition{Field: "kind", Values: []string{alerts.KindTelegram}},
				Help: "The Telegram bot's token, from @BotFather. Never shown again once saved."},
			"chatId": {Label: "Chat id", Placeholder: "-1001234567890", OnlyIf: &Condition{Field: "kind", Values: []string{alerts.KindTelegram}},
				Help: "The Telegram chat the bot writes to."},
			"to": {Label: "Email address", Input: InputEmail, OnlyIf: &Condition{Field: "kind", Values: []string{alerts.KindEmail}}},
		},
		Columns: []Column{
			{Label: "Name", Value: func(m map[string]any) string { return or(shownString(m["name"]), "—") }},
			{Label: "Kind", Value: func(m map[string]any) string { return shownString(m["kind"]) }},
			{Label: "Events", Value: eventsCell},
			{Label: "On", Value: func(m map[string]any) string { return onOff(m["active"]) }},
		},
		Actions: []Action{
			{Name: "test", Button: "Send a test", Done: "Test queued: see the deliveries below.",
				Help: "Sends a test alert now, even while it is off."},
			{Name: "rotate-secret", Button: "Rotate secret",
				Done:   "Secret rotated: alerts are signed with the new secret from now on; the old one signs nothing more.",
				Help:   "Makes a new signing secret and shows it once.",
				OnlyIf: &Condition{Field: "kind", Values: []string{alerts.KindWebhook}}},
		},
		Once:  map[string]string{"secret": "Signing secret"},
		Panel: &Panel{Name: "deliveries", Load: loadDeliveries},
	}
}

// eventsCell lists a destination's events in words.
func eventsCell(m map[string]any) string {
	var out []string
	for _, k := range shownStrings(m["events"]) {
		out = append(out, or(activityKindWords[k], k))
	}
	return strings.Join(out, ", ")
}

// Bounds of the deliveries panel.
const (
	// maxDeliveries is how many deliveries the panel shows.
	maxDeliveries = 10
	// deliveriesPage and deliveriesScan bound the reads of the log: its
	// alert entries are read a page at a time, up to deliveriesScan of
	// them, for the destination's.
	deliveriesPage = 100
	deliveriesScan = 500
)

// deliveriesView is the panel of a destination's last deliveries.
type deliveriesView struct {
	// ID is the destination's id; Href the panel's own URL.
	ID, Href string
	Items    []deliveryView
	// Note says why the deliveries could not be read.
	Note string
}

// deliveryView is one delivery's outcome.
type deliveryView struct {
	// At is when its outcome was known (RFC 3339) and When the same in
	// words.
	At, When string
	// Outcome is "sent" or "failed"; Label says it.
	Outcome, Label string
	// What is the alert's event in words.
	What string
	// Attempts is how many tries it took.
	Attempts int
	// Error is why it failed, in words.
	Error string
}

// loadDeliveries is the deliveries panel's loader (Panel.Load).
func loadDeliveries(ctx context.Context, s *Server, userID, id string) any {
	v := &deliveriesView{ID: id, Href: "/app/manage/alerts/" + id + "/deliveries"}
	items, err := lastDeliveries(ctx, s.opts.Activity, userID, id, maxDeliveries)
	if err != nil {
		s.log.Warn("reading the alert deliveries", zap.Error(err))
		v.Note = "The deliveries cannot be read right now. Reload the page shortly."
	}
	v.Items = items
	return v
}

// lastDeliveries returns the newest n outcomes of deliveries to the
// user's destination id: the activity log's alert.sent and alert.failed
// entries whose detail names it, newest first.
func lastDeliveries(ctx context.Context, r activity.Reader, userID, id string, n int) ([]deliveryView, error) {
	var out []deliveryView
	q := store.ActivityQuery{Kinds: []string{protocol.ActivityAlertSent, protocol.ActivityAlertFailed}, Limit: deliveriesPage}
	for scanned := 0; scanned < deliveriesScan; {
		recs, err := r.ListActivity(ctx, userID, q)
		if err != nil {
			return out, err
		}
		for _, rec := range recs {
			if d, ok := deliveryOf(rec, id); ok {
				out = append(out, d)
				if len(out) == n {
					return out, nil
				}
			}
			q.Before = rec.Seq
		}
		scanned += len(recs)
		if len(recs) < q.Limit {
			break
		}
	}
	return out, nil
}

// deliveryOf reads an alert outcome entry; ok is false when it is not
// one of destination id.
func deliveryOf(rec store.ActivityRecord, id string) (deliveryView, bool) {
	var d struct {
		DestinationID string `json:"destinationId"`
		AlertKind     string `json:"alertKind"`
		Attempts      int    `json:"attempts"`
		Error         string `json:"error"`
	}
	if (rec.Kind != protocol.ActivityAlertSent && rec.Kind != protocol.ActivityAlertFailed) ||
		json.Unmarshal(rec.Detail, &d) != nil || d.DestinationID != id {
		return deliveryView{}, false
	}
	v := deliveryView{At: rec.At.UTC().Format(time.RFC3339), When: when(rec.At), Outcome: "sent", Label: "Sent",
		What: or(activityKindWords[d.AlertKind], d.AlertKind), Attempts: d.Attempts}
	if rec.Kind == protocol.ActivityAlertFailed {
		v.Outcome, v.Label, v.Error = "failed", "Failed", deliveryError(d.Error)
	}
	return v, true
}

// deliveryErrorWords say why a delivery failed, by the alerts package's
// reason.
var deliveryErrorWords = map[string]string{
	"timeout":             "the destination did not answer in time",
	"cancelled":           "the relay stopped while sending",
	"dns_error":           "the destination's host name does not resolve",
	"tls_error":           "the destination's HTTPS certificate or connection failed",
	"connection_error":    "the destination could not be reached",
	"invalid_url":         "the URL is not valid",
	"address_not_allowed": "the URL's address is on a private network, which the relay does not send to",
	"secret_unavailable":  "the relay could not open the destination's secrets",
	"invalid_body":        "the alert could not be written",
	"smtp_not_configured": "this relay sends no email",
	"smtp_misconfigured":  "the relay's email server is misconfigured",
	"smtp_no_starttls":    "the relay's email server offers no encryption",
	"unknown_kind":        "the destination's kind is unknown",
}

// deliveryError says a failed delivery's reason in words ("http_500":
// the destination answered HTTP 500).
func deliveryError(reason string) string {
	if s, ok := deliveryErrorWords[reason]; ok {
		return s
	}
	if code, ok := strings.CutPrefix(reason, "http_"); ok {
		return "the destination answered HTTP " + code
	}
	if code, ok := strings.CutPrefix(reason, "smtp_"); ok {
		return "the email server answered " + code
	}
	if reason == "" {
		return "not delivered"
	}
	return reason
}
