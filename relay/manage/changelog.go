package manage

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"tradebridge/protocol"
	"tradebridge/relay/auth"
	"tradebridge/relay/events"
)

// What the Management API records in the activity log: every change
// stored (a create, a PATCH or PUT, a DELETE, an action, the kill switch)
// is one config.changed entry, published to Options.Events once the
// change is stored and its push to the agent done (or failed: the change
// is stored either way); a request that changes nothing (changed: false)
// records nothing. Its detail is {resource, id, op, changes}, changes
// being the top-level fields of the resource's JSON that differ, each
// {field, before, after} (before absent on create, after absent on
// delete), the meta fields id, createdAt and updatedAt left out; a field
// of Kind.Secret is {field, changed: true}, without its values.

type sourceKey struct{}

// WithSource returns ctx naming src as the source of the changes made
// under it: a door that serves the Management API's routes in-process
// (the dashboard, MCP) wraps its requests' contexts with its own source.
// Without it a change's source is the API token's: {api, its id}.
func WithSource(ctx context.Context, src protocol.ActivitySource) context.Context {
	return context.WithValue(ctx, sourceKey{}, src)
}

// sourceOf returns the source ctx names, else p's API token's.
func sourceOf(ctx context.Context, p auth.Principal) protocol.ActivitySource {
	if src, ok := ctx.Value(sourceKey{}).(protocol.ActivitySource); ok {
		return src
	}
	return protocol.ActivitySource{Kind: protocol.SourceAPI, ID: auth.TokenID(p.TokenHash)}
}

// Ops of config.changed (detail.op) besides an action's name.
const (
	ChangeCreate = "create"
	ChangeUpdate = "update"
	ChangeDelete = "delete"
)

// FieldChange is one item of config.changed's detail.changes.
type FieldChange struct {
	Field string `json:"field"`
	// Before and After are the field's JSON before and after the change;
	// Before is absent on create, After on delete, and both for a secret
	// field.
	Before json.RawMessage `json:"before,omitempty"`
	After  json.RawMessage `json:"after,omitempty"`
	// Changed is set, alone, for a field of Kind.Secret.
	Changed bool `json:"changed,omitempty"`
}

// configDetail is config.changed's detail.
type configDetail struct {
	Resource string        `json:"resource"`
	ID       string        `json:"id"`
	Op       string        `json:"op"`
	Changes  []FieldChange `json:"changes"`
}

func (k *Kind[T]) secretFields() []string { return k.Secret }

// recordChange publishes the config.changed entry of a change stored by
// p (change in server.go).
func (s *Server) recordChange(ctx context.Context, p auth.Principal, rt *route, ci *changeIn, out *changeOut) {
	if s.opts.Events == nil || !out.changed {
		return
	}
	op := ChangeUpdate
	switch {
	case out.created:
		op = ChangeCreate
	case out.deleted:
		op = ChangeDelete
	case ci.op == OpAction:
		op = ci.action
	}
	secret := rt.kind.secretFields()
	var after []byte
	if !out.deleted {
		after = out.body
	}
	e, ok := ConfigChangedEntry(rt.kind.name(), out.id, op, out.before, after, secret, sourceOf(ctx, p), ci.now)
	if !ok {
		return
	}
	s.opts.Events.Publish(events.Activity(p.UserID, "", e))
}

// ConfigChangedEntry returns the config.changed entry of a change of the
// resource kind's id by op, from the resource's JSON before (nil on
// create) to after (nil on delete), secret naming the fields whose values
// are never shown; ok is false when neither is a JSON object.
func ConfigChangedEntry(kind, id, op string, before, after []byte, secret []string, src protocol.ActivitySource, at time.Time) (protocol.ActivityEntry, bool) {
	b, errB := topFields(before)
	a, errA := topFields(after)
	if errB != nil || errA != nil || (b == nil && a == nil) {
		return protocol.ActivityEntry{}, false
	}
	changes := diffFields(b, a, secret)
	detail, ok := changeDetail(configDetail{Resource: kind, ID: id, Op: op, Changes: changes})
	if !ok {
		return protocol.ActivityEntry{}, false
	}
	return protocol.ActivityEntry{
		At:      at.UTC().Truncate(time.Millisecond),
		Kind:    protocol.ActivityConfigChanged,
		Account: accountOf(a, b),
		Source:  src,
		Summary: protocol.CutActivitySummary(changeSummary(kind, id, op, changes)),
		Detail:  detail,
	}, true
}

// changeDetail encodes d within protocol.MaxActivityDetail: while it is too large,
// the largest change still showing values shows only that it changed
// ({field, changed: true}, as a secret does); ok is false when even that
// is not enough.
func changeDetail(d configDetail) (json.RawMessage, bool) {
	for {
		b, err := json.Marshal(d)
		if err != nil {
			return nil, false
		}
		if len(b) <= protocol.MaxActivityDetail {
			return b, true
		}
		largest := -1
		for i, c := range d.Changes {
			if !c.Changed && (largest < 0 || len(c.Before)+len(c.After) > len(d.Changes[largest].Before)+len(d.Changes[largest].After)) {
				largest = i
			}
		}
		if largest < 0 {
			return nil, false
		}
		d.Changes[largest] = FieldChange{Field: d.Changes[largest].Field, Changed: true}
	}
}

// topFields splits a JSON object into its top-level fields; nil for no
// JSON.
func topFields(b []byte) (map[string]json.RawMessage, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	return m, nil
}

// diffFields lists the fields that differ between before and after (nil:
// absent), by name, the meta fields left out and the secret ones without
// values.
func diffFields(before, after map[string]json.RawMessage, secret []string) []FieldChange {
	names := make([]string, 0, len(before)+len(after))
	for k := range before {
		names = append(names, k)
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	changes := []FieldChange{}
	for _, f := range names {
		if slices.Contains(metaFields, f) {
			continue
		}
		was, had := before[f]
		now, has := after[f]
		if had && has && sameJSON(was, now) {
			continue
		}
		if slices.Contains(secret, f) {
			changes = append(changes, FieldChange{Field: f, Changed: true})
			continue
		}
		c := FieldChange{Field: f}
		if had {
			c.Before = compact(was)
		}
		if has {
			c.After = compact(now)
		}
		changes = append(changes, c)
	}
	return changes
}

// compact returns b without insignificant space.
func compact(b json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

// accountOf returns the resource's account field (a monitor's), from
// after, else before; "" when it has none.
func accountOf(after, before map[string]json.RawMessage) string {
	for _, m := range []map[string]json.RawMessage{after, before} {
		var a string
		if raw, ok := m["account"]; ok && json.Unmarshal(raw, &a) == nil && a != "" {
			return a
		}
	}
	return ""
}

// killSummary is the summary of a change of the kill switch, alone or
// with flattenOnKill.
func killSummary(kind string, changes []FieldChange) (string, bool) {
	if kind != controlsKind.Name || len(changes) == 0 || len(changes) > 2 {
		return "", false
	}
	var kill, flatten *FieldChange
	for i := range changes {
		switch changes[i].Field {
		case "killSwitch":
			kill = &changes[i]
		case "flattenOnKill":
			flatten = &changes[i]
		default:
			return "", false
		}
	}
	if kill == nil {
		return "", false
	}
	s := "Kill switch turned off"
	if string(kill.After) == "true" {
		s = "Kill switch turned on"
	}
	switch {
	case flatten == nil:
	case string(flatten.After) == "true":
		s += ", flatten on kill on"
	default:
		s += ", flatten on kill off"
	}
	return s, true
}

// maxSummaryFields bounds the fields a summary names (detail has them
// all).
const maxSummaryFields = 6

// changeSummary is one line: "Updated monitor mon_1: maxDailyLoss,
// active", "Created copier cop_1", "Kill switch turned on", "Kill switch
// turned on, flatten on kill on" (the kill switch's PUT that changed
// flattenOnKill too).
func changeSummary(kind, id, op string, changes []FieldChange) string {
	if s, ok := killSummary(kind, changes); ok {
		return s
	}
	var s string
	switch op {
	case ChangeCreate:
		s = "Created " + kind + " " + id
	case ChangeUpdate:
		s = "Updated " + kind + " " + id
	case ChangeDelete:
		return "Deleted " + kind + " " + id
	default:
		s = strings.ToUpper(op[:1]) + op[1:] + " of " + kind + " " + id
	}
	if op == ChangeCreate || len(changes) == 0 {
		return s
	}
	names := make([]string, 0, min(len(changes), maxSummaryFields))
	for _, c := range changes[:min(len(changes), maxSummaryFields)] {
		names = append(names, c.Field)
	}
	s += ": " + strings.Join(names, ", ")
	if n := len(changes) - len(names); n > 0 {
		s += " and " + strconv.Itoa(n) + " more"
	}
	return s
}
