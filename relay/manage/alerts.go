package manage

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"tradebridge/protocol"
	"tradebridge/relay/alerts"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// The alert destination kind: where a user's alerts go (a webhook, a
// Discord channel, a Telegram chat, an email address) and which activity
// kinds each takes (package relay/alerts sends them). Its hooks:
//
//   - Validate checks the destination on its own (422 validation_failed
//     with every field at fault): the kind's own fields, the events, the
//     grace; a webhook's URL by alerts.CheckURL (https, no credentials,
//     no private address unless the operator allows them);
//   - Check refuses an email destination when the operator configured no
//     SMTP server (409 email_unavailable);
//   - Seal moves the secrets a body sent (a Discord URL, a bot token) and
//     a new webhook's generated signing secret into the sealed field,
//     shown once in the create's answer (data.secret); Show hides the
//     sealed field;
//   - the actions: test (202, a test delivery queued at once) and
//     rotate-secret (a webhook's new secret, shown once).

// Bounds of the alert destinations.
const (
	// maxAlerts bounds a user's alert destinations.
	maxAlerts = 20
)

// alertKind is the alert destination kind of the Management API.
var alertKind = &Kind[alerts.Destination]{
	Name:      alerts.ResourceKind,
	Path:      "alerts",
	ReadOnly:  []string{"hasSecret", "hasBotToken", "sealed"},
	Immutable: []string{"kind"},
	Required:  []string{"kind", "events"},
	Secret:    []string{"url", "botToken", "sealed", "secret"},
	MaxCount:  maxAlerts,
	LimitCode: errcode.LimitReached,
	Default:   defaultAlert,
	Meta:      func(v *alerts.Destination) *protocol.Meta { return &v.Meta },
	Derive:    deriveAlert,
	Validate:  validateAlert,
	Check:     checkAlert,
	Seal:      sealAlert,
	Show:      alerts.Redact,
	Actions: map[string]func(c *Change[alerts.Destination], ag Agent) *httpapi.Error{
		"test":          testAlert,
		"rotate-secret": rotateAlertSecret,
	},
}

// defaultAlert is a new destination before a create's body is decoded
// onto it: active, with the default grace.
func defaultAlert() alerts.Destination {
	return alerts.Destination{Active: true, GraceSeconds: alerts.DefaultGraceSeconds, Events: []string{}}
}

// deriveAlert shows an empty list rather than null.
func deriveAlert(v *alerts.Destination, _ *Snapshot) {
	if v.Events == nil {
		v.Events = []string{}
	}
}

// urlChanged reports whether the change sets the destination's URL (on
// create, or to another value than the one stored and shown).
func urlChanged(c *Change[alerts.Destination]) bool {
	return c.Old == nil || c.New.URL != c.Old.URL
}

// validateAlert checks a destination on its own.
func validateAlert(c *Change[alerts.Destination]) *httpapi.Error {
	v := c.New
	var f fieldErrs
	if !slices.Contains(alerts.Kinds, v.Kind) {
		f.allowed("kind", alerts.Kinds...)
	}
	if len(v.Name) > alerts.MaxNameLength {
		f.limit("name", errcode.FieldCodeLessThanEqual, alerts.MaxNameLength)
	}
	switch {
	case v.GraceSeconds < 0:
		f.limit("graceSeconds", errcode.FieldCodeGreaterThanEqual, 0)
	case v.GraceSeconds > alerts.MaxGraceSeconds:
		f.limit("graceSeconds", errcode.FieldCodeLessThanEqual, alerts.MaxGraceSeconds)
	}
	if len(v.Events) == 0 {
		f.add("events", errcode.FieldCodeRequired)
	}
	if len(v.Events) > alerts.MaxEvents {
		f.limit("events", errcode.FieldCodeLessThanEqual, alerts.MaxEvents)
	}
	seen := map[string]bool{}
	for i, k := range v.Events {
		switch {
		case !alerts.Alertable(k):
			f.allowed(path("events", i), alerts.AlertableKinds...)
		case seen[k]:
			f.add(path("events", i), errcode.FieldCodeDuplicateItem)
		}
		seen[k] = true
	}
	// The fields of the kind, and none of another kind's.
	own := map[string][]string{
		alerts.KindWebhook:  {"url"},
		alerts.KindDiscord:  {"url"},
		alerts.KindTelegram: {"botToken", "chatId"},
		alerts.KindEmail:    {"to"},
	}[v.Kind]
	set := map[string]bool{"url": v.URL != "", "botToken": v.BotToken != "" || v.HasBotToken, "chatId": v.ChatID != "", "to": v.To != ""}
	for _, field := range []string{"url", "botToken", "chatId", "to"} {
		mine := slices.Contains(own, field)
		switch {
		case mine && !set[field]:
			f.add(field, errcode.FieldCodeRequired)
		case !mine && set[field] && v.Kind != "" && slices.Contains(alerts.Kinds, v.Kind):
			f.add(field, errcode.FieldCodeNotAllowed)
		}
	}
	switch v.Kind {
	case alerts.KindWebhook:
		if v.URL != "" && urlChanged(c) {
			switch err := alerts.CheckURL(v.URL, c.Env.AlertsAllowPrivate); {
			case errors.Is(err, alerts.ErrURLPrivate):
				f.add("url", errcode.FieldCodePrivateAddress)
			case errors.Is(err, alerts.ErrURLInsecure):
				f.pattern("url", "^https://")
			case err != nil:
				f.add("url", errcode.FieldCodeWrongType)
			}
		}
	case alerts.KindDiscord:
		if v.URL != "" && urlChanged(c) && alerts.CheckDiscordURL(v.URL) != nil {
			f.pattern("url", `^https://discord\.com/api/webhooks/[0-9]+/[A-Za-z0-9_-]+$`)
		}
	case alerts.KindTelegram:
		if v.BotToken != "" && !alerts.ValidBotToken(v.BotToken) {
			f.pattern("botToken", alerts.BotTokenPattern)
		}
		if v.ChatID != "" && !alerts.ValidChatID(v.ChatID) {
			f.pattern("chatId", alerts.ChatIDPattern)
		}
	case alerts.KindEmail:
		if v.To != "" && !alerts.ValidEmail(v.To) {
			f.add("to", errcode.FieldCodeWrongType)
		}
	}
	return f.err()
}

// checkAlert refuses an email destination on a relay without SMTP.
func checkAlert(c *Change[alerts.Destination]) *httpapi.Error {
	if c.New == nil || c.Op == OpDelete {
		return nil
	}
	if c.New.Kind == alerts.KindEmail && !c.Env.EmailEnabled {
		return refuse(errcode.EmailUnavailable, "this relay sends no email: its operator configured no SMTP server")
	}
	return nil
}

// secretsUnavailable is the 500 of a relay that cannot seal or open
// secrets (no key ring, or a key missing from it).
func secretsUnavailable() *httpapi.Error {
	return &httpapi.Error{Status: http.StatusInternalServerError, Code: errcode.InternalError,
		Detail: "the relay cannot keep secrets right now; nothing was applied"}
}

// sealAlert seals the secrets of a create or change: a new webhook's
// generated signing secret (shown once, data.secret), a Discord URL sent
// (kept sealed, shown by its host), a bot token sent (kept sealed, shown
// as hasBotToken). Secrets not sent are kept as they were.
func sealAlert(c *Change[alerts.Destination]) *httpapi.Error {
	v := c.New
	var sec alerts.Secrets
	if c.Old != nil {
		var err error
		if sec, err = alerts.Open(c.Env.Keys, c.UserID, c.Old); err != nil {
			return secretsUnavailable()
		}
	}
	before := sec
	switch v.Kind {
	case alerts.KindWebhook:
		if sec.Secret == "" {
			sec.Secret = alerts.NewSecret()
			c.Extra = map[string]any{"secret": sec.Secret}
		}
		v.HasSecret = true
	case alerts.KindDiscord:
		if urlChanged(c) {
			sec.URL = v.URL
			v.URL = alerts.DiscordHost(v.URL)
		}
	case alerts.KindTelegram:
		if v.BotToken != "" {
			sec.BotToken = v.BotToken
			v.BotToken = ""
		}
		v.HasBotToken = sec.BotToken != ""
	}
	if sec == before && c.Old != nil {
		return nil
	}
	if sec == (alerts.Secrets{}) {
		v.Sealed = ""
		return nil
	}
	if err := alerts.Seal(c.Env.Keys, c.UserID, v, sec); err != nil {
		return secretsUnavailable()
	}
	return nil
}

// testAlert queues a test delivery to the destination, whether or not it
// is active: 202 with the delivery's id.
func testAlert(c *Change[alerts.Destination], _ Agent) *httpapi.Error {
	if c.Env.Alerts == nil {
		return &httpapi.Error{Status: http.StatusServiceUnavailable, Code: errcode.ManagementUnavailable,
			Detail: "this relay sends no alerts"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := c.Env.Alerts.Test(ctx, c.UserID, c.Old.ID)
	if err != nil {
		return storageUnavailable()
	}
	c.Status = http.StatusAccepted
	c.Answer = AlertTestAccepted{DeliveryID: id, DestinationID: c.Old.ID, State: "pending"}
	return nil
}

// rotateAlertSecret gives a webhook a new signing secret, shown once in
// the answer (data.secret); the old one signs nothing more.
func rotateAlertSecret(c *Change[alerts.Destination], _ Agent) *httpapi.Error {
	if c.Old.Kind != alerts.KindWebhook {
		return refuse(errcode.ValidationFailed, "only a webhook destination has a signing secret",
			httpapi.FieldError{Path: "kind", Code: errcode.FieldCodeNotAllowed, Allowed: []string{alerts.KindWebhook}})
	}
	sec, err := alerts.Open(c.Env.Keys, c.UserID, c.Old)
	if err != nil {
		return secretsUnavailable()
	}
	sec.Secret = alerts.NewSecret()
	if err := alerts.Seal(c.Env.Keys, c.UserID, c.New, sec); err != nil {
		return secretsUnavailable()
	}
	c.New.HasSecret = true
	c.Extra = map[string]any{"secret": sec.Secret}
	return nil
}
