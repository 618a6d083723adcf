package tradecall

import "tradebridge/protocol"

// The JSON Schemas of the route table's parameters, one builder for every
// document that describes them: the OpenAPI documents (package tradeapi)
// and the arguments of each function (Table.ArgsSchema) that the MCP
// door's tools take.

// ParamSchema returns the JSON Schema of parameter p. text says p travels
// as text (a path or query parameter): a number or boolean is then
// described as sent as text. The description is p.Doc, followed by a note
// in parentheses where one applies (an enum is matched without regard to
// case).
func ParamSchema(p Param, text bool) map[string]any {
	s := map[string]any{"type": p.Type}
	note := ""
	if text && p.Type != TString {
		note = "sent as text"
	}
	if len(p.Enum) > 0 {
		s["enum"] = p.Enum
		note = "matched without regard to case"
	}
	switch {
	case p.Doc != "" && note != "":
		s["description"] = p.Doc + " (" + note + ")"
	case p.Doc != "":
		s["description"] = p.Doc
	case note != "":
		s["description"] = note
	}
	if p.Default != nil {
		s["default"] = p.Default
	}
	if p.Min != 0 || p.Max != 0 {
		if p.Type == TString {
			s["maxLength"] = p.Max
		} else {
			s["minimum"], s["maximum"] = p.Min, p.Max
		}
	}
	switch p.Format {
	case FormatInstrument:
		s["pattern"] = protocol.InstrumentPattern
	case FormatTime:
		s["format"] = "date-time"
	case FormatPositionList:
		s["pattern"] = `^(flat|long|short)(,(flat|long|short))*$`
	case FormatIntegerText:
		s["pattern"] = `^[0-9]+$`
	}
	return s
}

// ObjectSchema returns the JSON Schema of an object of params, typed as
// JSON (ParamSchema(p, false)): no other properties; each alias a property
// of its own, described as the alias of its parameter; the required
// parameters required, except that a required parameter with aliases is
// the group of itself and its aliases, of which at least one must be
// present; and each group of oneOf whose first name is among params, of
// which at least one must be present. One group is the schema's anyOf,
// more are its allOf of anyOf.
func ObjectSchema(params []Param, oneOf [][]string) map[string]any {
	props := map[string]any{}
	var required []string
	var either [][]string
	has := map[string]bool{}
	for _, p := range params {
		has[p.Name] = true
		props[p.Name] = ParamSchema(p, false)
		for _, alias := range p.Aliases {
			s := ParamSchema(p, false)
			s["description"] = "alias of " + p.Name
			props[alias] = s
		}
		switch {
		case p.Required && len(p.Aliases) > 0:
			either = append(either, append([]string{p.Name}, p.Aliases...))
		case p.Required:
			required = append(required, p.Name)
		}
	}
	s := map[string]any{"type": "object", "additionalProperties": false, "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	for _, g := range oneOf {
		if len(g) > 0 && has[g[0]] {
			either = append(either, g)
		}
	}
	addGroups(s, either)
	return s
}

// addGroups adds to object schema s the groups of names of which at least
// one must be present: one group as s's anyOf, more as its allOf.
func addGroups(s map[string]any, groups [][]string) {
	var all []any
	for _, g := range groups {
		alts := make([]any, 0, len(g))
		for _, name := range g {
			alts = append(alts, map[string]any{"required": []string{name}})
		}
		all = append(all, map[string]any{"anyOf": alts})
	}
	switch len(all) {
	case 0:
	case 1:
		s["anyOf"] = all[0].(map[string]any)["anyOf"]
	default:
		s["allOf"] = all
	}
}
